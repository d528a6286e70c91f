//! The shared processor: one listener per registered handler, each with its own unbounded
//! buffer and task, so a slow handler never blocks the informer or the other handlers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::handler::{Notification, ResourceEventHandler};

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
    pub(crate) removed: Arc<AtomicBool>,
}

impl<K> Listener<K> {
    /// Queues a notification (never blocks); `initial` marks an initial-list add.
    pub(crate) fn send(&self, notification: Notification<K>, initial: bool) {
        if initial {
            self.pending_initial.fetch_add(1, Ordering::SeqCst);
        }
        if self.sender.send((notification, initial)).is_err() && initial {
            self.pending_initial.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Where a listener's notifications go.
pub(crate) enum Sink<K> {
    /// A handler called by the listener's own task.
    Handler(Arc<dyn ResourceEventHandler<K>>),
    /// A channel read by the user (the stream API).
    Channel(mpsc::UnboundedSender<Notification<K>>),
}

/// Creates a listener and starts its delivery task.
pub(crate) fn spawn_listener<K: Send + Sync + 'static>(
    id: u64,
    sink: Sink<K>,
    requested_resync: Duration,
    resync_period: Duration,
) -> Listener<K> {
    let (sender, mut receiver) = mpsc::unbounded_channel::<(Notification<K>, bool)>();
    let pending_initial = Arc::new(AtomicUsize::new(0));
    let removed = Arc::new(AtomicBool::new(false));
    let pending = pending_initial.clone();
    let gone = removed.clone();
    tokio::spawn(async move {
        while let Some((notification, initial)) = receiver.recv().await {
            if gone.load(Ordering::SeqCst) {
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
                    if channel.send(notification).is_err() {
                        break;
                    }
                }
            }
            if initial {
                pending.fetch_sub(1, Ordering::SeqCst);
            }
        }
    });
    Listener {
        id,
        sender,
        pending_initial,
        requested_resync,
        resync_period,
        next_resync: Instant::now() + resync_period,
        resyncing: false,
        removed,
    }
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
}

impl EventHandlerRegistration {
    pub(crate) fn new(
        id: u64,
        pending_initial: Arc<AtomicUsize>,
        informer_synced: watch::Receiver<bool>,
    ) -> Self {
        EventHandlerRegistration {
            id,
            pending_initial,
            informer_synced,
        }
    }

    /// True once the informer has synced and this handler has received every object of
    /// the initial list (or of the cache replayed when it was added late).
    #[must_use]
    pub fn has_synced(&self) -> bool {
        *self.informer_synced.borrow() && self.pending_initial.load(Ordering::SeqCst) == 0
    }
}
