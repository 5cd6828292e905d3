//! The scenario data model: what a scenario file says, after parsing and
//! validation. Every type here is plain data; `Serialize` writes it back in
//! the same YAML shape it was read from (see `to_yaml`).

use std::collections::BTreeMap;
use std::fmt;

use recon_abi::{Object, PropagationPolicy};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A span of virtual time in milliseconds.
///
/// In YAML: an integer (milliseconds) or a string with a unit: `250ms`,
/// `2s`, `1.5s`, `1m`. Negative values are rejected.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Millis(pub u64);

impl fmt::Display for Millis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0;
        if ms != 0 && ms.is_multiple_of(60_000) {
            write!(f, "{}m", ms / 60_000)
        } else if ms != 0 && ms.is_multiple_of(1000) {
            write!(f, "{}s", ms / 1000)
        } else {
            write!(f, "{ms}ms")
        }
    }
}

/// A whole scenario: the cluster, its staleness and faults, the workload,
/// a timed script, the checks to run and the expected outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Scenario {
    /// Short identifier, e.g. `pod-safety-59848`.
    pub name: String,
    /// Plain-language description: what happens and what to look for.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The public issue the scenario reproduces, as a link; empty for a
    /// scenario that tells no particular bug report.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
    /// What a reader should take away, in one line: the lesson of a
    /// museum entry (a scenario that reproduces a public bug report).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub lesson: String,
    /// Seed of the run's one random number generator.
    #[serde(default)]
    pub seed: u64,
    /// How much virtual time the run covers. Default 30s.
    #[serde(default = "default_duration")]
    pub duration: Millis,
    /// Latency of every network link.
    #[serde(default)]
    pub network: Network,
    /// The store's history: how often it is compacted.
    #[serde(default, skip_serializing_if = "Etcd::is_default")]
    pub etcd: Etcd,
    /// The API servers, each with its own watch cache and faults. At least one.
    pub api_servers: Vec<ApiServer>,
    /// The nodes: each has a container runtime and a Node object.
    #[serde(default)]
    pub nodes: Vec<Node>,
    /// The components (controllers and node agents) and how they connect.
    #[serde(default)]
    pub components: Vec<Component>,
    /// Objects in the store when the run starts: real Kubernetes manifests.
    #[serde(default)]
    pub objects: Vec<Object>,
    /// Timed user actions and faults, in non-decreasing time order.
    #[serde(default)]
    pub script: Vec<Step>,
    /// Which safety checks run. All by default.
    #[serde(default)]
    pub checks: Checks,
    /// What the run is expected to show (used by tests and `recon run
    /// --expect`) with none of its `fixes` on.
    #[serde(default)]
    pub expect: Expectation,
    /// The fixes shipped (or proposed) upstream for the bug the scenario
    /// shows, each a switch; see [`Fix`] and [`Scenario::with_fixes_applied`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fixes: Vec<Fix>,
    /// Bounds on the run itself.
    #[serde(default, skip_serializing_if = "RunLimits::is_default")]
    pub limits: RunLimits,
    /// Who reconciles first when several components have work due at the
    /// same virtual moment (see [`OrderChoice`]); empty: the order their
    /// work arrived in. `recon explore --orderings` writes it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ordering: Vec<OrderChoice>,
    /// Reconciles given a staler view than the one the host would hand
    /// them (see [`StaleView`]); empty: every reconcile sees everything
    /// delivered to it. `recon explore --orderings --stale-views` writes it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stale_views: Vec<StaleView>,
}

/// One decision of an ordering: at virtual time `at`, when several
/// components have a reconcile due at that same moment and `first` is one
/// of them, `first` runs before the others.
///
/// Choices are used in list order: at each such moment the simulator takes
/// the first unused choice for that time whose component is among those
/// waiting, and uses it up. A choice whose moment never comes, or whose
/// component has nothing due then, does nothing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OrderChoice {
    /// The moment.
    pub at: Millis,
    /// The component that reconciles first.
    pub first: String,
}

/// One reconcile given a stale view: at virtual time `at`, `component`'s
/// controller is called before the newest `held_back` of the inputs
/// delivered to it reach it. Those inputs (watch events, results, timers)
/// stay queued in order and reach it in a second call at the same moment,
/// after the first call's actions were sent: its cache was `held_back`
/// events behind when it decided.
///
/// Choices are used in list order: at each reconcile of `component` at
/// time `at` that has more than `held_back` inputs, the first unused
/// choice for it is used up. A choice whose reconcile never comes does
/// nothing. `held_back: 0` hands that call everything: it only uses up a
/// call, so that the next choice applies to the component's next call at
/// the same moment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StaleView {
    /// The moment.
    pub at: Millis,
    /// The component whose reconcile sees less.
    pub component: String,
    /// How many of its newest inputs are held back past the reconcile.
    pub held_back: u32,
}

impl Scenario {
    /// The kinds its API serves: the built-in ones and those its
    /// CustomResourceDefinitions (among its objects) declare.
    pub fn kinds(&self) -> crate::Kinds {
        crate::Kinds::declared_by(&self.objects)
    }

    /// Every object the scenario writes, with the path of its node in the
    /// file (what a [`SourceMap`](crate::SourceMap) locates): its initial
    /// objects (`objects[i]`), then those of its script's `create` and
    /// `apply` steps (`script[i].create`, `script[i].apply`).
    pub fn written_objects(&self) -> impl Iterator<Item = (String, &Object)> {
        let initial = self.objects.iter().enumerate().map(|(i, object)| (format!("objects[{i}]"), object));
        let scripted = self.script.iter().enumerate().filter_map(|(i, step)| match &step.action {
            StepAction::Create { object, .. } => Some((format!("script[{i}].create"), object)),
            StepAction::Apply { object, .. } => Some((format!("script[{i}].apply"), object)),
            _ => None,
        });
        initial.chain(scripted)
    }

    /// Turns the fix called `name` on (or off), or says which fixes the
    /// scenario declares.
    pub fn set_fix(&mut self, name: &str, enabled: bool) -> Result<(), String> {
        let declared: Vec<&str> = self.fixes.iter().map(|f| f.name.as_str()).collect();
        let message = if declared.is_empty() {
            format!("the scenario declares no fixes, so there is no fix {name:?}")
        } else {
            format!("the scenario declares no fix {name:?} (it declares: {})", declared.join(", "))
        };
        let fix = self.fixes.iter_mut().find(|f| f.name == name).ok_or(message)?;
        fix.enabled = enabled;
        Ok(())
    }

    /// Switches mitigation `name` (`staleControllerConsistency`,
    /// `readYourOwnWrites`) on for `component`, or off; says what exists
    /// when either is unknown.
    pub fn set_mitigation(&mut self, component: &str, name: &str, on: bool) -> Result<(), String> {
        let mitigation = Mitigation::from_name(name).ok_or_else(|| {
            let known: Vec<&str> = Mitigation::ALL.iter().map(|m| m.name()).collect();
            format!("there is no mitigation {name:?} (there are: {})", known.join(", "))
        })?;
        let names: Vec<&str> = self.components.iter().map(|c| c.name.as_str()).collect();
        let message = format!("the scenario has no component {component:?} (it has: {})", names.join(", "));
        let target = self.components.iter_mut().find(|c| c.name == component).ok_or(message)?;
        if on {
            target.switch_on(mitigation);
        } else {
            target.mitigations.retain(|m| *m != mitigation);
        }
        Ok(())
    }

    /// The scenario as it runs: every enabled fix's changes made to its
    /// components (in the order the fixes are declared), `expect` the
    /// outcome expected with exactly those fixes on, and no `fixes` left
    /// to apply. With no fix on, only `fixes` is dropped. Applying it to
    /// its own result changes nothing, so every front end may call it.
    ///
    /// The outcome of several fixes together is the checks every one of
    /// them still expects to be violated: each fix is declared with what
    /// it alone leaves broken, and fixes only take bugs away.
    pub fn with_fixes_applied(&self) -> Scenario {
        let mut run = self.clone();
        let fixes = std::mem::take(&mut run.fixes);
        let enabled: Vec<&Fix> = fixes.iter().filter(|f| f.enabled).collect();
        for fix in &enabled {
            for change in &fix.components {
                if let Some(component) = run.components.iter_mut().find(|c| c.name == change.name) {
                    change.apply_to(component);
                }
            }
        }
        if let Some((first, rest)) = enabled.split_first() {
            let mut violations = first.expect.violations.clone();
            violations.retain(|check| rest.iter().all(|f| f.expect.violations.contains(check)));
            run.expect = Expectation { violations };
        }
        run
    }
}

/// An upstream fix of the bug a scenario reproduces, as a switch: off, the
/// scenario runs as written; on, the components it names run as the fix
/// makes them (another controller, another list mode, other parameters).
/// In YAML:
///
/// ```yaml
/// fixes:
///   - name: quorum-relist
///     summary: The controller's first list after a restart reads etcd.
///     link: https://github.com/kubernetes/kubernetes/issues/59848
///     components:
///       - { name: kubelet-node-1, listMode: quorum }
///     expect: { violations: [] }
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Fix {
    /// Short identifier, unique in the scenario, e.g. `quorum-relist`:
    /// `recon run --fix quorum-relist` turns it on.
    pub name: String,
    /// What the fix does, in one sentence.
    pub summary: String,
    /// Where upstream describes it (the pull request, the KEP).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub link: String,
    /// Whether it is on. Default false: the scenario shows the bug.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub enabled: bool,
    /// What it changes, component by component. At least one.
    pub components: Vec<ComponentChange>,
    /// The outcome with this fix alone on. Default: a clean run.
    #[serde(default)]
    pub expect: Expectation,
}

/// What a [`Fix`] changes in one component; what it leaves out stays as
/// the component has it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ComponentChange {
    /// The component (must be in `components`).
    pub name: String,
    /// Run this controller instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<String>,
    /// List this way instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_mode: Option<ListMode>,
    /// Parameters set over the component's own (a key given here replaces
    /// the component's value of it; the others stay).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, Value>,
    /// Mitigations switched on besides the component's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mitigations: Vec<Mitigation>,
}

impl ComponentChange {
    /// Makes the change to `component`.
    pub fn apply_to(&self, component: &mut Component) {
        if let Some(controller) = &self.controller {
            component.controller.clone_from(controller);
        }
        if self.list_mode.is_some() {
            component.list_mode = self.list_mode;
        }
        for (key, value) in &self.params {
            component.params.insert(key.clone(), value.clone());
        }
        for mitigation in &self.mitigations {
            component.switch_on(*mitigation);
        }
    }
}

/// Bounds on a run, so that a controller that never settles (a plugin
/// requeueing itself every millisecond, two controllers fighting) cannot
/// make a run take unbounded time or memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunLimits {
    /// The most trace entries a run records, a reconcile counting one more
    /// for each input and action it lists; when it reaches them the run
    /// stops there, with a last entry that says so. Default 2,000,000
    /// (a few hundred MB of trace at most).
    #[serde(default = "default_max_trace_entries")]
    pub max_trace_entries: u64,
    /// The largest object a write may carry, as JSON; larger writes are
    /// refused, as etcd refuses requests over its `--max-request-bytes`.
    /// Default 1.5 MiB, etcd's default.
    #[serde(default = "default_max_object_bytes")]
    pub max_object_bytes: u64,
    /// What each Wasm plugin of the run may consume. Unset fields keep the
    /// host's defaults (`recon_host::Limits::DEFAULT`).
    #[serde(default, skip_serializing_if = "PluginLimits::is_default")]
    pub plugins: PluginLimits,
}

/// The limits every uploaded (Wasm) plugin of a run is loaded and runs
/// under, as the scenario sets them; `None` keeps the host's default. Each
/// may be raised at most to its `MAX_` constant (validation says so).
/// Built-in controllers run natively and are not metered. Being part of the
/// scenario, they travel with it (in share links too), so a run that needs a
/// hungrier plugin replays the same everywhere.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PluginLimits {
    /// Fuel for one call: one unit per WebAssembly instruction executed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fuel_per_call: Option<u64>,
    /// Fuel for all the calls one instance gets in one virtual second (from
    /// a whole second to the next), so that a plugin that spends its whole
    /// budget on every call and asks to be called again every millisecond
    /// crashes instead of costing a second of real time per simulated
    /// millisecond.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fuel_per_virtual_second: Option<u64>,
    /// The most linear memory an instance may have, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// How deeply calls may nest inside the plugin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_call_depth: Option<u32>,
    /// The largest result of one call the host reads, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_bytes: Option<u64>,
    /// The most actions one call may return.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_actions_per_call: Option<u32>,
    /// The largest module accepted, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_module_bytes: Option<u64>,
    /// The most functions a module may define.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_functions: Option<u32>,
}

impl PluginLimits {
    /// `fuelPerCall` when the scenario does not set it (the host's
    /// `Limits::DEFAULT` is made of these defaults).
    pub const DEFAULT_FUEL_PER_CALL: u64 = 1_000_000_000;
    /// `fuelPerVirtualSecond` when the scenario does not set it.
    pub const DEFAULT_FUEL_PER_VIRTUAL_SECOND: u64 = 2_000_000_000;
    /// `memoryBytes` when the scenario does not set it: 64 MiB.
    pub const DEFAULT_MEMORY_BYTES: u64 = 64 << 20;
    /// `maxCallDepth` when the scenario does not set it.
    pub const DEFAULT_MAX_CALL_DEPTH: u32 = 2_000;
    /// `maxOutputBytes` when the scenario does not set it: 16 MiB.
    pub const DEFAULT_MAX_OUTPUT_BYTES: u64 = 16 << 20;
    /// `maxActionsPerCall` when the scenario does not set it.
    pub const DEFAULT_MAX_ACTIONS_PER_CALL: u32 = 10_000;
    /// `maxModuleBytes` when the scenario does not set it: 16 MiB.
    pub const DEFAULT_MAX_MODULE_BYTES: u64 = 16 << 20;
    /// `maxFunctions` when the scenario does not set it.
    pub const DEFAULT_MAX_FUNCTIONS: u32 = 20_000;

    /// The most `fuelPerCall` may be: a hundred times the default.
    pub const MAX_FUEL_PER_CALL: u64 = 100_000_000_000;
    /// The most `fuelPerVirtualSecond` may be: the most for one call, so that
    /// a shared link can cost a visitor's tab at most about as much real time
    /// per virtual second as one of its calls may take.
    pub const MAX_FUEL_PER_VIRTUAL_SECOND: u64 = 100_000_000_000;
    /// The most `memoryBytes` may be: 1 GiB.
    pub const MAX_MEMORY_BYTES: u64 = 1 << 30;
    /// The most `maxCallDepth` may be.
    pub const MAX_CALL_DEPTH: u64 = 100_000;
    /// The most `maxOutputBytes` may be: 256 MiB.
    pub const MAX_OUTPUT_BYTES: u64 = 256 << 20;
    /// The most `maxActionsPerCall` may be.
    pub const MAX_ACTIONS_PER_CALL: u64 = 1_000_000;
    /// The most `maxModuleBytes` may be: 64 MiB.
    pub const MAX_MODULE_BYTES: u64 = 64 << 20;
    /// The most `maxFunctions` may be.
    pub const MAX_FUNCTIONS: u64 = 100_000;

    fn is_default(&self) -> bool {
        *self == PluginLimits::default()
    }
}

/// A plugin limit a scenario may raise, as messages name it: validation
/// when a scenario asks for more than the most, and the host when a
/// plugin runs into the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PluginSetting {
    /// `fuelPerCall`.
    FuelPerCall,
    /// `fuelPerVirtualSecond`.
    FuelPerVirtualSecond,
    /// `memoryBytes`.
    MemoryBytes,
    /// `maxCallDepth`.
    MaxCallDepth,
    /// `maxOutputBytes`.
    MaxOutputBytes,
    /// `maxActionsPerCall`.
    MaxActionsPerCall,
    /// `maxModuleBytes`.
    MaxModuleBytes,
    /// `maxFunctions`.
    MaxFunctions,
}

impl PluginSetting {
    /// Its name under `limits.plugins`.
    pub fn name(self) -> &'static str {
        match self {
            PluginSetting::FuelPerCall => "fuelPerCall",
            PluginSetting::FuelPerVirtualSecond => "fuelPerVirtualSecond",
            PluginSetting::MemoryBytes => "memoryBytes",
            PluginSetting::MaxCallDepth => "maxCallDepth",
            PluginSetting::MaxOutputBytes => "maxOutputBytes",
            PluginSetting::MaxActionsPerCall => "maxActionsPerCall",
            PluginSetting::MaxModuleBytes => "maxModuleBytes",
            PluginSetting::MaxFunctions => "maxFunctions",
        }
    }

    /// The most a scenario may set it to (`PluginLimits::MAX_*`).
    pub fn most(self) -> u64 {
        match self {
            PluginSetting::FuelPerCall => PluginLimits::MAX_FUEL_PER_CALL,
            PluginSetting::FuelPerVirtualSecond => PluginLimits::MAX_FUEL_PER_VIRTUAL_SECOND,
            PluginSetting::MemoryBytes => PluginLimits::MAX_MEMORY_BYTES,
            PluginSetting::MaxCallDepth => PluginLimits::MAX_CALL_DEPTH,
            PluginSetting::MaxOutputBytes => PluginLimits::MAX_OUTPUT_BYTES,
            PluginSetting::MaxActionsPerCall => PluginLimits::MAX_ACTIONS_PER_CALL,
            PluginSetting::MaxModuleBytes => PluginLimits::MAX_MODULE_BYTES,
            PluginSetting::MaxFunctions => PluginLimits::MAX_FUNCTIONS,
        }
    }
}

impl RunLimits {
    /// The most `maxTraceEntries` may be: ten times the default, room for
    /// the hour-long soak; a trace that size already takes gigabytes, and a
    /// share link must not be able to ask a visitor's tab for more.
    pub const MAX_TRACE_ENTRIES: u64 = 20_000_000;
    /// The most `maxObjectBytes` may be: 64 MiB.
    pub const MAX_OBJECT_BYTES: u64 = 64 << 20;

    fn is_default(&self) -> bool {
        *self == RunLimits::default()
    }
}

impl Default for RunLimits {
    fn default() -> Self {
        RunLimits {
            max_trace_entries: default_max_trace_entries(),
            max_object_bytes: default_max_object_bytes(),
            plugins: PluginLimits::default(),
        }
    }
}

fn default_max_trace_entries() -> u64 {
    2_000_000
}

fn default_max_object_bytes() -> u64 {
    1_572_864
}

fn default_duration() -> Millis {
    Millis(30_000)
}

/// Latency of network links (component ↔ API server, API server ↔ store).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Network {
    /// Each message takes a latency drawn uniformly from `[min, max]` by the
    /// seeded RNG; messages on one link stay in order. Default 1ms..5ms.
    #[serde(default = "default_latency")]
    pub latency: LatencyRange,
}

impl Default for Network {
    fn default() -> Self {
        Network { latency: default_latency() }
    }
}

fn default_latency() -> LatencyRange {
    LatencyRange { min: Millis(1), max: Millis(5) }
}

/// An inclusive latency range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LatencyRange {
    /// Smallest latency.
    pub min: Millis,
    /// Largest latency (at least `min`).
    pub max: Millis,
}

/// One API server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApiServer {
    /// Unique name, e.g. `apiserver-1`.
    pub name: String,
    /// The watch cache in front of the store.
    #[serde(default)]
    pub watch_cache: WatchCache,
    /// KEP-2340: serve reads that ask for the most recent state from the
    /// cache after waiting for it to catch up with the store's revision,
    /// instead of reading the store. Default false.
    #[serde(default)]
    pub consistent_reads_from_cache: bool,
    /// Time windows during which this API server cannot reach the store.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partitions: Vec<Window>,
    /// How long a request waits for an unreachable store before it fails
    /// (503). Default 1s. The wait for the watch cache to catch up is
    /// `watchCache.waitTimeout`.
    #[serde(default = "default_request_timeout")]
    pub request_timeout: Millis,
}

fn default_request_timeout() -> Millis {
    Millis(1_000)
}

/// Watch cache settings of one API server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WatchCache {
    /// When false, every read goes to the store (watches still stream
    /// through the API server). Default true.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Extra delay before a store event reaches this cache. Default 0.
    #[serde(default)]
    pub lag: Millis,
    /// How long a read waits for this cache to reach the revision it needs
    /// (a `NotOlderThan` list, a KEP-2340 consistent read) before it fails
    /// with 504 or, for a consistent read, falls back to the store. Default
    /// 3s, the Kubernetes watch cache's block timeout.
    #[serde(default = "default_wait_timeout")]
    pub wait_timeout: Millis,
    /// How often a watch that asked for bookmarks (`allowWatchBookmarks`)
    /// is sent a BOOKMARK with the cache's revision. Default 1m, about as
    /// often as the Kubernetes watch cache sends them. Must be positive.
    #[serde(default = "default_bookmark_interval", skip_serializing_if = "is_default_bookmark_interval")]
    pub bookmark_interval: Millis,
    /// The most events the cache keeps for watches to resume from; a
    /// watch from before the oldest kept event is answered 410 Gone.
    /// Default 1024. Must be at least 1.
    #[serde(default = "default_window_events", skip_serializing_if = "is_default_window_events")]
    pub window_events: u64,
    /// How long the cache keeps an event for watches to resume from (on
    /// top of `windowEvents`); absent: events leave only when the window
    /// is full.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_duration: Option<Millis>,
}

fn default_wait_timeout() -> Millis {
    Millis(3_000)
}

fn default_bookmark_interval() -> Millis {
    Millis(60_000)
}

fn is_default_bookmark_interval(m: &Millis) -> bool {
    *m == default_bookmark_interval()
}

fn default_window_events() -> u64 {
    1024
}

fn is_default_window_events(n: &u64) -> bool {
    *n == default_window_events()
}

impl Default for WatchCache {
    fn default() -> Self {
        WatchCache {
            enabled: true,
            lag: Millis(0),
            wait_timeout: default_wait_timeout(),
            bookmark_interval: default_bookmark_interval(),
            window_events: default_window_events(),
            window_duration: None,
        }
    }
}

/// The store (etcd) as the API servers keep it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Etcd {
    /// How often the API servers compact etcd's history
    /// (kube-apiserver's `--etcd-compaction-interval`): every interval,
    /// up to the revision etcd had at the previous one. `0` never
    /// compacts. Default 5m.
    #[serde(default = "default_compaction_interval")]
    pub compaction_interval: Millis,
}

fn default_compaction_interval() -> Millis {
    Millis(300_000)
}

impl Default for Etcd {
    fn default() -> Self {
        Etcd { compaction_interval: default_compaction_interval() }
    }
}

impl Etcd {
    /// Whether it is the default (then a scenario written back leaves it out).
    pub fn is_default(&self) -> bool {
        *self == Etcd::default()
    }
}

fn yes() -> bool {
    true
}

/// A half-open window of virtual time `[from, until)`; no `until` means to the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Window {
    /// Start of the window.
    pub from: Millis,
    /// End of the window (exclusive); absent means until the end of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<Millis>,
}

impl Window {
    /// Whether `t` falls inside the window.
    pub fn contains(&self, t: u64) -> bool {
        t >= self.from.0 && self.until.is_none_or(|u| t < u.0)
    }
}

/// One node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Node {
    /// Unique name, e.g. `node-1`.
    pub name: String,
    /// How many pods fit on it (`status.capacity.pods`). Default 110.
    #[serde(default = "default_pods")]
    pub pods: u32,
    /// Labels of the Node object.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

impl Node {
    /// Pods a node holds when the scenario does not say: the kubelet's
    /// `--max-pods` default.
    pub const DEFAULT_PODS: u32 = 110;
}

fn default_pods() -> u32 {
    Node::DEFAULT_PODS
}

/// One component: a controller instance and how it talks to the cluster.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Component {
    /// Unique name, e.g. `kubelet-node-1`.
    pub name: String,
    /// Which controller runs it, e.g. `kubelet` or `statefulset`.
    pub controller: String,
    /// For node agents: the node it runs on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The API server it connects to at start.
    pub api_server: String,
    /// API servers to fail over to, in order, after repeated failed requests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failover: Vec<String>,
    /// How its reflectors make their first list after every (re)start;
    /// absent: what the controller's manifest declares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_mode: Option<ListMode>,
    /// Free-form parameters handed to the controller.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, Value>,
    /// Upstream mitigations of stale reads of its own writes to switch on
    /// (`staleControllerConsistency`, `readYourOwnWrites`); none by
    /// default. A controller built on Recon's kube runtime applies them to
    /// every reconcile; see the README's *Mitigations*.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mitigations: Vec<Mitigation>,
    /// When its process first starts (e.g. a controller rolled out during
    /// the run). Default 0: with the cluster.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub start_at: Millis,
    /// Run the controller only while this component holds a Lease, as
    /// kube-controller-manager does: absent, it runs from the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_election: Option<LeaderElection>,
}

/// Leader election through a `coordination.k8s.io/v1` Lease, as client-go's
/// `leaderelection` package does it: every `retryPeriod` the candidate reads
/// the Lease from etcd (a quorum read through its API server) and, if it is
/// free, expired or its own, writes itself in as holder with a
/// compare-and-swap update. A Lease counts as expired when its record has
/// not changed for `leaseDuration` by the candidate's own observation. The
/// controller starts (and its reflectors list) when the Lease is won, and
/// stops when a renewal has failed for `renewDeadline`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LeaderElection {
    /// Name of the Lease; candidates with the same name exclude each other.
    pub lease: String,
    /// Namespace of the Lease. Default `kube-system`.
    #[serde(default = "default_lease_namespace")]
    pub namespace: String,
    /// How long a Lease stays valid after its last renewal. Default 3s.
    #[serde(default = "default_lease_duration")]
    pub lease_duration: Millis,
    /// How long the leader keeps trying to renew before it gives up. Default 2s.
    #[serde(default = "default_renew_deadline")]
    pub renew_deadline: Millis,
    /// How often a candidate tries to acquire or renew. Default 500ms.
    #[serde(default = "default_retry_period")]
    pub retry_period: Millis,
}

impl Component {
    /// Switches `mitigation` on (once).
    pub fn switch_on(&mut self, mitigation: Mitigation) {
        if !self.mitigations.contains(&mitigation) {
            self.mitigations.push(mitigation);
        }
    }

    /// Whether `mitigation` is on.
    pub fn has(&self, mitigation: Mitigation) -> bool {
        self.mitigations.contains(&mitigation)
    }
}

fn is_zero(m: &Millis) -> bool {
    m.0 == 0
}

fn default_lease_namespace() -> String {
    "kube-system".into()
}

fn default_lease_duration() -> Millis {
    Millis(3_000)
}

fn default_renew_deadline() -> Millis {
    Millis(2_000)
}

fn default_retry_period() -> Millis {
    Millis(500)
}

pub use recon_abi::{ListMode, Mitigation};

/// One timed step of the script.
///
/// In YAML, a map with `at` and exactly one action key, e.g.
/// `{at: 3s, scale: {kind: StatefulSet, name: web, replicas: 2}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "StepRepr", into = "StepRepr")]
pub struct Step {
    /// When the step happens.
    pub at: Millis,
    /// What happens.
    pub action: StepAction,
}

/// A user action or a fault.
#[derive(Clone, Debug, PartialEq)]
pub enum StepAction {
    /// `kubectl create`: create an object (fails if it exists).
    Create {
        /// The manifest.
        object: Object,
        /// The API server the request goes to (default: the first one).
        via: Option<String>,
    },
    /// `kubectl apply`: create the object, or replace its labels, annotations and spec.
    Apply {
        /// The manifest.
        object: Object,
        /// The API server the request goes to (default: the first one).
        via: Option<String>,
    },
    /// `kubectl delete`: delete an object (pods bound to a node terminate gracefully).
    Delete {
        /// Which object.
        target: ObjectRef,
        /// The API server the request goes to (default: the first one).
        via: Option<String>,
        /// `--cascade`: what happens to the object's dependents (sent as
        /// the delete's `propagationPolicy`); `None` sends none, and the
        /// API server's default for the object applies.
        cascade: Option<PropagationPolicy>,
    },
    /// `kubectl scale`: set `spec.replicas`.
    Scale {
        /// Which object.
        target: ObjectRef,
        /// The new replica count.
        replicas: u32,
        /// The API server the request goes to (default: the first one).
        via: Option<String>,
    },
    /// `kubectl cordon`: mark a node unschedulable.
    Cordon {
        /// The node.
        node: String,
    },
    /// `kubectl uncordon`: mark a node schedulable again.
    Uncordon {
        /// The node.
        node: String,
    },
    /// The component's process dies; it stays down until a `restart`.
    Crash {
        /// The component.
        component: String,
    },
    /// The component's process restarts (crashing it first if running): a
    /// fresh instance with empty memory that lists again. Containers of a
    /// node agent keep running.
    Restart {
        /// The component.
        component: String,
        /// Connect to this API server from now on (as after a load balancer
        /// picked another one); default: the one it used before.
        api_server: Option<String>,
    },
    /// The component's watch connections break; its reflectors re-watch
    /// from the last revision they saw (and relist if that is gone).
    Disconnect {
        /// The component.
        component: String,
    },
    /// The store compacts its history, keeping the last `keep` revisions.
    Compact {
        /// Revisions to keep (0: compact up to the current revision).
        keep: u64,
    },
}

/// Names an object in a script step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectRef {
    /// Kind, e.g. `Pod`.
    pub kind: String,
    /// Namespace; defaults to `default` for namespaced kinds.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name.
    pub name: String,
}

/// A safety check the simulator evaluates as the run goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Check {
    /// No two nodes run a container for the same namespace/name at once.
    PodIdentity,
    /// At most one live pod per StatefulSet ordinal.
    StatefulSetOrdinals,
    /// The revisions a component observes never decrease, across its
    /// restarts too (the component, not one process of it, remembers the
    /// newest it saw): a restart that relists from an older cache is time
    /// travel, the #59848 case.
    TimeTravel,
    /// A controller never creates a pod for a ReplicaSet that already has
    /// `spec.replicas` live pods in the store, nor deletes one when it has no
    /// more than that: a write that overshoots or undershoots was decided on
    /// a view the store had moved past. StatefulSets are judged the same way,
    /// with `maxUnavailable` (default 1) pods of leeway below; Deployments
    /// through the live pods of all their ReplicaSets, within `maxSurge` and
    /// `maxUnavailable` (docs/API-SEMANTICS.md, *Replica count*).
    ReplicaCount,
    /// Liveness, not safety: at the end of the run every ReplicaSet and
    /// StatefulSet runs as many containers as its `spec.replicas`. Off by
    /// default (a run may simply end too early); scenarios about
    /// convergence turn it on.
    Convergence,
    /// Liveness: every object marked for deletion is gone by the end of
    /// the run, once its grace period is over — a finalizer that nobody
    /// removes holds it forever. Off by default, like convergence.
    StuckDeleting,
    /// A garbage collector never deletes a dependent while one of the
    /// owners it names (by uid) exists and is not being deleted: a delete
    /// decided on a view in which the owner looked gone. Nor does any other
    /// component's delete, decided on an earlier incarnation of the object,
    /// take a newer one whose owner exists (a delete by name from a stale
    /// view). Judged against the store when the delete commits.
    DeletedLiveDependent,
    /// Liveness: when a garbage collector runs, no object is left at the
    /// end of the run that names only owners that no longer exist (by uid).
    /// Off by default, like convergence.
    OrphanedDependent,
    /// A component never creates an object naming an owner (by uid) that
    /// is already gone or being deleted: a create decided on a view that
    /// had not seen the owner's deletion (an operator that relists from a
    /// stale cache and brings back the children of a deleted custom
    /// resource). Judged against the store when the create commits.
    DependentOfDeletedOwner,
    /// A component never puts a field of an object back to the value it
    /// had in a version older than one the component had already observed:
    /// a write computed from a view that went back in time (a relist from a
    /// lagging cache) and sent without a precondition. A component that
    /// sets a field back on purpose after seeing it change acted on the
    /// newest version it knew and is not flagged. Judged against the store
    /// when the write commits; the exact definition is in the simulator's
    /// `checks/lost_work.rs`.
    LostWork,
    /// Liveness: at the end of the run, no controller sits idle with work
    /// its own rule still asks for. A running controller (not a node
    /// agent) that has handled every event, has no request unanswered and
    /// holds exactly what the store holds for everything it watches is
    /// *quiescent*; a fresh instance of it is then handed the store as it
    /// is, and if that instance would write (create, update, patch or
    /// delete anything but an Event), the running one missed an edge: a
    /// write it skipped on a stale copy, after which nothing woke it
    /// (ai-dynamo/grove#775). Off by default, like convergence.
    IdleWithWorkLeft,
    /// A rule about how a field may change over its object's write history
    /// (`checks.policies`: "replicas never decrease") held for what a
    /// controller derived from it: every value a component writes to the
    /// driven field is the value the rule gives for some prefix of the
    /// source object's writes. A controller that reconciled only on some
    /// versions of the source, and skipped one the rule depends on, writes
    /// a value no prefix gives (rabbitmq/cluster-operator#758: 1 → 3 → 2
    /// with "never decrease" allows 1 or 3, never 2). Judged against the
    /// store's history when the write commits; off unless listed.
    HistoryPolicy,
    /// An aggregate object (`checks.aggregates`: a binding whose subjects
    /// stand one each for the objects of a kind) never loses, in a
    /// component's write, a member that stands for an object the store
    /// holds and is not deleting: a write computed from a store that lacked
    /// the object, such as a reconcile during a relist, before the list
    /// is in the store (stackabletech/hdfs-operator#774). A member not yet
    /// added is not flagged (a lagging controller adds it later); only one
    /// taken away. Judged against the store when the write commits; off
    /// unless listed.
    DroppedMember,
}

impl Check {
    /// Every check, in a fixed order.
    pub const ALL: [Check; 13] = [
        Check::PodIdentity,
        Check::StatefulSetOrdinals,
        Check::TimeTravel,
        Check::ReplicaCount,
        Check::Convergence,
        Check::StuckDeleting,
        Check::DeletedLiveDependent,
        Check::OrphanedDependent,
        Check::DependentOfDeletedOwner,
        Check::LostWork,
        Check::IdleWithWorkLeft,
        Check::HistoryPolicy,
        Check::DroppedMember,
    ];

    /// The checks a scenario runs when it does not say: every safety check.
    pub const DEFAULT: [Check; 4] =
        [Check::PodIdentity, Check::StatefulSetOrdinals, Check::TimeTravel, Check::ReplicaCount];

    /// Whether this is a liveness check ("never converged"), judged at the
    /// end of the run, rather than a safety check judged as the run goes.
    pub fn is_liveness(self) -> bool {
        matches!(self, Check::Convergence | Check::StuckDeleting | Check::OrphanedDependent | Check::IdleWithWorkLeft)
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Check::PodIdentity => "pod identity",
            Check::StatefulSetOrdinals => "StatefulSet ordinals",
            Check::TimeTravel => "time travel",
            Check::ReplicaCount => "replica count",
            Check::Convergence => "convergence",
            Check::StuckDeleting => "stuck deleting",
            Check::DeletedLiveDependent => "deleted a live dependent",
            Check::OrphanedDependent => "orphaned dependent",
            Check::DependentOfDeletedOwner => "dependent of a deleted owner",
            Check::LostWork => "lost work",
            Check::IdleWithWorkLeft => "idle with work left",
            Check::HistoryPolicy => "history policy",
            Check::DroppedMember => "dropped member",
        })
    }
}

/// Which checks run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Checks {
    /// The enabled checks. Default: every safety check ([`Check::DEFAULT`]).
    #[serde(default = "all_checks")]
    pub enabled: Vec<Check>,
    /// The rules the `historyPolicy` check judges.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<HistoryPolicy>,
    /// The aggregate objects the `droppedMember` check judges.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aggregates: Vec<Aggregate>,
}

impl Default for Checks {
    fn default() -> Self {
        Checks { enabled: all_checks(), policies: Vec::new(), aggregates: Vec::new() }
    }
}

/// An object that lists one member per object of a kind
/// (`checks.aggregates[]`): a ClusterRoleBinding whose `subjects` hold
/// the service account of every HdfsCluster, say.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Aggregate {
    /// The kind of the objects it stands for, e.g. `HdfsCluster`.
    pub kind: String,
    /// The aggregate object and its list field.
    pub into: AggregateField,
    /// The fields of the list element that stands for an object, each a
    /// template where `{name}` and `{namespace}` are the object's, e.g.
    /// `{ kind: ServiceAccount, name: "{name}-serviceaccount", namespace: "{namespace}" }`.
    pub member: BTreeMap<String, String>,
}

/// The list field of one aggregate object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AggregateField {
    /// Its kind, e.g. `ClusterRoleBinding`.
    pub kind: String,
    /// Its namespace; empty (the default) for a cluster-scoped object.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The list, a dotted path from the object's root, e.g. `subjects`.
    pub field: String,
}

impl Aggregate {
    /// The member that stands for the object `namespace`/`name`: the
    /// template's fields with `{name}` and `{namespace}` filled in.
    pub fn member_for(&self, namespace: &str, name: &str) -> BTreeMap<String, String> {
        self.member
            .iter()
            .map(|(field, template)| {
                (field.clone(), template.replace("{name}", name).replace("{namespace}", namespace))
            })
            .collect()
    }
}

/// A rule about how a field of every object of a kind may change over the
/// object's writes, and the field of another object a controller derives
/// from it (`checks.policies[]`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HistoryPolicy {
    /// The kind of the objects the rule is stated on, e.g. `RabbitmqCluster`.
    pub kind: String,
    /// The field, a dotted path from the object's root, e.g. `spec.replicas`.
    pub field: String,
    /// How the value in force follows the values written.
    pub rule: PolicyRule,
    /// The field a controller derives from it.
    pub drives: DrivenField,
}

/// How the value in force follows the sequence of values written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PolicyRule {
    /// The value in force is the last one written.
    Latest,
    /// A lower value than one written before is refused: the value in
    /// force is the highest written so far (a cluster that never scales down).
    NeverDecreases,
    /// A higher value than one written before is refused: the value in
    /// force is the lowest written so far.
    NeverIncreases,
}

impl fmt::Display for PolicyRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PolicyRule::Latest => "follows the latest value",
            PolicyRule::NeverDecreases => "never decreases",
            PolicyRule::NeverIncreases => "never increases",
        })
    }
}

/// The field a controller derives from a [`HistoryPolicy`]'s field, on an
/// object in the same namespace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DrivenField {
    /// Its kind, e.g. `StatefulSet`.
    pub kind: String,
    /// Its name, where `{name}` stands for the source object's name, e.g.
    /// `{name}-server`.
    pub name: String,
    /// The field, a dotted path from the object's root, e.g. `spec.replicas`.
    pub field: String,
}

impl DrivenField {
    /// The name of the object driven by the source object `source`.
    pub fn name_for(&self, source: &str) -> String {
        self.name.replace("{name}", source)
    }
}

fn all_checks() -> Vec<Check> {
    Check::DEFAULT.to_vec()
}

/// The outcome a scenario is written to show.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Expectation {
    /// The checks expected to be violated; empty means a clean run.
    #[serde(default)]
    pub violations: Vec<Check>,
}

impl Serialize for Millis {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Millis {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Millis;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration such as 250ms, 2s, 1.5s or 1m, or a number of milliseconds")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Millis, E> {
                Ok(Millis(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Millis, E> {
                u64::try_from(v)
                    .map(Millis)
                    .map_err(|_| E::custom(format!("duration {v} is negative; durations must be zero or more")))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Millis, E> {
                parse_millis(v).map_err(E::custom)
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// Parses `250ms`, `2s`, `1.5s`, `1m` or a bare number of milliseconds.
pub fn parse_millis(text: &str) -> Result<Millis, String> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err(format!("duration {t:?} is negative; durations must be zero or more"));
    }
    let (number, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1_000)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60_000)
    } else {
        (t, 1)
    };
    let bad = || format!("invalid duration {t:?}: expected e.g. 250ms, 2s, 1.5s or 1m");
    let (whole, fraction) = number.trim().split_once('.').unwrap_or((number.trim(), ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty()) || !digits(whole) || !digits(fraction) {
        return Err(bad());
    }
    // Integer arithmetic, because in floating point 1.1 × 1000 is not 1100.
    let too_large = || format!("duration {t:?} is too large");
    let whole_ms = match whole {
        "" => 0,
        w => w.parse::<u64>().map_err(|_| too_large())?.checked_mul(scale).ok_or_else(too_large)?,
    };
    let fraction = fraction.trim_end_matches('0');
    // A fraction of more than 5 significant digits, times at most 60 000,
    // is never a whole number of milliseconds.
    let not_whole = || format!("duration {t:?} is not a whole number of milliseconds");
    if fraction.len() > 5 {
        return Err(not_whole());
    }
    let denominator = 10u64.pow(fraction.len() as u32);
    let scaled = fraction.parse::<u64>().unwrap_or(0) * scale;
    if scaled % denominator != 0 {
        return Err(not_whole());
    }
    whole_ms.checked_add(scaled / denominator).map(Millis).ok_or_else(too_large)
}

/// The YAML shape of a step: `at` plus exactly one action key.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StepRepr {
    at: Millis,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    via: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    create: Option<Object>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    apply: Option<Object>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    delete: Option<DeleteRepr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scale: Option<ScaleRepr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cordon: Option<NodeRepr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    uncordon: Option<NodeRepr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    crash: Option<ComponentRepr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    restart: Option<RestartRepr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    disconnect: Option<ComponentRepr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    compact: Option<CompactRepr>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DeleteRepr {
    kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    namespace: String,
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cascade: Option<Cascade>,
}

/// `kubectl delete --cascade=`, spelled as kubectl spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Cascade {
    Background,
    Foreground,
    Orphan,
}

impl From<Cascade> for PropagationPolicy {
    fn from(c: Cascade) -> PropagationPolicy {
        match c {
            Cascade::Background => PropagationPolicy::Background,
            Cascade::Foreground => PropagationPolicy::Foreground,
            Cascade::Orphan => PropagationPolicy::Orphan,
        }
    }
}

impl From<PropagationPolicy> for Cascade {
    fn from(p: PropagationPolicy) -> Cascade {
        match p {
            PropagationPolicy::Background => Cascade::Background,
            PropagationPolicy::Foreground => Cascade::Foreground,
            PropagationPolicy::Orphan => Cascade::Orphan,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ScaleRepr {
    kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    namespace: String,
    name: String,
    replicas: u32,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct NodeRepr {
    node: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ComponentRepr {
    component: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RestartRepr {
    component: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    api_server: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CompactRepr {
    #[serde(default)]
    keep: u64,
}

/// The action keys of a step, for messages.
const STEP_ACTIONS: [&str; 10] =
    ["create", "apply", "delete", "scale", "cordon", "uncordon", "crash", "restart", "disconnect", "compact"];

impl TryFrom<StepRepr> for Step {
    type Error = String;

    fn try_from(r: StepRepr) -> Result<Step, String> {
        let via = r.via;
        let mut actions = Vec::new();
        if let Some(object) = r.create {
            actions.push(("create", StepAction::Create { object, via: via.clone() }));
        }
        if let Some(object) = r.apply {
            actions.push(("apply", StepAction::Apply { object, via: via.clone() }));
        }
        if let Some(d) = r.delete {
            let target = ObjectRef { kind: d.kind, namespace: d.namespace, name: d.name };
            let cascade = d.cascade.map(PropagationPolicy::from);
            actions.push(("delete", StepAction::Delete { target, via: via.clone(), cascade }));
        }
        if let Some(s) = r.scale {
            let target = ObjectRef { kind: s.kind, namespace: s.namespace, name: s.name };
            actions.push(("scale", StepAction::Scale { target, replicas: s.replicas, via: via.clone() }));
        }
        if let Some(n) = r.cordon {
            actions.push(("cordon", StepAction::Cordon { node: n.node }));
        }
        if let Some(n) = r.uncordon {
            actions.push(("uncordon", StepAction::Uncordon { node: n.node }));
        }
        if let Some(c) = r.crash {
            actions.push(("crash", StepAction::Crash { component: c.component }));
        }
        if let Some(c) = r.restart {
            actions.push(("restart", StepAction::Restart { component: c.component, api_server: c.api_server }));
        }
        if let Some(c) = r.disconnect {
            actions.push(("disconnect", StepAction::Disconnect { component: c.component }));
        }
        if let Some(c) = r.compact {
            actions.push(("compact", StepAction::Compact { keep: c.keep }));
        }
        let action = match actions.len() {
            1 => actions.remove(0).1,
            0 => {
                return Err(format!("a script step needs one action: {}", STEP_ACTIONS.join(", ")));
            }
            _ => {
                let found: Vec<&str> = actions.iter().map(|(name, _)| *name).collect();
                return Err(format!("a script step takes one action, found {}", found.join(" and ")));
            }
        };
        let takes_via = matches!(
            action,
            StepAction::Create { .. } | StepAction::Apply { .. } | StepAction::Delete { .. } | StepAction::Scale { .. }
        );
        if via.is_some() && !takes_via {
            return Err("`via` only applies to create, apply, delete and scale steps".into());
        }
        Ok(Step { at: r.at, action })
    }
}

impl From<Step> for StepRepr {
    fn from(step: Step) -> StepRepr {
        let mut r = StepRepr { at: step.at, ..Default::default() };
        match step.action {
            StepAction::Create { object, via } => (r.create, r.via) = (Some(object), via),
            StepAction::Apply { object, via } => (r.apply, r.via) = (Some(object), via),
            StepAction::Delete { target, via, cascade } => {
                let cascade = cascade.map(Cascade::from);
                r.delete =
                    Some(DeleteRepr { kind: target.kind, namespace: target.namespace, name: target.name, cascade });
                r.via = via;
            }
            StepAction::Scale { target, replicas, via } => {
                r.scale =
                    Some(ScaleRepr { kind: target.kind, namespace: target.namespace, name: target.name, replicas });
                r.via = via;
            }
            StepAction::Cordon { node } => r.cordon = Some(NodeRepr { node }),
            StepAction::Uncordon { node } => r.uncordon = Some(NodeRepr { node }),
            StepAction::Crash { component } => r.crash = Some(ComponentRepr { component }),
            StepAction::Restart { component, api_server } => r.restart = Some(RestartRepr { component, api_server }),
            StepAction::Disconnect { component } => r.disconnect = Some(ComponentRepr { component }),
            StepAction::Compact { keep } => r.compact = Some(CompactRepr { keep }),
        }
        r
    }
}
