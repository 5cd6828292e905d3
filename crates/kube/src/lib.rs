//! The kube-rs API, served by Recon: a kube-rs controller's reconcile code,
//! unchanged, as a Recon plugin.
//!
//! A controller's `Cargo.toml` points its `kube` dependency here:
//!
//! ```toml
//! kube = { package = "recon-kube", path = "…/crates/kube" }
//! ```
//!
//! and `use kube::{Api, Client, CustomResource, ResourceExt}`,
//! `kube::api::{Patch, PatchParams, …}` and
//! `kube::runtime::{Controller, controller::Action, watcher, finalizer}`
//! mean what they mean with kube 5.
//!
//! # What this crate owns, and what it re-exports
//!
//! The real crates, wherever they build for `wasm32-unknown-unknown`:
//! `k8s-openapi` for every built-in type (a controller depends on it as
//! usual, without a version feature: this crate picks one), `kube-core`
//! (as [`core`], and in [`api`]: `Resource`, `ResourceExt`, the params,
//! `ObjectList`, `Status`) and `kube-derive`'s `#[derive(CustomResource)]`
//! and `#[derive(Resource)]`.
//! What cannot build for the sandbox (kube-client's HTTP client and
//! kube-runtime on tokio) is written here, with kube's signatures:
//!
//! - [`Client`] and [`Api`] ([`api`]): every call is one request of the
//!   plugin ABI with a request id, whose future completes when the host
//!   delivers its result (the table in [`api`] says which call is which
//!   action). An API server's refusal is [`Error::Api`] with its code and
//!   reason.
//! - [`runtime`]: [`Controller`](runtime::Controller) (`new`, `owns`, `owns_stream`,
//!   `watches`, `run`), reflector [`Store`](runtime::Store)s fed by the
//!   host's informers (so as stale as the simulated cache), requeues on
//!   virtual time, [`finalizer()`](runtime::finalizer()), and the
//!   [`watcher()`](runtime::watcher()) stream with `reflector` and
//!   `WatchStreamExt`, and [`events`](runtime::events)' `Recorder`. Not
//!   yet: `reconcile_all_on`, `reconcile_on`, `graceful_shutdown_on`,
//!   `for_stream`.
//! - [`recon`]: [`Plugin`], the Recon controller that runs the
//!   controller's `main` on a single-threaded, deterministic executor
//!   ([`executor`]): a call of the plugin feeds the host's input to the
//!   futures waiting for it and polls every ready task until all wait.
//!   Also what Recon gives a controller beyond kube's API:
//!   [`recon::param`] (the component's parameters, where a real
//!   controller reads flags), virtual time ([`recon::now_ms`],
//!   [`recon::sleep`]) and [`recon::last_sync_resource_version`].
//!
//! # How `main` changes
//!
//! Only its first line, and how it is exported. A kube-rs controller's
//!
//! ```ignore
//! #[tokio::main]
//! async fn main() -> anyhow::Result<()> {
//!     let client = Client::try_default().await?;
//!     Controller::new(Api::<Generator>::all(client.clone()), watcher::Config::default())
//!         .owns(Api::<ConfigMap>::all(client.clone()), watcher::Config::default())
//!         .run(reconcile, error_policy, Arc::new(Data { client }))
//!         .for_each(|_| futures::future::ready(()))
//!         .await;
//!     Ok(())
//! }
//! ```
//!
//! loses `#[tokio::main]` and is handed to a [`Plugin`], in a library crate
//! (`crate-type = ["cdylib", "rlib"]`):
//!
//! ```ignore
//! pub fn controller() -> kube::Plugin {
//!     kube::Plugin::new("configmap-generator", main)
//! }
//! #[cfg(feature = "export")]
//! kube::export_controller!(controller());
//! ```
//!
//! Each fresh instance (every start and restart of the component) runs
//! `main` from the start. The watches its controllers register before
//! `main` first waits become the manifest's watches, and every kind an
//! `Api` was made for by then may be read and written (every verb), and
//! so may every kind declared with [`Plugin::allow`] (the ClusterRole of a
//! kind only used inside reconciles); the
//! first list after a (re)start reads as the strictest
//! [`watcher::Config`](runtime::watcher::Config) asks (by default, as
//! kube's, `MostRecent`: a quorum read; `any_semantic()` reads the API
//! server's cache, however stale). A `main` that returns an error ends the instance, as the
//! process would exit.
//!
//! # What a plugin cannot do
//!
//! There is no network, clock, thread or randomness in the sandbox: time is
//! the host's virtual time ([`recon::sleep`], `Action::requeue`), and a
//! call outside a plugin call panics with a message that says so.

pub mod api;
pub mod client;
mod convert;
pub mod error;
pub mod executor;
pub mod recon;
pub mod runtime;

/// kube-core, as kube re-exports it (the `CustomResource` derive names
/// `kube::core`).
pub use kube_core as core;

pub use api::Api;
pub use client::Client;
pub use convert::{check_change, check_object};
pub use error::{Error, Result};
pub use kube_core::{CustomResourceExt, Resource, ResourceExt};
pub use kube_derive::CustomResource;
/// kube-derive's `Resource` derive, as kube re-exports it: a type of one's
/// own with a built-in kind's `Resource` (`#[resource(inherit = Pod)]`),
/// to list and watch only the fields it declares.
pub use kube_derive::Resource;
pub use recon::{Native, Plugin};
/// Exports a [`Plugin`] as the Wasm plugin's ABI (the SDK's macro).
pub use recon_sdk::export_controller;
