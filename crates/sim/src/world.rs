//! The simulator: its state, the event queue, and the main loop.
//!
//! [`Sim`] owns everything: the store, the API servers, the components and
//! their controllers, the nodes, the network, the trace. Time is virtual;
//! [`Sim::step`] takes the earliest scheduled event and handles it, and
//! nothing else ever runs. The handlers live beside their concern:
//! `apiserver.rs` (requests, watch caches, watches), `component.rs`
//! (controllers, reflectors, actions), `checks.rs` (nodes and safety
//! checks).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use recon_abi::{Object, ObjectKey};
use recon_scenario::{Check, Scenario, Step, StepAction};
use recon_store::Store;

use crate::api::Request;
use crate::apiserver::{Client, ServerState};
use crate::checks::NodeState;
use crate::component::ComponentState;
use crate::error::SimError;
use crate::lanes::Lanes;
use crate::network::{Endpoint, Network};
use crate::rng::Rng;
use recon_trace::{EntryId, Event, Trace};

/// Creates a fresh controller instance for a component (usually by its
/// `controller` name; a host may also swap in a plugin for one component),
/// or `None` if it cannot. Called at every (re)start of a component.
pub type Instantiate = Box<dyn Fn(&recon_scenario::Component) -> Option<Box<dyn recon_abi::Instance>>>;

/// Something scheduled to happen at a virtual time.
pub(crate) enum Scheduled {
    Script(usize),
    PartitionEdge { server: usize, started: bool },
    CacheFeed { server: usize, revision: u64 },
    CacheResync { server: usize },
    Request { server: usize, client: Client, request: Request, cause: Option<EntryId> },
    StoreOp(crate::apiserver::StoreOp),
    StoreTimeout(crate::apiserver::StoreOp, String),
    WaitDeadline { server: usize, wait: u64 },
    Reply { server: usize, client: Client, reply: crate::apiserver::Reply },
    Wake { component: usize, epoch: u64 },
    Timer { component: usize, epoch: u64, key: String },
    Retry { component: usize, epoch: u64, watch: usize },
    Restart { component: usize, epoch: u64, cause: EntryId },
    ElectionTick { component: usize, epoch: u64 },
    FirstStart { component: usize },
}

struct Queued {
    time: u64,
    seq: u64,
    what: Scheduled,
}

impl PartialEq for Queued {
    fn eq(&self, other: &Self) -> bool {
        (self.time, self.seq) == (other.time, other.seq)
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Queued {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.time, self.seq).cmp(&(other.time, other.seq))
    }
}

/// A running simulation.
pub struct Sim {
    pub(crate) scenario: Scenario,
    pub(crate) now: u64,
    seq: u64,
    queue: BinaryHeap<Reverse<Queued>>,
    pub(crate) store: Store,
    /// Trace entry of the store write at each revision.
    pub(crate) store_entries: BTreeMap<u64, EntryId>,
    pub(crate) servers: Vec<ServerState>,
    pub(crate) components: Vec<ComponentState>,
    pub(crate) nodes: Vec<NodeState>,
    pub(crate) network: Network,
    pub(crate) trace: Trace,
    /// The trace lane of each place.
    pub(crate) lanes: Lanes,
    pub(crate) instantiate: Instantiate,
    pub(crate) checks: Vec<Check>,
    /// Responses to requests made with [`Sim::request`], by probe id.
    pub(crate) probes: BTreeMap<u64, Vec<crate::apiserver::Reply>>,
    next_probe: u64,
    /// uids and generated names for objects created before the run starts.
    pub(crate) bootstrap_rng: Rng,
    /// Whether the end-of-run checks have run.
    ended: bool,
    /// Whether the run stopped at a limit before its end.
    halted: bool,
    /// Inputs and actions listed by reconcile entries: they count toward
    /// the trace limit too, so a controller returning thousands of actions
    /// a call reaches it as surely as one making thousands of calls.
    pub(crate) listed_items: u64,
    /// Live pods by controller, for the replica-count check.
    pub(crate) live_pods: crate::checks::LivePods,
}

impl Sim {
    /// Builds a simulation of `scenario`: writes the nodes and initial objects
    /// into the store, fills every watch cache, starts every component and
    /// schedules the script. Fails if a component names an unknown controller.
    pub fn new(scenario: &Scenario, instantiate: Instantiate) -> Result<Sim, SimError> {
        for (i, c) in scenario.components.iter().enumerate() {
            if instantiate(c).is_none() {
                return Err(SimError::UnknownController {
                    path: format!("components[{i}].controller"),
                    component: c.name.clone(),
                    controller: c.controller.clone(),
                });
            }
        }
        let seed = scenario.seed;
        let mut trace = Trace { scenario: scenario.name.clone(), seed, lanes: Vec::new(), entries: Vec::new() };
        let lanes = Lanes::write(scenario, &mut trace);
        let mut sim = Sim {
            scenario: scenario.clone(),
            now: 0,
            seq: 0,
            queue: BinaryHeap::new(),
            store: Store::new(),
            store_entries: BTreeMap::new(),
            servers: scenario
                .api_servers
                .iter()
                .map(|cfg| ServerState::new(cfg.clone(), Rng::derive(seed, &cfg.name)))
                .collect(),
            components: Vec::new(),
            nodes: scenario.nodes.iter().map(|n| NodeState::new(&n.name)).collect(),
            network: Network::new(scenario.network.latency, Rng::derive(seed, "network")),
            trace,
            lanes,
            instantiate,
            checks: scenario.checks.enabled.clone(),
            probes: BTreeMap::new(),
            next_probe: 0,
            bootstrap_rng: Rng::derive(seed, "bootstrap"),
            ended: false,
            halted: false,
            listed_items: 0,
            live_pods: Default::default(),
        };
        sim.bootstrap()?;
        for (i, c) in scenario.components.iter().enumerate() {
            sim.components.push(ComponentState::new(c, &scenario.api_servers, Rng::derive(seed, &c.name)));
            if c.start_at.0 == 0 {
                sim.start_component(i, None, None);
            } else {
                sim.schedule(c.start_at.0, Scheduled::FirstStart { component: i });
            }
        }
        for (i, step) in scenario.script.iter().enumerate() {
            sim.schedule(step.at.0, Scheduled::Script(i));
        }
        for (s, cfg) in scenario.api_servers.iter().enumerate() {
            for w in &cfg.partitions {
                sim.schedule(w.from.0, Scheduled::PartitionEdge { server: s, started: true });
                if let Some(until) = w.until {
                    sim.schedule(until.0, Scheduled::PartitionEdge { server: s, started: false });
                }
            }
        }
        Ok(sim)
    }

    /// Writes Node objects and the scenario's objects at revision 1.., then
    /// gives every API server a cache that starts in sync.
    fn bootstrap(&mut self) -> Result<(), SimError> {
        let mut objects: Vec<Object> = self.scenario.nodes.iter().map(node_object).collect();
        objects.extend(self.scenario.objects.iter().cloned());
        for (i, object) in objects.into_iter().enumerate() {
            let key = object.key();
            let object = crate::apiserver::prepare_create(object, &mut self.bootstrap_rng);
            let event = self.store.create(object, 0).map_err(|e| SimError::Bootstrap {
                object: key.to_string(),
                reason: e.to_string(),
                index: i,
            })?;
            self.live_pods.apply(&event);
            let entry = self.trace.push(
                0,
                self.lanes.store,
                Event::StoreWrite {
                    verb: recon_abi::Verb::Create,
                    key,
                    uid: event.value.metadata.uid.clone(),
                    revision: event.revision,
                    removed: false,
                    terminating: false,
                    by: "scenario".into(),
                    via: String::new(),
                },
                vec![],
            );
            self.store_entries.insert(event.revision, entry);
        }
        let revision = self.store.revision();
        let state = self.store.range("/", None).expect("reading the current state cannot fail");
        let entry = self.store_entries.get(&revision).copied();
        for server in &mut self.servers {
            server.cache.replace(revision, state.iter().map(|kv| (kv.key.clone(), kv.value.clone())), entry);
        }
        Ok(())
    }

    pub(crate) fn schedule(&mut self, time: u64, what: Scheduled) {
        self.seq += 1;
        self.queue.push(Reverse(Queued { time, seq: self.seq, what }));
    }

    /// Current virtual time in milliseconds.
    pub fn now_ms(&self) -> u64 {
        self.now
    }

    /// The trace so far.
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// Takes the trace, ending the simulation.
    pub fn into_trace(self) -> Trace {
        self.trace
    }

    /// The store (read-only), e.g. to show the truth beside a cache.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Handles the next scheduled event if it is due by the end of the run.
    /// Returns false when nothing is left to do.
    pub fn step(&mut self) -> bool {
        let end = self.scenario.duration.0;
        if self.halted {
            return false;
        }
        let limit = self.scenario.limits.max_trace_entries;
        if self.trace.entries.len() as u64 + self.listed_items >= limit {
            self.halted = true;
            let reason = format!(
                "the run stopped at {} because it reached its limit of {limit} trace entries \
                 (limits.maxTraceEntries in the scenario); something kept it busy, see the last entries",
                recon_trace::text::fmt_time(self.now)
            );
            self.trace.push(self.now, self.lanes.script, Event::Halted { reason }, vec![]);
            return false;
        }
        match self.queue.peek() {
            Some(Reverse(q)) if q.time <= end => {}
            _ => {
                // Nothing left before the end: judge what only the end can.
                if !std::mem::replace(&mut self.ended, true) {
                    self.now = self.now.max(end);
                    self.check_convergence();
                }
                return false;
            }
        }
        let Reverse(q) = self.queue.pop().expect("peeked");
        self.now = q.time;
        self.handle(q.what);
        true
    }

    /// Runs to the end of the scenario's duration.
    pub fn run(&mut self) {
        while self.step() {}
        self.now = self.now.max(self.scenario.duration.0);
    }

    /// Runs until virtual time `t` (inclusive) or the end of the run.
    pub fn run_until(&mut self, t: u64) {
        while self.queue.peek().is_some_and(|Reverse(q)| q.time <= t) && self.step() {}
        self.now = self.now.max(t.min(self.scenario.duration.0));
    }

    /// Sends a raw request to an API server as an anonymous client (for
    /// tests and consoles). Responses accumulate under the returned id; see
    /// [`Sim::responses`]. Watches keep streaming into it.
    pub fn request(&mut self, api_server: &str, request: Request) -> Result<u64, SimError> {
        let server = self.server_index(api_server).ok_or_else(|| SimError::UnknownApiServer(api_server.to_string()))?;
        self.next_probe += 1;
        let id = self.next_probe;
        self.probes.insert(id, Vec::new());
        let at = self.network.arrival(Endpoint::Kubectl, Endpoint::Server(server), self.now, 0);
        self.schedule(at, Scheduled::Request { server, client: Client::Probe(id), request, cause: None });
        Ok(id)
    }

    /// What has come back for a request made with [`Sim::request`].
    pub fn responses(&self, probe: u64) -> &[crate::apiserver::Reply] {
        self.probes.get(&probe).map(Vec::as_slice).unwrap_or(&[])
    }

    pub(crate) fn server_index(&self, name: &str) -> Option<usize> {
        self.servers.iter().position(|s| s.config.name == name)
    }

    pub(crate) fn component_index(&self, name: &str) -> Option<usize> {
        self.components.iter().position(|c| c.spec.name == name)
    }

    fn handle(&mut self, what: Scheduled) {
        match what {
            Scheduled::Script(i) => self.run_step(i),
            Scheduled::PartitionEdge { server, started } => self.partition_edge(server, started),
            Scheduled::CacheFeed { server, revision } => self.cache_feed(server, revision),
            Scheduled::CacheResync { server } => self.cache_resync(server),
            Scheduled::Request { server, client, request, cause } => self.on_request(server, client, request, cause),
            Scheduled::StoreOp(op) => self.on_store_op(op),
            Scheduled::StoreTimeout(op, request) => self.on_store_timeout(op, request),
            Scheduled::WaitDeadline { server, wait } => self.on_wait_deadline(server, wait),
            Scheduled::Reply { server, client, reply } => self.on_reply(server, client, reply),
            Scheduled::Wake { component, epoch } => self.wake(component, epoch),
            Scheduled::Timer { component, epoch, key } => self.on_timer(component, epoch, key),
            Scheduled::Retry { component, epoch, watch } => self.on_retry(component, epoch, watch),
            Scheduled::Restart { component, epoch, cause } => self.on_restart(component, epoch, cause),
            Scheduled::ElectionTick { component, epoch } => self.election_tick(component, epoch),
            Scheduled::FirstStart { component } => {
                if !self.process_up(component) {
                    self.start_component(component, None, None);
                }
            }
        }
    }

    fn run_step(&mut self, i: usize) {
        let Step { action, .. } = self.scenario.script[i].clone();
        let description = recon_trace::text::describe_step(&action);
        let entry = self.trace.push(self.now, self.lanes.script, Event::Script { description }, vec![]);
        let kubectl = |sim: &mut Sim, via: &Option<String>, request: Request| {
            let server = via.as_deref().and_then(|v| sim.server_index(v)).unwrap_or(0);
            let at = sim.network.arrival(Endpoint::Kubectl, Endpoint::Server(server), sim.now, 0);
            sim.schedule(at, Scheduled::Request { server, client: Client::Kubectl, request, cause: Some(entry) });
        };
        use recon_abi::Action;
        match action {
            StepAction::Create { object, via } => kubectl(self, &via, Request::Write(Action::Create { object })),
            StepAction::Apply { object, via } => {
                kubectl(self, &via, Request::Write(crate::apiserver::apply_action(object)))
            }
            StepAction::Delete { target, via } => {
                let key = ObjectKey::new(target.kind, target.namespace, target.name);
                let action = Action::Delete { key, uid: None, resource_version: None, grace_period_seconds: None };
                kubectl(self, &via, Request::Write(action))
            }
            StepAction::Scale { target, replicas, via } => {
                let key = ObjectKey::new(target.kind, target.namespace, target.name);
                kubectl(self, &via, Request::Write(crate::apiserver::patch_action(key, "replicas", replicas.into())))
            }
            StepAction::Cordon { node } | StepAction::Uncordon { node } => {
                let cordon = matches!(self.scenario.script[i].action, StepAction::Cordon { .. });
                let key = ObjectKey::new("Node", "", node);
                kubectl(
                    self,
                    &None,
                    Request::Write(crate::apiserver::patch_action(key, "unschedulable", cordon.into())),
                )
            }
            StepAction::Crash { component } => {
                if let Some(c) = self.component_index(&component) {
                    self.crash_component(c, "crashed (script)", entry);
                }
            }
            StepAction::Restart { component, api_server } => {
                if let Some(c) = self.component_index(&component) {
                    if self.components[c].instance.is_some() {
                        self.crash_component(c, "restarting (script)", entry);
                    }
                    let server = api_server.as_deref().and_then(|s| self.server_index(s));
                    self.start_component(c, server, entry);
                }
            }
            StepAction::Disconnect { component } => {
                if let Some(c) = self.component_index(&component) {
                    self.disconnect_component(c);
                }
            }
            StepAction::Compact { keep } => {
                let revision = self.store.revision().saturating_sub(keep);
                self.store.compact(revision);
                let compacted = self.store.compacted();
                self.trace.push(self.now, self.lanes.store, Event::Compaction { revision: compacted }, vec![entry]);
            }
        }
    }
}

/// The Node object for a scenario node.
fn node_object(n: &recon_scenario::Node) -> Object {
    Object {
        api_version: "v1".into(),
        kind: "Node".into(),
        metadata: recon_abi::ObjectMeta { name: n.name.clone(), labels: n.labels.clone(), ..Default::default() },
        spec: serde_json::json!({}),
        status: serde_json::json!({
            "capacity": { "pods": n.pods.to_string() },
            "conditions": [{ "type": "Ready", "status": "True" }],
        }),
    }
}
