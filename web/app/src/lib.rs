//! The Recon playground's page.
//!
//! A Yew app (`src/main.rs`, [`app`]) with the scenario's controls, plugin
//! upload, the [`timeline`] and the explanation of each violation. It never
//! runs the simulator itself, so it stays responsive: its worker
//! (`recon-worker`, a second program) does, and the two talk in the
//! messages of `recon-web-protocol` (JSON requests and answers, and each
//! uploaded plugin's bytes sent once per worker as binary). The page
//! depends on the trace (`recon-trace`), not on the simulator. Data flows
//! one way: settings → scenario text → worker → trace → timeline. A first
//! visit's run of the default scenario is answered from a recording of
//! the worker ([`recorded`]), so the worker is fetched only when needed.

pub mod app;
#[cfg(target_arch = "wasm32")]
pub mod bench_page;
pub mod crash;
pub mod editor;
pub mod recorded;
pub mod share;
pub mod shared;
pub mod timeline;

pub use shared::Shared;
