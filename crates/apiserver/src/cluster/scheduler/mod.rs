//! The scheduler (kube-scheduler with its default profile, the parts a simulated cluster
//! needs): each pending Pod that names `default-scheduler` and has no scheduling gates is
//! filtered against every node (cordon, taints and tolerations, node selector and
//! required node affinity, requests against allocatable, required Pod affinity and
//! anti-affinity), scored by the least allocated resources (then the fewest Pods, then
//! the name), and bound through the binding subresource's semantics, with a `Scheduled`
//! Event. A Pod no node fits gets `PodScheduled=False` (reason `Unschedulable`) and a
//! `FailedScheduling` Event with kube-scheduler's message, and is tried again whenever a
//! Pod or Node changes. Pods of other schedulers are left alone. There is no preemption.
//!
//! While it runs, the scheduler holds the `kube-system/kube-scheduler` Lease, as the real
//! one's leader election does; the Pod strategy binds Pods at create only when no
//! scheduler holds it.

mod filters;
mod fit_error;
mod inter_pod_affinity;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use kubeclient_machinery::GroupResource;
use serde_json::{Value, json};

pub(crate) use filters::tolerates;
use filters::{node_affinity, node_resources_fit, node_unschedulable, taint_toleration};
use inter_pod_affinity::{
    NamespaceLabels, Placed, PodTerms, has_required_terms, inter_pod_affinity,
};

use super::node::{NodeInfo, NodeSet, micro_now};
use super::writer::{EventFor, LEASES, PODS, Writer};
use crate::object::{now, store_key};
use crate::registry::kinds::pod_binding::{
    SCHEDULER_LEASE_NAME, SCHEDULER_LEASE_NAMESPACE, set_condition,
};
use crate::registry::store::{GenericStore, bind};

/// The scheduler's name, as Pods name it in `spec.schedulerName`.
const SCHEDULER_NAME: &str = "default-scheduler";

/// How long the scheduler's Lease lasts unrenewed (kube-scheduler's
/// `--leader-elect-lease-duration`), and how often it is renewed here.
const LEASE_DURATION: Duration = Duration::from_secs(15);
const LEASE_RENEW: Duration = Duration::from_secs(10);

/// kube-scheduler's `minFeasibleNodesToFind` and `minFeasibleNodesPercentageToFind`:
/// below 100 nodes every node is tried; above, the adaptive share of them.
const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: usize = 5;

/// How long one pass schedules before it lets the kubelets run the Pods it bound (the
/// rest wait for the next pass, which follows at once).
const PASS_BUDGET: Duration = Duration::from_secs(2);

/// What scoring assumes a container requests when it requests nothing (kube-scheduler's
/// non-zero defaults), so that BestEffort Pods spread too.
const DEFAULT_CPU_REQUEST: f64 = 0.1;
const DEFAULT_MEMORY_REQUEST: f64 = 200.0 * 1024.0 * 1024.0;

fn scheduler_writer<'a>(store: &'a GenericStore<'a>) -> Writer<'a> {
    Writer::new(
        store,
        "system:kube-scheduler".to_owned(),
        &[],
        "kube-scheduler",
    )
}

/// Creates (or renews) the scheduler's Lease.
pub(super) fn hold_lease(store: &GenericStore<'_>) {
    let writer = scheduler_writer(store);
    let renewed = writer.update(
        LEASES,
        Some(SCHEDULER_LEASE_NAMESPACE),
        SCHEDULER_LEASE_NAME,
        "",
        false,
        |lease| {
            let spec = lease.entry("spec").or_insert_with(|| json!({}));
            let Value::Object(spec) = spec else {
                return false;
            };
            let due = spec
                .get("renewTime")
                .and_then(Value::as_str)
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                .is_none_or(|at| {
                    let age = jiff::Timestamp::now().as_second() - at.as_second();
                    age >= i64::try_from(LEASE_RENEW.as_secs()).unwrap_or(10)
                });
            if due {
                spec.insert("renewTime".to_owned(), json!(micro_now()));
            }
            due
        },
    );
    let exists = store
        .storage
        .get(
            &GroupResource::new("coordination.k8s.io", "leases"),
            &store_key(Some(SCHEDULER_LEASE_NAMESPACE), SCHEDULER_LEASE_NAME),
        )
        .is_some();
    if !renewed && !exists {
        let time = micro_now();
        let lease = json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": SCHEDULER_LEASE_NAME, "namespace": SCHEDULER_LEASE_NAMESPACE},
            "spec": {
                "holderIdentity": format!("kubeclient_{}", uuid::Uuid::new_v4()),
                "leaseDurationSeconds": LEASE_DURATION.as_secs(),
                "acquireTime": time, "renewTime": time, "leaseTransitions": 0,
            },
        });
        writer.create(LEASES, Some(SCHEDULER_LEASE_NAMESPACE), lease);
    }
}

/// Whether `pod` could run on `node` by its node selector, required node affinity and
/// tolerations (what the DaemonSet controller asks of a node before it places a Pod).
pub(super) fn fits_node(pod: &Value, node: &NodeInfo) -> bool {
    let pod = PodInfo::from_object(pod);
    node_affinity(&pod, node).is_none()
        && taint_toleration(&pod, node).is_none()
        && node_unschedulable(&pod, node).is_none()
}

/// A Pod as the scheduler sees it.
#[derive(Clone, Debug)]
pub(super) struct PodInfo {
    pub(super) namespace: String,
    pub(super) name: String,
    pub(super) uid: String,
    /// `spec.nodeName` (`""`: not bound).
    pub(super) node: String,
    pub(super) labels: BTreeMap<String, String>,
    pub(super) requests: BTreeMap<String, f64>,
    /// `spec.nodeSelector` (read once, not for every node).
    pub(super) node_selector: Option<serde_json::Map<String, Value>>,
    /// The `nodeSelectorTerms` of the required node affinity.
    pub(super) required_node_terms: Option<Vec<Value>>,
    pub(super) object: Value,
}

impl PodInfo {
    pub(super) fn from_object(object: &Value) -> PodInfo {
        let text = |pointer: &str| {
            object
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        PodInfo {
            namespace: text("/metadata/namespace"),
            name: text("/metadata/name"),
            uid: text("/metadata/uid"),
            node: text("/spec/nodeName"),
            labels: string_map(object.pointer("/metadata/labels")),
            requests: filters::pod_requests(&object["spec"]),
            node_selector: object
                .pointer("/spec/nodeSelector")
                .and_then(Value::as_object)
                .cloned(),
            required_node_terms: object
                .pointer(
                    "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms",
                )
                .and_then(Value::as_array)
                .cloned(),
            object: object.clone(),
        }
    }
}

/// Whether the Pod finished (`Succeeded` or `Failed`).
fn terminal(object: &Value) -> bool {
    matches!(
        object.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    )
}

/// The node a Pod is bound to (`""`: none).
fn node_of(object: &Value) -> &str {
    object
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Whether the Pod waits for this scheduler.
fn waits_for_scheduling(object: &Value) -> bool {
    node_of(object).is_empty()
        && !terminal(object)
        && object.pointer("/metadata/deletionTimestamp").is_none()
        && object
            .pointer("/spec/schedulerName")
            .and_then(Value::as_str)
            == Some(SCHEDULER_NAME)
        && object
            .pointer("/spec/schedulingGates")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty)
}

fn string_map(value: Option<&Value>) -> BTreeMap<String, String> {
    value
        .and_then(Value::as_object)
        .map(|map| {
            map.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// How many feasible nodes the scheduler looks for before it stops filtering
/// (`numFeasibleNodesToFind` with the default adaptive `percentageOfNodesToScore`:
/// 50% less one point per 125 nodes, at least 5% and at least 100 nodes).
fn feasible_nodes_to_find(all: usize) -> usize {
    if all < MIN_FEASIBLE_NODES_TO_FIND {
        return all;
    }
    let percentage = 50usize
        .saturating_sub(all / 125)
        .max(MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND);
    (all * percentage / 100).max(MIN_FEASIBLE_NODES_TO_FIND)
}

/// Where the scheduler is between passes: the node its next search starts at
/// (`nextStartNodeIndex`, so every node gets its turn), and whether Pods were left
/// untried when the last pass ran out of its budget.
#[derive(Debug, Default)]
pub(super) struct SchedulerState {
    next_start_node: usize,
    pub(super) more: bool,
}

/// One scheduling pass: the pending Pods, in priority then creation order, for at most
/// [`PASS_BUDGET`] (then `state.more` is set).
pub(super) fn sync(store: &GenericStore<'_>, nodes: &NodeSet, state: &mut SchedulerState) {
    state.more = false;
    let snapshot = store.storage.snapshot(&GroupResource::new("", "pods"), "");
    let mut pending: Vec<&Value> = snapshot
        .objects
        .iter()
        .map(|stored| &stored.value)
        .filter(|object| waits_for_scheduling(object))
        .collect();
    if pending.is_empty() {
        return;
    }
    pending.sort_by_cached_key(|object| {
        let object = *object;
        let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str);
        let priority = object.pointer("/spec/priority").and_then(Value::as_i64);
        (
            std::cmp::Reverse(priority.unwrap_or(0)),
            text("/metadata/creationTimestamp").unwrap_or(""),
            text("/metadata/name").unwrap_or(""),
        )
    });
    let bound = || {
        snapshot
            .objects
            .iter()
            .map(|stored| &stored.value)
            .filter(|object| !node_of(object).is_empty() && !terminal(object))
    };
    let index: HashMap<&str, usize> = nodes
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), i))
        .collect();
    // What the Pods on each node (by its place in `nodes`) request.
    let mut used: Vec<BTreeMap<String, f64>> = vec![BTreeMap::new(); nodes.nodes.len()];
    for object in bound() {
        if let Some(usage) = index.get(node_of(object)).and_then(|i| used.get_mut(*i)) {
            add_usage(usage, &filters::pod_requests(&object["spec"]));
        }
    }
    // Pod (anti-)affinity is weighed only when a Pod has required terms: without any,
    // the filter passes every node.
    let affinity =
        pending.iter().any(|object| has_required_terms(object)) || bound().any(has_required_terms);
    let namespace_labels = if affinity {
        namespace_labels(store)
    } else {
        NamespaceLabels::default()
    };
    let mut placed = Placed::default();
    if affinity {
        for object in bound() {
            placed.push(PodInfo::from_object(object), &namespace_labels);
        }
    }
    let by_name: HashMap<&str, &NodeInfo> =
        nodes.nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    let writer = scheduler_writer(store);
    let all = nodes.nodes.len();
    let to_find = feasible_nodes_to_find(all);
    let started = std::time::Instant::now();
    for (done, object) in pending.iter().enumerate() {
        if done > 0 && started.elapsed() >= PASS_BUDGET {
            state.more = true;
            return;
        }
        let pod = &PodInfo::from_object(object);
        let terms = if affinity {
            PodTerms::of(pod, &namespace_labels)
        } else {
            PodTerms::default()
        };
        let mut rejections = Vec::new();
        let mut feasible = 0;
        let mut processed = 0;
        let mut best: Option<(usize, f64, f64)> = None;
        for offset in 0..all {
            if feasible >= to_find {
                break;
            }
            processed += 1;
            let at = (state.next_start_node + offset) % all;
            let (Some(node), Some(node_used)) = (nodes.nodes.get(at), used.get(at)) else {
                continue;
            };
            let rejection = node_unschedulable(pod, node)
                .or_else(|| taint_toleration(pod, node))
                .or_else(|| node_affinity(pod, node))
                .or_else(|| node_resources_fit(pod, node, node_used))
                .or_else(|| {
                    if affinity {
                        inter_pod_affinity(pod, &terms, node, &placed, &by_name)
                    } else {
                        None
                    }
                });
            if let Some(rejection) = rejection {
                rejections.push(rejection);
                continue;
            }
            feasible += 1;
            let score = least_allocated(pod, node, node_used);
            let pod_count = node_used.get("pods").copied().unwrap_or(0.0);
            // The least allocated, then the fewest Pods, then the first name.
            let better = best.is_none_or(|(best_at, best_score, best_count)| {
                let (tied_score, tied_count) = (
                    (score - best_score).abs() <= 1e-9,
                    (pod_count - best_count).abs() <= 1e-9,
                );
                score > best_score + 1e-9
                    || (tied_score && pod_count < best_count - 1e-9)
                    || (tied_score
                        && tied_count
                        && nodes
                            .nodes
                            .get(best_at)
                            .is_some_and(|best| node.name < best.name))
            });
            if better {
                best = Some((at, score, pod_count));
            }
        }
        if all > 0 {
            state.next_start_node = (state.next_start_node + processed) % all;
        }
        match best.and_then(|(at, _, _)| nodes.nodes.get(at).zip(used.get_mut(at))) {
            Some((node, node_used)) => {
                if bind_pod(&writer, pod, &node.name) {
                    add_usage(node_used, &pod.requests);
                    if affinity {
                        let mut bound = pod.clone();
                        bound.node = node.name.clone();
                        placed.push(bound, &namespace_labels);
                    }
                }
            }
            None => mark_unschedulable(&writer, pod, &fit_error::message(&rejections)),
        }
    }
}

/// The labels of every namespace (for `namespaceSelector`s of affinity terms).
fn namespace_labels(store: &GenericStore<'_>) -> NamespaceLabels {
    NamespaceLabels(
        store
            .storage
            .snapshot(&GroupResource::new("", "namespaces"), "")
            .objects
            .iter()
            .map(|ns| {
                (
                    ns.name().to_owned(),
                    string_map(ns.value.pointer("/metadata/labels")),
                )
            })
            .collect(),
    )
}

fn add_usage(usage: &mut BTreeMap<String, f64>, requests: &BTreeMap<String, f64>) {
    for (resource, amount) in requests {
        match usage.get_mut(resource) {
            Some(total) => *total += amount,
            None => {
                usage.insert(resource.clone(), *amount);
            }
        }
    }
    match usage.get_mut("pods") {
        Some(pods) => *pods += 1.0,
        None => {
            usage.insert("pods".to_owned(), 1.0);
        }
    }
}

/// `NodeResourcesFit`'s `LeastAllocated` score, from 0 to 1: the mean free share of CPU
/// and memory once the Pod is placed.
fn least_allocated(pod: &PodInfo, node: &NodeInfo, used: &BTreeMap<String, f64>) -> f64 {
    let share = |resource: &str, default: f64| {
        let allocatable = node.allocatable.get(resource).copied().unwrap_or(0.0);
        if allocatable <= 0.0 {
            return 0.0;
        }
        let request = pod
            .requests
            .get(resource)
            .copied()
            .filter(|r| *r > 0.0)
            .unwrap_or(default);
        let in_use = used.get(resource).copied().unwrap_or(0.0);
        ((allocatable - in_use - request) / allocatable).max(0.0)
    };
    f64::midpoint(
        share("cpu", DEFAULT_CPU_REQUEST),
        share("memory", DEFAULT_MEMORY_REQUEST),
    )
}

fn bind_pod(writer: &Writer<'_>, pod: &PodInfo, node: &str) -> bool {
    match bind(
        writer.store,
        &writer.user,
        &pod.namespace,
        &pod.name,
        &pod.uid,
        node,
    ) {
        Ok(()) => {
            let message = format!(
                "Successfully assigned {}/{} to {node}",
                pod.namespace, pod.name
            );
            record_event(writer, pod, "Normal", "Scheduled", &message);
            true
        }
        Err(status) => {
            tracing::debug!(pod = %pod.name, status = %status.message, "binding refused");
            false
        }
    }
}

/// Sets `PodScheduled=False` with `message`, and records a `FailedScheduling` Event when
/// the message is new.
fn mark_unschedulable(writer: &Writer<'_>, pod: &PodInfo, message: &str) {
    let current = pod
        .object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|conditions| conditions.iter().find(|c| c["type"] == "PodScheduled"));
    if current.is_some_and(|c| c["status"] == "False" && c["message"] == message) {
        return;
    }
    let changed = writer.update(
        PODS,
        Some(&pod.namespace),
        &pod.name,
        &pod.uid,
        true,
        |object| {
            set_condition(
                object,
                json!({
                    "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                    "message": message, "lastProbeTime": null, "lastTransitionTime": now(),
                }),
            );
            true
        },
    );
    if changed {
        record_event(writer, pod, "Warning", "FailedScheduling", message);
    }
}

/// Records an Event about `pod` from `default-scheduler`.
fn record_event(writer: &Writer<'_>, pod: &PodInfo, kind: &str, reason: &str, message: &str) {
    let action = if kind == "Normal" {
        "Binding"
    } else {
        "Scheduling"
    };
    writer.record_event(
        &EventFor {
            involved: &pod.object,
            component: SCHEDULER_NAME,
            action,
        },
        kind,
        reason,
        message,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_allocated_prefers_the_emptier_node() {
        let node = NodeInfo {
            name: "n".to_owned(),
            uid: String::new(),
            labels: BTreeMap::new(),
            taints: Vec::new(),
            unschedulable: false,
            allocatable: BTreeMap::from([
                ("cpu".to_owned(), 4.0),
                ("memory".to_owned(), 16.0 * 1024.0 * 1024.0 * 1024.0),
            ]),
            internal_ip: String::new(),
            pod_cidr: String::new(),
            object: Value::Null,
        };
        let pod = PodInfo::from_object(&json!({"spec": {"containers": [{"name": "a"}]}}));
        let empty = least_allocated(&pod, &node, &BTreeMap::new());
        let busy = least_allocated(&pod, &node, &BTreeMap::from([("cpu".to_owned(), 2.0)]));
        assert!(empty > busy);
    }
}
