//! `kube::runtime::controller`: [`Controller`] and [`Action`], with
//! kube-runtime's signatures and the semantics bugs depend on:
//!
//! - **A queue that de-duplicates.** A trigger for an object already
//!   queued keeps the earlier of the two times; one reconcile serves both.
//! - **One reconcile per object at a time.** A trigger for an object whose
//!   reconcile is running waits until it ends, then runs again.
//! - **Triggers.** Every object of a list (`InitApply`) and every watch
//!   event (`Apply`, `Delete`) of the primary kind triggers that object;
//!   of an owned kind (`owns`), the owners of kind `K` its owner references
//!   name; of a watched kind (`watches`), what the mapper returns.
//! - **The object reconciled is the store's** at the moment the reconcile
//!   starts: stale exactly as the informer cache is. A trigger for an
//!   object the store does not hold (deleted) yields `ObjectNotFound`.
//! - **Requeues on virtual time.** `Action::requeue(d)` (from the
//!   reconciler or the error policy) queues the object again `d` of
//!   virtual time later, through the host's requeue timer.
//!
//! Objects start in the order of their due time, then of their triggers.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::error::Error as StdError;
use std::fmt::Debug;
use std::hash::Hash;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use futures::{Stream, TryFuture};
use kube_core::{DynamicObject, Resource};
use recon_abi::{EventType, Object, ObjectKey};
use serde::de::DeserializeOwned;

use super::reflector::{Key, ObjectRef, Store};
use super::watcher::{self, register};
use crate::Api;
use crate::convert;
use crate::recon::{self, SleepUntil, WatchInput};

/// What to do after a reconcile: requeue after a while, or wait for a change.
#[derive(Debug, Clone, Eq, PartialEq)]
pub struct Action {
    requeue_after: Option<Duration>,
}

impl Action {
    /// Reconcile again after `duration` of virtual time, even if nothing changes.
    #[must_use]
    pub const fn requeue(duration: Duration) -> Self {
        Action { requeue_after: Some(duration) }
    }

    /// Reconcile again only when a watch sees a change.
    #[must_use]
    pub const fn await_change() -> Self {
        Action { requeue_after: None }
    }

    /// The requeue delay, if any.
    pub fn requeue_after(&self) -> Option<Duration> {
        self.requeue_after
    }
}

/// Why one item of [`Controller::run`]'s stream is an error.
#[derive(Debug, thiserror::Error)]
pub enum Error<ReconcilerErr: 'static, QueueErr: 'static> {
    /// A reconcile was due for an object the store no longer holds.
    #[error("tried to reconcile object {0} that was not found in local store")]
    ObjectNotFound(Box<ObjectRef<DynamicObject>>),
    /// The reconciler failed for the object (the error policy has decided
    /// when to retry).
    #[error("reconciler for object {1} failed: {0}")]
    ReconcilerFailed(#[source] ReconcilerErr, Box<ObjectRef<DynamicObject>>),
    /// A watch failed (never, in a plugin: the host relists by itself).
    #[error("event queue error: {0}")]
    QueueError(#[source] QueueErr),
}

/// Tuning of a controller, as kube's `controller::Config`.
#[derive(Clone, Debug, Default)]
pub struct Config {
    debounce: Duration,
    concurrency: u16,
}

impl Config {
    /// Waits `debounce` of virtual time after a trigger before
    /// reconciling, so that a burst of events makes one reconcile.
    #[must_use]
    pub fn debounce(mut self, debounce: Duration) -> Self {
        self.debounce = debounce;
        self
    }

    /// At most `concurrency` reconciles at once (0: no limit, the default).
    #[must_use]
    pub fn concurrency(mut self, concurrency: u16) -> Self {
        self.concurrency = concurrency;
        self
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The de-duplicating queue of one controller: each object at most once,
/// at the earliest time asked for.
///
/// An object whose reconcile is running is held apart until it ends
/// (kube-runtime's scheduler holds it the same way): with every pod event
/// triggering its owner again, a large cluster keeps most of its owners
/// queued while they run, and looking past them on every start made the
/// controller's cost per event grow with the cluster.
#[derive(Debug, Default)]
pub(crate) struct Queue {
    /// Each queued object's due time and trigger number.
    due: BTreeMap<Key, (u64, u64)>,
    /// The queued objects that may start, by due time, then trigger.
    order: BTreeSet<(u64, u64, Key)>,
    /// The queued objects whose reconcile is running, in the same order.
    held: BTreeSet<(u64, u64, Key)>,
    /// The objects whose reconcile is running.
    running: BTreeSet<Key>,
    triggers: u64,
    debounce_ms: u64,
    waker: Option<Waker>,
}

impl Queue {
    /// Queues `key` at `due_ms`, unless it is queued earlier already.
    pub(crate) fn schedule(&mut self, key: Key, due_ms: u64) {
        // Every trigger wakes the runner, even one that changes nothing
        // here: it may come with the first list, which the runner waits for.
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
        let running = self.running.contains(&key);
        let queued = if running { &mut self.held } else { &mut self.order };
        if let Some(&(due, seq)) = self.due.get(&key) {
            if due <= due_ms {
                return;
            }
            queued.remove(&(due, seq, key.clone()));
        }
        self.triggers += 1;
        self.due.insert(key.clone(), (due_ms, self.triggers));
        queued.insert((due_ms, self.triggers, key));
    }

    /// A trigger from a watch: now, or after the debounce.
    fn trigger(&mut self, key: Key, now_ms: u64) {
        let due = now_ms.saturating_add(self.debounce_ms);
        self.schedule(key, due);
    }

    /// Takes up to `room` of the keys due at `now_ms` whose reconcile is
    /// not running, in order; the others stay queued.
    pub(crate) fn take_due(&mut self, now_ms: u64, room: usize) -> Vec<Key> {
        let mut started = Vec::new();
        while started.len() < room {
            let Some(first) = self.order.first() else { break };
            if first.0 > now_ms {
                break;
            }
            let (_, _, key) = self.order.pop_first().expect("there is a first");
            self.due.remove(&key);
            started.push(key);
        }
        started
    }

    /// Marks `key`'s reconcile running: a trigger for it is held until
    /// [`Queue::finished`].
    pub(crate) fn started(&mut self, key: &Key) {
        self.running.insert(key.clone());
    }

    /// Marks `key`'s reconcile ended: a trigger held meanwhile may start.
    pub(crate) fn finished(&mut self, key: &Key) {
        if self.running.remove(key)
            && let Some(&(due, seq)) = self.due.get(key)
        {
            let entry = (due, seq, key.clone());
            self.held.remove(&entry);
            self.order.insert(entry);
        }
    }

    /// The earliest time something is queued for after `now_ms`, running
    /// or not.
    pub(crate) fn next_after(&self, now_ms: u64) -> Option<u64> {
        let after = (now_ms.checked_add(1)?, 0, Key::default());
        let first = |queued: &BTreeSet<(u64, u64, Key)>| queued.range(after.clone()..).next().map(|(due, _, _)| *due);
        [first(&self.order), first(&self.held)].into_iter().flatten().min()
    }

    /// How many keys are queued.
    pub(crate) fn len(&self) -> usize {
        self.due.len()
    }
}

type SharedQueue = Arc<Mutex<Queue>>;

fn lock(queue: &SharedQueue) -> std::sync::MutexGuard<'_, Queue> {
    queue.lock().unwrap_or_else(PoisonError::into_inner)
}

fn key_of(object: &Object) -> Key {
    (object.metadata.namespace.clone(), object.metadata.name.clone())
}

/// The objects a watch input touches (a list's every object, an event's one).
fn touched<'a>(input: WatchInput<'a>) -> Vec<&'a Object> {
    match input {
        WatchInput::Listed(objects) => objects.iter().map(|o| &**o).collect(),
        WatchInput::Event(event) if event.event_type == EventType::Bookmark => Vec::new(),
        WatchInput::Event(event) => vec![&event.object],
    }
}

/// A controller of kind `K`: a reflector of `K`, the watches that trigger
/// its reconciles, and the queue between them (see the module documentation).
pub struct Controller<K: Resource> {
    reader: Store<K>,
    queue: SharedQueue,
    dyntype: K::DynamicType,
    config: Config,
    triggers: Vec<Triggers>,
}

/// A stream of the objects to reconcile (`owns_stream`): the keys each of
/// its items triggers.
type Triggers = Pin<Box<dyn Stream<Item = Vec<Key>> + Send>>;

impl<K> Controller<K>
where
    K: Clone + Resource + DeserializeOwned + Debug + 'static,
    K::DynamicType: Default + Clone + Debug + Eq + Hash,
{
    /// A controller of the objects `main_api` lists, filtered by `wc`.
    pub fn new(main_api: Api<K>, wc: watcher::Config) -> Self {
        Self::new_with(main_api, wc, K::DynamicType::default())
    }
}

impl<K> Controller<K>
where
    K: Clone + Resource + DeserializeOwned + Debug + 'static,
    K::DynamicType: Clone + Debug + Eq + Hash,
{
    /// [`Controller::new`] with a dynamic type.
    pub fn new_with(main_api: Api<K>, wc: watcher::Config, dyntype: K::DynamicType) -> Self {
        let reader = Store::empty();
        let queue = SharedQueue::default();
        let (store, triggered) = (reader.clone(), queue.clone());
        register(
            &main_api,
            &wc,
            Box::new(move |input, now| {
                match input {
                    WatchInput::Listed(objects) => {
                        store.replace(objects.iter().map(|o| (key_of(o), convert::decode(o))).collect())
                    }
                    WatchInput::Event(event) => match event.event_type {
                        EventType::Added | EventType::Modified => {
                            store.apply(key_of(&event.object), convert::decode(&event.object))
                        }
                        EventType::Deleted => store.delete(&key_of(&event.object)),
                        EventType::Bookmark => {}
                    },
                }
                let mut queue = lock(&triggered);
                touched(input).into_iter().for_each(|o| queue.trigger(key_of(o), now));
            }),
        );
        Controller { reader, queue, dyntype, config: Config::default(), triggers: Vec::new() }
    }

    /// The store the controller reads its objects from.
    pub fn store(&self) -> Store<K> {
        self.reader.clone()
    }

    /// Tunes the controller.
    #[must_use]
    pub fn with_config(mut self, config: Config) -> Self {
        lock(&self.queue).debounce_ms = millis(config.debounce);
        self.config = config;
        self
    }

    /// Also reconciles an object of kind `K` when an object of kind
    /// `Child` that it owns (an owner reference names it) changes.
    #[must_use]
    pub fn owns<Child>(self, api: Api<Child>, wc: watcher::Config) -> Self
    where
        Child: Clone + Resource<DynamicType = ()> + DeserializeOwned + Debug + 'static,
    {
        self.owns_with(api, (), wc)
    }

    /// [`Controller::owns`] with the child's dynamic type.
    #[must_use]
    pub fn owns_with<Child>(self, api: Api<Child>, _dyntype: Child::DynamicType, wc: watcher::Config) -> Self
    where
        Child: Clone + Resource + DeserializeOwned + Debug + 'static,
    {
        let triggered = self.queue.clone();
        let (kind, api_version) = (K::kind(&self.dyntype).into_owned(), K::api_version(&self.dyntype).into_owned());
        register(
            &api,
            &wc,
            Box::new(move |input, now| {
                let mut queue = lock(&triggered);
                for child in touched(input) {
                    let owners = child.metadata.owner_references.iter();
                    for owner in owners.filter(|o| o.kind == kind && o.api_version == api_version) {
                        queue.trigger((child.metadata.namespace.clone(), owner.name.clone()), now);
                    }
                }
            }),
        );
        self
    }

    /// Also reconciles an object of kind `K` when a child that it owns
    /// comes out of `trigger`: a watch of the children the caller runs
    /// itself, e.g. to share its store or to see each event on its way,
    /// as with kube's (unstable) `owns_stream`. The stream registers no
    /// watch; its [`watcher()`](super::watcher()) does. It is polled
    /// before every round of reconciles.
    #[must_use]
    pub fn owns_stream<Child: Resource<DynamicType = ()> + Send + 'static>(
        mut self,
        trigger: impl Stream<Item = Result<Child, watcher::Error>> + Send + 'static,
    ) -> Self {
        use futures::StreamExt;
        let (kind, api_version) = (K::kind(&self.dyntype).into_owned(), K::api_version(&self.dyntype).into_owned());
        let owners = trigger.map(move |child| {
            let Ok(child) = child else { return Vec::new() };
            let namespace = child.meta().namespace.clone().unwrap_or_default();
            let references = child.meta().owner_references.iter().flatten();
            references
                .filter(|o| o.kind == kind && o.api_version == api_version)
                .map(|o| (namespace.clone(), o.name.clone()))
                .collect()
        });
        self.triggers.push(Box::pin(owners));
        self
    }

    /// Also reconciles the objects `mapper` names when an object of kind
    /// `Other` changes.
    #[must_use]
    pub fn watches<Other, I>(self, api: Api<Other>, wc: watcher::Config, mapper: impl Fn(Other) -> I + 'static) -> Self
    where
        Other: Clone + Resource + DeserializeOwned + Debug + 'static,
        Other::DynamicType: Default + Debug + Clone + Eq + Hash,
        I: 'static + IntoIterator<Item = ObjectRef<K>>,
    {
        self.watches_with(api, Default::default(), wc, mapper)
    }

    /// [`Controller::watches`] with the watched kind's dynamic type.
    #[must_use]
    pub fn watches_with<Other, I>(
        self,
        api: Api<Other>,
        _dyntype: Other::DynamicType,
        wc: watcher::Config,
        mapper: impl Fn(Other) -> I + 'static,
    ) -> Self
    where
        Other: Clone + Resource + DeserializeOwned + Debug + 'static,
        I: 'static + IntoIterator<Item = ObjectRef<K>>,
    {
        let triggered = self.queue.clone();
        register(
            &api,
            &wc,
            Box::new(move |input, now| {
                for object in touched(input) {
                    let refs: Vec<Key> = mapper(convert::decode(object)).into_iter().map(|r| r.key()).collect();
                    let mut queue = lock(&triggered);
                    refs.into_iter().for_each(|key| queue.trigger(key, now));
                }
            }),
        );
        self
    }

    /// Kept for kube's API: a plugin has no signals; the host ends it.
    #[must_use]
    pub fn shutdown_on_signal(self) -> Self {
        self
    }

    /// Runs the controller: a stream of every reconcile's outcome, which
    /// must be polled (e.g. with `for_each`) for reconciles to happen, as
    /// in kube-runtime.
    pub fn run<ReconcilerFut, Ctx>(
        self,
        reconciler: impl FnMut(Arc<K>, Arc<Ctx>) -> ReconcilerFut + 'static,
        error_policy: impl Fn(Arc<K>, &ReconcilerFut::Error, Arc<Ctx>) -> Action + 'static,
        context: Arc<Ctx>,
    ) -> impl Stream<Item = Result<(ObjectRef<K>, Action), Error<ReconcilerFut::Error, watcher::Error>>>
    where
        ReconcilerFut: TryFuture<Ok = Action> + 'static,
        ReconcilerFut::Error: StdError + 'static,
        Ctx: 'static,
    {
        let mut runner = Runner {
            reader: self.reader,
            queue: self.queue,
            dyntype: self.dyntype,
            concurrency: usize::from(self.config.concurrency),
            reconciler: Box::new(reconciler),
            error_policy: Box::new(error_policy),
            context,
            triggers: self.triggers,
            running: Vec::new(),
            runner_waker: Arc::default(),
            finished: VecDeque::new(),
            timer: None,
        };
        futures::stream::poll_fn(move |cx| runner.poll_next(cx))
    }
}

/// One reconcile in progress.
struct Running<K, F> {
    /// The object's queue key.
    key: Key,
    /// The object it was given.
    object: Arc<K>,
    /// The reconciler's future.
    future: Pin<Box<F>>,
    /// Set when something it waits for is ready (and when it starts).
    woken: Arc<Woken>,
    /// The waker it is polled with, which sets `woken`.
    waker: Waker,
}

/// Whether one running reconcile has been woken since it was last polled.
/// Waking it also wakes whatever polls the runner, so the runner polls the
/// reconciles that were woken, in start order, and not the others: with
/// a hundred reconciles each waiting for its own writes, polling them all
/// for every result made a result cost the number running.
struct Woken {
    woken: AtomicBool,
    /// The waker of the task polling the runner, shared by its reconciles.
    runner: Arc<Mutex<Option<Waker>>>,
}

impl Wake for Woken {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        if let Some(runner) = self.runner.lock().unwrap_or_else(PoisonError::into_inner).as_ref() {
            runner.wake_by_ref();
        }
    }
}

/// The loop behind [`Controller::run`]'s stream.
struct Runner<K: Resource, F: TryFuture, Ctx>
where
    F::Error: 'static,
{
    reader: Store<K>,
    queue: SharedQueue,
    dyntype: K::DynamicType,
    concurrency: usize,
    #[allow(clippy::type_complexity, reason = "kube's reconciler signature, boxed")]
    reconciler: Box<dyn FnMut(Arc<K>, Arc<Ctx>) -> F>,
    #[allow(clippy::type_complexity, reason = "kube's error policy signature, boxed")]
    error_policy: Box<dyn Fn(Arc<K>, &F::Error, Arc<Ctx>) -> Action>,
    context: Arc<Ctx>,
    /// The streams given to `owns_stream`.
    triggers: Vec<Triggers>,
    /// In the order they started: polled in that order.
    running: Vec<Running<K, F>>,
    /// The waker of the task polling this runner, for the reconciles' own.
    runner_waker: Arc<Mutex<Option<Waker>>>,
    #[allow(clippy::type_complexity, reason = "the stream's item type")]
    finished: VecDeque<Result<(ObjectRef<K>, Action), Error<F::Error, watcher::Error>>>,
    timer: Option<SleepUntil>,
}

type Item<K, E> = Result<(ObjectRef<K>, Action), Error<E, watcher::Error>>;

impl<K, F, Ctx> Runner<K, F, Ctx>
where
    K: Resource + Clone + 'static,
    K::DynamicType: Clone,
    F: TryFuture<Ok = Action>,
    F::Error: StdError + 'static,
{
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Item<K, F::Error>>> {
        loop {
            self.poll_triggers(cx);
            // Before the first list nothing is reconciled, as kube waits for its store.
            let now = recon::now_ms().filter(|_| self.reader.is_ready());
            let mut progressed = false;
            if let Some(now) = now {
                progressed |= self.start_due(now);
                progressed |= self.poll_running(cx, now);
            }
            if let Some(item) = self.finished.pop_front() {
                return Poll::Ready(Some(item));
            }
            if progressed {
                continue;
            }
            let mut queue = lock(&self.queue);
            queue.waker = Some(cx.waker().clone());
            let next = now.and_then(|now| queue.next_after(now));
            drop(queue);
            self.timer = next.map(|due| match self.timer.take() {
                Some(timer) if timer.due_ms() == due => timer,
                _ => recon::sleep_until(due),
            });
            if let Some(timer) = &mut self.timer
                && Pin::new(timer).poll(cx).is_ready()
            {
                continue;
            }
            return Poll::Pending;
        }
    }

    /// Takes every item the `owns_stream` streams have ready, and queues
    /// the owners each names.
    fn poll_triggers(&mut self, cx: &mut Context<'_>) {
        let now = recon::now_ms().unwrap_or(0);
        for stream in &mut self.triggers {
            while let Poll::Ready(Some(keys)) = stream.as_mut().poll_next(cx) {
                let mut queue = lock(&self.queue);
                keys.into_iter().for_each(|key| queue.trigger(key, now));
            }
        }
    }

    /// Starts every due object that is not running, within the concurrency
    /// limit. Returns whether anything started or failed to.
    fn start_due(&mut self, now: u64) -> bool {
        let limit = if self.concurrency == 0 { usize::MAX } else { self.concurrency };
        let due = lock(&self.queue).take_due(now, limit.saturating_sub(self.running.len()));
        let started = !due.is_empty();
        for key in due {
            // A staleness mitigation may hold the sync until the informers
            // have seen this component's own writes; it is tried again later.
            if let Some(after_ms) = recon::may_sync(&self.object_key(&key)) {
                lock(&self.queue).schedule(key, now.saturating_add(after_ms));
                continue;
            }
            let object_ref = ObjectRef::<K>::from_key(&key, self.dyntype.clone());
            match self.reader.get(&object_ref) {
                Some(object) => {
                    let future = Box::pin((self.reconciler)(object.clone(), self.context.clone()));
                    lock(&self.queue).started(&key);
                    let woken = Arc::new(Woken { woken: AtomicBool::new(true), runner: self.runner_waker.clone() });
                    let waker = Waker::from(woken.clone());
                    self.running.push(Running { key, object, future, woken, waker });
                }
                None => self.finished.push_back(Err(Error::ObjectNotFound(Box::new(object_ref.erase())))),
            }
        }
        started
    }

    /// The object a queue key names, as the host names objects.
    fn object_key(&self, key: &Key) -> ObjectKey {
        ObjectKey::new(K::kind(&self.dyntype), key.0.clone(), key.1.clone())
    }

    /// Polls every running reconcile that was woken once, in start order;
    /// a finished one is requeued as its action (or the error policy)
    /// says. Returns whether any finished.
    fn poll_running(&mut self, cx: &mut Context<'_>, now: u64) -> bool {
        {
            let mut runner = self.runner_waker.lock().unwrap_or_else(PoisonError::into_inner);
            if !runner.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *runner = Some(cx.waker().clone());
            }
        }
        let mut done = false;
        let mut index = 0;
        while index < self.running.len() {
            if !self.running[index].woken.woken.swap(false, Ordering::Acquire) {
                index += 1;
                continue;
            }
            let object = self.object_key(&self.running[index].key);
            let Running { future, waker, .. } = &mut self.running[index];
            let poll = recon::reconciling(&object, || future.as_mut().try_poll(&mut Context::from_waker(waker)));
            let Poll::Ready(result) = poll else {
                index += 1;
                continue;
            };
            let Running { key, object, .. } = self.running.remove(index);
            lock(&self.queue).finished(&key);
            let object_ref = ObjectRef::<K>::from_key(&key, self.dyntype.clone());
            let (action, item) = match result {
                Ok(action) => (action.clone(), Ok((object_ref, action))),
                Err(error) => {
                    let action = (self.error_policy)(object, &error, self.context.clone());
                    (action, Err(Error::ReconcilerFailed(error, Box::new(object_ref.erase()))))
                }
            };
            if let Some(after) = action.requeue_after {
                lock(&self.queue).schedule(key, now.saturating_add(millis(after)));
            }
            self.finished.push_back(item);
            done = true;
        }
        done
    }
}

impl<K: Resource> Debug for Controller<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller").field("queued", &lock(&self.queue).len()).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> Key {
        ("default".into(), name.into())
    }

    /// A queue whose object `name` was due at 0 and is running now.
    fn running(name: &str) -> Queue {
        let mut queue = Queue::default();
        queue.schedule(key(name), 0);
        assert_eq!(queue.take_due(0, usize::MAX), [key(name)]);
        queue.started(&key(name));
        queue
    }

    #[test]
    fn the_queue_keeps_one_entry_per_object_at_its_earliest_time() {
        let mut queue = Queue::default();
        queue.schedule(key("a"), 500);
        queue.schedule(key("b"), 100);
        queue.schedule(key("a"), 100);
        queue.schedule(key("a"), 900);
        assert_eq!(queue.len(), 2);
        // Both due at 100: in the order they were triggered at that time.
        assert_eq!(queue.take_due(100, usize::MAX), [key("b"), key("a")]);
        assert_eq!(queue.len(), 0);
    }

    #[test]
    fn an_object_whose_reconcile_runs_is_held_until_it_ends() {
        let mut queue = running("a");
        // Triggered again while it runs: held, though due, and others pass it.
        queue.schedule(key("a"), 5);
        queue.schedule(key("b"), 8);
        queue.schedule(key("c"), 50);
        assert_eq!(queue.len(), 3);
        assert_eq!(queue.take_due(10, usize::MAX), [key("b")]);
        // A held object's time still counts for the timer.
        queue.schedule(key("a"), 30);
        assert_eq!(queue.next_after(10), Some(50), "a is held at 5, its earlier time");
        queue.finished(&key("a"));
        assert_eq!(queue.take_due(60, usize::MAX), [key("a"), key("c")]);
        assert_eq!(queue.len(), 0);
    }

    #[test]
    fn the_timer_counts_held_objects_due_later() {
        let mut queue = running("a");
        queue.schedule(key("a"), 40);
        queue.schedule(key("b"), 70);
        assert_eq!(queue.next_after(10), Some(40));
        assert_eq!(queue.take_due(45, usize::MAX), Vec::<Key>::new(), "a runs still");
        queue.finished(&key("a"));
        assert_eq!(queue.next_after(45), Some(70));
        assert_eq!(queue.take_due(45, usize::MAX), [key("a")]);
    }

    #[test]
    fn at_most_room_objects_start_and_the_rest_wait_their_turn() {
        let mut queue = Queue::default();
        for name in ["a", "b", "c"] {
            queue.schedule(key(name), 0);
        }
        assert_eq!(queue.take_due(0, 2), [key("a"), key("b")]);
        assert_eq!(queue.take_due(0, 0), Vec::<Key>::new());
        assert_eq!(queue.take_due(0, 5), [key("c")]);
    }
}
