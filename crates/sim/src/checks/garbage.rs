//! Garbage collection: a collector's delete must not take a dependent
//! whose owner exists, nor may any component's delete decided on an earlier
//! incarnation take a newer one whose owner exists (safety, judged at the
//! commit against the store),
//! and, when a collector runs, no dependent may be left naming only owners
//! that are gone (liveness, at the end of the run). The other side of
//! ownership: a controller must not create a dependent for an owner that
//! is already gone or being deleted (safety, at the commit).
//!
//! Owners are matched by uid: an owner deleted and re-created with the same
//! name is a different owner. A delete decided on a stale view is explained
//! with that view — the store at the revision the collector had observed
//! when it decided — so the finding names the owner it believed gone.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use recon_abi::{Object, ObjectKey, OwnerReference, is_cluster_scoped};
use recon_scenario::Check;
use recon_store::{EventKind, Store};
use recon_trace::{EntryId, Event, text::short_uid};

use super::{Commit, Finding, Observation, Observer, Truth};

/// The key an owner reference of `dependent` names.
fn owner_key(dependent: &Object, owner: &OwnerReference) -> ObjectKey {
    let namespace = if is_cluster_scoped(&owner.kind) { "" } else { dependent.metadata.namespace.as_str() };
    ObjectKey::new(&owner.kind, namespace, &owner.name)
}

/// The owner this reference names, as the store had it at `at` (`None`:
/// now), if that incarnation existed then.
fn owner_at(store: &Store, dependent: &Object, owner: &OwnerReference, at: Option<u64>) -> Option<Arc<Object>> {
    let kv = store.get(&owner_key(dependent, owner), at).ok().flatten()?;
    (kv.value.metadata.uid == owner.uid).then_some(kv.value)
}

/// The revision the writer had observed when it decided: the view of the
/// reconcile that sent the write.
fn view_of(truth: &Truth<'_>, write: EntryId) -> Option<u64> {
    let write = truth.trace.get(write)?;
    let reconcile = truth.trace.get(*write.causes.first()?)?;
    match &reconcile.event {
        Event::Reconcile(call) => Some(call.view_revision),
        _ => None,
    }
}

fn describe_owner(owner: &OwnerReference) -> String {
    format!("{} {} (uid {})", owner.kind, owner.name, short_uid(&owner.uid))
}

/// Deletes of dependents whose owner existed: any such delete by a garbage
/// collector (its whole job is to judge owners), and, by any other
/// component, a delete that took a newer incarnation than the one its view
/// held under that name (a delete by name, decided on a stale view: the
/// pattern of rabbitmq/cluster-operator#648). Other controllers delete
/// dependents of live owners as a matter of course (a ReplicaSet scaling
/// down), so for them only the incarnation mix-up is judged.
pub(super) struct DeletedLiveDependent {
    collectors: BTreeSet<String>,
}

impl DeletedLiveDependent {
    /// Judges the deletes of these components.
    pub fn new(collectors: &[String]) -> DeletedLiveDependent {
        DeletedLiveDependent { collectors: collectors.iter().cloned().collect() }
    }

    /// Whether the deleter's view (the store at revision `view`) held
    /// another incarnation (another uid) under `deleted`'s name.
    fn view_held_another_incarnation(truth: &Truth<'_>, deleted: &Object, view: u64) -> bool {
        matches!(
            truth.store.get(&deleted.key(), Some(view)),
            Ok(Some(seen)) if seen.value.metadata.uid != deleted.metadata.uid
        )
    }

    /// What the deleter believed, in words: the dependent and owner it
    /// saw at revision `view`.
    fn belief(truth: &Truth<'_>, deleted: &Object, view: u64) -> String {
        let behind = truth.store.revision().saturating_sub(view);
        let prefix = format!("in its view (revision {view}, {behind} revisions behind the store)");
        let Ok(Some(seen)) = truth.store.get(&deleted.key(), Some(view)) else {
            return format!("{prefix} there was no such object to judge");
        };
        let seen = seen.value;
        let (mut gone, mut deleting) = (Vec::new(), Vec::new());
        for owner in &seen.metadata.owner_references {
            match owner_at(truth.store, &seen, owner, Some(view)) {
                None => gone.push(describe_owner(owner)),
                Some(o) if o.is_terminating() => deleting.push(describe_owner(owner)),
                Some(_) => {}
            }
        }
        let believed = if !gone.is_empty() {
            format!("it believed owner {} gone", gone.join(", "))
        } else if !deleting.is_empty() {
            format!("its owner there, {}, was being deleted", deleting.join(", "))
        } else {
            "no owner was gone there either".to_owned()
        };
        if seen.metadata.uid == deleted.metadata.uid {
            format!("{prefix} {believed}")
        } else {
            format!(
                "{prefix} {} was still the earlier incarnation (uid {}), and {believed}; the delete carried no uid \
                 precondition, so it took the newer one",
                deleted.key(),
                short_uid(&seen.metadata.uid)
            )
        }
    }
}

impl Observer for DeletedLiveDependent {
    fn committed(&mut self, truth: &Truth<'_>, commit: &Commit<'_>) -> Vec<Finding> {
        let Some(writer) = commit.writer else { return Vec::new() };
        let event = commit.event;
        let was_live = event.prev.as_ref().is_some_and(|p| !p.is_terminating());
        let deleting = event.kind == EventKind::Delete || event.value.is_terminating();
        let Some(dependent) = event.prev.as_ref().filter(|_| was_live && deleting) else { return Vec::new() };
        let live = dependent
            .metadata
            .owner_references
            .iter()
            .find(|o| owner_at(truth.store, dependent, o, None).is_some_and(|owner| !owner.is_terminating()));
        let Some(live) = live else { return Vec::new() };
        // Only a collector judges owners; anyone else is judged only for
        // taking an incarnation its view did not hold.
        let view = view_of(truth, commit.entry);
        if !self.collectors.contains(writer)
            && !view.is_some_and(|view| Self::view_held_another_incarnation(truth, dependent, view))
        {
            return Vec::new();
        }
        let belief = view.map(|view| format!("; {}", Self::belief(truth, dependent, view))).unwrap_or_default();
        let message = format!(
            "{writer} deleted {} (uid {}) while its owner {} existed{belief}",
            dependent.key(),
            short_uid(&dependent.metadata.uid),
            describe_owner(live),
        );
        vec![Finding { check: Check::DeletedLiveDependent, message, causes: vec![commit.entry], component: None }]
    }
}

/// Dependents left naming only owners that are gone, when a collector runs.
pub(super) struct OrphanedDependent {
    /// Whether any component runs the garbage collector.
    pub collectors: bool,
}

impl Observer for OrphanedDependent {
    fn ended(&mut self, truth: &Truth<'_>) -> Vec<Finding> {
        if !self.collectors {
            return Vec::new();
        }
        let everything = truth.store.range("/", None).unwrap_or_default();
        let mut findings = Vec::new();
        for object in everything.iter().map(|kv| &kv.value) {
            let owners = &object.metadata.owner_references;
            if owners.is_empty() || object.is_terminating() {
                continue;
            }
            if owners.iter().any(|o| owner_at(truth.store, object, o, None).is_some()) {
                continue;
            }
            // The writes that removed the owners it names, as the causes.
            let causes: Vec<EntryId> = truth
                .trace
                .entries
                .iter()
                .filter(|e| {
                    matches!(&e.event, Event::StoreWrite { uid, removed: true, .. }
                        if owners.iter().any(|o| o.uid == *uid))
                })
                .map(|e| e.id)
                .collect();
            let names: Vec<String> = owners.iter().map(describe_owner).collect();
            findings.push(Finding {
                check: Check::OrphanedDependent,
                message: format!(
                    "orphaned dependent: {} (uid {}) names only owners that no longer exist ({}) and is still there \
                     at the end of the run; the garbage collector never deleted it",
                    object.key(),
                    short_uid(&object.metadata.uid),
                    names.join(", ")
                ),
                causes,
                component: None,
            });
        }
        findings
    }
}

/// Objects a component creates naming an owner (by uid) that is already
/// gone or being deleted: a create decided on a view that had not seen the
/// owner's deletion. With the owner gone the garbage collector removes the
/// object again, but what the controller did for it outside the cluster,
/// or beyond the reach of owner references, stays.
#[derive(Default)]
pub(super) struct DependentOfDeletedOwner {
    /// The highest revision each component has observed, across restarts.
    observed: BTreeMap<String, u64>,
}

impl DependentOfDeletedOwner {
    /// The write that began the deletion of the owner with `uid` (marked
    /// or removed), with its revision.
    fn deletion_of(truth: &Truth<'_>, uid: &str) -> Option<(EntryId, u64)> {
        truth.trace.entries.iter().find_map(|e| match &e.event {
            Event::StoreWrite { uid: u, revision, removed, terminating, .. }
                if u == uid && (*removed || *terminating) =>
            {
                Some((e.id, *revision))
            }
            _ => None,
        })
    }
}

impl Observer for DependentOfDeletedOwner {
    fn observed(&mut self, _truth: &Truth<'_>, o: &Observation<'_>) -> Vec<Finding> {
        let seen = self.observed.entry(o.name.to_owned()).or_default();
        *seen = (*seen).max(o.revision);
        Vec::new()
    }

    fn committed(&mut self, truth: &Truth<'_>, commit: &Commit<'_>) -> Vec<Finding> {
        let Some(writer) = commit.writer else { return Vec::new() };
        let event = commit.event;
        if event.kind != EventKind::Put || event.prev.is_some() {
            return Vec::new();
        }
        let created = &event.value;
        let mut findings = Vec::new();
        for owner in &created.metadata.owner_references {
            let now = owner_at(truth.store, created, owner, None);
            if now.as_ref().is_some_and(|o| !o.is_terminating()) {
                continue;
            }
            let Some((deletion, deleted_at)) = Self::deletion_of(truth, &owner.uid) else { continue };
            let state = match now {
                Some(_) => format!("which has been being deleted since revision {deleted_at}"),
                None => format!("whose deletion began at revision {deleted_at} and which is gone"),
            };
            let mut message = format!(
                "{writer} created {} (uid {}) naming owner {}, {state}",
                created.key(),
                short_uid(&created.metadata.uid),
                describe_owner(owner),
            );
            if let Some(view) = view_of(truth, commit.entry) {
                let behind = truth.store.revision().saturating_sub(view);
                let live_then = owner_at(truth.store, created, owner, Some(view)).is_some_and(|o| !o.is_terminating());
                let seen = if live_then { "the owner was still live" } else { "the owner was not live either" };
                message += &format!("; in its view (revision {view}, {behind} revisions behind the store) {seen}");
                let had_seen = self.observed.get(writer).copied().unwrap_or(0);
                if view < deleted_at && had_seen >= deleted_at {
                    message += &format!(
                        ", though it had already observed revision {had_seen}, after the deletion: it acted on an \
                         older view than one it had seen"
                    );
                }
            }
            findings.push(Finding {
                check: Check::DependentOfDeletedOwner,
                message,
                causes: vec![commit.entry, deletion],
                component: None,
            });
        }
        findings
    }
}
