//! Validation rules of particular built-in kinds, with kube-apiserver's messages:
//! `events.k8s.io` Events (an `eventTime`, a `type` of Normal or Warning, a note of at
//! most 1 kB) and Services (port names unique).

use super::*;

/// The longest `note` of an `events.k8s.io` Event.
const NOTE_LENGTH_LIMIT: usize = 1024;

/// Checks the kind-specific rules of `object`, about to be stored.
///
/// # Errors
///
/// 422 Invalid listing every broken rule.
pub(super) fn check(resource: &ResourceDef, object: &Value) -> HandlerResult<()> {
    let mut causes = Vec::new();
    match (resource.group.as_str(), resource.kind.as_str()) {
        ("events.k8s.io", "Event") => {
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
        _ => {}
    }
    if causes.is_empty() {
        return Ok(());
    }
    Err(fail(Status::invalid(
        &resource.group,
        &resource.kind,
        meta_str(object, "name"),
        causes,
    )))
}
