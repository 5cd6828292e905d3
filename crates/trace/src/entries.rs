//! [`Entries`]: the trace's entries, kept in fixed-size chunks.
//!
//! A run at Kubernetes' published limits writes about nine million
//! entries. In one `Vec`, each time it grew the old and the new buffer
//! were both live while one was copied into the other: at that size about
//! 1.3 GB held twice for a moment, and the copy itself. In chunks of
//! [`CHUNK`] entries nothing already written ever moves, and the most that
//! is ever held spare is one chunk. A small trace keeps one chunk that
//! grows as a `Vec` does, so it costs no more than before.

use std::ops::{Bound, Index, IndexMut, RangeBounds};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::Entry;

/// Entries per chunk: a power of two, so finding an entry is a shift and
/// a mask. 65,536 entries of about 160 bytes is about 10 MB.
pub const CHUNK: usize = 1 << 16;

/// The trace's entries in the order they happened, indexed like a slice
/// (`entries[i]`), never moved once written.
#[derive(Clone, Debug, Default)]
pub struct Entries {
    /// Every chunk but the last holds exactly [`CHUNK`] entries.
    chunks: Vec<Vec<Entry>>,
    len: usize,
}

impl Entries {
    /// No entries.
    pub const fn new() -> Self {
        Entries { chunks: Vec::new(), len: 0 }
    }

    /// How many entries there are.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds one at the end.
    pub fn push(&mut self, entry: Entry) {
        match self.chunks.last_mut() {
            Some(chunk) if chunk.len() < CHUNK => chunk.push(entry),
            _ => {
                // The first chunk grows as a Vec does (a short trace stays
                // small); later ones are made whole, once.
                let mut chunk = if self.chunks.is_empty() { Vec::new() } else { Vec::with_capacity(CHUNK) };
                chunk.push(entry);
                self.chunks.push(chunk);
            }
        }
        self.len += 1;
    }

    /// The entry at `index`, if there is one.
    pub fn get(&self, index: usize) -> Option<&Entry> {
        self.chunks.get(index / CHUNK)?.get(index % CHUNK)
    }

    /// The entry at `index`, to change, if there is one.
    pub fn get_mut(&mut self, index: usize) -> Option<&mut Entry> {
        self.chunks.get_mut(index / CHUNK)?.get_mut(index % CHUNK)
    }

    /// The first entry, if any.
    pub fn first(&self) -> Option<&Entry> {
        self.chunks.first()?.first()
    }

    /// The last entry, if any.
    pub fn last(&self) -> Option<&Entry> {
        self.chunks.last()?.last()
    }

    /// Every entry, in order (and in reverse: the iterator is double-ended).
    pub fn iter(&self) -> Iter<'_> {
        self.range(..)
    }

    /// The entries whose positions are in `range`, as `&entries[range]`
    /// would be for a slice; panics like it when the range is out of bounds.
    pub fn range(&self, range: impl RangeBounds<usize>) -> Iter<'_> {
        let start = match range.start_bound() {
            Bound::Included(&s) => s,
            Bound::Excluded(&s) => s + 1,
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(&e) => e + 1,
            Bound::Excluded(&e) => e,
            Bound::Unbounded => self.len,
        };
        assert!(start <= end && end <= self.len, "range {start}..{end} out of bounds for {} entries", self.len);
        Iter { entries: self, front: start, back: end }
    }

    /// Every entry, in order, to change.
    pub fn iter_mut(&mut self) -> std::iter::Flatten<std::slice::IterMut<'_, Vec<Entry>>> {
        self.chunks.iter_mut().flatten()
    }
}

impl Index<usize> for Entries {
    type Output = Entry;

    fn index(&self, index: usize) -> &Entry {
        match self.get(index) {
            Some(entry) => entry,
            None => panic!("entry {index} out of bounds for {} entries", self.len),
        }
    }
}

impl IndexMut<usize> for Entries {
    fn index_mut(&mut self, index: usize) -> &mut Entry {
        let len = self.len;
        match self.get_mut(index) {
            Some(entry) => entry,
            None => panic!("entry {index} out of bounds for {len} entries"),
        }
    }
}

/// Entries in order, from [`Entries::iter`] or [`Entries::range`]:
/// double-ended, of known length, and skipping ahead (`nth`, `skip`) is a
/// jump, not a walk.
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    entries: &'a Entries,
    front: usize,
    back: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a Entry;

    fn next(&mut self) -> Option<&'a Entry> {
        if self.front == self.back {
            return None;
        }
        self.front += 1;
        Some(&self.entries[self.front - 1])
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.back - self.front, Some(self.back - self.front))
    }

    fn nth(&mut self, n: usize) -> Option<&'a Entry> {
        self.front = self.front.saturating_add(n).min(self.back);
        self.next()
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.front == self.back {
            return None;
        }
        self.back -= 1;
        Some(&self.entries[self.back])
    }

    fn nth_back(&mut self, n: usize) -> Option<Self::Item> {
        self.back = self.back.saturating_sub(n).max(self.front);
        self.next_back()
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl std::iter::FusedIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a Entries {
    type Item = &'a Entry;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl<'a> IntoIterator for &'a mut Entries {
    type Item = &'a mut Entry;
    type IntoIter = std::iter::Flatten<std::slice::IterMut<'a, Vec<Entry>>>;

    fn into_iter(self) -> Self::IntoIter {
        self.chunks.iter_mut().flatten()
    }
}

impl IntoIterator for Entries {
    type Item = Entry;
    type IntoIter = std::iter::Flatten<std::vec::IntoIter<Vec<Entry>>>;

    fn into_iter(self) -> Self::IntoIter {
        self.chunks.into_iter().flatten()
    }
}

impl FromIterator<Entry> for Entries {
    fn from_iter<I: IntoIterator<Item = Entry>>(iter: I) -> Self {
        let mut entries = Entries::new();
        entries.extend(iter);
        entries
    }
}

impl Extend<Entry> for Entries {
    fn extend<I: IntoIterator<Item = Entry>>(&mut self, iter: I) {
        for entry in iter {
            self.push(entry);
        }
    }
}

impl From<Vec<Entry>> for Entries {
    fn from(entries: Vec<Entry>) -> Self {
        entries.into_iter().collect()
    }
}

/// Encoded as the JSON array a `Vec<Entry>` was: the trace's encoding and
/// its hash do not depend on how the entries are held.
impl Serialize for Entries {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Entries;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of trace entries")
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Entries, A::Error> {
                let mut entries = Entries::new();
                while let Some(entry) = seq.next_element()? {
                    entries.push(entry);
                }
                Ok(entries)
            }
        }
        deserializer.deserialize_seq(Visit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Event;

    fn entry(id: usize) -> Entry {
        Entry {
            id: id as u64,
            time_ms: id as u64,
            lane: crate::LaneId::from_index(0),
            event: Event::Halted { reason: format!("{id}") },
            causes: Vec::new().into(),
        }
    }

    /// Across chunk boundaries every way of reading gives the entries a
    /// `Vec` would, in the same order, and the same JSON.
    #[test]
    fn chunks_read_as_one_list() {
        let n = 2 * CHUNK + 3;
        let entries: Entries = (0..n).map(entry).collect();
        assert_eq!(entries.len(), n);
        assert_eq!(entries.chunks.len(), 3, "two full chunks and a third");
        assert!(entries.chunks[1].capacity() == CHUNK, "later chunks are made whole");
        let ids = |it: &mut dyn Iterator<Item = &Entry>| it.map(|e| e.id as usize).collect::<Vec<_>>();
        assert_eq!(ids(&mut entries.iter()), (0..n).collect::<Vec<_>>());
        assert_eq!(ids(&mut entries.iter().rev()), (0..n).rev().collect::<Vec<_>>());
        assert_eq!(ids(&mut entries.range(CHUNK - 2..CHUNK + 2)), (CHUNK - 2..CHUNK + 2).collect::<Vec<_>>());
        assert_eq!(ids(&mut entries.range(..=1)), vec![0, 1]);
        assert_eq!(entries.range(5..n - 5).len(), n - 10);
        assert_eq!(entries.iter().nth(CHUNK + 1).map(|e| e.id), Some(CHUNK as u64 + 1));
        assert_eq!(entries.iter().nth_back(1).map(|e| e.id), Some(n as u64 - 2));
        assert_eq!(entries.iter().nth(n).map(|e| e.id), None);
        assert_eq!(entries[CHUNK].id, CHUNK as u64);
        assert_eq!(entries.get(n).map(|e| e.id), None);
        assert_eq!(entries.last().map(|e| e.id), Some(n as u64 - 1));
        let as_vec: Vec<Entry> = entries.clone().into_iter().collect();
        let json = serde_json::to_string(&entries).unwrap();
        assert_eq!(json, serde_json::to_string(&as_vec).unwrap());
        let back: Entries = serde_json::from_str(&json).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), json);
    }

    #[test]
    #[should_panic(expected = "out of bounds")]
    fn a_range_past_the_end_panics() {
        let entries: Entries = (0..3).map(entry).collect();
        entries.range(1..4);
    }
}
