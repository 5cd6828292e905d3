//! [`SharedValue`]: a JSON value that copies share until one is changed.

use std::fmt;

use serde_json::Value;

use crate::{Empty, Shared};

/// A JSON value that its copies share until one of them changes it: an
/// object's `spec` and `status`, a [`Shared`] JSON value.
///
/// Most writes change one part of an object and keep the rest: a status
/// update keeps the spec, a binding or a deletion keeps the status. The
/// store keeps every version of every object, so each version held its
/// own copy of the parts it did not change; at Kubernetes' published
/// limits (150,000 pods) those copies were most of the simulator's memory,
/// and copying them most of the cost of cloning an object. Now a clone
/// shares them, and a change copies only the part it changes, once.
///
/// It reads as the [`Value`] it holds (`pod.spec["nodeName"]`,
/// `spec.get("replicas")`), and writing through it (`spec["x"] = …`,
/// `*status = json!(…)`) first takes a copy of its own if the value is
/// shared. It is encoded and compared as that value; `null` (an object
/// without a spec or status: most ConfigMaps, Secrets, Events) holds
/// nothing at all.
pub type SharedValue = Shared<Value>;

impl Empty for Value {
    const EMPTY: &'static Self = &Value::Null;

    fn holds_nothing(&self) -> bool {
        self.is_null()
    }
}

impl Shared<Value> {
    /// Whether it holds `null` (what an object without a spec or status has).
    pub fn is_null(&self) -> bool {
        self.is_empty()
    }

    /// The value, taken out (copied only if another holder shares it).
    pub fn into_value(self) -> Value {
        self.into_inner()
    }
}

impl AsRef<Value> for Shared<Value> {
    fn as_ref(&self) -> &Value {
        self
    }
}

impl From<Shared<Value>> for Value {
    fn from(value: Shared<Value>) -> Self {
        value.into_inner()
    }
}

impl PartialEq<Value> for Shared<Value> {
    fn eq(&self, other: &Value) -> bool {
        **self == *other
    }
}

impl PartialEq<Shared<Value>> for Value {
    fn eq(&self, other: &Shared<Value>) -> bool {
        *self == **other
    }
}

impl fmt::Display for Shared<Value> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A clone shares the value; changing one copies it for that one only.
    #[test]
    fn copies_share_until_one_changes() {
        let spec = SharedValue::from(json!({ "nodeName": "node-1", "containers": [{ "name": "web" }] }));
        let mut bound = spec.clone();
        assert!(bound.ptr_eq(&spec), "a clone shares");
        bound["nodeName"] = json!("node-2");
        assert!(!bound.ptr_eq(&spec), "a change copies");
        assert_eq!(spec["nodeName"], "node-1", "the original is untouched");
        assert_eq!(bound["nodeName"], "node-2");
        assert_eq!(bound["containers"], spec["containers"]);
        let mut only = SharedValue::from(json!({ "a": 1 }));
        let before = &*only as *const Value;
        only["a"] = json!(2);
        assert_eq!(&*only as *const Value, before, "an unshared value is changed in place");
    }

    /// Encoded, decoded and compared as the value it holds.
    #[test]
    fn reads_and_writes_as_its_value() {
        let value = json!({ "replicas": 3, "template": { "x": [1, 2] } });
        let shared = SharedValue::from(value.clone());
        assert_eq!(serde_json::to_string(&shared).unwrap(), serde_json::to_string(&value).unwrap());
        let back: SharedValue = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(back, shared);
        assert_eq!(shared, value);
        assert_eq!(format!("{shared:?}"), format!("{value:?}"));
        assert!(SharedValue::default().is_null());
        assert!(SharedValue::from(Value::Null).ptr_eq(&SharedValue::default()), "one null for all");
        assert_eq!(shared.into_value(), value);
    }
}
