//! Pods by their controlling owner: an index kept beside the pod store, so
//! a reconcile reads its own set's pods instead of every pod in the cluster.
//!
//! Kubernetes' ReplicaSet controller does the same: its pod informer has a
//! controller-UID index (`controller.AddPodControllerUIDIndexer`), and a
//! sync looks up the set's uid there (plus the orphans of its namespace,
//! which this controller does not adopt) rather than listing every pod.
//! kube-rs's `Store` has no indexes, so the index lives here, written by the
//! same watcher events as the store and in the same way: an `Apply` or
//! `Delete` at once, a relist as a whole at `InitDone`.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Pod;
use kube::runtime::watcher::Event;

use crate::controller_uid;
use crate::expectations::{Key, key};

/// Which pods each controlling owner (by uid) has, as the store holds them.
#[derive(Debug, Default)]
pub struct PodsByOwner {
    /// The index: owner uid to its pods' keys, ordered as the store is.
    owned: Owners,
    /// A relist in progress: the index its objects make, swapped in at `InitDone`.
    relist: Option<Owners>,
}

/// Owner uid to pod keys, and each indexed pod's owner (to move or drop it).
#[derive(Debug, Default)]
struct Owners {
    pods: BTreeMap<String, BTreeSet<Key>>,
    owner_of: BTreeMap<Key, String>,
}

impl Owners {
    /// Records that the pod at `pod` is now owned by `owner` (or by nobody).
    fn set(&mut self, pod: Key, owner: Option<&str>) {
        if let Some(previous) = self.owner_of.remove(&pod)
            && let Some(pods) = self.pods.get_mut(&previous)
        {
            pods.remove(&pod);
            if pods.is_empty() {
                self.pods.remove(&previous);
            }
        }
        if let Some(owner) = owner {
            self.pods.entry(owner.to_owned()).or_default().insert(pod.clone());
            self.owner_of.insert(pod, owner.to_owned());
        }
    }
}

impl PodsByOwner {
    /// Applies one watcher event, as the store's writer does.
    pub fn apply_watcher_event(&mut self, event: &Event<Pod>) {
        match event {
            Event::Apply(pod) => self.owned.set(key(pod), controller_uid(pod)),
            Event::Delete(pod) => self.owned.set(key(pod), None),
            Event::Init => self.relist = Some(Owners::default()),
            Event::InitApply(pod) => self.relist.get_or_insert_with(Owners::default).set(key(pod), controller_uid(pod)),
            Event::InitDone => self.owned = self.relist.take().unwrap_or_default(),
        }
    }

    /// The keys of the pods whose controlling owner has uid `owner`, by
    /// namespace and name.
    pub fn owned_by(&self, owner: &str) -> impl Iterator<Item = &Key> {
        self.owned.pods.get(owner).into_iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

    use super::*;

    /// A pod `name` in `default`, controlled by the owner with uid `owner`.
    fn pod(name: &str, owner: Option<&str>) -> Pod {
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
        Pod { metadata, ..Pod::default() }
    }

    fn names(index: &PodsByOwner, owner: &str) -> Vec<String> {
        index.owned_by(owner).map(|(_, name)| name.clone()).collect()
    }

    #[test]
    fn applies_and_deletes_follow_the_controlling_owner() {
        let mut index = PodsByOwner::default();
        index.apply_watcher_event(&Event::Apply(pod("b", Some("rs-1"))));
        index.apply_watcher_event(&Event::Apply(pod("a", Some("rs-1"))));
        index.apply_watcher_event(&Event::Apply(pod("c", Some("rs-2"))));
        index.apply_watcher_event(&Event::Apply(pod("orphan", None)));
        assert_eq!(names(&index, "rs-1"), ["a", "b"], "ordered by name, as the store is");
        assert_eq!(names(&index, "rs-2"), ["c"]);

        // Released by one owner and adopted by another: it moves.
        index.apply_watcher_event(&Event::Apply(pod("b", Some("rs-2"))));
        assert_eq!(names(&index, "rs-1"), ["a"]);
        assert_eq!(names(&index, "rs-2"), ["b", "c"]);

        // Orphaned, then deleted.
        index.apply_watcher_event(&Event::Apply(pod("a", None)));
        index.apply_watcher_event(&Event::Delete(pod("c", Some("rs-2"))));
        assert!(names(&index, "rs-1").is_empty());
        assert_eq!(names(&index, "rs-2"), ["b"]);
    }

    #[test]
    fn a_relist_replaces_the_index_when_it_is_done() {
        let mut index = PodsByOwner::default();
        index.apply_watcher_event(&Event::Apply(pod("gone", Some("rs-1"))));
        index.apply_watcher_event(&Event::Init);
        index.apply_watcher_event(&Event::InitApply(pod("new", Some("rs-1"))));
        // Until InitDone the store still holds what it held, and so does the index.
        assert_eq!(names(&index, "rs-1"), ["gone"]);
        index.apply_watcher_event(&Event::InitDone);
        assert_eq!(names(&index, "rs-1"), ["new"]);
    }
}
