//! The built-in kubelet: the node agent that runs the pods bound to its node.
//!
//! [`Kubelet`] watches the Pods whose `spec.nodeName` is its node (a field
//! selector, as the real kubelet's pod source) and, on every call, compares
//! what its cache says should run with what the container runtime says does
//! run (`Input::containers`):
//!
//! 1. A container whose pod incarnation is no longer wanted (the pod is gone
//!    from the cache, a different uid now holds its name, it is terminating,
//!    or it has finished) is stopped.
//! 2. A terminating pod whose container is not running (or was just stopped)
//!    is deleted for good: `Delete` with grace period 0 and a uid
//!    precondition, the kubelet's half of graceful deletion.
//! 3. A wanted pod without a container gets one (`StartContainer`), and its
//!    status is set to Running with `Ready: True` (`UpdateStatus`, with the
//!    cached resourceVersion as precondition).
//!
//! It trusts its cache completely and never double-checks with a live read.
//! That is the behaviour behind Kubernetes issue #59848: a kubelet that
//! restarts and relists from a stale API-server cache restarts a pod that has
//! since been deleted and recreated elsewhere. Whether that happens depends
//! on how the host lists for this component (its `listMode`), not on this
//! code.
//!
//! Differences from the real kubelet: no images, probes, restarts with
//! back-off, resource accounting or admission; a pod is one container that
//! starts at once and is ready as soon as it starts; stopping is immediate,
//! so the final delete follows the stop in the same call; a pod is never
//! marked Succeeded or Failed. Nothing is done before the first list
//! arrives, so a restarted kubelet never stops containers on the strength of
//! an empty cache (as the real one waits for its pod sources to be ready).

use std::collections::{BTreeMap, BTreeSet};

use recon_abi::{
    ABI_VERSION, Action, ComponentConfig, Container, Controller, Input, InputEvent, ListMode, Manifest, Object,
    ObjectKey, Output, Verb, WatchSpec, WritePermission, format_timestamp,
};
use recon_sdk::meta::json_object_mut;
use recon_sdk::pod::{self, pod_ref};
use recon_sdk::status::set_condition;
use recon_sdk::{Cache, InFlight, Timers};
use serde_json::json;

/// The watch index of the node's pods in the manifest.
const PODS: usize = 0;

/// The timer key used to come back after a failed write.
const RETRY_TIMER: &str = "retry";

/// The kubelet of one node (see the crate documentation).
#[derive(Clone, Debug, Default)]
pub struct Kubelet {
    node: Option<String>,
    cache: Cache,
    in_flight: InFlight,
    timers: Timers,
}

impl Kubelet {
    /// A kubelet that learns its node in [`Controller::init`].
    pub fn new() -> Kubelet {
        Kubelet::default()
    }
}

impl Controller for Kubelet {
    fn init(&mut self, config: &ComponentConfig) -> Manifest {
        *self = Kubelet { node: config.node.clone(), ..Kubelet::default() };
        // Without a node there is nothing this agent may run: watch nothing
        // rather than every pod in the cluster.
        let watches: Vec<WatchSpec> = self
            .node
            .iter()
            .map(|node| WatchSpec {
                kind: "Pod".into(),
                field_selector: format!("spec.nodeName={node}"),
                ..WatchSpec::default()
            })
            .collect();
        self.cache = Cache::new(&watches);
        Manifest {
            name: "kubelet".into(),
            abi_version: ABI_VERSION,
            watches,
            writes: vec![WritePermission { kind: "Pod".into(), verbs: vec![Verb::UpdateStatus, Verb::Delete] }],
            node_agent: true,
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
                    let answer = self.in_flight.on_result(result, current, now);
                    if let Some(after) = answer.and_then(|a| a.retry_after_ms) {
                        actions.extend(self.timers.schedule(RETRY_TIMER, now, after));
                    }
                }
                InputEvent::Timer { key } => self.timers.fired(key),
                InputEvent::Listed { .. } | InputEvent::Watch { .. } => {
                    for change in self.cache.apply(event) {
                        self.in_flight.settle(&change.key, self.cache.get(PODS, &change.key), now);
                    }
                }
            }
        }
        if self.node.is_some() && self.cache.is_synced(PODS) {
            // A node holds at most its pod capacity, and the runtime reports
            // every container on every call anyway, so the kubelet compares
            // the whole node each time (as its periodic housekeeping does).
            self.sync(now, input.containers.as_deref().unwrap_or(&[]), &mut actions);
        }
        Output { actions }
    }
}

impl Kubelet {
    /// Whether this incarnation of a pod should have a running container here.
    fn wants(&self, pod: &Object) -> bool {
        pod::is_active(pod) && pod::node_name(pod) == self.node.as_deref()
    }

    fn sync(&mut self, now: u64, containers: &[Container], actions: &mut Vec<Action>) {
        let mut running: BTreeMap<&str, &Container> = BTreeMap::new();
        for container in containers {
            running.insert(container.pod.uid.as_str(), container);
        }

        // Stops first, so that a replaced incarnation never overlaps its
        // successor on this node, and a terminating pod can be deleted below.
        let mut stopped: BTreeSet<&str> = BTreeSet::new();
        for (&uid, container) in &running {
            let key = ObjectKey::new("Pod", &container.pod.namespace, &container.pod.name);
            let wanted = self.cache.get(PODS, &key).is_some_and(|p| p.metadata.uid == uid && self.wants(p));
            if !wanted {
                actions.push(Action::StopContainer { pod: container.pod.clone() });
                stopped.insert(uid);
            }
        }

        for pod in self.cache.list(PODS) {
            if pod::node_name(pod) != self.node.as_deref() {
                continue;
            }
            let key = pod.key();
            let uid = pod.metadata.uid.as_str();
            let runs = running.contains_key(uid) && !stopped.contains(uid);
            if pod.is_terminating() {
                if !runs && !self.in_flight.blocks(&key, Some(pod), now) {
                    actions.push(Action::Delete {
                        key: key.clone(),
                        uid: Some(uid.to_string()),
                        resource_version: None,
                        grace_period_seconds: Some(0),
                    });
                    self.in_flight.record(Verb::Delete, key.clone(), Some(pod), key);
                }
                continue;
            }
            if pod::phase(pod).is_terminal() {
                continue;
            }
            if !runs {
                actions.push(Action::StartContainer { pod: pod_ref(pod) });
            }
            if !pod::is_running_and_ready(pod) && !self.in_flight.blocks(&key, Some(pod), now) {
                actions.push(Action::UpdateStatus { object: running_status(pod, now) });
                self.in_flight.record(Verb::UpdateStatus, key.clone(), Some(pod), key);
            }
        }
    }
}

/// The pod as it should read once its container runs. It keeps the cached
/// resourceVersion, so the write fails with Conflict if the cache is behind.
fn running_status(pod: &Object, now: u64) -> Object {
    let mut object = pod.clone();
    let status = json_object_mut(&mut object.status);
    status.insert("phase".into(), json!("Running"));
    status.entry("startTime").or_insert_with(|| json!(format_timestamp(now)));
    set_condition(&mut object.status, "Ready", true);
    object
}

// The Wasm plugin: `cargo build --release --target wasm32-unknown-unknown -p recon-plugin-kubelet`.
#[cfg(feature = "export")]
recon_sdk::export_controller!(Kubelet::new());

#[cfg(test)]
mod tests;
