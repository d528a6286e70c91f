//! [`Sessions`]: what the server's streaming sessions (pod logs, exec, attach and
//! port-forward) share: the Pod logs they read, the host addresses port-forward may dial,
//! and the signal that ends them when the server shuts down.

use std::sync::Arc;

use tokio::sync::watch;

use crate::pod_logs::PodLogs;
use crate::port_forward_allowlist::PortForwardAllowlist;

/// Shared state of streaming sessions.
///
/// Upgraded connections (exec, attach, port-forward) leave hyper's connection tasks, so
/// the accept loop cannot end them; each session watches [`Sessions::stopping`] instead.
#[derive(Debug)]
pub struct Sessions {
    /// The containers' log lines.
    pub pod_logs: Arc<PodLogs>,
    /// `true` once the server is shutting down.
    shutdown: watch::Sender<bool>,
    /// Exec and attach offer only `v4.channel.k8s.io`, as API servers before 1.30 did.
    legacy_remote_command: bool,
    /// The host addresses port-forward may dial.
    port_forward_allowlist: PortForwardAllowlist,
}

impl Default for Sessions {
    fn default() -> Self {
        Sessions {
            pod_logs: Arc::default(),
            shutdown: watch::Sender::new(false),
            legacy_remote_command: false,
            port_forward_allowlist: PortForwardAllowlist::default(),
        }
    }
}

impl Sessions {
    /// Sessions whose exec and attach speak only `v4.channel.k8s.io` (no stdin close
    /// signal), like kube-apiserver before 1.30, to test clients' fallback.
    pub fn legacy_remote_command() -> Self {
        Sessions {
            legacy_remote_command: true,
            ..Sessions::default()
        }
    }

    /// Whether exec and attach offer only `v4.channel.k8s.io`.
    pub fn is_legacy_remote_command(&self) -> bool {
        self.legacy_remote_command
    }

    /// The host addresses port-forward may dial (none unless the operator allows some).
    pub(crate) fn port_forward_allowlist(&self) -> &PortForwardAllowlist {
        &self.port_forward_allowlist
    }

    /// Ends every session (and refuses to keep new ones alive).
    pub fn shut_down(&self) {
        self.shutdown.send_replace(true);
    }

    /// A receiver that turns `true` when the server shuts down.
    pub fn stopping(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }
}

/// Resolves when `stopping` turns `true` (or its sender is gone).
pub(crate) async fn stopped(stopping: &mut watch::Receiver<bool>) {
    let _ = stopping.wait_for(|stop| *stop).await;
}
