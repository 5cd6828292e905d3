//! How an [`Object`] reads and writes its JSON.

use recon_abi::Object;
use serde_json::json;

/// Kinds such as ConfigMap and Event keep their content in top-level fields
/// of their own; those survive a round trip unchanged and in key order,
/// after `status`.
#[test]
fn other_top_level_fields_round_trip_after_status() {
    let text = r#"{"apiVersion":"v1","kind":"Event","metadata":{"name":"e"},"reason":"Created","involvedObject":{"kind":"Pod","name":"p"}}"#;
    let object: Object = serde_json::from_str(text).unwrap();
    assert_eq!(object.other["reason"], json!("Created"));
    assert_eq!(object.other["involvedObject"]["name"], json!("p"));
    assert_eq!(
        serde_json::to_string(&object).unwrap(),
        r#"{"apiVersion":"v1","kind":"Event","metadata":{"name":"e"},"involvedObject":{"kind":"Pod","name":"p"},"reason":"Created"}"#
    );
}

/// An object with only the usual fields writes exactly what it did before
/// the other fields existed (the trace hashes depend on it).
#[test]
fn an_object_without_other_fields_writes_the_usual_five() {
    let text = r#"{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"web"},"spec":{"replicas":2},"status":{"replicas":1}}"#;
    let object: Object = serde_json::from_str(text).unwrap();
    assert!(object.other.is_empty());
    assert_eq!(serde_json::to_string(&object).unwrap(), text);
}

#[test]
fn a_missing_kind_or_a_repeated_field_is_an_error() {
    let missing = serde_json::from_str::<Object>(r#"{"apiVersion":"v1","metadata":{}}"#).unwrap_err();
    assert!(missing.to_string().contains("missing field `kind`"), "{missing}");
    for field in ["spec", "kind", "data"] {
        let text = format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","{field}":"a","{field}":"b"}}"#);
        let repeated = serde_json::from_str::<Object>(&text).unwrap_err();
        assert!(repeated.to_string().contains(&format!("duplicate field `{field}`")), "{repeated}");
    }
}

/// A missing metadata, spec or status reads as empty, as before.
#[test]
fn missing_metadata_spec_and_status_default() {
    let object: Object = serde_json::from_str(r#"{"apiVersion":"v1","kind":"Node"}"#).unwrap();
    assert_eq!(object, Object { api_version: "v1".into(), kind: "Node".into(), ..Object::default() });
}

/// A watch event that leaves parts out writes the object without them,
/// other fields still after where `status` would be, then `unchanged`;
/// one that leaves nothing out writes no `unchanged` at all.
#[test]
fn a_watch_event_writes_its_object_without_the_parts_it_leaves_out() {
    use recon_abi::{EventType, ObjectPart, WatchEvent};
    let text =
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"n":1},"status":{"p":"R"},"extra":1}"#;
    let object: Object = serde_json::from_str(text).unwrap();
    let mut event = WatchEvent::new(EventType::Modified, object.into());
    assert_eq!(serde_json::to_string(&event).unwrap(), format!(r#"{{"type":"MODIFIED","object":{text}}}"#));
    event.unchanged = vec![ObjectPart::Spec];
    assert_eq!(
        serde_json::to_string(&event).unwrap(),
        r#"{"type":"MODIFIED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"status":{"p":"R"},"extra":1},"unchanged":["spec"]}"#
    );
}

/// An object with every field set, to change one at a time.
fn full() -> Object {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": "web-0", "generateName": "web-", "namespace": "default", "uid": "u-1",
            "resourceVersion": "7", "generation": 2, "deletionTimestamp": "1970-01-01T00:00:05Z",
            "deletionGracePeriodSeconds": 30, "labels": {"app": "web"}, "annotations": {"note": "a"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "s-1"}],
            "finalizers": ["example.com/hold"],
            "managedFields": [{"manager": "m", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {}}]
        },
        "spec": {"nodeName": "node-1"}, "status": {"phase": "Running"}, "data": {"k": "v"}
    }))
    .unwrap()
}

// Objects and their metadata are compared field by field in an order of
// their own (the resourceVersion first): two are equal only when every
// field is, whichever field differs.
#[test]
fn objects_differing_in_any_one_field_are_not_equal() {
    let base = full();
    assert_eq!(base, full());
    // Each change by the field it changes.
    type Change = (&'static str, fn(&mut Object));
    let changes: Vec<Change> = vec![
        ("apiVersion", |o| o.api_version = "v2".into()),
        ("kind", |o| o.kind = "Other".into()),
        ("name", |o| o.metadata.name = "web-1".into()),
        ("generateName", |o| o.metadata.generate_name = "db-".into()),
        ("namespace", |o| o.metadata.namespace = "other".into()),
        ("uid", |o| o.metadata.uid = "u-2".into()),
        ("resourceVersion", |o| o.metadata.resource_version = "8".into()),
        ("generation", |o| o.metadata.generation = 3),
        ("deletionTimestamp", |o| o.metadata.deletion_timestamp = None),
        ("deletionGracePeriodSeconds", |o| o.metadata.deletion_grace_period_seconds = Some(0)),
        ("labels", |o| o.metadata.labels = Default::default()),
        ("annotations", |o| o.metadata.annotations = Default::default()),
        ("ownerReferences", |o| o.metadata.owner_references = Default::default()),
        ("finalizers", |o| o.metadata.finalizers.clear()),
        ("managedFields", |o| o.metadata.managed_fields.clear()),
        ("spec", |o| o.spec = json!({"nodeName": "node-2"}).into()),
        ("status", |o| o.status = json!({"phase": "Pending"}).into()),
        ("other", |o| o.other.clear()),
    ];
    for (field, change) in changes {
        let mut changed = full();
        change(&mut changed);
        assert_ne!(changed, base, "{field}");
        assert_eq!(changed.metadata != base.metadata, field_is_metadata(field), "{field}");
    }
}

fn field_is_metadata(field: &str) -> bool {
    !matches!(field, "apiVersion" | "kind" | "spec" | "status" | "other")
}
