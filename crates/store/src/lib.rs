//! An etcd-like MVCC store: revisions, an append-only event log, compaction, compare-and-swap.
