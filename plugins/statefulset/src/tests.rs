use recon_abi::{Action, ComponentConfig, Controller, InputEvent, Object, StatusReason, Verb};
use recon_sdk::testing::{ObjectExt, added, deleted, failed, input, listed, modified, object, succeeded, timer};
use serde_json::json;

use super::*;

fn controller() -> StatefulSetController {
    let mut c = StatefulSetController::new();
    c.init(&ComponentConfig { name: "statefulset".into(), ..Default::default() });
    c
}

fn web(replicas: u32, image: &str) -> Object {
    object("StatefulSet", "default", "web").with_uid("set-uid").at_version("3").at_generation(1).with_spec(json!({
        "replicas": replicas,
        "serviceName": "web",
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": image}]},
        },
    }))
}

fn revision_of(set: &Object) -> String {
    format!("web-{}", template_hash(&set.spec["template"]))
}

/// Pod `ordinal` of `set` as stored after the controller created it and a
/// kubelet ran it.
fn member(set: &Object, ordinal: u32) -> Object {
    let uid = format!("pod-uid-{ordinal}");
    new_pod(set, ordinal, &revision_of(set)).with_uid(&uid).at_version("20").on_node("node-1").running_ready()
}

fn delete(pod: &Object) -> Action {
    Action::Delete {
        key: pod.key(),
        uid: Some(pod.metadata.uid.clone()),
        resource_version: None,
        grace_period_seconds: None,
        propagation_policy: None,
        dry_run: false,
    }
}

fn created_names(actions: &[Action]) -> Vec<String> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Create { object, .. } => Some(object.metadata.name.clone()),
            _ => None,
        })
        .collect()
}

/// The actions that touch pods, without status writes.
fn pod_actions(actions: Vec<Action>) -> Vec<Action> {
    actions.into_iter().filter(|a| !matches!(a, Action::UpdateStatus { .. })).collect()
}

fn start(set: &Object, pods: Vec<Object>) -> (StatefulSetController, Vec<Action>) {
    let mut c = controller();
    let out = c.handle(&input(0, vec![listed(0, "30", vec![set.clone()]), listed(1, "30", pods)]));
    (c, out.actions)
}

#[test]
fn statefulset_manifest_watches_sets_and_pods_and_lists_its_writes() {
    let manifest = StatefulSetController::new().init(&ComponentConfig::default());
    assert_eq!(manifest.name, "statefulset");
    assert_eq!(manifest.abi_version, ABI_VERSION);
    let kinds: Vec<&str> = manifest.watches.iter().map(|w| w.kind.as_str()).collect();
    assert_eq!(kinds, vec!["StatefulSet", "Pod"]);
    assert_eq!(
        manifest.writes,
        vec![
            WritePermission { kind: "Pod".into(), verbs: vec![Verb::Create, Verb::Delete] },
            WritePermission { kind: "StatefulSet".into(), verbs: vec![Verb::UpdateStatus] },
        ]
    );
}

#[test]
fn statefulset_creates_ordinal_zero_with_its_stable_identity_and_reports_status() {
    let set = web(3, "web:1");
    let (_, actions) = start(&set, vec![]);
    let revision = revision_of(&set);
    assert!(revision.starts_with("web-") && revision.len() > 4);

    let Action::Create { object: pod, .. } = &actions[0] else { panic!("expected a create, got {actions:?}") };
    assert_eq!(pod.key(), ObjectKey::new("Pod", "default", "web-0"));
    assert_eq!(pod.metadata.labels.get("app").map(String::as_str), Some("web"));
    assert_eq!(pod.metadata.labels.get(POD_NAME_LABEL).map(String::as_str), Some("web-0"));
    assert_eq!(pod.metadata.labels.get(REVISION_LABEL), Some(&revision));
    let owner = &pod.metadata.owner_references[..];
    assert_eq!(owner.len(), 1);
    assert!(owner[0].controller && owner[0].uid == "set-uid" && owner[0].kind == "StatefulSet");
    assert_eq!(
        pod.spec,
        json!({"containers": [{"name": "web", "image": "web:1"}], "hostname": "web-0", "subdomain": "web"})
    );
    assert!(pod.metadata.uid.is_empty() && pod.metadata.resource_version.is_empty());

    let mut expected = set.clone();
    expected.status = json!({
        "observedGeneration": 1, "replicas": 0, "readyReplicas": 0, "currentReplicas": 0,
        "updatedReplicas": 0, "currentRevision": revision, "updateRevision": revision,
    })
    .into();
    assert_eq!(actions[1..], [Action::UpdateStatus { object: expected, dry_run: false }]);
}

#[test]
fn statefulset_waits_for_each_ordinal_to_be_running_and_ready_before_creating_the_next() {
    let set = web(3, "web:1");
    let mut starting = member(&set, 0);
    starting.status = json!({"phase": "Pending"}).into();
    let (mut c, actions) = start(&set, vec![starting]);
    assert_eq!(created_names(&actions), Vec::<String>::new());

    let out = c.handle(&input(1, vec![modified(1, member(&set, 0))]));
    assert_eq!(created_names(&out.actions), vec!["web-1"]);
}

#[test]
fn statefulset_does_not_create_a_pod_twice_while_the_create_is_in_flight() {
    let set = web(2, "web:1");
    let (mut c, actions) = start(&set, vec![]);
    assert_eq!(created_names(&actions), vec!["web-0"]);

    let stored = set.clone().at_version("4").with_status(json!({"replicas": 0}));
    assert_eq!(created_names(&c.handle(&input(1, vec![modified(0, stored)])).actions), Vec::<String>::new());
    let pod0 = member(&set, 0);
    let answer = InputEvent::Result(Box::new(succeeded(Verb::Create, &pod0)));
    assert_eq!(created_names(&c.handle(&input(2, vec![answer])).actions), Vec::<String>::new());

    // Seen in the cache, Running and Ready: the next ordinal.
    let out = c.handle(&input(3, vec![added(1, pod0)]));
    assert_eq!(created_names(&out.actions), vec!["web-1"]);
}

#[test]
fn statefulset_retries_a_failed_create_after_a_delay() {
    let set = web(1, "web:1");
    let (mut c, _) = start(&set, vec![]);
    let key = ObjectKey::new("Pod", "default", "web-0");
    let answer = InputEvent::Result(Box::new(failed(Verb::Create, &key, StatusReason::ServiceUnavailable)));
    let out = c.handle(&input(10, vec![answer]));
    assert_eq!(
        pod_actions(out.actions),
        vec![Action::RequeueAfter { key: "StatefulSet/default/web".into(), after_ms: recon_sdk::RETRY_AFTER_MS }]
    );
    let out = c.handle(&input(1_010, vec![timer("StatefulSet/default/web")]));
    assert_eq!(created_names(&out.actions), vec!["web-0"]);
}

#[test]
fn statefulset_waits_for_terminating_pod_before_recreating_it() {
    let set = web(2, "web:1");
    let dying = member(&set, 1).at_version("25").terminating();
    let (mut c, actions) = start(&set, vec![member(&set, 0), dying.clone()]);
    assert_eq!(pod_actions(actions), vec![]);

    // Its kubelet finished the deletion: now, and only now, web-1 comes back.
    let out = c.handle(&input(1, vec![deleted(1, dying)]));
    assert_eq!(created_names(&out.actions), vec!["web-1"]);
}

#[test]
fn statefulset_never_reuses_a_name_held_by_another_incarnation() {
    let set = web(1, "web:1");
    let previous_set = web(1, "web:1").with_uid("old-set-uid");
    let leftover = member(&previous_set, 0);
    let (mut c, actions) = start(&set, vec![leftover.clone()]);
    assert_eq!(pod_actions(actions), vec![]);
    let out = c.handle(&input(1, vec![deleted(1, leftover)]));
    assert_eq!(created_names(&out.actions), vec!["web-0"]);
}

#[test]
fn statefulset_scales_down_from_the_highest_ordinal_one_at_a_time() {
    let set = web(1, "web:1");
    let pods: Vec<Object> = (0..3).map(|i| member(&set, i)).collect();
    let (mut c, actions) = start(&set, pods.clone());
    assert_eq!(pod_actions(actions), vec![delete(&pods[2])]);

    assert_eq!(pod_actions(c.handle(&input(1, vec![])).actions), vec![]);
    let dying = pods[2].clone().at_version("31").terminating();
    let answer = InputEvent::Result(Box::new(succeeded(Verb::Delete, &dying)));
    assert_eq!(pod_actions(c.handle(&input(2, vec![modified(1, dying.clone()), answer])).actions), vec![]);
    let out = c.handle(&input(3, vec![deleted(1, dying)]));
    assert_eq!(pod_actions(out.actions), vec![delete(&pods[1])]);
}

#[test]
fn statefulset_rolling_update_deletes_highest_outdated_ordinal() {
    let old = web(3, "web:1");
    let pods: Vec<Object> = (0..3).map(|i| member(&old, i)).collect();
    let new = web(3, "web:2").at_version("40").at_generation(2);
    let (mut c, actions) = start(&new, pods.clone());
    assert_eq!(pod_actions(actions), vec![delete(&pods[2])]);

    let dying = pods[2].clone().at_version("41").terminating();
    let answer = InputEvent::Result(Box::new(succeeded(Verb::Delete, &dying)));
    assert_eq!(pod_actions(c.handle(&input(1, vec![answer, modified(1, dying.clone())])).actions), vec![]);
    let out = c.handle(&input(2, vec![deleted(1, dying)]));
    let [Action::Create { object: recreated, dry_run: false }] = &pod_actions(out.actions)[..] else {
        panic!("expected one create")
    };
    assert_eq!(recreated.metadata.name, "web-2");
    assert_eq!(recreated.metadata.labels.get(REVISION_LABEL), Some(&revision_of(&new)));
    assert_eq!(recreated.spec["containers"][0]["image"], "web:2");

    // Only once the new web-2 is seen Running and Ready does web-1 go.
    let web2 = member(&new, 2);
    let answer = InputEvent::Result(Box::new(succeeded(Verb::Create, &web2)));
    let out = c.handle(&input(3, vec![answer, added(1, web2)]));
    assert_eq!(pod_actions(out.actions), vec![delete(&pods[1])]);
}

#[test]
fn statefulset_rolling_update_stops_at_the_partition() {
    let old = web(3, "web:1");
    let mut new = web(3, "web:2");
    new.spec["updateStrategy"] = json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 2}});
    let (_, actions) = start(&new, vec![member(&old, 0), member(&old, 1), member(&new, 2)]);
    assert_eq!(pod_actions(actions), vec![]);
}

#[test]
fn statefulset_on_delete_strategy_leaves_outdated_pods_alone() {
    let old = web(1, "web:1");
    let mut new = web(1, "web:2");
    new.spec["updateStrategy"] = json!({"type": "OnDelete"});
    let (_, actions) = start(&new, vec![member(&old, 0)]);
    assert_eq!(pod_actions(actions), vec![]);
}

#[test]
fn statefulset_writes_status_only_when_it_changed() {
    let set = web(2, "web:1");
    let pods = vec![member(&set, 0), member(&set, 1)];
    let (mut c, actions) = start(&set, pods.clone());
    let [Action::UpdateStatus { object: written, dry_run: false }] = &actions[..] else {
        panic!("expected a status write: {actions:?}")
    };
    let revision = revision_of(&set);
    assert_eq!(
        written.status,
        json!({
            "observedGeneration": 1, "replicas": 2, "readyReplicas": 2, "currentReplicas": 2,
            "updatedReplicas": 2, "currentRevision": revision, "updateRevision": revision,
        })
    );
    assert_eq!(written.metadata.resource_version, "3", "status writes are compare-and-swap");

    let stored = written.clone().at_version("50");
    let out = c.handle(&input(
        1,
        vec![InputEvent::Result(Box::new(succeeded(Verb::UpdateStatus, &stored))), modified(0, stored)],
    ));
    assert_eq!(out.actions, vec![]);
}

#[test]
fn statefulset_counts_only_pods_owned_by_this_incarnation_of_the_set() {
    let set = web(2, "web:1");
    let stranger = member(&web(2, "web:1").with_uid("someone-else"), 1);
    let (_, actions) = start(&set, vec![member(&set, 0), stranger]);
    let status = actions.iter().find_map(|a| match a {
        Action::UpdateStatus { object, .. } => Some(object.status.clone()),
        _ => None,
    });
    assert_eq!(status.unwrap()["replicas"], 1);
    // web-1's name is taken by the stranger: nothing is created over it.
    assert_eq!(created_names(&actions), Vec::<String>::new());
}

#[test]
fn statefulset_does_nothing_before_both_lists_arrived() {
    let mut c = controller();
    let set = web(1, "web:1");
    assert_eq!(c.handle(&input(0, vec![listed(0, "30", vec![set.clone()])])).actions, vec![]);
    let out = c.handle(&input(1, vec![listed(1, "30", vec![])]));
    assert_eq!(created_names(&out.actions), vec!["web-0"]);
}

#[test]
fn pod_names_split_into_set_and_ordinal_only_when_canonical() {
    assert_eq!(split_ordinal("web-12"), Some(("web", 12)));
    assert_eq!(split_ordinal("my-db-0"), Some(("my-db", 0)));
    assert_eq!(split_ordinal("web-01"), None);
    assert_eq!(split_ordinal("web-"), None);
    assert_eq!(split_ordinal("web-x"), None);
}
