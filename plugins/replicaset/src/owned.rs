//! Pods by their controlling owner: an index kept beside the pod store, so
//! a reconcile reads its own set's pods instead of every pod in the cluster.
//!
//! Kubernetes' ReplicaSet controller does the same: its pod informer has a
//! controller-UID index (`controller.AddPodControllerUIDIndexer`), and a
//! sync looks up the set's uid there (plus the orphans of its namespace,
//! which this controller does not adopt) rather than listing every pod.
//! kube-rs's `Store` has no indexes, so the index lives here, written by the
//! same watcher events as the store, right after the store's writer, and in
//! the same way: an `Apply` or `Delete` at once, a relist as a whole at
//! `InitDone`. It holds the very objects the store holds (taken from the
//! store once per event), so a reconcile, which reads every pod of its set,
//! looks none of them up: a set's sync reads its thousand pods far more
//! often than a pod changes.

use std::collections::BTreeMap;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher::Event;

use crate::expectations::{Key, key};
use crate::{CachedPod, controller_uid};

/// Which pods each controlling owner (by uid) has, as the store holds them.
#[derive(Debug, Default)]
pub struct PodsByOwner {
    /// The index: owner uid to its pods, by key, ordered as the store is.
    owned: Owners,
}

/// Owner uid to pods by key, and each indexed pod's owner (to move or drop it).
///
/// Both are looked up on every pod event and never iterated, so they are
/// hash tables (with a hasher that has no random seed); a set's own pods
/// are kept in key order, the order a sync reads them in.
#[derive(Debug, Default)]
struct Owners {
    pods: FxHashMap<String, BTreeMap<Key, Arc<CachedPod>>>,
    owner_of: FxHashMap<Key, String>,
}

impl Owners {
    /// Records the pod at `key` as the store now holds it (`None`: gone),
    /// under its controlling owner, if it has one.
    fn set(&mut self, key: Key, pod: Option<Arc<CachedPod>>) {
        let owner = pod.as_deref().and_then(controller_uid);
        // Most changes keep the owner: the new version takes the old one's place.
        if let Some(owner) = owner
            && self.owner_of.get(&key).is_some_and(|previous| previous == owner)
            && let Some(slot) = self.pods.get_mut(owner).and_then(|pods| pods.get_mut(&key))
            && let Some(pod) = pod
        {
            *slot = pod;
            return;
        }
        if let Some(previous) = self.owner_of.remove(&key)
            && let Some(pods) = self.pods.get_mut(&previous)
        {
            pods.remove(&key);
            if pods.is_empty() {
                self.pods.remove(&previous);
            }
        }
        let Some(owner) = owner.map(str::to_owned) else { return };
        let Some(pod) = pod else { return };
        self.owner_of.insert(key.clone(), owner.clone());
        self.pods.entry(owner).or_default().insert(key, pod);
    }
}

impl PodsByOwner {
    /// Applies one watcher event after the store's writer has: the pod it
    /// names as `store` now holds it, or the whole store after a relist.
    pub fn apply_watcher_event(&mut self, event: &Event<CachedPod>, store: &Store<CachedPod>) {
        match event {
            Event::Apply(pod) | Event::Delete(pod) => {
                self.owned.set(key(pod), store.get(&ObjectRef::from_obj(pod)));
            }
            // The store keeps what it held until the relist is done.
            Event::Init | Event::InitApply(_) => {}
            Event::InitDone => {
                let mut owned = Owners::default();
                for pod in store.state() {
                    owned.set(key(&*pod), Some(pod));
                }
                self.owned = owned;
            }
        }
    }

    /// The pods whose controlling owner has uid `owner`, by namespace and
    /// name, as the store holds them.
    pub fn owned_by(&self, owner: &str) -> impl Iterator<Item = &Arc<CachedPod>> {
        self.owned.pods.get(owner).into_iter().flat_map(BTreeMap::values)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

    use super::*;

    /// A pod `name` in `default`, controlled by the owner with uid `owner`.
    fn pod(name: &str, owner: Option<&str>) -> CachedPod {
        let owner_references = owner.map(|uid| {
            vec![OwnerReference {
                api_version: "apps/v1".into(),
                kind: "ReplicaSet".into(),
                name: "web".into(),
                uid: uid.into(),
                controller: Some(true),
                ..OwnerReference::default()
            }]
        });
        let metadata = ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            owner_references,
            ..ObjectMeta::default()
        };
        CachedPod { metadata, ..CachedPod::default() }
    }

    /// The pod store and its index, fed the same events in the plugin's
    /// order: the store's writer first.
    struct Indexed {
        store: Store<CachedPod>,
        writer: kube::runtime::reflector::Writer<CachedPod>,
        index: PodsByOwner,
    }

    impl Indexed {
        fn new() -> Self {
            let (store, writer) = kube::runtime::reflector::store();
            Indexed { store, writer, index: PodsByOwner::default() }
        }

        fn apply(&mut self, event: Event<CachedPod>) {
            self.writer.apply_watcher_event(&event);
            self.index.apply_watcher_event(&event, &self.store);
        }

        fn names(&self, owner: &str) -> Vec<String> {
            self.index.owned_by(owner).map(|pod| pod.metadata.name.clone().unwrap_or_default()).collect()
        }
    }

    #[test]
    fn applies_and_deletes_follow_the_controlling_owner() {
        let mut indexed = Indexed::new();
        indexed.apply(Event::Init);
        indexed.apply(Event::InitDone);
        indexed.apply(Event::Apply(pod("b", Some("rs-1"))));
        indexed.apply(Event::Apply(pod("a", Some("rs-1"))));
        indexed.apply(Event::Apply(pod("c", Some("rs-2"))));
        indexed.apply(Event::Apply(pod("orphan", None)));
        assert_eq!(indexed.names("rs-1"), ["a", "b"], "ordered by name, as the store is");
        assert_eq!(indexed.names("rs-2"), ["c"]);

        // Released by one owner and adopted by another: it moves.
        indexed.apply(Event::Apply(pod("b", Some("rs-2"))));
        assert_eq!(indexed.names("rs-1"), ["a"]);
        assert_eq!(indexed.names("rs-2"), ["b", "c"]);

        // Orphaned, then deleted.
        indexed.apply(Event::Apply(pod("a", None)));
        indexed.apply(Event::Delete(pod("c", Some("rs-2"))));
        assert!(indexed.names("rs-1").is_empty());
        assert_eq!(indexed.names("rs-2"), ["b"]);
    }

    #[test]
    fn the_index_holds_the_objects_the_store_holds() {
        let mut indexed = Indexed::new();
        indexed.apply(Event::Init);
        indexed.apply(Event::InitApply(pod("a", Some("rs-1"))));
        indexed.apply(Event::InitDone);
        let mut changed = pod("a", Some("rs-1"));
        changed.metadata.labels = Some([("v".to_owned(), "2".to_owned())].into());
        indexed.apply(Event::Apply(changed));
        let held = indexed.index.owned_by("rs-1").next().cloned().expect("a is indexed");
        let stored = indexed.store.get(&ObjectRef::new("a").within("default")).expect("a is stored");
        assert!(Arc::ptr_eq(&held, &stored), "the same version, not a copy");
        assert!(held.metadata.labels.is_some(), "the latest version");
    }

    #[test]
    fn a_relist_replaces_the_index_when_it_is_done() {
        let mut indexed = Indexed::new();
        indexed.apply(Event::Init);
        indexed.apply(Event::InitDone);
        indexed.apply(Event::Apply(pod("gone", Some("rs-1"))));
        indexed.apply(Event::Init);
        indexed.apply(Event::InitApply(pod("new", Some("rs-1"))));
        // Until InitDone the store still holds what it held, and so does the index.
        assert_eq!(indexed.names("rs-1"), ["gone"]);
        indexed.apply(Event::InitDone);
        assert_eq!(indexed.names("rs-1"), ["new"]);
    }
}
