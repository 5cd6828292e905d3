//! Where kube's API meets Recon's plugin ABI: [`Plugin`] is the
//! [`recon_abi::Controller`] that runs a controller's `main` on the
//! [`Executor`], and the state every [`Api`](crate::Api) call and every
//! [`Controller`](crate::runtime::Controller) reaches while the plugin is
//! being called.
//!
//! One call of the plugin (`recon_init` or `recon_handle`):
//!
//! 1. installs the instance's state as the current one for this thread;
//! 2. `handle` only: takes in the input: list results and watch events go to
//!    the reflectors that asked for them (their stores change, their
//!    controllers are triggered), request results to the futures waiting
//!    for them (by request id), and every timer that is due fires;
//! 3. polls every ready task until all of them wait;
//! 4. returns what the tasks asked for: the manifest (the watches the
//!    controllers registered, and every kind an `Api` was made for) from
//!    `init`, the actions with their request ids from `handle`.
//!
//! A request made during `init` is sent with the first `handle`'s output:
//! `init` returns only the manifest.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use recon_abi::{
    ABI_VERSION, Action, ActionResult, ComponentConfig, HeldSync, Input, InputEvent, ListMode, Manifest, Mitigation,
    Object, ObjectKey, Outcome, Output, RequestId, Verb, WatchEvent, WatchSpec, WritePermission,
};

use crate::executor::Executor;

/// Writes a line to the component's log (the plugin ABI's `recon.log`;
/// nothing when linked natively, so a line logged in a Wasm plugin only
/// is part of its trace there).
pub use recon_sdk::log;

/// What a watch hands its reflector: a whole list, or one event.
#[derive(Clone, Copy, Debug)]
pub(crate) enum WatchInput<'a> {
    /// A (re)list: the objects replace everything the watch knew.
    Listed(&'a [Arc<Object>]),
    /// One watch event.
    Event(&'a WatchEvent),
}

/// Takes a watch's input (decodes it, updates a store, triggers reconciles).
pub(crate) type Sink = Box<dyn FnMut(WatchInput<'_>, u64)>;

/// The slot a request's result lands in.
#[derive(Default)]
struct Pending {
    result: Option<ActionResult>,
    waker: Option<Waker>,
}

/// The state of one plugin instance that API calls and controllers reach
/// during a call (see the module documentation).
#[derive(Default)]
pub(crate) struct State {
    /// Virtual time of the current call; `None` until the first `handle`.
    now_ms: Option<u64>,
    next_request: RequestId,
    outbox: Output,
    pending: BTreeMap<RequestId, Pending>,
    watches: Vec<WatchSpec>,
    sinks: Vec<Option<Sink>>,
    /// Kinds an `Api` was made for: the manifest allows every verb on them.
    kinds: BTreeSet<String>,
    list_mode: ListMode,
    /// Wakers by the virtual time they wait for.
    timers: BTreeMap<u64, Vec<Waker>>,
    /// Wakers of sleeps that started before the time was known.
    waiting_for_time: Vec<Waker>,
    /// The component's parameters (the scenario's `params`).
    params: BTreeMap<String, serde_json::Value>,
    /// By watch: the resourceVersion of the last list, event or bookmark
    /// it delivered (empty before its first list).
    synced: Vec<String>,
    /// The own writes the mitigations wait for, and the reconciles they hold.
    own_writes: OwnWrites,
}

/// What the staleness mitigations ([`Mitigation`]) remember: the
/// component's own writes, and the reconciles held until its informers
/// observe them. Lost with the instance, as a real controller's memory.
#[derive(Debug, Default)]
pub(crate) struct OwnWrites {
    /// The mitigations the scenario switched on.
    mitigations: Vec<Mitigation>,
    /// The object whose reconcile is being polled, while it is.
    reconciling: Option<ObjectKey>,
    /// Requests sent by a reconcile, by id: the object it reconciled.
    sent_for: BTreeMap<RequestId, ObjectKey>,
    /// Per reconciled object: the highest resourceVersion it wrote, per kind.
    by_object: BTreeMap<ObjectKey, BTreeMap<String, u64>>,
    /// The highest resourceVersion the component wrote, per kind.
    by_kind: BTreeMap<String, u64>,
    /// Reconciles held now, by object.
    held: BTreeMap<ObjectKey, HeldSync>,
}

/// The first sync KEP-5647's rate limiter waits after a skip: client-go's
/// `DefaultControllerRateLimiter` starts at 5 ms and doubles per failure.
const SKIP_BACKOFF_BASE_MS: u64 = 5;
/// Its ceiling: 1000 s.
const SKIP_BACKOFF_MAX_MS: u64 = 1_000_000;

/// How long a sync skipped `skips` times in a row waits before it is tried
/// again: 5 ms, 10 ms, 20 ms, … up to 1000 s, as a rate-limited requeue
/// (KEP-5647 requeues a skipped sync "the same way as if an error occurred").
pub(crate) fn skip_backoff_ms(skips: u32) -> u64 {
    let doublings = skips.saturating_sub(1).min(40);
    SKIP_BACKOFF_BASE_MS.saturating_mul(1 << doublings).min(SKIP_BACKOFF_MAX_MS)
}

impl OwnWrites {
    /// Notes a write's answer: an object written at a resourceVersion.
    fn written(&mut self, id: Option<RequestId>, result: &ActionResult) {
        let owner = id.and_then(|id| self.sent_for.remove(&id));
        let is_write = matches!(
            result.verb,
            Verb::Create | Verb::Update | Verb::UpdateStatus | Verb::Patch | Verb::PatchStatus | Verb::Delete
        );
        let Outcome::Ok(Some(object)) = &result.outcome else { return };
        let Some(version) = object.metadata.resource_version.parse::<u64>().ok().filter(|_| is_write) else { return };
        let kind = &result.key.kind;
        let highest = self.by_kind.entry(kind.clone()).or_default();
        *highest = (*highest).max(version);
        if let Some(owner) = owner {
            let highest = self.by_object.entry(owner).or_default().entry(kind.clone()).or_default();
            *highest = (*highest).max(version);
        }
    }

    /// The first own write (kind, resourceVersion, where its informer is)
    /// that `mitigation` makes a reconcile of `object` wait for; `seen`
    /// says where the informer of a kind is (`None`: no informer of it,
    /// nothing to wait on).
    fn unseen(
        &self,
        mitigation: Mitigation,
        object: &ObjectKey,
        seen: impl Fn(&str) -> Option<u64>,
    ) -> Option<(String, u64, u64)> {
        let writes = match mitigation {
            Mitigation::StaleControllerConsistency => self.by_object.get(object)?,
            Mitigation::ReadYourOwnWrites => &self.by_kind,
        };
        writes.iter().find_map(|(kind, written)| {
            let seen = seen(kind)?;
            (seen < *written).then(|| (kind.clone(), *written, seen))
        })
    }

    /// Whether the reconcile of `object` may start at `now_ms`: `None` if
    /// it may, else how long to wait before trying again. A wait's start
    /// and end are reported in `outbox`.
    fn gate(
        &mut self,
        object: &ObjectKey,
        now_ms: u64,
        seen: impl Fn(&str) -> Option<u64>,
        outbox: &mut Output,
    ) -> Option<u64> {
        let unseen = self.mitigations.iter().find_map(|m| self.unseen(*m, object, &seen).map(|u| (*m, u)));
        match unseen {
            Some((mitigation, (kind, resource_version, seen))) => {
                let held = self.held.entry(object.clone()).or_insert_with(|| HeldSync {
                    mitigation,
                    object: object.clone(),
                    kind: kind.clone(),
                    resource_version,
                    seen,
                    since_ms: now_ms,
                    skips: 0,
                    released: false,
                });
                held.skips += 1;
                if held.skips == 1 {
                    outbox.held.push(held.clone());
                }
                (held.mitigation, held.kind, held.resource_version, held.seen) =
                    (mitigation, kind, resource_version, seen);
                Some(skip_backoff_ms(held.skips))
            }
            None => {
                if let Some(mut held) = self.held.remove(object) {
                    held.seen = seen(&held.kind).unwrap_or(held.seen);
                    held.released = true;
                    outbox.held.push(held);
                }
                None
            }
        }
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<RefCell<State>>>> = const { RefCell::new(None) };
}

/// Runs `f` on the current instance's state. Panics outside a plugin call:
/// kube's API has no cluster to talk to anywhere else.
pub(crate) fn with_state<T>(f: impl FnOnce(&mut State) -> T) -> T {
    let state = CURRENT.with_borrow(|current| current.clone()).unwrap_or_else(|| {
        panic!(
            "the kube API was used outside a Recon plugin call: Api, Client and Controller work only in the \
             `main` a recon_kube::Plugin runs"
        )
    });
    let mut state = state.borrow_mut();
    f(&mut state)
}

/// Makes `state` current for the duration of `f`.
fn installed<T>(state: &Rc<RefCell<State>>, f: impl FnOnce() -> T) -> T {
    struct Uninstall(Option<Rc<RefCell<State>>>);
    impl Drop for Uninstall {
        fn drop(&mut self) {
            let previous = self.0.take();
            CURRENT.with_borrow_mut(|current| *current = previous);
        }
    }
    let previous = CURRENT.with_borrow_mut(|current| current.replace(state.clone()));
    let _uninstall = Uninstall(previous);
    f()
}

impl State {
    /// Sends a request; its result will wait under the returned id.
    fn send(&mut self, action: Action) -> RequestId {
        self.next_request += 1;
        let id = self.next_request;
        if let Some(object) = &self.own_writes.reconciling {
            self.own_writes.sent_for.insert(id, object.clone());
        }
        self.outbox.push_request(id, action);
        self.pending.insert(id, Pending::default());
        id
    }

    /// Registers a watch and the sink for its input; returns its index.
    pub(crate) fn watch(&mut self, spec: WatchSpec, list_mode: ListMode, sink: Sink) -> usize {
        self.kinds.insert(spec.kind.clone());
        // The strictest first list any watch asks for is the component's.
        self.list_mode = strictest(self.list_mode, list_mode);
        self.watches.push(spec);
        self.sinks.push(Some(sink));
        self.synced.push(String::new());
        self.watches.len() - 1
    }

    /// Notes that watch `watch` has delivered everything up to `version`.
    fn synced_to(&mut self, watch: usize, version: &str) {
        if let Some(synced) = self.synced.get_mut(watch) {
            synced.replace_range(.., version);
        }
    }

    /// Notes that an `Api` was made for `kind`.
    pub(crate) fn uses_kind(&mut self, kind: &str) {
        if !self.kinds.contains(kind) {
            self.kinds.insert(kind.to_owned());
        }
    }

    fn manifest(&self, name: &str) -> Manifest {
        let verbs = vec![
            Verb::Create,
            Verb::Update,
            Verb::UpdateStatus,
            Verb::Delete,
            Verb::Patch,
            Verb::PatchStatus,
            Verb::Get,
            Verb::List,
        ];
        Manifest {
            name: name.to_owned(),
            abi_version: ABI_VERSION,
            watches: self.watches.clone(),
            writes: self
                .kinds
                .iter()
                .map(|kind| WritePermission { kind: kind.clone(), verbs: verbs.clone() })
                .collect(),
            node_agent: false,
            list_mode: self.list_mode,
            ..Manifest::default()
        }
    }

    /// Fires the timers due at `now`.
    fn advance(&mut self, now: u64) {
        self.now_ms = Some(now);
        for waker in self.waiting_for_time.drain(..) {
            waker.wake();
        }
        let later = self.timers.split_off(&(now + 1));
        for (_, wakers) in std::mem::replace(&mut self.timers, later) {
            wakers.into_iter().for_each(Waker::wake);
        }
    }
}

fn strictest(a: ListMode, b: ListMode) -> ListMode {
    let rank = |m: ListMode| match m {
        ListMode::Any => 0,
        ListMode::Quorum => 1,
        ListMode::Consistent => 2,
    };
    if rank(b) > rank(a) { b } else { a }
}

/// Whether the controller may start reconciling `object` now, as the
/// component's staleness mitigations decide: `None` if it may, else how
/// long (virtual ms) until it tries again. Always `None` with none on.
pub(crate) fn may_sync(object: &ObjectKey) -> Option<u64> {
    with_state(|state| {
        if state.own_writes.mitigations.is_empty() {
            return None;
        }
        let now = state.now_ms.unwrap_or(0);
        let State { own_writes, outbox, watches, synced, .. } = state;
        let seen = |kind: &str| {
            let synced = watches.iter().zip(synced.iter()).filter(|(spec, _)| spec.kind == kind);
            synced.map(|(_, version)| version.parse::<u64>().ok()).min().flatten()
        };
        own_writes.gate(object, now, seen, outbox)
    })
}

/// Runs `poll` with the requests it sends counted as made while
/// reconciling `object` (what KEP-5647 remembers its writes under).
pub(crate) fn reconciling<T>(object: &ObjectKey, poll: impl FnOnce() -> T) -> T {
    let tracked = with_state(|state| {
        let on = !state.own_writes.mitigations.is_empty();
        if on {
            state.own_writes.reconciling = Some(object.clone());
        }
        on
    });
    let result = poll();
    if tracked {
        with_state(|state| state.own_writes.reconciling = None);
    }
    result
}

/// Sends `action` and waits for its result, matched by request id.
pub(crate) async fn request(action: Action) -> ActionResult {
    let id = with_state(|state| state.send(action));
    ResultOf { id }.await
}

/// The future of one request's result.
struct ResultOf {
    id: RequestId,
}

impl Future for ResultOf {
    type Output = ActionResult;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<ActionResult> {
        let id = self.id;
        with_state(|state| {
            let pending = state.pending.get_mut(&id).expect("a request's slot lives until its future is dropped");
            match pending.result.take() {
                Some(result) => {
                    state.pending.remove(&id);
                    Poll::Ready(result)
                }
                None => {
                    pending.waker = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
    }
}

impl Drop for ResultOf {
    fn drop(&mut self) {
        // A request given up on: its result, when it comes, is dropped.
        let id = self.id;
        let _ = CURRENT.try_with(|current| {
            if let Some(state) = current.borrow().as_ref()
                && let Ok(mut state) = state.try_borrow_mut()
            {
                state.pending.remove(&id);
            }
        });
    }
}

/// The virtual time of the current call, in milliseconds: the only clock a
/// plugin has (`Input.timeMs`). `None` during `init`, before the host has
/// said what time it is.
pub fn now_ms() -> Option<u64> {
    with_state(|state| state.now_ms)
}

/// Why a component parameter cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ParamError {
    /// The scenario gives the parameter a value of another type: fix it
    /// under the component's `params`.
    #[error("component parameter `{name}`: {source}")]
    Invalid {
        /// The parameter's name.
        name: String,
        /// Why its value does not decode as the type asked for.
        #[source]
        source: serde_json::Error,
    },
}

/// The component parameter `name` (the scenario's `params:` of this
/// component), decoded as `T`; `Ok(None)` when the scenario does not set
/// it. A real controller reads such settings from its command line or
/// environment, which a plugin does not have; this is where Recon puts
/// them. Call it from `main` (or anything it runs).
pub fn param<T: serde::de::DeserializeOwned>(name: &str) -> Result<Option<T>, ParamError> {
    let value = with_state(|state| state.params.get(name).cloned());
    value
        .map(|value| {
            serde_json::from_value(value).map_err(|source| ParamError::Invalid { name: name.to_owned(), source })
        })
        .transpose()
}

/// The resourceVersion up to which the component's watch of kind `K` has
/// delivered (its last list, watch event or bookmark): client-go's
/// `LastSyncResourceVersion()` of an informer, which kube's stores do not
/// offer; with several watches of `K`, the one furthest behind. `None`
/// before its first list (or without a watch of `K`). A store fed by the
/// watch shows everything up to this version once the watch's stream has
/// been polled, as it is before any reconcile starts.
pub fn last_sync_resource_version<K: kube_core::Resource<DynamicType = ()>>() -> Option<String> {
    let kind = K::kind(&());
    with_state(|state| {
        let synced = state.watches.iter().zip(&state.synced).filter(|(spec, _)| spec.kind == kind);
        // Revisions compare as numbers (KEP-5504: resourceVersions are comparable).
        synced.map(|(_, version)| version).min_by_key(|version| version.parse::<u64>().unwrap_or(0)).cloned()
    })
    .filter(|version| !version.is_empty())
}

/// The `pod-template-hash` of a pod template (`spec.template` of a
/// Deployment): a label-safe FNV-1a hash of its JSON, as Kubernetes'
/// `controller.ComputeHash` (which hashes the template's Go rendering, so
/// the values differ; what matters is that equal templates hash equal and
/// a changed one does not). kube has no such helper; every Deployment-like
/// controller needs one, and Recon's other built-ins use this same hash.
pub fn pod_template_hash<T: serde::Serialize>(template: &T) -> String {
    // A template that came from JSON always renders back to JSON.
    recon_sdk::hash::template_hash(&serde_json::to_value(template).unwrap_or_default())
}

/// Waits `duration` of virtual time (a requeue timer on the host), as
/// `tokio::time::sleep` would in a real cluster.
pub async fn sleep(duration: Duration) {
    let after = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    let start = Start.await;
    sleep_until(start.saturating_add(after)).await;
}

/// Resolves with the current virtual time, once there is one.
struct Start;

impl Future for Start {
    type Output = u64;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u64> {
        with_state(|state| match state.now_ms {
            Some(now) => Poll::Ready(now),
            None => {
                state.waiting_for_time.push(cx.waker().clone());
                Poll::Pending
            }
        })
    }
}

/// Waits until virtual time `due_ms`.
pub(crate) fn sleep_until(due_ms: u64) -> SleepUntil {
    SleepUntil { due_ms }
}

/// The future of [`sleep_until`].
#[derive(Debug)]
pub(crate) struct SleepUntil {
    due_ms: u64,
}

impl SleepUntil {
    /// The virtual time it waits for.
    pub(crate) fn due_ms(&self) -> u64 {
        self.due_ms
    }
}

impl Future for SleepUntil {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let due = self.due_ms;
        with_state(|state| {
            let Some(now) = state.now_ms else {
                state.waiting_for_time.push(cx.waker().clone());
                return Poll::Pending;
            };
            if now >= due {
                return Poll::Ready(());
            }
            let wakers = state.timers.entry(due).or_default();
            if wakers.is_empty() {
                // One host timer per distinct time, however many wait for it.
                let action = Action::RequeueAfter { key: format!("kube-timer/{due}"), after_ms: due - now };
                state.outbox.actions.push(action);
            }
            wakers.push(cx.waker().clone());
            Poll::Pending
        })
    }
}

/// What a controller's `main` may return: nothing, or a `Result` whose
/// error ends the instance (as a process exits with it).
pub trait MainResult {
    /// `Err` with the error's `Debug` text, as Rust's `main` reports it.
    fn into_outcome(self) -> Result<(), String>;
}

impl MainResult for () {
    fn into_outcome(self) -> Result<(), String> {
        Ok(())
    }
}

impl<E: Debug> MainResult for Result<(), E> {
    fn into_outcome(self) -> Result<(), String> {
        self.map_err(|e| format!("{e:?}"))
    }
}

type Main = Box<dyn Fn() -> Pin<Box<dyn Future<Output = ()>>>>;

/// A kube-rs controller as a Recon controller: each fresh instance runs
/// `main` (the controller's `async fn main`, without `#[tokio::main]`) on
/// the plugin's executor. See the crate documentation for how `main`
/// changes.
pub struct Plugin {
    name: String,
    main: Main,
    /// Kinds declared with [`Plugin::allow`].
    allowed: Vec<String>,
    instance: Option<(Executor, Rc<RefCell<State>>)>,
}

impl Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin").field("name", &self.name).finish_non_exhaustive()
    }
}

impl Plugin {
    /// The controller `name` (its manifest's name), running `main`.
    pub fn new<F, Fut>(name: &str, main: F) -> Plugin
    where
        F: Fn() -> Fut + 'static,
        Fut: Future + 'static,
        Fut::Output: MainResult,
    {
        let main: Main = Box::new(move || {
            let run = main();
            Box::pin(async move {
                match run.await.into_outcome() {
                    Ok(()) => recon_sdk::log("main returned; the controller does nothing more"),
                    Err(e) => panic!("main returned an error: {e}"),
                }
            })
        });
        Plugin { name: name.to_owned(), main, allowed: Vec::new(), instance: None }
    }

    /// Also allows every verb on kind `K`, as a ClusterRole would: for a
    /// kind the controller only makes an `Api` for inside a reconcile,
    /// which is after the manifest was sent. Without it a request on such
    /// a kind is refused with 403 Forbidden.
    #[must_use]
    pub fn allow<K: kube_core::Resource<DynamicType = ()>>(mut self) -> Plugin {
        self.allowed.push(K::kind(&()).into_owned());
        self
    }

    fn state(&self) -> &Rc<RefCell<State>> {
        &self.instance.as_ref().expect("recon_handle is called after recon_init").1
    }
}

impl recon_abi::Controller for Plugin {
    fn init(&mut self, config: &ComponentConfig) -> Manifest {
        // Every init is a fresh instance: nothing survives but the code.
        let own_writes = OwnWrites { mitigations: config.mitigations.clone(), ..OwnWrites::default() };
        let state = Rc::new(RefCell::new(State { params: config.params.clone(), own_writes, ..State::default() }));
        let mut executor = Executor::new();
        for kind in &self.allowed {
            state.borrow_mut().uses_kind(kind);
        }
        executor.spawn((self.main)());
        installed(&state, || executor.run_until_stalled());
        let manifest = state.borrow().manifest(&self.name);
        self.instance = Some((executor, state));
        manifest
    }

    /// No: the reflectors keep each object as the controller's own type
    /// (a k8s-openapi `Pod`, or a type that reads only some of its
    /// fields), so a table of the spec and status last delivered would be a
    /// second copy of every watched object, and the larger. At 1,000
    /// nodes it was 56 MiB of the ReplicaSet controller's 212; the run's
    /// time did not move with or without it.
    fn omit_unchanged(&self) -> bool {
        false
    }

    fn handle(&mut self, input: &Input) -> Output {
        let state = self.state().clone();
        state.borrow_mut().advance(input.time_ms);
        for event in &input.events {
            match event {
                InputEvent::Listed { watch, objects, resource_version } => {
                    state.borrow_mut().synced_to(*watch, resource_version);
                    feed(&state, *watch, WatchInput::Listed(objects), input)
                }
                InputEvent::Watch { watch, event } => {
                    // A bookmark's object carries only the version it marks.
                    state.borrow_mut().synced_to(*watch, &event.object.metadata.resource_version);
                    feed(&state, *watch, WatchInput::Event(event), input)
                }
                InputEvent::Result(result) => {
                    let mut state = state.borrow_mut();
                    state.own_writes.written(result.id, result);
                    // A result without a slot was given up on (or is not ours).
                    if let Some(pending) = result.id.and_then(|id| state.pending.get_mut(&id)) {
                        pending.result = Some(ActionResult::clone(result));
                        if let Some(waker) = pending.waker.take() {
                            waker.wake();
                        }
                    }
                }
                // Due timers fired in `advance`; the event only brought the call.
                InputEvent::Timer { .. } => {}
            }
        }
        let (executor, _) = self.instance.as_mut().expect("recon_handle is called after recon_init");
        installed(&state, || executor.run_until_stalled());
        std::mem::take(&mut state.borrow_mut().outbox)
    }
}

/// Hands a watch's input to its sink, with the state released (the sink
/// wakes tasks, never the state).
fn feed(state: &Rc<RefCell<State>>, watch: usize, input: WatchInput<'_>, call: &Input) {
    let Some(mut sink) = state.borrow_mut().sinks.get_mut(watch).and_then(Option::take) else { return };
    installed(state, || sink(input, call.time_ms));
    state.borrow_mut().sinks[watch] = Some(sink);
}

/// A [`Plugin`] linked natively: a panic in `main`, a reconcile or an
/// error policy crashes this component only, with the panic's message as
/// the reason, as the same panic traps a Wasm plugin.
///
/// What the plugin logs reaches the trace as a Wasm plugin's `recon.log`
/// lines do.
#[derive(Debug)]
pub struct Native {
    plugin: Plugin,
    /// Logged since the simulator last took them.
    logs: Vec<String>,
}

impl Native {
    /// Links `plugin` natively.
    pub fn new(plugin: Plugin) -> Native {
        Native { plugin, logs: Vec::new() }
    }

    fn call<T>(&mut self, export: &str, call: impl FnOnce(&mut Plugin) -> T) -> Result<T, recon_abi::Crash> {
        let (result, lines) = recon_sdk::capture_logs(|| recon_abi::catch_panic(export, || call(&mut self.plugin)));
        self.logs.extend(lines);
        result
    }
}

impl recon_abi::Instance for Native {
    fn init(&mut self, config: &ComponentConfig) -> Result<Manifest, recon_abi::Crash> {
        self.call("recon_init", |plugin| recon_abi::Controller::init(plugin, config))
    }

    fn handle(&mut self, input: &Input) -> Result<Output, recon_abi::Crash> {
        self.call("recon_handle", |plugin| recon_abi::Controller::handle(plugin, input))
    }

    fn take_logs(&mut self) -> Vec<String> {
        std::mem::take(&mut self.logs)
    }
}

#[cfg(test)]
mod own_writes_tests {
    //! The gate both staleness mitigations share, on its own: what each
    //! waits for, the back-off between skipped syncs, and the one report at
    //! each end of a wait.

    use recon_abi::{ActionResult, HeldSync, Mitigation, ObjectKey, Output, RequestId, Verb};
    use recon_sdk::testing::{ObjectExt, object, succeeded};

    use super::{OwnWrites, skip_backoff_ms};

    fn set(name: &str) -> ObjectKey {
        ObjectKey::new("ReplicaSet", "default", name)
    }

    /// A write of a pod at `version`, sent while reconciling `owner` as request `id`.
    fn pod_written(writes: &mut OwnWrites, owner: &ObjectKey, id: RequestId, version: &str) {
        writes.sent_for.insert(id, owner.clone());
        let pod = object("Pod", "default", &format!("p{id}")).at_version(version);
        writes.written(Some(id), &ActionResult { id: Some(id), ..succeeded(Verb::Create, &pod) });
    }

    fn gate(writes: &mut OwnWrites, object: &ObjectKey, now: u64, pods_seen: u64) -> (Option<u64>, Vec<HeldSync>) {
        let mut outbox = Output::default();
        let seen = |kind: &str| (kind == "Pod").then_some(pods_seen);
        let wait = writes.gate(object, now, seen, &mut outbox);
        (wait, outbox.held)
    }

    #[test]
    fn kep_5647_holds_only_the_object_whose_sync_wrote() {
        let mut writes =
            OwnWrites { mitigations: vec![Mitigation::StaleControllerConsistency], ..OwnWrites::default() };
        pod_written(&mut writes, &set("a"), 1, "40");
        let (wait, held) = gate(&mut writes, &set("a"), 100, 30);
        assert_eq!(wait, Some(5));
        let [held] = &held[..] else { panic!("{held:?}") };
        assert_eq!((held.kind.as_str(), held.resource_version, held.seen, held.since_ms), ("Pod", 40, 30, 100));
        // Another set's sync goes on: the KEP holds per object, not the controller.
        assert_eq!(gate(&mut writes, &set("b"), 100, 30), (None, vec![]));
    }

    #[test]
    fn read_your_own_writes_holds_every_sync_until_the_kind_is_caught_up() {
        let mut writes = OwnWrites { mitigations: vec![Mitigation::ReadYourOwnWrites], ..OwnWrites::default() };
        pod_written(&mut writes, &set("a"), 1, "40");
        // A list of pods waits for the highest pod write, whoever's sync made it.
        let (wait, held) = gate(&mut writes, &set("b"), 100, 39);
        assert_eq!((wait, held.len()), (Some(5), 1));
        assert_eq!(gate(&mut writes, &set("c"), 100, 40).0, None);
    }

    #[test]
    fn a_skipped_sync_backs_off_exponentially_and_reports_its_wait_once_at_each_end() {
        let mut writes =
            OwnWrites { mitigations: vec![Mitigation::StaleControllerConsistency], ..OwnWrites::default() };
        pod_written(&mut writes, &set("a"), 1, "40");
        let waits: Vec<Option<u64>> = (0..4).map(|i| gate(&mut writes, &set("a"), 100 + i, 30).0).collect();
        assert_eq!(waits, [Some(5), Some(10), Some(20), Some(40)]);
        let (wait, held) = gate(&mut writes, &set("a"), 900, 41);
        assert_eq!(wait, None);
        let [released] = &held[..] else { panic!("{held:?}") };
        assert!(released.released);
        assert_eq!((released.since_ms, released.skips, released.seen), (100, 4, 41));
        // Caught up: nothing more to report.
        assert_eq!(gate(&mut writes, &set("a"), 901, 41), (None, vec![]));
    }

    #[test]
    fn the_back_off_is_client_gos_default_5ms_doubling_to_1000s() {
        assert_eq!(skip_backoff_ms(1), 5);
        assert_eq!(skip_backoff_ms(2), 10);
        assert_eq!(skip_backoff_ms(40), 1_000_000);
    }

    #[test]
    fn a_kind_without_an_informer_and_a_failed_write_hold_nothing() {
        let mut writes = OwnWrites { mitigations: Mitigation::ALL.to_vec(), ..OwnWrites::default() };
        writes.sent_for.insert(1, set("a"));
        let event = object("Event", "default", "e").at_version("50");
        writes.written(Some(1), &ActionResult { id: Some(1), ..succeeded(Verb::Create, &event) });
        assert_eq!(gate(&mut writes, &set("a"), 0, 0), (None, vec![]));
    }
}
