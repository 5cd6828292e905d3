//! What a Recon controller author uses on top of [`recon_abi`].
//!
//! A controller receives [`recon_abi::Input`]s and returns actions. There
//! are two ways to write one:
//!
//! - **Reconcile one key** ([`reconcile`]): implement [`Reconciler`] (one
//!   function from a key to writes and a [`Requeue`]) and wrap it in a
//!   [`Runtime`], which is the [`recon_abi::Controller`] and the one input
//!   pump: every list, watch event, write result, timer and container
//!   report becomes dirty keys. Start here; every built-in controller does
//!   this (the kubelet too: its one key is its node); [`typed`] has Pod,
//!   ReplicaSet, Deployment and friends as structs.
//! - **Handle whole inputs**: implement [`recon_abi::Controller`] yourself
//!   around a [`Cache`]: feed it every list and watch event with
//!   [`Cache::apply`]; it answers with the [`Change`]s (including deletions)
//!   to map to the keys to reconcile.
//!
//! Either way, [`export_controller!`] turns the crate into a Wasm plugin
//! ([`guest`] is the ABI glue behind it). Around the loop:
//!
//! - [`Index`] keeps a secondary index (pods by owner uid, pods by node) up to
//!   date from the same changes, so no reconcile has to scan the cache.
//! - [`InFlight`] remembers the writes a controller is waiting for, so it does
//!   not repeat a write while its result, or the watch event showing it, is
//!   on its way, and retries after a failure.
//! - [`Context::get_direct`] and [`Context::list_direct`] read through the
//!   API server instead of the cache (controller-runtime's API reader);
//!   every request a [`Context`] sends gets an id its result carries, so
//!   the result finds its way back to the key that asked
//!   ([`Context::take_result`]).
//! - [`Timers`] deduplicates [`recon_abi::Action::RequeueAfter`]s;
//!   [`timer_key`] and [`parse_timer_key`] carry an object key through a timer.
//! - [`pod`], [`meta`], [`status`] and [`hash`] are the small helpers every
//!   workload controller needs on untyped objects (phase, readiness, node
//!   name, owner references, conditions, template hashes).
//! - [`events`] builds a Kubernetes Event about an object, which
//!   [`Context::publish_event`] creates (client-go's and kube-rs's recorders).
//! - [`testing`] builds objects and inputs for tests that drive a controller
//!   through `init` and `handle`.
//!
//! Nothing here reads a clock or a source of randomness, and every map is
//! ordered: a controller built on the SDK stays deterministic.

pub mod cache;
pub mod events;
pub mod guest;
pub mod hash;
pub mod in_flight;
pub mod index;
pub mod meta;
pub mod pod;
pub mod reconcile;
pub mod status;
pub mod testing;
pub mod timers;
pub mod typed;

/// The wire types, re-exported so that plugins and the export macro name
/// one version of them.
pub use recon_abi as abi;

pub use cache::{Cache, Change};
pub use guest::{capture_logs, log};
pub use in_flight::{Answered, InFlight, RETRY_AFTER_MS};
pub use index::Index;
pub use reconcile::{Context, ListParams, Reconciler, Requeue, Runtime};
pub use timers::{Timers, parse_timer_key, timer_key};
