//! Perturbation plans derived from the fault-free reference trace, one
//! generator per Sieve pattern. Everything is enumerated in trace order and
//! component order, and identical plans are kept once, so the list (and a
//! plan's index in it) is the same on every run.

use std::collections::{BTreeMap, BTreeSet};

use recon_abi::Verb;
use recon_scenario::{Millis, Scenario, Step, StepAction, Window};
use recon_trace::text::fmt_time;
use recon_trace::{Event, Key, Name, Trace};

use crate::plan::{Fault, Pattern, Plan};

/// How long a partition outlasts the restart it set up.
pub const PARTITION_HOLD_MS: u64 = 10_000;
/// How long a crashed controller stays down before the plan restarts it.
pub const RESTART_DELAY_MS: u64 = 1_000;

/// A committed write, from the reference trace.
struct Write {
    time: u64,
    revision: u64,
    verb: Verb,
    uid: Name,
    removed: bool,
    by: Name,
}

/// A watch event a component received.
struct Delivery {
    time: u64,
    revision: u64,
    api_server: Name,
}

/// Per component, the objects it was shown, each with its deliveries.
type Seen = Vec<(String, Vec<(Key, Vec<Delivery>)>)>;

/// The deliveries of `key` to `component`, added (empty) if new.
fn slot<'s>(seen: &'s mut Seen, component: &str, key: &Key) -> Option<&'s mut Vec<Delivery>> {
    let (_, objects) = seen.iter_mut().find(|(c, _)| c == component)?;
    let i = match objects.iter().position(|(k, _)| k == key) {
        Some(i) => i,
        None => {
            objects.push((key.clone(), Vec::new()));
            objects.len() - 1
        }
    };
    Some(&mut objects[i].1)
}

/// What the generators need from the reference trace.
struct Facts<'t> {
    /// Writes per object, in commit order.
    writes: BTreeMap<Key, Vec<Write>>,
    /// Per component (scenario order), the objects it was shown, each with
    /// its watch deliveries in order; objects in order of first sight.
    seen: Seen,
    trace: &'t Trace,
}

impl<'t> Facts<'t> {
    fn new(scenario: &Scenario, trace: &'t Trace) -> Facts<'t> {
        let mut writes: BTreeMap<Key, Vec<Write>> = BTreeMap::new();
        let mut seen: Seen = scenario.components.iter().map(|c| (c.name.clone(), Vec::new())).collect();
        for e in &trace.entries {
            match &e.event {
                Event::StoreWrite { verb, key, uid, revision, removed, by, .. } => {
                    writes.entry(key.clone()).or_default().push(Write {
                        time: e.time_ms,
                        revision: *revision,
                        verb: *verb,
                        uid: uid.clone(),
                        removed: *removed,
                        by: by.clone(),
                    });
                }
                // A bookmark concerns no object: it only moves the watch's revision.
                Event::WatchDelivered { event_type: recon_abi::EventType::Bookmark, .. } => {}
                Event::WatchDelivered { component, api_server, key, revision, .. } => {
                    if let Some(list) = slot(&mut seen, component, key) {
                        list.push(Delivery { time: e.time_ms, revision: *revision, api_server: api_server.clone() });
                    }
                }
                Event::ListServed(list) => {
                    for o in &list.objects {
                        slot(&mut seen, &list.component, &o.key);
                    }
                }
                _ => {}
            }
        }
        Facts { writes, seen, trace }
    }

    /// When `api_server`'s cache first held revision `revision` or later
    /// (0 if it started with it).
    fn cache_time(&self, api_server: &str, revision: u64) -> Option<u64> {
        let applied = self.trace.entries.iter().find_map(|e| match &e.event {
            Event::CacheApply { api_server: s, revision: r, .. } if s == api_server && *r >= revision => {
                Some(e.time_ms)
            }
            _ => None,
        });
        let bootstrap = self.trace.entries.iter().take_while(|e| e.time_ms == 0).any(
            |e| matches!(&e.event, Event::StoreWrite { revision: r, by, .. } if *r == revision && by == "scenario"),
        );
        if bootstrap { Some(0) } else { applied }
    }
}

/// Every plan for `workload`, given its fault-free `trace`: stale-state
/// plans first, then unobserved-state, then intermediate-state; within a
/// pattern, by component (scenario order), then by trace order.
pub fn plans(workload: &Scenario, trace: &Trace) -> Vec<Plan> {
    let facts = Facts::new(workload, trace);
    let mut out = Vec::new();
    stale_state(workload, &facts, &mut out);
    unobserved_state(&facts, &mut out);
    intermediate_state(workload, &facts, &mut out);
    let mut seen = BTreeSet::new();
    out.retain(|p: &Plan| seen.insert(serde_json::to_string(&p.faults).expect("plain data")));
    out
}

fn step(at: u64, action: StepAction) -> Fault {
    Fault::Step(Step { at: Millis(at), action })
}

/// For a component that was shown version `R` of object X through one API
/// server: freeze another API server's cache at `R` (a partition starting
/// just after it applied `R`), then, after each newer write to X, restart
/// the component onto the frozen server, where its first list goes back in
/// time.
fn stale_state(workload: &Scenario, facts: &Facts, out: &mut Vec<Plan>) {
    let end = workload.duration.0;
    for (component, objects) in &facts.seen {
        for (key, deliveries) in objects {
            let Some(writes) = facts.writes.get(key) else { continue };
            for d in deliveries {
                for server in workload.api_servers.iter().filter(|s| s.name != d.api_server) {
                    let Some(applied) = facts.cache_time(&server.name, d.revision) else { continue };
                    let from = applied + 1;
                    for w in writes.iter().filter(|w| w.revision > d.revision && w.time >= from) {
                        let restart = w.time + 1;
                        if restart >= end {
                            continue;
                        }
                        let until = restart + PARTITION_HOLD_MS;
                        let window = Window { from: Millis(from), until: (until < end).then_some(Millis(until)) };
                        out.push(Plan {
                            pattern: Pattern::StaleState,
                            component: component.clone(),
                            rationale: format!(
                                "{component} saw {key} at revision {} ({}); {} froze there; {key} changed at revision {} ({})",
                                d.revision,
                                fmt_time(d.time),
                                server.name,
                                w.revision,
                                fmt_time(w.time)
                            ),
                            faults: vec![
                                Fault::Partition { api_server: server.name.clone(), window },
                                step(
                                    restart,
                                    StepAction::Restart {
                                        component: component.clone(),
                                        api_server: Some(server.name.clone()),
                                    },
                                ),
                            ],
                        });
                    }
                }
            }
        }
    }
}

/// For a component that was shown object X: take it down when an
/// incarnation of X is created and bring it back after that incarnation is
/// deleted, so its relist skips over both. (A broken watch alone does not
/// do it here: the API server replays the missed events from its watch
/// cache's event window, as Kubernetes does.)
fn unobserved_state(facts: &Facts, out: &mut Vec<Plan>) {
    for (component, objects) in &facts.seen {
        for (key, _) in objects {
            let Some(writes) = facts.writes.get(key) else { continue };
            for (i, created) in writes.iter().enumerate().filter(|(_, w)| w.verb == Verb::Create) {
                if created.by == "scenario" {
                    continue; // there before anyone started
                }
                let Some(deleted) = writes[i..].iter().find(|w| w.removed && w.uid == created.uid) else { continue };
                out.push(Plan {
                    pattern: Pattern::UnobservedState,
                    component: component.clone(),
                    rationale: format!(
                        "{key} was created at revision {} ({}) and deleted at revision {} ({})",
                        created.revision,
                        fmt_time(created.time),
                        deleted.revision,
                        fmt_time(deleted.time)
                    ),
                    faults: vec![
                        step(created.time, StepAction::Crash { component: component.clone() }),
                        step(deleted.time + 1, StepAction::Restart { component: component.clone(), api_server: None }),
                    ],
                });
            }
        }
    }
}

/// For every write a controller made: crash it right after that write,
/// restart it a little later.
fn intermediate_state(workload: &Scenario, facts: &Facts, out: &mut Vec<Plan>) {
    for component in &workload.components {
        let mut writes: Vec<(&Key, &Write)> = facts
            .writes
            .iter()
            .flat_map(|(k, ws)| ws.iter().map(move |w| (k, w)))
            .filter(|(_, w)| w.by == component.name)
            .collect();
        writes.sort_by_key(|(_, w)| w.revision);
        for (key, w) in writes {
            let name = component.name.clone();
            out.push(Plan {
                pattern: Pattern::IntermediateState,
                component: name.clone(),
                rationale: format!("{name} wrote {key} at revision {} ({})", w.revision, fmt_time(w.time)),
                faults: vec![
                    step(w.time + 1, StepAction::Crash { component: name.clone() }),
                    step(
                        w.time + 1 + RESTART_DELAY_MS,
                        StepAction::Restart { component: name.clone(), api_server: None },
                    ),
                ],
            });
        }
    }
}
