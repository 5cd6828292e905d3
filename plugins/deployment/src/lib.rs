//! The built-in Deployment controller: rolls pod templates out through
//! ReplicaSets.
//!
//! [`Deployments`] is a [`Reconciler`] over Deployments (watch 0) and the
//! ReplicaSets they own (watch 1, found by the controller owner's uid, as
//! an [`Index`]); [`DeploymentController`] is it inside the SDK's
//! [`Runtime`]. For each deployment:
//!
//! 1. The *new* ReplicaSet is the one labelled with the hash of the current
//!    `spec.template` (`pod-template-hash`, the same FNV hash and alphabet as
//!    Kubernetes); it is named `{deployment}-{hash}` and created, with an owner
//!    reference and revision annotation, when missing. Every other owned set
//!    is *old*, oldest revision first.
//! 2. With the `RollingUpdate` strategy (the default), as Kubernetes'
//!    `rolloutRolling`: the new set is scaled up to at most `maxSurge` pods
//!    above `replicas` in total (default 25%, rounded up), and then the old
//!    sets down, first their unavailable pods and then as far as keeps
//!    `replicas - maxUnavailable` pods available (default 25%, rounded down;
//!    if both are 0, one may be unavailable). Scaling is an `Update` of the
//!    set's `spec.replicas` with its cached `resourceVersion` as precondition.
//! 3. With `Recreate`: the old sets are scaled to 0, and the new set is
//!    created (or scaled) to `replicas` once no old set reports pods.
//! 4. The status (`replicas`, `updatedReplicas`, `readyReplicas`,
//!    `availableReplicas`, `unavailableReplicas`, `observedGeneration` and an
//!    `Available` condition) is summed from the sets' statuses and written
//!    with `UpdateStatus` only when it changed.
//!
//! A deployment does nothing more while one of its writes is in flight
//! (unanswered, or answered and not yet seen in the cache): like the real
//! controller's expectations, this keeps it from scaling twice on one view.
//! A paused deployment only has its status updated.
//!
//! Differences from the real controller: no proportional scaling of several
//! active sets when `replicas` changes mid-rollout (the new set absorbs the
//! change), no `minReadySeconds` (a set's available pods are its
//! `availableReplicas`, or its `readyReplicas` when it does not report
//! them, as the built-in ReplicaSet controller does not), no
//! `progressDeadlineSeconds`, `Progressing` condition, hash collision
//! handling, rollback or revision-history cleanup; the revision annotation
//! is only set on the sets, and sets are found by ownership only.

use std::collections::BTreeMap;

use recon_abi::{
    ABI_VERSION, ComponentConfig, Manifest, Object, ObjectKey, ObjectMeta, Verb, WatchSpec, WritePermission,
};
use recon_sdk::hash::template_hash;
use recon_sdk::meta::{controller_uid, owner_reference};
use recon_sdk::reconcile::{Context, Reconciler, Requeue, Runtime, primary_keys};
use recon_sdk::typed::{Deployment, IntOrString, ReplicaSet, ReplicaSetSpec, set_condition};
use recon_sdk::{Cache, Change, Index};

/// The watch index of ReplicaSets in the manifest (Deployments are watch 0,
/// the primary kind).
const REPLICA_SETS: usize = 1;

/// The label that ties a ReplicaSet and its pods to one pod template.
pub const POD_TEMPLATE_HASH_LABEL: &str = "pod-template-hash";
/// The annotation numbering a deployment's ReplicaSets in rollout order.
pub const REVISION_ANNOTATION: &str = "deployment.kubernetes.io/revision";

/// The Deployment reconciler (see the crate documentation).
#[derive(Clone, Debug)]
pub struct Deployments {
    /// ReplicaSets by the uid of their controlling owner.
    owned: Index,
}

impl Default for Deployments {
    fn default() -> Self {
        Deployments { owned: Index::new(|set| controller_uid(set).map(str::to_string)) }
    }
}

/// The Deployment controller the host runs.
pub type DeploymentController = Runtime<Deployments>;

/// A fresh Deployment controller.
pub fn controller() -> DeploymentController {
    Runtime::new(Deployments::default())
}

impl Reconciler for Deployments {
    fn init(&mut self, _config: &ComponentConfig) -> Manifest {
        *self = Deployments::default();
        let watches = vec![
            WatchSpec { kind: "Deployment".into(), ..WatchSpec::default() },
            WatchSpec { kind: "ReplicaSet".into(), ..WatchSpec::default() },
        ];
        Manifest {
            name: "deployment".into(),
            abi_version: ABI_VERSION,
            watches,
            writes: vec![
                WritePermission { kind: "ReplicaSet".into(), verbs: vec![Verb::Create, Verb::Update] },
                WritePermission { kind: "Deployment".into(), verbs: vec![Verb::UpdateStatus] },
            ],
            ..Manifest::default()
        }
    }

    fn keys_for(&mut self, change: &Change, cache: &Cache) -> Vec<ObjectKey> {
        if change.watch == REPLICA_SETS {
            self.owned.update(&change.key, cache.get(REPLICA_SETS, &change.key));
        }
        primary_keys(change, cache)
    }

    fn reconcile(&mut self, key: &ObjectKey, ctx: &mut Context<'_>) -> Requeue {
        let Some(object) = ctx.get(key) else { return Requeue::AwaitChange };
        // A spec that does not parse cannot be acted on; the API server's
        // validation would have refused it.
        let Ok(deployment) = Deployment::try_from(object) else { return Requeue::AwaitChange };
        if deployment.metadata.deletion_timestamp.is_some() {
            // Deleting a deployment's sets is the garbage collector's job.
            return Requeue::AwaitChange;
        }
        let hash = template_hash(&object.spec["template"]);
        let new_key = ObjectKey::new("ReplicaSet", key.namespace.as_str(), format!("{}-{hash}", key.name));

        let mut sets: Vec<ReplicaSet> = self
            .owned
            .keys(&deployment.metadata.uid)
            .filter_map(|k| ctx.cache().get(REPLICA_SETS, k))
            .filter_map(|o| ReplicaSet::try_from(o).ok())
            .collect();
        sets.sort_by_key(|s| (revision(s), s.metadata.name.clone()));
        let (new, old): (Vec<ReplicaSet>, Vec<ReplicaSet>) =
            sets.into_iter().partition(|s| s.metadata.labels.get(POD_TEMPLATE_HASH_LABEL) == Some(&hash));
        let new = new.into_iter().next();

        // One step at a time: wait until the last writes are answered and seen.
        let mut busy = false;
        for set_key in old.iter().chain(&new).map(ReplicaSet::key).chain([new_key.clone()]) {
            busy |= ctx.is_pending(&set_key);
        }
        // The new set's name is taken by a set that is not ours: wait for it to go.
        busy |= new.is_none() && ctx.get(&new_key).is_some();

        if !busy && deployment.spec.paused != Some(true) {
            let rollout = Rollout { object, deployment: &deployment, hash: &hash, old: &old };
            if recreate(&deployment) {
                rollout.recreate(new.as_ref(), ctx);
            } else {
                rollout.rolling(new.as_ref(), ctx);
            }
        }
        sync_status(&deployment, new.as_ref(), &old, ctx);
        Requeue::AwaitChange
    }
}

/// One reconcile's view of a deployment and its sets.
struct Rollout<'a> {
    object: &'a Object,
    deployment: &'a Deployment,
    hash: &'a str,
    old: &'a [ReplicaSet],
}

impl Rollout<'_> {
    /// Kubernetes' `rolloutRolling`: surge the new set, then retire the old.
    fn rolling(&self, new: Option<&ReplicaSet>, ctx: &mut Context<'_>) {
        let replicas = desired(self.deployment);
        let (max_surge, _) = fenceposts(self.deployment);
        let old_total: i64 = self.old.iter().map(spec_replicas).sum();
        let created;
        let new = match new {
            Some(new) => {
                let current = spec_replicas(new);
                let target = if current > replicas {
                    replicas
                } else {
                    new_set_replicas(replicas, max_surge, old_total + current, current)
                };
                if target != current {
                    scale(new, target, ctx);
                    return;
                }
                new
            }
            None => {
                created = self.new_set(new_set_replicas(replicas, max_surge, old_total, 0));
                ctx.create(created.to_object());
                &created
            }
        };
        self.scale_down_old(new, ctx);
    }

    /// Kubernetes' `reconcileOldReplicaSets`: unhealthy pods first, then as
    /// many as keep the minimum available.
    fn scale_down_old(&self, new: &ReplicaSet, ctx: &mut Context<'_>) {
        let old_total: i64 = self.old.iter().map(spec_replicas).sum();
        if old_total == 0 {
            return;
        }
        let min_available = desired(self.deployment) - max_unavailable(self.deployment);
        let new_unavailable = spec_replicas(new) - available(new);
        let max_scaled_down = old_total + spec_replicas(new) - min_available - new_unavailable;
        if max_scaled_down <= 0 {
            return;
        }
        let mut targets: Vec<i64> = self.old.iter().map(spec_replicas).collect();

        let mut cleaned = 0;
        for (target, set) in targets.iter_mut().zip(self.old) {
            let unhealthy = (*target - available(set)).max(0);
            if cleaned >= max_scaled_down || unhealthy == 0 {
                continue;
            }
            let down = unhealthy.min(max_scaled_down - cleaned);
            *target -= down;
            cleaned += down;
        }

        let available_total: i64 = self.old.iter().chain([new]).map(available).sum();
        let mut excess = (available_total - min_available).max(0);
        for target in &mut targets {
            let down = (*target).min(excess);
            *target -= down;
            excess -= down;
        }

        for (target, set) in targets.into_iter().zip(self.old) {
            if target != spec_replicas(set) {
                scale(set, target, ctx);
            }
        }
    }

    /// Kubernetes' `rolloutRecreate`: all old pods go before new ones come.
    fn recreate(&self, new: Option<&ReplicaSet>, ctx: &mut Context<'_>) {
        let mut scaled_down = false;
        for set in self.old.iter().filter(|s| spec_replicas(s) > 0) {
            scale(set, 0, ctx);
            scaled_down = true;
        }
        let old_pods_remain = self.old.iter().any(|s| s.status.replicas.unwrap_or(0) > 0);
        if scaled_down || old_pods_remain {
            return;
        }
        let replicas = desired(self.deployment);
        match new {
            None => {
                ctx.create(self.new_set(replicas).to_object());
            }
            Some(new) if spec_replicas(new) != replicas => scale(new, replicas, ctx),
            Some(_) => {}
        }
    }

    /// The ReplicaSet for the current template, with `replicas` pods.
    fn new_set(&self, replicas: i64) -> ReplicaSet {
        let deployment = self.deployment;
        let mut template = deployment.spec.template.clone().unwrap_or_default();
        let labels = template.metadata.get_or_insert_default().labels.get_or_insert_default();
        labels.insert(POD_TEMPLATE_HASH_LABEL.into(), self.hash.into());
        let labels = labels.clone();
        let mut selector = deployment.spec.selector.clone().unwrap_or_default();
        selector.match_labels.get_or_insert_default().insert(POD_TEMPLATE_HASH_LABEL.into(), self.hash.into());
        let next_revision = self.old.iter().map(revision).max().unwrap_or(0) + 1;
        ReplicaSet {
            metadata: ObjectMeta {
                name: format!("{}-{}", deployment.metadata.name, self.hash),
                namespace: deployment.metadata.namespace.clone(),
                labels,
                annotations: BTreeMap::from([(REVISION_ANNOTATION.into(), next_revision.to_string())]),
                owner_references: vec![owner_reference(self.object)],
                ..ObjectMeta::default()
            },
            spec: ReplicaSetSpec {
                replicas: Some(count(replicas)),
                selector: Some(selector),
                template: Some(template),
                ..ReplicaSetSpec::default()
            },
            status: Default::default(),
        }
    }
}

/// Kubernetes' `NewRSNewReplicas` for RollingUpdate: scale the new set up as
/// far as `max_surge` above `replicas` allows, never beyond `replicas`.
fn new_set_replicas(replicas: i64, max_surge: i64, total: i64, current: i64) -> i64 {
    let max_total = replicas + max_surge;
    if total >= max_total {
        return current;
    }
    current + (max_total - total).min(replicas - current)
}

/// Sends the set's `spec.replicas = replicas`, compare-and-swap on the cached version.
fn scale(set: &ReplicaSet, replicas: i64, ctx: &mut Context<'_>) {
    let mut scaled = set.clone();
    scaled.spec.replicas = Some(count(replicas));
    ctx.update(scaled.to_object());
}

/// Writes the status if it changed (and no status write is in flight).
fn sync_status(deployment: &Deployment, new: Option<&ReplicaSet>, old: &[ReplicaSet], ctx: &mut Context<'_>) {
    let all = || old.iter().chain(new);
    let available_total: i64 = all().map(available).sum();
    let spec_total: i64 = all().map(spec_replicas).sum();
    let mut status = deployment.status.clone();
    status.observed_generation = Some(deployment.metadata.generation);
    status.replicas = Some(count(all().map(|s| i64::from(s.status.replicas.unwrap_or(0))).sum()));
    status.updated_replicas = Some(new.map_or(0, |s| s.status.replicas.unwrap_or(0)));
    status.ready_replicas = Some(count(all().map(|s| i64::from(s.status.ready_replicas.unwrap_or(0))).sum()));
    status.available_replicas = Some(count(available_total));
    status.unavailable_replicas = Some(count((spec_total - available_total).max(0)));
    let minimum = desired(deployment) - max_unavailable(deployment);
    set_condition(&mut status.conditions, "Available", available_total >= minimum);
    if status != deployment.status {
        let mut updated = deployment.clone();
        updated.status = status;
        ctx.update_status(updated.to_object());
    }
}

fn recreate(deployment: &Deployment) -> bool {
    deployment.spec.strategy.as_ref().and_then(|s| s.type_.as_deref()) == Some("Recreate")
}

/// `spec.replicas`, defaulting to 1 as the API server does.
fn desired(deployment: &Deployment) -> i64 {
    i64::from(deployment.spec.replicas.unwrap_or(1).max(0))
}

fn spec_replicas(set: &ReplicaSet) -> i64 {
    i64::from(set.spec.replicas.unwrap_or(1).max(0))
}

/// Pods of the set that count as available.
fn available(set: &ReplicaSet) -> i64 {
    i64::from(set.status.available_replicas.or(set.status.ready_replicas).unwrap_or(0).max(0))
}

fn revision(set: &ReplicaSet) -> u64 {
    set.metadata.annotations.get(REVISION_ANNOTATION).and_then(|r| r.parse().ok()).unwrap_or(0)
}

fn count(n: i64) -> i32 {
    i32::try_from(n).unwrap_or(if n < 0 { 0 } else { i32::MAX })
}

/// Kubernetes' `ResolveFenceposts`: (maxSurge, maxUnavailable) in pods, from
/// absolute numbers or percentages of `replicas` (25% each by default); if
/// both come out 0, one pod may be unavailable so that the rollout can move.
fn fenceposts(deployment: &Deployment) -> (i64, i64) {
    let replicas = desired(deployment);
    let rolling = deployment.spec.strategy.as_ref().and_then(|s| s.rolling_update.as_ref());
    let quarter = IntOrString::String("25%".into());
    let resolve = |value: Option<&IntOrString>, round_up: bool| {
        value.unwrap_or(&quarter).scaled(replicas, round_up).unwrap_or(0).max(0)
    };
    let surge = resolve(rolling.and_then(|r| r.max_surge.as_ref()), true);
    let unavailable = resolve(rolling.and_then(|r| r.max_unavailable.as_ref()), false);
    if surge == 0 && unavailable == 0 { (0, 1) } else { (surge, unavailable) }
}

/// Kubernetes' `MaxUnavailable`: 0 for Recreate or no replicas, never more
/// than `replicas`.
fn max_unavailable(deployment: &Deployment) -> i64 {
    let replicas = desired(deployment);
    if recreate(deployment) || replicas == 0 {
        return 0;
    }
    fenceposts(deployment).1.min(replicas)
}

// The Wasm plugin: `cargo build --release --target wasm32-unknown-unknown -p recon-plugin-deployment`.
#[cfg(feature = "export")]
recon_sdk::export_controller!(controller());

#[cfg(test)]
mod tests;
