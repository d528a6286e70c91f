//! A Pod's binding to a node: the subresource it writes through and the `PodScheduled`
//! condition it sets (the write itself, kube-apiserver's `BindingREST`, is the store's
//! [`bind`](crate::registry::store::bind)). And the two facts the Pod strategy asks the
//! cluster: whether a simulated cluster runs (then its scheduler binds Pods, if it runs;
//! otherwise the create does) and whether a kubelet runs a node (then a deleted Pod on it
//! waits for its grace period).

use kubeclient_machinery::GroupResource;
use serde_json::{Map, Value, json};

use crate::object::store_key;
use crate::storage::Store;

/// The namespace of the scheduler's leader-election Lease.
pub(crate) const SCHEDULER_LEASE_NAMESPACE: &str = "kube-system";

/// The name of the Lease a running kube-scheduler holds.
pub(crate) const SCHEDULER_LEASE_NAME: &str = "kube-scheduler";

/// The namespace of the kubelets' heartbeat Leases (one per node, named after it).
pub(crate) const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

/// The subresource a binding writes through (the update's compute step keeps only
/// `spec.nodeName` and `status` of its result).
pub(crate) const BINDING_SUBRESOURCE: &str = "binding";

fn leases() -> GroupResource {
    GroupResource::new("coordination.k8s.io", "leases")
}

/// Whether a cluster runs Pods: a scheduler holds the `kube-system/kube-scheduler`
/// Lease, or a kubelet its node's Lease in `kube-node-lease`.
pub(crate) fn cluster_runs(store: &Store) -> bool {
    store
        .get(
            &leases(),
            &store_key(Some(SCHEDULER_LEASE_NAMESPACE), SCHEDULER_LEASE_NAME),
        )
        .is_some()
        || store.any_with_prefix(&leases(), &format!("{NODE_LEASE_NAMESPACE}/"))
}

/// Whether a kubelet runs `node`: it holds the node's Lease in `kube-node-lease`.
pub(crate) fn kubelet_runs(store: &Store, node: &str) -> bool {
    store
        .get(&leases(), &store_key(Some(NODE_LEASE_NAMESPACE), node))
        .is_some()
}

/// Puts `condition` into `status.conditions`, replacing the one of its type; an
/// unchanged status keeps the old condition's `lastTransitionTime`.
pub(crate) fn set_condition(pod: &mut Map<String, Value>, mut condition: Value) {
    let status = pod.entry("status").or_insert_with(|| json!({}));
    let Value::Object(status) = status else {
        return;
    };
    let conditions = status
        .entry("conditions")
        .or_insert_with(|| Value::Array(Vec::new()));
    let Value::Array(conditions) = conditions else {
        return;
    };
    let kind = condition["type"].clone();
    match conditions.iter_mut().find(|c| c["type"] == kind) {
        Some(existing) => {
            if existing["status"] == condition["status"]
                && let Some(time) = existing.get("lastTransitionTime").cloned()
            {
                condition["lastTransitionTime"] = time;
            }
            *existing = condition;
        }
        None => conditions.push(condition),
    }
}
