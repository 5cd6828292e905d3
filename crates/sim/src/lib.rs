//! The Recon simulator: a deterministic Kubernetes control plane.
//!
//! Start with [`Sim`]: build it from a [`recon_scenario::Scenario`] and a
//! function that instantiates controllers by name ([`Instantiate`]), call
//! [`Sim::run`], and read the [`Trace`] (the `recon-trace` crate explains
//! it, draws it and exports it).
//!
//! Inside, an engine (the virtual clock, the queue, the store, the network,
//! the trace) and actors that own their state: API servers with their watch
//! caches, components (a controller process, its reflectors, its leader
//! election), nodes' runtimes. Safety and liveness checks are observers.
//! The crate's README draws the whole and says where each Kubernetes
//! behaviour lives.
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
mod event_api;
pub mod ids;
pub mod inspect;
mod lanes;
mod message;
pub mod network;
mod node;
pub mod ordering;
pub mod patch;
mod queue;
mod reflector;
pub mod rng;
mod watchers;
mod world;

pub use component::Instantiate;
pub use component::{
    BACKOFF_INITIAL_MS, BACKOFF_MAX_MS, CRASH_BACKOFF_INITIAL_MS, CRASH_BACKOFF_MAX_MS, CRASH_BACKOFF_RESET_MS,
    FAILOVER_AFTER, MAX_LOG_LINES_PER_RUN,
};
pub use error::SimError;
pub use message::{Reply, Served};
pub use ordering::{Chooser, Moment, Reconcile, StaleChooser};
/// The trace a run writes (its own crate, so readers need not carry the simulator).
pub use recon_trace::{Entry, EntryId, Event, Trace};
pub use world::Sim;
