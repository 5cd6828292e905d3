//! k8s-openapi (and custom resource) objects to the ABI's
//! [`recon_abi::Object`] and back, through their JSON.
//!
//! Both are the Kubernetes wire shape, so the conversion is serde's. The
//! one difference: the ABI types only the metadata the simulator gives a
//! meaning to. The metadata fields it does not have (`creationTimestamp`,
//! `selfLink`) are dropped from what a controller sends, as an API server
//! ignores them on write; objects coming back never have them.

use recon_abi::Object;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The metadata fields the ABI carries (`recon_abi::ObjectMeta`).
const ABI_METADATA: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Drops the metadata fields the ABI does not carry from an object's JSON.
pub(crate) fn strip_metadata(value: &mut Value) {
    if let Some(Value::Object(metadata)) = value.get_mut("metadata") {
        metadata.retain(|key, _| ABI_METADATA.contains(&key.as_str()));
    }
}

/// A typed object as the ABI's object.
pub(crate) fn to_object<K: Serialize>(object: &K) -> Result<Object, serde_json::Error> {
    let mut value = serde_json::to_value(object)?;
    strip_metadata(&mut value);
    serde_json::from_value(value)
}

/// A body (of a patch) as JSON, with the metadata the ABI does not carry dropped.
pub(crate) fn to_body<P: Serialize>(body: &P) -> Result<Value, serde_json::Error> {
    let mut value = serde_json::to_value(body)?;
    strip_metadata(&mut value);
    Ok(value)
}

/// The ABI's object as a typed object.
pub(crate) fn from_object<K: DeserializeOwned>(object: &Object) -> Result<K, serde_json::Error> {
    serde_json::from_value(serde_json::to_value(object)?)
}

/// Decodes what a watch delivered; an object that does not decode as the
/// watch's type stops the instance with a message that names both.
pub(crate) fn decode<K: DeserializeOwned>(object: &Object) -> K {
    from_object(object).unwrap_or_else(|e| {
        panic!("the watch delivered {} which does not decode as {}: {e}", object.key(), std::any::type_name::<K>())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
    use std::collections::BTreeMap;

    #[test]
    fn a_config_map_crosses_to_the_abi_and_back_with_its_data_and_owner() {
        let map = ConfigMap {
            metadata: ObjectMeta {
                name: Some("cm".into()),
                namespace: Some("default".into()),
                owner_references: Some(vec![OwnerReference {
                    api_version: "nullable.se/v1".into(),
                    kind: "ConfigMapGenerator".into(),
                    name: "gen".into(),
                    uid: "uid-1".into(),
                    controller: Some(true),
                    block_owner_deletion: None,
                }]),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([("content".to_owned(), "hello".to_owned())])),
            ..ConfigMap::default()
        };
        let object = to_object(&map).unwrap();
        assert_eq!((object.api_version.as_str(), object.kind.as_str()), ("v1", "ConfigMap"));
        assert_eq!(object.other["data"]["content"], "hello");
        assert!(object.metadata.owner_references[0].controller);
        let back: ConfigMap = from_object(&object).unwrap();
        assert_eq!(back, map);
    }

    #[test]
    fn metadata_the_abi_does_not_carry_is_dropped_rather_than_refused() {
        let map = ConfigMap {
            metadata: ObjectMeta {
                name: Some("cm".into()),
                creation_timestamp: Some(Time("1970-01-01T00:00:01Z".parse().unwrap())),
                self_link: Some("/api/v1/namespaces/default/configmaps/cm".into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        let object = to_object(&map).unwrap();
        assert_eq!(object.metadata.name, "cm");
        let body = to_body(&map).unwrap();
        assert_eq!(body["metadata"], serde_json::json!({ "name": "cm" }));
    }

    #[test]
    fn a_deletion_timestamp_written_by_the_simulator_decodes() {
        let mut object = to_object(&ConfigMap::default()).unwrap();
        object.metadata.deletion_timestamp = Some(recon_abi::format_timestamp(4_250));
        let map: ConfigMap = from_object(&object).unwrap();
        assert!(map.metadata.deletion_timestamp.is_some());
    }
}
