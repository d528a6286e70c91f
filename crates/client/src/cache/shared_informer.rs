//! [`SharedIndexInformer`]: a reflector, an in-order queue, an indexed cache and a set of
//! handlers, each fed through its own buffer. One informer per resource can serve a whole
//! program.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::Duration;

use futures_util::Stream;
use kubeclient_machinery::{DeletedFinalStateUnknown, DeletedObject, Object};
use tokio::sync::{Notify, mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::compact::CompactRepr;
use super::handler::{Notification, ResourceEventHandler};
use super::list_watch::ListerWatcher;
use super::pending_notification::PendingNotification;
use super::processor::{
    EventHandlerRegistration, LISTENER_CAPACITY, MINIMUM_RESYNC_PERIOD, determine_resync_period,
    resync_deadline,
};
use super::processor_listener::{ProcessorListener, Sink, spawn_listener};
use super::reflector::{Reflector, ReflectorOptions, WatchErrorHandler};
use super::representation::SharedOrCompact;
use super::{
    Cache, CacheOptions, Delta, Deltas, Indexers, KnownObjects, Queue, RealFIFO, RealFifoOptions,
    ReplacedAllInfo, Store, TransformFunc,
};

/// Why an informer refused a change of its set-up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InformerError {
    /// The setting can only be changed before [`SharedIndexInformer::run`]; set it first.
    #[error("the informer has already started; change this before running it")]
    AlreadyStarted,
    /// The informer has stopped, so a new handler would never hear anything.
    #[error("the handler was not added because the informer has stopped")]
    Stopped,
}

/// Options of a [`SharedIndexInformer`].
#[must_use]
pub struct InformerOptions<K> {
    /// A name for logs.
    pub name: String,
    /// The default resync period of handlers (zero: never resync, whatever handlers ask).
    pub resync_period: Duration,
    /// Index functions (the `namespace` index is always added).
    pub indexers: Indexers<K>,
    /// Reflector options (resync fields are set by the informer).
    pub reflector: ReflectorOptions,
    /// Run the queue in its atomic mode (client-go's `AtomicFIFO` feature gate): a relist
    /// reaches the cache as one replacement, and handlers hear its deletions, then its
    /// adds and updates, only after the whole list is in the cache. Default false, as in
    /// client-go.
    #[doc(alias = "AtomicFIFO")]
    pub atomic_events: bool,
    /// How the cache holds objects: shared `Arc<K>` (the default) or compact
    /// ([`compact_cache`](Self::compact_cache)).
    pub representation: SharedOrCompact<K>,
}

impl<K> InformerOptions<K>
where
    K: Object + serde::Serialize + serde::de::DeserializeOwned,
{
    /// Holds the cache compact: every object compressed with a dictionary trained on its
    /// type, about a tenth of the memory of a decoded object, decoded on each read (see
    /// [`CompactRepr`]). Handlers still receive decoded objects.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kubeclient::cache::InformerOptions;
    ///
    /// let options = InformerOptions::<Pod>::default().compact_cache();
    /// assert!(options.representation.is_compact());
    /// ```
    pub fn compact_cache(mut self) -> Self {
        self.representation = SharedOrCompact::Compact(CompactRepr::new());
        self
    }
}

impl<K: Object> Default for InformerOptions<K> {
    fn default() -> Self {
        InformerOptions {
            name: "informer".to_owned(),
            resync_period: Duration::ZERO,
            indexers: Indexers::namespace(),
            reflector: ReflectorOptions::default(),
            atomic_events: false,
            representation: SharedOrCompact::Shared,
        }
    }
}

/// A shared, indexed informer (client-go's `SharedIndexInformer`).
///
/// Run it with [`run`](Self::run) (or through a
/// [`SharedInformerFactory`](crate::informers::SharedInformerFactory)), read its cache
/// through [`indexer`](Self::indexer) (or a [`Lister`](super::Lister) over it), and react to changes with
/// [`add_event_handler`](Self::add_event_handler) or [`notifications`](Self::notifications).
/// The cache is updated before handlers are told.
///
/// It uses client-go's in-order queue (`RealFIFO`, the default since 1.33), so the cache
/// goes through the server's states in the order the watch reported them.
pub struct SharedIndexInformer<K: Object> {
    inner: Arc<Inner<K>>,
}

impl<K: Object> Clone for SharedIndexInformer<K> {
    fn clone(&self) -> Self {
        SharedIndexInformer {
            inner: self.inner.clone(),
        }
    }
}

struct Inner<K: Object> {
    name: String,
    indexer: Arc<Cache<K>>,
    lister_watcher: Arc<dyn ListerWatcher<K>>,
    /// Guards handler registration against delta processing (client-go's `blockDeltas`).
    state: Mutex<State<K>>,
    synced: watch::Sender<bool>,
    /// Notified when a listener's buffer has room again.
    room: Arc<Notify>,
    reflector: OnceLock<Arc<Reflector<K>>>,
    reflector_options: Mutex<Option<ReflectorOptions>>,
    atomic_events: bool,
}

struct State<K> {
    listeners: Vec<ProcessorListener<K>>,
    /// How often the reflector checks for due resyncs.
    resync_check_period: Duration,
    default_resync: Duration,
    started: bool,
    stopped: bool,
    transform: Option<TransformFunc<K>>,
    watch_error_handler: Option<WatchErrorHandler>,
}

impl<K> SharedIndexInformer<K>
where
    K: Object + Send + Sync + 'static,
{
    /// An informer over `lister_watcher`.
    #[must_use]
    pub fn new(lister_watcher: Arc<dyn ListerWatcher<K>>, options: InformerOptions<K>) -> Self {
        let indexer = Arc::new(Cache::with_representation(
            CacheOptions::default().indexers(options.indexers),
            options.representation,
        ));
        let (synced, _) = watch::channel(false);
        SharedIndexInformer {
            inner: Arc::new(Inner {
                name: options.name,
                indexer,
                lister_watcher,
                state: Mutex::new(State {
                    listeners: Vec::new(),
                    resync_check_period: options.resync_period,
                    default_resync: options.resync_period,
                    started: false,
                    stopped: false,
                    transform: None,
                    watch_error_handler: None,
                }),
                synced,
                room: Arc::new(Notify::new()),
                reflector: OnceLock::new(),
                reflector_options: Mutex::new(Some(options.reflector)),
                atomic_events: options.atomic_events,
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, State<K>> {
        crate::sync::lock(&self.inner.state)
    }

    /// The cache (an [`Indexer`](super::Indexer)). Read it; writing to it breaks the informer's guarantees.
    #[must_use]
    pub fn indexer(&self) -> Arc<Cache<K>> {
        self.inner.indexer.clone()
    }

    /// Whether the initial list has been processed into the cache.
    #[must_use]
    pub fn has_synced(&self) -> bool {
        *self.inner.synced.borrow()
    }

    /// Waits until [`has_synced`](Self::has_synced), or `false` if `stop` is cancelled first.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn wait_for_cache_sync(&self, stop: &CancellationToken) -> bool {
        let mut synced = self.inner.synced.subscribe();
        tokio::select! {
            () = stop.cancelled() => self.has_synced(),
            result = synced.wait_for(|s| *s) => result.is_ok(),
        }
    }

    /// Whether [`run`](Self::run) has been called (client-go's `HasStarted`).
    #[must_use]
    pub fn is_started(&self) -> bool {
        self.state().started
    }

    /// How many handlers (and notification streams) are registered.
    #[must_use]
    pub fn handler_count(&self) -> usize {
        self.state().listeners.len()
    }

    /// Whether [`run`](Self::run) has returned.
    #[must_use]
    pub fn is_stopped(&self) -> bool {
        self.state().stopped
    }

    /// The resourceVersion of the last list or event (`""` before the first list).
    #[must_use]
    pub fn last_sync_resource_version(&self) -> String {
        self.inner
            .reflector
            .get()
            .map(|r| r.last_sync_resource_version())
            .unwrap_or_default()
    }

    /// Sets a transform applied to every object before it is cached (e.g. dropping
    /// `managedFields`). It must be idempotent.
    ///
    /// # Errors
    ///
    /// `Err` once the informer has started.
    pub fn set_transform(&self, transform: TransformFunc<K>) -> Result<(), InformerError> {
        let mut state = self.state();
        if state.started {
            return Err(InformerError::AlreadyStarted);
        }
        state.transform = Some(transform);
        Ok(())
    }

    /// Sets the handler of list and watch failures.
    ///
    /// # Errors
    ///
    /// `Err` once the informer has started.
    pub fn set_watch_error_handler(&self, handler: WatchErrorHandler) -> Result<(), InformerError> {
        let mut state = self.state();
        if state.started {
            return Err(InformerError::AlreadyStarted);
        }
        state.watch_error_handler = Some(handler);
        Ok(())
    }

    /// Registers a handler with the informer's default resync period.
    ///
    /// # Errors
    ///
    /// `Err` when the informer has stopped.
    pub fn add_event_handler(
        &self,
        handler: impl ResourceEventHandler<K>,
    ) -> Result<EventHandlerRegistration, InformerError> {
        let period = self.state().default_resync;
        self.add_event_handler_with_resync_period(handler, period)
    }

    /// Registers a handler with its own resync period (client-go's rules: zero never,
    /// under 1 s raised to 1 s, below the informer's check period lowered before start and
    /// raised after).
    ///
    /// # Errors
    ///
    /// `Err` when the informer has stopped.
    pub fn add_event_handler_with_resync_period(
        &self,
        handler: impl ResourceEventHandler<K>,
        resync: Duration,
    ) -> Result<EventHandlerRegistration, InformerError> {
        self.add_listener(Sink::Handler(Arc::new(handler)), resync)
    }

    /// A `Stream` of notifications, for async code: like a handler, with its own buffer.
    /// The registration's `has_synced` counts initial adds as delivered once the stream
    /// has yielded them.
    ///
    /// # Errors
    ///
    /// `Err` when the informer has stopped.
    pub fn notifications(
        &self,
    ) -> Result<
        (
            EventHandlerRegistration,
            impl Stream<Item = Notification<K>> + Send + use<K>,
        ),
        InformerError,
    > {
        let (sender, mut receiver) = mpsc::channel(LISTENER_CAPACITY);
        let period = self.state().default_resync;
        let registration = self.add_listener(Sink::Channel(sender), period)?;
        let stream = futures_util::stream::poll_fn(move |cx| receiver.poll_recv(cx));
        Ok((registration, stream))
    }

    fn add_listener(
        &self,
        sink: Sink<K>,
        requested: Duration,
    ) -> Result<EventHandlerRegistration, InformerError> {
        let mut state = self.state();
        if state.stopped {
            return Err(InformerError::Stopped);
        }
        let mut requested = requested;
        if !requested.is_zero() && requested < MINIMUM_RESYNC_PERIOD {
            requested = MINIMUM_RESYNC_PERIOD;
        }
        if !requested.is_zero() && requested < state.resync_check_period {
            if state.started {
                requested = state.resync_check_period;
            } else {
                state.resync_check_period = requested;
                let check = requested;
                for listener in &mut state.listeners {
                    listener.resync_period =
                        determine_resync_period(listener.requested_resync, check);
                }
            }
        }
        let effective = determine_resync_period(requested, state.resync_check_period);
        let listener = spawn_listener(sink, requested, effective, self.inner.room.clone());
        if state.started {
            // Replay the cache as initial adds, atomically with respect to new deltas.
            for obj in self.inner.indexer.list() {
                let add = Notification::Add {
                    obj,
                    is_in_initial_list: true,
                };
                listener.send(add.into(), true);
            }
        }
        let registration = EventHandlerRegistration::new(&listener, self.inner.synced.subscribe());
        state.listeners.push(listener);
        Ok(registration)
    }

    /// Removes a handler; its pending notifications are dropped. Unknown registrations
    /// (also those of another informer) are ignored. A call already running in the handler
    /// may still finish after this returns; to wait for it, use
    /// [`remove_event_handler_and_wait`](Self::remove_event_handler_and_wait).
    pub fn remove_event_handler(&self, registration: &EventHandlerRegistration) {
        self.remove_listener(registration);
    }

    /// Removes a handler and returns once it will be called no more: a call already
    /// running has returned and pending notifications are dropped (client-go's
    /// `RemoveEventHandler` followed by waiting for the listener to shut down). A
    /// notification stream stops at once, even if nobody reads it. Unknown registrations
    /// return at once. Do not call it from inside the handler being removed.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(informer: kubeclient::cache::SharedIndexInformer<k8s_openapi::api::core::v1::Pod>) {
    /// let registration = informer
    ///     .add_event_handler(kubeclient::cache::ResourceEventHandlerFuncs::new().on_add(|pod, _| println!("{pod:?}")))
    ///     .expect("the informer is running");
    /// informer.remove_event_handler_and_wait(&registration).await;
    /// // From here on the closure above is never called again.
    /// # }
    /// ```
    pub async fn remove_event_handler_and_wait(&self, registration: &EventHandlerRegistration) {
        if self.remove_listener(registration) {
            registration.finished().await;
        }
    }

    /// Removes the listener of `registration`; whether it was one of this informer's.
    fn remove_listener(&self, registration: &EventHandlerRegistration) -> bool {
        let mut state = self.state();
        let mut found = false;
        state.listeners.retain(|listener| {
            if listener.id == registration.id {
                listener.removed.cancel();
                found = true;
                false
            } else {
                true
            }
        });
        found
    }

    /// Decides which handlers are due a resync; true if any is (client-go's
    /// `shouldResync`).
    fn should_resync(&self) -> bool {
        let mut state = self.state();
        let now = Instant::now();
        let mut any = false;
        for listener in &mut state.listeners {
            listener.resyncing = !listener.resync_period.is_zero() && now >= listener.next_resync;
            if listener.resyncing {
                any = true;
                listener.next_resync = resync_deadline(now, listener.resync_period);
            }
        }
        any
    }

    /// Applies popped deltas to the cache, then tells the handlers (client-go's
    /// `processDeltas` with the informer as the handler).
    fn handle_deltas(&self, deltas: Deltas<K>, is_in_initial_list: bool) {
        let state = self.state();
        for delta in deltas.iter() {
            match delta {
                Delta::ReplacedAll(info) => {
                    self.replace_all(&state, info, is_in_initial_list);
                }
                Delta::SyncAll => {
                    for obj in self.inner.indexer.list() {
                        let update = Notification::Update {
                            old: obj.clone(),
                            new: obj,
                        };
                        distribute(&state, update.into(), true, false);
                    }
                }
                delta => {
                    if let Some((notification, sync)) = self.apply(delta, is_in_initial_list) {
                        distribute(&state, notification, sync, is_in_initial_list);
                    }
                }
            }
        }
    }

    /// Applies one single-object delta to the cache; the notification it makes and whether
    /// it is a sync (an update that did not change the resourceVersion).
    fn apply(
        &self,
        delta: &Delta<K>,
        is_in_initial_list: bool,
    ) -> Option<(PendingNotification<K>, bool)> {
        if let Delta::Deleted(deleted) = delta {
            let key = match deleted {
                DeletedObject::Final(obj) => self.inner.indexer.key_of(obj).ok(),
                DeletedObject::FinalStateUnknown(tombstone) => Some(tombstone.key.clone()),
            };
            if let Some(key) = key {
                self.inner.indexer.delete_by_key(&key);
            }
            return Some((Notification::Delete(deleted.clone()).into(), false));
        }
        let obj = delta.object().cloned()?;
        // One store call: the object it replaces comes back in its stored form, so a compact
        // cache decodes it only if, and where, a listener delivers the update.
        match self.inner.indexer.swap(obj.clone()) {
            Ok(Some(previous)) => {
                let sync = previous.resource_version() == obj.resource_version();
                let update =
                    PendingNotification::update(self.inner.indexer.representation(), previous, obj);
                Some((update, sync))
            }
            Ok(None) => {
                let add = Notification::Add {
                    obj,
                    is_in_initial_list,
                };
                Some((add.into(), false))
            }
            Err(err) => {
                tracing::warn!(informer = %self.inner.name, error = %kubeclient_machinery::ErrorChain(&err), "cache write failed");
                None
            }
        }
    }

    /// Applies an atomic relist (client-go's `processReplacedAllInfo`): the cache is
    /// replaced in one step, then handlers hear the deletions (keys the list lacks, as
    /// tombstones carrying the cached object), then an add or update per listed object,
    /// in list order.
    fn replace_all(&self, state: &State<K>, info: &ReplacedAllInfo<K>, is_in_initial_list: bool) {
        let indexer = &self.inner.indexer;
        let mut listed = HashSet::with_capacity(info.objects.len());
        let mut changes = Vec::with_capacity(info.objects.len());
        for obj in &info.objects {
            let Ok(key) = indexer.key_of(obj) else {
                continue;
            };
            let old = indexer.get_by_key(&key).ok().flatten();
            listed.insert(key);
            changes.push((old, Arc::clone(obj)));
        }
        let deletions: Vec<DeletedObject<K>> = indexer
            .list_keys()
            .into_iter()
            .filter(|key| !listed.contains(key))
            .map(|key| {
                let obj = indexer.get_by_key(&key).ok().flatten();
                DeletedObject::FinalStateUnknown(DeletedFinalStateUnknown { key, obj })
            })
            .collect();
        if let Err(err) = indexer.replace(info.objects.clone(), &info.resource_version) {
            tracing::warn!(informer = %self.inner.name, error = %kubeclient_machinery::ErrorChain(&err), "cache replace failed");
            return;
        }
        for deleted in deletions {
            distribute(
                state,
                Notification::Delete(deleted).into(),
                false,
                is_in_initial_list,
            );
        }
        for (old, new) in changes {
            let (notification, sync) = match old {
                Some(old) => {
                    let sync = old.resource_version() == new.resource_version();
                    (Notification::Update { old, new }, sync)
                }
                None => {
                    let add = Notification::Add {
                        obj: new,
                        is_in_initial_list,
                    };
                    (add, false)
                }
            };
            distribute(state, notification.into(), sync, is_in_initial_list);
        }
    }

    /// Waits until no listener's buffer is full (backpressure from slow handlers).
    async fn wait_for_listener_room(&self) {
        loop {
            let room = self.inner.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            if !self
                .state()
                .listeners
                .iter()
                .any(ProcessorListener::is_full)
            {
                return;
            }
            room.await;
        }
    }

    /// Runs the informer until `stop` is cancelled: the reflector fills the queue, the
    /// process loop moves changes into the cache and out to the handlers. An informer runs
    /// once; a second call returns at once.
    ///
    /// # Cancel safety
    ///
    /// Cancel through `stop`, then await the returned future to let it finish cleanly.
    pub async fn run(&self, stop: CancellationToken) {
        let (queue, reflector) = {
            let mut state = self.state();
            if state.started || state.stopped {
                tracing::warn!(informer = %self.inner.name, "the informer has already been started");
                return;
            }
            state.started = true;
            let mut fifo_options = RealFifoOptions::default()
                .name(format!("{} queue", self.inner.name))
                .atomic_events(self.inner.atomic_events);
            if let Some(transform) = &state.transform {
                fifo_options = fifo_options.transformer(transform.clone());
            }
            let queue: Arc<dyn Queue<K>> =
                Arc::new(RealFIFO::new(self.inner.indexer.clone(), fifo_options));
            let mut options = crate::sync::lock(&self.inner.reflector_options)
                .take()
                .unwrap_or_default();
            options.name.clone_from(&self.inner.name);
            // A compact cache keeps far less than the decoded objects of a list: never hold
            // them all at once.
            options.list_in_parts |= self.inner.indexer.representation().is_compact();
            options.resync_period = state.resync_check_period;
            let weak: Weak<Inner<K>> = Arc::downgrade(&self.inner);
            options.should_resync = Some(Arc::new(move || {
                weak.upgrade()
                    .is_some_and(|inner| SharedIndexInformer { inner }.should_resync())
            }));
            if let Some(handler) = &state.watch_error_handler {
                options.watch_error_handler = Some(handler.clone());
            }
            let mut reflector =
                Reflector::new(self.inner.lister_watcher.clone(), queue.clone(), options);
            // Sharing unchanged objects on a relist saves decoding them again; a compact
            // cache would have to decode each one to share it, so it does not.
            if !self.inner.indexer.representation().is_compact() {
                reflector = reflector.reuse_unchanged_from(self.inner.indexer.clone());
            }
            let reflector = Arc::new(reflector);
            let _ = self.inner.reflector.set(reflector.clone());
            (queue, reflector)
        };
        let reflector_task = {
            let stop = stop.clone();
            tokio::spawn(async move { reflector.run(stop).await })
        };
        let this = self.clone();
        let mut process =
            move |deltas: Deltas<K>, initial: bool| this.handle_deltas(deltas, initial);
        // An empty initial list syncs the queue without anything to pop: poll until synced.
        let mut sync_check = tokio::time::interval(Duration::from_millis(20));
        loop {
            if !self.has_synced() && queue.has_synced() {
                self.inner.synced.send_replace(true);
            }
            tokio::select! {
                () = stop.cancelled() => break,
                _ = sync_check.tick(), if !self.has_synced() => {}
                popped = async {
                    self.wait_for_listener_room().await;
                    queue.pop(&mut process).await
                } => {
                    if popped.is_err() {
                        break;
                    }
                }
            }
        }
        queue.close();
        let _ = reflector_task.await;
        let mut state = self.state();
        state.stopped = true;
        for listener in &state.listeners {
            listener.removed.cancel();
        }
        state.listeners.clear();
    }
}

/// Hands a notification to every listener (only to those resyncing, for a sync); initial
/// adds count towards each registration's `has_synced`.
fn distribute<K>(
    state: &State<K>,
    notification: PendingNotification<K>,
    sync: bool,
    is_in_initial_list: bool,
) {
    let initial = is_in_initial_list
        && matches!(
            notification,
            PendingNotification::Ready(Notification::Add { .. })
        );
    for listener in state.listeners.iter().filter(|l| !sync || l.resyncing) {
        listener.send(notification.clone(), initial);
    }
}
