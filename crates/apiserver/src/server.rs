//! [`ApiServer`]: starting, addressing, configuring clients for, and stopping the server.

mod first_byte_deadline;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::authentication::{DEFAULT_SERVICE_ACCOUNT_ISSUER, UserInfo};
use crate::authorization::AuthorizationMode;
use crate::cluster::{ClusterOptions, SimulatedCluster};
use crate::container_runtime::BuiltinRuntime;
use crate::controllers::Controllers;
use crate::endpoints::{self, Handled};
use crate::faults::Faults;
use crate::pod_logs::PodLogs;
use crate::registry::Registry;
use crate::registry::admission::WebhookPolicy;
use crate::registry::store::{Hooks, WriteHook};
use crate::response::Body;
use crate::sessions::Sessions;
use crate::state::{Config, Limits, State};
use crate::storage::{Store, WatcherLimits};
use crate::streams;
use crate::tls::{CertificatePair, TlsError, TlsMaterial};
use first_byte_deadline::FirstByteDeadline;

/// The namespaces every cluster starts with.
/// Options for [`ApiServer`]; see each setter for its default.
///
/// # Examples
///
/// ```no_run
/// # async fn run() -> Result<(), kubeclient_apiserver::StartError> {
/// use kubeclient_apiserver::ApiServer;
///
/// let server = ApiServer::builder().history_window(1000).token("s3cret").tls(true).start().await?;
/// println!("listening on {}", server.url());
/// server.shutdown().await;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `start` is called"]
pub struct ApiServerBuilder {
    listen: SocketAddr,
    history_window: usize,
    token: Option<String>,
    tls: bool,
    admin: bool,
    bookmark_interval: Duration,
    limits: Limits,
    legacy_remote_command: bool,
    port_forward_allow: Vec<SocketAddr>,
    initial_revision: u64,
    garbage_collector: bool,
    kubernetes_minor_version: u32,
    service_account_issuer: String,
    api_audiences: Option<Vec<String>>,
    authorization_mode: AuthorizationMode,
    remote_webhooks: bool,
    cluster: ClusterOptions,
    storage: StorageChoice,
}

/// Where the server keeps its objects.
#[derive(Clone, Debug, Default)]
enum StorageChoice {
    /// In memory only (the default).
    #[default]
    Memory,
    /// In etcd, with the in-memory store as its watch cache.
    #[cfg(feature = "etcd")]
    Etcd(crate::storage::EtcdConfig),
}

/// The minor version `/version` reports by default (`v1.37.0`).
pub const DEFAULT_KUBERNETES_MINOR_VERSION: u32 = 37;

impl Default for ApiServerBuilder {
    fn default() -> Self {
        ApiServerBuilder {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            history_window: 10_000,
            token: None,
            tls: false,
            admin: false,
            bookmark_interval: Duration::from_secs(60),
            limits: Limits::default(),
            legacy_remote_command: false,
            port_forward_allow: Vec::new(),
            initial_revision: 0,
            garbage_collector: true,
            kubernetes_minor_version: DEFAULT_KUBERNETES_MINOR_VERSION,
            service_account_issuer: DEFAULT_SERVICE_ACCOUNT_ISSUER.to_owned(),
            api_audiences: None,
            authorization_mode: AuthorizationMode::AlwaysAllow,
            remote_webhooks: false,
            cluster: ClusterOptions::default(),
            storage: StorageChoice::Memory,
        }
    }
}

impl ApiServerBuilder {
    /// The address to listen on. Default `127.0.0.1:0` (a free loopback port).
    pub fn listen(mut self, address: SocketAddr) -> Self {
        self.listen = address;
        self
    }

    /// How many changes per resource are kept to serve watches and lists from older
    /// resourceVersions. Default 10,000. Older versions get 410 Expired.
    pub fn history_window(mut self, changes: usize) -> Self {
        self.history_window = changes;
        self
    }

    /// Require `Authorization: Bearer <token>` (or a client certificate, with TLS) on every
    /// request but `/healthz`, `/livez`, `/readyz` and `/version`. Default: no auth.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Keep every object in etcd, as kube-apiserver does (`--etcd-servers`, `--etcd-prefix`
    /// and the TLS files of [`EtcdConfig`](crate::storage::EtcdConfig)): objects survive
    /// restarts, several servers can share one etcd, and a real kube-apiserver on the
    /// same etcd and prefix serves the same objects. The in-memory store becomes the
    /// watch cache (reads and watches are served from it; writes commit to etcd first).
    /// resourceVersions are etcd revisions; [`initial_revision`](Self::initial_revision)
    /// does not apply. Default: in memory only.
    #[cfg(feature = "etcd")]
    pub fn etcd(mut self, config: crate::storage::EtcdConfig) -> Self {
        self.storage = StorageChoice::Etcd(config);
        self
    }

    /// Serve HTTPS with a freshly generated CA and certificate. Default: plain HTTP.
    pub fn tls(mut self, enabled: bool) -> Self {
        self.tls = enabled;
        self
    }

    /// Serve the fault-injection admin paths under `/_kubeclient/`. Default: off (use
    /// [`ApiServer::faults`] in-process).
    pub fn enable_admin_faults(mut self, enabled: bool) -> Self {
        self.admin = enabled;
        self
    }

    /// How often watches that allow bookmarks get one. Default 60 s (as upstream).
    pub fn bookmark_interval(mut self, interval: Duration) -> Self {
        self.bookmark_interval = interval;
        self
    }

    /// The largest request body (every verb and content type). Default 3 MiB, as
    /// kube-apiserver; larger bodies get 413 RequestEntityTooLarge.
    pub fn max_request_body_bytes(mut self, bytes: usize) -> Self {
        self.limits.max_request_body_bytes = bytes;
        self
    }

    /// The largest encoded object a write may store, managedFields included. Default
    /// 8 MiB; larger results get 413 RequestEntityTooLarge.
    pub fn max_object_bytes(mut self, bytes: usize) -> Self {
        self.limits.max_object_bytes = bytes;
        self
    }

    /// How long a client may take to send request headers (and to finish a TLS
    /// handshake), and how long an idle keep-alive connection stays open. Default 32 s.
    /// Slow-loris connections are closed after it.
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.limits.header_read_timeout = timeout;
        self
    }

    /// How far one watcher may fall behind before its watch is ended (the client then
    /// re-watches). Default 10,000 changes or 64 MiB.
    pub fn watcher_limits(mut self, limits: WatcherLimits) -> Self {
        self.limits.watcher = limits;
        self
    }

    /// Starts the resourceVersions after `revision`, with everything before it forgotten
    /// (a watch or an exact list from an older resourceVersion gets 410). Use it to restart
    /// a server that clients were watching: etcd's revisions never go back, and a restarted
    /// server numbering from 1 again would look to a resuming client like the old history.
    /// Default 0.
    pub fn initial_revision(mut self, revision: u64) -> Self {
        self.initial_revision = revision;
        self
    }

    /// The most encoded bytes of objects kept in one resource's change history (besides
    /// the [`history_window`](Self::history_window) count). Default 64 MiB.
    pub fn history_bytes(mut self, bytes: usize) -> Self {
        self.limits.history_bytes = bytes;
        self
    }

    /// Make exec and attach speak only `v4.channel.k8s.io`, as API servers before 1.30
    /// did (no way to signal stdin EOF), to test a client's fallback from
    /// `v5.channel.k8s.io`. Default: both, v5 preferred.
    pub fn legacy_remote_command(mut self, enabled: bool) -> Self {
        self.legacy_remote_command = enabled;
        self
    }

    /// Host addresses a Pod's port-forward may dial (the `host:port` its annotation
    /// `port-forward.kubeclient.dev/<port>` names). None by default: a simulated Pod
    /// reaches nothing on the host unless the operator says so, since anyone who may
    /// create a Pod could otherwise reach every service on it. More can be allowed while
    /// the server runs ([`ApiServer::allow_port_forward`]).
    ///
    /// ```
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = kubeclient_apiserver::ApiServer::builder()
    ///     .port_forward_allow(["127.0.0.1:8080".parse()?])
    ///     .start()
    ///     .await?;
    /// # server.shutdown().await;
    /// # Ok(())
    /// # }
    /// ```
    pub fn port_forward_allow(mut self, addresses: impl IntoIterator<Item = SocketAddr>) -> Self {
        self.port_forward_allow.extend(addresses);
        self
    }

    /// How requests are authorized (kube-apiserver's `--authorization-mode`): the
    /// default [`AuthorizationMode::AlwaysAllow`] lets every authenticated user do
    /// everything; [`AuthorizationMode::Rbac`] answers from Roles, ClusterRoles and their
    /// bindings, so a ServiceAccount (or `kubectl --as`) may do only what it was granted.
    /// The server's own token and client certificates without a subject stay in
    /// `system:masters`, which may do everything.
    ///
    /// ```
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use kubeclient_apiserver::{ApiServer, AuthorizationMode};
    ///
    /// let server = ApiServer::builder()
    ///     .authorization_mode(AuthorizationMode::Rbac)
    ///     .start()
    ///     .await?;
    /// # server.shutdown().await;
    /// # Ok(())
    /// # }
    /// ```
    pub fn authorization_mode(mut self, mode: AuthorizationMode) -> Self {
        self.authorization_mode = mode;
        self
    }

    /// Run the garbage collector (default on), as kube-controller-manager does: objects
    /// whose owners (`metadata.ownerReferences`, by uid) are all gone are deleted, and
    /// `propagationPolicy` `Foreground` and `Orphan` deletes are finished. Turn it off to
    /// store objects whose owners the server never holds (a benchmark's Pods owned by
    /// ReplicaSets it does not create) without having them collected.
    ///
    /// ```
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = kubeclient_apiserver::ApiServer::builder()
    ///     .garbage_collector(false)
    ///     .start()
    ///     .await?;
    /// # server.shutdown().await;
    /// # Ok(())
    /// # }
    /// ```
    pub fn garbage_collector(mut self, enabled: bool) -> Self {
        self.garbage_collector = enabled;
        self
    }

    /// The Kubernetes version `/version` reports, as its minor number (`1.<minor>`);
    /// default 37, the API the server's types come from. kubectl warns (`kubectl version`)
    /// when the server is more than one minor version away from it: match your kubectl
    /// to silence that (`kubeclient serve --kubernetes-version 1.33`).
    ///
    /// ```
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = kubeclient_apiserver::ApiServer::builder()
    ///     .kubernetes_minor_version(33)
    ///     .start()
    ///     .await?;
    /// # server.shutdown().await;
    /// # Ok(())
    /// # }
    /// ```
    pub fn kubernetes_minor_version(mut self, minor: u32) -> Self {
        self.kubernetes_minor_version = minor;
        self
    }

    /// The issuer (`iss`) of the ServiceAccount tokens `TokenRequest` issues, as
    /// kube-apiserver's `--service-account-issuer`. Default
    /// `https://kubernetes.default.svc.cluster.local`.
    pub fn service_account_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.service_account_issuer = issuer.into();
        self
    }

    /// The audiences the API accepts ServiceAccount tokens for, as kube-apiserver's
    /// `--api-audiences`: a token requested for other audiences only (`kubectl create
    /// token --audience https://vault.example.com`) does not authenticate requests.
    /// TokenRequests that name no audience get these. Default: the
    /// [issuer](Self::service_account_issuer) alone.
    ///
    /// ```
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = kubeclient_apiserver::ApiServer::builder()
    ///     .service_account_issuer("https://issuer.example")
    ///     .api_audiences(["https://issuer.example", "api"])
    ///     .start()
    ///     .await?;
    /// # server.shutdown().await;
    /// # Ok(())
    /// # }
    /// ```
    pub fn api_audiences<I, S>(mut self, audiences: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.api_audiences = Some(audiences.into_iter().map(Into::into).collect());
        self
    }

    /// Whether admission webhooks whose `clientConfig.url` resolves off loopback may be
    /// called (default: no; such a call fails, and the webhook's `failurePolicy`
    /// decides). The embedded server is for tests on one machine: a configuration copied
    /// from a cluster should not make it call out.
    pub fn allow_remote_webhooks(mut self, allow: bool) -> Self {
        self.remote_webhooks = allow;
        self
    }

    /// Run a simulated cluster of `count` nodes (`node-1` ... `node-N`): each has a
    /// kubelet that registers its Node (4 CPUs, 16 GiB, 110 Pods), renews its Lease in
    /// `kube-node-lease` and runs the Pods bound to it (phases, addresses, conditions,
    /// container statuses; commands are the built-in ones exec runs); a scheduler binds
    /// pending Pods; the node lifecycle controller marks silent nodes `NotReady`.
    /// Default 0: no cluster, and the server binds each new Pod to `kubeclient-node`
    /// itself (`kubeclient serve` defaults to 1). See [`ApiServer::cluster`].
    /// At most [`MAX_NODES`](crate::MAX_NODES); a larger count is lowered to it.
    ///
    /// ```
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = kubeclient_apiserver::ApiServer::builder().nodes(3).start().await?;
    /// assert_eq!(server.cluster().node_names().len(), 3);
    /// # server.shutdown().await;
    /// # Ok(())
    /// # }
    /// ```
    pub fn nodes(mut self, count: usize) -> Self {
        self.cluster.nodes = count.min(crate::MAX_NODES);
        self
    }

    /// How often each simulated kubelet renews its node's Lease. Default 10 s (the
    /// kubelet's: a quarter of the 40 s lease).
    pub fn node_heartbeat_interval(mut self, interval: Duration) -> Self {
        self.cluster.heartbeat_interval = interval.max(Duration::from_millis(10));
        self
    }

    /// How long a node's Lease may go unrenewed before the node lifecycle controller
    /// sets its conditions `Unknown` (`kubectl get nodes`: `NotReady`) and taints it
    /// `node.kubernetes.io/unreachable`. Default 50 s, kube-controller-manager's
    /// `--node-monitor-grace-period`.
    pub fn node_monitor_grace_period(mut self, grace: Duration) -> Self {
        self.cluster.node_monitor_grace_period = grace;
        self
    }

    /// Run the simulated cluster's scheduler (default on). Off, Pods stay `Pending`
    /// until something else sets their `spec.nodeName`.
    pub fn scheduler(mut self, enabled: bool) -> Self {
        self.cluster.scheduler = enabled;
        self
    }

    /// Let the simulated kubelets run Pods (default on). Off, the nodes still register
    /// and heartbeat, but bound Pods keep the status they were created with.
    pub fn kubelets(mut self, enabled: bool) -> Self {
        self.cluster.kubelets = enabled;
        self
    }

    /// Run the node lifecycle controller (default on): silent nodes become `NotReady`
    /// and tainted, and their Pods are evicted once their tolerations end.
    pub fn node_lifecycle_controller(mut self, enabled: bool) -> Self {
        self.cluster.node_lifecycle_controller = enabled;
        self
    }

    /// Run the simulated cluster's ReplicaSet controller (default on): each ReplicaSet
    /// keeps `spec.replicas` Pods from its template.
    pub fn replica_set_controller(mut self, enabled: bool) -> Self {
        self.cluster.replica_set_controller = enabled;
        self
    }

    /// Run the simulated cluster's Deployment controller (default on): ReplicaSets per
    /// template with `pod-template-hash`, rolling updates, revisions, status.
    pub fn deployment_controller(mut self, enabled: bool) -> Self {
        self.cluster.deployment_controller = enabled;
        self
    }

    /// Run the simulated cluster's Job controller (default on): Pods up to
    /// `parallelism` until `completions` succeeded, `backoffLimit`, indexed Jobs, the
    /// `Complete` and `Failed` conditions.
    pub fn job_controller(mut self, enabled: bool) -> Self {
        self.cluster.job_controller = enabled;
        self
    }

    /// Run the simulated cluster's StatefulSet controller (default on): Pods `<name>-0`
    /// ... in ordinal order, one at a time (or in parallel), their claims from
    /// `volumeClaimTemplates`, rolling updates from the highest ordinal down.
    pub fn stateful_set_controller(mut self, enabled: bool) -> Self {
        self.cluster.stateful_set_controller = enabled;
        self
    }

    /// Run the simulated cluster's DaemonSet controller (default on): one Pod of each
    /// DaemonSet on every node its selector, affinity and tolerations allow, rolled out
    /// node by node when its template changes.
    pub fn daemon_set_controller(mut self, enabled: bool) -> Self {
        self.cluster.daemon_set_controller = enabled;
        self
    }

    /// Run the simulated cluster's Endpoints controller (default on): an Endpoints object
    /// per Service with a selector, listing its ready and not-ready Pods and their ports.
    pub fn endpoints_controller(mut self, enabled: bool) -> Self {
        self.cluster.endpoints_controller = enabled;
        self
    }

    /// Run the simulated cluster's EndpointSlice controller (default on):
    /// `discovery.k8s.io/v1` EndpointSlices per Service with a selector, with each Pod's
    /// `ready`, `serving` and `terminating` conditions.
    pub fn endpoint_slice_controller(mut self, enabled: bool) -> Self {
        self.cluster.endpoint_slice_controller = enabled;
        self
    }

    /// The factor the simulated cluster's durations are multiplied by: Pods' grace
    /// periods, container restart back-offs, eviction tolerations. Default 1.0; 0 makes
    /// them instant, 0.1 ten times faster.
    pub fn time_scale(mut self, factor: f64) -> Self {
        self.cluster.time_scale = if factor.is_finite() && factor >= 0.0 {
            factor
        } else {
            1.0
        };
        self
    }

    /// The store: in memory, or the watch cache of the chosen backend.
    async fn open_store(&self) -> Result<Arc<Store>, StartError> {
        match &self.storage {
            StorageChoice::Memory => Ok(Arc::new(
                Store::with_limits(
                    self.history_window,
                    self.limits.history_bytes,
                    self.limits.watcher,
                )
                .starting_after(self.initial_revision),
            )),
            #[cfg(feature = "etcd")]
            StorageChoice::Etcd(config) => {
                use crate::storage::{Backend, Cacher, EtcdBackend};
                use futures_util::FutureExt;
                let config = config.clone();
                let cacher = Cacher::open(Box::new(move || {
                    async move {
                        let backend = EtcdBackend::connect(config).await?;
                        Ok(Arc::new(backend) as Arc<dyn Backend>)
                    }
                    .boxed()
                }))
                .await
                .map_err(StartError::Storage)?;
                Store::over(
                    cacher,
                    self.history_window,
                    self.limits.history_bytes,
                    self.limits.watcher,
                )
                .await
                .map_err(StartError::Storage)
            }
        }
    }

    /// Binds the port and starts serving.
    ///
    /// # Errors
    ///
    /// [`StartError`] when the address cannot be bound or TLS material cannot be made.
    pub async fn start(self) -> Result<ApiServer, StartError> {
        let store = self.open_store().await?;
        let listener = TcpListener::bind(self.listen)
            .await
            .map_err(|source| StartError::Bind {
                address: self.listen,
                source,
            })?;
        let local = listener.local_addr().map_err(|source| StartError::Bind {
            address: self.listen,
            source,
        })?;
        let tls = if self.tls {
            Some(TlsMaterial::generate()?)
        } else {
            None
        };
        let scheme = if tls.is_some() { "https" } else { "http" };
        let url = format!("{scheme}://{local}");
        if self.token.is_none() && !local.ip().is_loopback() {
            tracing::warn!(
                address = %local,
                "listening beyond loopback without a token: anyone who can reach this address can read and change everything (set a token)"
            );
        }
        let controllers = Arc::new(Controllers::new(self.garbage_collector));
        let cluster = Arc::new(SimulatedCluster::new(self.cluster.clone()));
        let runs_cluster = self.cluster.nodes > 0;
        let write_hook: Arc<dyn WriteHook> = if runs_cluster {
            Arc::new(Hooks(vec![controllers.clone(), cluster.clone()]))
        } else {
            controllers.clone()
        };
        let state = Arc::new(State {
            store,
            registry: Registry::new(),
            faults: Faults::default(),
            config: Config {
                token: self.token.clone(),
                server_address: local.to_string(),
                bookmark_interval: self.bookmark_interval,
                kubernetes_minor_version: self.kubernetes_minor_version,
                admin_enabled: self.admin,
                limits: self.limits,
                api_audiences: self
                    .api_audiences
                    .clone()
                    .filter(|audiences| !audiences.is_empty())
                    .unwrap_or_else(|| vec![self.service_account_issuer.clone()]),
                service_account_issuer: self.service_account_issuer.clone(),
                authorization_mode: self.authorization_mode,
                webhooks: WebhookPolicy {
                    allow_remote: self.remote_webhooks,
                },
            },
            sessions: {
                let sessions = if self.legacy_remote_command {
                    Sessions::legacy_remote_command()
                } else {
                    Sessions::default()
                };
                for address in &self.port_forward_allow {
                    sessions.port_forward_allowlist().allow(*address);
                }
                sessions
            },
            write_hook,
            tokens: Default::default(),
        });
        crate::bootstrap::create(&state.generic_store(), local);
        let (stop, stopped) = watch::channel(false);
        let acceptor = tls
            .as_ref()
            .map(|t| tokio_rustls::TlsAcceptor::from(t.server_config.clone()));
        let pass = {
            let (state, controllers) = (state.clone(), controllers.clone());
            move || controllers.sync_once(&state.generic_store())
        };
        tokio::spawn(crate::controllers::run(controllers, pass, stopped.clone()));
        if runs_cluster {
            cluster.register(&state.generic_store());
            let runtime = BuiltinRuntime::new(
                tokio::runtime::Handle::current(),
                Arc::clone(&state.sessions.pod_logs),
            );
            let pass = {
                let (state, cluster) = (state.clone(), cluster.clone());
                move || cluster.sync_once(&state.generic_store(), &runtime)
            };
            tokio::spawn(crate::cluster::run(cluster.clone(), pass, stopped.clone()));
        }
        let task = tokio::spawn(accept_loop(listener, state.clone(), acceptor, stopped));
        tracing::info!(%url, "API server listening");
        Ok(ApiServer {
            url,
            address: local,
            state,
            token: self.token,
            tls,
            stop,
            task,
            cluster,
        })
    }
}

/// How long the accept loop pauses when the process is out of file descriptors (or
/// memory for sockets), instead of spinning on the failing `accept`.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Whether an `accept` error means a resource is exhausted (retrying at once would spin).
fn is_resource_exhaustion(err: &std::io::Error) -> bool {
    // EMFILE, ENFILE, ENOBUFS, ENOMEM on Linux and the BSDs.
    matches!(err.raw_os_error(), Some(23 | 24 | 105 | 12 | 55))
}

async fn accept_loop(
    listener: TcpListener,
    state: Arc<State>,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    mut stopped: watch::Receiver<bool>,
) {
    let mut connections = JoinSet::new();
    let mut exhausted = false;
    let handshake_timeout = state.config.limits.header_read_timeout;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(accepted) => {
                        exhausted = false;
                        accepted
                    }
                    Err(err) => {
                        if is_resource_exhaustion(&err) {
                            if !exhausted {
                                tracing::warn!(%err, "cannot accept connections (out of file descriptors?); retrying every 100 ms");
                                exhausted = true;
                            }
                            tokio::time::sleep(ACCEPT_BACKOFF).await;
                        } else {
                            tracing::debug!(%err, "accept failed");
                        }
                        continue;
                    }
                };
                let state = state.clone();
                let acceptor = acceptor.clone();
                connections.spawn(async move {
                    match acceptor {
                        Some(acceptor) => match tokio::time::timeout(handshake_timeout, acceptor.accept(stream)).await {
                            Ok(Ok(tls)) => {
                                let user = tls.get_ref().1.peer_certificates()
                                    .and_then(|chain| chain.first())
                                    .map(|leaf| UserInfo::from_client_certificate(leaf));
                                let io = FirstByteDeadline::new(tls, handshake_timeout);
                                serve_connection(TokioIo::new(io), state, user).await;
                            }
                            Ok(Err(err)) => tracing::debug!(%peer, %err, "TLS handshake failed"),
                            Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                        },
                        None => {
                            let io = FirstByteDeadline::new(stream, handshake_timeout);
                            serve_connection(TokioIo::new(io), state, None).await;
                        }
                    }
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            _ = stopped.changed() => break,
        }
    }
    // Ending the watches and streaming sessions lets their connections finish; give the
    // rest a moment, then stop.
    state.store.drop_watchers();
    state.sessions.shut_down();
    let _ = tokio::time::timeout(Duration::from_millis(500), async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    connections.abort_all();
}

/// Serves one request: the endpoints answer it, or route a Pod stream request to the
/// streams layer (the two never call each other). `client_certificate` is the user of
/// the client certificate TLS verified, if any.
pub(crate) async fn respond<B>(
    state: Arc<State>,
    request: http::Request<B>,
    client_certificate: Option<&UserInfo>,
) -> http::Response<Body>
where
    B: hyper::body::Body + Send,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    match endpoints::handle(state.clone(), request, client_certificate).await {
        Handled::Answer(response) => response,
        Handled::PodStream {
            request,
            namespace,
            name,
            subresource,
        } => streams::serve(&state, request, &namespace, &name, &subresource),
        Handled::PodLogAppend {
            request,
            namespace,
            name,
        } => streams::append_log(&state, request, &namespace, &name).await,
    }
}

async fn serve_connection<I>(io: TokioIo<I>, state: Arc<State>, user: Option<UserInfo>)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let header_read_timeout = state.config.limits.header_read_timeout;
    let service = service_fn(move |request| {
        let state = state.clone();
        let user = user.clone();
        async move { Ok::<_, Infallible>(respond(state, request, user.as_ref()).await) }
    });
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    // Headers must arrive within the timeout (it also closes idle keep-alive
    // connections); HTTP/2 peers that stop answering pings are dropped.
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Duration::from_secs(30))
        .keep_alive_timeout(Duration::from_secs(15));
    if let Err(err) = builder.serve_connection_with_upgrades(io, service).await {
        tracing::debug!(%err, "connection ended with an error");
    }
}

/// Writes `contents` to a new owner-only file in `path`'s directory, then renames it over
/// `path` (see [`ApiServer::write_kubeconfig`]).
fn write_private_file(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "kubeconfig".to_owned());
    let temporary = directory.join(format!(
        ".{file_name}.{}.tmp",
        uuid::Uuid::new_v4().simple()
    ));
    let mut options = std::fs::OpenOptions::new();
    // `create_new` fails on any existing entry, symlinks included: nothing is followed.
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let written = options.open(&temporary).and_then(|mut file| {
        file.write_all(contents)?;
        file.sync_all()
    });
    let renamed = written.and_then(|()| std::fs::rename(&temporary, path));
    if renamed.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    renamed
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The address is in use or not available. Pick another with `--listen`, or port 0.
    #[error("cannot listen on {address} (is another server using it? port 0 picks a free one)")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// TLS material could not be generated.
    #[error("cannot set up TLS: {0}")]
    Tls(#[from] TlsError),
    /// The storage backend (etcd) could not be reached or read.
    #[error("cannot open the storage backend")]
    Storage(#[source] crate::storage::BackendError),
}

/// A running embedded API server. Dropping it stops accepting connections; call
/// [`shutdown`](Self::shutdown) to stop cleanly and wait.
///
/// # Examples
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let server = kubeclient_apiserver::ApiServer::start().await?;
/// server.write_kubeconfig("/tmp/kubeconfig")?;
/// // KUBECONFIG=/tmp/kubeconfig kubectl get namespaces
/// server.shutdown().await;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ApiServer {
    url: String,
    address: SocketAddr,
    state: Arc<State>,
    token: Option<String>,
    tls: Option<TlsMaterial>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
    cluster: Arc<SimulatedCluster>,
}

impl ApiServer {
    /// Options for a server.
    pub fn builder() -> ApiServerBuilder {
        ApiServerBuilder::default()
    }

    /// Starts a server with the default options on a free loopback port.
    ///
    /// # Errors
    ///
    /// [`StartError`] when no port can be bound.
    pub async fn start() -> Result<ApiServer, StartError> {
        ApiServer::builder().start().await
    }

    /// The base URL, e.g. `http://127.0.0.1:41234`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The socket address it listens on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Fault injection controls.
    pub fn faults(&self) -> &Faults {
        &self.state.faults
    }

    /// The simulated cluster (nodes and their kubelets; empty unless
    /// [`nodes`](ApiServerBuilder::nodes) was set).
    pub fn cluster(&self) -> &SimulatedCluster {
        &self.cluster
    }

    /// The storage (for inspection in tests).
    pub fn store(&self) -> &Store {
        &self.state.store
    }

    /// The Pods' container logs: append lines here for `GET .../pods/{name}/log` (and
    /// `kubectl logs`) to serve.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = kubeclient_apiserver::ApiServer::start().await?;
    /// server.pod_logs().append("default", "web-0", "main", "listening on :8080\n");
    /// server.pod_logs().finish("default", "web-0", "main"); // `follow` streams end
    /// # Ok(()) }
    /// ```
    pub fn pod_logs(&self) -> &PodLogs {
        &self.state.sessions.pod_logs
    }

    /// Lets a Pod's port-forward dial `address` from now on (see
    /// [`ApiServerBuilder::port_forward_allow`]): a test allows its own listener.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = kubeclient_apiserver::ApiServer::start().await?;
    /// let echo = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// server.allow_port_forward(echo.local_addr()?);
    /// // a Pod annotated `port-forward.kubeclient.dev/8080: <that address>` now forwards there
    /// # Ok(()) }
    /// ```
    pub fn allow_port_forward(&self, address: SocketAddr) {
        self.state.sessions.port_forward_allowlist().allow(address);
    }

    /// Forgets all change history: watches and lists from older resourceVersions get 410.
    pub fn compact(&self) {
        self.state.store.compact();
    }

    /// Ends every open watch stream (cleanly, as a server timeout would).
    pub fn drop_watches(&self) {
        self.state.store.drop_watchers();
    }

    /// The CA certificate (PEM) clients must trust, when serving TLS.
    pub fn ca_certificate_pem(&self) -> Option<&str> {
        self.tls.as_ref().map(|t| t.ca_pem.as_str())
    }

    /// A client certificate for `user` signed by this server's CA (TLS only); presenting
    /// it authenticates requests even when a token is required.
    ///
    /// # Errors
    ///
    /// [`TlsError`] if the certificate cannot be generated; `Ok(None)` without TLS.
    pub fn issue_client_certificate(
        &self,
        user: &str,
        groups: &[&str],
    ) -> Result<Option<CertificatePair>, TlsError> {
        self.tls
            .as_ref()
            .map(|t| t.client_certificate(user, groups))
            .transpose()
    }

    /// A kubeconfig (YAML) that points kubectl and other clients at this server.
    pub fn kubeconfig(&self) -> String {
        let mut cluster = format!("    server: {}\n", self.url);
        if let Some(tls) = &self.tls {
            let ca = base64::engine::general_purpose::STANDARD.encode(&tls.ca_pem);
            cluster.push_str(&format!("    certificate-authority-data: {ca}\n"));
        }
        let user = match &self.token {
            Some(token) => format!("  user:\n    token: {token}\n"),
            None => "  user: {}\n".to_owned(),
        };
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: kubeclient\n  cluster:\n{cluster}contexts:\n- name: kubeclient\n  context:\n    cluster: kubeclient\n    user: kubeclient\n    namespace: default\ncurrent-context: kubeclient\nusers:\n- name: kubeclient\n{user}preferences: {{}}\n"
        )
    }

    /// Writes [`kubeconfig`](Self::kubeconfig) (which holds the token) to a file readable
    /// by its owner only (mode 0600 on Unix). It writes a new file next to `path` and
    /// renames it over `path`, so a symlink planted at `path` is replaced, never followed,
    /// and readers never see a half-written file.
    ///
    /// # Errors
    ///
    /// The I/O error creating, writing or renaming the file.
    pub fn write_kubeconfig(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        write_private_file(path.as_ref(), self.kubeconfig().as_bytes())
    }

    /// Stops accepting, ends watches and open connections, and waits for that.
    ///
    /// # Cancel safety
    ///
    /// Cancelling the wait leaves the server stopping in the background.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emfile_and_enfile_make_the_accept_loop_back_off() {
        for code in [24, 23] {
            assert!(is_resource_exhaustion(&std::io::Error::from_raw_os_error(
                code
            )));
        }
        assert!(!is_resource_exhaustion(&std::io::Error::from_raw_os_error(
            103
        )));
        assert!(!is_resource_exhaustion(&std::io::Error::other("x")));
    }
}
