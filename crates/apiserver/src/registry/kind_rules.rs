//! Validation rules of particular built-in kinds, with kube-apiserver's messages: Events
//! (the involved object's namespace; for `events.k8s.io` an `eventTime`, a `type` of
//! Normal or Warning, a note of at most 1 kB), CRDs and workloads
//! ([`workloads`](super::workloads): selectors, templates, pod specs); the kinds with a
//! [`Strategy`](super::strategy::Strategy) (Services, Pods) validate in theirs.

use kubeclient_machinery::{Status, StatusCause};
use serde_json::Value;

use super::store::{StoreResult, fail};
use super::strategy::strategy_for;
use super::{ResourceDef, workloads};
use crate::object::meta_str;

/// The longest `note` of an `events.k8s.io` Event.
const NOTE_LENGTH_LIMIT: usize = 1024;

/// Checks the kind-specific rules of `object`, about to be stored over `old` (`None`:
/// created); `update_causes` (the
/// immutable fields an update changed) follow its own in the answer.
///
/// # Errors
///
/// 422 Invalid listing every broken rule.
pub(crate) fn check(
    resource: &ResourceDef,
    object: &Value,
    old: Option<&Value>,
    update_causes: Vec<StatusCause>,
) -> StoreResult<()> {
    let creating = old.is_none();
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
            if creating {
                events_v1_create_rules(object, &mut causes);
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
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            causes.extend(super::validate_crd(object, old));
        }
        (group, kind) => match strategy_for(resource) {
            Some(strategy) => strategy.validate(object, old, &mut causes),
            None => causes.extend(workloads::causes(group, kind, object)),
        },
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

/// What an Event created through `events.k8s.io/v1` needs (kube-apiserver's strict
/// validation, on its internal Event: the deprecated fields carry their core/v1 names).
fn events_v1_create_rules(object: &Value, causes: &mut Vec<StatusCause>) {
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
            &format!("Invalid value: \"\": has invalid value: {event_type}"),
            "type",
        ));
    }
    let set = |field: &str| match object.get(field) {
        None | Some(Value::Null) => false,
        Some(Value::Number(count)) => count.as_i64() != Some(0),
        Some(Value::Object(source)) => ["component", "host"].iter().any(|key| {
            source
                .get(*key)
                .and_then(Value::as_str)
                .is_some_and(|v| !v.is_empty())
        }),
        Some(_) => true,
    };
    for (field, core_field) in [
        ("deprecatedFirstTimestamp", "firstTimestamp"),
        ("deprecatedLastTimestamp", "lastTimestamp"),
        ("deprecatedCount", "count"),
        ("deprecatedSource", "source"),
    ] {
        if set(field) {
            causes.push(StatusCause::new(
                "FieldValueInvalid",
                "Invalid value: \"\": needs to be unset",
                core_field,
            ));
        }
    }
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
