//! [`Manager`] and its [`start`](Manager::start) sequence (controller-runtime's
//! `controllerManager` in `pkg/manager/internal.go`).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kubeclient_machinery::ErrorChain;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::builder::ManagerBuilder;
use super::cached_client::CachedClient;
use super::error::ManagerError;
use super::runnable::{BoxError, Runnable};
use crate::config::Config;
use crate::controller::{Controller, ControllerBuilder};
use crate::informers::{FactoryResource, SharedInformerFactory};
use crate::leaderelection::{LeaderCallbacks, LeaderElectionConfig, LeaderElector, LeaseLock};
use crate::metrics::{Metrics, MetricsServer};
use crate::rest::Client;
use crate::webhook::WebhookServer;

/// How long past its lease a leader that stopped renewing keeps `/healthz` passing
/// (client-go's `HealthzAdaptor` timeout; then a liveness probe restarts the replica).
const LEADER_HEALTH_TOLERANCE: Duration = Duration::from_secs(2);

/// Where and as whom to elect a leader.
pub(super) struct Election {
    pub(super) namespace: String,
    pub(super) name: String,
    pub(super) identity: String,
    pub(super) config: LeaderElectionConfig,
}

/// Owns a program's client, shared informer factory, metrics registry, probe server and
/// leader election, and the [`Runnable`]s (controllers) added to it; see the
/// [module](super) for the start and stop sequence.
///
/// Build controllers with [`controller`](Self::controller) (on the shared factory, with
/// the work-queue metrics wired), add them with [`add`](Self::add), then
/// [`start`](Self::start).
pub struct Manager {
    client: Client,
    factory: Arc<SharedInformerFactory>,
    metrics: Arc<Metrics>,
    probes: Option<MetricsServer>,
    webhooks: Option<WebhookServer>,
    /// Whether the caches synced (what `/readyz` answers).
    ready: Arc<AtomicBool>,
    election: Option<Election>,
    graceful_shutdown_timeout: Duration,
    /// Guards the runnables added before `start`.
    runnables: Mutex<Vec<Runnable>>,
}

/// Which runnables run, and where their errors go.
#[derive(Clone)]
struct Tracker {
    /// Guards the names of the running runnables (a count per name).
    running: Arc<Mutex<BTreeMap<String, usize>>>,
    errors: mpsc::UnboundedSender<(String, BoxError)>,
}

impl Tracker {
    fn spawn(&self, runnable: Runnable, stop: CancellationToken) -> JoinHandle<()> {
        let name = runnable.name().to_owned();
        *crate::sync::lock(&self.running)
            .entry(name.clone())
            .or_default() += 1;
        let tracker = self.clone();
        tokio::spawn(async move {
            tracing::info!(runnable = %name, "starting");
            let outcome = (runnable.run)(stop).await;
            {
                let mut running = crate::sync::lock(&tracker.running);
                if let Some(count) = running.get_mut(&name) {
                    *count -= 1;
                    if *count == 0 {
                        running.remove(&name);
                    }
                }
            }
            if let Err(err) = outcome {
                tracing::error!(runnable = %name, error = %ErrorChain(err.as_ref()), "runnable failed");
                // The manager may be gone already; then nobody needs the error.
                let _ = tracker.errors.send((name, err));
            }
        })
    }

    fn running(&self) -> Vec<String> {
        crate::sync::lock(&self.running).keys().cloned().collect()
    }
}

impl Manager {
    /// Starts building a manager for the cluster `config` points at.
    pub fn builder(config: Config) -> ManagerBuilder {
        ManagerBuilder::new(config)
    }

    pub(super) fn new(
        client: Client,
        factory: SharedInformerFactory,
        metrics: Arc<Metrics>,
        probes: Option<MetricsServer>,
        ready: Arc<AtomicBool>,
        election: Option<Election>,
        graceful_shutdown_timeout: Duration,
    ) -> Self {
        Manager {
            client,
            factory: Arc::new(factory),
            metrics,
            probes,
            webhooks: None,
            ready,
            election,
            graceful_shutdown_timeout,
            runnables: Mutex::new(Vec::new()),
        }
    }

    pub(super) fn with_webhook_server(mut self, webhooks: Option<WebhookServer>) -> Self {
        self.webhooks = webhooks;
        self
    }

    /// The webhook server, when one was configured
    /// ([`ManagerBuilder::webhook_server`](super::ManagerBuilder::webhook_server)): its
    /// address and the CA to write into webhook configurations and CRDs.
    #[must_use]
    pub fn webhook_server(&self) -> Option<&WebhookServer> {
        self.webhooks.as_ref()
    }

    /// The client (its requests are counted in [`metrics`](Self::metrics)).
    #[must_use]
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The shared informer factory: the cache every controller of this manager reads.
    #[must_use]
    pub fn factory(&self) -> &SharedInformerFactory {
        &self.factory
    }

    /// A client reading from this manager's informers (started lazily per type) and
    /// writing to the server.
    #[must_use]
    pub fn cached_client(&self) -> CachedClient {
        CachedClient::new(self.client.clone(), self.factory.clone())
    }

    /// The metrics registry served on `/metrics`.
    #[must_use]
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// Where `/metrics`, `/healthz` and `/readyz` are served, when they are.
    #[must_use]
    pub fn probe_address(&self) -> Option<SocketAddr> {
        self.probes.as_ref().map(MetricsServer::local_addr)
    }

    /// This replica's identity in the Lease, when a leader is elected.
    #[must_use]
    pub fn identity(&self) -> Option<&str> {
        self.election.as_ref().map(|e| e.identity.as_str())
    }

    /// A builder of a controller for `K` on the shared factory, reporting its work-queue
    /// metrics to the manager's registry.
    pub fn controller<K: FactoryResource>(&self, name: &str) -> ControllerBuilder<'_, K> {
        Controller::<K>::builder(name, &self.factory).metrics_provider(self.metrics.clone())
    }

    /// Adds work to start with the manager (e.g. [`Controller::into_runnable`]).
    pub fn add(&self, runnable: Runnable) {
        crate::sync::lock(&self.runnables).push(runnable);
    }

    /// Runs everything until `stop` is cancelled (see the [module](super) for the order),
    /// then shuts down gracefully.
    ///
    /// # Errors
    ///
    /// - [`ManagerError::LeaderElection`]: invalid election settings (nothing started);
    /// - [`ManagerError::LeaderElectionLost`]: the lease was lost without a stop;
    /// - [`ManagerError::Runnable`]: a runnable failed, which stopped the others;
    /// - [`ManagerError::GracefulShutdownTimeout`]: runnables still ran when the graceful
    ///   shutdown timeout ran out.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: dropping the future leaves the runnables running; cancel `stop`.
    pub async fn start(self, stop: CancellationToken) -> Result<(), ManagerError> {
        let runnables = std::mem::take(&mut *crate::sync::lock(&self.runnables));
        let (leader_only, everywhere): (Vec<Runnable>, Vec<Runnable>) = if self.election.is_some() {
            runnables
                .into_iter()
                .partition(Runnable::needs_leader_election)
        } else {
            (Vec::new(), runnables)
        };
        let (errors, mut failures) = mpsc::unbounded_channel();
        let tracker = Tracker {
            running: Arc::default(),
            errors,
        };
        // Built first: invalid settings fail before anything starts.
        let elector = match &self.election {
            Some(election) => Some(Arc::new(self.elector(election, leader_only, &tracker)?)),
            None => None,
        };

        self.factory.start();
        tracing::info!("waiting for the manager's caches to sync");
        let synced = tokio::select! {
            synced = self.factory.wait_for_cache_sync() => synced,
            () = stop.cancelled() => false,
        };
        self.ready.store(synced, Ordering::SeqCst);

        let runnables_stop = CancellationToken::new();
        let elector_stop = CancellationToken::new();
        let mut tasks = Vec::new();
        let mut election_task = None;
        if synced {
            for runnable in everywhere {
                tasks.push(tracker.spawn(runnable, runnables_stop.child_token()));
            }
            if let Some(elector) = elector {
                if let Some(probes) = &self.probes {
                    let checked = elector.clone();
                    probes.set_health_check(move || {
                        checked
                            .check(LEADER_HEALTH_TOLERANCE)
                            .map_err(|err| ErrorChain(&err).to_string())
                    });
                }
                let until = elector_stop.clone();
                election_task = Some(tokio::spawn(async move { elector.run(until).await }));
            }
        }

        let mut failure = None;
        let mut election_ended = false;
        if synced {
            tokio::select! {
                () = stop.cancelled() => {}
                Some((name, source)) = failures.recv() => {
                    failure = Some(ManagerError::Runnable { name, source });
                }
                _ = async { match election_task.as_mut() {
                    Some(task) => task.await,
                    None => std::future::pending().await,
                } } => {
                    election_ended = true;
                    failure = Some(ManagerError::LeaderElectionLost);
                }
            }
        }

        tracing::info!(timeout = ?self.graceful_shutdown_timeout, "stopping the manager's runnables");
        self.ready.store(false, Ordering::SeqCst);
        runnables_stop.cancel();
        elector_stop.cancel();
        let drained = tokio::time::timeout(self.graceful_shutdown_timeout, async {
            if let Some(task) = election_task.filter(|_| !election_ended) {
                let _ = task.await;
            }
            for task in tasks {
                let _ = task.await;
            }
        })
        .await;
        let pending = tracker.running();
        if failure.is_none()
            && let Ok((name, source)) = failures.try_recv()
        {
            failure = Some(ManagerError::Runnable { name, source });
        }
        self.factory.shutdown().await;
        if let Some(probes) = self.probes {
            probes.shutdown().await;
        }
        if let Some(webhooks) = self.webhooks {
            webhooks.shutdown().await;
        }
        if drained.is_err() {
            tracing::error!(
                ?pending,
                "runnables did not stop within the graceful shutdown timeout"
            );
        }
        match (failure, drained) {
            (Some(failure), _) => Err(failure),
            (None, Err(_)) => Err(ManagerError::GracefulShutdownTimeout {
                timeout: self.graceful_shutdown_timeout,
                pending,
            }),
            (None, Ok(())) => Ok(()),
        }
    }

    /// The elector that runs `leader_only` while this replica leads.
    fn elector(
        &self,
        election: &Election,
        leader_only: Vec<Runnable>,
        tracker: &Tracker,
    ) -> Result<LeaderElector, ManagerError> {
        let lock = LeaseLock::new(
            self.client.clone(),
            &election.namespace,
            &election.name,
            &election.identity,
        );
        // One leadership per start: the manager stops when it ends.
        let waiting = Arc::new(Mutex::new(Some(leader_only)));
        let tracker = tracker.clone();
        let callbacks = LeaderCallbacks::new().on_started_leading(move |lost| {
            let runnables = crate::sync::lock(&waiting).take().unwrap_or_default();
            let tracker = tracker.clone();
            async move {
                let tasks: Vec<JoinHandle<()>> = runnables
                    .into_iter()
                    .map(|runnable| tracker.spawn(runnable, lost.clone()))
                    .collect();
                for task in tasks {
                    let _ = task.await;
                }
            }
        });
        LeaderElector::new(lock, election.config.clone(), callbacks)
            .map_err(ManagerError::LeaderElection)
    }
}

impl std::fmt::Debug for Manager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Manager")
            .field("identity", &self.identity())
            .field("probe_address", &self.probe_address())
            .field("graceful_shutdown_timeout", &self.graceful_shutdown_timeout)
            .finish_non_exhaustive()
    }
}
