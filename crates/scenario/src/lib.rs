//! The Recon scenario file format.

mod model;
pub use model::*;
