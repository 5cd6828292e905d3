//! Values returned by reads and writes.

use recon_abi::Object;
use serde::Serialize;

use crate::Revision;

/// A key and its value as of some revision, with etcd's per-key counters.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyValue {
    /// The storage key (see [`key_for`](crate::key_for)).
    pub key: String,
    /// The stored object; its `metadata.resourceVersion` is `mod_revision`.
    pub value: Object,
    /// The revision that created this incarnation of the key. A key deleted
    /// and created again gets a new one.
    pub create_revision: Revision,
    /// The revision of the write that produced this value.
    pub mod_revision: Revision,
    /// Number of writes to this incarnation: 1 on create, +1 per update.
    pub version: u64,
}

/// What a write did to its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum EventKind {
    /// The key was created or updated.
    Put,
    /// The key was deleted.
    Delete,
}

/// One entry of the store's append-only log: the write that produced `revision`.
#[derive(Clone, Debug, PartialEq)]
pub struct StoreEvent {
    /// The revision this write produced.
    pub revision: Revision,
    /// The key written.
    pub key: String,
    /// Whether the key was put or deleted.
    pub kind: EventKind,
    /// Put: the new value. Delete: the last value, with
    /// `metadata.resourceVersion` set to the delete's revision (as Kubernetes
    /// shows deleted objects).
    pub value: Object,
    /// The value before this event (`None` when the key was created).
    pub prev: Option<Object>,
    /// Virtual time of the commit, in ms (passed in by the caller).
    pub time_ms: u64,
}
