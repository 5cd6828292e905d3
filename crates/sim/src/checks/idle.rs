//! Idle with work left (liveness), at the end of the run: a controller
//! that has caught up with the store and has nothing in flight must have
//! nothing left to do. Controllers are level-triggered: what they write is
//! a function of the state they read, so a fresh instance of the same
//! controller handed the store as it is stands for "what its own rule
//! says from the current state". If that instance would still write while
//! the running one sits idle, an edge was lost: a write the running one
//! skipped, and no event since that wakes it (ai-dynamo/grove#775, where a
//! status write was skipped because it equalled a stale cached copy, and
//! the controller's own status event is filtered out by its generation
//! predicate).
//!
//! The simulation asks every running controller (not node agents) at the
//! end of the run ([`crate::component::Component::idle_probe`]); this
//! observer turns what it finds into findings, each explained with the
//! controller's own last write of the object and the call, decided on a
//! view older than that write, after which it wrote nothing more for it.

use std::sync::Arc;

use recon_abi::{Action, Object, ObjectKey, Patch, Verb};
use recon_scenario::Check;
use recon_trace::{Entry, EntryId, Event};
use serde_json::Value;

use super::{Finding, Observer, Truth};
use crate::component::describe_action_text;
use crate::ids::ComponentId;

/// A running controller that was quiescent at the end of the run and would
/// still write if handed the store as it is.
pub(crate) struct IdleController {
    /// The component.
    pub component: ComponentId,
    /// Its name.
    pub name: String,
    /// The writes a fresh instance handed the store would make.
    pub writes: Vec<Action>,
}

/// Judged once, when the run ends, from what the simulation found.
pub(super) struct IdleWithWorkLeft;

impl Observer for IdleWithWorkLeft {
    fn ended(&mut self, truth: &Truth<'_>) -> Vec<Finding> {
        let mut findings = Vec::new();
        for idle in truth.idle {
            for write in &idle.writes {
                let Some((_, key)) = write.write_target() else { continue };
                let change = change_of(truth, write, &key);
                let mut message = format!(
                    "{} is idle with work left: it holds the store's current state and has nothing in flight, but \
                     handed that state afresh it would {}{change}",
                    idle.name,
                    describe_action_text(write)
                );
                let mut causes = Vec::new();
                if let Some(own) = last_write_by(truth, &idle.name, &key) {
                    let Event::StoreWrite { revision: written, verb, .. } = &own.event else { continue };
                    message += &format!(
                        "; its own last write of it, {} at revision {written} ({}), ",
                        verb_words(*verb),
                        recon_trace::text::fmt_time(own.time_ms)
                    );
                    causes.push(own.id);
                    match skipped_after(truth, &idle.name, &key, own.id, *written) {
                        Some((call, view)) => {
                            message += &format!(
                                "had not reached its cache when it was called at {} on a view at revision {view} \
                                 ({} behind its own write) and wrote nothing for {key}: it judged the object \
                                 against the copy its write had replaced, and once the write reached its cache \
                                 nothing woke it again",
                                recon_trace::text::fmt_time(call.time_ms),
                                written - view
                            );
                            causes.push(call.id);
                        }
                        None => message += "is the last it made; nothing woke it for the object since",
                    }
                }
                findings.push(Finding {
                    check: Check::IdleWithWorkLeft,
                    message,
                    causes,
                    component: Some(idle.component),
                });
            }
        }
        findings
    }
}

fn verb_words(verb: Verb) -> String {
    format!("{verb:?}").to_lowercase().replace("status", " status")
}

/// What a status or object write would change, field by field, against the
/// store (`" (status.availableReplicas 0 → 1)"`), when it says.
fn change_of(truth: &Truth<'_>, write: &Action, key: &ObjectKey) -> String {
    let current: Option<Arc<Object>> = truth.store.get(key, None).ok().flatten().map(|kv| kv.value);
    let (section, wanted): (&str, &Value) = match write {
        Action::UpdateStatus { object, .. } => ("status", &object.status),
        Action::Update { object, .. } => ("spec", &object.spec),
        Action::PatchStatus { patch: Patch::Merge(body), .. } => ("status", &body["status"]),
        Action::Patch { patch: Patch::Merge(body), .. } => ("spec", &body["spec"]),
        _ => return String::new(),
    };
    let have = current.as_ref().map_or(&Value::Null, |o| if section == "status" { &o.status } else { &o.spec });
    let Some(fields) = wanted.as_object() else { return String::new() };
    let changed: Vec<String> = fields
        .iter()
        .filter(|(name, value)| have.get(name.as_str()) != Some(*value))
        .map(|(name, value)| {
            let old = have.get(name.as_str()).map_or("unset".to_owned(), Value::to_string);
            format!("{section}.{name} {old} → {value}")
        })
        .collect();
    if changed.is_empty() { String::new() } else { format!(" ({})", changed.join(", ")) }
}

/// The component's last committed write of `key`.
fn last_write_by<'t>(truth: &Truth<'t>, component: &str, key: &ObjectKey) -> Option<&'t Entry> {
    truth
        .trace
        .entries
        .iter()
        .rev()
        .find(|e| matches!(&e.event, Event::StoreWrite { key: k, by, .. } if k == key && by == component))
}

/// The component's last call after its write `own` (at revision
/// `written`) that was decided on a view older than that write and sent no
/// write of `key`: the call in which a stale copy of the object stood in
/// for the one the write had made. With its view revision.
fn skipped_after<'t>(
    truth: &Truth<'t>,
    component: &str,
    key: &ObjectKey,
    own: EntryId,
    written: u64,
) -> Option<(&'t Entry, u64)> {
    let entries = &truth.trace.entries;
    let mut stale_calls = entries.iter().skip(own as usize + 1).filter_map(|e| match &e.event {
        Event::Reconcile(call) if call.component == component && call.view_revision < written => {
            Some((e, call.view_revision))
        }
        _ => None,
    });
    let wrote_from = |call: EntryId| {
        entries.iter().any(|e| {
            e.causes.first() == Some(&call) && matches!(&e.event, Event::StoreWrite { key: k, .. } if k == key)
        })
    };
    // From the end: the last such call is the answer, and each test scans the trace.
    stale_calls.rfind(|(call, _)| !wrote_from(call.id))
}
