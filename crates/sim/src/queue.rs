//! The queue of scheduled events: earliest time first, and at one time in
//! the order they were scheduled.
//!
//! A large run has a few hundred thousand events waiting but only a few
//! hundred distinct times among them: a write fans out to every watch
//! cache and watcher at once, and a network latency is whole
//! milliseconds. So events wait in one bucket per time, and taking the
//! next is a step to the first bucket and its front, where a heap of every
//! event moved each through all the others' levels. An event is held
//! inline (a `Scheduled` is a few words; its large variants box their
//! payload), and its time only once, as its bucket's.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, VecDeque};

/// Scheduled events by due time. Never holds an empty bucket.
pub(crate) struct Queue<T> {
    buckets: BTreeMap<u64, VecDeque<T>>,
    /// Emptied buckets, kept so that a new time reuses one's allocation.
    spare: Vec<VecDeque<T>>,
}

impl<T> Default for Queue<T> {
    fn default() -> Self {
        Queue { buckets: BTreeMap::new(), spare: Vec::new() }
    }
}

/// How many emptied buckets are kept for reuse.
const SPARE_BUCKETS: usize = 16;

/// The largest emptied bucket kept, in events: the burst that filled a
/// bigger one (a write to every pod at once) is rare, and its memory is
/// better given back.
const SPARE_CAPACITY: usize = 256;

impl<T> Queue<T> {
    /// Schedules `what` at `time`, after everything already scheduled then.
    pub fn push(&mut self, time: u64, what: T) {
        match self.buckets.entry(time) {
            Entry::Occupied(bucket) => bucket.into_mut().push_back(what),
            Entry::Vacant(slot) => {
                let mut bucket = self.spare.pop().unwrap_or_default();
                bucket.push_back(what);
                slot.insert(bucket);
            }
        }
    }

    /// When the next event is due, if any.
    pub fn next_due(&self) -> Option<u64> {
        self.buckets.first_key_value().map(|(&time, _)| time)
    }

    /// The next event, without taking it.
    pub fn peek(&self) -> Option<&T> {
        self.buckets.first_key_value().and_then(|(_, bucket)| bucket.front())
    }

    /// Takes the next event, with its time.
    pub fn pop(&mut self) -> Option<(u64, T)> {
        let mut first = self.buckets.first_entry()?;
        let what = first.get_mut().pop_front().expect("a bucket is never empty");
        let time = *first.key();
        if first.get().is_empty() {
            let bucket = first.remove();
            if self.spare.len() < SPARE_BUCKETS && bucket.capacity() <= SPARE_CAPACITY {
                self.spare.push(bucket);
            }
        }
        Some((time, what))
    }

    /// Takes every event due at `time`, in the order they would be popped.
    pub fn take_due_at(&mut self, time: u64) -> Vec<T> {
        self.buckets.remove(&time).map(Vec::from).unwrap_or_default()
    }

    /// Returns events taken with [`Queue::take_due_at`] at `time`, in the
    /// order they were taken, to their old places: ahead of anything
    /// scheduled at `time` since, which was scheduled after them.
    pub fn put_back(&mut self, time: u64, taken: Vec<T>) {
        let bucket = self.buckets.entry(time).or_default();
        for what in taken.into_iter().rev() {
            bucket.push_front(what);
        }
        if bucket.is_empty() {
            self.buckets.remove(&time);
        }
    }

    /// Every event with its time, in the order they will be popped.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &T)> {
        self.buckets.iter().flat_map(|(&time, bucket)| bucket.iter().map(move |what| (time, what)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(queue: &mut Queue<u32>) -> Vec<(u64, u32)> {
        std::iter::from_fn(|| queue.pop()).collect()
    }

    /// The order the simulation depends on: earliest first, and events at
    /// one time in the order they were scheduled, including those
    /// scheduled at a time while it is being popped.
    #[test]
    fn events_pop_by_time_then_in_the_order_they_were_scheduled() {
        let mut queue = Queue::default();
        for (time, what) in [(5, 1), (3, 2), (5, 3), (0, 4), (3, 5), (5, 6)] {
            queue.push(time, what);
        }
        assert_eq!(queue.next_due(), Some(0));
        assert_eq!(queue.peek(), Some(&4));
        assert_eq!(
            queue.iter().map(|(t, &w)| (t, w)).collect::<Vec<_>>(),
            [(0, 4), (3, 2), (3, 5), (5, 1), (5, 3), (5, 6)]
        );
        assert_eq!(queue.pop(), Some((0, 4)));
        assert_eq!(queue.pop(), Some((3, 2)));
        // Scheduled now, while time 3 still has an event waiting: after it.
        queue.push(3, 7);
        queue.push(4, 8);
        assert_eq!(drain(&mut queue), [(3, 5), (3, 7), (4, 8), (5, 1), (5, 3), (5, 6)]);
        assert_eq!(queue.pop(), None);
        assert_eq!(queue.next_due(), None);
    }

    /// A choice among the events due at one time takes them all and puts
    /// back the rest: they keep their places, also against events
    /// scheduled at that time in between.
    #[test]
    fn events_put_back_keep_their_places() {
        let mut queue = Queue::default();
        for what in 1..=4 {
            queue.push(2, what);
        }
        queue.push(9, 10);
        let mut due = queue.take_due_at(2);
        assert_eq!(due, [1, 2, 3, 4]);
        assert_eq!(due.remove(2), 3);
        queue.push(2, 5);
        queue.put_back(2, due);
        assert_eq!(drain(&mut queue), [(2, 1), (2, 2), (2, 4), (2, 5), (9, 10)]);
        assert!(queue.take_due_at(2).is_empty());
        queue.put_back(2, Vec::new());
        assert_eq!(queue.next_due(), None, "putting back nothing leaves no empty bucket");
    }

    /// The same order as sorting every event by (time, order scheduled),
    /// over many pushes and pops interleaved, as the heap the queue
    /// replaced gave.
    #[test]
    fn the_order_is_that_of_time_then_sequence() {
        let mut queue = Queue::default();
        let mut model: Vec<(u64, u32)> = Vec::new();
        let (mut now, mut seq, mut x) = (0u64, 0u32, 12345u64);
        for _ in 0..5_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            if x >> 62 != 0 {
                let time = now + (x >> 33) % 7;
                seq += 1;
                queue.push(time, seq);
                model.push((time, seq));
            } else if let Some(popped) = queue.pop() {
                model.sort();
                assert_eq!(popped, model.remove(0));
                now = popped.0;
            }
        }
    }
}
