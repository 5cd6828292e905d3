//! Running a simulation: step by step, to the end, or to the end with a
//! caller's hook between steps (progress, a budget of the caller's own),
//! which sees the run and can stop it but never changes what it does.

use std::ops::ControlFlow;

use recon_scenario::Scenario;
use recon_sim::{Instantiate, Sim};

fn story() -> Scenario {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/pod-safety-59848.yaml");
    recon_scenario::parse(path, &std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A fresh simulation of `scenario` with the built-in controllers.
fn start(scenario: &Scenario) -> Sim {
    let builtins: Instantiate = Box::new(|c| recon_catalog::instantiate(&c.controller));
    Sim::new(scenario, builtins).unwrap()
}

/// `scenario` run to its end by [`Sim::run`]: what every other way of
/// running it must match.
fn run_to_end(scenario: &Scenario) -> Sim {
    let mut sim = start(scenario);
    sim.run();
    sim
}

#[test]
fn a_hook_between_steps_is_called_after_each_one_and_changes_nothing() {
    let scenario = story();
    let plain = run_to_end(&scenario);
    let mut by_hand = start(&scenario);
    let mut steps = 0;
    while by_hand.step() {
        steps += 1;
    }

    let mut hooked = start(&scenario);
    let mut seen: Vec<(u64, usize)> = Vec::new();
    let flow = hooked.run_with(|sim| {
        seen.push((sim.now_ms(), sim.trace().entries.len()));
        ControlFlow::<()>::Continue(())
    });
    assert_eq!(flow, ControlFlow::Continue(()));
    assert_eq!(seen.len(), steps, "once after every step");
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "time and the trace only move forward");
    assert_eq!(hooked.trace().hash(), plain.trace().hash());
    assert_eq!(hooked.now_ms(), plain.now_ms(), "ends at the end, as `run` does");
    assert_eq!(plain.now_ms(), scenario.duration.0);
}

#[test]
fn a_hook_that_breaks_stops_the_run_there_and_the_run_can_go_on_later() {
    let scenario = story();
    let plain = run_to_end(&scenario);

    let mut stopped = start(&scenario);
    let flow = stopped.run_with(|sim| match sim.trace().entries.len() {
        n if n >= 20 => ControlFlow::Break(n),
        _ => ControlFlow::Continue(()),
    });
    let ControlFlow::Break(at) = flow else { panic!("the hook broke") };
    assert_eq!(stopped.trace().entries.len(), at, "nothing ran after the step it broke at");
    assert!(stopped.now_ms() < scenario.duration.0, "unfinished");
    stopped.run();
    assert_eq!(stopped.trace().hash(), plain.trace().hash(), "going on gives the whole run");
}
