//! [`ApiServer`]: starting, addressing, configuring clients for, and stopping the server.

mod builder;
mod first_byte_deadline;
mod kubelet_port;

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

#[cfg(any(feature = "etcd", feature = "disk"))]
use futures_util::FutureExt as _;

use crate::authentication::UserInfo;
use crate::cluster::SimulatedCluster;
use crate::container_runtime::BuiltinRuntime;
use crate::controllers::Controllers;
use crate::endpoints::{self, Handled};
use crate::faults::Faults;
use crate::pod_logs::PodLogs;
use crate::registry::Registry;
use crate::registry::admission::WebhookPolicy;
use crate::registry::store::{Hooks, WriteHook, tell_applied};
use crate::response::Body;
use crate::sessions::Sessions;
use crate::state::{Config, State};
use crate::storage::Store;
use crate::streams;
use crate::tls::{CertificatePair, TlsError, TlsMaterial};
use builder::StorageChoice;
pub use builder::{ApiServerBuilder, DEFAULT_KUBERNETES_MINOR_VERSION};
use first_byte_deadline::FirstByteDeadline;

impl ApiServerBuilder {
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
                let config = config.clone();
                self.open_cache(Box::new(move || {
                    async move {
                        let backend = crate::storage::EtcdBackend::connect(config).await?;
                        Ok(Arc::new(backend) as Arc<dyn crate::storage::Backend>)
                    }
                    .boxed()
                }))
                .await
            }
            #[cfg(feature = "disk")]
            StorageChoice::Disk(dir) => {
                let dir = dir.clone();
                self.open_cache(Box::new(move || {
                    async move {
                        let backend = crate::storage::DiskBackend::open(dir)?;
                        Ok(Arc::new(backend) as Arc<dyn crate::storage::Backend>)
                    }
                    .boxed()
                }))
                .await
            }
        }
    }

    /// The in-memory store as the watch cache of the backend `open` opens.
    #[cfg(any(feature = "etcd", feature = "disk"))]
    async fn open_cache(
        &self,
        open: crate::storage::OpenBackend,
    ) -> Result<Arc<Store>, StartError> {
        let cacher = crate::storage::Cacher::open(open)
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
        let kubelet = match self.kubelet_port {
            Some(port) => {
                let address = SocketAddr::from(([127, 0, 0, 1], port));
                let listener = TcpListener::bind(address)
                    .await
                    .map_err(|source| StartError::Bind { address, source })?;
                let address = listener
                    .local_addr()
                    .map_err(|source| StartError::Bind { address, source })?;
                Some((listener, address, TlsMaterial::generate()?))
            }
            None => None,
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
                    conversion_timeout: self.conversion_timeout,
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
        {
            // Over a backend, other servers' writes reach this one through the watch
            // cache's feed: their CRDs are served here too, and they wake the
            // controllers as this server's own writes do.
            let weak = Arc::downgrade(&state);
            state
                .store
                .observe_applied(Box::new(move |resource, change| {
                    if let Some(state) = weak.upgrade() {
                        if resource.group == "apiextensions.k8s.io"
                            && resource.resource == "customresourcedefinitions"
                        {
                            state.registry.follow_crd(change);
                        }
                        tell_applied(&*state.write_hook, &state.registry, resource, change);
                    }
                }));
        }
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
            // What metrics-server would serve for the cluster's Nodes and Pods.
            for resource in crate::registry::metrics_resources() {
                let (group, plural) = (resource.group.clone(), resource.plural.clone());
                state.registry.register(&group, &plural, vec![resource]);
            }
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
        let kubelet = kubelet.map(|(listener, address, material)| {
            let acceptor = tokio_rustls::TlsAcceptor::from(material.server_config.clone());
            tokio::spawn(accept_loop(
                listener,
                state.clone(),
                Some(acceptor),
                stopped.clone(),
                Front::Kubelet,
            ));
            tracing::info!(%address, "kubelet port listening");
            (address, material.ca_pem.clone())
        });
        let task = tokio::spawn(accept_loop(
            listener,
            state.clone(),
            acceptor,
            stopped,
            Front::Api,
        ));
        tracing::info!(%url, "API server listening");
        Ok(ApiServer {
            url,
            address: local,
            state,
            token: self.token,
            tls,
            kubelet,
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

/// What a listener answers as.
#[derive(Clone, Copy, Debug)]
enum Front {
    /// The API server.
    Api,
    /// A kubelet's own port (`server/kubelet_port.rs`).
    Kubelet,
}

async fn accept_loop(
    listener: TcpListener,
    state: Arc<State>,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    mut stopped: watch::Receiver<bool>,
    front: Front,
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
                                serve_connection(TokioIo::new(io), state, user, front).await;
                            }
                            Ok(Err(err)) => tracing::debug!(%peer, %err, "TLS handshake failed"),
                            Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                        },
                        None => {
                            let io = FirstByteDeadline::new(stream, handshake_timeout);
                            serve_connection(TokioIo::new(io), state, None, front).await;
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

async fn serve_connection<I>(
    io: TokioIo<I>,
    state: Arc<State>,
    user: Option<UserInfo>,
    front: Front,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let header_read_timeout = state.config.limits.header_read_timeout;
    let service = service_fn(move |request| {
        let state = state.clone();
        let user = user.clone();
        async move {
            Ok::<_, Infallible>(match front {
                Front::Api => respond(state, request, user.as_ref()).await,
                Front::Kubelet => kubelet_port::respond(state, request, user.as_ref()).await,
            })
        }
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
    /// The kubelet port's address and its CA, PEM, when one is served.
    kubelet: Option<(SocketAddr, String)>,
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

    /// The address of the kubelet port, when one is served
    /// ([`ApiServerBuilder::kubelet_port`]).
    ///
    /// ```
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = kubeclient_apiserver::ApiServer::start().await?;
    /// assert_eq!(server.kubelet_address(), None);
    /// # server.shutdown().await;
    /// # Ok(())
    /// # }
    /// ```
    pub fn kubelet_address(&self) -> Option<SocketAddr> {
        self.kubelet.as_ref().map(|(address, _)| *address)
    }

    /// The CA (PEM) that signed the kubelet port's certificate, when one is served.
    pub fn kubelet_ca_pem(&self) -> Option<&str> {
        self.kubelet.as_ref().map(|(_, ca)| ca.as_str())
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
