//! The scale benchmark's cluster (issue 17): the cluster of any size that
//! `recon_catalog::cluster` writes (and `recon cluster` prints), which
//! `cargo xtask bench scale` runs at Kubernetes' published limits and
//! below (`tests/bin/scale.rs`).

use recon_scenario::Scenario;

pub use recon_catalog::cluster::{plugin_limits, yaml};

/// The cluster, parsed.
pub fn scenario(nodes: usize, pods: usize) -> Scenario {
    recon_scenario::parse("scale.yaml", &yaml(nodes, pods))
        .unwrap_or_else(|e| panic!("the scale scenario is invalid: {e}"))
}
