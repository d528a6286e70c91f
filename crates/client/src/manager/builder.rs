//! [`ManagerBuilder`]: a [`Manager`]'s options (controller-runtime's `manager.Options`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::controller_manager::{Election, Manager};
use super::error::ManagerError;
use crate::config::Config;
use crate::informers::SharedInformerFactory;
use crate::leaderelection::LeaderElectionConfig;
use crate::metrics::{Metrics, MetricsServer};
use crate::rest::Client;
use crate::webhook::WebhookServerBuilder;

/// How long [`Manager::start`] waits for its runnables to stop (controller-runtime's
/// `GracefulShutdownTimeout` default).
pub const DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

type TweakFactory = Box<dyn FnOnce(SharedInformerFactory) -> SharedInformerFactory + Send>;

/// Options of a [`Manager`]; [`build`](Self::build) makes the client, the informer factory
/// and the probe server.
///
/// Defaults: no leader election (when enabled: client-go's 15 s lease, 10 s renew
/// deadline, 2 s retry period, and the Lease released on stop), no probe server, a 30 s
/// graceful shutdown.
#[must_use = "a builder does nothing until `build` is called"]
pub struct ManagerBuilder {
    config: Config,
    election: Option<(String, String)>,
    identity: Option<String>,
    election_config: LeaderElectionConfig,
    probe_address: Option<SocketAddr>,
    graceful_shutdown_timeout: Duration,
    tweak_factory: Option<TweakFactory>,
    webhook_server: Option<WebhookServerBuilder>,
}

impl ManagerBuilder {
    pub(super) fn new(config: Config) -> Self {
        ManagerBuilder {
            config,
            election: None,
            identity: None,
            election_config: LeaderElectionConfig::default().release_on_cancel(true),
            probe_address: None,
            graceful_shutdown_timeout: DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT,
            tweak_factory: None,
            webhook_server: None,
        }
    }

    /// Elect a leader among the replicas on the Lease `namespace/name`; runnables that
    /// need leader election run only on the leader.
    pub fn leader_election(mut self, namespace: &str, name: &str) -> Self {
        self.election = Some((namespace.to_owned(), name.to_owned()));
        self
    }

    /// This replica's identity in the Lease (default: `$HOSTNAME` or `kubeclient`, then
    /// `_` and a random suffix, as controller-runtime's hostname + UUID).
    pub fn leader_election_identity(mut self, identity: &str) -> Self {
        self.identity = Some(identity.to_owned());
        self
    }

    /// The election's timings and release-on-cancel (default: client-go's 15 s / 10 s /
    /// 2 s, released on stop). The name and the master-status metric are set by the
    /// manager.
    pub fn leader_election_config(mut self, config: LeaderElectionConfig) -> Self {
        self.election_config = config;
        self
    }

    /// Serve `/metrics`, `/healthz` and `/readyz` on `address` (port 0 picks a free one;
    /// [`Manager::probe_address`] tells which).
    pub fn probe_address(mut self, address: SocketAddr) -> Self {
        self.probe_address = Some(address);
        self
    }

    /// How long a stop waits for the runnables (default
    /// [`DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT`]).
    pub fn graceful_shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.graceful_shutdown_timeout = timeout;
        self
    }

    /// Adjusts the shared informer factory (namespace, resync, managedFields stripping,
    /// compact cache) before any informer exists.
    pub fn informer_factory(
        mut self,
        tweak: impl FnOnce(SharedInformerFactory) -> SharedInformerFactory + Send + 'static,
    ) -> Self {
        self.tweak_factory = Some(Box::new(tweak));
        self
    }

    /// Serve admission and conversion webhooks with `server` (controller-runtime's
    /// `WebhookServer` option): it listens from [`build`](Self::build) on, on every
    /// replica (webhooks do not wait for leader election or caches), and stops with the
    /// manager. [`Manager::webhook_server`] gives its address and CA.
    pub fn webhook_server(mut self, server: WebhookServerBuilder) -> Self {
        self.webhook_server = Some(server);
        self
    }

    /// Makes the client (reporting `rest_client_*` metrics), the informer factory
    /// (reporting informer metrics) and, when asked, starts the probe server (`/readyz`
    /// answers 503 until the manager's caches synced).
    ///
    /// # Errors
    ///
    /// [`ManagerError::Client`], [`ManagerError::Probes`], [`ManagerError::WebhookServer`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe (nothing is left running).
    pub async fn build(self) -> Result<Manager, ManagerError> {
        let metrics = Arc::new(Metrics::new());
        let mut config = self.config;
        config.metrics = Some(metrics.clone());
        let client = Client::new(config).await.map_err(ManagerError::Client)?;
        let mut factory =
            SharedInformerFactory::new(client.clone()).metrics_provider(metrics.clone());
        if let Some(tweak) = self.tweak_factory {
            factory = tweak(factory);
        }
        let ready = Arc::new(AtomicBool::new(false));
        let probes = match self.probe_address {
            None => None,
            Some(address) => {
                let synced = ready.clone();
                let server = MetricsServer::start(address, metrics.clone(), move || {
                    synced.load(std::sync::atomic::Ordering::SeqCst)
                })
                .await
                .map_err(|source| ManagerError::Probes { address, source })?;
                Some(server)
            }
        };
        let webhooks = match self.webhook_server {
            None => None,
            Some(server) => Some(server.start().await.map_err(ManagerError::WebhookServer)?),
        };
        let election = self.election.map(|(namespace, name)| Election {
            identity: self.identity.unwrap_or_else(default_identity),
            config: self
                .election_config
                .name(&name)
                .master_status_metric(metrics.leader_election_master_status(&name)),
            namespace,
            name,
        });
        Ok(Manager::new(
            client,
            factory,
            metrics,
            probes,
            ready,
            election,
            self.graceful_shutdown_timeout,
        )
        .with_webhook_server(webhooks))
    }
}

impl std::fmt::Debug for ManagerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagerBuilder")
            .field("election", &self.election)
            .field("probe_address", &self.probe_address)
            .field("webhook_server", &self.webhook_server.is_some())
            .field("graceful_shutdown_timeout", &self.graceful_shutdown_timeout)
            .finish_non_exhaustive()
    }
}

/// `$HOSTNAME` (or `kubeclient`) and a random suffix, so two replicas on one host differ.
fn default_identity() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "kubeclient".to_owned());
    format!("{host}_{:016x}", fastrand::u64(..))
}
