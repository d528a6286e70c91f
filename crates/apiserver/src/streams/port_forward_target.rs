//! Where a Pod's port forwards to (what the kubelet's port-forward dials inside the Pod's
//! network namespace): the loopback `host:port` in the Pod's annotation
//! `port-forward.kubeclient.dev/<port>`, or a [`PortTargetError`] the session reports on
//! the port's error stream.

use std::net::{AddrParseError, SocketAddr};

use super::pod_target::PodTarget;

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
    /// The annotation names an address off the loopback interface.
    #[error(
        "error forwarding port {port} to pod {pod}: {key}={address} is not a loopback address (only 127.0.0.0/8 and ::1 are allowed)"
    )]
    NotLoopback {
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

/// Where `port` of the Pod forwards to, from its annotation (loopback addresses only).
///
/// # Errors
///
/// No annotation, an address off the loopback interface, or one that does not parse.
pub(crate) fn port_target(target: &PodTarget, port: u16) -> Result<SocketAddr, PortTargetError> {
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
        Ok(address) if address.ip().is_loopback() => Ok(address),
        Ok(address) => Err(PortTargetError::NotLoopback {
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
