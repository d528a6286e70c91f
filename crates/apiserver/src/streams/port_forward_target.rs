//! Where a Pod's port forwards to (what the kubelet's port-forward dials inside the Pod's
//! network namespace): the `host:port` in the Pod's annotation
//! `port-forward.kubeclient.dev/<port>` when the operator allows it
//! ([`PortForwardAllowlist`]); without the annotation, the [`StandIn`] of a Pod a
//! simulated kubelet runs; else a [`PortTargetError`] the session reports on the port's
//! error stream. [`connect`] opens a connection to either.

use std::net::{AddrParseError, SocketAddr};
use std::pin::Pin;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use super::pod_target::PodTarget;
use super::stand_in_server::StandIn;
use crate::port_forward_allowlist::PortForwardAllowlist;

/// How long connecting to a host target may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// What a forwarded port connects to.
#[derive(Clone, Copy, Debug)]
pub(crate) enum PortTarget {
    /// A host address the operator allowed.
    Host(SocketAddr),
    /// The simulation's stand-in for the Pod's server.
    StandIn(StandIn),
}

/// The reading half of a connection to a target.
pub(crate) type TargetRead = Pin<Box<dyn AsyncRead + Send>>;
/// The writing half of a connection to a target.
pub(crate) type TargetWrite = Pin<Box<dyn AsyncWrite + Send>>;

/// Connects to `target`.
///
/// # Errors
///
/// A host target that refuses, fails or does not answer within 10 s: `dial ADDRESS:
/// CAUSE`, as the kubelet words it.
pub(crate) async fn connect(target: PortTarget) -> Result<(TargetRead, TargetWrite), String> {
    match target {
        PortTarget::Host(address) => {
            match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address)).await {
                Ok(Ok(stream)) => {
                    let (read, write) = stream.into_split();
                    Ok((Box::pin(read), Box::pin(write)))
                }
                Ok(Err(err)) => Err(format!("dial {address}: {err}")),
                Err(_) => Err(format!("dial {address}: timed out")),
            }
        }
        PortTarget::StandIn(stand_in) => {
            let (read, write) = tokio::io::split(stand_in.connect());
            Ok((Box::pin(read), Box::pin(write)))
        }
    }
}

/// The annotation prefix naming a port's target: `port-forward.kubeclient.dev/8080`.
pub(crate) const PORT_FORWARD_ANNOTATION_PREFIX: &str = "port-forward.kubeclient.dev/";

/// Why a port has no target. The session sends it (with its cause) to the client.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PortTargetError {
    /// The Pod has no annotation for the port.
    #[error(
        "error forwarding port {port} to pod {pod}: nothing listens on it (set the annotation {key} to a loopback host:port)"
    )]
    NothingListens {
        /// The Pod's port.
        port: u16,
        /// The Pod's name.
        pod: String,
        /// The annotation that would name the target.
        key: String,
    },
    /// The annotation names an address the operator has not allowed.
    #[error(
        "error forwarding port {port} to pod {pod}: {key}={address} is not in the server's port-forward allowlist (start it with --port-forward-allow {address}, or call ApiServer::allow_port_forward)"
    )]
    NotAllowed {
        /// The Pod's port.
        port: u16,
        /// The Pod's name.
        pod: String,
        /// The annotation.
        key: String,
        /// The address it names.
        address: SocketAddr,
    },
    /// The annotation is not a `host:port`.
    #[error("error forwarding port {port} to pod {pod}: {key}={value:?} is not a host:port")]
    NotAnAddress {
        /// The Pod's port.
        port: u16,
        /// The Pod's name.
        pod: String,
        /// The annotation.
        key: String,
        /// Its value.
        value: String,
        /// Why it does not parse.
        source: AddrParseError,
    },
}

/// Where `port` of the Pod forwards to: its annotation (allowed addresses only), else the
/// stand-in of a Pod a kubelet runs.
///
/// # Errors
///
/// No annotation and no stand-in, an address the allowlist does not hold, or one that
/// does not parse.
pub(crate) fn port_target(
    target: &PodTarget,
    port: u16,
    allowlist: &PortForwardAllowlist,
) -> Result<PortTarget, PortTargetError> {
    let key = format!("{PORT_FORWARD_ANNOTATION_PREFIX}{port}");
    let pod = || target.name.clone();
    let Some(value) = target.pod.value["metadata"]["annotations"][&key].as_str() else {
        if let Some(stand_in) = StandIn::for_pod(&target.pod.value, port) {
            return Ok(PortTarget::StandIn(stand_in));
        }
        return Err(PortTargetError::NothingListens {
            port,
            pod: pod(),
            key,
        });
    };
    match value.trim().parse::<SocketAddr>() {
        Ok(address) if allowlist.allows(&address) => Ok(PortTarget::Host(address)),
        Ok(address) => Err(PortTargetError::NotAllowed {
            port,
            pod: pod(),
            key,
            address,
        }),
        Err(source) => Err(PortTargetError::NotAnAddress {
            port,
            pod: pod(),
            key,
            value: value.to_owned(),
            source,
        }),
    }
}
