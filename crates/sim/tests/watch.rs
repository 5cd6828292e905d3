//! Watches as client libraries rely on them: periodic bookmarks, the watch
//! cache's event window (410 Gone once a watch's history has left it),
//! watches served by etcd when the cache is off (etcd's compaction, not the
//! cache's window, decides what is gone), etcd's periodic compaction, and
//! where a watch-list is served. Each test cites the Kubernetes
//! documentation statement it checks, in our words.

use recon_abi::{EventType, StatusReason};
use recon_sim::api::{Request, Selection, WatchRequest};
use recon_sim::{Reply, Sim};
use recon_trace::{Event, ReadPurpose, ServedFrom};

/// One API server (its settings spliced in from `server`), top-level
/// settings from `top`, and a ConfigMap created every 100ms from 100ms to
/// 600ms (revisions 1..=6).
fn cluster(server: &str, top: &str) -> Sim {
    let yaml = format!(
        r#"
name: watch
duration: 12m
network: {{ latency: {{ min: 1ms, max: 1ms }} }}
{top}
apiServers:
  - name: apiserver-1
{server}
script:
  - {{ at: 100ms, create: {{ apiVersion: v1, kind: ConfigMap, metadata: {{ name: a }} }} }}
  - {{ at: 200ms, create: {{ apiVersion: v1, kind: ConfigMap, metadata: {{ name: b }} }} }}
  - {{ at: 300ms, create: {{ apiVersion: v1, kind: ConfigMap, metadata: {{ name: c }} }} }}
  - {{ at: 400ms, create: {{ apiVersion: v1, kind: ConfigMap, metadata: {{ name: d }} }} }}
  - {{ at: 500ms, create: {{ apiVersion: v1, kind: ConfigMap, metadata: {{ name: e }} }} }}
  - {{ at: 600ms, create: {{ apiVersion: v1, kind: ConfigMap, metadata: {{ name: f }} }} }}
"#
    );
    let scenario = recon_scenario::parse("test.yaml", &yaml).expect("test scenario parses");
    Sim::new(&scenario, Box::new(|_| None)).expect("no controllers needed")
}

fn watch(rv: &str, bookmarks: bool) -> Request {
    Request::Watch(WatchRequest {
        selection: Selection { kind: "ConfigMap".into(), ..Default::default() },
        resource_version: Some(rv.into()),
        send_initial_events: false,
        allow_watch_bookmarks: bookmarks,
    })
}

fn watch_list() -> Request {
    Request::Watch(WatchRequest {
        selection: Selection { kind: "ConfigMap".into(), ..Default::default() },
        resource_version: None,
        send_initial_events: true,
        allow_watch_bookmarks: true,
    })
}

/// The (type, revision) of every event a watch has been sent.
fn events(sim: &Sim, id: u64) -> Vec<(EventType, u64)> {
    sim.responses(id)
        .iter()
        .flat_map(|r| match r {
            Reply::Events { events, .. } => events.clone(),
            _ => Vec::new(),
        })
        .map(|(e, _)| (e.event_type, e.object.revision().unwrap_or(0)))
        .collect()
}

fn bookmarks(sim: &Sim, id: u64) -> Vec<u64> {
    events(sim, id).into_iter().filter(|(t, _)| *t == EventType::Bookmark).map(|(_, r)| r).collect()
}

fn failed(sim: &Sim, id: u64) -> Option<StatusReason> {
    sim.responses(id).iter().find_map(|r| if let Reply::Failed(s) = r { Some(s.reason) } else { None })
}

fn opened(sim: &Sim, id: u64) -> bool {
    sim.responses(id).iter().any(|r| matches!(r, Reply::WatchOpened { .. }))
}

// API Concepts → "Watch bookmarks": a client asks for bookmarks with
// allowWatchBookmarks=true; a BOOKMARK carries only a resourceVersion, and
// says the client has every change up to it. The watch cache sends one to
// such a watch about once a minute (here: every `bookmarkInterval`).
#[test]
fn a_watch_that_asks_for_bookmarks_gets_one_every_interval_at_the_caches_revision() {
    let mut sim = cluster("    watchCache: { bookmarkInterval: 2s }", "");
    sim.run_until(1_000);
    let id = sim.request("apiserver-1", watch("6", true)).unwrap();
    sim.run_until(2_900);
    assert!(bookmarks(&sim, id).is_empty(), "the first bookmark is due an interval after the watch opened");
    sim.run_until(3_100);
    assert_eq!(bookmarks(&sim, id), [6], "a bookmark at the cache's revision");
    sim.run_until(7_100);
    assert_eq!(bookmarks(&sim, id), [6, 6, 6], "one per interval");
}

// API Concepts → "Watch bookmarks": bookmarks are sent only to watches
// that asked for them.
#[test]
fn a_watch_that_does_not_ask_for_bookmarks_gets_none() {
    let mut sim = cluster("    watchCache: { bookmarkInterval: 2s }", "");
    sim.run_until(1_000);
    let id = sim.request("apiserver-1", watch("6", false)).unwrap();
    sim.run_until(20_000);
    assert!(opened(&sim, id));
    assert!(events(&sim, id).is_empty(), "no bookmarks and no changes: {:?}", events(&sim, id));
}

// API Concepts → "Watch bookmarks"; the watch cache's bookmark frequency
// is a minute: with the default, none in the first minute, then one.
#[test]
fn bookmarks_come_about_once_a_minute_by_default() {
    let mut sim = cluster("", "");
    sim.run_until(1_000);
    let id = sim.request("apiserver-1", watch("0", true)).unwrap();
    sim.run_until(60_000);
    assert!(bookmarks(&sim, id).is_empty());
    sim.run_until(62_000);
    assert_eq!(bookmarks(&sim, id), [6]);
}

// API Concepts → "Watch bookmarks": bookmarks come from the watch cache;
// a watch etcd serves (the cache off) gets none, which the documentation
// allows (a client must not assume any bookmarks at all).
#[test]
fn a_watch_served_by_etcd_gets_no_bookmarks() {
    let mut sim = cluster("    watchCache: { enabled: false, bookmarkInterval: 2s }", "");
    sim.run_until(1_000);
    let id = sim.request("apiserver-1", watch("6", true)).unwrap();
    sim.run_until(10_000);
    assert!(opened(&sim, id));
    assert!(bookmarks(&sim, id).is_empty());
}

// API Concepts → "Efficient detection of changes": a watch from a
// resourceVersion whose history the server no longer has is answered
// 410 Gone, and the client must list again. The watch cache keeps a window
// of recent events (`windowEvents`): a watch from within it resumes, one
// from before it is gone.
#[test]
fn a_watch_from_before_the_caches_event_window_is_gone() {
    let mut sim = cluster("    watchCache: { windowEvents: 3 }", "");
    sim.run_until(1_000);
    let inside = sim.request("apiserver-1", watch("3", false)).unwrap();
    let outside = sim.request("apiserver-1", watch("2", false)).unwrap();
    sim.run_until(1_100);
    let added = |rev| (EventType::Added, rev);
    assert_eq!(events(&sim, inside), [added(4), added(5), added(6)], "the last three events are in the window");
    assert_eq!(failed(&sim, outside), Some(StatusReason::Gone));
}

// As above, with the window bounded in time (`windowDuration`), as the
// Kubernetes watch cache keeps events for a while: once an event has been
// in the window longer than that, a watch from before it is gone.
#[test]
fn events_leave_a_window_bounded_in_time_once_they_are_older_than_it() {
    let mut sim = cluster("    watchCache: { windowDuration: 2s }", "");
    sim.run_until(2_050);
    let early = sim.request("apiserver-1", watch("1", false)).unwrap();
    sim.run_until(2_450);
    let late = sim.request("apiserver-1", watch("1", false)).unwrap();
    sim.run_until(3_000);
    assert_eq!(events(&sim, early).len(), 5, "revisions 2..=6 were all younger than 2s at 2.05s");
    assert_eq!(failed(&sim, late), Some(StatusReason::Gone), "revision 2, applied at ~0.2s, had left by 2.45s");
}

// API Concepts → "Efficient detection of changes" (410 Gone when the
// history is gone) with etcd's compaction (Operations for etcd →
// "History compaction"): with the watch cache off, a watch is etcd's,
// so a revision etcd has compacted is gone, even though the API server's
// own event stream still holds it.
#[test]
fn with_the_watch_cache_off_a_watch_from_a_compacted_revision_is_gone() {
    let mut without_compaction = cluster("    watchCache: { enabled: false }", "");
    // apiserver-1 without a cache, apiserver-2 with one; the script
    // compacts etcd to revision 2 (keeping the last two).
    let mut with_compaction = {
        let yaml = r#"
name: watch
duration: 10s
network: { latency: { min: 1ms, max: 1ms } }
apiServers:
  - name: apiserver-1
    watchCache: { enabled: false }
  - name: apiserver-2
script:
  - { at: 100ms, create: { apiVersion: v1, kind: ConfigMap, metadata: { name: a } } }
  - { at: 200ms, create: { apiVersion: v1, kind: ConfigMap, metadata: { name: b } } }
  - { at: 300ms, create: { apiVersion: v1, kind: ConfigMap, metadata: { name: c } } }
  - { at: 400ms, create: { apiVersion: v1, kind: ConfigMap, metadata: { name: d } } }
  - { at: 700ms, compact: { keep: 2 } }
"#;
        Sim::new(&recon_scenario::parse("t.yaml", yaml).unwrap(), Box::new(|_| None)).unwrap()
    };
    with_compaction.run_until(1_000);
    assert_eq!(with_compaction.store().compacted(), 2);
    let by_etcd = with_compaction.request("apiserver-1", watch("1", false)).unwrap();
    let by_cache = with_compaction.request("apiserver-2", watch("1", false)).unwrap();
    let at_the_compaction_point = with_compaction.request("apiserver-1", watch("2", false)).unwrap();
    with_compaction.run_until(1_100);
    assert_eq!(failed(&with_compaction, by_etcd), Some(StatusReason::Gone), "etcd no longer has revision 2");
    assert_eq!(events(&with_compaction, by_cache).len(), 3, "the cache's window still has revisions 2..=4");
    assert_eq!(events(&with_compaction, at_the_compaction_point).len(), 2, "revisions 3 and 4");
    // Without compaction the same etcd watch streams the history.
    without_compaction.run_until(1_000);
    let id = without_compaction.request("apiserver-1", watch("1", false)).unwrap();
    without_compaction.run_until(1_100);
    assert_eq!(events(&without_compaction, id).len(), 5);
}

// A watch served by etcd goes to etcd: through an API server cut off from
// it, it fails (503) after the request timeout, where a cache would have
// answered from its window.
#[test]
fn with_the_watch_cache_off_a_watch_needs_etcd() {
    let server = "    watchCache: { enabled: false }\n    partitions: [ { from: 800ms } ]";
    let mut sim = cluster(server, "");
    sim.run_until(1_000);
    let id = sim.request("apiserver-1", watch("3", false)).unwrap();
    sim.run_until(1_900);
    assert!(sim.responses(id).is_empty(), "waiting for etcd");
    sim.run_until(2_100);
    assert_eq!(failed(&sim, id), Some(StatusReason::ServiceUnavailable));
}

// kube-apiserver's `--etcd-compaction-interval` (Command line tools
// reference → kube-apiserver; default 5m): the API server compacts etcd
// periodically, each time up to the revision etcd had at the previous
// compaction, so about one interval of history stays.
#[test]
fn etcd_is_compacted_every_interval_up_to_the_revision_of_the_previous_one() {
    let mut sim = cluster("", "etcd: { compactionInterval: 250ms }");
    sim.run_until(260);
    assert_eq!(sim.store().compacted(), 0, "the first tick only notes the revision (2)");
    sim.run_until(510);
    assert_eq!(sim.store().compacted(), 2, "the second compacts to the first's revision");
    sim.run_until(760);
    assert_eq!(sim.store().compacted(), 4);
    let compactions = sim.trace().entries.iter().filter(|e| matches!(e.event, Event::Compaction { .. })).count();
    assert_eq!(compactions, 2, "each compaction is on the store's lane");
}

// The same flag's default is five minutes: nothing is compacted before ten
// minutes (the second tick), and then up to the revision at five.
#[test]
fn etcd_is_compacted_every_five_minutes_by_default() {
    let mut sim = cluster("", "");
    sim.run_until(599_000);
    assert_eq!(sim.store().compacted(), 0);
    sim.run_until(601_000);
    assert_eq!(sim.store().compacted(), 6);
}

// `0` turns the compactor off (the flag's documented meaning).
#[test]
fn a_compaction_interval_of_zero_never_compacts() {
    let mut sim = cluster("", "etcd: { compactionInterval: 0 }");
    sim.run_until(720_000);
    assert_eq!(sim.store().compacted(), 0);
}

// KEP-3157 (watch-list): the initial state is sent from the watch cache
// once it has reached etcd's current revision, whether or not plain lists
// are (`consistentReadsFromCache` is off here) …
#[test]
fn a_watch_list_is_served_from_the_cache_even_without_consistent_reads_from_cache() {
    let mut sim = cluster("    consistentReadsFromCache: false", "");
    sim.run_until(1_000);
    let id = sim.request("apiserver-1", watch_list()).unwrap();
    sim.run_until(1_100);
    match &sim.responses(id)[0] {
        Reply::WatchOpened { initial: Some(served), bookmark: true, .. } => {
            assert_eq!((served.from, served.revision, served.objects.len()), (ServedFrom::Cache, 6, 6));
        }
        other => panic!("expected the watch to open with its initial state, got {other:?}"),
    }
}

// … and with the watch cache off, etcd serves it: the initial state is
// read from etcd and the watch streams etcd's events after it.
#[test]
fn with_the_watch_cache_off_a_watch_list_is_served_by_etcd() {
    let mut sim = cluster("    watchCache: { enabled: false }", "");
    sim.run_until(350);
    let id = sim.request("apiserver-1", watch_list()).unwrap();
    sim.run_until(1_000);
    match &sim.responses(id)[0] {
        Reply::WatchOpened { initial: Some(served), bookmark: true, .. } => {
            assert_eq!((served.from, served.revision, served.objects.len()), (ServedFrom::Store, 3, 3));
        }
        other => panic!("expected the watch to open with its initial state, got {other:?}"),
    }
    let added = |rev| (EventType::Added, rev);
    assert_eq!(events(&sim, id), [added(4), added(5), added(6)]);
}

/// A scheduler (its reflectors watch pods and nodes, which nothing
/// changes) while ConfigMaps churn through a 3-event window; its
/// connection breaks at 20s, so its reflectors resume their watches.
fn quiet_informer(bookmark_interval: &str) -> Sim {
    let mut script = String::new();
    for i in 0..10 {
        script += &format!(
            "  - {{ at: {}ms, create: {{ apiVersion: v1, kind: ConfigMap, metadata: {{ name: cm-{i} }} }} }}\n",
            1_000 + i * 500
        );
    }
    let yaml = format!(
        r#"
name: quiet-informer
duration: 30s
network: {{ latency: {{ min: 1ms, max: 1ms }} }}
apiServers:
  - name: apiserver-1
    watchCache: {{ windowEvents: 3, bookmarkInterval: {bookmark_interval} }}
nodes: [ {{ name: node-1 }} ]
components:
  - {{ name: scheduler, controller: scheduler, apiServer: apiserver-1 }}
script:
{script}  - {{ at: 20s, disconnect: {{ component: scheduler }} }}
"#
    );
    let scenario = recon_scenario::parse("t.yaml", &yaml).expect("scenario parses");
    let mut sim =
        Sim::new(&scenario, Box::new(|c| recon_catalog::instantiate(&c.controller))).expect("built-ins instantiate");
    sim.run();
    sim
}

/// Whether the scheduler's resumed watches were refused 410 Gone and it listed again.
fn relisted_after_the_break(sim: &Sim) -> (bool, bool) {
    let after = sim.trace().entries.iter().filter(|e| e.time_ms >= 20_000);
    let mut gone = false;
    let mut listed = false;
    for e in after {
        match &e.event {
            Event::RequestFailed { component, status, .. } if component == "scheduler" => {
                gone |= status.reason == StatusReason::Gone;
            }
            Event::ListServed(list) if list.component == "scheduler" && list.purpose == ReadPurpose::InformerList => {
                listed = true;
            }
            _ => {}
        }
    }
    (gone, listed)
}

// API Concepts → "Watch bookmarks": a bookmark tells the client it has
// every change up to the bookmark's resourceVersion, so a watch restarted
// after it resumes from there — which keeps a client whose objects do not
// change from a 410 Gone and a full relist once other writes push its last
// revision out of the window. The host's reflector moves its revision on a
// bookmark, as client-go's does.
#[test]
fn a_bookmark_advances_the_revision_a_reflector_resumes_from() {
    let with_bookmarks = quiet_informer("5s");
    let delivered = with_bookmarks
        .trace()
        .entries
        .iter()
        .filter(|e| matches!(&e.event, Event::WatchDelivered { event_type: EventType::Bookmark, .. }))
        .count();
    assert!(delivered >= 2, "each of its watches had bookmarks before the break ({delivered})");
    assert_eq!(relisted_after_the_break(&with_bookmarks), (false, false), "resumed from the bookmarks' revision");

    let without = quiet_informer("1m");
    assert_eq!(relisted_after_the_break(&without), (true, true), "resumed from its list's revision: gone");
}

// Bad values of the new settings are scenario errors at their line and
// column, like every other setting.
#[test]
fn bad_watch_and_compaction_settings_are_errors_at_their_line_and_column() {
    let text = "\
name: x
apiServers:
  - name: a
    watchCache: { bookmarkInterval: 0, windowEvents: 0, windowDuration: 0ms }
";
    let error = recon_scenario::parse("bad.yaml", text).unwrap_err().to_string();
    assert_eq!(
        error,
        "bad.yaml:4:37: bookmarkInterval must be at least 1ms\n\
         bad.yaml:4:54: windowEvents must be at least 1\n\
         bad.yaml:4:73: windowDuration must be at least 1ms"
    );
    let negative =
        recon_scenario::parse("neg.yaml", "name: x\netcd: { compactionInterval: -5m }\napiServers: [{name: a}]\n")
            .unwrap_err()
            .to_string();
    assert!(negative.starts_with("neg.yaml:2:"), "{negative}");
    let unknown = recon_scenario::parse("u.yaml", "name: x\netcd: { compactEvery: 5m }\napiServers: [{name: a}]\n")
        .unwrap_err()
        .to_string();
    assert!(unknown.starts_with("u.yaml:2:") && unknown.contains("compactionInterval"), "{unknown}");
}
