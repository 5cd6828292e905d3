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
//! Differences from kube-scheduler: pod count is the only resource (no CPU,
//! memory, affinity, taints, topology spread or preemption); binding is a
//! compare-and-swap `Update` of the pod instead of a `pods/binding`
//! subresource; pods are tried in key order, not by priority.

use std::collections::{BTreeMap, BTreeSet};

use recon_abi::{
    ABI_VERSION, Action, ComponentConfig, Controller, Input, InputEvent, ListMode, Manifest, Object, ObjectKey,
    Outcome, Output, Verb, WatchSpec, WritePermission,
};
use recon_sdk::meta::{int_field, json_object_mut};
use recon_sdk::{Cache, Change, InFlight, Index, Timers, parse_timer_key, pod, timer_key};
use serde_json::{Value, json};

/// The watch index of all pods in the manifest.
const PODS: usize = 0;
/// The watch index of all nodes in the manifest.
const NODES: usize = 1;
/// The timer key for retrying pods that fit nowhere.
const UNSCHEDULABLE_TIMER: &str = "unschedulable";
/// How often pods that fit nowhere are tried again.
const UNSCHEDULABLE_RETRY_MS: u64 = 1_000;
/// Pods per node when a node does not say (the kubelet's default `maxPods`).
const DEFAULT_POD_CAPACITY: usize = 110;

/// The scheduler (see the crate documentation).
#[derive(Clone, Debug)]
pub struct Scheduler {
    cache: Cache,
    /// Pods that occupy a node (bound and not finished), by node name.
    bound: Index,
    /// Pods to try on this call.
    pending: BTreeSet<ObjectKey>,
    /// Pods that fit nowhere the last time they were tried.
    unschedulable: BTreeSet<ObjectKey>,
    /// Pods whose binding is in flight, with the node they were sent to.
    assumed: BTreeMap<ObjectKey, String>,
    /// How many assumed pods each node has.
    assumed_per_node: BTreeMap<String, usize>,
    in_flight: InFlight,
    timers: Timers,
}

impl Default for Scheduler {
    fn default() -> Self {
        Scheduler {
            cache: Cache::default(),
            bound: Index::new(occupied_node),
            pending: BTreeSet::new(),
            unschedulable: BTreeSet::new(),
            assumed: BTreeMap::new(),
            assumed_per_node: BTreeMap::new(),
            in_flight: InFlight::new(),
            timers: Timers::new(),
        }
    }
}

impl Scheduler {
    /// A scheduler with an empty cache.
    pub fn new() -> Scheduler {
        Scheduler::default()
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

impl Controller for Scheduler {
    fn init(&mut self, _config: &ComponentConfig) -> Manifest {
        let watches = vec![
            WatchSpec { kind: "Pod".into(), ..WatchSpec::default() },
            WatchSpec { kind: "Node".into(), ..WatchSpec::default() },
        ];
        *self = Scheduler { cache: Cache::new(&watches), ..Scheduler::default() };
        Manifest {
            name: "scheduler".into(),
            abi_version: ABI_VERSION,
            watches,
            writes: vec![WritePermission { kind: "Pod".into(), verbs: vec![Verb::Update] }],
            node_agent: false,
            list_mode: ListMode::Any,
        }
    }

    fn handle(&mut self, input: &Input) -> Output {
        let now = input.time_ms;
        let mut actions = Vec::new();
        for event in &input.events {
            match event {
                InputEvent::Result(result) => {
                    let current = self.cache.get(PODS, &result.key);
                    let Some(answer) = self.in_flight.on_result(result, current, now) else { continue };
                    if matches!(result.outcome, Outcome::Err(_)) {
                        self.forget_assumption(&result.key);
                    }
                    self.pending.insert(result.key.clone());
                    if let Some(after) = answer.retry_after_ms {
                        actions.extend(self.timers.schedule(timer_key(&result.key), now, after));
                    }
                }
                InputEvent::Timer { key } => {
                    self.timers.fired(key);
                    if key == UNSCHEDULABLE_TIMER {
                        self.pending.append(&mut self.unschedulable);
                    } else if let Some(pod) = parse_timer_key(key) {
                        self.pending.insert(pod);
                    }
                }
                InputEvent::Listed { .. } | InputEvent::Watch { .. } => {
                    for change in self.cache.apply(event) {
                        self.observe(change, now);
                    }
                }
            }
        }
        if self.cache.all_synced() && !self.pending.is_empty() {
            self.schedule(now, &mut actions);
        }
        if !self.unschedulable.is_empty() {
            actions.extend(self.timers.schedule(UNSCHEDULABLE_TIMER, now, UNSCHEDULABLE_RETRY_MS));
        }
        Output { actions }
    }
}

impl Scheduler {
    fn observe(&mut self, change: Change, now: u64) {
        if change.watch == NODES {
            // A node appeared, changed (uncordoned, grew) or went away: pods
            // that fit nowhere may fit now.
            self.pending.append(&mut self.unschedulable);
            return;
        }
        let key = change.key;
        let current = self.cache.get(PODS, &key);
        self.in_flight.settle(&key, current, now);
        if self.bound.update(&key, current).is_some() {
            // The pod stopped occupying a node: room for one more there.
            self.pending.append(&mut self.unschedulable);
        }
        // Once the cache shows the pod bound (or gone), the index counts it
        // and the assumption would count it twice.
        if current.is_none_or(|p| !needs_scheduling(p)) {
            self.forget_assumption(&key);
            self.pending.remove(&key);
            self.unschedulable.remove(&key);
        } else if !self.assumed.contains_key(&key) {
            self.pending.insert(key);
        }
    }

    fn forget_assumption(&mut self, key: &ObjectKey) {
        if let Some(node) = self.assumed.remove(key)
            && let Some(count) = self.assumed_per_node.get_mut(&node)
        {
            *count -= 1;
            if *count == 0 {
                self.assumed_per_node.remove(&node);
            }
        }
    }

    fn load(&self, node: &str) -> usize {
        self.bound.count(node) + self.assumed_per_node.get(node).copied().unwrap_or(0)
    }

    fn schedule(&mut self, now: u64, actions: &mut Vec<Action>) {
        // Nodes with room, least loaded first, ties by name.
        let mut capacities: BTreeMap<String, usize> = BTreeMap::new();
        let mut room: BTreeSet<(usize, String)> = BTreeSet::new();
        for node in self.cache.list(NODES) {
            if is_cordoned(node) || node.is_terminating() {
                continue;
            }
            let name = node.metadata.name.clone();
            let (load, cap) = (self.load(&name), capacity(node));
            if load < cap {
                room.insert((load, name.clone()));
            }
            capacities.insert(name, cap);
        }

        for key in std::mem::take(&mut self.pending) {
            let Some(pod) = self.cache.get(PODS, &key) else { continue };
            // A pod whose write was answered with a stale-view error waits
            // here until the cache moves; the change brings it back.
            if !needs_scheduling(pod) || self.assumed.contains_key(&key) || self.in_flight.blocks(&key, Some(pod), now)
            {
                continue;
            }
            let Some((load, node)) = room.pop_first() else {
                self.unschedulable.insert(key);
                continue;
            };
            actions.push(Action::Update { object: binding(pod, &node) });
            self.in_flight.record(Verb::Update, key.clone(), Some(pod), key.clone());
            *self.assumed_per_node.entry(node.clone()).or_default() += 1;
            self.assumed.insert(key, node.clone());
            if capacities.get(&node).is_some_and(|&cap| load + 1 < cap) {
                room.insert((load + 1, node));
            }
        }
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
