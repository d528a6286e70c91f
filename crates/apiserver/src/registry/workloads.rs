//! Validation of workloads (Deployments, ReplicaSets, StatefulSets, DaemonSets,
//! ReplicationControllers, Jobs, CronJobs) and Pods, with kube-apiserver's causes, in its
//! order: the selector (required, well-formed, not empty), the selector matching the
//! template's labels, the pod template (containers, their names and images) and the
//! restart policy the workload allows.

use kubeclient_machinery::LabelSelector;

use kubeclient_machinery::StatusCause;
use serde_json::{Map, Value};

use super::immutable::go_label_selector;
use crate::object::label_selector;

/// The causes of `object`, a workload or Pod of `group`/`kind`, in kube-apiserver's order.
pub(crate) fn causes(group: &str, kind: &str, object: &Value) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let spec = object.get("spec").unwrap_or(&Value::Null);
    match (group, kind) {
        ("apps", "Deployment" | "ReplicaSet") => {
            // (kube-apiserver names Deployments in a ReplicaSet's empty-selector message too.)
            let selector = required_selector(spec, "deployment", &mut causes);
            if let Some(selector) = selector_or_invalid(spec, selector, &mut causes) {
                replicated_template(spec, &selector, kind, &mut causes);
            }
        }
        ("apps", "StatefulSet") => {
            let selector = required_selector(spec, "statefulset", &mut causes);
            match selector {
                Ok(selector) => {
                    // StatefulSets check only the labels of their template (kube-apiserver
                    // leaves its pod spec to the Pods).
                    if !selector.is_empty() {
                        template_labels_match(spec, &selector, &mut causes);
                    }
                }
                Err(()) => causes.push(invalid_selector(spec, "")),
            }
            restart_policy_always(spec, kind, &mut causes);
        }
        ("apps", "DaemonSet") => {
            let selector = spec.get("selector").filter(|s| !s.is_null());
            if let Some(selector) = selector {
                selector_requirements(selector, &mut causes);
            }
            // A DaemonSet's selector must match its template even when absent.
            if let Ok(parsed) = label_selector(selector) {
                template_labels_match(spec, &parsed, &mut causes);
            }
            if selector.is_some_and(selector_is_empty) {
                causes.push(empty_selector(spec, "daemonset"));
            }
            pod_template(spec.get("template"), "spec.template", &mut causes);
            restart_policy_always(spec, kind, &mut causes);
        }
        ("", "ReplicationController") => {
            let selector = spec
                .get("selector")
                .and_then(Value::as_object)
                .filter(|s| !s.is_empty());
            if selector.is_none() {
                causes.push(required("spec.selector"));
            }
            match spec.get("template").filter(|t| !t.is_null()) {
                None => causes.push(required("spec.template")),
                Some(_) => {
                    if let Some(selector) = selector {
                        let labels = selector
                            .iter()
                            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_owned()))
                            .collect();
                        template_labels_match(spec, &LabelSelector::from_set(&labels), &mut causes);
                    }
                    pod_template(spec.get("template"), "spec.template", &mut causes);
                    restart_policy_always(spec, kind, &mut causes);
                }
            }
        }
        ("batch", "Job") => job_template(spec, "spec", &mut causes),
        ("batch", "CronJob") => {
            let job = spec.pointer("/jobTemplate/spec").unwrap_or(&Value::Null);
            job_template(job, "spec.jobTemplate.spec", &mut causes);
        }
        ("", "Pod") => pod_spec(object.get("spec"), "spec", &mut causes),
        _ => {}
    }
    causes
}

/// `spec.selector`, required and well-formed, with its causes; `Err` when it does not
/// convert to a selector.
fn required_selector(
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
fn selector_or_invalid(
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

fn invalid_selector(spec: &Value, detail: &str) -> StatusCause {
    let selector = go_label_selector(spec.get("selector").unwrap_or(&Value::Null));
    let message = if detail.is_empty() {
        format!("Invalid value: {selector}")
    } else {
        format!("Invalid value: {selector}: {detail}")
    };
    StatusCause::new("FieldValueInvalid", &message, "spec.selector")
}

fn empty_selector(spec: &Value, kind: &str) -> StatusCause {
    let selector = go_label_selector(spec.get("selector").unwrap_or(&Value::Null));
    StatusCause::new(
        "FieldValueInvalid",
        &format!("Invalid value: {selector}: empty selector is invalid for {kind}"),
        "spec.selector",
    )
}

fn selector_is_empty(selector: &Value) -> bool {
    let count = |key: &str| {
        selector.get(key).map_or(0, |v| {
            v.as_object().map_or(0, Map::len) + v.as_array().map_or(0, Vec::len)
        })
    };
    count("matchLabels") + count("matchExpressions") == 0
}

/// The operators and values of `matchExpressions` (Go's `ValidateLabelSelectorRequirement`).
fn selector_requirements(selector: &Value, causes: &mut Vec<StatusCause>) {
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
fn replicated_template(
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
fn template_labels_match(spec: &Value, selector: &LabelSelector, causes: &mut Vec<StatusCause>) {
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
fn go_string_map(map: Option<&Value>) -> String {
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
fn restart_policy_always(spec: &Value, kind: &str, causes: &mut Vec<StatusCause>) {
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
fn job_template(job: &Value, path: &str, causes: &mut Vec<StatusCause>) {
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

fn pod_template(template: Option<&Value>, path: &str, causes: &mut Vec<StatusCause>) {
    let spec = template.and_then(|t| t.get("spec"));
    pod_spec(spec, &format!("{path}.spec"), causes);
}

/// A pod spec's containers: at least one, each with a name and an image; names unique
/// across init and regular containers (kube-apiserver's `Duplicate value`).
fn pod_spec(spec: Option<&Value>, path: &str, causes: &mut Vec<StatusCause>) {
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
fn required(field: &str) -> StatusCause {
    StatusCause::new("FieldValueRequired", "Required value", field)
}
