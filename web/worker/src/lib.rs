//! The Recon playground's simulation worker.
//!
//! A Web Worker (`src/main.rs`, [`worker`]) that takes the page's
//! requests ([`recon_web_protocol::ToWorker`]) and runs them: the
//! simulator with the built-in controllers linked in, uploaded plugins in
//! the browser's own WebAssembly through `recon-host`, and the search for a
//! violation. [`runner`] is what it does with a request and [`search`] the
//! search's shard of `recon explore`; both are plain Rust that runs
//! natively in the tests (the page's tests run them too). Every run is
//! prepared by `recon-prepare`, as `recon run` prepares its own.

pub mod crash;
pub mod runner;
pub mod search;
#[cfg(target_arch = "wasm32")]
pub mod worker;
