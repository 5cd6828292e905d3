//! A kube-rs-style reconcile loop: write [`Reconciler::reconcile`] for one
//! key, and [`Runtime`] does the rest of being a [`Controller`].
//!
//! ```
//! use recon_abi::{ABI_VERSION, ComponentConfig, Manifest, ObjectKey, WatchSpec};
//! use recon_sdk::reconcile::{Context, Reconciler, Requeue, Runtime};
//!
//! /// Logs nothing, writes nothing: the smallest reconciler there is.
//! #[derive(Default)]
//! struct Noop;
//!
//! impl Reconciler for Noop {
//!     fn init(&mut self, _config: &ComponentConfig) -> Manifest {
//!         let watches = vec![WatchSpec { kind: "Pod".into(), ..WatchSpec::default() }];
//!         Manifest { name: "noop".into(), abi_version: ABI_VERSION, watches, ..Manifest::default() }
//!     }
//!
//!     fn reconcile(&mut self, key: &ObjectKey, ctx: &mut Context<'_>) -> Requeue {
//!         let _pod = ctx.get(key);
//!         Requeue::AwaitChange
//!     }
//! }
//!
//! let controller = Runtime::new(Noop);
//! ```
//!
//! [`Runtime`] is the one input pump of a controller: every kind of input
//! becomes dirty keys, through one hook of the [`Reconciler`] each, and only
//! [`Reconciler::reconcile`] acts. On every call, in this order:
//!
//! 1. List results and watch events go to its [`Cache`]; the [`InFlight`]
//!    entry of every changed object is settled, and [`Reconciler::keys_for`]
//!    says which keys each change makes dirty (by default: a primary object
//!    itself, and the primary owner of any other).
//! 2. Results are matched to the requests the [`Context`] sent by their
//!    [`RequestId`] (every request sent through a [`Context`] gets one) or,
//!    for writes, by key: the key that sent each one is made dirty, and a
//!    direct read's result waits for it in [`Context::take_result`]; a transient failure also
//!    schedules a retry of that key after [`crate::RETRY_AFTER_MS`]. Then
//!    [`Reconciler::keys_for_result`] sees every result, for the writes the
//!    reconciler tracks itself (by default: none).
//! 3. Due timers make dirty the keys [`Reconciler::keys_for_timer`] names
//!    (by default: the key a requeue carries).
//! 4. Steps 1 to 3 happen event by event, in the order the host delivered
//!    them. Then, if the input reports the node's containers (a node
//!    agent), [`Reconciler::keys_for_containers`] says which keys that
//!    snapshot makes dirty (by default: none).
//! 5. Once every watch has had its first list (client-go's
//!    `WaitForCacheSync`), each dirty key is reconciled once, in key order,
//!    and the requeues they ask for are scheduled (deduplicated by
//!    [`Timers`]).
//!
//! So the actions a call returns are a function of its input.

use std::collections::BTreeSet;

use std::collections::BTreeMap;

use recon_abi::{
    Action, ActionResult, ComponentConfig, Container, Controller, Input, InputEvent, Manifest, Object, ObjectKey,
    Output, Patch, PatchParams, RequestId, ResourceVersionMatch,
};

use crate::cache::{Cache, Change};
use crate::in_flight::InFlight;
use crate::meta;
use crate::timers::{Timers, parse_timer_key, timer_key};

/// What to do after reconciling a key, as data (kube-rs' `Action`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requeue {
    /// Nothing, until a change, a write result or a timer makes the key
    /// dirty again.
    AwaitChange,
    /// Reconcile the key again after this many virtual milliseconds (even if
    /// nothing changed), e.g. to time out a wait.
    AfterMs(u64),
}

/// A controller written as one function of one key.
///
/// Implement this and run it with [`Runtime`]; the runtime is the
/// [`Controller`] the host sees. Only `init` and `reconcile` are required;
/// the `keys_for*` hooks map each kind of input to the keys it makes dirty,
/// and are also where a reconciler keeps state derived from its inputs (an
/// [`crate::Index`], expectations) up to date.
pub trait Reconciler {
    /// Called on every fresh instance: reset any state kept across calls and
    /// return the manifest. Watch 0 is the *primary* kind, the one whose keys
    /// are reconciled by default.
    fn init(&mut self, config: &ComponentConfig) -> Manifest;

    /// The keys a change makes dirty. `cache` already holds the new state;
    /// `change.old` the old one. The default is [`primary_keys`]; override it
    /// to keep an [`crate::Index`] up to date or to map changes otherwise.
    fn keys_for(&mut self, change: &Change, cache: &Cache) -> Vec<ObjectKey> {
        primary_keys(change, cache)
    }

    /// The keys a write result makes dirty, besides the key that sent the
    /// write through the [`Context`] (which the runtime wakes itself). Called
    /// for every result, after the runtime has matched it to its own
    /// tracking; override it for writes the reconciler tracks itself, such
    /// as creates by `generateName`, which have no name to match on. The
    /// default is none.
    fn keys_for_result(&mut self, result: &ActionResult, cache: &Cache, now_ms: u64) -> Vec<ObjectKey> {
        let _ = (result, cache, now_ms);
        Vec::new()
    }

    /// The keys a timer makes dirty when it fires. The default is the key a
    /// requeue carries ([`parse_timer_key`]), nothing for any other timer;
    /// override it for timers set with [`Context::set_timer`] that stand for
    /// a group of keys.
    fn keys_for_timer(&mut self, timer: &str) -> Vec<ObjectKey> {
        parse_timer_key(timer).into_iter().collect()
    }

    /// The keys a node agent's containers make dirty. The host reports the
    /// containers running on the node with every call, as a snapshot rather
    /// than as changes, so the keys returned here are reconciled on every
    /// call (once synced): that is how a node agent compares what runs with
    /// what should, even when its cache did not change. The default is none.
    fn keys_for_containers(&mut self, containers: &[Container], cache: &Cache) -> Vec<ObjectKey> {
        let _ = (containers, cache);
        Vec::new()
    }

    /// Brings the world one step closer to what `key` asks for, by sending
    /// writes through `ctx`. Must not assume that earlier writes have landed:
    /// the cache shows them when their watch events arrive.
    fn reconcile(&mut self, key: &ObjectKey, ctx: &mut Context<'_>) -> Requeue;
}

/// The default mapping from changes to dirty keys: an object of watch 0
/// maps to itself; any other object to its controlling owner (before and
/// after the change) if that owner is of watch 0's kind.
pub fn primary_keys(change: &Change, cache: &Cache) -> Vec<ObjectKey> {
    let Some(primary) = cache.kind(0) else { return Vec::new() };
    if change.watch == 0 {
        return vec![change.key.clone()];
    }
    let current = cache.get(change.watch, &change.key);
    let owners: BTreeSet<ObjectKey> = change
        .old
        .as_deref()
        .into_iter()
        .chain(current)
        .filter_map(meta::controller_key)
        .filter(|k| k.kind == primary)
        .collect();
    owners.into_iter().collect()
}

/// What a reconcile sees and does: the cache, the time, and the writes it
/// sends, which are tracked so that none is repeated while it is in flight.
#[derive(Debug)]
pub struct Context<'a> {
    key: &'a ObjectKey,
    now_ms: u64,
    cache: &'a Cache,
    containers: Option<&'a [Container]>,
    in_flight: &'a mut InFlight,
    timers: &'a mut Timers,
    output: &'a mut Output,
    requests: &'a mut Requests,
}

/// The requests a [`Runtime`] has numbered, and the results of direct reads
/// waiting for the key that asked.
#[derive(Clone, Debug, Default)]
struct Requests {
    /// The id the next request gets.
    next: RequestId,
    /// The id of the last request sent.
    last: Option<RequestId>,
    /// Direct reads sent and not yet answered: the key that sent each.
    reads: BTreeMap<RequestId, ObjectKey>,
    /// Results of direct reads, until taken.
    results: BTreeMap<RequestId, ActionResult>,
}

/// What to ask of a direct list ([`Context::list_direct`]); every field
/// but the kind is optional, as in a Kubernetes list request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListParams {
    /// Restrict to one namespace; empty means all namespaces.
    pub namespace: String,
    /// Field selector, e.g. `spec.nodeName=node-1`.
    pub field_selector: String,
    /// Label selector, e.g. `app=web`.
    pub label_selector: String,
    /// `resourceVersion`: `None` for the most recent state (a quorum read),
    /// `"0"` for any state, a revision for state not older than it (or
    /// exactly it, with `resource_version_match`).
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`.
    pub resource_version_match: Option<ResourceVersionMatch>,
    /// Page size; `None` (or 0) for everything.
    pub limit: Option<u64>,
    /// The continue token of the previous page.
    pub continue_token: Option<String>,
}

impl<'a> Context<'a> {
    /// The key being reconciled.
    pub fn key(&self) -> &'a ObjectKey {
        self.key
    }

    /// Virtual time of this call, in milliseconds.
    pub fn now_ms(&self) -> u64 {
        self.now_ms
    }

    /// The informer cache.
    pub fn cache(&self) -> &'a Cache {
        self.cache
    }

    /// The object with `key` in the first watch of its kind that has it.
    pub fn get(&self, key: &ObjectKey) -> Option<&'a Object> {
        self.cache.find(key)
    }

    /// For node agents: the containers running on the node now.
    pub fn containers(&self) -> Option<&'a [Container]> {
        self.containers
    }

    /// Whether a write to `key` is still in flight (see [`InFlight::blocks`]).
    pub fn is_pending(&mut self, key: &ObjectKey) -> bool {
        self.in_flight.blocks(key, self.cache.find(key), self.now_ms)
    }

    /// The writes in flight, for reconcilers that track writes themselves.
    pub fn in_flight(&mut self) -> &mut InFlight {
        self.in_flight
    }

    /// Creates `object`, unless a write to its key is in flight; returns
    /// whether it was sent. A create by `generateName` has no key to track
    /// and is always sent.
    pub fn create(&mut self, object: Object) -> bool {
        self.send(Action::Create { object, dry_run: false })
    }

    /// Replaces the metadata and spec of `object` (compare-and-swap on its
    /// `resourceVersion` if set), unless a write to its key is in flight;
    /// returns whether it was sent.
    pub fn update(&mut self, object: Object) -> bool {
        self.send(Action::Update { object, dry_run: false })
    }

    /// Replaces the status of `object` (compare-and-swap on its
    /// `resourceVersion` if set), unless a write to its key is in flight;
    /// returns whether it was sent.
    pub fn update_status(&mut self, object: Object) -> bool {
        self.send(Action::UpdateStatus { object, dry_run: false })
    }

    /// Patches the metadata and spec of `key` (merge, JSON or strategic
    /// merge patch, or server-side apply: see [`recon_abi::Patch`]), unless
    /// a write to it is in flight; returns whether it was sent. Without a
    /// `metadata.resourceVersion` in the body the patch applies to whatever
    /// is current when it arrives; with one, it fails with 409 Conflict if
    /// the object has moved on.
    pub fn patch(&mut self, key: &ObjectKey, patch: Patch, params: PatchParams) -> bool {
        self.send(Action::Patch { key: key.clone(), patch, params })
    }

    /// Patches the status of `key` (the status subresource), as
    /// [`Context::patch`].
    pub fn patch_status(&mut self, key: &ObjectKey, patch: Patch, params: PatchParams) -> bool {
        self.send(Action::PatchStatus { key: key.clone(), patch, params })
    }

    /// Server-side apply of `object` (a partial object with its
    /// `apiVersion`, `kind` and name: every field `manager` wants to own)
    /// as `manager`, forcing conflicts if `force`; returns whether it was
    /// sent. Fields the manager applied before and leaves out now are
    /// removed unless another manager owns them too. A
    /// `metadata.resourceVersion` left in `object` is a precondition.
    pub fn apply(&mut self, object: &Object, manager: &str, force: bool) -> bool {
        let body = serde_json::to_value(object).expect("objects are JSON");
        let params = PatchParams { force, ..PatchParams::apply(manager) };
        self.patch(&object.key(), Patch::Apply(body), params)
    }

    /// Deletes this incarnation of `object` (uid precondition) with the
    /// kind's default grace period, unless a write to its key is in flight;
    /// returns whether it was sent.
    pub fn delete(&mut self, object: &Object) -> bool {
        self.send(Action::Delete {
            key: object.key(),
            uid: Some(object.metadata.uid.clone()).filter(|uid| !uid.is_empty()),
            resource_version: None,
            grace_period_seconds: None,
            propagation_policy: None,
            dry_run: false,
        })
    }

    /// Publishes an Event about `regarding` (see [`crate::events::event_about`]):
    /// an ordinary create, untracked (the API server names it, so there is
    /// no key to wait for) and not retried; its result comes back like any
    /// write's. The manifest must allow `create` on `Event`.
    pub fn publish_event(
        &mut self,
        regarding: &Object,
        reporter: &crate::events::Reporter,
        event_type: crate::events::EventType,
        (reason, action, note): (&str, &str, &str),
    ) {
        let event = crate::events::event_about(regarding, reporter, event_type, reason, action, note, self.now_ms);
        self.push(Action::Create { object: event, dry_run: false });
    }

    /// Sends a write with whatever options it carries (a delete with a grace
    /// period, say), tracked like the ones above: not sent while a write to
    /// its key is in flight, and remembered until it settles; returns
    /// whether it was sent. A write without a name to track (a create by
    /// `generateName`) and any action that is not a write are sent as is.
    pub fn send(&mut self, action: Action) -> bool {
        let Some((verb, key)) = action.write_target().filter(|(_, key)| !key.name.is_empty()) else {
            self.push(action);
            return true;
        };
        if self.is_pending(&key) {
            return false;
        }
        let basis = self.cache.find(&key);
        self.in_flight.record(verb, key, basis, self.key.clone());
        self.push(action);
        true
    }

    /// Sends any action as is, untracked (containers, writes the reconciler
    /// tracks itself). A request (a write or a direct read) gets the next
    /// [`RequestId`], which its result carries ([`Context::last_request_id`]).
    pub fn push(&mut self, action: Action) {
        if action.target().is_none() {
            self.output.actions.push(action);
            return;
        }
        let id = self.requests.next;
        self.requests.next += 1;
        self.requests.last = Some(id);
        if action.read_target().is_some() {
            self.requests.reads.insert(id, self.key.clone());
        }
        self.output.push_request(id, action);
    }

    /// The id of the last request sent through this runtime (write or
    /// direct read), which its [`ActionResult::id`] will carry.
    pub fn last_request_id(&self) -> Option<RequestId> {
        self.requests.last
    }

    /// Reads `key` from the API server itself, not from the informer cache
    /// (controller-runtime's API reader), and returns the request's id.
    /// `resource_version`: `None` for the most recent state (a quorum
    /// read), `Some("0")` for any state the API server has, however old,
    /// `Some(n)` for state not older than revision `n`. The result makes
    /// this key dirty again; take it with [`Context::take_result`].
    pub fn get_direct(&mut self, key: &ObjectKey, resource_version: Option<&str>) -> RequestId {
        self.push(Action::Get { key: key.clone(), resource_version: resource_version.map(str::to_string) });
        self.requests.last.expect("a get is a request")
    }

    /// Lists `kind` from the API server itself, as [`Context::get_direct`]
    /// reads one object; the result is [`recon_abi::Outcome::Listed`].
    pub fn list_direct(&mut self, kind: &str, params: ListParams) -> RequestId {
        let ListParams {
            namespace,
            field_selector,
            label_selector,
            resource_version,
            resource_version_match,
            limit,
            continue_token,
        } = params;
        self.push(Action::List {
            kind: kind.to_string(),
            namespace,
            field_selector,
            label_selector,
            resource_version,
            resource_version_match,
            limit,
            continue_token,
        });
        self.requests.last.expect("a list is a request")
    }

    /// The result of direct read `id`, once it has arrived (then it is
    /// handed out once). The key that sent the read is reconciled when it
    /// arrives.
    pub fn take_result(&mut self, id: RequestId) -> Option<ActionResult> {
        self.requests.results.remove(&id)
    }

    /// Asks for a timer called `name` in `after_ms`, unless one with that
    /// name is already due by then (see [`Timers::schedule`]). When it fires,
    /// [`Reconciler::keys_for_timer`] says which keys it makes dirty: a
    /// timer of one's own for a group of keys (a requeue of the key being
    /// reconciled is [`Requeue::AfterMs`]).
    pub fn set_timer(&mut self, name: &str, after_ms: u64) {
        self.output.actions.extend(self.timers.schedule(name, self.now_ms, after_ms));
    }
}

/// Runs a [`Reconciler`] as a [`Controller`]: cache, dirty keys, wait for
/// the first lists, write tracking, retries and requeue timers (see the
/// module documentation for the order of events).
#[derive(Clone, Debug, Default)]
pub struct Runtime<R> {
    reconciler: R,
    cache: Cache,
    dirty: BTreeSet<ObjectKey>,
    in_flight: InFlight,
    timers: Timers,
    requests: Requests,
}

impl<R: Reconciler> Runtime<R> {
    /// A runtime around `reconciler`, with an empty cache until `init`.
    pub fn new(reconciler: R) -> Runtime<R> {
        Runtime {
            reconciler,
            cache: Cache::default(),
            dirty: BTreeSet::new(),
            in_flight: InFlight::new(),
            timers: Timers::new(),
            requests: Requests::default(),
        }
    }

    /// The reconciler, e.g. to inspect its state in a test.
    pub fn reconciler(&self) -> &R {
        &self.reconciler
    }

    /// The cache, as the reconciler sees it.
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// The keys waiting to be reconciled (before the first lists, or after
    /// changes since the last call).
    pub fn dirty(&self) -> impl Iterator<Item = &ObjectKey> {
        self.dirty.iter()
    }

    /// Steps 1 to 3 of the module documentation for one input event.
    fn apply_event(&mut self, event: &InputEvent, now: u64, actions: &mut Vec<Action>) {
        match event {
            InputEvent::Result(result) => {
                if let Some(wake) = result.id.and_then(|id| self.requests.reads.remove(&id)) {
                    let id = result.id.expect("matched by id");
                    self.requests.results.insert(id, ActionResult::clone(result));
                    self.dirty.insert(wake);
                }
                let current = self.cache.find(&result.key);
                if let Some(answer) = self.in_flight.on_result(result, current, now) {
                    if let Some(after) = answer.retry_after_ms {
                        actions.extend(self.timers.schedule(timer_key(&answer.wake), now, after));
                    }
                    self.dirty.insert(answer.wake);
                }
                self.dirty.extend(self.reconciler.keys_for_result(result, &self.cache, now));
            }
            InputEvent::Timer { key } => {
                self.timers.fired(key);
                self.dirty.extend(self.reconciler.keys_for_timer(key));
            }
            InputEvent::Listed { .. } | InputEvent::Watch { .. } => {
                for change in self.cache.apply(event) {
                    self.in_flight.settle(&change.key, self.cache.get(change.watch, &change.key), now);
                    self.dirty.extend(self.reconciler.keys_for(&change, &self.cache));
                }
            }
        }
    }
}

impl<R: Reconciler> Controller for Runtime<R> {
    fn init(&mut self, config: &ComponentConfig) -> Manifest {
        let manifest = self.reconciler.init(config);
        self.cache = Cache::new(&manifest.watches);
        self.dirty.clear();
        self.in_flight = InFlight::new();
        self.timers = Timers::new();
        self.requests = Requests::default();
        manifest
    }

    fn handle(&mut self, input: &Input) -> Output {
        let now = input.time_ms;
        let mut output = Output::default();
        for event in &input.events {
            self.apply_event(event, now, &mut output.actions);
        }
        if let Some(containers) = &input.containers {
            self.dirty.extend(self.reconciler.keys_for_containers(containers, &self.cache));
        }
        if self.cache.all_synced() {
            for key in std::mem::take(&mut self.dirty) {
                let mut ctx = Context {
                    key: &key,
                    now_ms: now,
                    cache: &self.cache,
                    containers: input.containers.as_deref(),
                    in_flight: &mut self.in_flight,
                    timers: &mut self.timers,
                    output: &mut output,
                    requests: &mut self.requests,
                };
                if let Requeue::AfterMs(after) = self.reconciler.reconcile(&key, &mut ctx) {
                    output.actions.extend(self.timers.schedule(timer_key(&key), now, after));
                }
            }
        }
        output
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{
        ObjectExt, added, failed, input, listed, modified, node_input, object, pod, succeeded, timer,
    };
    use recon_abi::{ABI_VERSION, StatusReason, Verb, WatchSpec};
    use serde_json::json;

    /// Writes `status.seen = spec.want` for every ConfigMap-like "Thing",
    /// and asks to be requeued when `spec.requeueMs` is set.
    #[derive(Default)]
    struct Mirror {
        reconciled: Vec<String>,
    }

    impl Reconciler for Mirror {
        fn init(&mut self, _config: &ComponentConfig) -> Manifest {
            self.reconciled.clear();
            Manifest {
                name: "mirror".into(),
                abi_version: ABI_VERSION,
                watches: vec![
                    WatchSpec { kind: "Thing".into(), ..WatchSpec::default() },
                    WatchSpec { kind: "Pod".into(), ..WatchSpec::default() },
                ],
                ..Manifest::default()
            }
        }

        fn reconcile(&mut self, key: &ObjectKey, ctx: &mut Context<'_>) -> Requeue {
            self.reconciled.push(key.name.clone());
            let Some(thing) = ctx.get(key) else { return Requeue::AwaitChange };
            if thing.status.get("seen") != thing.spec.get("want") {
                let mut object = thing.clone();
                object.status = json!({ "seen": thing.spec["want"] }).into();
                ctx.update_status(object);
            }
            match thing.spec.get("requeueMs").and_then(serde_json::Value::as_u64) {
                Some(ms) => Requeue::AfterMs(ms),
                None => Requeue::AwaitChange,
            }
        }
    }

    fn thing(name: &str, want: u64, rv: &str) -> Object {
        object("Thing", "default", name)
            .with_uid(&format!("uid-{name}"))
            .at_version(rv)
            .with_spec(json!({"want": want}))
    }

    fn started() -> Runtime<Mirror> {
        let mut runtime = Runtime::new(Mirror::default());
        runtime.init(&ComponentConfig::default());
        runtime
    }

    fn status_write(thing: &Object, seen: u64) -> Action {
        let mut object = thing.clone();
        object.status = json!({ "seen": seen }).into();
        Action::UpdateStatus { object, dry_run: false }
    }

    #[test]
    fn nothing_is_reconciled_before_every_watch_has_listed() {
        let mut runtime = started();
        let a = thing("a", 1, "2");
        let out = runtime.handle(&input(0, vec![listed(0, "2", vec![a.clone()])]));
        assert_eq!(out.actions, vec![], "the pods are not listed yet");
        assert_eq!(runtime.dirty().count(), 1);
        let out = runtime.handle(&input(1, vec![listed(1, "2", vec![])]));
        assert_eq!(out.actions, vec![status_write(&a, 1)]);
        assert_eq!(runtime.reconciler().reconciled, vec!["a"]);
    }

    #[test]
    fn a_write_in_flight_is_not_repeated_until_its_result_and_the_cache_move_on() {
        let mut runtime = started();
        let a = thing("a", 1, "2");
        runtime.handle(&input(0, vec![listed(0, "2", vec![a.clone()]), listed(1, "2", vec![])]));

        // A change elsewhere re-reconciles `a` from the same stale view: no second write.
        let a_again = thing("a", 1, "2");
        let unrelated = pod("default", "p", "uid-p", "3").owned_by(&a_again);
        let out = runtime.handle(&input(1, vec![added(1, unrelated)]));
        assert_eq!(out.actions, vec![]);
        assert_eq!(runtime.reconciler().reconciled, vec!["a", "a"], "an owned pod maps to its owner");

        // The result arrives, then the watch event: settled, and nothing left to do.
        let mut written = a.clone().at_version("4");
        written.status = json!({"seen": 1}).into();
        runtime.handle(&input(2, vec![InputEvent::Result(Box::new(succeeded(Verb::UpdateStatus, &written)))]));
        let out = runtime.handle(&input(3, vec![modified(0, written)]));
        assert_eq!(out.actions, vec![]);
    }

    #[test]
    fn a_transient_failure_is_retried_after_a_second_through_a_timer() {
        let mut runtime = started();
        let a = thing("a", 1, "2");
        runtime.handle(&input(0, vec![listed(0, "2", vec![a.clone()]), listed(1, "2", vec![])]));
        let result = failed(Verb::UpdateStatus, &a.key(), StatusReason::ServiceUnavailable);
        let out = runtime.handle(&input(10, vec![InputEvent::Result(Box::new(result))]));
        assert_eq!(out.actions, vec![Action::RequeueAfter { key: "Thing/default/a".into(), after_ms: 1_000 }]);
        let out = runtime.handle(&input(1_010, vec![timer("Thing/default/a")]));
        assert_eq!(out.actions, vec![status_write(&a, 1)]);
    }

    #[test]
    fn a_requeue_is_a_deduplicated_timer_that_reconciles_the_key_again() {
        let mut runtime = started();
        let mut a = thing("a", 1, "2");
        a.status = json!({"seen": 1}).into();
        a.spec["requeueMs"] = json!(500);
        let out = runtime.handle(&input(0, vec![listed(0, "2", vec![a.clone()]), listed(1, "2", vec![])]));
        assert_eq!(out.actions, vec![Action::RequeueAfter { key: "Thing/default/a".into(), after_ms: 500 }]);
        let out = runtime.handle(&input(100, vec![timer("unrelated")]));
        assert_eq!(out.actions, vec![]);
        let out = runtime.handle(&input(500, vec![timer("Thing/default/a")]));
        assert_eq!(out.actions, vec![Action::RequeueAfter { key: "Thing/default/a".into(), after_ms: 500 }]);
        assert_eq!(runtime.reconciler().reconciled, vec!["a", "a"]);
    }

    #[test]
    fn init_starts_a_fresh_instance_with_nothing_remembered() {
        let mut runtime = started();
        let a = thing("a", 1, "2");
        runtime.handle(&input(0, vec![listed(0, "2", vec![a.clone()]), listed(1, "2", vec![])]));
        runtime.init(&ComponentConfig::default());
        assert_eq!(runtime.cache().len(0), 0);
        // The write of the previous instance is forgotten: the same view writes again.
        let out = runtime.handle(&input(5, vec![listed(0, "2", vec![a.clone()]), listed(1, "2", vec![])]));
        assert_eq!(out.actions, vec![status_write(&a, 1)]);
    }

    /// Exercises the hooks besides `keys_for`, driven by each Thing's spec:
    /// `createPod` creates a pod by `generateName`, `groupMs` sets the
    /// timer "group", `deleteGrace` deletes the Thing with that grace
    /// period through [`Context::send`]. Results of creates wake the key
    /// "created", the timer "group" every Thing, containers the key "node".
    #[derive(Default)]
    struct Hooks {
        reconciled: Vec<String>,
        results: Vec<Verb>,
    }

    impl Reconciler for Hooks {
        fn init(&mut self, _config: &ComponentConfig) -> Manifest {
            *self = Hooks::default();
            let watches = vec![WatchSpec { kind: "Thing".into(), ..WatchSpec::default() }];
            Manifest { name: "hooks".into(), abi_version: ABI_VERSION, watches, ..Manifest::default() }
        }

        fn keys_for_result(&mut self, result: &ActionResult, _cache: &Cache, _now_ms: u64) -> Vec<ObjectKey> {
            self.results.push(result.verb);
            match result.verb {
                Verb::Create => vec![ObjectKey::new("Thing", "default", "created")],
                _ => Vec::new(),
            }
        }

        fn keys_for_timer(&mut self, timer: &str) -> Vec<ObjectKey> {
            match timer {
                "group" => ["a", "b"].map(|name| ObjectKey::new("Thing", "default", name)).into(),
                _ => parse_timer_key(timer).into_iter().collect(),
            }
        }

        fn keys_for_containers(&mut self, _containers: &[Container], _cache: &Cache) -> Vec<ObjectKey> {
            vec![ObjectKey::new("Thing", "default", "node")]
        }

        fn reconcile(&mut self, key: &ObjectKey, ctx: &mut Context<'_>) -> Requeue {
            self.reconciled.push(key.name.clone());
            let Some(thing) = ctx.get(key) else { return Requeue::AwaitChange };
            if thing.spec.get("createPod").is_some() {
                let mut pod = object("Pod", "default", "");
                pod.metadata.generate_name = "p-".into();
                ctx.create(pod);
            }
            if let Some(ms) = thing.spec.get("groupMs").and_then(serde_json::Value::as_u64) {
                ctx.set_timer("group", ms);
            }
            if let Some(grace) = thing.spec.get("deleteGrace").and_then(serde_json::Value::as_i64) {
                ctx.send(delete_with_grace(thing, grace));
            }
            Requeue::AwaitChange
        }
    }

    fn hooks() -> Runtime<Hooks> {
        let mut runtime = Runtime::new(Hooks::default());
        runtime.init(&ComponentConfig::default());
        runtime
    }

    fn delete_with_grace(thing: &Object, grace: i64) -> Action {
        Action::Delete {
            key: thing.key(),
            uid: Some(thing.metadata.uid.clone()),
            resource_version: None,
            grace_period_seconds: Some(grace),
            propagation_policy: None,
            dry_run: false,
        }
    }

    #[test]
    fn a_result_the_runtime_cannot_match_reaches_keys_for_result_which_wakes_its_keys() {
        let mut runtime = hooks();
        let a = thing("a", 1, "2").with_spec(json!({"createPod": true}));
        let out = runtime.handle(&input(0, vec![listed(0, "2", vec![a])]));
        assert_eq!(out.actions.len(), 1, "a create by generateName is sent untracked: {:?}", out.actions);

        // No name to match on: the runtime sets no retry, the hook decides.
        let result = failed(Verb::Create, &ObjectKey::new("Pod", "default", ""), StatusReason::ServiceUnavailable);
        let out = runtime.handle(&input(1, vec![InputEvent::Result(Box::new(result))]));
        assert_eq!(out.actions, vec![]);
        assert_eq!(runtime.reconciler().results, vec![Verb::Create]);
        assert_eq!(runtime.reconciler().reconciled, vec!["a", "created"]);
    }

    #[test]
    fn a_named_timer_is_set_once_and_wakes_the_keys_keys_for_timer_maps_it_to() {
        let mut runtime = hooks();
        let group = |name| thing(name, 1, "2").with_spec(json!({"groupMs": 100}));
        let out = runtime.handle(&input(0, vec![listed(0, "2", vec![group("a"), group("b"), thing("c", 1, "2")])]));
        assert_eq!(out.actions, vec![Action::RequeueAfter { key: "group".into(), after_ms: 100 }]);

        // A timer whose name is neither a key nor mapped wakes nothing.
        assert_eq!(runtime.handle(&input(50, vec![timer("other")])).actions, vec![]);
        let out = runtime.handle(&input(100, vec![timer("group")]));
        assert_eq!(out.actions, vec![Action::RequeueAfter { key: "group".into(), after_ms: 100 }]);
        assert_eq!(runtime.reconciler().reconciled, vec!["a", "b", "c", "a", "b"]);
    }

    #[test]
    fn a_node_agents_containers_make_its_keys_dirty_on_every_call_once_synced() {
        let mut runtime = hooks();
        assert_eq!(runtime.handle(&node_input(0, vec![], vec![])).actions, vec![]);
        assert!(runtime.reconciler().reconciled.is_empty(), "nothing before the first list");

        runtime.handle(&node_input(1, vec![listed(0, "2", vec![])], vec![]));
        // No event at all, and still reconciled: the snapshot is the input.
        runtime.handle(&node_input(2, vec![], vec![]));
        assert_eq!(runtime.reconciler().reconciled, vec!["node", "node"]);

        // An input without containers (not a node agent's) makes nothing dirty.
        runtime.handle(&input(3, vec![]));
        assert_eq!(runtime.reconciler().reconciled, vec!["node", "node"]);
    }

    #[test]
    fn send_tracks_a_write_with_its_options_like_the_other_writes() {
        let mut runtime = hooks();
        let a = thing("a", 1, "2").with_spec(json!({"deleteGrace": 0}));
        let out = runtime.handle(&input(0, vec![listed(0, "2", vec![a.clone()])]));
        assert_eq!(out.actions, vec![delete_with_grace(&a, 0)]);

        // Woken again from the same view while the delete is in flight: not sent twice.
        assert_eq!(runtime.handle(&input(1, vec![timer("Thing/default/a")])).actions, vec![]);
        // A transient failure is retried by the runtime, with the same options.
        let result = failed(Verb::Delete, &a.key(), StatusReason::ServiceUnavailable);
        let out = runtime.handle(&input(2, vec![InputEvent::Result(Box::new(result))]));
        assert_eq!(out.actions, vec![Action::RequeueAfter { key: "Thing/default/a".into(), after_ms: 1_000 }]);
        let out = runtime.handle(&input(1_002, vec![timer("Thing/default/a")]));
        assert_eq!(out.actions, vec![delete_with_grace(&a, 0)]);
    }

    /// Reads its primary object directly (a quorum get) once, and records
    /// what the read returned when it comes back.
    #[derive(Default)]
    struct Direct {
        asked: Option<RequestId>,
        got: Vec<ActionResult>,
    }

    impl Reconciler for Direct {
        fn init(&mut self, _config: &ComponentConfig) -> Manifest {
            *self = Direct::default();
            let watches = vec![WatchSpec { kind: "Thing".into(), ..WatchSpec::default() }];
            Manifest { name: "direct".into(), abi_version: ABI_VERSION, watches, ..Manifest::default() }
        }

        fn reconcile(&mut self, key: &ObjectKey, ctx: &mut Context<'_>) -> Requeue {
            match self.asked {
                None => self.asked = Some(ctx.get_direct(key, None)),
                Some(id) => self.got.extend(ctx.take_result(id)),
            }
            Requeue::AwaitChange
        }
    }

    #[test]
    fn a_direct_read_gets_an_id_and_its_result_wakes_the_key_that_sent_it() {
        let mut runtime = Runtime::new(Direct::default());
        runtime.init(&ComponentConfig::default());
        let a = thing("a", 1, "2");
        let out = runtime.handle(&input(0, vec![listed(0, "2", vec![a.clone()])]));
        assert_eq!(out.actions, vec![Action::Get { key: a.key(), resource_version: None }]);
        let id = out.request_id(0).expect("the SDK numbers every request");

        // Another request's result (by id) does not wake the key; its own does.
        let mut other = succeeded(Verb::Get, &a);
        other.id = Some(id + 100);
        runtime.handle(&input(1, vec![InputEvent::Result(Box::new(other))]));
        assert!(runtime.reconciler().got.is_empty());
        let mut mine = succeeded(Verb::Get, &a);
        mine.id = Some(id);
        runtime.handle(&input(2, vec![InputEvent::Result(Box::new(mine.clone()))]));
        assert_eq!(runtime.reconciler().got, vec![mine], "handed to the reconcile of the key that asked");
    }
}
