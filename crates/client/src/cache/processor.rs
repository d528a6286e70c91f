//! The shared processor: one listener per registered handler, each with its own buffer and
//! task, so a handler that is slow for a while never blocks the informer or the other
//! handlers. Buffers are bounded: once a listener holds [`LISTENER_CAPACITY`] undelivered
//! notifications, the informer stops popping its queue until the listener catches up, and
//! the full queue in turn slows the reading of the watch stream. A backlog therefore costs
//! time, never unbounded memory (client-go's buffers grow without limit).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{Notify, mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::handler::{Notification, ResourceEventHandler};

/// Undelivered notifications one listener may hold before the informer waits for it.
pub const LISTENER_CAPACITY: usize = 256;

/// Registration ids are unique across every informer of the process, so a registration
/// passed to the wrong informer never matches one of its handlers.
static NEXT_REGISTRATION_ID: AtomicU64 = AtomicU64::new(1);

/// The smallest resync period a handler gets (client-go: 1 s).
pub const MINIMUM_RESYNC_PERIOD: Duration = Duration::from_secs(1);

/// One registered handler.
///
/// Invariant: `pending_initial` counts initial-list adds sent to this listener and not yet
/// delivered.
pub(crate) struct Listener<K> {
    pub(crate) id: u64,
    sender: mpsc::UnboundedSender<(Notification<K>, bool)>,
    pub(crate) pending_initial: Arc<AtomicUsize>,
    /// The period the handler asked for.
    pub(crate) requested_resync: Duration,
    /// The period it gets.
    pub(crate) resync_period: Duration,
    pub(crate) next_resync: Instant,
    /// Set by the last `should_resync` check: sync updates go to this listener.
    pub(crate) resyncing: bool,
    /// Cancelled when the handler is removed or its informer stops: nothing more is
    /// delivered, and a delivery waiting for a full notification stream gives up.
    pub(crate) removed: CancellationToken,
    /// Cancelled when the delivery task has ended: the handler will be called no more.
    finished: CancellationToken,
    /// Notifications sent and not yet delivered.
    queued: Arc<AtomicUsize>,
}

impl<K> Listener<K> {
    /// Queues a notification (never blocks); `initial` marks an initial-list add, which
    /// the registration's `has_synced` waits for.
    pub(crate) fn send(&self, notification: Notification<K>, initial: bool) {
        if initial {
            self.pending_initial.fetch_add(1, Ordering::SeqCst);
        }
        self.queued.fetch_add(1, Ordering::SeqCst);
        if self.sender.send((notification, initial)).is_err() {
            self.queued.fetch_sub(1, Ordering::SeqCst);
            if initial {
                self.pending_initial.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }

    /// Whether this listener's buffer is full (a removed listener never is).
    pub(crate) fn is_full(&self) -> bool {
        !self.removed.is_cancelled() && self.queued.load(Ordering::SeqCst) >= LISTENER_CAPACITY
    }
}

/// Where a listener's notifications go.
pub(crate) enum Sink<K> {
    /// A handler called by the listener's own task.
    Handler(Arc<dyn ResourceEventHandler<K>>),
    /// A channel read by the user (the stream API).
    Channel(mpsc::Sender<Notification<K>>),
}

/// Creates a listener and starts its delivery task; `room` is notified each time the
/// listener delivers a notification below its capacity, or ends.
pub(crate) fn spawn_listener<K: Send + Sync + 'static>(
    sink: Sink<K>,
    requested_resync: Duration,
    resync_period: Duration,
    room: Arc<Notify>,
) -> Listener<K> {
    let id = NEXT_REGISTRATION_ID.fetch_add(1, Ordering::Relaxed);
    let (sender, mut receiver) = mpsc::unbounded_channel::<(Notification<K>, bool)>();
    let pending_initial = Arc::new(AtomicUsize::new(0));
    let removed = CancellationToken::new();
    let finished = CancellationToken::new();
    let queued = Arc::new(AtomicUsize::new(0));
    let pending = pending_initial.clone();
    let gone = removed.clone();
    let done = finished.clone();
    let in_buffer = queued.clone();
    tokio::spawn(async move {
        // However the task ends, say so (a remover may be waiting for it).
        let _done = done.drop_guard();
        while let Some((notification, initial)) = receiver.recv().await {
            if gone.is_cancelled() {
                break;
            }
            match &sink {
                Sink::Handler(handler) => {
                    let handler = handler.clone();
                    let delivered = notification.clone();
                    // A panicking handler must not take the informer down: isolate the call.
                    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        delivered.deliver(handler.as_ref())
                    }));
                    if outcome.is_err() {
                        tracing::error!("an event handler panicked; the notification was skipped");
                    }
                }
                Sink::Channel(channel) => {
                    let sent = tokio::select! {
                        biased;
                        () = gone.cancelled() => false,
                        sent = channel.send(notification) => sent.is_ok(),
                    };
                    if !sent {
                        break;
                    }
                }
            }
            if initial {
                pending.fetch_sub(1, Ordering::SeqCst);
            }
            if in_buffer.fetch_sub(1, Ordering::SeqCst) <= LISTENER_CAPACITY {
                room.notify_one();
            }
        }
        // Nothing will drain this buffer any more: never let the informer wait for it.
        gone.cancel();
        room.notify_one();
    });
    Listener {
        id,
        sender,
        pending_initial,
        requested_resync,
        resync_period,
        next_resync: resync_deadline(Instant::now(), resync_period),
        resyncing: false,
        removed,
        finished,
        queued,
    }
}

/// When a resync `period` after `now` is due. A period too long for the clock (a user's
/// `Duration::MAX`) means a year from now, never an overflow.
pub(crate) fn resync_deadline(now: Instant, period: Duration) -> Instant {
    now.checked_add(period)
        .or_else(|| now.checked_add(Duration::from_secs(365 * 24 * 3600)))
        .unwrap_or(now)
}

/// The effective resync period of a handler (client-go's `determineResyncPeriod`).
pub(crate) fn determine_resync_period(requested: Duration, check: Duration) -> Duration {
    if requested.is_zero() || check.is_zero() {
        Duration::ZERO
    } else if requested < check {
        check
    } else {
        requested
    }
}

/// A handle to one registered handler (client-go's `ResourceEventHandlerRegistration`).
#[derive(Clone, Debug)]
pub struct EventHandlerRegistration {
    pub(crate) id: u64,
    pending_initial: Arc<AtomicUsize>,
    informer_synced: watch::Receiver<bool>,
    removed: CancellationToken,
    finished: CancellationToken,
}

impl EventHandlerRegistration {
    pub(crate) fn new<K>(listener: &Listener<K>, informer_synced: watch::Receiver<bool>) -> Self {
        EventHandlerRegistration {
            id: listener.id,
            pending_initial: listener.pending_initial.clone(),
            informer_synced,
            removed: listener.removed.clone(),
            finished: listener.finished.clone(),
        }
    }

    /// Whether the handler is still registered (false once removed, or once its informer
    /// has stopped).
    #[must_use]
    pub fn is_registered(&self) -> bool {
        !self.removed.is_cancelled()
    }

    /// Waits until the handler will be called no more: its delivery task has ended.
    pub(crate) async fn finished(&self) {
        self.finished.cancelled().await;
    }

    /// True once the informer has synced and this handler has *handled* every object of
    /// the initial list (or of the cache replayed when it was added late): its callback
    /// returned for each, as client-go's `HasSynced` of a registration.
    #[must_use]
    pub fn has_synced(&self) -> bool {
        *self.informer_synced.borrow() && self.pending_initial.load(Ordering::SeqCst) == 0
    }
}
