//! The built-in ReplicaSet controller: keeps `spec.replicas` pods running.
//!
//! [`ReplicaSetController`] watches ReplicaSets and Pods. A set's pods are
//! the active pods (not terminating, not finished) whose controller owner
//! has the set's uid. With too few it creates pods from `spec.template`
//! (`generateName: {set}-`, the template's labels and annotations, a
//! controller owner reference); with too many it deletes the extras,
//! preferring unbound pods, then pods that are not Ready, then the highest
//! names (with the component parameter `scaleDownTieBreak: uid`, the highest
//! uids instead: a stand-in for the randomised tie-break that Kubernetes
//! 1.21's LogarithmicScaleDown brought, so that two versions of the
//! controller pick different victims). At most 500 pods are created or
//! deleted per reconcile.
//!
//! Like the real controller it keeps "expectations" per set: after sending
//! creates or deletes it does nothing more for that set until each create
//! has been seen in its cache (or failed) and each deleted pod has been seen
//! terminating or gone (or the delete failed). Without them, every call
//! between the writes and the watch events that show them would create the
//! same pods again. Expectations expire after `expectationsTimeoutMs`
//! (component parameter; default 5 minutes, as in Kubernetes), and a write
//! that failed for a reason other than a stale view is retried after 1 s.
//! Expectations protect one instance only: a restarted controller that
//! relists from a stale cache still acts on what it sees, which is the
//! "ReplicaSet flapping" scenario.
//!
//! Expired expectations count as satisfied, as in Kubernetes: a controller
//! whose pod informer lags longer than the timeout then acts on a cache
//! that does not show its own creates, and creates them again (Kubernetes
//! issue #129795). The component parameters switch on the fixes discussed
//! for it, each off by default:
//! - `expiredExpectations: wait`: expiry is not satisfaction; the set waits
//!   until its informer shows what it wrote;
//! - `expiredExpectations: relist`: on expiry, read the set's pods with a
//!   quorum list (`resourceVersion` unset, from etcd) and act on that;
//! - `staleControllerConsistency: true`: KEP-5647's read-your-own-writes
//!   gate: remember the resourceVersion of the controller's own last pod
//!   write for each set, and skip the set's sync while the pod informer
//!   has not reached it.
//!
//! The status (`replicas`, `readyReplicas`, `observedGeneration`) is written
//! with `UpdateStatus` only when it changed.
//!
//! It is written as a [`Reconciler`] ([`ReplicaSets`], one set per call)
//! run by the SDK's [`Runtime`], which keeps the informer cache, waits for
//! the first lists, tracks the status writes and schedules the timers the
//! reconciles ask for; the pod writes are tracked by the expectations.
//!
//! Differences from the real controller: pods are found by ownership only
//! (no label-selector matching, no adoption or release of orphans); no
//! `minReadySeconds`, `availableReplicas` or conditions; the results of
//! failed creates are matched to sets in the order the creates were sent,
//! because a create by `generateName` has no name to match on.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

use recon_abi::{
    ABI_VERSION, Action, ActionResult, ComponentConfig, Controller, Input, ListMode, Manifest, Object, ObjectKey,
    ObjectMeta, Outcome, Output, RequestId, StatusReason, Verb, WatchSpec, WritePermission,
};
use recon_sdk::meta::{self, controller_uid, json_object_mut, owner_reference};
use recon_sdk::reconcile::{Context, ListParams, Reconciler, Requeue, Runtime};
use recon_sdk::{Cache, Change, Index, RETRY_AFTER_MS, pod};
use serde_json::{Value, json};

/// The watch index of ReplicaSets in the manifest.
const SETS: usize = 0;
/// The watch index of Pods in the manifest.
const PODS: usize = 1;
/// Most pods created or deleted by one reconcile (the real controller's burst).
const BURST: usize = 500;

/// How long expectations hold by default: 5 minutes of virtual time, as
/// Kubernetes' `ExpectationsTimeout`. Override with the component parameter
/// `expectationsTimeoutMs`.
pub const DEFAULT_EXPECTATIONS_TIMEOUT_MS: u64 = 300_000;

/// What one set waits to see before it acts again.
#[derive(Clone, Debug)]
struct Expectations {
    /// The set incarnation the expectations were raised for.
    uid: String,
    /// Creates not yet seen in the cache nor failed.
    adds: i64,
    /// Pods deleted and not yet seen terminating or gone, with their uids.
    deletes: BTreeMap<ObjectKey, String>,
    /// When they expire.
    expires_ms: u64,
    /// A write failed transiently: do not act before this time.
    not_before_ms: u64,
    /// Pods a live read showed before the informer did: when they appear
    /// in the cache they are not one of these creates.
    seen_live: BTreeSet<ObjectKey>,
}

impl Expectations {
    /// Every write they wait for has been seen (or failed), and so has
    /// every pod a live read showed first.
    fn seen_all(&self) -> bool {
        self.adds <= 0 && self.deletes.is_empty() && self.seen_live.is_empty()
    }
}

/// What expired expectations mean (component parameter `expiredExpectations`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum OnExpiry {
    /// `satisfied`: act on the cache as if they were fulfilled (Kubernetes
    /// today, and issue #129795).
    #[default]
    Satisfied,
    /// `wait`: keep waiting for the informer to show the writes.
    Wait,
    /// `relist`: read the set's pods from etcd (a quorum list) and act on that.
    Relist,
}

impl OnExpiry {
    fn from_param(value: Option<&Value>) -> OnExpiry {
        match value.and_then(Value::as_str) {
            Some("wait") => OnExpiry::Wait,
            Some("relist") => OnExpiry::Relist,
            _ => OnExpiry::Satisfied,
        }
    }
}

/// A create whose result has not arrived, in the order creates were sent.
#[derive(Clone, Debug)]
struct PendingCreate {
    set: ObjectKey,
    set_uid: String,
}

/// The ReplicaSet controller (see the crate documentation): [`ReplicaSets`]
/// in the SDK's [`Runtime`].
#[derive(Clone, Debug, Default)]
pub struct ReplicaSetController {
    runtime: Runtime<ReplicaSets>,
}

impl ReplicaSetController {
    /// A controller with an empty cache.
    pub fn new() -> ReplicaSetController {
        ReplicaSetController::default()
    }
}

impl Controller for ReplicaSetController {
    fn init(&mut self, config: &ComponentConfig) -> Manifest {
        self.runtime.init(config)
    }

    fn handle(&mut self, input: &Input) -> Output {
        self.runtime.handle(input)
    }
}

/// The ReplicaSet reconciler: one set per call of [`Reconciler::reconcile`],
/// with the pods it owns and its expectations.
#[derive(Clone, Debug)]
pub struct ReplicaSets {
    /// Pods by the uid of their controlling owner.
    owned: Index,
    expectations: BTreeMap<ObjectKey, Expectations>,
    creates: VecDeque<PendingCreate>,
    expectations_timeout_ms: u64,
    /// Break ties among equally ranked victims by uid instead of name.
    tie_break_by_uid: bool,
    /// What expired expectations mean.
    on_expiry: OnExpiry,
    /// KEP-5647: skip a set's sync until the pod informer has seen the
    /// controller's own last pod write for it.
    stale_controller_consistency: bool,
    /// The resourceVersion of the last pod write (create or delete) each
    /// set's sync made, for KEP-5647's gate.
    last_write: BTreeMap<ObjectKey, u64>,
    /// The quorum list in flight for each set whose expectations expired
    /// (`expiredExpectations: relist`).
    relists: BTreeMap<ObjectKey, RequestId>,
}

impl Default for ReplicaSets {
    fn default() -> Self {
        ReplicaSets {
            owned: Index::new(|p| controller_uid(p).map(str::to_string)),
            expectations: BTreeMap::new(),
            creates: VecDeque::new(),
            expectations_timeout_ms: DEFAULT_EXPECTATIONS_TIMEOUT_MS,
            tie_break_by_uid: false,
            on_expiry: OnExpiry::Satisfied,
            stale_controller_consistency: false,
            last_write: BTreeMap::new(),
            relists: BTreeMap::new(),
        }
    }
}

impl Reconciler for ReplicaSets {
    fn init(&mut self, config: &ComponentConfig) -> Manifest {
        let expectations_timeout_ms = config
            .params
            .get("expectationsTimeoutMs")
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_EXPECTATIONS_TIMEOUT_MS);
        let tie_break_by_uid = config.params.get("scaleDownTieBreak").and_then(Value::as_str) == Some("uid");
        let on_expiry = OnExpiry::from_param(config.params.get("expiredExpectations"));
        let stale_controller_consistency =
            config.params.get("staleControllerConsistency").and_then(Value::as_bool) == Some(true);
        *self = ReplicaSets {
            expectations_timeout_ms,
            tie_break_by_uid,
            on_expiry,
            stale_controller_consistency,
            ..ReplicaSets::default()
        };
        Manifest {
            name: "replicaset".into(),
            abi_version: ABI_VERSION,
            watches: vec![
                WatchSpec { kind: "ReplicaSet".into(), ..WatchSpec::default() },
                WatchSpec { kind: "Pod".into(), ..WatchSpec::default() },
            ],
            writes: vec![
                WritePermission { kind: "Pod".into(), verbs: vec![Verb::Create, Verb::Delete] },
                WritePermission { kind: "ReplicaSet".into(), verbs: vec![Verb::UpdateStatus] },
            ],
            node_agent: false,
            list_mode: ListMode::Any,
        }
    }

    /// A set's own changes make it dirty; a pod's make its owners (before
    /// and after) dirty, and lower the expectations the pod fulfils.
    fn keys_for(&mut self, change: &Change, cache: &Cache) -> Vec<ObjectKey> {
        if change.watch == SETS {
            return vec![change.key.clone()];
        }
        let current = cache.get(change.watch, &change.key);
        self.owned.update(&change.key, current);
        let owners = change.old.iter().chain(current).filter_map(meta::controller_key);
        let owners: BTreeSet<ObjectKey> = owners.filter(|k| k.kind == "ReplicaSet").collect();
        for set in &owners {
            if let Some(expected) = self.expectations.get_mut(set) {
                let appeared =
                    change.old.is_none() && current.is_some_and(|p| controller_uid(p) == Some(&expected.uid));
                if appeared && !expected.seen_live.remove(&change.key) {
                    expected.adds -= 1;
                }
                let deleted_uid = expected.deletes.get(&change.key);
                if deleted_uid.is_some_and(|uid| current.is_none_or(|p| p.is_terminating() || &p.metadata.uid != uid)) {
                    expected.deletes.remove(&change.key);
                }
            }
        }
        owners.into_iter().collect()
    }

    /// Pod creates and deletes are matched to the expectations of the set
    /// that sent them (the runtime tracks the status writes); a failed one
    /// lowers them, and a transient failure holds the set back for
    /// [`RETRY_AFTER_MS`].
    fn keys_for_result(&mut self, result: &ActionResult, _cache: &Cache, now: u64) -> Vec<ObjectKey> {
        let failed = match &result.outcome {
            Outcome::Ok(_) | Outcome::Listed(_) => None,
            Outcome::Err(status) => Some(status.reason),
        };
        let transient = failed.is_some_and(|reason| {
            !matches!(reason, StatusReason::Conflict | StatusReason::NotFound | StatusReason::AlreadyExists)
        });
        let set = match (result.verb, &result.outcome) {
            (Verb::Create, Outcome::Ok(Some(pod))) => {
                // Matched by owner; the expectation stays until the pod is seen.
                let uid = controller_uid(pod).unwrap_or_default();
                if let Some(at) = self.creates.iter().position(|c| c.set_uid == uid)
                    && let Some(create) = self.creates.remove(at)
                {
                    self.wrote(create.set, pod);
                }
                return Vec::new();
            }
            (Verb::Create, _) => {
                // No name to match on: the oldest create in that namespace.
                let namespace = result.key.namespace.as_str();
                let Some(at) = self.creates.iter().position(|c| c.set.namespace == namespace) else {
                    return Vec::new();
                };
                let Some(create) = self.creates.remove(at) else { return Vec::new() };
                let Some(expected) = self.expectations.get_mut(&create.set).filter(|e| e.uid == create.set_uid) else {
                    return Vec::new();
                };
                expected.adds -= 1;
                create.set
            }
            (Verb::Delete, _) => {
                let Some(set) =
                    self.expectations.iter().find(|(_, e)| e.deletes.contains_key(&result.key)).map(|(k, _)| k.clone())
                else {
                    return Vec::new();
                };
                if failed.is_none() {
                    if let Outcome::Ok(Some(pod)) = &result.outcome {
                        self.wrote(set, pod);
                    }
                    // Fulfilled when the pod is seen terminating or gone.
                    return Vec::new();
                }
                if let Some(expected) = self.expectations.get_mut(&set) {
                    expected.deletes.remove(&result.key);
                }
                set
            }
            // Status writes are the runtime's to track, and so are the
            // quorum lists (their sets are woken when they arrive).
            (Verb::UpdateStatus | Verb::Update | Verb::Patch | Verb::PatchStatus | Verb::Get | Verb::List, _) => {
                return Vec::new();
            }
        };
        if transient && let Some(expected) = self.expectations.get_mut(&set) {
            // The reconcile this wakes sees the back-off and sets the timer.
            expected.not_before_ms = now + RETRY_AFTER_MS;
        }
        vec![set]
    }

    fn reconcile(&mut self, key: &ObjectKey, ctx: &mut Context<'_>) -> Requeue {
        let now = ctx.now_ms();
        let Some(set) = ctx.cache().get(SETS, key) else {
            self.expectations.remove(key);
            return Requeue::AwaitChange;
        };
        if set.is_terminating() {
            // Deleting a set's pods is the garbage collector's job.
            return Requeue::AwaitChange;
        }
        if self.expectations.get(key).is_some_and(|e| e.uid != set.metadata.uid) {
            self.expectations.remove(key);
        }
        if self.stale_controller_consistency && self.behind_own_writes(key, ctx.cache()) {
            // KEP-5647: the informer has not yet seen what this controller
            // wrote; the event that shows it wakes the set again.
            return Requeue::AwaitChange;
        }
        let (fulfilled, live) = match self.expectations.get(key) {
            None => (true, None),
            Some(e) if now < e.not_before_ms => (false, None),
            Some(e) if e.seen_all() => (true, None),
            Some(e) if now < e.expires_ms => (false, None),
            Some(_) => match self.on_expiry {
                OnExpiry::Satisfied => (true, None),
                // Not acting yet; the status is still written below.
                OnExpiry::Wait => (false, None),
                OnExpiry::Relist => match self.relist(key, ctx) {
                    Some(pods) => (true, Some(pods)),
                    // Sent or in flight: its answer wakes the set.
                    None if self.relists.contains_key(key) => return Requeue::AwaitChange,
                    // It failed: try again after a while.
                    None => return Requeue::AfterMs(RETRY_AFTER_MS),
                },
            },
        };
        // The set's active pods: as the quorum list showed them after
        // expired expectations, as the cache holds them otherwise.
        let active: Vec<&Object> = match &live {
            Some(pods) => pods.iter().filter(|p| controller_uid(p) == Some(&set.metadata.uid)).collect(),
            None => self.owned.keys(&set.metadata.uid).filter_map(|k| ctx.cache().get(PODS, k)).collect(),
        };
        let active: Vec<&Object> = active.into_iter().filter(|p| pod::is_active(p)).collect();
        let want = meta::replicas(set) as usize;

        let mut requeue = Requeue::AwaitChange;
        if fulfilled && active.len() != want {
            let mut expected = Expectations {
                uid: set.metadata.uid.clone(),
                adds: 0,
                deletes: BTreeMap::new(),
                expires_ms: now + self.expectations_timeout_ms,
                not_before_ms: 0,
                seen_live: not_cached(&active, ctx.cache()),
            };
            if active.len() < want {
                let count = (want - active.len()).min(BURST);
                for _ in 0..count {
                    // Tracked by the expectations: a create by
                    // `generateName` has no key for the runtime to track.
                    ctx.push(Action::Create { object: new_pod(set), dry_run: false });
                    self.creates.push_back(PendingCreate { set: key.clone(), set_uid: set.metadata.uid.clone() });
                }
                expected.adds = count as i64;
            } else {
                let order = deletion_order(active.clone(), self.tie_break_by_uid);
                for pod in order.into_iter().take((active.len() - want).min(BURST)) {
                    // Tracked by the expectations, per set rather than per pod.
                    ctx.push(Action::Delete {
                        key: pod.key(),
                        uid: Some(pod.metadata.uid.clone()),
                        resource_version: None,
                        grace_period_seconds: None,
                        propagation_policy: None,
                        dry_run: false,
                    });
                    expected.deletes.insert(pod.key(), pod.metadata.uid.clone());
                }
            }
            // Come back when they expire, in case what they wait for never shows.
            requeue = Requeue::AfterMs(self.expectations_timeout_ms);
            self.expectations.insert(key.clone(), expected);
        } else if let Some(seen_live) = live.is_some().then(|| not_cached(&active, ctx.cache()))
            && !seen_live.is_empty()
        {
            // The live read agreed with the set, but the cache has yet to
            // show those pods: until it does, it must not be acted on.
            let expected = Expectations {
                uid: set.metadata.uid.clone(),
                adds: 0,
                deletes: BTreeMap::new(),
                expires_ms: now + self.expectations_timeout_ms,
                not_before_ms: 0,
                seen_live,
            };
            self.expectations.insert(key.clone(), expected);
            requeue = Requeue::AfterMs(self.expectations_timeout_ms);
        } else if fulfilled {
            self.expectations.remove(key);
        } else if let Some(expected) = self.expectations.get(key) {
            // Make sure a timer wakes the set when it may act again, whatever
            // earlier timers were for.
            let wake = if now < expected.not_before_ms { expected.not_before_ms } else { expected.expires_ms };
            requeue = if wake > now || self.on_expiry != OnExpiry::Wait {
                Requeue::AfterMs(wake.saturating_sub(now))
            } else {
                // Expired, and waiting for the informer: its events wake the set.
                Requeue::AwaitChange
            };
        }

        let ready = active.iter().filter(|p| pod::is_ready(p)).count();
        let mut status = set.status.clone();
        let fields = json_object_mut(&mut status);
        fields.insert("replicas".into(), json!(active.len()));
        fields.insert("readyReplicas".into(), json!(ready));
        fields.insert("observedGeneration".into(), json!(set.metadata.generation));
        if status != set.status {
            let mut object = set.clone();
            object.status = status;
            ctx.update_status(object);
        }
        requeue
    }
}

impl ReplicaSets {
    /// Remembers the resourceVersion of a pod write the set's sync made.
    fn wrote(&mut self, set: ObjectKey, pod: &Object) {
        if let Ok(revision) = pod.metadata.resource_version.parse::<u64>() {
            let last = self.last_write.entry(set).or_default();
            *last = (*last).max(revision);
        }
    }

    /// KEP-5647's check: the pod informer has not yet reached the
    /// controller's own last pod write for this set. (Kubernetes compares
    /// resourceVersions only since they are comparable, KEP-5504; here they
    /// are etcd revisions.)
    fn behind_own_writes(&self, set: &ObjectKey, cache: &Cache) -> bool {
        let seen = cache.resource_version(PODS).parse::<u64>().unwrap_or(0);
        self.last_write.get(set).is_some_and(|&written| seen < written)
    }

    /// After expired expectations (`expiredExpectations: relist`): the pods
    /// of the set's namespace as a quorum list returned them, once it has
    /// arrived; until then `None`, with the list sent if it was not yet
    /// (and `None` with nothing in flight when the list failed).
    fn relist(&mut self, set: &ObjectKey, ctx: &mut Context<'_>) -> Option<Vec<Object>> {
        let Some(&id) = self.relists.get(set) else {
            let params = ListParams { namespace: set.namespace.clone(), ..ListParams::default() };
            let id = ctx.list_direct("Pod", params);
            self.relists.insert(set.clone(), id);
            return None;
        };
        let result = ctx.take_result(id)?;
        self.relists.remove(set);
        match result.outcome {
            Outcome::Listed(list) => Some(list.items),
            _ => None,
        }
    }
}

/// The pods a live read showed that the cache does not hold yet: their
/// events are still to come, and fulfil no expectation of a later write.
fn not_cached(pods: &[&Object], cache: &Cache) -> BTreeSet<ObjectKey> {
    pods.iter().map(|p| p.key()).filter(|k| cache.get(PODS, k).is_none()).collect()
}

/// Pods in the order they should go: unbound first, then not Ready, then
/// by name (or uid), highest first.
fn deletion_order(mut pods: Vec<&Object>, by_uid: bool) -> Vec<&Object> {
    pods.sort_by_key(|p| {
        let tie = if by_uid { &p.metadata.uid } else { &p.metadata.name };
        (pod::node_name(p).is_some(), pod::is_ready(p), Reverse(tie.clone()))
    });
    pods
}

fn string_map(value: Option<&Value>) -> BTreeMap<String, String> {
    value
        .and_then(Value::as_object)
        .map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect())
        .unwrap_or_default()
}

/// A pod from the set's template; the API server picks its name.
fn new_pod(set: &Object) -> Object {
    let template = &set.spec["template"];
    let mut spec = template.get("spec").cloned().unwrap_or(Value::Null);
    json_object_mut(&mut spec);
    Object {
        api_version: "v1".into(),
        kind: "Pod".into(),
        metadata: ObjectMeta {
            generate_name: format!("{}-", set.metadata.name),
            namespace: set.metadata.namespace.clone(),
            labels: string_map(template.pointer("/metadata/labels")),
            annotations: string_map(template.pointer("/metadata/annotations")),
            owner_references: vec![owner_reference(set)],
            ..ObjectMeta::default()
        },
        spec,
        status: Value::Null,
        other: Default::default(),
    }
}

// The Wasm plugin: `cargo build --release --target wasm32-unknown-unknown -p recon-plugin-replicaset`.
#[cfg(feature = "export")]
recon_sdk::export_controller!(ReplicaSetController::new());

#[cfg(test)]
mod tests;
