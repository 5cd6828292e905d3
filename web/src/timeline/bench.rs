//! A benchmark of the timeline's drawing, and the synthetic trace it draws.
//!
//! The app's `?bench=timeline` page mode calls [`synthetic_trace`] and
//! [`pan_benchmark`]; the trace is also useful to try the timeline on a run
//! far larger than the scenario library's.

use std::collections::VecDeque;

use recon_abi::{EventType, ObjectKey, PodRef, Status, StatusReason, Verb};
use recon_scenario::Check;
use recon_sim::rng::Rng;
use recon_trace::{Entry, EntryId, Event, Trace};
use recon_trace::{Lane, LaneId, LaneRole, ObjectVersion, ReadPurpose, ServedFrom};
use web_sys::HtmlCanvasElement;

use super::draw::{Frame, Scratch, Surface, draw};
use super::layout::LaneLayout;
use super::model::TimelineModel;
use super::theme::gutter_width;
use super::viewport::{Span, Viewport};

/// Share of the run visible while the benchmark pans.
const BENCH_VISIBLE_SHARE: f64 = 0.2;
/// Canvas width used when the canvas has no layout width (detached or hidden).
const BENCH_FALLBACK_WIDTH: f64 = 1200.0;

/// Builds the model of `trace` and redraws `canvas` `frames` times while
/// panning from the start of the run to its end with a fifth of it in view,
/// the first violation selected. Returns each frame's drawing time in
/// milliseconds (`performance.now()`); empty if the canvas cannot draw.
pub fn pan_benchmark(canvas: &HtmlCanvasElement, trace: &Trace, frames: u32) -> Vec<f64> {
    let Some(performance) = web_sys::window().and_then(|w| w.performance()) else { return Vec::new() };
    let Some(surface) = Surface::new(canvas) else { return Vec::new() };
    let model = TimelineModel::build(trace);
    let layout = LaneLayout::new(&model.lanes);
    let width = match canvas.client_width() {
        w if w > 0 => f64::from(w),
        _ => BENCH_FALLBACK_WIDTH,
    };
    let height = layout.total_height;
    surface.resize(width, height);

    let span = Span::new(model.start_ms, model.end_ms);
    let gutter = gutter_width(width);
    let plot_width = (width - gutter).max(1.0);
    let mut view = Viewport::fit(span, plot_width);
    view.ms_per_px *= BENCH_VISIBLE_SHARE;
    let travel = (span.end_ms - span.start_ms - view.width_px * view.ms_per_px).max(0.0);
    let selected = model.first_violation();
    let causes = selected.and_then(|id| trace.get(id)).map(|e| e.causes.clone()).unwrap_or_default();
    let mut scratch = Scratch::default();

    let mut times = Vec::with_capacity(frames as usize);
    for frame in 0..frames {
        let progress = if frames > 1 { f64::from(frame) / f64::from(frames - 1) } else { 0.0 };
        view.start_ms = span.start_ms + travel * progress;
        let started = performance.now();
        let input = Frame {
            model: &model,
            layout: &layout,
            view,
            selected,
            causes: &causes,
            hovered: None,
            cursor_ms: Some(view.time_at(view.width_px / 2.0)),
            width,
            gutter,
            height,
        };
        draw(&surface, &input, &mut scratch);
        times.push(performance.now() - started);
    }
    times
}

/// A realistic trace of exactly `events` entries: three API servers with
/// watch caches of different lag (the third cut off from etcd for a few
/// seconds every ten), four controllers, six nodes with their kubelets;
/// writes, cache applies, watch deliveries, reconciles, lists, conflicts,
/// container starts and stops, all linked to their causes; and, in every
/// partition, a kubelet restart that lists from the frozen cache: a stale
/// read, a time travel and a pod-identity violation. Deterministic.
pub fn synthetic_trace(events: usize) -> Trace {
    let mut synth = Synth::new();
    while synth.entries.len() < events {
        synth.tick();
    }
    // Causes only point back, so cutting the tail keeps every link valid.
    synth.entries.truncate(events);
    Trace { scenario: "synthetic".into(), seed: SYNTH_SEED, lanes: synth.lanes, entries: synth.entries }
}

const SYNTH_SEED: u64 = 0x7e1e;
const SERVERS: [&str; 3] = ["apiserver-1", "apiserver-2", "apiserver-3"];
/// Each server's watch cache lag, in milliseconds.
const CACHE_LAG_MS: [u64; 3] = [2, 12, 40];
/// The server that gets partitioned.
const PARTITIONED: usize = 2;
const PARTITION_EVERY_MS: u64 = 10_000;
const PARTITION_LASTS_MS: u64 = 3_000;
/// When, into a partition, a kubelet restarts onto the partitioned server.
const RESTART_AFTER_MS: u64 = 1_500;
const CONTROLLERS: [&str; 4] =
    ["scheduler", "replicaset-controller", "statefulset-controller", "deployment-controller"];
const NODES: usize = 6;
const PODS: u64 = 40;

/// A component of the synthetic cluster.
struct SynthComponent {
    name: String,
    server: usize,
    /// The node it runs containers on, for kubelets.
    node: Option<usize>,
    /// The last watch event it saw: the cause of its next reconcile.
    last_seen: Option<EntryId>,
}

/// A store write a cache has yet to apply.
struct Pending {
    due_ms: u64,
    revision: u64,
    write: EntryId,
    key: ObjectKey,
}

struct Synth {
    lanes: Vec<Lane>,
    entries: Vec<Entry>,
    rng: Rng,
    now: u64,
    revision: u64,
    /// Commit time of each revision (index = revision).
    committed_at: Vec<u64>,
    cache_revision: [u64; 3],
    last_apply: [Option<EntryId>; 3],
    pending: [VecDeque<Pending>; 3],
    components: Vec<SynthComponent>,
    /// Per node: the pods it runs and the entry that started each.
    running: Vec<Vec<(PodRef, EntryId)>>,
    partition_until: Option<u64>,
    next_partition_ms: u64,
    restart_due: Option<u64>,
}

impl Synth {
    fn new() -> Synth {
        let mut components: Vec<SynthComponent> = CONTROLLERS
            .iter()
            .enumerate()
            .map(|(i, name)| SynthComponent { name: name.to_string(), server: i % 2, node: None, last_seen: None })
            .collect();
        for n in 0..NODES {
            components.push(SynthComponent {
                name: format!("kubelet-node-{}", n + 1),
                server: n % 2,
                node: Some(n),
                last_seen: None,
            });
        }
        let mut synth = Synth {
            lanes: Vec::new(),
            entries: Vec::new(),
            rng: Rng::new(SYNTH_SEED),
            now: 0,
            revision: 0,
            committed_at: vec![0],
            cache_revision: [0; 3],
            last_apply: [None; 3],
            pending: Default::default(),
            components,
            running: vec![Vec::new(); NODES],
            partition_until: None,
            next_partition_ms: PARTITION_EVERY_MS / 2,
            restart_due: None,
        };
        // The lanes, in the simulator's order: the script, the store, each
        // server above its cache, the controllers, each node's kubelet above
        // the node, the checks.
        for name in ["script", "etcd"] {
            synth.lane(name);
        }
        for server in SERVERS {
            synth.lane(&format!("{server} cache"));
        }
        for name in CONTROLLERS {
            synth.lane(name);
        }
        for n in 1..=NODES {
            let agent = synth.lanes.len();
            synth.lane(&format!("kubelet-node-{n}"));
            let node = synth.lane(&format!("node-{n}"));
            synth.lanes[agent].role = LaneRole::NodeAgent { node };
        }
        synth.lane("checks");
        // The initial objects, then every component starting.
        for n in 0..NODES {
            synth.commit(ObjectKey::new("Node", "", format!("node-{}", n + 1)), Verb::Create, "scenario", "", None);
        }
        synth.cache_revision = [synth.revision; 3];
        synth.pending.iter_mut().for_each(VecDeque::clear);
        for c in 0..synth.components.len() {
            let (component, server) = (synth.components[c].name.clone(), SERVERS[synth.components[c].server]);
            let lane = component.clone();
            synth.push(&lane, Event::ComponentStarted { component, api_server: server.into(), restarts: 0 }, vec![]);
        }
        synth
    }

    fn push(&mut self, lane: &str, event: Event, causes: Vec<EntryId>) -> EntryId {
        let id = self.entries.len() as EntryId;
        // Cache events go on the cache's lane, as the simulator writes them.
        let lane = match &event {
            Event::CacheApply { api_server, .. } => self.lane(&format!("{api_server} cache")),
            _ => self.lane(lane),
        };
        self.entries.push(Entry { id, time_ms: self.now, lane, event, causes });
        id
    }

    /// The lane of this name, added on first use with the role its name has here.
    fn lane(&mut self, name: &str) -> LaneId {
        if let Some(i) = self.lanes.iter().position(|l| l.name == name) {
            return LaneId::from_index(i);
        }
        let role = match name {
            "script" => LaneRole::Script,
            "etcd" => LaneRole::Store,
            "checks" => LaneRole::Checks,
            _ if SERVERS.contains(&name) => LaneRole::ApiServer,
            _ if name.ends_with(" cache") => LaneRole::Cache { api_server: self.lane(name.trim_end_matches(" cache")) },
            _ if name.starts_with("node-") => LaneRole::Node,
            _ => LaneRole::Controller,
        };
        self.lanes.push(Lane { name: name.to_string(), role });
        LaneId::from_index(self.lanes.len() - 1)
    }

    fn chance(&mut self, one_in: u64) -> bool {
        self.rng.range_inclusive(1, one_in) == 1
    }

    fn uid(&mut self) -> String {
        let bits = self.rng.next_u64();
        format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            bits >> 32,
            bits & 0xffff,
            (bits >> 20) & 0xfff,
            (bits >> 8) & 0xfff,
            bits & 0xffff_ffff_ffff
        )
    }

    /// A committed write, queued for every cache.
    fn commit(&mut self, key: ObjectKey, verb: Verb, by: &str, via: &str, cause: Option<EntryId>) -> EntryId {
        self.revision += 1;
        self.committed_at.push(self.now);
        let uid = self.uid();
        let event = Event::StoreWrite {
            verb,
            key: key.clone(),
            uid,
            revision: self.revision,
            removed: verb == Verb::Delete,
            terminating: false,
            by: by.into(),
            via: via.into(),
            patch: None,
        };
        let write = self.push("etcd", event, cause.into_iter().collect());
        for (server, lag) in CACHE_LAG_MS.iter().enumerate() {
            let due_ms = self.now + lag + self.rng.range_inclusive(0, lag / 2);
            self.pending[server].push_back(Pending { due_ms, revision: self.revision, write, key: key.clone() });
        }
        write
    }

    fn tick(&mut self) {
        self.now += self.rng.range_inclusive(1, 4);
        self.partitions();
        for server in 0..SERVERS.len() {
            self.apply_due(server);
        }
        if self.restart_due.is_some_and(|at| self.now >= at) {
            self.restart_due = None;
            self.stale_restart();
        }
        let c = self.rng.range_inclusive(0, self.components.len() as u64 - 1) as usize;
        self.reconcile(c);
        if self.chance(40) {
            self.list(c);
        }
    }

    fn partitions(&mut self) {
        let server = SERVERS[PARTITIONED];
        if self.partition_until.is_none() && self.now >= self.next_partition_ms {
            let script =
                self.push("script", Event::Script { description: format!("partition {server} from etcd") }, vec![]);
            self.push(server, Event::Partition { api_server: server.into(), started: true }, vec![script]);
            self.partition_until = Some(self.now + PARTITION_LASTS_MS);
            self.next_partition_ms += PARTITION_EVERY_MS;
            self.restart_due = Some(self.now + RESTART_AFTER_MS);
        }
        if self.partition_until.is_some_and(|until| self.now >= until) {
            self.partition_until = None;
            self.push(server, Event::Partition { api_server: server.into(), started: false }, vec![]);
        }
    }

    /// The cache applies what is due (nothing while cut off), and tells its watchers.
    fn apply_due(&mut self, server: usize) {
        if server == PARTITIONED && self.partition_until.is_some() {
            return;
        }
        while self.pending[server].front().is_some_and(|p| p.due_ms <= self.now) {
            let Some(p) = self.pending[server].pop_front() else { break };
            let event_type = if p.revision % 7 == 0 { EventType::Added } else { EventType::Modified };
            let api_server = SERVERS[server];
            let event = Event::CacheApply {
                api_server: api_server.into(),
                revision: p.revision,
                key: p.key.clone(),
                event_type,
            };
            let apply = self.push(api_server, event, vec![p.write]);
            self.cache_revision[server] = p.revision;
            self.last_apply[server] = Some(apply);
            for c in 0..self.components.len() {
                if self.components[c].server != server || !self.chance(3) {
                    continue;
                }
                let component = self.components[c].name.clone();
                let uid = self.uid();
                let event = Event::WatchDelivered {
                    component: component.clone(),
                    api_server: api_server.into(),
                    watch: 0,
                    event_type,
                    key: p.key.clone(),
                    uid,
                    revision: p.revision,
                };
                let seen = self.push(&component, event, vec![apply]);
                self.components[c].last_seen = Some(seen);
            }
        }
    }

    fn reconcile(&mut self, c: usize) {
        let component = self.components[c].name.clone();
        let server = self.components[c].server;
        let pod = self.rng.range_inclusive(0, PODS - 1);
        let key = ObjectKey::new("Pod", "default", format!("web-{pod}"));
        let writes = self.chance(2);
        let actions = if writes { vec![format!("update {key}")] } else { vec![] };
        let event = Event::Reconcile {
            component: component.clone(),
            view_revision: self.cache_revision[server],
            inputs: vec![format!("MODIFIED {key}")],
            actions,
        };
        let causes = self.components[c].last_seen.into_iter().collect();
        let reconcile = self.push(&component, event, causes);
        if let Some(node) = self.components[c].node {
            self.run_containers(node, pod, reconcile);
        }
        if !writes {
            return;
        }
        if self.chance(25) {
            let status = Status::new(StatusReason::Conflict, "the object has been modified; please retry");
            let event = Event::WriteFailed {
                verb: Verb::Update,
                key,
                status,
                by: component.clone(),
                via: SERVERS[server].into(),
                patch: None,
            };
            self.push(&component, event, vec![reconcile]);
        } else {
            self.commit(key, Verb::Update, &component, SERVERS[server], Some(reconcile));
        }
    }

    /// A kubelet starts a pod it does not run, or stops one it does.
    fn run_containers(&mut self, node: usize, pod: u64, reconcile: EntryId) {
        let node_name = format!("node-{}", node + 1);
        let name = format!("web-{pod}");
        if let Some(i) = self.running[node].iter().position(|(p, _)| p.name == name) {
            if self.chance(3) {
                let (pod, _) = self.running[node].remove(i);
                self.push(&node_name, Event::ContainerStopped { node: node_name.clone(), pod }, vec![reconcile]);
            }
        } else if self.chance(3) {
            let pod = PodRef { namespace: "default".into(), name, uid: self.uid() };
            let start = self.push(
                &node_name,
                Event::ContainerStarted { node: node_name.clone(), pod: pod.clone() },
                vec![reconcile],
            );
            self.running[node].push((pod, start));
        }
    }

    /// A component lists from its server: from the cache, or fails while cut off.
    fn list(&mut self, c: usize) {
        let component = self.components[c].name.clone();
        let server = self.components[c].server;
        let api_server = SERVERS[server];
        let request = "list Pods resourceVersion=\"0\"".to_string();
        if server == PARTITIONED && self.partition_until.is_some() {
            let status = Status::new(StatusReason::ServiceUnavailable, format!("{api_server} cannot reach the store"));
            let event =
                Event::RequestFailed { component: component.clone(), api_server: api_server.into(), request, status };
            self.push(&component, event, vec![]);
            return;
        }
        let cause = self.last_apply[server].into_iter().collect();
        let event = self.list_event(&component, server, request);
        let list = self.push(&component, event, cause);
        self.components[c].last_seen = Some(list);
    }

    fn list_event(&mut self, component: &str, server: usize, request: String) -> Event {
        let revision = self.cache_revision[server];
        let stale_ms = if revision < self.revision { self.now - self.committed_at[revision as usize + 1] } else { 0 };
        let uid = self.uid();
        Event::ListServed {
            component: component.into(),
            api_server: SERVERS[server].into(),
            request,
            purpose: ReadPurpose::InformerList,
            served_from: ServedFrom::Cache,
            revision,
            store_revision: self.revision,
            stale_ms,
            partitioned: server == PARTITIONED && self.partition_until.is_some(),
            objects: vec![ObjectVersion { key: ObjectKey::new("Pod", "default", "web-0"), uid, revision }],
        }
    }

    /// #59848 in miniature: a kubelet restarts onto the partitioned server,
    /// lists from its frozen cache, goes back in time and starts a pod that
    /// another node already runs.
    fn stale_restart(&mut self) {
        let c = CONTROLLERS.len() + self.rng.range_inclusive(0, NODES as u64 - 1) as usize;
        let component = self.components[c].name.clone();
        let node = self.components[c].node.unwrap_or(0);
        let api_server = SERVERS[PARTITIONED];
        let script = self.push(
            "script",
            Event::Script { description: format!("{component} restarts and connects to {api_server}") },
            vec![],
        );
        let before = self.components[c].last_seen;
        let event = Event::ComponentCrashed { component: component.clone(), reason: "restarting (script)".into() };
        self.push(&component, event, vec![script]);
        let event =
            Event::ComponentStarted { component: component.clone(), api_server: api_server.into(), restarts: 1 };
        self.push(&component, event, vec![script]);
        self.components[c].server = PARTITIONED;
        let cause = self.last_apply[PARTITIONED].into_iter().collect();
        let event = self.list_event(&component, PARTITIONED, "list Pods spec.nodeName resourceVersion=\"0\"".into());
        let list = self.push(&component, event, cause);
        let message = format!("{component} went back in time: it observed an older revision from {api_server}");
        let event = Event::Violation { check: Check::TimeTravel, message };
        self.push(&component, event, [Some(list), before].into_iter().flatten().collect());
        let event = Event::Reconcile {
            component: component.clone(),
            view_revision: self.cache_revision[PARTITIONED],
            inputs: vec!["ADDED Pod default/web-0".into()],
            actions: vec!["start container default/web-0".into()],
        };
        let reconcile = self.push(&component, event, vec![list]);
        let node_name = format!("node-{}", node + 1);
        let pod = PodRef { namespace: "default".into(), name: "web-0".into(), uid: self.uid() };
        let event = Event::ContainerStarted { node: node_name.clone(), pod: pod.clone() };
        let start = self.push(&node_name, event, vec![reconcile]);
        let other = self.running.iter().enumerate().find_map(|(n, pods)| {
            (n != node).then(|| pods.iter().find(|(p, _)| p.name == "web-0")).flatten().map(|(_, e)| (n, *e))
        });
        if let Some((other_node, other_start)) = other {
            let message =
                format!("pod default/web-0 runs on two nodes at once: {node_name} and node-{}", other_node + 1);
            self.push("checks", Event::Violation { check: Check::PodIdentity, message }, vec![start, other_start]);
        }
        self.running[node].push((pod, start));
        self.components[c].last_seen = Some(list);
    }
}
