//! Strings and keys the trace stores once and shares between entries.
//!
//! A run names the same few things over and over: an API server, a
//! component, an object and its uid appear in every watch delivery, cache
//! apply and store write about them. Each entry owning its own copies made
//! the trace most of a large run's memory (about 1.6 KB per entry at
//! 1,000 nodes, five or six string allocations each). Entries hold a
//! [`Name`] or a [`Key`] instead: a pointer to one shared copy, handed out
//! by the writer's [`Interner`].
//!
//! Both read as what they share (`&str`, `&ObjectKey`), compare with it,
//! and encode exactly as it does, so the JSON and the trace hash are those
//! of the owned strings they replace.
//!
//! A trace read back from JSON shares them too when it is read inside
//! [`read_shared`] (the playground's page does, for every run it is
//! sent); read outside it, each name and key is a copy of its own.

use std::borrow::Borrow;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

use recon_abi::ObjectKey;
use rustc_hash::{FxBuildHasher, FxHasher};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A string stored once and shared: a component's or an API server's name,
/// an object's uid, a field manager. Reads as `&str` and compares with
/// `str`, `&str` and `String`.
///
/// One pointer wide (the shared string's length lives with its bytes, not
/// in every copy): trace entries hold two or three names each, and a run at
/// Kubernetes' published limits writes nine million entries.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Name(Arc<Box<str>>);

impl Name {
    /// The string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for Name {
    fn default() -> Self {
        Name::from("")
    }
}

impl Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// Lets a set of names be searched by `&str` (its hash is the string's).
impl Borrow<str> for Name {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Name {
    fn from(s: &str) -> Self {
        Name(Arc::new(Box::from(s)))
    }
}

impl From<String> for Name {
    fn from(s: String) -> Self {
        Name(Arc::new(s.into_boxed_str()))
    }
}

impl From<&String> for Name {
    fn from(s: &String) -> Self {
        Name::from(s.as_str())
    }
}

impl From<Name> for String {
    fn from(name: Name) -> Self {
        name.as_str().to_owned()
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self.0, f)
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        &**self.0 == other
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        &**self.0 == *other
    }
}

impl PartialEq<String> for Name {
    fn eq(&self, other: &String) -> bool {
        &**self.0 == other.as_str()
    }
}

impl PartialEq<Name> for str {
    fn eq(&self, other: &Name) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<Name> for &str {
    fn eq(&self, other: &Name) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<Name> for String {
    fn eq(&self, other: &Name) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Serialize for Name {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        /// Takes the string borrowed where the format lends it, so a name
        /// read before costs no allocation.
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Name;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Name, E> {
                Ok(READING.with_borrow_mut(|reading| match reading {
                    Some(interner) => interner.name(s),
                    None => Name::from(s),
                }))
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}

/// An [`ObjectKey`] stored once and shared. Reads as `&ObjectKey` (so
/// `key.name` works) and compares with it.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Key(Arc<ObjectKey>);

impl Key {
    /// The key.
    pub fn as_key(&self) -> &ObjectKey {
        &self.0
    }
}

impl Deref for Key {
    type Target = ObjectKey;
    fn deref(&self) -> &ObjectKey {
        &self.0
    }
}

impl AsRef<ObjectKey> for Key {
    fn as_ref(&self) -> &ObjectKey {
        &self.0
    }
}

impl Borrow<ObjectKey> for Key {
    fn borrow(&self) -> &ObjectKey {
        &self.0
    }
}

impl From<ObjectKey> for Key {
    fn from(key: ObjectKey) -> Self {
        Key(Arc::new(key))
    }
}

impl From<&ObjectKey> for Key {
    fn from(key: &ObjectKey) -> Self {
        Key(Arc::new(key.clone()))
    }
}

impl From<Key> for ObjectKey {
    fn from(key: Key) -> Self {
        Arc::unwrap_or_clone(key.0)
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl PartialEq<ObjectKey> for Key {
    fn eq(&self, other: &ObjectKey) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<Key> for ObjectKey {
    fn eq(&self, other: &Key) -> bool {
        *self == *other.0
    }
}

impl Serialize for Key {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let key = ObjectKey::deserialize(deserializer)?;
        Ok(READING.with_borrow_mut(|reading| match reading {
            Some(interner) => interner.key(&key),
            None => Key::from(key),
        }))
    }
}

thread_local! {
    /// The interner that names and keys read on this thread go through
    /// while [`read_shared`] runs.
    static READING: RefCell<Option<Interner>> = const { RefCell::new(None) };
}

/// Runs `read`, a deserialization of trace data (a [`crate::Trace`], its
/// entries, a message that carries them), with every [`Name`] and [`Key`]
/// it reads handed out by `interner`: one shared copy per distinct string
/// or key, with those `interner` already holds, as the simulator's trace
/// has them. The values read are the same either way; only their memory
/// differs (a large run read back without this holds a copy of every name
/// in every entry).
pub fn read_shared<R>(interner: &mut Interner, read: impl FnOnce() -> R) -> R {
    /// Gives the interner back to its owner however `read` ends, and puts
    /// back whatever read was under way around this one.
    struct Restore<'a> {
        interner: &'a mut Interner,
        outer: Option<Interner>,
    }
    impl Drop for Restore<'_> {
        fn drop(&mut self) {
            let used = READING.replace(self.outer.take());
            *self.interner = used.unwrap_or_default();
        }
    }
    let outer = READING.replace(Some(std::mem::take(interner)));
    let _restore = Restore { interner, outer };
    read()
}

/// Hands out one shared [`Name`] per distinct string and one [`Key`] per
/// distinct object key: what a trace's writer uses so that equal strings
/// in different entries are one allocation.
///
/// Lookups hash with `rustc-hash`'s hasher (fixed, never seeded from the
/// OS) and never allocate for a string or key seen before; nothing
/// iterates the tables, so their order is never seen.
#[derive(Clone, Debug, Default)]
pub struct Interner {
    names: HashSet<Name, FixedState>,
    /// Keys by the hash of their three parts, so an object's key is found
    /// from its kind, namespace and name without building an `ObjectKey`.
    keys: HashMap<u64, Key, FixedState>,
    /// The rare key whose hash another key already has.
    collided: BTreeMap<ObjectKey, Key>,
}

impl Interner {
    /// An empty interner.
    pub fn new() -> Self {
        Interner::default()
    }

    /// The shared copy of `s`.
    pub fn name(&mut self, s: &str) -> Name {
        if let Some(name) = self.names.get(s) {
            return name.clone();
        }
        let name = Name::from(s);
        self.names.insert(name.clone());
        name
    }

    /// The shared copy of the key with these parts.
    pub fn key_of(&mut self, kind: &str, namespace: &str, name: &str) -> Key {
        let hash = key_hash(kind, namespace, name);
        let same = |k: &Key| k.kind == kind && k.namespace == namespace && k.name == name;
        match self.keys.get(&hash) {
            Some(key) if same(key) => key.clone(),
            Some(_) => {
                let key = ObjectKey::new(kind, namespace, name);
                self.collided.entry(key.clone()).or_insert_with(|| Key::from(key)).clone()
            }
            None => {
                let key = Key::from(ObjectKey::new(kind, namespace, name));
                self.keys.insert(hash, key.clone());
                key
            }
        }
    }

    /// The shared copy of `object`'s key.
    pub fn object_key(&mut self, object: &recon_abi::Object) -> Key {
        self.key_of(&object.kind, &object.metadata.namespace, &object.metadata.name)
    }

    /// The shared copy of `key`.
    pub fn key(&mut self, key: &ObjectKey) -> Key {
        self.key_of(&key.kind, &key.namespace, &key.name)
    }
}

/// The hash a key is found by in [`Interner::key_of`].
fn key_hash(kind: &str, namespace: &str, name: &str) -> u64 {
    let mut hasher = FxHasher::default();
    for part in [kind, namespace, name] {
        hasher.write(part.as_bytes());
        hasher.write_u8(0xff); // no part holds 0xff, so the joins are unambiguous
    }
    hasher.finish()
}

/// The hasher of the interner's tables.
type FixedState = FxBuildHasher;

#[cfg(test)]
mod tests {
    use super::*;

    /// Read inside `read_shared`, equal names and keys are one copy, and
    /// the same as those the interner already held; read outside it, each
    /// is its own. Either way they read as what was written.
    #[test]
    fn names_and_keys_read_inside_read_shared_are_shared() {
        let json = r#"[["apiserver-1", {"kind": "Pod", "namespace": "default", "name": "web-0"}],
                       ["apiserver-1", {"kind": "Pod", "namespace": "default", "name": "web-0"}]]"#;
        let mut interner = Interner::new();
        let held = interner.name("apiserver-1");
        let read: Vec<(Name, Key)> = read_shared(&mut interner, || serde_json::from_str(json).unwrap());
        assert!(Arc::ptr_eq(&read[0].0.0, &read[1].0.0));
        assert!(Arc::ptr_eq(&read[0].0.0, &held.0), "shared with what the interner held");
        assert!(Arc::ptr_eq(&read[0].1.0, &read[1].1.0));
        assert!(Arc::ptr_eq(&interner.key_of("Pod", "default", "web-0").0, &read[0].1.0), "the interner kept them");
        let apart: Vec<(Name, Key)> = serde_json::from_str(json).unwrap();
        assert!(!Arc::ptr_eq(&apart[0].0.0, &apart[1].0.0));
        assert!(!Arc::ptr_eq(&apart[0].1.0, &apart[1].1.0));
        assert_eq!(read, apart);
        assert_eq!(serde_json::to_string(&read).unwrap(), serde_json::to_string(&apart).unwrap());
        // A read that fails gives the interner back all the same.
        let failed: Result<Vec<Name>, _> = read_shared(&mut interner, || serde_json::from_str("[\"apiserver-1\", 7]"));
        assert!(failed.is_err());
        assert!(Arc::ptr_eq(&interner.name("apiserver-1").0, &held.0));
    }

    #[test]
    fn equal_strings_and_keys_share_one_copy() {
        let mut interner = Interner::new();
        let a = interner.name(&String::from("apiserver-1"));
        let b = interner.name("apiserver-1");
        assert!(Arc::ptr_eq(&a.0, &b.0));
        assert!(!Arc::ptr_eq(&a.0, &interner.name("apiserver-2").0));

        let k = interner.key_of("Pod", "default", "web-1");
        let same = interner.key(&ObjectKey::new("Pod", "default", "web-1"));
        assert!(Arc::ptr_eq(&k.0, &same.0));
        // The parts' boundaries count: these two join to the same letters.
        let other = interner.key_of("Pod", "defaultweb-1", "");
        assert_ne!(k, other);
        assert_eq!(other.namespace, "defaultweb-1");
    }

    #[test]
    fn a_hash_collision_still_gives_the_right_key() {
        let mut interner = Interner::new();
        let first = interner.key_of("Pod", "a", "b");
        // Plant a different key under the next key's hash, as a collision would.
        interner.keys.insert(key_hash("Pod", "a", "c"), first.clone());
        let second = interner.key_of("Pod", "a", "c");
        assert_eq!(second.name, "c");
        assert!(interner.collided.contains_key(&ObjectKey::new("Pod", "a", "c")), "the key took the collision path");
        assert!(Arc::ptr_eq(&second.0, &interner.key_of("Pod", "a", "c").0));
    }

    #[test]
    fn they_encode_as_what_they_share() {
        let key = ObjectKey::new("Pod", "", "n");
        assert_eq!(serde_json::to_string(&Key::from(&key)).unwrap(), serde_json::to_string(&key).unwrap());
        assert_eq!(serde_json::to_string(&Name::from("x\"y")).unwrap(), r#""x\"y""#);
        let back: Name = serde_json::from_str(r#""kubelet""#).unwrap();
        assert_eq!(back, "kubelet");
        let key_back: Key = serde_json::from_str(r#"{"kind":"Pod","name":"n"}"#).unwrap();
        assert_eq!(key_back, key);
    }
}
