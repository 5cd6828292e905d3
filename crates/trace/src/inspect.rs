//! What each component believed at a moment, beside the store's truth:
//! the [`Snapshot`] the simulator takes (`Sim::snapshot`) and the inspector
//! shows.
//!
//! A stale read is invisible in any one component's logs: it acts on what
//! it holds. A snapshot puts every running component's view (what its
//! watches delivered) beside the store and lists the differences: objects it
//! lacks, objects it holds at an older revision, and objects it still holds
//! though they were deleted (or replaced by a new incarnation). Every API
//! server's watch cache is put beside the store the same way: in #59848 it
//! is the frozen cache, not the kubelet, that is the story.

use serde::{Deserialize, Serialize};

use crate::ObjectVersion;

/// Every component's view against the store, at one moment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// Virtual time of the snapshot.
    pub time_ms: u64,
    /// The store's revision then.
    pub store_revision: u64,
    /// Every component, in scenario order.
    pub components: Vec<ComponentView>,
    /// Every API server's watch cache, in scenario order.
    #[serde(default)]
    pub caches: Vec<CacheView>,
}

/// One API server's watch cache against the store.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheView {
    /// The API server.
    pub api_server: String,
    /// Whether the server has its watch cache on (off: reads go to the
    /// store, and what the cache holds serves only watches).
    pub enabled: bool,
    /// The store revision the cache reflects.
    pub revision: u64,
    /// How many objects it holds.
    pub held: usize,
    /// Where it differs from the store.
    #[serde(flatten)]
    pub differences: Differences,
}

/// Where a view (a component's informers, an API server's cache) differs
/// from the store.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Differences {
    /// Objects in the store that the view should hold but does not.
    pub missing: Vec<ObjectVersion>,
    /// Objects it holds at an older revision than the store's.
    pub outdated: Vec<Outdated>,
    /// Objects it holds that the store no longer has: deleted, or replaced
    /// by a new incarnation (another uid) under the same name.
    pub deleted: Vec<ObjectVersion>,
}

impl Differences {
    /// Whether the view matches the store.
    pub fn is_current(&self) -> bool {
        self.missing.is_empty() && self.outdated.is_empty() && self.deleted.is_empty()
    }

    /// Adds another view's differences to these.
    pub fn extend(&mut self, more: Differences) {
        self.missing.extend(more.missing);
        self.outdated.extend(more.outdated);
        self.deleted.extend(more.deleted);
    }
}

/// One component's view against the store.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ComponentView {
    /// The component.
    pub component: String,
    /// The API server it is connected to.
    pub api_server: String,
    /// Whether an instance is running (a crashed one holds nothing).
    pub running: bool,
    /// How many objects it holds.
    pub held: usize,
    /// Where it differs from the store, for what its watches select.
    #[serde(flatten)]
    pub differences: Differences,
}

/// An object held at an older revision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Outdated {
    /// What the component holds.
    pub held: ObjectVersion,
    /// The store's revision of the same incarnation.
    pub current: u64,
}
