//! Nodes' container runtimes and the safety checks on them.
//!
//! The runtime is the ground truth of what runs where: it survives kubelet
//! restarts, and it is what the pod-identity and StatefulSet checks look at
//! after every container start.

use std::collections::BTreeMap;

use recon_abi::{Container, Object, PodRef};
use recon_scenario::Check;

use crate::world::Sim;
use recon_trace::{EntryId, Event};

/// A container running on a node.
#[derive(Clone, Debug)]
pub(crate) struct Running {
    started_at: u64,
    /// The ContainerStarted entry.
    entry: EntryId,
    /// (namespace, StatefulSet name, ordinal) if the pod belongs to a StatefulSet.
    ordinal: Option<(String, String, u64)>,
}

/// One node's runtime.
#[derive(Clone, Debug)]
pub(crate) struct NodeState {
    pub name: String,
    running: BTreeMap<PodRef, Running>,
}

impl NodeState {
    pub fn new(name: &str) -> NodeState {
        NodeState { name: name.to_string(), running: BTreeMap::new() }
    }

    pub fn containers(&self) -> Vec<Container> {
        self.running.iter().map(|(pod, r)| Container { pod: pod.clone(), started_at_ms: r.started_at }).collect()
    }
}

/// StatefulSet name and ordinal of a pod: from the controlling owner
/// reference, and the `apps.kubernetes.io/pod-index` label or the name suffix.
fn stateful_ordinal(pod: &Object) -> Option<(String, String, u64)> {
    let owner = pod.controller_owner().filter(|o| o.kind == "StatefulSet")?;
    let ordinal = pod
        .metadata
        .labels
        .get("apps.kubernetes.io/pod-index")
        .and_then(|i| i.parse().ok())
        .or_else(|| pod.metadata.name.strip_prefix(&format!("{}-", owner.name))?.parse().ok())?;
    Some((pod.metadata.namespace.clone(), owner.name.clone(), ordinal))
}

impl Sim {
    /// A node agent started a container; then the checks run.
    pub(crate) fn start_container(&mut self, node: &str, pod: PodRef, object: Option<Object>, cause: EntryId) {
        let Some(n) = self.nodes.iter().position(|x| x.name == node) else { return };
        if self.nodes[n].running.contains_key(&pod) {
            return; // already running: starting again is a no-op, as in a real runtime
        }
        let entry = self.engine.record(
            self.engine.lanes.nodes[n],
            Event::ContainerStarted { node: node.to_string(), pod: pod.clone() },
            vec![cause],
        );
        let ordinal = object.as_ref().and_then(stateful_ordinal);
        self.nodes[n]
            .running
            .insert(pod.clone(), Running { started_at: self.engine.now, entry, ordinal: ordinal.clone() });
        if self.checks.contains(&Check::PodIdentity) {
            self.check_pod_identity(n, &pod, entry);
        }
        if let (Some(ordinal), true) = (ordinal, self.checks.contains(&Check::StatefulSetOrdinals)) {
            self.check_ordinal(n, &pod, &ordinal, entry);
        }
    }

    /// A node agent stopped a container.
    pub(crate) fn stop_container(&mut self, node: &str, pod: &PodRef, cause: EntryId) {
        let Some(n) = self.nodes.iter().position(|x| x.name == node) else { return };
        if self.nodes[n].running.remove(pod).is_some() {
            self.engine.record(
                self.engine.lanes.nodes[n],
                Event::ContainerStopped { node: node.to_string(), pod: pod.clone() },
                vec![cause],
            );
        }
    }

    /// No two nodes run a container for the same namespace/name.
    fn check_pod_identity(&mut self, n: usize, pod: &PodRef, entry: EntryId) {
        let others: Vec<(String, PodRef, EntryId)> = self
            .nodes
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != n)
            .flat_map(|(_, node)| {
                node.running
                    .iter()
                    .filter(|(p, _)| p.namespace == pod.namespace && p.name == pod.name)
                    .map(|(p, r)| (node.name.clone(), p.clone(), r.entry))
            })
            .collect();
        for (other_node, other, other_entry) in others {
            let message = format!(
                "pod {}/{} runs on two nodes at once: {} (uid {}) and {} (uid {})",
                pod.namespace, pod.name, self.nodes[n].name, pod.uid, other_node, other.uid
            );
            self.engine.record(
                self.engine.lanes.checks,
                Event::Violation { check: Check::PodIdentity, message },
                vec![entry, other_entry],
            );
        }
    }

    /// At most one live pod per StatefulSet ordinal.
    fn check_ordinal(&mut self, n: usize, pod: &PodRef, ordinal: &(String, String, u64), entry: EntryId) {
        let others: Vec<(String, PodRef, EntryId)> = self
            .nodes
            .iter()
            .enumerate()
            .flat_map(|(i, node)| {
                node.running
                    .iter()
                    .filter(move |(p, r)| r.ordinal.as_ref() == Some(ordinal) && !(i == n && *p == pod))
                    .map(|(p, r)| (node.name.clone(), p.clone(), r.entry))
            })
            .collect();
        for (other_node, other, other_entry) in others {
            let (ns, set, i) = ordinal;
            let message = format!(
                "StatefulSet {ns}/{set} has two live pods for ordinal {i}: {} on {} and {} on {other_node}",
                pod.uid, self.nodes[n].name, other.uid
            );
            self.engine.record(
                self.engine.lanes.checks,
                Event::Violation { check: Check::StatefulSetOrdinals, message },
                vec![entry, other_entry],
            );
        }
    }
}

/// Whether a pod counts toward its ReplicaSet's replicas: not being deleted.
fn live(pod: &Object) -> bool {
    !pod.is_terminating()
}

/// `spec.replicas`, 1 when unset, as the API server defaults it.
fn spec_replicas(object: &Object) -> u64 {
    object.spec.get("replicas").and_then(serde_json::Value::as_u64).unwrap_or(1)
}

/// Live pods by the uid of their controller, kept up to date on every
/// store write, so that judging a write costs no scan of every pod.
#[derive(Clone, Debug, Default)]
pub(crate) struct LivePods {
    by_owner: BTreeMap<String, std::collections::BTreeSet<String>>,
}

impl LivePods {
    /// Follows one store event.
    pub fn apply(&mut self, event: &recon_store::StoreEvent) {
        if event.value.kind != "Pod" {
            return;
        }
        let entry = |pod: &Object| pod.controller_owner().map(|o| (o.uid.clone(), pod.metadata.uid.clone()));
        if let Some((owner, pod)) = event.prev.as_ref().filter(|p| live(p)).and_then(entry)
            && let Some(set) = self.by_owner.get_mut(&owner)
        {
            set.remove(&pod);
            if set.is_empty() {
                self.by_owner.remove(&owner);
            }
        }
        let removed = event.kind == recon_store::EventKind::Delete;
        if !removed
            && live(&event.value)
            && let Some((owner, pod)) = entry(&event.value)
        {
            self.by_owner.entry(owner).or_default().insert(pod);
        }
    }

    /// How many live pods the object with `uid` controls.
    pub fn count(&self, owner_uid: &str) -> usize {
        self.by_owner.get(owner_uid).map_or(0, |s| s.len())
    }
}

impl Sim {
    /// The live pods in the store whose controller is the object with `uid`.
    fn live_pods_of(&self, namespace: &str, uid: &str) -> Vec<Object> {
        let pods = self.engine.store.range(&recon_store::prefix_for("Pod", namespace), None).unwrap_or_default();
        pods.into_iter()
            .map(|kv| kv.value)
            .filter(|p| live(p) && p.controller_owner().is_some_and(|o| o.uid == uid))
            .collect()
    }

    /// After a component's committed write to a pod: did it create a pod its
    /// ReplicaSet did not need, or take away one it did? Judged against the
    /// store, the truth at that moment, not against what the writer saw.
    /// One finding per crossing of `spec.replicas`, in either direction.
    pub(crate) fn check_replica_count(&mut self, writer: &str, event: &recon_store::StoreEvent, entry: EntryId) {
        if !self.checks.contains(&Check::ReplicaCount) || event.value.kind != "Pod" {
            return;
        }
        let Some(owner) = event.value.controller_owner().filter(|o| o.kind == "ReplicaSet") else { return };
        let removed = event.kind == recon_store::EventKind::Delete;
        let was_live = event.prev.as_ref().is_some_and(live);
        let is_live = !removed && live(&event.value);
        let (added, taken) = (is_live && !was_live, was_live && !is_live);
        if !added && !taken {
            return;
        }
        let namespace = event.value.metadata.namespace.clone();
        let key = recon_abi::ObjectKey::new("ReplicaSet", &namespace, &owner.name);
        let Ok(Some(set)) = self.engine.store.get(&key, None) else { return };
        let set = set.value;
        if set.metadata.uid != owner.uid || set.is_terminating() {
            return; // the set is gone or going: its pods are garbage now
        }
        let want = spec_replicas(&set);
        let have = self.live_pods.count(&set.metadata.uid) as u64;
        let pod = &event.value.metadata.name;
        // Only the write that crosses the line is flagged: the rest of the
        // same overshoot (one reconcile's batch) is the same finding.
        let message = if added && have == want + 1 {
            format!(
                "{writer} created pod {namespace}/{pod}, but ReplicaSet {namespace}/{} wanted {want}: it now has {have} live pods",
                owner.name
            )
        } else if taken && have + 1 == want {
            format!(
                "{writer} deleted pod {namespace}/{pod}, but ReplicaSet {namespace}/{} wanted {want}: it now has {have} live pods",
                owner.name
            )
        } else {
            return;
        };
        self.engine.record(
            self.engine.lanes.checks,
            Event::Violation { check: Check::ReplicaCount, message },
            vec![entry],
        );
    }

    /// Liveness, at the end of the run: every ReplicaSet and StatefulSet
    /// runs as many containers as it asks for. The API said yes to the
    /// request long ago; this is whether the cluster ever delivered.
    pub(crate) fn check_convergence(&mut self) {
        if !self.checks.contains(&Check::Convergence) {
            return;
        }
        let mut sets = Vec::new();
        for kind in ["ReplicaSet", "StatefulSet"] {
            let objects = self.engine.store.range(&recon_store::prefix_for(kind, ""), None).unwrap_or_default();
            sets.extend(objects.into_iter().map(|kv| kv.value).filter(|o| !o.is_terminating()));
        }
        for set in sets {
            let want = spec_replicas(&set);
            let namespace = set.metadata.namespace.clone();
            let pods = self.live_pods_of(&namespace, &set.metadata.uid);
            let running = pods
                .iter()
                .filter(|p| {
                    self.nodes
                        .iter()
                        .any(|n| n.running.keys().any(|r| r.uid == p.metadata.uid && r.name == p.metadata.name))
                })
                .count() as u64;
            if running == want {
                continue;
            }
            let unbound = pods.iter().filter(|p| p.spec.get("nodeName").is_none_or(|n| n.is_null())).count();
            let why = if unbound > 0 {
                format!("; {unbound} of its pods were never bound to a node (no node had room)")
            } else {
                String::new()
            };
            let message = format!(
                "never converged: {} {namespace}/{} asks for {want} replicas, but {running} run at the end of the run{why}",
                set.kind, set.metadata.name
            );
            // The cause: the last write that set what the set asks for
            // (not a controller's status report).
            let cause = self
                .engine
                .trace
                .entries
                .iter()
                .rev()
                .find(|e| {
                    matches!(&e.event, Event::StoreWrite { uid, verb, .. }
                        if *uid == set.metadata.uid && *verb != recon_abi::Verb::UpdateStatus)
                })
                .map(|e| e.id);
            self.engine.record(
                self.engine.lanes.checks,
                Event::Violation { check: Check::Convergence, message },
                cause.into_iter().collect(),
            );
        }
    }
}
