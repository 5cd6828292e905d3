//! The Recon playground's simulation worker.
//!
//! A Web Worker (`src/main.rs`, [`worker`]) that takes the page's
//! requests ([`recon_web_protocol::ToWorker`]) and runs them: the
//! simulator with the built-in controllers linked in, uploaded plugins in
//! the browser's own WebAssembly through `recon-host`, the search for a
//! violation, and a real cluster's audit logs drawn as a trace. [`runner`] is what it does
//! with a request, [`answer`] how an answer is encoded for the page, [`search`] the search's shard of `recon explore` and
//! [`audit`] the reading of audit logs; all are plain Rust that runs
//! natively in the tests (the page's tests run them too). Every run is
//! prepared by `recon-prepare`, as `recon run` prepares its own.

pub mod answer;
pub mod audit;
pub mod crash;
#[cfg(target_arch = "wasm32")]
pub mod memory;
pub mod runner;
pub mod search;
#[cfg(target_arch = "wasm32")]
pub mod worker;

/// The worker counts what it allocates ([`memory`]), to stop a run that
/// would not fit in a tab before the allocator fails.
#[cfg(target_arch = "wasm32")]
#[global_allocator]
static ALLOCATOR: memory::Counting = memory::Counting;
