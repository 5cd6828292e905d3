//! kube-rs's ConfigMap generator example, run by Recon: a
//! `ConfigMapGenerator` custom resource generates a ConfigMap holding its
//! `content`, server-side applied with an owner reference to the
//! generator; the controller owns ConfigMaps, so a change to one
//! reconciles its generator again.
//!
//! Everything below `main` is written against kube's public API only, as
//! in kube-rs's own examples. What Recon changes is how `main` starts:
//! without `#[tokio::main]`, handed to [`kube::Plugin`] by [`controller`].

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, Resource};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, CustomResource};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What can go wrong in a reconcile.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The apply of the ConfigMap failed.
    #[error("Failed to create ConfigMap: {0}")]
    ConfigMapCreationFailed(#[source] kube::Error),
    /// The generator lacks a field the ConfigMap needs.
    #[error("MissingObjectKey: {0}")]
    MissingObjectKey(&'static str),
}

/// The generator's spec: what its ConfigMap holds.
#[derive(CustomResource, Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[kube(group = "nullable.se", version = "v1", kind = "ConfigMapGenerator", namespaced)]
#[kube(shortname = "cmg")]
pub struct ConfigMapGeneratorSpec {
    /// The value of the ConfigMap's `content` key.
    pub content: String,
}

/// The field manager of the apply.
pub const MANAGER: &str = "configmapgenerator.kube-rt.nullable.se";

/// The controller calls this whenever a generator or its ConfigMap changed.
async fn reconcile(generator: Arc<ConfigMapGenerator>, ctx: Arc<Data>) -> Result<Action, Error> {
    let client = &ctx.client;
    let owner = generator.controller_owner_ref(&()).ok_or(Error::MissingObjectKey(".metadata.uid"))?;
    let mut contents = BTreeMap::new();
    contents.insert("content".to_string(), generator.spec.content.clone());
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: generator.metadata.name.clone(),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        data: Some(contents),
        ..Default::default()
    };
    let namespace = generator.metadata.namespace.as_ref().ok_or(Error::MissingObjectKey(".metadata.namespace"))?;
    let cm_api = Api::<ConfigMap>::namespaced(client.clone(), namespace);
    let name = cm.metadata.name.as_ref().ok_or(Error::MissingObjectKey(".metadata.name"))?;
    cm_api
        .patch(name, &PatchParams::apply(MANAGER), &Patch::Apply(&cm))
        .await
        .map_err(Error::ConfigMapCreationFailed)?;
    Ok(Action::requeue(Duration::from_secs(300)))
}

/// The controller calls this when a reconcile failed.
fn error_policy(_object: Arc<ConfigMapGenerator>, _error: &Error, _ctx: Arc<Data>) -> Action {
    Action::requeue(Duration::from_secs(1))
}

/// What every reconcile may use.
struct Data {
    client: Client,
}

/// The controller's `main`, as in kube-rs's example but for `#[tokio::main]`.
async fn main() -> Result<(), kube::Error> {
    let client = Client::try_default().await?;

    let cmgs = Api::<ConfigMapGenerator>::all(client.clone());
    let cms = Api::<ConfigMap>::all(client.clone());

    Controller::new(cmgs, watcher::Config::default())
        .owns(cms, watcher::Config::default())
        .shutdown_on_signal()
        .run(reconcile, error_policy, Arc::new(Data { client }))
        // kube's example logs each result here with tracing; a plugin
        // logs with kube::recon::log, which puts the line in the trace
        // (natively and under Wasm alike), so this one keeps the trace short.
        .for_each(|_res| futures::future::ready(()))
        .await;
    Ok(())
}

/// The plugin: `main`, run by Recon as the controller `configmap-generator`.
pub fn controller() -> kube::Plugin {
    kube::Plugin::new("configmap-generator", main)
}

// The Wasm plugin: `cargo build --release --target wasm32-unknown-unknown -p recon-plugin-configmap-generator`.
#[cfg(feature = "export")]
kube::export_controller!(controller());

#[cfg(test)]
mod tests;
