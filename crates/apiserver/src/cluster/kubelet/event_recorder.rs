//! The kubelet's Event recorder, with client-go's `EventCorrelator` in front of it so a
//! probe failing on every pass cannot flood the store: per Pod a spam filter (a token
//! bucket of 25 Events refilled by one every 5 minutes, client-go's defaults) and the
//! de-duplication of an Event already recorded (its `count` and `lastTimestamp` go up
//! instead of a new Event). The refill interval is scaled by the time scale like the
//! cluster's other durations, but is at least a second.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::cluster::cluster_options::ClusterOptions;
use crate::cluster::writer::{EVENTS, EventFor, Writer};
use crate::object::now;

/// client-go's `defaultSpamBurst` and `defaultSpamQPS` (one per 300 s).
const SPAM_BURST: f64 = 25.0;
const SPAM_REFILL: Duration = Duration::from_secs(300);
/// The most distinct Events remembered per Pod for de-duplication.
const MAX_REMEMBERED: usize = 64;

/// An Event about a container of a Pod, waiting to be recorded.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct ContainerEvent {
    /// The container (`spec.containers{name}` is its field path).
    pub(super) container: String,
    pub(super) kind: &'static str,
    pub(super) reason: &'static str,
    pub(super) message: String,
}

/// What the recorder remembers of one Pod.
#[derive(Debug)]
struct PodEvents {
    tokens: f64,
    refilled: Instant,
    /// Recorded Events by (field path, reason, message): their name and count.
    recorded: HashMap<(String, &'static str, String), (String, u64)>,
}

/// The kubelets' Events, by Pod uid.
#[derive(Debug, Default)]
pub(super) struct EventRecorder {
    pods: HashMap<String, PodEvents>,
}

impl EventRecorder {
    /// Records `events` about `pod` (spam-filtered, de-duplicated).
    pub(super) fn record(
        &mut self,
        writer: &Writer<'_>,
        pod: &Value,
        events: Vec<ContainerEvent>,
        options: &ClusterOptions,
    ) {
        if events.is_empty() {
            return;
        }
        let refill = options.scaled(SPAM_REFILL).max(Duration::from_secs(1));
        let uid = pod
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let namespace = pod
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("default")
            .to_owned();
        let state = self.pods.entry(uid).or_insert_with(|| PodEvents {
            tokens: SPAM_BURST,
            refilled: Instant::now(),
            recorded: HashMap::new(),
        });
        let about = EventFor {
            involved: pod,
            component: "kubelet",
            action: "",
        };
        for event in events {
            let elapsed = state.refilled.elapsed();
            state.tokens =
                (state.tokens + elapsed.as_secs_f64() / refill.as_secs_f64()).min(SPAM_BURST);
            state.refilled = Instant::now();
            if state.tokens < 1.0 {
                continue;
            }
            state.tokens -= 1.0;
            let field_path = format!("spec.containers{{{}}}", event.container);
            let key = (field_path, event.reason, event.message);
            if let Some((name, count)) = state.recorded.get_mut(&key) {
                let next = *count + 1;
                let bumped = writer.update(EVENTS, Some(&namespace), name, "", false, |object| {
                    object.insert("count".to_owned(), json!(next));
                    object.insert("lastTimestamp".to_owned(), json!(now()));
                    true
                });
                if bumped {
                    *count = next;
                    continue;
                }
            }
            let name = writer.record_part_event(&about, Some(&key.0), event.kind, key.1, &key.2);
            if let Some(name) = name {
                if state.recorded.len() >= MAX_REMEMBERED {
                    state.recorded.clear();
                }
                state.recorded.insert(key, (name, 1));
            }
        }
    }

    /// The Pod left the node.
    pub(super) fn forget(&mut self, uid: &str) {
        self.pods.remove(uid);
    }
}
