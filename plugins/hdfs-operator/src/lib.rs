//! The Stackable HDFS operator's ClusterRoleBinding aggregator, the part of
//! the operator that stackabletech/hdfs-operator#774 is about, written
//! against kube's public API as the operator's
//! `hdfs_clusterrolebinding_nodes_controller` is.
//!
//! HDFS's topology provider reads Nodes, so every HdfsCluster's service
//! account must be bound to the ClusterRole `hdfs-clusterrole-nodes`. The
//! operator keeps one ClusterRoleBinding, `hdfs-clusterrolebinding-nodes`,
//! whose subjects are the service accounts of all HdfsClusters. It runs a
//! kube-runtime `reflector` over HdfsClusters (metadata only upstream) and,
//! for *every* event that stream yields, reads the reflector's `Store` and
//! server-side applies the binding with one subject per cluster in it.
//!
//! Issue #774: the stream yields kube's `watcher::Event`s, and since kube
//! 0.92 (kube-rs#1494) a (re)list is `Init`, one `InitApply` per object,
//! then `InitDone`. The operator moved to those events in July 2024
//! (hdfs-operator#546) and kept re-applying on each of them; before, a
//! relist was one `Restarted(objects)` event, taken into the store before
//! the operator saw it. The store takes a relist in whole at `InitDone`,
//! so until then it holds what it held before: after a restart, nothing.
//! A restarted operator therefore applies the binding with no subjects on
//! `Init` and on every `InitApply`, and only at `InitDone` with them all:
//! meanwhile every HDFS cluster's topology provider has lost its
//! permission to read Nodes. Two fixes are component parameters:
//!
//! - `waitForInitDone: true`, the proposal: on `Init` and
//!   `InitApply` the store is not yet what the list says, so return early
//!   and apply from `InitDone`, `Apply` and `Delete` only.
//! - `waitForStoreReady: true`: apply only once the store is ready, its
//!   first list in (`Store::wait_until_ready`, kube-rs#1226, polled without
//!   blocking the stream that fills it). A later relist then applies from
//!   the previous, complete state until `InitDone` swaps the new one in.

use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleRef, Subject};
use kube::api::{Api, ObjectMeta, Patch, PatchParams};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Client, CustomResource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// An HDFS cluster. The aggregator reads only its namespace and name.
#[derive(CustomResource, Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[kube(group = "hdfs.stackable.tech", version = "v1alpha1", kind = "HdfsCluster", namespaced)]
#[serde(rename_all = "camelCase")]
pub struct HdfsClusterSpec {
    /// How many DataNodes it runs (not read by the aggregator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_nodes: Option<u32>,
}

/// The binding every cluster's service account is a subject of.
pub const BINDING: &str = "hdfs-clusterrolebinding-nodes";
/// The ClusterRole it binds: read Nodes, for the topology provider.
pub const CLUSTER_ROLE: &str = "hdfs-clusterrole-nodes";
/// The field manager of the apply (the operator's).
pub const FIELD_MANAGER: &str = "hdfs.stackable.tech_hdfs-operator";

/// The service account a cluster's pods run as (stackable-operator's
/// `build_rbac_resources`: `{cluster}-serviceaccount`).
pub fn service_account_name(cluster: &str) -> String {
    format!("{cluster}-serviceaccount")
}

/// What the aggregator waits for before it applies (the fixes).
#[derive(Clone, Copy, Debug, Default)]
struct Wait {
    /// Skip `Init` and `InitApply`: the proposal.
    for_init_done: bool,
    /// Skip every event until the store's first list is in.
    for_store_ready: bool,
}

/// Called for every event of the reflector's stream, after the store took
/// it in, as the operator's `reconcile` is.
async fn reconcile(
    client: Client,
    store: &Store<HdfsCluster>,
    ev: watcher::Result<watcher::Event<HdfsCluster>>,
    wait: Wait,
) {
    match &ev {
        Ok(watcher::Event::Apply(o)) => kube::recon::log(&format!("saw updated object {}", ObjectRef::from_obj(o))),
        Ok(watcher::Event::Delete(o)) => kube::recon::log(&format!("saw deleted object {}", ObjectRef::from_obj(o))),
        Ok(watcher::Event::InitApply(o)) => {
            kube::recon::log(&format!("restarted reflector: {}", ObjectRef::from_obj(o)));
        }
        Ok(watcher::Event::Init | watcher::Event::InitDone) => {}
        Err(error) => kube::recon::log(&format!("failed to update reflector: {error}")),
    }
    if wait.for_init_done && matches!(ev, Ok(watcher::Event::Init | watcher::Event::InitApply(_)) | Err(_)) {
        return;
    }
    // `wait_until_ready` resolves at once when the first list is in; the
    // stream that fills the store is the one calling us, so awaiting it
    // here would wait forever (kube-rs#1226): ask without waiting.
    if wait.for_store_ready && store.wait_until_ready().now_or_never().is_none() {
        return;
    }

    // One subject per HdfsCluster in the store.
    let subjects: Vec<Subject> = store
        .state()
        .iter()
        .map(|cluster| Subject {
            kind: "ServiceAccount".to_owned(),
            name: service_account_name(&cluster.name_any()),
            namespace: cluster.namespace(),
            ..Subject::default()
        })
        .collect();
    let binding = ClusterRoleBinding {
        metadata: ObjectMeta { name: Some(BINDING.to_owned()), ..ObjectMeta::default() },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".to_owned(),
            kind: "ClusterRole".to_owned(),
            name: CLUSTER_ROLE.to_owned(),
        },
        subjects: Some(subjects),
    };
    let api: Api<ClusterRoleBinding> = Api::all(client);
    match api.patch(BINDING, &PatchParams::apply(FIELD_MANAGER), &Patch::Apply(&binding)).await {
        Ok(_) => kube::recon::log(&format!(
            "ClusterRoleBinding has been successfully patched: {} subjects",
            binding.subjects.as_ref().map_or(0, Vec::len)
        )),
        Err(e) => kube::recon::log(&format!("{e}")),
    }
}

/// The operator's `main`, the aggregator's part of it.
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let wait = Wait {
        for_init_done: kube::recon::param("waitForInitDone")?.unwrap_or(false),
        for_store_ready: kube::recon::param("waitForStoreReady")?.unwrap_or(false),
    };
    let client = Client::try_default().await?;
    // Made before the first wait, so the manifest lets it write bindings.
    let _bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
    let (store, writer) = reflector::store();
    let store = Arc::new(store);
    reflector::reflector(writer, watcher(Api::<HdfsCluster>::all(client.clone()), watcher::Config::default()))
        .then(|ev| {
            let (client, store) = (client.clone(), store.clone());
            async move { reconcile(client, &store, ev, wait).await }
        })
        .collect::<()>()
        .await;
    Ok(())
}

/// The plugin: `main`, run by Recon as the controller `hdfs-operator`.
pub fn controller() -> kube::Plugin {
    kube::Plugin::new("hdfs-operator", main)
}

// The Wasm plugin: `cargo build --release --target wasm32-unknown-unknown -p recon-plugin-hdfs-operator`.
#[cfg(feature = "export")]
kube::export_controller!(controller());

#[cfg(test)]
mod tests;
