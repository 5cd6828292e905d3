//! The deterministic Recon simulator: store, API servers and watch caches, informers, nodes, faults, checks, trace.
