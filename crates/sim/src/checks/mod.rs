//! Safety and liveness checks, each its own observer.
//!
//! A check watches the run through the [`Observer`] trait — a commit to
//! the store, a container starting or stopping on a node, a component
//! observing a revision, the end of the run — and reads the ground truth
//! ([`Truth`]: the store, every node's runtime, the trace so far). It never
//! sits in a write path: the simulation tells every registered observer,
//! and records what they find as violations. Adding a check is a new file
//! here and a line in [`Checks::new`].

mod aggregate;
mod convergence;
mod garbage;
mod history;
mod idle;
mod lost_work;
mod ordinals;
mod pod_identity;
mod replica_count;
mod stuck_deleting;
mod time_travel;

use recon_abi::{Object, PodRef};
use recon_scenario::Check;
use recon_store::{Store, StoreEvent};
use recon_trace::{EntryId, Event, Trace};

use crate::engine::Engine;
use crate::ids::{ComponentId, NodeId};
use crate::node::NodeRuntime;
pub(crate) use idle::IdleController;

/// What a check may read when it is told something: the truth at that moment.
pub(crate) struct Truth<'a> {
    /// The store.
    pub store: &'a Store,
    /// Every node's runtime, in scenario order.
    pub nodes: &'a [NodeRuntime],
    /// The trace so far.
    pub trace: &'a Trace,
    /// At the end of the run, the controllers that were quiescent yet would
    /// still write if handed the store as it is; empty before.
    pub idle: &'a [IdleController],
}

/// A write committed to the store.
pub(crate) struct Commit<'a> {
    /// The store event.
    pub event: &'a StoreEvent,
    /// Its StoreWrite entry.
    pub entry: EntryId,
    /// The component that wrote it; `None` for kubectl and the scenario's
    /// initial objects.
    pub writer: Option<&'a str>,
}

/// A container started on a node.
pub(crate) struct ContainerStart<'a> {
    /// The node.
    pub node: NodeId,
    /// The pod incarnation.
    pub pod: &'a PodRef,
    /// The pod as the agent that started it knew it, if it did.
    pub object: Option<&'a Object>,
    /// The ContainerStarted entry.
    pub entry: EntryId,
}

/// A component observed a revision (a list or a watch event).
pub(crate) struct Observation<'a> {
    /// The component.
    pub component: ComponentId,
    /// Its name.
    pub name: &'a str,
    /// The API server it observed it from.
    pub api_server: &'a str,
    /// The revision.
    pub revision: u64,
    /// The entry that showed it.
    pub entry: EntryId,
}

/// A violation a check found.
pub(crate) struct Finding {
    /// Which check.
    pub check: Check,
    /// One line, in plain words.
    pub message: String,
    /// The entries that make the violation, most direct first.
    pub causes: Vec<EntryId>,
    /// The component whose lane it belongs on, when it is about one
    /// component's view; otherwise it goes on the checks' lane.
    pub component: Option<ComponentId>,
}

/// One check. Every method has a default that finds nothing, so a check
/// implements only what it watches.
pub(crate) trait Observer {
    /// A write was committed to the store.
    fn committed(&mut self, _truth: &Truth<'_>, _commit: &Commit<'_>) -> Vec<Finding> {
        Vec::new()
    }
    /// A node's runtime started a container.
    fn container_started(&mut self, _truth: &Truth<'_>, _start: &ContainerStart<'_>) -> Vec<Finding> {
        Vec::new()
    }
    /// A node's runtime stopped a container.
    fn container_stopped(&mut self, _node: NodeId, _pod: &PodRef) {}
    /// A component observed a revision.
    fn observed(&mut self, _truth: &Truth<'_>, _observation: &Observation<'_>) -> Vec<Finding> {
        Vec::new()
    }
    /// The run reached its end.
    fn ended(&mut self, _truth: &Truth<'_>) -> Vec<Finding> {
        Vec::new()
    }
}

/// The checks a scenario enabled, told of everything in a fixed order.
pub(crate) struct Checks {
    observers: Vec<Box<dyn Observer>>,
    judges_idle: bool,
}

impl Checks {
    /// The observers of the enabled checks. The order is fixed, whatever
    /// the scenario's, so that findings on one event come out the same.
    /// `collectors` names the components that run the garbage collector:
    /// the garbage-collection checks judge their deletes, and only judge
    /// orphans when there is one. The history-policy check judges the
    /// scenario's `checks.policies`, the dropped-member check its
    /// `checks.aggregates`.
    pub fn new(checks: &recon_scenario::Checks, collectors: &[String]) -> Checks {
        let enabled = &checks.enabled;
        let mut observers: Vec<Box<dyn Observer>> = Vec::new();
        for check in [
            Check::TimeTravel,
            Check::PodIdentity,
            Check::StatefulSetOrdinals,
            Check::ReplicaCount,
            Check::Convergence,
            Check::StuckDeleting,
            Check::DeletedLiveDependent,
            Check::OrphanedDependent,
            Check::DependentOfDeletedOwner,
            Check::LostWork,
            Check::IdleWithWorkLeft,
            Check::HistoryPolicy,
            Check::DroppedMember,
        ] {
            if !enabled.contains(&check) {
                continue;
            }
            observers.push(match check {
                Check::TimeTravel => Box::new(time_travel::TimeTravel::default()),
                Check::PodIdentity => Box::new(pod_identity::PodIdentity::default()),
                Check::StatefulSetOrdinals => Box::new(ordinals::StatefulSetOrdinals::default()),
                Check::ReplicaCount => Box::new(replica_count::ReplicaCount::default()),
                Check::Convergence => Box::new(convergence::Convergence),
                Check::StuckDeleting => Box::new(stuck_deleting::StuckDeleting),
                Check::DeletedLiveDependent => Box::new(garbage::DeletedLiveDependent::new(collectors)),
                Check::OrphanedDependent => Box::new(garbage::OrphanedDependent { collectors: !collectors.is_empty() }),
                Check::DependentOfDeletedOwner => Box::new(garbage::DependentOfDeletedOwner::default()),
                Check::LostWork => Box::new(lost_work::LostWork::default()),
                Check::IdleWithWorkLeft => Box::new(idle::IdleWithWorkLeft),
                Check::HistoryPolicy => Box::new(history::HistoryPolicies::new(&checks.policies)),
                Check::DroppedMember => Box::new(aggregate::DroppedMembers::new(&checks.aggregates)),
            });
        }
        Checks { observers, judges_idle: enabled.contains(&Check::IdleWithWorkLeft) }
    }

    /// Whether the idle-with-work-left check is on: the simulation then
    /// asks its quiescent controllers, at the end of the run, what they
    /// would still write.
    pub fn judges_idle(&self) -> bool {
        self.judges_idle
    }

    /// Tells every check of a commit, and records what they find.
    pub fn committed(&mut self, engine: &mut Engine, nodes: &[NodeRuntime], commit: &Commit<'_>) {
        self.tell(engine, nodes, |o, truth| o.committed(truth, commit));
    }

    /// Tells every check of a container start, and records what they find.
    pub fn container_started(&mut self, engine: &mut Engine, nodes: &[NodeRuntime], start: &ContainerStart<'_>) {
        self.tell(engine, nodes, |o, truth| o.container_started(truth, start));
    }

    /// Tells every check of a container stop.
    pub fn container_stopped(&mut self, node: NodeId, pod: &PodRef) {
        for o in &mut self.observers {
            o.container_stopped(node, pod);
        }
    }

    /// Tells every check of an observation, and records what they find.
    pub fn observed(&mut self, engine: &mut Engine, nodes: &[NodeRuntime], observation: &Observation<'_>) {
        self.tell(engine, nodes, |o, truth| o.observed(truth, observation));
    }

    /// Tells every check the run has ended, with the controllers that were
    /// idle with work left, and records what they find.
    pub fn ended(&mut self, engine: &mut Engine, nodes: &[NodeRuntime], idle: &[IdleController]) {
        self.tell_with(engine, nodes, idle, |o, truth| o.ended(truth));
    }

    fn tell(
        &mut self,
        engine: &mut Engine,
        nodes: &[NodeRuntime],
        ask: impl FnMut(&mut dyn Observer, &Truth<'_>) -> Vec<Finding>,
    ) {
        self.tell_with(engine, nodes, &[], ask);
    }

    fn tell_with(
        &mut self,
        engine: &mut Engine,
        nodes: &[NodeRuntime],
        idle: &[IdleController],
        mut ask: impl FnMut(&mut dyn Observer, &Truth<'_>) -> Vec<Finding>,
    ) {
        for observer in &mut self.observers {
            let truth = Truth { store: &engine.store, nodes, trace: &engine.trace, idle };
            let findings = ask(observer.as_mut(), &truth);
            for Finding { check, message, causes, component } in findings {
                let lane = component.map_or(engine.lanes.checks, |c| engine.lanes.component(c));
                engine.record(lane, Event::Violation { check, message }, causes);
            }
        }
    }
}

/// `spec.replicas`, 1 when unset, as the API server defaults it.
fn spec_replicas(object: &Object) -> u64 {
    object.spec.get("replicas").and_then(serde_json::Value::as_u64).unwrap_or(1)
}

/// Whether a pod counts toward its controller's replicas: not being deleted.
fn live(pod: &Object) -> bool {
    !pod.is_terminating()
}
