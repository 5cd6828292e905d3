use recon_abi::{Action, ComponentConfig, Controller, Object, PropagationPolicy};
use recon_sdk::meta::owner_reference;
use recon_sdk::testing::{ObjectExt, input, listed, object, pod};
use serde_json::json;

use super::{DEFAULT_KINDS, GarbageCollector};

fn started(params: serde_json::Value) -> GarbageCollector {
    let mut gc = GarbageCollector::new();
    let params = params.as_object().cloned().unwrap_or_default().into_iter().collect();
    let manifest = gc.init(&ComponentConfig { name: "gc".into(), params, ..Default::default() });
    assert_eq!(manifest.watches.len(), DEFAULT_KINDS.len());
    gc
}

fn set(uid: &str) -> Object {
    object("ReplicaSet", "default", "web").with_uid(uid).at_version("1")
}

fn owned_pod(name: &str, owner: &Object) -> Object {
    let mut p = pod("default", name, &format!("uid-{name}"), "2");
    p.metadata.owner_references.push(owner_reference(owner));
    p
}

/// Lists every default kind: ReplicaSets and Pods as given, nothing else.
fn list_all(gc: &mut GarbageCollector, sets: Vec<Object>, pods: Vec<Object>) -> Vec<Action> {
    let events = vec![listed(0, "5", vec![]), listed(1, "5", sets), listed(2, "5", vec![]), listed(3, "5", pods)];
    gc.handle(&input(1_000, events)).actions
}

#[test]
fn a_pod_whose_owner_is_in_view_is_left_alone() {
    let mut gc = started(json!({}));
    let owner = set("uid-web");
    assert!(list_all(&mut gc, vec![owner.clone()], vec![owned_pod("web-a", &owner)]).is_empty());
}

#[test]
fn a_pod_whose_owner_uid_is_gone_is_deleted_with_a_uid_precondition_even_if_the_name_is_back() {
    let mut gc = started(json!({}));
    let old = set("uid-old");
    let actions = list_all(&mut gc, vec![set("uid-new")], vec![owned_pod("web-a", &old)]);
    assert_eq!(
        actions,
        vec![Action::Delete {
            key: recon_abi::ObjectKey::new("Pod", "default", "web-a"),
            uid: Some("uid-web-a".into()),
            resource_version: None,
            grace_period_seconds: None,
            propagation_policy: Some(PropagationPolicy::Background),
            dry_run: false
        }]
    );
}

#[test]
fn without_the_uid_precondition_the_delete_goes_by_name() {
    let mut gc = started(json!({ "uidPrecondition": false }));
    let actions = list_all(&mut gc, vec![], vec![owned_pod("web-a", &set("uid-old"))]);
    assert!(matches!(&actions[..], [Action::Delete { uid: None, .. }]), "{actions:?}");
}

#[test]
fn an_owner_of_a_kind_it_does_not_watch_is_never_taken_for_gone() {
    let mut gc = started(json!({}));
    let mut p = pod("default", "p", "uid-p", "2");
    p.metadata.owner_references.push(owner_reference(&object("Widget", "default", "w").with_uid("uid-w")));
    assert!(list_all(&mut gc, vec![], vec![p]).is_empty());
}
