//! Shrinking: a failing plan reduced to a minimal one that still breaks the
//! same thing. Deterministic: the same plan gives the same result.

use recon_scenario::{Millis, StepAction};

use crate::oracle::Finding;
use crate::plan::{Fault, Plan};

/// A shrunk plan and what it breaks.
#[derive(Clone, Debug)]
pub struct Shrunk {
    /// The minimal plan.
    pub plan: Plan,
    /// What it breaks (the same [`Broken`] as the plan it came from).
    pub finding: Finding,
    /// How many runs shrinking took.
    pub runs: usize,
}

/// Shrinks `plan`, which breaks `finding.broken`: drops faults one at a
/// time while the rest still break it, then shortens what is left by
/// bisection — each partition's end moved as early and its start as late as
/// possible, each restart moved as close to the fault before it as
/// possible. `fails` runs a plan and says what it broke.
pub fn shrink(plan: &Plan, finding: &Finding, fails: &dyn Fn(&Plan) -> Option<Finding>) -> Shrunk {
    let target = finding.broken.clone();
    let mut runs = 0;
    let mut best = (plan.clone(), finding.clone());
    let mut attempt = |candidate: Plan, best: &mut (Plan, Finding)| -> bool {
        runs += 1;
        match fails(&candidate) {
            Some(f) if f.broken == target => {
                *best = (candidate, f);
                true
            }
            _ => false,
        }
    };

    // 1. Drop faults one at a time, until no single fault can go.
    loop {
        let mut dropped = false;
        let mut i = 0;
        while i < best.0.faults.len() {
            let mut candidate = best.0.clone();
            candidate.faults.remove(i);
            if !candidate.faults.is_empty() && attempt(candidate, &mut best) {
                dropped = true;
            } else {
                i += 1;
            }
        }
        if !dropped {
            break;
        }
    }

    // 2. Shorten windows and delays by bisection.
    for i in 0..best.0.faults.len() {
        match best.0.faults[i].clone() {
            Fault::Partition { api_server, window } => {
                let with = |plan: &Plan, from: u64, until: Option<u64>| {
                    best_plan_with(plan, i, |f| {
                        *f = Fault::Partition {
                            api_server: api_server.clone(),
                            window: recon_scenario::Window { from: Millis(from), until: until.map(Millis) },
                        }
                    })
                };
                // The end: bisect to the earliest end that still fails. An
                // open window is first tried as one that ends at the last
                // fault after it plus the hold a restart needs.
                let from = window.from.0;
                let hi_start = match window.until {
                    Some(u) => u.0,
                    None => {
                        let later = best.0.faults.iter().map(|f| f.at().0).max().unwrap_or(from);
                        let bounded = later.max(from) + crate::generate::PARTITION_HOLD_MS;
                        if attempt(with(&best.0, from, Some(bounded)), &mut best) { bounded } else { continue }
                    }
                };
                let (mut lo, mut hi) = (from + 1, hi_start);
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    if attempt(with(&best.0, from, Some(mid)), &mut best) {
                        hi = mid;
                    } else {
                        lo = mid + 1;
                    }
                }
                let until = hi;
                // The start: bisect to the latest start that still fails.
                let (mut lo, mut hi) = (from, until - 1);
                while lo < hi {
                    let mid = lo + (hi - lo).div_ceil(2);
                    if attempt(with(&best.0, mid, Some(until)), &mut best) {
                        lo = mid;
                    } else {
                        hi = mid - 1;
                    }
                }
            }
            Fault::Step(step) => {
                let StepAction::Restart { .. } = step.action else { continue };
                // The delay after the fault before it (or from the start).
                let earliest = best.0.faults[..i].iter().map(|f| f.at().0 + 1).max().unwrap_or(0);
                let (mut lo, mut hi) = (earliest, step.at.0);
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    let candidate = best_plan_with(&best.0, i, |f| {
                        if let Fault::Step(s) = f {
                            s.at = Millis(mid);
                        }
                    });
                    if attempt(candidate, &mut best) {
                        hi = mid;
                    } else {
                        lo = mid + 1;
                    }
                }
            }
        }
    }
    let (mut plan, finding) = best;
    plan.faults.sort_by_key(Fault::at);
    Shrunk { plan, finding, runs }
}

/// `plan` with fault `i` changed by `change`.
fn best_plan_with(plan: &Plan, i: usize, change: impl FnOnce(&mut Fault)) -> Plan {
    let mut p = plan.clone();
    change(&mut p.faults[i]);
    p
}
