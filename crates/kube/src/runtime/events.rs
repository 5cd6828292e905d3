//! kube-runtime's `events`: a controller reports what it did as
//! `events.k8s.io/v1` Events about the objects it acted on, with kube's
//! types and signatures (`Recorder`, `Reporter`, `Event`, `EventType`).
//!
//! As kube's recorder does, a repeat of the same event (same type, reason,
//! action, reporter, regarding and related object) within six minutes is
//! not a new Event: the first is patched into a series with a count. Time
//! is the plugin's virtual time, so the names and timestamps of Events are
//! the same on every run.
//!
//! The kind must be allowed like any other: a `Recorder` made in `main`,
//! before it first waits, allows Events itself; one made inside a
//! reconcile needs [`Plugin::allow`](crate::Plugin::allow)`::<Event>()`
//! (the RBAC rule kube's documentation asks for: `create` and `patch` on
//! `events` in `events.k8s.io`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as K8sEvent, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube_core::params::{Patch, PatchParams, PostParams};

use crate::recon;
use crate::{Api, Client};

/// How long a published event is remembered for a series, as kube's
/// recorder: six minutes.
const CACHE_TTL_MS: u64 = 6 * 60 * 1000;

/// What happened, as kube's `events::Event`: the fields a controller sets.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// Normal or Warning.
    pub type_: EventType,
    /// Why the action was taken, in `PascalCase`, at most 128 characters.
    pub reason: String,
    /// A human-readable description, at most 1 kB.
    pub note: Option<String>,
    /// What was done, in `PascalCase`, at most 128 characters.
    pub action: String,
    /// Another object the event concerns (the Event's `related`).
    pub secondary: Option<ObjectReference>,
}

/// An event's severity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EventType {
    /// Nothing to worry about.
    Normal,
    /// Something may need a look.
    Warning,
}

/// Who reports: the Event's `reportingController` and
/// `reportingInstance`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Reporter {
    /// The controller's name.
    pub controller: String,
    /// Which replica of it (its pod's name); `None`: the controller's name.
    pub instance: Option<String>,
}

impl From<String> for Reporter {
    fn from(controller: String) -> Self {
        Reporter { controller, instance: None }
    }
}

/// A sandbox has no host name, so the instance is left to default to the
/// controller's name (kube reads the host name here).
impl From<&str> for Reporter {
    fn from(controller: &str) -> Self {
        Reporter { controller: controller.to_owned(), instance: None }
    }
}

/// What makes two events one series. Ordered, so the cache is iterated the
/// same way on every run.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct EventKey {
    event_type: EventType,
    action: String,
    reason: String,
    regarding: [Option<String>; 5],
    related: Option<[Option<String>; 5]>,
}

/// The fields of a reference that identify its object.
fn identity(r: &ObjectReference) -> [Option<String>; 5] {
    [r.api_version.clone(), r.kind.clone(), r.namespace.clone(), r.name.clone(), r.uid.clone()]
}

/// Publishes Events, as kube's `events::Recorder` (cheap to clone; clones
/// share their series).
#[derive(Clone)]
pub struct Recorder {
    client: Client,
    reporter: Reporter,
    /// The last Event of each series, with when it was last published.
    cache: Arc<Mutex<BTreeMap<EventKey, (K8sEvent, u64)>>>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").field("reporter", &self.reporter).finish_non_exhaustive()
    }
}

impl Recorder {
    /// A recorder for `reporter`, publishing through `client`.
    #[must_use]
    pub fn new(client: Client, reporter: Reporter) -> Self {
        // Allows Events when made before the manifest goes out.
        let _ = Api::<K8sEvent>::all(client.clone());
        Recorder { client, reporter, cache: Arc::default() }
    }

    /// Publishes `ev` about the object `reference` names, in its namespace
    /// (`default` for a cluster-scoped object): a new Event, or the next
    /// count of its series when the same event was published in the last
    /// six minutes (a merge patch, as kube's recorder sends).
    ///
    /// # Errors
    ///
    /// The API server's refusal (403 when Events are not allowed, say).
    pub async fn publish(&self, ev: &Event, reference: &ObjectReference) -> crate::Result<()> {
        let now = recon::now_ms().unwrap_or(0);
        let key = EventKey {
            event_type: ev.type_,
            action: ev.action.clone(),
            reason: ev.reason.clone(),
            regarding: identity(reference),
            related: ev.secondary.as_ref().map(identity),
        };
        let previous = {
            let mut cache = self.cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            cache.retain(|_, (_, last)| last.saturating_add(CACHE_TTL_MS) > now);
            cache.get(&key).map(|(event, _)| event.clone())
        };
        let namespace = reference.namespace.as_deref().unwrap_or("default");
        let events = Api::<K8sEvent>::namespaced(self.client.clone(), namespace);
        let event = match previous {
            Some(mut event) => {
                let count = event.series.as_ref().map_or(2, |s| s.count + 1);
                event.series = Some(EventSeries { count, last_observed_time: micro_time(now) });
                let name = event.metadata.name.clone().unwrap_or_default();
                events.patch(&name, &PatchParams::default(), &Patch::Merge(&event)).await?;
                event
            }
            None => {
                let event = self.generate_event(ev, reference, now);
                events.create(&PostParams::default(), &event).await?;
                event
            }
        };
        self.cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(key, (event, now));
        Ok(())
    }

    /// The Event kube's recorder would create, named after the object and
    /// the (virtual) time in nanoseconds.
    fn generate_event(&self, ev: &Event, reference: &ObjectReference, now: u64) -> K8sEvent {
        let name = reference.name.as_deref().unwrap_or(&self.reporter.controller);
        K8sEvent {
            action: Some(ev.action.clone()),
            reason: Some(ev.reason.clone()),
            event_time: Some(micro_time(now)),
            regarding: Some(reference.clone()),
            note: ev.note.clone(),
            metadata: ObjectMeta {
                namespace: reference.namespace.clone(),
                name: Some(format!("{name}.{:x}", u128::from(now) * 1_000_000)),
                ..ObjectMeta::default()
            },
            reporting_controller: Some(self.reporter.controller.clone()),
            reporting_instance: Some(
                self.reporter.instance.clone().unwrap_or_else(|| self.reporter.controller.clone()),
            ),
            type_: Some(match ev.type_ {
                EventType::Normal => "Normal".to_owned(),
                EventType::Warning => "Warning".to_owned(),
            }),
            related: ev.secondary.clone(),
            ..K8sEvent::default()
        }
    }
}

/// A virtual time in milliseconds as a `MicroTime`.
fn micro_time(ms: u64) -> MicroTime {
    let ms = i64::try_from(ms).unwrap_or(i64::MAX);
    MicroTime(Timestamp::from_millisecond(ms).unwrap_or(Timestamp::MAX))
}
