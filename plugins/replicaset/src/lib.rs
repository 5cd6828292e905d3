//! The built-in ReplicaSet controller, written as a kube-rs controller:
//! keeps `spec.replicas` pods running for every ReplicaSet.
//!
//! A set's pods are the active pods (not terminating, not finished) whose
//! controller owner reference has the set's uid, read through an index of
//! the store's pods by owner ([`owned::PodsByOwner`]) rather than a scan of
//! every pod. With too few, the
//! reconcile creates pods from `spec.template` (`generateName: {set}-`,
//! the template's labels and annotations, a controller owner reference);
//! with too many it deletes the extras, preferring unbound pods, then pods
//! that are not Ready, then the highest names (with the component
//! parameter `scaleDownTieBreak: uid`, the highest uids: a stand-in for
//! the randomised tie-break of Kubernetes 1.21's LogarithmicScaleDown, so
//! that two versions of the controller pick different victims). At most
//! 500 pods are created or deleted per reconcile. The status (`replicas`,
//! `readyReplicas`, `observedGeneration`) is written with `replace_status`
//! only when it changed.
//!
//! # Expectations
//!
//! Like the real controller it keeps "expectations" per set: after sending
//! creates or deletes it does nothing more for that set until its pod
//! informer has shown each create (or the create failed) and each deleted
//! pod terminating or gone (or the delete failed). Without them, every
//! reconcile between the writes and the watch events that show them would
//! create the same pods again. They are raised before the writes are sent
//! and lowered by the pod watch's events on their way into the store
//! ([`Expectations`], the real controller's `addPod`/`deletePod` handlers),
//! so that the pod stream is built by hand (`watcher` → expectations →
//! store) and given to the controller with `owns_stream`.
//!
//! Expectations expire after `expectationsTimeoutMs` (default 5 minutes,
//! as in Kubernetes), and a write that failed for a reason other than a
//! stale view is retried after 1 s. They protect one instance only: a
//! restarted controller that relists from a stale cache still acts on
//! what it sees (the "ReplicaSet flapping" scenario).
//!
//! Expired expectations count as satisfied, as in Kubernetes: a controller
//! whose pod informer lags longer than the timeout then acts on a cache
//! that does not show its own creates, and creates them again (Kubernetes
//! issue #129795). The component parameters switch on the fixes discussed
//! for it, each off by default:
//! - `expiredExpectations: wait`: expiry is not satisfaction; the set waits
//!   until its informer shows what it wrote;
//! - `expiredExpectations: relist`: on expiry, read the set's pods with a
//!   quorum list (`resourceVersion` unset, from etcd) and act on that.
//!
//! KEP-5647's read-your-own-writes gate (the fix Kubernetes 1.36 shipped)
//! is not this controller's code: it is the component's
//! `mitigations: [staleControllerConsistency]`, which Recon's kube
//! runtime applies to every controller built on it.
//!
//! Its pod store keeps what it reads of a pod and no more ([`CachedPod`],
//! a type of its own with `Pod`'s kind), as kube's optimization guide
//! suggests for a store of every pod in a cluster.
//!
//! Everything is kube's public API but two calls of `kube::recon`: the
//! component's parameters ([`Settings::from_params`], where a real
//! controller reads flags) and the virtual clock (where it would read
//! `Instant::now`).
//!
//! Differences from the real controller: pods are found by ownership only
//! (no label-selector matching, no adoption or release of orphans); no
//! `minReadySeconds`, `availableReplicas` or conditions.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::{FutureExt, StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Pod, PodCondition};
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams, Preconditions, Resource, ResourceExt};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, recon};
use serde::Deserialize;

pub mod expectations;
pub mod owned;

use expectations::{Expectations, Key, key};
use owned::PodsByOwner;

/// How long expectations hold by default: 5 minutes of virtual time, as
/// Kubernetes' `ExpectationsTimeout`. Override with the component parameter
/// `expectationsTimeoutMs`.
pub const DEFAULT_EXPECTATIONS_TIMEOUT_MS: u64 = 300_000;
/// How long a set waits after a write failed for a reason other than a
/// stale view (the API server could not reach etcd, say), and after a
/// failed status write or quorum list.
pub const RETRY_AFTER: Duration = Duration::from_secs(1);
/// Most pods created or deleted by one reconcile (the real controller's burst).
const BURST: usize = 500;

/// What can go wrong in a reconcile.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The set lacks a field the reconcile needs.
    #[error("ReplicaSet has no {0}")]
    MissingField(&'static str),
    /// The pod store will never be filled (its watch ended).
    #[error("pod store: {0}")]
    PodStore(#[from] reflector::WriterDropped),
    /// The API server refused the status write (409 Conflict when the set
    /// changed since the store's version) or the quorum list of its pods.
    #[error("API request failed: {0}")]
    Api(#[source] kube::Error),
}

/// What expired expectations mean (component parameter `expiredExpectations`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnExpiry {
    /// `satisfied`: act on the cache as if they were fulfilled (Kubernetes
    /// today, and issue #129795).
    #[default]
    Satisfied,
    /// `wait`: keep waiting for the informer to show the writes.
    Wait,
    /// `relist`: read the set's pods from etcd (a quorum list) and act on that.
    Relist,
}

/// Which of equally ranked pods go first on a scale-down (component
/// parameter `scaleDownTieBreak`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TieBreak {
    /// `name`: the highest name.
    #[default]
    Name,
    /// `uid`: the highest uid.
    Uid,
}

/// The controller's settings: the component's parameters, as a real
/// controller's flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// `expectationsTimeoutMs`: how long expectations hold.
    pub expectations_timeout_ms: u64,
    /// `expiredExpectations`: what expired expectations mean.
    pub on_expiry: OnExpiry,
    /// `scaleDownTieBreak`.
    pub tie_break: TieBreak,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            expectations_timeout_ms: DEFAULT_EXPECTATIONS_TIMEOUT_MS,
            on_expiry: OnExpiry::default(),
            tie_break: TieBreak::default(),
        }
    }
}

impl Settings {
    /// The settings the scenario gives the component, defaults for the rest.
    pub fn from_params() -> Result<Settings, recon::ParamError> {
        let default = Settings::default();
        Ok(Settings {
            expectations_timeout_ms: recon::param("expectationsTimeoutMs")?.unwrap_or(default.expectations_timeout_ms),
            on_expiry: recon::param("expiredExpectations")?.unwrap_or(default.on_expiry),
            tie_break: recon::param("scaleDownTieBreak")?.unwrap_or(default.tie_break),
        })
    }
}

/// What every reconcile shares.
struct Data {
    client: Client,
    settings: Settings,
    /// The pod informer's store.
    pods: Store<CachedPod>,
    /// The store's pods by controlling owner, written with the store.
    by_owner: Mutex<PodsByOwner>,
    /// Per set, what it waits to see; lowered by the pod watch.
    expectations: Mutex<Expectations>,
}

impl Data {
    fn expectations(&self) -> MutexGuard<'_, Expectations> {
        self.expectations.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn by_owner(&self) -> MutexGuard<'_, PodsByOwner> {
        self.by_owner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The pods the store holds whose controlling owner has uid `owner`,
    /// by namespace and name: found through the owner index, so a sync
    /// costs its own pods, not every pod in the cluster.
    fn owned_pods(&self, owner: &str) -> Vec<Arc<CachedPod>> {
        self.by_owner().owned_by(owner).cloned().collect()
    }
}

/// The current virtual time (a reconcile always runs at a known time).
fn now_ms() -> u64 {
    recon::now_ms().unwrap_or_default()
}

/// The uid of an object's controlling owner, if it has one.
pub fn controller_uid<K: Resource>(object: &K) -> Option<&str> {
    let owner = object.meta().owner_references.iter().flatten().find(|o| o.controller == Some(true));
    owner.map(|o| o.uid.as_str()).filter(|uid| !uid.is_empty())
}

/// Whether the pod still counts: not terminating and not finished.
pub fn is_active(pod: &CachedPod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    pod.metadata.deletion_timestamp.is_none() && !matches!(phase, Some("Succeeded" | "Failed"))
}

/// Whether the pod's `Ready` condition is true.
pub fn is_ready(pod: &CachedPod) -> bool {
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_ref());
    conditions.into_iter().flatten().any(|c| c.type_ == "Ready" && c.status == "True")
}

fn is_bound(pod: &CachedPod) -> bool {
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).is_some_and(|n| !n.is_empty())
}

/// What this controller reads of a pod, and all its pod store keeps:
/// the metadata, the node the pod is bound to ([`is_bound`]), and its
/// phase and conditions ([`is_active`], [`is_ready`]). A type of its own
/// with `Pod`'s kind, group and version (kube-derive's `Resource` with
/// `inherit`), which kube's `Api` lists, watches and deletes as it does
/// a `Pod`. The store holds every pod in the cluster, and a decoded `Pod`
/// is 2.4 KB before its containers: decoding and copying whole pods was
/// most of this controller's cost per pod event, for fields it never
/// reads.
#[derive(kube::Resource, Clone, Debug, Default, Deserialize)]
#[resource(inherit = Pod)]
pub struct CachedPod {
    /// The pod's metadata.
    pub metadata: ObjectMeta,
    /// The part of `spec` read.
    pub spec: Option<CachedPodSpec>,
    /// The part of `status` read.
    pub status: Option<CachedPodStatus>,
}

/// The part of a pod's `spec` this controller reads.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CachedPodSpec {
    /// The node the scheduler bound the pod to.
    pub node_name: Option<String>,
}

/// The part of a pod's `status` this controller reads.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct CachedPodStatus {
    /// `Pending`, `Running`, `Succeeded`, `Failed` or `Unknown`.
    pub phase: Option<String>,
    /// `Ready` among them.
    pub conditions: Option<Vec<PodCondition>>,
}

/// Pods in the order they should go: unbound first, then not Ready, then
/// by name (or uid), highest first.
pub fn deletion_order(mut pods: Vec<Arc<CachedPod>>, tie_break: TieBreak) -> Vec<Arc<CachedPod>> {
    pods.sort_by_key(|p| {
        let tie = match tie_break {
            TieBreak::Name => p.metadata.name.clone(),
            TieBreak::Uid => p.metadata.uid.clone(),
        };
        (is_bound(p), is_ready(p), Reverse(tie.unwrap_or_default()))
    });
    pods
}

/// A pod from the set's template; the API server picks its name.
pub fn new_pod(rs: &ReplicaSet) -> Pod {
    let template = rs.spec.as_ref().and_then(|s| s.template.clone()).unwrap_or_default();
    let template_meta = template.metadata.unwrap_or_default();
    Pod {
        metadata: ObjectMeta {
            generate_name: Some(format!("{}-", rs.name_any())),
            namespace: rs.namespace(),
            labels: template_meta.labels,
            annotations: template_meta.annotations,
            owner_references: rs.controller_owner_ref(&()).map(|owner| vec![owner]),
            ..ObjectMeta::default()
        },
        spec: Some(template.spec.unwrap_or_default()),
        status: None,
    }
}

/// Whether a write's failure is transient (worth a retry after
/// [`RETRY_AFTER`]) rather than a stale view, which the next event fixes.
fn is_transient(error: &kube::Error) -> bool {
    !matches!(error, kube::Error::Api(s) if matches!(s.reason.as_str(), "Conflict" | "NotFound" | "AlreadyExists"))
}

/// The set's pods read from etcd (a quorum list of its namespace), for
/// expired expectations with `expiredExpectations: relist`.
async fn quorum_list(rs: &ReplicaSet, ctx: &Data) -> Result<Vec<CachedPod>, Error> {
    let namespace = rs.namespace().ok_or(Error::MissingField(".metadata.namespace"))?;
    let pods = Api::<CachedPod>::namespaced(ctx.client.clone(), &namespace);
    Ok(pods.list(&ListParams::default()).await.map_err(Error::Api)?.items)
}

/// Syncs one set: the controller calls this when the set or one of its
/// pods changed, and when a requeue is due.
async fn reconcile(rs: Arc<ReplicaSet>, ctx: Arc<Data>) -> Result<Action, Error> {
    ctx.pods.wait_until_ready().await?;
    if rs.metadata.deletion_timestamp.is_some() {
        // Deleting a set's pods is the garbage collector's job.
        return Ok(Action::await_change());
    }
    let set = key(&*rs);
    let uid = rs.metadata.uid.clone().ok_or(Error::MissingField(".metadata.uid"))?;
    ctx.expectations().forget_other_incarnations(&set, &uid);
    let now = now_ms();
    let state = ctx.expectations().state(&set, now);
    let (fulfilled, live) = match state {
        expectations::State::None | expectations::State::Fulfilled => (true, None),
        expectations::State::Pending => (false, None),
        expectations::State::Expired => match ctx.settings.on_expiry {
            OnExpiry::Satisfied => (true, None),
            // Not acting yet; the status is still written below.
            OnExpiry::Wait => (false, None),
            OnExpiry::Relist => match quorum_list(&rs, &ctx).await {
                Ok(pods) => (true, Some(pods)),
                Err(_) => return Ok(Action::requeue(RETRY_AFTER)),
            },
        },
    };
    // The set's active pods: as the quorum list showed them after expired
    // expectations, as the store holds them otherwise.
    let owned: Vec<Arc<CachedPod>> = match live {
        Some(pods) => pods.into_iter().map(Arc::new).collect(),
        None => ctx.owned_pods(&uid),
    };
    let active: Vec<Arc<CachedPod>> =
        owned.into_iter().filter(|p| controller_uid(&**p) == Some(&uid) && is_active(p)).collect();
    let want = usize::try_from(rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)).unwrap_or(0);
    let not_cached: BTreeSet<Key> = match state {
        // Pods a live read showed that the store does not hold yet: their
        // events are still to come, and fulfil no expectation of a later write.
        expectations::State::Expired if ctx.settings.on_expiry == OnExpiry::Relist => {
            active.iter().filter(|p| ctx.pods.get(&ObjectRef::from_obj(&***p)).is_none()).map(|p| key(&**p)).collect()
        }
        _ => BTreeSet::new(),
    };

    let status = write_status(&rs, &active, &ctx);
    if fulfilled && active.len() != want {
        let (writes, status) =
            futures::future::join(sync_pods(&rs, &set, &uid, &active, want, not_cached, &ctx), status).await;
        status?;
        return Ok(writes);
    }
    // The guard is scoped, not dropped by hand, so that it is plainly not
    // held across the await below.
    let action = {
        let mut expectations = ctx.expectations();
        if !not_cached.is_empty() {
            // The live read agreed with the set, but the store has yet to show
            // those pods: until it does, it must not be acted on.
            let expires_ms = now + ctx.settings.expectations_timeout_ms;
            expectations.expect(&set, &uid, expires_ms, 0, BTreeMap::new(), not_cached);
            Action::requeue(Duration::from_millis(ctx.settings.expectations_timeout_ms))
        } else if fulfilled {
            expectations.forget(&set);
            Action::await_change()
        } else {
            // Make sure a timer wakes the set when it may act again, whatever
            // earlier timers were for; once expired and waiting for the
            // informer, its events wake the set.
            match expectations.wake_at(&set, now) {
                Some(wake) if wake > now || ctx.settings.on_expiry != OnExpiry::Wait => {
                    Action::requeue(Duration::from_millis(wake.saturating_sub(now)))
                }
                _ => Action::await_change(),
            }
        }
    };
    status.await?;
    Ok(action)
}

/// Creates or deletes the difference between `active` and `want` pods,
/// with the set's expectations raised before the writes go out and
/// lowered by each that fails. Returns when every write has its answer:
/// a requeue for when the expectations expire, or sooner if a write failed.
async fn sync_pods(
    rs: &ReplicaSet,
    set: &Key,
    uid: &str,
    active: &[Arc<CachedPod>],
    want: usize,
    seen_live: BTreeSet<Key>,
    ctx: &Data,
) -> Action {
    let timeout = ctx.settings.expectations_timeout_ms;
    let expires_ms = now_ms() + timeout;
    let namespace = rs.namespace().unwrap_or_default();
    // Created whole from the template; deleted by name, the answer read
    // as what the store keeps.
    let pods = &Api::<Pod>::namespaced(ctx.client.clone(), &namespace);
    let cached = &Api::<CachedPod>::namespaced(ctx.client.clone(), &namespace);
    let template = &new_pod(rs);
    let mut writes = Vec::new();
    if active.len() < want {
        let count = (want - active.len()).min(BURST);
        ctx.expectations().expect(set, uid, expires_ms, count, BTreeMap::new(), seen_live);
        for _ in 0..count {
            let create = async move {
                let result = pods.create(&PostParams::default(), template).await;
                let failed = result.as_ref().err().map(is_transient);
                ctx.expectations().created(set, failed, now_ms());
                failed
            };
            writes.push(create.boxed_local());
        }
    } else {
        let victims: Vec<Arc<CachedPod>> = deletion_order(active.to_vec(), ctx.settings.tie_break)
            .into_iter()
            .take((active.len() - want).min(BURST))
            .collect();
        let deleted = victims.iter().map(|p| (key(&**p), p.metadata.uid.clone().unwrap_or_default()));
        ctx.expectations().expect(set, uid, expires_ms, 0, deleted.collect(), seen_live);
        for victim in victims {
            let delete = async move {
                let name = victim.name_any();
                let preconditions = Preconditions { uid: victim.metadata.uid.clone(), resource_version: None };
                let params = DeleteParams { preconditions: Some(preconditions), ..DeleteParams::default() };
                let result = cached.delete(&name, &params).await;
                let failed = result.as_ref().err().map(is_transient);
                ctx.expectations().deleted(set, &key(&*victim), failed, now_ms());
                failed
            };
            writes.push(delete.boxed_local());
        }
    }
    let failures: Vec<Option<bool>> = futures::future::join_all(writes).await;
    let now = now_ms();
    if failures.contains(&Some(true)) {
        Action::requeue(RETRY_AFTER)
    } else if failures.contains(&Some(false)) {
        // A stale view: look again at once.
        Action::requeue(Duration::ZERO)
    } else {
        // Come back when they expire, in case what they wait for never shows.
        Action::requeue(Duration::from_millis(expires_ms.saturating_sub(now)))
    }
}

/// Writes the set's status if it changed.
async fn write_status(rs: &ReplicaSet, active: &[Arc<CachedPod>], ctx: &Data) -> Result<(), Error> {
    let replicas = i32::try_from(active.len()).unwrap_or(i32::MAX);
    let ready = i32::try_from(active.iter().filter(|p| is_ready(p)).count()).unwrap_or(i32::MAX);
    let mut status = rs.status.clone().unwrap_or_default();
    status.replicas = replicas;
    status.ready_replicas = Some(ready);
    status.observed_generation = rs.metadata.generation;
    if rs.status.as_ref() == Some(&status) {
        return Ok(());
    }
    let mut updated = rs.clone();
    updated.status = Some(status);
    let sets = Api::<ReplicaSet>::namespaced(ctx.client.clone(), &rs.namespace().unwrap_or_default());
    sets.replace_status(&rs.name_any(), &PostParams::default(), &updated).await.map_err(Error::Api)?;
    Ok(())
}

/// A failed status write or quorum list: try again after a while.
fn error_policy(_rs: Arc<ReplicaSet>, _error: &Error, _ctx: Arc<Data>) -> Action {
    Action::requeue(RETRY_AFTER)
}

/// The controller's `main`.
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let settings = Settings::from_params()?;
    let client = Client::try_default().await?;
    // Both watches list from the API server's cache, however stale, as
    // client-go's informers do (resourceVersion="0").
    let sets = Controller::new(Api::<ReplicaSet>::all(client.clone()), watcher::Config::default().any_semantic());
    let (pods, writer) = reflector::store::<CachedPod>();
    let context = Arc::new(Data {
        client: client.clone(),
        settings,
        pods,
        by_owner: Mutex::default(),
        expectations: Mutex::default(),
    });
    let pod_changes =
        // Nor are the managed fields read (kube's optimization guide,
        // *minimize what you store*).
        watcher(Api::<CachedPod>::all(client), watcher::Config::default().any_semantic())
            .modify(|pod| pod.managed_fields_mut().clear());
    // Each pod event lowers the expectations it fulfils on its way into
    // the store, and triggers the sets that own the pod.
    let (observer, mut writer) = (context.clone(), writer);
    let pod_changes = pod_changes
        .map_ok(move |event| {
            let touched = observer.expectations().observe(&event, &observer.pods);
            writer.apply_watcher_event(&event);
            observer.by_owner().apply_watcher_event(&event, &observer.pods);
            futures::stream::iter(touched.into_iter().map(Ok))
        })
        .try_flatten();
    sets.owns_stream(pod_changes)
        .run(reconcile, error_policy, context)
        .for_each(|_result| futures::future::ready(()))
        .await;
    Ok(())
}

/// The plugin: `main`, run by Recon as the controller `replicaset`.
pub fn controller() -> kube::Plugin {
    kube::Plugin::new("replicaset", main)
}

// The Wasm plugin: `cargo build --release --target wasm32-unknown-unknown -p recon-plugin-replicaset`.
#[cfg(feature = "export")]
kube::export_controller!(controller());

#[cfg(test)]
mod tests;
