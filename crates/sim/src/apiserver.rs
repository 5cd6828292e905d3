//! API servers: serving reads from the watch cache or the store according
//! to the resourceVersion semantics, waiting for the cache when a read must
//! be fresh, forwarding writes to the store, feeding the cache from the
//! store's event stream (with lag, and not at all while partitioned), and
//! streaming watch events.

use std::collections::BTreeMap;

use recon_abi::{Action, EventType, Object, ObjectKey, ObjectMeta, Outcome, Status, StatusReason, Verb, WatchEvent};
use recon_store::StoreError;
use serde_json::Value;

use crate::api::{ReadPlan, Request, WatchStart, continue_token, plan_get, plan_list, plan_watch};
use crate::cache::{Filter, WatchCache};
use crate::message::Scheduled;
use crate::message::{Client, ReadTarget, Reply, Served, StoreOp, StoreOpKind, client_component};
use crate::network::Endpoint;
use crate::rng::Rng;
use crate::world::Sim;
use recon_trace::{EntryId, Event, ObjectVersion, ServedFrom};

/// An open watch.
#[derive(Clone, Debug)]
pub(crate) struct Watcher {
    client: Client,
    filter: Filter,
    /// Events up to this revision have been sent.
    sent: u64,
}

/// A read waiting for the cache to reach a revision.
#[derive(Clone, Debug)]
pub(crate) struct Wait {
    client: Client,
    target: ReadTarget,
    min_revision: u64,
    /// KEP-2340 reads fall back to the store; NotOlderThan reads time out.
    fallback_to_store: bool,
}

/// One API server's state.
pub(crate) struct ServerState {
    pub config: recon_scenario::ApiServer,
    pub cache: WatchCache,
    watchers: BTreeMap<u64, Watcher>,
    waits: BTreeMap<u64, Wait>,
    next_id: u64,
    /// For uids and generated names of objects created through this server.
    rng: Rng,
}

impl ServerState {
    pub fn new(config: recon_scenario::ApiServer, rng: Rng) -> ServerState {
        ServerState {
            config,
            cache: WatchCache::default(),
            watchers: BTreeMap::new(),
            waits: BTreeMap::new(),
            next_id: 0,
            rng,
        }
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }
}

/// Fills in what the API server sets on create: uid, name from
/// generateName, generation, no resourceVersion, no deletion state.
pub(crate) fn prepare_create(mut object: Object, rng: &mut Rng) -> Object {
    let m = &mut object.metadata;
    if m.name.is_empty() && !m.generate_name.is_empty() {
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        let suffix: String =
            (0..5).map(|_| ALPHABET[rng.range_inclusive(0, ALPHABET.len() as u64 - 1) as usize] as char).collect();
        m.name = format!("{}{suffix}", m.generate_name);
    }
    if m.namespace.is_empty() && !recon_abi::is_cluster_scoped(&object.kind) {
        m.namespace = "default".into();
    }
    let (a, b, c, d) = (rng.next_u64(), rng.next_u64(), rng.next_u64(), rng.next_u64());
    m.uid = format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a as u32,
        b as u16,
        (c as u16) & 0x0fff,
        ((d >> 48) as u16 & 0x3fff) | 0x8000,
        d & 0xffff_ffff_ffff
    );
    m.resource_version.clear();
    m.generation = 1;
    m.deletion_timestamp = None;
    m.deletion_grace_period_seconds = None;
    object
}

/// `kubectl apply` as an action: an update without precondition that the
/// API server turns into a create when the object does not exist.
pub(crate) fn apply_action(object: Object) -> Action {
    let mut object = object;
    object.metadata.annotations.insert(APPLY_MARK.into(), "true".into());
    Action::Update { object }
}

/// `kubectl scale` / `cordon` as an action: set one field of `spec`.
pub(crate) fn patch_action(key: ObjectKey, field: &str, value: Value) -> Action {
    let mut object = Object { kind: key.kind.clone(), ..Default::default() };
    object.metadata.name = key.name;
    object.metadata.namespace = key.namespace;
    object.metadata.annotations.insert(PATCH_MARK.into(), field.into());
    object.spec = value;
    Action::Update { object }
}

const APPLY_MARK: &str = "recon.internal/apply";
const PATCH_MARK: &str = "recon.internal/patch";

fn status_of(e: StoreError) -> Status {
    match e {
        StoreError::Conflict { key, expected, actual } => Status::new(
            StatusReason::Conflict,
            format!(
                "the object {key} has been modified (revision {actual}, expected {expected}); please apply your changes to the latest version and try again"
            ),
        ),
        StoreError::NotFound { key } => Status::new(StatusReason::NotFound, format!("{key} not found")),
        StoreError::AlreadyExists { key } => Status::new(StatusReason::AlreadyExists, format!("{key} already exists")),
        StoreError::Compacted { requested, compacted } => Status::new(
            StatusReason::Gone,
            format!("too old resource version: {requested} (compacted up to {compacted})"),
        ),
        StoreError::FutureRevision { requested, current } => {
            Status::new(StatusReason::Timeout, format!("Too large resource version: {requested}, current: {current}"))
        }
    }
}

fn object_versions(objects: &[Object]) -> Vec<ObjectVersion> {
    objects
        .iter()
        .map(|o| ObjectVersion { key: o.key(), uid: o.metadata.uid.clone(), revision: o.revision().unwrap_or(0) })
        .collect()
}

impl Sim {
    /// Whether API server `s` can reach the store at time `t`.
    pub(crate) fn reachable(&self, s: usize, t: u64) -> bool {
        !self.servers[s].config.partitions.iter().any(|w| w.contains(t))
    }

    fn unreachable_status(&self, s: usize) -> Status {
        let cfg = &self.servers[s].config;
        Status::new(
            StatusReason::ServiceUnavailable,
            format!("{} cannot reach the store (partitioned); gave up after {}", cfg.name, cfg.request_timeout),
        )
    }

    pub(crate) fn reply(&mut self, server: usize, client: Client, reply: Reply, extra_delay: u64) {
        let sent = self.engine.now + extra_delay;
        let at = self.engine.network.arrival(Endpoint::Server(server), client.endpoint(), sent, 0);
        self.engine.schedule(at, Scheduled::Reply { server, client, reply });
    }

    fn fail(&mut self, server: usize, client: Client, status: Status, request: &str, delay: u64) {
        if let Some(c) = client_component(&client) {
            let component = self.components[c].spec.name.clone();
            let api_server = self.servers[server].config.name.clone();
            self.engine.record(
                self.engine.lanes.components[c],
                Event::RequestFailed { component, api_server, request: request.to_string(), status: status.clone() },
                vec![],
            );
        }
        self.reply(server, client, Reply::Failed(status), delay);
    }

    /// Sends work to the store: it happens one network hop later, or the
    /// request fails after the timeout when the server is partitioned.
    fn send_to_store(
        &mut self,
        server: usize,
        client: Client,
        kind: StoreOpKind,
        cause: Option<EntryId>,
        request: &str,
    ) {
        if !self.reachable(server, self.engine.now) {
            // The request waits for a store that never answers; it fails when
            // the API server gives up, which is when the trace should show it.
            let at = self.engine.now + self.servers[server].config.request_timeout.0;
            let request = request.to_string();
            self.engine.schedule(at, Scheduled::StoreTimeout(StoreOp { server, client, kind, cause }, request));
            return;
        }
        // In order on the server's link to the store, so one client's writes
        // commit (and their results return) in the order it sent them.
        let at = self.engine.network.arrival(Endpoint::Server(server), Endpoint::Store, self.engine.now, 0);
        self.engine.schedule(at, Scheduled::StoreOp(StoreOp { server, client, kind, cause }));
    }

    pub(crate) fn on_request(&mut self, server: usize, client: Client, request: Request, cause: Option<EntryId>) {
        let text = request.to_string();
        let cache_enabled = self.servers[server].config.watch_cache.enabled;
        let consistent = self.servers[server].config.consistent_reads_from_cache;
        let (target, plan) = match request {
            Request::Write(action) => {
                if let Some(status) = self.too_large(&action) {
                    let (verb, key) = action.write_target().expect("writes have targets");
                    return self.write_failed(server, client, verb, key, status, cause, 0);
                }
                if let Client::Writer { component, epoch } = client
                    && let Some(status) = self.forbidden(component, epoch, &action)
                {
                    let (verb, key) = action.write_target().expect("writes have targets");
                    return self.write_failed(server, client, verb, key, status, cause, 0);
                }
                return self.send_to_store(server, client, StoreOpKind::Write(action), cause, &text);
            }
            Request::List(r) => {
                let filter = match Filter::new(&r.selection) {
                    Ok(f) => f,
                    Err(e) => return self.fail(server, client, Status::new(StatusReason::BadRequest, e), &text, 0),
                };
                match plan_list(&r) {
                    Ok(plan) => (ReadTarget::List { filter, limit: r.limit, request: text.clone() }, plan),
                    Err(status) => return self.fail(server, client, status, &text, 0),
                }
            }
            Request::Get(r) => match plan_get(&r) {
                Ok(plan) => (ReadTarget::Get { key: recon_store::key_for(&r.key), request: text.clone() }, plan),
                Err(status) => return self.fail(server, client, status, &text, 0),
            },
            Request::Watch(r) => {
                let filter = match Filter::new(&r.selection) {
                    Ok(f) => f,
                    Err(e) => return self.fail(server, client, Status::new(StatusReason::BadRequest, e), &text, 0),
                };
                match plan_watch(&r) {
                    Ok(WatchStart::After(rv)) => {
                        return self.open_watch(server, client, filter, rv, None, false, &text, 0);
                    }
                    Ok(WatchStart::InitialState { plan, bookmark }) => {
                        (ReadTarget::Watch { filter, bookmark, request: text.clone() }, plan)
                    }
                    Err(status) => return self.fail(server, client, status, &text, 0),
                }
            }
        };
        let store_read =
            |at, after_key, min_revision| StoreOpKind::Read { target: target.clone(), at, after_key, min_revision };
        match plan {
            ReadPlan::MostRecent if cache_enabled && consistent => self.send_to_store(
                server,
                client,
                StoreOpKind::CurrentRevision { target: target.clone() },
                cause,
                &text,
            ),
            ReadPlan::MostRecent => self.send_to_store(server, client, store_read(None, None, None), cause, &text),
            ReadPlan::Any if cache_enabled => self.serve_from_cache(server, client, &target),
            ReadPlan::Any => self.send_to_store(server, client, store_read(None, None, None), cause, &text),
            ReadPlan::NotOlderThan(rv) if cache_enabled => {
                if self.servers[server].cache.revision >= rv {
                    self.serve_from_cache(server, client, &target)
                } else {
                    self.wait_for_cache(server, client, target.clone(), rv, false)
                }
            }
            ReadPlan::NotOlderThan(rv) => {
                self.send_to_store(server, client, store_read(None, None, Some(rv)), cause, &text)
            }
            ReadPlan::Exact(rv) => self.send_to_store(server, client, store_read(Some(rv), None, None), cause, &text),
            ReadPlan::Continue { revision, after_key } => {
                self.send_to_store(server, client, store_read(Some(revision), Some(after_key), None), cause, &text)
            }
        }
    }

    fn wait_for_cache(
        &mut self,
        server: usize,
        client: Client,
        target: ReadTarget,
        min_revision: u64,
        fallback_to_store: bool,
    ) {
        let s = &mut self.servers[server];
        let id = s.id();
        let deadline = self.engine.now + s.config.request_timeout.0;
        s.waits.insert(id, Wait { client, target, min_revision, fallback_to_store });
        self.engine.schedule(deadline, Scheduled::WaitDeadline { server, wait: id });
    }

    pub(crate) fn on_wait_deadline(&mut self, server: usize, wait: u64) {
        let Some(w) = self.servers[server].waits.remove(&wait) else { return };
        if w.fallback_to_store {
            // KEP-2340: a cache that does not catch up in time is bypassed.
            let kind = StoreOpKind::Read { target: w.target.clone(), at: None, after_key: None, min_revision: None };
            self.send_to_store(server, w.client, kind, None, w.target.request());
        } else {
            let cache = self.servers[server].cache.revision;
            let status = Status::new(
                StatusReason::Timeout,
                format!("Too large resource version: {}, current: {cache}", w.min_revision),
            );
            self.fail(server, w.client, status, w.target.request(), 0);
        }
    }

    /// Serves every pending read whose revision the cache has reached.
    fn release_waits(&mut self, server: usize) {
        let cache = self.servers[server].cache.revision;
        let ready: Vec<u64> =
            self.servers[server].waits.iter().filter(|(_, w)| w.min_revision <= cache).map(|(id, _)| *id).collect();
        for id in ready {
            let w = self.servers[server].waits.remove(&id).expect("listed above");
            self.serve_from_cache(server, w.client, &w.target);
        }
    }

    /// Records a served read in the trace.
    fn record_read(
        &mut self,
        server: usize,
        client: &Client,
        target: &ReadTarget,
        objects: &[Object],
        revision: u64,
        from: ServedFrom,
    ) -> EntryId {
        let api_server = self.servers[server].config.name.clone();
        let store_revision = self.engine.store.revision();
        // How long the state served had been out of date: since the first
        // store write it does not contain.
        let stale_ms = if revision < store_revision {
            self.engine.store.event(revision + 1).map_or(0, |e| self.engine.now.saturating_sub(e.time_ms))
        } else {
            0
        };
        let cause = match from {
            ServedFrom::Cache => self.servers[server].cache.revision_entry,
            ServedFrom::Store => self.engine.store_entries.range(..=revision).next_back().map(|(_, e)| *e),
        };
        // kubectl's reads are drawn on the API server that answered them.
        let (lane, component) = match client_component(client) {
            Some(c) => (self.engine.lanes.components[c], self.components[c].spec.name.clone()),
            None => (self.engine.lanes.servers[server], "kubectl".to_string()),
        };
        let partitioned = !self.reachable(server, self.engine.now);
        self.engine.record(
            lane,
            Event::ListServed {
                component,
                api_server,
                request: target.request().to_string(),
                purpose: client.read_purpose(),
                served_from: from,
                revision,
                store_revision,
                stale_ms,
                partitioned,
                objects: object_versions(objects),
            },
            cause.into_iter().collect(),
        )
    }

    fn serve_from_cache(&mut self, server: usize, client: Client, target: &ReadTarget) {
        let cache = &self.servers[server].cache;
        let revision = cache.revision;
        let objects = match target {
            ReadTarget::List { filter, .. } | ReadTarget::Watch { filter, .. } => cache.list(filter),
            ReadTarget::Get { key, .. } => cache.get(key).cloned().into_iter().collect(),
        };
        self.finish_read(server, client, target, objects, revision, ServedFrom::Cache, None, 0);
    }

    /// Replies to a served read (after `delay`, the way back from the store),
    /// or opens the watch it was the initial state of.
    #[allow(clippy::too_many_arguments)] // reason: a read result carries everything its trace entry shows
    fn finish_read(
        &mut self,
        server: usize,
        client: Client,
        target: &ReadTarget,
        objects: Vec<Object>,
        revision: u64,
        from: ServedFrom,
        continue_token: Option<String>,
        delay: u64,
    ) {
        if let ReadTarget::Get { request, .. } = target
            && objects.is_empty()
        {
            return self.fail(
                server,
                client,
                Status::new(StatusReason::NotFound, format!("not found ({request})")),
                request,
                delay,
            );
        }
        let entry = self.record_read(server, &client, target, &objects, revision, from);
        let served = Served { objects, revision, from, continue_token, entry };
        match target {
            ReadTarget::Watch { filter, bookmark, request } => {
                let filter = filter.clone();
                let request = request.clone();
                self.open_watch(server, client, filter, revision, Some(served), *bookmark, &request, delay)
            }
            _ => self.reply(server, client, Reply::Read(served), delay),
        }
    }

    /// Registers a watcher that has been sent everything up to `after`, and
    /// sends it the events after that which the cache (or store) still has.
    #[allow(clippy::too_many_arguments)] // reason: one call site per way a watch can open
    fn open_watch(
        &mut self,
        server: usize,
        client: Client,
        filter: Filter,
        after: u64,
        initial: Option<Served>,
        bookmark: bool,
        request: &str,
        delay: u64,
    ) {
        let cache = &self.servers[server].cache;
        let backlog: Option<Vec<(WatchEvent, EntryId)>> = cache
            .events_after(after)
            .map(|events| events.filter_map(|e| filter.view(e).map(|w| (w, e.entry))).collect());
        let Some(backlog) = backlog else {
            let status = Status::new(
                StatusReason::Gone,
                format!("too old resource version: {after} (oldest available {})", cache.oldest_resumable()),
            );
            return self.fail(server, client, status, request, delay);
        };
        let s = &mut self.servers[server];
        let id = s.id();
        let sent = after.max(s.cache.revision);
        s.watchers.insert(id, Watcher { client: client.clone(), filter, sent });
        self.reply(server, client.clone(), Reply::WatchOpened { watcher: id, initial, bookmark }, delay);
        if !backlog.is_empty() {
            self.reply(server, client, Reply::Events { watcher: id, events: backlog }, delay);
        }
    }

    /// Closes every watch a component instance has open on any server.
    pub(crate) fn close_watches(&mut self, component: usize) {
        for s in &mut self.servers {
            s.watchers.retain(|_, w| client_component(&w.client) != Some(component));
            s.waits.retain(|_, w| client_component(&w.client) != Some(component));
        }
    }

    /// A request that needed the store failed: the server could not reach it in time.
    pub(crate) fn on_store_timeout(&mut self, op: StoreOp, request: String) {
        let StoreOp { server, client, kind, cause } = op;
        let status = self.unreachable_status(server);
        match kind {
            StoreOpKind::Write(action) => {
                let (verb, key) = action.write_target().expect("writes have targets");
                self.write_failed(server, client, verb, key, status, cause, 0);
            }
            _ => self.fail(server, client, status, &request, 0),
        }
    }

    pub(crate) fn on_store_op(&mut self, op: StoreOp) {
        let StoreOp { server, client, kind, cause } = op;
        let back = self.engine.network.sample();
        match kind {
            StoreOpKind::Write(action) => self.store_write(server, client, action, cause, back),
            StoreOpKind::CurrentRevision { target } => {
                let revision = self.engine.store.revision();
                // The answer needs one hop back before the wait can start.
                if self.servers[server].cache.revision >= revision {
                    self.serve_from_cache(server, client, &target);
                } else {
                    self.wait_for_cache(server, client, target, revision, true);
                }
            }
            StoreOpKind::Read { target, at, after_key, min_revision } => {
                let revision = at.unwrap_or(self.engine.store.revision());
                if let Some(min) = min_revision.filter(|m| *m > revision) {
                    let status = status_of(StoreError::FutureRevision { requested: min, current: revision });
                    return self.fail(server, client, status, target.request(), back);
                }
                let result = match &target {
                    ReadTarget::List { filter, .. } | ReadTarget::Watch { filter, .. } => {
                        self.engine.store.range(&filter.prefix(), at).map(|kvs| {
                            kvs.into_iter()
                                .filter(|kv| after_key.as_ref().is_none_or(|k| kv.key > *k))
                                .filter(|kv| filter.matches(&kv.value))
                                .map(|kv| (kv.key, kv.value))
                                .collect::<Vec<_>>()
                        })
                    }
                    ReadTarget::Get { key, .. } => self
                        .engine
                        .store
                        .get_by_key(key, at)
                        .map(|kv| kv.into_iter().map(|kv| (kv.key, kv.value)).collect()),
                };
                let mut items = match result {
                    Ok(items) => items,
                    Err(e) => return self.fail(server, client, status_of(e), target.request(), back),
                };
                let mut token = None;
                if let ReadTarget::List { limit: Some(limit), .. } = &target
                    && items.len() > *limit
                {
                    items.truncate(*limit);
                    let last = &items.last().expect("limit is positive").0;
                    token = Some(continue_token(revision, last.trim_start_matches('/')));
                }
                let objects = items.into_iter().map(|(_, o)| o).collect();
                self.finish_read(server, client, &target, objects, revision, ServedFrom::Store, token, back);
            }
        }
    }

    /// Applies a write at the store, with the API server's admission logic.
    fn store_write(&mut self, server: usize, client: Client, action: Action, cause: Option<EntryId>, back: u64) {
        let (verb, key) = action.write_target().expect("only writes reach the store");
        let result = self.admit_and_write(server, action);
        match result {
            Ok(event) => {
                let by = self.client_name(&client);
                let via = self.servers[server].config.name.clone();
                let removed = event.kind == recon_store::EventKind::Delete;
                let terminating = !removed
                    && event.value.is_terminating()
                    && event.prev.as_ref().is_some_and(|p| !p.is_terminating());
                // The stored key: a create by generateName has its name now.
                let key = event.value.key();
                let entry = self.engine.record(
                    self.engine.lanes.store,
                    Event::StoreWrite {
                        verb,
                        key: key.clone(),
                        uid: event.value.metadata.uid.clone(),
                        revision: event.revision,
                        removed,
                        terminating,
                        by,
                        via,
                    },
                    cause.into_iter().collect(),
                );
                self.engine.store_entries.insert(event.revision, entry);
                let writer = client_component(&client).map(|_| self.client_name(&client));
                let commit = crate::checks::Commit { event: &event, entry, writer: writer.as_deref() };
                self.checks.committed(&mut self.engine, &self.nodes, &commit);
                let object = if removed { None } else { Some(event.value.clone()) };
                self.committed(event.revision);
                self.reply(server, client, Reply::Written { verb, key, outcome: Outcome::Ok(object), entry }, back);
            }
            Err(status) => self.write_failed(server, client, verb, key, status, cause, back),
        }
    }

    #[allow(clippy::too_many_arguments)] // reason: a failure carries everything its trace entry shows
    pub(crate) fn write_failed(
        &mut self,
        server: usize,
        client: Client,
        verb: Verb,
        key: ObjectKey,
        status: Status,
        cause: Option<EntryId>,
        delay: u64,
    ) {
        let by = self.client_name(&client);
        let via = self.servers[server].config.name.clone();
        let lane = client_component(&client).map_or(self.engine.lanes.script, |c| self.engine.lanes.components[c]);
        let entry = self.engine.record(
            lane,
            Event::WriteFailed { verb, key: key.clone(), status: status.clone(), by, via },
            cause.into_iter().collect(),
        );
        self.reply(server, client, Reply::Written { verb, key, outcome: Outcome::Err(status), entry }, delay);
    }

    /// A write whose object is larger than the run allows, as etcd refuses
    /// requests over `--max-request-bytes` (Kubernetes answers 413; the
    /// ABI's nearest status is 400).
    fn too_large(&self, action: &Action) -> Option<Status> {
        let object = match action {
            Action::Create { object } | Action::Update { object } | Action::UpdateStatus { object } => object,
            _ => return None,
        };
        let limit = self.scenario.limits.max_object_bytes;
        let size = serde_json::to_vec(object).map_or(u64::MAX, |b| b.len() as u64);
        (size > limit).then(|| {
            Status::new(
                StatusReason::BadRequest,
                format!(
                    "request entity too large: {} is {size} bytes as JSON, above the limit of {limit} \
                     (limits.maxObjectBytes in the scenario)",
                    object.kind
                ),
            )
        })
    }

    pub(crate) fn client_name(&self, client: &Client) -> String {
        match client_component(client) {
            Some(c) => self.components[c].spec.name.clone(),
            None => "kubectl".into(),
        }
    }

    /// The API server's side of a write: defaults, preconditions, graceful
    /// deletion, generation; then the store's compare-and-swap.
    fn admit_and_write(&mut self, server: usize, action: Action) -> Result<recon_store::StoreEvent, Status> {
        let now = self.engine.now;
        match action {
            Action::Create { object } => {
                let object = prepare_create(object, &mut self.servers[server].rng);
                if object.metadata.name.is_empty() {
                    return Err(Status::new(
                        StatusReason::BadRequest,
                        "metadata.name or metadata.generateName is required",
                    ));
                }
                self.engine.store.create(object, now).map_err(status_of)
            }
            Action::Update { object } | Action::UpdateStatus { object }
                if object.metadata.annotations.contains_key(PATCH_MARK) =>
            {
                let field = object.metadata.annotations[PATCH_MARK].clone();
                let current = self.current(&object.key())?;
                let mut next = current.clone();
                if !next.spec.is_object() {
                    next.spec = Value::Object(Default::default());
                }
                next.spec[field.as_str()] = object.spec;
                if next.spec != current.spec {
                    next.metadata.generation += 1;
                }
                let rev = current.revision();
                self.engine.store.update(next, rev, now).map_err(status_of)
            }
            Action::Update { mut object } if object.metadata.annotations.contains_key(APPLY_MARK) => {
                object.metadata.annotations.remove(APPLY_MARK);
                match self.engine.store.get(&object.key(), None).map_err(status_of)? {
                    None => {
                        let object = prepare_create(object, &mut self.servers[server].rng);
                        self.engine.store.create(object, now).map_err(status_of)
                    }
                    Some(kv) => {
                        let mut next = kv.value.clone();
                        next.metadata.labels = object.metadata.labels;
                        next.metadata.annotations = object.metadata.annotations;
                        if next.spec != object.spec {
                            next.metadata.generation += 1;
                            next.spec = object.spec;
                        }
                        self.engine.store.update(next, Some(kv.mod_revision), now).map_err(status_of)
                    }
                }
            }
            Action::Update { object } => {
                let current = self.current(&object.key())?;
                check_uid(&object.metadata, &current)?;
                let precondition = object.revision();
                let mut next = object;
                // Update cannot change status, identity or deletion state.
                next.status = current.status.clone();
                next.metadata.uid = current.metadata.uid.clone();
                next.metadata.deletion_timestamp = current.metadata.deletion_timestamp.clone();
                next.metadata.deletion_grace_period_seconds = current.metadata.deletion_grace_period_seconds;
                next.metadata.generation = current.metadata.generation + i64::from(next.spec != current.spec);
                self.engine.store.update(next, precondition, now).map_err(status_of)
            }
            Action::UpdateStatus { object } => {
                let current = self.current(&object.key())?;
                check_uid(&object.metadata, &current)?;
                let precondition = object.revision();
                let mut next = current;
                next.status = object.status;
                self.engine.store.update(next, precondition, now).map_err(status_of)
            }
            Action::Delete { key, uid, resource_version, grace_period_seconds } => {
                let current = self.current(&key)?;
                if let Some(uid) = uid.filter(|u| *u != current.metadata.uid) {
                    return Err(Status::new(
                        StatusReason::Conflict,
                        format!(
                            "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                            current.metadata.uid
                        ),
                    ));
                }
                let precondition = match resource_version {
                    Some(rv) => Some(rv.parse::<u64>().map_err(|_| {
                        Status::new(StatusReason::BadRequest, format!("invalid resourceVersion {rv:?}"))
                    })?),
                    None => None,
                };
                let bound = current.kind == "Pod" && current.field("spec.nodeName").is_some_and(|n| !n.is_empty());
                let grace = grace_period_seconds.unwrap_or(if bound { 30 } else { 0 });
                if grace > 0 && bound {
                    // Graceful: the kubelet finishes the deletion.
                    if current.is_terminating() {
                        return self
                            .engine
                            .store
                            .update(current.clone(), precondition.or(current.revision()), now)
                            .map_err(status_of);
                    }
                    let mut next = current.clone();
                    next.metadata.deletion_timestamp = Some(recon_abi::format_timestamp(now + grace as u64 * 1000));
                    next.metadata.deletion_grace_period_seconds = Some(grace);
                    let rev = precondition.or(current.revision());
                    return self.engine.store.update(next, rev, now).map_err(status_of);
                }
                self.engine.store.delete(&key, precondition, now).map_err(status_of)
            }
            other => Err(Status::new(StatusReason::BadRequest, format!("not a write: {other:?}"))),
        }
    }

    fn current(&self, key: &ObjectKey) -> Result<Object, Status> {
        match self.engine.store.get(key, None).map_err(status_of)? {
            Some(kv) => Ok(kv.value),
            None => Err(Status::new(StatusReason::NotFound, format!("{key} not found"))),
        }
    }

    /// After a commit: every API server that can reach the store receives
    /// the event one hop (plus its configured lag) later.
    fn committed(&mut self, revision: u64) {
        for s in 0..self.servers.len() {
            if self.reachable(s, self.engine.now) {
                let lag = self.servers[s].config.watch_cache.lag.0;
                let at = self.engine.network.arrival(Endpoint::Store, Endpoint::Server(s), self.engine.now, lag);
                self.engine.schedule(at, Scheduled::CacheFeed { server: s, revision });
            }
        }
    }

    pub(crate) fn cache_feed(&mut self, server: usize, revision: u64) {
        let Some(event) = self.engine.store.event(revision).cloned() else { return };
        self.cache_apply(server, &event);
    }

    fn cache_apply(&mut self, server: usize, event: &recon_store::StoreEvent) {
        if event.revision != self.servers[server].cache.revision + 1 {
            return; // a duplicate after a resync, or a gap a resync will fill
        }
        let api_server = self.servers[server].config.name.clone();
        let key = event.value.key();
        let cause = self.engine.store_entries.get(&event.revision).copied();
        let event_type = match (event.kind, &event.prev) {
            (recon_store::EventKind::Delete, _) => EventType::Deleted,
            (_, None) => EventType::Added,
            _ => EventType::Modified,
        };
        let entry = self.engine.record(
            self.engine.lanes.caches[server],
            Event::CacheApply { api_server, revision: event.revision, key, event_type },
            cause.into_iter().collect(),
        );
        let s = &mut self.servers[server];
        let applied = s.cache.apply(event, entry).expect("revision checked above").clone();
        let mut deliveries = Vec::new();
        for (id, w) in s.watchers.iter_mut() {
            if applied.revision <= w.sent {
                continue;
            }
            w.sent = applied.revision;
            if let Some(view) = w.filter.view(&applied) {
                deliveries.push((*id, w.client.clone(), view));
            }
        }
        for (watcher, client, view) in deliveries {
            self.reply(server, client, Reply::Events { watcher, events: vec![(view, entry)] }, 0);
        }
        self.release_waits(server);
    }

    pub(crate) fn partition_edge(&mut self, server: usize, started: bool) {
        let api_server = self.servers[server].config.name.clone();
        self.engine.record(self.engine.lanes.servers[server], Event::Partition { api_server, started }, vec![]);
        if !started && self.reachable(server, self.engine.now) {
            let lag = self.servers[server].config.watch_cache.lag.0;
            let at = self.engine.network.arrival(Endpoint::Store, Endpoint::Server(server), self.engine.now, lag);
            self.engine.schedule(at, Scheduled::CacheResync { server });
        }
    }

    /// A cache reconnecting to the store: catch up from the log, or rebuild
    /// from a full read if the log it needs has been compacted (and then
    /// every watch on it must start over).
    pub(crate) fn cache_resync(&mut self, server: usize) {
        let from = self.servers[server].cache.revision;
        match self.engine.store.events_since(from) {
            Ok(events) => {
                let revisions: Vec<u64> = events.iter().map(|e| e.revision).collect();
                for revision in revisions {
                    self.cache_feed(server, revision);
                }
            }
            Err(_) => {
                let revision = self.engine.store.revision();
                let state = self.engine.store.range("/", None).expect("current reads cannot fail");
                let api_server = self.servers[server].config.name.clone();
                let cause = self.engine.store_entries.get(&revision).copied();
                let entry = self.engine.record(
                    self.engine.lanes.caches[server],
                    Event::CacheRelist { api_server, revision },
                    cause.into_iter().collect(),
                );
                self.servers[server].cache.replace(
                    revision,
                    state.into_iter().map(|kv| (kv.key, kv.value)),
                    Some(entry),
                );
                let watchers = std::mem::take(&mut self.servers[server].watchers);
                for (_, w) in watchers {
                    let status = Status::new(StatusReason::Gone, "watch closed: the API server's cache was rebuilt");
                    self.reply(server, w.client, Reply::Failed(status), 0);
                }
                self.release_waits(server);
            }
        }
    }
}

fn check_uid(meta: &ObjectMeta, current: &Object) -> Result<(), Status> {
    if !meta.uid.is_empty() && meta.uid != current.metadata.uid {
        return Err(Status::new(
            StatusReason::Conflict,
            format!(
                "Precondition failed: UID in precondition: {}, UID in object meta: {}",
                meta.uid, current.metadata.uid
            ),
        ));
    }
    Ok(())
}
