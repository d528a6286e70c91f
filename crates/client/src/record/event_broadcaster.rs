//! [`EventBroadcaster`]: fans events out from recorders to watchers (the API server sink,
//! logs, callbacks) without ever blocking a recorder (client-go's `eventBroadcasterImpl`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Event;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::event_recorder::{EventRecorder, EventSource};
use super::events_cache::EventCorrelator;
use crate::api::{Api, Patch, PatchParams, PostParams};
use crate::rest::Client;

/// Events queued per watcher before new ones are dropped (client-go's `maxQueuedEvents`).
pub const MAX_QUEUED_EVENTS: usize = 1000;
/// Attempts to write one event (client-go's `maxTriesPerEvent`).
pub const MAX_TRIES_PER_EVENT: u32 = 12;
/// The pause between attempts (client-go's default `sleepDuration`); the first pause is a
/// random part of it, so many writers do not retry in step.
const DEFAULT_SLEEP: Duration = Duration::from_secs(10);

/// What recorders share with the broadcaster: the watchers' queues.
pub(super) struct Shared {
    watchers: Mutex<Vec<mpsc::Sender<Arc<Event>>>>,
    closed: AtomicBool,
}

impl Shared {
    /// Hands `event` to every watcher; a full queue drops it (logged), never blocks.
    pub(super) fn action(&self, event: Event) {
        if self.closed.load(Ordering::Acquire) {
            tracing::debug!(reason = ?event.reason, "the event broadcaster is shut down; dropping an event");
            return;
        }
        let event = Arc::new(event);
        for watcher in crate::sync::lock(&self.watchers).iter() {
            if let Err(mpsc::error::TrySendError::Full(_)) = watcher.try_send(event.clone()) {
                tracing::warn!(reason = ?event.reason, "too many queued events; dropping one");
            }
        }
    }
}

/// Receives events from its recorders and sends them to each started watcher.
///
/// # Examples
///
/// ```no_run
/// use kubeclient::record::{EventBroadcaster, EventSource};
/// # async fn run(client: kubeclient::Client) {
/// let broadcaster = EventBroadcaster::new();
/// broadcaster.start_logging();
/// broadcaster.start_recording_to_sink(client);
/// let recorder = broadcaster.new_recorder(EventSource::new("my-controller"));
/// # drop(recorder);
/// broadcaster.shutdown().await;
/// # }
/// ```
#[doc(alias = "eventBroadcasterImpl", alias = "NewBroadcaster")]
pub struct EventBroadcaster {
    shared: Arc<Shared>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    stop: CancellationToken,
    sleep: Duration,
}

impl Default for EventBroadcaster {
    fn default() -> Self {
        Self::new()
    }
}

impl EventBroadcaster {
    /// A broadcaster with no watchers yet.
    #[must_use]
    pub fn new() -> Self {
        EventBroadcaster {
            shared: Arc::new(Shared {
                watchers: Mutex::new(Vec::new()),
                closed: AtomicBool::new(false),
            }),
            tasks: Mutex::new(Vec::new()),
            stop: CancellationToken::new(),
            sleep: DEFAULT_SLEEP,
        }
    }

    /// The pause between attempts to write an event (default 10 s; client-go's
    /// `WithSleepDuration`).
    #[must_use]
    pub fn retry_sleep(mut self, sleep: Duration) -> Self {
        self.sleep = sleep;
        self
    }

    /// A recorder whose events carry `source`.
    pub fn new_recorder(&self, source: EventSource) -> EventRecorder {
        EventRecorder {
            shared: self.shared.clone(),
            source,
        }
    }

    /// Starts a watcher: `handle` runs on its own task for each event.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    #[track_caller]
    pub fn start_event_watcher(&self, handle: impl Fn(&Event) + Send + Sync + 'static) {
        self.start_watcher(move |event| {
            handle(&event);
            async {}
        });
    }

    /// Logs every event (tracing, at info level).
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    #[track_caller]
    pub fn start_logging(&self) {
        self.start_event_watcher(|event| {
            tracing::info!(
                object = ?event.involved_object.name,
                kind = ?event.involved_object.kind,
                r#type = ?event.type_,
                reason = ?event.reason,
                message = ?event.message,
                "event"
            );
        });
    }

    /// Writes every event to the API server as a core/v1 Event, through an
    /// [`EventCorrelator`] (spam filter, aggregation, counting repeats). A write that
    /// fails in transport is retried up to [`MAX_TRIES_PER_EVENT`] times; one the server
    /// refuses is logged and dropped.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    #[track_caller]
    pub fn start_recording_to_sink(&self, client: Client) {
        let correlator = Arc::new(EventCorrelator::new());
        let (sleep, stop) = (self.sleep, self.stop.clone());
        self.start_watcher(move |event| {
            let (client, correlator, stop) = (client.clone(), correlator.clone(), stop.clone());
            async move {
                record_to_sink(&client, &correlator, (*event).clone(), sleep, &stop).await;
            }
        });
    }

    #[track_caller]
    fn start_watcher<F, Fut>(&self, handle: F)
    where
        F: Fn(Arc<Event>) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        let (sender, mut receiver) = mpsc::channel::<Arc<Event>>(MAX_QUEUED_EVENTS);
        crate::sync::lock(&self.shared.watchers).push(sender);
        let task = tokio::spawn(async move {
            while let Some(event) = receiver.recv().await {
                handle(event).await;
            }
        });
        crate::sync::lock(&self.tasks).push(task);
    }

    /// Stops taking events, lets every watcher handle what is queued (retries are cut
    /// short), and returns when they are done (client-go's `Shutdown`, which does not
    /// wait).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: the broadcaster is shut down on the first poll; the watchers finish on
    /// their own.
    pub async fn shutdown(&self) {
        self.shared.closed.store(true, Ordering::Release);
        crate::sync::lock(&self.shared.watchers).clear();
        self.stop.cancel();
        let tasks: Vec<JoinHandle<()>> = std::mem::take(&mut *crate::sync::lock(&self.tasks));
        for task in tasks {
            let _ = task.await;
        }
    }
}

impl std::fmt::Debug for EventBroadcaster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventBroadcaster").finish_non_exhaustive()
    }
}

/// Correlates one event and writes it, retrying transport failures (client-go's
/// `recordToSink`).
async fn record_to_sink(
    client: &Client,
    correlator: &EventCorrelator,
    event: Event,
    sleep: Duration,
    stop: &CancellationToken,
) {
    let result = correlator.correlate(event);
    if result.skip {
        tracing::debug!(reason = ?result.event.reason, "the spam filter dropped an event");
        return;
    }
    let mut tries = 0;
    loop {
        if record_event(client, correlator, &result.event, result.patch.as_ref()).await {
            return;
        }
        tries += 1;
        if tries >= MAX_TRIES_PER_EVENT {
            tracing::error!(reason = ?result.event.reason, tries, "unable to write an event; giving up");
            return;
        }
        let wait = if tries == 1 {
            sleep.mul_f64(fastrand::f64())
        } else {
            sleep
        };
        if stop.is_cancelled() {
            return;
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// One attempt: PATCH a repeat (CREATE when it vanished), CREATE a new event. `true` when
/// done (written, or refused by the server for good); `false` to retry.
async fn record_event(
    client: &Client,
    correlator: &EventCorrelator,
    event: &Event,
    patch: Option<&serde_json::Value>,
) -> bool {
    let namespace = event.metadata.namespace.as_deref().unwrap_or("default");
    let api: Api<Event> = Api::namespaced(client.clone(), namespace);
    let name = event.metadata.name.as_deref().unwrap_or("");
    let mut written = None;
    if let Some(patch) = patch {
        match api
            .patch(name, &PatchParams::default(), &Patch::Strategic(patch))
            .await
        {
            Ok(updated) => written = Some(updated),
            Err(err) if err.api().is_some_and(|e| e.is_not_found()) => {}
            Err(err) => return gave_up_or_retry(&err),
        }
    }
    let written = match written {
        Some(written) => written,
        None => {
            let mut fresh = event.clone();
            fresh.metadata.resource_version = None;
            match api.create(&PostParams::default(), &fresh).await {
                Ok(created) => created,
                Err(err) => return gave_up_or_retry(&err),
            }
        }
    };
    correlator.update_state(&written);
    true
}

/// Server refusals are final (client-go does not retry them); transport errors are retried.
fn gave_up_or_retry(err: &crate::Error) -> bool {
    match err.api() {
        Some(api) if api.is_already_exists() => {
            tracing::debug!(error = %kubeclient_machinery::ErrorChain(err), "the event already exists");
            true
        }
        Some(_) => {
            tracing::error!(error = %kubeclient_machinery::ErrorChain(err), "the server refused an event (will not retry)");
            true
        }
        None => {
            tracing::warn!(error = %kubeclient_machinery::ErrorChain(err), "writing an event failed (will retry)");
            false
        }
    }
}
