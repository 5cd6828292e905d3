//! A scenario seeded from audit logs, so that what happened on a real
//! cluster can be replayed in the simulator, explored and shared.
//!
//! The logs are read once, in time order, with their bodies
//! ([`ReadOptions::keep_bodies`]); what each part of the scenario comes from:
//!
//! | scenario | from the logs |
//! |---|---|
//! | `apiServers` | one per API server (file name or `--server`), with the staleness its answers showed (below) |
//! | `nodes` | the node agents (`system:node:NODE`) and the Node objects seen, with their labels and pod capacity |
//! | `objects` | every object that existed before the logs begin, as first seen (the first body that shows it: a list's item, a read, a write's response), without the fields the API server sets |
//! | `components` | every controller that wrote something, and every node agent: a built-in controller where the client is recognisably one, else a component named after it whose plugin must be uploaded; its API server (the first it used, the others as `failover`), its list mode (how it listed from scratch), its Lease (`leaderElection`) |
//! | `script` | the accepted writes of users and tools as `create`, `apply`, `scale`, `cordon`, `uncordon` and `delete` steps through the same API server; a controller's relist from scratch of a resource it had already listed as a `restart` onto the API server it went to |
//!
//! **Who is a controller.** A client authenticated as a node
//! (`system:node:NODE`), a service account (`system:serviceaccount:…`),
//! `system:kube-scheduler` or `system:kube-controller-manager`, unless its
//! user agent is `kubectl`. Everyone else is a user or a tool, whose writes
//! are the script. The API servers' own requests (`system:apiserver`) are
//! left out.
//!
//! **Staleness.** A read that may be served from a cache (`resourceVersion`
//! `"0"` or `N`) answered below a write that had already committed shows
//! its API server behind. If the server had reached etcd in between (an
//! accepted write, or a read that had to be current), its cache lagged:
//! `watchCache.lag` is set to the longest such delay. If not, it was cut
//! off: a partition from just before the first write it missed until it is
//! next seen current (or reaching etcd), or to the end.
//!
//! **Time.** Time 0 is the first event's second (its `stageTimestamp`
//! rounded down to a whole second); the run lasts until the last event's
//! second and five more, for the controllers to act on what the logs show
//! last. Whatever cannot be carried over is said in [`Replay::notes`],
//! each with its file and line.

use std::collections::{BTreeMap, BTreeSet};

use recon_abi::{ListMode, Object, PropagationPolicy};
use recon_scenario::{
    ApiServer, Component, Kinds, Millis, Node, ObjectRef, Scenario, Step, StepAction, Window, to_yaml,
};
use serde_json::{Value, json};

use crate::history::Resource;
use crate::input::{LogFile, MergedLogs, Problems, ReadOptions, Record};
use crate::report::Client;
use crate::time::{self, Micros};
use crate::uri::{ReadMode, RequestUri};

/// Commit times remembered, by revision, to tell when a stale read's
/// state went out of date.
const COMMITS_KEPT: usize = 1 << 16;

/// Controllers the replay recognises by name, and the built-in that does
/// their work: a client whose component name contains the pattern.
const RECOGNISED: &[(&str, &str)] = &[
    ("scheduler", "scheduler"),
    ("replicaset", "replicaset"),
    ("statefulset", "statefulset"),
    ("deployment", "deployment"),
    ("garbage-collector", "garbage-collector"),
];

/// The run goes on this long after the last event's second, for the
/// controllers to act on what the logs show last (a kubelet on its stale
/// list, say).
const MARGIN_MS: u64 = 5_000;

/// A controller first heard from this long after the logs begin is started
/// then (`startAt`); before, it is taken to be running when they begin.
const LATE_START: Micros = 1_000_000;

/// A scenario seeded from audit logs, and what could not be carried over.
#[derive(Clone, Debug)]
pub struct Replay {
    /// The scenario.
    pub scenario: Scenario,
    /// What could not be carried over, and why: one line each, counted per
    /// reason, with the first example's file and line.
    pub notes: Vec<String>,
    /// The components whose controller is no built-in: each must be run
    /// with its plugin (`recon run --plugin COMPONENT=FILE.wasm`).
    pub plugins_needed: Vec<PluginNeeded>,
    /// The problems met reading the logs (lines skipped, files refused).
    pub problems: Problems,
}

/// A component the replay could not match with a built-in controller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginNeeded {
    /// The component (and the controller name it is written with).
    pub component: String,
    /// The client it stands for.
    pub client: Client,
}

/// Why no scenario could be written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplayError {
    /// Not one event could be read: there is nothing to replay. The
    /// problems say why (each file refused, each line skipped).
    NoEvents(Problems),
}

impl std::fmt::Display for ReplayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReplayError::NoEvents(problems) => {
                write!(f, "no audit event could be read, so there is nothing to replay")?;
                for p in &problems.kept {
                    write!(f, "\n{p}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for ReplayError {}

impl Replay {
    /// The scenario as YAML, with a header that says where it came from
    /// and what was left out, and a comment beside every component whose
    /// plugin must be uploaded.
    pub fn to_yaml(&self) -> String {
        let mut out = String::from("# Replayed from audit logs by `recon audit --scenario`.\n");
        if !self.notes.is_empty() {
            out.push_str("# Not carried over:\n");
            for n in &self.notes {
                out.push_str(&format!("#   - {n}\n"));
            }
        }
        for p in &self.plugins_needed {
            out.push_str(&format!(
                "# {}: no built-in controller recognised for {}; run it with: recon run FILE --plugin {}=YOUR.wasm\n",
                p.component, p.client, p.component
            ));
        }
        let mut in_component: Option<&str> = None;
        for line in to_yaml(&self.scenario).lines() {
            out.push_str(line);
            let trimmed = line.trim_start();
            if let Some(name) = trimmed.strip_prefix("- name: ") {
                in_component = self.plugins_needed.iter().find(|p| p.component == name).map(|p| p.component.as_str());
            } else if let (Some(name), Some(_)) = (in_component, trimmed.strip_prefix("controller: ")) {
                out.push_str(&format!("  # upload its plugin: --plugin {name}=YOUR.wasm"));
                in_component = None;
            }
            out.push('\n');
        }
        out
    }
}

/// Reads the logs and writes a scenario that replays them.
pub fn replay(files: &[LogFile], options: &ReadOptions) -> Result<Replay, ReplayError> {
    let options = ReadOptions { keep_bodies: true, ..*options };
    let mut logs = MergedLogs::open(files, &options);
    let mut builder = Builder::new(files);
    for record in logs.by_ref() {
        builder.feed(&record);
    }
    builder.finish(logs.problems)
}

/// What the replay knows of a client that is a controller.
#[derive(Debug)]
struct ComponentSeen {
    name: String,
    client: Client,
    node: Option<String>,
    first: Micros,
    /// Servers in the order it first used them.
    servers: Vec<usize>,
    /// The server it talks to now.
    current: usize,
    /// Resources it has listed from scratch since it (re)started.
    listed: BTreeSet<Resource>,
    /// How it last listed from scratch.
    list_mode: Option<ListMode>,
    lease: Option<(String, String)>,
    wrote: bool,
}

/// An object as the replay follows it.
#[derive(Debug)]
struct ObjectSeen {
    /// Its last body (cleaned), to tell a scale or a cordon from an apply.
    last: Option<Value>,
}

/// Per API server: what its answers showed of its staleness.
#[derive(Debug, Default)]
struct ServerSeen {
    /// The last time it reached etcd (an accepted write, a read that had to be current).
    reached_etcd: Option<Micros>,
    /// A window it is being taken as cut off: (from, last seen stale).
    cut_off: Option<Micros>,
    partitions: Vec<(Micros, Option<Micros>)>,
    lag: Micros,
}

/// A kind's place in the API, as the logs show it.
#[derive(Debug, Clone)]
struct KindSeen {
    api_version: String,
    plural: String,
    namespaced: bool,
    status: bool,
}

struct Builder {
    files: Vec<String>,
    /// The server of each file (several files may be one server's).
    file_server: Vec<usize>,
    servers: Vec<String>,
    server_state: Vec<ServerSeen>,
    origin: Option<Micros>,
    last: Micros,
    components: Vec<ComponentSeen>,
    by_username: BTreeMap<String, usize>,
    objects: BTreeMap<(Resource, String, String), ObjectSeen>,
    initial: Vec<Value>,
    nodes: BTreeMap<String, Node>,
    script: Vec<Step>,
    kinds: BTreeMap<Resource, (String, KindSeen)>,
    commits: BTreeMap<u64, Micros>,
    top: u64,
    notes: BTreeMap<&'static str, (u64, String)>,
}

impl Builder {
    fn new(files: &[LogFile]) -> Builder {
        let mut servers: Vec<String> = Vec::new();
        let file_server = files
            .iter()
            .map(|f| match servers.iter().position(|s| *s == f.server) {
                Some(i) => i,
                None => {
                    servers.push(f.server.clone());
                    servers.len() - 1
                }
            })
            .collect();
        Builder {
            files: files.iter().map(|f| f.path.display().to_string()).collect(),
            file_server,
            server_state: servers.iter().map(|_| ServerSeen::default()).collect(),
            servers,
            origin: None,
            last: 0,
            components: Vec::new(),
            by_username: BTreeMap::new(),
            objects: BTreeMap::new(),
            initial: Vec::new(),
            nodes: BTreeMap::new(),
            script: Vec::new(),
            kinds: BTreeMap::new(),
            commits: BTreeMap::new(),
            top: 0,
            notes: BTreeMap::new(),
        }
    }

    fn note(&mut self, reason: &'static str, r: &Record, what: String) {
        let at = format!("{}:{}: {what}", self.files.get(r.source).map_or("", String::as_str), r.line);
        self.notes.entry(reason).or_insert((0, at)).0 += 1;
    }

    fn at_ms(&self, t: Micros) -> u64 {
        (t - self.origin.unwrap_or(t)).max(0) as u64 / 1000
    }

    fn feed(&mut self, r: &Record) {
        self.origin.get_or_insert(r.at - r.at.rem_euclid(1_000_000));
        self.last = self.last.max(r.at);
        let e = &r.event;
        let Ok(uri) = RequestUri::parse(&e.request_uri) else { return };
        let resource = Resource::new(&uri.group, &uri.resource);
        if resource.has_own_revisions() || e.user.username == "system:apiserver" {
            return;
        }
        let ok = e.code().is_some_and(|c| (200..300).contains(&c));
        let server = self.file_server[r.source];
        let complete = e.stage() == Some(crate::event::Stage::ResponseComplete);
        let started_watch = e.verb == "watch" && e.stage() == Some(crate::event::Stage::ResponseStarted);
        if !(complete || started_watch) {
            return;
        }
        let bodies = r.bodies.as_deref();
        // A subresource's body (a Scale, a Binding) is not the object.
        let response = bodies
            .and_then(|b| b.response_object.as_ref())
            .filter(|_| matches!(uri.subresource.as_str(), "" | "status"));
        self.learn_kind(&resource, &uri, response);
        let component = self.component(r, server);
        match e.verb.as_str() {
            "list" | "get" | "watch" if ok && uri.subresource.is_empty() => {
                self.read(r, &uri, &resource, server, response, component);
            }
            "create" | "update" | "patch" | "delete" if ok => {
                self.write(r, &uri, &resource, server, component);
            }
            "deletecollection" if ok && component.is_none() => {
                self.note("a user's deletecollection names no object", r, format!("deletecollection {resource}"));
            }
            _ => {}
        }
    }

    /// The component a request's client is, if it is a controller (made
    /// the first time it is seen); `None` for users and tools.
    fn component(&mut self, r: &Record, server: usize) -> Option<usize> {
        let e = &r.event;
        let username = e.user.username.as_str();
        let node = username.strip_prefix("system:node:").filter(|n| !n.is_empty());
        let name = if let Some(node) = node {
            format!("kubelet-{node}")
        } else if let Some(sa) = username.strip_prefix("system:serviceaccount:") {
            sa.rsplit(':').next().unwrap_or(sa).to_string()
        } else if let Some(system) =
            username.strip_prefix("system:").filter(|s| matches!(*s, "kube-scheduler" | "kube-controller-manager"))
        {
            system.to_string()
        } else {
            return None;
        };
        if e.user_agent.starts_with("kubectl") && node.is_none() {
            return None;
        }
        if let Some(&c) = self.by_username.get(username) {
            let seen = &mut self.components[c];
            if !seen.servers.contains(&server) {
                seen.servers.push(server);
            }
            return Some(c);
        }
        if let Some(node) = node {
            self.node_named(node);
        }
        self.components.push(ComponentSeen {
            name,
            client: Client { username: username.to_string(), user_agent: e.user_agent.clone() },
            node: node.map(str::to_string),
            first: r.received,
            servers: vec![server],
            current: server,
            listed: BTreeSet::new(),
            list_mode: None,
            lease: None,
            wrote: false,
        });
        self.by_username.insert(username.to_string(), self.components.len() - 1);
        Some(self.components.len() - 1)
    }

    fn node_named(&mut self, name: &str) -> &mut Node {
        self.nodes
            .entry(name.to_string())
            .or_insert_with(|| serde_json::from_value(json!({ "name": name })).expect("a node needs only its name"))
    }

    /// Remembers a resource's kind, API version and scope from a body.
    fn learn_kind(&mut self, resource: &Resource, uri: &RequestUri, body: Option<&Value>) {
        let Some(body) = body else { return };
        let kind = body.get("kind").and_then(Value::as_str).unwrap_or_default();
        let kind = kind.strip_suffix("List").filter(|_| body.get("items").is_some()).unwrap_or(kind);
        if kind.is_empty() || kind == "Status" || kind == "Table" {
            return;
        }
        let api_version = body.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
        let has_namespace = |object: &Value| {
            object.pointer("/metadata/namespace").and_then(Value::as_str).is_some_and(|n| !n.is_empty())
        };
        // A list across namespaces names none in its path: its items do.
        let namespaced = !uri.namespace.is_empty()
            || has_namespace(body)
            || body.get("items").and_then(Value::as_array).is_some_and(|items| items.iter().any(has_namespace));
        let entry = self.kinds.entry(resource.clone()).or_insert_with(|| {
            (
                kind.to_string(),
                KindSeen {
                    api_version: api_version.to_string(),
                    plural: uri.resource.clone(),
                    namespaced: false,
                    status: false,
                },
            )
        });
        // An object's own apiVersion names its group even where the
        // request's path does not (a list's may be the core version).
        let object_version = body.pointer("/items/0/apiVersion").and_then(Value::as_str).unwrap_or(api_version);
        if object_version.contains('/') && !entry.1.api_version.contains('/') {
            entry.1.api_version = object_version.to_string();
        }
        entry.1.namespaced |= namespaced;
        entry.1.status |= uri.subresource == "status";
    }

    // ---- reads ----

    fn read(
        &mut self,
        r: &Record,
        uri: &RequestUri,
        resource: &Resource,
        server: usize,
        response: Option<&Value>,
        component: Option<usize>,
    ) {
        let mode = uri.read_mode(&r.event.verb);
        if let Some(c) = component
            && r.event.verb != "get"
        {
            self.relist(r, resource, server, &mode, c);
        }
        let Some(body) = response else { return };
        let served = body.pointer("/metadata/resourceVersion").and_then(Value::as_str).and_then(|v| v.parse().ok());
        if let Some(items) = body.get("items").and_then(Value::as_array) {
            let (kind, api_version) = self.kind_of(resource);
            for item in items {
                let mut item = item.clone();
                if let Some(o) = item.as_object_mut() {
                    o.entry("kind").or_insert_with(|| Value::from(kind.clone()));
                    o.entry("apiVersion").or_insert_with(|| Value::from(api_version.clone()));
                }
                self.see(resource, &item, false, r);
            }
        } else if r.event.verb == "get" {
            self.see(resource, body, false, r);
        }
        if let Some(served) = served {
            self.staleness(r, server, &mode, served);
        }
    }

    /// A controller's list from scratch of a resource it had listed since
    /// it last started: it restarted (its memory is gone, so it lists again).
    fn relist(&mut self, r: &Record, resource: &Resource, server: usize, mode: &ReadMode, c: usize) {
        let list_mode = match mode {
            ReadMode::Any => ListMode::Any,
            ReadMode::MostRecent => ListMode::Quorum,
            ReadMode::WatchFromMostRecent { .. } | ReadMode::WatchFromAny { .. } if r.event.verb == "watch" => {
                if !crate::uri::RequestUri::parse(&r.event.request_uri).is_ok_and(|u| u.query.send_initial_events) {
                    return;
                }
                ListMode::Consistent
            }
            _ => return,
        };
        let restart = {
            let seen = &mut self.components[c];
            seen.list_mode = Some(list_mode);
            let again = seen.listed.contains(resource);
            if again {
                seen.listed.clear();
            }
            seen.listed.insert(resource.clone());
            again
        };
        let changed = self.components[c].current != server;
        self.components[c].current = server;
        if restart {
            let at = Millis(self.at_ms(r.received).saturating_sub(1));
            let action = StepAction::Restart {
                component: self.components[c].name.clone(),
                api_server: changed.then(|| self.servers[server].clone()),
            };
            self.script.push(Step { at, action });
        } else if changed {
            self.note(
                "a controller moved to another API server without relisting (taken as a failover)",
                r,
                format!("{} on {}", self.components[c].name, self.servers[server]),
            );
        }
    }

    /// Judges what a read says of its API server's staleness.
    fn staleness(&mut self, r: &Record, server: usize, mode: &ReadMode, served: u64) {
        let missed_since = self.commits.range(served + 1..).next().map(|(_, t)| *t).filter(|t| *t < r.received);
        let state = &mut self.server_state[server];
        if mode.must_be_current() {
            Self::reached_etcd(state, r.at);
            return;
        }
        if !mode.may_be_stale() {
            return;
        }
        match missed_since {
            Some(from) if state.reached_etcd.is_some_and(|t| t >= from) => {
                state.lag = state.lag.max(r.received - from);
            }
            Some(from) => {
                state.cut_off.get_or_insert(from);
            }
            None if served >= self.top => Self::reached_etcd(state, r.at),
            None => {}
        }
    }

    /// The server reached etcd at `t`: a window it was cut off ends there.
    fn reached_etcd(state: &mut ServerSeen, t: Micros) {
        state.reached_etcd = Some(t);
        if let Some(from) = state.cut_off.take() {
            state.partitions.push((from, Some(t)));
        }
    }

    // ---- writes ----

    fn write(&mut self, r: &Record, uri: &RequestUri, resource: &Resource, server: usize, component: Option<usize>) {
        let e = &r.event;
        let whole = r.bodies.as_deref().and_then(|b| b.response_object.as_ref());
        let request = r.bodies.as_deref().and_then(|b| b.request_object.as_ref());
        let committed = whole
            .and_then(|b| b.pointer("/metadata/resourceVersion"))
            .and_then(Value::as_str)
            .and_then(|v| v.parse::<u64>().ok());
        // A subresource's body (a Scale, a Binding) is not the object.
        let response = whole.filter(|_| matches!(uri.subresource.as_str(), "" | "status"));
        if let Some(rev) = committed {
            self.commits.insert(rev, r.at);
            if self.commits.len() > COMMITS_KEPT {
                self.commits.pop_first();
            }
            self.top = self.top.max(rev);
        }
        Self::reached_etcd(&mut self.server_state[server], r.at);
        let name = if uri.name.is_empty() {
            response.and_then(|b| b.pointer("/metadata/name")).and_then(Value::as_str).unwrap_or_default().to_string()
        } else {
            uri.name.clone()
        };
        let key = (resource.clone(), uri.namespace.clone(), name.clone());
        let created = e.verb == "create" && uri.subresource.is_empty();
        // What the object was before this write, for a user's write to be
        // told apart (a scale, a cordon), and whether it existed before the logs.
        let before = self.objects.get(&key).and_then(|o| o.last.clone());
        let is_response_object = response.is_some_and(|b| b.get("kind").and_then(Value::as_str) != Some("Status"));
        match response.filter(|_| is_response_object) {
            Some(body) => self.see(resource, body, created, r),
            None if !self.objects.contains_key(&key) && !created => {
                self.note(
                    "an object first seen in a write without its body",
                    r,
                    format!("{} {resource} {name}", e.verb),
                );
            }
            None => {}
        }
        if let Some(c) = component {
            let seen = &mut self.components[c];
            if !resource.is_bookkeeping() {
                seen.wrote = true;
            }
            if resource == &Resource::new("coordination.k8s.io", "leases")
                && seen.node.is_none()
                && seen.lease.is_none()
                && uri.namespace != "kube-node-lease"
            {
                seen.lease = Some((uri.namespace.clone(), name));
                seen.wrote = true;
            }
            return;
        }
        self.user_write(r, uri, resource, server, &name, before, request, response);
    }

    /// A user's or tool's write, as a script step.
    #[allow(clippy::too_many_arguments)] // one write's facts, as they are
    fn user_write(
        &mut self,
        r: &Record,
        uri: &RequestUri,
        resource: &Resource,
        server: usize,
        name: &str,
        before: Option<Value>,
        request: Option<&Value>,
        response: Option<&Value>,
    ) {
        let e = &r.event;
        let at = Millis(self.at_ms(r.received));
        let via = Some(self.servers[server].clone());
        let what = format!("{} {resource} {name} by {}", e.verb, e.user.username);
        // A custom resource's kind is said only by its bodies.
        let Some((kind, _)) = self.known_kind(resource) else {
            return self.note("a user's write to a custom resource no logged body names the kind of", r, what);
        };
        let target = ObjectRef { kind: kind.clone(), namespace: uri.namespace.clone(), name: name.to_string() };
        let action = match (e.verb.as_str(), uri.subresource.as_str()) {
            ("delete", "") => {
                let cascade = request
                    .and_then(|b| b.get("propagationPolicy"))
                    .and_then(|p| serde_json::from_value::<PropagationPolicy>(p.clone()).ok());
                StepAction::Delete { target, via, cascade }
            }
            ("create", "") => match request.or(response).and_then(|b| manifest(b, false)) {
                Some(object) => StepAction::Create { object, via },
                None => return self.note("a user's create without its body (logged below Request)", r, what),
            },
            ("update" | "patch", "scale") => {
                match request.and_then(|b| b.pointer("/spec/replicas")).and_then(Value::as_u64) {
                    Some(replicas) => StepAction::Scale { target, replicas: replicas as u32, via },
                    None => return self.note("a user's scale without its body (logged below Request)", r, what),
                }
            }
            ("update" | "patch", "") => {
                let Some(after) = response.and_then(|b| clean(b, false)) else {
                    return self.note(
                        "a user's write without the object it left (logged below RequestResponse)",
                        r,
                        what,
                    );
                };
                let before = before.unwrap_or(Value::Null);
                if kind == "Node" {
                    let cordoned = |v: &Value| v.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true);
                    let node = name.to_string();
                    match (cordoned(&before), cordoned(&after)) {
                        (false, true) => StepAction::Cordon { node },
                        (true, false) => StepAction::Uncordon { node },
                        _ => return self.note("a user's change to a Node other than cordoning", r, what),
                    }
                } else if let Some(replicas) = only_replicas_changed(&before, &after) {
                    StepAction::Scale { target, replicas, via }
                } else {
                    match serde_json::from_value::<Object>(after) {
                        Ok(object) => StepAction::Apply { object, via },
                        Err(err) => {
                            return self.note(
                                "a user's write whose object is not a manifest",
                                r,
                                format!("{what}: {err}"),
                            );
                        }
                    }
                }
            }
            _ => return self.note("a user's write to a subresource other than scale", r, what),
        };
        self.script.push(Step { at, action });
    }

    // ---- objects ----

    /// An object's body seen: if it is the first sight and not its
    /// creation, the object existed before the logs and starts the scenario.
    fn see(&mut self, resource: &Resource, body: &Value, created: bool, r: &Record) {
        let Some(cleaned) = clean(body, true) else { return };
        let meta =
            |f: &str| body.pointer(&format!("/metadata/{f}")).and_then(Value::as_str).unwrap_or_default().to_string();
        let key = (resource.clone(), meta("namespace"), meta("name"));
        let first = !self.objects.contains_key(&key);
        self.objects.insert(key.clone(), ObjectSeen { last: Some(cleaned.clone()) });
        if !first || created {
            return;
        }
        if cleaned.get("kind").and_then(Value::as_str) == Some("Node") {
            let node = self.node_named(&key.2);
            if let Some(labels) = body.pointer("/metadata/labels").and_then(|l| serde_json::from_value(l.clone()).ok())
            {
                node.labels = labels;
            }
            let pods = body.pointer("/status/capacity/pods");
            if let Some(pods) = pods.and_then(|p| p.as_u64().or_else(|| p.as_str().and_then(|s| s.parse().ok()))) {
                node.pods = pods as u32;
            }
            return;
        }
        if body.pointer("/metadata/ownerReferences").is_some() {
            self.note(
                "owner references (the replay gives objects new uids, so they are left out)",
                r,
                format!("{} {}", key.0, key.2),
            );
        }
        if body.pointer("/metadata/deletionTimestamp").is_some() {
            self.note(
                "an object being deleted when first seen (it starts the replay alive)",
                r,
                format!("{} {}", key.0, key.2),
            );
        }
        self.initial.push(cleaned);
    }

    /// The kind and API version of `resource`: as its bodies said, or,
    /// where the logs carry none (a `Metadata` level), the built-in kind
    /// served at that group and resource; `None` for a custom resource no
    /// body named.
    fn known_kind(&self, resource: &Resource) -> Option<(String, String)> {
        if let Some((kind, seen)) = self.kinds.get(resource) {
            return Some((kind.clone(), seen.api_version.clone()));
        }
        let builtin = Kinds::builtin();
        let kind = builtin.by_resource(&resource.group, &resource.resource)?;
        Some((kind.kind.clone(), kind.api_version()))
    }

    /// [`Self::known_kind`], or the resource's own name where no kind is known.
    fn kind_of(&self, resource: &Resource) -> (String, String) {
        self.known_kind(resource).unwrap_or_else(|| (resource.resource.clone(), resource.group.clone()))
    }

    // ---- the scenario ----

    fn finish(mut self, problems: Problems) -> Result<Replay, ReplayError> {
        let Some(origin) = self.origin else { return Err(ReplayError::NoEvents(problems)) };
        let end_ms = self.at_ms(self.last);
        let duration = Millis((end_ms / 1000 + 1) * 1000 + MARGIN_MS);
        let mut api_servers = Vec::new();
        for (i, name) in self.servers.iter().enumerate() {
            let mut server: ApiServer =
                serde_json::from_value(json!({ "name": name })).expect("a server needs only its name");
            let state = &mut self.server_state[i];
            if let Some(from) = state.cut_off.take() {
                state.partitions.push((from, None));
            }
            let ms = |t: Micros| (t - origin).max(0) as u64 / 1000;
            for (from, until) in &state.partitions {
                // From just before the first write it missed, so that its
                // cache stops where the logs show it stopped.
                let from = ms(*from).saturating_sub(1);
                let until = until.map(|u| Millis(ms(u).max(from + 1)));
                server.partitions.push(Window { from: Millis(from), until });
            }
            if state.lag > 0 {
                server.watch_cache.lag = Millis((state.lag as u64).div_ceil(1000) + 1);
            }
            api_servers.push(server);
        }
        let mut plugins_needed = Vec::new();
        let mut components = Vec::new();
        for seen in self.components.iter().filter(|c| c.wrote || c.node.is_some()) {
            let controller = match &seen.node {
                Some(_) => "kubelet".to_string(),
                None => match RECOGNISED.iter().find(|(pattern, _)| seen.name.contains(pattern)) {
                    Some((_, builtin)) => builtin.to_string(),
                    None => {
                        plugins_needed.push(PluginNeeded { component: seen.name.clone(), client: seen.client.clone() });
                        seen.name.clone()
                    }
                },
            };
            let mut spec = json!({
                "name": seen.name,
                "controller": controller,
                "apiServer": self.servers[seen.servers[0]],
            });
            if let Some(node) = &seen.node {
                spec["node"] = json!(node);
            }
            if let Some((namespace, lease)) = &seen.lease {
                spec["leaderElection"] = json!({ "lease": lease, "namespace": namespace });
            }
            let mut component: Component = serde_json::from_value(spec).expect("a component from its required fields");
            component.failover = seen.servers[1..].iter().map(|s| self.servers[*s].clone()).collect();
            component.list_mode = seen.list_mode.filter(|m| *m != ListMode::Any);
            if seen.first - origin > LATE_START {
                component.start_at = Millis(self.at_ms(seen.first).saturating_sub(1));
            }
            components.push(component);
        }
        let mut objects: Vec<Object> = Vec::new();
        let mut notes = std::mem::take(&mut self.notes);
        for body in std::mem::take(&mut self.initial) {
            match serde_json::from_value::<Object>(body) {
                Ok(o) => objects.push(o),
                Err(err) => {
                    notes.entry("an object that is not a manifest").or_insert((0, err.to_string())).0 += 1;
                }
            }
        }
        self.script.sort_by_key(|s| s.at);
        let crds = self.custom_kinds(&objects);
        objects.splice(0..0, crds);
        let names: Vec<&str> = self.servers.iter().map(String::as_str).collect();
        let description = format!(
            "Replayed from the audit logs of {} ({} to {}; time 0 here is {}). The objects are as the logs first show them, the script is what users and tools wrote, and the API servers' staleness is what their answers showed.",
            names.join(", "),
            time::format(origin),
            time::format(self.last),
            time::format(origin),
        );
        let scenario: Scenario = serde_json::from_value(json!({
            "name": "replayed-audit",
            "apiServers": [],
        }))
        .expect("a scenario needs only a name and its servers");
        let scenario = Scenario {
            description,
            duration,
            api_servers,
            nodes: self.nodes.into_values().collect(),
            components,
            objects,
            script: self.script,
            ..scenario
        };
        let notes =
            notes
                .into_iter()
                .map(|(reason, (count, first))| {
                    if count == 1 {
                        format!("{reason}: {first}")
                    } else {
                        format!("{reason} ({count}×), first {first}")
                    }
                })
                .collect();
        Ok(Replay { scenario, notes, plugins_needed, problems })
    }

    /// CustomResourceDefinitions for the kinds the objects and the script
    /// use that are neither built in nor declared among the objects: the
    /// logs show their group, version, plural, scope and status subresource.
    fn custom_kinds(&self, objects: &[Object]) -> Vec<Object> {
        let declared = Kinds::declared_by(objects);
        let used: BTreeSet<&str> = objects
            .iter()
            .map(|o| o.kind.as_str())
            .chain(self.script.iter().filter_map(|s| match &s.action {
                StepAction::Create { object, .. } | StepAction::Apply { object, .. } => Some(object.kind.as_str()),
                _ => None,
            }))
            .collect();
        let mut crds = Vec::new();
        for (kind, seen) in self.kinds.values() {
            // The group is the body's: a custom resource's apiVersion is `group/version`.
            let Some((group, version)) = seen.api_version.split_once('/') else { continue };
            if !used.contains(kind.as_str())
                || declared.get(kind).is_some()
                || crds.iter().any(|c: &Object| c.metadata.name == format!("{}.{group}", seen.plural))
            {
                continue;
            }
            let mut v = json!({ "name": version, "served": true, "storage": true });
            if seen.status {
                v["subresources"] = json!({ "status": {} });
            }
            let crd = json!({
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": recon_scenario::CRD_KIND,
                "metadata": { "name": format!("{}.{group}", seen.plural) },
                "spec": {
                    "group": group,
                    "names": { "kind": kind, "plural": seen.plural },
                    "scope": if seen.namespaced { "Namespaced" } else { "Cluster" },
                    "versions": [v],
                },
            });
            if let Ok(o) = serde_json::from_value(crd) {
                crds.push(o);
            }
        }
        crds
    }
}

/// An object as a scenario's manifest: only the metadata a user writes
/// (name, namespace, labels, annotations, finalizers), and its status only
/// when `keep_status` (an initial object keeps the state it was seen in; a
/// request's status is the API server's to set).
fn clean(body: &Value, keep_status: bool) -> Option<Value> {
    let o = body.as_object()?;
    o.get("kind").and_then(Value::as_str).filter(|k| !k.is_empty())?;
    let mut out = serde_json::Map::new();
    for (k, v) in o {
        match k.as_str() {
            "metadata" => {
                let mut meta = serde_json::Map::new();
                for field in ["name", "generateName", "namespace", "labels", "annotations", "finalizers"] {
                    if let Some(v) = v.get(field).filter(|v| !v.is_null()) {
                        meta.insert(field.to_string(), v.clone());
                    }
                }
                out.insert(k.clone(), Value::Object(meta));
            }
            "status" if !keep_status => {}
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Some(Value::Object(out))
}

/// A body as a manifest for a script step.
fn manifest(body: &Value, keep_status: bool) -> Option<Object> {
    serde_json::from_value(clean(body, keep_status)?).ok()
}

/// The new `spec.replicas` when that is all a write changed (`kubectl scale`).
fn only_replicas_changed(before: &Value, after: &Value) -> Option<u32> {
    let replicas = after.pointer("/spec/replicas").and_then(Value::as_u64)?;
    if before.pointer("/spec/replicas").and_then(Value::as_u64) == Some(replicas) {
        return None;
    }
    let without = |v: &Value| {
        let mut v = v.clone();
        if let Some(spec) = v.get_mut("spec").and_then(Value::as_object_mut) {
            spec.remove("replicas");
        }
        if let Some(o) = v.as_object_mut() {
            o.remove("status");
        }
        v
    };
    (before.is_object() && without(before) == without(after)).then_some(replicas as u32)
}
