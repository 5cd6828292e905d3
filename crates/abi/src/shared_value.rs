//! [`SharedValue`]: a JSON value that copies share until one is changed.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, LazyLock};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A JSON value that its copies share until one of them changes it: an
/// object's `spec` and `status`.
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
/// shared. It is encoded and compared as that value.
#[derive(Clone)]
pub struct SharedValue(Arc<Value>);

/// One `null` for every object without a spec or status (most
/// ConfigMaps, Secrets, Events): no allocation per object for nothing.
static NULL: LazyLock<Arc<Value>> = LazyLock::new(|| Arc::new(Value::Null));

impl SharedValue {
    /// Holds `value`.
    pub fn new(value: Value) -> Self {
        if value.is_null() { Self::default() } else { SharedValue(Arc::new(value)) }
    }

    /// The value, taken out (copied only if another holder shares it).
    pub fn into_value(self) -> Value {
        Arc::try_unwrap(self.0).unwrap_or_else(|shared| (*shared).clone())
    }

    /// Whether it holds `null` (what an object without a spec or status has).
    pub fn is_null(&self) -> bool {
        self.0.is_null()
    }

    /// Whether `self` and `other` are the very same copy (not merely equal).
    pub fn ptr_eq(&self, other: &SharedValue) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Default for SharedValue {
    fn default() -> Self {
        SharedValue(NULL.clone())
    }
}

impl Deref for SharedValue {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.0
    }
}

impl DerefMut for SharedValue {
    fn deref_mut(&mut self) -> &mut Value {
        Arc::make_mut(&mut self.0)
    }
}

impl AsRef<Value> for SharedValue {
    fn as_ref(&self) -> &Value {
        &self.0
    }
}

impl From<Value> for SharedValue {
    fn from(value: Value) -> Self {
        SharedValue::new(value)
    }
}

impl From<SharedValue> for Value {
    fn from(value: SharedValue) -> Self {
        value.into_value()
    }
}

impl PartialEq for SharedValue {
    fn eq(&self, other: &Self) -> bool {
        self.ptr_eq(other) || *self.0 == *other.0
    }
}

impl PartialEq<Value> for SharedValue {
    fn eq(&self, other: &Value) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<SharedValue> for Value {
    fn eq(&self, other: &SharedValue) -> bool {
        *self == *other.0
    }
}

impl fmt::Debug for SharedValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for SharedValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl Serialize for SharedValue {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for SharedValue {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(SharedValue::new)
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for SharedValue {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        Value::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        Value::json_schema(generator)
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
