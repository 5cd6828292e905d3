//! The ReplicaSet controller's expectations: per set, the writes it waits
//! to see in its pod informer before it acts again, raised by the
//! reconcile before it sends them and lowered by the pod watch's events
//! (the real controller's `addPod`, `updatePod` and `deletePod` handlers
//! and its `UIDTrackingControllerExpectations`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::core::{PartialObjectMeta, PartialObjectMetaExt};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher::Event;

use crate::{CachedPod, RETRY_AFTER, controller_uid};

/// Where an object lives: its namespace and name.
pub type Key = (String, String);

/// An object's key.
pub fn key<K: Resource>(object: &K) -> Key {
    let meta = object.meta();
    (meta.namespace.clone().unwrap_or_default(), meta.name.clone().unwrap_or_default())
}

/// What one set waits to see before it acts again.
#[derive(Clone, Debug)]
struct Pending {
    /// The set incarnation the expectations were raised for.
    uid: String,
    /// Creates not yet seen in the informer nor failed.
    adds: i64,
    /// Pods deleted and not yet seen terminating or gone, with their uids.
    deletes: BTreeMap<Key, String>,
    /// When they expire.
    expires_ms: u64,
    /// A write failed transiently: do not act before this time.
    not_before_ms: u64,
    /// Pods a live read showed before the informer did: when they appear
    /// in the informer they are not one of these creates.
    seen_live: BTreeSet<Key>,
}

/// Where a set stands with its expectations at some time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// It has none: act.
    None,
    /// Everything they waited for has been seen: act.
    Fulfilled,
    /// Still waiting (or backing off after a failed write): do not act.
    Pending,
    /// Not fulfilled, and past their timeout: the settings say what that means.
    Expired,
}

/// Every set's expectations.
#[derive(Debug, Default)]
pub struct Expectations {
    sets: BTreeMap<Key, Pending>,
    /// The pods of a relist in progress (between `Init` and `InitDone`).
    listing: Option<BTreeSet<Key>>,
}

impl Expectations {
    /// Where `set`'s expectations stand at `now_ms`.
    pub fn state(&self, set: &Key, now_ms: u64) -> State {
        match self.sets.get(set) {
            None => State::None,
            Some(e) if now_ms < e.not_before_ms => State::Pending,
            Some(e) if e.adds <= 0 && e.deletes.is_empty() && e.seen_live.is_empty() => State::Fulfilled,
            Some(e) if now_ms < e.expires_ms => State::Pending,
            Some(_) => State::Expired,
        }
    }

    /// When `set` may act again: after its back-off, else when its
    /// expectations expire. `None` without expectations.
    pub fn wake_at(&self, set: &Key, now_ms: u64) -> Option<u64> {
        let e = self.sets.get(set)?;
        Some(if now_ms < e.not_before_ms { e.not_before_ms } else { e.expires_ms })
    }

    /// Drops expectations raised for another incarnation of `set`.
    pub fn forget_other_incarnations(&mut self, set: &Key, uid: &str) {
        if self.sets.get(set).is_some_and(|e| e.uid != uid) {
            self.sets.remove(set);
        }
    }

    /// Drops `set`'s expectations.
    pub fn forget(&mut self, set: &Key) {
        self.sets.remove(set);
    }

    /// Raises expectations for `set` (incarnation `uid`), until `expires_ms`:
    /// `adds` creates, the pods in `deletes` (with their uids), and the pods
    /// in `seen_live` that a live read showed before the informer.
    pub fn expect(
        &mut self,
        set: &Key,
        uid: &str,
        expires_ms: u64,
        adds: usize,
        deletes: BTreeMap<Key, String>,
        seen_live: BTreeSet<Key>,
    ) {
        let adds = i64::try_from(adds).unwrap_or(i64::MAX);
        let pending = Pending { uid: uid.to_owned(), adds, deletes, expires_ms, not_before_ms: 0, seen_live };
        self.sets.insert(set.clone(), pending);
    }

    /// The answer to one of `set`'s creates: the new pod's resourceVersion,
    /// or whether its failure is transient.
    pub fn created(&mut self, set: &Key, failed: Option<bool>, now_ms: u64) {
        if let Some(transient) = failed
            && let Some(e) = self.sets.get_mut(set)
        {
            // The pod will never show: one create fewer to wait for.
            e.adds -= 1;
            if transient {
                e.not_before_ms = now_ms + RETRY_AFTER.as_millis() as u64;
            }
        }
    }

    /// The answer to one of `set`'s deletes, of `pod`: the pod's
    /// resourceVersion when it is still there (terminating), or whether
    /// the delete's failure is transient.
    pub fn deleted(&mut self, set: &Key, pod: &Key, failed: Option<bool>, now_ms: u64) {
        if let Some(transient) = failed
            && let Some(e) = self.sets.get_mut(set)
        {
            e.deletes.remove(pod);
            if transient {
                e.not_before_ms = now_ms + RETRY_AFTER.as_millis() as u64;
            }
        }
    }

    /// One event of the pod watch, before it reaches `store`: lowers the
    /// expectations it fulfils, and returns the metadata of the pods whose
    /// owners must be reconciled (before and after the change, and every
    /// pod a relist found gone). The namespace and the owner references
    /// are all the trigger reads, so only they are copied: a whole pod
    /// copied twice per event was most of this function's cost in a large
    /// cluster, and then the whole metadata (labels, annotations, uid)
    /// still a percent of a 1,000-node run.
    pub fn observe(&mut self, event: &Event<CachedPod>, store: &Store<CachedPod>) -> Vec<PartialObjectMeta<Pod>> {
        let meta = |pod: &CachedPod| {
            let ObjectMeta { namespace, owner_references, .. } = &pod.metadata;
            let (namespace, owner_references) = (namespace.clone(), owner_references.clone());
            ObjectMeta { namespace, owner_references, ..ObjectMeta::default() }.into_response_partial()
        };
        let cached = |pod: &CachedPod| store.get(&ObjectRef::from_obj(pod));
        match event {
            Event::Init => {
                self.listing = Some(BTreeSet::new());
                Vec::new()
            }
            Event::InitApply(pod) | Event::Apply(pod) => {
                if let (Event::InitApply(_), Some(listing)) = (event, &mut self.listing) {
                    listing.insert(key(pod));
                }
                let old = cached(pod);
                self.changed(old.as_deref(), Some(pod));
                old.as_deref().into_iter().chain([pod]).map(meta).collect()
            }
            Event::Delete(pod) => {
                let old = cached(pod);
                self.changed(Some(old.as_deref().unwrap_or(pod)), None);
                vec![meta(pod)]
            }
            Event::InitDone => {
                let listed = self.listing.take().unwrap_or_default();
                let gone: Vec<Arc<CachedPod>> =
                    store.state().into_iter().filter(|p| !listed.contains(&key(&**p))).collect();
                gone.iter().for_each(|pod| self.changed(Some(pod), None));
                gone.iter().map(|pod| meta(pod)).collect()
            }
        }
    }

    /// A pod went from `old` to `new` (`None`: not there) in the informer.
    fn changed(&mut self, old: Option<&CachedPod>, new: Option<&CachedPod>) {
        // Nothing expected (most of the time): nothing to lower.
        if self.sets.is_empty() {
            return;
        }
        let Some(pod) = new.or(old).map(key) else { return };
        let (old_owner, new_owner) = (old.and_then(owning_set), new.and_then(owning_set));
        // Each owning set once: usually the old and the new version name the same.
        let moved = new_owner.filter(|set| old_owner.as_ref() != Some(set));
        for set in old_owner.into_iter().chain(moved) {
            let Some(e) = self.sets.get_mut(&set) else { continue };
            let appeared = old.is_none() && new.is_some_and(|p| controller_uid(p) == Some(e.uid.as_str()));
            if appeared && !e.seen_live.remove(&pod) {
                e.adds -= 1;
            }
            let gone = |uid: &String| {
                new.is_none_or(|p| p.metadata.deletion_timestamp.is_some() || p.metadata.uid.as_ref() != Some(uid))
            };
            if e.deletes.get(&pod).is_some_and(gone) {
                e.deletes.remove(&pod);
            }
        }
    }
}

/// The ReplicaSet a pod's controller owner reference names, if any.
fn owning_set(pod: &CachedPod) -> Option<Key> {
    let owner = pod.metadata.owner_references.iter().flatten().find(|o| o.controller == Some(true))?;
    (owner.kind == "ReplicaSet").then(|| (pod.metadata.namespace.clone().unwrap_or_default(), owner.name.clone()))
}
