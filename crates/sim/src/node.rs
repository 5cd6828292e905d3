//! A node's container runtime: the ground truth of what runs where. It
//! survives its kubelet's restarts (a crashed agent leaves its containers
//! running), and it is what the safety checks read.

use std::collections::BTreeMap;

use recon_abi::{Container, PodRef};

/// A container running on a node.
#[derive(Clone, Debug)]
pub(crate) struct Running {
    /// When it started.
    pub started_at: u64,
}

/// One node's runtime.
#[derive(Clone, Debug)]
pub(crate) struct NodeRuntime {
    /// The node's name.
    pub name: String,
    /// Its containers, by pod incarnation.
    pub running: BTreeMap<PodRef, Running>,
}

impl NodeRuntime {
    /// A node with nothing running.
    pub fn new(name: &str) -> NodeRuntime {
        NodeRuntime { name: name.to_string(), running: BTreeMap::new() }
    }

    /// What runs here, as a node agent is shown it.
    pub fn containers(&self) -> Vec<Container> {
        self.running.iter().map(|(pod, r)| Container { pod: pod.clone(), started_at_ms: r.started_at }).collect()
    }

    /// Whether a container for this pod incarnation runs here.
    pub fn runs(&self, pod: &PodRef) -> bool {
        self.running.contains_key(pod)
    }
}
