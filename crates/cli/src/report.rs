//! The human-readable summary of a run.

use std::collections::{BTreeMap, BTreeSet};

use recon_scenario::{Check, Scenario};
use recon_trace::text::{describe, fmt_time};
use recon_trace::{Event, Trace, crashes, explain_all, unavailability};

/// What the summary found.
pub struct Outcome {
    /// Whether any check failed (safety, or liveness when enabled).
    pub violated: bool,
    /// Whether the violated checks are exactly those the scenario expects.
    pub as_expected: bool,
}

/// Prints the summary (and the whole timeline if asked) to standard output;
/// `hash` is the trace's ([`Trace::hash`], or taken as it was written).
pub fn print(scenario: &Scenario, trace: &Trace, hash: &str, timeline: bool) -> Outcome {
    say!("scenario  {}", scenario.name);
    say!("seed      {}", trace.seed);
    say!("ran       {} of virtual time, {} trace entries", fmt_time(scenario.duration.0), trace.entries.len());
    say!("trace     {hash}");
    if timeline {
        say!();
        for e in &trace.entries {
            if matches!(e.event, Event::CacheApply { .. }) {
                continue; // one line per API server per write drowns the story
            }
            say!("{:>10}  {:<24} {}", fmt_time(e.time_ms), trace.lane_name(e), describe(e));
        }
    }
    if let Some((_, reason)) = trace.halted() {
        say!("stopped   {reason}");
    }
    let explanations = explain_all(trace);
    say!();
    let liveness = explanations.iter().filter(|x| x.check.is_liveness()).count();
    let safety = explanations.len() - liveness;
    match (safety, liveness) {
        (0, 0) => say!("No safety property broke."),
        (0, n) => say!("No safety property broke, but {n} liveness failure(s) (never converged):"),
        (s, 0) => say!("{s} safety violation(s):"),
        (s, n) => say!("{s} safety violation(s) and {n} liveness failure(s):"),
    }
    for (i, x) in explanations.iter().enumerate() {
        say!();
        say!("{}. [{}] {}", i + 1, x.check, x.headline);
        say!("   Why:");
        for step in &x.steps {
            say!("   - {}", step.text);
        }
    }
    let outages = unavailability(trace);
    if !outages.is_empty() {
        say!();
        say!("Unavailable (reads refused rather than served stale):");
        for u in &outages {
            let until = u.until_ms.map_or("the end of the run".to_string(), fmt_time);
            say!(
                "- {} from {} until {}: {} failed request(s), last: {}",
                u.component,
                fmt_time(u.from_ms),
                until,
                u.failures,
                u.last_error
            );
        }
    }
    let crashes = crashes(trace);
    if !crashes.is_empty() {
        say!();
        say!("Crashes and restarts (a crashed component restarts with back-off; the rest of the run goes on):");
        for c in &crashes {
            let at = trace.get(c.first).map_or_else(String::new, |e| fmt_time(e.time_ms));
            match c.count {
                1 => say!("- {} once, at {at}: {}", c.component, c.reason),
                n => say!("- {} {n} times, first at {at}; last: {}", c.component, c.reason),
            }
        }
    }
    print_held(trace);
    print_logs(trace, timeline);
    let seen: BTreeSet<Check> = trace.violations().map(|(_, c, _)| c).collect();
    let expected: BTreeSet<Check> = scenario.expect.violations.iter().copied().collect();
    let as_expected = seen == expected;
    say!();
    if as_expected {
        say!("Outcome matches the scenario's expectation.");
    } else {
        let names = |s: &BTreeSet<Check>| {
            if s.is_empty() {
                "none".to_string()
            } else {
                s.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
            }
        };
        say!("Outcome differs from the scenario's expectation: expected {}, saw {}.", names(&expected), names(&seen));
    }
    Outcome { violated: !seen.is_empty(), as_expected }
}

/// Every wait a staleness mitigation made (a `syncHeld` entry ending it):
/// who waited, on which of its own writes, how long, how many syncs it
/// skipped; and any still held at the end.
fn print_held(trace: &Trace) {
    let ends: Vec<(u64, &str, &recon_abi::HeldSync)> = trace
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::SyncHeld { component, held } => Some((e.time_ms, component.as_str(), &**held)),
            _ => None,
        })
        .collect();
    if ends.is_empty() {
        return;
    }
    say!();
    say!("Held by staleness mitigations (a reconcile waits until its informer has seen its own write):");
    let mut open: BTreeSet<(&str, String)> = BTreeSet::new();
    for (time_ms, component, held) in &ends {
        let key = (*component, held.object.to_string());
        if !held.released {
            open.insert(key);
            continue;
        }
        open.remove(&key);
        say!(
            "- {component}: {} for {} ms from {}, until its {} informer reached its own write at revision {} ({}, {} syncs skipped)",
            held.object,
            time_ms.saturating_sub(held.since_ms),
            fmt_time(held.since_ms),
            held.kind,
            held.resource_version,
            held.mitigation,
            held.skips
        );
    }
    for (component, object) in open {
        say!("- {component}: {object} still held at the end of the run");
    }
}

/// What plugins logged (`recon.log`), per component: how many lines and
/// the last one. The timeline has every line in place.
fn print_logs(trace: &Trace, timeline: bool) {
    // Component → (lines, time of the last, the last line).
    let mut logs: BTreeMap<&str, (usize, u64, &str)> = BTreeMap::new();
    for e in &trace.entries {
        if let Event::Logged { component, lines } = &e.event {
            let log = logs.entry(component.as_str()).or_insert((0, 0, ""));
            log.0 += lines.len();
            if let Some(last) = lines.last() {
                (log.1, log.2) = (e.time_ms, last.as_str());
            }
        }
    }
    if logs.is_empty() {
        return;
    }
    say!();
    if timeline {
        say!("Plugin logs (every line is in the timeline above):");
    } else {
        say!("Plugin logs (--timeline shows every line in place):");
    }
    for (component, (n, at, last)) in logs {
        say!("- {component}: {n} line(s), the last at {}: {}", fmt_time(at), recon_trace::text::one_line(last));
    }
}
