//! API servers: serving reads from the watch cache or the store according
//! to the resourceVersion semantics, waiting for the cache when a read must
//! be fresh, forwarding writes to the store, feeding the cache from the
//! store's event stream (with lag, and not at all while partitioned), and
//! streaming watch events.

use std::collections::BTreeMap;
use std::sync::Arc;

use recon_abi::event::EVENT_KIND;
use recon_abi::{Action, EventType, Object, ObjectKey, Outcome, Patch, Status, StatusReason, Verb, WatchEvent};
use recon_store::StoreError;
use recon_trace::{
    EntryId, Event, EventPublished, Interner, LaneId, LaneRole, ListServed, Name, ObjectVersion, PatchNote, ServedFrom,
};

use recon_scenario::Kinds;

use crate::admission::{Admitted, admit, not_found, not_served, status_of, too_large};
use crate::api::{ReadPlan, Request, WatchStart, continue_token, plan_get, plan_list, plan_watch};
use crate::cache::{CachedEvent, Filter, WatchCache};
use crate::engine::Engine;
use crate::event_api::Version;
use crate::ids::{ComponentId, ServerId};
use crate::message::{Client, ReadTarget, Reply, Scheduled, Served, StoreOp, StoreOpKind, client_component};
use crate::network::Endpoint;
use crate::rng::Rng;
use crate::watchers::{Watcher, Watchers};

/// The BOOKMARK a watch of `kind` is sent at `revision`: no object, only
/// the revision it has been brought up to.
fn bookmark_event(kind: &str, revision: u64) -> WatchEvent {
    let mut object = Object { kind: kind.to_string(), ..Default::default() };
    object.metadata.resource_version = revision.to_string();
    WatchEvent::new(EventType::Bookmark, Arc::new(object))
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

/// A read's answer, before it is recorded and sent.
struct Read {
    objects: Vec<Arc<Object>>,
    revision: u64,
    from: ServedFrom,
    continue_token: Option<String>,
}

/// How a watch opens: after which revision, with which initial state.
struct OpenWatch {
    filter: Filter,
    /// Events after this revision are sent.
    after: u64,
    /// The initial state, for a watch that sends one.
    initial: Option<Served>,
    /// Whether an initial-events-end bookmark follows it.
    bookmark: bool,
    /// Whether the client asked for periodic bookmarks (`allowWatchBookmarks`).
    allow_bookmarks: bool,
}

/// A write the store committed, not yet answered.
pub(crate) struct Committed {
    /// The store event.
    pub event: recon_store::StoreEvent,
    /// Its StoreWrite entry.
    pub entry: EntryId,
    /// Who wrote it.
    pub client: Client,
    /// The answer the writer gets.
    pub reply: Reply,
    /// The way back from the store.
    pub delay: u64,
}

/// One API server: its configuration, its watch cache, the watches open
/// on it and the reads waiting for its cache.
pub(crate) struct ApiServer {
    /// Which one it is.
    id: ServerId,
    /// As the scenario configures it.
    pub config: recon_scenario::ApiServer,
    /// Its name: the trace's shared copy, which every entry about it holds.
    pub name: Name,
    /// The largest object a write may carry (`limits.maxObjectBytes`).
    max_object_bytes: u64,
    /// The kinds it serves.
    pub(crate) kinds: Kinds,
    /// Its watch cache.
    pub cache: WatchCache,
    watchers: Watchers,
    waits: BTreeMap<u64, Wait>,
    next_id: u64,
    /// For uids and generated names of objects created through this server.
    rng: Rng,
}

impl ApiServer {
    /// What of its state later events depend on, in words (for a state's
    /// fingerprint): how far its cache is, its open watches, its waiting reads.
    pub(crate) fn describe_state(&self) -> String {
        format!("cache {} | {} | waits {:?}\n", self.cache.revision, self.watchers.describe(), self.waits.keys())
    }

    /// API server `id` of the scenario, with an empty cache.
    pub fn new(
        id: ServerId,
        name: Name,
        config: recon_scenario::ApiServer,
        kinds: Kinds,
        max_object_bytes: u64,
        rng: Rng,
    ) -> ApiServer {
        let window = &config.watch_cache;
        let cache = WatchCache::new(
            usize::try_from(window.window_events).unwrap_or(usize::MAX),
            window.window_duration.map(|d| d.0),
        );
        ApiServer {
            id,
            name,
            config,
            max_object_bytes,
            kinds,
            cache,
            watchers: Watchers::default(),
            waits: BTreeMap::new(),
            next_id: 0,
            rng,
        }
    }

    fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }
}

fn object_versions(engine: &mut Engine, objects: &[Arc<Object>]) -> Vec<ObjectVersion> {
    objects
        .iter()
        .map(|o| ObjectVersion {
            key: engine.key(o),
            uid: engine.name(&o.metadata.uid),
            revision: o.revision().unwrap_or(0),
        })
        .collect()
}

impl ApiServer {
    /// Whether API server `s` can reach the store at time `t`.
    pub(crate) fn reachable(&self, t: u64) -> bool {
        !self.config.partitions.iter().any(|w| w.contains(t))
    }

    fn unreachable_status(&self) -> Status {
        let cfg = &self.config;
        Status::new(
            StatusReason::ServiceUnavailable,
            format!("{} cannot reach the store (partitioned); gave up after {}", cfg.name, cfg.request_timeout),
        )
    }

    pub(crate) fn reply(&mut self, engine: &mut Engine, client: Client, reply: Reply, extra_delay: u64) {
        let sent = engine.now + extra_delay;
        let at = engine.network.arrival(Endpoint::Server(self.id), client.endpoint(), sent, 0);
        engine.schedule(at, Scheduled::Reply { server: self.id, client, reply: Box::new(reply) });
    }

    fn fail(&mut self, engine: &mut Engine, client: Client, status: Status, request: &str, delay: u64) {
        if let Some(c) = client_component(&client) {
            let component = engine.shared_component_name(c);
            let api_server = self.name.clone();
            engine.record(
                engine.lanes.component(c),
                Event::RequestFailed {
                    component,
                    api_server,
                    request: request.to_string(),
                    status: Box::new(status.clone()),
                },
                vec![],
            );
        }
        self.reply(engine, client, Reply::Failed(status), delay);
    }

    /// Sends work to the store: it happens one network hop later, or the
    /// request fails after the timeout when the server is partitioned.
    fn send_to_store(
        &mut self,
        engine: &mut Engine,
        client: Client,
        kind: StoreOpKind,
        cause: Option<EntryId>,
        request: &str,
    ) {
        if !self.reachable(engine.now) {
            // The request waits for a store that never answers; it fails when
            // the API server gives up, which is when the trace should show it.
            let at = engine.now + self.config.request_timeout.0;
            let request = request.to_string();
            engine.schedule(
                at,
                Scheduled::StoreTimeout(Box::new(StoreOp { server: self.id, client, kind, cause }), request),
            );
            return;
        }
        // In order on the server's link to the store, so one client's writes
        // commit (and their results return) in the order it sent them.
        let at = engine.network.arrival(Endpoint::Server(self.id), Endpoint::Store, engine.now, 0);
        engine.schedule(at, Scheduled::StoreOp(Box::new(StoreOp { server: self.id, client, kind, cause })));
    }

    /// A request arrived. `forbidden` is the component's RBAC verdict, if
    /// it may not make this write or direct read (from its manifest).
    pub(crate) fn on_request(
        &mut self,
        engine: &mut Engine,
        client: Client,
        request: Request,
        cause: Option<EntryId>,
        forbidden: Option<Status>,
    ) {
        let text = request.to_string();
        // RBAC for a component's direct reads, before anything is looked up.
        if let (Request::List(_) | Request::Get(_), Some(status)) = (&request, &forbidden) {
            return self.fail(engine, client, status.clone(), &text, 0);
        }
        let kind = match &request {
            Request::List(r) => Some(&r.selection.kind),
            Request::Watch(r) => Some(&r.selection.kind),
            Request::Get(r) => Some(&r.key.kind),
            Request::Write(_) => None, // admission answers for writes
        };
        if let Some(kind) = kind.filter(|k| !k.is_empty() && self.kinds.get(k).is_none()) {
            return self.fail(engine, client, not_served(kind), &text, 0);
        }
        let cache_enabled = self.config.watch_cache.enabled;
        let consistent = self.config.consistent_reads_from_cache;
        let (target, plan) = match request {
            Request::Write(action) => {
                if let Some(status) = too_large(self.max_object_bytes, &action).or(forbidden) {
                    let target = write_target(&action, engine.client_name(&client), &mut engine.names);
                    return self.write_failed(engine, client, target, status, cause, 0);
                }
                return self.send_to_store(engine, client, StoreOpKind::Write(action), cause, &text);
            }
            Request::List(r) => {
                let filter = match Filter::new(&r.selection) {
                    Ok(f) => f,
                    Err(e) => return self.fail(engine, client, Status::new(StatusReason::BadRequest, e), &text, 0),
                };
                match plan_list(&r) {
                    Ok(plan) => (ReadTarget::List { filter, limit: r.limit, request: text.clone() }, plan),
                    Err(status) => return self.fail(engine, client, status, &text, 0),
                }
            }
            Request::Get(r) => match plan_get(&r) {
                Ok(plan) => {
                    let key = recon_store::key_for(&r.key);
                    (ReadTarget::Get { key, object: r.key.clone(), request: text.clone() }, plan)
                }
                Err(status) => return self.fail(engine, client, status, &text, 0),
            },
            Request::Watch(r) => {
                let filter = match Filter::new(&r.selection) {
                    Ok(f) => f,
                    Err(e) => return self.fail(engine, client, Status::new(StatusReason::BadRequest, e), &text, 0),
                };
                let allow_bookmarks = r.allow_watch_bookmarks;
                match plan_watch(&r) {
                    Ok(WatchStart::After(after)) if !cache_enabled => {
                        // Without a watch cache the watch is etcd's, and so is
                        // the history it resumes from (its compaction included).
                        let kind = StoreOpKind::Watch { filter, after, allow_bookmarks, request: text.clone() };
                        return self.send_to_store(engine, client, kind, cause, &text);
                    }
                    Ok(WatchStart::After(after)) => {
                        let open = OpenWatch { filter, after, initial: None, bookmark: false, allow_bookmarks };
                        return self.open_watch(engine, client, open, &text, 0);
                    }
                    Ok(WatchStart::InitialState { plan, bookmark }) => {
                        (ReadTarget::Watch { filter, bookmark, allow_bookmarks, request: text.clone() }, plan)
                    }
                    Err(status) => return self.fail(engine, client, status, &text, 0),
                }
            }
        };
        let store_read =
            |at, after_key, min_revision| StoreOpKind::Read { target: target.clone(), at, after_key, min_revision };
        // A watch-list (KEP-3157) is always served from the cache once it has
        // caught up with etcd's current revision; a list only when
        // consistent reads from the cache (KEP-2340) are on.
        let from_fresh_cache = cache_enabled && (consistent || matches!(target, ReadTarget::Watch { .. }));
        match plan {
            ReadPlan::MostRecent if from_fresh_cache => self.send_to_store(
                engine,
                client,
                StoreOpKind::CurrentRevision { target: target.clone() },
                cause,
                &text,
            ),
            ReadPlan::MostRecent => self.send_to_store(engine, client, store_read(None, None, None), cause, &text),
            ReadPlan::Any if cache_enabled => self.serve_from_cache(engine, client, &target),
            ReadPlan::Any => self.send_to_store(engine, client, store_read(None, None, None), cause, &text),
            ReadPlan::NotOlderThan(rv) if cache_enabled => {
                if self.cache.revision >= rv {
                    self.serve_from_cache(engine, client, &target)
                } else {
                    self.wait_for_cache(engine, client, target.clone(), rv, false)
                }
            }
            ReadPlan::NotOlderThan(rv) => {
                self.send_to_store(engine, client, store_read(None, None, Some(rv)), cause, &text)
            }
            ReadPlan::Exact(rv) => self.send_to_store(engine, client, store_read(Some(rv), None, None), cause, &text),
            ReadPlan::Continue { revision, after_key } => {
                self.send_to_store(engine, client, store_read(Some(revision), Some(after_key), None), cause, &text)
            }
        }
    }

    fn wait_for_cache(
        &mut self,
        engine: &mut Engine,
        client: Client,
        target: ReadTarget,
        min_revision: u64,
        fallback_to_store: bool,
    ) {
        let s = &mut *self;
        let id = s.next_id();
        let deadline = engine.now + s.config.watch_cache.wait_timeout.0;
        s.waits.insert(id, Wait { client, target, min_revision, fallback_to_store });
        engine.schedule(deadline, Scheduled::WaitDeadline { server: self.id, wait: id });
    }

    pub(crate) fn on_wait_deadline(&mut self, engine: &mut Engine, wait: u64) {
        let Some(w) = self.waits.remove(&wait) else { return };
        if w.fallback_to_store {
            // KEP-2340: a cache that does not catch up in time is bypassed.
            let kind = StoreOpKind::Read { target: w.target.clone(), at: None, after_key: None, min_revision: None };
            self.send_to_store(engine, w.client, kind, None, w.target.request());
        } else {
            let cache = self.cache.revision;
            let status = Status::new(
                StatusReason::Timeout,
                format!("Too large resource version: {}, current: {cache}", w.min_revision),
            );
            self.fail(engine, w.client, status, w.target.request(), 0);
        }
    }

    /// Serves every pending read whose revision the cache has reached.
    fn release_waits(&mut self, engine: &mut Engine) {
        let cache = self.cache.revision;
        let ready: Vec<u64> = self.waits.iter().filter(|(_, w)| w.min_revision <= cache).map(|(id, _)| *id).collect();
        for id in ready {
            let w = self.waits.remove(&id).expect("listed above");
            self.serve_from_cache(engine, w.client, &w.target);
        }
    }

    /// Records a served read in the trace.
    fn record_read(
        &mut self,
        engine: &mut Engine,
        client: &Client,
        target: &ReadTarget,
        objects: &[Arc<Object>],
        revision: u64,
        from: ServedFrom,
    ) -> EntryId {
        let api_server = self.name.clone();
        let store_revision = engine.store.revision();
        // How long the state served had been out of date: since the first
        // store write it does not contain.
        let stale_ms = if revision < store_revision {
            engine.store.event(revision + 1).map_or(0, |e| engine.now.saturating_sub(e.time_ms))
        } else {
            0
        };
        let cause = match from {
            ServedFrom::Cache => self.cache.revision_entry,
            ServedFrom::Store => engine.store_writes.entry_at_or_before(revision),
        };
        // kubectl's reads are drawn on the API server that answered them.
        let (lane, component) = match client_component(client) {
            Some(c) => (engine.lanes.component(c), engine.shared_component_name(c)),
            None => (engine.lanes.server(self.id), engine.name("kubectl")),
        };
        let partitioned = !self.reachable(engine.now);
        let objects = object_versions(engine, objects);
        engine.record(
            lane,
            Event::ListServed(Box::new(ListServed {
                component,
                api_server,
                request: target.request().to_string(),
                purpose: client.read_purpose(),
                served_from: from,
                revision,
                store_revision,
                stale_ms,
                partitioned,
                objects,
            })),
            cause.into_iter().collect(),
        )
    }

    fn serve_from_cache(&mut self, engine: &mut Engine, client: Client, target: &ReadTarget) {
        let cache = &self.cache;
        let revision = cache.revision;
        let objects = match target {
            ReadTarget::List { filter, .. } | ReadTarget::Watch { filter, .. } => cache.list(filter),
            ReadTarget::Get { key, .. } => cache.get(key).cloned().into_iter().collect(),
        };
        let read = Read { objects, revision, from: ServedFrom::Cache, continue_token: None };
        self.finish_read(engine, client, target, read, 0);
    }

    /// Replies to a served read (after `delay`, the way back from the store),
    /// or opens the watch it was the initial state of.
    fn finish_read(&mut self, engine: &mut Engine, client: Client, target: &ReadTarget, read: Read, delay: u64) {
        let Read { objects, revision, from, continue_token } = read;
        if let ReadTarget::Get { object, request, .. } = target
            && objects.is_empty()
        {
            return self.fail(engine, client, not_found(&self.kinds, object), request, delay);
        }
        let entry = self.record_read(engine, &client, target, &objects, revision, from);
        let served = Served { objects, revision, from, continue_token, entry };
        match target {
            ReadTarget::Watch { filter, bookmark, allow_bookmarks, request } => {
                let filter = filter.clone();
                let request = request.clone();
                let open = OpenWatch {
                    filter,
                    after: revision,
                    initial: Some(served),
                    bookmark: *bookmark,
                    allow_bookmarks: *allow_bookmarks,
                };
                self.open_watch(engine, client, open, &request, delay)
            }
            _ => self.reply(engine, client, Reply::Read(served), delay),
        }
    }

    /// Registers a watcher that has been sent everything up to `after`, and
    /// sends it the events after that which the cache's window (or, with
    /// the cache off, etcd's history) still has; 410 Gone if some are gone.
    fn open_watch(&mut self, engine: &mut Engine, client: Client, open: OpenWatch, request: &str, delay: u64) {
        let OpenWatch { filter, after, initial, bookmark, allow_bookmarks } = open;
        let from_cache = self.config.watch_cache.enabled;
        let backlog = if from_cache {
            self.cache_backlog(engine, &filter, after)
        } else {
            etcd_backlog(engine, &self.kinds, &filter, after)
        };
        let backlog = match backlog {
            Ok(backlog) => backlog,
            Err(status) => return self.fail(engine, client, status, request, delay),
        };
        let s = &mut *self;
        let id = s.next_id();
        // An etcd watch has been sent what etcd has; a cache watch what the
        // cache has. Later events come from this server's stream from etcd.
        let current = if from_cache { s.cache.revision } else { engine.store.revision() };
        let sent = after.max(current);
        s.watchers.insert(id, Watcher { client: client.clone(), filter, sent });
        self.reply(engine, client.clone(), Reply::WatchOpened { watcher: id, initial, bookmark }, delay);
        if !backlog.is_empty() {
            self.reply(engine, client, Reply::Events { watcher: id, events: backlog }, delay);
        }
        // Only the watch cache sends periodic bookmarks; etcd's watch does not.
        if allow_bookmarks && from_cache {
            let at = engine.now + delay + self.config.watch_cache.bookmark_interval.0.max(1);
            engine.schedule(at, Scheduled::Bookmark { server: self.id, watcher: id });
        }
    }

    /// The events after `after` in the cache's window, as the watch sees them.
    fn cache_backlog(
        &mut self,
        engine: &Engine,
        filter: &Filter,
        after: u64,
    ) -> Result<Vec<(WatchEvent, EntryId)>, Status> {
        self.cache.expire(engine.now);
        let cache = &self.cache;
        cache
            .events_after(after)
            .map(|events| events.filter_map(|e| filter.view(e).map(|w| (w, e.entry))).collect())
            .ok_or_else(|| {
                Status::new(
                    StatusReason::Gone,
                    format!("too old resource version: {after} (oldest available {})", cache.oldest_resumable()),
                )
            })
    }

    /// A watch that asked for bookmarks is due one: it is sent a BOOKMARK
    /// at the cache's revision (if it has caught up with the watch's
    /// start), and the next one is scheduled an interval later.
    pub(crate) fn on_bookmark_due(&mut self, engine: &mut Engine, watcher: u64) {
        let Some(w) = self.watchers.get(watcher) else { return }; // closed since
        let revision = self.cache.revision;
        let due = self.cache.revision_entry.filter(|_| revision >= w.sent);
        let (client, kind) = (w.client.clone(), w.filter.kind.clone());
        if let Some(entry) = due {
            let events = vec![(bookmark_event(&kind, revision), entry)];
            self.reply(engine, client, Reply::Events { watcher, events }, 0);
        }
        let at = engine.now + self.config.watch_cache.bookmark_interval.0.max(1);
        engine.schedule(at, Scheduled::Bookmark { server: self.id, watcher });
    }

    /// Closes every watch (and pending read) a component has open here.
    pub(crate) fn close_watches(&mut self, component: ComponentId) {
        self.watchers.close_for(component);
        self.waits.retain(|_, w| client_component(&w.client) != Some(component));
    }

    /// A request that needed the store failed: the server could not reach it in time.
    pub(crate) fn on_store_timeout(&mut self, engine: &mut Engine, op: StoreOp, request: String) {
        let StoreOp { client, kind, cause, .. } = op;
        let status = self.unreachable_status();
        match kind {
            StoreOpKind::Write(action) => {
                let target = write_target(&action, engine.client_name(&client), &mut engine.names);
                self.write_failed(engine, client, target, status, cause, 0);
            }
            _ => self.fail(engine, client, status, &request, 0),
        }
    }

    /// Work reached the store. A committed write is returned, not yet
    /// answered: the simulation tells the checks and feeds every cache
    /// first, then has this server reply ([`Committed::reply`]).
    pub(crate) fn on_store_op(&mut self, engine: &mut Engine, op: StoreOp) -> Option<Committed> {
        let StoreOp { client, kind, cause, .. } = op;
        let back = engine.network.sample();
        match kind {
            StoreOpKind::Write(action) => self.store_write(engine, client, action, cause, back),
            kind => {
                self.store_read(engine, client, kind, back);
                None
            }
        }
    }

    /// A read reached the store: answer it from there, or (KEP-2340) learn
    /// the store's revision and serve from the cache once it is there.
    fn store_read(&mut self, engine: &mut Engine, client: Client, kind: StoreOpKind, back: u64) {
        match kind {
            StoreOpKind::Write(_) => unreachable!("writes go to store_write"),
            StoreOpKind::Watch { filter, after, allow_bookmarks, request } => {
                let open = OpenWatch { filter, after, initial: None, bookmark: false, allow_bookmarks };
                self.open_watch(engine, client, open, &request, back);
            }
            StoreOpKind::CurrentRevision { target } => {
                let revision = engine.store.revision();
                // The answer needs one hop back before the wait can start.
                if self.cache.revision >= revision {
                    self.serve_from_cache(engine, client, &target);
                } else {
                    self.wait_for_cache(engine, client, target, revision, true);
                }
            }
            StoreOpKind::Read { target, at, after_key, min_revision } => {
                let revision = at.unwrap_or(engine.store.revision());
                if let Some(min) = min_revision.filter(|m| *m > revision) {
                    let status =
                        status_of(&self.kinds, StoreError::FutureRevision { requested: min, current: revision });
                    return self.fail(engine, client, status, target.request(), back);
                }
                let result = match &target {
                    ReadTarget::List { filter, .. } | ReadTarget::Watch { filter, .. } => {
                        engine.store.range(&filter.prefix(), at).map(|kvs| {
                            kvs.into_iter()
                                .filter(|kv| after_key.as_ref().is_none_or(|k| kv.key > *k))
                                .filter(|kv| filter.matches(&kv.value))
                                .map(|kv| (kv.key, kv.value))
                                .collect::<Vec<_>>()
                        })
                    }
                    ReadTarget::Get { key, .. } => {
                        engine.store.get_by_key(key, at).map(|kv| kv.into_iter().map(|kv| (kv.key, kv.value)).collect())
                    }
                };
                let mut items = match result {
                    Ok(items) => items,
                    Err(e) => return self.fail(engine, client, status_of(&self.kinds, e), target.request(), back),
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
                let read = Read { objects, revision, from: ServedFrom::Store, continue_token: token };
                self.finish_read(engine, client, &target, read, back);
            }
        }
    }

    /// Applies a write at the store, with the API server's admission logic.
    fn store_write(
        &mut self,
        engine: &mut Engine,
        client: Client,
        action: Action,
        cause: Option<EntryId>,
        back: u64,
    ) -> Option<Committed> {
        let mut action = action;
        let (verb, key, patch) = write_target(&action, engine.client_name(&client), &mut engine.names);
        if let (Action::Patch { params, .. } | Action::PatchStatus { params, .. }, Some(note)) = (&mut action, &patch) {
            params.field_manager = note.field_manager.to_string();
        }
        let answer_in = event_request_version(&action);
        let answer = |object: &Object| answer_in.map_or_else(|| object.clone(), |v| v.view(object));
        let limit = self.max_object_bytes;
        let result = admit(&mut engine.store, &mut self.rng, &self.kinds, engine.now, limit, action);
        match result {
            Ok(admitted @ (Admitted::Unchanged(_) | Admitted::DryRun(_))) => {
                // A patch's note says it was a dry run; other verbs say it here.
                let dry_run = matches!(admitted, Admitted::DryRun(_)) && patch.is_none();
                let (Admitted::Unchanged(object) | Admitted::DryRun(object)) = admitted else {
                    unreachable!("matched above")
                };
                let lane = client_component(&client).map_or(engine.lanes.script, |c| engine.lanes.component(c));
                let unchanged = Event::WriteUnchanged {
                    verb,
                    key: engine.key(&object),
                    uid: engine.name(&object.metadata.uid),
                    revision: object.revision().unwrap_or(0),
                    by: engine.client_name(&client),
                    via: self.name.clone(),
                    patch: patch.map(Box::new),
                    dry_run,
                };
                let entry = engine.record(lane, unchanged, cause.into_iter().collect());
                let reply =
                    Reply::Written { verb, key: object.key(), outcome: Outcome::Ok(Some(answer(&object))), entry };
                self.reply(engine, client, reply, back);
                None
            }
            Ok(Admitted::Written(event)) => {
                let by = engine.client_name(&client);
                let via = self.name.clone();
                let removed = event.kind == recon_store::EventKind::Delete;
                let terminating = !removed
                    && event.value.is_terminating()
                    && event.prev.as_ref().is_some_and(|p| !p.is_terminating());
                // The stored key: a create by generateName has its name now.
                let key = event.value.key();
                let (shared_key, uid) = (engine.key(&event.value), engine.name(&event.value.metadata.uid));
                let write = Event::StoreWrite {
                    verb,
                    key: shared_key.clone(),
                    uid: uid.clone(),
                    revision: event.revision,
                    removed,
                    terminating,
                    by,
                    via,
                    patch: patch.map(Box::new),
                };
                let entry = engine.record(engine.lanes.store, write, cause.into_iter().collect());
                engine.store_writes.insert(event.revision, entry, shared_key, uid);
                if !removed && event.value.kind == EVENT_KIND {
                    self.event_published(engine, &client, &event.value, entry);
                }
                let object = if removed { None } else { Some(answer(&event.value)) };
                let reply = Reply::Written { verb, key, outcome: Outcome::Ok(object), entry };
                Some(Committed { event, entry, client, reply, delay: back })
            }
            Err(status) => {
                self.write_failed(engine, client, (verb, key, patch), status, cause, back);
                None
            }
        }
    }

    /// An Event was stored: the trace shows it on the lane of the object it
    /// is about (see [`Event::EventPublished`]), caused by its store write.
    fn event_published(&self, engine: &mut Engine, client: &Client, stored: &Object, write: EntryId) {
        let regarding = recon_abi::event::regarding(stored);
        let node = match &regarding {
            Some(key) if key.kind == "Node" => Some(key.name.clone()),
            Some(key) if key.kind == "Pod" => engine
                .store
                .get(key, None)
                .ok()
                .flatten()
                .and_then(|kv| kv.value.field("spec.nodeName"))
                .filter(|n| !n.is_empty()),
            _ => None,
        };
        let node_lane = node.and_then(|name| {
            engine.trace.lanes.iter().position(|l| l.role == LaneRole::Node && l.name == name).map(LaneId::from_index)
        });
        let writer = client_component(client).map_or(engine.lanes.script, |c| engine.lanes.component(c));
        let published = Event::EventPublished(Box::new(EventPublished {
            event_type: recon_abi::event::event_type(stored).to_owned(),
            reason: recon_abi::event::reason(stored).to_owned(),
            note: recon_abi::event::note(stored).to_owned(),
            regarding: regarding.map(|key| engine.names.key(&key)),
            by: engine.client_name(client),
        }));
        engine.record(node_lane.unwrap_or(writer), published, vec![write]);
    }

    /// A write was refused or failed: the trace says so and the writer hears back.
    pub(crate) fn write_failed(
        &mut self,
        engine: &mut Engine,
        client: Client,
        (verb, key, patch): (Verb, ObjectKey, Option<PatchNote>),
        status: Status,
        cause: Option<EntryId>,
        delay: u64,
    ) {
        let by = engine.client_name(&client);
        let via = self.name.clone();
        let lane = client_component(&client).map_or(engine.lanes.script, |c| engine.lanes.component(c));
        let failed = Event::WriteFailed {
            verb,
            key: engine.names.key(&key),
            status: Box::new(status.clone()),
            by,
            via,
            patch: patch.map(Box::new),
        };
        let entry = engine.record(lane, failed, cause.into_iter().collect());
        self.reply(engine, client, Reply::Written { verb, key, outcome: Outcome::Err(status), entry }, delay);
    }

    /// The store committed `revision`: if this server can reach the store,
    /// its cache receives the event one hop plus its configured lag later
    /// (the watch-cache lag is applied here, and on healing below).
    pub(crate) fn store_committed(&mut self, engine: &mut Engine, revision: u64) {
        if self.reachable(engine.now) {
            let lag = self.config.watch_cache.lag.0;
            let at = engine.network.arrival(Endpoint::Store, Endpoint::Server(self.id), engine.now, lag);
            engine.schedule(at, Scheduled::CacheFeed { server: self.id, revision });
        }
    }

    /// The store event at `revision` reaches this server's cache: the cache
    /// applies it (if it is the next one) and sends it to the watches it
    /// concerns. The event is read from the store where it lies, not copied.
    pub(crate) fn cache_feed(&mut self, engine: &mut Engine, revision: u64) {
        let Some(event) = engine.store.event(revision) else { return };
        if event.revision != self.cache.revision + 1 {
            return; // a duplicate after a resync, or a gap a resync will fill
        }
        // The key its store write shared, if the trace recorded it.
        let key = match engine.stored_names(revision, &event.value) {
            Some((key, _)) => key.clone(),
            None => engine.names.object_key(&event.value),
        };
        let event_type = match (event.kind, &event.prev) {
            (recon_store::EventKind::Delete, _) => EventType::Deleted,
            (_, None) => EventType::Added,
            _ => EventType::Modified,
        };
        let api_server = self.name.clone();
        let cause = engine.store_writes.entry(revision);
        let entry = engine.record(
            engine.lanes.cache(self.id),
            Event::CacheApply { api_server, revision, key, event_type },
            cause.into_iter().collect(),
        );
        let event = engine.store.event(revision).expect("read above");
        let s = &mut *self;
        let applied = s.cache.apply_at(event, entry, engine.now).expect("revision checked above");
        let mut deliveries = Vec::new();
        // Only the watches this event can concern are looked at: one that
        // cannot see it would neither be sent it nor need its `sent` moved
        // (it only matters for revisions this cache has not reached).
        for id in s.watchers.concerned(&applied.object.kind, applied.prev.as_deref(), &applied.object) {
            let w = s.watchers.get_mut(id).expect("concerned watches are open");
            if applied.revision <= w.sent {
                continue;
            }
            w.sent = applied.revision;
            if let Some(view) = w.filter.view(applied) {
                deliveries.push((id, w.client.clone(), view));
            }
        }
        for (watcher, client, view) in deliveries {
            self.reply(engine, client, Reply::Events { watcher, events: vec![(view, entry)] }, 0);
        }
        self.release_waits(engine);
    }

    pub(crate) fn partition_edge(&mut self, engine: &mut Engine, started: bool) {
        let api_server = self.name.clone();
        engine.record(engine.lanes.server(self.id), Event::Partition { api_server, started }, vec![]);
        if !started && self.reachable(engine.now) {
            let lag = self.config.watch_cache.lag.0;
            let at = engine.network.arrival(Endpoint::Store, Endpoint::Server(self.id), engine.now, lag);
            engine.schedule(at, Scheduled::CacheResync { server: self.id });
        }
    }

    /// A cache reconnecting to the store: catch up from the log, or rebuild
    /// from a full read if the log it needs has been compacted (and then
    /// every watch on it must start over).
    pub(crate) fn cache_resync(&mut self, engine: &mut Engine) {
        let from = self.cache.revision;
        match engine.store.events_since(from) {
            Ok(events) => {
                let revisions: Vec<u64> = events.iter().map(|e| e.revision).collect();
                for revision in revisions {
                    self.cache_feed(engine, revision);
                }
            }
            Err(_) => {
                let revision = engine.store.revision();
                let state = engine.store.range("/", None).expect("current reads cannot fail");
                let api_server = self.name.clone();
                let cause = engine.store_writes.entry(revision);
                let entry = engine.record(
                    engine.lanes.cache(self.id),
                    Event::CacheRelist { api_server, revision },
                    cause.into_iter().collect(),
                );
                self.cache.replace(revision, state.into_iter().map(|kv| (kv.key, kv.value)), Some(entry));
                for w in self.watchers.take_all() {
                    let status = Status::new(StatusReason::Gone, "watch closed: the API server's cache was rebuilt");
                    self.reply(engine, w.client, Reply::Failed(status), 0);
                }
                self.release_waits(engine);
            }
        }
    }
}

/// The events after `after` in etcd's history, as a watch with `filter`
/// sees them (each with its store write's trace entry); 410 Gone if etcd
/// has compacted some of them, nothing yet for a revision etcd has not
/// reached (the watch waits for it).
fn etcd_backlog(
    engine: &Engine,
    kinds: &Kinds,
    filter: &Filter,
    after: u64,
) -> Result<Vec<(WatchEvent, EntryId)>, Status> {
    let events = match engine.store.events_since(after) {
        Ok(events) => events,
        Err(StoreError::FutureRevision { .. }) => return Ok(Vec::new()),
        Err(StoreError::Compacted { compacted, .. }) => {
            return Err(Status::new(
                StatusReason::Gone,
                format!("too old resource version: {after} (etcd has compacted its history up to {compacted})"),
            ));
        }
        Err(e) => return Err(status_of(kinds, e)),
    };
    Ok(events
        .iter()
        .filter_map(|e| {
            let entry = engine.store_writes.entry(e.revision)?;
            let event = CachedEvent {
                revision: e.revision,
                object: e.value.clone(),
                prev: e.prev.clone(),
                deleted: e.kind == recon_store::EventKind::Delete,
                entry,
                applied_ms: e.time_ms,
            };
            filter.view(&event).map(|w| (w, entry))
        })
        .collect())
}

/// The version an Event write is answered in, when it is not the stored
/// core `v1`: a client of `events.k8s.io/v1` reads its answer in that form.
fn event_request_version(action: &Action) -> Option<Version> {
    let version = match action {
        Action::Create { object, .. } | Action::Update { object, .. } | Action::UpdateStatus { object, .. } => {
            Version::of(object)
        }
        Action::Patch { key, patch, .. } | Action::PatchStatus { key, patch, .. } if key.kind == EVENT_KIND => {
            Version::of_patch(patch)
        }
        _ => Version::Core,
    };
    (version == Version::EventsV1).then_some(version)
}

/// A write's verb, object and, for a patch, how it was asked for: its field
/// manager is the writer's name when a patch other than apply gave none
/// (as the API server names a manager from the client).
fn write_target(action: &Action, writer: Name, names: &mut Interner) -> (Verb, ObjectKey, Option<PatchNote>) {
    let (verb, key) = action.write_target().expect("writes have targets");
    let note = match action {
        Action::Patch { patch, params, .. } | Action::PatchStatus { patch, params, .. } => Some(PatchNote {
            patch_type: patch.patch_type(),
            field_manager: if params.field_manager.is_empty() && !matches!(patch, Patch::Apply(_)) {
                writer
            } else {
                names.name(&params.field_manager)
            },
            force: params.force,
            dry_run: params.dry_run,
        }),
        _ => None,
    };
    (verb, key, note)
}
