//! Deletion as the API server does it: finalizers, the deletion mark,
//! graceful deletion of pods, preconditions, and a delete of what is
//! already being deleted. Each test names the Kubernetes documentation
//! statement it follows (in our words); docs/API-SEMANTICS.md lists them.

use recon_abi::{Action, Object, ObjectKey, Outcome, StatusReason};
use recon_sim::api::Request;
use recon_sim::{Event, Reply, Sim};

/// One API server, no controllers; `objects` are the scenario's initial objects.
fn cluster(objects: &str) -> Sim {
    let yaml = format!(
        r#"
name: deletion
duration: 120s
network: {{ latency: {{ min: 1ms, max: 1ms }} }}
apiServers: [ {{ name: apiserver-1 }} ]
nodes: [ {{ name: node-1 }} ]
objects:
{objects}
"#
    );
    let scenario = recon_scenario::parse("deletion.yaml", &yaml).expect("test scenario parses");
    Sim::new(&scenario, Box::new(|_| None)).expect("no controllers needed")
}

const HELD: &str = r#"  - apiVersion: v1
    kind: ConfigMap
    metadata: { name: held, namespace: default, finalizers: [example.com/cleanup, example.com/audit] }"#;

const BOUND_POD: &str = r#"  - apiVersion: v1
    kind: Pod
    metadata: { name: web-0, namespace: default }
    spec: { nodeName: node-1 }"#;

fn key(kind: &str, name: &str) -> ObjectKey {
    ObjectKey::new(kind, "default", name)
}

fn delete(key: ObjectKey, grace: Option<i64>) -> Request {
    Request::Write(Action::Delete {
        key,
        uid: None,
        resource_version: None,
        grace_period_seconds: grace,
        propagation_policy: None,
        dry_run: false,
    })
}

/// Writes `request` at `at`, runs 100ms more, and returns the one answer.
fn write(sim: &mut Sim, at: u64, request: Request) -> Result<Option<Object>, recon_abi::Status> {
    sim.run_until(at);
    let id = sim.request("apiserver-1", request).unwrap();
    sim.run_until(at + 100);
    match sim.responses(id) {
        [Reply::Written { outcome: Outcome::Ok(object), .. }] => Ok(object.clone()),
        [Reply::Written { outcome: Outcome::Err(status), .. }] => Err(status.clone()),
        other => panic!("expected one write result, got {other:?}"),
    }
}

fn stored(sim: &Sim, key: &ObjectKey) -> Option<Object> {
    sim.store().get(key, None).unwrap().map(|kv| std::sync::Arc::unwrap_or_clone(kv.value))
}

fn without_finalizers(mut object: Object, keep: &[&str]) -> Request {
    object.metadata.finalizers = keep.iter().map(|f| f.to_string()).collect();
    Request::Write(Action::Update { object, dry_run: false })
}

// Finalizers (kubernetes.io, "Finalizers"): deleting an object that has
// finalizers only marks it — the API server sets
// metadata.deletionTimestamp and the object stays, terminating, until
// every finalizer has been removed; when the list is empty the object is
// deleted.
#[test]
fn finalizers_hold_a_deleted_object_until_the_last_one_is_removed() {
    let mut sim = cluster(HELD);
    let held = key("ConfigMap", "held");
    let marked = write(&mut sim, 1_000, delete(held.clone(), None)).expect("the delete is accepted").unwrap();
    assert!(marked.is_terminating(), "{marked:?}");
    assert_eq!(marked.metadata.deletion_grace_period_seconds, Some(0));
    assert!(stored(&sim, &held).is_some_and(|o| o.is_terminating()), "still there, marked");

    let one_left = write(&mut sim, 2_000, without_finalizers(marked, &["example.com/audit"])).unwrap().unwrap();
    assert_eq!(one_left.metadata.finalizers, ["example.com/audit"]);
    assert!(stored(&sim, &held).is_some(), "one finalizer is left");

    let gone = write(&mut sim, 3_000, without_finalizers(one_left, &[])).expect("the update is accepted");
    assert_eq!(gone, None, "the write removed it");
    assert!(stored(&sim, &held).is_none());
    let removed = sim.trace().entries.iter().filter(|e| matches!(e.event, Event::StoreWrite { removed: true, .. }));
    assert_eq!(removed.count(), 1, "one store write removed it");
}

// Finalizers (kubernetes.io, "Finalizers"): once an object is marked for
// deletion its deletionTimestamp cannot be unset, and no finalizer may be
// added (the API server answers 422 Invalid); finalizers may only be removed.
#[test]
fn a_finalizer_cannot_be_added_to_an_object_being_deleted() {
    let mut sim = cluster(HELD);
    let held = key("ConfigMap", "held");
    let marked = write(&mut sim, 1_000, delete(held.clone(), None)).unwrap().unwrap();
    let revision = sim.store().revision();
    let refused = write(
        &mut sim,
        2_000,
        without_finalizers(marked.clone(), &["example.com/cleanup", "example.com/audit", "example.com/late"]),
    )
    .expect_err("refused");
    assert_eq!(refused.reason, StatusReason::Invalid);
    assert_eq!(refused.code, 422);
    assert!(refused.message.contains("example.com/late"), "{}", refused.message);
    assert_eq!(sim.store().revision(), revision, "nothing was written");

    // Clearing deletionTimestamp in an update does not take it back.
    let mut revived = marked;
    revived.metadata.deletion_timestamp = None;
    let after =
        write(&mut sim, 3_000, Request::Write(Action::Update { object: revived, dry_run: false })).unwrap().unwrap();
    assert!(after.is_terminating());
}

// API server deletion (kubernetes.io, "Finalizers" and DeleteOptions): a
// delete of an object that is already being deleted does not start over —
// it answers with the object as it is, and nothing is written.
#[test]
fn deleting_what_is_already_being_deleted_changes_nothing() {
    let mut sim = cluster(HELD);
    let held = key("ConfigMap", "held");
    write(&mut sim, 1_000, delete(held.clone(), None)).unwrap();
    let revision = sim.store().revision();
    let again = write(&mut sim, 2_000, delete(held.clone(), None)).expect("accepted").unwrap();
    assert!(again.is_terminating());
    assert_eq!(sim.store().revision(), revision, "the store did not move");
    let unchanged = sim.trace().entries.iter().filter(|e| matches!(e.event, Event::WriteUnchanged { .. }));
    assert_eq!(unchanged.count(), 1, "the trace says so");
}

// DeleteOptions.preconditions (API reference): a uid or resourceVersion
// precondition that does not hold makes the delete fail with 409 Conflict
// and changes nothing — also for an object already being deleted. The
// resourceVersion is opaque to clients (API concepts, "Resource
// versions"), so the server compares it as it was written.
#[test]
fn delete_preconditions_on_uid_and_resource_version() {
    let mut sim = cluster(HELD);
    let held = key("ConfigMap", "held");
    let with = |uid: Option<&str>, rv: Option<&str>| {
        Request::Write(Action::Delete {
            key: held.clone(),
            uid: uid.map(Into::into),
            resource_version: rv.map(Into::into),
            grace_period_seconds: None,
            propagation_policy: None,
            dry_run: false,
        })
    };
    // The registry's BeforeDelete checks the uid first, against the object
    // it read, and words the conflict as a delete's: the object named may be
    // another incarnation under the same name.
    let uid = stored(&sim, &held).unwrap().metadata.uid;
    let status = write(&mut sim, 1_000, with(Some("not-its-uid"), Some("999"))).unwrap_err();
    assert_eq!(status.reason, StatusReason::Conflict);
    assert!(
        status.message.ends_with(&format!(
            "the UID in the precondition (not-its-uid) does not match the UID in record ({uid}). The object might \
             have been deleted and then recreated"
        )),
        "{status}"
    );
    assert_eq!(write(&mut sim, 1_200, with(None, Some("999"))).unwrap_err().reason, StatusReason::Conflict);
    // The registry's BeforeDelete compares the precondition with the stored
    // resourceVersion as text, before anything parses it: text that is not
    // the stored revision as the server writes it is another version, 409,
    // even where it reads as the same number.
    let revision = stored(&sim, &held).unwrap().metadata.resource_version;
    for (at, text) in [(1_250, "not-a-version".to_owned()), (1_300, String::new()), (1_350, format!("00{revision}"))] {
        let status = write(&mut sim, at, with(None, Some(&text))).unwrap_err();
        assert_eq!(status.reason, StatusReason::Conflict, "{text:?}: {status}");
        assert!(
            status.message.contains(&format!("the ResourceVersion in the precondition ({text}) does not match")),
            "{status}"
        );
    }
    assert!(!stored(&sim, &held).unwrap().is_terminating(), "no failed delete marked it");
    write(&mut sim, 1_500, with(Some(&uid), None)).expect("the right uid deletes");
    assert_eq!(write(&mut sim, 1_700, with(None, Some("1"))).unwrap_err().reason, StatusReason::Conflict);
}

// Termination of Pods (kubernetes.io, "Pod Lifecycle"): deleting a pod on a
// node marks it with a deletionTimestamp 30 s (its grace period) ahead, and
// its kubelet finishes the deletion; a delete with a shorter grace period
// replaces the pending one, and grace period 0 removes it at once.
#[test]
fn a_bound_pod_is_deleted_gracefully_and_a_shorter_grace_period_wins() {
    let mut sim = cluster(BOUND_POD);
    let pod = key("Pod", "web-0");
    let marked = write(&mut sim, 1_000, delete(pod.clone(), None)).unwrap().unwrap();
    assert_eq!(marked.metadata.deletion_grace_period_seconds, Some(30));
    // Sent at 1 s, committed two 1 ms hops later; due 30 s after that.
    assert_eq!(marked.metadata.deletion_timestamp.as_deref(), Some(recon_abi::format_timestamp(31_002).as_str()));
    let shorter = write(&mut sim, 2_000, delete(pod.clone(), Some(5))).unwrap().unwrap();
    assert_eq!(shorter.metadata.deletion_grace_period_seconds, Some(5));
    let longer = write(&mut sim, 3_000, delete(pod.clone(), Some(60))).unwrap().unwrap();
    assert_eq!(longer.metadata.deletion_grace_period_seconds, Some(5), "a longer one does not extend it");
    assert_eq!(write(&mut sim, 4_000, delete(pod.clone(), Some(0))).unwrap(), None);
    assert!(stored(&sim, &pod).is_none());
}

// Finalizers on a pod (kubernetes.io, "Finalizers"): the kubelet's final
// delete (grace period 0) of a pod that still has finalizers leaves it
// marked; removing the last finalizer then removes it.
#[test]
fn a_pods_finalizers_outlast_its_grace_period() {
    let mut sim = cluster(
        r#"  - apiVersion: v1
    kind: Pod
    metadata: { name: web-0, namespace: default, finalizers: [example.com/volume] }
    spec: { nodeName: node-1 }"#,
    );
    let pod = key("Pod", "web-0");
    write(&mut sim, 1_000, delete(pod.clone(), None)).unwrap();
    let last = write(&mut sim, 2_000, delete(pod.clone(), Some(0))).unwrap().unwrap();
    assert_eq!(last.metadata.deletion_grace_period_seconds, Some(0));
    assert!(stored(&sim, &pod).is_some(), "held by its finalizer");
    assert_eq!(write(&mut sim, 3_000, without_finalizers(last, &[])).unwrap(), None);
    assert!(stored(&sim, &pod).is_none());
}
