//! Replica count: a component's committed write to a pod must not take a
//! workload outside the band of live pods its `spec.replicas` guarantees.
//! Judged against the store — the truth at that moment — not against what
//! the writer saw. One finding per crossing of the band, in either
//! direction.
//!
//! The band of each workload, as the Kubernetes docs give it:
//! - a ReplicaSet keeps exactly `spec.replicas` pods
//!   (<https://kubernetes.io/docs/concepts/workloads/controllers/replicaset/>:
//!   it "maintains a stable set of replica Pods", creating and deleting pods
//!   to reach the desired number);
//! - a StatefulSet never runs more than `spec.replicas`, and takes down at
//!   most `maxUnavailable` (default 1) at a time — its rolling update deletes
//!   a pod to recreate it
//!   (<https://kubernetes.io/docs/concepts/workloads/controllers/statefulset/#maximum-unavailable-pods>);
//! - a Deployment, judged through its ReplicaSets (whose pods it counts
//!   together), keeps between `replicas - maxUnavailable` and
//!   `replicas + maxSurge` pods, 25% each by default, or between none and
//!   `replicas` with the `Recreate` strategy
//!   (<https://kubernetes.io/docs/concepts/workloads/controllers/deployment/#max-unavailable>
//!   and `#max-surge`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use recon_abi::{Object, ObjectKey};
use recon_scenario::Check;
use recon_store::{EventKind, StoreEvent};
use serde_json::Value;

use super::{Commit, Finding, Observer, Truth, live, spec_replicas};

/// Who controls what, by uid, kept up to date on every commit so that
/// judging a write costs no scan of every pod: the live pods of every
/// ReplicaSet and StatefulSet, and the ReplicaSets of every Deployment.
#[derive(Default)]
pub(super) struct ReplicaCount {
    by_owner: BTreeMap<String, BTreeSet<String>>,
}

/// Whether `object` counts toward its controller: a live pod, or a
/// ReplicaSet (whose pods count toward its Deployment).
fn counted(object: &Object) -> bool {
    match object.kind.as_str() {
        "Pod" => live(object),
        "ReplicaSet" => true,
        _ => false,
    }
}

impl ReplicaCount {
    /// Follows one store event.
    fn apply(&mut self, event: &StoreEvent) {
        let entry = |o: &Object| o.controller_owner().map(|owner| (owner.uid.clone(), o.metadata.uid.clone()));
        if let Some((owner, child)) = event.prev.as_deref().filter(|p| counted(p)).and_then(entry)
            && let Some(set) = self.by_owner.get_mut(&owner)
        {
            set.remove(&child);
            if set.is_empty() {
                self.by_owner.remove(&owner);
            }
        }
        let removed = event.kind == EventKind::Delete;
        if !removed
            && counted(&event.value)
            && let Some((owner, child)) = entry(&event.value)
        {
            self.by_owner.entry(owner).or_default().insert(child);
        }
    }

    /// How many live pods the ReplicaSet or StatefulSet with `uid` controls.
    fn pods_of(&self, owner_uid: &str) -> usize {
        self.by_owner.get(owner_uid).map_or(0, |s| s.len())
    }

    /// How many live pods the ReplicaSets of the Deployment with `uid` control.
    fn pods_of_deployment(&self, uid: &str) -> usize {
        self.by_owner.get(uid).map_or(0, |sets| sets.iter().map(|set| self.pods_of(set)).sum())
    }
}

/// The live pods a workload keeps: `want`, at most `surge` above it and at
/// most `unavailable` below it.
struct Band {
    want: u64,
    surge: u64,
    unavailable: u64,
}

impl Band {
    /// A ReplicaSet's: exactly `spec.replicas`.
    fn replica_set(set: &Object) -> Band {
        Band { want: spec_replicas(set), surge: 0, unavailable: 0 }
    }

    /// A StatefulSet's: never above `spec.replicas`, at most
    /// `updateStrategy.rollingUpdate.maxUnavailable` below (rounded up, at
    /// least 1, as Kubernetes resolves it).
    fn stateful_set(set: &Object) -> Band {
        let want = spec_replicas(set);
        let max = set.spec.pointer("/updateStrategy/rollingUpdate/maxUnavailable");
        let unavailable = max.and_then(|m| scaled(m, want, true)).unwrap_or(1).max(1);
        Band { want, surge: 0, unavailable }
    }

    /// A Deployment's: `maxSurge` (rounded up) above and `maxUnavailable`
    /// (rounded down) below, 25% each by default and one unavailable if both
    /// come out 0 (Kubernetes' `ResolveFenceposts`); with `Recreate`, none
    /// above and all below.
    fn deployment(deployment: &Object) -> Band {
        let want = spec_replicas(deployment);
        let strategy = deployment.spec.get("strategy");
        if strategy.and_then(|s| s.get("type")).and_then(Value::as_str) == Some("Recreate") {
            return Band { want, surge: 0, unavailable: want };
        }
        let rolling = strategy.and_then(|s| s.get("rollingUpdate"));
        let quarter = Value::from("25%");
        let resolve = |field: &str, round_up: bool| {
            scaled(rolling.and_then(|r| r.get(field)).unwrap_or(&quarter), want, round_up).unwrap_or(0)
        };
        let (surge, unavailable) = (resolve("maxSurge", true), resolve("maxUnavailable", false));
        let unavailable = if surge == 0 && unavailable == 0 { 1 } else { unavailable };
        Band { want, surge, unavailable: unavailable.min(want) }
    }
}

/// An int-or-percent field against `total`: a number as is, a percentage
/// of `total` rounded up or down (Kubernetes' `GetScaledValueFromIntOrPercent`).
fn scaled(value: &Value, total: u64, round_up: bool) -> Option<u64> {
    match value {
        Value::Number(n) => n.as_u64(),
        Value::String(text) => match text.strip_suffix('%') {
            Some(percent) => {
                let product = percent.trim().parse::<u64>().ok()?.checked_mul(total)?;
                Some(if round_up { product.div_ceil(100) } else { product / 100 })
            }
            None => text.trim().parse().ok(),
        },
        _ => None,
    }
}

/// The object `kind`/`namespace`/`name` in the store, if it is still the
/// one with `uid` and is not being deleted (a workload that is gone or going
/// has garbage pods, not replicas).
fn workload(truth: &Truth<'_>, kind: &str, namespace: &str, name: &str, uid: &str) -> Option<Arc<Object>> {
    let object = truth.store.get(&ObjectKey::new(kind, namespace, name), None).ok()??.value;
    (object.metadata.uid == uid && !object.is_terminating()).then_some(object)
}

/// The pod write being judged.
struct PodWrite<'a> {
    writer: &'a str,
    /// `created` or `deleted`.
    verb: &'static str,
    /// Whether it made a live pod (rather than took one away).
    added: bool,
    namespace: &'a str,
    pod: &'a str,
}

impl PodWrite<'_> {
    /// The finding when the write crossed `band` of the workload `what`
    /// (e.g. "StatefulSet default/web"), which now has `have` live pods.
    /// Only the write that crosses the line is flagged: the rest of the
    /// same overshoot (one reconcile's batch) is the same finding.
    /// `what` names the workload; made only for a finding (a pod's every
    /// create and delete is judged, and formatting the name each time was
    /// 0.4 % of a large run's instructions).
    fn judge(
        &self,
        what: impl FnOnce() -> String,
        band: &Band,
        have: u64,
        entry: recon_trace::EntryId,
    ) -> Option<Finding> {
        let crossed =
            if self.added { have == band.want + band.surge + 1 } else { have + 1 + band.unavailable == band.want };
        if !crossed {
            return None;
        }
        let Band { want, surge, unavailable } = band;
        let leeway = match (self.added, *surge, *unavailable) {
            (true, 0, _) | (false, _, 0) => String::new(),
            (true, surge, _) => format!(" (at most {surge} more during a rollout)"),
            (false, _, unavailable) => format!(" (at most {unavailable} fewer during an update)"),
        };
        let PodWrite { writer, verb, namespace, pod, .. } = self;
        let what = what();
        Some(Finding {
            check: Check::ReplicaCount,
            message: format!(
                "{writer} {verb} pod {namespace}/{pod}, but {what} wanted {want}{leeway}: it now has {have} live pods"
            ),
            causes: vec![entry],
            component: None,
        })
    }
}

impl Observer for ReplicaCount {
    fn committed(&mut self, truth: &Truth<'_>, commit: &Commit<'_>) -> Vec<Finding> {
        let event = commit.event;
        self.apply(event);
        let Some(writer) = commit.writer else { return Vec::new() };
        if event.value.kind != "Pod" {
            return Vec::new();
        }
        let Some(owner) = event.value.controller_owner() else { return Vec::new() };
        let was_live = event.prev.as_deref().is_some_and(live);
        let is_live = event.kind != EventKind::Delete && live(&event.value);
        if is_live == was_live {
            return Vec::new();
        }
        let namespace = event.value.metadata.namespace.as_str();
        let write = PodWrite {
            writer,
            verb: if is_live { "created" } else { "deleted" },
            added: is_live,
            namespace,
            pod: &event.value.metadata.name,
        };
        let band = match owner.kind.as_str() {
            "ReplicaSet" => Band::replica_set,
            "StatefulSet" => Band::stateful_set,
            _ => return Vec::new(),
        };
        let Some(set) = workload(truth, &owner.kind, namespace, &owner.name, &owner.uid) else { return Vec::new() };
        let have = self.pods_of(&owner.uid) as u64;
        let what = || format!("{} {namespace}/{}", owner.kind, owner.name);
        let mut findings: Vec<Finding> = write.judge(what, &band(&set), have, commit.entry).into_iter().collect();
        // A ReplicaSet's pods are also its Deployment's.
        if let Some(parent) = set.controller_owner().filter(|o| o.kind == "Deployment")
            && let Some(deployment) = workload(truth, "Deployment", namespace, &parent.name, &parent.uid)
        {
            let have = self.pods_of_deployment(&parent.uid) as u64;
            let what = || format!("Deployment {namespace}/{} (through ReplicaSet {})", parent.name, owner.name);
            findings.extend(write.judge(what, &Band::deployment(&deployment), have, commit.entry));
        }
        findings
    }
}
