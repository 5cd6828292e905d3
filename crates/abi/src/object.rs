//! Kubernetes-shaped objects and watch events.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::unchanged::ObjectPart;
use crate::{Shared, SharedValue};

/// A Kubernetes object: type information, metadata, `spec` and `status`, and
/// whatever other top-level fields its kind has.
///
/// Only the metadata is typed, because the simulator itself only reasons
/// about identity, versions, ownership and deletion; what a spec means is up
/// to the controllers that read it. Most kinds keep their content in `spec`
/// and `status`; the rest (a ConfigMap's `data`, an Event's `involvedObject`
/// and `reason`, a Secret's `type`) keep it in top-level fields of their
/// own, which [`Object::other`] carries unchanged.
// Encoded by hand (`ObjectWithout`, below), so that a watch event can
// leave parts out; the `serde` attributes describe that encoding to the
// JSON Schema. Compared by hand (below), metadata first.
#[derive(Clone, Debug, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", serde(rename_all = "camelCase"))]
pub struct Object {
    /// Group and version, e.g. `v1` or `apps/v1`.
    pub api_version: String,
    /// Kind, e.g. `Pod` or `StatefulSet`.
    pub kind: String,
    /// Identity, versions, labels, ownership and deletion state.
    pub metadata: ObjectMeta,
    /// Desired state, as written by users and controllers.
    #[cfg_attr(feature = "schema", serde(skip_serializing_if = "SharedValue::is_null"))]
    pub spec: SharedValue,
    /// Observed state, written through the status subresource.
    #[cfg_attr(feature = "schema", serde(skip_serializing_if = "SharedValue::is_null"))]
    pub status: SharedValue,
    /// Every other top-level field, by name (`data`, `involvedObject`, …).
    /// Serialized after `status`, in key order. Which names a kind may have
    /// is the scenario's concern (an unknown field of a built-in kind is a
    /// scenario error there); the wire carries them all.
    #[cfg_attr(feature = "schema", serde(flatten))]
    pub other: BTreeMap<String, Value>,
}

impl Serialize for Object {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ObjectWithout { object: self, omit: &[] }.serialize(serializer)
    }
}

/// `object` as it is encoded, without the parts in `omit`: every object
/// (nothing omitted), and a watch event that leaves parts out. The keys
/// in order: `apiVersion`, `kind`, `metadata`, `spec` and `status` unless
/// null or omitted, then the other top-level fields in key order.
struct ObjectWithout<'a> {
    object: &'a Object,
    omit: &'a [ObjectPart],
}

impl Serialize for ObjectWithout<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Object { api_version, kind, metadata, spec, status, other } = self.object;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("apiVersion", api_version)?;
        map.serialize_entry("kind", kind)?;
        map.serialize_entry("metadata", metadata)?;
        if !spec.is_null() && !self.omit.contains(&ObjectPart::Spec) {
            map.serialize_entry("spec", spec)?;
        }
        if !status.is_null() && !self.omit.contains(&ObjectPart::Status) {
            map.serialize_entry("status", status)?;
        }
        for (name, value) in other {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

/// Written by hand rather than derived: a derived `flatten` buffers every
/// field before deciding where it goes, and objects cross the plugin
/// boundary on every call.
impl<'de> Deserialize<'de> for Object {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ObjectVisitor)
    }
}

struct ObjectVisitor;

/// A top-level key: one of the five every object may have, or another.
enum TopLevel {
    ApiVersion,
    Kind,
    Metadata,
    Spec,
    Status,
    Other(String),
}

impl<'de> Deserialize<'de> for TopLevel {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl serde::de::Visitor<'_> for KeyVisitor {
            type Value = TopLevel;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<TopLevel, E> {
                Ok(match key {
                    "apiVersion" => TopLevel::ApiVersion,
                    "kind" => TopLevel::Kind,
                    "metadata" => TopLevel::Metadata,
                    "spec" => TopLevel::Spec,
                    "status" => TopLevel::Status,
                    other => TopLevel::Other(other.to_owned()),
                })
            }
        }
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

impl<'de> serde::de::Visitor<'de> for ObjectVisitor {
    type Value = Object;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Kubernetes object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Object, A::Error> {
        use serde::de::Error;
        fn once<T, E: Error>(slot: &mut Option<T>, value: T, name: &str) -> Result<(), E> {
            match slot.replace(value) {
                Some(_) => Err(E::custom(format_args!("duplicate field `{name}`"))),
                None => Ok(()),
            }
        }
        let (mut api_version, mut kind, mut metadata, mut spec, mut status) = (None, None, None, None, None);
        let mut other = BTreeMap::new();
        while let Some(key) = map.next_key::<TopLevel>()? {
            match key {
                TopLevel::ApiVersion => once(&mut api_version, map.next_value()?, "apiVersion")?,
                TopLevel::Kind => once(&mut kind, map.next_value()?, "kind")?,
                TopLevel::Metadata => once(&mut metadata, map.next_value()?, "metadata")?,
                TopLevel::Spec => once(&mut spec, map.next_value()?, "spec")?,
                TopLevel::Status => once(&mut status, map.next_value()?, "status")?,
                TopLevel::Other(name) => {
                    let value = map.next_value()?;
                    if other.contains_key(&name) {
                        return Err(A::Error::custom(format_args!("duplicate field `{name}`")));
                    }
                    other.insert(name, value);
                }
            }
        }
        Ok(Object {
            api_version: api_version.ok_or_else(|| A::Error::missing_field("apiVersion"))?,
            kind: kind.ok_or_else(|| A::Error::missing_field("kind"))?,
            metadata: metadata.unwrap_or_default(),
            spec: spec.unwrap_or_default(),
            status: status.unwrap_or_default(),
            other,
        })
    }
}

/// Standard object metadata (the subset the simulator gives meaning to).
// Compared by hand (below), resourceVersion first.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectMeta {
    /// Name, unique per kind and namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Prefix from which the API server generates a name when `name` is empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub generate_name: String,
    /// Namespace; empty for cluster-scoped kinds such as Node.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Unique identity of this incarnation of the object, assigned on create.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The store revision at which this version was written (opaque to clients).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// Incremented by the API server on every change to `spec`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub generation: i64,
    /// Set when a graceful deletion has begun (RFC 3339, virtual time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<String>,
    /// Grace period of a pending graceful deletion, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_grace_period_seconds: Option<i64>,
    /// Labels, used by selectors.
    #[serde(default, skip_serializing_if = "Shared::is_empty")]
    pub labels: Shared<BTreeMap<String, String>>,
    /// Annotations: free-form metadata.
    #[serde(default, skip_serializing_if = "Shared::is_empty")]
    pub annotations: Shared<BTreeMap<String, String>>,
    /// Objects this one belongs to.
    #[serde(default, skip_serializing_if = "Shared::is_empty")]
    pub owner_references: Shared<Vec<OwnerReference>>,
    /// What must happen before the object may be removed: while any is
    /// left, a deletion only marks it (`deletionTimestamp`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finalizers: Vec<String>,
    /// Which field manager owns which fields, written by the API server on
    /// patches and server-side apply (`metadata.managedFields`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub managed_fields: Vec<ManagedFieldsEntry>,
}

/// Two versions of one object nearly always differ in their
/// resourceVersion and share their name, namespace and uid, and a cache
/// compares each version it is sent with the one it holds: so the
/// resourceVersion is compared first, then what else changes often. Equal
/// exactly when every field is (the destructuring makes a new field a
/// compile error here until it is compared).
impl PartialEq for ObjectMeta {
    fn eq(&self, other: &Self) -> bool {
        let ObjectMeta {
            name,
            generate_name,
            namespace,
            uid,
            resource_version,
            generation,
            deletion_timestamp,
            deletion_grace_period_seconds,
            labels,
            annotations,
            owner_references,
            finalizers,
            managed_fields,
        } = self;
        *resource_version == other.resource_version
            && *generation == other.generation
            && *deletion_timestamp == other.deletion_timestamp
            && *deletion_grace_period_seconds == other.deletion_grace_period_seconds
            && *name == other.name
            && *namespace == other.namespace
            && *uid == other.uid
            && *generate_name == other.generate_name
            && *finalizers == other.finalizers
            && *labels == other.labels
            && *annotations == other.annotations
            && *owner_references == other.owner_references
            && *managed_fields == other.managed_fields
    }
}

/// Metadata first (see [`ObjectMeta`]'s comparison), then the parts a
/// write changes, then the type. Equal exactly when every field is.
impl PartialEq for Object {
    fn eq(&self, other: &Self) -> bool {
        let Object { api_version, kind, metadata, spec, status, other: rest } = self;
        *metadata == other.metadata
            && *status == other.status
            && *spec == other.spec
            && *rest == other.other
            && *kind == other.kind
            && *api_version == other.api_version
    }
}

/// The fields one manager owns through one kind of operation, as in
/// Kubernetes' `metav1.ManagedFieldsEntry`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManagedFieldsEntry {
    /// The field manager, e.g. `kubectl` or a controller's name.
    pub manager: String,
    /// `Apply` (server-side apply) or `Update` (any other write).
    pub operation: String,
    /// The apiVersion of the object the fields were written in.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// When the manager last changed its set (RFC 3339, virtual time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// Always `FieldsV1`.
    pub fields_type: String,
    /// The set of fields, in Kubernetes' FieldsV1 encoding (`f:<name>`,
    /// `k:<key>` for list items by key, `v:<value>` for set items, `.` for
    /// the item itself).
    #[serde(rename = "fieldsV1")]
    pub fields_v1: serde_json::Value,
    /// The subresource written (`status`), empty for the main resource.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub subresource: String,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// A reference from an object to its owner (e.g. a Pod to its StatefulSet).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OwnerReference {
    /// Owner's group and version.
    pub api_version: String,
    /// Owner's kind.
    pub kind: String,
    /// Owner's name.
    pub name: String,
    /// Owner's uid: a recreated owner with the same name is a different owner.
    pub uid: String,
    /// Whether the owner is the managing controller.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub controller: bool,
    /// Whether a foreground deletion of the owner waits for this dependent
    /// to be gone before the owner is removed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub block_owner_deletion: bool,
}

/// Identifies an object by kind, namespace and name (not by uid: a deleted
/// and recreated object has the same key).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectKey {
    /// Kind, e.g. `Pod`.
    pub kind: String,
    /// Namespace; empty for cluster-scoped kinds.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl ObjectKey {
    /// Builds a key.
    pub fn new(kind: impl Into<String>, namespace: impl Into<String>, name: impl Into<String>) -> Self {
        ObjectKey { kind: kind.into(), namespace: namespace.into(), name: name.into() }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_key(f, &self.kind, &self.namespace, &self.name)
    }
}

/// `Pod default/web-0`, or `Node node-1` without a namespace: how a key
/// shows, owned ([`ObjectKey`]) or borrowed ([`crate::Target`]).
///
/// Written piece by piece: `write!` with the pieces as arguments pads each
/// one, and traces show millions of keys.
pub(crate) fn write_key(f: &mut fmt::Formatter<'_>, kind: &str, namespace: &str, name: &str) -> fmt::Result {
    f.write_str(kind)?;
    f.write_str(" ")?;
    if !namespace.is_empty() {
        f.write_str(namespace)?;
        f.write_str("/")?;
    }
    f.write_str(name)
}

/// Identifies one incarnation of a pod: the unit a node runs containers for.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodRef {
    /// Namespace of the pod.
    pub namespace: String,
    /// Name of the pod.
    pub name: String,
    /// Uid of the pod incarnation.
    pub uid: String,
}

impl fmt::Display for PodRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{} (uid {})", self.namespace, self.name, self.uid)
    }
}

/// Whether objects of `kind` live outside namespaces (Node, Namespace, …).
pub fn is_cluster_scoped(kind: &str) -> bool {
    matches!(kind, "Node" | "Namespace" | "PersistentVolume" | "ClusterRole" | "ClusterRoleBinding" | "StorageClass")
}

impl Object {
    /// The object's key (kind, namespace, name).
    pub fn key(&self) -> ObjectKey {
        ObjectKey::new(&self.kind, &self.metadata.namespace, &self.metadata.name)
    }

    /// The revision this version was written at, if it has been stored.
    pub fn revision(&self) -> Option<u64> {
        self.metadata.resource_version.parse().ok()
    }

    /// Whether a graceful deletion has begun.
    pub fn is_terminating(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
    }

    /// Reads a dotted path such as `spec.nodeName` or `metadata.name` as a string.
    ///
    /// Metadata paths read the typed fields; other paths walk the JSON.
    /// Missing fields read as `None`; numbers and booleans are rendered as text.
    pub fn field(&self, path: &str) -> Option<String> {
        self.field_str(path).map(Cow::into_owned)
    }

    /// [`Object::field`], borrowing where the value is a string already
    /// (field selectors ask this of every object a watch could see).
    pub fn field_str(&self, path: &str) -> Option<Cow<'_, str>> {
        match path {
            "metadata.name" => return Some(Cow::Borrowed(&self.metadata.name)),
            "metadata.namespace" => return Some(Cow::Borrowed(&self.metadata.namespace)),
            "metadata.uid" => return Some(Cow::Borrowed(&self.metadata.uid)),
            "kind" => return Some(Cow::Borrowed(&self.kind)),
            _ => {}
        }
        let (root, rest) = path.split_once('.')?;
        let mut value: &Value = match root {
            "spec" => &self.spec,
            "status" => &self.status,
            _ => return None,
        };
        for part in rest.split('.') {
            value = value.get(part)?;
        }
        match value {
            Value::String(s) => Some(Cow::Borrowed(s)),
            Value::Bool(b) => Some(Cow::Owned(b.to_string())),
            Value::Number(n) => Some(Cow::Owned(n.to_string())),
            _ => None,
        }
    }

    /// The controlling owner reference, if any.
    pub fn controller_owner(&self) -> Option<&OwnerReference> {
        self.metadata.owner_references.iter().find(|o| o.controller)
    }
}

/// The type of a watch event, spelled as on the Kubernetes wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum EventType {
    /// The object appeared (or started to match the watch's selector).
    Added,
    /// The object changed and still matches.
    Modified,
    /// The object was deleted (or stopped matching); `object` is its last state.
    Deleted,
    /// No object changed; `object.metadata.resourceVersion` tells how far the
    /// stream has progressed.
    Bookmark,
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
            EventType::Bookmark => "BOOKMARK",
        })
    }
}

/// One event on a watch stream.
// Encoded by hand (below): `object` leaves out the parts in `unchanged`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct WatchEvent {
    /// What happened.
    #[serde(rename = "type")]
    pub event_type: EventType,
    /// The object after the change (for DELETED: its last state; for
    /// BOOKMARK: only `metadata.resourceVersion` is meaningful).
    // Shared, not copied (it encodes as the object): a controller linked
    // natively keeps the very version the simulator's store holds.
    pub object: Arc<Object>,
    /// The parts of `object` left out because they equal those of the last
    /// version of the same object this watch delivered. Only for a plugin
    /// whose manifest sets `omitUnchanged`; empty otherwise, and then not
    /// on the wire. The Rust SDK puts them back before a controller sees
    /// the event (see [`Delivered`](crate::Delivered)).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unchanged: Vec<ObjectPart>,
}

impl WatchEvent {
    /// An event with the whole object (nothing left out).
    pub fn new(event_type: EventType, object: Arc<Object>) -> WatchEvent {
        WatchEvent { event_type, object, unchanged: Vec::new() }
    }
}

impl Serialize for WatchEvent {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let fields = if self.unchanged.is_empty() { 2 } else { 3 };
        let mut event = serializer.serialize_struct("WatchEvent", fields)?;
        event.serialize_field("type", &self.event_type)?;
        event.serialize_field("object", &ObjectWithout { object: &self.object, omit: &self.unchanged })?;
        if !self.unchanged.is_empty() {
            event.serialize_field("unchanged", &self.unchanged)?;
        }
        event.end()
    }
}
