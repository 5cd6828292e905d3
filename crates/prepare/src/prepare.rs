//! A scenario and its plugins, ready to simulate.

use std::collections::BTreeMap;

use recon_abi::{ComponentConfig, Manifest};
use recon_host::{CompiledPlugin, Engine, Limits, Module, PluginError};
use recon_scenario::{Component, Diagnostic, PluginLimits, Scenario, ScenarioError, SourceMap};
use recon_sim::{Instantiate, Sim, SimError};

use crate::fit::{Fit, fit};
use crate::key::{PluginBytes, PluginKey};

/// Why a run could not be prepared. Each message is one line that starts
/// with the plugin's file name, ready to show as it is.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// The engine that compiles plugins did not start: a problem of the
    /// host, not of any plugin; nothing the user can change fixes it.
    #[error("{0}")]
    Engine(PluginError),
    /// A plugin was given for a component the scenario does not have:
    /// give it to one of those it has.
    #[error("{file_name}: {}", no_component(component, known))]
    NoSuchComponent {
        /// The plugin's file name.
        file_name: String,
        /// The component asked for.
        component: String,
        /// The components the scenario has, in its order.
        known: Vec<String>,
    },
    /// The plugin was refused: it is not a valid plugin, it does not
    /// compile, or (when checked) it crashes as it starts. The reason says
    /// which and names the file; fix the plugin.
    #[error("{reason}")]
    Rejected {
        /// The component it was for.
        component: String,
        /// Why, in one line.
        reason: String,
    },
    /// The plugin cannot stand in for its component ([`Fit::Refused`]):
    /// give it to a component it fits.
    #[error("{reason}")]
    DoesNotFit {
        /// The component it was for.
        component: String,
        /// Why, in one line.
        reason: String,
    },
}

impl PrepareError {
    /// The component whose plugin failed; `None` when no plugin is to blame.
    pub fn component(&self) -> Option<&str> {
        match self {
            PrepareError::Engine(_) => None,
            PrepareError::NoSuchComponent { component, .. }
            | PrepareError::Rejected { component, .. }
            | PrepareError::DoesNotFit { component, .. } => Some(component),
        }
    }
}

/// Why nothing can stand in for `component`: the scenario does not have it.
fn no_component(component: &str, known: &[String]) -> String {
    format!("the scenario has no component {component:?} (it has: {})", some_of(known))
}

/// The names a message lists: all of a story's few, the first ten and the
/// last of a generated cluster's thousand.
fn some_of(names: &[String]) -> String {
    const LISTED: usize = 12;
    if names.len() <= LISTED {
        return names.join(", ");
    }
    let (last, rest) = names.split_last().expect("more than twelve");
    format!("{}, … {last}; {} in all", rest[..LISTED - 2].join(", "), names.len())
}

/// Whether `name` matches `pattern`, where each `*` stands for any run of
/// characters (an empty one too), and everything else for itself.
fn matches(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else { return false };
    let mut parts: Vec<&str> = parts.collect();
    let Some(last) = parts.pop() else { return rest.is_empty() };
    for part in parts {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// A plugin to run instead of a component's built-in controller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Swap {
    /// The component it stands in for.
    pub component: String,
    /// The file's name: it starts every message about the plugin, the
    /// crash reasons written into the trace included, so it is part of
    /// the run.
    pub file_name: String,
    /// The file's bytes.
    pub plugin: PluginBytes,
}

/// A scenario read from its text, remembering where its parts are, so that
/// a scenario the simulator refuses is reported at its line.
pub struct ScenarioFile {
    /// The scenario. Change it freely before preparing (a seed given on the
    /// command line, say); what the text says is kept only for errors.
    pub scenario: Scenario,
    /// The name the file goes by in messages.
    name: String,
    /// Where each part of the scenario is in the text.
    source: SourceMap,
}

impl ScenarioFile {
    /// Parses and validates a scenario; `name` starts every message about it.
    ///
    /// Beyond what `recon_scenario` checks, every object the scenario
    /// writes (its `objects` and the objects of its `create` and `apply`
    /// steps) of a kind the built-in kube-rs controllers read as a type
    /// must read as that type ([`recon_kube::check_object`]): an API
    /// server would refuse it with 400 Bad Request, and each of those
    /// controllers would crash on it.
    pub fn parse(name: &str, text: &str) -> Result<ScenarioFile, ScenarioError> {
        let (scenario, source) = recon_scenario::parse_with_source(name, text)?;
        let diagnostics: Vec<Diagnostic> = scenario
            .written_objects()
            .filter_map(|(path, object)| {
                let why = recon_kube::check_object(object).err()?;
                let message = format!(
                    "{} does not read as a Kubernetes {} {} (an API server would refuse it with 400 Bad Request): {why}",
                    object.key(),
                    object.api_version,
                    object.kind
                );
                Some(Diagnostic::new(&source, path, message))
            })
            .collect();
        if !diagnostics.is_empty() {
            return Err(ScenarioError { file: name.to_owned(), diagnostics });
        }
        Ok(ScenarioFile { scenario, name: name.to_owned(), source })
    }

    /// A scenario made in code rather than read from a file: messages
    /// name it `name` and point at parts of it by path, with no line.
    pub fn new(name: &str, scenario: Scenario) -> ScenarioFile {
        ScenarioFile { scenario, name: name.to_owned(), source: SourceMap::default() }
    }

    /// The components a plugin is given to as `name`: the component of
    /// that name; failing one, when `name` holds a `*`, every component
    /// whose name it matches in the scenario's order, each `*` standing for
    /// any run of characters (`kubelet-*` is every kubelet of a generated
    /// cluster). Otherwise why a plugin cannot be given to it (the message
    /// lists the components the scenario has).
    pub fn components_named(&self, name: &str) -> Result<Vec<&Component>, String> {
        let components = &self.scenario.components;
        if let Some(exact) = components.iter().find(|c| c.name == name) {
            return Ok(vec![exact]);
        }
        let known = || components.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
        if !name.contains('*') {
            return Err(no_component(name, &known()));
        }
        let matched: Vec<&Component> = components.iter().filter(|c| matches(name, &c.name)).collect();
        if matched.is_empty() {
            return Err(format!("no component of the scenario matches {name:?} (it has: {})", some_of(&known())));
        }
        Ok(matched)
    }

    /// Why the simulator refused to build this scenario, in the words every
    /// front end shows: an unknown controller at its line, with the
    /// built-in ones listed; anything else after the file's name.
    pub fn explain(&self, error: SimError) -> String {
        match error {
            SimError::UnknownController { path, controller, .. } => {
                let message = recon_catalog::unknown_controller(&controller);
                ScenarioError::at(&self.name, &self.source, &path, message).to_string()
            }
            error => format!("{}: {error}", self.name),
        }
    }
}

/// Compiles plugins, once each, and prepares runs with them. Keep one for
/// as long as the same plugins may be run again (the playground's worker
/// keeps one for its life: every change of a control re-runs, and
/// compiling is the slow part).
pub struct Preparer {
    engine: Engine,
    /// Compiled plugins by content, file name (written into its messages)
    /// and limits (written into its code).
    compiled: BTreeMap<(PluginKey, String, PluginLimits), CompiledPlugin>,
}

impl Preparer {
    /// A preparer with a fresh engine.
    pub fn new() -> Result<Preparer, PrepareError> {
        let engine = Engine::pooled(recon_host::MAX_POOL_SLOTS).map_err(PrepareError::Engine)?;
        Ok(Preparer { engine, compiled: BTreeMap::new() })
    }

    /// How many plugins this preparer holds compiled (one per content, file
    /// name and limits, however many components run each).
    pub fn compiled(&self) -> usize {
        self.compiled.len()
    }

    /// Validates a plugin, instruments it under `limits` and compiles it,
    /// or says why not; the same plugin under the same name and limits is
    /// compiled once.
    pub fn compile(&mut self, swap: &Swap, limits: &PluginLimits) -> Result<CompiledPlugin, PrepareError> {
        let key = (swap.plugin.key().clone(), swap.file_name.clone(), *limits);
        if let Some(plugin) = self.compiled.get(&key) {
            return Ok(plugin.clone());
        }
        let rejected =
            |e: PluginError| PrepareError::Rejected { component: swap.component.clone(), reason: e.to_string() };
        let module = Module::load(&swap.file_name, swap.plugin.bytes(), &Limits::from(limits)).map_err(rejected)?;
        let plugin = self.engine.compile(&module).map_err(rejected)?;
        self.compiled.insert(key, plugin.clone());
        Ok(plugin)
    }

    /// Compiles a plugin under `limits` and starts it, as its component
    /// would (by name, before any scenario says more about it): what it
    /// declares, or why it is refused (a crash as it starts included).
    pub fn check(&mut self, swap: &Swap, limits: &PluginLimits) -> Result<Manifest, PrepareError> {
        let plugin = self.compile(swap, limits)?;
        let config = ComponentConfig { name: swap.component.clone(), ..Default::default() };
        plugin
            .start()
            .init(&config)
            .map_err(|crash| PrepareError::Rejected { component: swap.component.clone(), reason: crash.to_string() })
    }

    /// Prepares a scenario, its enabled fixes made
    /// ([`Scenario::with_fixes_applied`]), with plugins standing in for some components:
    /// each must name a component of the scenario, is compiled under the
    /// scenario's `limits.plugins` and must [`fit`] its component (a
    /// warning is kept in [`Prepared::warnings`]). A second plugin for the
    /// same component replaces the first. A plugin that crashes as it
    /// starts is not refused here: the simulator reports the crash in the
    /// run and backs off, as it would for a later crash.
    pub fn prepare(&mut self, mut file: ScenarioFile, swaps: &[Swap]) -> Result<Prepared, PrepareError> {
        // What runs is the scenario with its enabled fixes made, and what it
        // expects is the outcome of exactly those fixes.
        file.scenario = file.scenario.with_fixes_applied();
        let mut plugins = BTreeMap::new();
        let mut warnings = BTreeMap::new();
        for swap in swaps {
            let Some(spec) = file.scenario.components.iter().find(|c| c.name == swap.component) else {
                return Err(PrepareError::NoSuchComponent {
                    file_name: swap.file_name.clone(),
                    component: swap.component.clone(),
                    known: file.scenario.components.iter().map(|c| c.name.clone()).collect(),
                });
            };
            let plugin = self.compile(swap, &file.scenario.limits.plugins)?;
            // Started as the simulator will start it, to read what it declares.
            let config = ComponentConfig {
                name: spec.name.clone(),
                node: spec.node.clone(),
                params: spec.params.clone(),
                mitigations: spec.mitigations.clone(),
            };
            let manifest = plugin.start().init(&config);
            match manifest.map(|m| fit(&file.scenario, &swap.component, &swap.file_name, &m)) {
                Ok(Fit::Refused(reason)) => {
                    return Err(PrepareError::DoesNotFit { component: swap.component.clone(), reason });
                }
                Ok(Fit::Warning(warning)) => warnings.insert(swap.component.clone(), warning),
                Ok(Fit::Fits) | Err(_) => warnings.remove(&swap.component),
            };
            plugins.insert(swap.component.clone(), plugin);
        }
        Ok(Prepared { file, plugins, warnings: warnings.into_values().collect() })
    }
}

/// A scenario with its plugins compiled: what the simulator runs.
pub struct Prepared {
    /// The scenario, and where its parts are for errors.
    pub file: ScenarioFile,
    /// Compiled plugins by the component they stand in for.
    plugins: BTreeMap<String, CompiledPlugin>,
    /// One line for each plugin that runs where it may surprise (a
    /// controller standing in for a node's agent), by component; the front
    /// end says them.
    pub warnings: Vec<String>,
}

impl Prepared {
    /// The scenario.
    pub fn scenario(&self) -> &Scenario {
        &self.file.scenario
    }

    /// The controllers for one simulation: each component's plugin where
    /// one was given, the built-in controller its scenario names elsewhere.
    /// Every simulation needs its own (a search makes one per plan). A
    /// plugin that cannot be instantiated starts as an instance whose every
    /// call crashes with the reason, which the simulator reports and backs
    /// off from.
    pub fn instantiate(&self) -> Instantiate {
        let plugins = self.plugins.clone();
        Box::new(move |component| match plugins.get(&component.name) {
            Some(plugin) => Some(plugin.start()),
            None => recon_catalog::instantiate(&component.controller),
        })
    }

    /// A simulation of the scenario, ready to run, or why the simulator
    /// refused it ([`ScenarioFile::explain`]).
    pub fn sim(&self) -> Result<Sim, String> {
        Sim::new(self.scenario(), self.instantiate()).map_err(|e| self.file.explain(e))
    }
}
