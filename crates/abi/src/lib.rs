//! The wire types between the Recon simulator (the host) and the controllers
//! it runs (plugins, or the same code linked natively).
//!
//! Start with [`Controller`]: the one trait every controller implements. The
//! host calls [`Controller::init`] once per instance with a
//! [`ComponentConfig`] and gets back a [`Manifest`] (what it watches, what it
//! may write); then it calls [`Controller::handle`] with an [`Input`] (list
//! results, watch events, results of earlier actions, timers) and applies the
//! [`Output`]'s [`Action`]s. Objects are Kubernetes-shaped ([`Object`]), with
//! `spec` and `status` left as untyped JSON so any kind can cross, held in
//! a [`SharedValue`] so that copies of an object share them until one changes;
//! the metadata's labels, annotations and owner references are [`Shared`]
//! the same way.
//!
//! Everything here is plain data with a stable JSON encoding (serde), because
//! the same values cross the Wasm boundary as bytes. [`ABI_VERSION`] changes
//! whenever that encoding changes incompatibly.

mod containers;
mod controller;
pub mod event;
mod name_map;
mod namespaced;
mod object;
mod patch;
#[cfg(feature = "schema")]
pub mod schema;
pub mod selector;
mod shared;
mod shared_value;
mod tagged;
mod time;
mod unchanged;

pub use containers::{ContainerChanges, SentContainers};
pub use controller::{
    Action, ActionResult, ComponentConfig, Container, Controller, Crash, FOREGROUND_FINALIZER, HeldSync, Input,
    InputEvent, Instance, ListMode, Manifest, Mitigation, ORPHAN_FINALIZER, ObjectList, Outcome, Output,
    PropagationPolicy, RequestId, ResourceVersionMatch, Status, StatusReason, Target, Verb, WatchSpec, WireInput,
    WritePermission, catch_panic, panic_message,
};
pub use name_map::NameMap;
pub use namespaced::{KeyMap, NamespacedMap};
pub use object::{
    EventType, ManagedFieldsEntry, Object, ObjectKey, ObjectMeta, OwnerReference, PodRef, WatchEvent, is_cluster_scoped,
};
pub use patch::{Patch, PatchParams, PatchType};
pub use shared::{Empty, Shared};
pub use shared_value::SharedValue;
pub use time::{civil_from_days, format_timestamp};
pub use unchanged::{Delivered, ObjectPart};

/// How many bytes `value` takes as JSON, counted as it is encoded rather
/// than by keeping the encoding: an API server measures every write this
/// way, and a large run's trace is too big to encode only to measure it.
/// `u64::MAX` if it does not encode.
pub fn json_len(value: &impl serde::Serialize) -> u64 {
    /// A writer that keeps nothing but the count.
    struct Counter(u64);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len() as u64;
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    serde_json::to_writer(&mut counter, value).map_or(u64::MAX, |()| counter.0)
}

/// Version of the wire encoding. A host refuses a controller built for another version.
pub const ABI_VERSION: u32 = 1;
