//! The timeline's plain-Rust parts, on the #59848 scenario's real trace,
//! on small hand-made traces, and on the benchmark's run (a library
//! scenario scaled up).

use recon_abi::{EventType, ObjectKey, Verb};
use recon_scenario::Check;
use recon_sim::Sim;
use recon_trace::ServedFrom;
use recon_trace::{Entry, EntryId, Event, Lane, LaneId, Trace};

use super::bench::scaled;
use super::bench_scenario;
use super::columns::{BandRun, ColumnMark, aggregate_marks, band_runs};
use super::hover::{band_tooltip, entry_tooltip, partition_at};
use super::lanes::LaneRole;
use super::layout::{LaneLayout, hit_test, mark_position};
use super::model::{MarkKind, TimelineModel};
use super::staleness::StalenessBand;
use super::viewport::{Span, Viewport, tick_label, tick_step, ticks, within};

const POD_SAFETY: &str = include_str!("../../../../scenarios/pod-safety-59848.yaml");

fn run_pod_safety() -> Trace {
    let scenario = recon_scenario::parse("pod-safety-59848.yaml", POD_SAFETY).expect("the shipped scenario parses");
    let mut sim = Sim::new(&scenario, Box::new(|c| recon_catalog::instantiate(&c.controller))).expect("it builds");
    sim.run();
    sim.into_trace()
}

/// The benchmark's scaled scenario for about `events` entries, run natively
/// as the page's worker runs it.
fn bench_trace(events: usize) -> Trace {
    let scenario = bench_scenario(events);
    let mut sim = Sim::new(&scenario, Box::new(|c| recon_catalog::instantiate(&c.controller))).expect("it builds");
    sim.run();
    sim.into_trace()
}

fn names(model: &TimelineModel) -> Vec<&str> {
    model.lane_names().collect()
}

/// A trace from its lanes (name and role, in order) and its entries
/// (time, lane name, event, causes), ids in order.
fn trace_of(lanes: &[(&str, LaneRole)], entries: Vec<(u64, &str, Event, Vec<EntryId>)>) -> Trace {
    let lanes: Vec<Lane> = lanes.iter().map(|(name, role)| Lane { name: name.to_string(), role: *role }).collect();
    let lane = |name: &str| LaneId::from_index(lanes.iter().position(|l| l.name == name).expect("a declared lane"));
    let entries = entries
        .into_iter()
        .enumerate()
        .map(|(i, (time_ms, name, event, causes))| Entry {
            id: i as EntryId,
            time_ms,
            lane: lane(name),
            event,
            causes: causes.into(),
        })
        .collect();
    Trace { scenario: "test".into(), seed: 0, lanes, entries }
}

/// The usual lanes of the hand-built traces: script, store, one API server
/// and its cache, then these controllers.
fn lanes_with(controllers: &[&'static str]) -> Vec<(&'static str, LaneRole)> {
    let mut lanes = vec![
        ("script", LaneRole::Script),
        ("etcd", LaneRole::Store),
        ("apiserver-1", LaneRole::ApiServer),
        ("apiserver-1 cache", LaneRole::Cache { api_server: LaneId(2) }),
    ];
    lanes.extend(controllers.iter().map(|c| (*c, LaneRole::Controller)));
    lanes
}

fn watch(component: &str, revision: u64) -> Event {
    Event::WatchDelivered {
        component: component.into(),
        api_server: "apiserver-1".into(),
        watch: 0,
        event_type: EventType::Modified,
        key: ObjectKey::new("Pod", "default", "web-0").into(),
        uid: "0123456789".into(),
        revision,
    }
}

fn violation(check: Check) -> Event {
    Event::Violation { check, message: "broken".into() }
}

fn write(revision: u64, via: &str) -> Event {
    Event::StoreWrite {
        verb: Verb::Update,
        key: ObjectKey::new("Pod", "default", "web-0").into(),
        uid: "0123456789".into(),
        revision,
        removed: false,
        terminating: false,
        by: "scheduler".into(),
        via: via.into(),
        patch: None,
    }
}

// ---- lanes ----

#[test]
fn pod_safety_lanes_read_top_down_like_the_control_plane() {
    let model = TimelineModel::build(&run_pod_safety());
    assert_eq!(
        names(&model),
        [
            "script",
            "etcd",
            "apiserver-1",
            "apiserver-1 cache",
            "apiserver-2",
            "apiserver-2 cache",
            "scheduler",
            "statefulset-controller",
            "kubelet-node-1",
            "node-1",
            "kubelet-node-2",
            "node-2",
            "checks",
        ]
    );
    let lane = |name: &str| &model.lanes[model.lane_named(name).unwrap()];
    assert!(matches!(lane("apiserver-2 cache").role, LaneRole::Cache { .. }));
    assert!(lane("apiserver-2 cache").sub);
    assert_eq!(lane("apiserver-2 cache").group, lane("apiserver-2").group);
    assert!(matches!(lane("kubelet-node-1").role, LaneRole::NodeAgent { .. }));
    assert_eq!(lane("kubelet-node-1").owner.as_deref(), Some("node-1"));
    assert_eq!((lane("node-1").role, lane("node-1").sub), (LaneRole::Node, true));
    assert_eq!(lane("node-1").group, lane("kubelet-node-1").group);
    assert_ne!(lane("node-1").group, lane("kubelet-node-2").group);
    assert_eq!(lane("scheduler").role, LaneRole::Controller);
}

#[test]
fn cache_and_container_events_are_drawn_on_the_cache_and_node_lanes() {
    let trace = run_pod_safety();
    let model = TimelineModel::build(&trace);
    let lane_name = |id: EntryId| model.lanes[model.lane_of(id).unwrap()].name.as_str();
    let mut seen_cache = 0;
    for entry in &trace.entries {
        match &entry.event {
            Event::CacheApply { api_server, .. } => {
                seen_cache += 1;
                assert_eq!(lane_name(entry.id), format!("{api_server} cache"));
            }
            Event::ContainerStarted { node, .. } | Event::ContainerStopped { node, .. } => {
                assert_eq!(lane_name(entry.id), node);
            }
            _ => assert_eq!(lane_name(entry.id), trace.lane_name(entry)),
        }
    }
    assert!(seen_cache > 0);
    // Every entry is a mark on exactly one lane.
    assert_eq!(model.marks.iter().map(|m| m.len()).sum::<usize>(), trace.entries.len());
    for marks in &model.marks {
        assert!(marks.times.is_sorted());
    }
}

#[test]
fn the_timeline_takes_topology_from_the_trace_roles_not_from_names() {
    let started = |component: &str| Event::ComponentStarted {
        component: component.into(),
        api_server: "apiserver-1".into(),
        restarts: 0,
        mitigations: Vec::new(),
    };
    // The agent's name says nothing of its node, and the nodes are not in
    // name order: the roles and the trace's order are all there is.
    let lanes = [
        ("script", LaneRole::Script),
        ("etcd", LaneRole::Store),
        ("apiserver-1", LaneRole::ApiServer),
        ("apiserver-1 cache", LaneRole::Cache { api_server: LaneId(2) }),
        ("replicaset", LaneRole::Controller),
        ("quiet-controller", LaneRole::Controller),
        ("agent-a", LaneRole::NodeAgent { node: LaneId(7) }),
        ("worker-b", LaneRole::Node),
        ("agent-quiet", LaneRole::NodeAgent { node: LaneId(9) }),
        ("worker-a", LaneRole::Node),
        ("checks", LaneRole::Checks),
    ];
    let trace = trace_of(
        &lanes,
        vec![
            (0, "agent-a", started("agent-a"), vec![]),
            (0, "replicaset", started("replicaset"), vec![]),
            (5, "checks", violation(Check::PodIdentity), vec![]),
        ],
    );
    let model = TimelineModel::build(&trace);
    // Quiet components and caches are left out; the declared topology
    // (script, store, servers, nodes) is always shown.
    assert_eq!(
        names(&model),
        ["script", "etcd", "apiserver-1", "replicaset", "agent-a", "worker-b", "worker-a", "checks"]
    );
    let lane = |name: &str| &model.lanes[model.lane_named(name).unwrap()];
    assert_eq!(lane("agent-a").owner.as_deref(), Some("worker-b"));
    assert!(lane("worker-b").sub, "a node is drawn beneath its shown agent");
    assert_eq!(lane("worker-b").group, lane("agent-a").group);
    assert!(!lane("worker-a").sub, "its only agent did nothing, so it stands alone");
    assert_ne!(lane("worker-a").group, lane("worker-b").group);
    // No cache events, no cache lane; the server still has its lane.
    assert!(model.bands.is_empty());
}

// ---- model ----

#[test]
fn mark_kinds_rank_in_declaration_order_and_the_violation_outranks_everything() {
    for (i, kind) in MarkKind::ALL.iter().enumerate() {
        assert_eq!(kind.rank(), i);
    }
    let top = MarkKind::ALL.iter().max_by_key(|k| k.importance()).unwrap();
    assert_eq!(*top, MarkKind::Violation);
    assert!(MarkKind::Crash.importance() > MarkKind::Write.importance());
    assert!(MarkKind::Write.importance() > MarkKind::Reconcile.importance());
    assert!(MarkKind::Reconcile.importance() > MarkKind::Watch.importance());
}

#[test]
fn pod_safety_violations_stale_read_and_partition_are_found() {
    let trace = run_pod_safety();
    let model = TimelineModel::build(&trace);
    assert_eq!(model.violations.len(), 3);
    let first = model.first_violation().unwrap();
    assert_eq!(model.kind_of(first), Some(MarkKind::TimeTravel));
    assert_eq!(trace.lane_name(trace.get(first).unwrap()), "kubelet-node-1");
    let stale: Vec<&Entry> =
        trace.entries.iter().filter(|e| model.kind_of(e.id) == Some(MarkKind::StaleRead)).collect();
    assert_eq!(stale.len(), 1, "the kubelet's relist from apiserver-2's frozen cache");
    assert_eq!(trace.lane_name(stale[0]), "kubelet-node-1");
    assert!(stale[0].time_ms < model.time_of(first).unwrap() + 1);

    assert_eq!(model.partitions.len(), 1);
    let window = &model.partitions[0];
    assert_eq!(model.lanes[window.lane].name, "apiserver-2");
    assert_eq!(window.cache_lane, model.lane_named("apiserver-2 cache"));
    assert_eq!((window.from_ms, window.until_ms), (1000, Some(20000)));
    assert_eq!(partition_at(&model, window.lane, 5000.0), Some(0));
    assert_eq!(partition_at(&model, window.lane, 500.0), None);
    assert_eq!(partition_at(&model, model.lane_named("apiserver-1").unwrap(), 5000.0), None);
}

#[test]
fn stepping_walks_entries_in_time_order() {
    let trace = trace_of(
        &lanes_with(&["a", "b"]),
        vec![
            (10, "a", watch("a", 1), vec![]),
            (30, "b", watch("b", 1), vec![]),
            (20, "a", watch("a", 2), vec![]), // recorded late: time order puts it second
        ],
    );
    let model = TimelineModel::build(&trace);
    assert_eq!(model.next(Some(0), 0.0), Some(2));
    assert_eq!(model.next(Some(2), 0.0), Some(1));
    assert_eq!(model.next(Some(1), 0.0), None);
    assert_eq!(model.previous(Some(1), 0.0), Some(2));
    assert_eq!(model.previous(Some(0), 0.0), None);
    // Nothing selected: from the cursor.
    assert_eq!(model.next(None, 15.0), Some(2));
    assert_eq!(model.previous(None, 25.0), Some(2));
    assert_eq!(model.previous(None, 5.0), None);
    assert_eq!(model.last_at_or_before(30.0), Some(1));
    assert_eq!((model.start_ms, model.end_ms), (10, 30));
}

// ---- staleness ----

fn band<'m>(model: &'m TimelineModel, server: &str) -> &'m StalenessBand {
    model.bands.iter().find(|b| b.api_server == server).unwrap()
}

#[test]
fn the_partitioned_cache_falls_behind_and_catches_up_at_known_times() {
    let trace = run_pod_safety();
    let model = TimelineModel::build(&trace);
    let frozen = band(&model, "apiserver-2");
    assert_eq!(frozen.lane, model.lane_named("apiserver-2 cache").unwrap());
    // Before the partition: current.
    assert_eq!(frozen.at(500.0).unwrap().behind(), 0);
    // The first write after the partition (revision 10, the cordon) starts the lag.
    let first_missed = trace
        .entries
        .iter()
        .find_map(|e| match e.event {
            Event::StoreWrite { revision: 10, .. } => Some(e.time_ms),
            _ => None,
        })
        .unwrap();
    assert!(first_missed > 2000);
    let at_4s = frozen.at(4000.0).unwrap();
    assert_eq!((at_4s.cache_revision, at_4s.store_revision, at_4s.behind()), (9, 21, 12));
    assert_eq!(at_4s.lag_ms_at(4000), 4000 - first_missed);
    // After the partition heals, the cache catches up.
    assert_eq!(frozen.at(25000.0).unwrap().behind(), 0);
    assert_eq!(frozen.max_behind, 12);
    let caught_up = frozen.samples.iter().find(|s| s.time_ms > 20000).unwrap().time_ms;
    assert_eq!(frozen.max_lag_ms, caught_up - first_missed);
    // The healthy cache lags only by network latency.
    let healthy = band(&model, "apiserver-1");
    assert!((1..=3).contains(&healthy.max_behind), "{}", healthy.max_behind);
    assert!(healthy.max_lag_ms < 20, "{}", healthy.max_lag_ms);
    assert_eq!(model.max_behind(), 12);
}

#[test]
fn the_band_agrees_with_the_simulator_on_how_stale_the_kubelets_list_was() {
    let trace = run_pod_safety();
    let model = TimelineModel::build(&trace);
    let (at, behind, stale_ms) = trace
        .entries
        .iter()
        .find_map(|e| match &e.event {
            Event::ListServed(list) if list.served_from == ServedFrom::Cache && list.api_server == "apiserver-2" => {
                Some((e.time_ms, list.store_revision - list.revision, list.stale_ms))
            }
            _ => None,
        })
        .unwrap();
    let sample = band(&model, "apiserver-2").at(at as f64).unwrap();
    assert_eq!(sample.behind(), behind);
    assert_eq!(sample.lag_ms_at(at), stale_ms);
}

#[test]
fn band_samples_are_one_per_change() {
    let apply = |revision| Event::CacheApply {
        api_server: "apiserver-1".into(),
        revision,
        key: ObjectKey::new("Pod", "default", "web-0").into(),
        event_type: EventType::Modified,
    };
    let trace = trace_of(
        &lanes_with(&[]),
        vec![
            (0, "etcd", write(1, "apiserver-1"), vec![]),
            (0, "apiserver-1 cache", apply(1), vec![0]),
            (10, "etcd", write(2, "apiserver-1"), vec![]),
            (12, "etcd", write(3, "apiserver-1"), vec![]),
            (15, "apiserver-1 cache", apply(2), vec![2]),
            (15, "apiserver-1 cache", apply(3), vec![3]),
            (40, "script", Event::Script { description: "end".into() }, vec![]),
        ],
    );
    let model = TimelineModel::build(&trace);
    let b = band(&model, "apiserver-1");
    let steps: Vec<(u64, u64, Option<u64>)> =
        b.samples.iter().map(|s| (s.time_ms, s.behind(), s.missing_since_ms)).collect();
    assert_eq!(steps, [(0, 0, None), (10, 1, Some(10)), (12, 2, Some(10)), (15, 0, None)]);
    assert_eq!((b.max_behind, b.max_lag_ms, b.end_ms), (2, 5, 40));
    let tip = band_tooltip(b, 13.0);
    assert!(tip.lines[0].starts_with("2 revisions behind the store for 3 ms"), "{tip:?}");
    assert!(tip.lines[1].contains("2 revisions; longest lag 5 ms"), "{tip:?}");
}

#[test]
fn a_plugins_log_is_a_mark_in_its_lane_whose_tooltip_lists_the_lines() {
    // Issue 20: what a plugin logs is shown where it ran.
    let logged = Event::Logged { component: "rs".into(), lines: vec!["first".into(), "two\nlines".into()] };
    let many = Event::Logged { component: "rs".into(), lines: (0..25).map(|i| format!("line {i}")).collect() };
    let trace = trace_of(&lanes_with(&["rs"]), vec![(5, "rs", logged, vec![]), (9, "rs", many, vec![])]);
    let model = TimelineModel::build(&trace);
    assert_eq!(model.kind_of(0), Some(MarkKind::Log));
    assert_eq!(model.lanes[model.lane_of(0).unwrap()].name, "rs");
    let tip = entry_tooltip(&trace, &model, 0).unwrap();
    assert_eq!(tip.lines, ["rs logged:", "first", "two", "lines"]);
    let tip = entry_tooltip(&trace, &model, 1).unwrap();
    assert_eq!(tip.lines.len(), 22, "{tip:?}");
    assert_eq!(tip.lines.last().unwrap(), "… and 5 more lines");
}

#[test]
fn a_kubernetes_event_is_a_mark_in_the_lane_it_was_recorded_on_with_reason_and_note_on_hover() {
    // Issue 14: an Event shows where the object it concerns is, which the
    // trace says by the entry's lane; the timeline does not re-infer it.
    let published = Event::EventPublished(Box::new(recon_trace::EventPublished {
        event_type: "Warning".into(),
        reason: "FailedMount".into(),
        note: "volume data is not ready\nretrying".into(),
        regarding: Some(ObjectKey::new("Pod", "default", "web-0").into()),
        by: "db-operator".into(),
    }));
    let trace = trace_of(&lanes_with(&["db-operator", "node-1"]), vec![(7, "node-1", published, vec![])]);
    let model = TimelineModel::build(&trace);
    assert_eq!(model.kind_of(0), Some(MarkKind::KubeEvent));
    assert_eq!(model.lanes[model.lane_of(0).unwrap()].name, "node-1");
    let tip = entry_tooltip(&trace, &model, 0).unwrap();
    assert_eq!(
        tip.lines,
        [
            "Warning FailedMount about Pod default/web-0",
            "volume data is not ready",
            "retrying",
            "reported by db-operator"
        ]
    );
}

// ---- viewport ----

fn span() -> Span {
    Span::new(0, 30_000)
}

#[test]
fn fitting_shows_the_whole_run_with_a_margin() {
    let view = Viewport::fit(span(), 1000.0);
    assert!(view.start_ms < 0.0 && view.end_ms() > 30_000.0);
    assert!(view.x_of(0.0) > 0.0 && view.x_of(30_000.0) < 1000.0);
    assert!((view.end_ms() - view.start_ms - 30_000.0 * 1.04).abs() < 1e-6);
    assert!(view.shows_all(span()));
    let mut zoomed = view;
    zoomed.zoom_at(100.0, 2.0, span());
    assert!(!zoomed.shows_all(span()));
    // A run of one instant still gets a sensible scale.
    let instant = Viewport::fit(Span::new(500, 500), 1000.0);
    assert!(instant.ms_per_px > 0.0 && instant.x_of(500.0) > 0.0 && instant.x_of(500.0) < 1000.0);
}

#[test]
fn a_clicked_moment_is_the_whole_millisecond_under_the_pointer_and_never_negative() {
    let view = Viewport::fit(span(), 1000.0);
    let x = view.x_of(12_345.4);
    assert_eq!(view.moment_at(x), 12_345);
    assert_eq!(view.moment_at(view.x_of(12_345.6)), 12_346);
    // Left of the run's start, in the fit's padding: the start.
    assert!(view.time_at(0.0) < 0.0);
    assert_eq!(view.moment_at(0.0), 0);
}

#[test]
fn zooming_keeps_the_time_under_the_pointer_where_it_is() {
    let mut view = Viewport::fit(span(), 1000.0);
    for (x, factor) in [(250.0, 1.6), (731.0, 3.0), (10.0, 1.0 / 1.6), (500.0, 40.0)] {
        let before = view.time_at(x);
        view.zoom_at(x, factor, span());
        assert!((view.time_at(x) - before).abs() < 1e-6, "at {x} by {factor}");
    }
    // Zoom in stops at the limit, still anchored.
    let anchor = view.time_at(400.0);
    view.zoom_at(400.0, 1e9, span());
    assert_eq!(view.ms_per_px, super::viewport::MIN_MS_PER_PX);
    assert!((view.time_at(400.0) - anchor).abs() < 1e-6);
    // Zooming out stops at twice the whole run.
    view.zoom_at(400.0, 1e-9, span());
    assert!(view.end_ms() - view.start_ms <= 2.0 * 30_000.0 * 1.04 + 1e-6);
}

#[test]
fn panning_moves_the_content_with_the_pointer_and_stays_near_the_run() {
    let mut view = Viewport::fit(span(), 1000.0);
    view.zoom_at(500.0, 10.0, span());
    let t = view.time_at(300.0);
    view.pan_by_px(120.0, span());
    assert!((view.x_of(t) - 420.0).abs() < 1e-6);
    view.pan_by_px(1e9, span());
    let centre = view.time_at(500.0);
    assert!((centre - 0.0).abs() < 1e-6, "the view's centre stops at the run's start");
    view.pan_by_px(-1e9, span());
    assert!((view.time_at(500.0) - 30_000.0).abs() < 1e-6);
}

#[test]
fn resizing_keeps_the_same_stretch_of_time_in_view() {
    let mut view = Viewport::fit(span(), 1000.0);
    view.zoom_at(300.0, 4.0, span());
    let (start, end) = (view.start_ms, view.end_ms());
    view.resize(600.0, span());
    assert!((view.start_ms - start).abs() < 1e-6 && (view.end_ms() - end).abs() < 1e-6);
    assert_eq!(view.width_px, 600.0);
    let fitted = Viewport::fit(span(), 1000.0);
    let mut resized = fitted;
    resized.resize(1400.0, span());
    assert!((resized.ms_per_px - Viewport::fit(span(), 1400.0).ms_per_px).abs() < 1e-9);
}

#[test]
fn within_never_panics_on_an_empty_range_and_keeps_the_low_end() {
    // The cursor label of a plot narrower than the label (issue 19: below
    // about 580 px the page died on `clamp` with min > max).
    assert_eq!(within(50.0, 168.0, 120.0), 168.0);
    assert_eq!(within(500.0, 168.0, 900.0), 500.0);
    assert_eq!(within(1000.0, 168.0, 900.0), 900.0);
}

#[test]
fn every_width_from_one_pixel_to_a_wall_of_screens_zooms_pans_and_resizes() {
    // A one-instant run on a plot far wider than its finest zoom needs
    // (the farthest zoom out used to fall below the closest zoom in).
    let instant = Span::new(5, 5);
    for width in [1.0, 2.0, 40.0, 152.0, 390.0, 2560.0, 10_000.0, 100_000.0] {
        for run in [span(), instant] {
            let mut view = Viewport::fit(run, width);
            view.zoom_at(width / 2.0, 1e6, run);
            view.zoom_at(0.0, 1e-6, run);
            view.pan_by_px(width * 3.0, run);
            view.resize(1.0, run);
            view.resize(width * 2.0, run);
            view.reveal(run.end_ms, 48.0, run);
            assert!(view.ms_per_px.is_finite() && view.ms_per_px > 0.0, "{width}: {view:?}");
            assert!(view.start_ms.is_finite(), "{width}: {view:?}");
        }
    }
}

#[test]
fn a_pinch_zooms_about_the_fingers_and_follows_them() {
    let mut view = Viewport::fit(span(), 1000.0);
    let under = view.time_at(400.0);
    let before = view.ms_per_px;
    // Fingers spread from 100 px to 200 px apart around x = 400: twice as close.
    view.pinch(400.0, 100.0, 400.0, 200.0, span());
    assert!((view.ms_per_px - before / 2.0).abs() < 1e-9);
    assert!((view.time_at(400.0) - under).abs() < 1e-6, "the time under the fingers stays");
    // Both fingers move 50 px right at the same distance: a pan.
    let scale = view.ms_per_px;
    view.pinch(400.0, 200.0, 450.0, 200.0, span());
    assert_eq!(view.ms_per_px, scale);
    assert!((view.time_at(450.0) - under).abs() < 1e-6, "the content follows the fingers");
    // Fingers on top of each other are not a zoom to infinity.
    view.pinch(450.0, 200.0, 450.0, 0.0, span());
    assert!(view.ms_per_px.is_finite() && view.ms_per_px >= super::viewport::MIN_MS_PER_PX);
}

#[test]
fn revealing_scrolls_only_when_needed() {
    let mut view = Viewport::fit(span(), 1000.0);
    view.zoom_at(0.0, 10.0, span());
    let inside = view.time_at(500.0);
    assert!(!view.reveal(inside, 48.0, span()));
    assert!(view.reveal(25_000.0, 48.0, span()));
    assert!((view.x_of(25_000.0) - 500.0).abs() < 1e-6);
    // Near the edge counts as outside.
    let near_edge = view.time_at(990.0);
    assert!(view.reveal(near_edge, 48.0, span()));
}

#[test]
fn ticks_are_round_and_labelled_in_seconds() {
    assert_eq!(tick_step(30.0, 90.0), 5000.0);
    assert_eq!(tick_step(1.0, 90.0), 100.0);
    assert_eq!(tick_step(0.01, 90.0), 1.0);
    assert_eq!(tick_label(5000.0, 5000.0), "5s");
    assert_eq!(tick_label(5200.0, 100.0), "5.2s");
    assert_eq!(tick_label(5250.0, 50.0), "5.25s");
    assert_eq!(tick_label(5007.0, 1.0), "5.007s");
    let view = Viewport::fit(span(), 1000.0);
    let (step, times) = ticks(&view, 90.0);
    assert!(step / view.ms_per_px >= 90.0);
    assert_eq!(times.first(), Some(&0.0));
    assert!(times.iter().all(|t| t % step == 0.0 && *t <= view.end_ms()));
}

// ---- aggregation ----

/// One lane: `n` watch deliveries at 1000 ms, a violation among them, one more watch far away.
fn crowded(n: usize) -> TimelineModel {
    let mut entries: Vec<(u64, &str, Event, Vec<EntryId>)> =
        (0..n).map(|i| (1000, "a", watch("a", i as u64), vec![])).collect();
    entries.insert(n / 2, (1000, "a", violation(Check::TimeTravel), vec![]));
    entries.push((9000, "a", watch("a", 0), vec![]));
    TimelineModel::build(&trace_of(&lanes_with(&["a"]), entries))
}

#[test]
fn a_violation_sharing_a_pixel_with_a_thousand_marks_is_the_one_drawn() {
    let model = crowded(1000);
    let lane = model.lane_named("a").unwrap();
    let view = Viewport { start_ms: 0.0, ms_per_px: 10.0, width_px: 1000.0 };
    let mut out: Vec<ColumnMark> = Vec::new();
    aggregate_marks(&model.marks[lane], &view, 8.0, &mut out);
    assert_eq!(out.len(), 2);
    assert_eq!((out[0].column, out[0].kind, out[0].count), (100, MarkKind::TimeTravel, 1001));
    assert_eq!(out[0].id, 500);
    assert_eq!((out[1].column, out[1].kind), (900, MarkKind::Watch));
    // Scrolled so the crowd is off screen, only the far mark is gathered.
    let later = Viewport { start_ms: 5000.0, ..view };
    aggregate_marks(&model.marks[lane], &later, 8.0, &mut out);
    assert_eq!(out.iter().map(|c| c.column).collect::<Vec<_>>(), [400]);
}

#[test]
fn a_hundred_thousand_entries_draw_at_most_one_mark_per_column() {
    let trace = bench_trace(100_000);
    assert!((95_000..110_000).contains(&trace.entries.len()), "{}", trace.entries.len());
    let model = TimelineModel::build(&trace);
    let view = Viewport::fit(Span::new(model.start_ms, model.end_ms), 1200.0);
    let mut out = Vec::new();
    let mut drawn = 0;
    for marks in &model.marks {
        aggregate_marks(marks, &view, 8.0, &mut out);
        assert!(out.len() <= 1200 + 16);
        assert!(out.windows(2).all(|w| w[0].column < w[1].column));
        drawn += out.len();
    }
    assert!(drawn < 20_000, "{drawn}");
    // Every violation survives aggregation somewhere.
    let mut shown = 0;
    for (lane, marks) in model.marks.iter().enumerate() {
        aggregate_marks(marks, &view, 8.0, &mut out);
        shown += out.iter().filter(|c| c.kind.is_violation()).count();
        let violations_here = model.violations.iter().filter(|v| model.lane_of(**v) == Some(lane)).count();
        assert!(violations_here == 0 || out.iter().any(|c| c.kind.is_violation()));
    }
    assert!(shown > 0);
}

#[test]
fn a_lanes_summary_keeps_each_buckets_most_important_mark_and_counts_them_all() {
    use super::model::LaneMarks;
    let mut lane = LaneMarks::default();
    // Times 0..8 ms, two marks at each; a crash at 5 ms, the rest watches.
    for time in 0..8u64 {
        for copy in 0..2 {
            lane.times.push(time);
            lane.ids.push(time * 2 + copy);
            lane.kinds.push(if time == 5 && copy == 1 { MarkKind::Crash } else { MarkKind::Watch });
        }
    }
    lane.summarise();
    let shifts: Vec<u32> = lane.summaries.iter().map(|s| s.shift).collect();
    assert_eq!(shifts, [0, 1, 2, 3], "each level halves the one before");
    let whole_ms = &lane.summaries[0];
    assert_eq!((whole_ms.len(), whole_ms.counts.iter().sum::<u32>()), (8, 16));
    assert_eq!((whole_ms.ids[5], whole_ms.kinds[5]), (11, MarkKind::Crash), "the crash outranks the earlier watch");
    assert_eq!((whole_ms.ids[4], whole_ms.kinds[4]), (8, MarkKind::Watch), "the earlier of equals");
    let top = &lane.summaries[3];
    assert_eq!((top.times.as_slice(), top.ids.as_slice(), top.counts.as_slice()), (&[5][..], &[11][..], &[16][..]));
    // Zoomed in, the marks themselves; out, the coarsest summary a
    // pixel holds eight buckets of.
    assert_eq!(lane.summary_for(0.5).map(|s| s.shift), Some(0));
    assert_eq!(lane.summary_for(16.0).map(|s| s.shift), Some(1));
    assert_eq!(lane.summary_for(1_000.0).map(|s| s.shift), Some(3));
}

#[test]
fn a_zoomed_out_frame_read_from_summaries_draws_real_marks_where_they_are_and_loses_none_that_matter() {
    let trace = bench_trace(100_000);
    let model = TimelineModel::build(&trace);
    let whole = Viewport::fit(Span::new(model.start_ms, model.end_ms), 1200.0);
    assert!(model.marks.iter().any(|m| m.summary_for(whole.ms_per_px).is_some_and(|s| s.shift > 0)));
    for view in [whole, Viewport { ms_per_px: whole.ms_per_px / 5.0, ..whole }] {
        let (from, to) = (view.time_at(-8.0), view.time_at(view.width_px + 8.0));
        for marks in &model.marks {
            let mut summarised = Vec::new();
            aggregate_marks(marks, &view, 8.0, &mut summarised);
            // The same lane without summaries: every mark read.
            let raw_marks = super::model::LaneMarks { summaries: Vec::new(), ..marks.clone() };
            let mut raw = Vec::new();
            aggregate_marks(&raw_marks, &view, 8.0, &mut raw);
            for mark in &summarised {
                let time = model.time_of(mark.id).unwrap();
                assert_eq!(mark.column, super::columns::column_of(&view, time as f64), "a mark is drawn at its time");
                assert_eq!(mark.kind, model.kind_of(mark.id).unwrap());
            }
            // Nothing is lost from the count but buckets cut by the scan's edges.
            let (drawn, counted): (u32, u32) =
                (summarised.iter().map(|m| m.count).sum(), raw.iter().map(|m| m.count).sum());
            assert_eq!(counted, marks.range(from, to).len() as u32);
            let bucket = marks.summary_for(view.ms_per_px).map_or(0.0, |s| (1u64 << s.shift) as f64);
            let (least, most) =
                (marks.range(from + bucket, to - bucket).len(), marks.range(from - bucket, to + bucket).len());
            assert!((least..=most).contains(&(drawn as usize)), "{drawn} marks counted, not within {least}..={most}");
            // Each column's most important mark shows in it or beside it.
            for r in &raw {
                let near = summarised.iter().filter(|s| s.column.abs_diff(r.column) <= 1);
                assert!(
                    near.map(|s| s.kind.importance()).max().is_some_and(|i| i >= r.kind.importance()),
                    "column {} lost its {:?}",
                    r.column,
                    r.kind
                );
            }
        }
    }
}

#[test]
fn a_lag_narrower_than_a_pixel_still_shows_and_equal_columns_merge() {
    let sample = |time_ms, store_revision, cache_revision| super::staleness::LagSample {
        time_ms,
        store_revision,
        cache_revision,
        missing_since_ms: None,
    };
    let band = StalenessBand {
        api_server: "s".into(),
        lane: 0,
        samples: vec![
            sample(0, 5, 5),
            sample(100, 6, 5),   // 1 behind for 2 ms: a fifth of a pixel
            sample(102, 6, 6),   // current again
            sample(500, 9, 6),   // 3 behind
            sample(700, 10, 6),  // 4 behind
            sample(701, 10, 10), // caught up, 1 ms later
        ],
        max_behind: 4,
        max_lag_ms: 0,
        end_ms: 1000,
    };
    let view = Viewport { start_ms: 0.0, ms_per_px: 10.0, width_px: 100.0 };
    let mut runs: Vec<BandRun> = Vec::new();
    band_runs(&band, &view, &mut runs);
    let lagging: Vec<(i64, i64, u64)> =
        runs.iter().filter(|r| r.behind > 0).map(|r| (r.from_column, r.to_column, r.behind)).collect();
    assert_eq!(lagging, [(10, 11, 1), (50, 70, 3), (70, 71, 4)]);
    // Runs tile the columns without overlapping.
    assert!(runs.windows(2).all(|w| w[0].to_column <= w[1].from_column));
    assert!(runs.iter().all(|r| r.from_column < r.to_column));
}

// ---- hit testing ----

#[test]
fn clicking_picks_the_nearest_mark_on_the_lane_and_prefers_what_is_drawn() {
    let model = crowded(50);
    let layout = LaneLayout::new(&model.lanes);
    let lane = model.lane_named("a").unwrap();
    let y = layout.middle(lane);
    let view = Viewport { start_ms: 0.0, ms_per_px: 10.0, width_px: 1000.0 };
    // The crowd is at column 100: the violation wins over the watch marks.
    assert_eq!(hit_test(&model, &layout, &view, 100.4, y, 6.0), Some(25));
    assert_eq!(hit_test(&model, &layout, &view, 104.0, y, 6.0), Some(25));
    assert_eq!(hit_test(&model, &layout, &view, 120.0, y, 6.0), None);
    assert_eq!(hit_test(&model, &layout, &view, 898.0, y, 6.0), Some(51));
    // Another lane, or the axis, picks nothing.
    assert_eq!(hit_test(&model, &layout, &view, 100.0, layout.tops[0] + 2.0, 6.0), None);
    assert_eq!(hit_test(&model, &layout, &view, 100.0, 3.0, 6.0), None);
    assert_eq!(mark_position(&model, &layout, &view, 51), Some((900.5, y)));
}

#[test]
fn lanes_stack_under_the_axis_with_shorter_sub_lanes() {
    let model = TimelineModel::build(&run_pod_safety());
    let layout = LaneLayout::new(&model.lanes);
    let cache = model.lane_named("apiserver-2 cache").unwrap();
    let server = model.lane_named("apiserver-2").unwrap();
    assert!(layout.heights[cache] < layout.heights[server]);
    assert_eq!(layout.tops[cache], layout.bottom(server));
    assert_eq!(layout.lane_at(layout.middle(cache)), Some(cache));
    assert_eq!(layout.lane_at(1.0), None);
    assert_eq!(layout.lane_at(layout.total_height + 5.0), None);
}

// ---- tooltips ----

#[test]
fn a_stale_read_tooltip_says_when_where_what_and_how_stale() {
    let trace = run_pod_safety();
    let model = TimelineModel::build(&trace);
    let stale = trace.entries.iter().find(|e| model.kind_of(e.id) == Some(MarkKind::StaleRead)).unwrap();
    let tip = entry_tooltip(&trace, &model, stale.id).unwrap();
    assert!(tip.heading.starts_with(&recon_trace::text::fmt_time(stale.time_ms)), "{tip:?}");
    assert!(tip.heading.contains("kubelet-node-1"), "{tip:?}");
    assert_eq!(tip.lines[0], recon_trace::text::describe(stale));
    assert!(tip.lines[1].starts_with("Stale read: 12 revisions"), "{tip:?}");
}

// ---- the benchmark's run ----

#[test]
fn the_benchmarks_run_is_a_library_scenario_told_again_and_again_with_every_kind_of_mark() {
    let scenario = bench_scenario(20_000);
    let library = recon_catalog::scenario(super::bench::BENCH_LIBRARY_SCENARIO).unwrap();
    let original = recon_scenario::parse("library.yaml", library.yaml).unwrap();
    let periods = scenario.script.len() / original.script.len();
    assert_eq!(scenario.duration.0, original.duration.0 * periods as u64);
    assert_eq!(scenario.script[original.script.len()].at.0, original.script[0].at.0 + original.duration.0);
    let trace = bench_trace(20_000);
    let n = trace.entries.len();
    assert!((20_000..26_000).contains(&n), "about as many entries as asked: {n}");
    assert_eq!(bench_trace(20_000).hash(), trace.hash(), "deterministic");

    let model = TimelineModel::build(&trace);
    let lanes = names(&model);
    let k1 = lanes.iter().position(|l| *l == "kubelet-node-1").unwrap();
    assert_eq!(lanes[k1 + 1], "node-1");
    assert!(model.violations.len() >= periods, "a flap in every period: {}", model.violations.len());
    let kinds = model.kinds_present();
    for kind in [
        MarkKind::Write,
        MarkKind::Cache,
        MarkKind::Watch,
        MarkKind::Reconcile,
        MarkKind::StaleRead,
        MarkKind::TimeTravel,
        MarkKind::Container,
        MarkKind::Failure,
    ] {
        assert!(kinds.contains(&kind), "{kind:?}");
    }
    assert!(band(&model, "apiserver-2").max_behind > band(&model, "apiserver-1").max_behind);
}

#[test]
fn scaling_a_scenario_repeats_its_story_and_multiplies_its_replicas() {
    let original = recon_scenario::parse("pod-safety-59848.yaml", POD_SAFETY).unwrap();
    let s = scaled(&original, 3, 4);
    let period = original.duration.0;
    assert_eq!(s.duration.0, 4 * period);
    assert_eq!(s.script.len(), 4 * original.script.len());
    let last = &s.script[s.script.len() - 1];
    assert_eq!(last.at.0, original.script[original.script.len() - 1].at.0 + 3 * period);
    let (before, after) = (&original.api_servers[1].partitions, &s.api_servers[1].partitions);
    assert_eq!(after.len(), 4 * before.len());
    assert_eq!(
        (after[3].from.0, after[3].until.map(|u| u.0)),
        (before[0].from.0 + 3 * period, before[0].until.map(|u| u.0 + 3 * period))
    );
    assert_eq!(s.objects[0].spec["replicas"], 3 * original.objects[0].spec["replicas"].as_u64().unwrap());
    let applied = s.script.iter().find_map(|step| match &step.action {
        recon_scenario::StepAction::Apply { object, .. } => Some(object.spec["replicas"].clone()),
        _ => None,
    });
    assert_eq!(applied, Some(serde_json::json!(3)));
    // What the benchmark page sends its worker: it reads back as it was.
    let text = recon_scenario::to_yaml(&s);
    assert_eq!(recon_scenario::parse("scaled.yaml", &text).unwrap(), s);
}

// ---- informer bands and held reconciles ----

fn informer_list(component: &str, revision: u64, store_revision: u64) -> Event {
    Event::ListServed(Box::new(recon_trace::ListServed {
        component: component.into(),
        api_server: "apiserver-1".into(),
        request: "list Pods resourceVersion=\"0\"".into(),
        purpose: recon_trace::ReadPurpose::InformerList,
        served_from: ServedFrom::Cache,
        revision,
        store_revision,
        stale_ms: 0,
        partitioned: false,
        objects: Vec::new(),
    }))
}

fn held(object: &str, since_ms: u64, resource_version: u64, released: bool) -> Event {
    Event::SyncHeld {
        component: "rs".into(),
        held: Box::new(recon_abi::HeldSync {
            mitigation: recon_abi::Mitigation::StaleControllerConsistency,
            object: ObjectKey::new("ReplicaSet", "default", object),
            kind: "Pod".into(),
            resource_version,
            seen: 3,
            since_ms,
            skips: 2,
            released,
        }),
    }
}

#[test]
fn informer_band_is_how_many_revisions_the_components_view_trails_the_store() {
    let trace = trace_of(
        &lanes_with(&["rs"]),
        vec![
            (0, "etcd", write(5, ""), vec![]),
            (10, "rs", informer_list("rs", 5, 5), vec![]),
            (20, "etcd", write(6, "apiserver-1"), vec![]),
            (30, "etcd", write(7, "apiserver-1"), vec![]),
            (40, "rs", watch("rs", 6), vec![]),
            (50, "rs", watch("rs", 7), vec![]),
        ],
    );
    let model = TimelineModel::build(&trace);
    let band = model.informer_on(model.lane_named("rs").unwrap()).expect("a component lane has an informer band");
    let behind = |t: f64| band.behind_at(&model.store, t);
    assert_eq!([behind(5.0), behind(15.0), behind(25.0), behind(35.0), behind(45.0), behind(55.0)], [0, 0, 1, 2, 1, 0]);
    assert_eq!(band.max_behind, 2);
    assert_eq!(model.max_informer_behind(), 2);
}

#[test]
fn informer_band_has_no_view_before_the_first_list_and_after_a_crash() {
    let crashed = Event::ComponentCrashed { component: "rs".into(), reason: "out of fuel".into() };
    let trace = trace_of(
        &lanes_with(&["rs"]),
        vec![
            (0, "etcd", write(5, ""), vec![]),
            (10, "rs", informer_list("rs", 5, 5), vec![]),
            (20, "rs", crashed, vec![]),
            (30, "etcd", write(9, "apiserver-1"), vec![]),
            // A relist from a stale cache: the view goes back.
            (40, "rs", informer_list("rs", 4, 9), vec![]),
        ],
    );
    let model = TimelineModel::build(&trace);
    let band = model.informer_on(model.lane_named("rs").unwrap()).unwrap();
    assert_eq!(band.view_at(5.0), None);
    assert_eq!(band.view_at(25.0), None);
    assert_eq!(band.behind_at(&model.store, 35.0), 0, "no view, nothing drawn");
    assert_eq!(band.behind_at(&model.store, 45.0), 5);
}

#[test]
fn informer_band_columns_show_the_most_behind_within_each_pixel() {
    // A one-millisecond lag of 3 revisions, zoomed out to 100 ms a pixel,
    // still shows in its column.
    let trace = trace_of(
        &lanes_with(&["rs"]),
        vec![
            (0, "rs", informer_list("rs", 1, 1), vec![]),
            (500, "etcd", write(4, "apiserver-1"), vec![]),
            (501, "rs", watch("rs", 4), vec![]),
            (10_000, "etcd", write(5, "apiserver-1"), vec![]),
            (10_000, "rs", watch("rs", 5), vec![]),
        ],
    );
    let model = TimelineModel::build(&trace);
    let band = model.informer_on(model.lane_named("rs").unwrap()).unwrap();
    let view = Viewport { start_ms: 0.0, ms_per_px: 100.0, width_px: 100.0 };
    let mut runs = Vec::new();
    super::columns::informer_runs(band, &model.store, &view, &mut runs);
    let behind_in =
        |column: i64| runs.iter().find(|r| r.from_column <= column && column < r.to_column).map(|r| r.behind);
    assert_eq!(behind_in(5), Some(3));
    assert_eq!(behind_in(50).unwrap_or(0), 0);
}

#[test]
fn a_held_reconcile_is_a_span_on_its_components_lane_from_hold_to_release() {
    let trace = trace_of(
        &lanes_with(&["rs"]),
        vec![
            (100, "rs", held("web", 100, 12, false), vec![]),
            (150, "rs", held("other", 150, 13, false), vec![]),
            (900, "rs", held("web", 100, 12, true), vec![]),
            (1_000, "rs", watch("rs", 13), vec![]),
        ],
    );
    let model = TimelineModel::build(&trace);
    let lane = model.lane_named("rs").unwrap();
    let spans: Vec<(u64, Option<u64>, &str)> =
        model.waits.iter().map(|w| (w.from_ms, w.until_ms, w.object.as_str())).collect();
    assert_eq!(spans, [(100, Some(900), "ReplicaSet default/web"), (150, None, "ReplicaSet default/other")]);
    assert_eq!(model.waits[0].label(), "waiting for own Pod write rv 12");
    assert!(model.wait_at(lane, 500.0).is_some());
    assert_eq!(model.wait_at(lane, 950.0).map(|w| w.from_ms), Some(150), "never released: held to the end");
    assert!(model.wait_at(lane, 50.0).is_none());
    assert_eq!(model.waits_hook(), "rs:100-900,rs:150-");
}

#[test]
fn a_wait_ends_on_the_timeline_when_its_instance_crashes_and_its_tooltip_says_so() {
    let crashed = Event::ComponentCrashed { component: "rs".into(), reason: "out of fuel".into() };
    let trace = trace_of(
        &lanes_with(&["rs"]),
        vec![
            (100, "rs", held("web", 100, 12, false), vec![]),
            (400, "rs", crashed, vec![]),
            (1_000, "rs", watch("rs", 13), vec![]),
        ],
    );
    let model = TimelineModel::build(&trace);
    let lane = model.lane_named("rs").unwrap();
    assert_eq!(model.waits_hook(), "rs:100-400");
    assert!(!model.waits[0].released);
    assert!(model.wait_at(lane, 600.0).is_none(), "the new instance does not hold it");
    let tooltip = super::hover::wait_tooltip(&model, &model.waits[0]);
    assert!(tooltip.lines[1].contains("crashed or restarted"), "{:?}", tooltip.lines);
}

#[test]
fn an_informers_most_behind_over_a_stretch_is_the_most_at_any_of_its_milliseconds() {
    let trace = bench_trace(20_000);
    let model = TimelineModel::build(&trace);
    let (start, end) = (model.start_ms, model.end_ms);
    let mut checked = 0;
    for band in &model.informers {
        assert_eq!(band.peaks.len(), band.views.len());
        // Stretches of every width from a millisecond to a tenth of the run,
        // at edges that fall between milliseconds and on them.
        for width in [1.0, 7.5, 64.0, 1_000.0, (end - start) as f64 / 10.0] {
            let mut from = start as f64 - 3.0;
            while from < end as f64 {
                let to = from + width;
                // Entries fall on whole milliseconds, so the lag in force
                // at `from` is the one at its millisecond.
                let brute = (from.max(0.0).floor() as u64..)
                    .take_while(|t| (*t as f64) < to)
                    .map(|t| band.behind_at(&model.store, t as f64))
                    .max()
                    .unwrap_or(0);
                assert_eq!(band.max_behind_in(&model.store, from, to), brute, "{} over [{from}, {to})", band.component);
                checked += 1;
                from += width * 3.7;
            }
        }
    }
    assert!(checked > 1_000, "{checked}");
    assert!(model.informers.iter().any(|b| b.max_behind > 0));
}
