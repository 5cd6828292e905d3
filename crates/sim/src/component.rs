//! Components: controller instances, the reflectors the host runs on their
//! behalf (list, then watch, relist on failure, fail over), the mirror of
//! what each instance has been shown, and the application of their actions.

use std::collections::BTreeMap;

use recon_abi::{
    Action, ActionResult, ComponentConfig, Container, EventType, Input, InputEvent, Manifest, Object, ObjectKey,
    Outcome, Status, StatusReason, WatchSpec,
};
use recon_scenario::ListMode;

use crate::api::{ListRequest, Request, Selection, WatchRequest};
use crate::checks::Observation;
use crate::message::Scheduled;
use crate::message::{Client, Reply, Served};
use crate::network::Endpoint;
use crate::rng::Rng;
use crate::world::Sim;
use recon_trace::text::short_uid;
use recon_trace::{EntryId, Event};

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

/// One component across its whole life (all its instances).
pub(crate) struct ComponentState {
    pub spec: recon_scenario::Component,
    /// Its API servers in preference order (first, then failover).
    servers: Vec<usize>,
    /// The API server it uses now.
    pub server: usize,
    /// Incremented at every start and crash: messages to older instances are dropped.
    pub epoch: u64,
    pub instance: Option<Running>,
    starts: u32,
    /// When the current (or last) instance started.
    started_at: u64,
    /// Crashes in a row, for the back-off.
    crashes: u32,
    failures: u32,
    rng: Rng,
    /// The process's Lease candidacy, if it runs under leader election and
    /// is up: its controller runs only while it leads.
    pub candidacy: Option<crate::election::Candidacy>,
}

/// One live instance of a component.
pub(crate) struct Running {
    controller: Box<dyn recon_abi::Instance>,
    pub manifest: Manifest,
    reflectors: Vec<Reflector>,
    inbox: Vec<(InputEvent, Option<EntryId>)>,
    wake_pending: bool,
    /// What the host has delivered, per watch: the instance's view of the world.
    pub view: Vec<BTreeMap<ObjectKey, Object>>,
}

/// The host's reflector for one watch of an instance.
struct Reflector {
    selection: Selection,
    /// Whether a list has completed in this instance.
    listed: bool,
    /// The last revision synced (list or event).
    last_rv: u64,
    /// After a 410 the next list asks for the most recent state.
    relist_unset: bool,
    /// Open watch: (API server, watcher id).
    watcher: Option<(usize, u64)>,
}

impl ComponentState {
    pub fn new(spec: &recon_scenario::Component, servers: &[recon_scenario::ApiServer], rng: Rng) -> ComponentState {
        let index = |name: &str| servers.iter().position(|s| s.name == name).expect("validated scenario");
        let mut order = vec![index(&spec.api_server)];
        order.extend(spec.failover.iter().map(|n| index(n)));
        ComponentState {
            spec: spec.clone(),
            server: order[0],
            servers: order,
            epoch: 0,
            instance: None,
            starts: 0,
            started_at: 0,
            crashes: 0,
            failures: 0,
            rng,
            candidacy: None,
        }
    }
}

pub(crate) fn selection(w: &WatchSpec) -> Selection {
    Selection {
        kind: w.kind.clone(),
        namespace: w.namespace.clone(),
        field_selector: w.field_selector.clone(),
        label_selector: w.label_selector.clone(),
    }
}

impl Sim {
    /// Starts a fresh instance of component `c` (optionally on another API
    /// server); `cause` is what made it start, if anything.
    pub(crate) fn start_component(&mut self, c: usize, server: Option<usize>, cause: impl Into<Option<EntryId>>) {
        let cause = cause.into();
        let comp = &mut self.components[c];
        if let Some(s) = server {
            comp.server = s;
            if !comp.servers.contains(&s) {
                comp.servers.insert(0, s);
            }
        }
        comp.epoch += 1;
        comp.failures = 0;
        let restarts = comp.starts;
        comp.starts += 1;
        comp.started_at = self.engine.now;
        let name = comp.spec.name.clone();
        let api_server = self.servers[comp.server].config.name.clone();
        let started = self.engine.record(
            self.engine.lanes.components[c],
            Event::ComponentStarted { component: name.clone(), api_server, restarts },
            cause.into_iter().collect(),
        );
        let comp = &mut self.components[c];
        match comp.spec.leader_election.clone() {
            // A candidate first: the controller starts when it wins the Lease.
            Some(election) => {
                comp.candidacy = Some(crate::election::Candidacy::new(election));
                let epoch = comp.epoch;
                self.engine.schedule(self.engine.now, Scheduled::ElectionTick { component: c, epoch });
            }
            None => self.start_controller(c, started),
        }
    }

    /// Whether the component's process is up (its controller running, or a
    /// candidate waiting for the Lease).
    pub(crate) fn process_up(&self, c: usize) -> bool {
        let comp = &self.components[c];
        comp.instance.is_some() || comp.candidacy.is_some()
    }

    /// Starts the component's controller: a fresh instance, its manifest,
    /// and a reflector (and first list) per watch.
    pub(crate) fn start_controller(&mut self, c: usize, started: EntryId) {
        let comp = &mut self.components[c];
        let mut controller = (self.instantiate)(&comp.spec).expect("controller checked in Sim::new");
        let config = ComponentConfig {
            name: comp.spec.name.clone(),
            node: comp.spec.node.clone(),
            params: comp.spec.params.clone(),
        };
        let manifest = match controller.init(&config) {
            Ok(m) => m,
            Err(crash) => return self.controller_crashed(c, crash.reason, vec![started]),
        };
        if manifest.abi_version != recon_abi::ABI_VERSION {
            let reason = format!(
                "{} was built for ABI version {}; the host speaks version {}",
                manifest.name,
                manifest.abi_version,
                recon_abi::ABI_VERSION
            );
            return self.controller_crashed(c, reason, vec![started]);
        }
        for (i, w) in manifest.watches.iter().enumerate() {
            if let Err(e) = crate::cache::Filter::new(&selection(w)) {
                let reason = format!("{}: watch {i} of its manifest is invalid: {e}", manifest.name);
                return self.controller_crashed(c, reason, vec![started]);
            }
        }
        let reflectors = manifest
            .watches
            .iter()
            .map(|w| Reflector {
                selection: selection(w),
                listed: false,
                last_rv: 0,
                relist_unset: false,
                watcher: None,
            })
            .collect::<Vec<_>>();
        let watches = reflectors.len();
        self.components[c].instance = Some(Running {
            controller,
            manifest,
            reflectors,
            inbox: Vec::new(),
            wake_pending: false,
            view: vec![BTreeMap::new(); watches],
        });
        for w in 0..watches {
            self.send_list(c, w);
        }
        // A controller with nothing to watch still gets called once.
        if watches == 0 {
            self.wake_soon(c);
        }
    }

    /// The controller itself failed (a trap, exhausted fuel, bad output, a
    /// manifest the host cannot accept): this component crashes, and comes
    /// back after a back-off that grows with every crash in a row.
    pub(crate) fn controller_crashed(&mut self, c: usize, reason: String, causes: Vec<EntryId>) {
        let comp = &mut self.components[c];
        if self.engine.now.saturating_sub(comp.started_at) >= CRASH_BACKOFF_RESET_MS {
            comp.crashes = 0;
        }
        let delay = (CRASH_BACKOFF_INITIAL_MS << comp.crashes.min(8)).min(CRASH_BACKOFF_MAX_MS);
        comp.crashes += 1;
        comp.instance = None;
        comp.candidacy = None;
        comp.epoch += 1;
        let epoch = comp.epoch;
        let name = comp.spec.name.clone();
        self.close_watches(c);
        let reason = format!("{reason}; restarting in {}ms (back-off)", delay);
        let entry = self.engine.record(
            self.engine.lanes.components[c],
            Event::ComponentCrashed { component: name.clone(), reason },
            causes,
        );
        self.engine.schedule(self.engine.now + delay, Scheduled::Restart { component: c, epoch, cause: entry });
    }

    /// A back-off restart is due (unless something restarted it meanwhile).
    pub(crate) fn on_restart(&mut self, c: usize, epoch: u64, cause: EntryId) {
        if self.components[c].epoch == epoch && !self.process_up(c) {
            self.start_component(c, None, cause);
        }
    }

    /// The component's process dies: memory and watches are gone.
    pub(crate) fn crash_component(&mut self, c: usize, reason: &str, cause: EntryId) {
        if !self.process_up(c) {
            return;
        }
        let comp = &mut self.components[c];
        comp.instance = None;
        comp.candidacy = None;
        comp.epoch += 1;
        let name = comp.spec.name.clone();
        self.close_watches(c);
        self.engine.record(
            self.engine.lanes.components[c],
            Event::ComponentCrashed { component: name.clone(), reason: reason.to_string() },
            vec![cause],
        );
    }

    /// The component's watch connections break; reflectors resume from where they were.
    pub(crate) fn disconnect_component(&mut self, c: usize) {
        let epoch = self.components[c].epoch;
        let Some(instance) = self.components[c].instance.as_mut() else { return };
        for r in &mut instance.reflectors {
            r.watcher = None;
        }
        let n = instance.reflectors.len();
        self.close_watches(c);
        for watch in 0..n {
            let at = self.engine.now + self.engine.network.sample();
            self.engine.schedule(at, Scheduled::Retry { component: c, epoch, watch });
        }
    }

    pub(crate) fn send(&mut self, c: usize, client: Client, request: Request, cause: Option<EntryId>) {
        let server = self.components[c].server;
        let at = self.engine.network.arrival(Endpoint::Component(c), Endpoint::Server(server), self.engine.now, 0);
        self.engine.schedule(at, Scheduled::Request { server, client, request, cause });
    }

    /// Sends the list that (re)fills watch `w`: the first list of an instance
    /// uses the component's list mode; later ones ask for "not older than
    /// what I had", or for the most recent state after a 410.
    fn send_list(&mut self, c: usize, w: usize) {
        let comp = &mut self.components[c];
        let epoch = comp.epoch;
        let Some(instance) = comp.instance.as_mut() else { return };
        let mode = comp.spec.list_mode.unwrap_or(instance.manifest.list_mode);
        let r = &mut instance.reflectors[w];
        r.watcher = None;
        let selection = r.selection.clone();
        let list = |rv: Option<String>| {
            Request::List(ListRequest { selection: selection.clone(), resource_version: rv, ..Default::default() })
        };
        let request = if !r.listed {
            match mode {
                ListMode::Any => list(Some("0".into())),
                ListMode::Quorum => list(None),
                ListMode::Consistent => Request::Watch(WatchRequest {
                    selection: selection.clone(),
                    resource_version: None,
                    send_initial_events: true,
                }),
            }
        } else if r.relist_unset {
            list(None)
        } else {
            list(Some(r.last_rv.to_string()))
        };
        self.send(c, Client::Reflector { component: c, epoch, watch: w }, request, None);
    }

    fn send_watch(&mut self, c: usize, w: usize) {
        let comp = &mut self.components[c];
        let epoch = comp.epoch;
        let Some(instance) = comp.instance.as_mut() else { return };
        let r = &mut instance.reflectors[w];
        let request = Request::Watch(WatchRequest {
            selection: r.selection.clone(),
            resource_version: Some(r.last_rv.to_string()),
            send_initial_events: false,
        });
        self.send(c, Client::Reflector { component: c, epoch, watch: w }, request, None);
    }

    pub(crate) fn on_retry(&mut self, c: usize, epoch: u64, w: usize) {
        if self.components[c].epoch != epoch {
            return;
        }
        let Some(instance) = self.components[c].instance.as_ref() else { return };
        let r = &instance.reflectors[w];
        if r.listed && !r.relist_unset { self.send_watch(c, w) } else { self.send_list(c, w) }
    }

    pub(crate) fn on_reply(&mut self, server: usize, client: Client, reply: Reply) {
        match client {
            Client::Probe(id) => self.probes.entry(id).or_default().push(reply),
            Client::Kubectl => {}
            Client::Writer { component, epoch } => {
                if self.components[component].epoch != epoch {
                    return;
                }
                if let Reply::Written { verb, key, outcome, entry } = reply {
                    self.deliver(component, InputEvent::Result(ActionResult { verb, key, outcome }), Some(entry));
                }
            }
            Client::Reflector { component, epoch, watch } => {
                if self.components[component].epoch != epoch {
                    return;
                }
                self.on_reflector_reply(component, server, watch, reply);
            }
            Client::Elector { component, epoch } => {
                if self.components[component].epoch == epoch {
                    self.on_elector_reply(component, reply);
                }
            }
        }
    }

    fn on_reflector_reply(&mut self, c: usize, server: usize, w: usize, reply: Reply) {
        match reply {
            Reply::Read(served) => {
                self.listed(c, w, served);
                self.send_watch(c, w);
            }
            Reply::WatchOpened { watcher, initial, .. } => {
                if let Some(r) = self.reflector(c, w) {
                    r.watcher = Some((server, watcher));
                }
                if let Some(served) = initial {
                    self.listed(c, w, served);
                }
            }
            Reply::Events { watcher, events } => {
                let current = self.reflector(c, w).and_then(|r| r.watcher);
                if current != Some((server, watcher)) {
                    return; // a watch this reflector has since abandoned
                }
                for (event, cause) in events {
                    self.watch_event(c, server, w, event, cause);
                }
            }
            Reply::Failed(status) => self.reflector_failed(c, w, status),
            Reply::Written { .. } => {}
        }
    }

    fn reflector(&mut self, c: usize, w: usize) -> Option<&mut Reflector> {
        self.components[c].instance.as_mut().map(|i| &mut i.reflectors[w])
    }

    /// A list (or watch-list initial state) arrived: it replaces the view.
    fn listed(&mut self, c: usize, w: usize, served: Served) {
        self.components[c].failures = 0;
        self.observe(c, served.revision, served.entry);
        let Some(instance) = self.components[c].instance.as_mut() else { return };
        let r = &mut instance.reflectors[w];
        r.listed = true;
        r.relist_unset = false;
        r.last_rv = served.revision;
        instance.view[w] = served.objects.iter().map(|o| (o.key(), o.clone())).collect();
        let event =
            InputEvent::Listed { watch: w, resource_version: served.revision.to_string(), objects: served.objects };
        self.deliver(c, event, Some(served.entry));
    }

    fn watch_event(&mut self, c: usize, server: usize, w: usize, event: recon_abi::WatchEvent, cause: EntryId) {
        let revision = event.object.revision().unwrap_or(0);
        let name = self.components[c].spec.name.clone();
        let entry = self.engine.record(
            self.engine.lanes.components[c],
            Event::WatchDelivered {
                component: name.clone(),
                api_server: self.servers[server].config.name.clone(),
                watch: w,
                event_type: event.event_type,
                key: event.object.key(),
                uid: event.object.metadata.uid.clone(),
                revision,
            },
            vec![cause],
        );
        self.observe(c, revision, entry);
        let Some(instance) = self.components[c].instance.as_mut() else { return };
        instance.reflectors[w].last_rv = revision;
        let view = &mut instance.view[w];
        match event.event_type {
            EventType::Added | EventType::Modified => {
                view.insert(event.object.key(), event.object.clone());
            }
            EventType::Deleted => {
                view.remove(&event.object.key());
            }
            EventType::Bookmark => {}
        }
        self.deliver(c, InputEvent::Watch { watch: w, event }, Some(entry));
    }

    fn reflector_failed(&mut self, c: usize, w: usize, status: Status) {
        let Some(r) = self.reflector(c, w) else { return };
        r.watcher = None;
        if status.reason == StatusReason::Gone {
            r.relist_unset = true;
        }
        let comp = &mut self.components[c];
        comp.failures += 1;
        let failures = comp.failures;
        if failures >= FAILOVER_AFTER && comp.servers.len() > 1 {
            return self.fail_over(c);
        }
        let backoff = (BACKOFF_INITIAL_MS << (failures - 1).min(8)).min(BACKOFF_MAX_MS);
        let jitter = comp.rng.range_inclusive(0, backoff / 4);
        let epoch = comp.epoch;
        self.engine.schedule(self.engine.now + backoff + jitter, Scheduled::Retry { component: c, epoch, watch: w });
    }

    /// Switches to the next API server and restarts every reflector there.
    fn fail_over(&mut self, c: usize) {
        let comp = &mut self.components[c];
        let pos = comp.servers.iter().position(|s| *s == comp.server).unwrap_or(0);
        let next = comp.servers[(pos + 1) % comp.servers.len()];
        let from = self.servers[comp.server].config.name.clone();
        comp.server = next;
        comp.failures = 0;
        let name = comp.spec.name.clone();
        let to = self.servers[next].config.name.clone();
        self.engine.record(
            self.engine.lanes.components[c],
            Event::Failover { component: name.clone(), from, to },
            vec![],
        );
        self.close_watches(c);
        let epoch = self.components[c].epoch;
        let n = self.components[c].instance.as_ref().map_or(0, |i| i.reflectors.len());
        for watch in 0..n {
            if let Some(r) = self.reflector(c, watch) {
                r.watcher = None;
            }
            self.engine.schedule(self.engine.now, Scheduled::Retry { component: c, epoch, watch });
        }
    }

    /// Tells the checks what a component has just observed (going
    /// backwards is time travel).
    fn observe(&mut self, c: usize, revision: u64, entry: EntryId) {
        let comp = &self.components[c];
        let api_server = &self.servers[comp.server].config.name;
        let observation = Observation { component: c, name: &comp.spec.name, api_server, revision, entry };
        self.checks.observed(&mut self.engine, &self.nodes, &observation);
    }

    fn deliver(&mut self, c: usize, event: InputEvent, cause: Option<EntryId>) {
        let Some(instance) = self.components[c].instance.as_mut() else { return };
        instance.inbox.push((event, cause));
        self.wake_soon(c);
    }

    fn wake_soon(&mut self, c: usize) {
        let comp = &mut self.components[c];
        let epoch = comp.epoch;
        let Some(instance) = comp.instance.as_mut() else { return };
        if !instance.wake_pending {
            instance.wake_pending = true;
            self.engine.schedule(self.engine.now, Scheduled::Wake { component: c, epoch });
        }
    }

    pub(crate) fn on_timer(&mut self, c: usize, epoch: u64, key: String) {
        if self.components[c].epoch == epoch {
            self.deliver(c, InputEvent::Timer { key }, None);
        }
    }

    /// Calls the controller with everything in its inbox and applies what it returns.
    pub(crate) fn wake(&mut self, c: usize, epoch: u64) {
        let comp = &mut self.components[c];
        if comp.epoch != epoch {
            return;
        }
        let node = comp.spec.node.clone();
        let Some(instance) = comp.instance.as_mut() else { return };
        // The revision of what this instance has been shown (not the most it
        // ever saw: after a stale list the view is behind that).
        let view_revision = instance.reflectors.iter().map(|r| r.last_rv).max().unwrap_or(0);
        instance.wake_pending = false;
        let inbox = std::mem::take(&mut instance.inbox);
        let node_agent = instance.manifest.node_agent;
        let containers = match (&node, node_agent) {
            (Some(n), true) => Some(self.containers_on(n)),
            _ => None,
        };
        let causes: Vec<EntryId> = inbox.iter().filter_map(|(_, e)| *e).collect();
        let inputs: Vec<String> = inbox.iter().map(|(e, _)| describe_input(e)).collect();
        let input = Input { time_ms: self.engine.now, events: inbox.into_iter().map(|(e, _)| e).collect(), containers };
        let instance = self.components[c].instance.as_mut().expect("checked above");
        let output = match instance.controller.handle(&input) {
            Ok(output) => output,
            Err(crash) => return self.controller_crashed(c, crash.reason, causes),
        };
        let name = self.components[c].spec.name.clone();
        let actions: Vec<String> = output.actions.iter().map(describe_action).collect();
        self.engine.listed_items += (inputs.len() + actions.len()) as u64;
        let entry = self.engine.record(
            self.engine.lanes.components[c],
            Event::Reconcile { component: name.clone(), view_revision, inputs, actions },
            causes,
        );
        for action in output.actions {
            self.apply_action(c, action, entry);
        }
    }

    /// Refuses an action the host itself must not carry out (containers
    /// touched by a controller that is not a node agent).
    fn refuse(&mut self, c: usize, action: &Action, reason: String, entry: EntryId) {
        let name = self.components[c].spec.name.clone();
        let status = Status::new(StatusReason::Forbidden, reason);
        self.engine.record(
            self.engine.lanes.components[c],
            Event::ActionRefused { component: name.clone(), action: describe_action(action), status },
            vec![entry],
        );
    }

    /// Why component `c`'s current instance (`epoch`) may not make this
    /// write, if it may not: the API server's RBAC, from the manifest.
    pub(crate) fn forbidden(&self, c: usize, epoch: u64, action: &Action) -> Option<Status> {
        let comp = &self.components[c];
        let manifest = &comp.instance.as_ref().filter(|_| comp.epoch == epoch)?.manifest;
        let (verb, key) = action.write_target()?;
        (!manifest.allows(verb, &key.kind)).then(|| {
            Status::new(
                StatusReason::Forbidden,
                format!("{} may not {verb} {}s: its manifest does not declare it", manifest.name, key.kind),
            )
        })
    }

    fn apply_action(&mut self, c: usize, action: Action, entry: EntryId) {
        let epoch = self.components[c].epoch;
        let Some(instance) = self.components[c].instance.as_ref() else { return };
        let manifest = &instance.manifest;
        match &action {
            Action::Create { .. } | Action::Update { .. } | Action::UpdateStatus { .. } | Action::Delete { .. } => {
                // Permissions are checked by the API server, like RBAC: a
                // refusal costs a round trip, so a controller that answers
                // every refusal with another write still lets time pass.
                self.send(c, Client::Writer { component: c, epoch }, Request::Write(action), Some(entry));
            }
            Action::RequeueAfter { key, after_ms } => {
                // At least 1ms: a controller requeueing itself "now" forever
                // must not stop virtual time.
                let at = self.engine.now + after_ms.max(&1);
                self.engine.schedule(at, Scheduled::Timer { component: c, epoch, key: key.clone() });
            }
            Action::StartContainer { pod } | Action::StopContainer { pod } => {
                let node = self.components[c].spec.node.clone();
                let Some(node) = node.filter(|_| manifest.node_agent) else {
                    let reason = format!("{} is not a node agent: it may not start or stop containers", manifest.name);
                    return self.refuse(c, &action, reason, entry);
                };
                let start = matches!(action, Action::StartContainer { .. });
                if start {
                    let owner = instance.view.iter().find_map(|v| {
                        v.get(&ObjectKey::new("Pod", &pod.namespace, &pod.name))
                            .filter(|o| o.metadata.uid == pod.uid)
                            .cloned()
                    });
                    self.start_container(&node, pod.clone(), owner, entry);
                } else {
                    self.stop_container(&node, pod, entry);
                }
            }
        }
    }
}

/// One line per input, for the trace.
fn describe_input(e: &InputEvent) -> String {
    match e {
        InputEvent::Listed { watch, resource_version, objects } => {
            format!("watch {watch}: listed {} objects at revision {resource_version}", objects.len())
        }
        InputEvent::Watch { watch, event } => format!(
            "watch {watch}: {} {} (uid {}) at revision {}",
            event.event_type,
            event.object.key(),
            short_uid(&event.object.metadata.uid),
            event.object.metadata.resource_version
        ),
        InputEvent::Result(r) => match &r.outcome {
            Outcome::Ok(_) => format!("{} {}: ok", r.verb, r.key),
            Outcome::Err(s) => format!("{} {}: {:?} ({})", r.verb, r.key, s.reason, s.message),
        },
        InputEvent::Timer { key } => format!("timer {key}"),
    }
}

/// One line per action, for the trace.
pub(crate) fn describe_action(a: &Action) -> String {
    let precondition = |o: &Object| {
        if o.metadata.resource_version.is_empty() {
            String::new()
        } else {
            format!(" if at revision {}", o.metadata.resource_version)
        }
    };
    match a {
        Action::Create { object } if object.metadata.name.is_empty() => {
            // Named by the API server from generateName: say the prefix.
            let key = object.key();
            format!("create {} {}/{}*", key.kind, key.namespace, object.metadata.generate_name)
        }
        Action::Create { object } => format!("create {}", object.key()),
        Action::Update { object } => format!("update {}{}", object.key(), precondition(object)),
        Action::UpdateStatus { object } => format!("update status of {}{}", object.key(), precondition(object)),
        Action::Delete { key, uid, grace_period_seconds, .. } => {
            let mut s = format!("delete {key}");
            if let Some(u) = uid {
                s += &format!(" (uid {})", short_uid(u));
            }
            if let Some(g) = grace_period_seconds {
                s += &format!(" grace {g}s");
            }
            s
        }
        Action::RequeueAfter { key, after_ms } => format!("requeue {key} after {after_ms}ms"),
        Action::StartContainer { pod } => {
            format!("start container {}/{} (uid {})", pod.namespace, pod.name, short_uid(&pod.uid))
        }
        Action::StopContainer { pod } => {
            format!("stop container {}/{} (uid {})", pod.namespace, pod.name, short_uid(&pod.uid))
        }
    }
}

/// What a node agent is told runs on its node.
impl Sim {
    fn containers_on(&self, node: &str) -> Vec<Container> {
        self.nodes.iter().find(|n| n.name == node).map(|n| n.containers()).unwrap_or_default()
    }
}
