use kube::CustomResourceExt;
use recon_abi::{Action as Wire, ComponentConfig, Controller as _, Input, InputEvent, Object, ObjectMeta, Patch};
use serde_json::json;

use super::*;

fn generator() -> Object {
    Object {
        api_version: "nullable.se/v1".into(),
        kind: "ConfigMapGenerator".into(),
        metadata: ObjectMeta {
            name: "gen".into(),
            namespace: "default".into(),
            uid: "uid-gen".into(),
            resource_version: "4".into(),
            ..ObjectMeta::default()
        },
        spec: json!({ "content": "hello" }).into(),
        ..Object::default()
    }
}

#[test]
fn the_custom_resource_derives_the_crd_the_scenario_declares() {
    let crd = ConfigMapGenerator::crd();
    assert_eq!(crd.metadata.name.as_deref(), Some("configmapgenerators.nullable.se"));
    assert_eq!(crd.spec.scope, "Namespaced");
    let scenario = include_str!("../../../scenarios/configmap-generator.yaml");
    assert!(scenario.contains("name: configmapgenerators.nullable.se"));
}

#[test]
fn a_listed_generator_gets_its_config_map_applied_with_an_owner_reference() {
    let mut plugin = controller();
    let manifest = plugin.init(&ComponentConfig { name: "configmap-generator".into(), ..Default::default() });
    let watched: Vec<&str> = manifest.watches.iter().map(|w| w.kind.as_str()).collect();
    assert_eq!(watched, ["ConfigMapGenerator", "ConfigMap"]);
    let listed = |watch, objects| InputEvent::Listed { watch, resource_version: "4".into(), objects };
    let input = Input {
        time_ms: 1_000,
        events: vec![listed(0, vec![generator().into()]), listed(1, vec![])],
        containers: None,
    };
    let output = plugin.handle(&input);
    let [Wire::Patch { key, patch: Patch::Apply(body), params }] = &output.actions[..] else {
        panic!("one apply, got {output:?}");
    };
    assert_eq!(key.to_string(), "ConfigMap default/gen");
    assert_eq!(params.field_manager, MANAGER);
    assert_eq!(body["data"], json!({ "content": "hello" }));
    assert_eq!(body["apiVersion"], "v1");
    let owner = &body["metadata"]["ownerReferences"][0];
    assert_eq!((owner["kind"].as_str(), owner["uid"].as_str()), (Some("ConfigMapGenerator"), Some("uid-gen")));
    assert_eq!(owner["controller"], true);
}
