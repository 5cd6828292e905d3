use recon_abi::{Action, ComponentConfig, Controller as _, Object};
use recon_sdk::testing::{ObjectExt, input, listed, object};
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
    c.spec = json!({ "replicas": 1 });
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
