//! `kube::runtime::reflector`: [`ObjectRef`], and the [`Store`] a
//! controller reads its objects from.
//!
//! One writer per store: the watch the controller registered, which the
//! host's lists and events feed (a list replaces the whole store at once,
//! as kube's reflector does at `InitDone`). Every clone of a [`Store`]
//! reads the same objects, ordered by namespace and name.

use std::fmt;
use std::future::poll_fn;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, PoisonError, RwLock};
use std::task::{Poll, Waker};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube_core::{DynamicObject, Resource};
use recon_abi::NamespacedMap;

/// Where an object lives: its namespace (empty if cluster-scoped) and name.
pub(crate) type Key = (String, String);

/// A reference to an object of kind `K`, by namespace and name, as
/// kube-runtime's `ObjectRef`.
pub struct ObjectRef<K: Resource> {
    dyntype: K::DynamicType,
    /// The object's name.
    pub name: String,
    /// Its namespace; `None` for cluster-scoped kinds.
    pub namespace: Option<String>,
}

impl<K: Resource> ObjectRef<K>
where
    K::DynamicType: Default,
{
    /// A reference to the cluster-scoped (or not yet namespaced) `name`.
    #[must_use]
    pub fn new(name: &str) -> Self {
        Self::new_with(name, K::DynamicType::default())
    }

    /// The reference to `obj`.
    pub fn from_obj(obj: &K) -> Self {
        Self::from_obj_with(obj, K::DynamicType::default())
    }
}

impl<K: Resource> ObjectRef<K> {
    /// A reference to `name`, with a dynamic type.
    #[must_use]
    pub fn new_with(name: &str, dyntype: K::DynamicType) -> Self {
        ObjectRef { dyntype, name: name.to_owned(), namespace: None }
    }

    /// The same reference in namespace `namespace`.
    #[must_use]
    pub fn within(mut self, namespace: &str) -> Self {
        self.namespace = Some(namespace.to_owned());
        self
    }

    /// The reference to `obj`, with a dynamic type.
    pub fn from_obj_with(obj: &K, dyntype: K::DynamicType) -> Self {
        let meta = obj.meta();
        ObjectRef { dyntype, name: meta.name.clone().unwrap_or_default(), namespace: meta.namespace.clone() }
    }

    /// The owner `owner` names, if it is of kind `K`; `namespace` is the
    /// dependent's (an owner reference never crosses namespaces).
    pub fn from_owner_ref(namespace: Option<&str>, owner: &OwnerReference, dyntype: K::DynamicType) -> Option<Self> {
        (owner.api_version == K::api_version(&dyntype) && owner.kind == K::kind(&dyntype)).then(|| ObjectRef {
            name: owner.name.clone(),
            namespace: namespace.map(str::to_owned),
            dyntype,
        })
    }

    /// The reference with its type erased, as controller errors carry it.
    pub fn erase(self) -> ObjectRef<DynamicObject> {
        ObjectRef {
            dyntype: kube_core::ApiResource::erase::<K>(&self.dyntype),
            name: self.name,
            namespace: self.namespace,
        }
    }

    /// Its key in a store.
    pub(crate) fn key(&self) -> Key {
        (self.namespace.clone().unwrap_or_default(), self.name.clone())
    }

    /// The reference with key `key`.
    pub(crate) fn from_key(key: &Key, dyntype: K::DynamicType) -> Self {
        let namespace = (!key.0.is_empty()).then(|| key.0.clone());
        ObjectRef { dyntype, name: key.1.clone(), namespace }
    }
}

impl<K: Resource> Clone for ObjectRef<K>
where
    K::DynamicType: Clone,
{
    fn clone(&self) -> Self {
        ObjectRef { dyntype: self.dyntype.clone(), name: self.name.clone(), namespace: self.namespace.clone() }
    }
}

impl<K: Resource> PartialEq for ObjectRef<K>
where
    K::DynamicType: PartialEq,
{
    fn eq(&self, other: &Self) -> bool {
        self.dyntype == other.dyntype && self.name == other.name && self.namespace == other.namespace
    }
}

impl<K: Resource> Eq for ObjectRef<K> where K::DynamicType: Eq {}

impl<K: Resource> Hash for ObjectRef<K>
where
    K::DynamicType: Hash,
{
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.dyntype.hash(state);
        self.name.hash(state);
        self.namespace.hash(state);
    }
}

impl<K: Resource> fmt::Debug for ObjectRef<K>
where
    K::DynamicType: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectRef")
            .field("dyntype", &self.dyntype)
            .field("name", &self.name)
            .field("namespace", &self.namespace)
            .finish()
    }
}

/// `Kind.version.group/name.namespace`, as kube writes it.
impl<K: Resource> fmt::Display for ObjectRef<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{}.{}/{}",
            K::kind(&self.dyntype),
            K::version(&self.dyntype),
            K::group(&self.dyntype),
            self.name
        )?;
        if let Some(namespace) = &self.namespace {
            write!(f, ".{namespace}")?;
        }
        Ok(())
    }
}

struct Inner<K> {
    /// By namespace, then name: the order of [`Key`], and a lookup by
    /// `&str` needs no key built (a controller reads its store for every
    /// object it reconciles).
    objects: NamespacedMap<Arc<K>>,
    /// Whether the first list has arrived.
    ready: bool,
    /// Whether the store's [`Writer`] was dropped (a store without one,
    /// a controller's own, is written by its watch for the plugin's life).
    writer_dropped: bool,
    /// Tasks waiting in [`Store::wait_until_ready`].
    waiting: Vec<Waker>,
}

/// [`Store::wait_until_ready`]'s error: the store's writer was dropped
/// before its first list arrived, so it never will.
#[derive(Debug, thiserror::Error)]
#[error("writer was dropped before store became ready")]
pub struct WriterDropped(());

/// A read-only view of the objects a watch has delivered (cheap to clone).
pub struct Store<K: Resource> {
    inner: Arc<RwLock<Inner<K>>>,
}

impl<K: Resource> Clone for Store<K> {
    fn clone(&self) -> Self {
        Store { inner: self.inner.clone() }
    }
}

impl<K: Resource> fmt::Debug for Store<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store").field("len", &self.len()).finish()
    }
}

impl<K: Resource> Store<K> {
    /// An empty store, before its first list.
    pub(crate) fn empty() -> Self {
        let inner = Inner { objects: NamespacedMap::new(), ready: false, writer_dropped: false, waiting: Vec::new() };
        Store { inner: Arc::new(RwLock::new(inner)) }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner<K>> {
        self.inner.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner<K>> {
        self.inner.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// The object `key` refers to, as the last list or event delivered it.
    pub fn get(&self, key: &ObjectRef<K>) -> Option<Arc<K>> {
        let inner = self.read();
        let in_namespace = |namespace: &str| inner.objects.get(namespace, &key.name);
        in_namespace(key.namespace.as_deref().unwrap_or_default())
            // A namespaced reference to a cluster-scoped object, as kube allows.
            .or_else(|| in_namespace(""))
            .cloned()
    }

    /// Every object, ordered by namespace and name.
    pub fn state(&self) -> Vec<Arc<K>> {
        self.read().objects.values().cloned().collect()
    }

    /// The first object (by namespace and name) that matches `predicate`.
    pub fn find<P: Fn(&K) -> bool>(&self, predicate: P) -> Option<Arc<K>> {
        self.read().objects.values().find(|k| predicate(k)).cloned()
    }

    /// How many objects it holds.
    pub fn len(&self) -> usize {
        self.read().objects.len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.read().objects.is_empty()
    }

    /// Waits until the store's first list has arrived, as kube's: a task
    /// that reads a store other than its controller's own (which the
    /// controller waits for) calls this first, or it may act on an empty
    /// store.
    pub async fn wait_until_ready(&self) -> Result<(), WriterDropped> {
        poll_fn(|cx| {
            let mut inner = self.write();
            if inner.ready {
                Poll::Ready(Ok(()))
            } else if inner.writer_dropped {
                Poll::Ready(Err(WriterDropped(())))
            } else {
                inner.waiting.push(cx.waker().clone());
                Poll::Pending
            }
        })
        .await
    }

    /// Whether its first list has arrived.
    pub(crate) fn is_ready(&self) -> bool {
        self.read().ready
    }

    /// A list: the objects replace everything.
    pub(crate) fn replace(&self, objects: Vec<(Key, K)>) {
        let mut inner = self.write();
        inner.objects.clear();
        for ((namespace, name), k) in objects {
            inner.objects.insert(&namespace, &name, Arc::new(k));
        }
        inner.ready = true;
        inner.waiting.drain(..).for_each(Waker::wake);
    }

    /// An added or modified object.
    pub(crate) fn apply(&self, (namespace, name): Key, object: K) {
        self.write().objects.insert(&namespace, &name, Arc::new(object));
    }

    /// A deleted object.
    pub(crate) fn delete(&self, (namespace, name): &Key) {
        self.write().objects.remove(namespace, name);
    }
}

/// The one writer of a [`Store`] made by [`store()`]: it applies a
/// watcher's events, swapping in a relist's objects at `InitDone`.
pub struct Writer<K: Resource> {
    store: Store<K>,
    /// A relist in progress: the objects since `Init`.
    buffer: Option<Vec<(Key, K)>>,
}

impl<K: Resource> fmt::Debug for Writer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Writer").field("store", &self.store).field("relisting", &self.buffer.is_some()).finish()
    }
}

/// An object's key in a store, from its metadata.
fn key_of_meta<K: Resource>(object: &K) -> Key {
    let meta = object.meta();
    (meta.namespace.clone().unwrap_or_default(), meta.name.clone().unwrap_or_default())
}

impl<K: Resource + Clone> Writer<K> {
    /// A read-only handle on the store it writes.
    pub fn as_reader(&self) -> Store<K> {
        self.store.clone()
    }

    /// Applies one watcher event: an `Apply` or `Delete` at once, a
    /// relist (`Init` … `InitDone`) as a whole when it is done.
    pub fn apply_watcher_event(&mut self, event: &super::watcher::Event<K>) {
        use super::watcher::Event;
        match event {
            Event::Apply(object) => self.store.apply(key_of_meta(object), object.clone()),
            Event::Delete(object) => self.store.delete(&key_of_meta(object)),
            Event::Init => self.buffer = Some(Vec::new()),
            Event::InitApply(object) => {
                self.buffer.get_or_insert_with(Vec::new).push((key_of_meta(object), object.clone()))
            }
            Event::InitDone => self.store.replace(self.buffer.take().unwrap_or_default()),
        }
    }
}

impl<K: Resource> Drop for Writer<K> {
    fn drop(&mut self) {
        let mut inner = self.store.write();
        inner.writer_dropped = true;
        inner.waiting.drain(..).for_each(Waker::wake);
    }
}

/// A store and its one writer.
pub fn store<K: Resource + Clone>() -> (Store<K>, Writer<K>) {
    let store = Store::empty();
    (store.clone(), Writer { store, buffer: None })
}

/// Passes a watcher's events through `writer` on their way, as kube's
/// `reflector`.
pub fn reflector<K, W>(mut writer: Writer<K>, stream: W) -> impl futures::Stream<Item = W::Item>
where
    K: Resource + Clone,
    W: futures::Stream<Item = super::watcher::Result<super::watcher::Event<K>>>,
{
    use futures::StreamExt;
    stream.inspect(move |event| {
        if let Ok(event) = event {
            writer.apply_watcher_event(event);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn map(ns: &str, name: &str) -> ConfigMap {
        let mut map = ConfigMap::default();
        map.metadata.namespace = Some(ns.into());
        map.metadata.name = Some(name.into());
        map
    }

    #[test]
    fn a_store_lists_by_namespace_and_name_and_a_list_replaces_everything() {
        let store = Store::<ConfigMap>::empty();
        assert!(!store.is_ready());
        store.apply(("b".into(), "x".into()), map("b", "x"));
        store.apply(("a".into(), "y".into()), map("a", "y"));
        let names: Vec<_> = store.state().iter().map(|m| m.metadata.name.clone().unwrap()).collect();
        assert_eq!(names, ["y", "x"]);
        store.replace(vec![(("c".into(), "z".into()), map("c", "z"))]);
        assert!(store.is_ready());
        assert_eq!(store.len(), 1);
        assert!(store.get(&ObjectRef::new("z").within("c")).is_some());
        assert!(store.get(&ObjectRef::new("x").within("b")).is_none());
    }

    #[test]
    fn a_writer_swaps_a_relist_in_whole_at_init_done() {
        use super::super::watcher::Event;
        let (reader, mut writer) = store::<ConfigMap>();
        writer.apply_watcher_event(&Event::Apply(map("a", "old")));
        writer.apply_watcher_event(&Event::Init);
        writer.apply_watcher_event(&Event::InitApply(map("a", "new")));
        assert!(reader.get(&ObjectRef::new("old").within("a")).is_some(), "the old state until the list is done");
        writer.apply_watcher_event(&Event::InitDone);
        let names: Vec<_> = reader.state().iter().map(|m| m.metadata.name.clone().unwrap()).collect();
        assert_eq!(names, ["new"]);
        writer.apply_watcher_event(&Event::Delete(map("a", "new")));
        assert!(reader.is_empty());
    }

    #[test]
    fn an_owner_reference_of_another_kind_is_no_reference() {
        let owner = OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: "parent".into(),
            uid: "u".into(),
            ..OwnerReference::default()
        };
        let found = ObjectRef::<ConfigMap>::from_owner_ref(Some("ns"), &owner, ()).unwrap();
        assert_eq!(found.to_string(), "ConfigMap.v1./parent.ns");
        let other = OwnerReference { kind: "Secret".into(), ..owner };
        assert!(ObjectRef::<ConfigMap>::from_owner_ref(Some("ns"), &other, ()).is_none());
    }
}
