//! What the worker does with a request, independent of the browser: the
//! same code runs natively in tests (plugins under wasmtime) and in the
//! worker (plugins in the page's WebAssembly), since `recon-host` offers the
//! same engine API on both.

use std::collections::BTreeMap;

use recon_abi::ComponentConfig;
use recon_host::{CompiledPlugin, Engine, Limits, Module};
use recon_sim::{Sim, SimError};

use crate::protocol::{FromWorker, ToWorker, Upload};

/// How often (in simulator steps) the run checks whether to report progress.
const STEPS_PER_PROGRESS_CHECK: u64 = 256;

/// Runs requests, keeping compiled plugins between runs: changing a control
/// re-runs with the same uploads, and compiling is the slow part.
pub struct Runner {
    engine: Engine,
    /// Compiled uploads by (file name, FNV-1a of the bytes, the limits
    /// written into them).
    compiled: BTreeMap<(String, u64, recon_scenario::PluginLimits), CompiledPlugin>,
}

/// A parsed scenario and its compiled uploads, ready to simulate.
pub(crate) struct Prepared {
    /// The scenario.
    pub scenario: recon_scenario::Scenario,
    /// Where its parts are in the text, for errors.
    source: recon_scenario::SourceMap,
    /// Compiled uploads by component.
    swaps: BTreeMap<String, CompiledPlugin>,
}

impl Prepared {
    /// The controllers for one simulation: the uploads where given, the
    /// built-in controllers elsewhere.
    pub fn instantiate(&self) -> recon_sim::Instantiate {
        let swaps = self.swaps.clone();
        Box::new(move |component| match swaps.get(&component.name) {
            Some(plugin) => Some(plugin.start()),
            None => recon_catalog::instantiate(&component.controller),
        })
    }

    /// A simulation that could not be built, as the `Failed` answer (an
    /// unknown controller at its line in the scenario).
    pub fn sim_error(&self, id: u64, error: SimError) -> FromWorker {
        let error = match error {
            SimError::UnknownController { path, controller, .. } => {
                let message = recon_catalog::unknown_controller(&controller);
                recon_scenario::ScenarioError::at("scenario.yaml", &self.source, &path, message).to_string()
            }
            e => e.to_string(),
        };
        FromWorker::Failed { id, component: None, error }
    }
}

/// Where a run reports progress; `now_ms` is a wall clock (the worker's
/// `performance.now()`), used only to pace reports and to time the run.
pub trait Progress {
    /// Wall-clock milliseconds, from any origin.
    fn now_ms(&mut self) -> f64;
    /// Sends one message to the page.
    fn report(&mut self, message: FromWorker);
}

/// How often progress is reported, in wall-clock milliseconds.
const PROGRESS_EVERY_MS: f64 = 100.0;

impl Runner {
    /// A runner with a fresh engine.
    pub fn new() -> Result<Runner, String> {
        Ok(Runner { engine: Engine::new().map_err(|e| e.to_string())?, compiled: BTreeMap::new() })
    }

    /// Handles one request; every answer goes through `progress.report`.
    pub fn handle(&mut self, request: ToWorker, progress: &mut dyn Progress) {
        let answer = match request {
            ToWorker::Run { id, scenario, seed, uploads } => self.run(id, &scenario, seed, &uploads, progress),
            ToWorker::Inspect { id, scenario, seed, uploads, at_ms } => match self.build(id, &scenario, seed, &uploads)
            {
                Ok((mut sim, _)) => {
                    sim.run_until(at_ms);
                    FromWorker::Snapshot { id, snapshot: sim.snapshot() }
                }
                Err(failed) => failed,
            },
            ToWorker::Check { id, upload, limits } => self.check(id, &upload, &limits),
            ToWorker::Search(request) => crate::search::search(self, &request, progress),
            ToWorker::Shrink(request) => crate::search::shrink(self, &request),
            ToWorker::SelfTestPanic => panic!("a panic asked for by ?selftest=panic-worker"),
        };
        progress.report(answer);
    }

    fn check(&mut self, id: u64, upload: &Upload, limits: &recon_scenario::PluginLimits) -> FromWorker {
        let failed = |error: String| FromWorker::Failed { id, component: Some(upload.component.clone()), error };
        let plugin = match self.compile(upload, limits) {
            Ok(plugin) => plugin,
            Err(error) => return failed(error),
        };
        let config = ComponentConfig { name: upload.component.clone(), ..Default::default() };
        match plugin.start().init(&config) {
            Ok(manifest) => FromWorker::Checked { id, component: upload.component.clone(), manifest },
            Err(crash) => failed(crash.to_string()),
        }
    }

    /// Parses the scenario and builds its simulation, with uploads compiled;
    /// returns it and the scenario's duration, or the `Failed` answer.
    fn build(&mut self, id: u64, text: &str, seed: u64, uploads: &[Upload]) -> Result<(Sim, u64), FromWorker> {
        let mut prepared = self.prepare(id, text, uploads)?;
        prepared.scenario.seed = seed;
        match Sim::new(&prepared.scenario, prepared.instantiate()) {
            Ok(sim) => Ok((sim, prepared.scenario.duration.0)),
            Err(e) => Err(prepared.sim_error(id, e)),
        }
    }

    /// Parses the scenario and compiles its uploads, or says why not as
    /// the `Failed` answer.
    pub(crate) fn prepare(&mut self, id: u64, text: &str, uploads: &[Upload]) -> Result<Prepared, FromWorker> {
        let failed = |component: Option<String>, error: String| FromWorker::Failed { id, component, error };
        let (scenario, source) =
            recon_scenario::parse_with_source("scenario.yaml", text).map_err(|e| failed(None, e.to_string()))?;
        let mut swaps = BTreeMap::new();
        for upload in uploads {
            if !scenario.components.iter().any(|c| c.name == upload.component) {
                let error = format!("{}: the scenario has no component {:?}", upload.file_name, upload.component);
                return Err(failed(Some(upload.component.clone()), error));
            }
            let plugin = self
                .compile(upload, &scenario.limits.plugins)
                .map_err(|error| failed(Some(upload.component.clone()), error))?;
            swaps.insert(upload.component.clone(), plugin);
        }
        Ok(Prepared { scenario, source, swaps })
    }

    fn run(&mut self, id: u64, text: &str, seed: u64, uploads: &[Upload], progress: &mut dyn Progress) -> FromWorker {
        let started = progress.now_ms();
        let (mut sim, end_ms) = match self.build(id, text, seed, uploads) {
            Ok(built) => built,
            Err(failed) => return failed,
        };
        let mut last_report = started;
        let mut steps = 0u64;
        while sim.step() {
            steps += 1;
            if steps.is_multiple_of(STEPS_PER_PROGRESS_CHECK) {
                let now = progress.now_ms();
                if now - last_report >= PROGRESS_EVERY_MS {
                    last_report = now;
                    let entries = sim.trace().entries.len() as u64;
                    progress.report(FromWorker::Progress { id, time_ms: sim.now_ms(), end_ms, entries });
                }
            }
        }
        let wall_ms = progress.now_ms() - started;
        let trace = sim.into_trace();
        FromWorker::Done { id, hash: trace.hash(), wall_ms, trace }
    }

    /// Validates, instruments (under `limits`) and compiles an upload, or
    /// says why not in one line.
    fn compile(&mut self, upload: &Upload, limits: &recon_scenario::PluginLimits) -> Result<CompiledPlugin, String> {
        let key = (upload.file_name.clone(), recon_sim::rng::fnv1a(&upload.bytes), *limits);
        if let Some(plugin) = self.compiled.get(&key) {
            return Ok(plugin.clone());
        }
        let module =
            Module::load(&upload.file_name, &upload.bytes, &Limits::from(limits)).map_err(|e| e.to_string())?;
        let plugin = self.engine.compile(&module).map_err(|e| e.to_string())?;
        self.compiled.insert(key, plugin.clone());
        Ok(plugin)
    }
}
