//! [`NamespacedMap`]: values by namespace, then name.

use std::collections::BTreeMap;

/// Values by namespace, then name: iterated in the order of
/// [`ObjectKey`](crate::ObjectKey)'s namespace and name, and looked up by
/// `&str`s without building a key (an informer's store is read once per
/// object reconciled, a table of what a watch delivered once per event).
/// A namespace left empty is removed, so the map holds no empty entries.
#[derive(Clone, Debug)]
pub struct NamespacedMap<V> {
    namespaces: BTreeMap<String, BTreeMap<String, V>>,
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
        match names.get_mut(name) {
            Some(slot) => Some(std::mem::replace(slot, value)),
            None => names.insert(name.to_owned(), value),
        }
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
        self.namespaces.values().flat_map(BTreeMap::values)
    }

    /// How many values it holds.
    pub fn len(&self) -> usize {
        self.namespaces.values().map(BTreeMap::len).sum()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.namespaces.is_empty()
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
}
