//! The calling convention between the host and a controller.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::containers::ContainerChanges;
use crate::object::{Object, ObjectKey, PodRef, WatchEvent, write_key};
use crate::patch::{Patch, PatchParams};

/// A controller: the one interface through which the simulator drives every
/// component that reacts to cluster state (scheduler, kubelets, workload
/// controllers, user plugins).
///
/// A controller owns its informer cache: the host delivers list results and
/// watch events and never lets it read the store directly. All of its effects
/// are returned as [`Action`] values that the host applies, so a controller is
/// a pure function of the inputs it has been given. It must not read a clock
/// or a source of randomness; [`Input::time_ms`] is the only time there is.
pub trait Controller {
    /// Called once on every fresh instance (first start and every restart),
    /// before any [`Controller::handle`]. Returns what the instance watches
    /// and may write.
    fn init(&mut self, config: &ComponentConfig) -> Manifest;

    /// Reacts to one batch of input and returns the actions to apply.
    fn handle(&mut self, input: &Input) -> Output;

    /// Whether, as a Wasm plugin, its glue keeps the `spec` and `status` of
    /// the last version of each object its watches delivered, so that the
    /// host may leave unchanged ones out of watch events
    /// ([`Manifest::omit_unchanged`]). Yes by default: a controller that
    /// keeps the objects it is handed shares those parts with the glue's
    /// table, which then costs little. A controller that keeps objects of
    /// its own types instead (recon-kube's, which reads each into a
    /// k8s-openapi type) says no: the table would be a second copy of
    /// every object it watches. Linked natively nothing is encoded, and
    /// this is not asked.
    fn omit_unchanged(&self) -> bool {
        true
    }
}

/// How the host drives one controller instance. Unlike [`Controller`], a
/// call may fail: a sandboxed plugin can trap, run out of fuel or memory,
/// or return output that does not decode. A failure crashes that instance
/// only; the host restarts it later with a fresh instance.
///
/// Every [`Controller`] is an `Instance` that never fails, which is how
/// controllers linked natively and Wasm plugins run through one mechanism.
pub trait Instance {
    /// See [`Controller::init`].
    fn init(&mut self, config: &ComponentConfig) -> Result<Manifest, Crash>;

    /// See [`Controller::handle`].
    fn handle(&mut self, input: &Input) -> Result<Output, Crash>;

    /// The lines the instance logged since this was last called (a Wasm
    /// plugin's `recon.log` lines), for the trace; the simulator takes
    /// them after every call. None by default: a controller linked in
    /// natively has no log.
    fn take_logs(&mut self) -> Vec<String> {
        Vec::new()
    }
}

/// A controller linked natively: a panic in it crashes its component, as a
/// trap crashes a Wasm plugin's, instead of the simulator.
impl<T: Controller> Instance for T {
    fn init(&mut self, config: &ComponentConfig) -> Result<Manifest, Crash> {
        catch_panic("recon_init", || Controller::init(self, config))
    }

    fn handle(&mut self, input: &Input) -> Result<Output, Crash> {
        catch_panic("recon_handle", || Controller::handle(self, input))
    }
}

/// Why a controller instance died, in one line that names the cause
/// (e.g. "ran out of fuel after 10000000 units").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Crash {
    /// The reason, in plain words.
    pub reason: String,
}

impl Crash {
    /// A crash with this reason.
    pub fn new(reason: impl Into<String>) -> Crash {
        Crash { reason: reason.into() }
    }
}

impl fmt::Display for Crash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for Crash {}

/// Runs `call`, a controller's `export` linked natively, and turns a panic
/// in it into the [`Crash`] of its component, named as a Wasm plugin's
/// crash is (`recon_handle panicked: …`). The simulator drops an instance
/// that crashed and starts a fresh one, so whatever state the panic left
/// half-changed is never used again. Where panics abort (wasm32), it only
/// calls `call`.
pub fn catch_panic<T>(export: &str, call: impl FnOnce() -> T) -> Result<T, Crash> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(call)).map_err(|payload| {
        let message = panic_message(&*payload).unwrap_or("a panic with a non-string payload");
        Crash::new(format!("{export} panicked: {}", message.replace('\n', " ")))
    })
}

/// A panic's message, when its payload is one (`panic!("…")` gives a
/// `&str` or a `String`): what a crash caused by the panic says.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> Option<&str> {
    payload.downcast_ref::<&str>().copied().or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}

/// How a component's reflectors make the first list of each instance's life.
///
/// Later relists (after a watch breaks) always ask for "not older than the
/// last revision seen", as client-go does, so only the first list after a
/// (re)start can go back in time. A controller declares its mode in its
/// [`Manifest`]; a scenario may override it per component.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum ListMode {
    /// `resourceVersion="0"`: any state the API server has, usually its
    /// watch cache however stale. client-go's historical default, and the
    /// root of Kubernetes issue #59848.
    #[default]
    Any,
    /// `resourceVersion` unset: the most recent state, read from the store
    /// (a quorum read), or from the cache after it caught up when the API
    /// server has `consistentReadsFromCache`. Fails if the server cannot
    /// reach the store.
    Quorum,
    /// Watch-list (KEP-3157): a watch with `sendInitialEvents=true` and no
    /// resourceVersion; the API server asks the store for its revision,
    /// waits for its cache to reach it and streams the state from the
    /// cache. Fails if the server cannot reach the store.
    Consistent,
}

/// What the host tells a controller instance about itself.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ComponentConfig {
    /// The component's name, e.g. `kubelet-node-1`.
    pub name: String,
    /// For node agents: the node this instance runs on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Free-form parameters from the scenario.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, Value>,
    /// The upstream staleness mitigations the scenario switches on for
    /// this component; a controller framework that implements one applies
    /// it to every reconcile (Recon's kube runtime implements both).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mitigations: Vec<Mitigation>,
}

/// An upstream mitigation of stale reads of a controller's own writes,
/// switched on per component. Both hold a reconcile back until the
/// component's informers have observed what it wrote; they differ in
/// whose writes count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum Mitigation {
    /// KEP-5647's `StaleControllerConsistency` (kube-controller-manager,
    /// Kubernetes 1.36): the resourceVersion of every write made while
    /// reconciling an object is remembered for that object; its next sync
    /// is skipped and requeued with exponential back-off until the
    /// informer of each kind written has reached it. Other objects'
    /// reconciles go on.
    StaleControllerConsistency,
    /// controller-runtime's read-your-own-writes client
    /// (kubernetes-sigs/controller-runtime#3472): a read of a kind from the
    /// cache waits until its informer has observed every write of that
    /// kind made through the same client (a list waits for the highest).
    /// Modelled at the start of a reconcile, which reads the kinds it
    /// writes: it waits for the component's writes, whatever object they
    /// were made for.
    ReadYourOwnWrites,
}

impl Mitigation {
    /// Every mitigation, in a fixed order.
    pub const ALL: [Mitigation; 2] = [Mitigation::StaleControllerConsistency, Mitigation::ReadYourOwnWrites];

    /// Its name in a scenario: `staleControllerConsistency`, `readYourOwnWrites`.
    pub fn name(self) -> &'static str {
        match self {
            Mitigation::StaleControllerConsistency => "staleControllerConsistency",
            Mitigation::ReadYourOwnWrites => "readYourOwnWrites",
        }
    }

    /// The mitigation with this scenario name.
    pub fn from_name(name: &str) -> Option<Mitigation> {
        Mitigation::ALL.into_iter().find(|m| m.name() == name)
    }
}

impl fmt::Display for Mitigation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A reconcile a [`Mitigation`] held back because an informer had not yet
/// observed one of the component's own writes, or let go once it had.
/// A framework reports a wait once when it begins and once when it ends.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HeldSync {
    /// The mitigation that held it.
    pub mitigation: Mitigation,
    /// The object whose reconcile waits.
    pub object: ObjectKey,
    /// The kind whose informer had not caught up.
    pub kind: String,
    /// The resourceVersion of the own write it waits to observe.
    pub resource_version: u64,
    /// The resourceVersion that informer had reached.
    pub seen: u64,
    /// When the wait began (virtual ms).
    pub since_ms: u64,
    /// How many times the sync was skipped (KEP-5647's
    /// `stale_sync_skips_total`) so far.
    pub skips: u32,
    /// True when the reconcile goes ahead: the wait is over.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub released: bool,
}

/// What a controller declares about itself: the host enforces it, like RBAC.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Manifest {
    /// Human-readable controller name, e.g. `kubelet`.
    pub name: String,
    /// The ABI version the controller was built against.
    pub abi_version: u32,
    /// The resources the controller watches; the index in this list is the
    /// `watch` number in [`InputEvent`]s.
    #[serde(default)]
    pub watches: Vec<WatchSpec>,
    /// What the controller may write (and read directly, besides the kinds
    /// it watches: verbs `get` and `list`). Anything else is refused as Forbidden.
    #[serde(default)]
    pub writes: Vec<WritePermission>,
    /// Whether the controller is a node agent: it may start and stop
    /// containers on its node and is told which containers run there.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub node_agent: bool,
    /// How its reflectors list after every (re)start, unless the scenario
    /// overrides it for the component. Default: `any` (resourceVersion="0").
    #[serde(default)]
    pub list_mode: ListMode,
    /// Whether the plugin keeps the last version of each object its
    /// watches delivered, so that the host may leave a watch event's
    /// unchanged `spec` or `status` out (see [`WatchEvent::unchanged`]).
    /// The Rust SDK sets it. Omitted from the wire when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub omit_unchanged: bool,
    /// Whether the plugin keeps the last list of containers it was sent,
    /// so that the host may send what changed in its place (see
    /// [`WireInput::container_changes`]). For node agents; the Rust SDK
    /// sets it for them. Omitted from the wire when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub container_changes: bool,
}

/// One list+watch the host runs on the controller's behalf.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WatchSpec {
    /// Kind to watch, e.g. `Pod`.
    pub kind: String,
    /// Restrict to one namespace; empty means all namespaces.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Field selector, e.g. `spec.nodeName=node-1` (see [`crate::selector`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field_selector: String,
    /// Label selector, e.g. `app=web,tier!=cache` (see [`crate::selector`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub label_selector: String,
}

/// Permission to use some verbs on one kind.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WritePermission {
    /// The kind, e.g. `Pod`.
    pub kind: String,
    /// The verbs allowed on it.
    pub verbs: Vec<Verb>,
}

/// A write verb.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum Verb {
    /// Create an object.
    Create,
    /// Replace an object's metadata and spec.
    Update,
    /// Replace an object's status (the status subresource).
    UpdateStatus,
    /// Delete an object.
    Delete,
    /// Patch an object's metadata and spec (every patch type, server-side
    /// apply included, as in Kubernetes RBAC).
    Patch,
    /// Patch an object's status (the status subresource).
    PatchStatus,
    /// Read one object directly from the API server ([`Action::Get`]).
    Get,
    /// List objects directly from the API server ([`Action::List`]).
    List,
}

impl Verb {
    /// Whether the verb writes the status subresource.
    pub fn is_status(self) -> bool {
        matches!(self, Verb::UpdateStatus | Verb::PatchStatus)
    }

    /// Whether the verb reads rather than writes.
    pub fn is_read(self) -> bool {
        matches!(self, Verb::Get | Verb::List)
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::UpdateStatus => "update status of",
            Verb::Delete => "delete",
            Verb::Patch => "patch",
            Verb::PatchStatus => "patch status of",
            Verb::Get => "get",
            Verb::List => "list",
        })
    }
}

/// One call's worth of input.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Input {
    /// Virtual time in milliseconds: the only clock a controller may read.
    pub time_ms: u64,
    /// What happened since the last call, in the order it happened.
    pub events: Vec<InputEvent>,
    /// For node agents: the containers really running on the node now (what
    /// a kubelet learns from its container runtime), in order by pod
    /// (namespace, name, uid). `None` for others.
    // Shared, so that a node's list is made once per change rather than
    // once per call; on the wire it is a plain list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub containers: Option<Arc<[Container]>>,
}

/// An [`Input`] as a plugin reads it off the wire: the same fields, and
/// in place of `containers`, for a plugin whose manifest asked for them,
/// the changes since the last list it was sent. A plugin's glue turns it
/// into the [`Input`] its controller is handed
/// ([`SentContainers::receive`](crate::SentContainers::receive)); a
/// controller never sees it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "Input"))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WireInput {
    /// Virtual time in milliseconds: the only clock a controller may read.
    pub time_ms: u64,
    /// What happened since the last call, in the order it happened.
    pub events: Vec<InputEvent>,
    /// For node agents: the containers really running on the node now,
    /// in order by pod (namespace, name, uid). `None` for others, and
    /// when `containerChanges` stands for them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub containers: Option<Arc<[Container]>>,
    /// For a node agent whose manifest set `containerChanges`: what
    /// changed in its node's containers since the last list it was sent,
    /// in place of the list (never before its first list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_changes: Option<ContainerChanges>,
}

/// One thing a controller learns.
// Decoded tag first, without serde's buffering (see `tagged.rs`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", tag = "type", deny_unknown_fields)]
pub enum InputEvent {
    /// A list completed: replace everything known for this watch with `objects`.
    #[serde(rename_all = "camelCase")]
    Listed {
        /// Index into the manifest's `watches`.
        watch: usize,
        /// The list's resourceVersion.
        resource_version: String,
        /// The objects, ordered by key.
        // Shared, as `WatchEvent::object` is.
        objects: Vec<Arc<Object>>,
    },
    /// A watch event for this watch.
    #[serde(rename_all = "camelCase")]
    Watch {
        /// Index into the manifest's `watches`.
        watch: usize,
        /// The event.
        event: WatchEvent,
    },
    /// The result of a write the controller asked for earlier.
    // Boxed: a result can carry a whole object, and inline it made every
    // input (most are watch events of a few words) that size as it moved
    // through the host's inbox (472 bytes).
    #[serde(rename_all = "camelCase")]
    Result(Box<ActionResult>),
    /// A requeue asked for with [`Action::RequeueAfter`] is due.
    #[serde(rename_all = "camelCase")]
    Timer {
        /// The key given when requeueing.
        key: String,
    },
}

/// The id a controller gives one of its requests (a write or a direct
/// read), handed back in the request's [`ActionResult`] so that a result is
/// matched to its request by id, never by order. Chosen by the controller
/// (see [`Output::request_ids`]); the host does not interpret it.
pub type RequestId = u64;

/// The outcome of one request: a write or a direct read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ActionResult {
    /// The verb that was attempted.
    pub verb: Verb,
    /// The object it was attempted on (for a list: the kind and namespace
    /// listed, with an empty name).
    pub key: ObjectKey,
    /// What happened.
    pub outcome: Outcome,
    /// The id the controller gave the request, if it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<RequestId>,
}

/// Success with the stored object (or the objects listed), or failure with
/// a Kubernetes-style status.
#[allow(clippy::large_enum_variant, reason = "a plain wire value, moved once per result")]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Outcome {
    /// The write was applied; the object as stored (absent after a final
    /// delete). For a get: the object read.
    Ok(Option<Object>),
    /// A list was served.
    Listed(ObjectList),
    /// The request was refused or failed.
    Err(Status),
}

/// What a direct list returns, as a Kubernetes list: the objects and the
/// resourceVersion of the state they were read at.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectList {
    /// The revision of the state served (`metadata.resourceVersion` of the list).
    pub resource_version: String,
    /// The objects, ordered by key.
    pub items: Vec<Object>,
    /// The token for the next page, when the list was cut at its `limit`.
    #[serde(default, rename = "continue", skip_serializing_if = "Option::is_none")]
    pub continue_token: Option<String>,
}

/// A failed request, shaped like a Kubernetes `Status`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Status {
    /// HTTP status code.
    pub code: u16,
    /// Machine-readable reason.
    pub reason: StatusReason,
    /// Human-readable explanation.
    pub message: String,
}

/// Why a request failed, as in Kubernetes' `metav1.StatusReason`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum StatusReason {
    /// 400: the request is invalid (e.g. a resourceVersion combination the table forbids).
    BadRequest,
    /// 403: the controller's manifest does not allow this write.
    Forbidden,
    /// 404: no such object.
    NotFound,
    /// 409: an object with this name exists.
    AlreadyExists,
    /// 409: a resourceVersion or uid precondition failed.
    Conflict,
    /// 410: the requested resourceVersion has been compacted away.
    Gone,
    /// 503: the API server cannot reach the store.
    ServiceUnavailable,
    /// 504: the request did not complete in time (e.g. waiting for a cache).
    Timeout,
    /// 422: the object is not valid as written (e.g. a finalizer added to
    /// an object that is being deleted, or a patch that does not apply).
    Invalid,
    /// 415: the request's content type is not served for this kind (a
    /// strategic merge patch of a custom resource).
    UnsupportedMediaType,
}

impl Status {
    /// Builds a status with the code that belongs to `reason`.
    pub fn new(reason: StatusReason, message: impl Into<String>) -> Self {
        let code = match reason {
            StatusReason::BadRequest => 400,
            StatusReason::Forbidden => 403,
            StatusReason::NotFound => 404,
            StatusReason::AlreadyExists | StatusReason::Conflict => 409,
            StatusReason::Gone => 410,
            StatusReason::ServiceUnavailable => 503,
            StatusReason::Timeout => 504,
            StatusReason::Invalid => 422,
            StatusReason::UnsupportedMediaType => 415,
        };
        Status { code, reason, message: message.into() }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {:?}: {}", self.code, self.reason, self.message)
    }
}

/// A container the node's runtime is running.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Container {
    /// The pod incarnation it runs for.
    pub pod: PodRef,
    /// When it was started (virtual ms).
    pub started_at_ms: u64,
}

/// What a controller returns from one call.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Output {
    /// Effects to apply, in order.
    #[serde(default)]
    pub actions: Vec<Action>,
    /// The id of each request among `actions`, by position:
    /// `requestIds[i]` is the id of `actions[i]` (`null`: none). Shorter
    /// than `actions` means the rest have none; an id on an action that is
    /// not a request (a requeue, a container) is ignored. Longer than
    /// `actions` is an error that crashes the instance.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub request_ids: Vec<Option<RequestId>>,
    /// Reconciles a [`Mitigation`] began or stopped holding back in this call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<HeldSync>,
}

impl Output {
    /// Output with these actions and no request ids.
    pub fn new(actions: Vec<Action>) -> Output {
        Output { actions, request_ids: Vec::new(), held: Vec::new() }
    }

    /// Appends a request (or any action) carrying `id`.
    pub fn push_request(&mut self, id: RequestId, action: Action) {
        self.request_ids.resize(self.actions.len(), None);
        self.request_ids.push(Some(id));
        self.actions.push(action);
    }

    /// The id given to `actions[i]`, if any.
    pub fn request_id(&self, i: usize) -> Option<RequestId> {
        self.request_ids.get(i).copied().flatten()
    }
}

/// `resourceVersionMatch` of a list: how a list's `resourceVersion` is
/// to be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum ResourceVersionMatch {
    /// At least as new as the given resourceVersion (the default when one is given).
    NotOlderThan,
    /// Exactly at the given resourceVersion (410 Gone once compacted).
    Exact,
}

/// One effect a controller asks the host to apply.
// Decoded tag first, without serde's buffering (see `tagged.rs`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", tag = "type", deny_unknown_fields)]
pub enum Action {
    /// Create an object (metadata.name, or generateName, must be set).
    #[serde(rename_all = "camelCase")]
    Create {
        /// The object to create.
        object: Object,
        /// Dry run (`dryRun=All`): admitted and answered with what would
        /// be stored, nothing written, nothing on any watch. Omitted from
        /// the wire when false.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        dry_run: bool,
    },
    /// Replace an object's metadata and spec. A non-empty
    /// `metadata.resourceVersion` is a compare-and-swap precondition.
    #[serde(rename_all = "camelCase")]
    Update {
        /// The new version.
        object: Object,
        /// Dry run (`dryRun=All`): admitted and answered with what would
        /// be stored, nothing written, nothing on any watch. Omitted from
        /// the wire when false.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        dry_run: bool,
    },
    /// Replace an object's status. A non-empty `metadata.resourceVersion` is a
    /// compare-and-swap precondition.
    #[serde(rename_all = "camelCase")]
    UpdateStatus {
        /// The object carrying the new status.
        object: Object,
        /// Dry run (`dryRun=All`): admitted and answered with what would
        /// be stored, nothing written, nothing on any watch. Omitted from
        /// the wire when false.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        dry_run: bool,
    },
    /// Delete an object.
    #[serde(rename_all = "camelCase")]
    Delete {
        /// Which object.
        key: ObjectKey,
        /// Only delete this incarnation.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        uid: Option<String>,
        /// Only delete if unchanged since this version.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resource_version: Option<String>,
        /// Grace period: `Some(0)` deletes at once; `None` uses the kind's
        /// default (pods bound to a node terminate gracefully first).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        grace_period_seconds: Option<i64>,
        /// What happens to the object's dependents; `None` uses the
        /// object's garbage-collection finalizer if it has one, otherwise
        /// the kind's default (background).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        propagation_policy: Option<PropagationPolicy>,
        /// Dry run (`dryRun=All`): admitted and answered with what would
        /// be stored, nothing written, nothing on any watch. Omitted from
        /// the wire when false.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        dry_run: bool,
    },
    /// Patch an object's metadata and spec: a merge, JSON or strategic
    /// merge patch, or server-side apply (see [`Patch`]). A
    /// `metadata.resourceVersion` in the body (or one the patch writes) is a
    /// precondition: 409 Conflict if the object has moved on; without one
    /// the patch applies to whatever is current.
    #[serde(rename_all = "camelCase")]
    Patch {
        /// Which object.
        key: ObjectKey,
        /// The patch.
        patch: Patch,
        /// Field manager, force, dry run.
        #[serde(default, skip_serializing_if = "PatchParams::is_default")]
        params: PatchParams,
    },
    /// Patch an object's status (the status subresource); as
    /// [`Action::Patch`], but only `status` changes.
    #[serde(rename_all = "camelCase")]
    PatchStatus {
        /// Which object.
        key: ObjectKey,
        /// The patch.
        patch: Patch,
        /// Field manager, force, dry run.
        #[serde(default, skip_serializing_if = "PatchParams::is_default")]
        params: PatchParams,
    },
    /// Read one object directly from the API server, bypassing the
    /// controller's informers (controller-runtime's API reader). The
    /// result arrives like a write result: `ok` with the object, or a
    /// status (404 if there is none).
    #[serde(rename_all = "camelCase")]
    Get {
        /// Which object.
        key: ObjectKey,
        /// `resourceVersion`: unset for the most recent state (a quorum
        /// read), `"0"` for any state (the watch cache, however old), `N`
        /// for state not older than `N`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resource_version: Option<String>,
    },
    /// List objects directly from the API server, with the resourceVersion
    /// semantics of a Kubernetes list. The result arrives like a write
    /// result, as `listed`.
    #[serde(rename_all = "camelCase")]
    List {
        /// Kind to list, e.g. `Pod`.
        kind: String,
        /// Restrict to one namespace; empty means all namespaces.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        namespace: String,
        /// Field selector, e.g. `spec.nodeName=node-1`.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        field_selector: String,
        /// Label selector, e.g. `app=web`.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        label_selector: String,
        /// `resourceVersion`: unset, `"0"` or a revision (see [`ResourceVersionMatch`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resource_version: Option<String>,
        /// `resourceVersionMatch`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resource_version_match: Option<ResourceVersionMatch>,
        /// Page size.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u64>,
        /// The `continue` token of the previous page.
        #[serde(default, rename = "continue", skip_serializing_if = "Option::is_none")]
        continue_token: Option<String>,
    },
    /// Call the controller again with a [`InputEvent::Timer`] after a delay.
    #[serde(rename_all = "camelCase")]
    RequeueAfter {
        /// Handed back in the timer event.
        key: String,
        /// Delay in virtual milliseconds.
        after_ms: u64,
    },
    /// Node agents only: start a container for a pod on this node.
    #[serde(rename_all = "camelCase")]
    StartContainer {
        /// The pod incarnation.
        pod: PodRef,
    },
    /// Node agents only: stop the container of a pod on this node.
    #[serde(rename_all = "camelCase")]
    StopContainer {
        /// The pod incarnation.
        pod: PodRef,
    },
}

/// [`InputEvent`]'s variants and fields as serde decodes them once the
/// tag is read (`tagged.rs`): the same names, defaults and refusals.
#[derive(Deserialize)]
#[serde(remote = "InputEvent", rename_all = "camelCase", deny_unknown_fields)]
enum InputEventByName {
    #[serde(rename_all = "camelCase")]
    Listed {
        watch: usize,
        resource_version: String,
        objects: Vec<Arc<Object>>,
    },
    #[serde(rename_all = "camelCase")]
    Watch {
        watch: usize,
        event: WatchEvent,
    },
    Result(Box<ActionResult>),
    #[serde(rename_all = "camelCase")]
    Timer {
        key: String,
    },
}

/// A result as the input it arrives as: `succeeded(..).into()` in a test
/// rather than `InputEvent::Result(Box::new(..))`.
impl From<ActionResult> for InputEvent {
    fn from(result: ActionResult) -> Self {
        InputEvent::Result(Box::new(result))
    }
}

impl<'de> Deserialize<'de> for InputEvent {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        crate::tagged::deserialize(deserializer)
    }
}

impl<'de> crate::tagged::ByName<'de> for InputEvent {
    fn deserialize_by_name<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        InputEventByName::deserialize(deserializer)
    }
}

/// [`Action`]'s variants and fields as serde decodes them once the tag is
/// read (`tagged.rs`): the same names, defaults and refusals.
#[derive(Deserialize)]
#[serde(remote = "Action", rename_all = "camelCase", deny_unknown_fields)]
enum ActionByName {
    #[serde(rename_all = "camelCase")]
    Create {
        object: Object,
        #[serde(default)]
        dry_run: bool,
    },
    #[serde(rename_all = "camelCase")]
    Update {
        object: Object,
        #[serde(default)]
        dry_run: bool,
    },
    #[serde(rename_all = "camelCase")]
    UpdateStatus {
        object: Object,
        #[serde(default)]
        dry_run: bool,
    },
    #[serde(rename_all = "camelCase")]
    Delete {
        key: ObjectKey,
        #[serde(default)]
        uid: Option<String>,
        #[serde(default)]
        resource_version: Option<String>,
        #[serde(default)]
        grace_period_seconds: Option<i64>,
        #[serde(default)]
        propagation_policy: Option<PropagationPolicy>,
        #[serde(default)]
        dry_run: bool,
    },
    #[serde(rename_all = "camelCase")]
    Patch {
        key: ObjectKey,
        patch: Patch,
        #[serde(default)]
        params: PatchParams,
    },
    #[serde(rename_all = "camelCase")]
    PatchStatus {
        key: ObjectKey,
        patch: Patch,
        #[serde(default)]
        params: PatchParams,
    },
    #[serde(rename_all = "camelCase")]
    Get {
        key: ObjectKey,
        #[serde(default)]
        resource_version: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    List {
        kind: String,
        #[serde(default)]
        namespace: String,
        #[serde(default)]
        field_selector: String,
        #[serde(default)]
        label_selector: String,
        #[serde(default)]
        resource_version: Option<String>,
        #[serde(default)]
        resource_version_match: Option<ResourceVersionMatch>,
        #[serde(default)]
        limit: Option<u64>,
        #[serde(default, rename = "continue")]
        continue_token: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    RequeueAfter { key: String, after_ms: u64 },
    #[serde(rename_all = "camelCase")]
    StartContainer { pod: PodRef },
    #[serde(rename_all = "camelCase")]
    StopContainer { pod: PodRef },
}

impl<'de> Deserialize<'de> for Action {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        crate::tagged::deserialize(deserializer)
    }
}

impl<'de> crate::tagged::ByName<'de> for Action {
    fn deserialize_by_name<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        ActionByName::deserialize(deserializer)
    }
}

/// What a delete does to the objects that name the deleted one as their
/// owner (`DeleteOptions.propagationPolicy`, spelled as on the wire).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum PropagationPolicy {
    /// The owner is removed at once; the garbage collector deletes its
    /// dependents afterwards.
    Background,
    /// The owner is marked with the `foregroundDeletion` finalizer and stays
    /// until the garbage collector has deleted every dependent that blocks
    /// its deletion.
    Foreground,
    /// The owner is marked with the `orphan` finalizer; the garbage
    /// collector removes the owner reference from its dependents, which stay.
    Orphan,
}

impl PropagationPolicy {
    /// The finalizer the API server sets for this policy, if any.
    pub fn finalizer(self) -> Option<&'static str> {
        match self {
            PropagationPolicy::Background => None,
            PropagationPolicy::Foreground => Some(FOREGROUND_FINALIZER),
            PropagationPolicy::Orphan => Some(ORPHAN_FINALIZER),
        }
    }
}

/// The finalizer of a foreground deletion: the owner stays until its
/// blocking dependents are gone.
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// The finalizer of an orphaning deletion: the owner stays until its
/// dependents no longer name it.
pub const ORPHAN_FINALIZER: &str = "orphan";

/// The verb and object of a request (a write or a direct read), borrowed
/// from its action: what admission, RBAC and the trace's request lines
/// read, without copying three strings for each of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target<'a> {
    /// The request's verb.
    pub verb: Verb,
    /// The object's kind.
    pub kind: &'a str,
    /// Its namespace; empty for cluster-scoped kinds, and for a list of
    /// every namespace.
    pub namespace: &'a str,
    /// Its name; empty for a list.
    pub name: &'a str,
}

impl Target<'_> {
    /// The object's key, owned.
    pub fn key(&self) -> ObjectKey {
        ObjectKey::new(self.kind, self.namespace, self.name)
    }
}

/// `update Pod default/web-0`: the verb, then the key as [`ObjectKey`]
/// shows it.
impl fmt::Display for Target<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ", self.verb)?;
        write_key(f, self.kind, self.namespace, self.name)
    }
}

impl Action {
    /// A plain delete of `key`: no uid or resourceVersion precondition, the
    /// kind's default grace period and propagation policy, not a dry run.
    pub fn delete(key: ObjectKey) -> Action {
        Action::Delete {
            key,
            uid: None,
            resource_version: None,
            grace_period_seconds: None,
            propagation_policy: None,
            dry_run: false,
        }
    }

    /// The verb and object of a request to the API server (a write or a
    /// direct read; for a list: the kind and namespace, with an empty name),
    /// `None` for other actions.
    pub fn target(&self) -> Option<Target<'_>> {
        fn of_object(verb: Verb, object: &Object) -> Option<Target<'_>> {
            Some(Target {
                verb,
                kind: &object.kind,
                namespace: &object.metadata.namespace,
                name: &object.metadata.name,
            })
        }
        fn of_key(verb: Verb, key: &ObjectKey) -> Option<Target<'_>> {
            Some(Target { verb, kind: &key.kind, namespace: &key.namespace, name: &key.name })
        }
        match self {
            Action::Create { object, .. } => of_object(Verb::Create, object),
            Action::Update { object, .. } => of_object(Verb::Update, object),
            Action::UpdateStatus { object, .. } => of_object(Verb::UpdateStatus, object),
            Action::Delete { key, .. } => of_key(Verb::Delete, key),
            Action::Patch { key, .. } => of_key(Verb::Patch, key),
            Action::PatchStatus { key, .. } => of_key(Verb::PatchStatus, key),
            Action::Get { key, .. } => of_key(Verb::Get, key),
            Action::List { kind, namespace, .. } => Some(Target { verb: Verb::List, kind, namespace, name: "" }),
            _ => None,
        }
    }

    /// The action as a write: its [`Target`]; `None` for direct reads and other actions.
    pub fn as_write(&self) -> Option<Target<'_>> {
        self.target().filter(|t| !t.verb.is_read())
    }

    /// The verb and object key of a write, owned; `None` for other actions.
    pub fn write_target(&self) -> Option<(Verb, ObjectKey)> {
        self.as_write().map(|t| (t.verb, t.key()))
    }

    /// The verb and object key of a direct read (for a list: the kind and
    /// namespace, with an empty name), owned; `None` for other actions.
    pub fn read_target(&self) -> Option<(Verb, ObjectKey)> {
        self.target().filter(|t| t.verb.is_read()).map(|t| (t.verb, t.key()))
    }

    /// The verb and key of a request to the API server (a write or a
    /// direct read), owned; `None` for other actions.
    pub fn request_target(&self) -> Option<(Verb, ObjectKey)> {
        self.target().map(|t| (t.verb, t.key()))
    }
}

impl Action {
    /// Whether this is a write asked as a dry run (any verb that has one).
    pub fn is_dry_run(&self) -> bool {
        match self {
            Action::Create { dry_run, .. }
            | Action::Update { dry_run, .. }
            | Action::UpdateStatus { dry_run, .. }
            | Action::Delete { dry_run, .. } => *dry_run,
            Action::Patch { params, .. } | Action::PatchStatus { params, .. } => params.dry_run,
            _ => false,
        }
    }
}

impl Manifest {
    /// Whether the manifest allows `verb` on `kind`. A controller may read
    /// (get, list) every kind it watches, and any kind whose permission
    /// names the verb.
    pub fn allows(&self, verb: Verb, kind: &str) -> bool {
        (verb.is_read() && self.watches.iter().any(|w| w.kind == kind))
            || self.writes.iter().any(|w| w.kind == kind && w.verbs.contains(&verb))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The wire stays as it was for every write that is not a dry run, so a
    // plugin built before `dryRun` existed reads and writes the same bytes.
    #[test]
    fn dry_run_is_left_off_the_wire_unless_asked_for() {
        let object: Object = serde_json::from_str(r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}"#)
            .expect("an object");
        let plain = Action::Create { object: object.clone(), dry_run: false };
        let text = serde_json::to_string(&plain).expect("encodes");
        assert!(!text.contains("dryRun"), "{text}");
        let old: Action = serde_json::from_str(&text).expect("decodes without the field");
        assert_eq!(old, plain);
        let dry: Action = serde_json::from_str(r#"{"type":"delete","key":{"kind":"Pod","name":"p"},"dryRun":true}"#)
            .expect("decodes");
        assert!(dry.is_dry_run());
        assert!(serde_json::to_string(&dry).expect("encodes").ends_with(r#""dryRun":true}"#));
        assert!(!Action::Update { object, dry_run: false }.is_dry_run());
    }

    // A request's borrowed target names what its owned key names, and
    // shows as a request line always has: the verb, then the key.
    #[test]
    fn a_request_target_borrows_what_its_owned_key_copies() {
        let action = |json: &str| serde_json::from_str::<Action>(json).expect("an action");
        let cases = [
            (
                r#"{"type":"update","object":{"apiVersion":"v1","kind":"Pod","metadata":{"namespace":"default","name":"web-0"}}}"#,
                "update Pod default/web-0",
            ),
            (r#"{"type":"delete","key":{"kind":"Node","name":"node-1"}}"#, "delete Node node-1"),
            (r#"{"type":"get","key":{"kind":"Pod","namespace":"ns","name":"p"}}"#, "get Pod ns/p"),
            (r#"{"type":"list","kind":"Pod","namespace":"ns"}"#, "list Pod ns/"),
        ];
        for (json, shown) in cases {
            let a = action(json);
            let target = a.target().expect("a request");
            assert_eq!(target.to_string(), shown);
            let (verb, key) = a.request_target().expect("a request");
            assert_eq!((verb, format!("{verb} {key}")), (target.verb, shown.to_owned()));
            assert_eq!(target.key(), key);
            assert_eq!(a.as_write().is_some(), !verb.is_read());
            assert_eq!(a.write_target().is_some(), !verb.is_read());
            assert_eq!(a.read_target().is_some(), verb.is_read());
        }
        assert_eq!(action(r#"{"type":"stopContainer","pod":{"namespace":"d","name":"p","uid":"u"}}"#).target(), None);
    }
}

#[cfg(test)]
mod panic_tests {
    use super::{catch_panic, panic_message};

    /// A literal message, a formatted one and a payload that is no message.
    #[test]
    fn a_panic_message_is_read_from_either_string_payload() {
        let payload = |f: fn()| std::panic::catch_unwind(f).expect_err("it panics");
        let literal = payload(|| panic!("the pod has no node"));
        let formatted = payload(|| panic!("{} pods", 3));
        let other = payload(|| std::panic::panic_any(7_u32));
        assert_eq!(panic_message(&*literal), Some("the pod has no node"));
        assert_eq!(panic_message(&*formatted), Some("3 pods"));
        assert_eq!(panic_message(&*other), None);
    }

    /// A caught panic is a crash on one line that names the export; a
    /// call that returns passes its value through.
    #[test]
    fn a_panic_in_a_native_call_is_its_components_crash() {
        assert_eq!(catch_panic("recon_handle", || 4), Ok(4));
        let crash = catch_panic("recon_handle", || -> u32 { panic!("two\nlines") }).unwrap_err();
        assert_eq!(crash.reason, "recon_handle panicked: two lines");
        let crash = catch_panic("recon_init", || std::panic::panic_any(7_u32)).unwrap_err();
        assert_eq!(crash.reason, "recon_init panicked: a panic with a non-string payload");
    }
}
