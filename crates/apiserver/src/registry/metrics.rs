//! metrics-server's resource metrics API (`metrics.k8s.io/v1beta1`), for a server that
//! runs the simulated cluster: a PodMetrics per running Pod and a NodeMetrics per Node,
//! computed from the stored objects when read (nothing is stored, nothing is watched),
//! so `kubectl top` and clients' metrics helpers work.
//!
//! The simulated processes do no work, so their usage is simulated: a running container
//! uses what it requests (else its limit, else 1m CPU and 4Mi of memory); a node uses
//! what its running Pods use plus [`NODE_SYSTEM_CPU`] and [`NODE_SYSTEM_MEMORY`] for
//! itself. Quantities are written as metrics-server writes them: CPU in nanocores
//! (`250000000n`), memory in kibibytes (`65536Ki`).

use std::collections::HashMap;
use std::sync::Arc;

use kubeclient_machinery::GroupResource;
use serde_json::{Map, Value, json};

use crate::object::now;
use crate::quantity;
use crate::storage::{Store, StoredObject};

/// What a node's own processes (kubelet, container runtime) use, in cores.
pub(crate) const NODE_SYSTEM_CPU: f64 = 0.05;
/// What a node's own processes use, in bytes (128Mi).
pub(crate) const NODE_SYSTEM_MEMORY: f64 = 134_217_728.0;
/// The window metrics-server reports its rates over.
const WINDOW: &str = "20s";
/// A container that requests and limits nothing uses this much CPU (cores)...
const IDLE_CPU: f64 = 0.001;
/// ... and this much memory (bytes, 4Mi).
const IDLE_MEMORY: f64 = 4_194_304.0;

/// The metrics of `resource` (`nodes` or `pods` of `metrics.k8s.io`) under the storage key
/// `prefix` (`ns/` for one namespace, `""` for all), stamped with the store's revision.
pub(crate) fn objects(store: &Store, plural: &str, prefix: &str) -> Vec<Arc<StoredObject>> {
    let revision = store.revision();
    let pods = store
        .snapshot(&GroupResource::new("", "pods"), prefix)
        .objects;
    let values: Vec<Value> = match plural {
        "pods" => pods
            .iter()
            .filter_map(|pod| pod_metrics(&pod.value))
            .collect(),
        "nodes" => {
            let per_node = usage_per_node(pods.iter().map(|pod| &pod.value));
            store
                .snapshot(&GroupResource::new("", "nodes"), "")
                .objects
                .iter()
                .map(|node| node_metrics(&node.value, &per_node))
                .collect()
        }
        _ => Vec::new(),
    };
    values
        .into_iter()
        .map(|value| Arc::new(StoredObject::new(value, revision)))
        .collect()
}

/// A PodMetrics of a running Pod (with its labels, as metrics-server copies them), with
/// its running containers' usage; `None` for a Pod that does not run.
fn pod_metrics(pod: &Value) -> Option<Value> {
    if pod.pointer("/status/phase").and_then(Value::as_str) != Some("Running") {
        return None;
    }
    let containers: Vec<Value> = running_containers(pod)
        .map(|container| {
            let (cpu, memory) = container_usage(container);
            json!({
                "name": container.get("name").and_then(Value::as_str).unwrap_or(""),
                "usage": usage(cpu, memory),
            })
        })
        .collect();
    let mut metadata = identity(pod);
    metadata.insert(
        "namespace".to_owned(),
        pod.pointer("/metadata/namespace")
            .cloned()
            .unwrap_or(Value::Null),
    );
    Some(json!({
        "kind": "PodMetrics",
        "apiVersion": "metrics.k8s.io/v1beta1",
        "metadata": metadata,
        "timestamp": now(),
        "window": WINDOW,
        "containers": containers,
    }))
}

/// What the running Pods use on each node (cores, bytes), in one pass over them.
fn usage_per_node<'p>(pods: impl Iterator<Item = &'p Value>) -> HashMap<&'p str, (f64, f64)> {
    let mut per_node: HashMap<&str, (f64, f64)> = HashMap::new();
    for pod in
        pods.filter(|pod| pod.pointer("/status/phase").and_then(Value::as_str) == Some("Running"))
    {
        let Some(node) = pod.pointer("/spec/nodeName").and_then(Value::as_str) else {
            continue;
        };
        let total = per_node.entry(node).or_default();
        for (cpu, memory) in running_containers(pod).map(container_usage) {
            total.0 += cpu;
            total.1 += memory;
        }
    }
    per_node
}

/// A Node's NodeMetrics: its own processes plus its running Pods (`per_node`).
fn node_metrics(node: &Value, per_node: &HashMap<&str, (f64, f64)>) -> Value {
    let name = node
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let (pods_cpu, pods_memory) = per_node.get(name).copied().unwrap_or_default();
    let (cpu, memory) = (NODE_SYSTEM_CPU + pods_cpu, NODE_SYSTEM_MEMORY + pods_memory);
    json!({
        "kind": "NodeMetrics",
        "apiVersion": "metrics.k8s.io/v1beta1",
        "metadata": identity(node),
        "timestamp": now(),
        "window": WINDOW,
        "usage": usage(cpu, memory),
    })
}

/// The name, labels and a creation time of now, as metrics-server's objects have them.
fn identity(object: &Value) -> Map<String, Value> {
    let mut metadata = Map::new();
    for field in ["name", "labels"] {
        if let Some(value) = object.pointer(&format!("/metadata/{field}")) {
            metadata.insert(field.to_owned(), value.clone());
        }
    }
    metadata.insert("creationTimestamp".to_owned(), json!(now()));
    metadata
}

/// The containers of `pod` whose status says they run.
fn running_containers(pod: &Value) -> impl Iterator<Item = &Value> {
    let running: Vec<&str> = pod
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|status| status.pointer("/state/running").is_some())
        .filter_map(|status| status.get("name").and_then(Value::as_str))
        .collect();
    pod.pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(move |container| {
            container
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(|name| running.contains(&name))
        })
}

/// A container's simulated usage (cores, bytes): its request, else its limit, else idle.
fn container_usage(container: &Value) -> (f64, f64) {
    let amount = |resource: &str, idle: f64| {
        ["requests", "limits"]
            .into_iter()
            .find_map(|kind| {
                container
                    .pointer(&format!("/resources/{kind}/{resource}"))
                    .and_then(quantity::from_json)
            })
            .filter(|amount| amount.is_finite() && *amount >= 0.0)
            .unwrap_or(idle)
    };
    (amount("cpu", IDLE_CPU), amount("memory", IDLE_MEMORY))
}

/// A usage ResourceList as metrics-server writes it.
fn usage(cpu: f64, memory: f64) -> Value {
    json!({
        "cpu": format!("{}n", (cpu * 1e9).round() as u64),
        "memory": format!("{}Ki", (memory / 1024.0).round() as u64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running_pod(resources: Value) -> Value {
        json!({
            "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
            "spec": {"nodeName": "node-1", "containers": [
                {"name": "main", "resources": resources},
                {"name": "waiting"},
            ]},
            "status": {"phase": "Running", "containerStatuses": [
                {"name": "main", "state": {"running": {}}},
                {"name": "waiting", "state": {"waiting": {"reason": "CrashLoopBackOff"}}},
            ]},
        })
    }

    #[test]
    fn running_containers_use_their_requests_in_metrics_servers_units() {
        let pod = running_pod(json!({"requests": {"cpu": "250m", "memory": "64Mi"}}));
        let metrics = pod_metrics(&pod).expect("a running Pod has metrics");
        assert_eq!(metrics["metadata"]["labels"]["app"], "web");
        assert_eq!(metrics["metadata"]["namespace"], "default");
        assert_eq!(
            metrics["containers"],
            json!([{"name": "main", "usage": {"cpu": "250000000n", "memory": "65536Ki"}}])
        );
        let limited = running_pod(json!({"limits": {"cpu": "1", "memory": "1Gi"}}));
        let metrics = pod_metrics(&limited).expect("metrics");
        assert_eq!(metrics["containers"][0]["usage"]["cpu"], "1000000000n");
        assert_eq!(metrics["containers"][0]["usage"]["memory"], "1048576Ki");
        let mut pending = pod.clone();
        pending["status"]["phase"] = json!("Pending");
        assert_eq!(pod_metrics(&pending), None);
    }

    #[test]
    fn a_node_uses_its_own_share_plus_its_running_pods() {
        let node = json!({"metadata": {"name": "node-1", "labels": {"zone": "a"}}});
        let pod = running_pod(json!({"requests": {"cpu": "250m", "memory": "64Mi"}}));
        let mut elsewhere = pod.clone();
        elsewhere["spec"]["nodeName"] = json!("node-2");
        let metrics = node_metrics(&node, &usage_per_node([&pod, &elsewhere].into_iter()));
        assert_eq!(metrics["metadata"]["labels"]["zone"], "a");
        assert_eq!(
            metrics["usage"],
            json!({"cpu": "300000000n", "memory": "196608Ki"})
        );
    }
}
