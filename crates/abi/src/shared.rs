//! [`Shared`]: a part of an object that its versions share until one of
//! them changes it.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A part of an object that copies of the object share until one of them
/// changes it: its metadata's labels, annotations and owner references
/// here, and its `spec` and `status` as [`SharedValue`](crate::SharedValue)
/// (a shared JSON value, empty when `null`).
///
/// The store keeps every version of every object, and a write nearly never
/// changes most of these; each version held its own copy of them (a map of two
/// labels alone takes a B-tree node of about 540 bytes). Now a clone
/// shares them, and a change (`labels.insert(…)`, through `DerefMut`)
/// first takes a copy of its own if another version holds the same one.
/// An empty one holds nothing at all.
///
/// It reads as what it holds (`labels.get("app")`,
/// `owner_references.iter()`, `spec["nodeName"]`) and is encoded, compared
/// and described in the ABI's JSON schema as that. A whole one is assigned with
/// `.into()` (`meta.labels = BTreeMap::from([…]).into()`).
#[derive(Clone)]
pub struct Shared<T: Empty>(Option<Arc<T>>);

/// What a [`Shared`] can hold: a value with a `'static` empty one to read
/// through when there is nothing to share (an empty map or list, `null`).
pub trait Empty: Clone + Default + 'static {
    /// The empty one.
    const EMPTY: &'static Self;

    /// Whether it holds nothing.
    fn holds_nothing(&self) -> bool;
}

impl<K: Ord + Clone + 'static, V: Clone + 'static> Empty for BTreeMap<K, V> {
    const EMPTY: &'static Self = &BTreeMap::new();

    fn holds_nothing(&self) -> bool {
        self.is_empty()
    }
}

impl<T: Clone + 'static> Empty for Vec<T> {
    const EMPTY: &'static Self = &Vec::new();

    fn holds_nothing(&self) -> bool {
        self.is_empty()
    }
}

impl<T: Empty> Shared<T> {
    /// Holds `value` (nothing, when it is empty).
    pub fn new(value: T) -> Self {
        Shared((!value.holds_nothing()).then(|| Arc::new(value)))
    }

    /// Whether it holds nothing (what `skip_serializing_if` asks).
    pub fn is_empty(&self) -> bool {
        self.0.as_deref().is_none_or(T::holds_nothing)
    }

    /// Whether `self` and `other` are the very same copy (not merely equal).
    pub fn ptr_eq(&self, other: &Shared<T>) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }

    /// The collection, taken out (copied only if another holder shares it).
    pub fn into_inner(self) -> T {
        self.0.map(|shared| Arc::try_unwrap(shared).unwrap_or_else(|shared| (*shared).clone())).unwrap_or_default()
    }
}

impl<T: Empty> Default for Shared<T> {
    fn default() -> Self {
        Shared(None)
    }
}

impl<T: Empty> Deref for Shared<T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.0.as_deref().unwrap_or(T::EMPTY)
    }
}

impl<T: Empty> DerefMut for Shared<T> {
    fn deref_mut(&mut self) -> &mut T {
        Arc::make_mut(self.0.get_or_insert_with(Arc::default))
    }
}

impl<'a, T: Empty> IntoIterator for &'a Shared<T>
where
    &'a T: IntoIterator,
{
    type Item = <&'a T as IntoIterator>::Item;
    type IntoIter = <&'a T as IntoIterator>::IntoIter;

    fn into_iter(self) -> Self::IntoIter {
        (**self).into_iter()
    }
}

impl<T: Empty> From<T> for Shared<T> {
    fn from(value: T) -> Self {
        Shared::new(value)
    }
}

impl<K: Ord + Clone + 'static, V: Clone + 'static, const N: usize> From<[(K, V); N]> for Shared<BTreeMap<K, V>> {
    fn from(entries: [(K, V); N]) -> Self {
        Shared::new(BTreeMap::from(entries))
    }
}

impl<A, T: Empty + FromIterator<A>> FromIterator<A> for Shared<T> {
    fn from_iter<I: IntoIterator<Item = A>>(items: I) -> Self {
        Shared::new(items.into_iter().collect())
    }
}

impl<T: Empty + PartialEq> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        self.ptr_eq(other) || **self == **other
    }
}

impl<T: Empty + Eq> Eq for Shared<T> {}

impl<T: Empty + fmt::Debug> fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: Empty + Serialize> Serialize for Shared<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(serializer)
    }
}

impl<'de, T: Empty + Deserialize<'de>> Deserialize<'de> for Shared<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(Shared::new)
    }
}

#[cfg(feature = "schema")]
impl<T: Empty + schemars::JsonSchema> schemars::JsonSchema for Shared<T> {
    fn inline_schema() -> bool {
        T::inline_schema()
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        T::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A clone shares the collection; changing one copies it for that one.
    #[test]
    fn copies_share_until_one_changes() {
        let labels: Shared<BTreeMap<String, String>> = BTreeMap::from([("app".to_owned(), "web".to_owned())]).into();
        let mut changed = labels.clone();
        assert!(changed.ptr_eq(&labels), "a clone shares");
        changed.insert("tier".into(), "front".into());
        assert!(!changed.ptr_eq(&labels), "a change copies");
        assert_eq!(labels.len(), 1, "the original is untouched");
        assert_eq!(changed.get("tier").map(String::as_str), Some("front"));
        let mut only = labels.clone();
        drop(labels);
        let before = &*only as *const BTreeMap<String, String>;
        only.insert("x".into(), "y".into());
        assert_eq!(&*only as *const BTreeMap<String, String>, before, "an unshared one is changed in place");
    }

    /// Empty holds nothing, reads as empty, and grows when written.
    #[test]
    fn empty_holds_nothing() {
        let mut owners: Shared<Vec<String>> = Shared::default();
        assert!(owners.is_empty() && owners.iter().next().is_none());
        assert_eq!(owners, Shared::new(Vec::new()), "empty however made");
        assert!(Shared::new(Vec::<String>::new()).0.is_none());
        owners.push("a".into());
        assert_eq!(*owners, ["a"]);
        owners.clear();
        assert!(owners.is_empty(), "emptied in place still reads as empty");
        assert_eq!(owners, Shared::default());
    }

    /// Encoded, decoded and compared as the collection it holds.
    #[test]
    fn reads_and_writes_as_its_collection() {
        let map = BTreeMap::from([("b".to_owned(), 2), ("a".to_owned(), 1)]);
        let shared = Shared::new(map.clone());
        assert_eq!(serde_json::to_string(&shared).unwrap(), serde_json::to_string(&map).unwrap());
        let back: Shared<BTreeMap<String, i32>> = serde_json::from_str(r#"{"a":1,"b":2}"#).unwrap();
        assert_eq!(back, shared);
        assert_eq!(*back, map);
        assert_eq!(format!("{back:?}"), format!("{map:?}"));
        assert_eq!(back.into_inner(), map);
    }
}
