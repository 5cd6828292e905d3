use recon_abi::{Action, ComponentConfig, Controller, InputEvent, Manifest, Object, StatusReason, Verb, WatchSpec};
use recon_sdk::pod::pod_ref;
use recon_sdk::testing::{
    ObjectExt, container_of, deleted, failed, listed, modified, node_input, pod, succeeded, timer,
};
use serde_json::json;

use super::*;

fn kubelet_on(node: &str) -> (Kubelet, Manifest) {
    let mut kubelet = Kubelet::new();
    let config = ComponentConfig { name: format!("kubelet-{node}"), node: Some(node.into()), ..Default::default() };
    let manifest = kubelet.init(&config);
    (kubelet, manifest)
}

fn web0(uid: &str, rv: &str) -> Object {
    pod("default", "web-0", uid, rv).on_node("node-1")
}

fn start(p: &Object) -> Action {
    Action::StartContainer { pod: pod_ref(p) }
}

fn stop(p: &Object) -> Action {
    Action::StopContainer { pod: pod_ref(p) }
}

fn final_delete(p: &Object) -> Action {
    Action::Delete {
        key: p.key(),
        uid: Some(p.metadata.uid.clone()),
        resource_version: None,
        grace_period_seconds: Some(0),
        propagation_policy: None,
        dry_run: false,
    }
}

fn status_update(p: &Object, now: u64) -> Action {
    let mut expected = p.clone();
    expected.status = json!({
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}],
        "startTime": format_timestamp(now),
    })
    .into();
    Action::UpdateStatus { object: expected, dry_run: false }
}

#[test]
fn kubelet_manifest_watches_only_its_node_and_declares_its_writes() {
    let (_, manifest) = kubelet_on("node-1");
    assert_eq!(manifest.name, "kubelet");
    assert_eq!(manifest.abi_version, ABI_VERSION);
    assert!(manifest.node_agent);
    assert_eq!(
        manifest.watches,
        vec![WatchSpec { kind: "Pod".into(), field_selector: "spec.nodeName=node-1".into(), ..Default::default() }]
    );
    assert!(manifest.allows(Verb::UpdateStatus, "Pod") && manifest.allows(Verb::Delete, "Pod"));
    assert!(!manifest.allows(Verb::Create, "Pod") && !manifest.allows(Verb::Update, "Pod"));
}

#[test]
fn kubelet_without_a_node_watches_nothing_and_does_nothing() {
    let mut kubelet = Kubelet::new();
    let manifest = kubelet.init(&ComponentConfig { name: "kubelet".into(), ..Default::default() });
    assert!(manifest.watches.is_empty());
    let out = kubelet.handle(&node_input(0, vec![listed(0, "1", vec![web0("uid-1", "1")])], vec![]));
    assert_eq!(out.actions, vec![]);
}

#[test]
fn kubelet_starts_a_listed_pod_that_is_not_running() {
    let (mut kubelet, _) = kubelet_on("node-1");
    let p = web0("uid-1", "5");
    let out = kubelet.handle(&node_input(100, vec![listed(0, "5", vec![p.clone()])], vec![]));
    assert_eq!(out.actions, vec![start(&p), status_update(&p, 100)]);
    let Action::UpdateStatus { object, .. } = &out.actions[1] else { unreachable!() };
    assert_eq!(object.metadata.resource_version, "5", "the status write is compare-and-swap on the cached version");
}

#[test]
fn kubelet_does_nothing_before_its_first_list_even_with_containers_running() {
    let (mut kubelet, _) = kubelet_on("node-1");
    let p = web0("uid-1", "5");
    let out = kubelet.handle(&node_input(0, vec![], vec![container_of(&p)]));
    assert_eq!(out.actions, vec![], "an empty cache before the first list means 'unknown', not 'stop everything'");
}

#[test]
fn kubelet_does_not_repeat_a_status_update_while_it_is_in_flight() {
    let (mut kubelet, _) = kubelet_on("node-1");
    let p = web0("uid-1", "5");
    kubelet.handle(&node_input(0, vec![listed(0, "5", vec![p.clone()])], vec![]));

    let running = vec![container_of(&p)];
    assert_eq!(kubelet.handle(&node_input(1, vec![], running.clone())).actions, vec![]);
    let stored = p.clone().at_version("6").running_ready();
    let answer = InputEvent::from(succeeded(Verb::UpdateStatus, &stored));
    assert_eq!(kubelet.handle(&node_input(2, vec![answer], running.clone())).actions, vec![]);
    assert_eq!(kubelet.handle(&node_input(3, vec![modified(0, stored)], running)).actions, vec![]);
}

#[test]
fn kubelet_stops_a_container_whose_pod_was_deleted() {
    let (mut kubelet, _) = kubelet_on("node-1");
    let p = web0("uid-1", "5").running_ready();
    let running = vec![container_of(&p)];
    assert_eq!(kubelet.handle(&node_input(0, vec![listed(0, "5", vec![p.clone()])], running.clone())).actions, vec![]);

    let out = kubelet.handle(&node_input(1, vec![deleted(0, p.clone().at_version("7"))], running));
    assert_eq!(out.actions, vec![stop(&p)]);
}

/// Containers whose pods are gone stop in uid order, whatever order the
/// runtime reports them in; a wanted pod's container stays and its pod is
/// not started again, call after call.
#[test]
fn kubelet_stops_unwanted_containers_in_uid_order_and_keeps_the_wanted_one() {
    let (mut kubelet, _) = kubelet_on("node-1");
    let kept = web0("uid-5", "5").running_ready();
    let gone_b = pod("default", "web-b", "uid-9", "3").on_node("node-1");
    let gone_a = pod("default", "web-a", "uid-2", "4").on_node("node-1");
    let running = vec![container_of(&gone_b), container_of(&kept), container_of(&gone_a)];
    let listed_kept = listed(0, "5", vec![kept.clone()]);
    let out = kubelet.handle(&node_input(0, vec![listed_kept], running.clone()));
    assert_eq!(out.actions, vec![stop(&gone_a), stop(&gone_b)]);
    let out = kubelet.handle(&node_input(1, vec![], vec![container_of(&kept)]));
    assert_eq!(out.actions, vec![], "the kept container is still wanted on the next call");
}

/// Each container is paired with the pod at its name: containers of no pod
/// (before, between and after the cached pods in the runtime's order) stop,
/// as do a terminating pod's and an old incarnation's beside its
/// successor's; the wanted ones stay.
#[test]
fn kubelet_pairs_each_container_with_the_pod_at_its_name() {
    let (mut kubelet, _) = kubelet_on("node-1");
    let on = |name: &str, uid: &str| pod("default", name, uid, "5").on_node("node-1");
    let kept = on("web-1", "uid-1").running_ready();
    let dying = on("web-3", "uid-3").running_ready().terminating();
    let (old, new) = (on("web-5", "uid-5"), on("web-5", "uid-6").running_ready());
    let (gone_0, gone_2, gone_6) = (on("web-0", "uid-7"), on("web-2", "uid-0"), on("web-6", "uid-4"));
    let running = [&gone_0, &kept, &gone_2, &dying, &old, &new, &gone_6].map(container_of).to_vec();
    let cached = listed(0, "5", vec![kept.clone(), dying.clone(), new.clone()]);
    let out = kubelet.handle(&node_input(0, vec![cached], running));
    assert_eq!(
        out.actions,
        vec![stop(&gone_2), stop(&dying), stop(&gone_6), stop(&old), stop(&gone_0), final_delete(&dying)],
        "stops in uid order, then the terminating pod's delete; the kept and the new containers stay"
    );
}

#[test]
fn kubelet_stops_the_old_incarnation_before_starting_the_new_one_with_the_same_name() {
    let (mut kubelet, _) = kubelet_on("node-1");
    let old = web0("uid-1", "5").running_ready();
    let new = web0("uid-2", "9");
    let out = kubelet.handle(&node_input(0, vec![listed(0, "9", vec![new.clone()])], vec![container_of(&old)]));
    assert_eq!(out.actions, vec![stop(&old), start(&new), status_update(&new, 0)]);
}

#[test]
fn kubelet_deletes_a_terminating_pod_once_its_container_stopped() {
    let (mut kubelet, _) = kubelet_on("node-1");
    let p = web0("uid-1", "5").running_ready();
    let running = vec![container_of(&p)];
    kubelet.handle(&node_input(0, vec![listed(0, "5", vec![p.clone()])], running.clone()));

    let dying = p.clone().at_version("8").terminating();
    let out = kubelet.handle(&node_input(1, vec![modified(0, dying.clone())], running));
    assert_eq!(out.actions, vec![stop(&p), final_delete(&dying)]);

    // The container is gone now; the delete is in flight and not sent again.
    assert_eq!(kubelet.handle(&node_input(2, vec![], vec![])).actions, vec![]);
    let answer = InputEvent::Result(Box::new(recon_abi::ActionResult {
        verb: Verb::Delete,
        key: dying.key(),
        outcome: recon_abi::Outcome::Ok(None),
        id: None,
    }));
    assert_eq!(kubelet.handle(&node_input(3, vec![answer], vec![])).actions, vec![]);
    assert_eq!(kubelet.handle(&node_input(4, vec![deleted(0, dying.at_version("9"))], vec![])).actions, vec![]);
}

#[test]
fn kubelet_deletes_a_terminating_pod_it_never_started() {
    let (mut kubelet, _) = kubelet_on("node-1");
    let dying = web0("uid-1", "5").terminating();
    let out = kubelet.handle(&node_input(0, vec![listed(0, "5", vec![dying.clone()])], vec![]));
    assert_eq!(out.actions, vec![final_delete(&dying)]);
}

#[test]
fn kubelet_retries_a_failed_delete_after_a_delay_but_not_before() {
    let (mut kubelet, _) = kubelet_on("node-1");
    let dying = web0("uid-1", "5").terminating();
    kubelet.handle(&node_input(0, vec![listed(0, "5", vec![dying.clone()])], vec![]));

    let answer = InputEvent::from(failed(Verb::Delete, &dying.key(), StatusReason::ServiceUnavailable));
    let out = kubelet.handle(&node_input(10, vec![answer], vec![]));
    // The runtime's retry: a requeue of the kubelet's one key, its node.
    let retry = "Node//node-1";
    assert_eq!(out.actions, vec![Action::RequeueAfter { key: retry.into(), after_ms: recon_sdk::RETRY_AFTER_MS }]);
    assert_eq!(kubelet.handle(&node_input(500, vec![], vec![])).actions, vec![]);
    let out = kubelet.handle(&node_input(1_010, vec![timer(retry)], vec![]));
    assert_eq!(out.actions, vec![final_delete(&dying)]);
}

#[test]
fn kubelet_waits_for_a_newer_version_after_a_status_conflict() {
    let (mut kubelet, _) = kubelet_on("node-1");
    let p = web0("uid-1", "5");
    kubelet.handle(&node_input(0, vec![listed(0, "5", vec![p.clone()])], vec![]));
    let running = vec![container_of(&p)];
    let answer = InputEvent::Result(Box::new(failed(Verb::UpdateStatus, &p.key(), StatusReason::Conflict)));
    assert_eq!(kubelet.handle(&node_input(5, vec![answer], running.clone())).actions, vec![]);
    assert_eq!(kubelet.handle(&node_input(60_000, vec![], running.clone())).actions, vec![]);

    let newer = p.clone().at_version("6").with_label("touched", "yes");
    let out = kubelet.handle(&node_input(60_001, vec![modified(0, newer.clone())], running));
    assert_eq!(out.actions, vec![status_update(&newer, 60_001)]);
}

/// Kubernetes issue #59848, the kubelet's part. node-1 ran web-0 (uid-1),
/// stopped it and deleted it during a rolling update; web-0 (uid-2) now runs
/// on node-2. node-1's kubelet restarts and relists from an API server whose
/// cache still shows the world before the deletion. It believes that list
/// and starts uid-1 again: two nodes now run web-0. The kubelet cannot tell;
/// only the way the host lists (quorum or consistent) prevents it.
#[test]
fn restarted_kubelet_trusts_a_stale_list_and_starts_the_pod_again() {
    let stale = web0("uid-1", "5").running_ready();

    let (mut before, _) = kubelet_on("node-1");
    before.handle(&node_input(0, vec![listed(0, "5", vec![stale.clone()])], vec![container_of(&stale)]));
    let dying = stale.clone().at_version("8").terminating();
    let out = before.handle(&node_input(1, vec![modified(0, dying.clone())], vec![container_of(&stale)]));
    assert_eq!(out.actions, vec![stop(&stale), final_delete(&dying)]);

    // A fresh instance after the restart: empty memory, nothing running here.
    let (mut after, _) = kubelet_on("node-1");
    let out = after.handle(&node_input(5_000, vec![listed(0, "5", vec![stale.clone()])], vec![]));
    assert_eq!(out.actions, vec![start(&stale)]);
}
