//! Events, core/v1 and `events.k8s.io/v1` (kube-apiserver's `pkg/registry/core/event`
//! and `events`): the fields Go's Event structs always write, the involved object in the
//! Event's namespace, for `events.k8s.io` an `eventTime`, a `type` of Normal or Warning
//! and a note of at most 1 kB (validated as core Events: messages name no group), and a
//! PUT of a missing Event creates it. Both APIs store core/v1 Events
//! (`event_versions.rs`).

use kubeclient_machinery::StatusCause;
use serde_json::{Map, Value, json};

use crate::object::meta_str;
use crate::registry::ResourceDef;
use crate::registry::defaults::set;
use crate::registry::printers::{self, Column};
use crate::registry::strategy::{Strategy, StrategyContext};

/// The longest `note` of an `events.k8s.io` Event.
const NOTE_LENGTH_LIMIT: usize = 1024;

/// The core/v1 Event strategy.
pub(crate) struct EventStrategy;

impl Strategy for EventStrategy {
    fn table_columns(&self) -> Option<&'static [Column]> {
        Some(printers::event::EVENT)
    }

    fn defaults(&self, _: StrategyContext<'_>, object: &mut Map<String, Value>) {
        core_defaults(object);
    }

    fn validate(&self, object: &Value, _: Option<&Value>, causes: &mut Vec<StatusCause>) {
        event_namespace(object, "involvedObject", causes);
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }
}

/// The `events.k8s.io/v1` Event strategy.
pub(crate) struct EventsV1Strategy;

impl Strategy for EventsV1Strategy {
    fn table_columns(&self) -> Option<&'static [Column]> {
        Some(printers::event::EVENT)
    }

    fn defaults(&self, _: StrategyContext<'_>, object: &mut Map<String, Value>) {
        events_v1_defaults(object);
    }

    fn validate(&self, object: &Value, old: Option<&Value>, causes: &mut Vec<StatusCause>) {
        event_namespace(object, "regarding", causes);
        if old.is_none() {
            events_v1_create_rules(object, causes);
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

    fn validation_group<'a>(&self, _: &'a ResourceDef) -> &'a str {
        // Validation runs on kube-apiserver's internal Event type.
        ""
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }
}

/// The fields Go's core/v1 Event struct always writes.
fn core_defaults(object: &mut Map<String, Value>) {
    set(object, "source", json!({}));
    for field in ["firstTimestamp", "lastTimestamp", "eventTime"] {
        set(object, field, Value::Null);
    }
    set(object, "reportingComponent", json!(""));
    set(object, "reportingInstance", json!(""));
}

/// The fields Go's `events.k8s.io/v1` Event struct always writes.
fn events_v1_defaults(object: &mut Map<String, Value>) {
    set(object, "deprecatedSource", json!({}));
    for field in ["deprecatedFirstTimestamp", "deprecatedLastTimestamp"] {
        set(object, field, Value::Null);
    }
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
