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
    /// [`LeaderElector::check`](super::LeaderElector::check): this candidate still
    /// believes it leads but has not renewed for longer than the lease plus the tolerance
    /// (the process is stuck or cut off; a health check should fail so it is restarted).
    #[error(
        "the leader election lease {lock} was last renewed {seconds:.1} s ago (lease {lease_seconds} s)"
    )]
    LeaseNotRenewed {
        /// `namespace/name` of the Lease.
        lock: String,
        /// Seconds since this candidate last saw its own record change.
        seconds: f64,
        /// The lease duration in seconds.
        lease_seconds: u64,
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
