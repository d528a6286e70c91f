//! The kubelet's node lease controller (`pkg/kubelet/nodelease`): each running kubelet
//! renews its node's Lease in `kube-node-lease` every heartbeat interval (re-creating it
//! if it was deleted), and a kubelet that comes back posts its node `Ready` again.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::cluster_options::ClusterOptions;
use super::node::{self, kubelet_writer, micro_now};
use super::writer::{LEASES, NODES};
use crate::object::now;
use crate::registry::kinds::pod_binding::NODE_LEASE_NAMESPACE;
use crate::registry::store::GenericStore;

/// When each kubelet last renewed its Lease.
#[derive(Debug, Default)]
pub(super) struct Heartbeats {
    last: HashMap<String, Instant>,
}

impl Heartbeats {
    /// Renews `node`'s Lease if it is due; how long until the next renewal.
    pub(super) fn beat(
        &mut self,
        store: &GenericStore<'_>,
        node: &str,
        options: &ClusterOptions,
    ) -> Duration {
        let interval = options.heartbeat_interval;
        if let Some(last) = self.last.get(node) {
            let since = last.elapsed();
            if since < interval {
                return interval.saturating_sub(since);
            }
        }
        let writer = kubelet_writer(store, node);
        let renewed = writer.update(
            LEASES,
            Some(NODE_LEASE_NAMESPACE),
            node,
            "",
            false,
            |lease| {
                let spec = lease.entry("spec").or_insert_with(|| json!({}));
                if let Value::Object(spec) = spec {
                    spec.insert("holderIdentity".to_owned(), json!(node));
                    spec.insert("renewTime".to_owned(), json!(micro_now()));
                }
                true
            },
        );
        if !renewed {
            node::create_lease(&writer, node);
        }
        post_ready(&writer, node);
        self.last.insert(node.to_owned(), Instant::now());
        interval
    }

    /// Forgets `node`'s last renewal (its kubelet restarts: it renews at once).
    pub(super) fn forget(&mut self, node: &str) {
        self.last.remove(node);
    }
}

/// Sets the node's `Ready` condition back to `True` if something else marked it (the
/// kubelet's node status update after a restart).
fn post_ready(writer: &super::writer::Writer<'_>, node: &str) {
    writer.update(NODES, None, node, "", true, |object| {
        let Some(Value::Array(conditions)) = object
            .get_mut("status")
            .and_then(|status| status.get_mut("conditions"))
        else {
            return false;
        };
        let mut changed = false;
        let time = now();
        for condition in conditions.iter_mut() {
            let (status, reason, message) = match condition["type"].as_str() {
                Some("Ready") => ("True", "KubeletReady", "kubelet is posting ready status"),
                Some("MemoryPressure") => (
                    "False",
                    "KubeletHasSufficientMemory",
                    "kubelet has sufficient memory available",
                ),
                Some("DiskPressure") => (
                    "False",
                    "KubeletHasNoDiskPressure",
                    "kubelet has no disk pressure",
                ),
                Some("PIDPressure") => (
                    "False",
                    "KubeletHasSufficientPID",
                    "kubelet has sufficient PID available",
                ),
                _ => continue,
            };
            if condition["status"] == status {
                continue;
            }
            *condition = json!({
                "type": condition["type"], "status": status, "reason": reason,
                "message": message, "lastHeartbeatTime": time, "lastTransitionTime": time,
            });
            changed = true;
        }
        changed
    });
}
