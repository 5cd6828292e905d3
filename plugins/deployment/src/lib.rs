//! The built-in Deployment controller, written as a kube-rs controller:
//! rolls pod templates out through ReplicaSets.
//!
//! The controller reconciles Deployments and owns ReplicaSets (a set's
//! events wake its controlling Deployment). For each deployment:
//!
//! 1. The *new* ReplicaSet is the one labelled with the hash of the current
//!    `spec.template` (`pod-template-hash`); it is named
//!    `{deployment}-{hash}` and created, with a controller owner reference
//!    and a revision annotation, when missing. Every other owned set is
//!    *old*, oldest revision first.
//! 2. With the `RollingUpdate` strategy (the default), as Kubernetes'
//!    `rolloutRolling`: the new set is scaled up to at most `maxSurge` pods
//!    above `replicas` in total (default 25%, rounded up), and then the old
//!    sets down, first their unavailable pods and then as far as keeps
//!    `replicas - maxUnavailable` pods available (default 25%, rounded down;
//!    if both are 0, one may be unavailable). Scaling is a `replace` of the
//!    set with its cached `resourceVersion`, so a stale view gets 409
//!    Conflict.
//! 3. With `Recreate`: the old sets are scaled to 0, and the new set is
//!    created (or scaled) to `replicas` once no old set reports pods.
//! 4. The status (`replicas`, `updatedReplicas`, `readyReplicas`,
//!    `availableReplicas`, `unavailableReplicas`, `observedGeneration` and an
//!    `Available` condition) is summed from the sets' statuses and written
//!    with `replace_status` only when it changed.
//!
//! # One step at a time
//!
//! kube's controller runs one reconcile per deployment at a time, and each
//! reconcile waits for its writes' answers. That is not enough: the next
//! reconcile may still read the sets from a store that has not seen those
//! writes, and scale twice on one view. So, like the real controller's
//! expectations, a deployment does nothing more while a set it wrote is
//! not yet in the store at the version the write returned ([`Awaited`],
//! lowered by the ReplicaSet watch's events on their way into the store;
//! the set stream is built by hand and given to the controller with
//! `owns_stream`). A paused deployment only has its status updated.
//!
//! Everything is kube's public API but one call of `kube::recon`: the
//! pod-template hash, which kube does not offer.
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
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentCondition, DeploymentStatus, ReplicaSet, ReplicaSetSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, ObjectMeta, PostParams, Resource, ResourceExt};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Client, recon};

/// The label that ties a ReplicaSet and its pods to one pod template.
pub const POD_TEMPLATE_HASH_LABEL: &str = "pod-template-hash";
/// The annotation numbering a deployment's ReplicaSets in rollout order.
pub const REVISION_ANNOTATION: &str = "deployment.kubernetes.io/revision";

/// What can go wrong in a reconcile.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The set store will never be filled (its watch ended).
    #[error("ReplicaSet store: {0}")]
    SetStore(#[from] reflector::WriterDropped),
}

/// Sets this controller wrote, by (namespace, name), with the
/// resourceVersion its write returned: until the store shows a set at
/// that version (or its deletion), its deployment waits.
#[derive(Debug, Default)]
pub struct Awaited(BTreeMap<(String, String), u64>);

impl Awaited {
    /// Remembers that `set` was written, unless `store` already shows it
    /// (the watch event can come in before the write's answer is read).
    pub fn wrote(&mut self, set: &ReplicaSet, store: &Store<ReplicaSet>) {
        let version = |set: &ReplicaSet| set.resource_version().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        let written = version(set);
        let (namespace, name) = set_key(set);
        let cached = store.get(&ObjectRef::new(&name).within(&namespace));
        if cached.is_none_or(|cached| version(&cached) < written) {
            self.0.insert((namespace, name), written);
        }
    }

    /// Lowers what a watch event of the sets fulfils.
    pub fn observe(&mut self, event: &watcher::Event<ReplicaSet>) {
        match event {
            watcher::Event::Apply(set) | watcher::Event::InitApply(set) => {
                let seen: u64 = set.resource_version().and_then(|v| v.parse().ok()).unwrap_or(0);
                let key = set_key(set);
                if self.0.get(&key).is_some_and(|&written| seen >= written) {
                    self.0.remove(&key);
                }
            }
            watcher::Event::Delete(set) => {
                self.0.remove(&set_key(set));
            }
            watcher::Event::Init | watcher::Event::InitDone => {}
        }
    }

    /// Whether the set `name` in `namespace` is still awaited.
    pub fn waits_for(&self, namespace: &str, name: &str) -> bool {
        self.0.contains_key(&(namespace.to_owned(), name.to_owned()))
    }
}

fn set_key(set: &ReplicaSet) -> (String, String) {
    (set.namespace().unwrap_or_default(), set.name_any())
}

/// What every reconcile shares.
struct Data {
    client: Client,
    /// The ReplicaSet informer's store.
    sets: Store<ReplicaSet>,
    /// Sets written and not yet seen; lowered by the set watch.
    awaited: Mutex<Awaited>,
}

impl Data {
    fn awaited(&self) -> MutexGuard<'_, Awaited> {
        self.awaited.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The uid of an object's controlling owner, if it has one.
fn controller_uid<K: Resource>(object: &K) -> Option<&str> {
    let owner = object.meta().owner_references.iter().flatten().find(|o| o.controller == Some(true));
    owner.map(|o| o.uid.as_str())
}

/// A write one reconcile decided on.
enum Write {
    /// Create this set.
    Create(ReplicaSet),
    /// Replace the set with this copy (its `spec.replicas` changed).
    Scale(ReplicaSet),
}

/// Syncs one deployment: the controller calls this when the deployment or
/// one of its sets changed.
async fn reconcile(deployment: Arc<Deployment>, ctx: Arc<Data>) -> Result<Action, Error> {
    ctx.sets.wait_until_ready().await?;
    if deployment.metadata.deletion_timestamp.is_some() {
        // Deleting a deployment's sets is the garbage collector's job.
        return Ok(Action::await_change());
    }
    let Some(spec) = deployment.spec.as_ref() else { return Ok(Action::await_change()) };
    let namespace = deployment.namespace().unwrap_or_default();
    let hash = recon::pod_template_hash(&spec.template);
    let new_name = format!("{}-{hash}", deployment.name_any());

    let uid = deployment.metadata.uid.as_deref().unwrap_or_default();
    let mut sets: Vec<Arc<ReplicaSet>> = ctx.sets.state();
    sets.retain(|s| !uid.is_empty() && controller_uid(&**s) == Some(uid));
    sets.sort_by_key(|s| (revision(s), s.name_any()));
    let (new, old): (Vec<Arc<ReplicaSet>>, Vec<Arc<ReplicaSet>>) =
        sets.into_iter().partition(|s| s.labels().get(POD_TEMPLATE_HASH_LABEL) == Some(&hash));
    let new = new.into_iter().next();

    // One step at a time: wait until the last writes are seen.
    let busy = {
        let awaited = ctx.awaited();
        let mut names = old.iter().chain(&new).map(|s| s.name_any()).chain([new_name.clone()]);
        names.any(|name| awaited.waits_for(&namespace, &name))
    };
    // The new set's name is taken by a set that is not ours: wait for it to go.
    let taken = new.is_none() && ctx.sets.get(&ObjectRef::new(&new_name).within(&namespace)).is_some();

    let mut writes = Vec::new();
    if !busy && !taken && spec.paused != Some(true) {
        let rollout = Rollout { deployment: &deployment, hash: &hash, old: &old };
        writes =
            if is_recreate(&deployment) { rollout.recreate(new.as_deref()) } else { rollout.rolling(new.as_deref()) };
    }
    let sets = Api::<ReplicaSet>::namespaced(ctx.client.clone(), &namespace);
    let sent = writes.into_iter().map(|write| {
        let (sets, ctx) = (&sets, &ctx);
        async move {
            let result = match write {
                Write::Create(set) => sets.create(&PostParams::default(), &set).await,
                Write::Scale(set) => sets.replace(&set.name_any(), &PostParams::default(), &set).await,
            };
            // A refused write changes nothing to wait for; the event that
            // made it stale (or the next change) wakes the deployment.
            if let Ok(written) = result {
                ctx.awaited().wrote(&written, &ctx.sets);
            }
        }
    });
    let status = write_status(&deployment, new.as_deref(), &old, &ctx);
    futures::future::join(futures::future::join_all(sent), status).await;
    Ok(Action::await_change())
}

/// One reconcile's view of a deployment and its sets.
struct Rollout<'a> {
    deployment: &'a Deployment,
    hash: &'a str,
    old: &'a [Arc<ReplicaSet>],
}

impl Rollout<'_> {
    /// Kubernetes' `rolloutRolling`: surge the new set, then retire the old.
    fn rolling(&self, new: Option<&ReplicaSet>) -> Vec<Write> {
        let replicas = desired(self.deployment);
        let (max_surge, _) = fenceposts(self.deployment);
        let old_total: i64 = self.old.iter().map(|s| spec_replicas(s)).sum();
        let mut writes = Vec::new();
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
                    return vec![scaled(new, target)];
                }
                new
            }
            None => {
                created = self.new_set(new_set_replicas(replicas, max_surge, old_total, 0));
                writes.push(Write::Create(created.clone()));
                &created
            }
        };
        writes.extend(self.scale_down_old(new));
        writes
    }

    /// Kubernetes' `reconcileOldReplicaSets`: unhealthy pods first, then as
    /// many as keep the minimum available.
    fn scale_down_old(&self, new: &ReplicaSet) -> Vec<Write> {
        let old_total: i64 = self.old.iter().map(|s| spec_replicas(s)).sum();
        if old_total == 0 {
            return Vec::new();
        }
        let min_available = desired(self.deployment) - max_unavailable(self.deployment);
        let new_unavailable = spec_replicas(new) - available(new);
        let max_scaled_down = old_total + spec_replicas(new) - min_available - new_unavailable;
        if max_scaled_down <= 0 {
            return Vec::new();
        }
        let mut targets: Vec<i64> = self.old.iter().map(|s| spec_replicas(s)).collect();

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

        let available_total: i64 = self.old.iter().map(|s| available(s)).sum::<i64>() + available(new);
        let mut excess = (available_total - min_available).max(0);
        for target in &mut targets {
            let down = (*target).min(excess);
            *target -= down;
            excess -= down;
        }

        let changed = targets.into_iter().zip(self.old).filter(|(target, set)| *target != spec_replicas(set));
        changed.map(|(target, set)| scaled(set, target)).collect()
    }

    /// Kubernetes' `rolloutRecreate`: all old pods go before new ones come.
    fn recreate(&self, new: Option<&ReplicaSet>) -> Vec<Write> {
        let down: Vec<Write> = self.old.iter().filter(|s| spec_replicas(s) > 0).map(|s| scaled(s, 0)).collect();
        let old_pods_remain = self.old.iter().any(|s| s.status.as_ref().is_some_and(|st| st.replicas > 0));
        if !down.is_empty() || old_pods_remain {
            return down;
        }
        let replicas = desired(self.deployment);
        match new {
            None => vec![Write::Create(self.new_set(replicas))],
            Some(new) if spec_replicas(new) != replicas => vec![scaled(new, replicas)],
            Some(_) => Vec::new(),
        }
    }

    /// The ReplicaSet for the current template, with `replicas` pods.
    fn new_set(&self, replicas: i64) -> ReplicaSet {
        let deployment = self.deployment;
        let spec = deployment.spec.clone().unwrap_or_default();
        let mut template = spec.template;
        let labels = template.metadata.get_or_insert_default().labels.get_or_insert_default();
        labels.insert(POD_TEMPLATE_HASH_LABEL.into(), self.hash.into());
        let labels = labels.clone();
        let mut selector = spec.selector;
        selector.match_labels.get_or_insert_default().insert(POD_TEMPLATE_HASH_LABEL.into(), self.hash.into());
        let next_revision = self.old.iter().map(|s| revision(s)).max().unwrap_or(0) + 1;
        ReplicaSet {
            metadata: ObjectMeta {
                name: Some(format!("{}-{}", deployment.name_any(), self.hash)),
                namespace: deployment.namespace(),
                labels: Some(labels),
                annotations: Some(BTreeMap::from([(REVISION_ANNOTATION.into(), next_revision.to_string())])),
                owner_references: deployment.controller_owner_ref(&()).map(|owner| vec![owner]),
                ..ObjectMeta::default()
            },
            spec: Some(ReplicaSetSpec {
                replicas: Some(count(replicas)),
                selector,
                template: Some(template),
                ..ReplicaSetSpec::default()
            }),
            status: None,
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

/// The set with `spec.replicas = replicas`, keeping its cached
/// resourceVersion as the replace's precondition.
fn scaled(set: &ReplicaSet, replicas: i64) -> Write {
    let mut scaled = set.clone();
    scaled.spec.get_or_insert_default().replicas = Some(count(replicas));
    Write::Scale(scaled)
}

/// Writes the status if it changed.
async fn write_status(deployment: &Deployment, new: Option<&ReplicaSet>, old: &[Arc<ReplicaSet>], ctx: &Data) {
    let all = || old.iter().map(|s| &**s).chain(new);
    let status_of = |s: &ReplicaSet| s.status.clone().unwrap_or_default();
    let available_total: i64 = all().map(available).sum();
    let spec_total: i64 = all().map(spec_replicas).sum();
    let mut status: DeploymentStatus = deployment.status.clone().unwrap_or_default();
    status.observed_generation = deployment.metadata.generation;
    status.replicas = Some(count(all().map(|s| i64::from(status_of(s).replicas)).sum()));
    status.updated_replicas = Some(new.map_or(0, |s| status_of(s).replicas));
    status.ready_replicas = Some(count(all().map(|s| i64::from(status_of(s).ready_replicas.unwrap_or(0))).sum()));
    status.available_replicas = Some(count(available_total));
    status.unavailable_replicas = Some(count((spec_total - available_total).max(0)));
    let minimum = desired(deployment) - max_unavailable(deployment);
    set_available(&mut status, available_total >= minimum);
    if deployment.status.as_ref() == Some(&status) {
        return;
    }
    let mut updated = deployment.clone();
    updated.status = Some(status);
    let deployments = Api::<Deployment>::namespaced(ctx.client.clone(), &deployment.namespace().unwrap_or_default());
    // A refused status write (409 when the deployment changed since the
    // store's version) is retried by the reconcile that change brings.
    let _ = deployments.replace_status(&deployment.name_any(), &PostParams::default(), &updated).await;
}

/// Sets the `Available` condition to `value`, keeping it if it already says so.
fn set_available(status: &mut DeploymentStatus, value: bool) {
    let wanted = if value { "True" } else { "False" };
    let conditions = status.conditions.get_or_insert_default();
    match conditions.iter_mut().find(|c| c.type_ == "Available") {
        Some(existing) => existing.status = wanted.into(),
        None => conditions.push(DeploymentCondition {
            type_: "Available".into(),
            status: wanted.into(),
            ..DeploymentCondition::default()
        }),
    }
}

fn is_recreate(deployment: &Deployment) -> bool {
    let strategy = deployment.spec.as_ref().and_then(|s| s.strategy.as_ref());
    strategy.and_then(|s| s.type_.as_deref()) == Some("Recreate")
}

/// `spec.replicas`, defaulting to 1 as the API server does.
fn desired(deployment: &Deployment) -> i64 {
    i64::from(deployment.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1).max(0))
}

fn spec_replicas(set: &ReplicaSet) -> i64 {
    i64::from(set.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1).max(0))
}

/// Pods of the set that count as available.
fn available(set: &ReplicaSet) -> i64 {
    let status = set.status.as_ref();
    i64::from(status.and_then(|s| s.available_replicas.or(s.ready_replicas)).unwrap_or(0).max(0))
}

fn revision(set: &ReplicaSet) -> u64 {
    set.annotations().get(REVISION_ANNOTATION).and_then(|r| r.parse().ok()).unwrap_or(0)
}

fn count(n: i64) -> i32 {
    i32::try_from(n).unwrap_or(if n < 0 { 0 } else { i32::MAX })
}

/// An absolute number or a percentage of `replicas` (rounded up or down),
/// as Kubernetes' `GetScaledValueFromIntOrPercent`; `None` if malformed.
pub fn scaled_value(value: &IntOrString, replicas: i64, round_up: bool) -> Option<i64> {
    match value {
        IntOrString::Int(n) => Some(i64::from(*n)),
        IntOrString::String(text) => {
            let percent: i64 = text.strip_suffix('%').unwrap_or(text).parse().ok()?;
            let scaled = percent * replicas;
            Some(if round_up { (scaled + 99).div_euclid(100) } else { scaled.div_euclid(100) })
        }
    }
}

/// Kubernetes' `ResolveFenceposts`: (maxSurge, maxUnavailable) in pods, from
/// absolute numbers or percentages of `replicas` (25% each by default); if
/// both come out 0, one pod may be unavailable so that the rollout can move.
fn fenceposts(deployment: &Deployment) -> (i64, i64) {
    let replicas = desired(deployment);
    let strategy = deployment.spec.as_ref().and_then(|s| s.strategy.as_ref());
    let rolling = strategy.and_then(|s| s.rolling_update.as_ref());
    let quarter = IntOrString::String("25%".into());
    let resolve = |value: Option<&IntOrString>, round_up: bool| {
        scaled_value(value.unwrap_or(&quarter), replicas, round_up).unwrap_or(0).max(0)
    };
    let surge = resolve(rolling.and_then(|r| r.max_surge.as_ref()), true);
    let unavailable = resolve(rolling.and_then(|r| r.max_unavailable.as_ref()), false);
    if surge == 0 && unavailable == 0 { (0, 1) } else { (surge, unavailable) }
}

/// Kubernetes' `MaxUnavailable`: 0 for Recreate or no replicas, never more
/// than `replicas`.
fn max_unavailable(deployment: &Deployment) -> i64 {
    let replicas = desired(deployment);
    if is_recreate(deployment) || replicas == 0 {
        return 0;
    }
    fenceposts(deployment).1.min(replicas)
}

/// Nothing to do after an error but look again on the next change.
fn error_policy(_deployment: Arc<Deployment>, _error: &Error, _ctx: Arc<Data>) -> Action {
    Action::await_change()
}

/// The controller's `main`.
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client = Client::try_default().await?;
    // Both watches list from the API server's cache, however stale, as
    // client-go's informers do (resourceVersion="0").
    let deployments =
        Controller::new(Api::<Deployment>::all(client.clone()), watcher::Config::default().any_semantic());
    let (sets, writer) = reflector::store::<ReplicaSet>();
    let context = Arc::new(Data { client: client.clone(), sets, awaited: Mutex::default() });
    let set_changes = watcher(Api::<ReplicaSet>::all(client), watcher::Config::default().any_semantic());
    // Each set event lowers what it fulfils on its way into the store, and
    // wakes the deployment that owns the set.
    let (observer, mut writer) = (context.clone(), writer);
    let set_changes = set_changes
        .map_ok(move |event| {
            observer.awaited().observe(&event);
            writer.apply_watcher_event(&event);
            let touched = match event {
                watcher::Event::Apply(set) | watcher::Event::InitApply(set) | watcher::Event::Delete(set) => Some(set),
                watcher::Event::Init | watcher::Event::InitDone => None,
            };
            futures::stream::iter(touched.into_iter().map(Ok))
        })
        .try_flatten();
    deployments
        .owns_stream(set_changes)
        .run(reconcile, error_policy, context)
        .for_each(|_result| futures::future::ready(()))
        .await;
    Ok(())
}

/// The plugin: `main`, run by Recon as the controller `deployment`.
pub fn controller() -> kube::Plugin {
    kube::Plugin::new("deployment", main)
}

// The Wasm plugin: `cargo build --release --target wasm32-unknown-unknown -p recon-plugin-deployment`.
#[cfg(feature = "export")]
kube::export_controller!(controller());

#[cfg(test)]
mod tests;
