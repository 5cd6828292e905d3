//! Nodes' container runtimes and the safety checks on them.
//!
//! The runtime is the ground truth of what runs where: it survives kubelet
//! restarts, and it is what the pod-identity and StatefulSet checks look at
//! after every container start.

use std::collections::BTreeMap;

use recon_abi::{Container, Object, PodRef};
use recon_scenario::Check;

use crate::trace::{EntryId, Event};
use crate::world::Sim;

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
        let entry = self.trace.push(
            self.now,
            node,
            Event::ContainerStarted { node: node.to_string(), pod: pod.clone() },
            vec![cause],
        );
        let ordinal = object.as_ref().and_then(stateful_ordinal);
        self.nodes[n].running.insert(pod.clone(), Running { started_at: self.now, entry, ordinal: ordinal.clone() });
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
            self.trace.push(
                self.now,
                node,
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
            self.trace.push(
                self.now,
                "checks",
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
            self.trace.push(
                self.now,
                "checks",
                Event::Violation { check: Check::StatefulSetOrdinals, message },
                vec![entry, other_entry],
            );
        }
    }
}
