use recon_abi::{Action, ComponentConfig, Controller as _, InputEvent, Object, Patch, StatusReason, Verb};
use recon_sdk::testing::{ObjectExt, failed, input, listed, modified, object};
use serde_json::{Value, json};

use super::*;

fn started(params: Value) -> Controller {
    let mut controller = controller();
    let params = params.as_object().cloned().unwrap_or_default().into_iter().collect();
    controller.init(&ComponentConfig { name: "writer".into(), params, ..Default::default() });
    controller
}

fn widget(version: &str, conditions: Value) -> Object {
    let mut w = object(KIND, "default", "w1").with_uid("uid-1").at_version(version);
    w.api_version = "example.com/v1".into();
    w.status = json!({ "conditions": conditions }).into();
    w
}

fn written(actions: &[Action]) -> Vec<Value> {
    actions
        .iter()
        .map(|a| match a {
            Action::UpdateStatus { object, .. } => object.status["conditions"].clone(),
            Action::PatchStatus { patch: Patch::Merge(body), .. } => body["status"]["conditions"].clone(),
            other => panic!("only status writes: {other:?}"),
        })
        .collect()
}

#[test]
fn an_undecided_widget_gets_the_condition_its_parameters_say_by_a_compare_and_swap_status_update() {
    let mut c = started(json!({ "conditionType": "Ready", "status": "False", "reason": "AwaitingApproval" }));
    let out = c.handle(&input(0, vec![listed(0, "5", vec![widget("5", json!([]))])]));
    assert_eq!(
        written(&out.actions),
        vec![json!([{ "type": "Ready", "status": "False", "reason": "AwaitingApproval" }])]
    );
    let Action::UpdateStatus { object, .. } = &out.actions[0] else { unreachable!() };
    assert_eq!(object.metadata.resource_version, "5", "the write is conditional on the version it read");
}

#[test]
fn a_condition_already_decided_by_anyone_is_left_alone() {
    let mut c = started(json!({ "conditionType": "Ready", "status": "True" }));
    let decided = widget("5", json!([{ "type": "Ready", "status": "False", "reason": "AwaitingApproval" }]));
    let out = c.handle(&input(0, vec![listed(0, "5", vec![decided])]));
    assert_eq!(out.actions, vec![]);
}

#[test]
fn after_a_conflict_it_decides_again_on_the_newer_widget_and_then_leaves_it() {
    let mut c = started(json!({ "conditionType": "Ready", "status": "True" }));
    let first = widget("5", json!([]));
    c.handle(&input(0, vec![listed(0, "5", vec![first.clone()])]));
    // The other writer's condition lands first: ours is refused.
    let theirs = widget("6", json!([{ "type": "Ready", "status": "False" }]));
    let out = c.handle(&input(1, vec![modified(0, theirs)]));
    assert_eq!(out.actions, vec![], "the first write has no answer yet");
    let out = c.handle(&input(
        2,
        vec![InputEvent::Result(Box::new(failed(Verb::UpdateStatus, &first.key(), StatusReason::Conflict)))],
    ));
    assert_eq!(out.actions, vec![], "the newer widget is decided: nothing to write");
}

#[test]
fn its_own_condition_type_joins_the_others_sorted_by_type() {
    let mut c = started(json!({ "conditionType": "Approved", "status": "False" }));
    let ready = widget("5", json!([{ "type": "Ready", "status": "True" }]));
    let out = c.handle(&input(0, vec![listed(0, "5", vec![ready])]));
    let types: Vec<Value> = written(&out.actions)[0].as_array().unwrap().iter().map(|c| c["type"].clone()).collect();
    assert_eq!(types, vec![json!("Approved"), json!("Ready")]);
}

// A custom resource allows no update without a resourceVersion (422), so
// a blind write is a merge patch that names none: the API server applies
// it to whatever the Widget is when it arrives.
#[test]
fn without_a_precondition_it_patches_the_conditions_naming_no_resource_version() {
    let mut c = started(json!({ "conditionType": "Ready", "precondition": false }));
    let out = c.handle(&input(0, vec![listed(0, "5", vec![widget("5", json!([]))])]));
    let [Action::PatchStatus { key, patch: Patch::Merge(body), .. }] = &out.actions[..] else {
        panic!("{:?}", out.actions)
    };
    assert_eq!(key, &widget("5", json!([])).key());
    assert_eq!(
        body,
        &json!({ "status": { "conditions": [{ "type": "Ready", "status": "True", "reason": "Decided" }] } })
    );
    assert_eq!(written(&out.actions), vec![json!([{ "type": "Ready", "status": "True", "reason": "Decided" }])]);
}
