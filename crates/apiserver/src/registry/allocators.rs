//! The allocators of Services: a free ClusterIP of the service range and free NodePorts,
//! read from the stored Services (kube-apiserver's `ipallocator` and `portallocator`, which
//! keep bitmaps; the embedded server's Services are few enough to scan).

use std::collections::HashSet;

use kubeclient_machinery::GroupResource;
use serde_json::Value;

use crate::storage::Store;

/// The ClusterIP range Services get addresses from (kubeadm's default, 10.96.0.0/12;
/// the first address belongs to `default/kubernetes`).
const SERVICE_IP_PREFIX: [u8; 2] = [10, 96];
/// The NodePort range (kube-apiserver's default).
const NODE_PORTS: std::ops::RangeInclusive<i64> = 30000..=32767;

/// Every ClusterIP and NodePort in use, read from the stored Services.
fn stored_services(store: &Store) -> Vec<std::sync::Arc<crate::storage::StoredObject>> {
    store
        .snapshot(&GroupResource::new("", "services"), "")
        .objects
}

pub(crate) fn used_node_ports(store: &Store) -> HashSet<i64> {
    stored_services(store)
        .iter()
        .filter_map(|s| {
            s.value
                .pointer("/spec/ports")
                .and_then(Value::as_array)
                .cloned()
        })
        .flatten()
        .filter_map(|p| p.get("nodePort").and_then(Value::as_i64))
        .collect()
}

pub(crate) fn allocate_node_port(used: &mut HashSet<i64>) -> Option<i64> {
    let span = NODE_PORTS.end() - NODE_PORTS.start() + 1;
    let start = fastrand::i64(0..span);
    (0..span)
        .map(|offset| NODE_PORTS.start() + (start + offset) % span)
        .find(|port| used.insert(*port))
}

/// A free address of 10.96.0.0/16 (the low part of the /12 service range).
pub(crate) fn allocate_cluster_ip(store: &Store) -> Option<String> {
    let used: HashSet<String> = stored_services(store)
        .iter()
        .filter_map(|s| {
            s.value
                .pointer("/spec/clusterIP")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect();
    let [a, b] = SERVICE_IP_PREFIX;
    let start = fastrand::u32(2..65_534);
    (0..65_532u32)
        .map(|offset| 2 + (start - 2 + offset) % 65_532)
        .map(|host| format!("{a}.{b}.{}.{}", host / 256, host % 256))
        .find(|ip| !used.contains(ip))
}
