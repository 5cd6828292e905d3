//! Events: `v1` and `events.k8s.io/v1` are two views of one stored
//! resource; a write in either is validated, stored in the core form and
//! answered in the form written; the trace shows each Event on the lane of
//! the object it is about. Each test names the Kubernetes documentation
//! statement it follows (in our words); docs/API-SEMANTICS.md lists them.

use recon_abi::event::{CORE_V1, EVENTS_V1};
use recon_abi::{Action, Object, ObjectKey, Patch, PatchParams, StatusReason};
use recon_sdk::events::{EventType, Reporter, event_about};
use recon_sim::{Event, Sim};
use serde_json::{Value, json};

mod common;
use common::write;

/// One API server, two nodes, a pod bound to node-2 and one not bound.
fn cluster() -> Sim {
    let yaml = r#"
name: events
duration: 60s
network: { latency: { min: 1ms, max: 1ms } }
apiServers: [ { name: apiserver-1 } ]
nodes: [ { name: node-1 }, { name: node-2 } ]
objects:
  - apiVersion: v1
    kind: Pod
    metadata: { name: bound, namespace: default }
    spec: { nodeName: node-2 }
  - apiVersion: v1
    kind: Pod
    metadata: { name: pending, namespace: default }
"#;
    let scenario = recon_scenario::parse("events.yaml", yaml).expect("test scenario parses");
    Sim::new(&scenario, Box::new(|_| None)).expect("no controllers needed")
}

fn stored(sim: &Sim, key: &ObjectKey) -> Object {
    sim.store().get(key, None).unwrap().expect("stored").value.as_ref().clone()
}

fn pod(sim: &Sim, name: &str) -> Object {
    stored(sim, &ObjectKey::new("Pod", "default", name))
}

fn reporter() -> Reporter {
    Reporter::new("example.com/operator", "operator-0")
}

fn core_event(name: &str, about: Value, message: &str) -> Object {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "involvedObject": about, "reason": "Tested", "message": message, "type": "Normal"
    }))
    .expect("an Event")
}

/// The lane name of every `eventPublished` entry, with its reason and note.
fn published(sim: &Sim) -> Vec<(String, String, String)> {
    let trace = sim.trace();
    trace
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::EventPublished(published) => {
                Some((trace.lane_name(e).to_owned(), published.reason.clone(), published.note.clone()))
            }
            _ => None,
        })
        .collect()
}

// Events API reference (events.k8s.io/v1, "Event"): the newer API is a
// view of the same Events as core v1, with regarding, note,
// reportingController and the deprecated* fields standing for
// involvedObject, message, reportingComponent, source, firstTimestamp,
// lastTimestamp and count. A write in either version is one stored Event.
#[test]
fn an_events_v1_write_is_stored_as_one_core_event_and_answered_in_its_own_version() {
    let mut sim = cluster();
    let about = pod(&sim, "bound");
    let event = event_about(&about, &reporter(), EventType::Warning, "Failed", "Mount", "no volume", 1_000);
    let answer =
        write(&mut sim, 1_000, Action::Create { object: event, dry_run: false }).expect("accepted").expect("an object");
    assert_eq!(answer.api_version, EVENTS_V1, "the writer reads its own version back");
    assert_eq!(answer.other["note"], "no volume");
    let name = answer.metadata.name.clone();
    assert!(name.starts_with("bound."), "named from the object: {name}");
    let stored = stored(&sim, &ObjectKey::new("Event", "default", &name));
    assert_eq!(stored.api_version, CORE_V1, "stored in the core form");
    assert_eq!(stored.other["message"], "no volume");
    assert_eq!(stored.other["involvedObject"]["name"], "bound");
    assert_eq!(stored.other["reportingComponent"], "example.com/operator");
    assert!(!stored.other.contains_key("note") && !stored.other.contains_key("regarding"));
    // A core v1 writer's Event is the same resource: a reader of the new
    // version sees it through the conversion.
    let core = core_event("by-core", json!({"kind": "Pod", "namespace": "default", "name": "pending"}), "hello");
    write(&mut sim, 2_000, Action::Create { object: core, dry_run: false }).expect("accepted");
    let seen = recon_abi::event::to_events_v1(&crate::stored(&sim, &ObjectKey::new("Event", "default", "by-core")));
    assert_eq!(
        (seen.other["note"].clone(), seen.other["regarding"]["name"].clone()),
        (json!("hello"), json!("pending"))
    );
}

// Event validation (the API server's ValidateEventCreate, described in the
// events.k8s.io/v1 reference's field docs): an events.k8s.io/v1 Event
// needs eventTime, reportingController, reportingInstance, action and
// reason, a type of Normal or Warning and none of the deprecated fields;
// a core Event without an eventTime must agree with the namespace of the
// object it is about. A refused write stores nothing.
#[test]
fn an_event_that_kubernetes_would_refuse_is_422_and_nothing_is_stored() {
    let mut sim = cluster();
    let about = pod(&sim, "bound");
    let good = event_about(&about, &reporter(), EventType::Normal, "Created", "Create", "ok", 1_000);
    let revision = sim.store().revision();
    type Spoil = fn(&mut Object);
    let cases: [(&str, Spoil); 4] = [
        ("eventTime", |e| drop(e.other.remove("eventTime"))),
        ("reportingController", |e| drop(e.other.insert("reportingController".into(), json!("")))),
        ("type", |e| drop(e.other.insert("type".into(), json!("Info")))),
        ("deprecatedCount", |e| drop(e.other.insert("deprecatedCount".into(), json!(3)))),
    ];
    for (i, (field, spoil)) in cases.into_iter().enumerate() {
        let mut bad = good.clone();
        spoil(&mut bad);
        let status = write(&mut sim, 1_000 + 200 * i as u64, Action::Create { object: bad, dry_run: false })
            .expect_err("refused");
        assert_eq!(status.reason, StatusReason::Invalid, "{status}");
        assert!(status.message.contains(&format!(": {field}:")), "names {field}: {status}");
    }
    let elsewhere = core_event("x", json!({"kind": "Pod", "namespace": "other", "name": "bound"}), "m");
    let status = write(&mut sim, 3_000, Action::Create { object: elsewhere, dry_run: false }).expect_err("refused");
    assert!(status.message.contains("involvedObject"), "{status}");
    assert_eq!(sim.store().revision(), revision, "nothing stored");
    assert!(published(&sim).is_empty(), "no Event on the timeline");
}

// A patch of an Event speaks the version its body names (the API server
// would know it from the URL), and the result is stored in the core form.
#[test]
fn a_patch_of_an_event_in_the_new_version_updates_the_stored_core_fields() {
    let mut sim = cluster();
    let about = pod(&sim, "pending");
    let event = event_about(&about, &reporter(), EventType::Normal, "Waiting", "Wait", "first", 1_000);
    let name = write(&mut sim, 1_000, Action::Create { object: event, dry_run: false }).unwrap().unwrap().metadata.name;
    let key = ObjectKey::new("Event", "default", &name);
    let body = json!({"apiVersion": EVENTS_V1, "note": "again", "series": {"count": 2, "lastObservedTime": "x"}});
    let patch = Action::Patch { key: key.clone(), patch: Patch::Merge(body), params: PatchParams::default() };
    let answer = write(&mut sim, 2_000, patch).expect("accepted").expect("an object");
    assert_eq!(answer.other["note"], "again");
    let stored = stored(&sim, &key);
    assert_eq!((stored.other["message"].clone(), stored.other["series"]["count"].clone()), (json!("again"), json!(2)));
    assert!(!stored.other.contains_key("note"), "{stored:?}");
}

// Issue 14: an Event appears on the lane of the object it concerns. A pod
// bound to a node is shown on that node; a Node on its own lane; anything
// else on the writer's lane (here kubectl's: the script).
#[test]
fn an_event_is_on_the_lane_of_its_node_or_else_of_its_writer() {
    let mut sim = cluster();
    let about_bound = core_event("a", json!({"kind": "Pod", "namespace": "default", "name": "bound"}), "on node-2");
    let about_pending = core_event("b", json!({"kind": "Pod", "name": "pending"}), "not bound");
    let about_node = core_event("c", json!({"kind": "Node", "name": "node-1"}), "the node");
    for (i, event) in [about_bound, about_pending, about_node].into_iter().enumerate() {
        write(&mut sim, 1_000 + 500 * i as u64, Action::Create { object: event, dry_run: false }).expect("accepted");
    }
    let lanes: Vec<(String, String)> = published(&sim).into_iter().map(|(lane, _, note)| (lane, note)).collect();
    assert_eq!(
        lanes,
        [
            ("node-2".to_owned(), "on node-2".to_owned()),
            ("script".to_owned(), "not bound".to_owned()),
            ("node-1".to_owned(), "the node".to_owned())
        ]
    );
    let trace = sim.trace();
    let entry = trace.entries.iter().find(|e| matches!(e.event, Event::EventPublished { .. })).unwrap();
    let cause = trace.get(entry.causes[0]).expect("a cause");
    assert!(matches!(&cause.event, Event::StoreWrite { key, .. } if key.kind == "Event"), "caused by its write");
    let line = recon_trace::text::describe(entry);
    assert_eq!(line, "kubectl reports Normal Event Tested about Pod default/bound: on node-2");
}
