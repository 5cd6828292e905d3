//! A pod reconciler written as kube-rs's own examples are, run by Recon:
//! every Pod labelled `nullable.se/mirror-labels=true` (a label-selected
//! watch) gets the annotation `nullable.se/labels`, which lists its other
//! labels as `key=value` pairs, so that tools which only read annotations
//! see them.
//!
//! The reconcile is a read-modify-write: it takes the pod from the
//! controller's reflector store, sets the annotation and `replace`s the
//! pod. The store's `resourceVersion` goes with it, so the API server
//! refuses the write with 409 Conflict when the pod changed since the
//! version the store holds (optimistic concurrency), instead of writing
//! the store's old labels back over a newer edit. On success the pod is
//! checked again after [`RESYNC`]; on an error [`error_policy`] requeues
//! it after a back-off that doubles with each failure in a row of that pod
//! (from [`FIRST_BACKOFF`] up to [`MAX_BACKOFF`]), kept in the context and
//! reset by a success, as kube-rs users build per-object back-off.
//!
//! Everything below `main` is written against kube's public API only.
//! What Recon changes: `main` has no `#[tokio::main]` and is handed to
//! [`kube::Plugin`] by [`controller`].

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, PostParams, ResourceExt};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;

/// What can go wrong in a reconcile.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server refused the replace (409 Conflict when the pod
    /// changed since the store's version of it).
    #[error("Failed to replace pod: {0}")]
    ReplaceFailed(#[source] kube::Error),
    /// The pod lacks a field the reconcile needs.
    #[error("Missing pod field: {0}")]
    MissingField(&'static str),
}

/// The label that makes a pod reconciled (the watch's label selector).
pub const MIRROR_LABEL: &str = "nullable.se/mirror-labels";
/// The annotation that lists a pod's other labels.
pub const ANNOTATION: &str = "nullable.se/labels";
/// How long after a successful reconcile a pod is checked again.
pub const RESYNC: Duration = Duration::from_secs(5);
/// The back-off after a pod's first failed reconcile in a row.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// The longest back-off.
pub const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// What every reconcile and the error policy share.
struct Data {
    client: Client,
    /// Failed reconciles in a row, by pod (`ObjectRef`'s text); only
    /// looked up by key, so its order shows nowhere.
    failures: Mutex<BTreeMap<String, u32>>,
}

impl Data {
    fn failures(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, u32>> {
        self.failures.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The annotation's value for `labels`: every label but [`MIRROR_LABEL`],
/// as `key=value`, in key order, joined by commas.
pub fn mirrored(labels: &BTreeMap<String, String>) -> String {
    let pairs: Vec<String> =
        labels.iter().filter(|(key, _)| *key != MIRROR_LABEL).map(|(key, value)| format!("{key}={value}")).collect();
    pairs.join(",")
}

/// The back-off after `failures` failed reconciles in a row (at least one).
pub fn backoff(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    (FIRST_BACKOFF * 2u32.pow(doublings)).min(MAX_BACKOFF)
}

/// The controller calls this whenever a labelled pod changed, and
/// [`RESYNC`] after the last success.
async fn reconcile(pod: Arc<Pod>, ctx: Arc<Data>) -> Result<Action, Error> {
    let wanted = mirrored(pod.labels());
    if pod.annotations().get(ANNOTATION) != Some(&wanted) {
        let namespace = pod.namespace().ok_or(Error::MissingField(".metadata.namespace"))?;
        let pods = Api::<Pod>::namespaced(ctx.client.clone(), &namespace);
        // The store's version, resourceVersion included: a precondition.
        let mut updated = Pod::clone(&pod);
        updated.annotations_mut().insert(ANNOTATION.to_owned(), wanted);
        pods.replace(&pod.name_any(), &PostParams::default(), &updated).await.map_err(Error::ReplaceFailed)?;
    }
    ctx.failures().remove(&ObjectRef::from_obj(&*pod).to_string());
    Ok(Action::requeue(RESYNC))
}

/// The controller calls this when a reconcile failed: retry after a
/// back-off that doubles with each failure of that pod in a row.
fn error_policy(pod: Arc<Pod>, _error: &Error, ctx: Arc<Data>) -> Action {
    let mut failures = ctx.failures();
    let count = failures.entry(ObjectRef::from_obj(&*pod).to_string()).or_insert(0);
    *count += 1;
    Action::requeue(backoff(*count))
}

/// The controller's `main`, as a kube-rs example's but for `#[tokio::main]`.
async fn main() -> Result<(), kube::Error> {
    let client = Client::try_default().await?;
    let pods = Api::<Pod>::all(client.clone());
    let context = Arc::new(Data { client, failures: Mutex::default() });
    Controller::new(pods, watcher::Config::default().labels(&format!("{MIRROR_LABEL}=true")))
        .shutdown_on_signal()
        .run(reconcile, error_policy, context)
        // kube's examples log each result here; this one keeps none.
        .for_each(|_result| futures::future::ready(()))
        .await;
    Ok(())
}

/// The plugin: `main`, run by Recon as the controller `pod-reconciler`.
pub fn controller() -> kube::Plugin {
    kube::Plugin::new("pod-reconciler", main)
}

// The Wasm plugin: `cargo build --release --target wasm32-unknown-unknown -p recon-plugin-pod-reconciler`.
#[cfg(feature = "export")]
kube::export_controller!(controller());

#[cfg(test)]
mod tests;
