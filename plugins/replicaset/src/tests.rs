use recon_abi::{Action, ComponentConfig, Controller, InputEvent, Object, ObjectKey, StatusReason, Verb};
use recon_sdk::testing::{ObjectExt, added, deleted, failed, input, listed, modified, object, pod, succeeded, timer};
use serde_json::json;

use super::*;

fn controller_with(params: &[(&str, Value)]) -> ReplicaSetController {
    let mut c = ReplicaSetController::new();
    let params = params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    c.init(&ComponentConfig { name: "replicaset".into(), params, ..Default::default() });
    c
}

fn web(replicas: u32) -> Object {
    object("ReplicaSet", "default", "web").with_uid("rs-uid").at_version("3").at_generation(1).with_spec(json!({
        "replicas": replicas,
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "web:1"}]},
        },
    }))
}

/// A pod of `set` as stored by the API server, bound and Ready.
fn member(set: &Object, name: &str) -> Object {
    pod("default", name, &format!("uid-{name}"), "20")
        .owned_by(set)
        .with_label("app", "web")
        .on_node("node-1")
        .running_ready()
}

fn delete(p: &Object) -> Action {
    Action::Delete {
        key: p.key(),
        uid: Some(p.metadata.uid.clone()),
        resource_version: None,
        grace_period_seconds: None,
        propagation_policy: None,
        dry_run: false,
    }
}

fn creates(actions: &[Action]) -> usize {
    actions.iter().filter(|a| matches!(a, Action::Create { .. })).count()
}

/// The actions that touch pods, without status writes and timers.
fn pod_actions(actions: Vec<Action>) -> Vec<Action> {
    actions.into_iter().filter(|a| matches!(a, Action::Create { .. } | Action::Delete { .. })).collect()
}

fn start(set: &Object, pods: Vec<Object>) -> (ReplicaSetController, Vec<Action>) {
    let mut c = controller_with(&[]);
    let out = c.handle(&input(0, vec![listed(0, "30", vec![set.clone()]), listed(1, "30", pods)]));
    (c, out.actions)
}

/// A create result for a generateName pod that failed: the request had no name.
fn failed_create(reason: StatusReason) -> InputEvent {
    InputEvent::Result(failed(Verb::Create, &ObjectKey::new("Pod", "default", ""), reason))
}

#[test]
fn replicaset_manifest_watches_sets_and_pods_and_lists_its_writes() {
    let manifest = ReplicaSetController::new().init(&ComponentConfig::default());
    assert_eq!(manifest.name, "replicaset");
    assert_eq!(manifest.abi_version, ABI_VERSION);
    let kinds: Vec<&str> = manifest.watches.iter().map(|w| w.kind.as_str()).collect();
    assert_eq!(kinds, vec!["ReplicaSet", "Pod"]);
    assert_eq!(
        manifest.writes,
        vec![
            WritePermission { kind: "Pod".into(), verbs: vec![Verb::Create, Verb::Delete] },
            WritePermission { kind: "ReplicaSet".into(), verbs: vec![Verb::UpdateStatus] },
        ]
    );
}

#[test]
fn replicaset_creates_missing_pods_from_its_template_with_generate_name() {
    let set = web(2);
    let (_, actions) = start(&set, vec![]);
    let expected_pod = Object {
        api_version: "v1".into(),
        kind: "Pod".into(),
        metadata: recon_abi::ObjectMeta {
            generate_name: "web-".into(),
            namespace: "default".into(),
            labels: [("app".to_string(), "web".to_string())].into(),
            owner_references: vec![owner_reference(&set)],
            ..Default::default()
        },
        spec: json!({"containers": [{"name": "web", "image": "web:1"}]}),
        status: Value::Null,
        other: Default::default(),
    };
    let mut status = set.clone();
    status.status = json!({"replicas": 0, "readyReplicas": 0, "observedGeneration": 1});
    assert_eq!(
        actions,
        vec![
            Action::Create { object: expected_pod.clone(), dry_run: false },
            Action::Create { object: expected_pod, dry_run: false },
            Action::UpdateStatus { object: status, dry_run: false },
            // The requeue the reconcile asks for, to come back when the expectations expire.
            Action::RequeueAfter { key: "ReplicaSet/default/web".into(), after_ms: DEFAULT_EXPECTATIONS_TIMEOUT_MS },
        ]
    );
}

#[test]
fn replicaset_does_not_overcreate_while_creates_are_in_flight() {
    let set = web(2);
    let (mut c, actions) = start(&set, vec![]);
    assert_eq!(creates(&actions), 2);

    let (a, b) = (member(&set, "web-a"), member(&set, "web-b"));
    // Its own status write, the answers, then one pod seen: still nothing.
    let stored =
        set.clone().at_version("4").with_status(json!({"replicas": 0, "readyReplicas": 0, "observedGeneration": 1}));
    assert_eq!(creates(&c.handle(&input(1, vec![modified(0, stored)])).actions), 0);
    let answers =
        vec![InputEvent::Result(succeeded(Verb::Create, &a)), InputEvent::Result(succeeded(Verb::Create, &b))];
    assert_eq!(creates(&c.handle(&input(2, answers)).actions), 0);
    assert_eq!(creates(&c.handle(&input(3, vec![added(1, a.clone())])).actions), 0);
    assert_eq!(creates(&c.handle(&input(4, vec![added(1, b)])).actions), 0);

    // Expectations met; losing a pod brings exactly one create.
    let out = c.handle(&input(5, vec![deleted(1, a)]));
    assert_eq!(creates(&out.actions), 1);
}

#[test]
fn replicaset_lowers_expectations_when_a_create_fails_and_retries_after_a_delay() {
    let set = web(2);
    let (mut c, _) = start(&set, vec![]);
    let a = member(&set, "web-a");

    let out = c.handle(&input(10, vec![failed_create(StatusReason::ServiceUnavailable)]));
    assert_eq!(
        out.actions.iter().filter(|a| matches!(a, Action::RequeueAfter { .. })).collect::<Vec<_>>(),
        vec![&Action::RequeueAfter { key: "ReplicaSet/default/web".into(), after_ms: RETRY_AFTER_MS }]
    );
    assert_eq!(creates(&out.actions), 0, "no retry before the back-off");
    assert_eq!(
        creates(&c.handle(&input(20, vec![InputEvent::Result(succeeded(Verb::Create, &a)), added(1, a)])).actions),
        0
    );

    let out = c.handle(&input(1_010, vec![timer("ReplicaSet/default/web")]));
    assert_eq!(creates(&out.actions), 1);
}

#[test]
fn replicaset_gives_up_on_expectations_after_the_timeout() {
    let mut c = controller_with(&[("expectationsTimeoutMs", json!(5_000))]);
    let set = web(1);
    let out = c.handle(&input(0, vec![listed(0, "30", vec![set.clone()]), listed(1, "30", vec![])]));
    assert_eq!(creates(&out.actions), 1);
    assert!(out.actions.contains(&Action::RequeueAfter { key: "ReplicaSet/default/web".into(), after_ms: 5_000 }));

    // The create succeeded but the watch never shows the pod.
    let created = member(&set, "web-a");
    assert_eq!(creates(&c.handle(&input(10, vec![InputEvent::Result(succeeded(Verb::Create, &created))])).actions), 0);
    assert_eq!(creates(&c.handle(&input(4_999, vec![timer("ReplicaSet/default/web")])).actions), 0);
    assert_eq!(creates(&c.handle(&input(5_000, vec![timer("ReplicaSet/default/web")])).actions), 1);
}

#[test]
fn replicaset_deletes_extras_unbound_first_then_not_ready_then_highest_name() {
    let set = web(2);
    let ready_a = member(&set, "web-a");
    let mut not_ready_b = member(&set, "web-b");
    not_ready_b.status = json!({"phase": "Running"});
    let mut unbound_c = member(&set, "web-c");
    unbound_c.spec = json!({});
    unbound_c.status = Value::Null;
    let ready_d = member(&set, "web-d");
    let ready_e = member(&set, "web-e");
    let pods = vec![ready_a, not_ready_b.clone(), unbound_c.clone(), ready_d.clone(), ready_e.clone()];
    let (mut c, actions) = start(&set, pods);
    assert_eq!(pod_actions(actions), vec![delete(&unbound_c), delete(&not_ready_b), delete(&ready_e)]);

    // Until all three are seen terminating or gone, nothing more is deleted.
    let answers = vec![InputEvent::Result(succeeded(Verb::Delete, &ready_e.clone().terminating()))];
    assert_eq!(pod_actions(c.handle(&input(1, answers)).actions), vec![]);
    let out = c.handle(&input(2, vec![deleted(1, unbound_c), modified(1, not_ready_b.at_version("21").terminating())]));
    assert_eq!(pod_actions(out.actions), vec![]);
    let out = c.handle(&input(3, vec![modified(1, ready_e.at_version("22").terminating())]));
    assert_eq!(pod_actions(out.actions), vec![]);

    // All three seen: the set acts again as soon as it is short.
    let out = c.handle(&input(4, vec![deleted(1, ready_d)]));
    assert_eq!(creates(&out.actions), 1);
}

#[test]
fn replicaset_counts_neither_terminating_nor_foreign_pods() {
    let set = web(2);
    let dying = member(&set, "web-a").terminating();
    let stranger = member(&web(2).with_uid("previous-rs-uid"), "web-b");
    let (_, actions) = start(&set, vec![dying, stranger]);
    assert_eq!(creates(&actions), 2);
}

#[test]
fn replicaset_writes_status_only_when_it_changed() {
    let set = web(1).with_status(json!({"replicas": 1, "readyReplicas": 1, "observedGeneration": 1}));
    let (mut c, actions) = start(&set, vec![member(&set, "web-a")]);
    assert_eq!(actions, vec![]);

    let mut not_ready = member(&set, "web-a").at_version("21");
    not_ready.status = json!({"phase": "Running"});
    let out = c.handle(&input(1, vec![modified(1, not_ready)]));
    let [Action::UpdateStatus { object, dry_run: false }] = &out.actions[..] else {
        panic!("expected a status write: {:?}", out.actions)
    };
    assert_eq!(object.status, json!({"replicas": 1, "readyReplicas": 0, "observedGeneration": 1}));
    assert_eq!(object.metadata.resource_version, "3");
}

#[test]
fn replicaset_does_nothing_before_both_lists_arrived() {
    let mut c = controller_with(&[]);
    let set = web(1);
    assert_eq!(c.handle(&input(0, vec![listed(0, "30", vec![set.clone()])])).actions, vec![]);
    let out = c.handle(&input(1, vec![listed(1, "30", vec![])]));
    assert_eq!(creates(&out.actions), 1);
}

#[test]
fn replicaset_expectations_raised_later_still_get_a_timer_of_their_own() {
    let mut c = controller_with(&[("expectationsTimeoutMs", json!(5_000))]);
    let set = web(1);
    c.handle(&input(0, vec![listed(0, "30", vec![set.clone()]), listed(1, "30", vec![])]));
    let a = member(&set, "web-a");
    c.handle(&input(10, vec![InputEvent::Result(succeeded(Verb::Create, &a)), added(1, a.clone())]));

    // At 3s the pod goes; the new create's expectations expire at 8s, after
    // the first timer (5s), which must not be the last word.
    let out = c.handle(&input(3_000, vec![deleted(1, a)]));
    assert_eq!(creates(&out.actions), 1);
    let out = c.handle(&input(5_000, vec![timer("ReplicaSet/default/web")]));
    assert_eq!(out.actions, vec![Action::RequeueAfter { key: "ReplicaSet/default/web".into(), after_ms: 3_000 }]);
    let out = c.handle(&input(8_000, vec![timer("ReplicaSet/default/web")]));
    assert_eq!(creates(&out.actions), 1);
}

/// Issue #129795's start: one create sent, succeeded (at revision 40,
/// after the informer's 30), and never shown by the lagging informer
/// before the expectations expire at 5s.
fn created_but_unseen(params: &[(&str, Value)]) -> (ReplicaSetController, Object) {
    let mut params = params.to_vec();
    params.push(("expectationsTimeoutMs", json!(5_000)));
    let mut c = controller_with(&params);
    let set = web(1);
    let out = c.handle(&input(0, vec![listed(0, "30", vec![set.clone()]), listed(1, "30", vec![])]));
    assert_eq!(creates(&out.actions), 1);
    let created = pod("default", "web-a", "uid-web-a", "40").owned_by(&set).with_label("app", "web");
    c.handle(&input(10, vec![InputEvent::Result(succeeded(Verb::Create, &created))]));
    (c, created)
}

#[test]
fn expired_expectations_count_as_satisfied_by_default_and_the_pod_is_created_again_issue_129795() {
    let (mut c, _) = created_but_unseen(&[]);
    assert_eq!(creates(&c.handle(&input(5_000, vec![timer("ReplicaSet/default/web")])).actions), 1);
}

#[test]
fn with_expired_expectations_wait_the_set_waits_for_its_informer_issue_129795() {
    let (mut c, created) = created_but_unseen(&[("expiredExpectations", json!("wait"))]);
    let out = c.handle(&input(5_000, vec![timer("ReplicaSet/default/web")]));
    assert_eq!(creates(&out.actions), 0);
    assert!(!out.actions.iter().any(|a| matches!(a, Action::RequeueAfter { .. })), "no busy timer: {out:?}");
    // The informer catches up: the pod is there, nothing more to do.
    assert_eq!(creates(&c.handle(&input(6_000, vec![added(1, created)])).actions), 0);
}

#[test]
fn kep_5647_skips_the_sync_until_the_informer_has_seen_the_controllers_own_last_write() {
    let (mut c, created) = created_but_unseen(&[("staleControllerConsistency", json!(true))]);
    // Expired, but the pod informer is at 30 and the controller wrote at 40.
    let out = c.handle(&input(5_000, vec![timer("ReplicaSet/default/web")]));
    assert_eq!(out.actions, vec![], "the whole sync is skipped");
    // Once it has seen revision 40, the set is synced, and is whole.
    assert_eq!(creates(&c.handle(&input(6_000, vec![added(1, created)])).actions), 0);
}

#[test]
fn with_expired_expectations_relist_the_set_reads_its_pods_from_etcd_first_issue_129795() {
    let (mut c, _) = created_but_unseen(&[("expiredExpectations", json!("relist"))]);
    let out = c.handle(&input(5_000, vec![timer("ReplicaSet/default/web")]));
    assert_eq!(creates(&out.actions), 0);
    let list = out.actions.iter().find(|a| matches!(a, Action::List { .. })).expect("a direct list");
    let Action::List { kind, namespace, resource_version, .. } = list else { unreachable!() };
    assert_eq!((kind.as_str(), namespace.as_str(), resource_version), ("Pod", "default", &None), "a quorum list");
}
