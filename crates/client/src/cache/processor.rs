//! The shared processor: one listener per registered handler, each with its own buffer and
//! task, so a handler that is slow for a while never blocks the informer or the other
//! handlers. Buffers are bounded: once a listener holds [`LISTENER_CAPACITY`] undelivered
//! notifications, the informer stops popping its queue until the listener catches up, and
//! the full queue in turn slows the reading of the watch stream. A backlog therefore costs
//! time, never unbounded memory (client-go's buffers grow without limit).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::processor_listener::ProcessorListener;

/// Undelivered notifications one listener may hold before the informer waits for it.
pub const LISTENER_CAPACITY: usize = 256;

/// The smallest resync period a handler gets (client-go: 1 s).
pub const MINIMUM_RESYNC_PERIOD: Duration = Duration::from_secs(1);

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
#[doc(alias = "ResourceEventHandlerRegistration")]
pub struct EventHandlerRegistration {
    pub(crate) id: u64,
    pending_initial: Arc<AtomicUsize>,
    informer_synced: watch::Receiver<bool>,
    removed: CancellationToken,
    finished: CancellationToken,
}

impl EventHandlerRegistration {
    pub(crate) fn new<K>(
        listener: &ProcessorListener<K>,
        informer_synced: watch::Receiver<bool>,
    ) -> Self {
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
