//! The `recon` command.
fn main() {}
