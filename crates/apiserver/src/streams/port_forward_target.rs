//! Where a Pod's port forwards to (what the kubelet's port-forward dials inside the Pod's
//! network namespace): the `host:port` in the Pod's annotation
//! `port-forward.kubeclient.dev/<port>` when the operator allows it
//! ([`PortForwardAllowlist`]), or a [`PortTargetError`] the session reports on the port's
//! error stream.

use std::net::{AddrParseError, SocketAddr};

use super::pod_target::PodTarget;
use crate::port_forward_allowlist::PortForwardAllowlist;

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

/// Where `port` of the Pod forwards to, from its annotation (allowed addresses only).
///
/// # Errors
///
/// No annotation, an address the allowlist does not hold, or one that does not parse.
pub(crate) fn port_target(
    target: &PodTarget,
    port: u16,
    allowlist: &PortForwardAllowlist,
) -> Result<SocketAddr, PortTargetError> {
    let key = format!("{PORT_FORWARD_ANNOTATION_PREFIX}{port}");
    let pod = || target.name.clone();
    let Some(value) = target.pod.value["metadata"]["annotations"][&key].as_str() else {
        return Err(PortTargetError::NothingListens {
            port,
            pod: pod(),
            key,
        });
    };
    match value.trim().parse::<SocketAddr>() {
        Ok(address) if allowlist.allows(&address) => Ok(address),
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
