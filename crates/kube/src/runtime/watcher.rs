//! `kube::runtime::watcher`: how a controller's watches list and filter.
//!
//! The host runs the list and the watch; [`Config`] says what it watches
//! (selectors) and how its first list after a (re)start reads
//! ([`ListSemantic`], [`InitialListStrategy`]), which becomes the plugin
//! manifest's `listMode`.
//!
//! [`watcher()`] is kube's watcher stream over the same watches: a list
//! is `Init`, one `InitApply` per object and `InitDone`; a watch event is
//! `Apply` or `Delete` (bookmarks are the host's business).

use std::collections::VecDeque;
use std::fmt::Debug;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Poll, Waker};

use futures::Stream;
use kube_core::Resource;
use recon_abi::{EventType, Object, WatchSpec};
use serde::de::DeserializeOwned;

use crate::Api;
use crate::recon::{self, WatchInput};

/// Registers a watch of `api`'s kind and namespace, configured by `wc`.
pub(crate) fn register<X: Resource>(api: &Api<X>, wc: &Config, sink: recon::Sink) {
    let spec = WatchSpec {
        kind: api.kind().to_owned(),
        namespace: api.namespace().unwrap_or_default().to_owned(),
        field_selector: wc.field_selector.clone().unwrap_or_default(),
        label_selector: wc.label_selector.clone().unwrap_or_default(),
    };
    recon::with_state(|state| state.watch(spec, wc.list_mode(), sink));
}

/// One step of a watch, as kube's `watcher::Event`.
#[derive(Clone, Debug, PartialEq)]
pub enum Event<K> {
    /// The object was added or changed.
    Apply(K),
    /// The object was deleted (its last state).
    Delete(K),
    /// A (re)list begins: what follows until `InitDone` is the whole state.
    Init,
    /// One object of the list.
    InitApply(K),
    /// The list is complete: objects it did not name are gone.
    InitDone,
}

/// Events delivered and not yet taken, and who waits for them.
///
/// An event waits as the version the host shared and is decoded into `K`
/// when the stream yields it: a burst of thousands of events (a relist, a
/// rollout) would otherwise hold that many typed objects at once, each
/// slot of the buffer the size of one (2,448 bytes for a `Pod`), where a
/// version is one pointer. Decoding is pure, so the stream yields the same
/// events either way.
struct Channel {
    events: VecDeque<Event<Arc<Object>>>,
    waker: Option<Waker>,
}

impl<K> Event<K> {
    /// The same step with `f` applied to its object, if it has one, as
    /// kube's `Event::modify`: how a controller drops the fields it never
    /// reads before they reach a store (kube's optimization guide,
    /// *minimize what you store*).
    #[must_use]
    pub fn modify(mut self, mut f: impl FnMut(&mut K)) -> Self {
        match &mut self {
            Event::Apply(object) | Event::Delete(object) | Event::InitApply(object) => f(object),
            Event::Init | Event::InitDone => {}
        }
        self
    }
}

impl<T> Event<T> {
    /// The same step with its object turned into another type.
    fn map<U>(self, f: impl FnOnce(T) -> U) -> Event<U> {
        match self {
            Event::Apply(o) => Event::Apply(f(o)),
            Event::Delete(o) => Event::Delete(f(o)),
            Event::Init => Event::Init,
            Event::InitApply(o) => Event::InitApply(f(o)),
            Event::InitDone => Event::InitDone,
        }
    }
}

/// Watches `api`'s objects selected by `watcher_config`, as kube's
/// `watcher`: the watch is the host's, registered in the manifest when
/// this is called (call it before `main` first waits).
pub fn watcher<K>(api: Api<K>, watcher_config: Config) -> impl Stream<Item = Result<Event<K>>>
where
    K: Resource + Clone + DeserializeOwned + Debug + 'static,
{
    let channel = Arc::new(Mutex::new(Channel { events: VecDeque::new(), waker: None }));
    let sender = channel.clone();
    register(
        &api,
        &watcher_config,
        Box::new(move |input, _now| {
            let mut channel = sender.lock().unwrap_or_else(PoisonError::into_inner);
            match input {
                WatchInput::Listed(objects) => {
                    channel.events.push_back(Event::Init);
                    channel.events.extend(objects.iter().map(|o| Event::InitApply(Arc::clone(o))));
                    channel.events.push_back(Event::InitDone);
                }
                WatchInput::Event(event) => match event.event_type {
                    EventType::Added | EventType::Modified => {
                        channel.events.push_back(Event::Apply(Arc::clone(&event.object)))
                    }
                    EventType::Deleted => channel.events.push_back(Event::Delete(Arc::clone(&event.object))),
                    EventType::Bookmark => return,
                },
            }
            if let Some(waker) = channel.waker.take() {
                waker.wake();
            }
        }),
    );
    futures::stream::poll_fn(move |cx| {
        let mut channel = channel.lock().unwrap_or_else(PoisonError::into_inner);
        match channel.events.pop_front() {
            Some(event) => Poll::Ready(Some(Ok(event.map(|o| crate::convert::decode::<K>(&o))))),
            None => {
                // A burst (a relist of thousands of objects) leaves its
                // capacity behind: give it back once the stream has caught up.
                if channel.events.capacity() > 1024 {
                    channel.events = VecDeque::new();
                }
                channel.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    })
}

/// What a list may return (`resourceVersion` of the first list).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ListSemantic {
    /// The most recent state (`resourceVersion` unset): a quorum read,
    /// kube's default.
    #[default]
    MostRecent,
    /// Any state the API server has, however old (`resourceVersion="0"`):
    /// cheaper, and what kube suggests for controllers, but a relist after
    /// a restart may go back in time, as issue #59848's kubelet did.
    Any,
}

/// How the first state is fetched.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InitialListStrategy {
    /// A list, then a watch.
    #[default]
    ListWatch,
    /// A watch-list (KEP-3157): a consistent stream of the current state.
    StreamingList,
}

/// What a watch selects and how it lists, as kube's `watcher::Config`.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Label selector, e.g. `app=web`.
    pub label_selector: Option<String>,
    /// Field selector, e.g. `spec.nodeName=node-1`.
    pub field_selector: Option<String>,
    /// The server-side timeout of a watch (the host manages watches; kept
    /// for kube's API).
    pub timeout: Option<u32>,
    /// What the first list may return.
    pub list_semantic: ListSemantic,
    /// How the first state is fetched.
    pub initial_list_strategy: InitialListStrategy,
    /// Page size of the first list (the host lists whole; kept for kube's API).
    pub page_size: Option<u32>,
    /// Whether to ask for bookmarks (the host handles them).
    pub bookmarks: bool,
}

/// kube's defaults: a quorum list (`ListSemantic::MostRecent`) then a
/// watch, with bookmarks, in pages of 500.
impl Default for Config {
    fn default() -> Self {
        Config {
            label_selector: None,
            field_selector: None,
            timeout: None,
            list_semantic: ListSemantic::MostRecent,
            initial_list_strategy: InitialListStrategy::ListWatch,
            page_size: Some(500),
            bookmarks: true,
        }
    }
}

impl Config {
    /// Only objects whose labels match `label_selector`.
    #[must_use]
    pub fn labels(mut self, label_selector: &str) -> Self {
        self.label_selector = Some(label_selector.to_owned());
        self
    }

    /// Only objects whose fields match `field_selector`.
    #[must_use]
    pub fn fields(mut self, field_selector: &str) -> Self {
        self.field_selector = Some(field_selector.to_owned());
        self
    }

    /// The first list reads any state the API server has
    /// (`resourceVersion="0"`), from its cache.
    #[must_use]
    pub fn any_semantic(mut self) -> Self {
        self.list_semantic = ListSemantic::Any;
        self
    }

    /// The first list reads the most recent state (a quorum read).
    #[must_use]
    pub fn list_semantic(mut self, semantic: ListSemantic) -> Self {
        self.list_semantic = semantic;
        self
    }

    /// The first state comes from a watch-list (consistent).
    #[must_use]
    pub fn streaming_lists(mut self) -> Self {
        self.initial_list_strategy = InitialListStrategy::StreamingList;
        self
    }

    /// Asks for no bookmarks.
    #[must_use]
    pub fn disable_bookmarks(mut self) -> Self {
        self.bookmarks = false;
        self
    }

    /// The manifest's `listMode` this configuration asks for.
    pub(crate) fn list_mode(&self) -> recon_abi::ListMode {
        match (self.initial_list_strategy, self.list_semantic) {
            (InitialListStrategy::StreamingList, _) => recon_abi::ListMode::Consistent,
            (_, ListSemantic::MostRecent) => recon_abi::ListMode::Quorum,
            (_, ListSemantic::Any) => recon_abi::ListMode::Any,
        }
    }
}

/// A watch failed. In a Recon plugin the host runs every list and watch
/// and relists by itself, so no stream yields one; the type is kube's.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The first list failed.
    #[error("failed to perform initial object list: {0}")]
    InitialListFailed(#[source] crate::Error),
    /// A watch could not start.
    #[error("failed to start watching object: {0}")]
    WatchStartFailed(#[source] crate::Error),
    /// A watch failed.
    #[error("error returned by apiserver during watch: {0}")]
    WatchError(#[source] Box<kube_core::Status>),
    /// A watch stream failed.
    #[error("watch stream failed: {0}")]
    WatchFailed(#[source] crate::Error),
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// kube's combinators on a watcher stream.
pub trait WatchStreamExt: Stream {
    /// Kept for kube's API: the host retries lists and watches itself.
    fn default_backoff(self) -> Self
    where
        Self: Sized,
    {
        self
    }

    /// The objects added or changed (from `Apply` and `InitApply`).
    fn applied_objects<K>(self) -> impl Stream<Item = Result<K>>
    where
        Self: Stream<Item = Result<Event<K>>> + Sized,
    {
        use futures::StreamExt;
        self.filter_map(|event| {
            futures::future::ready(match event {
                Ok(Event::Apply(k) | Event::InitApply(k)) => Some(Ok(k)),
                Ok(_) => None,
                Err(e) => Some(Err(e)),
            })
        })
    }

    /// The objects added, changed or deleted.
    fn touched_objects<K>(self) -> impl Stream<Item = Result<K>>
    where
        Self: Stream<Item = Result<Event<K>>> + Sized,
    {
        use futures::StreamExt;
        self.filter_map(|event| {
            futures::future::ready(match event {
                Ok(Event::Apply(k) | Event::InitApply(k) | Event::Delete(k)) => Some(Ok(k)),
                Ok(_) => None,
                Err(e) => Some(Err(e)),
            })
        })
    }

    /// Applies `f` to the object of every event on its way, as kube's
    /// `WatchStreamExt::modify`: put before a reflector, the store keeps
    /// only what is left.
    fn modify<K, F>(self, mut f: F) -> impl Stream<Item = Result<Event<K>>>
    where
        Self: Stream<Item = Result<Event<K>>> + Sized,
        F: FnMut(&mut K),
    {
        use futures::StreamExt;
        self.map(move |event| event.map(|event| event.modify(&mut f)))
    }

    /// Keeps `writer`'s store up to date with the events on their way.
    fn reflect<K>(self, writer: super::reflector::Writer<K>) -> impl Stream<Item = Result<Event<K>>>
    where
        Self: Stream<Item = Result<Event<K>>> + Sized,
        K: Resource + Clone,
    {
        super::reflector::reflector(writer, self)
    }
}

impl<S: Stream> WatchStreamExt for S {}

#[cfg(test)]
mod tests {
    use super::*;
    use recon_abi::ListMode;

    #[test]
    fn the_default_lists_the_most_recent_state_as_kubes_watcher_does() {
        // kube-runtime's `watcher::Config::default()`: `ListSemantic`'s
        // default is `MostRecent` (resourceVersion unset, a quorum read),
        // with bookmarks on and pages of 500; `any_semantic()` opts into
        // `resourceVersion="0"`, served from the API server's cache.
        let default = Config::default();
        assert_eq!(default.list_mode(), ListMode::Quorum);
        assert!(default.bookmarks);
        assert_eq!(default.page_size, Some(500));
        assert_eq!(Config::default().any_semantic().list_mode(), ListMode::Any);
        assert_eq!(Config::default().any_semantic().streaming_lists().list_mode(), ListMode::Consistent);
    }

    #[test]
    fn modify_changes_every_object_and_nothing_else() {
        // kube-runtime's `Event::modify` and `WatchStreamExt::modify`: the
        // closure sees the object of `Apply`, `Delete` and `InitApply`, in
        // stream order; `Init` and `InitDone` and errors pass unchanged.
        let events: Vec<Result<Event<String>>> = vec![
            Ok(Event::Init),
            Ok(Event::InitApply("a".into())),
            Ok(Event::InitDone),
            Ok(Event::Apply("b".into())),
            Err(Error::WatchError(Box::default())),
            Ok(Event::Delete("c".into())),
        ];
        let mut seen = Vec::new();
        let modified = futures::executor::block_on_stream(futures::stream::iter(events).modify(|s: &mut String| {
            seen.push(s.clone());
            s.push('!');
        }))
        .map(|event| event.map_err(|e| e.to_string()))
        .collect::<Vec<_>>();
        assert_eq!(
            modified,
            [
                Ok(Event::Init),
                Ok(Event::InitApply("a!".into())),
                Ok(Event::InitDone),
                Ok(Event::Apply("b!".into())),
                Err(Error::WatchError(Box::default()).to_string()),
                Ok(Event::Delete("c!".into())),
            ]
        );
        assert_eq!(seen, ["a", "b", "c"]);
        assert_eq!(Event::Apply(1).modify(|n| *n += 1), Event::Apply(2));
    }
}
