//! Convergence (liveness), at the end of the run: every ReplicaSet and
//! StatefulSet runs as many containers as it asks for. The API said yes to
//! the request long ago; this is whether the cluster ever delivered.

use std::collections::BTreeSet;
use std::sync::Arc;

use recon_abi::Object;
use recon_scenario::Check;
use recon_trace::Event;

use super::{Finding, Observer, Truth, live, spec_replicas};

/// Judged once, when the run ends.
pub(super) struct Convergence;

impl Observer for Convergence {
    fn ended(&mut self, truth: &Truth<'_>) -> Vec<Finding> {
        let mut sets = Vec::new();
        for kind in ["ReplicaSet", "StatefulSet"] {
            let objects = truth.store.range(&recon_store::prefix_for(kind, ""), None).unwrap_or_default();
            sets.extend(objects.into_iter().map(|kv| kv.value).filter(|o| !o.is_terminating()));
        }
        // Every container running at the end, by pod (uid, name): looked up
        // per pod rather than searched for on every node.
        let running_pods: BTreeSet<(&str, &str)> =
            truth.nodes.iter().flat_map(|n| n.pods()).map(|r| (r.uid.as_str(), r.name.as_str())).collect();
        let mut findings = Vec::new();
        for set in sets {
            let want = spec_replicas(&set);
            let namespace = set.metadata.namespace.clone();
            let pods = live_pods_of(truth, &namespace, &set.metadata.uid);
            let running = pods
                .iter()
                .filter(|p| running_pods.contains(&(p.metadata.uid.as_str(), p.metadata.name.as_str())))
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
            let cause = truth
                .trace
                .entries
                .iter()
                .rev()
                .find(|e| {
                    matches!(&e.event, Event::StoreWrite { uid, verb, .. }
                        if *uid == set.metadata.uid && !verb.is_status())
                })
                .map(|e| e.id);
            findings.push(Finding {
                check: Check::Convergence,
                message,
                causes: cause.into_iter().collect(),
                component: None,
            });
        }
        findings
    }
}

/// The live pods in the store whose controller is the object with `uid`.
fn live_pods_of(truth: &Truth<'_>, namespace: &str, uid: &str) -> Vec<Arc<Object>> {
    let pods = truth.store.range(&recon_store::prefix_for("Pod", namespace), None).unwrap_or_default();
    pods.into_iter()
        .map(|kv| kv.value)
        .filter(|p| live(p) && p.controller_owner().is_some_and(|o| o.uid == uid))
        .collect()
}
