//! [`StorageError`]: why the store cannot serve a read at a revision.

/// Storage failures that clients see as API errors.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StorageError {
    /// The requested revision is older than the kept history (410 Expired).
    #[error("too old resource version: {requested} ({oldest})")]
    Expired {
        /// The requested revision.
        requested: u64,
        /// The oldest revision that can still be served.
        oldest: u64,
    },
    /// The requested revision is newer than the store (504 with `ResourceVersionTooLarge`).
    #[error("Too large resource version: {requested}, current: {current}")]
    TooLarge {
        /// The requested revision.
        requested: u64,
        /// The current revision.
        current: u64,
    },
    /// The storage backend, asked for a revision older than the watch cache holds,
    /// failed (a timeout, an unreachable etcd): the Status to answer.
    #[error("{}", .0.message)]
    Backend(Box<kubeclient_machinery::Status>),
}
