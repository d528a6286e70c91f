//! [`BackendError`]: why a backend call failed.

use super::super::StorageError;

/// Why a [`Backend`](super::Backend) call failed. Each maps to the Status kube-apiserver
/// answers with: not found 404, already exists and conflict 409, expired 410, too large
/// 504, timeout 504, the rest 500.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BackendError {
    /// No object is stored under the key.
    #[error("{key} not found")]
    NotFound {
        /// The key.
        key: String,
    },
    /// A create found the key taken.
    #[error("{key} already exists")]
    AlreadyExists {
        /// The key.
        key: String,
    },
    /// A conditional write found another revision than it expected.
    #[error("{key} was modified: expected revision {expected}, found {found}")]
    Conflict {
        /// The key.
        key: String,
        /// The revision the write expected.
        expected: u64,
        /// The revision stored now.
        found: u64,
    },
    /// The requested revision was compacted (410 Gone).
    #[error("too old resource version: {requested}{}", oldest.map(|o| format!(" ({o})")).unwrap_or_default())]
    Expired {
        /// The requested revision.
        requested: u64,
        /// The oldest revision that can still be served, when the backend knows it.
        oldest: Option<u64>,
    },
    /// The requested revision is newer than the backend's.
    #[error("Too large resource version: {requested}, current: {current}")]
    TooLarge {
        /// The requested revision.
        requested: u64,
        /// The current revision.
        current: u64,
    },
    /// A stored value does not decode (written by hand, or by a newer version).
    #[error("the value stored under {key} does not decode")]
    Decode {
        /// The key.
        key: String,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An object could not be encoded for storage.
    #[error("the object for {key} cannot be encoded for storage")]
    Encode {
        /// The key.
        key: String,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The backend's configuration is unusable (a missing file, a half-given pair).
    #[error("the storage configuration is unusable: {context}")]
    Config {
        /// What is wrong.
        context: String,
        /// Why, when something failed.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The backend answered with an error of its own (etcd's `etcdserver: request timed
    /// out` or `etcdserver: no leader`), which kube-apiserver passes on as a 500 whose
    /// message is the backend's.
    #[error("{message} ({context})")]
    Refused {
        /// What was being done, and where.
        context: String,
        /// The backend's own message.
        message: String,
    },
    /// The backend did not answer in time.
    #[error("the storage backend did not answer within {0:?}")]
    Timeout(std::time::Duration),
    /// The backend failed (unreachable, refused, broken stream).
    #[error("the storage backend failed: {context}")]
    Unavailable {
        /// What was being done, and where.
        context: String,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl From<StorageError> for BackendError {
    fn from(error: StorageError) -> Self {
        match error {
            StorageError::Expired { requested, oldest } => BackendError::Expired {
                requested,
                oldest: Some(oldest),
            },
            StorageError::TooLarge { requested, current } => {
                BackendError::TooLarge { requested, current }
            }
            StorageError::Backend(status) => BackendError::Unavailable {
                context: "reading the storage backend".to_owned(),
                source: status.message.into(),
            },
        }
    }
}
