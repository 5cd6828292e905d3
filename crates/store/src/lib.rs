//! An etcd-like MVCC store: revisions, an append-only event log, compaction,
//! compare-and-swap.
//!
//! This crate owns the simulator's source of truth. Start with [`Store`]:
//! every successful write ([`Store::create`], [`Store::update`],
//! [`Store::delete`]) advances the [`Revision`] by exactly one and appends one
//! [`StoreEvent`] to the log, which watch caches consume with
//! [`Store::events_since`]. Reads can be served as of any revision back to the
//! compaction point ([`Store::compact`]); below it they fail with
//! [`StoreError::Compacted`], the store's equivalent of `410 Gone`.
//!
//! Keys follow the Kubernetes layout in etcd ([`key_for`], [`prefix_for`]),
//! so a list of one kind in one namespace is a prefix [`Store::range`].
//!
//! The store is pure and deterministic: no clocks (callers pass virtual time
//! in), no threads, ordered maps only, so it behaves identically natively and
//! on wasm32.
//!
//! ```
//! use recon_abi::{Object, ObjectKey};
//! use recon_store::{prefix_for, Store, StoreError};
//!
//! let mut store = Store::new();
//! let mut pod = Object { api_version: "v1".into(), kind: "Pod".into(), ..Object::default() };
//! pod.metadata.namespace = "default".into();
//! pod.metadata.name = "web-0".into();
//!
//! let created = store.create(pod.clone(), 0)?;
//! assert_eq!(created.revision, 1);
//! assert_eq!(created.value.metadata.resource_version, "1");
//!
//! // Optimistic concurrency: an update based on a stale read is refused.
//! store.update(pod.clone(), Some(1), 10)?;
//! let stale = store.update(pod.clone(), Some(1), 20);
//! assert!(matches!(stale, Err(StoreError::Conflict { actual: 2, .. })));
//!
//! // History stays readable until it is compacted.
//! let key = ObjectKey::new("Pod", "default", "web-0");
//! assert_eq!(store.get(&key, Some(1))?.unwrap().mod_revision, 1);
//! assert_eq!(store.range(&prefix_for("Pod", "default"), None)?.len(), 1);
//! assert_eq!(store.events_since(0)?.len(), 2);
//! store.compact(2);
//! assert!(matches!(store.get(&key, Some(1)), Err(StoreError::Compacted { .. })));
//! # Ok::<(), StoreError>(())
//! ```

mod error;
mod key;
mod store;
mod types;

pub use error::StoreError;
pub use key::{key_for, prefix_for};
pub use store::Store;
pub use types::{EventKind, KeyValue, StoreEvent};

/// A position in the store's history: the number of successful writes so far.
///
/// Revision 0 is the empty store; the write that produces revision `r` is the
/// event at `r`. Objects carry it as their `metadata.resourceVersion`.
pub type Revision = u64;
