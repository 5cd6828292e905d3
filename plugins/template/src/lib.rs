//! The starting point for a Recon plugin: a controller that labels every
//! pod with the node it is bound to (`recon.example/node: node-1`).
//!
//! It is a [`Reconciler`]: [`Runtime`] keeps the cache, waits for the first
//! list, calls [`Reconciler::reconcile`] for each pod that changed, and makes
//! sure a label write is not sent twice while it is in flight. All that is
//! left is the one function below: read the pod, decide, write.
//!
//! The write is an `Update` carrying the cached `resourceVersion`: if the
//! pod changed meanwhile (the kubelet reported it Running, say) the API
//! server refuses it with Conflict, the runtime waits for the cache to show
//! the newer pod, and the reconcile runs again on it. That is optimistic
//! concurrency, as every Kubernetes controller does it.
//!
//! Copy this crate to start your own: see the README.

use recon_abi::{ABI_VERSION, ComponentConfig, Manifest, ObjectKey, Verb, WatchSpec, WritePermission};
use recon_sdk::reconcile::{Context, Reconciler, Requeue, Runtime};
use recon_sdk::typed::Pod;

/// The label this controller maintains.
pub const NODE_LABEL: &str = "recon.example/node";

/// Labels pods with their node (see the crate documentation).
#[derive(Clone, Debug, Default)]
pub struct NodeLabeler;

/// The controller the host runs: the labeler inside the SDK's runtime.
pub type Controller = Runtime<NodeLabeler>;

/// A fresh controller.
pub fn controller() -> Controller {
    Runtime::new(NodeLabeler)
}

impl Reconciler for NodeLabeler {
    fn init(&mut self, _config: &ComponentConfig) -> Manifest {
        Manifest {
            name: "template".into(),
            abi_version: ABI_VERSION,
            // Watch 0 is the kind whose keys are reconciled.
            watches: vec![WatchSpec { kind: "Pod".into(), ..WatchSpec::default() }],
            writes: vec![WritePermission { kind: "Pod".into(), verbs: vec![Verb::Update] }],
            ..Manifest::default()
        }
    }

    fn reconcile(&mut self, key: &ObjectKey, ctx: &mut Context<'_>) -> Requeue {
        // Gone, or not a pod we can read: nothing to do until it changes.
        let Some(Ok(mut pod)) = ctx.get(key).map(Pod::try_from) else { return Requeue::AwaitChange };
        let Some(node) = pod.spec.node_name.clone() else { return Requeue::AwaitChange };
        let labels = &mut pod.metadata.labels;
        if pod.metadata.deletion_timestamp.is_some() || labels.get(NODE_LABEL) == Some(&node) {
            return Requeue::AwaitChange;
        }
        labels.insert(NODE_LABEL.into(), node);
        ctx.update(pod.to_object());
        Requeue::AwaitChange
    }
}

// Export the plugin ABI when built for wasm32 (this line is all it takes).
#[cfg(feature = "export")]
recon_sdk::export_controller!(controller());

#[cfg(test)]
mod tests;
