//! The store as a watch cache: how the feed (on the [`Cacher`](super::Cacher)'s runtime) fills it and
//! applies the backend's writes at the backend's revisions, and how a writer waits until
//! the feed applied its write.

use std::sync::{Arc, OnceLock, PoisonError, Weak};
use std::time::Duration;

use kubeclient_machinery::GroupResource;

use super::super::cacher::load_everything;
use super::super::{
    Backend, BackendError, Cacher, Change, Entry, Event, ListOptions, ListPage, StorageError,
};
use super::{ChangeKind, Inner, ListRequest, Store, StoredObject, Table};

/// How long the feed waits before it re-watches after a failure (doubling up to 5 s).
const REWATCH_FIRST: Duration = Duration::from_millis(100);
const REWATCH_MAX: Duration = Duration::from_secs(5);

/// What is told of each write the feed applied: its resource and change.
pub type AppliedObserver = Box<dyn Fn(&GroupResource, &Change) + Send + Sync>;

/// The store's [`AppliedObserver`], once set.
#[derive(Default)]
pub(super) struct Observer(OnceLock<AppliedObserver>);

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Observer")
            .field(&self.0.get().is_some())
            .finish()
    }
}

impl Store {
    /// Sets who is told of every write the feed applies to this watch cache: writes of
    /// other servers over the same backend as well as this server's own (which the
    /// caller also learns of where it writes). This is how a server's controllers are
    /// woken by another server's writes. Called on the feed's thread, outside the
    /// store's lock: it must be quick. Only the first observer set is kept; a store
    /// over no backend never calls it.
    ///
    /// ```
    /// use kubeclient_apiserver::storage::Store;
    ///
    /// let store = Store::new(100);
    /// store.observe_applied(Box::new(|resource, change| {
    ///     println!("{resource}: {:?} {}", change.kind, change.key);
    /// }));
    /// ```
    pub fn observe_applied(&self, observer: AppliedObserver) {
        let _ = self.observer.0.set(observer);
    }

    /// Applies one write of the backend, at its revision. Writes at or below what the
    /// store already applied (replayed after a re-watch) change nothing.
    pub(crate) fn apply(&self, event: Event) {
        let inner = self.lock();
        let current = inner.current(&event.resource, &event.key);
        let replayed = event.rv < inner.revision
            || (event.rv == inner.revision
                && current.as_ref().map(|o| o.rv) == event.object.as_ref().map(|o| o.rv));
        if replayed {
            return;
        }
        let kind = match (&current, &event.object) {
            (_, None) if current.is_none() => {
                // A delete of what the store never had: only the revision moves.
                self.advance(inner, event.rv);
                return;
            }
            (_, None) => ChangeKind::Deleted,
            (None, Some(_)) => ChangeKind::Created,
            (Some(_), Some(_)) => ChangeKind::Updated,
        };
        let change = self.record(
            inner,
            &event.resource,
            event.rv,
            kind,
            &event.key,
            current,
            event.object,
        );
        self.woken();
        if let Some(observe) = self.observer.0.get() {
            observe(&event.resource, &change);
        }
    }

    /// Moves the revision to `rv` without a change.
    fn advance(&self, mut inner: std::sync::MutexGuard<'_, Inner>, rv: u64) {
        inner.revision = rv;
        self.revision
            .store(rv, std::sync::atomic::Ordering::Release);
        drop(inner);
        self.woken();
    }

    /// Wakes whoever waits for a revision or a key.
    fn woken(&self) {
        self.written.notify_waiters();
        self.applied.notify_all();
    }

    /// Replaces the whole content with `entries` at `revision`, history compacted up to
    /// it, ending every watch (their clients re-watch, and get 410 for older revisions).
    pub(crate) fn reload(&self, revision: u64, entries: Vec<Entry>) {
        let mut inner = self.lock();
        for table in inner.tables.values_mut() {
            table.watchers.clear();
        }
        inner.tables.clear();
        for entry in entries {
            let table: &mut Table = inner.tables.entry(entry.resource).or_default();
            table.history_start = revision;
            table.objects.insert(entry.key, entry.object);
        }
        inner.revision = revision;
        inner.compacted = revision;
        self.revision
            .store(revision, std::sync::atomic::Ordering::Release);
        drop(inner);
        self.woken();
    }

    /// Waits (blocking, at most `timeout`) until `done` holds for the store; whether it
    /// does.
    pub(super) fn wait_until(&self, timeout: Duration, done: impl Fn(&Inner) -> bool) -> bool {
        let inner = self.lock();
        let (inner, _) = self
            .applied
            .wait_timeout_while(inner, timeout, |inner| !done(inner))
            .unwrap_or_else(PoisonError::into_inner);
        done(&inner)
    }

    /// The revision of the object under `key` (`None`: no object).
    pub(super) fn revision_of(inner: &Inner, resource: &GroupResource, key: &str) -> Option<u64> {
        inner
            .current(resource, key)
            .as_ref()
            .map(|o: &Arc<StoredObject>| o.rv)
    }
}

/// One page of a list at `revision`, older than the cache's history (which starts at
/// `oldest`), read from the backend: 410 only when the backend compacted it too.
pub(super) fn list_from_backend(
    cacher: &Cacher,
    resource: &GroupResource,
    request: &ListRequest<'_>,
    revision: u64,
    oldest: u64,
) -> Result<ListPage, StorageError> {
    let backend = cacher.backend().clone();
    let owned = (
        resource.clone(),
        request.prefix.to_owned(),
        request.start_after.map(str::to_owned),
        request.limit,
    );
    let read = cacher.block_on(async move {
        let (resource, prefix, start_after, limit) = owned;
        let options = ListOptions {
            prefix: &prefix,
            at: Some(revision),
            start_after: start_after.as_deref(),
            limit,
        };
        backend.list(&resource, options).await
    });
    match read {
        Ok(mut page) => {
            // The limit counted the keys read, as the cache's pages do; the filter picks.
            page.items.retain(|object| (request.filter)(object));
            Ok(page)
        }
        Err(BackendError::Expired { .. }) => Err(StorageError::Expired {
            requested: revision,
            oldest,
        }),
        Err(BackendError::TooLarge { requested, current }) => {
            Err(StorageError::TooLarge { requested, current })
        }
        Err(error) => Err(StorageError::Backend(Box::new(error.status(resource, "")))),
    }
}

/// Applies every write of the backend after `applied` to the store, until the store is
/// gone.
pub(super) async fn feed(store: Weak<Store>, backend: Arc<dyn Backend>, mut applied: u64) {
    let mut pause = REWATCH_FIRST;
    loop {
        match backend.watch_everything(applied).await {
            Ok(mut stream) => {
                while let Some(item) = stream.next().await {
                    let Some(store) = store.upgrade() else {
                        return;
                    };
                    match item {
                        Ok(event) => {
                            applied = applied.max(event.rv);
                            store.apply(event);
                            pause = REWATCH_FIRST;
                        }
                        Err(BackendError::Expired { .. }) => {
                            applied = reload(&store, &backend, applied).await;
                            break;
                        }
                        Err(error) => {
                            let error = kubeclient_machinery::ErrorChain(&error).to_string();
                            tracing::warn!(%error, "the storage backend's watch broke; re-watching");
                            break;
                        }
                    }
                }
            }
            Err(BackendError::Expired { .. }) => {
                let Some(store) = store.upgrade() else {
                    return;
                };
                applied = reload(&store, &backend, applied).await;
            }
            Err(error) => {
                let error = kubeclient_machinery::ErrorChain(&error).to_string();
                tracing::warn!(%error, "cannot watch the storage backend; retrying");
            }
        }
        if store.strong_count() == 0 {
            return;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(REWATCH_MAX);
    }
}

/// Replaces the store's content with the backend's after its history was compacted past
/// what the store applied; the revision to watch after (the old one when the load fails).
async fn reload(store: &Store, backend: &Arc<dyn Backend>, applied: u64) -> u64 {
    match load_everything(backend.clone()).await {
        Ok((revision, entries)) => {
            tracing::warn!(
                applied,
                revision,
                "the storage backend compacted past the watch cache; reloaded it (open watches end)"
            );
            store.reload(revision, entries);
            revision
        }
        Err(error) => {
            let error = kubeclient_machinery::ErrorChain(&error).to_string();
            tracing::warn!(%error, "cannot reload the watch cache; retrying");
            applied
        }
    }
}
