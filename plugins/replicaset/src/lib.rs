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
//! Differences from the real controller: pods are found by ownership only
//! (no label-selector matching, no adoption or release of orphans); no
//! `minReadySeconds`, `availableReplicas` or conditions; the results of
//! failed creates are matched to sets in the order the creates were sent,
//! because a create by `generateName` has no name to match on.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

use recon_abi::{
    ABI_VERSION, Action, ActionResult, ComponentConfig, Controller, Input, InputEvent, ListMode, Manifest, Object,
    ObjectKey, ObjectMeta, Outcome, Output, StatusReason, Verb, WatchSpec, WritePermission,
};
use recon_sdk::meta::{self, controller_uid, json_object_mut, owner_reference};
use recon_sdk::{Cache, Change, InFlight, Index, RETRY_AFTER_MS, Timers, parse_timer_key, pod, timer_key};
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

/// The ReplicaSet controller (see the crate documentation).
#[derive(Clone, Debug)]
pub struct ReplicaSetController {
    cache: Cache,
    /// Pods by the uid of their controlling owner.
    owned: Index,
    /// Sets to reconcile once the cache is synced.
    dirty: BTreeSet<ObjectKey>,
    expectations: BTreeMap<ObjectKey, Expectations>,
    creates: VecDeque<PendingCreate>,
    /// Status writes in flight, by set.
    in_flight: InFlight,
    timers: Timers,
    expectations_timeout_ms: u64,
    /// Break ties among equally ranked victims by uid instead of name.
    tie_break_by_uid: bool,
}

impl Default for ReplicaSetController {
    fn default() -> Self {
        ReplicaSetController {
            cache: Cache::default(),
            owned: Index::new(|p| controller_uid(p).map(str::to_string)),
            dirty: BTreeSet::new(),
            expectations: BTreeMap::new(),
            creates: VecDeque::new(),
            in_flight: InFlight::new(),
            timers: Timers::new(),
            expectations_timeout_ms: DEFAULT_EXPECTATIONS_TIMEOUT_MS,
            tie_break_by_uid: false,
        }
    }
}

impl ReplicaSetController {
    /// A controller with an empty cache.
    pub fn new() -> ReplicaSetController {
        ReplicaSetController::default()
    }
}

impl Controller for ReplicaSetController {
    fn init(&mut self, config: &ComponentConfig) -> Manifest {
        let watches = vec![
            WatchSpec { kind: "ReplicaSet".into(), ..WatchSpec::default() },
            WatchSpec { kind: "Pod".into(), ..WatchSpec::default() },
        ];
        let expectations_timeout_ms = config
            .params
            .get("expectationsTimeoutMs")
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_EXPECTATIONS_TIMEOUT_MS);
        let tie_break_by_uid = config.params.get("scaleDownTieBreak").and_then(Value::as_str) == Some("uid");
        *self = ReplicaSetController {
            cache: Cache::new(&watches),
            expectations_timeout_ms,
            tie_break_by_uid,
            ..ReplicaSetController::default()
        };
        Manifest {
            name: "replicaset".into(),
            abi_version: ABI_VERSION,
            watches,
            writes: vec![
                WritePermission { kind: "Pod".into(), verbs: vec![Verb::Create, Verb::Delete] },
                WritePermission { kind: "ReplicaSet".into(), verbs: vec![Verb::UpdateStatus] },
            ],
            node_agent: false,
            list_mode: ListMode::Any,
        }
    }

    fn handle(&mut self, input: &Input) -> Output {
        let now = input.time_ms;
        let mut actions = Vec::new();
        for event in &input.events {
            match event {
                InputEvent::Result(result) => self.on_result(result, now, &mut actions),
                InputEvent::Timer { key } => {
                    self.timers.fired(key);
                    self.dirty.extend(parse_timer_key(key));
                }
                InputEvent::Listed { .. } | InputEvent::Watch { .. } => {
                    for change in self.cache.apply(event) {
                        self.observe(change, now);
                    }
                }
            }
        }
        // Like WaitForCacheSync: before the pods are listed every set would
        // look empty and be filled again.
        if self.cache.all_synced() {
            for key in std::mem::take(&mut self.dirty) {
                self.reconcile(&key, now, &mut actions);
            }
        }
        Output { actions }
    }
}

impl ReplicaSetController {
    /// Maps a change to the sets that must be reconciled, and lowers the
    /// expectations it fulfils.
    fn observe(&mut self, change: Change, now: u64) {
        let current = self.cache.get(change.watch, &change.key);
        if change.watch == SETS {
            self.in_flight.settle(&change.key, current, now);
            self.dirty.insert(change.key);
            return;
        }
        self.owned.update(&change.key, current);
        let owners = change.old.iter().chain(current).filter_map(meta::controller_key);
        let owners: BTreeSet<ObjectKey> = owners.filter(|k| k.kind == "ReplicaSet").collect();
        for set in owners {
            if let Some(expected) = self.expectations.get_mut(&set) {
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
            self.dirty.insert(set);
        }
    }

    fn on_result(&mut self, result: &ActionResult, now: u64, actions: &mut Vec<Action>) {
        let failed = match &result.outcome {
            Outcome::Ok(_) => None,
            Outcome::Err(status) => Some(status.reason),
        };
        let transient = failed.is_some_and(|reason| {
            !matches!(reason, StatusReason::Conflict | StatusReason::NotFound | StatusReason::AlreadyExists)
        });
        let set = match (result.verb, &result.outcome) {
            (Verb::UpdateStatus, _) => {
                let current = self.cache.get(SETS, &result.key);
                let Some(answer) = self.in_flight.on_result(result, current, now) else { return };
                if let Some(after) = answer.retry_after_ms {
                    actions.extend(self.timers.schedule(timer_key(&answer.wake), now, after));
                }
                self.dirty.insert(answer.wake);
                return;
            }
            (Verb::Create, Outcome::Ok(Some(pod))) => {
                // Matched by owner; the expectation stays until the pod is seen.
                let uid = controller_uid(pod).unwrap_or_default();
                if let Some(at) = self.creates.iter().position(|c| c.set_uid == uid) {
                    self.creates.remove(at);
                }
                return;
            }
            (Verb::Create, _) => {
                // No name to match on: the oldest create in that namespace.
                let namespace = result.key.namespace.as_str();
                let Some(at) = self.creates.iter().position(|c| c.set.namespace == namespace) else { return };
                let Some(create) = self.creates.remove(at) else { return };
                let Some(expected) = self.expectations.get_mut(&create.set).filter(|e| e.uid == create.set_uid) else {
                    return;
                };
                expected.adds -= 1;
                create.set
            }
            (Verb::Delete, _) => {
                let Some(set) =
                    self.expectations.iter().find(|(_, e)| e.deletes.contains_key(&result.key)).map(|(k, _)| k.clone())
                else {
                    return;
                };
                if failed.is_none() {
                    // Fulfilled when the pod is seen terminating or gone.
                    return;
                }
                if let Some(expected) = self.expectations.get_mut(&set) {
                    expected.deletes.remove(&result.key);
                }
                set
            }
            (Verb::Update, _) => return,
        };
        if transient && let Some(expected) = self.expectations.get_mut(&set) {
            expected.not_before_ms = now + RETRY_AFTER_MS;
            actions.extend(self.timers.schedule(timer_key(&set), now, RETRY_AFTER_MS));
        }
        self.dirty.insert(set);
    }

    fn reconcile(&mut self, key: &ObjectKey, now: u64, actions: &mut Vec<Action>) {
        let Some(set) = self.cache.get(SETS, key) else {
            self.expectations.remove(key);
            return;
        };
        if set.is_terminating() {
            // Deleting a set's pods is the garbage collector's job.
            return;
        }
        if self.expectations.get(key).is_some_and(|e| e.uid != set.metadata.uid) {
            self.expectations.remove(key);
        }
        let active: Vec<&Object> = self
            .owned
            .keys(&set.metadata.uid)
            .filter_map(|k| self.cache.get(PODS, k))
            .filter(|p| pod::is_active(p))
            .collect();
        let want = meta::replicas(set) as usize;
        let fulfilled = self.expectations.get(key).is_none_or(|e| e.fulfilled(now));

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
                    actions.push(Action::Create { object: new_pod(set) });
                    self.creates.push_back(PendingCreate { set: key.clone(), set_uid: set.metadata.uid.clone() });
                }
                expected.adds = count as i64;
            } else {
                let order = deletion_order(active.clone(), self.tie_break_by_uid);
                for pod in order.into_iter().take((active.len() - want).min(BURST)) {
                    actions.push(Action::Delete {
                        key: pod.key(),
                        uid: Some(pod.metadata.uid.clone()),
                        resource_version: None,
                        grace_period_seconds: None,
                    });
                    expected.deletes.insert(pod.key(), pod.metadata.uid.clone());
                }
            }
            // Come back when they expire, in case what they wait for never shows.
            actions.extend(self.timers.schedule(timer_key(key), now, self.expectations_timeout_ms));
            self.expectations.insert(key.clone(), expected);
        } else if fulfilled {
            self.expectations.remove(key);
        } else if let Some(expected) = self.expectations.get(key) {
            // Make sure a timer wakes the set when it may act again, whatever
            // earlier timers were for.
            let wake = if now < expected.not_before_ms { expected.not_before_ms } else { expected.expires_ms };
            actions.extend(self.timers.schedule(timer_key(key), now, wake.saturating_sub(now)));
        }

        let ready = active.iter().filter(|p| pod::is_ready(p)).count();
        let mut status = set.status.clone();
        let fields = json_object_mut(&mut status);
        fields.insert("replicas".into(), json!(active.len()));
        fields.insert("readyReplicas".into(), json!(ready));
        fields.insert("observedGeneration".into(), json!(set.metadata.generation));
        if status != set.status && !self.in_flight.blocks(key, Some(set), now) {
            let mut object = set.clone();
            object.status = status;
            actions.push(Action::UpdateStatus { object });
            self.in_flight.record(Verb::UpdateStatus, key.clone(), Some(set), key.clone());
        }
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
    }
}

// The Wasm plugin: `cargo build --release --target wasm32-unknown-unknown -p recon-plugin-replicaset`.
#[cfg(feature = "export")]
recon_sdk::export_controller!(ReplicaSetController::new());

#[cfg(test)]
mod tests;
