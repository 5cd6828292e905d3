//! Maps keyed by an object's identity, one string per level:
//! [`NamespacedMap`] (namespace, then name) and [`KeyMap`] (kind, then
//! namespace, then name).
//!
//! A `BTreeMap<ObjectKey, _>` compares whole keys: at every step of a
//! search, the kind and the namespace (nearly always equal, so compared in
//! full) and then the name, each behind a pointer of its own. In a cluster
//! of 150,000 pods those searches were a large share of a run's time. Here
//! each level compares one string, and the iteration order is the same.
//!
//! Within a namespace the names are a [`NameMap`]: a lookup by name
//! hashes it rather than searching a tree of names.

use std::collections::BTreeMap;
use std::fmt;

use crate::NameMap;
use crate::ObjectKey;

/// Values by namespace, then name: iterated in the order of
/// [`ObjectKey`](crate::ObjectKey)'s namespace and name, and looked up by
/// `&str`s without building a key (an informer's store is read once per
/// object reconciled, a table of what a watch delivered once per event).
/// A namespace left empty is removed, so the map holds no empty entries.
#[derive(Clone)]
pub struct NamespacedMap<V> {
    namespaces: BTreeMap<String, NameMap<V>>,
}

impl<V: fmt::Debug> fmt::Debug for NamespacedMap<V> {
    /// In iteration order, like the `BTreeMap` it stands for.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter().map(|(namespace, name, v)| ((namespace, name), v))).finish()
    }
}

impl<V> Default for NamespacedMap<V> {
    fn default() -> Self {
        NamespacedMap { namespaces: BTreeMap::new() }
    }
}

impl<V> NamespacedMap<V> {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value at `namespace`/`name`.
    pub fn get(&self, namespace: &str, name: &str) -> Option<&V> {
        self.namespaces.get(namespace)?.get(name)
    }

    /// The value at `namespace`/`name`, to change in place.
    pub fn get_mut(&mut self, namespace: &str, name: &str) -> Option<&mut V> {
        self.namespaces.get_mut(namespace)?.get_mut(name)
    }

    /// Sets the value at `namespace`/`name`, returning the one it replaces.
    /// The names are copied only when they are new to the map.
    pub fn insert(&mut self, namespace: &str, name: &str, value: V) -> Option<V> {
        let names = match self.namespaces.get_mut(namespace) {
            Some(names) => names,
            None => self.namespaces.entry(namespace.to_owned()).or_default(),
        };
        names.insert(name, value)
    }

    /// Removes and returns the value at `namespace`/`name`.
    pub fn remove(&mut self, namespace: &str, name: &str) -> Option<V> {
        let names = self.namespaces.get_mut(namespace)?;
        let value = names.remove(name);
        if names.is_empty() {
            self.namespaces.remove(namespace);
        }
        value
    }

    /// Removes every value.
    pub fn clear(&mut self) {
        self.namespaces.clear();
    }

    /// Every value, by namespace, then name.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.namespaces.values().flat_map(NameMap::values)
    }

    /// Every namespace, name and value, by namespace, then name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str, &V)> {
        self.namespaces
            .iter()
            .flat_map(|(namespace, names)| names.iter().map(move |(name, v)| (namespace.as_str(), name, v)))
    }

    /// Every namespace, name and value, by namespace, then name, taken.
    pub fn into_iter_owned(self) -> impl Iterator<Item = (String, String, V)> {
        self.namespaces
            .into_iter()
            .flat_map(|(namespace, names)| names.into_iter().map(move |(name, v)| (namespace.clone(), name, v)))
    }

    /// How many values it holds.
    pub fn len(&self) -> usize {
        self.namespaces.values().map(NameMap::len).sum()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.namespaces.is_empty()
    }
}

/// Values by [`ObjectKey`]: iterated in `ObjectKey`'s order, looked up with
/// one string compared per level (see the module documentation). Holds its
/// length, so [`KeyMap::len`] is free.
#[derive(Clone, Debug)]
pub struct KeyMap<V> {
    kinds: BTreeMap<String, NamespacedMap<V>>,
    len: usize,
}

impl<V> Default for KeyMap<V> {
    fn default() -> Self {
        KeyMap { kinds: BTreeMap::new(), len: 0 }
    }
}

impl<V> KeyMap<V> {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value at `key`.
    pub fn get(&self, key: &ObjectKey) -> Option<&V> {
        self.kinds.get(&key.kind)?.get(&key.namespace, &key.name)
    }

    /// The value at `key`, to change in place.
    pub fn get_mut(&mut self, key: &ObjectKey) -> Option<&mut V> {
        self.kinds.get_mut(&key.kind)?.get_mut(&key.namespace, &key.name)
    }

    /// Whether there is a value at `key`.
    pub fn contains_key(&self, key: &ObjectKey) -> bool {
        self.get(key).is_some()
    }

    /// Sets the value at `key`, returning the one it replaces. The key's
    /// strings are copied only when they are new to the map.
    pub fn insert(&mut self, key: &ObjectKey, value: V) -> Option<V> {
        let namespaces = match self.kinds.get_mut(&key.kind) {
            Some(namespaces) => namespaces,
            None => self.kinds.entry(key.kind.clone()).or_default(),
        };
        let old = namespaces.insert(&key.namespace, &key.name, value);
        self.len += usize::from(old.is_none());
        old
    }

    /// Removes and returns the value at `key`.
    pub fn remove(&mut self, key: &ObjectKey) -> Option<V> {
        let namespaces = self.kinds.get_mut(&key.kind)?;
        let value = namespaces.remove(&key.namespace, &key.name)?;
        if namespaces.is_empty() {
            self.kinds.remove(&key.kind);
        }
        self.len -= 1;
        Some(value)
    }

    /// Removes every value.
    pub fn clear(&mut self) {
        self.kinds.clear();
        self.len = 0;
    }

    /// Every value, in key order.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.kinds.values().flat_map(NamespacedMap::values)
    }

    /// How many values it holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_come_in_key_order_and_an_emptied_namespace_goes() {
        let mut map = NamespacedMap::new();
        assert_eq!(map.insert("b", "x", 1), None);
        assert_eq!(map.insert("", "node-1", 2), None);
        assert_eq!(map.insert("a", "y", 3), None);
        assert_eq!(map.insert("b", "x", 4), Some(1));
        assert_eq!(map.values().copied().collect::<Vec<_>>(), vec![2, 3, 4]);
        assert_eq!((map.len(), map.get("b", "x"), map.get("b", "y")), (3, Some(&4), None));
        *map.get_mut("a", "y").unwrap() += 10;
        assert_eq!(map.remove("a", "y"), Some(13));
        assert_eq!(map.remove("a", "y"), None);
        assert_eq!(map.namespaces.len(), 2, "namespace `a` is gone with its last name");
        map.clear();
        assert!(map.is_empty());
    }

    #[test]
    fn a_key_map_iterates_in_object_key_order_and_counts_what_it_holds() {
        let keys = [
            ObjectKey::new("Pod", "b", "x"),
            ObjectKey::new("Node", "", "n-2"),
            ObjectKey::new("Pod", "a", "z"),
            ObjectKey::new("Node", "", "n-10"),
            ObjectKey::new("Pod", "a", "y"),
        ];
        let mut map = KeyMap::new();
        for (i, key) in keys.iter().enumerate() {
            assert_eq!(map.insert(key, i), None);
        }
        assert_eq!(map.insert(&keys[0], 10), Some(0));
        let mut sorted: Vec<(ObjectKey, usize)> = keys.iter().cloned().zip([10, 1, 2, 3, 4]).collect();
        sorted.sort();
        assert_eq!(map.values().copied().collect::<Vec<_>>(), sorted.iter().map(|(_, v)| *v).collect::<Vec<_>>());
        assert_eq!((map.len(), map.get(&keys[3]), map.get(&ObjectKey::new("Pod", "", "n-10"))), (5, Some(&3), None));
        *map.get_mut(&keys[4]).unwrap() += 100;
        assert_eq!(map.remove(&keys[4]), Some(104));
        assert_eq!(map.remove(&keys[4]), None);
        assert!(!map.contains_key(&keys[4]) && map.contains_key(&keys[2]));
        assert_eq!(map.len(), 4);
        map.remove(&keys[1]);
        map.remove(&keys[3]);
        assert_eq!(map.kinds.len(), 1, "kind `Node` is gone with its last object");
        map.clear();
        assert!(map.is_empty());
    }

    #[test]
    fn a_namespaced_map_yields_its_parts_in_order() {
        let mut map = NamespacedMap::new();
        map.insert("b", "x", 1);
        map.insert("a", "y", 2);
        assert_eq!(map.iter().collect::<Vec<_>>(), vec![("a", "y", &2), ("b", "x", &1)]);
        assert_eq!(
            map.into_iter_owned().map(|(ns, _, v)| (ns, v)).collect::<Vec<_>>(),
            vec![("a".into(), 2), ("b".into(), 1)]
        );
    }
}
