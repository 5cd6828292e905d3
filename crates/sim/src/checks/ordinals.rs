//! StatefulSet ordinals: at most one live pod per ordinal of a StatefulSet
//! runs at a time, whatever its name or uid (the guarantee "at most one pod
//! per identity" that StatefulSets give).

use std::collections::BTreeMap;

use recon_abi::{Object, PodRef};
use recon_scenario::Check;
use recon_trace::EntryId;

use crate::ids::NodeId;

use super::{ContainerStart, Finding, Observer, Truth};

/// (namespace, StatefulSet name, ordinal).
type Ordinal = (String, String, u64);

/// The ordinal of every running container that has one, by (node, pod).
#[derive(Default)]
pub(super) struct StatefulSetOrdinals {
    running: BTreeMap<(NodeId, PodRef), (Ordinal, EntryId)>,
}

/// StatefulSet name and ordinal of a pod: from the controlling owner
/// reference, and the `apps.kubernetes.io/pod-index` label or the name suffix.
fn ordinal_of(pod: &Object) -> Option<Ordinal> {
    let owner = pod.controller_owner().filter(|o| o.kind == "StatefulSet")?;
    let ordinal = pod
        .metadata
        .labels
        .get("apps.kubernetes.io/pod-index")
        .and_then(|i| i.parse().ok())
        .or_else(|| pod.metadata.name.strip_prefix(&format!("{}-", owner.name))?.parse().ok())?;
    Some((pod.metadata.namespace.clone(), owner.name.clone(), ordinal))
}

impl Observer for StatefulSetOrdinals {
    fn container_started(&mut self, truth: &Truth<'_>, start: &ContainerStart<'_>) -> Vec<Finding> {
        let Some(ordinal) = start.object.and_then(ordinal_of) else { return Vec::new() };
        let findings = self
            .running
            .iter()
            .filter(|(_, (o, _))| *o == ordinal)
            .map(|((node, other), (_, other_entry))| {
                let (ns, set, i) = &ordinal;
                Finding {
                    check: Check::StatefulSetOrdinals,
                    message: format!(
                        "StatefulSet {ns}/{set} has two live pods for ordinal {i}: {} on {} and {} on {}",
                        start.pod.uid,
                        truth.nodes[start.node.index()].name,
                        other.uid,
                        truth.nodes[node.index()].name
                    ),
                    causes: vec![start.entry, *other_entry],
                    component: None,
                }
            })
            .collect();
        self.running.insert((start.node, start.pod.clone()), (ordinal, start.entry));
        findings
    }

    fn container_stopped(&mut self, node: NodeId, pod: &PodRef) {
        self.running.remove(&(node, pod.clone()));
    }
}
