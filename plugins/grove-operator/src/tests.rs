use recon_abi::{Action, ComponentConfig, Controller as _, InputEvent, Object};
use recon_sdk::testing::{ObjectExt, input, listed, modified, object, succeeded};
use serde_json::json;

use super::*;

fn started(params: serde_json::Value) -> Controller {
    let mut controller = controller();
    let params = params.as_object().cloned().unwrap_or_default().into_iter().collect();
    controller.init(&ComponentConfig { name: "grove-podcliqueset-controller".into(), params, ..Default::default() });
    controller
}

fn set(available: u64, rv: &str) -> Object {
    let mut s = object("PodCliqueSet", "default", "llm").with_uid("uid-pcs").at_version(rv);
    s.api_version = API_VERSION.into();
    s.metadata.generation = 1;
    s.spec = json!({ "template": { "cliques": [{ "name": "worker", "replicas": 2 }] } }).into();
    s.with_status(json!({ "availableReplicas": available }))
}

fn clique(of: &Object, ready: u64, rv: &str) -> Object {
    let clique = desired_podclique(of, &json!({ "name": "worker", "replicas": 2 }));
    clique.with_uid("uid-pclq").at_version(rv).with_status(json!({ "replicas": 2, "readyReplicas": ready }))
}

fn status_patches(actions: &[Action]) -> Vec<serde_json::Value> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::PatchStatus { patch, .. } => Some(patch.body().clone()),
            _ => None,
        })
        .collect()
}

/// The bug's step: the status computed equals the cached copy, so nothing
/// is written, whatever the store holds.
#[test]
fn a_status_equal_to_the_cached_copy_is_not_written_issue_775() {
    let mut c = started(json!({}));
    let pcs = set(1, "5");
    let actions = c
        .handle(&input(0, vec![listed(0, "9", vec![pcs.clone()]), listed(1, "9", vec![clique(&pcs, 2, "7")])]))
        .actions;
    assert!(status_patches(&actions).is_empty(), "{actions:?}");
    // A clique losing a pod changes the status: a merge patch without a lock.
    let actions = c.handle(&input(1, vec![modified(1, clique(&pcs, 1, "10"))])).actions;
    assert_eq!(status_patches(&actions), vec![json!({ "status": { "availableReplicas": 0 } })]);
}

/// grove's generation-changed predicate: a status-only change of the
/// primary wakes nothing.
#[test]
fn a_status_change_of_the_primary_wakes_nothing() {
    let mut c = started(json!({}));
    let pcs = set(1, "5");
    c.handle(&input(0, vec![listed(0, "9", vec![pcs.clone()]), listed(1, "9", vec![clique(&pcs, 1, "7")])]));
    let actions = c.handle(&input(1, vec![modified(0, set(1, "12"))])).actions;
    assert!(actions.is_empty(), "{actions:?}");
}

/// The optimistic lock: the patch names the cached resourceVersion, and a
/// copy older than the controller's own last status write is no baseline
/// for the no-op check.
#[test]
fn with_the_lock_a_copy_older_than_its_own_write_is_not_trusted() {
    let mut c = started(json!({ "optimisticLock": true }));
    let pcs = set(1, "5");
    c.handle(&input(0, vec![listed(0, "9", vec![pcs.clone()]), listed(1, "9", vec![clique(&pcs, 2, "7")])]));
    let actions = c.handle(&input(1, vec![modified(1, clique(&pcs, 1, "10"))])).actions;
    assert_eq!(
        status_patches(&actions),
        vec![json!({ "status": { "availableReplicas": 0 }, "metadata": { "resourceVersion": "5" } })]
    );
    let written = set(0, "11");
    let woken = c.handle(&input(2, vec![InputEvent::Result(Box::new(succeeded(Verb::PatchStatus, &written)))])).actions;
    // The clique is back: the status equals the stale cached copy (rv 5),
    // older than the write (rv 11), so it is not trusted; the locked patch
    // waits for the first write to settle and the key is requeued.
    let back = c.handle(&input(3, vec![modified(1, clique(&pcs, 2, "12"))])).actions;
    assert!(status_patches(&back).is_empty(), "{back:?}");
    let requeue = woken.iter().chain(&back).find_map(|a| match a {
        Action::RequeueAfter { key, .. } => Some(key.clone()),
        _ => None,
    });
    let requeue = requeue.expect("the key is requeued");
    // Once the cache shows the write, the requeue sends the status, locked
    // on that version.
    let caught_up = c.handle(&input(4, vec![modified(0, written.clone())])).actions;
    assert!(caught_up.is_empty(), "a status change wakes nothing: {caught_up:?}");
    let actions = c.handle(&input(1_003, vec![recon_sdk::testing::timer(&requeue)])).actions;
    assert_eq!(
        status_patches(&actions),
        vec![json!({ "status": { "availableReplicas": 1 }, "metadata": { "resourceVersion": "11" } })]
    );
}

/// The live read: the no-op check is judged against a quorum get.
#[test]
fn with_the_live_read_the_no_op_check_uses_the_object_read_from_the_api_server() {
    let mut c = started(json!({ "liveRead": true }));
    let pcs = set(1, "5");
    let actions = c
        .handle(&input(0, vec![listed(0, "9", vec![pcs.clone()]), listed(1, "9", vec![clique(&pcs, 2, "7")])]))
        .actions;
    let [Action::Get { resource_version: None, .. }] = actions.as_slice() else { panic!("{actions:?}") };
    // The store says 0 (the controller's own earlier write): the live
    // baseline differs, so the status goes out.
    let mut read = succeeded(Verb::Get, &set(0, "11"));
    read.id = Some(0);
    let actions = c.handle(&input(1, vec![InputEvent::Result(Box::new(read))])).actions;
    assert_eq!(status_patches(&actions), vec![json!({ "status": { "availableReplicas": 1 } })]);
}
