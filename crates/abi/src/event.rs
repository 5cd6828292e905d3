//! Events: one stored resource, two API versions.
//!
//! Kubernetes serves Events as `v1` (the core group) and as
//! `events.k8s.io/v1`, two views of the same stored objects: a client writes
//! either and a client of the other reads it, with fields renamed on the
//! way (the `events.k8s.io/v1` API reference lists each rename). Recon keeps
//! Events in the core `v1` form, as Kubernetes stores them: the API server
//! converts an `events.k8s.io/v1` write to that form ([`to_core`]) and
//! answers the writer in the version it wrote; watches and reads, which in
//! Recon name a kind and no version, deliver the stored `v1` form, and
//! [`to_events_v1`] gives the other view of it.

use serde_json::Value;

use crate::object::{Object, ObjectKey};

/// The kind both versions share.
pub const EVENT_KIND: &str = "Event";

/// The API version of the core group's Events.
pub const CORE_V1: &str = "v1";

/// The API version of the newer Events API.
pub const EVENTS_V1: &str = "events.k8s.io/v1";

/// The renamed fields: (`events.k8s.io/v1` name, core `v1` name). The
/// others (`action`, `eventTime`, `reason`, `related`,
/// `reportingInstance`, `series`, `type`) have one name in both.
pub const RENAMED: [(&str, &str); 7] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

/// Whether `object` is an Event written in the `events.k8s.io/v1` form.
pub fn is_events_v1(object: &Object) -> bool {
    object.kind == EVENT_KIND && object.api_version == EVENTS_V1
}

/// The Event in its core `v1` form (how it is stored): every
/// `events.k8s.io/v1` field under its core name. An Event already in the
/// core form, or any other object, is returned unchanged.
pub fn to_core(object: &Object) -> Object {
    convert(object, EVENTS_V1, CORE_V1, false)
}

/// The Event in its `events.k8s.io/v1` form: every core field under its
/// new name. An Event already in that form, or any other object, is
/// returned unchanged.
pub fn to_events_v1(object: &Object) -> Object {
    convert(object, CORE_V1, EVENTS_V1, true)
}

/// Renames every field of [`RENAMED`] from its new name to its core one,
/// or (`back`) the other way.
fn convert(object: &Object, from: &str, to: &str, back: bool) -> Object {
    let mut out = object.clone();
    if object.kind != EVENT_KIND || object.api_version != from {
        return out;
    }
    out.api_version = to.to_owned();
    for (new, old) in RENAMED {
        let (source, target) = if back { (old, new) } else { (new, old) };
        if let Some(value) = out.other.remove(source) {
            out.other.insert(target.to_owned(), value);
        }
    }
    out
}

/// The object an Event is about (`involvedObject`, or `regarding` in the
/// `events.k8s.io/v1` form); `None` when it names no kind and name. A
/// missing namespace is the Event's own.
pub fn regarding(event: &Object) -> Option<ObjectKey> {
    if event.kind != EVENT_KIND {
        return None;
    }
    let reference = event.other.get("involvedObject").or_else(|| event.other.get("regarding"))?;
    let text = |field: &str| reference.get(field).and_then(Value::as_str).unwrap_or_default();
    let (kind, name) = (text("kind"), text("name"));
    if kind.is_empty() || name.is_empty() {
        return None;
    }
    let namespace = match text("namespace") {
        "" if crate::is_cluster_scoped(kind) => "",
        "" => event.metadata.namespace.as_str(),
        namespace => namespace,
    };
    Some(ObjectKey::new(kind, namespace, name))
}

/// An Event's note (`message` in the core form), or empty.
pub fn note(event: &Object) -> &str {
    text_field(event, "message", "note")
}

/// An Event's reason, or empty.
pub fn reason(event: &Object) -> &str {
    text_field(event, "reason", "reason")
}

/// An Event's type (`Normal` or `Warning`), or empty.
pub fn event_type(event: &Object) -> &str {
    text_field(event, "type", "type")
}

fn text_field<'a>(event: &'a Object, core: &str, new: &str) -> &'a str {
    event.other.get(core).or_else(|| event.other.get(new)).and_then(Value::as_str).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(api_version: &str, fields: Value) -> Object {
        let mut object: Object = serde_json::from_value(json!({
            "apiVersion": api_version, "kind": "Event",
            "metadata": {"name": "web-0.1", "namespace": "default"}
        }))
        .expect("an Event");
        object.other = serde_json::from_value(fields).expect("fields");
        object
    }

    #[test]
    fn an_events_v1_event_converts_to_the_core_form_and_back() {
        let new = event(
            EVENTS_V1,
            json!({
                "regarding": {"kind": "Pod", "name": "web-0"}, "note": "pulled", "reason": "Pulled",
                "type": "Normal", "reportingController": "kubelet", "deprecatedCount": 2, "action": "Pull"
            }),
        );
        let core = to_core(&new);
        assert_eq!(core.api_version, CORE_V1);
        assert_eq!(core.other["involvedObject"], json!({"kind": "Pod", "name": "web-0"}));
        assert_eq!(core.other["message"], "pulled");
        assert_eq!(core.other["reportingComponent"], "kubelet");
        assert_eq!(core.other["count"], 2);
        assert_eq!(core.other["action"], "Pull");
        assert!(!core.other.contains_key("note") && !core.other.contains_key("regarding"));
        assert_eq!(to_events_v1(&core), new);
    }

    #[test]
    fn conversion_leaves_other_kinds_and_the_target_form_alone() {
        let core = event(CORE_V1, json!({"message": "m"}));
        assert_eq!(to_core(&core), core);
        let mut pod = core.clone();
        pod.kind = "Pod".into();
        assert_eq!(to_events_v1(&pod), pod);
    }

    #[test]
    fn an_event_is_about_the_object_either_form_names() {
        let core = event(CORE_V1, json!({"involvedObject": {"kind": "Pod", "name": "web-0"}, "message": "m"}));
        assert_eq!(regarding(&core), Some(ObjectKey::new("Pod", "default", "web-0")));
        let new = event(EVENTS_V1, json!({"regarding": {"kind": "Node", "name": "node-1"}, "note": "n"}));
        assert_eq!(regarding(&new), Some(ObjectKey::new("Node", "", "node-1")));
        assert_eq!((note(&core), note(&new)), ("m", "n"));
        assert_eq!(regarding(&event(CORE_V1, json!({"involvedObject": {"kind": "Pod"}}))), None);
    }
}
