//! The waits of the staleness mitigations, paired from their `SyncHeld`
//! reports: one definition of when a wait began and how it ended, which
//! the explanations, the Perfetto export and the playground's timeline all
//! draw on, so the three never disagree.
//!
//! A framework reports a wait when it begins and when the reconcile goes
//! ahead (`HeldSync::released`). A wait also ends, unreleased, when its
//! instance crashes or restarts: a new instance has no memory of it.

use recon_abi::HeldSync;

use crate::{Entry, EntryId, Event, Trace};

/// How a wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitEnd {
    /// The reconcile went ahead: the report of the release.
    Released(EntryId),
    /// Its instance crashed or restarted first: the crash or the start.
    Ended(EntryId),
    /// Still held when the trace ends.
    Open,
}

/// One wait: a component held an object's reconcile until its informer
/// observed a write the component had made itself.
#[derive(Clone, Copy, Debug)]
pub struct Wait<'t> {
    /// The component that held it.
    pub component: &'t str,
    /// The report that it began (its release, if that is the only one).
    pub began: &'t Entry,
    /// The last report of it: the release, if it was released.
    pub last: &'t Entry,
    /// How it ended.
    pub end: WaitEnd,
}

impl<'t> Wait<'t> {
    /// The wait as last reported.
    pub fn held(&self) -> &'t HeldSync {
        match &self.last.event {
            Event::SyncHeld { held, .. } => held,
            _ => unreachable!("a wait is built from SyncHeld entries"),
        }
    }

    /// When it began (virtual ms).
    pub fn from_ms(&self) -> u64 {
        self.held().since_ms
    }

    /// The entry that ended it, if it ended.
    pub fn ended_by(&self) -> Option<EntryId> {
        match self.end {
            WaitEnd::Released(id) | WaitEnd::Ended(id) => Some(id),
            WaitEnd::Open => None,
        }
    }

    /// Whether it was held at entry `at`: begun before it, ended at or
    /// after it.
    pub fn held_at(&self, at: EntryId) -> bool {
        self.began.id < at && self.ended_by().is_none_or(|end| end >= at)
    }
}

/// Every wait in `trace`, in the order they began. A wait is one
/// component's, for one mitigation and one object.
pub fn waits(trace: &Trace) -> Vec<Wait<'_>> {
    type Key<'t> = (&'t str, recon_abi::Mitigation, &'t recon_abi::ObjectKey);
    let mut open: std::collections::BTreeMap<Key<'_>, &Entry> = std::collections::BTreeMap::new();
    let mut waits = Vec::new();
    for entry in &trace.entries {
        match &entry.event {
            Event::SyncHeld { component, held } => {
                let key = (component.as_str(), held.mitigation, &held.object);
                if held.released {
                    let began = open.remove(&key).unwrap_or(entry);
                    waits.push(Wait { component, began, last: entry, end: WaitEnd::Released(entry.id) });
                } else {
                    open.entry(key).or_insert(entry);
                }
            }
            Event::ComponentStarted { component, .. } | Event::ComponentCrashed { component, .. } => {
                let ended: Vec<Key<'_>> = open.keys().filter(|(c, _, _)| c == component).copied().collect();
                for key in ended {
                    let began = open.remove(&key).expect("listed from the map");
                    waits.push(Wait { component: key.0, began, last: began, end: WaitEnd::Ended(entry.id) });
                }
            }
            _ => {}
        }
    }
    waits.extend(open.into_iter().map(|((component, _, _), began)| Wait {
        component,
        began,
        last: began,
        end: WaitEnd::Open,
    }));
    waits.sort_by_key(|w| w.began.id);
    waits
}

#[cfg(test)]
mod tests {
    use recon_abi::{Mitigation, ObjectKey};

    use super::*;

    fn held(component: &str, object: &str, since_ms: u64, released: bool) -> Event {
        Event::SyncHeld {
            component: component.into(),
            held: Box::new(HeldSync {
                mitigation: Mitigation::StaleControllerConsistency,
                object: ObjectKey::new("ReplicaSet", "default", object),
                kind: "Pod".into(),
                resource_version: 7,
                seen: 5,
                since_ms,
                skips: 0,
                released,
            }),
        }
    }

    /// A trace of `events`, 100 ms apart.
    fn trace(events: Vec<Event>) -> Trace {
        crate::explain::tests::trace(events.into_iter().enumerate().map(|(i, e)| (i as u64 * 100, e, vec![])).collect())
    }

    #[test]
    fn a_wait_ends_at_its_release_or_at_its_instances_crash_or_restart_or_not_at_all() {
        let trace = trace(vec![
            held("rs", "web", 100, false),
            held("rs", "db", 110, false),
            held("rs", "web", 100, true),
            Event::ComponentCrashed { component: "rs".into(), reason: "trap".into() },
            held("other", "web", 300, false),
            // Released in the call that held it: its one report begins it.
            held("other", "db", 500, true),
        ]);
        let waits = waits(&trace);
        let ends: Vec<(&str, &str, u64, WaitEnd)> =
            waits.iter().map(|w| (w.component, w.held().object.name.as_str(), w.from_ms(), w.end)).collect();
        assert_eq!(
            ends,
            [
                ("rs", "web", 100, WaitEnd::Released(2)),
                ("rs", "db", 110, WaitEnd::Ended(3)),
                ("other", "web", 300, WaitEnd::Open),
                ("other", "db", 500, WaitEnd::Released(5)),
            ]
        );
        assert_eq!((waits[0].began.id, waits[0].last.id), (0, 2));
        assert!(waits[1].held_at(3) && !waits[1].held_at(4) && !waits[1].held_at(1));
        assert!(waits[2].held_at(6));
    }
}
