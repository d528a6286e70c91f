//! [`MetricsServer`]: `/metrics`, `/healthz` and `/readyz` over plain HTTP/1.1 (a few
//! lines on a TCP listener: the library does not build an HTTP server stack).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use super::prometheus_metrics::Metrics;
use crate::util::accept_loop::AcceptLoop;

/// The most request-head bytes read before answering 431.
const MAX_HEAD_BYTES: usize = 8 * 1024;
/// How long a client may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

type ReadyFn = Arc<dyn Fn() -> bool + Send + Sync>;
type HealthFn = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;
type HealthSlot = Arc<std::sync::Mutex<Option<HealthFn>>>;

/// Serves a [`Metrics`] registry and health probes until stopped or dropped:
///
/// - `GET /metrics`: the exposition text;
/// - `GET /healthz`: `ok` while the process serves and the health check (if one is set
///   with [`set_health_check`](Self::set_health_check)) passes, 500 with its message
///   otherwise;
/// - `GET /readyz`: `ok` once `ready()` says so (e.g. caches synced), 503 before.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> std::io::Result<()> {
/// use std::sync::Arc;
/// use kubeclient::metrics::{Metrics, MetricsServer};
///
/// let server = MetricsServer::start("127.0.0.1:0".parse().unwrap(), Arc::new(Metrics::new()), || true).await?;
/// println!("metrics on http://{}/metrics", server.local_addr());
/// server.shutdown().await;
/// # Ok(()) }
/// ```
#[must_use = "dropping the server stops it"]
pub struct MetricsServer {
    health: HealthSlot,
    server: AcceptLoop,
}

impl MetricsServer {
    /// Listens on `address` (port 0 picks a free one).
    ///
    /// # Errors
    ///
    /// The listener could not be bound.
    pub async fn start(
        address: SocketAddr,
        metrics: Arc<Metrics>,
        ready: impl Fn() -> bool + Send + Sync + 'static,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind(address).await?;
        let address = listener.local_addr()?;
        let ready: ReadyFn = Arc::new(ready);
        let health = HealthSlot::default();
        let probes = Probes {
            ready,
            health: health.clone(),
        };
        let server =
            AcceptLoop::spawn(address, |stop| accept_loop(listener, metrics, probes, stop));
        Ok(MetricsServer { health, server })
    }

    /// Makes `/healthz` answer 500 with the error while `check` fails, e.g. a leader
    /// elector's [`check`](crate::leaderelection::LeaderElector::check).
    pub fn set_health_check(&self, check: impl Fn() -> Result<(), String> + Send + Sync + 'static) {
        *crate::sync::lock(&self.health) = Some(Arc::new(check));
    }

    /// Where it listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// Stops listening and waits for the accept loop to end.
    pub async fn shutdown(self) {
        self.server.shutdown().await;
    }
}

impl std::fmt::Debug for MetricsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsServer")
            .field("address", &self.server.local_addr())
            .finish_non_exhaustive()
    }
}

/// What the probes ask.
#[derive(Clone)]
struct Probes {
    ready: ReadyFn,
    health: HealthSlot,
}

impl Probes {
    fn health(&self) -> Result<(), String> {
        let check = crate::sync::lock(&self.health).clone();
        check.map_or(Ok(()), |check| check())
    }
}

async fn accept_loop(
    listener: TcpListener,
    metrics: Arc<Metrics>,
    probes: Probes,
    stop: CancellationToken,
) {
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, _)) => {
                let (metrics, probes) = (metrics.clone(), probes.clone());
                tokio::spawn(async move {
                    if let Err(err) = answer(stream, &metrics, &probes).await {
                        tracing::debug!(error = %err, "a metrics connection failed");
                    }
                });
            }
            Err(err) => {
                tracing::warn!(error = %err, "accepting a metrics connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Reads the request head (bounded in size and time) and answers one request.
async fn answer(mut stream: TcpStream, metrics: &Metrics, probes: &Probes) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut buffer = [0_u8; 1024];
    let complete = tokio::time::timeout(HEAD_TIMEOUT, async {
        loop {
            if head.windows(4).any(|w| w == b"\r\n\r\n") {
                return Ok::<bool, std::io::Error>(true);
            }
            if head.len() > MAX_HEAD_BYTES {
                return Ok(false);
            }
            let read = stream.read(&mut buffer).await?;
            if read == 0 {
                return Ok(false);
            }
            head.extend_from_slice(buffer.get(..read).unwrap_or_default());
        }
    })
    .await
    .unwrap_or(Ok(false))?;
    let request_line = String::from_utf8_lossy(&head);
    let mut parts = request_line.lines().next().unwrap_or("").split(' ');
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, content_type, body) = if !complete {
        (
            "431 Request Header Fields Too Large",
            "text/plain",
            "request head too large or incomplete\n".to_owned(),
        )
    } else if method != "GET" {
        (
            "405 Method Not Allowed",
            "text/plain",
            "only GET\n".to_owned(),
        )
    } else {
        match path {
            "/metrics" => (
                "200 OK",
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                metrics.encode(),
            ),
            "/healthz" | "/livez" => match probes.health() {
                Ok(()) => ("200 OK", "text/plain", "ok".to_owned()),
                Err(why) => (
                    "500 Internal Server Error",
                    "text/plain",
                    format!("unhealthy: {why}\n"),
                ),
            },
            "/readyz" if (probes.ready)() => ("200 OK", "text/plain", "ok".to_owned()),
            "/readyz" => (
                "503 Service Unavailable",
                "text/plain",
                "not ready: caches have not synced".to_owned(),
            ),
            _ => (
                "404 Not Found",
                "text/plain",
                "not found: try /metrics, /healthz or /readyz\n".to_owned(),
            ),
        }
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}
