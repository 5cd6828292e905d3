//! The controller driven through the plugin ABI as the host drives it:
//! lists, watch events, answers to its requests (by request id) and timers.

use recon_abi::{
    Action as Wire, ActionResult, ComponentConfig, Controller as _, InputEvent, Mitigation, Object, ObjectKey, Outcome,
    Output, StatusReason, Verb,
};
use recon_sdk::testing::{ObjectExt, added, deleted, failed, input, listed, modified, object, pod, succeeded};
use serde_json::{Value, json};

use super::*;

fn controller_with(params: &[(&str, Value)]) -> kube::Plugin {
    controller_mitigated(params, &[])
}

fn controller_mitigated(params: &[(&str, Value)], mitigations: &[Mitigation]) -> kube::Plugin {
    let mut c = controller();
    let params = params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    let config = ComponentConfig {
        name: "replicaset-controller".into(),
        params,
        mitigations: mitigations.to_vec(),
        ..Default::default()
    };
    let manifest = c.init(&config);
    let kinds: Vec<&str> = manifest.watches.iter().map(|w| w.kind.as_str()).collect();
    assert_eq!(kinds, ["ReplicaSet", "Pod"]);
    c
}

fn web(replicas: u32) -> Object {
    object("ReplicaSet", "default", "web").with_uid("rs-uid").at_version("3").at_generation(1).with_spec(json!({
        "replicas": replicas,
        "selector": {"matchLabels": {"app": "web"}},
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

/// The requests of an output that touch pods, with their request ids.
fn pod_writes(out: &Output) -> Vec<(u64, &Wire)> {
    let writes = out.actions.iter().enumerate().filter(|(_, a)| matches!(a, Wire::Create { .. } | Wire::Delete { .. }));
    writes.map(|(i, a)| (out.request_id(i).expect("a request has an id"), a)).collect()
}

fn creates(out: &Output) -> usize {
    out.actions.iter().filter(|a| matches!(a, Wire::Create { .. })).count()
}

/// The deleted pods' names, in the order the deletes went out.
fn deletes(out: &Output) -> Vec<&str> {
    let names = out.actions.iter().filter_map(|a| match a {
        Wire::Delete { key, .. } => Some(key.name.as_str()),
        _ => None,
    });
    names.collect()
}

/// The requeue timers an output asks for, in milliseconds from now.
fn timers(out: &Output) -> Vec<u64> {
    let timers = out.actions.iter().filter_map(|a| match a {
        Wire::RequeueAfter { after_ms, .. } => Some(*after_ms),
        _ => None,
    });
    timers.collect()
}

/// Successful answers to the status writes of an output: a sync awaits
/// its status write as well as its pod writes before it ends and asks for
/// its next timer.
fn status_answers(out: &Output) -> Vec<InputEvent> {
    let writes = out.actions.iter().enumerate().filter_map(|(i, a)| match a {
        Wire::UpdateStatus { object, .. } => Some(answer(out.request_id(i)?, succeeded(Verb::UpdateStatus, object))),
        _ => None,
    });
    writes.collect()
}

/// The answer `result` to the request `id`.
fn answer(id: u64, mut result: ActionResult) -> InputEvent {
    result.id = Some(id);
    InputEvent::Result(Box::new(result))
}

/// The timer a requeue asked for, firing at `time_ms`.
fn fire(time_ms: u64) -> InputEvent {
    InputEvent::Timer { key: format!("kube-timer/{time_ms}") }
}

fn start(set: &Object, pods: Vec<Object>) -> (kube::Plugin, Output) {
    let mut c = controller_with(&[]);
    let out = c.handle(&input(0, vec![listed(0, "30", vec![set.clone()]), listed(1, "30", pods)]));
    (c, out)
}

#[test]
fn the_controller_lists_sets_and_pods_from_the_api_servers_cache_as_informers_do() {
    let manifest = controller().init(&ComponentConfig::default());
    assert_eq!(manifest.name, "replicaset");
    assert_eq!(manifest.list_mode, recon_abi::ListMode::Any, "resourceVersion=\"0\", however stale");
    assert!(manifest.allows(Verb::Create, "Pod") && manifest.allows(Verb::Delete, "Pod"));
    assert!(manifest.allows(Verb::UpdateStatus, "ReplicaSet"));
}

#[test]
fn missing_pods_are_created_from_the_template_with_generate_name_and_the_status_written() {
    let set = web(2);
    let (_, out) = start(&set, vec![]);
    let [
        Wire::Create { object: first, .. },
        Wire::Create { object: second, .. },
        Wire::UpdateStatus { object: status, .. },
    ] = &out.actions[..]
    else {
        panic!("two creates and a status write: {:?}", out.actions)
    };
    assert_eq!(first, second);
    assert_eq!((first.metadata.generate_name.as_str(), first.metadata.namespace.as_str()), ("web-", "default"));
    assert_eq!(first.metadata.labels.get("app").map(String::as_str), Some("web"));
    let owner = first.controller_owner().expect("a controller owner reference");
    assert_eq!((owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()), ("ReplicaSet", "web", "rs-uid"));
    assert_eq!(first.spec["containers"], json!([{"name": "web", "image": "web:1"}]));
    assert_eq!(status.status, json!({"replicas": 0, "readyReplicas": 0, "observedGeneration": 1}));
    assert_eq!(status.metadata.resource_version, "3", "the store's version: a precondition");
}

#[test]
fn no_pod_is_created_twice_while_the_creates_are_unanswered_or_unseen() {
    let set = web(2);
    let (mut c, out) = start(&set, vec![]);
    let ids: Vec<u64> = pod_writes(&out).iter().map(|(id, _)| *id).collect();
    let (a, b) = (member(&set, "web-a"), member(&set, "web-b"));
    // Its own status write is seen: still nothing.
    let stored =
        set.clone().at_version("4").with_status(json!({"replicas": 0, "readyReplicas": 0, "observedGeneration": 1}));
    assert_eq!(creates(&c.handle(&input(1, vec![modified(0, stored)]))), 0);
    let mut answers = vec![answer(ids[0], succeeded(Verb::Create, &a)), answer(ids[1], succeeded(Verb::Create, &b))];
    answers.extend(status_answers(&out));
    let out = c.handle(&input(2, answers));
    assert_eq!(creates(&out), 0);
    assert_eq!(timers(&out), [DEFAULT_EXPECTATIONS_TIMEOUT_MS - 2], "back when the expectations expire");
    let out = c.handle(&input(3, vec![added(1, a.clone())]));
    assert_eq!(creates(&out), 0);
    let out = c.handle(&input(4, [status_answers(&out), vec![added(1, b)]].concat()));
    assert_eq!(creates(&out), 0);

    // Expectations met; losing a pod brings exactly one create.
    assert_eq!(creates(&c.handle(&input(5, [status_answers(&out), vec![deleted(1, a)]].concat()))), 1);
}

#[test]
fn a_create_that_fails_transiently_lowers_the_expectations_and_is_retried_after_a_second() {
    let set = web(2);
    let (mut c, out) = start(&set, vec![]);
    let ids: Vec<u64> = pod_writes(&out).iter().map(|(id, _)| *id).collect();
    let a = member(&set, "web-a");
    let unavailable = failed(Verb::Create, &ObjectKey::new("Pod", "default", ""), StatusReason::ServiceUnavailable);
    let mut answers = vec![answer(ids[0], succeeded(Verb::Create, &a)), answer(ids[1], unavailable)];
    answers.extend(status_answers(&out));
    let out = c.handle(&input(10, answers));
    assert_eq!(timers(&out), [RETRY_AFTER.as_millis() as u64]);
    let out = c.handle(&input(20, vec![added(1, a)]));
    assert_eq!(creates(&out), 0, "no retry before the back-off");
    let out30 = c.handle(&input(30, status_answers(&out)));
    assert_eq!(creates(&out30), 0);
    // The pod's event re-queued the set at once (a trigger supersedes a
    // later requeue, as kube-runtime's scheduler keeps the earlier time);
    // that sync, still one create short after the failure, asked again
    // for a retry a second after it began.
    assert_eq!(timers(&out30), [990]);
    assert_eq!(creates(&c.handle(&input(1_020, vec![fire(1_020)]))), 1);
}

#[test]
fn expectations_that_expire_unseen_count_as_satisfied_by_default() {
    let mut c = controller_with(&[("expectationsTimeoutMs", json!(5_000))]);
    let set = web(1);
    let out = c.handle(&input(0, vec![listed(0, "30", vec![set.clone()]), listed(1, "30", vec![])]));
    let id = pod_writes(&out)[0].0;
    // The create succeeded but the watch never shows the pod.
    let mut answers = vec![answer(id, succeeded(Verb::Create, &member(&set, "web-a")))];
    answers.extend(status_answers(&out));
    let out = c.handle(&input(10, answers));
    assert_eq!(timers(&out), [4_990]);
    assert_eq!(creates(&c.handle(&input(5_000, vec![fire(5_000)]))), 1);
}

#[test]
fn extras_go_unbound_first_then_not_ready_then_highest_name_and_nothing_more_until_seen() {
    let set = web(2);
    let ready_a = member(&set, "web-a");
    let mut not_ready_b = member(&set, "web-b");
    not_ready_b.status = json!({"phase": "Running"}).into();
    let mut unbound_c = member(&set, "web-c");
    unbound_c.spec = json!({"containers": [{"name": "web"}]}).into();
    unbound_c.status = Default::default();
    let ready_d = member(&set, "web-d");
    let ready_e = member(&set, "web-e");
    let pods = vec![ready_a, not_ready_b.clone(), unbound_c.clone(), ready_d.clone(), ready_e.clone()];
    let (mut c, out) = start(&set, pods);
    assert_eq!(deletes(&out), ["web-c", "web-b", "web-e"]);
    let Wire::Delete { uid, .. } = pod_writes(&out)[0].1 else { unreachable!() };
    assert_eq!(uid.as_deref(), Some("uid-web-c"), "a uid precondition: this incarnation only");
    let ids: Vec<u64> = pod_writes(&out).iter().map(|(id, _)| *id).collect();

    // Until all three are seen terminating or gone, nothing more is deleted.
    let mut answers = vec![
        answer(ids[0], succeeded(Verb::Delete, &unbound_c)),
        answer(ids[1], succeeded(Verb::Delete, &not_ready_b.clone().terminating())),
        answer(ids[2], succeeded(Verb::Delete, &ready_e.clone().terminating())),
    ];
    answers.extend(status_answers(&out));
    let out = c.handle(&input(1, answers));
    assert!(pod_writes(&out).is_empty());
    let seen = vec![deleted(1, unbound_c), modified(1, not_ready_b.at_version("21").terminating())];
    let out = c.handle(&input(2, [status_answers(&out), seen].concat()));
    assert!(pod_writes(&out).is_empty());
    let seen = vec![modified(1, ready_e.at_version("22").terminating())];
    let out = c.handle(&input(3, [status_answers(&out), seen].concat()));
    assert!(pod_writes(&out).is_empty());

    // All three seen: the set acts again as soon as it is short.
    assert_eq!(creates(&c.handle(&input(4, [status_answers(&out), vec![deleted(1, ready_d)]].concat()))), 1);
}

#[test]
fn with_scale_down_tie_break_uid_the_highest_uid_goes_first() {
    let mut c = controller_with(&[("scaleDownTieBreak", json!("uid"))]);
    let set = web(1);
    let a = member(&set, "web-a").with_uid("uid-2");
    let b = member(&set, "web-b").with_uid("uid-1");
    let out = c.handle(&input(0, vec![listed(0, "30", vec![set]), listed(1, "30", vec![a, b])]));
    assert_eq!(deletes(&out), ["web-a"]);
}

#[test]
fn neither_terminating_nor_foreign_pods_count() {
    let set = web(2);
    let dying = member(&set, "web-a").terminating();
    let stranger = member(&web(2).with_uid("previous-rs-uid"), "web-b");
    let (_, out) = start(&set, vec![dying, stranger]);
    assert_eq!(creates(&out), 2);
}

#[test]
fn the_status_is_written_only_when_it_changed() {
    let set = web(1).with_status(json!({"replicas": 1, "readyReplicas": 1, "observedGeneration": 1}));
    let (mut c, out) = start(&set, vec![member(&set, "web-a")]);
    assert_eq!(out.actions, []);

    let mut not_ready = member(&set, "web-a").at_version("21");
    not_ready.status = json!({"phase": "Running"}).into();
    let out = c.handle(&input(1, vec![modified(1, not_ready)]));
    let [Wire::UpdateStatus { object, dry_run: false }] = &out.actions[..] else {
        panic!("a status write: {:?}", out.actions)
    };
    assert_eq!(object.status, json!({"replicas": 1, "readyReplicas": 0, "observedGeneration": 1}));
}

#[test]
fn nothing_is_done_before_the_pods_are_listed() {
    let mut c = controller_with(&[]);
    let set = web(1);
    assert_eq!(c.handle(&input(0, vec![listed(0, "30", vec![set])])).actions, []);
    assert_eq!(creates(&c.handle(&input(1, vec![listed(1, "30", vec![])]))), 1);
}

#[test]
fn a_parameter_of_the_wrong_type_is_refused_with_its_name() {
    let mut c = kube::Native::new(controller());
    let params = [("expiredExpectations".to_string(), json!("sometimes"))].into();
    let config = ComponentConfig { name: "replicaset-controller".into(), params, ..Default::default() };
    let crash = recon_abi::Instance::init(&mut c, &config).expect_err("main returns the error");
    assert!(crash.reason.contains("expiredExpectations"), "{}", crash.reason);
}

/// Issue #129795's start: one create sent, succeeded (at revision 40,
/// after the informer's 30), and never shown by the lagging informer
/// before the expectations expire at 5s.
fn created_but_unseen(params: &[(&str, Value)]) -> (kube::Plugin, Object) {
    let mut params = params.to_vec();
    params.push(("expectationsTimeoutMs", json!(5_000)));
    let mut c = controller_with(&params);
    let set = web(1);
    let out = c.handle(&input(0, vec![listed(0, "30", vec![set.clone()]), listed(1, "30", vec![])]));
    let id = pod_writes(&out)[0].0;
    let created = pod("default", "web-a", "uid-web-a", "40").owned_by(&set).with_label("app", "web");
    let mut answers = vec![answer(id, succeeded(Verb::Create, &created))];
    answers.extend(status_answers(&out));
    c.handle(&input(10, answers));
    (c, created)
}

#[test]
fn expired_expectations_count_as_satisfied_by_default_and_the_pod_is_created_again_issue_129795() {
    let (mut c, _) = created_but_unseen(&[]);
    assert_eq!(creates(&c.handle(&input(5_000, vec![fire(5_000)]))), 1);
}

#[test]
fn with_expired_expectations_wait_the_set_waits_for_its_informer_issue_129795() {
    let (mut c, created) = created_but_unseen(&[("expiredExpectations", json!("wait"))]);
    let out = c.handle(&input(5_000, vec![fire(5_000)]));
    assert_eq!(creates(&out), 0);
    assert!(timers(&out).is_empty(), "no busy timer: {out:?}");
    // The informer catches up: the pod is there, nothing more to do.
    assert_eq!(creates(&c.handle(&input(6_000, vec![added(1, created)]))), 0);
}

#[test]
fn kep_5647_skips_the_sync_until_the_informer_has_seen_the_controllers_own_write() {
    // KEP-5647 (https://github.com/kubernetes/enhancements/issues/5647): a
    // controller remembers the resourceVersion of what it wrote while
    // syncing an object and skips that object's sync while its informer is
    // older; here the runtime's `staleControllerConsistency`, not the
    // controller's code.
    let mut c = controller_mitigated(&[], &[Mitigation::StaleControllerConsistency]);
    let set = web(1);
    let out = c.handle(&input(0, vec![listed(0, "30", vec![set.clone()]), listed(1, "30", vec![])]));
    let create = pod_writes(&out)[0].0;
    let status =
        out.actions.iter().position(|a| matches!(a, Wire::UpdateStatus { .. })).and_then(|i| out.request_id(i));
    let created = pod("default", "web-a", "uid-web-a", "40").owned_by(&set).with_label("app", "web");
    let mut answers = vec![answer(create, succeeded(Verb::Create, &created))];
    answers.extend(status.map(|id| answer(id, succeeded(Verb::UpdateStatus, &set.clone().at_version("41")))));
    c.handle(&input(10, answers));
    // The set changes (a sync is due) while the pod informer is at 30 and
    // the controller wrote a pod at 40.
    let out = c.handle(&input(5_000, vec![modified(0, set.at_version("42"))]));
    assert_eq!(creates(&out), 0, "the whole sync is skipped: {out:?}");
    let [held] = &out.held[..] else { panic!("one wait begins: {out:?}") };
    assert_eq!(held.object, ObjectKey::new("ReplicaSet", "default", "web"));
    assert_eq!((held.kind.as_str(), held.resource_version, held.seen, held.released), ("Pod", 40, 30, false));
    // Once it has seen revision 40, the set is synced, and is whole.
    let out = c.handle(&input(6_000, vec![added(1, created)]));
    assert_eq!(creates(&out), 0);
    let [released] = &out.held[..] else { panic!("the wait ends: {out:?}") };
    assert!(released.released);
    assert_eq!((released.since_ms, released.seen, released.skips), (5_000, 40, 1));
}

#[test]
fn without_a_mitigation_nothing_is_held() {
    let (mut c, _) = created_but_unseen(&[]);
    assert!(c.handle(&input(5_000, vec![modified(0, web(1).at_version("42"))])).held.is_empty());
}

#[test]
fn with_expired_expectations_relist_the_set_acts_on_a_quorum_list_issue_129795() {
    let (mut c, created) = created_but_unseen(&[("expiredExpectations", json!("relist"))]);
    let out = c.handle(&input(5_000, vec![fire(5_000)]));
    assert_eq!(creates(&out), 0);
    let [Wire::List { kind, namespace, resource_version, .. }] = &out.actions[..] else {
        panic!("a direct list: {out:?}")
    };
    assert_eq!((kind.as_str(), namespace.as_str(), resource_version), ("Pod", "default", &None), "a quorum list");
    // etcd has the pod: nothing is created, and the set now waits for its
    // informer to show that pod rather than counting it as a new create.
    let list =
        recon_abi::ObjectList { resource_version: "41".into(), items: vec![created.clone()], ..Default::default() };
    let result = ActionResult {
        verb: Verb::List,
        key: ObjectKey::new("Pod", "default", ""),
        outcome: Outcome::Listed(list),
        id: out.request_id(0),
    };
    let out = c.handle(&input(5_010, vec![InputEvent::Result(Box::new(result))]));
    assert_eq!(creates(&out), 0);
    assert_eq!(creates(&c.handle(&input(6_000, vec![added(1, created)]))), 0);
}
