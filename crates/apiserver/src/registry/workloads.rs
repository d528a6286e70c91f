//! The validation pieces workloads (`kinds/workloads.rs`, `kinds/job.rs`) and Pods
//! (`kinds/pod.rs`) share, with kube-apiserver's causes: selectors (required,
//! well-formed, not empty, printed as Go prints them), the selector matching the
//! template's labels, pod templates and specs (containers, their names and images) and
//! the restart policy a workload allows. Each kind's strategy calls them in
//! kube-apiserver's order.

use kubeclient_machinery::LabelSelector;

use kubeclient_machinery::StatusCause;
use serde_json::{Map, Value};

use crate::object::label_selector;

/// `spec.selector`, required and well-formed, with its causes; `Err` when it does not
/// convert to a selector.
pub(crate) fn required_selector(
    spec: &Value,
    kind: &str,
    causes: &mut Vec<StatusCause>,
) -> Result<LabelSelector, ()> {
    match spec.get("selector").filter(|s| !s.is_null()) {
        None => causes.push(required("spec.selector")),
        Some(selector) => {
            selector_requirements(selector, causes);
            if selector_is_empty(selector) {
                causes.push(empty_selector(spec, kind));
            }
        }
    }
    label_selector(spec.get("selector")).map_err(drop)
}

/// The converted selector, or the `invalid label selector` cause.
pub(crate) fn selector_or_invalid(
    spec: &Value,
    selector: Result<LabelSelector, ()>,
    causes: &mut Vec<StatusCause>,
) -> Option<LabelSelector> {
    match selector {
        Ok(selector) => Some(selector),
        Err(()) => {
            causes.push(invalid_selector(spec, "invalid label selector"));
            None
        }
    }
}

pub(crate) fn invalid_selector(spec: &Value, detail: &str) -> StatusCause {
    let selector = go_label_selector(spec.get("selector").unwrap_or(&Value::Null));
    let message = if detail.is_empty() {
        format!("Invalid value: {selector}")
    } else {
        format!("Invalid value: {selector}: {detail}")
    };
    StatusCause::new("FieldValueInvalid", &message, "spec.selector")
}

pub(crate) fn empty_selector(spec: &Value, kind: &str) -> StatusCause {
    let selector = go_label_selector(spec.get("selector").unwrap_or(&Value::Null));
    StatusCause::new(
        "FieldValueInvalid",
        &format!("Invalid value: {selector}: empty selector is invalid for {kind}"),
        "spec.selector",
    )
}

pub(crate) fn selector_is_empty(selector: &Value) -> bool {
    let count = |key: &str| {
        selector.get(key).map_or(0, |v| {
            v.as_object().map_or(0, Map::len) + v.as_array().map_or(0, Vec::len)
        })
    };
    count("matchLabels") + count("matchExpressions") == 0
}

/// The operators and values of `matchExpressions` (Go's `ValidateLabelSelectorRequirement`).
pub(crate) fn selector_requirements(selector: &Value, causes: &mut Vec<StatusCause>) {
    let expressions = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    for (index, expression) in expressions.iter().enumerate() {
        let path = format!("spec.selector.matchExpressions[{index}]");
        let values = expression
            .get("values")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        let operator = expression
            .get("operator")
            .and_then(Value::as_str)
            .unwrap_or("");
        match operator {
            "In" | "NotIn" if values == 0 => causes.push(StatusCause::new(
                "FieldValueRequired",
                "Required value: must be specified when `operator` is 'In' or 'NotIn'",
                &format!("{path}.values"),
            )),
            "Exists" | "DoesNotExist" if values > 0 => causes.push(StatusCause::new(
                "FieldValueForbidden",
                "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                &format!("{path}.values"),
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => causes.push(StatusCause::new(
                "FieldValueInvalid",
                &format!("Invalid value: {other:?}: not a valid selector operator"),
                &format!("{path}.operator"),
            )),
        }
    }
}

/// A ReplicaSet-like template (Deployments, ReplicaSets): labels selected, a valid pod
/// template, restart policy `Always`, no active deadline.
pub(crate) fn replicated_template(
    spec: &Value,
    selector: &LabelSelector,
    kind: &str,
    causes: &mut Vec<StatusCause>,
) {
    if !selector.is_empty() {
        template_labels_match(spec, selector, causes);
    }
    pod_template(spec.get("template"), "spec.template", causes);
    restart_policy_always(spec, kind, causes);
}

/// `selector` matches the template's labels.
pub(crate) fn template_labels_match(
    spec: &Value,
    selector: &LabelSelector,
    causes: &mut Vec<StatusCause>,
) {
    let labels = spec.pointer("/template/metadata/labels");
    let label = |key: &str| {
        labels
            .and_then(|labels| labels.get(key))
            .and_then(Value::as_str)
    };
    if !selector.matches_with(&label) {
        causes.push(StatusCause::new(
            "FieldValueInvalid",
            &format!(
                "Invalid value: {}: `selector` does not match template `labels`",
                go_string_map(labels)
            ),
            "spec.template.metadata.labels",
        ));
    }
}

/// A string map as Go's `%#v` prints `map[string]string` (`(nil)` when absent).
pub(crate) fn go_string_map(map: Option<&Value>) -> String {
    match map.and_then(Value::as_object) {
        None => "map[string]string(nil)".to_owned(),
        Some(map) => {
            let pairs: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{k:?}:{:?}", v.as_str().unwrap_or("")))
                .collect();
            format!("map[string]string{{{}}}", pairs.join(", "))
        }
    }
}

/// Workloads other than Jobs run their Pods with restart policy `Always` and no deadline
/// (kube-apiserver names ReplicaSets in a Deployment's message).
pub(crate) fn restart_policy_always(spec: &Value, kind: &str, causes: &mut Vec<StatusCause>) {
    let Some(pod) = spec.pointer("/template/spec") else {
        return;
    };
    let policy = pod
        .get("restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or("");
    if policy != "Always" {
        causes.push(StatusCause::new(
            "FieldValueNotSupported",
            &format!("Unsupported value: {policy:?}: supported values: \"Always\""),
            "spec.template.spec.restartPolicy",
        ));
    }
    if pod
        .get("activeDeadlineSeconds")
        .is_some_and(|v| !v.is_null())
    {
        let owner = if kind == "Deployment" {
            "ReplicaSet"
        } else {
            kind
        };
        causes.push(StatusCause::new(
            "FieldValueForbidden",
            &format!("Forbidden: activeDeadlineSeconds in {owner} is not Supported"),
            "spec.template.spec.activeDeadlineSeconds",
        ));
    }
}

/// A Job's (or a CronJob's job template's) pod template and restart policy.
pub(crate) fn job_template(job: &Value, path: &str, causes: &mut Vec<StatusCause>) {
    let template = format!("{path}.template");
    pod_template(job.get("template"), &template, causes);
    let policy = job
        .pointer("/template/spec/restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !matches!(policy, "OnFailure" | "Never") {
        causes.push(StatusCause::new(
            "FieldValueRequired",
            "Required value: valid values: \"OnFailure\", \"Never\"",
            &format!("{template}.spec.restartPolicy"),
        ));
    }
}

pub(crate) fn pod_template(template: Option<&Value>, path: &str, causes: &mut Vec<StatusCause>) {
    let spec = template.and_then(|t| t.get("spec"));
    pod_spec(spec, &format!("{path}.spec"), causes);
}

/// A pod spec's containers: at least one, each with a name and an image; names unique
/// across init and regular containers (kube-apiserver's `Duplicate value`).
pub(crate) fn pod_spec(spec: Option<&Value>, path: &str, causes: &mut Vec<StatusCause>) {
    let list = |field: &str| {
        spec.and_then(|s| s.get(field))
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice)
    };
    let containers = list("containers");
    if containers.is_empty() {
        causes.push(required(&format!("{path}.containers")));
    }
    let mut names = std::collections::HashSet::new();
    for field in ["initContainers", "containers"] {
        for (index, container) in list(field).iter().enumerate() {
            let name = container.get("name").and_then(Value::as_str).unwrap_or("");
            if !name.is_empty() && !names.insert(name) {
                causes.push(StatusCause::new(
                    "FieldValueDuplicate",
                    &format!("Duplicate value: {name:?}"),
                    &format!("{path}.{field}[{index}].name"),
                ));
            }
        }
    }
    for (index, container) in containers.iter().enumerate() {
        for field in ["name", "image"] {
            if container
                .get(field)
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                causes.push(required(&format!("{path}.containers[{index}].{field}")));
            }
        }
    }
}

/// A `Required value` cause of `field`.
pub(crate) fn required(field: &str) -> StatusCause {
    StatusCause::new("FieldValueRequired", "Required value", field)
}

/// A label selector as Go's `%#v` prints `v1.LabelSelector` (the API server's message).
pub(crate) fn go_label_selector(selector: &Value) -> String {
    let quote = |v: &Value| format!("{:?}", v.as_str().unwrap_or(""));
    let labels = match selector.get("matchLabels").and_then(Value::as_object) {
        Some(map) if !map.is_empty() => {
            let pairs: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{k:?}:{}", quote(v)))
                .collect();
            format!("map[string]string{{{}}}", pairs.join(", "))
        }
        _ => "map[string]string(nil)".to_owned(),
    };
    let expressions = match selector.get("matchExpressions").and_then(Value::as_array) {
        Some(list) if !list.is_empty() => {
            let items: Vec<String> = list
                .iter()
                .map(|e| {
                    let values: Vec<String> = e
                        .get("values")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .map(quote)
                        .collect();
                    let values = if values.is_empty() {
                        "[]string(nil)".to_owned()
                    } else {
                        format!("[]string{{{}}}", values.join(", "))
                    };
                    format!(
                        "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{values}}}",
                        quote(e.get("key").unwrap_or(&Value::Null)),
                        quote(e.get("operator").unwrap_or(&Value::Null)),
                    )
                })
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", items.join(", "))
        }
        _ => "[]v1.LabelSelectorRequirement(nil)".to_owned(),
    };
    format!("v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:{expressions}}}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors_print_as_go_does() {
        let selector = json!({"matchLabels": {"a": "b", "c": "d"}});
        assert_eq!(
            go_label_selector(&selector),
            r#"v1.LabelSelector{MatchLabels:map[string]string{"a":"b", "c":"d"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}"#
        );
        let with_expression = json!({"matchLabels": {"a": "b"}, "matchExpressions": [{"key": "c", "operator": "In", "values": ["d"]}]});
        assert_eq!(
            go_label_selector(&with_expression),
            r#"v1.LabelSelector{MatchLabels:map[string]string{"a":"b"}, MatchExpressions:[]v1.LabelSelectorRequirement{v1.LabelSelectorRequirement{Key:"c", Operator:"In", Values:[]string{"d"}}}}"#
        );
    }
}
