//! Kubernetes Events from controllers (client-go's `tools/record`), written as core/v1
//! Events (what `kubectl get events` and `kubectl describe` show).
//!
//! - [`EventBroadcaster`]: takes events from recorders without blocking (1,000 queued per
//!   watcher, more are dropped, as client-go) and hands them to watchers:
//!   [`start_recording_to_sink`](EventBroadcaster::start_recording_to_sink) writes them to
//!   the API server, [`start_logging`](EventBroadcaster::start_logging) logs them.
//! - [`EventRecorder`]: `event(object, type, reason, message)`.
//! - [`EventCorrelator`]: before writing, the spam filter (a token bucket per source,
//!   object and type: burst 25, one more per 300 s), the aggregator (more than 10 distinct
//!   messages for one source, object, type and reason within 600 s become one event,
//!   "(combined from similar events): ...") and the deduplication (a repeat increments
//!   `count` with a PATCH instead of a new Event).

mod event_broadcaster;
mod event_recorder;
mod events_cache;
mod lru;

pub use event_broadcaster::{EventBroadcaster, MAX_QUEUED_EVENTS, MAX_TRIES_PER_EVENT};
pub use event_recorder::{EventRecorder, EventSource, EventType};
pub use events_cache::{
    DEFAULT_AGGREGATE_INTERVAL, DEFAULT_AGGREGATE_MAX_EVENTS, DEFAULT_SPAM_BURST, DEFAULT_SPAM_QPS,
    EventCorrelateResult, EventCorrelator, MAX_LRU_CACHE_ENTRIES,
};
