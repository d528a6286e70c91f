//! [`ProcessorListener`]: one registered handler, its bounded buffer and the task that
//! delivers to it (client-go's `processorListener`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use kubeclient_machinery::Object;

use super::handler::{Notification, ResourceEventHandler};
use super::pending_notification::PendingNotification;
use super::processor::{LISTENER_CAPACITY, resync_deadline};

/// Registration ids are unique across every informer of the process, so a registration
/// passed to the wrong informer never matches one of its handlers.
static NEXT_REGISTRATION_ID: AtomicU64 = AtomicU64::new(1);

/// One registered handler with its buffer and delivery task (client-go's
/// `processorListener`).
///
/// Invariant: `pending_initial` counts initial-list adds sent to this listener and not yet
/// delivered.
pub(crate) struct ProcessorListener<K> {
    pub(crate) id: u64,
    sender: mpsc::UnboundedSender<(PendingNotification<K>, bool)>,
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
    pub(crate) finished: CancellationToken,
    /// Notifications sent and not yet delivered.
    queued: Arc<AtomicUsize>,
}

impl<K> ProcessorListener<K> {
    /// Queues a notification (never blocks); `initial` marks an initial-list add, which
    /// the registration's `has_synced` waits for.
    pub(crate) fn send(&self, notification: PendingNotification<K>, initial: bool) {
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
pub(crate) fn spawn_listener<K: Object + Send + Sync + 'static>(
    sink: Sink<K>,
    requested_resync: Duration,
    resync_period: Duration,
    room: Arc<Notify>,
) -> ProcessorListener<K> {
    let id = NEXT_REGISTRATION_ID.fetch_add(1, Ordering::Relaxed);
    let (sender, mut receiver) = mpsc::unbounded_channel::<(PendingNotification<K>, bool)>();
    let pending_initial = Arc::new(AtomicUsize::new(0));
    let removed = CancellationToken::new();
    let finished = CancellationToken::new();
    let queued = Arc::new(AtomicUsize::new(0));
    let pending = pending_initial.clone();
    let gone = removed.clone();
    let done = finished.clone();
    let in_buffer = queued.clone();
    // A stream's reader may look at every old object; a handler says whether it does.
    let reads_old = match &sink {
        Sink::Handler(handler) => handler.reads_old_object(),
        Sink::Channel(_) => true,
    };
    tokio::spawn(async move {
        // However the task ends, say so (a remover may be waiting for it).
        let _done = done.drop_guard();
        while let Some((pending_notification, initial)) = receiver.recv().await {
            if gone.is_cancelled() {
                break;
            }
            match (&sink, pending_notification.resolve(reads_old)) {
                (_, None) => {}
                (Sink::Handler(handler), Some(notification)) => {
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
                (Sink::Channel(channel), Some(notification)) => {
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
    ProcessorListener {
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
