//! What a Recon controller author uses on top of [`recon_abi`].
//!
//! A controller receives [`recon_abi::Input`]s and returns actions. Start with
//! [`Cache`]: feed it every list and watch event with [`Cache::apply`]; it
//! answers with the [`Change`]s (including deletions) so that the controller
//! can map each one to the keys it must reconcile, and reconcile only those.
//! Around that loop:
//!
//! - [`Index`] keeps a secondary index (pods by owner uid, pods by node) up to
//!   date from the same changes, so no reconcile has to scan the cache.
//! - [`InFlight`] remembers the writes a controller is waiting for, so it does
//!   not repeat a write while its result, or the watch event showing it, is
//!   on its way, and retries after a failure.
//! - [`Timers`] deduplicates [`recon_abi::Action::RequeueAfter`]s;
//!   [`timer_key`] and [`parse_timer_key`] carry an object key through a timer.
//! - [`pod`], [`meta`], [`status`] and [`hash`] are the small typed helpers
//!   every workload controller needs (phase, readiness, node name, owner
//!   references, conditions, template hashes).
//! - [`testing`] builds objects and inputs for tests that drive a controller
//!   through `init` and `handle`.
//!
//! Nothing here reads a clock or a source of randomness, and every map is
//! ordered: a controller built on the SDK stays deterministic.

pub mod cache;
pub mod hash;
pub mod in_flight;
pub mod index;
pub mod meta;
pub mod pod;
pub mod status;
pub mod testing;
pub mod timers;

pub use cache::{Cache, Change};
pub use in_flight::{Answered, InFlight, RETRY_AFTER_MS};
pub use index::Index;
pub use timers::{Timers, parse_timer_key, timer_key};
