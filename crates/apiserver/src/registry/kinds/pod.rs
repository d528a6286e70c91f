//! Pods (kube-apiserver's `pkg/registry/core/pod`): defaults and what every cluster's
//! admission plugins add (service account, priority, default tolerations), the binding
//! to the embedded node (kube-scheduler's part), the initial status with its QoS class,
//! the node the create allocates, and validation of the pod spec.

use kubeclient_machinery::StatusCause;
use serde_json::{Map, Value, json};

use super::pod_binding::{cluster_runs, kubelet_runs};
use crate::registry::defaults::{DEFAULT_SCHEDULER, child, child_or_insert, pod_spec, set};
use crate::registry::printers::{self, Column};
use crate::registry::strategy::{Strategy, StrategyContext, Subresource, duplicates};
use crate::registry::workloads;
use crate::storage::Store;

/// The grace period of a Pod that sets none (`terminationGracePeriodSeconds`' default).
const DEFAULT_GRACE_PERIOD_SECONDS: i64 = 30;

/// The Pod strategy.
pub(crate) struct PodStrategy;

/// What discovery lists under `pods/`: the kubelet's streams, binding, ephemeral
/// containers and eviction, with the kinds and verbs kube-apiserver lists for them.
const POD_SUBRESOURCES: &[Subresource] = &[
    Subresource {
        name: "attach",
        group: "",
        version: "",
        kind: "PodAttachOptions",
        verbs: &["create", "get"],
    },
    Subresource {
        name: "binding",
        group: "",
        version: "",
        kind: "Binding",
        verbs: &["create"],
    },
    Subresource {
        name: "ephemeralcontainers",
        group: "",
        version: "",
        kind: "Pod",
        verbs: &["get", "patch", "update"],
    },
    Subresource {
        name: "eviction",
        group: "policy",
        version: "v1",
        kind: "Eviction",
        verbs: &["create"],
    },
    Subresource {
        name: "exec",
        group: "",
        version: "",
        kind: "PodExecOptions",
        verbs: &["create", "get"],
    },
    Subresource {
        name: "log",
        group: "",
        version: "",
        kind: "Pod",
        verbs: &["get"],
    },
    Subresource {
        name: "portforward",
        group: "",
        version: "",
        kind: "PodPortForwardOptions",
        verbs: &["create", "get"],
    },
];

impl Strategy for PodStrategy {
    fn table_columns(&self) -> Option<&'static [Column]> {
        Some(printers::pod::POD)
    }

    fn subresources(&self) -> &'static [Subresource] {
        POD_SUBRESOURCES
    }

    fn prepare_for_create(&self, context: StrategyContext<'_>, object: &mut Map<String, Value>) {
        // In a simulated cluster its scheduler binds the Pod; without one, the create does.
        defaults(object, true, !cluster_runs(context.store));
    }

    fn prepare_for_update(
        &self,
        _: StrategyContext<'_>,
        object: &mut Map<String, Value>,
        _: &Value,
    ) {
        defaults(object, false, false);
    }

    fn validate(&self, object: &Value, _: Option<&Value>, causes: &mut Vec<StatusCause>) {
        workloads::pod_spec(object.get("spec"), "spec", causes);
    }

    fn duplicate_merge_keys(&self, object: &Value) -> Vec<StatusCause> {
        duplicates(self, object)
    }

    fn return_deleted_object(&self) -> bool {
        true
    }

    fn deletes_gracefully(&self) -> bool {
        // With no kubelet the grace period ends at once.
        true
    }

    fn deletion_grace_period(
        &self,
        store: &Store,
        object: &Value,
        requested: Option<i64>,
    ) -> Option<i64> {
        // kube-apiserver's CheckGracefulDelete: the request's grace period, else the
        // Pod's; an unscheduled or finished Pod goes at once; here also one no kubelet
        // runs (nobody would finish its deletion).
        let node = object.pointer("/spec/nodeName").and_then(Value::as_str)?;
        let phase = object.pointer("/status/phase").and_then(Value::as_str);
        if node.is_empty() || matches!(phase, Some("Succeeded" | "Failed")) {
            return None;
        }
        if !kubelet_runs(store, node) {
            return None;
        }
        let seconds = requested.unwrap_or_else(|| {
            object
                .pointer("/spec/terminationGracePeriodSeconds")
                .and_then(Value::as_i64)
                .unwrap_or(DEFAULT_GRACE_PERIOD_SECONDS)
        });
        (seconds > 0).then_some(seconds)
    }

    fn allocates(&self) -> bool {
        true
    }

    fn without_allocated(&self, requested: &Map<String, Value>, object: &Value) -> Value {
        let mut owned = object.clone();
        let requested_node = requested
            .get("spec")
            .and_then(|spec| spec.get("nodeName"))
            .and_then(Value::as_str)
            .is_some_and(|node| !node.is_empty());
        if let (false, Some(spec)) = (
            requested_node,
            owned.get_mut("spec").and_then(Value::as_object_mut),
        ) {
            spec.remove("nodeName");
        }
        owned
    }
}

/// A Pod's defaults; a new one also gets its initial status, and is bound when `bind`
/// (no cluster runs).
fn defaults(object: &mut Map<String, Value>, creating: bool, bind: bool) {
    if let Some(spec) = child(object, "spec") {
        pod_spec(spec);
        pod_admission(spec);
    }
    if creating {
        if let Some(spec) = child(object, "spec")
            && bind
        {
            schedule(spec);
        }
        let qos = object.get("spec").map_or("BestEffort", qos_class);
        let status = child_or_insert(object, "status");
        set(status, "phase", json!("Pending"));
        set(status, "qosClass", json!(qos));
    }
}

/// What the admission plugins of every cluster add to a Pod (not to templates).
fn pod_admission(spec: &mut Map<String, Value>) {
    set(spec, "serviceAccountName", json!("default"));
    let account = spec
        .get("serviceAccountName")
        .cloned()
        .unwrap_or(Value::Null);
    set(spec, "serviceAccount", account);
    set(spec, "priority", json!(0));
    set(spec, "enableServiceLinks", json!(true));
    set(spec, "preemptionPolicy", json!("PreemptLowerPriority"));
    let tolerations = spec
        .entry("tolerations")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(tolerations) = tolerations {
        for key in [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
        ] {
            let present = tolerations.iter().any(|t| {
                t.get("key").and_then(Value::as_str) == Some(key)
                    || (t.get("operator").and_then(Value::as_str) == Some("Exists")
                        && t.get("key").is_none())
            });
            if !present {
                tolerations.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}));
            }
        }
    }
}

/// The quality-of-service class of a pod spec: Guaranteed when every container has equal
/// CPU and memory requests and limits, BestEffort when none sets any, else Burstable.
fn qos_class(spec: &Value) -> &'static str {
    let containers: Vec<&Value> = ["initContainers", "containers"]
        .iter()
        .filter_map(|list| spec.get(*list).and_then(Value::as_array))
        .flatten()
        .collect();
    let quantity = |container: &Value, kind: &str, resource: &str| {
        container
            .pointer(&format!("/resources/{kind}/{resource}"))
            .filter(|v| !v.is_null())
            .cloned()
    };
    let mut any = false;
    let mut guaranteed = !containers.is_empty();
    for container in &containers {
        for resource in ["cpu", "memory"] {
            let request = quantity(container, "requests", resource);
            let limit = quantity(container, "limits", resource);
            any |= request.is_some() || limit.is_some();
            // A limit without a request makes the request equal to it.
            let effective_request = request.or_else(|| limit.clone());
            guaranteed &= limit.is_some() && effective_request == limit;
        }
    }
    match (any, guaranteed) {
        (false, _) => "BestEffort",
        (true, true) => "Guaranteed",
        (true, false) => "Burstable",
    }
}

/// The node the embedded server binds Pods to when no scheduler runs (it has no kubelet:
/// the streams of a bound Pod are served by the server itself).
pub(crate) const NODE_NAME: &str = "kubeclient-node";

/// Binds a Pod being created to [`NODE_NAME`], as kube-scheduler would, unless it names a
/// node already, waits for another scheduler or has scheduling gates: those stay
/// unscheduled (their exec, attach and port-forward answer 400, their log is empty).
fn schedule(spec: &mut Map<String, Value>) {
    let named = spec
        .get("nodeName")
        .and_then(Value::as_str)
        .is_some_and(|node| !node.is_empty());
    let default_scheduler =
        spec.get("schedulerName").and_then(Value::as_str) == Some(DEFAULT_SCHEDULER);
    let gated = spec
        .get("schedulingGates")
        .and_then(Value::as_array)
        .is_some_and(|gates| !gates.is_empty());
    if !named && default_scheduler && !gated {
        spec.insert("nodeName".to_owned(), json!(NODE_NAME));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qos_classes() {
        assert_eq!(
            qos_class(&json!({"containers": [{"name": "a"}]})),
            "BestEffort"
        );
        let guaranteed =
            json!({"containers": [{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]});
        assert_eq!(qos_class(&guaranteed), "Guaranteed");
        let burstable = json!({"containers": [{"resources": {"requests": {"cpu": "1"}}}]});
        assert_eq!(qos_class(&burstable), "Burstable");
    }
}
