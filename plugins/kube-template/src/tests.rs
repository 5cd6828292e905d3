//! The controller natively, as the host would drive it: a listed
//! ConfigMap gets its annotation by a merge patch, and an annotated one is
//! left alone.

use recon_abi::{Action as Wire, ComponentConfig, Controller as _, Input, InputEvent, Object, ObjectMeta, Patch};
use serde_json::json;

use super::*;

fn map(name: &str, annotation: Option<&str>) -> Object {
    Object {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        metadata: ObjectMeta {
            name: name.into(),
            namespace: "default".into(),
            uid: format!("uid-{name}"),
            resource_version: "3".into(),
            labels: [("recon.example/annotate".to_owned(), "true".to_owned())].into(),
            annotations: annotation.map(|a| (ANNOTATION.to_owned(), a.to_owned())).into_iter().collect(),
            ..ObjectMeta::default()
        },
        other: [("data".to_owned(), json!({ "b": "2", "a": "1" }))].into(),
        ..Object::default()
    }
}

#[test]
fn a_listed_config_map_gets_its_keys_annotated_and_an_annotated_one_is_left_alone() {
    let mut plugin = controller();
    let manifest = plugin.init(&ComponentConfig { name: "kube-template".into(), ..Default::default() });
    assert_eq!(manifest.watches.len(), 1);
    assert_eq!(manifest.watches[0].kind, "ConfigMap");
    let objects = vec![map("fresh", None), map("done", Some("a,b"))];
    let listed = InputEvent::Listed {
        watch: 0,
        resource_version: "3".into(),
        objects: objects.into_iter().map(std::sync::Arc::new).collect(),
    };
    let output = plugin.handle(&Input { time_ms: 1_000, events: vec![listed], containers: None });
    let patches: Vec<_> = output
        .actions
        .iter()
        .filter_map(|a| match a {
            Wire::Patch { key, patch: Patch::Merge(body), .. } => Some((key.name.clone(), body.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(patches.len(), 1, "{output:?}");
    assert_eq!(patches[0].0, "fresh");
    assert_eq!(patches[0].1["metadata"]["annotations"][ANNOTATION], "a,b");
}
