//! `kube::runtime`: kube-runtime's [`Controller`], reflector [`Store`]s,
//! watcher configuration and [`finalizer()`], run by the plugin's executor
//! on what the host's informers deliver.
//!
//! The watches a controller asks for (`Controller::new`, `owns`,
//! `watches`) are the plugin manifest's watches: the host lists and
//! watches for it, through the component's API server and with its
//! staleness, and each list or event updates the reflector [`Store`] and
//! triggers reconciles as kube-runtime's watcher would. So a store is
//! stale exactly when the simulated informer cache is.

pub mod controller;
pub mod events;
pub mod finalizer;
pub mod reflector;
pub mod watcher;

pub use controller::Controller;
pub use finalizer::finalizer;
pub use reflector::Store;
pub use reflector::reflector;
pub use watcher::{WatchStreamExt, watcher};
