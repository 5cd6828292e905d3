//! Built-in ReplicaSet controller.
