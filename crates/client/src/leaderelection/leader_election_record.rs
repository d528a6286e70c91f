//! [`LeaderElectionRecord`]: what a lock stores, and its mapping to a Lease's spec.

use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;

/// The state of a leader election lock (client-go's `resourcelock.LeaderElectionRecord`).
///
/// # Examples
///
/// ```
/// use kubeclient::leaderelection::LeaderElectionRecord;
///
/// let record = LeaderElectionRecord { holder_identity: "pod-a".into(), lease_duration_seconds: 15, ..Default::default() };
/// let spec = record.to_lease_spec();
/// assert_eq!(spec.holder_identity.as_deref(), Some("pod-a"));
/// assert_eq!(LeaderElectionRecord::from_lease_spec(&spec), record);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaderElectionRecord {
    /// Who holds the lock; empty once released.
    pub holder_identity: String,
    /// How long the holder's lease lasts, in seconds. Candidates measure it from when
    /// *they* saw the record change.
    pub lease_duration_seconds: i32,
    /// When the holder acquired the lock (informational).
    pub acquire_time: Option<jiff::Timestamp>,
    /// When the holder last renewed (informational: never used to judge expiry).
    pub renew_time: Option<jiff::Timestamp>,
    /// How many times the lock changed hands.
    pub leader_transitions: i32,
}

impl LeaderElectionRecord {
    /// The record a Lease's spec holds (client-go's `LeaseSpecToLeaderElectionRecord`).
    #[must_use]
    pub fn from_lease_spec(spec: &LeaseSpec) -> Self {
        LeaderElectionRecord {
            holder_identity: spec.holder_identity.clone().unwrap_or_default(),
            lease_duration_seconds: spec.lease_duration_seconds.unwrap_or(0),
            acquire_time: spec.acquire_time.as_ref().map(|t| t.0),
            renew_time: spec.renew_time.as_ref().map(|t| t.0),
            leader_transitions: spec.lease_transitions.unwrap_or(0),
        }
    }

    /// The Lease spec holding this record (client-go's `LeaderElectionRecordToLeaseSpec`).
    #[must_use]
    pub fn to_lease_spec(&self) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.holder_identity.clone()),
            lease_duration_seconds: Some(self.lease_duration_seconds),
            acquire_time: self.acquire_time.map(MicroTime),
            renew_time: self.renew_time.map(MicroTime),
            lease_transitions: Some(self.leader_transitions),
            ..LeaseSpec::default()
        }
    }
}
