//! What the workload controllers share (kube-controller-manager's
//! `pkg/controller/controller_utils.go`): the controller owner reference, the Pods a
//! controller owns, active, ready and available Pods, and making a Pod from a template.

use serde_json::{Map, Value, json};

use super::writer::Writer;
use crate::object::label_selector;

/// A string under `metadata` (`""` when absent).
pub(super) fn meta<'a>(object: &'a Value, field: &str) -> &'a str {
    object
        .pointer(&format!("/metadata/{field}"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The uid of the object's controller (the owner reference with `controller: true`).
pub(super) fn controller_uid(object: &Value) -> Option<&str> {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r["controller"] == true)
        .and_then(|r| r["uid"].as_str())
}

/// The controller owner reference to `owner` (`blockOwnerDeletion`, as controllers set).
pub(super) fn controller_ref(owner: &Value) -> Value {
    json!({
        "apiVersion": owner["apiVersion"], "kind": owner["kind"],
        "name": meta(owner, "name"), "uid": meta(owner, "uid"),
        "controller": true, "blockOwnerDeletion": true,
    })
}

/// The objects of `candidates` in `owner`'s namespace that `owner` controls.
pub(super) fn owned_by<'a>(owner: &Value, candidates: &[&'a Value]) -> Vec<&'a Value> {
    let uid = meta(owner, "uid");
    let namespace = meta(owner, "namespace");
    candidates
        .iter()
        .copied()
        .filter(|c| meta(c, "namespace") == namespace && controller_uid(c) == Some(uid))
        .collect()
}

/// Whether `pod` counts as one of its controller's replicas: not finished, not being
/// deleted (`FilterActivePods`).
pub(super) fn is_active(pod: &Value) -> bool {
    !matches!(
        pod.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    ) && pod.pointer("/metadata/deletionTimestamp").is_none()
}

fn ready_condition(pod: &Value) -> Option<&Value> {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c["type"] == "Ready")
}

/// Whether `pod`'s `Ready` condition is `True`.
pub(super) fn is_ready(pod: &Value) -> bool {
    ready_condition(pod).is_some_and(|c| c["status"] == "True")
}

/// Whether `pod` has been ready for `min_ready_seconds` (`IsPodAvailable`).
pub(super) fn is_available(pod: &Value, min_ready_seconds: i64) -> bool {
    if !is_ready(pod) {
        return false;
    }
    if min_ready_seconds <= 0 {
        return true;
    }
    let since = ready_condition(pod)
        .and_then(|c| c["lastTransitionTime"].as_str())
        .and_then(|t| t.parse::<jiff::Timestamp>().ok());
    since.is_some_and(|at| jiff::Timestamp::now().as_second() - at.as_second() >= min_ready_seconds)
}

/// Whether `object`'s labels match the `spec.selector` of `owner` (an empty or invalid
/// selector matches nothing).
pub(super) fn selector_matches(owner: &Value, object: &Value) -> bool {
    let Ok(selector) = label_selector(owner.pointer("/spec/selector")) else {
        return false;
    };
    let labels = object.pointer("/metadata/labels");
    !selector.is_empty()
        && selector.matches_with(&|key| labels.and_then(|l| l.get(key)).and_then(Value::as_str))
}

/// Creates a Pod from `owner`'s `spec.template`, named `<generate_name><random>`,
/// controlled by `owner`. The Pod created.
pub(super) fn create_pod_from_template(
    writer: &Writer<'_>,
    owner: &Value,
    generate_name: &str,
) -> Option<Value> {
    let template = owner
        .pointer("/spec/template")
        .cloned()
        .unwrap_or(Value::Null);
    let mut metadata = Map::new();
    for field in ["labels", "annotations"] {
        if let Some(value) = template.pointer(&format!("/metadata/{field}")) {
            metadata.insert(field.to_owned(), value.clone());
        }
    }
    metadata.insert("generateName".to_owned(), json!(generate_name));
    metadata.insert("namespace".to_owned(), json!(meta(owner, "namespace")));
    metadata.insert("ownerReferences".to_owned(), json!([controller_ref(owner)]));
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    });
    writer.create_object(super::writer::PODS, Some(meta(owner, "namespace")), pod)
}

/// An `int` or a percentage (`"25%"`) of `total`, rounded up or down
/// (`intstr.GetScaledValueFromIntOrPercent`).
pub(super) fn scaled_value(value: Option<&Value>, total: i64, round_up: bool) -> i64 {
    match value {
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        Some(Value::String(text)) => {
            let Some(percent) = text.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()) else {
                return text.parse().unwrap_or(0);
            };
            let product = total.saturating_mul(percent);
            if round_up {
                (product + 99).div_euclid(100)
            } else {
                product.div_euclid(100)
            }
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_scale_with_rounding() {
        assert_eq!(scaled_value(Some(&json!("25%")), 3, true), 1);
        assert_eq!(scaled_value(Some(&json!("25%")), 3, false), 0);
        assert_eq!(scaled_value(Some(&json!("25%")), 10, true), 3);
        assert_eq!(scaled_value(Some(&json!(2)), 10, false), 2);
        assert_eq!(scaled_value(None, 10, false), 0);
    }
}
