//! Replica count: a component's committed write to a pod must not give a
//! ReplicaSet more live pods than `spec.replicas`, nor take one away that it
//! needed. Judged against the store — the truth at that moment — not against
//! what the writer saw. One finding per crossing of `spec.replicas`, in
//! either direction.

use std::collections::{BTreeMap, BTreeSet};

use recon_abi::Object;
use recon_scenario::Check;
use recon_store::{EventKind, StoreEvent};

use super::{Commit, Finding, Observer, Truth, live, spec_replicas};

/// Live pods by the uid of their controller, kept up to date on every
/// commit, so that judging a write costs no scan of every pod.
#[derive(Default)]
pub(super) struct ReplicaCount {
    by_owner: BTreeMap<String, BTreeSet<String>>,
}

impl ReplicaCount {
    /// Follows one store event.
    fn apply(&mut self, event: &StoreEvent) {
        if event.value.kind != "Pod" {
            return;
        }
        let entry = |pod: &Object| pod.controller_owner().map(|o| (o.uid.clone(), pod.metadata.uid.clone()));
        if let Some((owner, pod)) = event.prev.as_ref().filter(|p| live(p)).and_then(entry)
            && let Some(set) = self.by_owner.get_mut(&owner)
        {
            set.remove(&pod);
            if set.is_empty() {
                self.by_owner.remove(&owner);
            }
        }
        let removed = event.kind == EventKind::Delete;
        if !removed
            && live(&event.value)
            && let Some((owner, pod)) = entry(&event.value)
        {
            self.by_owner.entry(owner).or_default().insert(pod);
        }
    }

    /// How many live pods the object with `uid` controls.
    fn count(&self, owner_uid: &str) -> usize {
        self.by_owner.get(owner_uid).map_or(0, |s| s.len())
    }
}

impl Observer for ReplicaCount {
    fn committed(&mut self, truth: &Truth<'_>, commit: &Commit<'_>) -> Vec<Finding> {
        let event = commit.event;
        self.apply(event);
        let Some(writer) = commit.writer else { return Vec::new() };
        if event.value.kind != "Pod" {
            return Vec::new();
        }
        let Some(owner) = event.value.controller_owner().filter(|o| o.kind == "ReplicaSet") else { return Vec::new() };
        let removed = event.kind == EventKind::Delete;
        let was_live = event.prev.as_ref().is_some_and(live);
        let is_live = !removed && live(&event.value);
        let (added, taken) = (is_live && !was_live, was_live && !is_live);
        if !added && !taken {
            return Vec::new();
        }
        let namespace = event.value.metadata.namespace.clone();
        let key = recon_abi::ObjectKey::new("ReplicaSet", &namespace, &owner.name);
        let Ok(Some(set)) = truth.store.get(&key, None) else { return Vec::new() };
        let set = set.value;
        if set.metadata.uid != owner.uid || set.is_terminating() {
            return Vec::new(); // the set is gone or going: its pods are garbage now
        }
        let want = spec_replicas(&set);
        let have = self.count(&set.metadata.uid) as u64;
        let pod = &event.value.metadata.name;
        // Only the write that crosses the line is flagged: the rest of the
        // same overshoot (one reconcile's batch) is the same finding.
        let message = if added && have == want + 1 {
            format!(
                "{writer} created pod {namespace}/{pod}, but ReplicaSet {namespace}/{} wanted {want}: it now has {have} live pods",
                owner.name
            )
        } else if taken && have + 1 == want {
            format!(
                "{writer} deleted pod {namespace}/{pod}, but ReplicaSet {namespace}/{} wanted {want}: it now has {have} live pods",
                owner.name
            )
        } else {
            return Vec::new();
        };
        vec![Finding { check: Check::ReplicaCount, message, causes: vec![commit.entry], component: None }]
    }
}
