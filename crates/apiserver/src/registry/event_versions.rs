//! One storage for the two Event APIs: `events.k8s.io/v1` Events are stored as core/v1
//! Events (as kube-apiserver stores both in one etcd resource) and converted on the way in
//! and out, with upstream's field mapping (`note` is `message`, `regarding` is
//! `involvedObject`, `reportingController` is `reportingComponent`, `deprecatedSource`,
//! `deprecatedFirstTimestamp`, `deprecatedLastTimestamp` and `deprecatedCount` are `source`,
//! `firstTimestamp`, `lastTimestamp` and `count`), so an Event written through one API is
//! read, watched and changed through the other.

use kubeclient_machinery::GroupResource;
use serde_json::{Map, Value, json};

use super::ResourceDef;

/// `(events.k8s.io/v1 field, core/v1 field)` pairs that differ only by name.
const RENAMED: [(&str, &str); 7] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

/// Whether `resource` is stored in another resource's form (`events.k8s.io` Events).
pub(crate) fn converts(resource: &ResourceDef) -> bool {
    resource.builtin && resource.group == "events.k8s.io" && resource.plural == "events"
}

/// Where `resource`'s objects are stored.
pub(crate) fn storage_of(resource: &ResourceDef) -> GroupResource {
    if converts(resource) {
        GroupResource::new("", "events")
    } else {
        resource.group_resource()
    }
}

/// A core/v1 Event as an `events.k8s.io/v1` Event, with the fields Go always writes.
pub(crate) fn core_as_events_v1(core: &Value) -> Value {
    let mut event = rename(core, |(v1, core)| (core, v1));
    event.insert("apiVersion".to_owned(), json!("events.k8s.io/v1"));
    always(&mut event, "eventTime", Value::Null);
    always(&mut event, "regarding", json!({}));
    always(&mut event, "deprecatedSource", json!({}));
    always(&mut event, "deprecatedFirstTimestamp", Value::Null);
    always(&mut event, "deprecatedLastTimestamp", Value::Null);
    omit_empty(
        &mut event,
        &[
            "reportingController",
            "reportingInstance",
            "action",
            "reason",
            "note",
            "type",
        ],
        "deprecatedCount",
    );
    Value::Object(event)
}

/// An `events.k8s.io/v1` Event as a core/v1 Event, with the fields Go always writes.
pub(crate) fn events_v1_as_core(event: &Value) -> Value {
    let mut core = rename(event, |pair| pair);
    core.insert("apiVersion".to_owned(), json!("v1"));
    always(&mut core, "involvedObject", json!({}));
    always(&mut core, "source", json!({}));
    always(&mut core, "firstTimestamp", Value::Null);
    always(&mut core, "lastTimestamp", Value::Null);
    always(&mut core, "eventTime", Value::Null);
    always(&mut core, "reportingComponent", json!(""));
    always(&mut core, "reportingInstance", json!(""));
    omit_empty(&mut core, &["reason", "message", "type", "action"], "count");
    Value::Object(core)
}

/// `object`'s fields, those of [`RENAMED`] under the name `direction` picks from each
/// `(events.k8s.io, core)` pair as `(from, to)`.
fn rename<'a>(
    object: &Value,
    direction: impl Fn((&'a str, &'a str)) -> (&'a str, &'a str),
) -> Map<String, Value> {
    let mut out = object.as_object().cloned().unwrap_or_default();
    for pair in RENAMED {
        let (from, to) = direction(pair);
        match out.remove(from) {
            Some(value) => out.insert(to.to_owned(), value),
            None => out.remove(to),
        };
    }
    out
}

/// Sets `field` to `empty` when it is absent (a field Go writes even when empty).
fn always(object: &mut Map<String, Value>, field: &str, empty: Value) {
    object.entry(field).or_insert(empty);
}

/// Drops the `omitempty` strings that are empty and a zero `count`.
fn omit_empty(object: &mut Map<String, Value>, strings: &[&str], count: &str) {
    for field in strings {
        if object.get(*field).is_some_and(|v| v == "") {
            object.remove(*field);
        }
    }
    if object.get(count).is_some_and(|v| v == 0) {
        object.remove(count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_convert_both_ways_with_the_fields_go_always_writes() {
        let core = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
            "involvedObject": {"kind": "Pod", "name": "p"}, "reason": "Started", "message": "m",
            "source": {"component": "kubelet"}, "firstTimestamp": "2026-01-01T00:00:00Z",
            "lastTimestamp": null, "count": 3, "type": "Normal", "eventTime": null,
            "reportingComponent": "", "reportingInstance": "", "related": {"kind": "Node", "name": "n"}});
        let event = core_as_events_v1(&core);
        assert_eq!(
            event,
            json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
                "regarding": {"kind": "Pod", "name": "p"}, "reason": "Started", "note": "m",
                "deprecatedSource": {"component": "kubelet"},
                "deprecatedFirstTimestamp": "2026-01-01T00:00:00Z", "deprecatedLastTimestamp": null,
                "deprecatedCount": 3, "type": "Normal", "eventTime": null,
                "related": {"kind": "Node", "name": "n"}})
        );
        assert_eq!(events_v1_as_core(&event), core);
        let minimal = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "n"}, "eventTime": "2026-01-01T00:00:00.000000Z",
            "reportingController": "c", "note": ""});
        assert_eq!(
            events_v1_as_core(&minimal),
            json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "n"},
                "eventTime": "2026-01-01T00:00:00.000000Z", "reportingComponent": "c",
                "reportingInstance": "", "involvedObject": {}, "source": {},
                "firstTimestamp": null, "lastTimestamp": null})
        );
    }
}
