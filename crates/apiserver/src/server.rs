//! [`ApiServer`]: starting, addressing, configuring clients for, and stopping the server.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::faults::Faults;
use crate::handlers;
use crate::registry::Registry;
use crate::state::{Config, State};
use crate::storage::{Store, Write};
use crate::tls::{CertificatePair, TlsError, TlsMaterial};

/// The namespaces every cluster starts with.
const INITIAL_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

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
}

impl Default for ApiServerBuilder {
    fn default() -> Self {
        ApiServerBuilder {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            history_window: 10_000,
            token: None,
            tls: false,
            admin: false,
            bookmark_interval: Duration::from_secs(60),
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

    /// Binds the port and starts serving.
    ///
    /// # Errors
    ///
    /// [`StartError`] when the address cannot be bound or TLS material cannot be made.
    pub async fn start(self) -> Result<ApiServer, StartError> {
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
        let state = Arc::new(State {
            store: Store::new(self.history_window),
            registry: Registry::new(),
            faults: Faults::default(),
            config: Config {
                token: self.token.clone(),
                server_address: local.to_string(),
                bookmark_interval: self.bookmark_interval,
                admin_enabled: self.admin,
            },
        });
        create_initial_namespaces(&state.store);
        let (stop, stopped) = watch::channel(false);
        let acceptor = tls
            .as_ref()
            .map(|t| tokio_rustls::TlsAcceptor::from(t.server_config.clone()));
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
        })
    }
}

fn create_initial_namespaces(store: &Store) {
    let namespaces = kubeclient_machinery::GroupResource::new("", "namespaces");
    let created = handlers::now_rfc3339();
    for name in INITIAL_NAMESPACES {
        let namespace = json!({
            "kind": "Namespace", "apiVersion": "v1",
            "metadata": {"name": name, "uid": uuid::Uuid::new_v4().to_string(), "creationTimestamp": created,
                         "labels": {"kubernetes.io/metadata.name": name}},
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        });
        let _ = store.write(&namespaces, name, |_| {
            Ok::<_, Infallible>(Write::Create(namespace))
        });
    }
}

async fn accept_loop(
    listener: TcpListener,
    state: Arc<State>,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    mut stopped: watch::Receiver<bool>,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, peer)) = accepted else { continue };
                let state = state.clone();
                let acceptor = acceptor.clone();
                connections.spawn(async move {
                    match acceptor {
                        Some(acceptor) => match acceptor.accept(stream).await {
                            Ok(tls) => {
                                let verified = tls.get_ref().1.peer_certificates().is_some_and(|c| !c.is_empty());
                                serve_connection(TokioIo::new(tls), state, verified).await;
                            }
                            Err(err) => tracing::debug!(%peer, %err, "TLS handshake failed"),
                        },
                        None => serve_connection(TokioIo::new(stream), state, false).await,
                    }
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            _ = stopped.changed() => break,
        }
    }
    // Ending the watches lets their connections finish; give the rest a moment, then stop.
    state.store.drop_watchers();
    let _ = tokio::time::timeout(Duration::from_millis(500), async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    connections.abort_all();
}

async fn serve_connection<I>(io: TokioIo<I>, state: Arc<State>, verified: bool)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |request| {
        let state = state.clone();
        async move { Ok::<_, Infallible>(handlers::handle(state, request, verified).await) }
    });
    if let Err(err) = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
        .serve_connection_with_upgrades(io, service)
        .await
    {
        tracing::debug!(%err, "connection ended with an error");
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The address is in use or not available. Pick another with `--listen`, or port 0.
    #[error(
        "cannot listen on {address}: {source} (is another server using it? port 0 picks a free one)"
    )]
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

    /// The storage (for inspection in tests).
    pub fn store(&self) -> &Store {
        &self.state.store
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

    /// Writes [`kubeconfig`](Self::kubeconfig) to a file.
    ///
    /// # Errors
    ///
    /// The I/O error writing the file.
    pub fn write_kubeconfig(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        std::fs::write(path, self.kubeconfig())
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
