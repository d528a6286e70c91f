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
    ///
    /// Without `reads_old` (the handler never looks at an update's old object), a stored
    /// old object is not decoded: the new object stands in for it, unless another listener
    /// decoded the old one already.
    pub(crate) fn resolve(self, reads_old: bool) -> Option<Notification<K>> {
        match self {
            PendingNotification::Ready(notification) => Some(notification),
            PendingNotification::Update { old, new } if !reads_old => {
                let old = old.decoded().unwrap_or_else(|| Arc::clone(&new));
                Some(Notification::Update { old, new })
            }
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

    /// The old object if a listener has decoded it already.
    fn decoded(&self) -> Option<Arc<K>> {
        self.decoded.get().cloned().flatten()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::ConfigMap;
    use kubeclient_machinery::Object;

    use super::PendingNotification;
    use crate::cache::compact::CompactRepr;
    use crate::cache::handler::Notification;
    use crate::cache::representation::{Representation, SharedOrCompact};

    fn config_map(value: &str) -> Arc<ConfigMap> {
        let mut cm = ConfigMap::default();
        cm.meta_mut().name = Some("a".into());
        cm.meta_mut().resource_version = Some(value.into());
        cm.data = Some([("k".to_owned(), value.to_owned())].into());
        Arc::new(cm)
    }

    fn old_and_new(notification: Option<Notification<ConfigMap>>) -> (String, String) {
        match notification {
            Some(Notification::Update { old, new }) => (
                old.resource_version().to_owned(),
                new.resource_version().to_owned(),
            ),
            other => panic!("an update, not {other:?}"),
        }
    }

    #[test]
    fn a_compact_old_object_is_decoded_only_for_listeners_that_read_it() {
        let repr = SharedOrCompact::Compact(CompactRepr::<ConfigMap>::new());
        let stored = repr.to_stored(config_map("1"));
        let pending = PendingNotification::update(&repr, stored, config_map("2"));
        // A listener that never reads old objects gets the new one in its place...
        assert_eq!(
            old_and_new(pending.clone().resolve(false)),
            ("2".into(), "2".into())
        );
        // ... one that reads them gets the real old object ...
        assert_eq!(
            old_and_new(pending.clone().resolve(true)),
            ("1".into(), "2".into())
        );
        // ... and once it has been decoded, every listener shares it.
        assert_eq!(
            old_and_new(pending.resolve(false)),
            ("1".into(), "2".into())
        );
    }

    #[test]
    fn a_shared_old_object_is_always_the_real_one() {
        let repr = SharedOrCompact::<ConfigMap>::Shared;
        let stored = repr.to_stored(config_map("1"));
        let pending = PendingNotification::update(&repr, stored, config_map("2"));
        assert_eq!(
            old_and_new(pending.resolve(false)),
            ("1".into(), "2".into())
        );
    }
}
