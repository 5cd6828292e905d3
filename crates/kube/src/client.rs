//! `kube::Client`: the connection to the API server. In a Recon plugin
//! there is one, the component's own, reached through the plugin's calls;
//! a `Client` only carries the default namespace.

use crate::error::Result;

/// The component's API server, as kube's `Client` (cheap to clone).
#[derive(Clone, Debug)]
pub struct Client {
    default_namespace: String,
}

impl Client {
    /// The component's client, as `Client::try_default` finds the
    /// in-cluster configuration of a pod. Never fails in a plugin.
    pub async fn try_default() -> Result<Client> {
        Ok(Client { default_namespace: "default".to_owned() })
    }

    /// The namespace `Api::default_namespaced` uses: `default`.
    pub fn default_namespace(&self) -> &str {
        &self.default_namespace
    }
}
