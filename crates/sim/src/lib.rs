//! The Recon simulator: a deterministic Kubernetes control plane.
//!
//! Start with [`Sim`]: build it from a [`recon_scenario::Scenario`] and a
//! function that instantiates controllers by name, call [`Sim::run`], and
//! read the [`Trace`]. [`explain`] turns a violation into its causal chain
//! in plain words.
//!
//! What is simulated, one module each:
//! - the store (etcd): the `recon-store` crate — revisions, an event log,
//!   compaction, compare-and-swap;
//! - API servers ([`api`] for the request types and the resourceVersion
//!   semantics table, [`cache`] for the watch cache): reads served from the
//!   cache or the store, KEP-2340 consistent reads, lag, partitions;
//! - components: a controller instance per (re)start, with the host running
//!   list+watch for it, relisting, backing off and failing over;
//! - nodes: container runtimes, the ground truth the safety checks read;
//! - the network ([`network`]): seeded latency, in-order links.
//!
//! Determinism: one seed; every random draw comes from [`rng::Rng`] streams
//! derived from it; time is virtual; no hash-map iteration is observable.
//! The same scenario and seed give the byte-identical trace on every
//! platform, which [`Trace::hash`] makes easy to check.

mod admission;
pub mod api;
mod apiserver;
pub mod cache;
mod checks;
mod component;
mod election;
mod engine;
mod error;
pub mod inspect;
mod lanes;
mod message;
pub mod network;
mod node;
mod reflector;
pub mod rng;
mod world;

pub use component::Instantiate;
pub use component::{
    BACKOFF_INITIAL_MS, BACKOFF_MAX_MS, CRASH_BACKOFF_INITIAL_MS, CRASH_BACKOFF_MAX_MS, CRASH_BACKOFF_RESET_MS,
    FAILOVER_AFTER,
};
pub use error::SimError;
pub use message::{Client, Reply, Served};
/// The trace a run writes (its own crate, so readers need not carry the simulator).
pub use recon_trace::{Entry, EntryId, Event, Trace};
pub use world::Sim;
