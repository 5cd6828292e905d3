//! Status conditions (`status.conditions`), as Kubernetes spells them.

use recon_abi::Object;
use serde_json::{Value, json};

use crate::meta::json_object_mut;

/// The condition of `type_` in the object's `status.conditions`, if present.
pub fn condition<'a>(object: &'a Object, type_: &str) -> Option<&'a Value> {
    object.status.get("conditions")?.as_array()?.iter().find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
}

/// Whether the condition of `type_` has `status: "True"`.
pub fn condition_is_true(object: &Object, type_: &str) -> bool {
    condition(object, type_).and_then(|c| c.get("status")).and_then(Value::as_str) == Some("True")
}

/// Sets the condition `type_` to `"True"` or `"False"` in a status value
/// (turning a null or non-object status into an object), keeping the other
/// conditions in place. Returns whether anything changed.
pub fn set_condition(status: &mut Value, type_: &str, value: bool) -> bool {
    let wanted = if value { "True" } else { "False" };
    let conditions = json_object_mut(status).entry("conditions").or_insert(Value::Null);
    if !conditions.is_array() {
        *conditions = Value::Array(Vec::new());
    }
    let Some(list) = conditions.as_array_mut() else {
        return false;
    };
    match list.iter_mut().find(|c| c.get("type").and_then(Value::as_str) == Some(type_)) {
        Some(existing) if existing.get("status").and_then(Value::as_str) == Some(wanted) => false,
        Some(existing) => {
            existing["status"] = json!(wanted);
            true
        }
        None => {
            list.push(json!({ "type": type_, "status": wanted }));
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_condition_adds_updates_and_reports_no_change() {
        let mut status = Value::Null;
        assert!(set_condition(&mut status, "Ready", false));
        assert!(set_condition(&mut status, "Initialized", true));
        assert!(set_condition(&mut status, "Ready", true));
        assert!(!set_condition(&mut status, "Ready", true));
        assert_eq!(
            status,
            json!({"conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "Initialized", "status": "True"},
            ]})
        );
        let object = Object { status: status.into(), ..Object::default() };
        assert!(condition_is_true(&object, "Ready"));
        assert!(!condition_is_true(&object, "PodScheduled"));
    }
}
