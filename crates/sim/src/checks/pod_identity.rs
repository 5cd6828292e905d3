//! Pod identity (#59848): no two nodes run a container for the same
//! namespace/name at once. A StatefulSet pod's name is its identity; two
//! copies of it are two writers to the same volume.

use std::collections::BTreeMap;

use recon_abi::PodRef;
use recon_scenario::Check;
use recon_trace::EntryId;

use crate::ids::NodeId;

use super::{ContainerStart, Finding, Observer, Truth};

/// A running container: the node it runs on and the pod incarnation.
type Container = (NodeId, PodRef);

/// Judged after every container start, against what runs on the other
/// nodes. Keeps its own index of the running containers by identity, so a
/// start costs the containers of that one name, not of the whole cluster.
#[derive(Default)]
pub(super) struct PodIdentity {
    /// (namespace, name) → the containers of that identity, sorted by node
    /// and incarnation (the order findings are reported in). Nearly always
    /// one: a list of them costs a few words where a map's smallest node
    /// took about a kilobyte, for every pod running in the cluster.
    running: BTreeMap<(String, String), Vec<(Container, EntryId)>>,
}

impl Observer for PodIdentity {
    fn container_started(&mut self, truth: &Truth<'_>, start: &ContainerStart<'_>) -> Vec<Finding> {
        let pod = start.pod;
        let here = &truth.nodes[start.node.index()].name;
        let same = self.running.entry((pod.namespace.clone(), pod.name.clone())).or_default();
        let findings = same
            .iter()
            .filter(|((node, _), _)| *node != start.node)
            .map(|((node, other), other_entry)| Finding {
                check: Check::PodIdentity,
                message: format!(
                    "pod {}/{} runs on two nodes at once: {here} (uid {}) and {} (uid {})",
                    pod.namespace,
                    pod.name,
                    pod.uid,
                    truth.nodes[node.index()].name,
                    other.uid
                ),
                causes: vec![start.entry, *other_entry],
                component: None,
            })
            .collect();
        let container = (start.node, pod.clone());
        match same.binary_search_by(|(c, _)| c.cmp(&container)) {
            Ok(at) => same[at].1 = start.entry,
            Err(at) => same.insert(at, (container, start.entry)),
        }
        findings
    }

    fn container_stopped(&mut self, node: NodeId, pod: &PodRef) {
        let identity = (pod.namespace.clone(), pod.name.clone());
        if let Some(same) = self.running.get_mut(&identity) {
            same.retain(|((n, p), _)| !(*n == node && p == pod));
            if same.is_empty() {
                self.running.remove(&identity);
            }
        }
    }
}
