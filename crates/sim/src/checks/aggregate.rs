//! Dropped member: a component's write of an aggregate object (a binding
//! whose list holds one member per object of a kind) takes away a member
//! that stands for an object the store still holds.
//!
//! The definition. For every aggregate in `checks.aggregates`, a write W
//! by a component C that commits a new version of the aggregate object is
//! judged against the version it replaced: every element of the list field
//! that the old version had and the new one lacks is looked up among the
//! objects of the aggregate's kind in the store at that moment (the member
//! template filled in with each object's namespace and name). An element
//! that stands for an object the store holds, not being deleted, is a
//! dropped member: W was computed from a store that lacked the object.
//!
//! What it leaves alone: a member not yet added (a controller whose cache
//! lags adds it when it sees the object; that is late, not wrong); a member
//! removed after its object was deleted or marked for deletion; writes by
//! kubectl and the scenario's objects; a delete of the aggregate.
//!
//! The finding says where the writer's knowledge stood: the last list its
//! informers were served before the reconcile that sent W. When that list
//! held the objects whose members W dropped, the informer had delivered
//! them and the write still left them out: it was computed from a store
//! that did not yet hold the list, a reconcile between a relist's `Init`
//! and `InitDone` (stackabletech/hdfs-operator#774, where the aggregator
//! patches its ClusterRoleBinding on every watcher event, and a restarted
//! operator's store is empty until the first `InitDone`).

use std::collections::BTreeMap;

use recon_abi::{Object, ObjectKey};
use recon_scenario::{Aggregate, Check};
use recon_store::EventKind;
use recon_trace::{Entry, EntryId, Event, text::fmt_time};
use serde_json::Value;

use super::{Commit, Finding, Observer, Truth};

/// The `droppedMember` check over the scenario's aggregates.
pub(super) struct DroppedMembers {
    aggregates: Vec<Aggregate>,
}

impl DroppedMembers {
    pub fn new(aggregates: &[Aggregate]) -> DroppedMembers {
        DroppedMembers { aggregates: aggregates.to_vec() }
    }

    fn judge(aggregate: &Aggregate, truth: &Truth<'_>, commit: &Commit<'_>) -> Option<Finding> {
        let writer = commit.writer?;
        let event = commit.event;
        if event.kind == EventKind::Delete {
            return None;
        }
        let before = list(event.prev.as_deref()?, &aggregate.into.field);
        let after = list(&event.value, &aggregate.into.field);
        let removed: Vec<&Value> = before.iter().filter(|m| !after.contains(m)).collect();
        if removed.is_empty() {
            return None;
        }
        // The objects of the kind the store holds, live, whose member was removed.
        let prefix = recon_store::prefix_for(&aggregate.kind, "");
        let objects = truth.store.range(&prefix, None).ok()?;
        let dropped: Vec<(ObjectKey, String)> = objects
            .iter()
            .filter(|kv| !kv.value.is_terminating())
            .filter_map(|kv| {
                let meta = &kv.value.metadata;
                let member = aggregate.member_for(&meta.namespace, &meta.name);
                removed.iter().any(|m| matches(m, &member)).then(|| (kv.value.key(), describe_member(&member)))
            })
            .collect();
        if dropped.is_empty() {
            return None;
        }
        let target = event.value.key();
        let members: Vec<String> = dropped.iter().map(|(key, member)| format!("{member} (for {key})")).collect();
        let mut message = format!(
            "{writer} wrote {target} at revision {} without {}, whose objects exist and are not being deleted: its {} \
             went from {} members to {}",
            event.revision,
            members.join(", "),
            aggregate.into.field,
            before.len(),
            after.len(),
        );
        let reconcile = decided_in(truth, commit.entry);
        let list = reconcile.and_then(|r| last_informer_list(truth, writer, r.id));
        let mut causes = vec![commit.entry];
        if let Some((list, listed, revision)) = list {
            let held: Vec<&ObjectKey> = dropped.iter().map(|(key, _)| key).filter(|key| listed.contains(key)).collect();
            if held.len() == dropped.len() {
                message += &format!(
                    "; {writer}'s informer had been served those objects in its list at {} (revision {revision}), \
                     yet the write left them out: it was computed from a store that did not yet hold that list, a \
                     reconcile during the relist, between Init and InitDone",
                    fmt_time(list.time_ms),
                );
            } else {
                message += &format!(
                    "; {writer}'s last list, at {} (revision {revision}), did not show every one of those objects: \
                     its view was behind the store",
                    fmt_time(list.time_ms),
                );
            }
            causes.push(list.id);
        }
        causes.extend(reconcile.map(|r| r.id));
        Some(Finding { check: Check::DroppedMember, message, causes, component: None })
    }
}

impl Observer for DroppedMembers {
    fn committed(&mut self, truth: &Truth<'_>, commit: &Commit<'_>) -> Vec<Finding> {
        let key = commit.event.value.key();
        self.aggregates
            .iter()
            .filter(|a| a.into.kind == key.kind && a.into.namespace == key.namespace && a.into.name == key.name)
            .filter_map(|a| Self::judge(a, truth, commit))
            .collect()
    }
}

/// The list a dotted path names in an object; empty when the field is
/// unset or not a list (an empty list is left out on the wire).
fn list(object: &Object, path: &str) -> Vec<Value> {
    let mut parts = path.split('.');
    let Some(first) = parts.next() else { return Vec::new() };
    let root = match first {
        "spec" => Some(&*object.spec),
        "status" => Some(&*object.status),
        other => object.other.get(other),
    };
    let mut at = root;
    for part in parts {
        at = at.and_then(|v| v.get(part));
    }
    at.and_then(Value::as_array).cloned().unwrap_or_default()
}

/// Whether a list element has every field of `member` with that value.
fn matches(element: &Value, member: &BTreeMap<String, String>) -> bool {
    member.iter().all(|(field, value)| element.get(field).and_then(Value::as_str) == Some(value.as_str()))
}

/// A member in words: `kind namespace/name` when it has those fields.
fn describe_member(member: &BTreeMap<String, String>) -> String {
    let field = |f: &str| member.get(f).map(String::as_str).unwrap_or_default();
    match (field("kind"), field("namespace"), field("name")) {
        (kind, namespace, name) if !name.is_empty() => {
            let kind = if kind.is_empty() { String::new() } else { format!("{kind} ") };
            if namespace.is_empty() { format!("{kind}{name}") } else { format!("{kind}{namespace}/{name}") }
        }
        _ => member.iter().map(|(f, v)| format!("{f}={v}")).collect::<Vec<_>>().join(","),
    }
}

/// The reconcile a write was sent from: its first cause.
fn decided_in<'t>(truth: &Truth<'t>, write: EntryId) -> Option<&'t Entry> {
    let cause = truth.trace.get(*truth.trace.get(write)?.causes.first()?)?;
    matches!(cause.event, Event::Reconcile { .. }).then_some(cause)
}

/// The last list served to `component`'s informers before entry `before`:
/// the entry, the objects it held and its revision.
fn last_informer_list<'t>(
    truth: &Truth<'t>,
    component: &str,
    before: EntryId,
) -> Option<(&'t Entry, Vec<ObjectKey>, u64)> {
    truth.trace.entries.range(..usize::try_from(before).ok()?).rev().find_map(|entry| match &entry.event {
        Event::ListServed(list) if list.component == component && entry.event.is_informer_read() => {
            Some((entry, list.objects.iter().map(|o| o.key.as_key().clone()).collect(), list.revision))
        }
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn aggregate() -> Aggregate {
        serde_json::from_value(json!({
            "kind": "HdfsCluster",
            "into": { "kind": "ClusterRoleBinding", "name": "nodes", "field": "subjects" },
            "member": { "kind": "ServiceAccount", "name": "{name}-serviceaccount", "namespace": "{namespace}" },
        }))
        .expect("a valid aggregate")
    }

    #[test]
    fn a_member_matches_the_element_with_every_templated_field() {
        let member = aggregate().member_for("default", "alpha");
        let element = json!({"kind": "ServiceAccount", "name": "alpha-serviceaccount", "namespace": "default"});
        assert!(matches(&element, &member));
        assert!(!matches(
            &json!({"kind": "ServiceAccount", "name": "alpha-serviceaccount", "namespace": "other"}),
            &member
        ));
        assert_eq!(describe_member(&member), "ServiceAccount default/alpha-serviceaccount");
    }

    #[test]
    fn an_unset_or_empty_list_has_no_members() {
        let mut binding = Object::default();
        assert!(list(&binding, "subjects").is_empty());
        binding.other.insert("subjects".into(), json!([{"name": "a"}]));
        assert_eq!(list(&binding, "subjects").len(), 1);
        binding.other.insert("subjects".into(), json!([]));
        assert!(list(&binding, "subjects").is_empty());
    }
}
