//! Reading pods: phase, readiness, node, identity.

use recon_abi::{Object, PodRef};
use serde_json::Value;

use crate::status::condition_is_true;

/// A pod's `status.phase`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// Accepted, not (yet) running: also what a pod without status is.
    Pending,
    /// Bound to a node and its container runs.
    Running,
    /// Its container exited successfully and will not restart.
    Succeeded,
    /// Its container failed and will not restart.
    Failed,
    /// A phase this SDK does not know.
    Unknown,
}

impl Phase {
    /// Whether the pod is done for good (Succeeded or Failed).
    pub fn is_terminal(self) -> bool {
        matches!(self, Phase::Succeeded | Phase::Failed)
    }

    /// The phase as spelled in `status.phase`.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Pending => "Pending",
            Phase::Running => "Running",
            Phase::Succeeded => "Succeeded",
            Phase::Failed => "Failed",
            Phase::Unknown => "Unknown",
        }
    }
}

/// The pod's phase; a pod without `status.phase` is Pending.
pub fn phase(pod: &Object) -> Phase {
    match pod.status.get("phase").and_then(Value::as_str) {
        None | Some("") | Some("Pending") => Phase::Pending,
        Some("Running") => Phase::Running,
        Some("Succeeded") => Phase::Succeeded,
        Some("Failed") => Phase::Failed,
        Some(_) => Phase::Unknown,
    }
}

/// Whether the pod's `Ready` condition is `True`.
pub fn is_ready(pod: &Object) -> bool {
    condition_is_true(pod, "Ready")
}

/// Whether the pod is Running and Ready: what OrderedReady waits for.
pub fn is_running_and_ready(pod: &Object) -> bool {
    phase(pod) == Phase::Running && is_ready(pod)
}

/// Whether the pod still counts: not terminating and not terminal.
pub fn is_active(pod: &Object) -> bool {
    !pod.is_terminating() && !phase(pod).is_terminal()
}

/// The node the pod is bound to (`spec.nodeName`), if any.
pub fn node_name(pod: &Object) -> Option<&str> {
    pod.spec.get("nodeName").and_then(Value::as_str).filter(|n| !n.is_empty())
}

/// The pod incarnation, as containers refer to it.
pub fn pod_ref(pod: &Object) -> PodRef {
    PodRef { namespace: pod.metadata.namespace.clone(), name: pod.metadata.name.clone(), uid: pod.metadata.uid.clone() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{ObjectExt, pod};

    #[test]
    fn a_pod_without_status_is_pending_and_not_ready() {
        let p = pod("default", "a", "u", "1");
        assert_eq!(phase(&p), Phase::Pending);
        assert!(!is_ready(&p) && !is_running_and_ready(&p) && is_active(&p));
        assert_eq!(node_name(&p), None);
    }

    #[test]
    fn running_ready_bound_pods_read_as_such() {
        let p = pod("default", "a", "u", "1").on_node("node-1").running_ready();
        assert!(is_running_and_ready(&p));
        assert_eq!(node_name(&p), Some("node-1"));
        assert!(!is_active(&p.clone().terminating()));
        assert_eq!(pod_ref(&p), PodRef { namespace: "default".into(), name: "a".into(), uid: "u".into() });
    }
}
