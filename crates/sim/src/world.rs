//! The simulation: the engine, the actors, the checks, and the loop that
//! hands each scheduled event to the actor it concerns.
//!
//! [`Sim::step`] takes the earliest event from the engine's queue and
//! dispatches it: to an API server ([`crate::apiserver`]), to a component
//! ([`crate::component`]), or to the script (user actions and faults,
//! here). Nothing else ever runs; time is virtual. Between actors this
//! module is the only glue: the RBAC verdict a write carries to its API
//! server, and what follows a commit (the checks, every cache, the reply).

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use recon_abi::{Object, ObjectKey};
use recon_scenario::{Scenario, Step, StepAction};

use crate::api::Request;
use crate::apiserver::{ApiServer, Committed};
use crate::checks::{Checks, Commit, IdleController};
use crate::component::{Component, Env, Instantiate};
use crate::engine::Engine;
use crate::error::SimError;
use crate::ids::{ComponentId, NodeId, ServerId};
use crate::lanes::Lanes;
use crate::message::{Client, Reply, Scheduled, client_component};
use crate::network::{Endpoint, Network};
use crate::node::NodeRuntime;
use crate::ordering::{Chooser, Moment, Reconcile, StaleChooser, World};
use crate::rng::Rng;
use recon_trace::{Event, Trace};

/// A running simulation.
pub struct Sim {
    pub(crate) scenario: Scenario,
    /// Time, the queue, the store, the network and the trace.
    pub(crate) engine: Engine,
    pub(crate) servers: Vec<ApiServer>,
    pub(crate) components: Vec<Component>,
    pub(crate) nodes: Vec<NodeRuntime>,
    pub(crate) instantiate: Instantiate,
    /// The scenario's checks, told of what happens.
    pub(crate) checks: Checks,
    /// Responses to requests made with [`Sim::request`], by probe id.
    pub(crate) probes: BTreeMap<u64, Vec<Reply>>,
    next_probe: u64,
    /// uids and generated names for objects created before the run starts.
    pub(crate) bootstrap_rng: Rng,
    /// Whether the end-of-run checks have run.
    ended: bool,
    /// Whether the run stopped at a limit before its end.
    halted: bool,
    /// etcd's revision at the last periodic compaction tick: the next tick
    /// compacts up to it (`None` before the first tick).
    compaction_mark: Option<u64>,
    /// Who reconciles first at a moment several may (`None`: the queue's order).
    chooser: Option<Chooser>,
    /// Which reconciles get a stale view (`None`: none do).
    stale_chooser: Option<StaleChooser>,
}

impl Sim {
    /// Builds a simulation of `scenario`: writes the nodes and initial objects
    /// into the store, fills every watch cache, starts every component and
    /// schedules the script, with the scenario's enabled fixes made
    /// (`Scenario::with_fixes_applied`). Fails if a component names an
    /// unknown controller.
    pub fn new(scenario: &Scenario, instantiate: Instantiate) -> Result<Sim, SimError> {
        // A scenario runs with the fixes it has turned on made (a no-op for
        // one already prepared so, and for one without fixes).
        let scenario = &scenario.with_fixes_applied();
        // Each component's first instance, made now to check its
        // controller exists, serves its first start.
        let mut unstarted = Vec::with_capacity(scenario.components.len());
        for (i, c) in scenario.components.iter().enumerate() {
            let Some(instance) = instantiate(c) else {
                return Err(SimError::UnknownController {
                    path: format!("components[{i}].controller"),
                    component: c.name.clone(),
                    controller: c.controller.clone(),
                });
            };
            unstarted.push(instance);
        }
        let seed = scenario.seed;
        let kinds = scenario.kinds();
        let mut trace = Trace { scenario: scenario.name.clone(), seed, lanes: Vec::new(), entries: Default::default() };
        let lanes = Lanes::write(scenario, &mut trace);
        let mut engine =
            Engine::new(Network::new(scenario.network.latency, Rng::derive(seed, "network")), trace, lanes);
        let mut sim = Sim {
            scenario: scenario.clone(),
            servers: scenario
                .api_servers
                .iter()
                .enumerate()
                .map(|(i, cfg)| {
                    ApiServer::new(
                        ServerId(i),
                        engine.name(&cfg.name),
                        cfg.clone(),
                        kinds.clone(),
                        scenario.limits.max_object_bytes,
                        Rng::derive(seed, &cfg.name),
                    )
                })
                .collect(),
            engine,
            components: Vec::new(),
            nodes: scenario.nodes.iter().map(|n| NodeRuntime::new(&n.name)).collect(),
            instantiate,
            checks: Checks::new(&scenario.checks, &collectors(scenario)),
            probes: BTreeMap::new(),
            next_probe: 0,
            bootstrap_rng: Rng::derive(seed, "bootstrap"),
            ended: false,
            halted: false,
            compaction_mark: None,
            chooser: (!scenario.ordering.is_empty()).then(|| crate::ordering::following(&scenario.ordering)),
            stale_chooser: (!scenario.stale_views.is_empty())
                .then(|| crate::ordering::following_stale(&scenario.stale_views)),
        };
        sim.bootstrap()?;
        let node_ids: BTreeMap<&str, NodeId> =
            scenario.nodes.iter().enumerate().rev().map(|(n, node)| (node.name.as_str(), NodeId(n))).collect();
        for ((i, c), first) in scenario.components.iter().enumerate().zip(unstarted) {
            let node = c.node.as_deref().and_then(|name| node_ids.get(name).copied());
            let rng = Rng::derive(seed, &c.name);
            let name = sim.engine.name(&c.name);
            sim.components.push(Component::new(ComponentId(i), name, c, &scenario.api_servers, node, rng, first));
            if c.start_at.0 == 0 {
                sim.with_component(ComponentId(i), |c, env| c.start(env, None, None));
            } else {
                sim.engine.schedule(c.start_at.0, Scheduled::FirstStart { component: ComponentId(i) });
            }
        }
        for (i, step) in scenario.script.iter().enumerate() {
            sim.engine.schedule(step.at.0, Scheduled::Script(i));
        }
        let compaction = scenario.etcd.compaction_interval.0;
        if compaction > 0 {
            sim.engine.schedule(compaction, Scheduled::Compaction);
        }
        for (s, cfg) in scenario.api_servers.iter().enumerate() {
            for w in &cfg.partitions {
                sim.engine.schedule(w.from.0, Scheduled::PartitionEdge { server: ServerId(s), started: true });
                if let Some(until) = w.until {
                    sim.engine.schedule(until.0, Scheduled::PartitionEdge { server: ServerId(s), started: false });
                }
            }
        }
        Ok(sim)
    }

    /// Writes Node objects and the scenario's objects at revision 1.., then
    /// gives every API server a cache that starts in sync.
    fn bootstrap(&mut self) -> Result<(), SimError> {
        let kinds = self.scenario.kinds();
        let mut objects: Vec<Object> = self.scenario.nodes.iter().map(node_object).collect();
        objects.extend(self.scenario.objects.iter().cloned());
        for (i, object) in objects.into_iter().enumerate() {
            let key = object.key();
            let object = crate::admission::prepare_create(object, &mut self.bootstrap_rng, &kinds);
            let event = self.engine.store.create(object, 0).map_err(|e| SimError::Bootstrap {
                object: key.to_string(),
                reason: e.to_string(),
                index: i,
            })?;
            let write = Event::StoreWrite {
                verb: recon_abi::Verb::Create,
                key: self.engine.names.key(&key),
                uid: self.engine.name(&event.value.metadata.uid),
                revision: event.revision,
                removed: false,
                terminating: false,
                by: self.engine.name("scenario"),
                via: self.engine.name(""),
                patch: None,
            };
            let entry = self.engine.trace.push(0, self.engine.lanes.store, write, vec![]);
            // The stored object's names (its key may differ from `key` by
            // a generated name).
            let (stored_key, uid) = (self.engine.key(&event.value), self.engine.name(&event.value.metadata.uid));
            self.engine.store_writes.insert(event.revision, entry, stored_key, uid);
            let commit = Commit { event: &event, entry, writer: None };
            self.checks.committed(&mut self.engine, &self.nodes, &commit);
        }
        let revision = self.engine.store.revision();
        let state = self.engine.store.range("/", None).expect("reading the current state cannot fail");
        let entry = self.engine.store_writes.entry(revision);
        for server in &mut self.servers {
            server.cache.replace(revision, state.iter().map(|kv| (kv.key.clone(), kv.value.clone())), entry);
        }
        Ok(())
    }

    /// Current virtual time in milliseconds.
    pub fn now_ms(&self) -> u64 {
        self.engine.now
    }

    /// The trace so far.
    pub fn trace(&self) -> &Trace {
        &self.engine.trace
    }

    /// Takes the trace, ending the simulation.
    pub fn into_trace(self) -> Trace {
        self.engine.trace
    }

    /// The store (read-only), e.g. to show the truth beside a cache.
    pub fn store(&self) -> &recon_store::Store {
        &self.engine.store
    }

    /// The kinds the run's API servers serve: the built-in ones and those
    /// the scenario's CustomResourceDefinitions declare.
    pub fn kinds(&self) -> recon_scenario::Kinds {
        self.scenario.kinds()
    }

    /// Handles the next scheduled event if it is due by the end of the run.
    /// Returns false when nothing is left to do.
    pub fn step(&mut self) -> bool {
        let end = self.scenario.duration.0;
        if self.halted {
            return false;
        }
        let limit = self.scenario.limits.max_trace_entries;
        if self.engine.trace.entries.len() as u64 + self.engine.listed_items >= limit {
            self.halted = true;
            let reason = format!(
                "the run stopped at {} because it reached its limit of {limit} trace entries \
                 (limits.maxTraceEntries in the scenario); something kept it busy, see the last entries",
                recon_trace::text::fmt_time(self.engine.now)
            );
            self.engine.record(self.engine.lanes.script, Event::Halted { reason }, vec![]);
            return false;
        }
        match self.engine.next_due() {
            Some(due) if due <= end => {}
            _ => {
                // Nothing left before the end: judge what only the end can.
                if !std::mem::replace(&mut self.ended, true) {
                    self.engine.now = self.engine.now.max(end);
                    let idle = self.idle_controllers();
                    self.checks.ended(&mut self.engine, &self.nodes, &idle);
                }
                return false;
            }
        }
        let what = self.next_event();
        self.handle(what);
        true
    }

    /// The running controllers that are quiescent yet would still write if
    /// handed the store as it is (see [`Component::idle_probe`]), asked
    /// only when the idle-with-work-left check is on.
    fn idle_controllers(&self) -> Vec<IdleController> {
        if !self.checks.judges_idle() {
            return Vec::new();
        }
        let now = self.engine.now;
        let probe = |(i, c): (usize, &Component)| {
            let kinds = &self.servers[c.server.index()].kinds;
            let writes = c.idle_probe(&self.engine.store, kinds, &self.instantiate, now)?;
            (!writes.is_empty()).then(|| IdleController {
                component: ComponentId(i),
                name: c.spec.name.clone(),
                writes,
            })
        };
        self.components.iter().enumerate().filter_map(probe).collect()
    }

    /// Sets who reconciles first when several components have a reconcile
    /// due at the same moment (replacing the scenario's `ordering`).
    pub fn set_chooser(&mut self, chooser: Chooser) {
        self.chooser = Some(chooser);
    }

    /// Sets which reconciles are given a stale view (replacing the
    /// scenario's `staleViews`): asked before every call of a component
    /// with two or more inputs.
    pub fn set_stale_chooser(&mut self, chooser: StaleChooser) {
        self.stale_chooser = Some(chooser);
    }

    /// How many of its newest inputs `component`'s call due now goes
    /// without: what the stale-view chooser says, if there is one and the
    /// call has two or more inputs.
    fn held_back(&mut self, component: ComponentId, epoch: u64) -> usize {
        let Some(chooser) = self.stale_chooser.as_mut() else { return 0 };
        let c = &self.components[component.index()];
        if !c.wake_due(epoch) {
            return 0;
        }
        let inputs = c.inbox();
        if inputs.len() < 2 {
            return 0;
        }
        let world = World { engine: &self.engine, servers: &self.servers, components: &self.components };
        let call = Reconcile {
            time_ms: self.engine.now,
            component: &c.spec.name,
            inputs: &inputs,
            store: &self.engine.store,
            world,
        };
        chooser(&call)
    }

    /// Takes the next event: the queue's next, unless it is a reconcile and
    /// other components have one due at the same moment, when the chooser
    /// (if there is one) says whose runs first.
    fn next_event(&mut self) -> Scheduled {
        let live_wake = |sim: &Sim, what: &Scheduled| match what {
            Scheduled::Wake { component, epoch } => {
                sim.components[component.index()].wake_due(*epoch).then_some(*component)
            }
            _ => None,
        };
        let front_wakes = self.engine.peek().is_some_and(|what| live_wake(self, what).is_some());
        if self.chooser.is_none() || !front_wakes {
            return self.engine.pop().expect("peeked");
        }
        let now = self.engine.next_due().expect("peeked");
        let mut due = self.engine.take_due_at(now);
        // The live reconciles due now, one per component, in queue order.
        let mut wakes: Vec<(usize, ComponentId)> = Vec::new();
        for (i, what) in due.iter().enumerate() {
            if let Some(c) = live_wake(self, what)
                && wakes.iter().all(|(_, seen)| *seen != c)
            {
                wakes.push((i, c));
            }
        }
        let mut pick = 0;
        if wakes.len() >= 2 {
            let pending: Vec<String> = wakes.iter().map(|(_, c)| self.engine.component_name(*c).to_string()).collect();
            let world = World { engine: &self.engine, servers: &self.servers, components: &self.components };
            let moment = Moment { time_ms: now, pending: &pending, store: &self.engine.store, world };
            let chooser = self.chooser.as_mut().expect("checked above");
            pick = wakes.get(chooser(&moment)).map_or(0, |(i, _)| *i);
        }
        let chosen = due.remove(pick);
        self.engine.put_back(now, due);
        self.engine.now = now;
        chosen
    }

    /// Runs to the end of the scenario's duration.
    pub fn run(&mut self) {
        while self.step() {}
        self.engine.now = self.engine.now.max(self.scenario.duration.0);
    }

    /// Runs as [`Sim::run`] does, handing the simulation to `between`
    /// after every step: where a caller shows progress or keeps a budget
    /// of its own (the wall clock, the tab's memory), outside the
    /// simulator, which reads neither. `between` returning
    /// `ControlFlow::Break` stops the run after that step, unfinished, and
    /// `run_with` returns what it broke with; a run that reaches its end
    /// returns `ControlFlow::Continue(())`, its time at the end, as after
    /// [`Sim::run`].
    pub fn run_with<B>(&mut self, mut between: impl FnMut(&Sim) -> ControlFlow<B>) -> ControlFlow<B> {
        while self.step() {
            between(self)?;
        }
        self.engine.now = self.engine.now.max(self.scenario.duration.0);
        ControlFlow::Continue(())
    }

    /// Runs until virtual time `t` (inclusive) or the end of the run.
    pub fn run_until(&mut self, t: u64) {
        while self.engine.next_due().is_some_and(|due| due <= t) && self.step() {}
        self.engine.now = self.engine.now.max(t.min(self.scenario.duration.0));
    }

    /// Sends a raw request to an API server as an anonymous client (for
    /// tests and consoles). Responses accumulate under the returned id; see
    /// [`Sim::responses`]. Watches keep streaming into it.
    pub fn request(&mut self, api_server: &str, request: Request) -> Result<u64, SimError> {
        let server = self.server_index(api_server).ok_or_else(|| SimError::UnknownApiServer(api_server.to_string()))?;
        self.next_probe += 1;
        let id = self.next_probe;
        self.probes.insert(id, Vec::new());
        let at = self.engine.network.arrival(Endpoint::Kubectl, Endpoint::Server(server), self.engine.now, 0);
        self.engine.schedule(
            at,
            Scheduled::Request { server, client: Client::Probe(id), request: Box::new(request), cause: None },
        );
        Ok(id)
    }

    /// What has come back for a request made with [`Sim::request`].
    pub fn responses(&self, probe: u64) -> &[Reply] {
        self.probes.get(&probe).map(Vec::as_slice).unwrap_or(&[])
    }

    pub(crate) fn server_index(&self, name: &str) -> Option<ServerId> {
        self.servers.iter().position(|s| s.config.name == name).map(ServerId)
    }

    pub(crate) fn component_index(&self, name: &str) -> Option<ComponentId> {
        self.components.iter().position(|c| c.spec.name == name).map(ComponentId)
    }

    fn handle(&mut self, what: Scheduled) {
        match what {
            Scheduled::Script(i) => self.run_step(i),
            Scheduled::PartitionEdge { server, started } => {
                self.servers[server.index()].partition_edge(&mut self.engine, started)
            }
            Scheduled::CacheFeed { server, revision } => {
                self.servers[server.index()].cache_feed(&mut self.engine, revision)
            }
            Scheduled::CacheResync { server } => self.servers[server.index()].cache_resync(&mut self.engine),
            Scheduled::Request { server, client, request, cause } => {
                // The API server's RBAC: what the writer's manifest allows.
                let forbidden = match &client {
                    Client::Writer { component, epoch, .. } => {
                        self.components[component.index()].forbidden(*epoch, &request)
                    }
                    _ => None,
                };
                self.servers[server.index()].on_request(&mut self.engine, client, *request, cause, forbidden);
            }
            Scheduled::StoreOp(op) => {
                let server = op.server;
                if let Some(committed) = self.servers[server.index()].on_store_op(&mut self.engine, *op) {
                    self.committed(server, committed);
                }
            }
            Scheduled::StoreTimeout(op, request) => {
                self.servers[op.server.index()].on_store_timeout(&mut self.engine, *op, request)
            }
            Scheduled::WaitDeadline { server, wait } => {
                self.servers[server.index()].on_wait_deadline(&mut self.engine, wait)
            }
            Scheduled::Bookmark { server, watcher } => {
                self.servers[server.index()].on_bookmark_due(&mut self.engine, watcher)
            }
            Scheduled::Compaction => self.periodic_compaction(),
            Scheduled::Reply { server, client, reply } => self.on_reply(server, client, *reply),
            Scheduled::Wake { component, epoch } => {
                let held_back = self.held_back(component, epoch);
                self.with_component(component, |c, env| c.wake(env, epoch, held_back))
            }
            Scheduled::Timer { component, epoch, key } => {
                self.with_component(component, |c, env| c.on_timer(env, epoch, key))
            }
            Scheduled::Retry { component, epoch, watch } => {
                self.with_component(component, |c, env| c.on_retry(env, epoch, watch))
            }
            Scheduled::Restart { component, epoch, cause } => {
                self.with_component(component, |c, env| c.on_restart(env, epoch, cause))
            }
            Scheduled::ElectionTick { component, epoch } => {
                self.with_component(component, |c, env| c.election_tick(env, epoch))
            }
            Scheduled::FirstStart { component } => self.with_component(component, |c, env| {
                if !c.is_up() {
                    c.start(env, None, None);
                }
            }),
        }
    }

    fn run_step(&mut self, i: usize) {
        let Step { action, .. } = self.scenario.script[i].clone();
        let description = recon_trace::text::describe_step(&action);
        let entry = self.engine.record(self.engine.lanes.script, Event::Script { description }, vec![]);
        let kubectl = |sim: &mut Sim, via: &Option<String>, request: Request| {
            let server = via.as_deref().and_then(|v| sim.server_index(v)).unwrap_or(ServerId(0));
            let at = sim.engine.network.arrival(Endpoint::Kubectl, Endpoint::Server(server), sim.engine.now, 0);
            sim.engine.schedule(
                at,
                Scheduled::Request { server, client: Client::Kubectl, request: Box::new(request), cause: Some(entry) },
            );
        };
        use recon_abi::Action;
        match action {
            StepAction::Create { object, via } => {
                kubectl(self, &via, Request::Write(Action::Create { object, dry_run: false }))
            }
            StepAction::Apply { object, via } => {
                kubectl(self, &via, Request::Write(crate::admission::apply_action(object)))
            }
            StepAction::Delete { target, via, cascade } => {
                let key = ObjectKey::new(target.kind, target.namespace, target.name);
                let action = Action::Delete {
                    key,
                    uid: None,
                    resource_version: None,
                    grace_period_seconds: None,
                    propagation_policy: cascade,
                    dry_run: false,
                };
                kubectl(self, &via, Request::Write(action))
            }
            StepAction::Scale { target, replicas, via } => {
                let key = ObjectKey::new(target.kind, target.namespace, target.name);
                kubectl(self, &via, Request::Write(crate::admission::patch_action(key, "replicas", replicas.into())))
            }
            StepAction::Cordon { node } | StepAction::Uncordon { node } => {
                let cordon = matches!(self.scenario.script[i].action, StepAction::Cordon { .. });
                let key = ObjectKey::new("Node", "", node);
                kubectl(
                    self,
                    &None,
                    Request::Write(crate::admission::patch_action(key, "unschedulable", cordon.into())),
                )
            }
            StepAction::Crash { component } => {
                if let Some(c) = self.component_index(&component) {
                    self.with_component(c, |c, env| c.kill(env, "crashed (script)", entry));
                }
            }
            StepAction::Restart { component, api_server } => {
                if let Some(c) = self.component_index(&component) {
                    if self.components[c.index()].instance().is_some() {
                        self.with_component(c, |c, env| c.kill(env, "restarting (script)", entry));
                    }
                    let server = api_server.as_deref().and_then(|s| self.server_index(s));
                    self.with_component(c, |c, env| c.start(env, server, Some(entry)));
                }
            }
            StepAction::Disconnect { component } => {
                if let Some(c) = self.component_index(&component) {
                    self.with_component(c, |c, env| c.disconnect(env));
                }
            }
            StepAction::Compact { keep } => {
                let revision = self.engine.store.revision().saturating_sub(keep);
                self.engine.store.compact(revision);
                let compacted = self.engine.store.compacted();
                self.engine.record(self.engine.lanes.store, Event::Compaction { revision: compacted }, vec![entry]);
            }
        }
    }
}

impl Sim {
    /// kube-apiserver's compactor (`--etcd-compaction-interval`): every
    /// interval it compacts etcd up to the revision etcd had at the
    /// previous tick, so about one interval of history stays readable.
    fn periodic_compaction(&mut self) {
        let current = self.engine.store.revision();
        if let Some(mark) = self.compaction_mark.replace(current)
            && mark > self.engine.store.compacted()
        {
            self.engine.store.compact(mark);
            let entry = self.engine.store_writes.entry(mark);
            self.engine.record(
                self.engine.lanes.store,
                Event::Compaction { revision: mark },
                entry.into_iter().collect(),
            );
        }
        let interval = self.scenario.etcd.compaction_interval.0;
        self.engine.schedule(self.engine.now + interval, Scheduled::Compaction);
    }
}

/// The components that run the built-in garbage collector.
fn collectors(scenario: &Scenario) -> Vec<String> {
    scenario.components.iter().filter(|c| c.controller == "garbage-collector").map(|c| c.name.clone()).collect()
}

/// The Node object for a scenario node.
fn node_object(n: &recon_scenario::Node) -> Object {
    Object {
        api_version: "v1".into(),
        kind: "Node".into(),
        metadata: recon_abi::ObjectMeta { name: n.name.clone(), labels: n.labels.clone().into(), ..Default::default() },
        spec: serde_json::json!({}).into(),
        status: serde_json::json!({
            "capacity": { "pods": n.pods.to_string() },
            "conditions": [{ "type": "Ready", "status": "True" }],
        })
        .into(),
        other: Default::default(),
    }
}

impl Sim {
    /// A write was committed: the checks are told, every API server's
    /// cache is fed, and the writer hears back.
    fn committed(&mut self, server: ServerId, done: Committed) {
        let writer = client_component(&done.client).map(|c| self.engine.component_name(c).to_string());
        let commit = Commit { event: &done.event, entry: done.entry, writer: writer.as_deref() };
        self.checks.committed(&mut self.engine, &self.nodes, &commit);
        for api_server in &mut self.servers {
            api_server.store_committed(&mut self.engine, done.event.revision);
        }
        self.servers[server.index()].reply(&mut self.engine, done.client, done.reply, done.delay);
    }
}

impl Sim {
    /// Runs `f` on component `c` with everything else it may reach.
    fn with_component(&mut self, c: ComponentId, f: impl FnOnce(&mut Component, &mut Env<'_>)) {
        let mut env = Env {
            engine: &mut self.engine,
            servers: &mut self.servers,
            nodes: &mut self.nodes,
            checks: &mut self.checks,
            instantiate: &self.instantiate,
        };
        f(&mut self.components[c.index()], &mut env);
    }

    /// An API server's answer reached its client.
    fn on_reply(&mut self, server: ServerId, client: Client, reply: Reply) {
        match client {
            Client::Probe(id) => self.probes.entry(id).or_default().push(reply),
            Client::Kubectl => {}
            Client::Reflector { component, .. }
            | Client::Writer { component, .. }
            | Client::Elector { component, .. } => {
                self.with_component(component, |c, env| c.on_reply(env, server, client, reply))
            }
        }
    }
}
