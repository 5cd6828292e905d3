//! Secondary indexes over a cache: the keys of the objects that share a value.

use std::collections::{BTreeMap, BTreeSet};

use recon_abi::{KeyMap, Object, ObjectKey};

/// Maps a value computed from each object (its owner's uid, its node) to the
/// keys of the objects that have it, kept current from [`crate::Change`]s.
///
/// Like client-go's indexers, this lets a reconcile find "the pods of this
/// ReplicaSet" without scanning every pod, which is what keeps a controller's
/// work proportional to what changed.
#[derive(Clone, Debug)]
pub struct Index {
    extract: fn(&Object) -> Option<String>,
    members: BTreeMap<String, BTreeSet<ObjectKey>>,
    values: KeyMap<String>,
}

impl Index {
    /// An empty index; `extract` returns the value an object is indexed
    /// under, or `None` to leave it out.
    pub fn new(extract: fn(&Object) -> Option<String>) -> Index {
        Index { extract, members: BTreeMap::new(), values: KeyMap::new() }
    }

    /// Re-indexes `key` given its current state (`None`: it is gone).
    /// Returns the value it was indexed under before, if that differs from the
    /// new one (e.g. the node a pod stopped counting against).
    pub fn update(&mut self, key: &ObjectKey, current: Option<&Object>) -> Option<String> {
        let new = current.and_then(self.extract);
        if self.values.get(key) == new.as_ref() {
            return None;
        }
        let old = self.values.remove(key);
        if let Some(value) = &old
            && let Some(keys) = self.members.get_mut(value)
        {
            keys.remove(key);
            if keys.is_empty() {
                self.members.remove(value);
            }
        }
        if let Some(value) = new {
            self.members.entry(value.clone()).or_default().insert(key.clone());
            self.values.insert(key, value);
        }
        old
    }

    /// The keys indexed under `value`, in key order.
    pub fn keys<'a>(&'a self, value: &str) -> impl Iterator<Item = &'a ObjectKey> + 'a {
        self.members.get(value).into_iter().flatten()
    }

    /// How many keys are indexed under `value`.
    pub fn count(&self, value: &str) -> usize {
        self.members.get(value).map_or(0, BTreeSet::len)
    }

    /// The value `key` is indexed under.
    pub fn value(&self, key: &ObjectKey) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    /// Forgets everything (e.g. before rebuilding from a new cache).
    pub fn clear(&mut self) {
        self.members.clear();
        self.values.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pod;
    use crate::testing::{ObjectExt, pod as new_pod};

    fn by_node(o: &Object) -> Option<String> {
        pod::node_name(o).map(str::to_string)
    }

    #[test]
    fn index_moves_a_key_when_its_value_changes_and_drops_it_when_gone() {
        let mut index = Index::new(by_node);
        let a = new_pod("default", "a", "u", "1").on_node("node-1");
        let key = a.key();
        assert_eq!(index.update(&key, Some(&a)), None);
        assert_eq!(index.count("node-1"), 1);

        let moved = a.clone().on_node("node-2");
        assert_eq!(index.update(&key, Some(&moved)).as_deref(), Some("node-1"));
        assert_eq!((index.count("node-1"), index.count("node-2")), (0, 1));
        assert_eq!(index.value(&key), Some("node-2"));

        assert_eq!(index.update(&key, None).as_deref(), Some("node-2"));
        assert_eq!(index.keys("node-2").count(), 0);
        assert_eq!(index.value(&key), None);
    }
}
