//! [`LeaseLock`]: a leader election lock on a `coordination.k8s.io/v1` Lease.

use std::sync::Mutex;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::error::LeaderElectionError;
use super::leader_election_record::LeaderElectionRecord;
use crate::api::{Api, PostParams};
use crate::rest::Client;

/// A lock on one Lease (client-go's `resourcelock.LeaseLock`). It remembers the Lease it
/// last read or wrote, and an update sends that object's resourceVersion, so two
/// candidates updating from the same state cannot both succeed (the second gets 409).
///
/// # Examples
///
/// ```no_run
/// use kubeclient::leaderelection::LeaseLock;
/// # async fn run(client: kubeclient::Client) -> Result<(), Box<dyn std::error::Error>> {
/// let lock = LeaseLock::new(client, "kube-system", "my-controller", "pod-a");
/// if let Some(record) = lock.get().await? {
///     println!("held by {:?}", record.holder_identity);
/// }
/// # Ok(()) }
/// ```
#[doc(alias = "resourcelock.LeaseLock", alias = "Interface")]
pub struct LeaseLock {
    api: Api<Lease>,
    namespace: String,
    name: String,
    identity: String,
    /// The Lease as last read or written (its resourceVersion guards the next update).
    lease: Mutex<Option<Lease>>,
}

impl LeaseLock {
    /// The lock on Lease `namespace/name`, taken as `identity` (unique per candidate, e.g.
    /// the pod name).
    #[must_use]
    pub fn new(client: Client, namespace: &str, name: &str, identity: &str) -> Self {
        LeaseLock {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            identity: identity.to_owned(),
            lease: Mutex::new(None),
        }
    }

    /// This candidate's identity.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// `namespace/name` of the Lease (client-go's `Describe`).
    pub fn describe(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    fn failed(&self, verb: &'static str, source: crate::Error) -> LeaderElectionError {
        LeaderElectionError::Lock {
            lock: self.describe(),
            verb,
            source: Box::new(source),
        }
    }

    /// Reads the record; `None` when the Lease does not exist.
    ///
    /// # Errors
    ///
    /// [`LeaderElectionError::Lock`] when the GET fails other than with 404.
    pub async fn get(&self) -> Result<Option<LeaderElectionRecord>, LeaderElectionError> {
        let lease = self
            .api
            .get_opt(&self.name)
            .await
            .map_err(|err| self.failed("get", err))?;
        let record = lease.as_ref().map(|lease| {
            lease
                .spec
                .as_ref()
                .map(LeaderElectionRecord::from_lease_spec)
                .unwrap_or_default()
        });
        *crate::sync::lock(&self.lease) = lease;
        Ok(record)
    }

    /// Creates the Lease holding `record`.
    ///
    /// # Errors
    ///
    /// [`LeaderElectionError::Lock`] (409 when another candidate created it first).
    pub async fn create(&self, record: &LeaderElectionRecord) -> Result<(), LeaderElectionError> {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                namespace: Some(self.namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(record.to_lease_spec()),
        };
        let created = self
            .api
            .create(&PostParams::default(), &lease)
            .await
            .map_err(|err| self.failed("create", err))?;
        *crate::sync::lock(&self.lease) = Some(created);
        Ok(())
    }

    /// Replaces the record in the Lease last read or written, guarded by its
    /// resourceVersion.
    ///
    /// # Errors
    ///
    /// [`LeaderElectionError::LockNotInitialized`] before a `get` or `create`;
    /// [`LeaderElectionError::Lock`] (409 when the Lease changed since).
    pub async fn update(&self, record: &LeaderElectionRecord) -> Result<(), LeaderElectionError> {
        let Some(mut lease) = crate::sync::lock(&self.lease).clone() else {
            return Err(LeaderElectionError::LockNotInitialized {
                lock: self.describe(),
            });
        };
        lease.spec = Some(record.to_lease_spec());
        let updated = self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
            .map_err(|err| self.failed("update", err))?;
        *crate::sync::lock(&self.lease) = Some(updated);
        Ok(())
    }
}

impl std::fmt::Debug for LeaseLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseLock")
            .field("lease", &self.describe())
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}
