//! The Event printer (core/v1 and `events.k8s.io/v1`, one printer as upstream).

use super::*;

pub(crate) const EVENT: &[Column] = &[
    col("Last Seen", "string", event_last_seen),
    col("Type", "string", |o| json!(text(o, "/type"))),
    col("Reason", "string", |o| json!(text(o, "/reason"))),
    col("Object", "string", |o| {
        json!(format!(
            "{}/{}",
            text(o, "/involvedObject/kind").to_ascii_lowercase(),
            text(o, "/involvedObject/name")
        ))
    }),
    wide("Subobject", "string", |o| {
        json!(text(o, "/involvedObject/fieldPath"))
    }),
    wide("Source", "string", event_source),
    col("Message", "string", |o| json!(text(o, "/message").trim())),
    wide("First Seen", "string", |o| event_time(o, "/firstTimestamp")),
    wide("Count", "string", |o| json!(int(o, "/count").max(1))),
];

fn event_time(event: &Value, pointer: &str) -> Value {
    match field(event, pointer).as_str() {
        Some(time) => json!(human_age(time)),
        None => age_of(event, "/eventTime"),
    }
}

fn event_last_seen(event: &Value) -> Value {
    match field(event, "/series/lastObservedTime").as_str() {
        Some(time) => json!(human_age(time)),
        None => event_time(event, "/lastTimestamp"),
    }
}

/// The deprecated source's component and host, else the reporting controller and
/// instance (upstream's `formatEventSource`).
fn event_source(event: &Value) -> Value {
    let component = match text(event, "/source/component") {
        "" => text(event, "/reportingComponent"),
        component => component,
    };
    let host = match text(event, "/source/host") {
        "" => text(event, "/reportingInstance"),
        host => host,
    };
    if host.is_empty() {
        json!(component)
    } else {
        json!(format!("{component}, {host}"))
    }
}
