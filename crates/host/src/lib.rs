//! The Recon plugin sandbox.
