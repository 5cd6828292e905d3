//! The built-in Recon controllers, by name.
