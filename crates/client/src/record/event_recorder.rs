//! [`EventRecorder`]: makes an Event about an object and hands it to the broadcaster
//! (client-go's `recorderImpl`).

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Event, EventSource as CoreEventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kubeclient_machinery::Object;

use super::event_broadcaster::Shared;

/// The longest name an Event may have (a DNS subdomain).
const MAX_NAME_LENGTH: usize = 253;

/// The two event types Kubernetes knows.
///
/// # Examples
///
/// ```
/// use kubeclient::record::EventType;
/// assert_eq!(EventType::Warning.as_str(), "Warning");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    /// Something expected happened (`Normal`).
    Normal,
    /// Something may need attention (`Warning`).
    Warning,
}

impl EventType {
    /// `Normal` or `Warning`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// Who reports events: a component (a controller's name) and optionally a host.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventSource {
    /// The component, e.g. `sample-controller`.
    pub component: String,
    /// The host (a node or pod name), or empty.
    pub host: String,
}

impl EventSource {
    /// A source with a component and no host.
    #[must_use]
    pub fn new(component: &str) -> Self {
        EventSource {
            component: component.to_owned(),
            host: String::new(),
        }
    }
}

/// `<name>.<unix nanoseconds in hex>`, as client-go names events; a random name when
/// that would be too long for an object name.
pub(super) fn event_name(object_name: &str, at: jiff::Timestamp) -> String {
    let nanos = u64::try_from(at.as_nanosecond()).unwrap_or(0);
    let name = format!("{object_name}.{nanos:x}");
    if name.len() <= MAX_NAME_LENGTH && !object_name.is_empty() {
        return name;
    }
    format!("event.{nanos:x}{:08x}", fastrand::u32(..))
}

/// Records events about objects; cheap to clone (client-go's `EventRecorder`). Recording
/// never blocks: an event that does not fit the broadcaster's queue is dropped and logged.
///
/// # Examples
///
/// ```no_run
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient::record::{EventBroadcaster, EventSource, EventType};
/// # async fn run(client: kubeclient::Client, cm: ConfigMap) {
/// let broadcaster = EventBroadcaster::new();
/// broadcaster.start_recording_to_sink(client);
/// let recorder = broadcaster.new_recorder(EventSource::new("my-controller"));
/// recorder.event(&cm, EventType::Normal, "Synced", "ConfigMap synced successfully");
/// broadcaster.shutdown().await; // writes what is queued
/// # }
/// ```
#[derive(Clone)]
#[doc(alias = "recorderImpl")]
pub struct EventRecorder {
    pub(super) shared: Arc<Shared>,
    pub(super) source: EventSource,
}

impl EventRecorder {
    /// Records an event about `object` (client-go's `Event`).
    pub fn event<K: Object + ?Sized>(
        &self,
        object: &K,
        type_: EventType,
        reason: &str,
        message: &str,
    ) {
        let event = self.make_event(object, type_, reason, message);
        self.shared.action(event);
    }

    fn make_event<K: Object + ?Sized>(
        &self,
        object: &K,
        type_: EventType,
        reason: &str,
        message: &str,
    ) -> Event {
        let now = jiff::Timestamp::now();
        let namespace = object.namespace().unwrap_or("default").to_owned();
        let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_owned());
        Event {
            metadata: ObjectMeta {
                name: Some(event_name(object.name(), now)),
                namespace: Some(namespace),
                ..ObjectMeta::default()
            },
            involved_object: ObjectReference {
                api_version: non_empty(&object.api_version()),
                kind: non_empty(&object.kind()),
                name: non_empty(object.name()),
                namespace: object.namespace().map(str::to_owned),
                uid: non_empty(object.uid()),
                resource_version: non_empty(object.resource_version()),
                field_path: None,
            },
            reason: Some(reason.to_owned()),
            message: Some(message.to_owned()),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            count: Some(1),
            type_: Some(type_.as_str().to_owned()),
            source: Some(CoreEventSource {
                component: non_empty(&self.source.component),
                host: non_empty(&self.source.host),
            }),
            reporting_component: non_empty(&self.source.component),
            reporting_instance: non_empty(&self.source.host),
            ..Event::default()
        }
    }
}

impl std::fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventRecorder")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}
