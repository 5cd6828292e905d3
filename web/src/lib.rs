//! The Recon playground, in the browser.
//!
//! Two programs share this library:
//!
//! - **the app** (`src/bin/app.rs`, [`app`]): a Yew page with the scenario's
//!   controls, plugin upload, the [`timeline`] and the explanation of each
//!   violation. It never runs the simulator itself, so it stays responsive.
//! - **the worker** (`src/bin/worker.rs`, [`worker`]): a Web Worker that runs
//!   the simulator, with the built-in controllers linked in and uploaded
//!   plugins in the browser's own WebAssembly through `recon-host`.
//!
//! They talk in the messages of [`protocol`]: JSON requests and answers, and
//! each uploaded plugin's bytes sent once per worker as binary. Data flows
//! one way: settings → scenario text → worker → trace → timeline.

pub mod app;
#[cfg(target_arch = "wasm32")]
pub mod bench_page;
pub mod crash;
pub mod editor;
pub mod protocol;
pub mod runner;
pub mod search;
pub mod share;
pub mod shared;
pub mod timeline;
#[cfg(target_arch = "wasm32")]
pub mod worker;

pub use shared::Shared;
