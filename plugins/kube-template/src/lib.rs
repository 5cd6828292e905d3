//! The starting point for a kube-rs controller run by Recon (see this
//! crate's README): for every ConfigMap labelled
//! `recon.example/annotate=true`, the annotation `recon.example/keys`
//! lists its data's keys. It reconciles again every five minutes, and a
//! minute after a failed write (its error policy).
//!
//! Everything but [`controller`] and the export at the bottom is written
//! against kube's public API, as a controller for a real cluster would be.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};

/// The label that selects the ConfigMaps this controller annotates.
pub const LABEL: &str = "recon.example/annotate=true";
/// The annotation it writes.
pub const ANNOTATION: &str = "recon.example/keys";

/// What can go wrong in a reconcile.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server refused the patch.
    #[error("annotating failed: {0}")]
    Annotate(#[source] kube::Error),
}

/// What every reconcile may use.
struct Context {
    client: Client,
}

/// Annotates one ConfigMap with its keys, unless it already says them.
async fn reconcile(map: Arc<ConfigMap>, ctx: Arc<Context>) -> Result<Action, Error> {
    let keys = map.data.iter().flat_map(|data| data.keys()).cloned().collect::<Vec<_>>().join(",");
    if map.annotations().get(ANNOTATION) != Some(&keys) {
        let api = Api::<ConfigMap>::namespaced(ctx.client.clone(), &map.namespace().unwrap_or_default());
        let patch = annotation_patch(&keys);
        api.patch(&map.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await.map_err(Error::Annotate)?;
    }
    Ok(Action::requeue(Duration::from_secs(300)))
}

/// The merge patch that sets the annotation.
fn annotation_patch(keys: &str) -> ConfigMap {
    let mut patch = ConfigMap::default();
    patch.metadata.annotations = Some([(ANNOTATION.to_owned(), keys.to_owned())].into());
    patch
}

/// What to do after a failed reconcile: try again in a minute.
fn error_policy(_map: Arc<ConfigMap>, _error: &Error, _ctx: Arc<Context>) -> Action {
    Action::requeue(Duration::from_secs(60))
}

/// The controller's `main`: a kube-rs `main` without `#[tokio::main]`.
async fn main() -> Result<(), kube::Error> {
    let client = Client::try_default().await?;
    let maps = Api::<ConfigMap>::all(client.clone());
    Controller::new(maps, watcher::Config::default().labels(LABEL))
        .run(reconcile, error_policy, Arc::new(Context { client }))
        .for_each(|result| {
            if let Err(error) = result {
                kube::recon::log(&format!("reconcile failed: {error}"));
            }
            futures::future::ready(())
        })
        .await;
    Ok(())
}

/// The plugin: `main`, run by Recon as the controller `kube-template`.
pub fn controller() -> kube::Plugin {
    kube::Plugin::new("kube-template", main)
}

// Build the Wasm plugin: `cargo build --release --target wasm32-unknown-unknown -p recon-plugin-kube-template`.
#[cfg(feature = "export")]
kube::export_controller!(controller());

#[cfg(test)]
mod tests;
