//! The MVCC store: per-key version lists plus an append-only event log.

use std::collections::BTreeMap;
use std::sync::Arc;

use recon_abi::{Empty, NameMap, Object, ObjectKey, Shared};

use crate::{EventKind, KeyValue, Revision, StoreError, StoreEvent, key_for};

/// One write to a key: the value it left behind, or a tombstone.
#[derive(Clone, Debug)]
struct Version {
    /// The revision of the write.
    revision: Revision,
    /// `None` when the write was a delete.
    live: Option<Live>,
}

/// A live value and the per-incarnation counters etcd keeps beside it.
#[derive(Clone, Debug)]
struct Live {
    /// Stored with `metadata.resourceVersion` already stamped, so reads,
    /// the log and the next write's `prev` share it without touching it.
    value: Arc<Object>,
    create_revision: Revision,
    version: u64,
}

/// An etcd-like multi-version store of [`Object`]s.
///
/// Writes are totally ordered by [`Revision`]; each one appends a
/// [`StoreEvent`] to the log. Reads name a revision (or the current one) and
/// see exactly the state after that revision was applied, as long as it is
/// not below the compaction point.
///
/// Cost model: current reads and writes are `O(log keys)`; a historic read
/// binary-searches the key's version list; [`Store::range`] visits only keys
/// under its prefix; [`Store::events_since`] and [`Store::event`] index the
/// log directly; [`Store::compact`] only visits keys written in the compacted
/// span.
#[derive(Clone, Debug, Default)]
pub struct Store {
    /// The current revision: the number of successful writes.
    revision: Revision,
    /// Compaction point C: reads at `r >= C` work, events after C are kept.
    compacted: Revision,
    /// Every key with history a read at `>= compacted` may need, with its
    /// writes in revision order. Invariants: no list is empty; at most one
    /// version is at or below `compacted`, and that one is live (a tombstone
    /// there reads the same as no entry, so it is dropped).
    keys: NameMap<Vec<Version>>,
    /// `log[log_start + i]` is the event at revision `compacted + 1 + i`.
    /// Entries before `log_start` are compacted away but not yet freed: they
    /// are removed in bulk once they outnumber the kept ones, so frequent
    /// small compactions do not shift the whole log each time.
    log: Vec<StoreEvent>,
    log_start: usize,
    /// Number of live keys at the current revision.
    live: usize,
    /// The last object created of each kind, by kind
    /// ([`Store::share_with_last_created`]).
    last_created: BTreeMap<String, Arc<Object>>,
}

impl Store {
    /// An empty store at revision 0, never compacted.
    pub fn new() -> Store {
        Store::default()
    }

    /// The current revision: 0 for a new store, +1 per successful write.
    pub fn revision(&self) -> Revision {
        self.revision
    }

    /// The compaction point C (0 initially): reads at revisions `>= C` work,
    /// and events with revisions `> C` are kept.
    pub fn compacted(&self) -> Revision {
        self.compacted
    }

    /// Number of live keys at the current revision.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no key is live at the current revision.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Creates the object under the key given by [`Object::key`].
    ///
    /// Stamps `metadata.resourceVersion` with the new revision (the caller's
    /// value is ignored). Fails with [`StoreError::AlreadyExists`] if the key
    /// is live.
    pub fn create(&mut self, mut value: Object, time_ms: u64) -> Result<StoreEvent, StoreError> {
        let object = value.key();
        let key = key_for(&object);
        if self.current(&key).is_some() {
            return Err(StoreError::AlreadyExists { key: object });
        }
        let revision = self.revision + 1;
        stamp(&mut value, revision);
        let value = Arc::new(value);
        match self.last_created.get_mut(&value.kind) {
            Some(last) => *last = Arc::clone(&value),
            None => drop(self.last_created.insert(value.kind.clone(), Arc::clone(&value))),
        }
        let live = Live { value: Arc::clone(&value), create_revision: revision, version: 1 };
        Ok(self.commit(key, Some(live), None, value, time_ms))
    }

    /// The last object created of `object`'s kind and version, if any,
    /// after making `object`'s `spec` and `status`, labels, annotations
    /// and owner references the very values that one holds where they are
    /// equal. Objects created from one template (a ReplicaSet's pods) then
    /// keep one copy of these between them rather than one each; a part is
    /// copied only when a later write changes it. What anyone reads is the
    /// same either way.
    pub fn share_with_last_created(&self, object: &mut Object) -> Option<&Arc<Object>> {
        let last = self.last_created.get(&object.kind).filter(|last| last.api_version == object.api_version)?;
        share(&mut object.spec, &last.spec);
        share(&mut object.status, &last.status);
        let (meta, shared) = (&mut object.metadata, &last.metadata);
        share(&mut meta.labels, &shared.labels);
        share(&mut meta.annotations, &shared.annotations);
        share(&mut meta.owner_references, &shared.owner_references);
        Some(last)
    }

    /// Replaces the live object under the key given by [`Object::key`].
    ///
    /// With `expected_mod_revision: Some(r)` this is a compare-and-swap: it
    /// fails with [`StoreError::Conflict`] unless the key was last written at
    /// `r`. Fails with [`StoreError::NotFound`] if the key is not live. Stamps
    /// `metadata.resourceVersion` with the new revision.
    pub fn update(
        &mut self,
        mut value: Object,
        expected_mod_revision: Option<Revision>,
        time_ms: u64,
    ) -> Result<StoreEvent, StoreError> {
        let object = value.key();
        let key = key_for(&object);
        let current = self.current_checked(&object, &key, expected_mod_revision)?;
        let (create_revision, version) = (current.create_revision, current.version + 1);
        let prev = Arc::clone(&current.value);
        stamp(&mut value, self.revision + 1);
        let value = Arc::new(value);
        let live = Live { value: Arc::clone(&value), create_revision, version };
        Ok(self.commit(key, Some(live), Some(prev), value, time_ms))
    }

    /// Deletes the live object under `key`.
    ///
    /// Fails with [`StoreError::NotFound`] if the key is not live;
    /// `expected_mod_revision` works as in [`Store::update`]. The event's
    /// `value` is the last value with `metadata.resourceVersion` set to the
    /// delete's revision, as Kubernetes reports deleted objects.
    pub fn delete(
        &mut self,
        key: &ObjectKey,
        expected_mod_revision: Option<Revision>,
        time_ms: u64,
    ) -> Result<StoreEvent, StoreError> {
        let (object, key) = (key, key_for(key));
        let prev = Arc::clone(&self.current_checked(object, &key, expected_mod_revision)?.value);
        // Kubernetes shows a deleted object at the delete's revision, so a
        // watcher's resourceVersion keeps moving forward: the one copy a
        // write makes that is not the value it stores.
        let mut event_value = Object::clone(&prev);
        stamp(&mut event_value, self.revision + 1);
        Ok(self.commit(key, None, Some(prev), Arc::new(event_value), time_ms))
    }

    /// The object under `key` at revision `at` (`None`: the current
    /// revision), or `Ok(None)` if it was not live then.
    ///
    /// Fails with [`StoreError::Compacted`] below the compaction point and
    /// [`StoreError::FutureRevision`] above the current revision.
    pub fn get(&self, key: &ObjectKey, at: Option<Revision>) -> Result<Option<KeyValue>, StoreError> {
        self.get_by_key(&key_for(key), at)
    }

    /// [`Store::get`] by storage key (as in [`StoreEvent::key`]) rather than
    /// by object key.
    pub fn get_by_key(&self, key: &str, at: Option<Revision>) -> Result<Option<KeyValue>, StoreError> {
        let at = self.readable(at)?;
        Ok(self.keys.get(key).and_then(|versions| key_value(key, as_of(versions, at)?)))
    }

    /// All keys under `prefix` that were live at revision `at` (`None`: the
    /// current revision), sorted by key. Errors as for [`Store::get`].
    ///
    /// Use [`prefix_for`](crate::prefix_for) to list a kind, or a kind in one
    /// namespace.
    pub fn range(&self, prefix: &str, at: Option<Revision>) -> Result<Vec<KeyValue>, StoreError> {
        let at = self.readable(at)?;
        Ok(self
            .keys
            .range_from(prefix)
            .take_while(|(key, _)| key.starts_with(prefix))
            .filter_map(|(key, versions)| key_value(key, as_of(versions, at)?))
            .collect())
    }

    /// The events with revisions greater than `after`, oldest first: what a
    /// watch from revision `after` has not yet seen. Empty when `after` is the
    /// current revision.
    ///
    /// Fails with [`StoreError::Compacted`] if `after` is below the compaction
    /// point (events the watcher needs are gone) and with
    /// [`StoreError::FutureRevision`] if it is above the current revision.
    pub fn events_since(&self, after: Revision) -> Result<&[StoreEvent], StoreError> {
        self.readable(Some(after))?;
        Ok(&self.log[self.log_index(after + 1)..])
    }

    /// The event written at `revision`, unless it has been compacted away or
    /// not written yet.
    pub fn event(&self, revision: Revision) -> Option<&StoreEvent> {
        if revision <= self.compacted || revision > self.revision {
            return None;
        }
        self.log.get(self.log_index(revision))
    }

    /// Moves the compaction point to `revision`, capped at the current
    /// revision, and drops the history no read at or above it can need.
    ///
    /// Compacting to a revision at or below the current compaction point does
    /// nothing: history once dropped cannot come back.
    pub fn compact(&mut self, revision: Revision) {
        let target = revision.min(self.revision);
        if target <= self.compacted {
            return;
        }
        let start = self.log_start;
        let end = self.log_index(target + 1);
        // Only keys written in the compacted span can have gained versions
        // that are now unneeded: every other key already satisfies the
        // invariant on `keys` for the old point, hence for the new one.
        for event in &self.log[start..end] {
            prune(&mut self.keys, &event.key, target);
        }
        self.compacted = target;
        self.log_start = end;
        if self.log_start >= self.log.len() - self.log_start {
            self.log.drain(..self.log_start);
            self.log_start = 0;
        }
    }

    /// The live value under `key` now, with its mod revision.
    fn current(&self, key: &str) -> Option<(Revision, &Live)> {
        let last = self.keys.get(key)?.last()?;
        Some((last.revision, last.live.as_ref()?))
    }

    /// [`Store::current`], failing as a write on `object` (whose storage
    /// key is `key`) with that expectation would.
    fn current_checked(&self, object: &ObjectKey, key: &str, expected: Option<Revision>) -> Result<&Live, StoreError> {
        let Some((actual, live)) = self.current(key) else {
            return Err(StoreError::NotFound { key: object.clone() });
        };
        match expected {
            Some(expected) if expected != actual => Err(StoreError::Conflict { key: object.clone(), expected, actual }),
            _ => Ok(live),
        }
    }

    /// Resolves a read revision, refusing ones whose state is unknown.
    fn readable(&self, at: Option<Revision>) -> Result<Revision, StoreError> {
        match at {
            None => Ok(self.revision),
            Some(r) if r < self.compacted => Err(StoreError::Compacted { requested: r, compacted: self.compacted }),
            Some(r) if r > self.revision => Err(StoreError::FutureRevision { requested: r, current: self.revision }),
            Some(r) => Ok(r),
        }
    }

    /// Position in `log` of the event at `revision`, for
    /// `compacted < revision <= self.revision + 1` (the upper end is one past
    /// the last event).
    fn log_index(&self, revision: Revision) -> usize {
        // The difference is bounded by the log's length, so it fits a usize
        // on every target, wasm32 included.
        self.log_start + (revision - self.compacted - 1) as usize
    }

    /// Applies a validated write: `new` is the value to put, or `None` to
    /// delete; `prev` is the value it replaces; `value` is what the event
    /// reports.
    fn commit(
        &mut self,
        key: String,
        new: Option<Live>,
        prev: Option<Arc<Object>>,
        value: Arc<Object>,
        time_ms: u64,
    ) -> StoreEvent {
        self.revision += 1;
        let revision = self.revision;
        let kind = if new.is_some() { EventKind::Put } else { EventKind::Delete };
        match (new.is_some(), prev.is_some()) {
            (true, false) => self.live += 1,
            (false, true) => self.live -= 1,
            _ => {}
        }
        self.keys.get_or_insert_with(&key, Vec::new).push(Version { revision, live: new });
        let event = StoreEvent { revision, key, kind, value, prev, time_ms };
        self.log.push(event.clone());
        event
    }
}

/// Makes `part` the very value `shared` holds, if they are equal (the
/// comparison is a pointer's when they are already one).
fn share<T: Empty + PartialEq>(part: &mut Shared<T>, shared: &Shared<T>) {
    if !part.is_empty() && *part == *shared {
        *part = shared.clone();
    }
}

/// Sets the object's resourceVersion to `revision`, as the API server does.
fn stamp(value: &mut Object, revision: Revision) {
    value.metadata.resource_version = revision.to_string();
}

/// The newest version written at or before `at`.
fn as_of(versions: &[Version], at: Revision) -> Option<&Version> {
    let written = versions.partition_point(|v| v.revision <= at);
    versions[..written].last()
}

/// The read result for `key` at `version`, if it left the key live.
fn key_value(key: &str, version: &Version) -> Option<KeyValue> {
    let live = version.live.as_ref()?;
    Some(KeyValue {
        key: key.to_owned(),
        value: Arc::clone(&live.value),
        create_revision: live.create_revision,
        mod_revision: version.revision,
        version: live.version,
    })
}

/// Drops the versions of `key` that no read at or above `compacted` needs.
fn prune(keys: &mut NameMap<Vec<Version>>, key: &str, compacted: Revision) {
    let Some(versions) = keys.get_mut(key) else {
        return;
    };
    let written = versions.partition_point(|v| v.revision <= compacted);
    // A read at `compacted` needs the newest version at or below it, unless
    // that is a tombstone: an absent key reads the same as a deleted one.
    let keep_from = match written.checked_sub(1) {
        Some(newest) if versions[newest].live.is_some() => newest,
        _ => written,
    };
    versions.drain(..keep_from);
    if versions.is_empty() {
        keys.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prefix_for;

    fn pod(namespace: &str, name: &str, n: i64) -> Object {
        let mut pod = Object { api_version: "v1".into(), kind: "Pod".into(), ..Object::default() };
        pod.metadata.namespace = namespace.into();
        pod.metadata.name = name.into();
        pod.metadata.labels = [("app".to_owned(), "web".to_owned())].into();
        pod.spec = serde_json::json!({ "n": n }).into();
        pod
    }

    fn key(namespace: &str, name: &str) -> ObjectKey {
        ObjectKey::new("Pod", namespace, name)
    }

    fn spec_n(kv: &KeyValue) -> i64 {
        kv.value.spec["n"].as_i64().unwrap()
    }

    #[test]
    fn a_created_object_shares_the_parts_it_has_in_common_with_the_last_of_its_kind() {
        let mut store = Store::new();
        let mut first = pod("a", "x", 1);
        assert!(store.share_with_last_created(&mut first).is_none(), "nothing created yet");
        let stored = store.create(first, 0).unwrap().value;
        // Equal spec: the very value the last one holds.
        let mut same = pod("a", "y", 1);
        let last = store.share_with_last_created(&mut same).expect("a Pod was created");
        assert!(Arc::ptr_eq(last, &stored));
        assert!(same.spec.ptr_eq(&stored.spec));
        assert!(same.metadata.labels.ptr_eq(&stored.metadata.labels), "so do equal labels");
        assert!(same.status.is_null());
        // A different spec is kept as it is; so is another kind's or version's.
        let mut other = pod("a", "z", 2);
        store.share_with_last_created(&mut other);
        assert!(!other.spec.ptr_eq(&stored.spec));
        let mut map = Object { kind: "ConfigMap".into(), ..pod("a", "m", 1) };
        assert!(store.share_with_last_created(&mut map).is_none());
        let mut older = Object { api_version: "v2".into(), ..pod("a", "w", 1) };
        assert!(store.share_with_last_created(&mut older).is_none());
        assert!(!older.spec.ptr_eq(&stored.spec));
        // The last one is the newest create, whatever became of it since.
        store.create(other, 1).unwrap();
        store.delete(&key("a", "z"), None, 2).unwrap();
        let mut again = pod("a", "v", 2);
        assert_eq!(store.share_with_last_created(&mut again).map(|p| p.metadata.name.as_str()), Some("z"));
        assert_eq!(again.spec["n"], 2);
    }

    #[test]
    fn new_store_is_empty_at_revision_zero() {
        let store = Store::new();
        assert_eq!((store.revision(), store.compacted(), store.len()), (0, 0, 0));
        assert!(store.is_empty());
        assert_eq!(store.get(&key("a", "x"), None), Ok(None));
        assert_eq!(store.get(&key("a", "x"), Some(0)), Ok(None));
        assert_eq!(store.events_since(0), Ok(&[][..]));
        assert_eq!(store.event(0), None);
    }

    #[test]
    fn every_write_advances_the_revision_by_one_and_stamps_it() {
        let mut store = Store::new();
        let created = store.create(pod("a", "x", 1), 5).unwrap();
        let updated = store.update(pod("a", "x", 2), None, 6).unwrap();
        let deleted = store.delete(&key("a", "x"), None, 7).unwrap();
        assert_eq!((created.revision, updated.revision, deleted.revision), (1, 2, 3));
        assert_eq!(created.value.metadata.resource_version, "1");
        assert_eq!(updated.value.metadata.resource_version, "2");
        assert_eq!((created.kind, updated.kind, deleted.kind), (EventKind::Put, EventKind::Put, EventKind::Delete));
        assert_eq!((created.time_ms, deleted.time_ms), (5, 7));
        assert_eq!(store.revision(), 3);
    }

    #[test]
    fn create_of_a_live_key_already_exists_and_changes_nothing() {
        let mut store = Store::new();
        store.create(pod("a", "x", 1), 0).unwrap();
        let err = store.create(pod("a", "x", 2), 0).unwrap_err();
        assert_eq!(err, StoreError::AlreadyExists { key: key("a", "x") });
        assert_eq!(store.revision(), 1);
        assert_eq!(spec_n(&store.get(&key("a", "x"), None).unwrap().unwrap()), 1);
    }

    #[test]
    fn writes_to_a_missing_key_are_not_found() {
        let mut store = Store::new();
        let not_found = StoreError::NotFound { key: key("a", "x") };
        assert_eq!(store.update(pod("a", "x", 1), None, 0), Err(not_found.clone()));
        assert_eq!(store.update(pod("a", "x", 1), Some(0), 0), Err(not_found.clone()));
        assert_eq!(store.delete(&key("a", "x"), None, 0), Err(not_found.clone()));
        store.create(pod("a", "x", 1), 0).unwrap();
        store.delete(&key("a", "x"), None, 0).unwrap();
        assert_eq!(store.delete(&key("a", "x"), None, 0), Err(not_found));
        assert_eq!(store.revision(), 2);
    }

    #[test]
    fn update_with_stale_mod_revision_is_a_conflict() {
        let mut store = Store::new();
        store.create(pod("a", "x", 1), 0).unwrap();
        store.update(pod("a", "x", 2), Some(1), 0).unwrap();
        let err = store.update(pod("a", "x", 3), Some(1), 0).unwrap_err();
        assert_eq!(err, StoreError::Conflict { key: key("a", "x"), expected: 1, actual: 2 });
        assert_eq!(store.revision(), 2);
        assert_eq!(spec_n(&store.get(&key("a", "x"), None).unwrap().unwrap()), 2);
    }

    #[test]
    fn update_with_current_mod_revision_succeeds() {
        let mut store = Store::new();
        store.create(pod("a", "y", 0), 0).unwrap();
        store.create(pod("a", "x", 1), 0).unwrap();
        // The key's own mod revision counts, not the store's revision.
        store.create(pod("a", "z", 0), 0).unwrap();
        let event = store.update(pod("a", "x", 2), Some(2), 0).unwrap();
        assert_eq!(event.revision, 4);
    }

    #[test]
    fn delete_with_stale_mod_revision_is_a_conflict() {
        let mut store = Store::new();
        store.create(pod("a", "x", 1), 0).unwrap();
        store.update(pod("a", "x", 2), None, 0).unwrap();
        let err = store.delete(&key("a", "x"), Some(1), 0).unwrap_err();
        assert_eq!(err, StoreError::Conflict { key: key("a", "x"), expected: 1, actual: 2 });
        assert_eq!(store.len(), 1);
        assert!(store.delete(&key("a", "x"), Some(2), 0).is_ok());
        assert!(store.is_empty());
    }

    #[test]
    fn update_keeps_create_revision_and_counts_versions() {
        let mut store = Store::new();
        store.create(pod("a", "x", 1), 0).unwrap();
        store.update(pod("a", "x", 2), None, 0).unwrap();
        store.update(pod("a", "x", 3), None, 0).unwrap();
        let kv = store.get(&key("a", "x"), None).unwrap().unwrap();
        assert_eq!((kv.create_revision, kv.mod_revision, kv.version), (1, 3, 3));
        assert_eq!(kv.value.metadata.resource_version, "3");
        assert_eq!(kv.key, "/registry/Pod/a/x");
    }

    #[test]
    fn recreate_after_delete_resets_create_revision_and_version() {
        let mut store = Store::new();
        store.create(pod("a", "x", 1), 0).unwrap();
        store.update(pod("a", "x", 2), None, 0).unwrap();
        store.delete(&key("a", "x"), None, 0).unwrap();
        let event = store.create(pod("a", "x", 3), 0).unwrap();
        assert_eq!(event.prev, None);
        let kv = store.get(&key("a", "x"), None).unwrap().unwrap();
        assert_eq!((kv.create_revision, kv.mod_revision, kv.version), (4, 4, 1));
    }

    #[test]
    fn put_events_carry_the_previous_value() {
        let mut store = Store::new();
        store.create(pod("a", "x", 1), 0).unwrap();
        let event = store.update(pod("a", "x", 2), None, 0).unwrap();
        let prev = event.prev.unwrap();
        assert_eq!(prev.spec["n"], 1);
        assert_eq!(prev.metadata.resource_version, "1");
    }

    #[test]
    fn delete_event_carries_delete_revision() {
        let mut store = Store::new();
        store.create(pod("a", "x", 1), 0).unwrap();
        store.update(pod("a", "x", 2), None, 0).unwrap();
        let event = store.delete(&key("a", "x"), None, 9).unwrap();
        assert_eq!(event.revision, 3);
        assert_eq!(event.value.metadata.resource_version, "3");
        assert_eq!(event.value.spec["n"], 2);
        assert_eq!(event.prev.as_ref().unwrap().metadata.resource_version, "2");
        assert_eq!(store.event(3), Some(&event));
    }

    /// Issue 17: one write, one copy. The event, the history, reads and the
    /// next write's `prev` all hold the very value the store keeps.
    #[test]
    fn a_written_value_is_shared_by_its_event_reads_and_the_next_writes_prev() {
        let mut store = Store::new();
        let created = store.create(pod("a", "x", 1), 0).unwrap();
        let read = store.get(&key("a", "x"), None).unwrap().unwrap();
        assert!(Arc::ptr_eq(&created.value, &read.value));
        assert!(Arc::ptr_eq(&created.value, &store.event(1).unwrap().value));
        assert!(Arc::ptr_eq(&created.value, &store.range("", Some(1)).unwrap()[0].value));
        let updated = store.update(pod("a", "x", 2), None, 0).unwrap();
        assert!(Arc::ptr_eq(&created.value, updated.prev.as_ref().unwrap()));
        let deleted = store.delete(&key("a", "x"), None, 0).unwrap();
        assert!(Arc::ptr_eq(&updated.value, deleted.prev.as_ref().unwrap()));
        assert_eq!(deleted.value.metadata.resource_version, "3", "a delete's value is restamped, so its own copy");
        assert_eq!(updated.value.metadata.resource_version, "2", "which leaves the stored value untouched");
    }

    #[test]
    fn historic_get_returns_the_value_as_of_that_revision() {
        let mut store = Store::new();
        store.create(pod("a", "y", 0), 0).unwrap(); // 1
        store.create(pod("a", "x", 1), 0).unwrap(); // 2
        store.update(pod("a", "x", 2), None, 0).unwrap(); // 3
        store.delete(&key("a", "x"), None, 0).unwrap(); // 4
        store.create(pod("a", "x", 5), 0).unwrap(); // 5
        let at = |r| store.get(&key("a", "x"), Some(r)).unwrap().map(|kv| (spec_n(&kv), kv.mod_revision));
        assert_eq!(at(1), None);
        assert_eq!(at(2), Some((1, 2)));
        assert_eq!(at(3), Some((2, 3)));
        assert_eq!(at(4), None);
        assert_eq!(at(5), Some((5, 5)));
    }

    #[test]
    fn historic_range_returns_the_exact_state_sorted_by_key() {
        let mut store = Store::new();
        store.create(pod("b", "x", 1), 0).unwrap(); // 1
        store.create(pod("a", "y", 2), 0).unwrap(); // 2
        store.create(pod("a", "x", 3), 0).unwrap(); // 3
        store.delete(&key("a", "y"), None, 0).unwrap(); // 4
        store.update(pod("b", "x", 4), None, 0).unwrap(); // 5
        let names = |prefix: &str, at| -> Vec<(String, i64)> {
            let kvs = store.range(prefix, at).unwrap();
            kvs.iter()
                .map(|kv| (kv.value.metadata.name.clone() + "@" + &kv.value.metadata.namespace, spec_n(kv)))
                .collect()
        };
        let all = prefix_for("Pod", "");
        assert_eq!(names(&all, Some(0)), vec![]);
        assert_eq!(names(&all, Some(3)), vec![("x@a".into(), 3), ("y@a".into(), 2), ("x@b".into(), 1)]);
        assert_eq!(names(&all, Some(4)), vec![("x@a".into(), 3), ("x@b".into(), 1)]);
        assert_eq!(names(&all, None), vec![("x@a".into(), 3), ("x@b".into(), 4)]);
        assert_eq!(names(&prefix_for("Pod", "b"), Some(3)), vec![("x@b".into(), 1)]);
    }

    #[test]
    fn range_lists_only_keys_under_the_prefix() {
        let mut store = Store::new();
        store.create(pod("a", "x", 1), 0).unwrap();
        store.create(pod("ab", "x", 2), 0).unwrap();
        let mut template = pod("a", "x", 3);
        template.kind = "PodTemplate".into();
        store.create(template, 0).unwrap();
        let keys =
            |prefix: &str| -> Vec<String> { store.range(prefix, None).unwrap().into_iter().map(|kv| kv.key).collect() };
        assert_eq!(keys(&prefix_for("Pod", "a")), vec!["/registry/Pod/a/x"]);
        assert_eq!(keys(&prefix_for("Pod", "")), vec!["/registry/Pod/a/x", "/registry/Pod/ab/x"]);
        assert_eq!(keys("/registry/Pod").len(), 3);
        assert_eq!(keys("").len(), 3);
        assert_eq!(keys("/registry/Q"), Vec::<String>::new());
    }

    #[test]
    fn read_below_compaction_point_is_gone() {
        let mut store = Store::new();
        for n in 0..5 {
            store.create(pod("a", &format!("p{n}"), n), 0).unwrap();
        }
        store.compact(3);
        assert_eq!(store.compacted(), 3);
        let gone = StoreError::Compacted { requested: 2, compacted: 3 };
        assert_eq!(store.get(&key("a", "p0"), Some(2)), Err(gone.clone()));
        assert_eq!(store.range("", Some(2)), Err(gone.clone()));
        assert_eq!(store.events_since(2), Err(gone));
        assert_eq!(store.event(3), None);
        assert_eq!(store.event(4).map(|e| e.revision), Some(4));
    }

    #[test]
    fn read_above_current_revision_is_in_the_future() {
        let mut store = Store::new();
        store.create(pod("a", "x", 1), 0).unwrap();
        let future = StoreError::FutureRevision { requested: 2, current: 1 };
        assert_eq!(store.get(&key("a", "x"), Some(2)), Err(future.clone()));
        assert_eq!(store.range("", Some(2)), Err(future.clone()));
        assert_eq!(store.events_since(2), Err(future));
        assert_eq!(store.event(2), None);
    }

    #[test]
    fn reads_at_the_compaction_point_stay_exact() {
        let mut store = Store::new();
        store.create(pod("a", "x", 1), 0).unwrap(); // 1
        store.create(pod("a", "y", 2), 0).unwrap(); // 2
        store.update(pod("a", "x", 3), None, 0).unwrap(); // 3
        store.delete(&key("a", "y"), None, 0).unwrap(); // 4
        store.update(pod("a", "x", 5), None, 0).unwrap(); // 5
        store.compact(4);
        let x = store.get(&key("a", "x"), Some(4)).unwrap().unwrap();
        assert_eq!((spec_n(&x), x.create_revision, x.mod_revision, x.version), (3, 1, 3, 2));
        assert_eq!(store.get(&key("a", "y"), Some(4)), Ok(None));
        assert_eq!(store.range("", Some(4)).unwrap().len(), 1);
        assert_eq!(spec_n(&store.get(&key("a", "x"), None).unwrap().unwrap()), 5);
    }

    #[test]
    fn compaction_forgets_deleted_keys() {
        let mut store = Store::new();
        store.create(pod("a", "x", 1), 0).unwrap();
        store.create(pod("a", "y", 1), 0).unwrap();
        store.delete(&key("a", "x"), None, 0).unwrap();
        store.compact(2);
        assert_eq!(store.keys.len(), 2, "reads at 2 still need the deleted key");
        store.compact(3);
        assert_eq!(store.keys.len(), 1);
        assert_eq!(store.keys["/registry/Pod/a/y"].len(), 1);
    }

    #[test]
    fn compacting_backwards_is_a_no_op_and_forwards_stops_at_current() {
        let mut store = Store::new();
        for n in 0..4 {
            store.create(pod("a", &format!("p{n}"), n), 0).unwrap();
        }
        store.compact(2);
        store.compact(1);
        assert_eq!(store.compacted(), 2);
        store.compact(100);
        assert_eq!(store.compacted(), 4);
        assert_eq!(store.events_since(4), Ok(&[][..]));
        assert_eq!(store.range("", Some(4)).unwrap().len(), 4);
        let event = store.create(pod("a", "q", 0), 0).unwrap();
        assert_eq!(store.events_since(4), Ok(&[event][..]));
    }

    #[test]
    fn events_since_returns_exactly_the_later_events() {
        let mut store = Store::new();
        for n in 0..6 {
            store.create(pod("a", &format!("p{n}"), n), n as u64).unwrap();
        }
        let revisions =
            |store: &Store, after| store.events_since(after).unwrap().iter().map(|e| e.revision).collect::<Vec<_>>();
        assert_eq!(revisions(&store, 0), vec![1, 2, 3, 4, 5, 6]);
        assert_eq!(revisions(&store, 4), vec![5, 6]);
        assert_eq!(revisions(&store, 6), Vec::<u64>::new());
        store.compact(3);
        assert_eq!(revisions(&store, 3), vec![4, 5, 6]);
        assert_eq!(revisions(&store, 5), vec![6]);
    }

    #[test]
    fn many_small_compactions_keep_the_log_aligned() {
        // Exercises the deferred freeing of compacted log entries.
        let mut store = Store::new();
        store.create(pod("a", "x", 0), 0).unwrap();
        for n in 1..200 {
            store.update(pod("a", "x", n), Some(store.revision()), 0).unwrap();
            store.compact(store.revision().saturating_sub(3));
            let kept: Vec<_> = store.events_since(store.compacted()).unwrap().iter().map(|e| e.revision).collect();
            assert_eq!(kept, ((store.compacted() + 1)..=store.revision()).collect::<Vec<_>>());
            assert_eq!(store.event(store.revision()).unwrap().value.spec["n"], n);
            assert!(store.log.len() <= 2 * kept.len() + 2, "compacted events must eventually be freed");
        }
        let history = &store.keys["/registry/Pod/a/x"];
        assert_eq!(history.len(), 4, "one version at the compaction point and three after it");
    }

    #[test]
    fn cluster_scoped_objects_are_stored_without_namespace() {
        let mut store = Store::new();
        let mut node = Object { api_version: "v1".into(), kind: "Node".into(), ..Object::default() };
        node.metadata.name = "n1".into();
        let event = store.create(node, 0).unwrap();
        assert_eq!(event.key, "/registry/Node/n1");
        assert!(store.get(&ObjectKey::new("Node", "", "n1"), None).unwrap().is_some());
        assert!(store.get_by_key("/registry/Node/n1", Some(1)).unwrap().is_some());
    }

    #[test]
    fn errors_read_as_plain_words() {
        let err = StoreError::Compacted { requested: 2, compacted: 5 };
        assert_eq!(err.to_string(), "revision 2 has been compacted; the oldest revision still available is 5");
    }
}
