//! Validation rules of particular built-in kinds, with kube-apiserver's messages: Events
//! (the involved object's namespace; for `events.k8s.io` an `eventTime`, a `type` of
//! Normal or Warning, a note of at most 1 kB), Services (port names unique) and workloads
//! (the selector matches the template's labels).

use super::*;

/// The longest `note` of an `events.k8s.io` Event.
const NOTE_LENGTH_LIMIT: usize = 1024;

/// Checks the kind-specific rules of `object`, about to be stored; `update_causes` (the
/// immutable fields an update changed) follow its own in the answer.
///
/// # Errors
///
/// 422 Invalid listing every broken rule.
pub(super) fn check(
    resource: &ResourceDef,
    object: &Value,
    update_causes: Vec<StatusCause>,
) -> HandlerResult<()> {
    let mut causes = Vec::new();
    // Validation runs on kube-apiserver's internal Event type: both APIs' messages name
    // `Event` without a group.
    let mut message_group = resource.group.as_str();
    match (resource.group.as_str(), resource.kind.as_str()) {
        ("", "Event") => {
            event_namespace(object, "involvedObject", &mut causes);
        }
        ("events.k8s.io", "Event") => {
            message_group = "";
            event_namespace(object, "regarding", &mut causes);
            if object.get("eventTime").is_none_or(Value::is_null) {
                causes.push(StatusCause::new(
                    "FieldValueRequired",
                    "Required value",
                    "eventTime",
                ));
            }
            let event_type = object.get("type").and_then(Value::as_str).unwrap_or("");
            if !matches!(event_type, "Normal" | "Warning") {
                causes.push(StatusCause::new(
                    "FieldValueInvalid",
                    &format!("Invalid value: {event_type:?}: has invalid value: {event_type}"),
                    "type",
                ));
            }
            let note = object.get("note").and_then(Value::as_str).unwrap_or("");
            if note.len() > NOTE_LENGTH_LIMIT {
                causes.push(StatusCause::new(
                    "FieldValueTooLong",
                    &format!("Too long: must have at most {NOTE_LENGTH_LIMIT} bytes"),
                    "note",
                ));
            }
        }
        ("", "Service") => {
            let mut seen = std::collections::HashSet::new();
            let ports = object
                .pointer("/spec/ports")
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice);
            for (index, port) in ports.iter().enumerate() {
                let name = port.get("name").and_then(Value::as_str).unwrap_or("");
                if !name.is_empty() && !seen.insert(name) {
                    causes.push(StatusCause::new(
                        "FieldValueDuplicate",
                        &format!("Duplicate value: {name:?}"),
                        &format!("spec.ports[{index}].name"),
                    ));
                }
            }
        }
        ("apps", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet") => {
            selector_matches_template(object, &mut causes);
        }
        _ => {}
    }
    causes.extend(update_causes);
    if causes.is_empty() {
        return Ok(());
    }
    Err(fail(Status::invalid(
        message_group,
        &resource.kind,
        meta_str(object, "name"),
        causes,
    )))
}

/// The involved object of an Event is in the Event's namespace (or unset, for Events in
/// `default`).
fn event_namespace(object: &Value, involved: &str, causes: &mut Vec<StatusCause>) {
    let namespace = meta_str(object, "namespace");
    let involved_namespace = object
        .pointer(&format!("/{involved}/namespace"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let agrees = if involved_namespace.is_empty() {
        namespace.is_empty() || namespace == "default"
    } else {
        involved_namespace == namespace
    };
    if !agrees {
        causes.push(StatusCause::new(
            "FieldValueInvalid",
            &format!("Invalid value: {involved_namespace:?}: does not match event.namespace"),
            "involvedObject.namespace",
        ));
    }
}

/// A workload's `spec.selector` selects its template's labels.
fn selector_matches_template(object: &Value, causes: &mut Vec<StatusCause>) {
    let Some(selector) = object.pointer("/spec/selector") else {
        return;
    };
    let labels = object
        .pointer("/spec/template/metadata/labels")
        .and_then(Value::as_object);
    let label = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
    let matches_labels = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .all(|(key, value)| label(key) == value.as_str());
    let matches_expressions = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .all(|expression| {
            let key = expression.get("key").and_then(Value::as_str).unwrap_or("");
            let values: Vec<&str> = expression
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            match (
                expression.get("operator").and_then(Value::as_str),
                label(key),
            ) {
                (Some("In"), Some(value)) => values.contains(&value),
                (Some("NotIn"), value) => value.is_none_or(|v| !values.contains(&v)),
                (Some("Exists"), value) => value.is_some(),
                (Some("DoesNotExist"), value) => value.is_none(),
                _ => false,
            }
        });
    if !(matches_labels && matches_expressions) {
        let shown: Vec<String> = labels
            .into_iter()
            .flatten()
            .map(|(k, v)| format!("{k:?}:{:?}", v.as_str().unwrap_or("")))
            .collect();
        causes.push(StatusCause::new(
            "FieldValueInvalid",
            &format!(
                "Invalid value: map[string]string{{{}}}: `selector` does not match template `labels`",
                shown.join(", ")
            ),
            "spec.template.metadata.labels",
        ));
    }
}
