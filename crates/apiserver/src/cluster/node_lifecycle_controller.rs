//! kube-controller-manager's node lifecycle controller (`pkg/controller/nodelifecycle`)
//! with its taint eviction (`pkg/controller/tainteviction`):
//!
//! - a node whose Lease was not renewed for `--node-monitor-grace-period` gets its
//!   conditions set to `Unknown` ("Kubelet stopped posting node status.") and the
//!   `node.kubernetes.io/unreachable` taints, `NoSchedule` and `NoExecute`, and its Pods
//!   are marked not `Ready` (`MarkPodsNotReady`); a node that is `Ready` again loses the
//!   taints (its kubelet reports its Pods again);
//! - Pods on a node with a `NoExecute` taint they do not tolerate are deleted; those
//!   tolerating it for `tolerationSeconds` (the 300 s every Pod gets by default) are
//!   deleted once that time passed since the taint was added (scaled by the time scale).

use std::time::Duration;

use kubeclient_machinery::GroupResource;
use serde_json::{Value, json};

use super::cluster_options::ClusterOptions;
use super::node::{NodeInfo, NodeSet};
use super::scheduler::tolerates;
use super::writer::{NODES, PODS, Writer};
use crate::object::{now, store_key};
use crate::registry::kinds::pod_binding::NODE_LEASE_NAMESPACE;
use crate::registry::store::GenericStore;

/// The taint of a node whose kubelet stopped posting status.
pub(super) const UNREACHABLE_TAINT: &str = "node.kubernetes.io/unreachable";

/// The message of the conditions a silent node gets.
const UNKNOWN_MESSAGE: &str = "Kubelet stopped posting node status.";

fn controller_writer<'a>(store: &'a GenericStore<'a>) -> Writer<'a> {
    Writer::new(
        store,
        "system:kube-controller-manager".to_owned(),
        &[],
        "kube-controller-manager",
    )
}

/// One pass over every node; how long until a node's grace period or a Pod's toleration
/// ends.
pub(super) fn sync(
    store: &GenericStore<'_>,
    nodes: &NodeSet,
    options: &ClusterOptions,
) -> Duration {
    let writer = controller_writer(store);
    let mut next = options.node_monitor_grace_period;
    let now_ts = jiff::Timestamp::now();
    for node in &nodes.nodes {
        let silent_for = last_heartbeat(store, node).map(|at| duration_since(at, now_ts));
        let grace = options.node_monitor_grace_period;
        match silent_for {
            Some(silent) if silent < grace => {
                next = next.min(grace.saturating_sub(silent));
                if ready(node) == Some("True") {
                    remove_unreachable_taints(&writer, node);
                }
            }
            // No heartbeat at all, or too long ago.
            _ => {
                mark_unknown(&writer, node);
                mark_pods_not_ready(&writer, store, node);
            }
        }
        next = next.min(evict(&writer, store, node, options, now_ts));
    }
    next
}

fn duration_since(at: jiff::Timestamp, now: jiff::Timestamp) -> Duration {
    let micros = now.as_microsecond().saturating_sub(at.as_microsecond());
    Duration::from_micros(u64::try_from(micros).unwrap_or(0))
}

/// The node Lease's `renewTime` (or, without a Lease, the Ready condition's
/// `lastHeartbeatTime`).
fn last_heartbeat(store: &GenericStore<'_>, node: &NodeInfo) -> Option<jiff::Timestamp> {
    let leases = GroupResource::new("coordination.k8s.io", "leases");
    let lease = store
        .storage
        .get(&leases, &store_key(Some(NODE_LEASE_NAMESPACE), &node.name));
    let text = match &lease {
        Some(lease) => lease
            .value
            .pointer("/spec/renewTime")
            .and_then(Value::as_str)
            .map(str::to_owned),
        None => condition(node, "Ready")
            .and_then(|c| c["lastHeartbeatTime"].as_str())
            .map(str::to_owned),
    }?;
    text.parse().ok()
}

fn condition<'a>(node: &'a NodeInfo, kind: &str) -> Option<&'a Value> {
    node.object
        .pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c["type"] == kind)
}

fn ready(node: &NodeInfo) -> Option<&str> {
    condition(node, "Ready").and_then(|c| c["status"].as_str())
}

/// Sets every condition `Unknown` and adds the unreachable taints.
fn mark_unknown(writer: &Writer<'_>, node: &NodeInfo) {
    let time = now();
    writer.update(NODES, None, &node.name, &node.uid, true, |object| {
        let Some(Value::Array(conditions)) = object
            .get_mut("status")
            .and_then(|status| status.get_mut("conditions"))
        else {
            return false;
        };
        let mut changed = false;
        for condition in conditions.iter_mut() {
            if condition["status"] == "Unknown" {
                continue;
            }
            condition["status"] = json!("Unknown");
            condition["reason"] = json!("NodeStatusUnknown");
            condition["message"] = json!(UNKNOWN_MESSAGE);
            condition["lastTransitionTime"] = json!(time);
            changed = true;
        }
        changed
    });
    writer.update(NODES, None, &node.name, &node.uid, false, |object| {
        let spec = object.entry("spec").or_insert_with(|| json!({}));
        let Value::Object(spec) = spec else {
            return false;
        };
        let taints = spec
            .entry("taints")
            .or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(taints) = taints else {
            return false;
        };
        let mut changed = false;
        for effect in ["NoSchedule", "NoExecute"] {
            if !taints
                .iter()
                .any(|t| t["key"] == UNREACHABLE_TAINT && t["effect"] == effect)
            {
                let mut taint = json!({"key": UNREACHABLE_TAINT, "effect": effect});
                if effect == "NoExecute" {
                    taint["timeAdded"] = json!(time);
                }
                taints.push(taint);
                changed = true;
            }
        }
        changed
    });
}

/// Sets the `Ready` condition of the node's Pods to `False`.
fn mark_pods_not_ready(writer: &Writer<'_>, store: &GenericStore<'_>, node: &NodeInfo) {
    let pods = store.storage.snapshot(&GroupResource::new("", "pods"), "");
    let time = now();
    for pod in &pods.objects {
        let pod = &pod.value;
        if pod.pointer("/spec/nodeName").and_then(Value::as_str) != Some(&node.name) {
            continue;
        }
        let meta = |field: &str| {
            pod.pointer(&format!("/metadata/{field}"))
                .and_then(Value::as_str)
                .unwrap_or("")
        };
        writer.update(
            PODS,
            Some(meta("namespace")),
            meta("name"),
            meta("uid"),
            true,
            |object| {
                let conditions = object
                    .get_mut("status")
                    .and_then(|status| status.get_mut("conditions"))
                    .and_then(Value::as_array_mut);
                let Some(ready) =
                    conditions.and_then(|c| c.iter_mut().find(|c| c["type"] == "Ready"))
                else {
                    return false;
                };
                if ready["status"] == "False" {
                    return false;
                }
                ready["status"] = json!("False");
                ready["lastTransitionTime"] = json!(time);
                true
            },
        );
    }
}

fn remove_unreachable_taints(writer: &Writer<'_>, node: &NodeInfo) {
    if !node.taints.iter().any(|t| t["key"] == UNREACHABLE_TAINT) {
        return;
    }
    writer.update(NODES, None, &node.name, &node.uid, false, |object| {
        let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
            return false;
        };
        if let Some(Value::Array(taints)) = spec.get_mut("taints") {
            taints.retain(|t| t["key"] != UNREACHABLE_TAINT);
            if taints.is_empty() {
                spec.remove("taints");
            }
        }
        true
    });
}

/// Deletes the node's Pods its `NoExecute` taints evict now; how long until the next
/// toleration ends.
fn evict(
    writer: &Writer<'_>,
    store: &GenericStore<'_>,
    node: &NodeInfo,
    options: &ClusterOptions,
    now: jiff::Timestamp,
) -> Duration {
    let mut next = Duration::from_secs(3600);
    let no_execute: Vec<&Value> = node
        .taints
        .iter()
        .filter(|t| t["effect"] == "NoExecute")
        .collect();
    if no_execute.is_empty() {
        return next;
    }
    let pods = store.storage.snapshot(&GroupResource::new("", "pods"), "");
    for pod in &pods.objects {
        let pod = &pod.value;
        if pod.pointer("/spec/nodeName").and_then(Value::as_str) != Some(&node.name)
            || pod.pointer("/metadata/deletionTimestamp").is_some()
        {
            continue;
        }
        // The shortest time any taint is tolerated for; `None`: forever.
        let mut allowed: Option<Duration> = None;
        let mut evict_now = false;
        for taint in &no_execute {
            match toleration_seconds(pod, taint) {
                Tolerated::No => evict_now = true,
                Tolerated::Forever => {}
                Tolerated::For(seconds) => {
                    let added = taint["timeAdded"]
                        .as_str()
                        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                        .unwrap_or(now);
                    let limit = options.scaled(Duration::from_secs(seconds));
                    let remaining = limit.saturating_sub(duration_since(added, now));
                    allowed = Some(allowed.map_or(remaining, |a| a.min(remaining)));
                }
            }
        }
        if evict_now || allowed == Some(Duration::ZERO) {
            let meta = |field: &str| {
                pod.pointer(&format!("/metadata/{field}"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
            };
            writer.delete(
                PODS,
                Some(meta("namespace")),
                meta("name"),
                meta("uid"),
                None,
            );
        } else if let Some(remaining) = allowed {
            next = next.min(remaining);
        }
    }
    next
}

enum Tolerated {
    No,
    Forever,
    For(u64),
}

/// How long `pod` tolerates `taint`.
fn toleration_seconds(pod: &Value, taint: &Value) -> Tolerated {
    let tolerations = pod
        .pointer("/spec/tolerations")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut best: Option<Tolerated> = None;
    for toleration in tolerations.iter().filter(|t| tolerates(t, taint)) {
        match toleration["tolerationSeconds"].as_i64() {
            None => return Tolerated::Forever,
            Some(seconds) => {
                let seconds = u64::try_from(seconds).unwrap_or(0);
                best = Some(match best {
                    Some(Tolerated::For(s)) => Tolerated::For(s.max(seconds)),
                    _ => Tolerated::For(seconds),
                });
            }
        }
    }
    best.unwrap_or(Tolerated::No)
}
