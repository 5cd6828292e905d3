//! Oracles: what counts as "broken". The simulator's own safety checks
//! (violation entries in the trace), and optionally a differential check
//! against the fault-free reference run.

use std::collections::BTreeMap;

use recon_scenario::Check;
use recon_sim::Sim;
use recon_trace::{Event, Trace};
use serde::{Deserialize, Serialize};

/// What a run ended with, for the differential oracle: the store's final
/// objects (key → spec and labels, without uids or revisions, which faults
/// legitimately change) and how often each key was created and deleted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// Final objects by key (`Kind namespace/name`): spec and labels.
    pub objects: BTreeMap<String, serde_json::Value>,
    /// Per key: (creates, deletes) over the run.
    pub counts: BTreeMap<String, (u32, u32)>,
}

impl Outcome {
    /// Reads the outcome of a finished simulation.
    pub fn of(sim: &Sim) -> Outcome {
        let mut objects = BTreeMap::new();
        for kv in sim.store().range("/", None).unwrap_or_default() {
            let o = &kv.value;
            let value = serde_json::json!({ "labels": o.metadata.labels, "spec": o.spec });
            objects.insert(o.key().to_string(), value);
        }
        let mut counts: BTreeMap<String, (u32, u32)> = BTreeMap::new();
        for e in &sim.trace().entries {
            if let Event::StoreWrite { verb, key, removed, .. } = &e.event {
                let c = counts.entry(key.to_string()).or_default();
                if *verb == recon_abi::Verb::Create {
                    c.0 += 1;
                }
                if *removed {
                    c.1 += 1;
                }
            }
        }
        Outcome { objects, counts }
    }
}

/// Which oracle a finding comes from.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Broken {
    /// A safety check of the simulator failed.
    Violation(Check),
    /// The final store state differs from the reference run's at this key.
    FinalState(String),
    /// This key was created or deleted a different number of times.
    Counts(String),
}

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Broken::Violation(check) => write!(f, "{check}"),
            Broken::FinalState(key) => write!(f, "final state of {key} differs from the fault-free run"),
            Broken::Counts(key) => write!(f, "{key} created/deleted a different number of times than fault-free"),
        }
    }
}

/// What a failing run broke.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// The most important thing broken: a violation of the first check in
    /// [`Check::ALL`] order (pod identity before StatefulSet ordinals before
    /// time travel), else a differential difference.
    pub broken: Broken,
    /// One line: the violation's message or the difference.
    pub message: String,
    /// Every check violated in the run, in [`Check::ALL`] order.
    pub checks: Vec<Check>,
}

/// Judges a finished run: `None` if nothing broke. With `reference` (the
/// differential oracle), a run whose outcome differs from it is broken too.
pub fn judge(trace: &Trace, outcome: Option<(&Outcome, &Outcome)>) -> Option<Finding> {
    let mut checks: Vec<Check> = trace.violations().map(|(_, c, _)| c).collect();
    checks.sort();
    checks.dedup();
    if let Some(&first) = checks.first() {
        let message =
            trace.violations().find(|(_, c, _)| *c == first).map(|(_, _, m)| m.to_string()).unwrap_or_default();
        return Some(Finding { broken: Broken::Violation(first), message, checks });
    }
    let (run, reference) = outcome?;
    let mut keys = run.objects.keys().chain(reference.objects.keys());
    if let Some(key) = keys.find(|k| run.objects.get(*k) != reference.objects.get(*k)) {
        let message = match (reference.objects.get(key), run.objects.get(key)) {
            (Some(_), None) => format!("{key} exists after the fault-free run but not after this one"),
            (None, Some(_)) => format!("{key} exists after this run but not after the fault-free one"),
            _ => format!("{key} ends with a different spec or labels than after the fault-free run"),
        };
        return Some(Finding { broken: Broken::FinalState(key.clone()), message, checks });
    }
    let mut keys = run.counts.keys().chain(reference.counts.keys());
    if let Some(key) = keys.find(|k| run.counts.get(*k) != reference.counts.get(*k)) {
        let (rc, rd) = reference.counts.get(key).copied().unwrap_or_default();
        let (c, d) = run.counts.get(key).copied().unwrap_or_default();
        let message = format!("{key} was created {c} and deleted {d} time(s); fault-free: created {rc}, deleted {rd}");
        return Some(Finding { broken: Broken::Counts(key.clone()), message, checks });
    }
    None
}
