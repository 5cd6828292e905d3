//! The built-in scheduler: binds pending pods to nodes.
//!
//! [`Scheduler`] watches all Pods and all Nodes. A pod needs scheduling when
//! it has no `spec.nodeName`, is not terminating and has not finished. It is
//! bound to a feasible node (not `spec.unschedulable`, fewer non-finished
//! pods than `status.capacity.pods`, default 110) with the fewest pods, ties
//! broken by node name, by an `Update` of the pod that sets `spec.nodeName`
//! with the cached resourceVersion as precondition.
//!
//! Like kube-scheduler's cache, it "assumes" a pod on its node as soon as it
//! sends the binding, so the next pods see that node's load including it and
//! the pod is not bound twice while the write is in flight. The assumption
//! ends when the cache shows the pod bound (or gone), or when the write fails;
//! then the pod is tried again (at once after a stale-view failure once the
//! cache moves, after 1 s after a transient failure). Pods that fit nowhere
//! stay Pending and are retried every second, and at once when a node changes
//! or a bound pod goes away.
//!
//! It is written as a [`Reconciler`] ([`PodBinder`], one pod per call) run
//! by the SDK's [`Runtime`], which keeps the informer cache, waits for the
//! first lists, tracks the bindings in flight and retries them after
//! transient failures. Pods that fit nowhere share one timer
//! (`unschedulable`), which wakes them all.
//!
//! Differences from kube-scheduler: pod count is the only resource (no CPU,
//! memory, affinity, taints, topology spread or preemption); binding is a
//! compare-and-swap `Update` of the pod instead of a `pods/binding`
//! subresource; pods are tried in key order, not by priority.

use std::collections::{BTreeMap, BTreeSet};

use recon_abi::{
    ABI_VERSION, ActionResult, ComponentConfig, Controller, Input, KeyMap, ListMode, Manifest, Object, ObjectKey,
    Outcome, Output, Verb, WatchSpec, WritePermission,
};
use recon_sdk::meta::{int_field, json_object_mut};
use recon_sdk::reconcile::{Context, Reconciler, Requeue, Runtime};
use recon_sdk::{Cache, Change, Index, parse_timer_key, pod};
use serde_json::{Value, json};

/// The watch index of all pods in the manifest.
const PODS: usize = 0;
/// The watch index of all nodes in the manifest.
const NODES: usize = 1;
/// The timer for retrying pods that fit nowhere.
const UNSCHEDULABLE_TIMER: &str = "unschedulable";
/// How often pods that fit nowhere are tried again.
const UNSCHEDULABLE_RETRY_MS: u64 = 1_000;
/// Pods per node when a node does not say (the kubelet's default `maxPods`).
const DEFAULT_POD_CAPACITY: usize = 110;

/// The scheduler (see the crate documentation): [`PodBinder`] in the SDK's
/// [`Runtime`].
#[derive(Clone, Debug, Default)]
pub struct Scheduler {
    runtime: Runtime<PodBinder>,
}

impl Scheduler {
    /// A scheduler with an empty cache.
    pub fn new() -> Scheduler {
        Scheduler::default()
    }
}

impl Controller for Scheduler {
    fn init(&mut self, config: &ComponentConfig) -> Manifest {
        self.runtime.init(config)
    }

    fn handle(&mut self, input: &Input) -> Output {
        self.runtime.handle(input)
    }
}

/// The scheduler's reconciler: binds one pending pod per call of
/// [`Reconciler::reconcile`], and keeps what kube-scheduler's cache keeps
/// beside the informer's: which node each pod occupies, the bindings it
/// assumes while they are in flight, and the pods that fit nowhere.
#[derive(Clone, Debug)]
pub struct PodBinder {
    /// Pods that occupy a node (bound and not finished), by node name.
    bound: Index,
    /// Pods that fit nowhere the last time they were tried.
    unschedulable: BTreeSet<ObjectKey>,
    /// Pods whose binding is in flight, with the node they were sent to.
    assumed: KeyMap<String>,
    /// How many assumed pods each node has.
    assumed_per_node: BTreeMap<String, usize>,
    /// The nodes a pod may be bound to (schedulable, with room), by load
    /// and then name: the first is the one to bind to. Kept up to date
    /// node by node, so binding a pod does not look at every node.
    room: BTreeSet<(usize, String)>,
    /// Each node's load as entered in `room`.
    in_room: BTreeMap<String, usize>,
    /// Nodes whose load, capacity or schedulability may have changed since
    /// `room` last looked at them.
    stale_room: BTreeSet<String>,
}

impl Default for PodBinder {
    fn default() -> Self {
        PodBinder {
            bound: Index::new(occupied_node),
            unschedulable: BTreeSet::new(),
            assumed: KeyMap::new(),
            assumed_per_node: BTreeMap::new(),
            room: BTreeSet::new(),
            in_room: BTreeMap::new(),
            stale_room: BTreeSet::new(),
        }
    }
}

/// The node a pod occupies: the one it is bound to, unless it has finished.
fn occupied_node(pod: &Object) -> Option<String> {
    if pod::phase(pod).is_terminal() {
        return None;
    }
    pod::node_name(pod).map(str::to_string)
}

fn needs_scheduling(pod: &Object) -> bool {
    pod::node_name(pod).is_none() && pod::is_active(pod)
}

/// How many pods fit on the node: `status.capacity.pods`, a number or a
/// numeric string.
fn capacity(node: &Object) -> usize {
    int_field(node, "status.capacity.pods").map_or(DEFAULT_POD_CAPACITY, |n| usize::try_from(n).unwrap_or(0))
}

fn is_cordoned(node: &Object) -> bool {
    node.spec.get("unschedulable").and_then(Value::as_bool).unwrap_or(false)
}

impl Reconciler for PodBinder {
    fn init(&mut self, _config: &ComponentConfig) -> Manifest {
        *self = PodBinder::default();
        let watches = vec![
            WatchSpec { kind: "Pod".into(), ..WatchSpec::default() },
            WatchSpec { kind: "Node".into(), ..WatchSpec::default() },
        ];
        Manifest {
            name: "scheduler".into(),
            abi_version: ABI_VERSION,
            watches,
            writes: vec![WritePermission { kind: "Pod".into(), verbs: vec![Verb::Update] }],
            node_agent: false,
            list_mode: ListMode::Any,
            ..Manifest::default()
        }
    }

    /// A pod that needs scheduling and is not assumed is tried; a node that
    /// changed, or a pod that stopped occupying a node, makes room for the
    /// pods that fit nowhere.
    fn keys_for(&mut self, change: &Change, cache: &Cache) -> Vec<ObjectKey> {
        if change.watch == NODES {
            // A node appeared, changed (uncordoned, grew) or went away: pods
            // that fit nowhere may fit now.
            self.stale_room.insert(change.key.name.clone());
            return std::mem::take(&mut self.unschedulable).into_iter().collect();
        }
        let key = &change.key;
        let current = cache.get(PODS, key);
        let mut keys = Vec::new();
        let before = self.bound.value(key).map(str::to_string);
        let left = self.bound.update(key, current).is_some();
        if before.as_deref() != self.bound.value(key) {
            self.stale_room.extend(before);
            self.stale_room.extend(self.bound.value(key).map(str::to_string));
        }
        if left {
            // The pod stopped occupying a node: room for one more there.
            keys.extend(std::mem::take(&mut self.unschedulable));
        }
        // Once the cache shows the pod bound (or gone), the index counts it
        // and the assumption would count it twice.
        if current.is_none_or(|p| !needs_scheduling(p)) {
            self.forget_assumption(key);
            self.unschedulable.remove(key);
        } else if !self.assumed.contains_key(key) {
            keys.push(key.clone());
        }
        keys
    }

    /// A failed binding no longer holds its node's slot; the runtime tries
    /// the pod again (at once once the cache moves after a stale-view
    /// failure, after a second after a transient one).
    fn keys_for_result(&mut self, result: &ActionResult, _cache: &Cache, _now_ms: u64) -> Vec<ObjectKey> {
        if matches!(result.outcome, Outcome::Err(_)) {
            self.forget_assumption(&result.key);
        }
        Vec::new()
    }

    fn keys_for_timer(&mut self, timer: &str) -> Vec<ObjectKey> {
        if timer == UNSCHEDULABLE_TIMER {
            return std::mem::take(&mut self.unschedulable).into_iter().collect();
        }
        parse_timer_key(timer).into_iter().collect()
    }

    fn reconcile(&mut self, key: &ObjectKey, ctx: &mut Context<'_>) -> Requeue {
        let Some(pod) = ctx.cache().get(PODS, key) else { return Requeue::AwaitChange };
        // A pod whose write was answered with a stale-view error waits here
        // until the cache moves; the change brings it back.
        if !needs_scheduling(pod) || self.assumed.contains_key(key) || ctx.is_pending(key) {
            return Requeue::AwaitChange;
        }
        let Some(node) = self.least_loaded_node(ctx.cache()).map(str::to_string) else {
            self.unschedulable.insert(key.clone());
            ctx.set_timer(UNSCHEDULABLE_TIMER, UNSCHEDULABLE_RETRY_MS);
            return Requeue::AwaitChange;
        };
        ctx.update(binding(pod, &node));
        *self.assumed_per_node.entry(node.clone()).or_default() += 1;
        self.stale_room.insert(node.clone());
        self.assumed.insert(key, node);
        Requeue::AwaitChange
    }
}

impl PodBinder {
    fn forget_assumption(&mut self, key: &ObjectKey) {
        if let Some(node) = self.assumed.remove(key)
            && let Some(count) = self.assumed_per_node.get_mut(&node)
        {
            *count -= 1;
            if *count == 0 {
                self.assumed_per_node.remove(&node);
            }
            self.stale_room.insert(node);
        }
    }

    /// Pods on the node: those the cache shows bound and those assumed.
    fn load(&self, node: &str) -> usize {
        self.bound.count(node) + self.assumed_per_node.get(node).copied().unwrap_or(0)
    }

    /// The schedulable node with room and the fewest pods, ties by name.
    fn least_loaded_node(&mut self, cache: &Cache) -> Option<&str> {
        for name in std::mem::take(&mut self.stale_room) {
            if let Some(load) = self.in_room.remove(&name) {
                self.room.remove(&(load, name.clone()));
            }
            let Some(node) = cache.get(NODES, &ObjectKey::new("Node", "", &name)) else { continue };
            let load = self.load(&name);
            if is_cordoned(node) || node.is_terminating() || load >= capacity(node) {
                continue;
            }
            self.room.insert((load, name.clone()));
            self.in_room.insert(name, load);
        }
        self.room.first().map(|(_, name)| name.as_str())
    }
}

/// The pod bound to `node`. It keeps the cached resourceVersion: if the pod
/// changed meanwhile the write fails instead of overwriting the change.
fn binding(pod: &Object, node: &str) -> Object {
    let mut bound = pod.clone();
    json_object_mut(&mut bound.spec).insert("nodeName".into(), json!(node));
    bound
}

// The Wasm plugin: `cargo build --release --target wasm32-unknown-unknown -p recon-plugin-scheduler`.
#[cfg(feature = "export")]
recon_sdk::export_controller!(Scheduler::new());

#[cfg(test)]
mod tests;
