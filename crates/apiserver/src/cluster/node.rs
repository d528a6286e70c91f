//! The simulated nodes: the Node each kubelet registers (capacity and allocatable,
//! conditions, addresses, node info, its Pod CIDR), and [`NodeSet`], the nodes as the
//! scheduler and the controllers read them.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::writer::{LEASES, NODES, Writer};
use crate::object::now;
use crate::quantity;
use crate::registry::kinds::pod_binding::NODE_LEASE_NAMESPACE;
use crate::registry::store::GenericStore;

/// What each simulated node offers (a modest machine; `pods` is the kubelet's default
/// `--max-pods`).
const CAPACITY: [(&str, &str); 4] = [
    ("cpu", "4"),
    ("memory", "16Gi"),
    ("ephemeral-storage", "100Gi"),
    ("pods", "110"),
];

/// The duration of a node's Lease, as the kubelet's `nodeLeaseDurationSeconds`.
pub(super) const LEASE_DURATION_SECONDS: u64 = 40;

/// The name of the `index`th node, from 1.
pub(super) fn node_name(index: usize) -> String {
    format!("node-{index}")
}

/// The node's address on the simulated network (`172.18.0.<index + 2>` as kind's
/// workers; 200 nodes per `/24`).
pub(super) fn internal_ip(index: usize) -> String {
    format!("172.18.{}.{}", index / 200, index % 200 + 2)
}

/// The node's Pod CIDR (`10.244.<index>.0/24`; beyond 255 nodes the next `/16`s).
pub(super) fn pod_cidr(index: usize) -> String {
    format!("10.{}.{}.0/24", 244 + index / 256, index % 256)
}

/// The `offset`th address of the node's Pod CIDR (offset 1 to 254).
pub(super) fn pod_ip(cidr: &str, offset: u8) -> Option<String> {
    let network = cidr.strip_suffix(".0/24")?;
    Some(format!("{network}.{offset}"))
}

pub(super) fn kubelet_writer<'a>(store: &'a GenericStore<'a>, node: &str) -> Writer<'a> {
    Writer::new(
        store,
        format!("system:node:{node}"),
        &["system:nodes"],
        "kubelet",
    )
}

/// The Node the kubelet of the `index`th node registers, Ready.
fn node_object(index: usize) -> Value {
    let name = node_name(index);
    let capacity: serde_json::Map<String, Value> = CAPACITY
        .iter()
        .map(|(resource, amount)| ((*resource).to_owned(), json!(amount)))
        .collect();
    let time = now();
    let condition = |kind: &str, status: &str, reason: &str, message: &str| {
        json!({
            "type": kind, "status": status, "reason": reason, "message": message,
            "lastHeartbeatTime": time, "lastTransitionTime": time,
        })
    };
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "type": "kubeclient",
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {"podCIDR": pod_cidr(index), "podCIDRs": [pod_cidr(index)]},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ],
            "addresses": [
                {"type": "InternalIP", "address": internal_ip(index)},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": uuid::Uuid::new_v4().to_string(),
                "containerRuntimeVersion": "kubeclient://simulated",
                "kernelVersion": "simulated",
                "kubeProxyVersion": "",
                "kubeletVersion": "v1.37.0-kubeclient",
                "machineID": uuid::Uuid::new_v4().simple().to_string(),
                "operatingSystem": "linux",
                "osImage": "kubeclient simulated node",
                "systemUUID": uuid::Uuid::new_v4().to_string(),
            },
        },
    })
}

/// Registers the `index`th node and its Lease (the kubelet's first acts).
pub(super) fn register(store: &GenericStore<'_>, index: usize) {
    let name = node_name(index);
    let writer = kubelet_writer(store, &name);
    writer.create(NODES, None, node_object(index));
    create_lease(&writer, &name);
}

/// Creates the node's Lease in `kube-node-lease`, owned by its Node (as the kubelet's
/// node lease controller does). Whether it was stored.
pub(super) fn create_lease(writer: &Writer<'_>, node: &str) -> bool {
    let nodes = kubeclient_machinery::GroupResource::new("", "nodes");
    let Some(stored) = writer.store.storage.get(&nodes, node) else {
        return false;
    };
    let uid = stored
        .value
        .pointer("/metadata/uid")
        .cloned()
        .unwrap_or(Value::Null);
    let lease = json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {
            "name": node, "namespace": NODE_LEASE_NAMESPACE,
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node, "uid": uid}],
        },
        "spec": {
            "holderIdentity": node,
            "leaseDurationSeconds": LEASE_DURATION_SECONDS,
            "renewTime": micro_now(),
        },
    });
    writer.create(LEASES, Some(NODE_LEASE_NAMESPACE), lease)
}

/// The time now as a `MicroTime` (`2026-01-02T03:04:05.123456Z`).
pub(super) fn micro_now() -> String {
    let now = jiff::Timestamp::now();
    let micros = now.as_microsecond();
    jiff::Timestamp::from_microsecond(micros)
        .map(|t| format!("{t:.6}"))
        .unwrap_or_else(|_| now.to_string())
}

/// One node as the scheduler and the controllers see it.
#[derive(Clone, Debug)]
pub(super) struct NodeInfo {
    pub(super) name: String,
    pub(super) uid: String,
    pub(super) labels: BTreeMap<String, String>,
    /// `spec.taints`.
    pub(super) taints: Vec<Value>,
    /// `spec.unschedulable` (cordoned).
    pub(super) unschedulable: bool,
    /// `status.allocatable`, as numbers.
    pub(super) allocatable: BTreeMap<String, f64>,
    /// The `InternalIP` address.
    pub(super) internal_ip: String,
    /// `spec.podCIDR`.
    pub(super) pod_cidr: String,
    /// The whole object.
    pub(super) object: Value,
}

/// Every Node, read once per pass.
#[derive(Debug, Default)]
pub(super) struct NodeSet {
    pub(super) nodes: Vec<NodeInfo>,
}

impl NodeSet {
    pub(super) fn load(store: &GenericStore<'_>) -> NodeSet {
        let nodes = store
            .storage
            .snapshot(&kubeclient_machinery::GroupResource::new("", "nodes"), "")
            .objects
            .iter()
            .map(|stored| NodeInfo::from_object(&stored.value))
            .collect();
        NodeSet { nodes }
    }
}

impl NodeInfo {
    fn from_object(object: &Value) -> NodeInfo {
        let text = |pointer: &str| {
            object
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let labels = object
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .map(|labels| {
                labels
                    .iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        let allocatable = object
            .pointer("/status/allocatable")
            .and_then(Value::as_object)
            .map(|amounts| {
                amounts
                    .iter()
                    .filter_map(|(k, v)| Some((k.clone(), quantity::from_json(v)?)))
                    .collect()
            })
            .unwrap_or_default();
        let internal_ip = object
            .pointer("/status/addresses")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|a| a["type"] == "InternalIP")
            .and_then(|a| a["address"].as_str())
            .unwrap_or("")
            .to_owned();
        NodeInfo {
            name: text("/metadata/name"),
            uid: text("/metadata/uid"),
            labels,
            taints: object
                .pointer("/spec/taints")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            unschedulable: object
                .pointer("/spec/unschedulable")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            allocatable,
            internal_ip,
            pod_cidr: text("/spec/podCIDR"),
            object: object.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_get_distinct_addresses_and_cidrs() {
        assert_eq!(pod_cidr(super::super::MAX_NODES - 1), "10.254.255.0/24");
        assert_eq!(internal_ip(1), "172.18.0.3");
        assert_eq!(internal_ip(255), "172.18.1.57");
        assert_eq!(pod_cidr(1), "10.244.1.0/24");
        assert_eq!(pod_cidr(300), "10.245.44.0/24");
        assert_eq!(pod_ip("10.244.1.0/24", 7).as_deref(), Some("10.244.1.7"));
        assert_eq!(pod_ip("bad", 7), None);
    }
}
