//! `kube::runtime::finalizer`: [`finalizer()`] holds an object with a
//! finalizer so that its cleanup runs before it goes, with kube-runtime's
//! signature and states:
//!
//! | object | finalizer | what happens |
//! |---|---|---|
//! | live | present | `reconcile(Event::Apply(obj))` |
//! | live | absent | the finalizer is added; `await_change` (the change reconciles again) |
//! | being deleted | present | `reconcile(Event::Cleanup(obj))`, then the finalizer is removed |
//! | being deleted | absent | nothing (`await_change`) |
//!
//! The finalizer is added and removed with a merge patch of
//! `metadata.finalizers` that carries the object's `resourceVersion`, so
//! a write based on a stale view of the finalizers fails with 409 Conflict
//! rather than overwriting another finalizer's change.

use std::error::Error as StdError;
use std::fmt::Debug;
use std::sync::Arc;

use futures::{TryFuture, TryFutureExt};
use kube_core::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::controller::Action;
use crate::Api;
use crate::api::{Patch, PatchParams};

/// What the reconcile inside [`finalizer()`] is asked to do.
#[derive(Debug)]
pub enum Event<K> {
    /// Make the world match the object (idempotent: it runs again on every change).
    Apply(Arc<K>),
    /// The object is being deleted: remove what it owns outside the
    /// cluster's garbage collection (idempotent too).
    Cleanup(Arc<K>),
}

/// Why [`finalizer()`] failed.
#[derive(Debug, thiserror::Error)]
pub enum Error<ReconcileErr: StdError + 'static> {
    /// The `Event::Apply` reconcile failed.
    #[error("failed to apply object: {0}")]
    ApplyFailed(#[source] ReconcileErr),
    /// The `Event::Cleanup` reconcile failed; the finalizer stays.
    #[error("failed to clean up object: {0}")]
    CleanupFailed(#[source] ReconcileErr),
    /// Adding the finalizer failed (409: the object changed since it was read).
    #[error("failed to add finalizer: {0}")]
    AddFinalizer(#[source] crate::Error),
    /// Removing the finalizer failed (409: the object changed since it was read).
    #[error("failed to remove finalizer: {0}")]
    RemoveFinalizer(#[source] crate::Error),
    /// The object has no name.
    #[error("object has no name")]
    UnnamedObject,
    /// The finalizer name is not a valid finalizer.
    #[error("invalid finalizer")]
    InvalidFinalizer,
}

/// Runs `reconcile` on `obj` under the finalizer `finalizer_name` (see the
/// module documentation).
pub async fn finalizer<K, ReconcileFut>(
    api: &Api<K>,
    finalizer_name: &str,
    obj: Arc<K>,
    reconcile: impl FnOnce(Event<K>) -> ReconcileFut,
) -> Result<Action, Error<ReconcileFut::Error>>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
    ReconcileFut: TryFuture<Ok = Action>,
    ReconcileFut::Error: StdError + 'static,
{
    if finalizer_name.is_empty() || finalizer_name.contains(char::is_whitespace) {
        return Err(Error::InvalidFinalizer);
    }
    let name = obj.meta().name.clone().ok_or(Error::UnnamedObject)?;
    let finalizers = obj.finalizers().to_vec();
    let holds = finalizers.iter().any(|f| f == finalizer_name);
    let deleting = obj.meta().deletion_timestamp.is_some();
    match (deleting, holds) {
        (false, true) => TryFutureExt::into_future(reconcile(Event::Apply(obj))).await.map_err(Error::ApplyFailed),
        (false, false) => {
            let mut next = finalizers;
            next.push(finalizer_name.to_owned());
            write_finalizers(api, &name, &obj, next).await.map_err(Error::AddFinalizer)?;
            // The change this write makes triggers the next reconcile.
            Ok(Action::await_change())
        }
        (true, true) => {
            let action = TryFutureExt::into_future(reconcile(Event::Cleanup(obj.clone())))
                .await
                .map_err(Error::CleanupFailed)?;
            let next = finalizers.into_iter().filter(|f| f != finalizer_name).collect();
            write_finalizers(api, &name, &obj, next).await.map_err(Error::RemoveFinalizer)?;
            Ok(action)
        }
        (true, false) => Ok(Action::await_change()),
    }
}

/// Sets `metadata.finalizers`, on condition that the object is still at
/// the version `obj` was read at.
async fn write_finalizers<K>(api: &Api<K>, name: &str, obj: &K, finalizers: Vec<String>) -> crate::Result<K>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let patch = json!({
        "metadata": { "finalizers": finalizers, "resourceVersion": obj.meta().resource_version }
    });
    api.patch(name, &PatchParams::default(), &Patch::Merge(patch)).await
}
