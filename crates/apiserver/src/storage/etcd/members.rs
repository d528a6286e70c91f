//! [`Members`]: one client per etcd member and failover between them, as etcd's own Go
//! client does it. The `etcd-client` crate balances one channel over every endpoint and
//! sends requests to a member that is down (a refused connection fails the request), so
//! the backend keeps a client per endpoint instead: requests go to the member that
//! answered last, and move on to the next one when it cannot be reached.
//!
//! Which failures move on: a request that never left (the member refused the
//! connection, or could not be reached in the connect timeout) is safe to send to
//! another member whatever it does; a read is safe to send again after any failure of
//! the transport; a write that may have reached etcd is not sent twice (its outcome is
//! unknown, as with kube-apiserver, and the caller decides). etcd's own answers
//! (`etcdserver: request timed out`, a compacted revision) are final.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use etcd_client::{Client, ConnectOptions};

/// Whether a request may be sent again after its transport failed past connecting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Resend {
    /// A read, or a watch being opened: any transport failure moves on.
    Safe,
    /// A write: only a request that never reached a member moves on.
    OnlyUnsent,
}

/// A client per member, and which one answered last.
#[derive(Clone)]
pub(super) struct Members {
    clients: Arc<Vec<(String, Client)>>,
    preferred: Arc<AtomicUsize>,
}

impl Members {
    /// A client for each of `servers` (connections are made on first use).
    pub(super) async fn connect(
        servers: &[String],
        options: &ConnectOptions,
    ) -> Result<Members, etcd_client::Error> {
        let mut clients = Vec::with_capacity(servers.len());
        for server in servers {
            let client = Client::connect([server.as_str()], Some(options.clone())).await?;
            clients.push((server.clone(), client));
        }
        if clients.is_empty() {
            return Err(etcd_client::Error::InvalidArgs(
                "no etcd server given".to_owned(),
            ));
        }
        Ok(Members {
            clients: Arc::new(clients),
            preferred: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// Runs `request` on the preferred member, then on each other one in turn while the
    /// failure allows it (see [`Resend`]); the first answer, or the last failure.
    pub(super) async fn run<T, F>(
        &self,
        resend: Resend,
        request: impl Fn(Client) -> F,
    ) -> Result<T, etcd_client::Error>
    where
        F: Future<Output = Result<T, etcd_client::Error>>,
    {
        let count = self.clients.len();
        let first = self.preferred.load(Ordering::Relaxed);
        let mut failure = None;
        for step in 0..count {
            let index = (first + step) % count;
            let Some((server, client)) = self.clients.get(index) else {
                continue;
            };
            match request(client.clone()).await {
                Ok(answer) => {
                    if step > 0 {
                        self.preferred.store(index, Ordering::Relaxed);
                    }
                    return Ok(answer);
                }
                Err(error) if moves_on(&error, resend) => {
                    tracing::debug!(%server, error = %error, "etcd member unreachable; trying the next one");
                    failure = Some(error);
                }
                Err(error) => return Err(error),
            }
        }
        Err(failure.unwrap_or_else(|| etcd_client::Error::InvalidArgs("no etcd server".to_owned())))
    }
}

/// gRPC's code `UNAVAILABLE`.
const UNAVAILABLE: i32 = 14;

/// Whether a failed request may go to the next member.
fn moves_on(error: &etcd_client::Error, resend: Resend) -> bool {
    let transport = match error {
        etcd_client::Error::TransportError(_) | etcd_client::Error::IoError(_) => true,
        etcd_client::Error::GRpcStatus(status) => {
            // etcd's own answers begin with `etcdserver:` (and compaction messages are
            // plain statuses of other codes): they are final.
            status.code() as i32 == UNAVAILABLE && !status.message().starts_with("etcdserver:")
        }
        _ => false,
    };
    transport && (resend == Resend::Safe || never_sent(error))
}

/// Whether the request never reached a member: its connection was refused or never
/// made.
fn never_sent(error: &etcd_client::Error) -> bool {
    // `etcd_client::Error` names no source: start from what it wraps.
    let mut source: Option<&(dyn std::error::Error + 'static)> = match error {
        etcd_client::Error::GRpcStatus(status) => Some(status),
        etcd_client::Error::TransportError(transport) => Some(transport),
        etcd_client::Error::IoError(io) => Some(io),
        _ => None,
    };
    while let Some(current) = source {
        if let Some(io) = current.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionRefused
                    | std::io::ErrorKind::TimedOut
                    | std::io::ErrorKind::AddrNotAvailable
                    | std::io::ErrorKind::HostUnreachable
                    | std::io::ErrorKind::NetworkUnreachable
            )
        {
            return true;
        }
        if current.to_string().contains("tcp connect error") {
            return true;
        }
        source = current.source();
    }
    false
}
