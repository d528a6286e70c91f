//! Leader election on a `coordination.k8s.io/v1` Lease (client-go's
//! `tools/leaderelection`): of several replicas, one leads at a time.
//!
//! - [`LeaderElector`]: acquires the lease, renews it, calls the [`LeaderCallbacks`], and
//!   releases it on stop when asked.
//! - [`LeaderElectionConfig`]: client-go's timings (lease 15 s, renew deadline 10 s, retry
//!   period 2 s by default) and their validation.
//! - [`LeaseLock`] and [`LeaderElectionRecord`]: the lock (client-go's
//!   `resourcelock.LeaseLock`) and what it stores.
//!
//! The observed-time rule: a candidate judges whether the holder's lease expired by *its
//! own* clock, from the moment it last saw the record change, never by the timestamps the
//! holder wrote (clocks of different machines disagree). A leader stops believing it leads
//! when it could not renew within the renew deadline, before any other candidate can see
//! its lease as expired (renew deadline + retry period < lease duration).

mod error;
mod leader_election_record;
mod leader_elector;
mod lease_lock;

pub use error::LeaderElectionError;
pub use leader_election_record::LeaderElectionRecord;
pub use leader_elector::{
    DEFAULT_LEASE_DURATION, DEFAULT_RENEW_DEADLINE, DEFAULT_RETRY_PERIOD, JITTER_FACTOR,
    LeaderCallbacks, LeaderElectionConfig, LeaderElector,
};
pub use lease_lock::LeaseLock;
