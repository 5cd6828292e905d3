//! The kubelet with the first fix for Kubernetes issue #59848.
//!
//! [`KubeletFixed`] is the built-in [`Kubelet`], unchanged, except that its
//! manifest asks for [`ListMode::Quorum`]: the first list of every instance
//! (after a start or a restart) reads the most recent state from the store
//! instead of whatever the API server's watch cache holds
//! (`resourceVersion="0"`, [`ListMode::Any`], which the built-in kubelet
//! keeps, as client-go did).
//!
//! That closes the window of #59848: a kubelet that restarts while its API
//! server's cache is stale can no longer relist a pod that has since been
//! deleted and recreated elsewhere, and start it a second time. The price is
//! the one the issue discusses: the first list fails (and is retried) while
//! the API server cannot reach the store, instead of succeeding from the
//! cache. Later relists, after a watch breaks, already ask for a state at
//! least as new as the last one seen, so only the first list needed fixing.
//!
//! A scenario can still override the list mode per component; this plugin
//! only changes the default it declares. The manifest is named
//! `kubelet-fixed`, so traces tell the two apart.

use recon_abi::{ComponentConfig, Controller, Input, ListMode, Manifest, Output};
use recon_plugin_kubelet::Kubelet;

/// The name in the manifest and in the catalog.
pub const NAME: &str = "kubelet-fixed";

/// The kubelet, listing with a quorum read after every (re)start (see the
/// crate documentation).
#[derive(Clone, Debug, Default)]
pub struct KubeletFixed {
    kubelet: Kubelet,
}

impl KubeletFixed {
    /// A kubelet that learns its node in [`Controller::init`].
    pub fn new() -> KubeletFixed {
        KubeletFixed::default()
    }
}

impl Controller for KubeletFixed {
    fn init(&mut self, config: &ComponentConfig) -> Manifest {
        Manifest { name: NAME.into(), list_mode: ListMode::Quorum, ..self.kubelet.init(config) }
    }

    fn handle(&mut self, input: &Input) -> Output {
        self.kubelet.handle(input)
    }
}

// The Wasm plugin: `cargo build --release --target wasm32-unknown-unknown -p recon-plugin-kubelet-fixed`.
#[cfg(feature = "export")]
recon_sdk::export_controller!(KubeletFixed::new());

#[cfg(test)]
mod tests;
