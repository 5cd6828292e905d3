//! [`NameMap`]: values by a string, iterated in string order, found by
//! hashing.
//!
//! The simulator's tables are keyed by names (an object's name, a store
//! key, a node's name) and read in name order, so they were `BTreeMap`s.
//! A search of a tree of 150,000 pod names compares a dozen or more of
//! them, each behind a pointer of its own and most sharing a long prefix
//! (`app-17-5d8f7c9b6-…`): string comparison was the largest single cost
//! of a run at Kubernetes' published limits. A `NameMap` keeps the tree
//! for the order and adds a hash table beside it, so a lookup, which is
//! what nearly every event does, takes one probe and compares one name;
//! only adding and removing a name walk the tree.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::ops::{Bound, Index};
use std::sync::Arc;

use rustc_hash::FxBuildHasher;

/// Values by name: iterated in name (byte) order like a
/// `BTreeMap<String, V>`, and looked up in one hash probe.
///
/// The hash table is never iterated, so the order anything is seen in
/// never depends on the hasher; its hasher has no random seed, so neither
/// does the time a run takes.
#[derive(Clone)]
pub struct NameMap<V> {
    /// Each name's slot in `values`, in name order.
    order: BTreeMap<Arc<str>, u32>,
    /// Each name's slot, by hash (the same names as `order`, shared).
    slots: HashMap<Arc<str>, u32, FxBuildHasher>,
    /// The values by slot; `None` where one was removed.
    values: Vec<Option<V>>,
    /// Slots a removal emptied, the last one reused first.
    free: Vec<u32>,
}

impl<V> Default for NameMap<V> {
    fn default() -> Self {
        NameMap { order: BTreeMap::new(), slots: HashMap::default(), values: Vec::new(), free: Vec::new() }
    }
}

impl<V> NameMap<V> {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value under `name`.
    pub fn get(&self, name: &str) -> Option<&V> {
        self.values[*self.slots.get(name)? as usize].as_ref()
    }

    /// The value under `name`, to change in place.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut V> {
        self.values[*self.slots.get(name)? as usize].as_mut()
    }

    /// Whether there is a value under `name`.
    pub fn contains_key(&self, name: &str) -> bool {
        self.slots.contains_key(name)
    }

    /// Sets the value under `name`, returning the one it replaces. The
    /// name is copied only when it is new to the map.
    pub fn insert(&mut self, name: &str, value: V) -> Option<V> {
        match self.slots.get(name) {
            Some(&slot) => self.values[slot as usize].replace(value),
            None => {
                self.add(name, value);
                None
            }
        }
    }

    /// The value under `name`, made with `make` first if there is none.
    pub fn get_or_insert_with(&mut self, name: &str, make: impl FnOnce() -> V) -> &mut V {
        let slot = match self.slots.get(name) {
            Some(&slot) => slot,
            None => self.add(name, make()),
        };
        self.values[slot as usize].as_mut().expect("a slot named in the table holds a value")
    }

    /// Adds a name that is not in the map; returns its slot.
    fn add(&mut self, name: &str, value: V) -> u32 {
        let slot = match self.free.pop() {
            Some(slot) => {
                self.values[slot as usize] = Some(value);
                slot
            }
            None => {
                self.values.push(Some(value));
                u32::try_from(self.values.len() - 1).expect("a map holds fewer than 2^32 names")
            }
        };
        let name: Arc<str> = Arc::from(name);
        self.order.insert(Arc::clone(&name), slot);
        self.slots.insert(name, slot);
        slot
    }

    /// Removes and returns the value under `name`.
    pub fn remove(&mut self, name: &str) -> Option<V> {
        let slot = self.slots.remove(name)?;
        self.order.remove(name);
        self.free.push(slot);
        self.values[slot as usize].take()
    }

    /// Removes every value.
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// How many values it holds.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Every name and value, in name order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&str, &V)> {
        self.order.iter().map(|(name, &slot)| (&**name, self.value(slot)))
    }

    /// Every value, in name order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &V> {
        self.order.values().map(|&slot| self.value(slot))
    }

    /// The names at or after `start`, in name order, with their values
    /// (`.take_while(|(name, _)| name.starts_with(prefix))` after it
    /// lists a prefix).
    pub fn range_from<'a>(&'a self, start: &str) -> impl Iterator<Item = (&'a str, &'a V)> {
        self.order
            .range::<str, _>((Bound::Included(start), Bound::Unbounded))
            .map(|(name, &slot)| (&**name, self.value(slot)))
    }

    fn value(&self, slot: u32) -> &V {
        self.values[slot as usize].as_ref().expect("a slot named in the tree holds a value")
    }
}

impl<V> Index<&str> for NameMap<V> {
    type Output = V;

    /// The value under `name`; panics if there is none, as `BTreeMap` does.
    fn index(&self, name: &str) -> &V {
        self.get(name).unwrap_or_else(|| panic!("no value under {name:?}"))
    }
}

impl<V> IntoIterator for NameMap<V> {
    type Item = (String, V);
    type IntoIter = std::vec::IntoIter<(String, V)>;

    /// Every name and value, in name order, taken.
    fn into_iter(mut self) -> Self::IntoIter {
        let values = &mut self.values;
        let taken: Vec<(String, V)> = self
            .order
            .iter()
            .map(|(name, &slot)| {
                let value = values[slot as usize].take().expect("a slot named in the tree holds a value");
                (name.to_string(), value)
            })
            .collect();
        taken.into_iter()
    }
}

impl<S: AsRef<str>, V> FromIterator<(S, V)> for NameMap<V> {
    /// Like a `BTreeMap`: a name given twice keeps its last value.
    fn from_iter<I: IntoIterator<Item = (S, V)>>(iter: I) -> Self {
        let mut map = NameMap::new();
        for (name, value) in iter {
            map.insert(name.as_ref(), value);
        }
        map
    }
}

impl<V: fmt::Debug> fmt::Debug for NameMap<V> {
    /// In name order, as the `BTreeMap` it stands for prints.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same operations on a `NameMap` and a `BTreeMap` give the same
    /// answers and the same order, through removals that free slots and
    /// insertions that reuse them.
    #[test]
    fn it_answers_and_iterates_as_a_btree_map_does() {
        let mut map = NameMap::new();
        let mut model = BTreeMap::new();
        // A fixed pseudo-random walk over a few names with a shared prefix.
        let mut x: u64 = 7;
        for step in 0..4_000u64 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let name = format!("app-1-5d8f7c-{:02}", (x >> 33) % 40);
            match (x >> 20) % 4 {
                0 | 1 => assert_eq!(map.insert(&name, step), model.insert(name.clone(), step)),
                2 => assert_eq!(map.remove(&name), model.remove(&name)),
                _ => {
                    let made = *map.get_or_insert_with(&name, || step);
                    assert_eq!(made, *model.entry(name.clone()).or_insert(step));
                }
            }
            assert_eq!(map.get(&name), model.get(&name));
            assert_eq!(map.contains_key(&name), model.contains_key(&name));
            assert_eq!(map.len(), model.len());
        }
        let pairs = |m: &NameMap<u64>| m.iter().map(|(k, v)| (k.to_owned(), *v)).collect::<Vec<_>>();
        let expected: Vec<(String, u64)> = model.iter().map(|(k, v)| (k.clone(), *v)).collect();
        assert_eq!(pairs(&map), expected);
        assert_eq!(map.values().rev().copied().collect::<Vec<_>>(), model.values().rev().copied().collect::<Vec<_>>());
        assert!(map.values.len() <= 40, "removed slots are reused: {} slots for 40 names", map.values.len());
        let from: Vec<&str> = map.range_from("app-1-5d8f7c-2").map(|(k, _)| k).collect();
        let model_from: Vec<&str> = model
            .range::<str, _>((Bound::Included("app-1-5d8f7c-2"), Bound::Unbounded))
            .map(|(k, _)| k.as_str())
            .collect();
        assert_eq!(from, model_from);
        let rebuilt: NameMap<u64> = map.clone().into_iter().collect();
        assert_eq!(pairs(&rebuilt), expected);
        assert_eq!(format!("{map:?}"), format!("{model:?}"));
        map.clear();
        assert!(map.is_empty() && map.get("app-1-5d8f7c-01").is_none());
    }

    #[test]
    fn get_mut_changes_the_value_iteration_sees() {
        let mut map: NameMap<Vec<u32>> = ["b", "a"].into_iter().map(|n| (n, Vec::new())).collect();
        map.get_mut("b").expect("b is in the map").push(1);
        map.get_or_insert_with("a", Vec::new).push(2);
        assert_eq!(map.iter().collect::<Vec<_>>(), vec![("a", &vec![2]), ("b", &vec![1])]);
        assert_eq!(map.get_mut("c"), None);
        assert_eq!(map["b"], vec![1]);
    }
}
