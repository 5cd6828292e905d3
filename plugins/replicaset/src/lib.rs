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
    ObjectMeta, Outcome, Output, StatusReason, Verb, WatchSpec, WritePermission,
};
use recon_sdk::meta::{self, controller_uid, json_object_mut, owner_reference};
use recon_sdk::reconcile::{Context, Reconciler, Requeue, Runtime};
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
}

impl Expectations {
    fn fulfilled(&self, now: u64) -> bool {
        now >= self.not_before_ms && ((self.adds <= 0 && self.deletes.is_empty()) || now >= self.expires_ms)
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
}

impl Default for ReplicaSets {
    fn default() -> Self {
        ReplicaSets {
            owned: Index::new(|p| controller_uid(p).map(str::to_string)),
            expectations: BTreeMap::new(),
            creates: VecDeque::new(),
            expectations_timeout_ms: DEFAULT_EXPECTATIONS_TIMEOUT_MS,
            tie_break_by_uid: false,
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
        *self = ReplicaSets { expectations_timeout_ms, tie_break_by_uid, ..ReplicaSets::default() };
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
                if appeared {
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
                if let Some(at) = self.creates.iter().position(|c| c.set_uid == uid) {
                    self.creates.remove(at);
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
                    // Fulfilled when the pod is seen terminating or gone.
                    return Vec::new();
                }
                if let Some(expected) = self.expectations.get_mut(&set) {
                    expected.deletes.remove(&result.key);
                }
                set
            }
            // Status writes are the runtime's to track; it sends no reads.
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
        let active: Vec<&Object> = self
            .owned
            .keys(&set.metadata.uid)
            .filter_map(|k| ctx.cache().get(PODS, k))
            .filter(|p| pod::is_active(p))
            .collect();
        let want = meta::replicas(set) as usize;
        let fulfilled = self.expectations.get(key).is_none_or(|e| e.fulfilled(now));

        let mut requeue = Requeue::AwaitChange;
        if fulfilled && active.len() != want {
            let mut expected = Expectations {
                uid: set.metadata.uid.clone(),
                adds: 0,
                deletes: BTreeMap::new(),
                expires_ms: now + self.expectations_timeout_ms,
                not_before_ms: 0,
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
        } else if fulfilled {
            self.expectations.remove(key);
        } else if let Some(expected) = self.expectations.get(key) {
            // Make sure a timer wakes the set when it may act again, whatever
            // earlier timers were for.
            let wake = if now < expected.not_before_ms { expected.not_before_ms } else { expected.expires_ms };
            requeue = Requeue::AfterMs(wake.saturating_sub(now));
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
