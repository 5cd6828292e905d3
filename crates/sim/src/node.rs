//! A node's container runtime: the ground truth of what runs where. It
//! survives its kubelet's restarts (a crashed agent leaves its containers
//! running), and it is what the safety checks read.

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::sync::Arc;

use recon_abi::{Container, PodRef};

/// A container running on a node.
#[derive(Clone, Debug)]
struct Running {
    /// When it started.
    started_at: u64,
}

/// One node's runtime.
#[derive(Clone, Debug)]
pub(crate) struct NodeRuntime {
    /// The node's name.
    pub name: String,
    /// Its containers, by pod incarnation (changed only through
    /// [`NodeRuntime::start`] and [`NodeRuntime::stop`]).
    running: BTreeMap<PodRef, Running>,
    /// `running` as a node agent is shown it, made when first asked for
    /// after a change: a kubelet is called far more often than its
    /// containers change, and copying the list for every call was 3 % of a
    /// large run.
    shown: OnceCell<Arc<[Container]>>,
}

impl NodeRuntime {
    /// A node with nothing running.
    pub fn new(name: &str) -> NodeRuntime {
        NodeRuntime { name: name.to_string(), running: BTreeMap::new(), shown: OnceCell::new() }
    }

    /// What runs here, as a node agent is shown it, by pod incarnation.
    pub fn containers(&self) -> Arc<[Container]> {
        let list = || self.running.iter().map(|(pod, r)| Container { pod: pod.clone(), started_at_ms: r.started_at });
        self.shown.get_or_init(|| list().collect()).clone()
    }

    /// Every pod incarnation with a container here.
    pub fn pods(&self) -> impl Iterator<Item = &PodRef> {
        self.running.keys()
    }

    /// Starts a container for `pod` at `now_ms`, unless one runs.
    pub fn start(&mut self, pod: &PodRef, now_ms: u64) {
        if !self.running.contains_key(pod) {
            self.running.insert(pod.clone(), Running { started_at: now_ms });
            self.shown = OnceCell::new();
        }
    }

    /// Stops `pod`'s container; whether one ran.
    pub fn stop(&mut self, pod: &PodRef) -> bool {
        let ran = self.running.remove(pod).is_some();
        if ran {
            self.shown = OnceCell::new();
        }
        ran
    }

    /// Whether a container for this pod incarnation runs here.
    pub fn runs(&self, pod: &PodRef) -> bool {
        self.running.contains_key(pod)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str) -> PodRef {
        PodRef { namespace: "default".into(), name: name.into(), uid: format!("uid-{name}") }
    }

    fn names(containers: &[Container]) -> Vec<&str> {
        containers.iter().map(|c| c.pod.name.as_str()).collect()
    }

    /// The list a node agent is shown is made once per change and shared
    /// until the next: every start and stop shows at once.
    #[test]
    fn the_containers_shown_follow_every_start_and_stop() {
        let mut node = NodeRuntime::new("node-1");
        assert!(node.containers().is_empty());
        node.start(&pod("b"), 10);
        node.start(&pod("a"), 20);
        let shown = node.containers();
        assert_eq!(names(&shown), ["a", "b"], "by pod incarnation");
        assert_eq!(shown[0].started_at_ms, 20);
        assert!(Arc::ptr_eq(&shown, &node.containers()), "no change, the same list");

        node.start(&pod("a"), 30); // already running: no change
        assert!(Arc::ptr_eq(&shown, &node.containers()));
        assert_eq!(node.containers()[0].started_at_ms, 20);

        assert!(node.stop(&pod("b")));
        assert!(!node.stop(&pod("b")), "stopped already");
        assert_eq!(names(&node.containers()), ["a"]);
        assert_eq!(names(&shown), ["a", "b"], "a list already shown does not change");
    }
}
