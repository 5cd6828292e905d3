use recon_abi::{Action, ComponentConfig, Controller as _, Object};
use recon_sdk::testing::{ObjectExt, input, listed, modified, object};
use serde_json::json;

use super::*;

fn started(delete_precondition_uid: bool) -> Controller {
    let mut controller = controller();
    let params = [("deletePreconditionUid".to_owned(), json!(delete_precondition_uid))].into();
    controller.init(&ComponentConfig { name: "rabbitmq-cluster-operator".into(), params, ..Default::default() });
    controller
}

fn cluster(uid: &str) -> Object {
    let mut c = object("RabbitmqCluster", "default", "rabbit").with_uid(uid).at_version("5");
    c.api_version = "rabbitmq.com/v1beta1".into();
    c.spec = json!({ "replicas": 1 }).into();
    c.metadata.finalizers.push(FINALIZER.into());
    c
}

fn deleting(mut c: Object) -> Object {
    c.metadata.deletion_timestamp = Some("1970-01-01T00:00:04Z".into());
    c
}

fn statefulset_of(owner: &Object, uid: &str) -> Object {
    let mut set = desired_statefulset(owner);
    set.metadata.uid = uid.into();
    set.metadata.resource_version = "7".into();
    set
}

fn listed_with(controller: &mut Controller, clusters: Vec<Object>, sets: Vec<Object>) -> Vec<Action> {
    controller.handle(&input(0, vec![listed(0, "9", clusters), listed(1, "9", sets)])).actions
}

/// The first delete among `actions`: its key and uid precondition.
fn first_delete(actions: &[Action]) -> Option<(ObjectKey, Option<String>)> {
    actions.iter().find_map(|a| match a {
        Action::Delete { key, uid, .. } => Some((key.clone(), uid.clone())),
        _ => None,
    })
}

#[test]
fn a_live_cluster_gets_its_statefulset_owned_by_it() {
    let mut controller = started(false);
    let actions = listed_with(&mut controller, vec![cluster("uid-a")], vec![]);
    let [Action::Create { object, .. }] = actions.as_slice() else { panic!("{actions:?}") };
    assert_eq!(object.key(), ObjectKey::new("StatefulSet", "default", "rabbit-server"));
    assert_eq!(object.metadata.owner_references[0].uid, "uid-a");
    assert!(object.metadata.owner_references[0].controller);
}

/// The bug: the delete names the StatefulSet only, so it takes whatever
/// incarnation holds the name.
#[test]
fn a_deleting_cluster_has_its_statefulset_deleted_by_name_then_its_finalizer_removed() {
    let mut controller = started(false);
    let old = cluster("uid-a");
    let actions = listed_with(&mut controller, vec![deleting(old.clone())], vec![statefulset_of(&old, "uid-sts-a")]);
    assert_eq!(first_delete(&actions), Some((ObjectKey::new("StatefulSet", "default", "rabbit-server"), None)));
    let update = actions.iter().find_map(|a| match a {
        Action::Update { object, .. } => Some(object.clone()),
        _ => None,
    });
    assert_eq!(update.map(|o| o.metadata.finalizers), Some(vec![]), "{actions:?}");
}

/// Upstream's fix (rabbitmq/cluster-operator#651): the uid of the
/// StatefulSet this cluster controls goes with the delete as a precondition.
#[test]
fn with_the_fix_the_delete_carries_the_uid_of_the_statefulset_the_cluster_controls() {
    let mut controller = started(true);
    let old = cluster("uid-a");
    let actions = listed_with(&mut controller, vec![deleting(old.clone())], vec![statefulset_of(&old, "uid-sts-a")]);
    assert_eq!(first_delete(&actions).map(|(_, uid)| uid), Some(Some("uid-sts-a".to_owned())));
}

#[test]
fn with_the_fix_a_statefulset_controlled_by_another_cluster_is_not_deleted() {
    let mut controller = started(true);
    let newer = cluster("uid-b");
    let actions =
        listed_with(&mut controller, vec![deleting(cluster("uid-a"))], vec![statefulset_of(&newer, "uid-sts-b")]);
    assert!(!actions.iter().any(|a| matches!(a, Action::Delete { .. })), "{actions:?}");
    assert!(actions.iter().any(|a| matches!(a, Action::Update { .. })), "the finalizer still goes: {actions:?}");
}

fn started_with(param: &str) -> Controller {
    let mut controller = controller();
    let params = [(param.to_owned(), json!(true))].into();
    controller.init(&ComponentConfig { name: "rabbitmq-cluster-operator".into(), params, ..Default::default() });
    controller
}

fn asking_for(replicas: u64, version: &str) -> Object {
    let mut c = cluster("uid-a").at_version(version);
    c.spec = json!({ "replicas": replicas }).into();
    c
}

/// The replicas of the StatefulSet update among `actions`, if any.
fn scaled_to(actions: &[Action]) -> Option<u64> {
    actions.iter().find_map(|a| match a {
        Action::Update { object, .. } if object.kind == "StatefulSet" => object.spec["replicas"].as_u64(),
        _ => None,
    })
}

#[test]
fn a_cluster_asking_for_fewer_replicas_than_its_statefulset_is_not_scaled_down() {
    let mut controller = started(false);
    let three = asking_for(3, "5");
    let set = statefulset_of(&three, "set-a");
    assert!(listed_with(&mut controller, vec![three], vec![set]).is_empty());
    let actions = controller.handle(&input(1, vec![modified(0, asking_for(2, "6"))])).actions;
    assert_eq!(scaled_to(&actions), None, "{actions:?}");
}

/// Issue 758: 3 and 2 arrive in one call; the rule compares 2 with the
/// StatefulSet's 1 and scales up to 2.
#[test]
fn two_scale_requests_in_one_call_scale_to_the_last_past_the_no_scale_down_rule_issue_758() {
    let mut controller = started(false);
    let one = asking_for(1, "5");
    let set = statefulset_of(&one, "set-a");
    assert!(listed_with(&mut controller, vec![one], vec![set]).is_empty());
    let both = vec![modified(0, asking_for(3, "6")), modified(0, asking_for(2, "7"))];
    assert_eq!(scaled_to(&controller.handle(&input(1, both)).actions), Some(2));
}

/// The fix: the event handler saw 3 go by, and the StatefulSet gets 3.
#[test]
fn with_highest_requested_the_statefulset_gets_the_most_replicas_ever_delivered() {
    let mut controller = started_with("highestRequested");
    let one = asking_for(1, "5");
    let set = statefulset_of(&one, "set-a");
    assert!(listed_with(&mut controller, vec![one], vec![set]).is_empty());
    let both = vec![modified(0, asking_for(3, "6")), modified(0, asking_for(2, "7"))];
    assert_eq!(scaled_to(&controller.handle(&input(1, both)).actions), Some(3));
}
