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
//! It is written as a [`Reconciler`] ([`NodeSync`]) run by the SDK's
//! [`Runtime`], which keeps the informer cache, waits for the first list,
//! tracks the status writes and deletes in flight and retries them after
//! transient failures. Its one key is its node: every pod change and every
//! call's report of the containers (a snapshot, not a change) make it
//! dirty, so the whole node is compared on every call, as the real
//! kubelet's periodic housekeeping does.
//!
//! Differences from the real kubelet: no images, probes, restarts with
//! back-off, resource accounting or admission; a pod is one container that
//! starts at once and is ready as soon as it starts; stopping is immediate,
//! so the final delete follows the stop in the same call; a pod is never
//! marked Succeeded or Failed. Nothing is done before the first list
//! arrives, so a restarted kubelet never stops containers on the strength of
//! an empty cache (as the real one waits for its pod sources to be ready).

use recon_abi::{
    ABI_VERSION, Action, ComponentConfig, Container, Controller, Input, ListMode, Manifest, NamespacedMap, Object,
    ObjectKey, Output, PodRef, Verb, WatchSpec, WritePermission, format_timestamp,
};
use recon_sdk::meta::json_object_mut;
use recon_sdk::pod::{self, Phase};
use recon_sdk::reconcile::{Context, Reconciler, Requeue, Runtime};
use recon_sdk::status::set_condition;
use recon_sdk::{Cache, Change};
use serde_json::json;

/// The watch index of the node's pods in the manifest.
const PODS: usize = 0;

/// The kubelet of one node (see the crate documentation): [`NodeSync`] in
/// the SDK's [`Runtime`].
#[derive(Clone, Debug, Default)]
pub struct Kubelet {
    runtime: Runtime<NodeSync>,
}

impl Kubelet {
    /// A kubelet that learns its node in [`Controller::init`].
    pub fn new() -> Kubelet {
        Kubelet::default()
    }
}

impl Controller for Kubelet {
    fn init(&mut self, config: &ComponentConfig) -> Manifest {
        self.runtime.init(config)
    }

    fn handle(&mut self, input: &Input) -> Output {
        self.runtime.handle(input)
    }
}

/// The kubelet's reconciler: its one key is its node (a `Node` key it never
/// reads, only reconciles), and a reconcile compares the whole node's pods
/// with its containers.
#[derive(Clone, Debug, Default)]
pub struct NodeSync {
    node: Option<String>,
    /// What a reconcile reads of each cached pod, by namespace and name (the
    /// cache's order), kept from the cache's changes. The node compares
    /// every one of its pods on every call; reading each pod's `spec` and
    /// `status` (JSON) again on every call was most of the kubelet's cost,
    /// and most of that waiting for memory in a large cluster.
    pods: NamespacedMap<Digest>,
    /// Reconciles so far: a digest whose `running_in` is the current one
    /// has a container that stays.
    reconciles: u64,
}

/// What a reconcile reads of one cached pod.
#[derive(Clone, Debug)]
struct Digest {
    uid: String,
    /// Bound to this kubelet's node.
    on_node: bool,
    terminating: bool,
    phase: Phase,
    /// Running with `Ready: True`: its status needs no write.
    running_and_ready: bool,
    /// The reconcile that found its container running and wanted (0:
    /// none yet).
    running_in: u64,
}

impl Digest {
    fn of(pod: &Object, node: Option<&str>) -> Digest {
        let phase = pod::phase(pod);
        Digest {
            uid: pod.metadata.uid.clone(),
            on_node: pod::node_name(pod) == node,
            terminating: pod.is_terminating(),
            phase,
            running_and_ready: phase == Phase::Running && pod::is_ready(pod),
            running_in: 0,
        }
    }

    /// Whether this incarnation should have a running container here:
    /// bound here, not terminating and not finished (`pod::is_active`).
    fn is_wanted(&self) -> bool {
        self.on_node && !self.terminating && !self.phase.is_terminal()
    }
}

impl NodeSync {
    /// The key this kubelet reconciles: its node. None without a node.
    fn node_key(&self) -> Vec<ObjectKey> {
        self.node.iter().map(|node| ObjectKey::new("Node", "", node)).collect()
    }
}

impl Reconciler for NodeSync {
    fn init(&mut self, config: &ComponentConfig) -> Manifest {
        *self = NodeSync { node: config.node.clone(), ..NodeSync::default() };
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
        Manifest {
            name: "kubelet".into(),
            abi_version: ABI_VERSION,
            watches,
            writes: vec![WritePermission { kind: "Pod".into(), verbs: vec![Verb::UpdateStatus, Verb::Delete] }],
            node_agent: true,
            list_mode: ListMode::Any,
            ..Manifest::default()
        }
    }

    /// Every change to a pod makes the node dirty, and the pod's digest
    /// follows the cache.
    fn keys_for(&mut self, change: &Change, cache: &Cache) -> Vec<ObjectKey> {
        let key = &change.key;
        match cache.get(PODS, key).filter(|_| change.watch == PODS) {
            Some(pod) => {
                self.pods.insert(&key.namespace, &key.name, Digest::of(pod, self.node.as_deref()));
            }
            None => {
                self.pods.remove(&key.namespace, &key.name);
            }
        }
        self.node_key()
    }

    /// A node holds at most its pod capacity, and the runtime reports every
    /// container on every call anyway, so the kubelet compares the whole
    /// node each time (as its periodic housekeeping does).
    fn keys_for_containers(&mut self, _containers: &[Container], _cache: &Cache) -> Vec<ObjectKey> {
        self.node_key()
    }

    fn reconcile(&mut self, _node: &ObjectKey, ctx: &mut Context<'_>) -> Requeue {
        let now = ctx.now_ms();
        self.reconciles += 1;
        let this = self.reconciles;
        // Each container stays if the pod at its name is still its
        // incarnation (a uid names one incarnation under one name) and is
        // wanted here: marked on that pod's digest. The others stop.
        let mut unwanted: Vec<&Container> = Vec::new();
        for container in ctx.containers().unwrap_or(&[]) {
            let pod = &container.pod;
            match self.pods.get_mut(&pod.namespace, &pod.name) {
                Some(digest) if digest.uid == pod.uid && digest.is_wanted() => digest.running_in = this,
                _ => unwanted.push(container),
            }
        }
        // Stops first, in uid order, so that a replaced incarnation never
        // overlaps its successor on this node, and a terminating pod can be
        // deleted below.
        unwanted.sort_by(|a, b| a.pod.uid.cmp(&b.pod.uid));
        for container in unwanted {
            ctx.push(Action::StopContainer { pod: container.pod.clone() });
        }

        for (namespace, name, digest) in self.pods.iter() {
            if !digest.on_node {
                continue;
            }
            let uid = digest.uid.as_str();
            let runs = digest.running_in == this;
            let key = || ObjectKey::new("Pod", namespace, name);
            if digest.terminating {
                if !runs {
                    // Sent unless the last delete is still in flight.
                    ctx.send(Action::Delete {
                        key: key(),
                        uid: Some(uid.to_string()),
                        resource_version: None,
                        grace_period_seconds: Some(0),
                        propagation_policy: None,
                        dry_run: false,
                    });
                }
                continue;
            }
            if digest.phase.is_terminal() {
                continue;
            }
            if !runs {
                let pod = PodRef { namespace: namespace.to_owned(), name: name.to_owned(), uid: uid.to_owned() };
                ctx.push(Action::StartContainer { pod });
            }
            // Asked before the status is built: until the informer shows
            // the last status write, every call would build it only for the
            // SDK to hold it back.
            if !digest.running_and_ready {
                let key = key();
                if !ctx.is_pending(&key)
                    && let Some(pod) = ctx.cache().get(PODS, &key)
                {
                    let status = running_status(pod, now);
                    ctx.update_status(status);
                }
            }
        }
        Requeue::AwaitChange
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
