//! Perturbation plans: a few faults, as plain data, applied to a workload
//! scenario to give a new scenario.

use recon_scenario::{Millis, Scenario, Step, StepAction, Window};
use serde::{Deserialize, Serialize};

/// The Sieve (OSDI'22) pattern a plan follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Pattern {
    /// Stale state / time travel: a component restarts onto an API server
    /// whose cache was frozen at a state the component had already seen.
    StaleState,
    /// Unobserved state: a component is down while an object it watches is
    /// created and deleted, so its relist skips over both.
    UnobservedState,
    /// Intermediate state: a controller crashes right after one write of a
    /// reconcile and restarts from whatever the store holds then.
    IntermediateState,
}

impl std::fmt::Display for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Pattern::StaleState => "stale state",
            Pattern::UnobservedState => "unobserved state",
            Pattern::IntermediateState => "intermediate state",
        })
    }
}

/// One fault of a plan.
// A plan holds two or three of these: not worth boxing the step.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Fault {
    /// A script step (crash, restart, disconnect or compact).
    Step(Step),
    /// An API server cut off from the store for a window of time.
    #[serde(rename_all = "camelCase")]
    Partition {
        /// The API server.
        api_server: String,
        /// When.
        window: Window,
    },
}

impl Fault {
    /// When the fault begins.
    pub fn at(&self) -> Millis {
        match self {
            Fault::Step(step) => step.at,
            Fault::Partition { window, .. } => window.from,
        }
    }

    /// The fault in words, e.g. `t=3.028s restart kubelet-node-1 onto apiserver-2`.
    pub fn describe(&self) -> String {
        let t = |m: Millis| recon_trace::text::fmt_time(m.0);
        match self {
            Fault::Partition { api_server, window } => match window.until {
                Some(until) => format!("{}..{} {api_server} cut off from etcd", t(window.from), t(until)),
                None => format!("{}.. {api_server} cut off from etcd until the end", t(window.from)),
            },
            Fault::Step(Step { at, action }) => {
                let what = match action {
                    StepAction::Crash { component } => format!("crash {component}"),
                    StepAction::Restart { component, api_server: Some(s) } => {
                        format!("restart {component} onto {s}")
                    }
                    StepAction::Restart { component, api_server: None } => format!("restart {component}"),
                    StepAction::Disconnect { component } => format!("break {component}'s watches"),
                    StepAction::Compact { keep } => format!("compact etcd keeping {keep} revisions"),
                    other => format!("{other:?}"),
                };
                format!("{} {what}", t(*at))
            }
        }
    }
}

/// A perturbation plan: what to break, when, and why it might matter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// The pattern it follows.
    pub pattern: Pattern,
    /// The component it targets.
    pub component: String,
    /// Why: the reference-run events the plan is built around, in words.
    pub rationale: String,
    /// The faults, in time order.
    pub faults: Vec<Fault>,
}

impl Plan {
    /// The plan in one line: pattern, component and faults.
    pub fn describe(&self) -> String {
        let faults: Vec<String> = self.faults.iter().map(Fault::describe).collect();
        format!("{} on {}: {}", self.pattern, self.component, faults.join("; "))
    }

    /// `workload` with this plan's faults added: partition windows to their
    /// API servers (kept in time order), steps into the script after every
    /// workload step at the same time. Times past the end of the run are
    /// clamped to it.
    pub fn apply(&self, workload: &Scenario) -> Scenario {
        let mut s = workload.clone();
        let end = s.duration;
        for fault in &self.faults {
            match fault {
                Fault::Partition { api_server, window } => {
                    if let Some(server) = s.api_servers.iter_mut().find(|a| &a.name == api_server) {
                        let mut window = *window;
                        window.from = window.from.min(end);
                        server.partitions.push(window);
                        server.partitions.sort_by_key(|w| w.from);
                    }
                }
                Fault::Step(step) => {
                    let mut step = step.clone();
                    step.at = step.at.min(end);
                    let i = s.script.partition_point(|x| x.at <= step.at);
                    s.script.insert(i, step);
                }
            }
        }
        s
    }
}

/// Whether a script action is a fault (as opposed to workload).
pub fn is_fault(action: &StepAction) -> bool {
    matches!(
        action,
        StepAction::Crash { .. }
            | StepAction::Restart { .. }
            | StepAction::Disconnect { .. }
            | StepAction::Compact { .. }
    )
}

/// The scenario's workload: the same cluster, objects and user actions
/// (create, apply, delete, scale, cordon, uncordon), with every hand-written
/// fault removed (crash, restart, disconnect, compact, partitions).
pub fn workload(scenario: &Scenario) -> Scenario {
    let mut s = scenario.clone();
    s.script.retain(|step| !is_fault(&step.action));
    for server in &mut s.api_servers {
        server.partitions.clear();
    }
    s
}
