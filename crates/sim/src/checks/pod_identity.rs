//! Pod identity (#59848): no two nodes run a container for the same
//! namespace/name at once. A StatefulSet pod's name is its identity; two
//! copies of it are two writers to the same volume.

use recon_scenario::Check;

use super::{ContainerStart, Finding, Observer, Truth};

/// Judged after every container start, against every node's runtime.
pub(super) struct PodIdentity;

impl Observer for PodIdentity {
    fn container_started(&mut self, truth: &Truth<'_>, start: &ContainerStart<'_>) -> Vec<Finding> {
        let pod = start.pod;
        let here = &truth.nodes[start.node.index()].name;
        truth
            .nodes
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != start.node.index())
            .flat_map(|(_, node)| {
                node.running
                    .iter()
                    .filter(|(p, _)| p.namespace == pod.namespace && p.name == pod.name)
                    .map(move |(other, r)| (node, other, r.entry))
            })
            .map(|(node, other, other_entry)| Finding {
                check: Check::PodIdentity,
                message: format!(
                    "pod {}/{} runs on two nodes at once: {here} (uid {}) and {} (uid {})",
                    pod.namespace, pod.name, pod.uid, node.name, other.uid
                ),
                causes: vec![start.entry, other_entry],
                component: None,
            })
            .collect()
    }
}
