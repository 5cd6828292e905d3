//! Dry run for every verb that has one: create, update, update status,
//! delete (and patch, in `patches.rs`). Each is admitted and answered with
//! what would have been stored; nothing is written, the store's revision
//! does not move, no watch sees anything.
//!
//! API Concepts, *Dry-run*: a request with `dryRun=All` goes through
//! admission and validation like any other, and its answer is the object
//! as it would have been, but it is never persisted; the verbs that take
//! it are POST, PUT, PATCH and DELETE.

use recon_abi::{Action, Object, ObjectKey, Outcome, Status, StatusReason};
use recon_sim::api::Request;
use recon_sim::{Event, Reply, Sim};
use serde_json::json;

/// One API server, a node, a Deployment, a pod bound to the node and a
/// ConfigMap with a finalizer.
fn cluster() -> Sim {
    let yaml = r#"
name: dry-run
duration: 60s
network: { latency: { min: 1ms, max: 1ms } }
apiServers: [ { name: apiserver-1 } ]
nodes: [ { name: node-1 } ]
objects:
  - apiVersion: apps/v1
    kind: Deployment
    metadata: { name: web, namespace: default }
    spec: { replicas: 1 }
  - apiVersion: v1
    kind: Pod
    metadata: { name: web-0, namespace: default }
    spec: { nodeName: node-1 }
  - apiVersion: v1
    kind: ConfigMap
    metadata: { name: held, namespace: default, finalizers: [example.com/cleanup] }
"#;
    let scenario = recon_scenario::parse("dry-run.yaml", yaml).expect("test scenario parses");
    Sim::new(&scenario, Box::new(|_| None)).expect("no controllers needed")
}

fn key(kind: &str, name: &str) -> ObjectKey {
    ObjectKey::new(kind, "default", name)
}

fn stored(sim: &Sim, key: &ObjectKey) -> Option<Object> {
    sim.store().get(key, None).unwrap().map(|kv| std::sync::Arc::unwrap_or_clone(kv.value))
}

/// Sends `action` at `at` and runs 100ms: its answer, after checking that
/// the store did not move and the trace has no store write and no cache
/// event for it.
fn dry(sim: &mut Sim, at: u64, action: Action) -> Result<Option<Object>, Status> {
    sim.run_until(at);
    let revision = sim.store().revision();
    let entries = sim.trace().entries.len();
    let id = sim.request("apiserver-1", Request::Write(action)).unwrap();
    sim.run_until(at + 100);
    assert_eq!(sim.store().revision(), revision, "a dry run uses no revision");
    let written = sim
        .trace()
        .entries
        .range(entries..)
        .filter(|e| matches!(e.event, Event::StoreWrite { .. } | Event::CacheApply { .. }))
        .count();
    assert_eq!(written, 0, "no store write, so nothing for the cache or any watch");
    match sim.responses(id) {
        [Reply::Written { outcome: Outcome::Ok(object), .. }] => Ok(object.clone()),
        [Reply::Written { outcome: Outcome::Err(status), .. }] => Err(status.clone()),
        other => panic!("expected one write result, got {other:?}"),
    }
}

fn delete(key: ObjectKey, resource_version: Option<&str>) -> Action {
    Action::Delete {
        key,
        uid: None,
        resource_version: resource_version.map(str::to_owned),
        grace_period_seconds: None,
        propagation_policy: None,
        dry_run: true,
    }
}

#[test]
fn a_dry_run_create_answers_the_object_with_its_defaults_and_stores_nothing() {
    let mut sim = cluster();
    let mut object = Object { api_version: "v1".into(), kind: "ConfigMap".into(), ..Default::default() };
    object.metadata.generate_name = "cfg-".into();
    let answer = dry(&mut sim, 1_000, Action::Create { object, dry_run: true }).unwrap().unwrap();
    assert!(answer.metadata.name.starts_with("cfg-") && answer.metadata.name.len() > 4, "{answer:?}");
    assert!(!answer.metadata.uid.is_empty(), "defaults are filled in as for a real create");
    assert_eq!(answer.metadata.namespace, "default");
    assert!(stored(&sim, &answer.key()).is_none());
    // Admission still refuses what it would refuse.
    let existing = stored(&sim, &key("Deployment", "web")).unwrap();
    let status = dry(&mut sim, 1_200, Action::Create { object: existing, dry_run: true }).unwrap_err();
    assert_eq!(status.reason, StatusReason::AlreadyExists, "{status}");
    // Named as the API server's AlreadyExists error names an object (its
    // group-qualified resource and quoted name), not by its key in the store.
    assert_eq!(status.message, "deployments.apps \"web\" already exists");
    let line = sim.trace().entries.iter().rev().find(|e| matches!(e.event, Event::WriteUnchanged { .. }));
    let line = recon_trace::text::describe(line.expect("the first dry run is in the trace"));
    assert!(line.contains("dry run of create ConfigMap default/cfg-") && line.ends_with("nothing stored"), "{line}");
}

#[test]
fn a_dry_run_update_answers_the_new_version_and_keeps_the_stored_one() {
    let mut sim = cluster();
    let mut next = stored(&sim, &key("Deployment", "web")).unwrap();
    let revision = next.metadata.resource_version.clone();
    next.spec["replicas"] = json!(5);
    let answer = dry(&mut sim, 1_000, Action::Update { object: next.clone(), dry_run: true }).unwrap().unwrap();
    assert_eq!(answer.spec["replicas"], json!(5));
    assert_eq!(answer.metadata.generation, 2, "generation as the update would make it");
    assert_eq!(answer.metadata.resource_version, revision, "no new revision");
    assert_eq!(stored(&sim, &key("Deployment", "web")).unwrap().spec["replicas"], json!(1));
    // A precondition that does not hold is 409, dry run or not.
    next.metadata.resource_version = "1".into();
    let status = dry(&mut sim, 1_200, Action::Update { object: next, dry_run: true }).unwrap_err();
    assert_eq!(status.reason, StatusReason::Conflict, "{status}");
}

#[test]
fn a_dry_run_status_update_answers_the_new_status_and_keeps_the_stored_one() {
    let mut sim = cluster();
    let mut next = stored(&sim, &key("Pod", "web-0")).unwrap();
    next.status = json!({ "phase": "Running" }).into();
    let answer = dry(&mut sim, 1_000, Action::UpdateStatus { object: next.clone(), dry_run: true }).unwrap().unwrap();
    assert_eq!(answer.status["phase"], "Running");
    assert_eq!(stored(&sim, &key("Pod", "web-0")).unwrap().status, serde_json::Value::Null);
    // The kind must have a status subresource, as for a real one.
    let mut config = stored(&sim, &key("ConfigMap", "held")).unwrap();
    config.status = json!({ "x": 1 }).into();
    let status = dry(&mut sim, 1_200, Action::UpdateStatus { object: config, dry_run: true }).unwrap_err();
    assert_eq!(status.reason, StatusReason::NotFound, "{status}");
}

#[test]
fn a_dry_run_delete_answers_what_the_delete_would_do_and_removes_nothing() {
    let mut sim = cluster();
    // A bound pod would be marked for graceful deletion.
    let marked = dry(&mut sim, 1_000, delete(key("Pod", "web-0"), None)).unwrap().unwrap();
    assert!(marked.is_terminating() && marked.metadata.deletion_grace_period_seconds == Some(30), "{marked:?}");
    assert!(!stored(&sim, &key("Pod", "web-0")).unwrap().is_terminating());
    // An object with nothing holding it would be removed: the answer is it as it is.
    let gone = dry(&mut sim, 1_200, delete(key("Deployment", "web"), None)).unwrap().unwrap();
    assert_eq!(gone.metadata.name, "web");
    assert!(stored(&sim, &key("Deployment", "web")).is_some());
    // A finalizer would hold it, marked.
    let held = dry(&mut sim, 1_400, delete(key("ConfigMap", "held"), None)).unwrap().unwrap();
    assert!(held.is_terminating());
    assert!(!stored(&sim, &key("ConfigMap", "held")).unwrap().is_terminating());
    // Preconditions hold as for a real delete.
    let status = dry(&mut sim, 1_600, delete(key("Deployment", "web"), Some("1"))).unwrap_err();
    assert_eq!(status.reason, StatusReason::Conflict, "{status}");
    let status = dry(&mut sim, 1_800, delete(key("Deployment", "nope"), None)).unwrap_err();
    assert_eq!(status.reason, StatusReason::NotFound, "{status}");
}
