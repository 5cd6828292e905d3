//! Events per second through the audit analysis (written in the next step).

fn main() {}
