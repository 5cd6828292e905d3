use recon_abi::{ComponentConfig, Controller, ListMode};
use recon_sdk::testing::{ObjectExt, container_of, listed, node_input, pod};

use super::*;

fn config() -> ComponentConfig {
    ComponentConfig { name: "kubelet-node-1".into(), node: Some("node-1".into()), ..Default::default() }
}

#[test]
fn the_fixed_kubelet_asks_for_a_quorum_read_on_its_first_list_issue_59848() {
    let manifest = KubeletFixed::new().init(&config());
    assert_eq!(manifest.list_mode, ListMode::Quorum);
    assert_eq!(manifest.name, "kubelet-fixed");
}

#[test]
fn the_built_in_kubelet_keeps_the_naive_list_from_any_cache() {
    assert_eq!(Kubelet::new().init(&config()).list_mode, ListMode::Any);
}

#[test]
fn apart_from_name_and_list_mode_the_manifest_is_the_kubelets() {
    let fixed = KubeletFixed::new().init(&config());
    let plain = Kubelet::new().init(&config());
    assert_eq!(Manifest { name: plain.name.clone(), list_mode: plain.list_mode, ..fixed }, plain);
}

#[test]
fn it_acts_exactly_as_the_kubelet_on_the_same_inputs() {
    let (mut fixed, mut plain) = (KubeletFixed::new(), Kubelet::new());
    fixed.init(&config());
    plain.init(&config());
    let a = pod("default", "web-0", "uid-1", "5").on_node("node-1");
    let gone = pod("default", "web-1", "uid-2", "3").on_node("node-1");
    let inputs = [
        node_input(0, vec![listed(0, "5", vec![a.clone()])], vec![container_of(&gone)]),
        node_input(10, vec![listed(0, "6", vec![a.clone().terminating()])], vec![container_of(&a)]),
        node_input(20, vec![], vec![]),
    ];
    for input in &inputs {
        assert_eq!(fixed.handle(input), plain.handle(input));
    }
}
