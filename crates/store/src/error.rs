//! Why a store operation was refused.

use recon_abi::ObjectKey;

use crate::Revision;

/// Why a store operation was refused. A refused operation changes nothing.
///
/// An error names the object ([`ObjectKey`]), not its storage key, so that
/// whoever reports it names the object as every other message does.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// A compare-and-swap failed: the key was modified after the revision the
    /// caller based its write on. Re-read the object and retry.
    #[error("{key} was modified at revision {actual}, after the expected revision {expected}; re-read it and retry")]
    Conflict {
        /// The object written.
        key: ObjectKey,
        /// The mod revision the caller expected the key to have.
        expected: Revision,
        /// The key's actual mod revision.
        actual: Revision,
    },
    /// The key does not exist (it was never created, or it was deleted).
    #[error("{key} does not exist")]
    NotFound {
        /// The object asked for.
        key: ObjectKey,
    },
    /// A create named a key that already exists. Update it, or delete it first.
    #[error("{key} already exists")]
    AlreadyExists {
        /// The object asked for.
        key: ObjectKey,
    },
    /// The requested revision is older than the compaction point, so its
    /// history is gone (Kubernetes answers `410 Gone`). Re-read at the current
    /// revision and continue from there.
    #[error("revision {requested} has been compacted; the oldest revision still available is {compacted}")]
    Compacted {
        /// The revision asked for.
        requested: Revision,
        /// The compaction point: the oldest revision still readable.
        compacted: Revision,
    },
    /// The requested revision has not been written yet. Wait for the store to
    /// reach it, or read at the current revision.
    #[error("revision {requested} is newer than the store's current revision {current}")]
    FutureRevision {
        /// The revision asked for.
        requested: Revision,
        /// The store's current revision.
        current: Revision,
    },
}
