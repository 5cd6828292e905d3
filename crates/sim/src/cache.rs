//! An API server's watch cache: the store's state at some revision, fed by
//! the store's event stream, plus a window of recent events from which
//! watches resume.
//!
//! The cache holds the store's objects by reference ([`Arc`]), as the
//! store's events carry them: its state, its window and the watch events
//! it sends share one immutable copy of each object version with the store
//! and with every other API server's cache.

use std::collections::VecDeque;
use std::sync::Arc;

use recon_abi::selector::Selector;
use recon_abi::{EventType, NameMap, Object, WatchEvent};
use recon_store::StoreEvent;

use recon_trace::EntryId;

/// Events kept for resuming watches unless the scenario says otherwise
/// (`watchCache.windowEvents`).
pub const WINDOW_CAPACITY: usize = 1024;

/// A parsed selection, matched against objects.
#[derive(Clone, Debug)]
pub struct Filter {
    /// Kind.
    pub kind: String,
    /// Namespace, empty for all.
    pub namespace: String,
    fields: Selector,
    labels: Selector,
}

impl Filter {
    /// Parses the selectors of a selection.
    pub fn new(sel: &crate::api::Selection) -> Result<Filter, String> {
        Ok(Filter {
            kind: sel.kind.clone(),
            namespace: sel.namespace.clone(),
            fields: Selector::parse_fields(&sel.field_selector).map_err(|e| e.to_string())?,
            labels: Selector::parse_labels(&sel.label_selector).map_err(|e| e.to_string())?,
        })
    }

    /// Store key prefix covering the selection.
    pub fn prefix(&self) -> String {
        recon_store::prefix_for(&self.kind, &self.namespace)
    }

    /// The field every selected object has at a given value, if the field
    /// selector requires one (`spec.nodeName=node-1`): how the API server
    /// finds the watchers an event concerns without asking each.
    pub fn indexed_field(&self) -> Option<(&str, &str)> {
        self.fields.equality()
    }

    /// Whether the object is selected.
    pub fn matches(&self, o: &Object) -> bool {
        o.kind == self.kind
            && (self.namespace.is_empty() || o.metadata.namespace == self.namespace)
            && self.fields.matches_fields(o)
            && self.labels.matches_labels(&o.metadata.labels)
    }

    /// What a watcher with this filter sees of a store event: a change into
    /// the selection is ADDED, out of it DELETED, within it MODIFIED.
    pub fn view(&self, ev: &CachedEvent) -> Option<WatchEvent> {
        let before = ev.prev.as_ref().is_some_and(|p| self.matches(p));
        let after = !ev.deleted && self.matches(&ev.object);
        let event_type = match (before, after) {
            (false, true) => EventType::Added,
            (true, true) => EventType::Modified,
            (true, false) => EventType::Deleted,
            (false, false) => return None,
        };
        Some(WatchEvent::new(event_type, Arc::clone(&ev.object)))
    }
}

/// One store event as the cache keeps it.
#[derive(Clone, Debug)]
pub struct CachedEvent {
    /// Store revision.
    pub revision: u64,
    /// The object after the event (its last state if deleted), as the store holds it.
    pub object: Arc<Object>,
    /// The object before the event, as the store held it.
    pub prev: Option<Arc<Object>>,
    /// Whether the event deleted the object.
    pub deleted: bool,
    /// The trace entry of the cache applying it.
    pub entry: EntryId,
    /// When the cache applied it (for a window bounded in time).
    pub applied_ms: u64,
}

/// The watch cache.
#[derive(Clone, Debug)]
pub struct WatchCache {
    /// The store revision the cache reflects.
    pub revision: u64,
    /// Trace entry that brought the cache to `revision` (a cause of reads served from it).
    pub revision_entry: Option<EntryId>,
    /// By store key: iterated in key order, looked up by hash.
    objects: NameMap<Arc<Object>>,
    window: VecDeque<CachedEvent>,
    /// Events after this revision are all in the window.
    window_start: u64,
    /// The most events the window holds.
    capacity: usize,
    /// How long an event stays in the window, if that is bounded.
    max_age_ms: Option<u64>,
}

impl Default for WatchCache {
    fn default() -> Self {
        WatchCache::new(WINDOW_CAPACITY, None)
    }
}

impl WatchCache {
    /// An empty cache whose window holds at most `capacity` events (at
    /// least one), each for at most `max_age_ms` if given.
    pub fn new(capacity: usize, max_age_ms: Option<u64>) -> WatchCache {
        WatchCache {
            revision: 0,
            revision_entry: None,
            objects: NameMap::new(),
            window: VecDeque::new(),
            window_start: 0,
            capacity: capacity.max(1),
            max_age_ms,
        }
    }

    /// Applies the next store event at the time the store committed it.
    /// Returns `None` (and changes nothing) if the event is not the next
    /// revision, e.g. a duplicate after a resync.
    pub fn apply(&mut self, ev: &StoreEvent, entry: EntryId) -> Option<&CachedEvent> {
        self.apply_at(ev, entry, ev.time_ms)
    }

    /// Applies the next store event at time `now` (what a window bounded
    /// in time counts from), as [`WatchCache::apply`].
    pub fn apply_at(&mut self, ev: &StoreEvent, entry: EntryId, now: u64) -> Option<&CachedEvent> {
        if ev.revision != self.revision + 1 {
            return None;
        }
        let deleted = ev.kind == recon_store::EventKind::Delete;
        if deleted {
            self.objects.remove(&ev.key);
        } else {
            self.objects.insert(&ev.key, Arc::clone(&ev.value));
        }
        self.revision = ev.revision;
        self.revision_entry = Some(entry);
        if self.window.len() >= self.capacity {
            let old = self.window.pop_front().expect("the window is full, so not empty");
            self.window_start = old.revision;
        }
        self.window.push_back(CachedEvent {
            revision: ev.revision,
            object: Arc::clone(&ev.value),
            prev: ev.prev.clone(),
            deleted,
            entry,
            applied_ms: now,
        });
        self.expire(now);
        self.window.back()
    }

    /// Drops the events that have been in the window longer than its
    /// duration allows (never the newest: a watch at the cache's revision
    /// can always resume).
    pub fn expire(&mut self, now: u64) {
        let Some(max_age) = self.max_age_ms else { return };
        while self.window.len() > 1 && self.window.front().is_some_and(|e| now.saturating_sub(e.applied_ms) > max_age) {
            let old = self.window.pop_front().expect("checked above");
            self.window_start = old.revision;
        }
    }

    /// Replaces the whole state (a relist from the store); the event window
    /// restarts. `entry` is the trace entry that produced that state (none
    /// for an empty store).
    pub fn replace(
        &mut self,
        revision: u64,
        objects: impl IntoIterator<Item = (String, Arc<Object>)>,
        entry: Option<EntryId>,
    ) {
        self.objects = objects.into_iter().collect();
        self.revision = revision;
        self.revision_entry = entry;
        self.window.clear();
        self.window_start = revision;
    }

    /// The selected objects at the cache's revision, in key order (shared,
    /// not copied).
    pub fn list(&self, filter: &Filter) -> Vec<Arc<Object>> {
        let prefix = filter.prefix();
        self.objects
            .range_from(&prefix)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .filter(|(_, o)| filter.matches(o))
            .map(|(_, o)| Arc::clone(o))
            .collect()
    }

    /// One object by store key.
    pub fn get(&self, key: &str) -> Option<&Arc<Object>> {
        self.objects.get(key)
    }

    /// Every object the cache holds, in store-key order.
    pub fn objects(&self) -> impl Iterator<Item = &Object> {
        self.objects.values().map(|o| &**o)
    }

    /// Events after `revision`, or `None` if some of them have left the
    /// window (the client must relist: 410 Gone).
    pub fn events_after(&self, revision: u64) -> Option<impl Iterator<Item = &CachedEvent>> {
        if revision < self.window_start {
            return None;
        }
        Some(self.window.iter().filter(move |e| e.revision > revision))
    }

    /// The oldest revision a watch can resume from.
    pub fn oldest_resumable(&self) -> u64 {
        self.window_start
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Selection;
    use recon_store::Store;
    use serde_json::json;

    fn pod(name: &str, node: &str) -> Object {
        Object {
            api_version: "v1".into(),
            kind: "Pod".into(),
            metadata: recon_abi::ObjectMeta { name: name.into(), namespace: "default".into(), ..Default::default() },
            spec: json!({ "nodeName": node }).into(),
            ..Default::default()
        }
    }

    fn filter(fields: &str) -> Filter {
        Filter::new(&Selection { kind: "Pod".into(), field_selector: fields.into(), ..Default::default() }).unwrap()
    }

    #[test]
    fn cache_follows_the_store_one_revision_at_a_time() {
        let mut store = Store::new();
        let mut cache = WatchCache::default();
        let e1 = store.create(pod("a", "n1"), 0).unwrap();
        let e2 = store.create(pod("b", "n2"), 0).unwrap();
        assert!(cache.apply(&e2, 0).is_none(), "a gap must not be applied");
        assert!(cache.apply(&e1, 0).is_some());
        assert!(cache.apply(&e1, 0).is_none(), "a duplicate must not be applied");
        assert!(cache.apply(&e2, 1).is_some());
        assert_eq!(cache.revision, 2);
        assert_eq!(cache.list(&filter("spec.nodeName=n2")).len(), 1);
    }

    #[test]
    fn leaving_the_selection_is_seen_as_deleted() {
        let mut store = Store::new();
        let mut cache = WatchCache::default();
        let created = store.create(pod("a", "n1"), 0).unwrap();
        cache.apply(&created, 0);
        let moved = store.update(pod("a", "n2"), None, 0).unwrap();
        let ev = cache.apply(&moved, 1).unwrap().clone();
        assert_eq!(filter("spec.nodeName=n1").view(&ev).unwrap().event_type, EventType::Deleted);
        assert_eq!(filter("spec.nodeName=n2").view(&ev).unwrap().event_type, EventType::Added);
        assert!(filter("spec.nodeName=n3").view(&ev).is_none());
    }

    #[test]
    fn resuming_from_before_the_window_is_gone() {
        let mut store = Store::new();
        let mut cache = WatchCache::default();
        for i in 0..(WINDOW_CAPACITY + 5) {
            let ev = store.create(pod(&format!("p{i}"), "n1"), 0).unwrap();
            cache.apply(&ev, 0);
        }
        assert!(cache.events_after(2).is_none());
        let start = cache.oldest_resumable();
        assert_eq!(start, 5);
        assert_eq!(cache.events_after(start).unwrap().count(), WINDOW_CAPACITY);
    }
}
