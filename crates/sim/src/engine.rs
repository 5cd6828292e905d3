//! The engine: the virtual clock, the queue of scheduled events, the store,
//! the network and the trace. It knows no actor: the simulation
//! ([`crate::Sim`]) pops the next event and hands it to the actor it
//! concerns, and actors schedule, read the store and write the trace
//! through it.

use std::sync::Arc;

use recon_abi::Object;
use recon_store::Store;
use recon_trace::{EntryId, Event, Interner, Key, LaneId, Name, Trace};

use crate::ids::ComponentId;
use crate::lanes::Lanes;
use crate::message::{Client, Scheduled, client_component};
use crate::network::Network;
use crate::queue::Queue;

/// Everything actors share: time, the queue, the store, the network, the trace.
pub(crate) struct Engine {
    /// Virtual time in milliseconds.
    pub now: u64,
    /// What is scheduled, earliest first.
    queue: Queue<Scheduled>,
    /// The store (etcd).
    pub store: Store,
    /// The trace entry and names of the store write at each revision.
    pub store_writes: StoreWrites,
    /// Latency between endpoints.
    pub network: Network,
    /// What happened so far.
    pub trace: Trace,
    /// The trace lane of each place.
    pub lanes: Lanes,
    /// Inputs and actions listed by reconcile entries: they count toward
    /// the trace limit too, so a controller returning thousands of actions
    /// a call reaches it as surely as one making thousands of calls.
    pub listed_items: u64,
    /// One shared copy of each name and object key the trace repeats.
    pub names: Interner,
}

impl Engine {
    /// An engine at time 0 with an empty queue and store.
    pub fn new(network: Network, trace: Trace, lanes: Lanes) -> Engine {
        Engine {
            now: 0,
            queue: Queue::default(),
            store: Store::new(),
            store_writes: StoreWrites::default(),
            network,
            trace,
            lanes,
            listed_items: 0,
            names: Interner::new(),
        }
    }

    /// Schedules `what` at virtual time `time`.
    pub fn schedule(&mut self, time: u64, what: Scheduled) {
        self.queue.push(time, what);
    }

    /// When the next scheduled event is due, if any.
    pub fn next_due(&self) -> Option<u64> {
        self.queue.next_due()
    }

    /// Takes the next scheduled event and moves the clock to it.
    pub fn pop(&mut self) -> Option<Scheduled> {
        let (time, what) = self.queue.pop()?;
        self.now = time;
        Some(what)
    }

    /// The next scheduled event, without taking it.
    pub fn peek(&self) -> Option<&Scheduled> {
        self.queue.peek()
    }

    /// Takes every event due at `time`, in the order they would be popped
    /// (for a choice among them; [`Engine::put_back`] returns the rest).
    pub fn take_due_at(&mut self, time: u64) -> Vec<Scheduled> {
        self.queue.take_due_at(time)
    }

    /// Everything scheduled, in the order it will be handled.
    pub fn queued(&self) -> Vec<(u64, &Scheduled)> {
        self.queue.iter().collect()
    }

    /// Returns events taken with [`Engine::take_due_at`] at `time`, each to
    /// its old place.
    pub fn put_back(&mut self, time: u64, due: Vec<Scheduled>) {
        self.queue.put_back(time, due);
    }

    /// Writes an entry on `lane` now; returns its id.
    pub fn record(&mut self, lane: LaneId, event: Event, causes: Vec<EntryId>) -> EntryId {
        self.trace.push(self.now, lane, event, causes)
    }

    /// A component's name, as the scenario spells it (its lane's name).
    pub fn component_name(&self, component: ComponentId) -> &str {
        &self.trace.lane(self.lanes.component(component)).name
    }

    /// A component's name as the trace's shared copy.
    pub fn shared_component_name(&mut self, component: ComponentId) -> Name {
        self.names.name(&self.trace.lane(self.lanes.component(component)).name)
    }

    /// Who a client is, in words: its component, or `kubectl`.
    pub fn client_name(&mut self, client: &Client) -> Name {
        match client_component(client) {
            Some(c) => self.shared_component_name(c),
            None => self.names.name("kubectl"),
        }
    }

    /// The trace's shared copy of `s` (a name, a uid), for an entry.
    pub fn name(&mut self, s: &str) -> Name {
        self.names.name(s)
    }

    /// The trace's shared copy of `object`'s key, for an entry.
    pub fn key(&mut self, object: &Object) -> Key {
        self.names.object_key(object)
    }

    /// The shared key and uid of `object` as its store write recorded them,
    /// if `object` is the very version the store event at `revision`
    /// carries (the same allocation: a watch event shares it), so that
    /// nothing needs comparing.
    pub fn stored_names(&self, revision: u64, object: &Arc<Object>) -> Option<(&Key, &Name)> {
        let event = self.store.event(revision)?;
        let names = Arc::ptr_eq(&event.value, object).then(|| self.store_writes.names(revision)).flatten();
        debug_assert!(
            names.is_none_or(|(key, uid)| **key == object.key() && **uid == *object.metadata.uid),
            "the names recorded for revision {revision} are another object's"
        );
        names
    }
}

/// What the trace recorded of each store write, by revision: its entry,
/// and the shared names of the object written. Revisions are dense from 1,
/// so this is a table, not a map.
///
/// The names are there so that the cache feed and each watch delivery of
/// that version reuse them rather than look them up again in the
/// interner: at Kubernetes' published limits those lookups, each a few
/// cache misses in a table of every key, were 6 % of a run.
#[derive(Default)]
pub(crate) struct StoreWrites {
    /// Index: revision − 1.
    by_revision: Vec<Option<StoreWrite>>,
}

/// One store write as the trace recorded it.
struct StoreWrite {
    entry: EntryId,
    /// The key of the object the store event carries (after generateName).
    key: Key,
    uid: Name,
}

impl StoreWrites {
    /// Records the write at `revision`: its entry, and the shared key and
    /// uid of the object the store event at that revision carries.
    pub fn insert(&mut self, revision: u64, entry: EntryId, key: Key, uid: Name) {
        let Some(index) = (revision as usize).checked_sub(1) else { return };
        if self.by_revision.len() <= index {
            self.by_revision.resize_with(index + 1, || None);
        }
        self.by_revision[index] = Some(StoreWrite { entry, key, uid });
    }

    fn get(&self, revision: u64) -> Option<&StoreWrite> {
        self.by_revision.get((revision as usize).checked_sub(1)?)?.as_ref()
    }

    /// The trace entry of the write at `revision`.
    pub fn entry(&self, revision: u64) -> Option<EntryId> {
        self.get(revision).map(|w| w.entry)
    }

    /// The trace entry of the last write at or before `revision`.
    pub fn entry_at_or_before(&self, revision: u64) -> Option<EntryId> {
        let end = (revision as usize).min(self.by_revision.len());
        self.by_revision[..end].iter().rev().find_map(|w| w.as_ref().map(|w| w.entry))
    }

    /// The shared key and uid of the object the store event at `revision`
    /// carries.
    pub fn names(&self, revision: u64) -> Option<(&Key, &Name)> {
        self.get(revision).map(|w| (&w.key, &w.uid))
    }
}

#[cfg(test)]
mod tests {
    use super::StoreWrites;
    use recon_trace::Interner;

    /// Writes are found by their revision; a read of the store at a
    /// revision without a recorded write is caused by the last write
    /// before it.
    #[test]
    fn store_writes_are_found_by_revision_and_the_last_at_or_before_one() {
        let mut names = Interner::new();
        let mut writes = StoreWrites::default();
        let (key, uid) = (names.key_of("Pod", "default", "a"), names.name("u-1"));
        writes.insert(2, 20, key.clone(), uid.clone());
        writes.insert(5, 50, key, uid);
        assert_eq!((writes.entry(1), writes.entry(2), writes.entry(3), writes.entry(6)), (None, Some(20), None, None));
        assert_eq!(writes.entry_at_or_before(1), None);
        assert_eq!(writes.entry_at_or_before(4), Some(20));
        assert_eq!(writes.entry_at_or_before(5), Some(50));
        assert_eq!(writes.entry_at_or_before(99), Some(50));
        let (key, uid) = writes.names(5).expect("recorded");
        assert_eq!((key.name.as_str(), &**uid), ("a", "u-1"));
        assert!(writes.names(4).is_none());
        writes.insert(0, 1, names.key_of("Pod", "default", "b"), names.name("u-2"));
        assert_eq!(writes.entry_at_or_before(1), None, "there is no revision 0");
    }

    /// What the queue holds per event: most events are small (cache
    /// feeds, wakes), so their size, not a request's, is what a large
    /// run's queue costs.
    #[test]
    fn a_queued_event_is_a_few_words() {
        let size = std::mem::size_of::<crate::message::Scheduled>();
        assert!(size <= 64, "Scheduled is {size} bytes: box the large variant's payload");
    }
}
