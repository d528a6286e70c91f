//! [`ManagerError`]: why a manager could not start or stopped.

use std::net::SocketAddr;
use std::time::Duration;

use super::runnable::BoxError;
use crate::leaderelection::LeaderElectionError;

/// Why [`ManagerBuilder::build`](super::ManagerBuilder::build) or
/// [`Manager::start`](super::Manager::start) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManagerError {
    /// The client could not be built from the configuration.
    #[error("cannot create the client")]
    Client(#[source] crate::Error),
    /// The metrics and health probe server could not listen (the address is in use, or
    /// not this machine's); choose another with `probe_address`.
    #[error("cannot serve metrics and health probes on {address}")]
    Probes {
        /// The address asked for.
        address: SocketAddr,
        /// The listener's error.
        #[source]
        source: std::io::Error,
    },
    /// The webhook server could not start (its certificate, or its address).
    #[error("cannot start the webhook server")]
    WebhookServer(#[source] crate::webhook::WebhookServerError),
    /// The leader election settings break client-go's rules (lease duration > renew
    /// deadline > retry period × 1.2) or the identity is empty.
    #[error("invalid leader election settings")]
    LeaderElection(#[source] LeaderElectionError),
    /// This replica stopped leading without being asked to (the Lease was not renewed
    /// within the renew deadline): its controllers stopped, and the process should exit
    /// so that a restart campaigns again (controller-runtime exits the same way).
    #[error("leader election lost")]
    LeaderElectionLost,
    /// A runnable returned an error, which stopped the manager.
    #[error("runnable {name} failed")]
    Runnable {
        /// The runnable's name.
        name: String,
        /// Its error.
        #[source]
        source: BoxError,
    },
    /// Some runnables had not returned when the graceful shutdown timeout ran out; they
    /// were left running (cancelled, but stuck) and the manager stopped anyway.
    #[error(
        "runnables {pending:?} did not stop within the graceful shutdown timeout of {timeout:?}"
    )]
    GracefulShutdownTimeout {
        /// The timeout.
        timeout: Duration,
        /// The names of the runnables still running.
        pending: Vec<String>,
    },
}
