//! Explanations: a violation's causal chain in plain words, and the other
//! findings a reader needs (who could not read, for how long).
//!
//! Everything here reads the trace only, so the same explanation can be
//! produced from a saved trace, natively or in the browser.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use recon_scenario::Check;

use crate::text::{describe, fmt_duration, fmt_time, short_uid};
use crate::{Entry, EntryId, Event, ListServed, ServedFrom, Trace};

/// A violation explained step by step.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// The violation entry.
    pub violation: EntryId,
    /// Which check failed.
    pub check: Check,
    /// One-line summary.
    pub headline: String,
    /// The causal chain, oldest first; each step points at its trace entry.
    pub steps: Vec<ExplanationStep>,
}

/// One step of an explanation.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExplanationStep {
    /// The entry this step is about.
    pub entry: EntryId,
    /// What happened, in plain words.
    pub text: String,
}

/// A period during which a component's reads kept failing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Unavailability {
    /// The component.
    pub component: String,
    /// First failure.
    pub from_ms: u64,
    /// The next successful read, if any.
    pub until_ms: Option<u64>,
    /// Failed requests in the period.
    pub failures: u32,
    /// The last error message.
    pub last_error: String,
}

/// Explains every violation in the trace.
pub fn explain_all(trace: &Trace) -> Vec<Explanation> {
    trace.violations().filter_map(|(e, _, _)| explain(trace, e.id)).collect()
}

/// Explains one violation, or `None` if `violation` is not a violation entry.
pub fn explain(trace: &Trace, violation: EntryId) -> Option<Explanation> {
    let v = trace.get(violation)?;
    let Event::Violation { check, message } = &v.event else { return None };
    let mut steps = Vec::new();
    // What a mitigation did or did not hold: said of entries that may
    // already be steps (a restart), so added to them rather than instead.
    let mut notes: Vec<ExplanationStep> = Vec::new();
    match check {
        Check::PodIdentity | Check::StatefulSetOrdinals => {
            // causes: [the start that broke the property, the container already running]
            let started = v.causes.first().and_then(|id| trace.get(*id));
            let other = v.causes.get(1).and_then(|id| trace.get(*id));
            if let Some(other) = other {
                steps.extend(pod_creation(trace, other));
                steps.extend(container_origin(trace, other, false));
            }
            if let Some(started) = started {
                steps.extend(container_origin(trace, started, true));
            }
        }
        Check::ReplicaCount | Check::DeletedLiveDependent | Check::DependentOfDeletedOwner => {
            // causes: [the store write that over- or undershot, or that
            // deleted or created the dependent; for a dependent of a deleted
            // owner, then the write that began the owner's deletion]
            if let Some(deletion) = v.causes.get(1).and_then(|id| trace.get(*id)) {
                steps.push(step(deletion));
            }
            if let Some(write) = v.causes.first().and_then(|id| trace.get(*id)) {
                if let Some(reconcile) = write.causes.first().and_then(|id| trace.get(*id)) {
                    steps.extend(decision_origin(trace, reconcile));
                    notes.extend(mitigation_waits(trace, reconcile));
                    steps.push(step(reconcile));
                    steps.extend(racing_writes(trace, reconcile, write));
                }
                steps.push(step(write));
            }
        }
        Check::DroppedMember => {
            // causes: [the write, the last list the writer's informers
            // were served before it, the reconcile that sent it]
            let write = v.causes.first().and_then(|id| trace.get(*id));
            steps.extend(v.causes.iter().skip(1).filter_map(|id| trace.get(*id)).map(step));
            if let Some(write) = write {
                steps.push(step(write));
            }
        }
        Check::Convergence | Check::StuckDeleting | Check::OrphanedDependent | Check::IdleWithWorkLeft => {
            // causes: [the last write to what the set asks for], or [the
            // write that marked the object for deletion], or [the idle
            // controller's own last write of the object, the call decided
            // on a view older than it that wrote nothing]
            steps.extend(v.causes.iter().filter_map(|id| trace.get(*id)).map(step));
            notes.extend(open_waits(trace, v.id));
        }
        Check::LostWork => {
            // causes: [the write, the newest version the writer had
            // observed, the observation its stale view came from]
            let at = |i: usize| v.causes.get(i).and_then(|id| trace.get(*id));
            if let Some(newest) = at(1) {
                steps.push(step(newest));
            }
            if let Some(view) = at(2) {
                steps.extend(view_origin(trace, view));
            }
            if let Some(write) = at(0) {
                if let Some(reconcile) = write.causes.first().and_then(|id| trace.get(*id)) {
                    notes.extend(mitigation_waits(trace, reconcile));
                    steps.push(step(reconcile));
                }
                steps.push(step(write));
            }
        }
        Check::HistoryPolicy => {
            // causes: [the write, each version of the source no reconcile
            // of the writer was decided on, the reconcile that sent it]
            let write = v.causes.first().and_then(|id| trace.get(*id));
            let reconcile =
                v.causes.last().and_then(|id| trace.get(*id)).filter(|e| matches!(e.event, Event::Reconcile { .. }));
            for skipped in v.causes.iter().skip(1).filter_map(|id| trace.get(*id)) {
                if matches!(skipped.event, Event::StoreWrite { .. }) {
                    steps.push(ExplanationStep {
                        entry: skipped.id,
                        text: format!(
                            "{}: {} — a state the writer never reconciled on",
                            fmt_time(skipped.time_ms),
                            describe(skipped)
                        ),
                    });
                }
            }
            if let Some(reconcile) = reconcile {
                steps.extend(decision_origin(trace, reconcile));
                notes.extend(mitigation_waits(trace, reconcile));
                // What it was handed in that one call: the deliveries that
                // carried the skipped version along with the one after it.
                steps.extend(
                    reconcile
                        .causes
                        .iter()
                        .filter_map(|id| trace.get(*id))
                        .filter(|e| matches!(e.event, Event::WatchDelivered { .. } | Event::ListServed { .. }))
                        .map(step),
                );
                steps.push(step(reconcile));
            }
            if let Some(write) = write {
                steps.push(step(write));
            }
        }
        Check::TimeTravel => {
            let now = v.causes.first().and_then(|id| trace.get(*id));
            let before = v.causes.get(1).and_then(|id| trace.get(*id));
            if let Some(before) = before {
                steps.push(ExplanationStep {
                    entry: before.id,
                    text: format!("{}: {}", fmt_time(before.time_ms), describe(before)),
                });
            }
            if let Some(now) = now {
                steps.extend(view_origin(trace, now));
            }
        }
    }
    steps.sort_by_key(|s| s.entry);
    steps.dedup_by_key(|s| s.entry);
    for note in notes {
        match steps.binary_search_by_key(&note.entry, |s| s.entry) {
            Ok(i) => {
                let said = note.text.split_once(": ").map_or(note.text.as_str(), |(_, rest)| rest);
                steps[i].text = format!("{}; {said}", steps[i].text);
            }
            Err(i) => steps.insert(i, note),
        }
    }
    steps.push(ExplanationStep { entry: v.id, text: format!("{}: {message}", fmt_time(v.time_ms)) });
    Some(Explanation { violation, check: *check, headline: message.clone(), steps })
}

/// How a container came to run: the reconcile that started it, and where
/// that component's knowledge of the pod came from.
fn container_origin(trace: &Trace, start: &Entry, detailed: bool) -> Vec<ExplanationStep> {
    let Event::ContainerStarted { node, pod } = &start.event else { return vec![] };
    let mut steps = Vec::new();
    let reconcile = start.causes.first().and_then(|id| trace.get(*id));
    // The start that broke the property is always traced to its source; the
    // one already running only when a stale read showed it the pod (then
    // the stale read is the story, whichever start the check fired on).
    if let Some(Entry { event: Event::Reconcile(call), id, .. }) = reconcile
        && let Some(source) = source_of_pod(trace, &call.component, &pod.uid, *id)
        && (detailed || source.event.is_stale_read())
    {
        steps.extend(view_origin(trace, source));
    }
    let who = match reconcile.map(|r| &r.event) {
        Some(Event::Reconcile(call)) => format!("{} starts", call.component),
        _ => format!("{node} starts"),
    };
    steps.push(ExplanationStep {
        entry: start.id,
        text: format!(
            "{}: {who} a container for {}/{} (uid {}) on {node}",
            fmt_time(start.time_ms),
            pod.namespace,
            pod.name,
            short_uid(&pod.uid)
        ),
    });
    steps
}

/// A step that just says what the entry says.
fn step(e: &Entry) -> ExplanationStep {
    ExplanationStep { entry: e.id, text: format!("{}: {}", fmt_time(e.time_ms), describe(e)) }
}

/// Why a controller decided what it did: the stale list its view came
/// from, if any, and each watch event it acted on that the store had
/// already overtaken when it acted (with the write that overtook it).
fn decision_origin(trace: &Trace, reconcile: &Entry) -> Vec<ExplanationStep> {
    let Event::Reconcile(call) = &reconcile.event else { return vec![] };
    let component = &call.component;
    let before = trace.entries.range(..reconcile.id as usize);
    let mut steps = Vec::new();
    // A controller run under leader election starts when it wins the Lease.
    if let Some(won) = before
        .clone()
        .rev()
        .find(|e| matches!(&e.event, Event::Leadership { component: c, leading: true, .. } if c == component))
    {
        steps.push(step(won));
    }
    // Its informers' last list (not a leader election's get of its Lease).
    if let Some(list) = before.clone().rev().find(|e| {
        e.event.is_informer_read() && matches!(&e.event, Event::ListServed(list) if &list.component == component)
    }) && list.event.is_stale_read()
    {
        steps.extend(view_origin(trace, list));
    }
    for input in reconcile.causes.iter().filter_map(|id| trace.get(*id)) {
        let Event::WatchDelivered { key, revision, .. } = &input.event else { continue };
        // What overtook it: the latest change of the object itself, or
        // failing that of its status.
        let newer = |spec_only: bool| {
            before.clone().rev().find(|e| {
                matches!(&e.event, Event::StoreWrite { key: k, revision: r, verb, .. }
                    if k == key && r > revision && !(spec_only && verb.is_status()))
            })
        };
        let overtaken = newer(true).or_else(|| newer(false));
        if let Some(newer) = overtaken {
            let Event::StoreWrite { revision: r, .. } = &newer.event else { continue };
            steps.push(step(newer));
            steps.push(ExplanationStep {
                entry: input.id,
                text: format!(
                    "{}: {} — but the store has had {key} at revision {r} since {}; {component} acts on the older version",
                    fmt_time(input.time_ms),
                    describe(input),
                    fmt_time(newer.time_ms)
                ),
            });
        }
    }
    steps
}

/// What a staleness mitigation did before a decision: the wait the call
/// ended (the sync went ahead once the informer showed the component's
/// own write), or, when the component runs with a mitigation and held
/// nothing, why that did not protect it. Both mitigations wait only for
/// writes the running instance made itself (KEP-5647 remembers the
/// resourceVersion of the controller's last write per object;
/// controller-runtime's read-your-own-writes client those of its own
/// client): a view stale in anyone else's writes, or in writes made
/// before a restart, is not held.
fn mitigation_waits(trace: &Trace, reconcile: &Entry) -> Vec<ExplanationStep> {
    let Event::Reconcile(call) = &reconcile.event else { return vec![] };
    let component = &call.component;
    // A call's waits are recorded right after it, at the same moment.
    let ended: Vec<ExplanationStep> = trace
        .entries
        .range(reconcile.id as usize + 1..)
        .take_while(|e| e.time_ms == reconcile.time_ms)
        .filter(|e| {
            e.causes.contains(&reconcile.id)
                && matches!(&e.event, Event::SyncHeld { component: c, held } if c == component && held.released)
        })
        .map(|e| {
            let Event::SyncHeld { held, .. } = &e.event else { unreachable!("filtered to waits") };
            ExplanationStep {
                entry: e.id,
                text: format!(
                    "{}: {} — held {} in all, so this decision saw its own write",
                    fmt_time(e.time_ms),
                    describe(e),
                    fmt_duration(e.time_ms.saturating_sub(held.since_ms))
                ),
            }
        })
        .collect();
    if !ended.is_empty() {
        return ended;
    }
    // The instance that decided: its start says which mitigations it ran with.
    let started = trace
        .entries
        .range(..reconcile.id as usize)
        .rev()
        .find(|e| matches!(&e.event, Event::ComponentStarted { component: c, .. } if c == component));
    let Some(start @ Entry { event: Event::ComponentStarted { mitigations, .. }, .. }) = started else {
        return vec![];
    };
    if mitigations.is_empty() {
        return vec![];
    }
    let names = mitigations.iter().map(|m| m.name()).collect::<Vec<_>>().join(" and ");
    vec![ExplanationStep {
        entry: start.id,
        text: format!(
            "{}: {component} runs with {names} on, yet held nothing before its decision at {}: {names} waits \
             only for writes this instance made itself, and none was unobserved; what its view \
             lacked was written by others, or before it started",
            fmt_time(start.time_ms),
            fmt_time(reconcile.time_ms)
        ),
    }]
}

/// The waits still unended when a check ran: a reconcile a mitigation
/// kept holding (its informer never reached the component's own write)
/// is work nobody does.
fn open_waits(trace: &Trace, before: EntryId) -> Vec<ExplanationStep> {
    crate::waits::waits(trace)
        .into_iter()
        .filter(|w| w.held_at(before))
        .map(|w| ExplanationStep {
            entry: w.began.id,
            text: format!("{}: {} — still held when the check ran", fmt_time(w.began.time_ms), describe(w.began)),
        })
        .collect()
}

/// Pods that someone else created or began deleting between a decision and
/// its write: the other side of a race, which the decision could not see.
fn racing_writes(trace: &Trace, reconcile: &Entry, write: &Entry) -> Vec<ExplanationStep> {
    let Event::StoreWrite { by: writer, .. } = &write.event else { return vec![] };
    trace
        .entries
        .range(reconcile.id as usize..write.id as usize)
        .filter(|e| {
            matches!(&e.event, Event::StoreWrite { key, by, verb, terminating, .. }
                if key.kind == "Pod" && by != writer && (*terminating || *verb == recon_abi::Verb::Create))
        })
        .take(5)
        .map(|e| ExplanationStep { entry: e.id, text: format!("{}: meanwhile, {}", fmt_time(e.time_ms), describe(e)) })
        .collect()
}

/// Who created the pod incarnation a container runs, and who bound it to its node.
fn pod_creation(trace: &Trace, start: &Entry) -> Vec<ExplanationStep> {
    let Event::ContainerStarted { pod, .. } = &start.event else { return vec![] };
    trace
        .entries
        .range(..start.id as usize)
        .filter(|e| match &e.event {
            Event::StoreWrite { uid, verb, removed: false, terminating: false, .. } => {
                *uid == pod.uid && matches!(verb, recon_abi::Verb::Create | recon_abi::Verb::Update)
            }
            _ => false,
        })
        .take(2)
        .map(|e| ExplanationStep { entry: e.id, text: format!("{}: {}", fmt_time(e.time_ms), describe(e)) })
        .collect()
}

/// The latest entry before `before` that showed `component` the pod `uid`.
fn source_of_pod<'t>(trace: &'t Trace, component: &str, uid: &str, before: EntryId) -> Option<&'t Entry> {
    trace.entries.range(..before as usize).rev().find(|e| match &e.event {
        Event::ListServed(list) => list.component == component && list.objects.iter().any(|o| o.uid == uid),
        Event::WatchDelivered { component: c, uid: u, .. } => c == component && u == uid,
        _ => false,
    })
}

/// Why a component saw what it saw: its restart, the read, how stale the
/// read was and why, and what the read still contained that was gone.
fn view_origin(trace: &Trace, read: &Entry) -> Vec<ExplanationStep> {
    let mut steps = Vec::new();
    let Event::ListServed(list) = &read.event else {
        return vec![ExplanationStep {
            entry: read.id,
            text: format!("{}: {}", fmt_time(read.time_ms), describe(read)),
        }];
    };
    let ListServed {
        component,
        api_server,
        request,
        served_from,
        revision,
        store_revision,
        stale_ms,
        partitioned,
        objects,
        ..
    } = &**list;
    // The (re)start that made it list.
    if let Some(start) = trace
        .entries
        .range(..read.id as usize)
        .rev()
        .find(|e| matches!(&e.event, Event::ComponentStarted { component: c, .. } if c == component))
        && let Event::ComponentStarted { restarts, .. } = &start.event
        && *restarts > 0
    {
        let what = match start.causes.first().and_then(|c| trace.get(*c)).map(|c| &c.event) {
            Some(Event::Script { description }) => description.clone(),
            _ => format!("{component} restarts"),
        };
        steps.push(ExplanationStep {
            entry: start.id,
            text: format!("{}: {what}; its memory is empty, so it must list again", fmt_time(start.time_ms)),
        });
    }
    if *partitioned
        && let Some(p) = trace
            .entries
            .range(..read.id as usize)
            .rev()
            .find(|e| matches!(&e.event, Event::Partition { api_server: s, started: true } if s == api_server))
    {
        steps.push(ExplanationStep {
            entry: p.id,
            text: format!(
                "{}: {api_server} loses its connection to the store; its watch cache stops receiving updates",
                fmt_time(p.time_ms)
            ),
        });
    }
    let behind = store_revision.saturating_sub(*revision);
    let source = match served_from {
        ServedFrom::Cache if behind > 0 => {
            format!(
                "from its watch cache, {behind} revisions ({stale_ms} ms) behind the store (cache at revision {revision}, store at {store_revision})"
            )
        }
        ServedFrom::Cache => format!("from its watch cache, up to date at revision {revision}"),
        ServedFrom::Store => format!("from the store at revision {revision}"),
    };
    steps.push(ExplanationStep {
        entry: read.id,
        text: format!(
            "{}: {component} sends {request} to {api_server}, which answers {source}",
            fmt_time(read.time_ms)
        ),
    });
    // Objects the read returned that the store had already deleted, or
    // begun deleting (the list shows them alive).
    for o in objects {
        let gone = |removal: bool| {
            trace.entries.range(..read.id as usize).find(|e| {
                matches!(&e.event, Event::StoreWrite { uid, removed, terminating, revision: r, .. }
                    if *uid == o.uid && r > revision && if removal { *removed } else { *terminating })
            })
        };
        if let Some(del) = gone(true).or_else(|| gone(false))
            && let Event::StoreWrite { revision: r, removed, .. } = &del.event
        {
            let what = if *removed { "is deleted" } else { "begins graceful deletion" };
            steps.push(ExplanationStep {
                entry: del.id,
                text: format!(
                    "{}: {} (uid {}) {what} at revision {r}; the list at revision {revision} still shows it alive",
                    fmt_time(del.time_ms),
                    o.key,
                    short_uid(&o.uid)
                ),
            });
        }
    }
    steps
}

/// A component's crashes in one run (a plugin that traps or runs out of
/// fuel crashes on every call, so one line per component is enough).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CrashSummary {
    /// The component.
    pub component: String,
    /// How many times it crashed.
    pub count: usize,
    /// Its first crash.
    pub first: EntryId,
    /// Why it crashed last.
    pub reason: String,
}

/// Every component's crashes, in order of their first crash: what a summary
/// lists so that a plugin that keeps crashing is never silent. A scripted
/// crash counts; a scripted restart does not (it is a planned stop and
/// start, shown in the script and on the timeline): it is the stop that the
/// same script step starts the component again after.
pub fn crashes(trace: &Trace) -> Vec<CrashSummary> {
    let by_script = |id: &EntryId| trace.get(*id).is_some_and(|e| matches!(e.event, Event::Script { .. }));
    let restarts: BTreeSet<(&str, EntryId)> = trace
        .entries
        .iter()
        .filter_map(|e| match (&e.event, e.causes.first()) {
            (Event::ComponentStarted { component, .. }, Some(cause)) if by_script(cause) => {
                Some((component.as_str(), *cause))
            }
            _ => None,
        })
        .collect();
    let mut summaries: Vec<CrashSummary> = Vec::new();
    for entry in &trace.entries {
        let Event::ComponentCrashed { component, reason } = &entry.event else { continue };
        if entry.causes.first().is_some_and(|cause| restarts.contains(&(component.as_str(), *cause))) {
            continue;
        }
        match summaries.iter_mut().find(|s| &s.component == component) {
            Some(summary) => {
                summary.count += 1;
                summary.reason = reason.clone();
            }
            None => summaries.push(CrashSummary {
                component: component.to_string(),
                count: 1,
                first: entry.id,
                reason: reason.clone(),
            }),
        }
    }
    summaries
}

/// Periods during which a component's list or watch requests kept failing:
/// the availability cost of refusing to serve stale data.
pub fn unavailability(trace: &Trace) -> Vec<Unavailability> {
    let mut open: Vec<Unavailability> = Vec::new();
    let mut done = Vec::new();
    for e in &trace.entries {
        match &e.event {
            // A Get of something absent is an answer, not an outage.
            Event::RequestFailed { status, .. } if status.reason == recon_abi::StatusReason::NotFound => {}
            Event::RequestFailed { component, status, .. } => {
                match open.iter_mut().find(|u| &u.component == component) {
                    Some(u) => {
                        u.failures += 1;
                        u.last_error = status.message.clone();
                    }
                    None => open.push(Unavailability {
                        component: component.to_string(),
                        from_ms: e.time_ms,
                        until_ms: None,
                        failures: 1,
                        last_error: status.message.clone(),
                    }),
                }
            }
            Event::ListServed(list) => {
                if let Some(i) = open.iter().position(|u| u.component == list.component) {
                    let mut u = open.remove(i);
                    u.until_ms = Some(e.time_ms);
                    done.push(u);
                }
            }
            _ => {}
        }
    }
    done.extend(open);
    done.sort_by_key(|u| (u.from_ms, u.component.clone()));
    done
}

#[cfg(test)]
pub(crate) mod tests {
    use recon_abi::{HeldSync, Mitigation, ObjectKey, Verb};

    use super::*;
    use crate::{Lane, LaneId, LaneRole, Reconcile};

    fn held(released: bool) -> Event {
        Event::SyncHeld {
            component: "rs".into(),
            held: Box::new(HeldSync {
                mitigation: Mitigation::StaleControllerConsistency,
                object: ObjectKey::new("ReplicaSet", "default", "web"),
                kind: "Pod".into(),
                resource_version: 7,
                seen: if released { 7 } else { 5 },
                since_ms: 1_000,
                skips: 3,
                released,
            }),
        }
    }

    /// A trace of `events`, each at its time, caused by the entries named.
    pub(crate) fn trace(events: Vec<(u64, Event, Vec<EntryId>)>) -> Trace {
        Trace {
            scenario: "t".into(),
            seed: 1,
            lanes: vec![Lane { name: "rs".into(), role: LaneRole::Controller }],
            entries: events
                .into_iter()
                .enumerate()
                .map(|(id, (time_ms, event, causes))| Entry {
                    id: id as u64,
                    time_ms,
                    lane: LaneId(0),
                    event,
                    causes: causes.into(),
                })
                .collect(),
        }
    }

    fn started(mitigations: Vec<Mitigation>) -> Event {
        Event::ComponentStarted { component: "rs".into(), api_server: "apiserver-1".into(), restarts: 0, mitigations }
    }

    fn reconcile() -> Event {
        Event::Reconcile(Box::new(Reconcile {
            component: "rs".into(),
            view_revision: 7,
            inputs: vec![],
            actions: vec!["create Pod default/web-*".into()],
            held_back: vec![],
        }))
    }

    fn create() -> Event {
        Event::StoreWrite {
            verb: Verb::Create,
            key: ObjectKey::new("Pod", "default", "web-1").into(),
            uid: "u1".into(),
            revision: 8,
            removed: false,
            terminating: false,
            by: "rs".into(),
            via: "apiserver-1".into(),
            patch: None,
        }
    }

    fn violation(check: Check) -> Event {
        Event::Violation { check, message: "too many".into() }
    }

    fn texts(trace: &Trace) -> Vec<String> {
        let (last, ..) = trace.violations().last().expect("a violation");
        explain(trace, last.id).expect("explained").steps.into_iter().map(|s| s.text).collect()
    }

    #[test]
    fn a_wait_the_decision_ended_is_a_step_with_how_long_it_held() {
        let t = trace(vec![
            (0, started(vec![Mitigation::StaleControllerConsistency]), vec![]),
            (1_500, reconcile(), vec![]),
            (1_500, held(true), vec![1]),
            (1_505, create(), vec![1]),
            (1_505, violation(Check::ReplicaCount), vec![3]),
        ]);
        let steps = texts(&t);
        assert!(
            steps.iter().any(|s| s.contains("syncs ReplicaSet default/web again") && s.contains("held 0.500s")),
            "{steps:#?}"
        );
        assert!(!steps.iter().any(|s| s.contains("held nothing")), "{steps:#?}");
    }

    #[test]
    fn a_mitigated_decision_that_held_nothing_says_why_on_the_components_start() {
        let t = trace(vec![
            (0, started(vec![Mitigation::ReadYourOwnWrites]), vec![]),
            (1_500, reconcile(), vec![]),
            (1_505, create(), vec![1]),
            (1_505, violation(Check::ReplicaCount), vec![2]),
        ]);
        let steps = texts(&t);
        assert!(steps[0].starts_with("t=0.000s: rs runs with readYourOwnWrites on, yet held nothing"), "{steps:#?}");
        // Without a mitigation there is nothing to say.
        let mut plain = t.clone();
        plain.entries[0].event = started(vec![]);
        assert!(!texts(&plain).iter().any(|s| s.contains("held nothing")));
    }

    #[test]
    fn a_wait_still_open_when_a_quiescence_check_runs_is_named_until_the_instance_ends() {
        let open = trace(vec![
            (0, started(vec![Mitigation::StaleControllerConsistency]), vec![]),
            (1_000, held(false), vec![]),
            (1_005, create(), vec![]),
            (9_000, violation(Check::Convergence), vec![2]),
        ]);
        let steps = texts(&open);
        assert!(
            steps.iter().any(|s| s.contains("holds its sync") && s.ends_with("still held when the check ran")),
            "{steps:#?}"
        );
        // A restart ends the instance, and with it the wait.
        let mut restarted = open.clone();
        let mut entries: Vec<Entry> = restarted.entries.into_iter().collect();
        entries
            .insert(2, Entry { id: 2, time_ms: 2_000, lane: LaneId(0), event: started(vec![]), causes: vec![].into() });
        restarted.entries = entries.into();
        for (i, e) in restarted.entries.iter_mut().enumerate() {
            e.id = i as u64;
        }
        restarted.entries[4].causes = vec![3].into();
        assert!(!texts(&restarted).iter().any(|s| s.contains("still held")));
    }
}
