//! History policy: a rule about how a field may change over its object's
//! writes ("replicas never decrease") held for what a controller derives
//! from that field.
//!
//! The oracle is the source object's write history, not any controller's
//! view of it. For every object of a policy's kind the check keeps the
//! sequence of values its field took, one per committed version of the
//! incarnation, and the value the rule puts in force after each prefix of
//! it (`neverDecreases`: the highest written so far; `neverIncreases`:
//! the lowest; `latest`: the last). A component's write that sets the
//! driven field of the driven object (same namespace, its name from the
//! source's) to a value that no prefix puts in force is flagged: the
//! controller acted on a history that never happened. Values in force
//! earlier are not flagged (a controller that lags acts on an older
//! prefix, and catches up), so what this catches is a state skipped, not a
//! state late: rabbitmq/cluster-operator#758, where the user wrote 1, 3, 2
//! to a cluster that never scales down (in force: 1, 3, 3) and the
//! operator, which reconciled on 1 and then on 2 only, scaled its
//! StatefulSet to 2.
//!
//! The finding names the versions of the source no reconcile of the
//! writer was decided on (no call whose view revision lay between that
//! version's revision and the next one's): the unobserved state.
//! Writes by kubectl and the scenario's objects are not judged; a version
//! without the field, or with the value before it, adds nothing to the history.

use std::collections::BTreeMap;

use recon_abi::{Object, ObjectKey};
use recon_scenario::{Check, HistoryPolicy, PolicyRule};
use recon_store::EventKind;
use recon_trace::{EntryId, Event};
use serde_json::Value;

use super::{Commit, Finding, Observer, Truth};

/// One committed version of a source object's field.
#[derive(Clone, Debug)]
struct Version {
    revision: u64,
    value: Value,
    entry: EntryId,
}

/// The history of each source object's current incarnation, per policy.
pub(super) struct HistoryPolicies {
    policies: Vec<HistoryPolicy>,
    /// (policy index, source key) → (uid, versions in commit order).
    histories: BTreeMap<(usize, ObjectKey), (String, Vec<Version>)>,
}

impl HistoryPolicies {
    pub fn new(policies: &[HistoryPolicy]) -> HistoryPolicies {
        HistoryPolicies { policies: policies.to_vec(), histories: BTreeMap::new() }
    }

    /// Records a commit of a source object.
    fn record_source(&mut self, index: usize, commit: &Commit<'_>) {
        let event = commit.event;
        let object = &event.value;
        let key = object.key();
        if event.kind == EventKind::Delete {
            self.histories.remove(&(index, key));
            return;
        }
        let (uid, versions) = self.histories.entry((index, key)).or_default();
        if *uid != object.metadata.uid {
            *uid = object.metadata.uid.clone();
            versions.clear();
        }
        // A write that leaves the field as it was adds nothing to its history.
        if let Some(value) = field(object, &self.policies[index].field)
            && versions.last().is_none_or(|last| last.value != value)
        {
            versions.push(Version { revision: event.revision, value, entry: commit.entry });
        }
    }

    /// Judges a component's commit of a driven object.
    fn judge_driven(&self, index: usize, truth: &Truth<'_>, commit: &Commit<'_>) -> Option<Finding> {
        let policy = &self.policies[index];
        let writer = commit.writer?;
        let event = commit.event;
        if event.kind == EventKind::Delete {
            return None;
        }
        let written = field(&event.value, &policy.drives.field)?;
        let before = event.prev.as_ref().and_then(|p| field(p, &policy.drives.field));
        if before.as_ref() == Some(&written) {
            return None;
        }
        let driven = event.value.key();
        let (source, (_, versions)) = self.histories.iter().find(|((i, source), _)| {
            *i == index && source.namespace == driven.namespace && policy.drives.name_for(&source.name) == driven.name
        })?;
        let source = &source.1;
        let in_force = in_force(policy.rule, versions);
        if versions.is_empty() || in_force.contains(&written) {
            return None;
        }
        let mut allowed: Vec<String> = in_force.iter().map(Value::to_string).collect();
        allowed.dedup();
        let history: Vec<String> = versions.iter().map(|v| format!("{} (revision {})", v.value, v.revision)).collect();
        let decided = decided_on(truth, commit.entry);
        let unobserved: Vec<&Version> = match decided {
            Some(_) => unobserved(truth, writer, versions, commit.entry),
            None => Vec::new(),
        };
        let from = before.map_or("unset".to_owned(), |v| v.to_string());
        let mut message = format!(
            "{writer} set {} of {driven} to {written} (from {from}) at revision {}, a value the write history of \
             {source} never puts in force: its {} was written {}, and {} {}, so it allows {} only",
            policy.drives.field,
            event.revision,
            policy.field,
            history.join(", "),
            policy.field,
            policy.rule,
            allowed.join(" or "),
        );
        if !unobserved.is_empty() {
            let skipped: Vec<String> =
                unobserved.iter().map(|v| format!("revision {} ({} {})", v.revision, policy.field, v.value)).collect();
            message += &format!(
                "; {writer} never reconciled on {}: it acted as if that state never existed",
                skipped.join(", ")
            );
        }
        // The write, then the versions it never acted on, then the call it was decided in.
        let mut causes = vec![commit.entry];
        causes.extend(unobserved.iter().map(|v| v.entry));
        causes.extend(decided);
        Some(Finding { check: Check::HistoryPolicy, message, causes, component: None })
    }
}

impl Observer for HistoryPolicies {
    fn committed(&mut self, truth: &Truth<'_>, commit: &Commit<'_>) -> Vec<Finding> {
        let kind = &commit.event.value.kind;
        let mut findings = Vec::new();
        for index in 0..self.policies.len() {
            if self.policies[index].drives.kind == *kind
                && let Some(finding) = self.judge_driven(index, truth, commit)
            {
                findings.push(finding);
            }
            if self.policies[index].kind == *kind {
                self.record_source(index, commit);
            }
        }
        findings
    }
}

/// The value a dotted path names in an object (`spec.replicas`).
fn field(object: &Object, path: &str) -> Option<Value> {
    let mut parts = path.split('.');
    let metadata;
    let mut at: &Value = match parts.next()? {
        "spec" => &object.spec,
        "status" => &object.status,
        "metadata" => {
            metadata = serde_json::to_value(&object.metadata).ok()?;
            &metadata
        }
        other => object.other.get(other)?,
    };
    for part in parts {
        at = at.get(part)?;
    }
    (!at.is_null()).then(|| at.clone())
}

/// The value the rule puts in force after each prefix of the history.
fn in_force(rule: PolicyRule, versions: &[Version]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(versions.len());
    for v in versions {
        let next = match (rule, out.last()) {
            (PolicyRule::Latest, _) | (_, None) => v.value.clone(),
            (PolicyRule::NeverDecreases, Some(last)) if below(&v.value, last) => last.clone(),
            (PolicyRule::NeverIncreases, Some(last)) if below(last, &v.value) => last.clone(),
            _ => v.value.clone(),
        };
        out.push(next);
    }
    out
}

/// Whether `a` < `b` as numbers (values that are not numbers are never below).
fn below(a: &Value, b: &Value) -> bool {
    matches!((a.as_f64(), b.as_f64()), (Some(a), Some(b)) if a < b)
}

/// The reconcile a write was sent from: its first cause.
fn decided_on(truth: &Truth<'_>, write: EntryId) -> Option<EntryId> {
    let cause = *truth.trace.get(write)?.causes.first()?;
    matches!(truth.trace.get(cause)?.event, Event::Reconcile { .. }).then_some(cause)
}

/// The versions (after the first) that no reconcile of `writer` before
/// `write` was decided on: none of its calls had a view revision from that
/// version's revision up to the next version's.
fn unobserved<'v>(truth: &Truth<'_>, writer: &str, versions: &'v [Version], write: EntryId) -> Vec<&'v Version> {
    let views: Vec<u64> = truth
        .trace
        .entries
        .range(..write as usize)
        .filter_map(|e| match &e.event {
            Event::Reconcile(call) if call.component == writer => Some(call.view_revision),
            _ => None,
        })
        .collect();
    versions
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(i, v)| {
            let until = versions.get(i + 1).map_or(u64::MAX, |n| n.revision);
            !views.iter().any(|view| (v.revision..until).contains(view))
        })
        .map(|(_, v)| v)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn history(values: &[u64]) -> Vec<Version> {
        values.iter().enumerate().map(|(i, v)| Version { revision: i as u64 + 1, value: json!(v), entry: 0 }).collect()
    }

    #[test]
    fn never_decreases_keeps_the_highest_value_written_so_far_in_force() {
        let in_force = in_force(PolicyRule::NeverDecreases, &history(&[1, 3, 2]));
        assert_eq!(in_force, [json!(1), json!(3), json!(3)]);
        assert!(!in_force.contains(&json!(2)), "1 → 3 → 2 never puts 2 in force: issue 758");
    }

    #[test]
    fn never_increases_and_latest_follow_their_own_rule() {
        assert_eq!(in_force(PolicyRule::NeverIncreases, &history(&[3, 1, 2])), [json!(3), json!(1), json!(1)]);
        assert_eq!(in_force(PolicyRule::Latest, &history(&[1, 3, 2])), [json!(1), json!(3), json!(2)]);
    }

    #[test]
    fn a_dotted_path_reads_spec_status_and_metadata() {
        let mut object =
            Object { spec: json!({"replicas": 3}).into(), status: json!({"ready": 2}).into(), ..Object::default() };
        object.metadata.name = "rabbit".into();
        assert_eq!(field(&object, "spec.replicas"), Some(json!(3)));
        assert_eq!(field(&object, "status.ready"), Some(json!(2)));
        assert_eq!(field(&object, "metadata.name"), Some(json!("rabbit")));
        assert_eq!(field(&object, "spec.missing"), None);
    }
}
