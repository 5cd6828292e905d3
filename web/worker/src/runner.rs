//! What the worker does with a request, independent of the browser: the
//! same code runs natively in tests (plugins under wasmtime) and in the
//! worker (plugins in the page's WebAssembly), since `recon-host` offers the
//! same engine API on both. A run is prepared by `recon_prepare`, as
//! `recon run` prepares it: the same validation, the same messages.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use recon_prepare::{PluginBytes, PluginKey, PrepareError, Prepared, Preparer, ScenarioFile, Swap};
use recon_sim::Sim;
use recon_web_protocol::{FromWorker, MAX_PLUGIN_COMPONENTS, ToWorker, UploadRef};

/// How often (in simulator steps) the run checks whether to report progress.
const STEPS_PER_PROGRESS_CHECK: u64 = 256;

/// The name a scenario from the page goes by in messages.
const SCENARIO_FILE: &str = "scenario.yaml";

/// Runs requests, keeping the plugins the page sent and, through its
/// [`Preparer`], their compiled modules between runs: changing a control
/// re-runs with the same uploads, and compiling is the slow part.
pub struct Runner {
    preparer: Preparer,
    /// The plugins the page sent, by content key.
    plugins: BTreeMap<PluginKey, PluginBytes>,
}

/// A request that failed, as the `Failed` answer.
fn failed(id: u64, error: PrepareError) -> FromWorker {
    FromWorker::Failed { id, component: error.component().map(str::to_owned), error: error.to_string() }
}

/// Why a run giving plugins to more than [`MAX_PLUGIN_COMPONENTS`]
/// components does not start in a tab, and what does run it.
fn too_many_plugins(uploads: &[UploadRef]) -> String {
    // The start the components' names share names them all on the command line.
    let shared = uploads.iter().map(|u| u.component.as_str()).reduce(|a, b| {
        let same =
            a.char_indices().zip(b.chars()).find(|((_, x), y)| x != y).map_or(a.len().min(b.len()), |((i, _), _)| i);
        &a[..same]
    });
    let file = &uploads[0].file_name;
    format!(
        "This run gives plugins to {} components, and a tab runs at most {MAX_PLUGIN_COMPONENTS}: the browser gives \
         each its own memory, and has room for about 120. Give the plugin to fewer (find them by name), or run \
         them all from the command line: recon run scenario.yaml --plugin '{}*={file}'.",
        uploads.len(),
        shared.unwrap_or_default()
    )
}

/// Where a run reports progress; `now_ms` is a wall clock (the worker's
/// `performance.now()`), used only to pace reports and to time the run.
pub trait Progress {
    /// Wall-clock milliseconds, from any origin.
    fn now_ms(&mut self) -> f64;
    /// Sends one message to the page.
    fn report(&mut self, message: FromWorker);
    /// Bytes the program holds now, where that is known (the worker's
    /// [`crate::memory`]); `None` natively, where a run is never stopped
    /// for its size.
    fn memory_bytes(&mut self) -> Option<u64> {
        None
    }
}

/// The most memory a run may hold, with room for its answer
/// ([`ANSWER_BYTES_PER_ENTRY`]), before the worker stops it: 3.5 GiB of the
/// 4 GiB a wasm32 program addresses, so that the allocator never fails
/// (which would kill the worker without a word; a single allocation of
/// more than what is left still can).
pub const MEMORY_CEILING: u64 = 7 << 29;

/// Room kept per trace entry for the answer's way to the page. The worker
/// sends a trace's entries in runs of about 32 MiB (`crate::answer`), so
/// it needs little itself; what this keeps room for is the page, which
/// decodes the whole trace into its own 32-bit memory, with its timeline,
/// beside the last run's: about 200 bytes an entry with its names shared
/// (`cargo xtask bench browser timeline-frames`, BENCHMARKS.md). A run the
/// worker finishes under this ceiling at 250 bytes an entry leaves the
/// page room for its trace and one as large before it. It was 600 while
/// the worker encoded the whole answer's JSON at once.
pub const ANSWER_BYTES_PER_ENTRY: u64 = 250;

/// The answer to a run stopped at `memory` bytes held, after `entries`
/// trace entries and `time_ms` of `end_ms` virtual milliseconds: what
/// happened, and what to do instead.
fn too_big(id: u64, memory: u64, entries: u64, time_ms: u64, end_ms: u64) -> FromWorker {
    let mib = |bytes: u64| bytes >> 20;
    FromWorker::Failed {
        id,
        component: None,
        error: format!(
            "This run is too big for a browser tab: after {:.1} of its {:.1} virtual seconds it held {} MiB \
             and {entries} trace entries, and a tab's worker can address at most 4,096 MiB \
             (WebAssembly's 32-bit memory), the trace's way to the page included. It was stopped there. \
             Run it with the recon command line (recon run), which has no such limit, or make it smaller \
             (fewer nodes, pods or virtual seconds); the ceiling is {} MiB held, counting about {} bytes \
             a trace entry for sending the trace.",
            time_ms as f64 / 1e3,
            end_ms as f64 / 1e3,
            mib(memory),
            mib(MEMORY_CEILING),
            ANSWER_BYTES_PER_ENTRY,
        ),
    }
}

/// How often progress is reported, in wall-clock milliseconds.
pub(crate) const PROGRESS_EVERY_MS: f64 = 100.0;

impl Runner {
    /// A runner with a fresh engine and no plugins.
    pub fn new() -> Result<Runner, String> {
        Ok(Runner { preparer: Preparer::new().map_err(|e| e.to_string())?, plugins: BTreeMap::new() })
    }

    /// Keeps the bytes of a plugin the page sent, under their content key
    /// (which it returns), for the requests that name it.
    pub fn receive_plugin(&mut self, bytes: Vec<u8>) -> PluginKey {
        let plugin = PluginBytes::new(bytes);
        let key = plugin.key().clone();
        self.plugins.insert(key.clone(), plugin);
        key
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
            ToWorker::Orderings(request) => crate::search::orderings(self, &request, progress),
            // The files come in the same message as the request, and the
            // worker hands them to `crate::audit` itself.
            ToWorker::Audit { id, .. } => FromWorker::Failed {
                id,
                component: None,
                error: "the audit logs did not come with their request (a page bug): open them again".into(),
            },
            ToWorker::SelfTestPanic => panic!("a panic asked for by ?selftest=panic-worker"),
        };
        progress.report(answer);
    }

    fn check(&mut self, id: u64, upload: &UploadRef, limits: &recon_scenario::PluginLimits) -> FromWorker {
        let manifest = self.swap(upload).and_then(|swap| self.preparer.check(&swap, limits));
        match manifest {
            Ok(manifest) => FromWorker::Checked { id, component: upload.component.clone(), manifest },
            Err(error) => failed(id, error),
        }
    }

    /// The upload with the bytes the page sent for it.
    fn swap(&self, upload: &UploadRef) -> Result<Swap, PrepareError> {
        let plugin = self.plugins.get(&upload.key).ok_or_else(|| PrepareError::Rejected {
            component: upload.component.clone(),
            reason: format!(
                "{}: its bytes never reached the simulation worker (a page bug); upload it again",
                upload.file_name
            ),
        })?;
        Ok(Swap { component: upload.component.clone(), file_name: upload.file_name.clone(), plugin: plugin.clone() })
    }

    /// Parses the scenario and builds its simulation, with uploads compiled;
    /// returns it and the scenario's duration, or the `Failed` answer.
    #[allow(clippy::result_large_err, reason = "the error is the answer to send, made once per request")]
    fn build(&mut self, id: u64, text: &str, seed: u64, uploads: &[UploadRef]) -> Result<(Sim, u64), FromWorker> {
        let mut prepared = self.prepare(id, text, uploads)?;
        prepared.file.scenario.seed = seed;
        match prepared.sim() {
            Ok(sim) => Ok((sim, prepared.scenario().duration.0)),
            Err(error) => Err(FromWorker::Failed { id, component: None, error }),
        }
    }

    /// Parses the scenario and compiles its uploads, or says why not as
    /// the `Failed` answer.
    #[allow(clippy::result_large_err, reason = "the error is the answer to send, made once per request")]
    pub(crate) fn prepare(&mut self, id: u64, text: &str, uploads: &[UploadRef]) -> Result<Prepared, FromWorker> {
        if uploads.len() > MAX_PLUGIN_COMPONENTS {
            return Err(FromWorker::Failed { id, component: None, error: too_many_plugins(uploads) });
        }
        let file = ScenarioFile::parse(SCENARIO_FILE, text).map_err(|e| FromWorker::Failed {
            id,
            component: None,
            error: e.to_string(),
        })?;
        let swaps = uploads.iter().map(|upload| self.swap(upload)).collect::<Result<Vec<_>, _>>();
        swaps.and_then(|swaps| self.preparer.prepare(file, &swaps)).map_err(|e| failed(id, e))
    }

    fn run(
        &mut self,
        id: u64,
        text: &str,
        seed: u64,
        uploads: &[UploadRef],
        progress: &mut dyn Progress,
    ) -> FromWorker {
        let started = progress.now_ms();
        let (mut sim, end_ms) = match self.build(id, text, seed, uploads) {
            Ok(built) => built,
            Err(failed) => return failed,
        };
        let mut last_report = started;
        let mut steps = 0u64;
        let ran = sim.run_with(|sim| {
            // Every step: one step of a large run can allocate a lot (a
            // trace that doubles its buffer), and the check is one load.
            if let Some(memory) = progress.memory_bytes() {
                let entries = sim.trace().entries.len() as u64;
                if memory.saturating_add(entries.saturating_mul(ANSWER_BYTES_PER_ENTRY)) > MEMORY_CEILING {
                    return ControlFlow::Break(too_big(id, memory, entries, sim.now_ms(), end_ms));
                }
            }
            steps += 1;
            if steps.is_multiple_of(STEPS_PER_PROGRESS_CHECK) {
                let now = progress.now_ms();
                if now - last_report >= PROGRESS_EVERY_MS {
                    last_report = now;
                    let entries = sim.trace().entries.len() as u64;
                    progress.report(FromWorker::Progress { id, time_ms: sim.now_ms(), end_ms, entries });
                }
            }
            ControlFlow::Continue(())
        });
        if let ControlFlow::Break(too_big) = ran {
            return too_big;
        }
        let wall_ms = progress.now_ms() - started;
        let trace = sim.into_trace();
        FromWorker::Done { id, hash: trace.hash(), wall_ms: Some(wall_ms), trace }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Collect(Vec<FromWorker>);

    impl Progress for Collect {
        fn now_ms(&mut self) -> f64 {
            0.0
        }
        fn report(&mut self, message: FromWorker) {
            self.0.push(message);
        }
    }

    /// A plugin that watches pods and does nothing: a kubelet that never starts a container.
    fn idle_kubelet() -> Vec<u8> {
        let manifest = r#"{"name":"idle","abiVersion":1,"nodeAgent":true,"watches":[{"kind":"Pod"}]}"#;
        let wat = format!(
            r#"(module
              (memory (export "memory") 1)
              (data (i32.const 0x100) "{}")
              (data (i32.const 0x40) "{{\"actions\":[]}}")
              (func (export "recon_abi_version") (result i32) i32.const 1)
              (func (export "recon_alloc") (param i32) (result i32) i32.const 0x1000)
              (func (export "recon_init") (param i32 i32) (result i64) i64.const {})
              (func (export "recon_handle") (param i32 i32) (result i64) i64.const 0x400000000e))"#,
            manifest.replace('"', "\\\""),
            (0x100i64 << 32) | manifest.len() as i64,
        );
        wat::parse_str(&wat).unwrap()
    }

    fn default_scenario() -> String {
        recon_catalog::scenario(recon_catalog::DEFAULT_SCENARIO).unwrap().yaml.to_owned()
    }

    fn run(runner: &mut Runner, uploads: Vec<UploadRef>) -> FromWorker {
        let mut out = Collect(Vec::new());
        runner.handle(ToWorker::Run { id: 1, scenario: default_scenario(), seed: 1, uploads }, &mut out);
        out.0.pop().expect("an answer")
    }

    fn hash_of(answer: FromWorker) -> String {
        match answer {
            FromWorker::Done { hash, .. } => hash,
            other => panic!("not a finished run: {other:?}"),
        }
    }

    /// A tab has room for about 120 plugin instances: a run past its
    /// limit is refused before anything starts, saying what runs it.
    #[test]
    fn a_run_giving_plugins_to_more_components_than_a_tab_holds_is_refused_with_the_command_that_runs_it() {
        let key = recon_prepare::PluginKey::of(b"k");
        let uploads = |n: usize| -> Vec<UploadRef> {
            let upload =
                |i| UploadRef { component: format!("kubelet-node-{i}"), file_name: "k.wasm".into(), key: key.clone() };
            (1..=n).map(upload).collect()
        };
        let mut runner = Runner::new().unwrap();
        let FromWorker::Failed { component, error, .. } = run(&mut runner, uploads(MAX_PLUGIN_COMPONENTS + 1)) else {
            panic!("refused")
        };
        assert_eq!(component, None);
        assert!(error.starts_with("This run gives plugins to 49 components, and a tab runs at most 48"), "{error}");
        assert!(error.ends_with("--plugin 'kubelet-node-*=k.wasm'."), "{error}");
        // At the limit the run is prepared (and fails only for the bytes this test never sent).
        let FromWorker::Failed { error, .. } = run(&mut runner, uploads(MAX_PLUGIN_COMPONENTS)) else { panic!() };
        assert!(error.contains("its bytes never reached the simulation worker"), "{error}");
    }

    #[test]
    fn a_run_names_a_plugin_sent_before_it_and_says_clearly_when_one_never_came() {
        let bytes = idle_kubelet();
        let key = recon_prepare::PluginKey::of(&bytes);
        let upload = UploadRef { component: "kubelet-node-1".into(), file_name: "idle.wasm".into(), key };
        let mut runner = Runner::new().unwrap();
        let FromWorker::Failed { component, error, .. } = run(&mut runner, vec![upload.clone()]) else {
            panic!("a run naming a plugin the worker lacks fails")
        };
        assert_eq!(component.as_deref(), Some("kubelet-node-1"));
        assert!(error.starts_with("idle.wasm: its bytes never reached the simulation worker"), "{error}");
        assert_eq!(runner.receive_plugin(bytes.clone()), upload.key, "the worker keys the bytes as the page does");
        let hash = hash_of(run(&mut runner, vec![upload.clone()]));
        assert_ne!(hash, hash_of(run(&mut runner, Vec::new())), "the plugin ran instead of the kubelet");
        // The same as `recon run` with the same file, prepared natively.
        let file = ScenarioFile::parse("default.yaml", &default_scenario()).unwrap();
        let swap = Swap {
            component: upload.component.clone(),
            file_name: upload.file_name.clone(),
            plugin: PluginBytes::new(bytes),
        };
        let mut sim = Preparer::new().unwrap().prepare(file, &[swap]).unwrap().sim().unwrap();
        sim.run();
        assert_eq!(hash, sim.into_trace().hash());
    }

    /// Reports as [`Collect`] does, and claims to hold `held` bytes.
    struct Holding {
        held: u64,
        answers: Vec<FromWorker>,
    }

    impl Progress for Holding {
        fn now_ms(&mut self) -> f64 {
            0.0
        }
        fn report(&mut self, message: FromWorker) {
            self.answers.push(message);
        }
        fn memory_bytes(&mut self) -> Option<u64> {
            Some(self.held)
        }
    }

    #[test]
    fn a_run_that_would_not_fit_in_a_tab_stops_with_a_message_saying_so() {
        let mut runner = Runner::new().unwrap();
        let request = || ToWorker::Run { id: 3, scenario: default_scenario(), seed: 1, uploads: Vec::new() };
        // Just under the ceiling, before any entry: the first entries' room tips it over.
        let mut near = Holding { held: MEMORY_CEILING - 1, answers: Vec::new() };
        runner.handle(request(), &mut near);
        let Some(FromWorker::Failed { id, component, error }) = near.answers.pop() else {
            panic!("a run over the memory ceiling is stopped")
        };
        assert_eq!((id, component), (3, None));
        assert!(error.starts_with("This run is too big for a browser tab: after "), "{error}");
        assert!(error.contains("Run it with the recon command line (recon run)"), "{error}");
        // Far below it, the same run finishes as it does natively.
        let mut room = Holding { held: 1 << 20, answers: Vec::new() };
        runner.handle(request(), &mut room);
        assert_eq!(hash_of(room.answers.pop().unwrap()), hash_of(run(&mut runner, Vec::new())));
    }

    #[test]
    fn a_plugin_for_a_component_the_scenario_lacks_names_those_it_has() {
        let mut runner = Runner::new().unwrap();
        let key = runner.receive_plugin(idle_kubelet());
        let upload = UploadRef { component: "kubelet-node-9".into(), file_name: "idle.wasm".into(), key };
        let FromWorker::Failed { component, error, .. } = run(&mut runner, vec![upload]) else { panic!("refused") };
        assert_eq!(component.as_deref(), Some("kubelet-node-9"));
        assert!(error.starts_with("idle.wasm: the scenario has no component \"kubelet-node-9\" (it has: "), "{error}");
    }
}
