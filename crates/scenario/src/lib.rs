//! The Recon scenario file format: what a scenario says (the cluster, its
//! staleness and faults, the workload, a timed script, the checks and the
//! expected outcome), read from YAML with located errors and written back.
//!
//! Start with [`parse`], which returns a [`Scenario`] (plain data, see the
//! `model` types re-exported here) or a [`ScenarioError`] listing every
//! problem as `file:line:column: message`. [`parse_with_source`] also
//! returns the [`SourceMap`], so that later layers can report their own
//! problems at a YAML node with [`ScenarioError::at`]. [`to_yaml`] writes a
//! scenario back. The format is described field by field in the crate's
//! `README.md`.
//!
//! ```
//! let text = "
//! name: stale-relist
//! duration: 10s
//! apiServers:
//!   - name: fresh
//!   - name: stale
//!     watchCache: {lag: 2s}
//! nodes:
//!   - name: node-1
//! components:
//!   - name: kubelet-1
//!     controller: kubelet
//!     node: node-1
//!     apiServer: fresh
//!     listMode: quorum
//! objects:
//!   - apiVersion: v1
//!     kind: Pod
//!     metadata: {name: web-0}
//!     spec: {nodeName: node-1}
//! script:
//!   - at: 3s
//!     restart: {component: kubelet-1, apiServer: stale}
//! ";
//! let scenario = recon_scenario::parse("stale-relist.yaml", text)?;
//! assert_eq!(scenario.api_servers[1].watch_cache.lag, recon_scenario::Millis(2_000));
//! // Normalisation put the pod in the default namespace.
//! assert_eq!(scenario.objects[0].metadata.namespace, "default");
//! assert_eq!(recon_scenario::parse("again.yaml", &recon_scenario::to_yaml(&scenario))?, scenario);
//!
//! let broken = text.replace("apiServer: stale", "apiServer: stael");
//! let error = recon_scenario::parse("stale-relist.yaml", &broken).unwrap_err();
//! assert_eq!(
//!     error.to_string(),
//!     "stale-relist.yaml:23:48: unknown API server `stael` (defined: fresh, stale)"
//! );
//! # Ok::<(), recon_scenario::ScenarioError>(())
//! ```

mod error;
mod kinds;
mod model;
mod source;
mod validate;
mod yaml;

pub use error::{Diagnostic, ScenarioError};
pub use kinds::{CRD_KIND, Kind, Kinds, crd_problems};
pub use model::*;
pub use source::SourceMap;
pub use yaml::{parse, parse_with_source, to_yaml};
