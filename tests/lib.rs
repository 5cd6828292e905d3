//! Helpers shared by the end-to-end tests: load a shipped scenario, run it
//! with the built-in controllers, look at the trace.

use std::path::PathBuf;

use recon_scenario::Scenario;
use recon_sim::{Sim, Trace};

/// The repository's `scenarios/` directory.
pub fn scenarios_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
}

/// Every shipped scenario file, sorted by name.
pub fn all_scenarios() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(scenarios_dir())
        .expect("scenarios/ exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    files
}

/// Loads a shipped scenario by file stem, e.g. `pod-safety-59848`.
pub fn load(name: &str) -> Scenario {
    let path = scenarios_dir().join(format!("{name}.yaml"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    recon_scenario::parse(&path.display().to_string(), &text).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs a scenario to the end with the built-in controllers.
pub fn run(scenario: &Scenario) -> Trace {
    let mut sim = Sim::new(scenario, Box::new(|c| recon_catalog::instantiate(&c.controller))).expect("scenario builds");
    sim.run();
    sim.into_trace()
}

/// Runs a scenario with another seed.
pub fn run_with_seed(scenario: &Scenario, seed: u64) -> Trace {
    let mut s = scenario.clone();
    s.seed = seed;
    run(&s)
}
