//! The API server's read semantics, observed from outside: the
//! resourceVersion table, KEP-2340 consistent reads, the watch cache's lag
//! and partitions, compaction (410) and compare-and-swap.
//!
//! Each test builds a cluster with no controllers, drives it with the
//! scenario's script (kubectl) and raw requests, and inspects the replies.

use recon_abi::{Action, Object, ObjectKey, Outcome, StatusReason};
use recon_sim::api::{ListRequest, Request, Selection, VersionMatch, WatchRequest};
use recon_sim::{Reply, Sim};
use recon_trace::ServedFrom;

/// Two API servers and three pods created at 100ms, 200ms, 300ms through
/// apiserver-1. `extra` is spliced into apiserver-2's settings.
fn cluster(extra: &str) -> Sim {
    let yaml = format!(
        r#"
name: api-semantics
duration: 60s
network: {{ latency: {{ min: 1ms, max: 1ms }} }}
apiServers:
  - name: apiserver-1
  - name: apiserver-2
{extra}
script:
  - {{ at: 100ms, create: {{ apiVersion: v1, kind: Pod, metadata: {{ name: a }} }} }}
  - {{ at: 200ms, create: {{ apiVersion: v1, kind: Pod, metadata: {{ name: b }} }} }}
  - {{ at: 300ms, create: {{ apiVersion: v1, kind: Pod, metadata: {{ name: c }} }} }}
"#
    );
    let scenario = recon_scenario::parse("test.yaml", &yaml).expect("test scenario parses");
    Sim::new(&scenario, Box::new(|_| None)).expect("no controllers needed")
}

fn pods() -> Selection {
    Selection { kind: "Pod".into(), ..Default::default() }
}

fn list(rv: Option<&str>, m: Option<VersionMatch>, limit: Option<usize>) -> Request {
    Request::List(ListRequest {
        selection: pods(),
        resource_version: rv.map(Into::into),
        version_match: m,
        limit,
        continue_token: None,
    })
}

/// Sends `request` to `server` at virtual time `at`, runs until `until`, returns the replies.
fn ask(sim: &mut Sim, at: u64, server: &str, request: Request, until: u64) -> Vec<Reply> {
    sim.run_until(at);
    let id = sim.request(server, request).unwrap();
    sim.run_until(until);
    sim.responses(id).to_vec()
}

fn names(reply: &Reply) -> Vec<String> {
    match reply {
        Reply::Read(s) => s.objects.iter().map(|o| o.metadata.name.clone()).collect(),
        other => panic!("expected a read, got {other:?}"),
    }
}

fn served(reply: &Reply) -> (ServedFrom, u64) {
    match reply {
        Reply::Read(s) => (s.from, s.revision),
        other => panic!("expected a read, got {other:?}"),
    }
}

fn failed(reply: &Reply) -> StatusReason {
    match reply {
        Reply::Failed(s) => s.reason,
        other => panic!("expected a failure, got {other:?}"),
    }
}

const PARTITIONED_AT_150MS: &str = "    partitions: [ { from: 150ms, until: 10s } ]";

#[test]
fn resource_version_zero_is_served_from_a_frozen_cache_during_a_partition() {
    let mut sim = cluster(PARTITIONED_AT_150MS);
    let replies = ask(&mut sim, 1_000, "apiserver-2", list(Some("0"), None, None), 2_000);
    assert_eq!(names(&replies[0]), ["a"], "the cache froze after pod a");
    assert_eq!(served(&replies[0]), (ServedFrom::Cache, 1));
    assert_eq!(sim.store().revision(), 3);
}

#[test]
fn unset_resource_version_is_a_quorum_read_from_the_store() {
    let mut sim = cluster("");
    let replies = ask(&mut sim, 1_000, "apiserver-2", list(None, None, None), 2_000);
    assert_eq!(names(&replies[0]), ["a", "b", "c"]);
    assert_eq!(served(&replies[0]), (ServedFrom::Store, 3));
}

#[test]
fn quorum_read_through_a_partitioned_server_fails_after_the_timeout() {
    let mut sim = cluster(PARTITIONED_AT_150MS);
    sim.run_until(1_000);
    let id = sim.request("apiserver-2", list(None, None, None)).unwrap();
    sim.run_until(1_500);
    assert!(sim.responses(id).is_empty(), "still waiting for the store before the 1s timeout");
    sim.run_until(2_100);
    assert_eq!(failed(&sim.responses(id)[0]), StatusReason::ServiceUnavailable);
}

// The watch cache blocks a read that needs a newer revision for up to its
// block timeout (3 s by default), separately from the request timeout that
// bounds a wait for etcd; then it answers 504 Timeout ("Too large resource
// version").
#[test]
fn not_older_than_waits_for_a_partitioned_cache_and_times_out() {
    let mut sim = cluster(PARTITIONED_AT_150MS);
    sim.run_until(1_000);
    let id = sim.request("apiserver-2", list(Some("3"), None, None)).unwrap();
    sim.run_until(3_900);
    assert!(sim.responses(id).is_empty(), "still waiting: the cache's 3s, not the 1s request timeout");
    sim.run_until(4_100);
    assert_eq!(failed(&sim.responses(id)[0]), StatusReason::Timeout);
}

#[test]
fn the_cache_wait_is_its_own_setting() {
    let mut sim = cluster(&format!("{PARTITIONED_AT_150MS}\n    watchCache: {{ waitTimeout: 500ms }}"));
    let replies = ask(&mut sim, 1_000, "apiserver-2", list(Some("3"), None, None), 1_600);
    assert_eq!(failed(&replies[0]), StatusReason::Timeout);
}

#[test]
fn not_older_than_is_served_once_a_lagging_cache_catches_up() {
    let mut sim = cluster("    watchCache: { lag: 400ms }");
    // At 320ms the store is at revision 3 but apiserver-2 has seen none of it.
    sim.run_until(320);
    let id = sim.request("apiserver-2", list(Some("3"), None, None)).unwrap();
    sim.run_until(600);
    assert!(sim.responses(id).is_empty(), "the cache is still 400ms behind");
    sim.run_until(1_000);
    assert_eq!(served(&sim.responses(id)[0]), (ServedFrom::Cache, 3));
}

#[test]
fn not_older_than_is_served_at_once_when_the_cache_is_newer() {
    let mut sim = cluster("");
    let replies = ask(&mut sim, 1_000, "apiserver-2", list(Some("2"), None, None), 1_100);
    assert_eq!(served(&replies[0]), (ServedFrom::Cache, 3), "not older than 2 may be newer");
}

#[test]
fn not_older_than_match_with_zero_means_any() {
    let mut sim = cluster(PARTITIONED_AT_150MS);
    let replies = ask(&mut sim, 1_000, "apiserver-2", list(Some("0"), Some(VersionMatch::NotOlderThan), None), 1_100);
    assert_eq!(served(&replies[0]), (ServedFrom::Cache, 1));
}

#[test]
fn exact_reads_history_from_the_store() {
    let mut sim = cluster("");
    let replies = ask(&mut sim, 1_000, "apiserver-1", list(Some("2"), Some(VersionMatch::Exact), None), 1_100);
    assert_eq!(names(&replies[0]), ["a", "b"]);
    assert_eq!(served(&replies[0]), (ServedFrom::Store, 2));
}

#[test]
fn resource_version_with_limit_is_exact() {
    let mut sim = cluster("");
    let replies = ask(&mut sim, 1_000, "apiserver-1", list(Some("2"), None, Some(10)), 1_100);
    assert_eq!(served(&replies[0]), (ServedFrom::Store, 2));
}

#[test]
fn invalid_combinations_are_bad_requests() {
    let mut sim = cluster("");
    let r = ask(&mut sim, 1_000, "apiserver-1", list(None, Some(VersionMatch::Exact), None), 1_100);
    assert_eq!(failed(&r[0]), StatusReason::BadRequest);
    let r = ask(&mut sim, 1_100, "apiserver-1", list(None, Some(VersionMatch::NotOlderThan), None), 1_200);
    assert_eq!(failed(&r[0]), StatusReason::BadRequest);
    let r = ask(&mut sim, 1_200, "apiserver-1", list(Some("x"), None, None), 1_300);
    assert_eq!(failed(&r[0]), StatusReason::BadRequest);
}

#[test]
fn pages_continue_at_the_revision_of_the_first_page() {
    let mut sim = cluster("");
    let first = ask(&mut sim, 1_000, "apiserver-1", list(None, None, Some(2)), 1_100);
    let Reply::Read(page) = &first[0] else { panic!("{first:?}") };
    assert_eq!(names(&first[0]), ["a", "b"]);
    let token = page.continue_token.clone().expect("a third pod remains");
    // A write between pages must not show up in the second page.
    sim.run_until(1_200);
    let id = sim
        .request(
            "apiserver-1",
            Request::Write(Action::Create {
                object: Object {
                    api_version: "v1".into(),
                    kind: "Pod".into(),
                    metadata: recon_abi::ObjectMeta {
                        name: "d".into(),
                        namespace: "default".into(),
                        ..Default::default()
                    },
                    ..Default::default()
                },
                dry_run: false,
            }),
        )
        .unwrap();
    sim.run_until(1_300);
    assert!(matches!(sim.responses(id)[0], Reply::Written { outcome: Outcome::Ok(_), .. }));
    let next = Request::List(ListRequest {
        selection: pods(),
        limit: Some(2),
        continue_token: Some(token),
        ..Default::default()
    });
    let second = ask(&mut sim, 1_300, "apiserver-1", next, 1_400);
    assert_eq!(names(&second[0]), ["c"]);
    assert_eq!(served(&second[0]), (ServedFrom::Store, 3));
}

#[test]
fn exact_read_below_the_compaction_point_is_gone() {
    let scenario = recon_scenario::parse(
        "t.yaml",
        r#"
name: compaction
duration: 5s
network: { latency: { min: 1ms, max: 1ms } }
apiServers: [ { name: apiserver-1 } ]
script:
  - { at: 100ms, create: { apiVersion: v1, kind: Pod, metadata: { name: a } } }
  - { at: 200ms, create: { apiVersion: v1, kind: Pod, metadata: { name: b } } }
  - { at: 300ms, compact: { keep: 0 } }
"#,
    )
    .unwrap();
    let mut sim = Sim::new(&scenario, Box::new(|_| None)).unwrap();
    let kept = ask(&mut sim, 1_000, "apiserver-1", list(Some("2"), Some(VersionMatch::Exact), None), 1_100);
    assert_eq!(names(&kept[0]), ["a", "b"], "the compaction point itself is still readable");
    let gone = ask(&mut sim, 1_100, "apiserver-1", list(Some("1"), Some(VersionMatch::Exact), None), 1_200);
    assert_eq!(failed(&gone[0]), StatusReason::Gone);
}

#[test]
fn kep_2340_waits_for_the_cache_to_reach_the_store_revision() {
    let mut sim = cluster("    consistentReadsFromCache: true\n    watchCache: { lag: 400ms }");
    sim.run_until(320);
    let id = sim.request("apiserver-2", list(None, None, None)).unwrap();
    sim.run_until(600);
    assert!(sim.responses(id).is_empty(), "waiting for the cache, not reading the store");
    sim.run_until(1_000);
    assert_eq!(served(&sim.responses(id)[0]), (ServedFrom::Cache, 3));
}

// KEP-2340: a consistent read whose cache does not catch up within the
// cache's wait falls back to reading etcd.
#[test]
fn kep_2340_falls_back_to_the_store_when_the_cache_is_too_slow() {
    let mut sim = cluster("    consistentReadsFromCache: true\n    watchCache: { lag: 5s }");
    sim.run_until(320);
    let id = sim.request("apiserver-2", list(None, None, None)).unwrap();
    sim.run_until(3_000);
    assert!(sim.responses(id).is_empty(), "still waiting for the cache");
    sim.run_until(4_000);
    assert_eq!(served(&sim.responses(id)[0]), (ServedFrom::Store, 3));
}

#[test]
fn kep_2340_cannot_answer_when_partitioned() {
    let mut sim = cluster(&format!("    consistentReadsFromCache: true\n{PARTITIONED_AT_150MS}"));
    let replies = ask(&mut sim, 1_000, "apiserver-2", list(None, None, None), 3_000);
    assert_eq!(failed(&replies[0]), StatusReason::ServiceUnavailable);
}

#[test]
fn cache_without_watch_cache_reads_everything_from_the_store() {
    let mut sim = cluster(&format!("    watchCache: {{ enabled: false }}\n{PARTITIONED_AT_150MS}"));
    let replies = ask(&mut sim, 1_000, "apiserver-2", list(Some("0"), None, None), 3_000);
    assert_eq!(failed(&replies[0]), StatusReason::ServiceUnavailable, "rv=0 must go to the store");
}

#[test]
fn a_healed_partition_lets_the_cache_catch_up() {
    let mut sim = cluster("    partitions: [ { from: 150ms, until: 2s } ]");
    let during = ask(&mut sim, 1_000, "apiserver-2", list(Some("0"), None, None), 1_100);
    assert_eq!(served(&during[0]).1, 1);
    let after = ask(&mut sim, 2_100, "apiserver-2", list(Some("0"), None, None), 2_200);
    assert_eq!(served(&after[0]).1, 3);
}

// KEP-3157 (watch-list): with resourceVersion unset and
// sendInitialEvents=true, the API server first learns etcd's current
// revision and streams the initial state from its watch cache once the
// cache has reached it — whether or not plain lists are served from the
// cache (KEP-2340's consistentReadsFromCache is off here).
#[test]
fn a_watch_list_waits_for_the_cache_even_without_consistent_reads_from_cache() {
    let mut sim = cluster("    watchCache: { lag: 400ms }");
    sim.run_until(320);
    let watch_list = Request::Watch(WatchRequest {
        selection: pods(),
        resource_version: None,
        send_initial_events: true,
        allow_watch_bookmarks: false,
    });
    let id = sim.request("apiserver-2", watch_list).unwrap();
    sim.run_until(600);
    assert!(sim.responses(id).is_empty(), "waiting for the cache, not reading etcd");
    sim.run_until(1_000);
    match &sim.responses(id)[0] {
        Reply::WatchOpened { initial: Some(served), bookmark: true, .. } => {
            assert_eq!((served.from, served.revision, served.objects.len()), (ServedFrom::Cache, 3, 3));
        }
        other => panic!("expected the watch to open with its initial state, got {other:?}"),
    }
}

#[test]
fn watch_cache_lag_delays_watch_events() {
    let mut sim = cluster("    watchCache: { lag: 250ms }");
    let watch = Request::Watch(WatchRequest {
        selection: pods(),
        resource_version: Some("0".into()),
        send_initial_events: false,
        allow_watch_bookmarks: false,
    });
    sim.run_until(10);
    let id = sim.request("apiserver-2", watch).unwrap();
    sim.run_until(320);
    let events = |sim: &Sim| -> usize {
        sim.responses(id).iter().map(|r| if let Reply::Events { events, .. } = r { events.len() } else { 0 }).sum()
    };
    assert_eq!(events(&sim), 0, "the create at 100ms reaches apiserver-2 at ~351ms");
    sim.run_until(360);
    assert_eq!(events(&sim), 1);
    sim.run_until(1_000);
    assert_eq!(events(&sim), 3);
}

#[test]
fn watch_from_a_revision_older_than_a_rebuilt_cache_is_gone() {
    let scenario = recon_scenario::parse(
        "t.yaml",
        r#"
name: relist
duration: 10s
network: { latency: { min: 1ms, max: 1ms } }
apiServers:
  - name: apiserver-1
  - name: apiserver-2
    partitions: [ { from: 150ms, until: 1s } ]
script:
  - { at: 100ms, create: { apiVersion: v1, kind: Pod, metadata: { name: a } } }
  - { at: 200ms, create: { apiVersion: v1, kind: Pod, metadata: { name: b } } }
  - { at: 300ms, compact: { keep: 0 } }
"#,
    )
    .unwrap();
    let mut sim = Sim::new(&scenario, Box::new(|_| None)).unwrap();
    let watch = Request::Watch(WatchRequest {
        selection: pods(),
        resource_version: Some("1".into()),
        send_initial_events: false,
        allow_watch_bookmarks: false,
    });
    let replies = ask(&mut sim, 2_000, "apiserver-2", watch, 2_100);
    assert_eq!(failed(&replies[0]), StatusReason::Gone);
    let fresh = ask(&mut sim, 2_100, "apiserver-2", list(Some("0"), None, None), 2_200);
    assert_eq!(names(&fresh[0]), ["a", "b"], "the cache was rebuilt from the store");
}

#[test]
fn update_with_a_stale_resource_version_is_a_conflict() {
    let mut sim = cluster("");
    sim.run_until(1_000);
    let mut stale = Object { api_version: "v1".into(), kind: "Pod".into(), ..Default::default() };
    stale.metadata.name = "a".into();
    stale.metadata.namespace = "default".into();
    stale.metadata.resource_version = "1".into();
    stale.spec = serde_json::json!({ "nodeName": "x" }).into();
    let ok = ask(
        &mut sim,
        1_000,
        "apiserver-1",
        Request::Write(Action::Update { object: stale.clone(), dry_run: false }),
        1_100,
    );
    assert!(
        matches!(&ok[0], Reply::Written { outcome: Outcome::Ok(Some(o)), .. } if o.metadata.resource_version == "4")
    );
    // API concepts, "Resource versions" and optimistic concurrency: an
    // update whose resourceVersion is not the stored one is refused with
    // 409 Conflict, which the API server words "Operation cannot be
    // fulfilled on <the object>: the object has been modified; please apply
    // your changes to the latest version and try again" (controllers match
    // on that phrase), naming the object as apimachinery's errors do, by
    // its group-qualified resource and quoted name; the simulator adds the
    // two revisions.
    let conflict =
        ask(&mut sim, 1_100, "apiserver-1", Request::Write(Action::Update { object: stale, dry_run: false }), 1_200);
    let Reply::Written { outcome: Outcome::Err(status), .. } = &conflict[0] else { panic!("{conflict:?}") };
    assert_eq!(status.reason, StatusReason::Conflict);
    assert_eq!(
        status.message,
        "Operation cannot be fulfilled on pods \"a\": the object has been modified; please apply your changes to \
         the latest version and try again (the store holds revision 4, the write expected 1)"
    );
}

#[test]
fn writes_through_a_partitioned_server_fail() {
    let mut sim = cluster(PARTITIONED_AT_150MS);
    let delete = Action::Delete {
        key: ObjectKey::new("Pod", "default", "a"),
        uid: None,
        resource_version: None,
        grace_period_seconds: None,
        propagation_policy: None,
        dry_run: false,
    };
    let replies = ask(&mut sim, 1_000, "apiserver-2", Request::Write(delete), 3_000);
    assert!(
        matches!(&replies[0], Reply::Written { outcome: Outcome::Err(s), .. } if s.reason == StatusReason::ServiceUnavailable)
    );
}

#[test]
fn get_follows_the_same_table() {
    let mut sim = cluster(PARTITIONED_AT_150MS);
    let get = |rv: Option<&str>, name: &str| {
        Request::Get(recon_sim::api::GetRequest {
            key: ObjectKey::new("Pod", "default", name),
            resource_version: rv.map(Into::into),
        })
    };
    let any = ask(&mut sim, 1_000, "apiserver-2", get(Some("0"), "c"), 1_100);
    assert_eq!(failed(&any[0]), StatusReason::NotFound, "the frozen cache has no pod c yet");
    // Worded as apimachinery's NotFound: the resource, the name in quotes.
    assert!(matches!(&any[0], Reply::Failed(s) if s.message == r#"pods "c" not found"#), "{any:?}");
    let recent = ask(&mut sim, 1_100, "apiserver-1", get(None, "c"), 1_200);
    assert_eq!(served(&recent[0]), (ServedFrom::Store, 3));
}
