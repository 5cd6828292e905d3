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
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use recon_abi::{
    ABI_VERSION, Action, ActionResult, ComponentConfig, Input, InputEvent, ListMode, Manifest, Object, Output,
    RequestId, Verb, WatchEvent, WatchSpec, WritePermission,
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
    Listed(&'a [Object]),
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
        let state = Rc::new(RefCell::new(State { params: config.params.clone(), ..State::default() }));
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
                    // A result without a slot was given up on (or is not ours).
                    if let Some(pending) = result.id.and_then(|id| state.pending.get_mut(&id)) {
                        pending.result = Some(result.clone());
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
        let (result, lines) = recon_sdk::capture_logs(|| catching(export, || call(&mut self.plugin)));
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

fn catching<T>(export: &str, f: impl FnOnce() -> T) -> Result<T, recon_abi::Crash> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|payload| {
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("a panic with a non-string payload");
        recon_abi::Crash::new(format!("{export} panicked: {}", message.replace('\n', " ")))
    })
}
