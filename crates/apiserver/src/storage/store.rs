//! [`Store`]: the in-memory MVCC store.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use kubeclient_machinery::GroupResource;
use serde_json::Value;
use tokio::sync::{Notify, mpsc};

use super::object::{Prepared, set_resource_version};
use super::{Cacher, Change, ChangeKind, ListPage, StorageError, StoredObject, WriteError};

/// How many stripes serialize [`Store::update`] writers of the same key.
const UPDATE_STRIPES: usize = 64;

/// What a write decided to do with the object under its key.
#[derive(Debug)]
pub enum Write {
    /// Store a new object (the key must be free).
    Create(Value),
    /// Replace the stored object. If the result equals the stored object (a no-op write),
    /// nothing is stored, no revision is used and no event is sent.
    Update(Value),
    /// Remove the stored object.
    Delete,
    /// Do nothing (e.g. a dry run); the current object is returned.
    Unchanged,
}

/// The result of [`Store::write`].
#[derive(Debug)]
pub struct WriteOutcome {
    /// The object after the write (`None` after a delete or when there was none).
    pub object: Option<Arc<StoredObject>>,
    /// The object before the write.
    pub previous: Option<Arc<StoredObject>>,
    /// The recorded change; `None` for no-op and unchanged writes.
    pub change: Option<Arc<Change>>,
}

/// What a list reads.
pub struct ListRequest<'a> {
    /// `None`: the latest state. `Some(rv)`: the state exactly at `rv`.
    pub at: Option<u64>,
    /// Only keys with this prefix (`"ns/"` for one namespace), or all.
    pub prefix: &'a str,
    /// Start after this key (a continue token's position).
    pub start_after: Option<&'a str>,
    /// At most this many items; 0 for no limit.
    pub limit: usize,
    /// Which objects to return.
    pub filter: &'a dyn Fn(&StoredObject) -> bool,
}

/// Where a watch starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchFrom {
    /// At the current revision; with `initial`, the current objects come first.
    Now {
        /// Send the current objects as the initial state.
        initial: bool,
    },
    /// Every change after this revision.
    After(u64),
}

/// A registered watch: what to send first, then the live changes.
#[derive(Debug)]
pub struct WatchSubscription {
    /// The revision the watch started at.
    pub revision: u64,
    /// The initial state (only for `WatchFrom::Now { initial: true }`), in key order.
    pub initial: Vec<Arc<StoredObject>>,
    /// Changes from the history after the requested revision.
    pub backlog: Vec<Arc<Change>>,
    /// Live changes, in revision order. Ends when the watch is dropped by the server, or
    /// at once when this watcher fell too far behind (see [`WatcherLimits`]).
    pub changes: WatchQueue,
    /// Changes at or below this revision must be skipped.
    pub after: u64,
}

/// How far a watcher may fall behind before the server ends its watch (as the API
/// server's watch cache does with a watcher that blocks its dispatch): the client sees
/// its stream end cleanly and re-watches from the last resourceVersion it saw (or relists
/// on 410). Without a bound one stalled client holds every later change in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WatcherLimits {
    /// Changes queued for one watcher and not yet taken by its stream. Default 10,000.
    pub max_queued_changes: usize,
    /// Encoded bytes of those changes. Default 64 MiB.
    pub max_queued_bytes: usize,
}

impl Default for WatcherLimits {
    fn default() -> Self {
        WatcherLimits {
            max_queued_changes: 10_000,
            max_queued_bytes: 64 * 1024 * 1024,
        }
    }
}

/// What one watcher has queued; shared by the store (which adds) and the stream (which
/// takes).
#[derive(Debug, Default)]
struct Backlog {
    changes: AtomicU64,
    bytes: AtomicU64,
    /// Set when the store ended this watch for falling behind.
    overflowed: std::sync::atomic::AtomicBool,
}

/// The receiving end of a watcher's queue of changes.
#[derive(Debug)]
pub struct WatchQueue {
    receiver: mpsc::UnboundedReceiver<Arc<Change>>,
    backlog: Arc<Backlog>,
}

impl WatchQueue {
    fn took(&self, change: &Change) {
        self.backlog.changes.fetch_sub(1, Ordering::Relaxed);
        self.backlog
            .bytes
            .fetch_sub(change_bytes(change), Ordering::Relaxed);
    }

    /// The next change; `None` once the watch was ended by the server (dropped, or fallen
    /// too far behind: then the queued changes are discarded).
    pub async fn recv(&mut self) -> Option<Arc<Change>> {
        if self.overflowed() {
            return None;
        }
        let change = self.receiver.recv().await?;
        self.took(&change);
        if self.overflowed() {
            return None;
        }
        Some(change)
    }

    /// A change already queued, if any.
    pub fn try_recv(&mut self) -> Option<Arc<Change>> {
        if self.overflowed() {
            return None;
        }
        let change = self.receiver.try_recv().ok()?;
        self.took(&change);
        Some(change)
    }

    /// Whether the server ended this watch because it fell too far behind.
    pub fn overflowed(&self) -> bool {
        self.backlog.overflowed.load(Ordering::Relaxed)
    }
}

/// The bytes a queued change keeps alive (its encoded object).
fn change_bytes(change: &Change) -> u64 {
    let object = change.new.as_ref().or(change.prev.as_ref());
    object.map_or(0, |o| o.bytes.len() as u64)
}

/// The sending end of a watcher's queue, kept in its resource's table.
#[derive(Debug)]
struct Watcher {
    sender: mpsc::UnboundedSender<Arc<Change>>,
    backlog: Arc<Backlog>,
}

impl Watcher {
    /// Queues `change`; false when the watcher is gone or fell too far behind (then it
    /// is marked so its stream ends, and must be dropped).
    fn send(&self, change: &Arc<Change>, limits: &WatcherLimits) -> bool {
        let changes = self.backlog.changes.fetch_add(1, Ordering::Relaxed) + 1;
        let bytes = self
            .backlog
            .bytes
            .fetch_add(change_bytes(change), Ordering::Relaxed)
            + change_bytes(change);
        if changes > limits.max_queued_changes as u64 || bytes > limits.max_queued_bytes as u64 {
            self.backlog.overflowed.store(true, Ordering::Relaxed);
            tracing::info!(
                queued_changes = changes,
                queued_bytes = bytes,
                "ending a watch that fell too far behind; its client will re-watch"
            );
            return false;
        }
        self.sender.send(change.clone()).is_ok()
    }
}

/// A consistent view of one resource at the current revision.
#[derive(Debug)]
pub struct Snapshot {
    /// The revision.
    pub revision: u64,
    /// The objects, in key order.
    pub objects: Vec<Arc<StoredObject>>,
}

/// The in-memory MVCC store shared by every resource.
///
/// Invariants (guarded by `inner`):
/// - `revision` only grows; every stored change has a distinct `rv` in `1..=revision`, and
///   every object's `rv` is the `rv` of its last change.
/// - per table, `history` holds exactly the changes with `rv > history_start`, in order,
///   at most `history_window` of them and (but for the newest) at most `history_bytes` of
///   encoded objects, counted in `history_bytes` of the table.
/// - a key being written through `update` is held by its stripe for the whole write.
/// - a watcher registered at revision R has been sent every change with `rv > R`
///   (registration and fan-out happen under the same lock), or was ended for falling
///   more than [`WatcherLimits`] behind (then it is no longer in the table).
#[derive(Debug)]
pub struct Store {
    inner: Mutex<Inner>,
    /// Mirrors `inner.revision` for lock-free reads.
    revision: AtomicU64,
    /// Woken on every write, for reads waiting for a revision.
    written: Notify,
    /// Writers of one key through [`Store::update`] take its stripe, so they queue instead
    /// of computing in parallel and retrying.
    stripes: Box<[Mutex<()>]>,
    watcher_limits: WatcherLimits,
    /// Set when this store is the watch cache of a backend: writes then commit to the
    /// backend, and the backend's writes reach the store through the cacher's feed.
    cacher: Option<Cacher>,
    /// Signalled (with `inner`) when the feed applied a write, for writers waiting to
    /// see theirs.
    applied: Condvar,
    /// Told of every write the feed applied (see [`Store::observe_applied`]).
    observer: cache::Observer,
}

#[derive(Debug)]
struct Inner {
    revision: u64,
    /// Every revision at or below this one is compacted for all resources.
    compacted: u64,
    history_window: usize,
    /// The most encoded bytes of objects one resource's history may hold.
    history_bytes: usize,
    tables: HashMap<GroupResource, Table>,
}

#[derive(Debug, Default)]
struct Table {
    objects: BTreeMap<String, Arc<StoredObject>>,
    history: VecDeque<Arc<Change>>,
    /// The encoded bytes of the objects of `history`'s changes.
    history_bytes: u64,
    history_start: u64,
    watchers: Vec<Watcher>,
}

impl Inner {
    /// The object stored under `key`, if any.
    fn current(&self, resource: &GroupResource, key: &str) -> Option<Arc<StoredObject>> {
        self.tables
            .get(resource)
            .and_then(|table| table.objects.get(key))
            .cloned()
    }

    fn oldest_servable(&self, table: Option<&Table>) -> u64 {
        self.compacted.max(table.map_or(0, |t| t.history_start))
    }
}

impl Store {
    /// The default bound of one resource's history in encoded bytes of objects.
    pub const DEFAULT_HISTORY_BYTES: usize = 64 * 1024 * 1024;

    /// An empty store keeping the last `history_window` changes of each resource (and at
    /// most [`DEFAULT_HISTORY_BYTES`](Self::DEFAULT_HISTORY_BYTES) of their objects).
    pub fn new(history_window: usize) -> Self {
        Store::with_limits(
            history_window,
            Self::DEFAULT_HISTORY_BYTES,
            WatcherLimits::default(),
        )
    }

    /// An empty store with explicit bounds: at most `history_window` changes and
    /// `history_bytes` encoded bytes of objects kept per resource (the newest change is
    /// always kept), and `watcher_limits` per watcher.
    pub fn with_limits(
        history_window: usize,
        history_bytes: usize,
        watcher_limits: WatcherLimits,
    ) -> Self {
        Store {
            inner: Mutex::new(Inner {
                revision: 0,
                compacted: 0,
                history_window: history_window.max(1),
                history_bytes,
                tables: HashMap::new(),
            }),
            revision: AtomicU64::new(0),
            written: Notify::new(),
            stripes: (0..UPDATE_STRIPES).map(|_| Mutex::new(())).collect(),
            watcher_limits,
            cacher: None,
            applied: Condvar::new(),
            observer: cache::Observer::default(),
        }
    }

    /// The watch cache of the backend `cacher` opened, with the same bounds as
    /// [`with_limits`](Self::with_limits): filled with every object of the backend at its
    /// current revision, kept current by the backend's watch, and writing through to the
    /// backend (see [`Cacher`]). Its revisions are the backend's.
    ///
    /// # Errors
    ///
    /// What reading the backend's objects failed with.
    pub async fn over(
        cacher: Cacher,
        history_window: usize,
        history_bytes: usize,
        watcher_limits: WatcherLimits,
    ) -> Result<Arc<Store>, super::BackendError> {
        let (revision, entries) = cacher.load().await?;
        let mut store = Store::with_limits(history_window, history_bytes, watcher_limits);
        store.reload(revision, entries);
        store.cacher = Some(cacher);
        let store = Arc::new(store);
        if let Some(cacher) = &store.cacher {
            cacher.spawn(cache::feed(
                Arc::downgrade(&store),
                cacher.backend().clone(),
                revision,
            ));
        }
        Ok(store)
    }

    /// The backend this store caches, if any.
    pub fn backend(&self) -> Option<&Arc<dyn super::Backend>> {
        self.cacher.as_ref().map(Cacher::backend)
    }

    /// This (empty) store with its revisions starting after `revision`, and everything
    /// up to it compacted.
    #[must_use]
    pub fn starting_after(self, revision: u64) -> Self {
        {
            let mut inner = self.lock();
            inner.revision = revision;
            inner.compacted = revision;
        }
        self.revision.store(revision, Ordering::SeqCst);
        self
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave a half-applied write: writes mutate
        // only after every fallible step. So a poisoned lock is still consistent.
        crate::sync::lock(&self.inner)
    }

    /// The current revision.
    pub fn revision(&self) -> u64 {
        self.revision.load(Ordering::Acquire)
    }

    /// Waits until the revision reaches `rv`, at most `timeout`. Returns whether it did.
    pub async fn wait_for_revision(&self, rv: u64, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.written.notified();
            if self.revision() >= rv {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.revision() >= rv;
            }
        }
    }

    /// The stored object under `key`.
    pub fn get(&self, resource: &GroupResource, key: &str) -> Option<Arc<StoredObject>> {
        self.lock().tables.get(resource)?.objects.get(key).cloned()
    }

    /// Why the object under `key`, which this store (a watch cache) does not hold, cannot
    /// be read from its backend: the value stored there does not decode (the cache skipped
    /// it when it was loaded or written). `None` when there is nothing to report: no
    /// backend, no object, or one the cache will apply. A GET that found nothing asks, so
    /// that it answers 500 as kube-apiserver does, instead of 404.
    pub fn unreadable(&self, resource: &GroupResource, key: &str) -> Option<super::BackendError> {
        let cacher = self.cacher.as_ref()?;
        let backend = cacher.backend().clone();
        let (resource, key) = (resource.clone(), key.to_owned());
        match cacher.block_on(async move { backend.get(&resource, &key).await }) {
            Err(error @ super::BackendError::Decode { .. }) => Some(error),
            _ => None,
        }
    }

    /// Whether any object of a resource has a key with `prefix`.
    pub fn any_with_prefix(&self, resource: &GroupResource, prefix: &str) -> bool {
        let inner = self.lock();
        inner
            .tables
            .get(resource)
            .is_some_and(|table| prefixed(&table.objects, prefix, None).next().is_some())
    }

    /// Every object of a resource with a key prefix, at the current revision.
    pub fn snapshot(&self, resource: &GroupResource, prefix: &str) -> Snapshot {
        let inner = self.lock();
        let objects = inner
            .tables
            .get(resource)
            .map(|table| {
                prefixed(&table.objects, prefix, None)
                    .map(|(_, o)| o.clone())
                    .collect()
            })
            .unwrap_or_default();
        Snapshot {
            revision: inner.revision,
            objects,
        }
    }

    /// Applies one write atomically. `decide` sees the current object (if any) and says
    /// what to do; it runs under the store lock, so nothing changes in between. Keep it
    /// cheap: every other request waits meanwhile (use [`update`](Self::update) for
    /// writes that compute).
    ///
    /// Over a backend the decision runs on the cached object and commits to the backend
    /// only if that is still the stored state; as `decide` runs only once here, a write
    /// that loses that race fails with 409 Conflict (use [`update`](Self::update), which
    /// decides again).
    ///
    /// # Errors
    ///
    /// Whatever `decide` returns; nothing is written then. Over a backend, also what the
    /// backend failed with.
    pub fn write<E: WriteError>(
        &self,
        resource: &GroupResource,
        key: &str,
        decide: impl FnOnce(Option<&Arc<StoredObject>>) -> Result<Write, E>,
    ) -> Result<WriteOutcome, E> {
        if let Some(cacher) = &self.cacher {
            let mut once = Some(decide);
            return self.guaranteed_update(cacher, resource, key, |current| match once.take() {
                Some(decide) => decide(current),
                None => Err(E::storage_failed(guaranteed_update::lost(resource, key))),
            });
        }
        let inner = self.lock();
        let current = inner.current(resource, key);
        let ready = match prepare(current.as_ref(), decide(current.as_ref())?) {
            Ok(ready) => ready,
            Err(outcome) => return Ok(outcome),
        };
        Ok(self.commit(inner, resource, key, current, ready))
    }

    /// Applies one write whose decision is expensive (a patch of a large object, a
    /// server-side apply) without stalling the rest of the store: `decide` runs *outside*
    /// the store lock on a snapshot of the current object, then the result is committed
    /// under the lock only if the object is still that snapshot (compare-and-swap);
    /// otherwise `decide` runs again on the new state. Writers of the same key through
    /// this method queue on a per-key stripe, so they never compute in parallel only to
    /// retry. The encoding of the new object also happens outside the lock.
    ///
    /// Over a backend the same loop commits to the backend, conditional on the revision
    /// of the snapshot (kube-apiserver's `GuaranteedUpdate`), and decides again after a
    /// conflict with another server.
    ///
    /// # Errors
    ///
    /// Whatever `decide` returns; nothing is written then. Over a backend, also what the
    /// backend failed with.
    pub fn update<E: WriteError>(
        &self,
        resource: &GroupResource,
        key: &str,
        mut decide: impl FnMut(Option<&Arc<StoredObject>>) -> Result<Write, E>,
    ) -> Result<WriteOutcome, E> {
        if let Some(cacher) = &self.cacher {
            return self.guaranteed_update(cacher, resource, key, decide);
        }
        let _queue = self.stripe(resource, key);
        loop {
            let snapshot = self.get(resource, key);
            let ready = match prepare(snapshot.as_ref(), decide(snapshot.as_ref())?) {
                Ok(ready) => ready,
                Err(outcome) => return Ok(outcome),
            };
            let inner = self.lock();
            let current = inner.current(resource, key);
            let unchanged = match (&current, &snapshot) {
                (Some(now), Some(then)) => Arc::ptr_eq(now, then),
                (None, None) => true,
                _ => false,
            };
            if unchanged {
                return Ok(self.commit(inner, resource, key, current, ready));
            }
            // Another kind of write (a delete, a namespace cleanup) got in between.
            drop(inner);
        }
    }

    fn stripe(&self, resource: &GroupResource, key: &str) -> MutexGuard<'_, ()> {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        resource.hash(&mut hasher);
        key.hash(&mut hasher);
        let index = (hasher.finish() % UPDATE_STRIPES as u64) as usize;
        crate::sync::lock(&self.stripes[index])
    }

    /// Stores a decided write: the next revision, the history (bounded by count and
    /// bytes), the fan-out to watchers. Takes the guard to release it before waking.
    fn commit(
        &self,
        inner: MutexGuard<'_, Inner>,
        resource: &GroupResource,
        key: &str,
        current: Option<Arc<StoredObject>>,
        ready: Ready,
    ) -> WriteOutcome {
        let next_rv = inner.revision + 1;
        let (kind, new) = match ready {
            Ready::Create(prepared) => (
                ChangeKind::Created,
                Some(Arc::new(StoredObject::from_prepared(prepared, next_rv))),
            ),
            Ready::Update(prepared) => (
                ChangeKind::Updated,
                Some(Arc::new(StoredObject::from_prepared(prepared, next_rv))),
            ),
            Ready::Delete => (ChangeKind::Deleted, None),
        };
        let change = self.record(
            inner,
            resource,
            next_rv,
            kind,
            key,
            current.clone(),
            new.clone(),
        );
        self.written.notify_waiters();
        WriteOutcome {
            object: new,
            previous: current,
            change: Some(change),
        }
    }

    /// Records a change at revision `rv` (above the store's): the object, the history
    /// (bounded by count and bytes), the fan-out to watchers. Releases the guard.
    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        mut inner: MutexGuard<'_, Inner>,
        resource: &GroupResource,
        rv: u64,
        kind: ChangeKind,
        key: &str,
        current: Option<Arc<StoredObject>>,
        new: Option<Arc<StoredObject>>,
    ) -> Arc<Change> {
        inner.revision = rv;
        let (window, budget) = (inner.history_window, inner.history_bytes as u64);
        let change = Arc::new(Change::new(rv, kind, key.to_owned(), current, new.clone()));
        let table = inner.tables.entry(resource.clone()).or_default();
        match &new {
            Some(object) => {
                table.objects.insert(key.to_owned(), object.clone());
            }
            None => {
                table.objects.remove(key);
            }
        }
        table.history_bytes += change_bytes(&change);
        table.history.push_back(change.clone());
        while table.history.len() > window
            || (table.history_bytes > budget && table.history.len() > 1)
        {
            let Some(evicted) = table.history.pop_front() else {
                break;
            };
            table.history_bytes = table.history_bytes.saturating_sub(change_bytes(&evicted));
            table.history_start = evicted.rv;
        }
        let limits = self.watcher_limits;
        table
            .watchers
            .retain(|watcher| watcher.send(&change, &limits));
        self.revision.store(rv, Ordering::Release);
        drop(inner);
        change
    }

    /// Reads one page of a list.
    ///
    /// # Errors
    ///
    /// [`StorageError::Expired`] when `at` is older than the history (over a backend:
    /// older than the history the backend keeps, which it is then asked for);
    /// [`StorageError::TooLarge`] when it is newer than the store;
    /// [`StorageError::Backend`] when the backend, asked, failed.
    pub fn list(
        &self,
        resource: &GroupResource,
        request: &ListRequest<'_>,
    ) -> Result<ListPage, StorageError> {
        let inner = self.lock();
        let table = inner.tables.get(resource);
        let revision = request.at.unwrap_or(inner.revision);
        if revision > inner.revision {
            return Err(StorageError::TooLarge {
                requested: revision,
                current: inner.revision,
            });
        }
        let empty = BTreeMap::new();
        let objects = table.map_or(&empty, |t| &t.objects);
        if revision == inner.revision {
            return Ok(page(
                prefixed(objects, request.prefix, request.start_after),
                request,
                revision,
            ));
        }
        let oldest = inner.oldest_servable(table);
        if revision < oldest {
            if let Some(cacher) = &self.cacher {
                // Older than the watch cache holds: the backend may still have it (as
                // kube-apiserver's cacher hands exact lists to etcd).
                drop(inner);
                return cache::list_from_backend(cacher, resource, request, revision, oldest);
            }
            return Err(StorageError::Expired {
                requested: revision,
                oldest,
            });
        }
        // Rebuild the state at `revision`: every key changed since then takes the state it
        // had before its first later change.
        let mut at_revision: BTreeMap<String, Arc<StoredObject>> =
            prefixed(objects, request.prefix, None)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
        let mut seen = std::collections::HashSet::new();
        for change in table
            .iter()
            .flat_map(|t| t.history.iter())
            .filter(|c| c.rv > revision)
        {
            if !change.key.starts_with(request.prefix) || !seen.insert(change.key.as_str()) {
                continue;
            }
            match &change.prev {
                Some(prev) => at_revision.insert(change.key.clone(), prev.clone()),
                None => at_revision.remove(&change.key),
            };
        }
        Ok(page(
            prefixed(&at_revision, request.prefix, request.start_after),
            request,
            revision,
        ))
    }

    /// Registers a watch.
    ///
    /// # Errors
    ///
    /// [`StorageError::Expired`] when `from` is older than the history.
    pub fn watch(
        &self,
        resource: &GroupResource,
        prefix: &str,
        from: WatchFrom,
    ) -> Result<WatchSubscription, StorageError> {
        let mut inner = self.lock();
        let revision = inner.revision;
        let oldest = inner.oldest_servable(inner.tables.get(resource));
        let (sender, receiver) = mpsc::unbounded_channel();
        let queued = Arc::new(Backlog::default());
        let changes = WatchQueue {
            receiver,
            backlog: queued.clone(),
        };
        let table = inner.tables.entry(resource.clone()).or_default();
        let (initial, backlog, after) = match from {
            WatchFrom::Now { initial } => {
                let objects = if initial {
                    prefixed(&table.objects, prefix, None)
                        .map(|(_, o)| o.clone())
                        .collect()
                } else {
                    Vec::new()
                };
                (objects, Vec::new(), revision)
            }
            WatchFrom::After(rv) => {
                if rv < oldest {
                    return Err(StorageError::Expired {
                        requested: rv,
                        oldest,
                    });
                }
                let backlog = table
                    .history
                    .iter()
                    .filter(|change| change.rv > rv && change.key.starts_with(prefix))
                    .cloned()
                    .collect();
                (Vec::new(), backlog, rv)
            }
        };
        table.watchers.push(Watcher {
            sender,
            backlog: queued,
        });
        Ok(WatchSubscription {
            revision,
            initial,
            backlog,
            changes,
            after,
        })
    }

    /// Forgets all history: watches and exact lists from any earlier revision get 410.
    /// Over a backend, the backend's history goes too.
    pub fn compact(&self) {
        if let Some(cacher) = &self.cacher {
            let backend = cacher.backend().clone();
            if let Err(error) = cacher.block_on(async move { backend.compact().await }) {
                let error = kubeclient_machinery::ErrorChain(&error).to_string();
                tracing::warn!(%error, "cannot compact the storage backend");
            }
        }
        let mut inner = self.lock();
        inner.compacted = inner.revision;
        let revision = inner.revision;
        for table in inner.tables.values_mut() {
            table.history.clear();
            table.history_bytes = 0;
            table.history_start = revision;
        }
    }

    /// Ends every open watch (their streams finish cleanly; clients re-watch).
    pub fn drop_watchers(&self) {
        for table in self.lock().tables.values_mut() {
            table.watchers.clear();
        }
    }

    /// Ends the watches of one resource (e.g. when its CRD is deleted).
    pub fn drop_watchers_of(&self, resource: &GroupResource) {
        if let Some(table) = self.lock().tables.get_mut(resource) {
            table.watchers.clear();
        }
    }

    /// The number of open watches of a resource (for tests and metrics).
    pub fn watcher_count(&self, resource: &GroupResource) -> usize {
        self.lock().tables.get_mut(resource).map_or(0, |table| {
            table.watchers.retain(|watcher| !watcher.sender.is_closed());
            table.watchers.len()
        })
    }
}

/// A write decided and encoded, ready to commit.
enum Ready {
    Create(Prepared),
    Update(Prepared),
    Delete,
}

/// Turns a decision into a ready write, or the outcome of a write that stores nothing
/// (unchanged, a no-op update, a delete of nothing). Encodes the new object.
fn prepare(current: Option<&Arc<StoredObject>>, decision: Write) -> Result<Ready, WriteOutcome> {
    let nothing = |current: Option<&Arc<StoredObject>>| WriteOutcome {
        object: current.cloned(),
        previous: current.cloned(),
        change: None,
    };
    match decision {
        Write::Unchanged => Err(nothing(current)),
        Write::Create(value) => Ok(Ready::Create(Prepared::new(value))),
        Write::Update(mut value) => {
            if let Some(current) = current {
                set_resource_version(&mut value, current.rv);
                if value == current.value {
                    return Err(nothing(Some(current)));
                }
            }
            Ok(Ready::Update(Prepared::new(value)))
        }
        Write::Delete if current.is_none() => Err(nothing(None)),
        Write::Delete => Ok(Ready::Delete),
    }
}

/// The entries with `prefix`, starting after `start_after` when given.
fn prefixed<'a>(
    objects: &'a BTreeMap<String, Arc<StoredObject>>,
    prefix: &'a str,
    start_after: Option<&'a str>,
) -> impl Iterator<Item = (&'a String, &'a Arc<StoredObject>)> + 'a {
    let lower = match start_after {
        Some(key) if key >= prefix => Bound::Excluded(key),
        _ => Bound::Included(prefix),
    };
    objects
        .range::<str, _>((lower, Bound::Unbounded))
        .take_while(move |(key, _)| key.starts_with(prefix))
}

fn page<'a>(
    entries: impl Iterator<Item = (&'a String, &'a Arc<StoredObject>)>,
    request: &ListRequest<'_>,
    revision: u64,
) -> ListPage {
    let mut items = Vec::new();
    let mut continue_after = None;
    let mut remaining = 0u64;
    let mut last_key: Option<&String> = None;
    let mut entries = entries.peekable();
    while let Some((key, object)) = entries.next() {
        if request.limit > 0 && items.len() == request.limit {
            // Full page: there is more only if a later entry exists.
            continue_after = last_key.cloned();
            remaining = 1 + entries.count() as u64;
            break;
        }
        last_key = Some(key);
        if (request.filter)(object) {
            items.push(object.clone());
        }
    }
    ListPage {
        revision,
        items,
        continue_after,
        remaining,
    }
}

mod cache;
pub use cache::AppliedObserver;
mod guaranteed_update;
#[cfg(test)]
mod tests;
