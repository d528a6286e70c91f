//! The scheduler's filter plugins that decide where a Pod may go, in kube-scheduler's
//! order (`NodeUnschedulable`, `TaintToleration`, `NodeAffinity`, `NodeResourcesFit`;
//! `InterPodAffinity` is [its own file](super::inter_pod_affinity)), each answering with
//! the reasons the real plugin gives.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::PodInfo;
use crate::cluster::node::NodeInfo;
use crate::quantity;

/// Why a node does not fit, and whether preemption could help (`Unschedulable`) or not
/// (`UnschedulableAndUnresolvable`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Rejection {
    pub(super) reasons: Vec<String>,
    pub(super) resolvable: bool,
}

impl Rejection {
    fn unresolvable(reason: impl Into<String>) -> Rejection {
        Rejection {
            reasons: vec![reason.into()],
            resolvable: false,
        }
    }
}

/// The taint a cordoned node is treated as having.
const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";

/// `NodeUnschedulable`: a cordoned node takes only Pods tolerating its taint.
pub(super) fn node_unschedulable(pod: &PodInfo, node: &NodeInfo) -> Option<Rejection> {
    if !node.unschedulable {
        return None;
    }
    let taint = json!({"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"});
    (!pod_tolerates(pod, &taint)).then(|| Rejection::unresolvable("node(s) were unschedulable"))
}

/// `TaintToleration`: every `NoSchedule` and `NoExecute` taint must be tolerated.
pub(super) fn taint_toleration(pod: &PodInfo, node: &NodeInfo) -> Option<Rejection> {
    node.taints
        .iter()
        .filter(|t| matches!(t["effect"].as_str(), Some("NoSchedule" | "NoExecute")))
        .any(|taint| !pod_tolerates(pod, taint))
        .then(|| Rejection::unresolvable("node(s) had untolerated taint(s)"))
}

fn pod_tolerates(pod: &PodInfo, taint: &Value) -> bool {
    pod.object
        .pointer("/spec/tolerations")
        .and_then(Value::as_array)
        .is_some_and(|tolerations| tolerations.iter().any(|t| tolerates(t, taint)))
}

/// Whether `toleration` tolerates `taint` (`v1.Toleration.ToleratesTaint`): same effect
/// (or none given), same key (or none with `Exists`), and `Equal` values.
pub(crate) fn tolerates(toleration: &Value, taint: &Value) -> bool {
    let text = |value: &Value, field: &str| value[field].as_str().unwrap_or("").to_owned();
    let effect = text(toleration, "effect");
    if !effect.is_empty() && effect != text(taint, "effect") {
        return false;
    }
    let key = text(toleration, "key");
    if !key.is_empty() && key != text(taint, "key") {
        return false;
    }
    match toleration["operator"].as_str().unwrap_or("Equal") {
        "Exists" => true,
        "Equal" | "" => text(toleration, "value") == text(taint, "value"),
        _ => false,
    }
}

/// `NodeAffinity`: `spec.nodeSelector` and the required node affinity.
pub(super) fn node_affinity(pod: &PodInfo, node: &NodeInfo) -> Option<Rejection> {
    let selector_matches = pod.node_selector.as_ref().is_none_or(|selector| {
        selector
            .iter()
            .all(|(key, value)| node.labels.get(key).map(String::as_str) == value.as_str())
    });
    let affinity_matches = match &pod.required_node_terms {
        None => true,
        Some(terms) => terms.iter().any(|term| node_selector_term(term, node)),
    };
    (!(selector_matches && affinity_matches))
        .then(|| Rejection::unresolvable("node(s) didn't match Pod's node affinity/selector"))
}

/// One `NodeSelectorTerm`: its expressions over labels and fields all hold (an empty
/// term matches nothing).
fn node_selector_term(term: &Value, node: &NodeInfo) -> bool {
    let expressions = term["matchExpressions"].as_array();
    let fields = term["matchFields"].as_array();
    if expressions.is_none_or(Vec::is_empty) && fields.is_none_or(Vec::is_empty) {
        return false;
    }
    let labels_hold = expressions
        .into_iter()
        .flatten()
        .all(|e| requirement_holds(e, node.labels.get(e["key"].as_str().unwrap_or(""))));
    let name = node.name.clone();
    let fields_hold = fields.into_iter().flatten().all(|e| {
        let value = (e["key"] == "metadata.name").then_some(&name);
        requirement_holds(e, value)
    });
    labels_hold && fields_hold
}

/// A `NodeSelectorRequirement` over the value its key has (if any).
fn requirement_holds(requirement: &Value, value: Option<&String>) -> bool {
    let values: Vec<&str> = requirement["values"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let number = |text: &str| text.parse::<i64>().ok();
    match requirement["operator"].as_str().unwrap_or("") {
        "In" => value.is_some_and(|v| values.contains(&v.as_str())),
        "NotIn" => value.is_none_or(|v| !values.contains(&v.as_str())),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let (Some(have), Some(bound)) = (
                value.and_then(|v| number(v)),
                values.first().and_then(|v| number(v)),
            ) else {
                return false;
            };
            if requirement["operator"] == "Gt" {
                have > bound
            } else {
                have < bound
            }
        }
        _ => false,
    }
}

/// `NodeResourcesFit`: the Pod's requests fit in what the node's Pods left of its
/// allocatable (`used`), and one more Pod fits its `pods` count.
pub(super) fn node_resources_fit(
    pod: &PodInfo,
    node: &NodeInfo,
    used: &BTreeMap<String, f64>,
) -> Option<Rejection> {
    let mut reasons = Vec::new();
    let allowed_pods = node.allocatable.get("pods").copied().unwrap_or(110.0);
    if used.get("pods").copied().unwrap_or(0.0) + 1.0 > allowed_pods {
        reasons.push("Too many pods".to_owned());
    }
    for (resource, request) in &pod.requests {
        if *request <= 0.0 {
            continue;
        }
        let allocatable = node.allocatable.get(resource).copied().unwrap_or(0.0);
        let in_use = used.get(resource).copied().unwrap_or(0.0);
        // A little slack for the decimal parts of quantities.
        if in_use + request > allocatable * (1.0 + 1e-12) {
            reasons.push(format!("Insufficient {resource}"));
        }
    }
    (!reasons.is_empty()).then_some(Rejection {
        reasons,
        resolvable: true,
    })
}

/// A Pod's effective requests (`resource.PodRequests`): for each resource the larger of
/// its containers' sum and its largest init container, plus the Pod overhead; a
/// container's limit stands for a request it does not set.
pub(super) fn pod_requests(spec: &Value) -> BTreeMap<String, f64> {
    let container_requests = |container: &Value| -> BTreeMap<String, f64> {
        let mut amounts = BTreeMap::new();
        for kind in ["limits", "requests"] {
            if let Some(map) = container
                .pointer(&format!("/resources/{kind}"))
                .and_then(Value::as_object)
            {
                for (resource, amount) in map {
                    if let Some(amount) = quantity::from_json(amount) {
                        amounts.insert(resource.clone(), amount);
                    }
                }
            }
        }
        amounts
    };
    let mut total: BTreeMap<String, f64> = BTreeMap::new();
    for container in spec["containers"].as_array().into_iter().flatten() {
        for (resource, amount) in container_requests(container) {
            *total.entry(resource).or_default() += amount;
        }
    }
    for container in spec["initContainers"].as_array().into_iter().flatten() {
        for (resource, amount) in container_requests(container) {
            let entry = total.entry(resource).or_default();
            *entry = entry.max(amount);
        }
    }
    if let Some(overhead) = spec["overhead"].as_object() {
        for (resource, amount) in overhead {
            if let Some(amount) = quantity::from_json(amount) {
                *total.entry(resource.clone()).or_default() += amount;
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerations_match_taints_as_upstream() {
        let taint = json!({"key": "k", "value": "v", "effect": "NoSchedule"});
        assert!(tolerates(
            &json!({"key": "k", "operator": "Exists"}),
            &taint
        ));
        assert!(tolerates(&json!({"key": "k", "value": "v"}), &taint));
        assert!(!tolerates(&json!({"key": "k", "value": "w"}), &taint));
        assert!(tolerates(&json!({"operator": "Exists"}), &taint));
        assert!(!tolerates(
            &json!({"operator": "Exists", "effect": "NoExecute"}),
            &taint
        ));
    }

    #[test]
    fn requests_take_the_larger_of_containers_and_init_containers() {
        let spec = json!({
            "containers": [
                {"resources": {"requests": {"cpu": "100m"}}},
                {"resources": {"limits": {"cpu": "200m", "memory": "1Gi"}}},
            ],
            "initContainers": [{"resources": {"requests": {"cpu": "500m"}}}],
        });
        let requests = pod_requests(&spec);
        assert!((requests["cpu"] - 0.5).abs() < 1e-9);
        assert!((requests["memory"] - 1_073_741_824.0).abs() < 1.0);
    }
}
