//! The controller driven through the plugin ABI as the host drives it:
//! lists, watch events and answers to its requests (by request id).
//!
//! The rollout arithmetic follows Kubernetes' Deployment docs
//! (<https://kubernetes.io/docs/concepts/workloads/controllers/deployment/#rolling-update-deployment>):
//! maxSurge is rounded up and maxUnavailable down from a percentage, both
//! 25% by default, and they may not both be 0.

use recon_abi::{Action as Wire, ActionResult, ComponentConfig, Controller as _, InputEvent, Object, Output, Verb};
use recon_sdk::hash::template_hash;
use recon_sdk::testing::{ObjectExt, added, input, listed, modified, object, succeeded};
use serde_json::{Value, json};

use super::*;

fn started() -> kube::Plugin {
    let mut controller = controller();
    let manifest = controller.init(&ComponentConfig { name: "deployment".into(), ..Default::default() });
    assert_eq!(manifest.name, "deployment");
    let kinds: Vec<&str> = manifest.watches.iter().map(|w| w.kind.as_str()).collect();
    assert_eq!(kinds, ["Deployment", "ReplicaSet"]);
    controller
}

fn deployment(replicas: i64, image: &str, strategy: Value) -> Object {
    object("Deployment", "default", "web").with_uid("uid-web").at_version("10").at_generation(1).with_spec(json!({
        "replicas": replicas,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": image}]},
        },
        "strategy": strategy,
    }))
}

fn rolling(replicas: i64, image: &str) -> Object {
    deployment(replicas, image, json!({"type": "RollingUpdate"}))
}

fn creates(out: &Output) -> Vec<&Object> {
    out.actions.iter().filter_map(|a| if let Wire::Create { object, .. } = a { Some(object) } else { None }).collect()
}

/// The scaling writes, as (set name, replicas).
fn scales(out: &Output) -> Vec<(String, i64)> {
    let scales = out.actions.iter().filter_map(|a| match a {
        Wire::Update { object, .. } => Some((object.metadata.name.clone(), object.spec["replicas"].as_i64()?)),
        _ => None,
    });
    scales.collect()
}

fn status_writes(out: &Output) -> Vec<&Value> {
    let writes = out.actions.iter().filter_map(|a| match a {
        Wire::UpdateStatus { object, .. } => Some(&*object.status),
        _ => None,
    });
    writes.collect()
}

/// The answers to every request of `out`: each write succeeds and stores
/// what was sent at `version` (a status write with the status as sent).
fn answers(out: &Output, version: &str) -> Vec<InputEvent> {
    let requests = out.actions.iter().enumerate().filter_map(|(i, action)| {
        let (verb, object) = match action {
            Wire::Create { object, .. } => (Verb::Create, object),
            Wire::Update { object, .. } => (Verb::Update, object),
            Wire::UpdateStatus { object, .. } => (Verb::UpdateStatus, object),
            _ => return None,
        };
        let mut result: ActionResult = succeeded(verb, &object.clone().at_version(version));
        result.id = Some(out.request_id(i).expect("a request has an id"));
        Some(InputEvent::Result(Box::new(result)))
    });
    requests.collect()
}

/// A set as the API server stores it, with `ready` pods ready.
fn stored(set: &Object, uid: &str, rv: &str, ready: i64) -> Object {
    let replicas = set.spec["replicas"].as_i64().unwrap();
    set.clone().with_uid(uid).at_version(rv).with_status(json!({"replicas": replicas, "readyReplicas": ready}))
}

fn with_replicas(set: &Object, replicas: i64, rv: &str) -> Object {
    let mut set = set.clone().at_version(rv);
    set.spec["replicas"] = json!(replicas);
    set
}

/// Runs a deployment to a fully rolled-out first set of `replicas` ready pods.
fn rolled_out(controller: &mut kube::Plugin, d: &Object) -> Object {
    let out = controller.handle(&input(0, vec![listed(0, "10", vec![d.clone()]), listed(1, "10", vec![])]));
    let first = creates(&out)[0].clone();
    let replicas = first.spec["replicas"].as_i64().unwrap();
    let set = stored(&first, "uid-rs-1", "11", replicas);
    let mut events = answers(&out, "11");
    events.push(added(1, set.clone()));
    let out = controller.handle(&input(1, events));
    // The status write that the set's event brought, answered.
    let out = controller.handle(&input(1, answers(&out, "12")));
    assert_eq!(out.actions, vec![], "rolled out");
    set
}

#[test]
fn nothing_happens_before_both_watches_have_listed() {
    let mut controller = started();
    let out = controller.handle(&input(0, vec![listed(0, "10", vec![rolling(3, "web:1")])]));
    assert_eq!(out.actions, vec![]);
}

#[test]
fn a_new_deployment_gets_one_owned_replicaset_per_template_hash() {
    let mut controller = started();
    let d = rolling(3, "web:1");
    let out = controller.handle(&input(0, vec![listed(0, "10", vec![d.clone()]), listed(1, "10", vec![])]));
    let created = creates(&out);
    assert_eq!(created.len(), 1);
    let set = created[0];
    let template: k8s_openapi::api::core::v1::PodTemplateSpec =
        serde_json::from_value(d.spec["template"].clone()).unwrap();
    let hash = template_hash(&serde_json::to_value(&template).unwrap());
    assert_eq!(set.metadata.name, format!("web-{hash}"));
    assert_eq!(set.metadata.labels.get(POD_TEMPLATE_HASH_LABEL), Some(&hash));
    assert_eq!(set.metadata.labels.get("app").map(String::as_str), Some("web"));
    assert_eq!(set.metadata.annotations.get(REVISION_ANNOTATION).map(String::as_str), Some("1"));
    assert_eq!(set.metadata.owner_references[0].uid, "uid-web");
    assert!(set.metadata.owner_references[0].controller);
    assert_eq!(set.spec["replicas"], 3, "nothing else runs, so the surge does not limit the first set");
    assert_eq!(set.spec["selector"]["matchLabels"][POD_TEMPLATE_HASH_LABEL], json!(hash));
    assert_eq!(set.spec["template"]["metadata"]["labels"][POD_TEMPLATE_HASH_LABEL], json!(hash));
    assert_eq!(set.spec["template"]["spec"]["containers"], d.spec["template"]["spec"]["containers"]);
}

#[test]
fn a_template_change_surges_the_new_set_and_retires_the_old_within_the_defaults() {
    let mut controller = started();
    let old = rolled_out(&mut controller, &rolling(4, "web:1"));

    // web:2 with 4 replicas: maxSurge 25% = 1 pod above 4, maxUnavailable 25% = 1.
    let d2 = rolling(4, "web:2").at_version("20").at_generation(2);
    let out = controller.handle(&input(2, vec![modified(0, d2)]));
    let created = creates(&out);
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].spec["replicas"], 1);
    assert_eq!(created[0].metadata.annotations[REVISION_ANNOTATION], "2");
    assert_eq!(scales(&out), vec![(old.metadata.name.clone(), 3)], "4 available, 3 must stay");
    let update = out.actions.iter().find_map(|a| if let Wire::Update { object, .. } = a { Some(object) } else { None });
    assert_eq!(update.unwrap().metadata.resource_version, "11", "scaling is compare-and-swap on the cached version");

    // Answered, but the store has not seen the writes: a status change of
    // the old set at its old spec brings no second step on the same view.
    let mut events = answers(&out, "21");
    events.push(modified(1, stored(&old, "uid-rs-1", "12", 4)));
    let out = controller.handle(&input(3, events));
    assert!(creates(&out).is_empty() && scales(&out).is_empty(), "{:?}", out.actions);
}

#[test]
fn the_rollout_advances_as_new_pods_become_available() {
    let mut controller = started();
    let old = rolled_out(&mut controller, &rolling(4, "web:1"));
    let d2 = rolling(4, "web:2").at_version("20").at_generation(2);
    let out = controller.handle(&input(2, vec![modified(0, d2)]));
    let new = stored(creates(&out)[0], "uid-rs-2", "22", 0);
    let old = stored(&with_replicas(&old, 3, "22"), "uid-rs-1", "22", 3);
    let mut events = answers(&out, "22");
    events.extend([added(1, new.clone()), modified(1, old.clone())]);
    // New 1 (not ready) + old 3 = 4 of at most 5: the new set may grow by one.
    let out = controller.handle(&input(3, events));
    assert_eq!(scales(&out), vec![(new.metadata.name.clone(), 2)]);

    // The new set at 2 with 2 ready, old 3 ready: 5 available, 3 needed, old goes down by 2.
    let new = stored(&with_replicas(&new, 2, "24"), "uid-rs-2", "24", 2);
    let mut events = answers(&out, "24");
    events.push(modified(1, new));
    let out = controller.handle(&input(4, events));
    assert_eq!(scales(&out), vec![(old.metadata.name.clone(), 1)]);
}

#[test]
fn unhealthy_old_pods_are_scaled_away_first() {
    let mut controller = started();
    let old = rolled_out(&mut controller, &rolling(4, "web:1"));
    // The old set has lost two of its ready pods when the rollout starts.
    let out = controller.handle(&input(2, vec![modified(1, stored(&old, "uid-rs-1", "12", 2))]));
    let mut events = answers(&out, "13");
    events.push(modified(0, rolling(4, "web:2").at_version("20").at_generation(2)));
    let out = controller.handle(&input(3, events));
    // Room to scale down: 4 + 1 - 3 - 1 = 1, taken from the unavailable pods;
    // the 2 available are not above the 3 required, so nothing more.
    assert_eq!(scales(&out), vec![(old.metadata.name.clone(), 3)]);
}

#[test]
fn recreate_scales_old_sets_to_zero_and_creates_the_new_one_once_their_pods_are_gone() {
    let mut controller = started();
    let recreating = |image| deployment(3, image, json!({"type": "Recreate"}));
    let old = rolled_out(&mut controller, &recreating("web:1"));
    let out = controller.handle(&input(2, vec![modified(0, recreating("web:2").at_version("20"))]));
    assert_eq!(scales(&out), vec![(old.metadata.name.clone(), 0)]);
    assert!(creates(&out).is_empty());

    // Scaled to 0 but its pods are still reported: wait.
    let draining = stored(&with_replicas(&old, 0, "21"), "uid-rs-1", "21", 0).with_status(json!({"replicas": 2}));
    let mut events = answers(&out, "21");
    events.push(modified(1, draining));
    let out = controller.handle(&input(3, events));
    assert!(creates(&out).is_empty() && scales(&out).is_empty());

    let drained = stored(&with_replicas(&old, 0, "22"), "uid-rs-1", "22", 0);
    let mut events = answers(&out, "22");
    events.push(modified(1, drained));
    let out = controller.handle(&input(4, events));
    let created = creates(&out);
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].spec["replicas"], 3);
}

#[test]
fn a_scale_up_without_a_template_change_grows_the_only_set_at_once_and_waits_to_see_it() {
    let mut controller = started();
    let set = rolled_out(&mut controller, &rolling(2, "web:1"));
    let out = controller.handle(&input(2, vec![modified(0, rolling(10, "web:1").at_version("20"))]));
    assert_eq!(scales(&out), vec![(set.metadata.name.clone(), 10)]);
    let mut events = answers(&out, "21");
    events.push(modified(0, rolling(1, "web:1").at_version("22")));
    let out = controller.handle(&input(3, events));
    assert!(scales(&out).is_empty(), "the scale-up is answered but not yet seen");
    let seen = stored(&with_replicas(&set, 10, "21"), "uid-rs-1", "21", 2);
    let mut events = answers(&out, "23");
    events.push(modified(1, seen));
    let out = controller.handle(&input(4, events));
    assert_eq!(scales(&out), vec![(set.metadata.name.clone(), 1)], "seen: the next step goes");
}

#[test]
fn the_status_sums_the_sets_and_is_written_only_when_it_changed() {
    let mut controller = started();
    let d = rolling(2, "web:1");
    let out = controller.handle(&input(0, vec![listed(0, "10", vec![d.clone()]), listed(1, "10", vec![])]));
    let status = status_writes(&out)[0].clone();
    assert_eq!(status["replicas"], 0);
    assert_eq!(status["conditions"], json!([{"type": "Available", "status": "False"}]));

    let set = stored(creates(&out)[0], "uid-rs-1", "11", 2);
    let with_status = d.clone().at_version("12").with_status(status);
    let mut events = answers(&out, "12");
    events.extend([modified(0, with_status.clone()), added(1, set)]);
    let out = controller.handle(&input(1, events));
    let status = status_writes(&out)[0].clone();
    assert_eq!(
        status,
        json!({
            "observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2,
            "availableReplicas": 2, "unavailableReplicas": 0,
            "conditions": [{"type": "Available", "status": "True"}],
        })
    );
    let settled = with_status.at_version("13").with_status(status);
    let mut events = answers(&out, "13");
    events.push(modified(0, settled));
    let out = controller.handle(&input(2, events));
    assert_eq!(out.actions, vec![], "nothing changed");
}

#[test]
fn fenceposts_round_surge_up_and_unavailability_down_and_never_both_zero() {
    let typed = |d: Object| -> Deployment {
        serde_json::from_value(json!({"metadata": {"name": "web"}, "spec": d.spec})).unwrap()
    };
    let with = |surge: Value, unavailable: Value| {
        let d = deployment(10, "web:1", json!({"rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}));
        fenceposts(&typed(d))
    };
    assert_eq!(fenceposts(&typed(rolling(10, "web:1"))), (3, 2));
    assert_eq!(with(json!(0), json!("0%")), (0, 1));
    assert_eq!(with(json!("50%"), json!(4)), (5, 4));
    assert_eq!(max_unavailable(&typed(deployment(10, "web:1", json!({"type": "Recreate"})))), 0);
}

#[test]
fn a_paused_deployment_does_not_roll_out() {
    let mut controller = started();
    let mut d = rolling(3, "web:1");
    d.spec["paused"] = json!(true);
    let out = controller.handle(&input(0, vec![listed(0, "10", vec![d]), listed(1, "10", vec![])]));
    assert!(creates(&out).is_empty());
    assert_eq!(status_writes(&out).len(), 1);
}
