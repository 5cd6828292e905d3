//! The search on the #59848 workload: it finds the bug without being told
//! the fault schedule, shrinks it, and finds nothing once the kubelet is fixed.

use recon_explore::{Broken, Explorer, Factory, Fault, Pattern, SearchOptions, search, shard};
use recon_scenario::{Check, Scenario};
use recon_sim::{Instantiate, Sim};

/// The budget both searches get.
const BUDGET: usize = 400;

fn workload() -> Scenario {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/pod-safety-59848-workload.yaml");
    let text = std::fs::read_to_string(path).unwrap();
    recon_scenario::parse(path, &text).unwrap()
}

fn fixed(mut s: Scenario) -> Scenario {
    for c in &mut s.components {
        if c.controller == "kubelet" {
            c.controller = "kubelet-fixed".into();
        }
    }
    s
}

fn builtins() -> Instantiate {
    Box::new(|c| recon_catalog::instantiate(&c.controller))
}

const FACTORY: Factory = &builtins;

fn explore(scenario: &Scenario, jobs: usize) -> (Explorer, recon_explore::SearchResult) {
    let explorer = Explorer::new(scenario, FACTORY, false).unwrap();
    assert!(explorer.reference_finding().is_none(), "the workload alone breaks nothing");
    let plans = shard(explorer.plans(), BUDGET, 0, 1);
    let options = SearchOptions { jobs, stop_at_first: true };
    let result = search(&explorer, &plans, FACTORY, options, &|_| {});
    (explorer, result)
}

#[test]
fn the_naive_kubelet_is_cracked_and_shrunk_to_at_most_three_faults() {
    let (explorer, result) = explore(&workload(), 2);
    let first = result.failures.first().expect("the search finds the #59848 violation");
    assert_eq!(first.finding.broken, Broken::Violation(Check::PodIdentity), "{:?}", first.finding);
    let shrunk = explorer.shrink(&first.plan, &first.finding, FACTORY);
    assert_eq!(shrunk.finding.broken, Broken::Violation(Check::PodIdentity));
    assert!(shrunk.plan.faults.len() <= 3, "{}", shrunk.plan.describe());
    assert!(shrunk.plan.faults.len() <= first.plan.faults.len());

    // The found scenario is an ordinary scenario that replays to the same violation.
    let found = explorer.found_scenario(&shrunk);
    let yaml = recon_scenario::to_yaml(&found);
    let parsed = recon_scenario::parse("found.yaml", &yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    let mut sim = Sim::new(&parsed, builtins()).unwrap();
    sim.run();
    let trace = sim.into_trace();
    let first_violation = trace.violations().map(|(_, c, _)| c).min();
    assert_eq!(first_violation, Some(Check::PodIdentity));
    let mut seen: Vec<Check> = trace.violations().map(|(_, c, _)| c).collect();
    seen.sort();
    seen.dedup();
    assert_eq!(seen, parsed.expect.violations);
    assert!(parsed.description.contains("recon explore") && parsed.description.contains("pod identity"));
}

#[test]
fn the_fixed_kubelet_survives_the_same_budget() {
    let (explorer, result) = explore(&fixed(workload()), 2);
    assert!(result.failures.is_empty(), "{:?}", result.failures.first().map(|f| (f.plan.describe(), &f.finding)));
    assert_eq!(result.run, explorer.plans().len().min(BUDGET));
    assert!(result.run >= 20, "the search had real plans to try: {}", result.run);
}

#[test]
fn the_first_failure_does_not_depend_on_the_threads() {
    let (_, one) = explore(&workload(), 1);
    let (_, four) = explore(&workload(), 4);
    let first = |r: &recon_explore::SearchResult| r.failures.first().map(|f| (f.index, f.plan.clone()));
    assert!(first(&one).is_some());
    assert_eq!(first(&one), first(&four));
    // Stopping early: nothing after the first failure was needed.
    assert_eq!(one.run, one.failures[0].index + 1);
}

#[test]
fn shrinking_is_deterministic() {
    let (explorer, result) = explore(&workload(), 2);
    let first = &result.failures[0];
    let a = explorer.shrink(&first.plan, &first.finding, FACTORY);
    let b = explorer.shrink(&first.plan, &first.finding, FACTORY);
    assert_eq!(a.plan, b.plan);
    assert_eq!(a.runs, b.runs);
    assert_eq!(
        recon_scenario::to_yaml(&explorer.found_scenario(&a)),
        recon_scenario::to_yaml(&explorer.found_scenario(&b))
    );
}

#[test]
fn shards_partition_the_plan_list_exactly() {
    let explorer = Explorer::new(&workload(), FACTORY, false).unwrap();
    let plans = explorer.plans();
    assert!(plans.len() > 10);
    for n in [1, 2, 3, 7] {
        let mut all: Vec<_> = (0..n).flat_map(|i| shard(plans.clone(), usize::MAX, i, n)).collect();
        for i in 0..n {
            assert!(shard(plans.clone(), usize::MAX, i, n).iter().all(|(index, _)| index % n == i));
        }
        all.sort_by_key(|(index, _)| *index);
        let indices: Vec<usize> = all.iter().map(|(i, _)| *i).collect();
        assert_eq!(indices, (0..plans.len()).collect::<Vec<_>>(), "n = {n}");
        assert!(all.iter().all(|(i, p)| *p == plans[*i]));
    }
}

#[test]
fn a_budget_counts_the_plans_of_the_whole_search_whatever_the_shards() {
    let explorer = Explorer::new(&workload(), FACTORY, false).unwrap();
    let plans = explorer.plans();
    let budget = 10;
    let alone: Vec<usize> = shard(plans.clone(), budget, 0, 1).into_iter().map(|(index, _)| index).collect();
    assert_eq!(alone, (0..budget).collect::<Vec<_>>(), "one shard runs the first plans of the list");
    for n in [2, 3, 4, 7] {
        let mut together: Vec<usize> =
            (0..n).flat_map(|i| shard(plans.clone(), budget, i, n)).map(|(index, _)| index).collect();
        together.sort_unstable();
        assert_eq!(together, alone, "{n} shards together run what one search runs");
    }
    // A budget smaller than the number of shards leaves some shards nothing.
    assert_eq!(shard(plans.clone(), 1, 1, 4), Vec::new());
    assert_eq!(shard(plans, 2, 1, 4).into_iter().map(|(index, _)| index).collect::<Vec<_>>(), vec![1]);
}

#[test]
fn plans_are_deterministic_and_cover_the_three_patterns() {
    let a = Explorer::new(&workload(), FACTORY, false).unwrap().plans();
    let b = Explorer::new(&workload(), FACTORY, false).unwrap().plans();
    assert_eq!(a, b);
    for pattern in [Pattern::StaleState, Pattern::UnobservedState, Pattern::IntermediateState] {
        assert!(a.iter().any(|p| p.pattern == pattern), "{pattern}");
    }
    // Stale state: a partition of the server the component did not use, then a restart onto it.
    let stale = a.iter().find(|p| p.pattern == Pattern::StaleState && p.component == "kubelet-node-1").unwrap();
    assert!(matches!(&stale.faults[0], Fault::Partition { api_server, .. } if api_server == "apiserver-2"));
    // Plans are plain data.
    let json = serde_json::to_string(&a).unwrap();
    let back: Vec<recon_explore::Plan> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, a);
}

#[test]
fn the_differential_oracle_is_opt_in_and_names_the_object() {
    use recon_explore::{Plan, oracle::Broken as B};
    use recon_scenario::{Millis, Step, StepAction};
    // The StatefulSet controller dies before the rolling update and never
    // comes back: no safety check fails, but web-0 keeps its old image.
    let plan = Plan {
        pattern: Pattern::IntermediateState,
        component: "statefulset-controller".into(),
        rationale: "test".into(),
        faults: vec![Fault::Step(Step {
            at: Millis(2_500),
            action: StepAction::Crash { component: "statefulset-controller".into() },
        })],
    };
    let plain = Explorer::new(&workload(), FACTORY, false).unwrap();
    assert!(plain.run(&plan, FACTORY).is_none());
    let differential = Explorer::new(&workload(), FACTORY, true).unwrap();
    let finding = differential.run(&plan, FACTORY).expect("the final state differs");
    assert_eq!(finding.broken, B::FinalState("Pod default/web-0".into()), "{finding:?}");
    assert!(finding.checks.is_empty());
    // The fault-free workload does not differ from itself.
    let nothing = Plan { faults: vec![], ..plan };
    assert!(differential.run(&nothing, FACTORY).is_none());
}
