//! [`EventCorrelator`]: the spam filter, the aggregator and the deduplicating logger an
//! event passes before it is written (client-go's `events_cache.go`).

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::lru::Lru;
use crate::rest::TokenBucket;

/// Entries kept by each of the correlator's caches (client-go's `maxLruCacheEntries`).
pub const MAX_LRU_CACHE_ENTRIES: usize = 4096;
/// Distinct messages for one source, object, type and reason before aggregation starts.
pub const DEFAULT_AGGREGATE_MAX_EVENTS: usize = 10;
/// How long a group of similar events is remembered for aggregation.
pub const DEFAULT_AGGREGATE_INTERVAL: Duration = Duration::from_secs(600);
/// Events a source may send about one object at once.
pub const DEFAULT_SPAM_BURST: u32 = 25;
/// Refill of the spam filter's bucket: one event per 300 s.
pub const DEFAULT_SPAM_QPS: f64 = 1.0 / 300.0;

/// What to do with one event (client-go's `EventCorrelateResult`).
#[derive(Debug)]
pub struct EventCorrelateResult {
    /// The event to write (possibly the aggregate, possibly with a higher count).
    pub event: Event,
    /// A strategic merge patch of `count`, `lastTimestamp` and `message` when the event
    /// was seen before (write it with PATCH); `None` to create it.
    pub patch: Option<Value>,
    /// The spam filter dropped it: write nothing.
    pub skip: bool,
}

fn opt(value: Option<&String>) -> &str {
    value.map_or("", String::as_str)
}

/// Source, involved object and type: what the spam filter rate-limits together.
fn spam_fields(event: &Event) -> [&str; 8] {
    let source = event.source.as_ref();
    let object = &event.involved_object;
    [
        opt(source.and_then(|s| s.component.as_ref())),
        opt(source.and_then(|s| s.host.as_ref())),
        opt(object.kind.as_ref()),
        opt(object.namespace.as_ref()),
        opt(object.name.as_ref()),
        opt(object.uid.as_ref()),
        opt(object.api_version.as_ref()),
        opt(event.type_.as_ref()),
    ]
}

fn spam_key(event: &Event) -> String {
    spam_fields(event).join("\u{0}")
}

/// The spam fields plus reason and reporter: the group of similar events.
fn aggregate_key(event: &Event) -> String {
    let mut fields = spam_fields(event).to_vec();
    fields.extend([
        opt(event.reason.as_ref()),
        opt(event.reporting_component.as_ref()),
        opt(event.reporting_instance.as_ref()),
    ]);
    fields.join("\u{0}")
}

/// The identity of one event: its group plus its message (client-go's `getEventKey`).
fn event_key(event: &Event) -> String {
    format!(
        "{}\u{0}{}",
        aggregate_key(event),
        opt(event.message.as_ref())
    )
}

/// The distinct messages of one group of similar events.
struct AggregateRecord {
    local_keys: HashSet<String>,
    last_seen: Instant,
}

/// What was last written for an event key.
#[derive(Clone)]
struct Observation {
    count: i32,
    first_timestamp: Option<Time>,
    name: Option<String>,
    resource_version: Option<String>,
}

struct State {
    spam: Lru<String, TokenBucket>,
    aggregates: Lru<String, AggregateRecord>,
    observed: Lru<String, Observation>,
}

/// Decides for each event whether to drop it, write it, aggregate it or count it as a
/// repeat (client-go's `EventCorrelator`, with its default options).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use k8s_openapi::api::core::v1::Event;
/// use kubeclient::record::EventCorrelator;
///
/// let correlator = EventCorrelator::new();
/// let event = Event { reason: Some("Synced".into()), message: Some("ok".into()), ..Default::default() };
/// let first = correlator.correlate(event.clone());
/// assert!(first.patch.is_none() && !first.skip);
/// correlator.update_state(&first.event);
/// let repeat = correlator.correlate(event);
/// assert_eq!(repeat.event.count, Some(2));
/// assert!(repeat.patch.is_some());
/// # }
/// ```
#[doc(alias = "record.EventCorrelator")]
pub struct EventCorrelator {
    state: Mutex<State>,
}

impl Default for EventCorrelator {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for EventCorrelator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventCorrelator").finish_non_exhaustive()
    }
}

impl EventCorrelator {
    /// A correlator with client-go's defaults (see the constants of this module).
    #[must_use]
    pub fn new() -> Self {
        EventCorrelator {
            state: Mutex::new(State {
                spam: Lru::new(MAX_LRU_CACHE_ENTRIES),
                aggregates: Lru::new(MAX_LRU_CACHE_ENTRIES),
                observed: Lru::new(MAX_LRU_CACHE_ENTRIES),
            }),
        }
    }

    /// Aggregates, deduplicates and spam-filters one event.
    pub fn correlate(&self, event: Event) -> EventCorrelateResult {
        let mut state = crate::sync::lock(&self.state);
        let (event, key) = aggregate(&mut state.aggregates, event);
        let (event, patch) = observe(&mut state.observed, event, &key);
        let spam = spam_key(&event);
        let skip = match state.spam.get_mut(&spam) {
            Some(bucket) => !bucket.try_accept(),
            None => {
                let bucket = TokenBucket::with_limits(
                    DEFAULT_SPAM_QPS,
                    DEFAULT_SPAM_BURST,
                    crate::rest::MAX_RATE_LIMIT_WAIT,
                );
                let accepted = bucket.try_accept();
                state.spam.insert(spam, bucket);
                !accepted
            }
        };
        EventCorrelateResult { event, patch, skip }
    }

    /// Records what the server stored for an event (its name and resourceVersion), so a
    /// repeat patches it (client-go's `UpdateState`).
    pub fn update_state(&self, event: &Event) {
        let observation = Observation {
            count: event.count.unwrap_or(1),
            first_timestamp: event.first_timestamp.clone(),
            name: event.metadata.name.clone(),
            resource_version: event.metadata.resource_version.clone(),
        };
        crate::sync::lock(&self.state)
            .observed
            .insert(event_key(event), observation);
    }
}

/// Turns the event into the group's aggregate once the group has seen
/// [`DEFAULT_AGGREGATE_MAX_EVENTS`] distinct messages; returns the event to go on with
/// and the key it is deduplicated under.
fn aggregate(cache: &mut Lru<String, AggregateRecord>, event: Event) -> (Event, String) {
    let now = Instant::now();
    let group = aggregate_key(&event);
    let message = opt(event.message.as_ref()).to_owned();
    let fresh = || AggregateRecord {
        local_keys: HashSet::new(),
        last_seen: now,
    };
    let mut record = match cache.get_mut(&group) {
        Some(record)
            if now.saturating_duration_since(record.last_seen) <= DEFAULT_AGGREGATE_INTERVAL =>
        {
            std::mem::replace(record, fresh())
        }
        _ => fresh(),
    };
    record.last_seen = now;
    record.local_keys.insert(message);
    if record.local_keys.len() < DEFAULT_AGGREGATE_MAX_EVENTS {
        cache.insert(group, record);
        let key = event_key(&event);
        return (event, key);
    }
    // Keep the set bounded: forget one message (client-go pops any).
    if let Some(any) = record.local_keys.iter().next().cloned() {
        record.local_keys.remove(&any);
    }
    cache.insert(group.clone(), record);
    let timestamp = jiff::Timestamp::now();
    let aggregate = Event {
        metadata: ObjectMeta {
            name: Some(super::event_recorder::event_name(
                opt(event.involved_object.name.as_ref()),
                timestamp,
            )),
            namespace: event.metadata.namespace.clone(),
            ..ObjectMeta::default()
        },
        count: Some(1),
        first_timestamp: Some(Time(timestamp)),
        last_timestamp: Some(Time(timestamp)),
        message: Some(format!(
            "(combined from similar events): {}",
            opt(event.message.as_ref())
        )),
        involved_object: event.involved_object,
        type_: event.type_,
        reason: event.reason,
        source: event.source,
        reporting_component: event.reporting_component,
        reporting_instance: event.reporting_instance,
        ..Event::default()
    };
    (aggregate, group)
}

/// Counts a repeat: same name, first timestamp and resourceVersion as last time, one more
/// in `count`, and the patch that says so.
fn observe(
    cache: &mut Lru<String, Observation>,
    mut event: Event,
    key: &str,
) -> (Event, Option<Value>) {
    let last = cache.get_mut(&key.to_owned()).cloned();
    let patch = match last {
        Some(last) if last.count > 0 => {
            event.count = Some(last.count.saturating_add(1));
            event.first_timestamp = last.first_timestamp;
            event.metadata.name = last.name;
            event.metadata.resource_version = last.resource_version;
            Some(json!({
                "count": event.count,
                "lastTimestamp": event.last_timestamp,
                "message": event.message,
            }))
        }
        _ => None,
    };
    cache.insert(
        key.to_owned(),
        Observation {
            count: event.count.unwrap_or(1),
            first_timestamp: event.first_timestamp.clone(),
            name: event.metadata.name.clone(),
            resource_version: event.metadata.resource_version.clone(),
        },
    );
    (event, patch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ObjectReference;

    fn event(message: &str) -> Event {
        Event {
            metadata: ObjectMeta {
                name: Some(format!("web.{message}")),
                namespace: Some("default".into()),
                ..ObjectMeta::default()
            },
            involved_object: ObjectReference {
                kind: Some("Installation".into()),
                name: Some("web".into()),
                namespace: Some("default".into()),
                ..ObjectReference::default()
            },
            reason: Some("Synced".into()),
            type_: Some("Normal".into()),
            message: Some(message.into()),
            count: Some(1),
            ..Event::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_tenth_distinct_message_of_a_group_becomes_the_aggregate() {
        let correlator = EventCorrelator::new();
        for i in 0..9 {
            let result = correlator.correlate(event(&format!("m{i}")));
            assert_eq!(
                result.event.message.as_deref(),
                Some(format!("m{i}").as_str())
            );
            correlator.update_state(&result.event);
        }
        let tenth = correlator.correlate(event("m9"));
        assert_eq!(
            tenth.event.message.as_deref(),
            Some("(combined from similar events): m9")
        );
        assert!(tenth.patch.is_none(), "the first aggregate is created");
        let eleventh = correlator.correlate(event("m10"));
        assert_eq!(
            eleventh.event.count,
            Some(2),
            "later ones count on the aggregate"
        );
        assert_eq!(eleventh.event.metadata.name, tenth.event.metadata.name);
        // A group older than 600 s starts over.
        tokio::time::advance(DEFAULT_AGGREGATE_INTERVAL + Duration::from_secs(1)).await;
        let fresh = correlator.correlate(event("m11"));
        assert_eq!(fresh.event.message.as_deref(), Some("m11"));
    }

    #[tokio::test(start_paused = true)]
    async fn the_spam_filter_lets_25_through_then_one_per_300_seconds() {
        let correlator = EventCorrelator::new();
        let skipped = (0..30)
            .filter(|_| correlator.correlate(event("same")).skip)
            .count();
        assert_eq!(skipped, 5);
        tokio::time::advance(Duration::from_secs(300)).await;
        assert!(!correlator.correlate(event("same")).skip);
        assert!(correlator.correlate(event("same")).skip);
    }
}
