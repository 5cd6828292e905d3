//! The informer cache: what a controller knows about the cluster.

use std::sync::Arc;

use recon_abi::{EventType, InputEvent, NamespacedMap, Object, ObjectKey, WatchSpec};

/// Objects per watch, as delivered by the host, keyed and iterated in key order.
///
/// A watch is of one kind: an object of another kind delivered to it is not
/// the watch's and is left out (the host never sends one).
///
/// The cache is the controller's only view of the cluster: it may be stale,
/// and it is exactly as stale as the lists and watch events the host chose to
/// deliver. Change it only through [`Cache::apply`].
#[derive(Clone, Debug, Default)]
pub struct Cache {
    watches: Vec<WatchState>,
}

#[derive(Clone, Debug, Default)]
struct WatchState {
    kind: String,
    synced: bool,
    resource_version: String,
    /// Shared with the input that brought them: linked natively, the very
    /// versions the simulator holds. By namespace and name: the kind is the
    /// watch's.
    objects: NamespacedMap<Arc<Object>>,
}

impl WatchState {
    fn get(&self, key: &ObjectKey) -> Option<&Arc<Object>> {
        if key.kind != self.kind {
            return None;
        }
        self.objects.get(&key.namespace, &key.name)
    }
}

/// One object that [`Cache::apply`] added, changed or removed.
///
/// The new state is in the cache (`cache.get(change.watch, &change.key)`,
/// `None` after a deletion); the old state is handed over here, because the
/// cache no longer has it and a controller often needs it (e.g. the owner a
/// pod had before it was deleted).
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    /// The watch (index into the manifest's `watches`) the object belongs to.
    pub watch: usize,
    /// The object's key.
    pub key: ObjectKey,
    /// The object before the change; `None` if it is new.
    pub old: Option<Arc<Object>>,
}

/// Whether two versions are the same: one shared version, or equal ones.
fn same(a: &Arc<Object>, b: &Arc<Object>) -> bool {
    Arc::ptr_eq(a, b) || a == b
}

impl Cache {
    /// An empty cache for the watches of a manifest, in manifest order.
    pub fn new(watches: &[WatchSpec]) -> Cache {
        let watches =
            watches.iter().map(|spec| WatchState { kind: spec.kind.clone(), ..WatchState::default() }).collect();
        Cache { watches }
    }

    /// Applies one input event and returns what changed, in key order.
    ///
    /// - `Listed` replaces everything known for that watch: objects missing
    ///   from the list are gone (reported with their old state), objects equal
    ///   to what was cached are not reported.
    /// - `Watch` ADDED and MODIFIED store the object, DELETED removes it;
    ///   BOOKMARK only advances the watch's last-seen resourceVersion.
    /// - Results and timers do not touch the cache and return nothing.
    ///
    /// Events for a watch index the manifest did not declare are ignored.
    pub fn apply(&mut self, event: &InputEvent) -> Vec<Change> {
        match event {
            InputEvent::Listed { watch, resource_version, objects } => self.replace(*watch, resource_version, objects),
            InputEvent::Watch { watch, event } => {
                self.watch_event(*watch, event.event_type, &event.object).into_iter().collect()
            }
            InputEvent::Result(_) | InputEvent::Timer { .. } => Vec::new(),
        }
    }

    fn replace(&mut self, watch: usize, resource_version: &str, objects: &[Arc<Object>]) -> Vec<Change> {
        let Some(state) = self.watches.get_mut(watch) else {
            return Vec::new();
        };
        state.synced = true;
        state.resource_version = resource_version.to_string();
        let mut old = std::mem::take(&mut state.objects);
        let mut changes = Vec::new();
        for object in objects.iter().filter(|o| o.kind == state.kind) {
            let (namespace, name) = (&object.metadata.namespace, &object.metadata.name);
            let previous = old.remove(namespace, name);
            if !previous.as_ref().is_some_and(|p| same(p, object)) {
                changes.push(Change { watch, key: object.key(), old: previous });
            }
            state.objects.insert(namespace, name, Arc::clone(object));
        }
        let kind = &state.kind;
        changes.extend(old.into_iter_owned().map(|(namespace, name, object)| Change {
            watch,
            key: ObjectKey { kind: kind.clone(), namespace, name },
            old: Some(object),
        }));
        changes.sort_by(|a, b| a.key.cmp(&b.key));
        changes
    }

    fn watch_event(&mut self, watch: usize, event_type: EventType, object: &Arc<Object>) -> Option<Change> {
        let state = self.watches.get_mut(watch)?;
        if !object.metadata.resource_version.is_empty() {
            state.resource_version = object.metadata.resource_version.clone();
        }
        if event_type == EventType::Bookmark || object.kind != state.kind {
            return None;
        }
        let (namespace, name) = (&object.metadata.namespace, &object.metadata.name);
        let old = match event_type {
            EventType::Added | EventType::Modified => {
                let old = state.objects.insert(namespace, name, Arc::clone(object));
                if old.as_ref().is_some_and(|o| same(o, object)) {
                    return None;
                }
                old
            }
            _ => Some(state.objects.remove(namespace, name)?),
        };
        Some(Change { watch, key: object.key(), old })
    }

    /// The object with `key` in `watch`.
    pub fn get(&self, watch: usize, key: &ObjectKey) -> Option<&Object> {
        self.watches.get(watch)?.get(key).map(|o| &**o)
    }

    /// The object with `key` in any watch of its kind (the first that has it).
    pub fn find(&self, key: &ObjectKey) -> Option<&Object> {
        self.watches.iter().find_map(|w| w.get(key)).map(|o| &**o)
    }

    /// The objects of `watch`, in key order.
    pub fn list(&self, watch: usize) -> impl Iterator<Item = &Object> {
        self.watches.get(watch).into_iter().flat_map(|w| w.objects.values().map(|o| &**o))
    }

    /// The objects of every watch of `kind`, watch by watch, each in key order.
    /// Overlapping watches of one kind yield an object once per watch.
    pub fn by_kind<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Object> + 'a {
        self.watches.iter().filter(move |w| w.kind == kind).flat_map(|w| w.objects.values().map(|o| &**o))
    }

    /// How many objects `watch` holds.
    pub fn len(&self, watch: usize) -> usize {
        self.watches.get(watch).map_or(0, |w| w.objects.len())
    }

    /// Whether `watch` holds no objects.
    pub fn is_empty(&self, watch: usize) -> bool {
        self.len(watch) == 0
    }

    /// The kind `watch` is for.
    pub fn kind(&self, watch: usize) -> Option<&str> {
        self.watches.get(watch).map(|w| w.kind.as_str())
    }

    /// How many watches the cache was built for.
    pub fn watch_count(&self) -> usize {
        self.watches.len()
    }

    /// Whether `watch` has received its first list. Before that, an empty
    /// cache means "not known yet", not "nothing exists".
    pub fn is_synced(&self, watch: usize) -> bool {
        self.watches.get(watch).is_some_and(|w| w.synced)
    }

    /// Whether every watch has received its first list: the point where
    /// client-go's `WaitForCacheSync` returns and a controller may act.
    pub fn all_synced(&self) -> bool {
        self.watches.iter().all(|w| w.synced)
    }

    /// The last resourceVersion `watch` has seen (list, event or bookmark).
    pub fn resource_version(&self, watch: usize) -> &str {
        self.watches.get(watch).map_or("", |w| w.resource_version.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{added, bookmark, deleted, listed, modified, pod};

    fn pods_cache() -> Cache {
        Cache::new(&[WatchSpec { kind: "Pod".into(), ..WatchSpec::default() }])
    }

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new("Pod", "default", name)
    }

    #[test]
    fn listed_replaces_the_watch_and_reports_deletions_with_their_old_state() {
        let mut cache = pods_cache();
        cache.apply(&listed(0, "5", vec![pod("default", "a", "uid-a", "3"), pod("default", "b", "uid-b", "4")]));

        let changes =
            cache.apply(&listed(0, "9", vec![pod("default", "b", "uid-b", "4"), pod("default", "c", "uid-c", "8")]));

        let summary: Vec<(&str, Option<&str>)> =
            changes.iter().map(|c| (c.key.name.as_str(), c.old.as_ref().map(|o| o.metadata.uid.as_str()))).collect();
        // `b` is unchanged, so it is not reported; `a` is gone and comes back with its old state.
        assert_eq!(summary, vec![("a", Some("uid-a")), ("c", None)]);
        assert!(cache.get(0, &key("a")).is_none());
        let names: Vec<&str> = cache.list(0).map(|o| o.metadata.name.as_str()).collect();
        assert_eq!(names, vec!["b", "c"]);
        assert_eq!(cache.resource_version(0), "9");
    }

    #[test]
    fn listed_reports_a_recreated_object_with_the_incarnation_it_replaced() {
        let mut cache = pods_cache();
        cache.apply(&listed(0, "5", vec![pod("default", "web-0", "uid-1", "5")]));
        let changes = cache.apply(&listed(0, "9", vec![pod("default", "web-0", "uid-2", "9")]));
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].old.as_ref().unwrap().metadata.uid, "uid-1");
        assert_eq!(cache.get(0, &key("web-0")).unwrap().metadata.uid, "uid-2");
    }

    #[test]
    fn watch_events_add_modify_and_delete_and_identical_updates_are_not_changes() {
        let mut cache = pods_cache();
        cache.apply(&listed(0, "1", vec![]));
        assert_eq!(cache.apply(&added(0, pod("default", "a", "u", "2"))).len(), 1);
        assert!(cache.apply(&modified(0, pod("default", "a", "u", "2"))).is_empty());
        let changed = cache.apply(&modified(0, pod("default", "a", "u", "3")));
        assert_eq!(changed[0].old.as_ref().unwrap().metadata.resource_version, "2");
        let gone = cache.apply(&deleted(0, pod("default", "a", "u", "4")));
        assert_eq!(gone[0].old.as_ref().unwrap().metadata.resource_version, "3");
        assert!(cache.is_empty(0));
        assert!(cache.apply(&deleted(0, pod("default", "a", "u", "5"))).is_empty());
        assert_eq!(cache.resource_version(0), "5");
    }

    #[test]
    fn bookmark_only_advances_the_resource_version() {
        let mut cache = pods_cache();
        cache.apply(&listed(0, "1", vec![pod("default", "a", "u", "1")]));
        assert!(cache.apply(&bookmark(0, "7")).is_empty());
        assert_eq!(cache.resource_version(0), "7");
        assert_eq!(cache.len(0), 1);
    }

    #[test]
    fn a_watch_is_synced_only_after_its_first_list() {
        let mut cache = Cache::new(&[
            WatchSpec { kind: "Pod".into(), ..WatchSpec::default() },
            WatchSpec { kind: "Node".into(), ..WatchSpec::default() },
        ]);
        cache.apply(&added(0, pod("default", "a", "u", "2")));
        assert!(!cache.is_synced(0));
        cache.apply(&listed(0, "2", vec![]));
        assert!(cache.is_synced(0) && !cache.all_synced());
        cache.apply(&listed(1, "2", vec![]));
        assert!(cache.all_synced());
    }

    #[test]
    fn an_object_of_another_kind_is_not_the_watchs() {
        let mut cache = pods_cache();
        let mut node = pod("", "n-1", "u", "3");
        node.kind = "Node".into();
        assert!(cache.apply(&listed(0, "3", vec![node.clone()])).is_empty());
        assert!(cache.apply(&added(0, node)).is_empty());
        assert!(cache.is_empty(0) && cache.get(0, &ObjectKey::new("Node", "", "n-1")).is_none());
        assert_eq!(cache.resource_version(0), "3", "the version still moves, as for any event of the watch");
    }

    #[test]
    fn events_for_undeclared_watches_are_ignored() {
        let mut cache = pods_cache();
        assert!(cache.apply(&listed(3, "1", vec![pod("default", "a", "u", "1")])).is_empty());
        assert!(cache.apply(&added(3, pod("default", "a", "u", "1"))).is_empty());
        assert_eq!(cache.watch_count(), 1);
        assert!(cache.find(&key("a")).is_none());
    }
}
