//! The Table columns of core/v1 Events, as kube-apiserver prints them (its
//! `printEvent`): `kubectl get events` shows when, what kind, why, about which object and
//! the message, not the generated names.

use serde_json::{Value, json};

use crate::registry::ResourceDef;

/// Whether `resource` is the core/v1 Event.
pub(super) fn is_core_event(resource: &ResourceDef) -> bool {
    resource.group.is_empty() && resource.kind == "Event"
}

/// `(name, type, priority, description)` of each column; priority 1 shows with `-o wide`.
const COLUMNS: [(&str, &str, i64, &str); 10] = [
    (
        "Last Seen",
        "string",
        0,
        "Time since the event was last seen",
    ),
    ("Type", "string", 0, "Normal or Warning"),
    ("Reason", "string", 0, "Why the event was recorded"),
    ("Object", "string", 0, "The object the event is about"),
    ("Subobject", "string", 1, "The field of the object, if any"),
    ("Source", "string", 1, "The component that recorded it"),
    ("Message", "string", 0, "A human-readable description"),
    (
        "First Seen",
        "string",
        1,
        "Time since the event was first seen",
    ),
    ("Count", "integer", 1, "How many times it happened"),
    ("Name", "string", 1, "The event's name"),
];

pub(super) fn column_definitions() -> Value {
    Value::Array(
        COLUMNS
            .iter()
            .map(|(name, column_type, priority, description)| {
                json!({"name": name, "type": column_type, "format": if *name == "Name" { "name" } else { "" },
                       "description": description, "priority": priority})
            })
            .collect(),
    )
}

fn text<'a>(object: &'a Value, path: &[&str]) -> &'a str {
    path.iter()
        .try_fold(object, |value, key| value.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The cells of one Event's row.
pub(super) fn cells(object: &Value, age: impl Fn(&str) -> String) -> Vec<Value> {
    let first_time = match text(object, &["firstTimestamp"]) {
        "" => text(object, &["eventTime"]),
        time => time,
    };
    let first = if first_time.is_empty() {
        "<unknown>".to_owned()
    } else {
        age(first_time)
    };
    let series_last = text(object, &["series", "lastObservedTime"]);
    let last = match (series_last, text(object, &["lastTimestamp"])) {
        ("", "") => first.clone(),
        ("", time) | (time, _) => age(time),
    };
    let count = object
        .get("series")
        .and_then(|s| s.get("count"))
        .or_else(|| object.get("count"))
        .and_then(Value::as_i64)
        .filter(|n| *n != 0)
        .unwrap_or(1);
    let kind = text(object, &["involvedObject", "kind"]).to_ascii_lowercase();
    let target = match text(object, &["involvedObject", "name"]) {
        "" => kind,
        name => format!("{kind}/{name}"),
    };
    let source = match (
        text(object, &["source", "component"]),
        text(object, &["source", "host"]),
    ) {
        (component, "") => component.to_owned(),
        (component, host) => format!("{component}, {host}"),
    };
    vec![
        Value::String(last),
        Value::String(text(object, &["type"]).to_owned()),
        Value::String(text(object, &["reason"]).to_owned()),
        Value::String(target),
        Value::String(text(object, &["involvedObject", "fieldPath"]).to_owned()),
        Value::String(source),
        Value::String(text(object, &["message"]).trim().to_owned()),
        Value::String(first),
        json!(count),
        Value::String(text(object, &["metadata", "name"]).to_owned()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_events_row_names_its_object_source_and_count() {
        let event = json!({"metadata": {"name": "web.18ed"}, "type": "Normal", "reason": "Synced",
            "involvedObject": {"kind": "Installation", "name": "web"}, "message": " synced \n",
            "source": {"component": "sample-controller", "host": "replica-a"}, "count": 3,
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:01:00Z"});
        let cells = cells(&event, |t| format!("age({t})"));
        assert_eq!(
            cells,
            [
                json!("age(2026-01-01T00:01:00Z)"),
                json!("Normal"),
                json!("Synced"),
                json!("installation/web"),
                json!(""),
                json!("sample-controller, replica-a"),
                json!("synced"),
                json!("age(2026-01-01T00:00:00Z)"),
                json!(3),
                json!("web.18ed"),
            ]
        );
        assert_eq!(
            cells.len(),
            column_definitions().as_array().map_or(0, Vec::len)
        );
    }
}
