//! The event recorder on the embedded server: events land as core/v1 Events, repeats are
//! counted on one Event by PATCH, similar events with different messages aggregate, and
//! the spam filter caps what one object can emit.

use k8s_openapi::api::core::v1::{ConfigMap, Event};
use kubeclient::record::{EventBroadcaster, EventSource, EventType};
use kubeclient::{Api, ListParams, PostParams};
use serde_json::json;

use crate::support::start;

async fn config_map(client: &kubeclient::Client, name: &str) -> ConfigMap {
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": name}})).expect("a ConfigMap");
    Api::<ConfigMap>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &cm)
        .await
        .expect("created")
}

async fn events_about(client: &kubeclient::Client, name: &str) -> Vec<Event> {
    let mut events: Vec<Event> = Api::<Event>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .expect("listed")
        .items
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(name))
        .collect();
    events.sort_by(|a, b| a.reason.cmp(&b.reason));
    events
}

#[tokio::test]
async fn repeated_events_are_one_event_with_a_count() {
    let fx = start().await;
    let cm = config_map(&fx.client, "web").await;
    let broadcaster = EventBroadcaster::new();
    broadcaster.start_recording_to_sink(fx.client.clone());
    let recorder = broadcaster.new_recorder(EventSource::new("test-controller"));
    for _ in 0..3 {
        recorder.event(&cm, EventType::Normal, "Synced", "synced successfully");
    }
    recorder.event(
        &cm,
        EventType::Warning,
        "Failed",
        "the image does not exist",
    );
    broadcaster.shutdown().await;

    let events = events_about(&fx.client, "web").await;
    let summary: Vec<(Option<&str>, Option<&str>, Option<i32>)> = events
        .iter()
        .map(|e| (e.type_.as_deref(), e.reason.as_deref(), e.count))
        .collect();
    assert_eq!(
        summary,
        [
            (Some("Warning"), Some("Failed"), Some(1)),
            (Some("Normal"), Some("Synced"), Some(3))
        ]
    );
    let synced = &events[1];
    assert_eq!(synced.involved_object.kind.as_deref(), Some("ConfigMap"));
    assert_eq!(synced.involved_object.uid, cm.metadata.uid);
    assert_eq!(
        synced.source.as_ref().and_then(|s| s.component.as_deref()),
        Some("test-controller")
    );
    assert!(synced.last_timestamp >= synced.first_timestamp);
}

#[tokio::test]
async fn ten_distinct_messages_for_one_reason_aggregate_into_one_event() {
    let fx = start().await;
    let cm = config_map(&fx.client, "busy").await;
    let broadcaster = EventBroadcaster::new();
    broadcaster.start_recording_to_sink(fx.client.clone());
    let recorder = broadcaster.new_recorder(EventSource::new("test-controller"));
    for i in 0..12 {
        recorder.event(&cm, EventType::Normal, "Scaled", &format!("scaled to {i}"));
    }
    broadcaster.shutdown().await;
    let events = events_about(&fx.client, "busy").await;
    assert_eq!(events.len(), 10, "9 single events and one aggregate");
    let aggregate: Vec<&Event> = events
        .iter()
        .filter(|e| {
            e.message
                .as_deref()
                .is_some_and(|m| m.starts_with("(combined from similar events): "))
        })
        .collect();
    assert_eq!(aggregate.len(), 1);
    assert_eq!(aggregate[0].count, Some(3), "the 10th, 11th and 12th event");
    assert_eq!(
        aggregate[0].message.as_deref(),
        Some("(combined from similar events): scaled to 11")
    );
}

#[tokio::test]
async fn the_spam_filter_caps_one_objects_events_at_the_burst() {
    let fx = start().await;
    let cm = config_map(&fx.client, "noisy").await;
    let broadcaster = EventBroadcaster::new();
    broadcaster.start_recording_to_sink(fx.client.clone());
    let recorder = broadcaster.new_recorder(EventSource::new("test-controller"));
    for _ in 0..40 {
        recorder.event(&cm, EventType::Warning, "BackOff", "retrying");
    }
    broadcaster.shutdown().await;
    let events = events_about(&fx.client, "noisy").await;
    assert_eq!(events.len(), 1);
    assert_eq!(
        events[0].count,
        Some(25),
        "25 pass the token bucket; 15 are dropped"
    );
}
