use recon_abi::{Action, ComponentConfig, Controller as _, InputEvent, Object, StatusReason, Verb};
use recon_sdk::testing::{ObjectExt, failed, input, listed, modified, pod};

use super::*;

fn started() -> Controller {
    let mut controller = controller();
    controller.init(&ComponentConfig { name: "template".into(), ..Default::default() });
    controller
}

fn labelled(p: &Object, node: &str) -> Action {
    Action::Update { object: p.clone().with_label(NODE_LABEL, node), dry_run: false }
}

#[test]
fn a_bound_pod_is_labelled_with_its_node_by_a_compare_and_swap_update() {
    let mut controller = started();
    let bound = pod("default", "web-0", "uid-1", "5").on_node("node-1");
    let unbound = pod("default", "web-1", "uid-2", "6");
    let out = controller.handle(&input(0, vec![listed(0, "6", vec![bound.clone(), unbound])]));
    assert_eq!(out.actions, vec![labelled(&bound, "node-1")]);
    let Action::Update { object, .. } = &out.actions[0] else { unreachable!() };
    assert_eq!(object.metadata.resource_version, "5");
}

#[test]
fn a_labelled_or_terminating_pod_is_left_alone() {
    let mut controller = started();
    let done = pod("default", "web-0", "uid-1", "5").on_node("node-1").with_label(NODE_LABEL, "node-1");
    let leaving = pod("default", "web-1", "uid-2", "6").on_node("node-1").terminating();
    let out = controller.handle(&input(0, vec![listed(0, "6", vec![done, leaving])]));
    assert_eq!(out.actions, vec![]);
}

#[test]
fn the_label_is_not_written_twice_while_the_first_write_is_in_flight() {
    let mut controller = started();
    let bound = pod("default", "web-0", "uid-1", "5").on_node("node-1");
    controller.handle(&input(0, vec![listed(0, "5", vec![bound.clone()])]));
    // The kubelet's status write lands first: our update will conflict.
    let running = bound.clone().running_ready().at_version("7");
    let out = controller.handle(&input(1, vec![modified(0, running.clone())]));
    assert_eq!(out.actions, vec![], "the first write has no result yet");
    let conflict = failed(Verb::Update, &bound.key(), StatusReason::Conflict);
    let out = controller.handle(&input(2, vec![InputEvent::Result(Box::new(conflict))]));
    assert_eq!(out.actions, vec![labelled(&running, "node-1")], "retried on the newer pod");
}

#[test]
fn a_pod_that_moves_to_another_node_is_relabelled() {
    let mut controller = started();
    let on_1 = pod("default", "web-0", "uid-1", "5").on_node("node-1").with_label(NODE_LABEL, "node-1");
    controller.handle(&input(0, vec![listed(0, "5", vec![on_1.clone()])]));
    let on_2 = on_1.clone().on_node("node-2").at_version("8");
    let out = controller.handle(&input(1, vec![modified(0, on_2.clone())]));
    assert_eq!(out.actions, vec![labelled(&on_2, "node-2")]);
}
