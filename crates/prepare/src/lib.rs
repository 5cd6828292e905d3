//! Prepare a run: a scenario and the Wasm plugins standing in for some of
//! its components, turned into what the simulator runs.
//!
//! `recon run` and `recon explore` (plugins from `--plugin COMPONENT=FILE`)
//! and the playground's worker (plugins the page uploaded) all prepare
//! their runs here, so a plugin is validated, compiled, matched to its
//! component and refused in the same words wherever it runs. Start at
//! [`Preparer::prepare`]:
//!
//! 1. [`ScenarioFile::parse`] reads the scenario and remembers where its
//!    parts are, so that one the simulator refuses is reported at its line
//!    ([`ScenarioFile::explain`]).
//! 2. [`Preparer::prepare`] takes [`Swap`]s (a component, a file name and
//!    the file's [`PluginBytes`]): each must name a component of the
//!    scenario, is compiled once per content, name and limits, and must
//!    [`fit`] the component it stands in for (a node agent needs a node).
//!    [`Preparer::check`] is the same for one plugin on its own.
//! 3. [`Prepared::instantiate`] is the simulator's [`recon_sim::Instantiate`]:
//!    the plugin where one was given, the built-in controller from
//!    [`recon_catalog`] elsewhere. A search calls it once per plan.
//!
//! Plugins are keyed by content ([`PluginKey`], a SHA-256), so that the
//! playground can send a plugin's bytes to its worker once and name it by
//! key after.
//!
//! Without its default `run` feature the crate is only [`PluginKey`],
//! [`PluginBytes`] and [`fit`]: what the playground's page needs to send
//! an upload to its worker and to say at once whether it fits.
//!
//! Where it sits: above the simulator (`recon-sim`), the built-in
//! controllers (`recon-catalog`) and the plugin sandbox (`recon-host`),
//! which know nothing of each other, and below the front ends (`recon-cli`,
//! `recon-web`); nothing it uses depends on it, so the crate graph stays
//! one-way. It is not part of `recon-host`, which would then depend on the
//! simulator and on every built-in controller to run one plugin, nor of
//! `recon-catalog`, which would then bring wasmtime to everything that only
//! wants the built-ins.

mod fit;
mod key;
#[cfg(feature = "run")]
mod prepare;

pub use fit::{Fit, fit};
pub use key::{PluginBytes, PluginKey};
#[cfg(feature = "run")]
pub use prepare::{PrepareError, Prepared, Preparer, ScenarioFile, Swap};

#[cfg(all(test, feature = "run"))]
mod tests;
