use kube::CustomResourceExt;
use recon_abi::{
    Action as Wire, ActionResult, ComponentConfig, Controller as _, Input, InputEvent, Object, ObjectMeta, Outcome,
    Patch, Verb,
};
use serde_json::{Value, json};

use super::*;

fn cluster(namespace: &str, name: &str) -> Object {
    Object {
        api_version: "hdfs.stackable.tech/v1alpha1".into(),
        kind: "HdfsCluster".into(),
        metadata: ObjectMeta {
            name: name.into(),
            namespace: namespace.into(),
            uid: format!("uid-{name}"),
            resource_version: "4".into(),
            ..ObjectMeta::default()
        },
        spec: json!({ "dataNodes": 2 }).into(),
        ..Object::default()
    }
}

/// A fresh instance with `params`, its first list delivered: the subjects of
/// each apply it sends, answering each one before the next goes out (the
/// stream runs one event's reconcile at a time).
fn applies_after_first_list(params: Value) -> Vec<Vec<String>> {
    let mut plugin = controller();
    let params = serde_json::from_value(params).expect("params are a map");
    let manifest = plugin.init(&ComponentConfig { name: "hdfs-operator".into(), params, ..Default::default() });
    assert_eq!(manifest.watches.iter().map(|w| w.kind.as_str()).collect::<Vec<_>>(), ["HdfsCluster"]);
    assert!(manifest.writes.iter().any(|w| w.kind == "ClusterRoleBinding"));
    let listed = InputEvent::Listed {
        watch: 0,
        resource_version: "4".into(),
        objects: vec![
            cluster("default", "alpha").into(),
            cluster("default", "beta").into(),
            cluster("analytics", "gamma").into(),
        ],
    };
    let mut input = Input { time_ms: 1_000, events: vec![listed], containers: None };
    let mut applies = Vec::new();
    for _ in 0..10 {
        let output = plugin.handle(&input);
        let Some(Wire::Patch { key, patch: Patch::Apply(body), .. }) = output.actions.first() else { break };
        assert_eq!(key.to_string(), format!("ClusterRoleBinding {BINDING}"));
        assert_eq!(body["roleRef"]["name"], CLUSTER_ROLE);
        let subjects = body["subjects"].as_array().cloned().unwrap_or_default();
        applies.push(
            subjects
                .iter()
                .map(|s| format!("{}/{}", s["namespace"].as_str().unwrap_or(""), s["name"].as_str().unwrap_or("")))
                .collect(),
        );
        let id = output.request_ids.first().copied().flatten();
        let result = ActionResult { verb: Verb::Patch, key: key.clone(), outcome: Outcome::Ok(None), id };
        input =
            Input { time_ms: input.time_ms + 10, events: vec![InputEvent::Result(Box::new(result))], containers: None };
    }
    applies
}

#[test]
fn the_custom_resource_derives_the_crd_the_scenario_declares() {
    let crd = HdfsCluster::crd();
    assert_eq!(crd.metadata.name.as_deref(), Some("hdfsclusters.hdfs.stackable.tech"));
    let scenario = include_str!("../../../scenarios/hdfs-partial-relist-774.yaml");
    assert!(scenario.contains("name: hdfsclusters.hdfs.stackable.tech"));
}

#[test]
fn a_restarted_aggregator_applies_the_binding_without_subjects_until_init_done_issue_774() {
    // stackabletech/hdfs-operator#774: the operator re-applies the binding on
    // every watcher event, and kube's store (kube-rs#1494) takes the list in
    // only at InitDone: Init and each of the three InitApply events apply
    // no subjects, InitDone all three.
    let applies = applies_after_first_list(json!({}));
    let all = ["analytics/gamma-serviceaccount", "default/alpha-serviceaccount", "default/beta-serviceaccount"];
    assert_eq!(applies.len(), 5, "{applies:?}");
    assert!(applies[..4].iter().all(Vec::is_empty), "{applies:?}");
    assert_eq!(applies[4], all);
}

#[test]
fn waiting_for_init_done_or_a_ready_store_applies_once_with_every_subject() {
    for params in [json!({ "waitForInitDone": true }), json!({ "waitForStoreReady": true })] {
        let applies = applies_after_first_list(params.clone());
        assert_eq!(applies.len(), 1, "{params}: {applies:?}");
        assert_eq!(applies[0].len(), 3, "{params}: {applies:?}");
    }
}

#[test]
fn a_parameter_of_the_wrong_type_crashes_the_component_naming_it() {
    let mut native = kube::Native::new(controller());
    let params = serde_json::from_value(json!({ "waitForInitDone": "yes" })).expect("a map");
    let config = ComponentConfig { name: "hdfs-operator".into(), params, ..Default::default() };
    let crash = recon_abi::Instance::init(&mut native, &config).expect_err("main returns the error");
    assert!(crash.reason.contains("waitForInitDone"), "{}", crash.reason);
}
