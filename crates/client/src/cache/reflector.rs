//! [`Reflector`]: client-go's ListAndWatch. It lists (or streams a watch-list), replaces
//! the queue's contents, then watches, feeding every change into the queue, and recovers
//! from every failure by re-watching or relisting so the queue converges to the server.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use kubeclient_machinery::{ApiError, Object, WatchDecodeError, WatchEvent, meta_namespace_key};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::backoff::Backoff;
use super::list_watch::ListerWatcher;
use super::processor::resync_deadline;
use super::queue::{IncrementalReplace, Queue};
use super::retry_with_deadline::RetryWithDeadline;
use super::store::KnownObjects;
use crate::api::{ListParams, WatchParams};
use crate::error::Error;
use crate::rest::watch::WatchStream;
use crate::rest::{DecodeOptions, SharedList};
use kubeclient_machinery::list::ItemMeta;

/// The shortest server-side watch timeout (client-go: 5 minutes; each watch picks a
/// random timeout in `[min, 2 min)`).
pub const DEFAULT_MIN_WATCH_TIMEOUT: Duration = Duration::from_secs(300);
/// How many changes may wait in the queue before the reflector stops reading the watch.
pub const DEFAULT_MAX_QUEUED_EVENTS: usize = 256;
pub use crate::api::DEFAULT_PAGE_SIZE;

/// Called with errors that made a ListAndWatch cycle fail (list errors, watch-creation
/// errors, queue errors), and with the errors the reflector recovers from by itself inside
/// a watch or a list (an object that does not decode and was skipped, a broken or garbled
/// stream, an ERROR event other than 410), so none goes unnoticed. Without a handler they
/// are logged as warnings.
pub type WatchErrorHandler = Arc<dyn Fn(&Error) + Send + Sync>;

/// Options of a [`Reflector`], with client-go's defaults.
#[derive(Clone)]
#[must_use]
pub struct ReflectorOptions {
    /// A name for logs.
    pub name: String,
    /// How often to call `should_resync` (and, if it says so, `queue.resync()`); zero: never.
    pub resync_period: Duration,
    /// Decides at each resync tick whether to resync (the informer asks its handlers).
    pub should_resync: Option<Arc<dyn Fn() -> bool + Send + Sync>>,
    /// The minimum watch timeout. Default and minimum 5 minutes (shorter values are raised).
    pub min_watch_timeout: Duration,
    /// The LIST page size (client-go's `WatchListPageSize`). `None` (the default): pages of
    /// [`DEFAULT_PAGE_SIZE`] for lists at `""` or `"0"`, and unpaginated lists at a concrete
    /// resourceVersion (which a server's watch cache serves cheaply), unless the first list
    /// came back paginated (the server has no watch cache): then every list is paged.
    /// `Some(n)`: pages of `n` for every list.
    pub page_size: Option<u32>,
    /// Try a streaming watch-list (`sendInitialEvents`) before LIST, falling back to LIST
    /// when the server refuses it. Default true (as client-go since 1.35).
    pub use_watch_list: bool,
    /// Error handler (default: log a warning).
    pub watch_error_handler: Option<WatchErrorHandler>,
    /// Retry delays (client-go's: 0.8 s doubling to 30 s with full jitter, reset after
    /// 2 minutes; see [`Backoff::with_factor`] and [`Backoff::with_jitter`]).
    pub backoff: Backoff,
    /// How long to keep re-watching from the last resourceVersion after internal errors
    /// (an `ERROR` event with a 500 `InternalError`, or a garbled stream) before falling
    /// back to a relist (client-go's `MaxInternalErrorRetryDuration`). Errors more than a
    /// minute apart start a new run. Zero (the default): relist at the first one.
    pub max_internal_error_retry_duration: Duration,
    /// Stop reading the watch while this many changes wait in the queue (backpressure
    /// from a slow consumer: memory stays bounded, the server's stream waits). Zero: no
    /// bound. Default [`DEFAULT_MAX_QUEUED_EVENTS`].
    pub max_queued_events: usize,
    /// Hand a list to the queue part by part while it is decoded (when the queue takes a
    /// relist in parts, as the non-atomic [`RealFIFO`](super::RealFIFO) does), waiting
    /// while `max_queued_events` changes are queued, instead of in one `replace` at the
    /// end: a list then never holds more than a few hundred decoded objects at once. It
    /// pays where the queue's consumer stores objects in less memory than they take decoded
    /// (the compact cache sets it: its peak memory during a list of 10,000 Pods falls
    /// eightfold); with a typed cache, which keeps every decoded object anyway, it only
    /// slows the list (the decoding waits for the consumer). Default false.
    pub list_in_parts: bool,
}

impl Default for ReflectorOptions {
    fn default() -> Self {
        ReflectorOptions {
            name: "reflector".to_owned(),
            resync_period: Duration::ZERO,
            should_resync: None,
            min_watch_timeout: DEFAULT_MIN_WATCH_TIMEOUT,
            page_size: None,
            use_watch_list: true,
            watch_error_handler: None,
            backoff: Backoff::default(),
            max_internal_error_retry_duration: Duration::ZERO,
            max_queued_events: DEFAULT_MAX_QUEUED_EVENTS,
            list_in_parts: false,
        }
    }
}

/// Lists and watches into a [`Queue`].
///
/// Invariant: `last_sync_rv` is `""` until the first successful list, then the list's
/// resourceVersion, then the resourceVersion of the last accepted event.
pub struct Reflector<K> {
    lister_watcher: Arc<dyn ListerWatcher<K>>,
    queue: Arc<dyn Queue<K>>,
    options: ReflectorOptions,
    decode_options: DecodeOptions<K>,
    state: Mutex<RvState>,
}

#[derive(Default)]
struct RvState {
    /// The first list (at `"0"`) came back paginated: the server has no watch cache, so
    /// later lists are paged too (client-go's `paginatedResult`).
    paginated_result: bool,
    last_sync_rv: String,
    /// The last RV is unusable (a LIST at it got 410 or "too large"): list at `""`.
    unavailable: bool,
}

/// Why a watch stream ended.
enum WatchEnd {
    /// Stop was requested.
    Stopped,
    /// The server ended it normally: re-watch from the last RV.
    Rewatch,
    /// Relist after a backoff (a very short watch, a failed resync).
    Relist,
    /// The watch ended with an error (an `ERROR` event, a broken or garbled stream).
    Failed(Error),
}

impl<K> Reflector<K>
where
    K: Object + Send + Sync + 'static,
{
    /// A reflector feeding `queue` from `lister_watcher`.
    #[must_use]
    pub fn new(
        lister_watcher: Arc<dyn ListerWatcher<K>>,
        queue: Arc<dyn Queue<K>>,
        options: ReflectorOptions,
    ) -> Self {
        Reflector {
            lister_watcher,
            queue,
            options,
            decode_options: DecodeOptions::default(),
            state: Mutex::new(RvState::default()),
        }
    }

    /// Shares objects from `known` (normally the informer's cache, keyed by
    /// `namespace/name`) when a relist returns them at the same resourceVersion, instead of
    /// decoding them again. A relist of a mostly unchanged cache then costs little time and
    /// holds no second copy of the objects. The key function of the cache must be
    /// [`meta_namespace_key`].
    #[must_use]
    pub fn reuse_unchanged_from(mut self, known: Arc<dyn KnownObjects<K>>) -> Self {
        self.decode_options.reuse = Some(Arc::new(move |meta: &ItemMeta| {
            if meta.resource_version.is_empty() {
                return None;
            }
            let existing = known.get_by_key(&meta.key()).ok().flatten()?;
            (existing.resource_version() == meta.resource_version).then_some(existing)
        }));
        self
    }

    fn state(&self) -> std::sync::MutexGuard<'_, RvState> {
        crate::sync::lock(&self.state)
    }

    /// The resourceVersion of the last list or event (`""` before the first list).
    #[must_use]
    pub fn last_sync_resource_version(&self) -> String {
        self.state().last_sync_rv.clone()
    }

    fn set_last_sync_rv(&self, rv: &str) {
        if !rv.is_empty() {
            rv.clone_into(&mut self.state().last_sync_rv);
        }
    }

    /// A random server-side timeout in `[min, 2 min)`, with `min` never below client-go's
    /// 5 minutes (a shorter setting is raised, as client-go does).
    fn watch_timeout(&self) -> u32 {
        let min = self
            .options
            .min_watch_timeout
            .max(DEFAULT_MIN_WATCH_TIMEOUT)
            .as_secs();
        u32::try_from(min + fastrand::u64(0..min)).unwrap_or(u32::MAX)
    }

    /// Runs until `stop` is cancelled: ListAndWatch, and after each cycle (even a clean
    /// one) one backoff step, as client-go does.
    ///
    /// # Cancel safety
    ///
    /// Cancel with `stop`; dropping the future also stops it (the queue keeps its state).
    pub async fn run(&self, stop: CancellationToken) {
        let mut backoff = self.options.backoff.clone();
        loop {
            // Already stopped: make no call at all (client-go checks the stop first too).
            if stop.is_cancelled() {
                return;
            }
            if let Err(err) = self.list_and_watch(&stop, &mut backoff).await {
                match &self.options.watch_error_handler {
                    Some(handler) => handler(&err),
                    None => {
                        tracing::warn!(reflector = %self.options.name, error = %kubeclient_machinery::ErrorChain(&err), "list and watch failed; retrying")
                    }
                }
            }
            if stop.is_cancelled() {
                return;
            }
            let delay = backoff.next_delay();
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(delay) => {}
            }
        }
    }

    /// One cycle: (watch-)list, then watch until the watch needs a relist.
    async fn list_and_watch(
        &self,
        stop: &CancellationToken,
        backoff: &mut Backoff,
    ) -> Result<(), Error> {
        let mut stream = None;
        if self.options.use_watch_list {
            match self.watch_list(stop, backoff).await {
                Ok(Some(open)) => stream = Some(open),
                Ok(None) => return Ok(()),
                Err(err) => {
                    tracing::debug!(reflector = %self.options.name, error = %kubeclient_machinery::ErrorChain(&err), "watch-list refused; falling back to LIST");
                }
            }
        }
        if stream.is_none() {
            tokio::select! {
                biased;
                () = stop.cancelled() => return Ok(()),
                result = self.list() => result?,
            }
        }
        self.watch_loop(stream, stop, backoff).await
    }

    fn relist_resource_version(&self) -> String {
        let state = self.state();
        if state.unavailable {
            String::new()
        } else if state.last_sync_rv.is_empty() {
            "0".to_owned()
        } else {
            state.last_sync_rv.clone()
        }
    }

    /// LIST (paged), then replace the queue's contents: part by part while the list is
    /// decoded when the queue takes a relist in parts (so the decoded list is never held
    /// whole), otherwise in one `replace`.
    async fn list(&self) -> Result<(), Error> {
        let in_parts = self
            .queue
            .incremental_replace()
            .filter(|_| self.options.list_in_parts);
        let list_rv = match in_parts {
            Some(queue) => self.list_in_parts(queue).await?,
            None => {
                let (items, list_rv) = self.list_from_relist_rv(&self.decode_options).await?;
                self.queue
                    .replace(items, &list_rv)
                    .map_err(unable_to_sync)?;
                list_rv
            }
        };
        let mut state = self.state();
        state.unavailable = false;
        state.last_sync_rv = list_rv;
        Ok(())
    }

    /// Lists at the relist resourceVersion, or, when the server finds that one unusable,
    /// with a consistent read.
    async fn list_from_relist_rv(
        &self,
        options: &DecodeOptions<K>,
    ) -> Result<(Vec<Arc<K>>, String), Error> {
        let rv = self.relist_resource_version();
        let result = match self.list_pages(&rv, options).await {
            Err(Error::Api(err))
                if err.is_gone_or_expired() || err.is_too_large_resource_version() =>
            {
                // The RV we asked for is unusable: a consistent read from the server instead.
                self.state().unavailable = true;
                self.list_pages("", options).await
            }
            other => other,
        };
        result.inspect_err(|err| {
            tracing::debug!(reflector = %self.options.name, what = %self.lister_watcher.describe(), error = %kubeclient_machinery::ErrorChain(&err), "failed to list");
        })
    }

    /// Lists into `queue` part by part: each decoded batch of items is queued as soon as
    /// it is decoded, waiting while the queue is full (the body's reading then waits too),
    /// and the deletions are queued once the whole list has arrived. The list's
    /// resourceVersion.
    async fn list_in_parts(&self, queue: &dyn IncrementalReplace<K>) -> Result<String, Error> {
        // A few decoded batches may wait, so the decoding goes on while the queue drains.
        let (sink, mut parts) = tokio::sync::mpsc::channel::<Vec<Arc<K>>>(4);
        let options = DecodeOptions {
            item_sink: Some(sink),
            ..self.decode_options.clone()
        };
        queue.begin();
        let listing = async move {
            let listed = self.list_from_relist_rv(&options).await;
            // Ends the feeding below once the last part is in.
            drop(options);
            listed
        };
        let feeding = async {
            let mut fed = Ok(());
            let bound = self.options.max_queued_events;
            while let Some(mut part) = parts.recv().await {
                // Never more than the bound at once, however large the decoded batch.
                while fed.is_ok() && !part.is_empty() {
                    let rest = if bound > 0 && part.len() > bound {
                        part.split_off(bound)
                    } else {
                        Vec::new()
                    };
                    if bound > 0 {
                        let _ = self.queue.wait_for_room(bound).await;
                    }
                    fed = queue.part(part);
                    part = rest;
                }
            }
            fed
        };
        let (listed, fed) = tokio::join!(listing, feeding);
        let (rest, list_rv) = listed?;
        fed.map_err(unable_to_sync)?;
        // A lister that does not send its items part by part returns them whole.
        if !rest.is_empty() {
            queue.part(rest).map_err(unable_to_sync)?;
        }
        queue.finish(&list_rv).map_err(unable_to_sync)?;
        Ok(list_rv)
    }

    /// Every page of a list at `rv` (client-go's pager): later pages by continue token
    /// only; an expired token falls back to one unpaginated list. Items are decoded as
    /// they arrive; an item that does not decode is reported and left out, so one bad
    /// object never stops the informer.
    async fn list_pages(
        &self,
        rv: &str,
        options: &DecodeOptions<K>,
    ) -> Result<(Vec<Arc<K>>, String), Error> {
        let limit = match self.options.page_size {
            Some(size) => Some(size),
            None if rv.is_empty() || rv == "0" || self.state().paginated_result => {
                Some(DEFAULT_PAGE_SIZE)
            }
            // At a concrete RV a server's watch cache serves the whole list cheaply, and
            // only when no limit is set: do not page.
            None => None,
        };
        let first = ListParams {
            resource_version: Some(rv.to_owned()).filter(|rv| !rv.is_empty()),
            limit,
            ..ListParams::default()
        };
        let page = self.list_page(&first, options).await?;
        if rv == "0" && page.continue_token().is_some() {
            self.state().paginated_result = true;
        }
        let list_rv = page.metadata.resource_version.clone().unwrap_or_default();
        let mut token = page.continue_token().map(str::to_owned);
        let mut items = page.items;
        while let Some(continue_token) = token {
            let next = ListParams {
                continue_token: Some(continue_token),
                limit,
                ..ListParams::default()
            };
            match self.list_page(&next, options).await {
                Ok(page) => {
                    token = page.continue_token().map(str::to_owned);
                    items.extend(page.items);
                }
                Err(Error::Api(err)) if err.is_resource_expired() => {
                    let full = ListParams {
                        limit: None,
                        ..first.clone()
                    };
                    let page = self.list_page(&full, options).await?;
                    let rv = page.metadata.resource_version.clone().unwrap_or_default();
                    return Ok((page.items, rv));
                }
                Err(err) => return Err(err),
            }
        }
        Ok((items, list_rv))
    }

    /// One page, with its undecodable items reported.
    async fn list_page(
        &self,
        params: &ListParams,
        options: &DecodeOptions<K>,
    ) -> Result<SharedList<K>, Error> {
        let page = self.lister_watcher.list_shared(params, options).await?;
        for skipped in &page.skipped {
            self.report(skipped, "skipped a listed object that does not decode");
        }
        Ok(page)
    }

    /// Sleeps for `delay`; false when stopped first.
    async fn sleep(&self, stop: &CancellationToken, delay: Duration) -> bool {
        tokio::select! {
            () = stop.cancelled() => false,
            () = tokio::time::sleep(delay) => true,
        }
    }

    /// Tells the watch error handler (or the log) about an error the reflector recovers
    /// from by itself; `action` says how, for the log.
    fn report(&self, err: &Error, action: &str) {
        match &self.options.watch_error_handler {
            Some(handler) => handler(err),
            None => {
                tracing::warn!(reflector = %self.options.name, what = %self.lister_watcher.describe(), error = %kubeclient_machinery::ErrorChain(&err), "{action}");
            }
        }
    }

    /// A streaming watch-list: the initial state arrives as ADDED events ended by the
    /// `initial-events-end` bookmark, then the same stream carries the changes.
    /// `Ok(None)`: stopped. `Err`: the server refused it; the caller falls back to LIST.
    ///
    /// As client-go: a 429 or a refused connection backs off and retries the watch-list
    /// (a LIST is the heavier request for an overloaded server), any other error falls
    /// back to LIST; a stream that closes before the bookmark starts over, after a
    /// backoff step, unless it was a very short watch with nothing in it, which means the
    /// server does not really serve it.
    async fn watch_list(
        &self,
        stop: &CancellationToken,
        backoff: &mut Backoff,
    ) -> Result<Option<WatchStream<K>>, Error> {
        loop {
            let rv = {
                let state = self.state();
                if state.unavailable {
                    String::new()
                } else {
                    state.last_sync_rv.clone()
                }
            };
            let params = WatchParams {
                timeout_seconds: self.watch_timeout(),
                bookmarks: true,
                send_initial_events: true,
                ..WatchParams::default()
            };
            let opened = tokio::select! {
                biased;
                () = stop.cancelled() => return Ok(None),
                opened = self.lister_watcher.watch(&params, &rv) => opened,
            };
            let mut stream = match opened {
                Ok(stream) => stream,
                Err(err) if is_watch_error_retriable(&err) => {
                    tracing::debug!(reflector = %self.options.name, error = %kubeclient_machinery::ErrorChain(&err), "watch-list failed; backing off");
                    if !self.sleep(stop, backoff.next_delay()).await {
                        return Ok(None);
                    }
                    continue;
                }
                Err(err) => return Err(err),
            };
            let started = Instant::now();
            let mut received = 0usize;
            let mut initial: HashMap<String, Arc<K>> = HashMap::new();
            loop {
                let event = tokio::select! {
                    () = stop.cancelled() => return Ok(None),
                    event = stream.next() => event,
                };
                received += 1;
                match event {
                    None if received == 1 && started.elapsed() < Duration::from_secs(1) => {
                        return Err(Error::InvalidRequest(
                            "very short watch-list: it ended within a second with no events"
                                .to_owned(),
                        ));
                    }
                    None => {
                        // Closed before the bookmark: start over, a backoff step later.
                        if !self.sleep(stop, backoff.next_delay()).await {
                            return Ok(None);
                        }
                        break;
                    }
                    Some(Err(err @ Error::WatchEvent(WatchDecodeError::InvalidObject { .. }))) => {
                        self.report(&err, "skipped a watched object that does not decode");
                    }
                    Some(Err(err)) => return Err(err),
                    Some(Ok(WatchEvent::Added(obj) | WatchEvent::Modified(obj))) => {
                        initial.insert(meta_namespace_key(&obj), Arc::new(obj));
                    }
                    Some(Ok(WatchEvent::Deleted(obj))) => {
                        initial.remove(&meta_namespace_key(&obj));
                    }
                    Some(Ok(WatchEvent::Bookmark(bookmark))) => {
                        if bookmark.is_initial_events_end() {
                            self.queue
                                .replace(
                                    initial.into_values().collect(),
                                    &bookmark.resource_version,
                                )
                                .map_err(|err| {
                                    Error::InvalidRequest(format!(
                                        "unable to sync watch-list result: {err}"
                                    ))
                                })?;
                            let mut state = self.state();
                            state.unavailable = false;
                            state.last_sync_rv = bookmark.resource_version;
                            return Ok(Some(stream));
                        }
                    }
                    Some(Ok(WatchEvent::Error(status))) => {
                        let err = ApiError::from_status(*status);
                        if err.is_gone_or_expired() || err.is_too_large_resource_version() {
                            self.state().unavailable = true;
                            break;
                        }
                        return Err(Error::from(err));
                    }
                }
            }
        }
    }

    /// Watches (and re-watches) until a relist is needed or stop is requested.
    async fn watch_loop(
        &self,
        mut stream: Option<WatchStream<K>>,
        stop: &CancellationToken,
        backoff: &mut Backoff,
    ) -> Result<(), Error> {
        let resync_period = self.options.resync_period;
        let mut resync_at =
            (!resync_period.is_zero()).then(|| resync_deadline(Instant::now(), resync_period));
        let mut internal_errors = RetryWithDeadline::new(
            self.options.max_internal_error_retry_duration,
            Duration::from_secs(60),
        );
        loop {
            let (mut events, started_at_concrete_rv) = match stream.take() {
                Some(events) => (events, true),
                None => {
                    let rv = self.last_sync_resource_version();
                    let params = WatchParams {
                        timeout_seconds: self.watch_timeout(),
                        bookmarks: true,
                        ..WatchParams::default()
                    };
                    let opened = tokio::select! {
                        () = stop.cancelled() => return Ok(()),
                        opened = self.lister_watcher.watch(&params, &rv) => opened,
                    };
                    match opened {
                        Ok(events) => (events, !(rv.is_empty() || rv == "0")),
                        Err(err) if is_watch_error_retriable(&err) => {
                            // The server is down or overloaded, not the resourceVersion
                            // unusable: a relist would only add a full LIST per informer to
                            // the herd reconnecting to a restarting server. Resume from the
                            // last resourceVersion once it answers; if it came back with
                            // another history, the watch gets 410 or "too large resource
                            // version" and that relists.
                            tracing::debug!(reflector = %self.options.name, error = %kubeclient_machinery::ErrorChain(&err), "watch failed; backing off");
                            if !self.sleep(stop, backoff.next_delay()).await {
                                return Ok(());
                            }
                            continue;
                        }
                        Err(err) => {
                            tracing::debug!(reflector = %self.options.name, what = %self.lister_watcher.describe(), error = %kubeclient_machinery::ErrorChain(&err), "failed to watch");
                            return Err(err);
                        }
                    }
                }
            };
            let started = Instant::now();
            let mut seen = 0usize;
            let mut seen_non_added = started_at_concrete_rv;
            let end = loop {
                let resync_tick = async {
                    match resync_at {
                        Some(at) => tokio::time::sleep_until(at).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    () = stop.cancelled() => break WatchEnd::Stopped,
                    () = resync_tick => {
                        resync_at = Some(resync_deadline(Instant::now(), resync_period));
                        let due = self.options.should_resync.as_ref().is_none_or(|should| should());
                        if due && let Err(err) = self.queue.resync() {
                            tracing::warn!(reflector = %self.options.name, error = %kubeclient_machinery::ErrorChain(&err), "resync failed; relisting");
                            break WatchEnd::Relist;
                        }
                    }
                    event = async {
                        if self.options.max_queued_events > 0 {
                            let _ = self.queue.wait_for_room(self.options.max_queued_events).await;
                        }
                        events.next().await
                    } => match event {
                        None if seen == 0 && started.elapsed() < Duration::from_secs(1) => {
                            tracing::debug!(reflector = %self.options.name, "very short watch: it lasted less than a second and no items were received");
                            break WatchEnd::Relist;
                        }
                        None => break WatchEnd::Rewatch,
                        Some(Err(err @ Error::WatchEvent(WatchDecodeError::InvalidObject { .. }))) => {
                            // One bad object in an intact stream: report it and go on, so one
                            // object the server should have refused never stops the informer.
                            seen += 1;
                            self.report(&err, "skipped a watched object that does not decode");
                        }
                        Some(Err(err)) if seen == 0 && started.elapsed() < Duration::from_secs(1) => {
                            self.report(&err, "very short watch: it failed within a second with no events; relisting");
                            break WatchEnd::Relist;
                        }
                        Some(Err(err)) => break WatchEnd::Failed(err),
                        Some(Ok(event)) => {
                            seen += 1;
                            if let Some(end) = self.handle_event(event, &mut seen_non_added) {
                                break end;
                            }
                        }
                    },
                }
            };
            let backoff_first = match end {
                WatchEnd::Stopped | WatchEnd::Relist => return Ok(()),
                WatchEnd::Rewatch => false,
                WatchEnd::Failed(err) => match self.after_watch_error(err, &mut internal_errors) {
                    Some(backoff_first) => backoff_first,
                    None => return Ok(()),
                },
            };
            if backoff_first && !self.sleep(stop, backoff.next_delay()).await {
                return Ok(());
            }
        }
    }

    /// What to do after a watch ended with `err`, as client-go's reflector: `Some(true)`
    /// re-watch after a backoff step (429), `Some(false)` re-watch at once (a connection
    /// that broke mid-stream; an internal error within the retry duration), `None`
    /// relist (410, other errors, reported to the watch error handler).
    fn after_watch_error(
        &self,
        err: Error,
        internal_errors: &mut RetryWithDeadline,
    ) -> Option<bool> {
        let api = err.api();
        if api.is_some_and(ApiError::is_gone_or_expired) {
            tracing::debug!(reflector = %self.options.name, error = %kubeclient_machinery::ErrorChain(&err), "watch closed; relisting");
            return None;
        }
        if api.is_some_and(ApiError::is_too_many_requests) {
            tracing::debug!(reflector = %self.options.name, "watch returned 429; backing off");
            return Some(true);
        }
        if matches!(err, Error::Transport { .. } | Error::Timeout { .. }) {
            // The connection broke or went silent (client-go: a probable EOF or timeout
            // ends the stream quietly): watch again from the last resourceVersion.
            tracing::debug!(reflector = %self.options.name, error = %kubeclient_machinery::ErrorChain(&err), "the watch connection ended; re-watching");
            return Some(false);
        }
        // An internal error, or a stream that did not decode (client-go reports those as
        // internal errors too).
        let internal = api.is_none_or(ApiError::is_internal_error);
        if internal {
            internal_errors.after_error();
            if internal_errors.should_retry() {
                self.report(&err, "the watch ended with an internal error; re-watching");
                return Some(false);
            }
        }
        self.report(&err, "the watch ended with an error; relisting");
        None
    }

    /// Applies one event to the queue; `Some(end)` when it ends the watch.
    fn handle_event(&self, event: WatchEvent<K>, seen_non_added: &mut bool) -> Option<WatchEnd> {
        let rv = match &event {
            WatchEvent::Error(status) => {
                return Some(WatchEnd::Failed(Error::from(ApiError::from_status(
                    (**status).clone(),
                ))));
            }
            WatchEvent::Bookmark(bookmark) => bookmark.resource_version.clone(),
            WatchEvent::Added(obj) | WatchEvent::Modified(obj) | WatchEvent::Deleted(obj) => {
                obj.resource_version().to_owned()
            }
        };
        let result = match event {
            WatchEvent::Added(obj) => self.queue.add(Arc::new(obj)),
            WatchEvent::Modified(obj) => {
                *seen_non_added = true;
                self.queue.update(Arc::new(obj))
            }
            WatchEvent::Deleted(obj) => {
                *seen_non_added = true;
                self.queue.delete(Arc::new(obj))
            }
            WatchEvent::Bookmark(_) => {
                *seen_non_added = true;
                Ok(())
            }
            WatchEvent::Error(_) => Ok(()),
        };
        if let Err(err) = result {
            tracing::warn!(reflector = %self.options.name, error = %kubeclient_machinery::ErrorChain(&err), "the queue refused a watch event");
        }
        // Initial events of a watch from "" or "0" come in no RV order: only track RVs
        // once something else arrived.
        if *seen_non_added && !rv.is_empty() {
            self.set_last_sync_rv(&rv);
            self.queue.update_resource_version(&rv);
        }
        None
    }
}

/// The error of a list the queue refused.
fn unable_to_sync(err: super::error::Error) -> Error {
    Error::InvalidRequest(format!("unable to sync list result: {err}"))
}

/// Whether opening a watch that failed with `err` is retried from the same resourceVersion
/// after a backoff step instead of relisting (client-go's `isWatchErrorRetriable`): the
/// connection was refused (the server is most likely restarting) or the server answered
/// 429. Every other error relists.
fn is_watch_error_retriable(err: &Error) -> bool {
    err.is_connection_refused() || err.api().is_some_and(ApiError::is_too_many_requests)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ObjectList;
    use crate::cache::list_watch::BoxFuture;
    use crate::cache::{Cache, CacheOptions, RealFIFO, RealFifoOptions};
    use k8s_openapi::api::core::v1::ConfigMap;

    struct Nothing;

    impl ListerWatcher<ConfigMap> for Nothing {
        fn list<'a>(
            &'a self,
            _: &'a ListParams,
        ) -> BoxFuture<'a, Result<ObjectList<ConfigMap>, Error>> {
            Box::pin(async { Err(Error::InvalidRequest("unused".into())) })
        }
        fn watch<'a>(
            &'a self,
            _: &'a WatchParams,
            _: &'a str,
        ) -> BoxFuture<'a, Result<WatchStream<ConfigMap>, Error>> {
            Box::pin(async { Err(Error::InvalidRequest("unused".into())) })
        }
        fn describe(&self) -> String {
            "nothing".into()
        }
    }

    fn reflector(min_watch_timeout: Duration) -> Reflector<ConfigMap> {
        let cache = Arc::new(Cache::new(CacheOptions::default()));
        let queue = Arc::new(RealFIFO::new(cache, RealFifoOptions::default()));
        Reflector::new(
            Arc::new(Nothing),
            queue,
            ReflectorOptions {
                min_watch_timeout,
                ..ReflectorOptions::default()
            },
        )
    }

    #[test]
    fn the_watch_timeout_is_clamped_to_client_gos_minimum_and_stays_below_twice_it() {
        for min in [
            Duration::ZERO,
            Duration::from_secs(1),
            Duration::from_secs(299),
        ] {
            let reflector = reflector(min);
            for _ in 0..200 {
                assert!((300..600).contains(&reflector.watch_timeout()));
            }
        }
        let long = reflector(Duration::from_secs(900));
        for _ in 0..200 {
            assert!((900..1800).contains(&long.watch_timeout()));
        }
    }
}
