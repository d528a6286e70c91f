//! [`LeaderElectionError`].

/// Why leader election could not be set up, or why one lock operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LeaderElectionError {
    /// The timings or identity break one of client-go's rules (lease duration > renew
    /// deadline > 1.2 x retry period > 0, a non-empty identity); the message says which.
    #[error("invalid leader election config: {0}")]
    InvalidConfig(String),
    /// [`LeaseLock::update`](super::LeaseLock::update) before the lease was read or
    /// created: call `get` or `create` first.
    #[error("lease {lock} was not read or created before an update")]
    LockNotInitialized {
        /// `namespace/name` of the Lease.
        lock: String,
    },
    /// A request for the Lease failed (the server's answer or the transport is the cause).
    #[error("lease {lock}: {verb} failed")]
    Lock {
        /// `namespace/name` of the Lease.
        lock: String,
        /// `get`, `create` or `update`.
        verb: &'static str,
        /// The client error (boxed: it is large and rare).
        #[source]
        source: Box<crate::Error>,
    },
}
