//! A component: one controller process across its whole life, the host
//! around it (a reflector per watch, leader election when asked for), the
//! mirror of what each instance has been shown, and the carrying out of
//! what the controller returns.
//!
//! Its life is [`Process`]: `Down` → (`Candidate` while it waits for its
//! Lease) → `Running`, and back to `Down` when it crashes, is killed by the
//! script or stops leading. Every start begins a new epoch: messages for an
//! older instance (replies, timers, retries) are dropped.

use std::collections::BTreeMap;
use std::sync::Arc;

use recon_abi::{
    Action, ActionResult, ComponentConfig, EventType, Input, InputEvent, Manifest, NamespacedMap, Object, ObjectKey,
    ObjectList, Outcome, PodRef, RequestId, Status, StatusReason, Verb, WatchEvent,
};
use recon_trace::text::short_uid;
use recon_trace::{EntryId, Event, Interner, Key, Line, Name, Reconcile};

use crate::admission::{Admitted, admit};
use crate::api::{GetRequest, Request};
use crate::apiserver::ApiServer;
use crate::cache::Filter;
use crate::checks::{Checks, ContainerStart, Observation};
use crate::election::{Answer, Candidacy, Tick};
use crate::engine::Engine;
use crate::ids::{ComponentId, NodeId, ServerId};
use crate::message::{Client, Reply, Scheduled, Served};
use crate::network::Endpoint;
use crate::node::NodeRuntime;
use crate::reflector::Reflector;
use crate::rng::Rng;

/// Consecutive failed list/watch requests before a component tries the next API server.
pub const FAILOVER_AFTER: u32 = 3;
/// First retry delay after a failed list/watch; doubles per failure.
pub const BACKOFF_INITIAL_MS: u64 = 200;
/// Longest retry delay.
pub const BACKOFF_MAX_MS: u64 = 3_200;
/// Delay before restarting a crashed controller; doubles with each crash in
/// a row, like Kubernetes' CrashLoopBackOff (scaled to simulation time).
pub const CRASH_BACKOFF_INITIAL_MS: u64 = 1_000;
/// Longest delay before restarting a crashed controller.
pub const CRASH_BACKOFF_MAX_MS: u64 = 16_000;
/// A controller that ran this long without crashing starts its back-off afresh.
pub const CRASH_BACKOFF_RESET_MS: u64 = 60_000;

/// How many lines a component's plugin may log into the trace in one run,
/// over all its instances; a marker line says when it is reached, and
/// later lines are dropped. The host bounds each call (1,000 lines of
/// 4 KiB), this bounds the run: a plugin that logs on every call cannot
/// grow the trace without end.
pub const MAX_LOG_LINES_PER_RUN: usize = 10_000;

/// Creates a fresh controller instance for a component (usually by its
/// `controller` name; a host may also swap in a plugin for one component),
/// or `None` if it cannot. Called at every (re)start of a component.
pub type Instantiate = Box<dyn Fn(&recon_scenario::Component) -> Option<Box<dyn recon_abi::Instance>>>;

/// What a component's handlers reach besides the component itself.
pub(crate) struct Env<'a> {
    /// Time, the queue, the store, the network, the trace.
    pub engine: &'a mut Engine,
    /// The API servers (to close this component's watches on them).
    pub servers: &'a mut [ApiServer],
    /// The nodes' runtimes (a node agent starts and stops containers).
    pub nodes: &'a mut [NodeRuntime],
    /// The checks, told of what the component observes and runs.
    pub checks: &'a mut Checks,
    /// Makes controller instances.
    pub instantiate: &'a Instantiate,
}

/// Where a component's process is in its life.
#[allow(clippy::large_enum_variant, reason = "one per component, replaced only when it starts or stops")]
pub(crate) enum Process {
    /// Not running: never started, crashed (a restart is scheduled), or
    /// killed by the script.
    Down,
    /// Up, campaigning for its Lease; its controller has not started.
    Candidate(Candidacy),
    /// Its controller runs; under leader election, while it leads.
    Running {
        /// The controller instance and what the host keeps for it.
        instance: Instance,
        /// The Lease it holds, if it runs under leader election.
        lease: Option<Candidacy>,
    },
}

/// One live controller instance.
pub(crate) struct Instance {
    controller: Box<dyn recon_abi::Instance>,
    /// What it declared at start.
    pub manifest: Manifest,
    reflectors: Vec<Reflector>,
    inbox: Vec<Delivered>,
    wake_pending: bool,
    /// What the host has delivered, per watch: the instance's view of the
    /// world, holding the API server's objects by reference, by namespace
    /// and name (a watch is of one kind, its manifest's).
    pub view: Vec<NamespacedMap<Arc<Object>>>,
    /// Its requests (writes and direct reads) not yet answered, by the
    /// host's number for them.
    requests: BTreeMap<u64, Pending>,
    /// The host's number for its next request.
    next_request: u64,
}

impl Instance {
    /// The revision of what it has been shown: its reflectors' furthest.
    fn view_revision(&self) -> u64 {
        self.reflectors.iter().map(Reflector::revision).max().unwrap_or(0)
    }
}

/// An input delivered to an instance, waiting for its next call.
struct Delivered {
    event: InputEvent,
    /// The trace entry that delivered it.
    cause: Option<EntryId>,
    /// The revision of the instance's view once it has this input (what
    /// a call that stops at it acted on).
    view_revision: u64,
    /// Its line in the reconcile entry that hands it over: written as it
    /// arrives, when its object's key and uid are at hand (a watch event's
    /// are already shared for its delivery entry), not looked up again.
    line: Line,
}

/// A request of an instance on its way: what the result will say it was.
struct Pending {
    verb: Verb,
    key: ObjectKey,
    /// The controller's id for it, if it gave one.
    id: Option<RequestId>,
}

/// One component across its whole life (all its instances).
pub(crate) struct Component {
    /// Which one it is.
    id: ComponentId,
    /// As the scenario declares it.
    pub spec: recon_scenario::Component,
    /// Its name: the trace's shared copy, which every entry about it holds.
    name: Name,
    /// Its API servers in preference order (first, then failover).
    servers: Vec<ServerId>,
    /// The node it runs on, if the scenario gives it one that exists:
    /// found once, not by name on every call.
    node: Option<NodeId>,
    /// The API server it uses now.
    pub server: ServerId,
    /// Incremented at every start and crash: messages to older instances are dropped.
    pub epoch: u64,
    /// Where its process is.
    pub process: Process,
    starts: u32,
    /// When the current (or last) instance started.
    started_at: u64,
    /// Crashes in a row, for the back-off.
    crashes: u32,
    /// Failed list/watch requests in a row, for the back-off and failover.
    failures: u32,
    /// Lines its plugin has logged into the trace this run.
    logged: usize,
    rng: Rng,
    /// The instance made when the simulation was built, to check that its
    /// controller exists: its first start uses it rather than making
    /// another (a Wasm plugin's instance costs its memory's setup and
    /// reset, a native one little).
    unstarted: Option<Box<dyn recon_abi::Instance>>,
}

impl Component {
    /// Component `id` of the scenario, not started; `node` is the node its
    /// spec names, if the scenario has it; `unstarted` is a fresh instance
    /// of its controller for its first start.
    pub fn new(
        id: ComponentId,
        name: Name,
        spec: &recon_scenario::Component,
        servers: &[recon_scenario::ApiServer],
        node: Option<NodeId>,
        rng: Rng,
        unstarted: Box<dyn recon_abi::Instance>,
    ) -> Component {
        let index = |name: &str| ServerId(servers.iter().position(|s| s.name == name).expect("validated scenario"));
        let mut order = vec![index(&spec.api_server)];
        order.extend(spec.failover.iter().map(|n| index(n)));
        Component {
            id,
            name,
            spec: spec.clone(),
            server: order[0],
            servers: order,
            node,
            epoch: 0,
            process: Process::Down,
            starts: 0,
            started_at: 0,
            crashes: 0,
            failures: 0,
            logged: 0,
            rng,
            unstarted: Some(unstarted),
        }
    }

    /// Its running controller instance, if any.
    pub fn instance(&self) -> Option<&Instance> {
        match &self.process {
            Process::Running { instance, .. } => Some(instance),
            _ => None,
        }
    }

    fn instance_mut(&mut self) -> Option<&mut Instance> {
        match &mut self.process {
            Process::Running { instance, .. } => Some(instance),
            _ => None,
        }
    }

    fn reflector(&mut self, w: usize) -> Option<&mut Reflector> {
        self.instance_mut().map(|i| &mut i.reflectors[w])
    }

    /// What a fresh instance of its controller would write if handed the
    /// store as it is now, when the running instance is *quiescent*: it is
    /// not a node agent, every event has been handled, no request of its is
    /// unanswered, and for every watch it holds exactly the objects, at the
    /// versions, that the store holds. `None` when it is not running or not
    /// quiescent. Only writes that would change the store count, judged by
    /// admitting each to a copy of it with the kinds its API server serves
    /// (a server-side apply of what is already there, a refused write, an
    /// Event, a read or a requeue does not). The idle-with-work-left check
    /// asks this at the end of a run; nothing of it reaches the trace.
    pub fn idle_probe(
        &self,
        store: &recon_store::Store,
        kinds: &recon_scenario::Kinds,
        instantiate: &Instantiate,
        now: u64,
    ) -> Option<Vec<Action>> {
        let instance = self.instance()?;
        if instance.manifest.node_agent || !instance.requests.is_empty() || !instance.inbox.is_empty() {
            return None;
        }
        let mut events = Vec::new();
        for (watch, spec) in instance.manifest.watches.iter().enumerate() {
            let filter = Filter::new(&crate::reflector::selection(spec)).ok()?;
            let objects: Vec<Arc<Object>> = store
                .range(&filter.prefix(), None)
                .ok()?
                .into_iter()
                .filter(|kv| filter.matches(&kv.value))
                .map(|kv| kv.value)
                .collect();
            let view = instance.view.get(watch)?;
            let holds = |o: &Arc<Object>| {
                view.get(&o.metadata.namespace, &o.metadata.name)
                    .is_some_and(|v| v.metadata.resource_version == o.metadata.resource_version)
            };
            if view.len() != objects.len() || !objects.iter().all(holds) {
                return None;
            }
            events.push(InputEvent::Listed { watch, resource_version: store.revision().to_string(), objects });
        }
        let mut fresh = instantiate(&self.spec)?;
        let config = ComponentConfig {
            name: self.spec.name.clone(),
            node: self.spec.node.clone(),
            params: self.spec.params.clone(),
            mitigations: self.spec.mitigations.clone(),
        };
        fresh.init(&config).ok()?;
        let output = fresh.handle(&Input { time_ms: now, events, containers: None }).ok()?;
        let changes_store = |action: &Action| {
            let is_write = action.as_write().is_some_and(|t| t.kind != "Event");
            let mut copy = store.clone();
            let mut rng = self.rng.clone();
            is_write
                && matches!(admit(&mut copy, &mut rng, kinds, now, u64::MAX, action.clone()), Ok(Admitted::Written(_)))
        };
        Some(output.actions.into_iter().filter(changes_store).collect())
    }

    /// Whether a wake for instance `epoch` would call its controller now.
    pub fn wake_due(&self, epoch: u64) -> bool {
        self.epoch == epoch && self.instance().is_some_and(|i| i.wake_pending)
    }

    /// Whether its process is up (its controller running, or a candidate
    /// waiting for the Lease).
    pub fn is_up(&self) -> bool {
        !matches!(self.process, Process::Down)
    }

    /// Why its current instance (`epoch`) may not make this write or
    /// direct read, if it may not: the API server's RBAC, from the manifest.
    pub fn forbidden(&self, epoch: u64, request: &Request) -> Option<Status> {
        let manifest = &self.instance().filter(|_| self.epoch == epoch)?.manifest;
        let (verb, kind) = match request {
            Request::Write(action) => action.as_write().map(|t| (t.verb, t.kind))?,
            Request::Get(r) => (Verb::Get, r.key.kind.as_str()),
            Request::List(r) => (Verb::List, r.selection.kind.as_str()),
            Request::Watch(_) => return None,
        };
        (!manifest.allows(verb, kind)).then(|| {
            Status::new(
                StatusReason::Forbidden,
                format!("{} may not {verb} {kind}s: its manifest does not declare it", manifest.name),
            )
        })
    }

    // ---- life cycle ----

    /// Starts a fresh process (optionally on another API server); `cause`
    /// is what made it start, if anything.
    pub fn start(&mut self, env: &mut Env<'_>, server: Option<ServerId>, cause: Option<EntryId>) {
        if let Some(s) = server {
            self.server = s;
            if !self.servers.contains(&s) {
                self.servers.insert(0, s);
            }
        }
        self.epoch += 1;
        self.failures = 0;
        let restarts = self.starts;
        self.starts += 1;
        self.started_at = env.engine.now;
        let api_server = env.servers[self.server.index()].name.clone();
        let started = env.engine.record(
            env.engine.lanes.component(self.id),
            Event::ComponentStarted {
                component: self.name.clone(),
                api_server,
                restarts,
                mitigations: self.spec.mitigations.clone(),
            },
            cause.into_iter().collect(),
        );
        match self.spec.leader_election.clone() {
            // A candidate first: the controller starts when it wins the Lease.
            Some(election) => {
                self.process = Process::Candidate(Candidacy::new(election));
                let epoch = self.epoch;
                env.engine.schedule(env.engine.now, Scheduled::ElectionTick { component: self.id, epoch });
            }
            None => self.start_controller(env, None, started),
        }
    }

    /// Starts its controller: a fresh instance, its manifest, and a
    /// reflector (and first list) per watch. `lease` is the Lease it won.
    fn start_controller(&mut self, env: &mut Env<'_>, lease: Option<Candidacy>, started: EntryId) {
        let mut controller =
            (self.unstarted.take()).or_else(|| (env.instantiate)(&self.spec)).expect("controller checked in Sim::new");
        let config = ComponentConfig {
            name: self.spec.name.clone(),
            node: self.spec.node.clone(),
            params: self.spec.params.clone(),
            mitigations: self.spec.mitigations.clone(),
        };
        let manifest = controller.init(&config);
        self.record_logs(env, controller.take_logs(), &[started]);
        let manifest = match manifest {
            Ok(m) => m,
            Err(crash) => return self.crashed(env, crash.reason, vec![started]),
        };
        if manifest.abi_version != recon_abi::ABI_VERSION {
            let reason = format!(
                "{} was built for ABI version {}; the host speaks version {}",
                manifest.name,
                manifest.abi_version,
                recon_abi::ABI_VERSION
            );
            return self.crashed(env, reason, vec![started]);
        }
        for (i, w) in manifest.watches.iter().enumerate() {
            if let Err(e) = Filter::new(&crate::reflector::selection(w)) {
                let reason = format!("{}: watch {i} of its manifest is invalid: {e}", manifest.name);
                return self.crashed(env, reason, vec![started]);
            }
        }
        let reflectors: Vec<Reflector> = manifest.watches.iter().map(Reflector::new).collect();
        let watches = reflectors.len();
        let instance = Instance {
            controller,
            manifest,
            reflectors,
            inbox: Vec::new(),
            wake_pending: false,
            view: (0..watches).map(|_| NamespacedMap::new()).collect(),
            requests: BTreeMap::new(),
            next_request: 0,
        };
        self.process = Process::Running { instance, lease };
        for w in 0..watches {
            self.send_list(env, w);
        }
        // A controller with nothing to watch still gets called once.
        if watches == 0 {
            self.wake_soon(env);
        }
    }

    /// The controller itself failed (a trap, exhausted fuel, bad output, a
    /// manifest the host cannot accept, a lost Lease): the process goes
    /// down, and comes back after a back-off that grows with every crash
    /// in a row.
    pub fn crashed(&mut self, env: &mut Env<'_>, reason: String, causes: Vec<EntryId>) {
        if env.engine.now.saturating_sub(self.started_at) >= CRASH_BACKOFF_RESET_MS {
            self.crashes = 0;
        }
        let delay = (CRASH_BACKOFF_INITIAL_MS << self.crashes.min(8)).min(CRASH_BACKOFF_MAX_MS);
        self.crashes += 1;
        self.go_down(env);
        let reason = format!("{reason}; restarting in {}ms (back-off)", delay);
        let entry = env.engine.record(
            env.engine.lanes.component(self.id),
            Event::ComponentCrashed { component: self.name.clone(), reason },
            causes,
        );
        let epoch = self.epoch;
        env.engine.schedule(env.engine.now + delay, Scheduled::Restart { component: self.id, epoch, cause: entry });
    }

    /// A back-off restart is due (unless something restarted it meanwhile).
    pub fn on_restart(&mut self, env: &mut Env<'_>, epoch: u64, cause: EntryId) {
        if self.epoch == epoch && !self.is_up() {
            self.start(env, None, Some(cause));
        }
    }

    /// The script kills the process: memory and watches are gone; it is
    /// not restarted.
    pub fn kill(&mut self, env: &mut Env<'_>, reason: &str, cause: EntryId) {
        if !self.is_up() {
            return;
        }
        self.go_down(env);
        env.engine.record(
            env.engine.lanes.component(self.id),
            Event::ComponentCrashed { component: self.name.clone(), reason: reason.to_string() },
            vec![cause],
        );
    }

    fn go_down(&mut self, env: &mut Env<'_>) {
        self.process = Process::Down;
        self.epoch += 1;
        for server in env.servers.iter_mut() {
            server.close_watches(self.id);
        }
    }

    /// Its watch connections break; reflectors resume from where they were.
    pub fn disconnect(&mut self, env: &mut Env<'_>) {
        let epoch = self.epoch;
        let Some(instance) = self.instance_mut() else { return };
        for r in &mut instance.reflectors {
            r.disconnected();
        }
        let n = instance.reflectors.len();
        for server in env.servers.iter_mut() {
            server.close_watches(self.id);
        }
        for watch in 0..n {
            let at = env.engine.now + env.engine.network.sample();
            env.engine.schedule(at, Scheduled::Retry { component: self.id, epoch, watch });
        }
    }

    // ---- leader election ----

    /// A candidate's periodic attempt: read the Lease from etcd, or give up
    /// leading if renewals have failed for too long.
    pub fn election_tick(&mut self, env: &mut Env<'_>, epoch: u64) {
        if self.epoch != epoch {
            return;
        }
        let now = env.engine.now;
        let (candidacy, leading) = match &mut self.process {
            Process::Candidate(c) => (c, false),
            Process::Running { lease: Some(c), .. } => (c, true),
            _ => return,
        };
        let retry = candidacy.config.retry_period.0;
        match candidacy.tick(now, leading) {
            Tick::StepDown { lease, deadline } => {
                let entry = env.engine.record(
                    env.engine.lanes.component(self.id),
                    Event::Leadership { component: self.name.clone(), lease: lease.clone(), leading: false },
                    vec![],
                );
                let reason = format!("stopped leading: could not renew Lease {lease} for {deadline}ms");
                self.crashed(env, reason, vec![entry]);
            }
            Tick::Wait => env.engine.schedule(now + retry, Scheduled::ElectionTick { component: self.id, epoch }),
            Tick::Read(key) => {
                env.engine.schedule(now + retry, Scheduled::ElectionTick { component: self.id, epoch });
                let request = Request::Get(GetRequest { key, resource_version: None });
                self.send(env, Client::Elector { component: self.id, epoch }, request, None);
            }
        }
    }

    /// The Lease read or write came back.
    fn on_elector_reply(&mut self, env: &mut Env<'_>, reply: Reply) {
        let now = env.engine.now;
        let epoch = self.epoch;
        let (candidacy, leading) = match &mut self.process {
            Process::Candidate(c) => (c, false),
            Process::Running { lease: Some(c), .. } => (c, true),
            _ => return,
        };
        match candidacy.answer(now, &self.spec.name, leading, reply) {
            Answer::Write(action) => {
                self.send(env, Client::Elector { component: self.id, epoch }, Request::Write(action), None)
            }
            // A renewal by the leader changes nothing else.
            Answer::Won(_) if leading => {}
            Answer::Won(entry) => {
                let Process::Candidate(candidacy) = std::mem::replace(&mut self.process, Process::Down) else {
                    unreachable!("not leading, so a candidate")
                };
                let won = env.engine.record(
                    env.engine.lanes.component(self.id),
                    Event::Leadership {
                        component: self.name.clone(),
                        lease: candidacy.config.lease.clone(),
                        leading: true,
                    },
                    vec![entry],
                );
                self.start_controller(env, Some(candidacy), won);
            }
            Answer::Nothing => {}
        }
    }

    // ---- requests and replies ----

    fn send(&mut self, env: &mut Env<'_>, client: Client, request: Request, cause: Option<EntryId>) {
        let server = self.server;
        let at = env.engine.network.arrival(Endpoint::Component(self.id), Endpoint::Server(server), env.engine.now, 0);
        env.engine.schedule(at, Scheduled::Request { server, client, request: Box::new(request), cause });
    }

    /// Sends the list that (re)fills watch `w`.
    fn send_list(&mut self, env: &mut Env<'_>, w: usize) {
        let epoch = self.epoch;
        let mode_override = self.spec.list_mode;
        let Some(instance) = self.instance_mut() else { return };
        let mode = mode_override.unwrap_or(instance.manifest.list_mode);
        let request = instance.reflectors[w].list(mode);
        self.send(env, Client::Reflector { component: self.id, epoch, watch: w }, request, None);
    }

    fn send_watch(&mut self, env: &mut Env<'_>, w: usize) {
        let epoch = self.epoch;
        let Some(r) = self.reflector(w) else { return };
        let request = r.watch();
        self.send(env, Client::Reflector { component: self.id, epoch, watch: w }, request, None);
    }

    /// A reflector's retry is due: it resumes its watch if it can, or lists.
    pub fn on_retry(&mut self, env: &mut Env<'_>, epoch: u64, w: usize) {
        if self.epoch != epoch {
            return;
        }
        let Some(instance) = self.instance() else { return };
        if instance.reflectors[w].can_resume() { self.send_watch(env, w) } else { self.send_list(env, w) }
    }

    /// An API server answered one of its clients.
    pub fn on_reply(&mut self, env: &mut Env<'_>, server: ServerId, client: Client, reply: Reply) {
        match client {
            Client::Writer { epoch, request, .. } if epoch == self.epoch => self.answered(env, request, reply),
            Client::Reflector { epoch, watch, .. } if epoch == self.epoch => {
                self.on_reflector_reply(env, server, watch, reply)
            }
            Client::Elector { epoch, .. } if epoch == self.epoch => self.on_elector_reply(env, reply),
            _ => {}
        }
    }

    /// One of its requests was answered: the controller gets the result,
    /// with its id for the request.
    fn answered(&mut self, env: &mut Env<'_>, request: u64, reply: Reply) {
        let Some(instance) = self.instance_mut() else { return };
        let Some(Pending { verb, key, id }) = instance.requests.remove(&request) else { return };
        let (key, outcome, cause) = match reply {
            // The stored key: a create by generateName has its name now.
            Reply::Written { key, outcome, entry, .. } => (key, outcome, Some(entry)),
            // A get of nothing is the API server's 404 (`Reply::Failed`).
            Reply::Read(served) if verb == Verb::Get => {
                (key, Outcome::Ok(served.objects.into_iter().next().map(Arc::unwrap_or_clone)), Some(served.entry))
            }
            Reply::Read(served) => {
                let list = ObjectList {
                    resource_version: served.revision.to_string(),
                    items: served.objects.into_iter().map(Arc::unwrap_or_clone).collect(),
                    continue_token: served.continue_token,
                };
                (key, Outcome::Listed(list), Some(served.entry))
            }
            Reply::Failed(status) => (key, Outcome::Err(status), None),
            Reply::WatchOpened { .. } | Reply::Events { .. } => return,
        };
        self.deliver(env, InputEvent::Result(Box::new(ActionResult { verb, key, outcome, id })), cause);
    }

    fn on_reflector_reply(&mut self, env: &mut Env<'_>, server: ServerId, w: usize, reply: Reply) {
        match reply {
            Reply::Read(served) => {
                self.listed(env, w, served);
                self.send_watch(env, w);
            }
            Reply::WatchOpened { watcher, initial, .. } => {
                if let Some(r) = self.reflector(w) {
                    r.opened(server, watcher);
                }
                if let Some(served) = initial {
                    self.listed(env, w, served);
                }
            }
            Reply::Events { watcher, events } => {
                if !self.reflector(w).is_some_and(|r| r.watches(server, watcher)) {
                    return; // a watch this reflector has since abandoned
                }
                for (event, cause) in events {
                    self.watch_event(env, server, w, event, cause);
                }
            }
            Reply::Failed(status) => self.reflector_failed(env, w, status),
            Reply::Written { .. } => {}
        }
    }

    /// A list (or watch-list initial state) arrived: it replaces the view.
    fn listed(&mut self, env: &mut Env<'_>, w: usize, served: Served) {
        self.failures = 0;
        self.observe(env, served.revision, served.entry);
        let Some(instance) = self.instance_mut() else { return };
        instance.reflectors[w].listed(served.revision);
        let view = &mut instance.view[w];
        view.clear();
        for object in &served.objects {
            view.insert(&object.metadata.namespace, &object.metadata.name, Arc::clone(object));
        }
        // The controller shares the versions: a native one keeps them in its
        // cache as they are; a plugin's host encodes them.
        let event =
            InputEvent::Listed { watch: w, resource_version: served.revision.to_string(), objects: served.objects };
        self.deliver(env, event, Some(served.entry));
    }

    fn watch_event(&mut self, env: &mut Env<'_>, server: ServerId, w: usize, event: WatchEvent, cause: EntryId) {
        let revision = event.object.revision().unwrap_or(0);
        let (key, uid) = match env.engine.stored_names(revision, &event.object) {
            Some((key, uid)) => (key.clone(), uid.clone()),
            None => (env.engine.key(&event.object), env.engine.name(&event.object.metadata.uid)),
        };
        // Its input line, from the names just shared for its delivery entry.
        let line = watched_line(w, &event, key.clone(), uid.clone());
        let delivered = Event::WatchDelivered {
            component: self.name.clone(),
            api_server: env.servers[server.index()].name.clone(),
            watch: w,
            event_type: event.event_type,
            key,
            uid,
            revision,
        };
        let entry = env.engine.record(env.engine.lanes.component(self.id), delivered, vec![cause]);
        self.observe(env, revision, entry);
        let Some(instance) = self.instance_mut() else { return };
        instance.reflectors[w].synced = Some(revision);
        let view = &mut instance.view[w];
        match event.event_type {
            EventType::Added | EventType::Modified => {
                view.insert(&event.object.metadata.namespace, &event.object.metadata.name, Arc::clone(&event.object));
            }
            EventType::Deleted => {
                view.remove(&event.object.metadata.namespace, &event.object.metadata.name);
            }
            // No object changes; the revision above is what it is for: a
            // watch restarted after it resumes from there, not from older
            // history the window may have lost (no 410 and relist).
            EventType::Bookmark => {}
        }
        self.deliver_described(env, InputEvent::Watch { watch: w, event }, line, Some(entry));
    }

    fn reflector_failed(&mut self, env: &mut Env<'_>, w: usize, status: Status) {
        let Some(r) = self.reflector(w) else { return };
        r.failed(status.reason);
        self.failures += 1;
        let failures = self.failures;
        if failures >= FAILOVER_AFTER && self.servers.len() > 1 {
            return self.fail_over(env);
        }
        let backoff = (BACKOFF_INITIAL_MS << (failures - 1).min(8)).min(BACKOFF_MAX_MS);
        let jitter = self.rng.range_inclusive(0, backoff / 4);
        let epoch = self.epoch;
        env.engine
            .schedule(env.engine.now + backoff + jitter, Scheduled::Retry { component: self.id, epoch, watch: w });
    }

    /// Switches to the next API server and restarts every reflector there.
    fn fail_over(&mut self, env: &mut Env<'_>) {
        let pos = self.servers.iter().position(|s| *s == self.server).unwrap_or(0);
        let next = self.servers[(pos + 1) % self.servers.len()];
        let from = env.servers[self.server.index()].name.clone();
        self.server = next;
        self.failures = 0;
        let to = env.servers[next.index()].name.clone();
        env.engine.record(
            env.engine.lanes.component(self.id),
            Event::Failover { component: self.name.clone(), from, to },
            vec![],
        );
        for server in env.servers.iter_mut() {
            server.close_watches(self.id);
        }
        let epoch = self.epoch;
        let n = self.instance().map_or(0, |i| i.reflectors.len());
        for watch in 0..n {
            if let Some(r) = self.reflector(watch) {
                r.disconnected();
            }
            env.engine.schedule(env.engine.now, Scheduled::Retry { component: self.id, epoch, watch });
        }
    }

    /// Tells the checks what it has just observed (going backwards is time travel).
    fn observe(&mut self, env: &mut Env<'_>, revision: u64, entry: EntryId) {
        let api_server = &env.servers[self.server.index()].config.name;
        let observation = Observation { component: self.id, name: &self.spec.name, api_server, revision, entry };
        env.checks.observed(env.engine, env.nodes, &observation);
    }

    // ---- calling the controller ----

    fn deliver(&mut self, env: &mut Env<'_>, event: InputEvent, cause: Option<EntryId>) {
        if self.instance().is_none() {
            return;
        }
        let line = describe_input(&event, &mut env.engine.names);
        self.deliver_described(env, event, line, cause);
    }

    /// [`Component::deliver`] with the event's line already written.
    fn deliver_described(&mut self, env: &mut Env<'_>, event: InputEvent, line: Line, cause: Option<EntryId>) {
        let Some(instance) = self.instance_mut() else { return };
        let view_revision = instance.view_revision();
        instance.inbox.push(Delivered { event, cause, view_revision, line });
        self.wake_soon(env);
    }

    fn wake_soon(&mut self, env: &mut Env<'_>) {
        let (id, epoch) = (self.id, self.epoch);
        let Some(instance) = self.instance_mut() else { return };
        if !instance.wake_pending {
            instance.wake_pending = true;
            env.engine.schedule(env.engine.now, Scheduled::Wake { component: id, epoch });
        }
    }

    /// A timer the controller asked for is due.
    pub fn on_timer(&mut self, env: &mut Env<'_>, epoch: u64, key: String) {
        if self.epoch == epoch {
            self.deliver(env, InputEvent::Timer { key }, None);
        }
    }

    /// The inputs its next call would get, one line each (none if it is not running).
    pub fn inbox(&self) -> Vec<String> {
        self.instance().map(|i| i.inbox.iter().map(|d| d.line.to_string()).collect()).unwrap_or_default()
    }

    /// What of its state later events depend on, in words (for a state's
    /// fingerprint): its epoch and process, its API server, and for a
    /// running instance its cache (keys and resourceVersions the host
    /// delivered, per watch), its reflectors' revisions, its inputs not
    /// yet handed over and its requests on their way.
    pub fn describe_state(&self) -> String {
        let process = match &self.process {
            Process::Down => "down".to_string(),
            Process::Candidate(_) => "candidate".to_string(),
            Process::Running { instance, lease } => {
                let view: Vec<Vec<(String, &str)>> = instance
                    .view
                    .iter()
                    .map(|w| w.values().map(|o| (o.key().to_string(), o.metadata.resource_version.as_str())).collect())
                    .collect();
                let revisions: Vec<u64> = instance.reflectors.iter().map(Reflector::revision).collect();
                let requests: Vec<String> =
                    instance.requests.values().map(|p| format!("{:?} {} {:?}", p.verb, p.key, p.id)).collect();
                format!(
                    "running lease={} view={view:?} revisions={revisions:?} inbox={:?} requests={requests:?}",
                    lease.is_some(),
                    self.inbox()
                )
            }
        };
        format!("{} epoch {} {:?} {process}\n", self.spec.name, self.epoch, self.server)
    }

    /// Calls the controller with everything in its inbox but the newest
    /// `held_back` inputs (a stale view, see [`crate::ordering::Reconcile`];
    /// it always gets the oldest) and carries out what it returns. Inputs
    /// held back stay in the inbox for a second call at the same moment.
    pub fn wake(&mut self, env: &mut Env<'_>, epoch: u64, held_back: usize) {
        if self.epoch != epoch {
            return;
        }
        let (named_node, node) = (self.spec.node.is_some(), self.node);
        let now = env.engine.now;
        let Some(instance) = self.instance_mut() else { return };
        instance.wake_pending = false;
        let mut inbox = std::mem::take(&mut instance.inbox);
        let held_back = held_back.min(inbox.len().saturating_sub(1));
        instance.inbox = inbox.split_off(inbox.len() - held_back);
        // The revision of what this instance has been shown (not the most it
        // ever saw: after a stale list the view is behind that); with inputs
        // held back, what it had been shown up to the last one it gets.
        let view_revision = match (held_back, inbox.last()) {
            (1.., Some(last)) => last.view_revision,
            _ => instance.view_revision(),
        };
        let held: Vec<Line> = instance.inbox.iter().map(|d| d.line.clone()).collect();
        let containers = (named_node && instance.manifest.node_agent)
            .then(|| node.map(|n| env.nodes[n.index()].containers()).unwrap_or_default());
        let causes: Vec<EntryId> = inbox.iter().filter_map(|d| d.cause).collect();
        let inputs: Vec<Line> = inbox.iter().map(|d| d.line.clone()).collect();
        let input = Input { time_ms: now, events: inbox.into_iter().map(|d| d.event).collect(), containers };
        let output = instance.controller.handle(&input);
        let lines = instance.controller.take_logs();
        // Judged while the instance is at hand; carried out after its log
        // lines are on the trace.
        let too_many_ids = output.as_ref().ok().filter(|o| o.request_ids.len() > o.actions.len()).map(|o| {
            format!(
                "{}: its output names {} request ids for {} actions",
                instance.manifest.name,
                o.request_ids.len(),
                o.actions.len()
            )
        });
        self.record_logs(env, lines, &causes);
        let output = match output {
            Ok(output) => output,
            Err(crash) => return self.crashed(env, crash.reason, causes),
        };
        if let Some(reason) = too_many_ids {
            return self.crashed(env, reason, causes);
        }
        let names = &mut env.engine.names;
        let actions: Vec<Line> = output.actions.iter().map(|a| describe_action(a, names)).collect();
        env.engine.listed_items += (inputs.len() + actions.len()) as u64;
        let entry = env.engine.record(
            env.engine.lanes.component(self.id),
            Event::Reconcile(Box::new(Reconcile {
                component: self.name.clone(),
                view_revision,
                inputs,
                actions,
                held_back: held,
            })),
            causes,
        );
        for held in output.held {
            env.engine.record(
                env.engine.lanes.component(self.id),
                Event::SyncHeld { component: self.name.clone(), held: Box::new(held) },
                vec![entry],
            );
        }
        let ids = output.request_ids;
        for (i, action) in output.actions.into_iter().enumerate() {
            let id = ids.get(i).copied().flatten();
            self.carry_out(env, action, id, entry);
        }
        // What was held back reaches it next, at this same moment.
        if self.instance().is_some_and(|i| !i.inbox.is_empty()) {
            self.wake_soon(env);
        }
    }

    /// Records what its plugin logged during the call that just ended,
    /// before what the call led to, with the same causes; at most
    /// [`MAX_LOG_LINES_PER_RUN`] lines over the run, then a marker line
    /// and nothing more.
    fn record_logs(&mut self, env: &mut Env<'_>, mut lines: Vec<String>, causes: &[EntryId]) {
        if lines.is_empty() || self.logged > MAX_LOG_LINES_PER_RUN {
            return;
        }
        let room = MAX_LOG_LINES_PER_RUN - self.logged;
        if lines.len() > room {
            lines.truncate(room);
            lines.push(format!(
                "(log limit reached: {MAX_LOG_LINES_PER_RUN} lines per component per run; later lines are dropped)"
            ));
            self.logged = MAX_LOG_LINES_PER_RUN + 1;
        } else {
            self.logged += lines.len();
        }
        env.engine.listed_items += lines.len() as u64;
        env.engine.record(
            env.engine.lanes.component(self.id),
            Event::Logged { component: self.name.clone(), lines },
            causes.to_vec(),
        );
    }

    /// Refuses an action the host itself must not carry out (containers
    /// touched by a controller that is not a node agent).
    fn refuse(&mut self, env: &mut Env<'_>, action: &Action, reason: String, entry: EntryId) {
        let status = Status::new(StatusReason::Forbidden, reason);
        env.engine.record(
            env.engine.lanes.component(self.id),
            Event::ActionRefused {
                component: self.name.clone(),
                action: describe_action_text(action),
                status: Box::new(status),
            },
            vec![entry],
        );
    }

    /// Numbers a request of the current instance and remembers it until it is answered.
    fn request(&mut self, action: &Action, id: Option<RequestId>) -> Option<Client> {
        let (component, epoch) = (self.id, self.epoch);
        let (verb, key) = action.request_target()?;
        let instance = self.instance_mut()?;
        instance.next_request += 1;
        let request = instance.next_request;
        instance.requests.insert(request, Pending { verb, key, id });
        Some(Client::Writer { component, epoch, request })
    }

    fn carry_out(&mut self, env: &mut Env<'_>, action: Action, id: Option<RequestId>, entry: EntryId) {
        let epoch = self.epoch;
        if self.instance().is_none() {
            return;
        }
        match &action {
            Action::Create { .. }
            | Action::Update { .. }
            | Action::UpdateStatus { .. }
            | Action::Delete { .. }
            | Action::Patch { .. }
            | Action::PatchStatus { .. } => {
                // Permissions are checked by the API server, like RBAC: a
                // refusal costs a round trip, so a controller that answers
                // every refusal with another write still lets time pass.
                let Some(client) = self.request(&action, id) else { return };
                self.send(env, client, Request::Write(action), Some(entry));
            }
            Action::Get { .. } | Action::List { .. } => {
                // A direct read, served by the API server like any read
                // (controller-runtime's API reader): no informer sees it.
                let Some(read) = Request::direct_read(&action) else { return };
                let Some(client) = self.request(&action, id) else { return };
                self.send(env, client, read, Some(entry));
            }
            Action::RequeueAfter { key, after_ms } => {
                // At least 1ms: a controller requeueing itself "now" forever
                // must not stop virtual time.
                let at = env.engine.now + after_ms.max(&1);
                env.engine.schedule(at, Scheduled::Timer { component: self.id, epoch, key: key.clone() });
            }
            Action::StartContainer { pod } | Action::StopContainer { pod } => {
                let Some(instance) = self.instance() else { return };
                let agent = instance.manifest.node_agent;
                let Some(n) = self.node.filter(|_| agent) else {
                    if agent && self.spec.node.is_some() {
                        return; // a node the scenario does not have: nothing runs there
                    }
                    let reason =
                        format!("{} is not a node agent: it may not start or stop containers", instance.manifest.name);
                    return self.refuse(env, &action, reason, entry);
                };
                if matches!(action, Action::StartContainer { .. }) {
                    let mut pod_views =
                        instance.view.iter().zip(&instance.manifest.watches).filter(|(_, spec)| spec.kind == "Pod");
                    let object = pod_views.find_map(|(view, _)| {
                        view.get(&pod.namespace, &pod.name).filter(|o| o.metadata.uid == pod.uid)
                    });
                    start_container(env, n, pod, object.map(|o| Object::clone(o)), entry);
                } else {
                    stop_container(env, n, pod, entry);
                }
            }
        }
    }
}

/// A node agent started a container: the node's runtime runs it, and the
/// checks are told.
fn start_container(env: &mut Env<'_>, n: NodeId, pod: &PodRef, object: Option<Object>, cause: EntryId) {
    if env.nodes[n.index()].runs(pod) {
        return; // already running: starting again is a no-op, as in a real runtime
    }
    let started =
        Event::ContainerStarted { node: env.engine.name(&env.nodes[n.index()].name), pod: Box::new(pod.clone()) };
    let entry = env.engine.record(env.engine.lanes.node(n), started, vec![cause]);
    env.nodes[n.index()].start(pod, env.engine.now);
    let start = ContainerStart { node: n, pod, object: object.as_ref(), entry };
    env.checks.container_started(env.engine, env.nodes, &start);
}

/// A node agent stopped a container.
fn stop_container(env: &mut Env<'_>, n: NodeId, pod: &PodRef, cause: EntryId) {
    if env.nodes[n.index()].stop(pod) {
        let stopped =
            Event::ContainerStopped { node: env.engine.name(&env.nodes[n.index()].name), pod: Box::new(pod.clone()) };
        env.engine.record(env.engine.lanes.node(n), stopped, vec![cause]);
        env.checks.container_stopped(n, pod);
    }
}

/// A watch event's input line, given its object's shared key and uid.
fn watched_line(watch: usize, event: &WatchEvent, key: Key, uid: Name) -> Line {
    let object = &event.object;
    match (u32::try_from(watch), revision(&object.metadata.resource_version)) {
        (Ok(watch), Some(revision)) => Line::Watched { watch, event_type: event.event_type, key, uid, revision },
        _ => format!(
            "watch {watch}: {} {} (uid {}) at revision {}",
            event.event_type,
            object.key(),
            short_uid(&object.metadata.uid),
            object.metadata.resource_version
        )
        .into(),
    }
}

/// One line per input, for the trace: the common ones as their parts
/// (names and keys shared through `names`), the rest as text (see [`Line`]).
fn describe_input(e: &InputEvent, names: &mut Interner) -> Line {
    match e {
        InputEvent::Listed { watch, resource_version, objects } => {
            format!("watch {watch}: listed {} objects at revision {resource_version}", objects.len()).into()
        }
        InputEvent::Watch { watch, event } => {
            let (key, uid) = (names.object_key(&event.object), names.name(&event.object.metadata.uid));
            watched_line(*watch, event, key, uid)
        }
        InputEvent::Result(r) => match &r.outcome {
            Outcome::Ok(_) => Line::Succeeded { verb: r.verb, key: names.key(&r.key) },
            Outcome::Listed(list) => format!(
                "list {}s{}: {} objects at revision {}",
                r.key.kind,
                if r.key.namespace.is_empty() { String::new() } else { format!(" in {}", r.key.namespace) },
                list.items.len(),
                list.resource_version
            )
            .into(),
            Outcome::Err(s) => format!("{} {}: {:?} ({})", r.verb, r.key, s.reason, s.message).into(),
        },
        InputEvent::Timer { key } => format!("timer {key}").into(),
    }
}

/// A resource version as the revision it names, when it reads back as
/// itself (plain digits, no leading zero): the store writes no other kind.
fn revision(resource_version: &str) -> Option<u64> {
    let plain = resource_version.bytes().all(|b| b.is_ascii_digit())
        && (resource_version == "0" || !resource_version.starts_with('0'));
    plain.then(|| resource_version.parse().ok()).flatten()
}

/// An action's line as text, for messages that quote it.
pub(crate) fn describe_action_text(a: &Action) -> String {
    describe_action(a, &mut Interner::new()).to_string()
}

/// One line per action, for the trace: the common ones as their parts
/// (names and keys shared through `names`), the rest as text (see [`Line`]).
pub(crate) fn describe_action(a: &Action, names: &mut Interner) -> Line {
    // A write's condition: none, or the revision it names.
    let precondition = |o: &Object| match o.metadata.resource_version.as_str() {
        "" => Some(None),
        rv => revision(rv).map(Some),
    };
    let write = |verb: Verb, object: &Object, names: &mut Interner| match precondition(object) {
        Some(if_at) => Line::Write { verb, key: names.object_key(object), if_at },
        None => format!("{verb} {} if at revision {}", object.key(), object.metadata.resource_version).into(),
    };
    match a {
        Action::Create { object, .. } if object.metadata.name.is_empty() => {
            // Named by the API server from generateName: say the prefix.
            let key = object.key();
            format!("create {} {}/{}*", key.kind, key.namespace, object.metadata.generate_name).into()
        }
        Action::Create { object, .. } => Line::Write { verb: Verb::Create, key: names.object_key(object), if_at: None },
        Action::Update { object, .. } => write(Verb::Update, object, names),
        Action::UpdateStatus { object, .. } => write(Verb::UpdateStatus, object, names),
        Action::Delete { key, uid, grace_period_seconds, propagation_policy, .. } => {
            let mut s = format!("delete {key}");
            if let Some(u) = uid {
                s += &format!(" (uid {})", short_uid(u));
            }
            if let Some(g) = grace_period_seconds {
                s += &format!(" grace {g}s");
            }
            if let Some(p) = propagation_policy {
                s += &format!(" propagation {p:?}");
            }
            s.into()
        }
        Action::Patch { key, patch, params } | Action::PatchStatus { key, patch, params } => {
            let verb = if matches!(a, Action::Patch { .. }) { "patch" } else { "patch status of" };
            let mut s = format!("{verb} {key} ({}", patch.patch_type());
            if !params.field_manager.is_empty() {
                s += &format!(" by {}", params.field_manager);
            }
            if params.force {
                s += ", force";
            }
            if params.dry_run {
                s += ", dry run";
            }
            s.push(')');
            if let Some(rv) = patch.body().pointer("/metadata/resourceVersion").and_then(|v| v.as_str()) {
                s += &format!(" if at revision {rv}");
            }
            s.into()
        }
        Action::Get { .. } | Action::List { .. } => {
            Request::direct_read(a).map(|r| format!("direct {r}")).unwrap_or_default().into()
        }
        Action::RequeueAfter { key, after_ms } => format!("requeue {key} after {after_ms}ms").into(),
        Action::StartContainer { pod } | Action::StopContainer { pod } => Line::Container {
            start: matches!(a, Action::StartContainer { .. }),
            pod: names.key_of("Pod", &pod.namespace, &pod.name),
            uid: names.name(&pod.uid),
        },
    }
}
