//! Every shipped scenario parses, runs, and shows the outcome it declares.

use std::collections::BTreeSet;

use recon_scenario::Check;
use recon_tests::{all_scenarios, run};

#[test]
fn every_shipped_scenario_shows_its_expected_outcome() {
    let files = all_scenarios();
    assert!(files.len() >= 4, "the #59848 scenario and its fixed variants are shipped");
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let scenario = recon_scenario::parse(&path.display().to_string(), &text).unwrap_or_else(|e| panic!("{e}"));
        assert!(!scenario.description.trim().is_empty(), "{}: every scenario explains itself", path.display());
        let trace = run(&scenario);
        let seen: BTreeSet<Check> = trace.violations().map(|(_, c, _)| c).collect();
        let expected: BTreeSet<Check> = scenario.expect.violations.iter().copied().collect();
        assert_eq!(seen, expected, "{}", path.display());
    }
}
