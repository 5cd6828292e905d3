//! Ownership and other metadata-level helpers.

use recon_abi::{Object, ObjectKey, OwnerReference, is_cluster_scoped};
use serde_json::{Map, Value};

/// A controller owner reference to `owner` (`controller: true`,
/// `blockOwnerDeletion: true`), to put on the objects it creates, as
/// controller-runtime's `SetControllerReference` and kube-rs's
/// `controller_owner_ref` make it: a foreground deletion of the owner
/// waits for the object. It carries the owner's uid, so that a recreated
/// owner with the same name does not claim its predecessor's objects.
pub fn owner_reference(owner: &Object) -> OwnerReference {
    OwnerReference {
        api_version: owner.api_version.clone(),
        kind: owner.kind.clone(),
        name: owner.metadata.name.clone(),
        uid: owner.metadata.uid.clone(),
        controller: true,
        block_owner_deletion: true,
    }
}

/// The uid of the object's controlling owner, if it has one.
pub fn controller_uid(object: &Object) -> Option<&str> {
    object.controller_owner().map(|o| o.uid.as_str()).filter(|uid| !uid.is_empty())
}

/// Whether `owner` (this incarnation, by uid) is the object's controller.
pub fn is_controlled_by(object: &Object, owner: &Object) -> bool {
    !owner.metadata.uid.is_empty() && controller_uid(object) == Some(owner.metadata.uid.as_str())
}

/// The key of the object's controlling owner (owners live in the object's
/// namespace unless their kind is cluster-scoped). Says nothing about
/// whether the owner still exists or is the same incarnation.
pub fn controller_key(object: &Object) -> Option<ObjectKey> {
    let owner = object.controller_owner()?;
    let namespace = if is_cluster_scoped(&owner.kind) { "" } else { object.metadata.namespace.as_str() };
    Some(ObjectKey::new(&owner.kind, namespace, &owner.name))
}

/// Reads a dotted path (see [`Object::field`]) as an integer; numbers and
/// numeric strings (as in `status.capacity.pods: "110"`) both work.
pub fn int_field(object: &Object, path: &str) -> Option<i64> {
    object.field(path)?.trim().parse().ok()
}

/// `spec.replicas`, defaulting to 1 as the API server does; negative reads as 0.
pub fn replicas(object: &Object) -> u32 {
    int_field(object, "spec.replicas").map_or(1, |n| u32::try_from(n.max(0)).unwrap_or(u32::MAX))
}

/// The value as a JSON object to write fields into, replacing it with an
/// empty object first if it is anything else (null, as for an object without
/// status). Indexing a non-object `Value` mutably would panic instead, and a
/// panic crashes the controller.
pub fn json_object_mut(value: &mut Value) -> &mut Map<String, Value> {
    if !value.is_object() {
        *value = Value::Object(Map::new());
    }
    match value {
        Value::Object(map) => map,
        _ => unreachable!("replaced by an object above"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{ObjectExt, object, pod};
    use serde_json::json;

    // Garbage Collection, "Foreground cascading deletion": the owner stays
    // until every dependent with blockOwnerDeletion is gone; a controller's
    // reference sets it, as controller-runtime and kube-rs do.
    #[test]
    fn a_controller_reference_blocks_its_owners_foreground_deletion() {
        let mut owner = object("ReplicaSet", "default", "web");
        owner.api_version = "apps/v1".into();
        owner.metadata.uid = "uid-web".into();
        let reference = owner_reference(&owner);
        assert!(reference.controller && reference.block_owner_deletion, "{reference:?}");
        assert_eq!((reference.uid.as_str(), reference.api_version.as_str()), ("uid-web", "apps/v1"));
    }

    #[test]
    fn json_object_mut_replaces_non_objects_and_keeps_objects() {
        let mut text = json!("oops");
        json_object_mut(&mut text).insert("phase".into(), json!("Running"));
        assert_eq!(text, json!({"phase": "Running"}));
        json_object_mut(&mut text).insert("ready".into(), json!(true));
        assert_eq!(text, json!({"phase": "Running", "ready": true}));
    }

    #[test]
    fn ownership_follows_the_owner_uid_not_its_name() {
        let set = object("StatefulSet", "default", "web").with_uid("set-1");
        let recreated = object("StatefulSet", "default", "web").with_uid("set-2");
        let p = pod("default", "web-0", "u", "1").owned_by(&set);
        assert!(is_controlled_by(&p, &set));
        assert!(!is_controlled_by(&p, &recreated));
        assert_eq!(controller_key(&p), Some(set.key()));
        assert_eq!(controller_uid(&p), Some("set-1"));
    }

    #[test]
    fn integer_fields_accept_numbers_and_numeric_strings() {
        let mut node = object("Node", "", "node-1");
        node.status = json!({"capacity": {"pods": "3"}}).into();
        assert_eq!(int_field(&node, "status.capacity.pods"), Some(3));
        node.status = json!({"capacity": {"pods": 4}}).into();
        assert_eq!(int_field(&node, "status.capacity.pods"), Some(4));
        assert_eq!(replicas(&node), 1);
        node.spec = json!({"replicas": 0}).into();
        assert_eq!(replicas(&node), 0);
    }
}
