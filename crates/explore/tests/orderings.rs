//! The search over orderings: it finds that the status-condition race's
//! outcome depends on who reconciles first, replays both orderings, and
//! finds no order dependence once each condition has one owner, nor in a
//! single-controller story.

use recon_explore::ordering::{self, OrderingFinding, Strategy};
use recon_explore::{Factory, LocalFactory};
use recon_scenario::Scenario;
use recon_sim::{Instantiate, Sim};

fn library(name: &str) -> Scenario {
    let path = format!("{}/../../scenarios/{name}.yaml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    recon_scenario::parse(&path, &text).unwrap()
}

fn with_fix(mut s: Scenario, fix: &str) -> Scenario {
    s.set_fix(fix, true).unwrap();
    s
}

fn builtins() -> Instantiate {
    Box::new(|c| recon_catalog::instantiate(&c.controller))
}

const FACTORY: Factory = &builtins;

fn search(s: &Scenario, strategy: Strategy, max_runs: usize) -> ordering::OrderingResult {
    let factory: LocalFactory = FACTORY;
    ordering::search(s, factory, strategy, max_runs, &mut |_| {}).unwrap()
}

fn end_of(s: &Scenario) -> ordering::EndState {
    let mut sim = Sim::new(s, builtins()).unwrap();
    sim.run();
    ordering::EndState::of(sim.store())
}

#[test]
fn the_race_ends_differently_when_the_other_controller_reconciles_first() {
    let race = library("status-condition-race");
    let result = search(&race, Strategy::DepthFirst, 50);
    let Some(OrderingFinding::DependsOnOrder { first, second, diff }) = &result.finding else {
        panic!("expected an order dependence, got {:?}", result.finding);
    };
    // The default order decides nothing; the other one puts the other controller first.
    assert!(first.decisions.is_empty(), "{:?}", first.decisions);
    assert_eq!(second.decisions.len(), 1, "{:?}", second.decisions);
    assert_eq!(second.decisions[0].others.len(), 1);
    // The diff names the condition that differs, and nothing about versions or uids.
    assert!(diff.iter().any(|l| l.starts_with("Widget default/w1 status.conditions[0].status")), "{diff:?}");
    assert!(diff.iter().all(|l| !l.contains("resourceVersion") && !l.contains("uid")), "{diff:?}");
    let outcomes =
        [first, second].map(|r| r.end.objects["Widget default/w1"]["status"]["conditions"][0]["status"].clone());
    assert_ne!(outcomes[0], outcomes[1]);

    // Both replay from their scenario files, written and parsed again, to the same end states.
    let found = ordering::found_scenarios(&race, result.finding.as_ref().unwrap());
    assert_eq!(found.len(), 2);
    for (scenario, run) in found.iter().zip([first, second]) {
        let yaml = recon_scenario::to_yaml(scenario);
        let parsed = recon_scenario::parse("found.yaml", &yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
        assert_eq!(parsed.ordering, run.ordering());
        assert_eq!(end_of(&parsed), run.end, "{yaml}");
        assert!(parsed.description.contains("depends on the order"));
    }
}

#[test]
fn random_walks_find_the_race_too() {
    let result = search(&library("status-condition-race"), Strategy::RandomWalks { seed: 7 }, 50);
    assert!(matches!(result.finding, Some(OrderingFinding::DependsOnOrder { .. })), "{:?}", result.finding);
}

#[test]
fn with_one_owner_per_condition_every_ordering_ends_the_same() {
    let fixed = with_fix(library("status-condition-race"), "one-owner-per-condition");
    let result = search(&fixed, Strategy::DepthFirst, 200);
    assert!(result.finding.is_none(), "{:?}", result.finding);
    assert!(result.exhausted, "the search ran out of orderings before its budget: {} runs", result.runs);
    assert!(result.runs >= 2, "there were orderings to try: {} runs", result.runs);
    let walks = search(&fixed, Strategy::RandomWalks { seed: 7 }, 20);
    assert!(walks.finding.is_none(), "{:?}", walks.finding);
    assert_eq!(walks.runs, 20);
}

#[test]
fn a_single_controller_story_has_no_order_dependence() {
    let result = search(&library("configmap-generator"), Strategy::DepthFirst, 20);
    assert!(result.finding.is_none(), "{:?}", result.finding);
    assert!(result.runs >= 1);
}

#[test]
fn the_search_is_deterministic() {
    let race = library("status-condition-race");
    let describe = |r: &ordering::OrderingResult| match &r.finding {
        Some(OrderingFinding::DependsOnOrder { first, second, diff }) => {
            (r.runs, first.trace_hash.clone(), second.trace_hash.clone(), diff.clone())
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(describe(&search(&race, Strategy::DepthFirst, 50)), describe(&search(&race, Strategy::DepthFirst, 50)));
}

#[test]
fn end_states_ignore_versions_uids_and_times_but_not_content() {
    let mut a: recon_abi::Object = serde_json::from_value(serde_json::json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": { "name": "w1", "namespace": "default", "uid": "u-1", "resourceVersion": "7",
                      "ownerReferences": [{ "apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u-9" }] },
        "status": { "conditions": [{ "type": "Ready", "status": "True", "lastTransitionTime": "t1" }] }
    }))
    .unwrap();
    let mut b = a.clone();
    b.metadata.uid = "u-2".into();
    b.metadata.resource_version = "9".into();
    b.metadata.owner_references[0].uid = "u-8".into();
    b.status["conditions"][0]["lastTransitionTime"] = "t2".into();
    assert_eq!(ordering::normalise(&a), ordering::normalise(&b));
    a.status["conditions"][0]["status"] = "False".into();
    assert_ne!(ordering::normalise(&a), ordering::normalise(&b));
}
