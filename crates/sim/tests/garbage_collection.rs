//! Garbage collection as Kubernetes does it: owner references by uid,
//! background, foreground and orphan propagation, the default policy, and
//! the built-in collector's mistakes on a stale view. Each test names the
//! Kubernetes documentation statement it follows (in our words);
//! docs/API-SEMANTICS.md lists them.

use recon_abi::{
    Action, FOREGROUND_FINALIZER, ORPHAN_FINALIZER, Object, ObjectKey, Outcome, OwnerReference, PropagationPolicy,
};
use recon_scenario::Check;
use recon_sim::api::Request;
use recon_sim::{Event, Reply, Sim};

/// One API server and the garbage collector (starting at `gc_start`, with
/// `params`); no other controller, so owners create no dependents of their own.
fn cluster(gc_start: &str, params: &str) -> Sim {
    let yaml = format!(
        r#"
name: garbage-collection
duration: 120s
network: {{ latency: {{ min: 1ms, max: 1ms }} }}
apiServers: [ {{ name: apiserver-1 }} ]
components:
  - {{ name: garbage-collector, controller: garbage-collector, apiServer: apiserver-1, startAt: {gc_start}, params: {params} }}
checks:
  enabled: [deletedLiveDependent, orphanedDependent]
"#
    );
    let scenario = recon_scenario::parse("gc.yaml", &yaml).expect("test scenario parses");
    Sim::new(&scenario, Box::new(|c| recon_catalog::instantiate(&c.controller))).expect("built-ins instantiate")
}

fn key(kind: &str, name: &str) -> ObjectKey {
    ObjectKey::new(kind, "default", name)
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

fn create(sim: &mut Sim, at: u64, object: Object) -> Object {
    write(sim, at, Request::Write(Action::Create { object, dry_run: false }))
        .expect("created")
        .expect("the stored object")
}

fn delete(key: ObjectKey, policy: Option<PropagationPolicy>) -> Request {
    Request::Write(Action::Delete {
        key,
        uid: None,
        resource_version: None,
        grace_period_seconds: None,
        propagation_policy: policy,
        dry_run: false,
    })
}

fn stored(sim: &Sim, key: &ObjectKey) -> Option<Object> {
    sim.store().get(key, None).unwrap().map(|kv| std::sync::Arc::unwrap_or_clone(kv.value))
}

fn object(api_version: &str, kind: &str, name: &str) -> Object {
    let mut o = Object { api_version: api_version.into(), kind: kind.into(), ..Default::default() };
    o.metadata.name = name.into();
    o.metadata.namespace = "default".into();
    o
}

fn set(name: &str) -> Object {
    object("apps/v1", "ReplicaSet", name)
}

/// An unbound pod owned by `owners`, each blocking its owner's foreground
/// deletion or not, with `finalizers`.
fn pod(name: &str, owners: &[(&Object, bool)], finalizers: &[&str]) -> Object {
    let mut p = object("v1", "Pod", name);
    p.metadata.owner_references = owners
        .iter()
        .map(|(o, block)| OwnerReference {
            api_version: o.api_version.clone(),
            kind: o.kind.clone(),
            name: o.metadata.name.clone(),
            uid: o.metadata.uid.clone(),
            controller: true,
            block_owner_deletion: *block,
        })
        .collect();
    p.metadata.finalizers = finalizers.iter().map(|f| f.to_string()).collect();
    p
}

/// The deletes the garbage collector committed, as `Kind name`.
fn collected(sim: &Sim) -> Vec<String> {
    sim.trace()
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::StoreWrite { key, removed: true, by, .. } if by == "garbage-collector" => {
                Some(format!("{} {}", key.kind, key.name))
            }
            _ => None,
        })
        .collect()
}

fn violations(sim: &Sim, check: Check) -> Vec<String> {
    sim.trace().violations().filter(|(_, c, _)| *c == check).map(|(_, _, m)| m.to_string()).collect()
}

// Garbage Collection (Concepts → Workloads... → "Garbage Collection",
// *Cascading deletion* → *Background cascading deletion*): the API server
// deletes the owner at once and the garbage collector deletes the
// dependents afterwards. "Use Cascading Deletion" says background is the
// default.
#[test]
fn background_deletion_removes_the_owner_at_once_and_the_collector_deletes_the_dependents_after() {
    let mut sim = cluster("0s", "{}");
    let web = create(&mut sim, 1_000, set("web"));
    create(&mut sim, 1_200, pod("web-a", &[(&web, true)], &[]));
    assert_eq!(write(&mut sim, 2_000, delete(key("ReplicaSet", "web"), None)), Ok(None), "the owner goes at once");
    sim.run_until(4_000);
    assert_eq!(stored(&sim, &key("Pod", "web-a")), None);
    assert_eq!(collected(&sim), ["Pod web-a"]);
}

// Owners and Dependents (Concepts → Overview → "Owners and Dependents"):
// an owner reference names its owner by uid; Garbage Collection: a
// dependent whose owner no longer exists is garbage — an owner deleted and
// re-created with the same name is a different object.
#[test]
fn a_dependent_of_a_deleted_owner_is_collected_though_an_owner_with_that_name_is_back() {
    let mut sim = cluster("5s", "{}");
    let first = create(&mut sim, 1_000, set("web"));
    create(&mut sim, 1_200, pod("old", &[(&first, false)], &[]));
    write(&mut sim, 2_000, delete(key("ReplicaSet", "web"), None)).unwrap();
    let second = create(&mut sim, 3_000, set("web"));
    assert_ne!(first.metadata.uid, second.metadata.uid);
    create(&mut sim, 3_200, pod("new", &[(&second, false)], &[]));
    sim.run_until(8_000);
    assert_eq!(stored(&sim, &key("Pod", "old")), None, "its owner's uid is gone");
    assert!(stored(&sim, &key("Pod", "new")).is_some(), "its owner is the web that exists");
    assert_eq!(collected(&sim), ["Pod old"]);
}

// Garbage Collection, *Foreground cascading deletion*: the owner first
// enters a deletion-in-progress state (deletionTimestamp and the
// foregroundDeletion finalizer); the collector deletes the dependents, and
// the owner is deleted once every dependent with
// ownerReference.blockOwnerDeletion=true is gone.
#[test]
fn foreground_deletion_keeps_the_owner_until_its_blocking_dependents_are_gone() {
    let mut sim = cluster("0s", "{}");
    let web = create(&mut sim, 1_000, set("web"));
    create(&mut sim, 1_100, pod("free", &[(&web, true)], &[]));
    create(&mut sim, 1_200, pod("held", &[(&web, true)], &["example.com/hold"]));
    let marked = write(&mut sim, 2_000, delete(key("ReplicaSet", "web"), Some(PropagationPolicy::Foreground)))
        .unwrap()
        .expect("the owner is only marked");
    assert!(marked.is_terminating());
    assert_eq!(marked.metadata.finalizers, [FOREGROUND_FINALIZER]);

    sim.run_until(4_000);
    assert_eq!(stored(&sim, &key("Pod", "free")), None, "the collector deleted it");
    let held = stored(&sim, &key("Pod", "held")).expect("its own finalizer holds it");
    assert!(held.is_terminating());
    assert!(stored(&sim, &key("ReplicaSet", "web")).is_some(), "a blocking dependent is still there");

    let mut released = held;
    released.metadata.finalizers.clear();
    write(&mut sim, 5_000, Request::Write(Action::Update { object: released, dry_run: false })).unwrap();
    sim.run_until(7_000);
    assert_eq!(stored(&sim, &key("Pod", "held")), None);
    assert_eq!(stored(&sim, &key("ReplicaSet", "web")), None, "nothing blocks it any more");
}

// Same section: only dependents with blockOwnerDeletion=true hold the owner.
#[test]
fn a_dependent_without_block_owner_deletion_does_not_hold_a_foreground_deletion() {
    let mut sim = cluster("0s", "{}");
    let web = create(&mut sim, 1_000, set("web"));
    create(&mut sim, 1_200, pod("held", &[(&web, false)], &["example.com/hold"]));
    write(&mut sim, 2_000, delete(key("ReplicaSet", "web"), Some(PropagationPolicy::Foreground))).unwrap();
    sim.run_until(4_000);
    assert_eq!(stored(&sim, &key("ReplicaSet", "web")), None, "the owner did not wait");
    assert!(stored(&sim, &key("Pod", "held")).is_some_and(|p| p.is_terminating()), "deleted, held by its finalizer");
}

// Garbage Collection, *Orphaned dependents*, and "Use Cascading Deletion",
// *Delete owner objects and orphan dependents*: the owner gets the orphan
// finalizer; the collector removes the owner reference from the dependents,
// which stay, then the finalizer, and the owner goes.
#[test]
fn orphan_deletion_frees_the_dependents_then_removes_the_owner() {
    let mut sim = cluster("0s", "{}");
    let web = create(&mut sim, 1_000, set("web"));
    create(&mut sim, 1_200, pod("web-a", &[(&web, true)], &[]));
    let marked = write(&mut sim, 2_000, delete(key("ReplicaSet", "web"), Some(PropagationPolicy::Orphan)))
        .unwrap()
        .expect("the owner is only marked");
    assert_eq!(marked.metadata.finalizers, [ORPHAN_FINALIZER]);
    sim.run_until(4_000);
    assert_eq!(stored(&sim, &key("ReplicaSet", "web")), None);
    let freed = stored(&sim, &key("Pod", "web-a")).expect("an orphaned dependent stays");
    assert!(freed.metadata.owner_references.is_empty(), "{freed:?}");
    assert_eq!(collected(&sim), ["ReplicaSet web"], "removing the finalizer ended the owner's deletion");
}

// DeleteOptions.propagationPolicy (API reference): without a policy the
// object's existing garbage-collection finalizer decides, else the kind's
// default — background, except orphan for the workload kinds of
// extensions/v1beta1, apps/v1beta1 and apps/v1beta2. Needs no collector.
#[test]
fn without_a_policy_the_objects_gc_finalizer_then_the_kinds_default_decides() {
    let mut sim = cluster("100s", "{}");
    let mut marked = set("marked");
    marked.metadata.finalizers = vec![ORPHAN_FINALIZER.into()];
    create(&mut sim, 1_000, marked);
    let deleted = write(&mut sim, 2_000, delete(key("ReplicaSet", "marked"), None)).unwrap().expect("marked");
    assert_eq!(deleted.metadata.finalizers, [ORPHAN_FINALIZER]);

    create(&mut sim, 3_000, object("extensions/v1beta1", "ReplicaSet", "legacy"));
    let legacy = write(&mut sim, 4_000, delete(key("ReplicaSet", "legacy"), None)).unwrap().expect("marked");
    assert_eq!(legacy.metadata.finalizers, [ORPHAN_FINALIZER], "orphan by default for the old version");

    create(&mut sim, 5_000, set("current"));
    assert_eq!(write(&mut sim, 6_000, delete(key("ReplicaSet", "current"), None)), Ok(None), "background");
}

// Finalizers with Garbage Collection: a later delete with another policy
// replaces the garbage-collection finalizer of a pending deletion (a
// background delete of an object marked for orphaning lets it go).
#[test]
fn a_later_delete_with_another_policy_replaces_the_gc_finalizer() {
    let mut sim = cluster("100s", "{}");
    create(&mut sim, 1_000, set("web"));
    write(&mut sim, 2_000, delete(key("ReplicaSet", "web"), Some(PropagationPolicy::Orphan))).unwrap();
    let foreground = write(&mut sim, 3_000, delete(key("ReplicaSet", "web"), Some(PropagationPolicy::Foreground)))
        .unwrap()
        .expect("still marked");
    assert_eq!(foreground.metadata.finalizers, [FOREGROUND_FINALIZER]);
    assert_eq!(write(&mut sim, 4_000, delete(key("ReplicaSet", "web"), Some(PropagationPolicy::Background))), Ok(None));
}

// Owners and Dependents: an object may have several owners; the collector
// deletes it only when all are gone, and otherwise removes the references
// to the gone ones.
#[test]
fn a_dependent_with_a_live_owner_left_loses_only_the_dangling_reference() {
    let mut sim = cluster("5s", "{}");
    let gone = create(&mut sim, 1_000, set("gone"));
    let kept = create(&mut sim, 1_100, set("kept"));
    create(&mut sim, 1_200, pod("shared", &[(&gone, false), (&kept, false)], &[]));
    write(&mut sim, 2_000, delete(key("ReplicaSet", "gone"), None)).unwrap();
    sim.run_until(8_000);
    let shared = stored(&sim, &key("Pod", "shared")).expect("one owner is left");
    let owners: Vec<&str> = shared.metadata.owner_references.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(owners, ["kept"]);
}

/// A library scenario, run natively.
fn library(name: &str) -> Sim {
    let s = recon_catalog::scenario(name).expect("in the library");
    let scenario = recon_scenario::parse(&format!("{name}.yaml"), s.yaml).expect("library scenarios parse");
    let mut sim =
        Sim::new(&scenario, Box::new(|c| recon_catalog::instantiate(&c.controller))).expect("built-ins instantiate");
    sim.run();
    sim
}

// The gc-stale-view scenario: a collector that relists from a frozen cache
// and deletes by name takes a live dependent, and the finding names the
// owner it believed gone.
#[test]
fn a_collector_on_a_stale_view_deleting_by_name_is_caught_deleting_a_live_dependent() {
    let sim = library("gc-stale-view");
    let found = violations(&sim, Check::DeletedLiveDependent);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].starts_with("garbage-collector deleted Pod default/db-0"), "{}", found[0]);
    assert!(found[0].contains("while its owner StatefulSet db"), "{}", found[0]);
    assert!(found[0].contains("it believed owner StatefulSet db"), "{}", found[0]);
    assert!(found[0].contains("earlier incarnation"), "{}", found[0]);
}

// Its fix: the real collector's deletes carry the uid precondition, so the
// same stale delete is a 409 Conflict.
#[test]
fn with_the_uid_precondition_the_same_stale_delete_is_refused() {
    let sim = library("gc-stale-view-uid-precondition");
    assert!(violations(&sim, Check::DeletedLiveDependent).is_empty());
    let refused = sim.trace().entries.iter().any(|e| {
        matches!(&e.event, Event::WriteFailed { by, status, .. }
            if by == "garbage-collector" && status.reason == recon_abi::StatusReason::Conflict)
    });
    assert!(refused, "the stale delete reached the API server and was refused");
}

// The orphaned-dependent check: a dependent left naming only owners that
// are gone is reported at the end of a run with a collector — here one told
// not to watch ReplicaSets, so it cannot judge the pod.
#[test]
fn a_dependent_the_collector_never_collects_is_reported_orphaned_at_the_end() {
    let mut sim = cluster("0s", "{ kinds: [Pod] }");
    let web = create(&mut sim, 1_000, set("web"));
    create(&mut sim, 1_200, pod("web-a", &[(&web, false)], &[]));
    write(&mut sim, 2_000, delete(key("ReplicaSet", "web"), None)).unwrap();
    sim.run();
    let found = violations(&sim, Check::OrphanedDependent);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].starts_with("orphaned dependent: Pod default/web-a"), "{}", found[0]);
}

/// A ReplicaSet, the collector, and the script's `kubectl delete` of the
/// ReplicaSet at 1s with `cascade` (if any); its pod is created at 100ms,
/// owned by it (by uid).
fn script_delete(cascade: Option<&str>) -> Sim {
    let cascade = cascade.map(|c| format!(", cascade: {c}")).unwrap_or_default();
    let yaml = format!(
        r#"
name: cascade
duration: 10s
network: {{ latency: {{ min: 1ms, max: 1ms }} }}
apiServers: [ {{ name: apiserver-1 }} ]
components:
  - {{ name: garbage-collector, controller: garbage-collector, apiServer: apiserver-1 }}
objects:
  - {{ apiVersion: apps/v1, kind: ReplicaSet, metadata: {{ name: web, namespace: default }} }}
script:
  - {{ at: 1s, delete: {{ kind: ReplicaSet, name: web{cascade} }} }}
"#
    );
    let scenario = recon_scenario::parse("cascade.yaml", &yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    let mut sim = Sim::new(&scenario, Box::new(|c| recon_catalog::instantiate(&c.controller))).expect("built in");
    sim.run_until(100);
    let owner =
        sim.store().get(&ObjectKey::new("ReplicaSet", "default", "web"), None).unwrap().unwrap().value.as_ref().clone();
    let mut pod = Object { api_version: "v1".into(), kind: "Pod".into(), ..Default::default() };
    pod.metadata.name = "web-0".into();
    pod.metadata.namespace = "default".into();
    pod.metadata.owner_references = vec![OwnerReference {
        api_version: "apps/v1".into(),
        kind: "ReplicaSet".into(),
        name: "web".into(),
        uid: owner.metadata.uid,
        controller: true,
        block_owner_deletion: true,
    }]
    .into();
    sim.request("apiserver-1", Request::Write(Action::Create { object: pod, dry_run: false })).unwrap();
    sim
}

/// What the script's delete did to the ReplicaSet, as its first write
/// after the step: the finalizers it set (`None`: it removed it at once).
fn first_write_to_the_owner(sim: &mut Sim) -> Option<Vec<String>> {
    sim.run_until(1_010);
    let trace = sim.trace();
    let step = trace.entries.iter().find(|e| matches!(e.event, Event::Script { .. })).expect("the step ran");
    let Event::Script { description } = &step.event else { unreachable!() };
    assert!(description.starts_with("kubectl delete ReplicaSet default/web"), "{description}");
    let write = trace
        .entries
        .iter()
        .find(|e| matches!(&e.event, Event::StoreWrite { key, by, .. } if key.name == "web" && by == "kubectl"))
        .expect("the delete reached the store");
    match &write.event {
        Event::StoreWrite { removed: true, .. } => None,
        Event::StoreWrite { key, revision, .. } => {
            // The owner as that write left it (it may be gone by now).
            let owner = sim.store().get(key, Some(*revision)).unwrap().expect("there at its revision");
            Some(owner.value.metadata.finalizers.clone())
        }
        _ => unreachable!("a store write"),
    }
}

// "Use Cascading Deletion" (Tasks → Administer a Cluster): `kubectl delete
// --cascade=foreground|background|orphan` sends that propagation policy;
// the script's delete step takes the same words.
#[test]
fn the_scripts_delete_step_sends_its_cascade_as_the_propagation_policy() {
    let foreground = first_write_to_the_owner(&mut script_delete(Some("foreground")));
    assert_eq!(foreground, Some(vec![FOREGROUND_FINALIZER.to_owned()]), "marked, held for its dependents");
    let orphan = first_write_to_the_owner(&mut script_delete(Some("orphan")));
    assert_eq!(orphan, Some(vec![ORPHAN_FINALIZER.to_owned()]), "marked, held until the pod is orphaned");
    assert_eq!(first_write_to_the_owner(&mut script_delete(Some("background"))), None, "removed at once");
    assert_eq!(first_write_to_the_owner(&mut script_delete(None)), None, "the default for apps/v1: background");
    // The orphaned pod stays and loses its owner reference.
    let mut sim = script_delete(Some("orphan"));
    sim.run();
    let pod = sim.store().get(&ObjectKey::new("Pod", "default", "web-0"), None).unwrap().expect("the pod stays").value;
    assert!(pod.metadata.owner_references.is_empty(), "{pod:?}");
    let step = sim.trace().entries.iter().find(|e| matches!(e.event, Event::Script { .. })).unwrap();
    assert!(recon_trace::text::describe(step).ends_with("--cascade=orphan"), "{}", recon_trace::text::describe(step));
}
