//! [`PendingNotification`]: a notification on its way to a listener, whose old object may
//! still be in the cache's stored form.
//!
//! With a compact cache, the object an update replaces is stored compressed. Decoding it
//! on the informer's process loop would put a full decode on the path every watch event
//! takes; instead the stored form travels to the listeners, and the first listener that
//! delivers the update decodes it on its own task (so on another core than the process
//! loop) and shares the result with the others. Handlers still receive decoded objects.

use std::sync::{Arc, OnceLock};

use kubeclient_machinery::Object;

use super::handler::Notification;
use super::representation::{SharedOrCompact, StoredObject};

/// A notification queued for a listener.
pub(crate) enum PendingNotification<K> {
    /// Ready to deliver.
    Ready(Notification<K>),
    /// An update whose old object is decoded when it is delivered.
    Update { old: Arc<StoredOld<K>>, new: Arc<K> },
}

impl<K> Clone for PendingNotification<K> {
    fn clone(&self) -> Self {
        match self {
            PendingNotification::Ready(notification) => {
                PendingNotification::Ready(notification.clone())
            }
            PendingNotification::Update { old, new } => PendingNotification::Update {
                old: Arc::clone(old),
                new: Arc::clone(new),
            },
        }
    }
}

impl<K> From<Notification<K>> for PendingNotification<K> {
    fn from(notification: Notification<K>) -> Self {
        PendingNotification::Ready(notification)
    }
}

impl<K: Object> PendingNotification<K> {
    /// An update from the object `previous` stored under the key to `new`: ready at once
    /// when `previous` is shared, decoded on delivery when it is compact.
    pub(crate) fn update(
        repr: &SharedOrCompact<K>,
        previous: StoredObject<K>,
        new: Arc<K>,
    ) -> Self {
        match previous {
            StoredObject::Shared(old) => {
                PendingNotification::Ready(Notification::Update { old, new })
            }
            stored @ StoredObject::Compact(_) => PendingNotification::Update {
                old: Arc::new(StoredOld {
                    repr: repr.clone(),
                    stored,
                    decoded: OnceLock::new(),
                }),
                new,
            },
        }
    }

    /// The notification to deliver; `None` when the old object of an update cannot be
    /// decoded (logged by the representation; the update is skipped, the cache is right).
    pub(crate) fn resolve(self) -> Option<Notification<K>> {
        match self {
            PendingNotification::Ready(notification) => Some(notification),
            PendingNotification::Update { old, new } => {
                let old = old.get()?;
                Some(Notification::Update { old, new })
            }
        }
    }
}

/// The stored form of an update's old object, decoded once by whichever listener needs it
/// first.
pub(crate) struct StoredOld<K> {
    repr: SharedOrCompact<K>,
    stored: StoredObject<K>,
    decoded: OnceLock<Option<Arc<K>>>,
}

impl<K: Object> StoredOld<K> {
    fn get(&self) -> Option<Arc<K>> {
        self.decoded
            .get_or_init(|| self.repr.read(&self.stored))
            .clone()
    }
}
