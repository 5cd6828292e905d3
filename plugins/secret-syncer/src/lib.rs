//! kube-rs's secret syncer example, run by Recon: every ConfigMap
//! labelled `configmap-secret-syncer.nullable.se/sync=true` gets a Secret
//! `cm---{name}` in its namespace holding its data, server-side applied;
//! a finalizer holds the ConfigMap until that Secret is deleted, because
//! the Secret has no owner reference for the garbage collector to follow.
//!
//! Everything below `main` is written against kube's public API only.
//! What Recon changes: `main` has no `#[tokio::main]` and is handed to
//! [`kube::Plugin`] by [`controller`], which also declares the Secrets the
//! reconciles write (`Plugin::allow`, the plugin's ClusterRole).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Client;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, Resource};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::finalizer::{Event, finalizer};
use kube::runtime::watcher;

/// What can go wrong in a reconcile.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The ConfigMap has no name.
    #[error("NoName")]
    NoName,
    /// The ConfigMap has no namespace.
    #[error("NoNamespace")]
    NoNamespace,
    /// The apply of the Secret failed.
    #[error("UpdateSecret: {0}")]
    UpdateSecret(#[source] kube::Error),
    /// The deletion of the Secret failed.
    #[error("DeleteSecret: {0}")]
    DeleteSecret(#[source] kube::Error),
}

type Result<T, E = Error> = std::result::Result<T, E>;

/// The label that makes a ConfigMap synced.
pub const SYNC_LABEL: &str = "configmap-secret-syncer.nullable.se/sync";
/// The finalizer that holds a synced ConfigMap until its Secret is gone.
pub const FINALIZER: &str = "configmap-secret-syncer.nullable.se/cleanup";
/// The field manager of the apply.
pub const MANAGER: &str = "configmap-secret-syncer.nullable.se";

/// The Secret a ConfigMap is synced to.
fn secret_name_for_configmap(cm: &ConfigMap) -> Result<String> {
    Ok(format!("cm---{}", cm.metadata.name.as_deref().ok_or(Error::NoName)?))
}

async fn apply(cm: Arc<ConfigMap>, secrets: &Api<Secret>) -> Result<Action> {
    let name = secret_name_for_configmap(&cm)?;
    let secret = Secret {
        metadata: ObjectMeta { name: Some(name.clone()), ..ObjectMeta::default() },
        string_data: cm.data.clone(),
        data: cm.binary_data.clone(),
        ..Secret::default()
    };
    secrets
        .patch(&name, &PatchParams::apply(MANAGER).force(), &Patch::Apply(&secret))
        .await
        .map_err(Error::UpdateSecret)?;
    Ok(Action::await_change())
}

async fn cleanup(cm: Arc<ConfigMap>, secrets: &Api<Secret>) -> Result<Action> {
    secrets
        .delete(&secret_name_for_configmap(&cm)?, &DeleteParams::default())
        .await
        .map(|_| ())
        .or_else(|err| match err {
            // Already gone: nothing to clean up.
            kube::Error::Api(err) if err.code == 404 => Ok(()),
            err => Err(err),
        })
        .map_err(Error::DeleteSecret)?;
    Ok(Action::await_change())
}

/// The controller's `main`, as in kube-rs's example but for `#[tokio::main]`.
async fn main() -> Result<(), kube::Error> {
    let kube = Client::try_default().await?;
    let all_cms = Api::<ConfigMap>::all(kube.clone());
    Controller::new(all_cms, watcher::Config::default().labels(&format!("{SYNC_LABEL}=true")))
        .run(
            move |cm, _| {
                let ns = cm.meta().namespace.clone();
                let kube = kube.clone();
                async move {
                    let ns = ns.ok_or(Error::NoNamespace).map_err(kube::runtime::finalizer::Error::ApplyFailed)?;
                    let cms: Api<ConfigMap> = Api::namespaced(kube.clone(), &ns);
                    let secrets: Api<Secret> = Api::namespaced(kube.clone(), &ns);
                    finalizer(&cms, FINALIZER, cm, |event| async {
                        match event {
                            Event::Apply(cm) => apply(cm, &secrets).await,
                            Event::Cleanup(cm) => cleanup(cm, &secrets).await,
                        }
                    })
                    .await
                }
            },
            |_obj, _err, _| Action::requeue(Duration::from_secs(2)),
            Arc::new(()),
        )
        .for_each(|_res| futures::future::ready(()))
        .await;
    Ok(())
}

/// The plugin: `main`, run by Recon as the controller `secret-syncer`,
/// allowed to write the Secrets its reconciles make `Api`s for.
pub fn controller() -> kube::Plugin {
    kube::Plugin::new("secret-syncer", main).allow::<Secret>()
}

// The Wasm plugin: `cargo build --release --target wasm32-unknown-unknown -p recon-plugin-secret-syncer`.
#[cfg(feature = "export")]
kube::export_controller!(controller());
