//! Values returned by reads and writes.
//!
//! Stored objects are immutable and shared: a read, an event and the
//! store's own history hold the same [`Arc`] rather than copies of it, so
//! a cluster's objects are in memory once however many caches, windows
//! and deliveries refer to them. Whoever needs to change one clones it
//! ([`Arc::unwrap_or_clone`]) and writes the result back.

use std::sync::Arc;

use recon_abi::Object;
use serde::Serialize;

use crate::Revision;

/// A key and its value as of some revision, with etcd's per-key counters.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyValue {
    /// The storage key (see [`key_for`](crate::key_for)).
    pub key: String,
    /// The stored object; its `metadata.resourceVersion` is `mod_revision`.
    /// Shared with the store's history and log, not copied.
    pub value: Arc<Object>,
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
    /// shows deleted objects). Shared with the store, not copied.
    pub value: Arc<Object>,
    /// The value before this event (`None` when the key was created): the
    /// very value the store held until this write.
    pub prev: Option<Arc<Object>>,
    /// Virtual time of the commit, in ms (passed in by the caller).
    pub time_ms: u64,
}
