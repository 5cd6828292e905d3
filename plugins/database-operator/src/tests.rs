use recon_abi::{Action, ComponentConfig, Controller as _, Object, Patch};
use recon_sdk::testing::{ObjectExt, deleted, input, listed, modified, object};
use serde_json::json;

use super::*;

fn started() -> Controller {
    let mut controller = controller();
    controller.init(&ComponentConfig { name: "database-operator".into(), ..Default::default() });
    controller
}

fn database(finalized: bool) -> Object {
    let mut db = object("Database", "default", "orders").with_uid("uid-db").at_version("5").at_generation(1);
    db.api_version = "example.com/v1".into();
    db.spec = json!({ "version": "16", "replicas": 1 }).into();
    if finalized {
        db.metadata.finalizers.push(FINALIZER.into());
    }
    db
}

/// Every watch listed: the Databases given, nothing else.
fn listed_with(controller: &mut Controller, databases: Vec<Object>, schedules: Vec<Object>) -> Vec<Action> {
    let events =
        vec![listed(0, "9", databases), listed(1, "9", vec![]), listed(2, "9", vec![]), listed(3, "9", schedules)];
    controller.handle(&input(0, events)).actions
}

fn applied(actions: &[Action]) -> Vec<(ObjectKey, Value)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Patch { key, patch: Patch::Apply(body), params } => {
                assert_eq!(params.field_manager, MANAGER);
                assert!(params.force, "a controller forces its own fields");
                Some((key.clone(), body.clone()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_new_database_gets_the_finalizer_before_anything_is_created_for_it() {
    let mut controller = started();
    let actions = listed_with(&mut controller, vec![database(false)], vec![]);
    assert_eq!(actions.len(), 1, "{actions:?}");
    let Action::Update { object, .. } = &actions[0] else { panic!("{actions:?}") };
    assert_eq!(object.metadata.finalizers, [FINALIZER]);
    assert_eq!(object.metadata.resource_version, "5", "a compare-and-swap on the version it read");
}

#[test]
fn children_are_applied_with_an_owner_reference_and_the_backup_schedule_without_one() {
    let mut controller = started();
    let actions = listed_with(&mut controller, vec![database(true)], vec![]);
    let applied = applied(&actions);
    let keys: Vec<String> = applied.iter().map(|(k, _)| k.to_string()).collect();
    assert_eq!(keys.len(), 3, "{keys:?}");
    for (key, body) in &applied {
        let owners = body.pointer("/metadata/ownerReferences").and_then(Value::as_array).cloned().unwrap_or_default();
        if key.kind == "BackupSchedule" {
            assert_eq!(key.namespace, BACKUP_NAMESPACE);
            assert!(owners.is_empty(), "an owner reference cannot cross namespaces");
        } else {
            assert_eq!(key.namespace, "default");
            assert_eq!(owners[0]["uid"], "uid-db");
            assert_eq!(owners[0]["blockOwnerDeletion"], true);
        }
    }
    let set = applied.iter().find(|(k, _)| k.kind == "StatefulSet").unwrap();
    assert_eq!(set.1.pointer("/spec/template/spec/containers/0/image"), Some(&json!("postgres:16")));
    let status = actions.iter().find_map(|a| match a {
        Action::PatchStatus { patch: Patch::Merge(body), .. } => Some(body.clone()),
        _ => None,
    });
    assert_eq!(
        status,
        Some(json!({ "status": { "phase": "Provisioning", "readyReplicas": 0, "observedGeneration": 1 } }))
    );
}

#[test]
fn a_database_being_deleted_gets_no_children_and_its_backup_schedule_goes_first() {
    let mut controller = started();
    let db = database(true);
    let schedule = desired_objects(&db)[2].clone().with_uid("uid-schedule").at_version("7");
    let leaving = db.clone().terminating().at_version("10");
    let actions = listed_with(&mut controller, vec![leaving], vec![schedule.clone()]);
    assert!(applied(&actions).is_empty(), "{actions:?}");
    assert_eq!(actions.len(), 2, "{actions:?}");
    let Action::Delete { key, uid, .. } = &actions[0] else { panic!("{actions:?}") };
    assert_eq!((key, uid.as_deref()), (&schedule_key(&db.key()), Some("uid-schedule")));
    // The delete is reported as an Event about the Database.
    let Action::Create { object: event, .. } = &actions[1] else { panic!("{actions:?}") };
    assert_eq!(recon_abi::event::regarding(event), Some(db.key()));
    assert_eq!(recon_abi::event::reason(event), "BackupScheduleDeleted");
    assert_eq!(event.other["reportingInstance"], "database-operator");
    // The finalizer stays until the cache shows the schedule gone.
    let actions = controller.handle(&input(1_100, vec![deleted(3, schedule)])).actions;
    assert_eq!(actions.len(), 1, "{actions:?}");
    let Action::Update { object, .. } = &actions[0] else { panic!("{actions:?}") };
    assert!(object.metadata.finalizers.is_empty());
    assert_eq!(object.metadata.resource_version, "10");
}

#[test]
fn an_unchanged_view_sends_no_second_apply_of_a_child() {
    let mut controller = started();
    let first = listed_with(&mut controller, vec![database(true)], vec![]);
    assert_eq!(applied(&first).len(), 3);
    // A status change of the Database wakes it; the applies are still in flight.
    let later = database(true).at_version("11").with_status(json!({ "phase": "Provisioning" }));
    let actions = controller.handle(&input(500, vec![modified(0, later)])).actions;
    assert!(applied(&actions).is_empty(), "{actions:?}");
}
