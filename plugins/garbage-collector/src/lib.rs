//! The built-in garbage collector: owner references as Kubernetes'
//! garbage-collector controller reads them.
//!
//! [`GarbageCollector`] watches every kind it is told about (the component
//! parameter `kinds`, default [`DEFAULT_KINDS`]) and keeps a graph from each
//! owner uid to the objects that name it in `metadata.ownerReferences`.
//! For every object in its view it does what Kubernetes' collector does:
//!
//! - **A dependent whose owners are all gone** (no object of the owner's
//!   kind, namespace and name with the reference's uid: an owner deleted and
//!   re-created with the same name is a different owner) is deleted, in the
//!   background. One whose owners are partly gone loses the dangling
//!   references instead (an update with a resourceVersion precondition).
//!   An owner of a kind it does not watch is never taken for gone.
//! - **An owner marked with `foregroundDeletion`** has its dependents
//!   deleted; once none is left that has `blockOwnerDeletion: true`, the
//!   finalizer is removed, which lets the API server remove the owner.
//! - **An owner marked with `orphan`** has its reference removed from every
//!   dependent; then the finalizer is removed.
//!
//! Like the real collector it deletes with a uid precondition, so that a
//! delete decided on a stale view cannot remove a newer incarnation with the
//! same name. The component parameter `uidPrecondition: false` leaves it out:
//! the collector then deletes by name, and a stale view can make it delete a
//! live dependent (the `gc-stale-view` scenario).
//!
//! Differences from the real collector: it only knows its own informers'
//! view (the real one confirms an owner's absence with a live GET before it
//! deletes anything); dependents of a foreground deletion are deleted in the
//! background; no cluster-scoped dependent is matched to a namespaced owner
//! check.

use std::collections::{BTreeMap, BTreeSet};

use recon_abi::{
    ABI_VERSION, Action, ComponentConfig, Controller, FOREGROUND_FINALIZER, Input, ListMode, Manifest,
    ORPHAN_FINALIZER, Object, ObjectKey, Output, OwnerReference, PropagationPolicy, Verb, WatchSpec, WritePermission,
    is_cluster_scoped,
};
use recon_sdk::reconcile::{Context, Reconciler, Requeue, Runtime};
use recon_sdk::{Cache, Change};
use serde_json::Value;

/// The kinds watched when the scenario does not say: the workload kinds
/// and their pods.
pub const DEFAULT_KINDS: [&str; 4] = ["Deployment", "ReplicaSet", "StatefulSet", "Pod"];

/// The garbage collector (see the crate documentation): [`Collector`] in
/// the SDK's [`Runtime`].
#[derive(Clone, Debug, Default)]
pub struct GarbageCollector {
    runtime: Runtime<Collector>,
}

impl GarbageCollector {
    /// A collector with an empty view.
    pub fn new() -> GarbageCollector {
        GarbageCollector::default()
    }
}

impl Controller for GarbageCollector {
    fn init(&mut self, config: &ComponentConfig) -> Manifest {
        self.runtime.init(config)
    }

    fn handle(&mut self, input: &Input) -> Output {
        self.runtime.handle(input)
    }
}

/// The collector's reconciler: one object per call, judged as a dependent
/// (are its owners there?) and as an owner (is it being deleted in the
/// foreground or with orphaning?).
#[derive(Clone, Debug, Default)]
pub struct Collector {
    /// The kinds it watches.
    kinds: BTreeSet<String>,
    /// Owner uid → the keys of the objects that name it as an owner.
    dependents: BTreeMap<String, BTreeSet<ObjectKey>>,
    /// Whether deletes carry the uid of the incarnation they were decided on.
    uid_precondition: bool,
}

/// Where an owner reference points in the collector's view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OwnerState {
    /// An object with the reference's uid is there.
    Present,
    /// Its kind is watched and no object with that uid is there.
    Gone,
    /// Its kind is not watched: nothing is known, nothing is done.
    Unknown,
}

impl Collector {
    /// The key an owner reference of `dependent` names.
    fn owner_key(dependent: &Object, owner: &OwnerReference) -> ObjectKey {
        let namespace = if is_cluster_scoped(&owner.kind) { "" } else { dependent.metadata.namespace.as_str() };
        ObjectKey::new(&owner.kind, namespace, &owner.name)
    }

    fn owner_state(&self, cache: &Cache, dependent: &Object, owner: &OwnerReference) -> OwnerState {
        if !self.kinds.contains(&owner.kind) {
            return OwnerState::Unknown;
        }
        match cache.find(&Self::owner_key(dependent, owner)) {
            Some(o) if o.metadata.uid == owner.uid => OwnerState::Present,
            _ => OwnerState::Gone,
        }
    }

    /// The objects in view that name `owner` (this incarnation) as an owner.
    fn dependents_of<'a>(&self, cache: &'a Cache, owner: &Object) -> Vec<&'a Object> {
        let Some(keys) = self.dependents.get(&owner.metadata.uid) else { return Vec::new() };
        keys.iter()
            .filter_map(|k| cache.find(k))
            .filter(|d| d.metadata.owner_references.iter().any(|r| r.uid == owner.metadata.uid))
            .collect()
    }

    fn delete(&self, ctx: &mut Context<'_>, object: &Object) {
        let uid = Some(object.metadata.uid.clone()).filter(|u| self.uid_precondition && !u.is_empty());
        ctx.send(Action::Delete {
            key: object.key(),
            uid,
            resource_version: None,
            grace_period_seconds: None,
            propagation_policy: Some(PropagationPolicy::Background),
            dry_run: false,
        });
    }

    /// The object without `finalizer`, written with a precondition on the
    /// version it was read at.
    fn remove_finalizer(ctx: &mut Context<'_>, object: &Object, finalizer: &str) {
        let mut next = object.clone();
        next.metadata.finalizers.retain(|f| f != finalizer);
        ctx.update(next);
    }

    /// As a dependent: delete it when every owner is gone, drop the
    /// references to the gone ones when some are left.
    fn collect_dependent(&self, ctx: &mut Context<'_>, object: &Object) {
        if object.metadata.owner_references.is_empty() || object.is_terminating() {
            return;
        }
        let states: Vec<OwnerState> =
            object.metadata.owner_references.iter().map(|o| self.owner_state(ctx.cache(), object, o)).collect();
        if !states.contains(&OwnerState::Gone) {
            return;
        }
        if states.iter().all(|s| *s == OwnerState::Gone) {
            self.delete(ctx, object);
            return;
        }
        let mut next = object.clone();
        let mut states = states.into_iter();
        next.metadata.owner_references.retain(|_| states.next() != Some(OwnerState::Gone));
        ctx.update(next);
    }

    /// As an owner being deleted in the foreground: delete the dependents,
    /// and let the owner go once no blocking one is left.
    fn foreground(&self, ctx: &mut Context<'_>, owner: &Object) {
        let dependents = self.dependents_of(ctx.cache(), owner);
        let mut blocked = false;
        for dependent in dependents {
            let blocks = dependent
                .metadata
                .owner_references
                .iter()
                .any(|r| r.uid == owner.metadata.uid && r.block_owner_deletion);
            blocked |= blocks;
            if !dependent.is_terminating() {
                self.delete(ctx, dependent);
            }
        }
        if !blocked {
            Self::remove_finalizer(ctx, owner, FOREGROUND_FINALIZER);
        }
    }

    /// As an owner being deleted with orphaning: free the dependents, then
    /// let the owner go.
    fn orphan(&self, ctx: &mut Context<'_>, owner: &Object) {
        let dependents = self.dependents_of(ctx.cache(), owner);
        if dependents.is_empty() {
            Self::remove_finalizer(ctx, owner, ORPHAN_FINALIZER);
            return;
        }
        for dependent in dependents {
            let mut next = dependent.clone();
            next.metadata.owner_references.retain(|r| r.uid != owner.metadata.uid);
            ctx.update(next);
        }
    }
}

impl Reconciler for Collector {
    fn init(&mut self, config: &ComponentConfig) -> Manifest {
        let kinds: Vec<String> = match config.params.get("kinds").and_then(Value::as_array) {
            Some(list) => list.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
            None => DEFAULT_KINDS.iter().map(|k| (*k).to_owned()).collect(),
        };
        let uid_precondition = config.params.get("uidPrecondition").and_then(Value::as_bool).unwrap_or(true);
        *self = Collector { kinds: kinds.iter().cloned().collect(), dependents: BTreeMap::new(), uid_precondition };
        Manifest {
            name: "garbage-collector".into(),
            abi_version: ABI_VERSION,
            watches: kinds.iter().map(|k| WatchSpec { kind: k.clone(), ..WatchSpec::default() }).collect(),
            writes: kinds
                .iter()
                .map(|k| WritePermission { kind: k.clone(), verbs: vec![Verb::Update, Verb::Delete] })
                .collect(),
            node_agent: false,
            list_mode: ListMode::Any,
            ..Manifest::default()
        }
    }

    /// A change makes dirty the object itself, the owners it names (before
    /// and after: a foreground or orphan deletion waits on it), and, when an
    /// incarnation went away, everything that named it as an owner.
    fn keys_for(&mut self, change: &Change, cache: &Cache) -> Vec<ObjectKey> {
        let current = cache.get(change.watch, &change.key);
        let mut keys = BTreeSet::from([change.key.clone()]);
        if let Some(old) = &change.old {
            for owner in &old.metadata.owner_references {
                keys.insert(Self::owner_key(old, owner));
                if let Some(set) = self.dependents.get_mut(&owner.uid) {
                    set.remove(&change.key);
                    if set.is_empty() {
                        self.dependents.remove(&owner.uid);
                    }
                }
            }
            if current.is_none_or(|c| c.metadata.uid != old.metadata.uid)
                && let Some(set) = self.dependents.get(&old.metadata.uid)
            {
                keys.extend(set.iter().cloned());
            }
        }
        if let Some(current) = current {
            for owner in &current.metadata.owner_references {
                keys.insert(Self::owner_key(current, owner));
                self.dependents.entry(owner.uid.clone()).or_default().insert(change.key.clone());
            }
        }
        keys.into_iter().collect()
    }

    fn reconcile(&mut self, key: &ObjectKey, ctx: &mut Context<'_>) -> Requeue {
        let Some(object) = ctx.get(key) else { return Requeue::AwaitChange };
        let finalizers = &object.metadata.finalizers;
        if object.is_terminating() && finalizers.iter().any(|f| f == FOREGROUND_FINALIZER) {
            self.foreground(ctx, object);
        } else if object.is_terminating() && finalizers.iter().any(|f| f == ORPHAN_FINALIZER) {
            self.orphan(ctx, object);
        }
        self.collect_dependent(ctx, object);
        Requeue::AwaitChange
    }
}

// The Wasm plugin: `cargo build --release --target wasm32-unknown-unknown -p recon-plugin-garbage-collector`.
#[cfg(feature = "export")]
recon_sdk::export_controller!(GarbageCollector::new());

#[cfg(test)]
mod tests;
