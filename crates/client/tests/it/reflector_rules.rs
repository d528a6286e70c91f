//! The reflector's edge rules, each as client-go's reflector keeps it, against the
//! embedded server (a recording lister-watcher in between sees every request).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kubeclient::cache::{
    ApiListWatch, Backoff, BoxFuture, Cache, CacheOptions, InformerOptions, KnownObjects,
    ListerWatcher, PopFuture, ProcessFn, Queue, RealFifoOptions, Reflector, ReflectorOptions,
    SharedIndexInformer,
};
use kubeclient::machinery::{ApiError, Status, WatchEvent};
use kubeclient::rest::watch::WatchStream;
use kubeclient::rest::{DecodeOptions, SharedList};
use kubeclient::{Api, CancellationToken, ListParams, ObjectList, WatchParams};

use crate::support::{WAIT, bulk_create, force_relist, start, until};

/// What the next watch gets instead of the server's plain stream.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Injected {
    /// Refused with 429.
    TooManyRequests,
    /// Opened, then one `ERROR` event with a 500 `InternalError`.
    InternalError,
    /// The server's stream, broken (a transport error) after this long.
    BreakAfter(Duration),
    /// The server's stream, opened only after this long (writes can happen meanwhile).
    OpenAfter(Duration),
    /// Refused: nothing listens at the server's address (a transport error caused by
    /// an `io::Error` of kind `ConnectionRefused`).
    Refused,
    /// Failed: the connection was reset while opening (a transport error of another kind).
    Reset,
}

/// Records every list and watch (with the resourceVersion it asked for), can replace the
/// next watches with injected failures, and can pretend the server has no watch cache
/// (lists at "0" are served paginated, from storage).
pub(crate) struct Recording {
    inner: ApiListWatch<ConfigMap>,
    pub(crate) lists: Mutex<Vec<ListParams>>,
    watches: Mutex<Vec<WatchParams>>,
    pub(crate) watch_rvs: Mutex<Vec<String>>,
    injected: Mutex<VecDeque<Injected>>,
    no_watch_cache: bool,
}

impl Recording {
    pub(crate) fn new(api: Api<ConfigMap>, no_watch_cache: bool) -> Arc<Self> {
        Arc::new(Recording {
            inner: ApiListWatch::new(api),
            lists: Mutex::new(Vec::new()),
            watches: Mutex::new(Vec::new()),
            watch_rvs: Mutex::new(Vec::new()),
            injected: Mutex::new(VecDeque::new()),
            no_watch_cache,
        })
    }

    pub(crate) fn inject(&self, failures: &[Injected]) {
        self.injected.lock().unwrap().extend(failures);
    }

    pub(crate) fn list_count(&self) -> usize {
        self.lists.lock().unwrap().len()
    }

    pub(crate) fn watch_count(&self) -> usize {
        self.watches.lock().unwrap().len()
    }

    fn served(&self, params: &ListParams) -> ListParams {
        self.lists.lock().unwrap().push(params.clone());
        let mut served = params.clone();
        if self.no_watch_cache && served.resource_version.as_deref() == Some("0") {
            served.resource_version = None;
        }
        served
    }
}

impl ListerWatcher<ConfigMap> for Recording {
    fn list<'a>(
        &'a self,
        params: &'a ListParams,
    ) -> BoxFuture<'a, kubeclient::Result<ObjectList<ConfigMap>>> {
        Box::pin(async move { self.inner.list(&self.served(params)).await })
    }

    fn list_shared<'a>(
        &'a self,
        params: &'a ListParams,
        options: &'a DecodeOptions<ConfigMap>,
    ) -> BoxFuture<'a, kubeclient::Result<SharedList<ConfigMap>>> {
        Box::pin(async move { self.inner.list_shared(&self.served(params), options).await })
    }

    fn watch<'a>(
        &'a self,
        params: &'a WatchParams,
        rv: &'a str,
    ) -> BoxFuture<'a, kubeclient::Result<WatchStream<ConfigMap>>> {
        self.watches.lock().unwrap().push(params.clone());
        self.watch_rvs.lock().unwrap().push(rv.to_owned());
        let injected = self.injected.lock().unwrap().pop_front();
        Box::pin(async move {
            match injected {
                None => self.inner.watch(params, rv).await,
                Some(Injected::TooManyRequests) => {
                    let status = Status::too_many_requests("injected: the server is overloaded", 1);
                    Err(kubeclient::Error::Api(Box::new(ApiError::from(status))))
                }
                Some(Injected::InternalError) => {
                    let status = Status::internal_error("injected: etcd hiccup");
                    let event = Ok(WatchEvent::Error(Box::new(status)));
                    Ok(futures_util::stream::iter([event]).boxed())
                }
                Some(Injected::Refused) => Err(kubeclient::Error::Transport {
                    url: "injected".to_owned(),
                    source: Box::new(std::io::Error::from(std::io::ErrorKind::ConnectionRefused)),
                }),
                Some(Injected::Reset) => Err(kubeclient::Error::Transport {
                    url: "injected".to_owned(),
                    source: Box::new(std::io::Error::from(std::io::ErrorKind::ConnectionReset)),
                }),
                Some(Injected::OpenAfter(after)) => {
                    tokio::time::sleep(after).await;
                    self.inner.watch(params, rv).await
                }
                Some(Injected::BreakAfter(after)) => {
                    let events = self.inner.watch(params, rv).await?;
                    let broken = Err(kubeclient::Error::Transport {
                        url: "injected".to_owned(),
                        source: "connection reset by peer".into(),
                    });
                    let events = events
                        .take_until(tokio::time::sleep(after))
                        .chain(futures_util::stream::iter([broken]));
                    Ok(events.boxed())
                }
            }
        })
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}

fn informer(
    lw: &Arc<Recording>,
    watch_list: bool,
    page_size: Option<u32>,
) -> SharedIndexInformer<ConfigMap> {
    informer_with(
        lw,
        ReflectorOptions {
            use_watch_list: watch_list,
            page_size,
            ..fast_backoff()
        },
    )
}

pub(crate) fn fast_backoff() -> ReflectorOptions {
    ReflectorOptions {
        backoff: Backoff::new(
            Duration::from_millis(20),
            Duration::from_millis(100),
            Duration::from_secs(60),
        ),
        ..ReflectorOptions::default()
    }
}

pub(crate) fn informer_with(
    lw: &Arc<Recording>,
    reflector: ReflectorOptions,
) -> SharedIndexInformer<ConfigMap> {
    let options = InformerOptions {
        name: "configmaps".to_owned(),
        reflector,
        ..InformerOptions::default()
    };
    SharedIndexInformer::new(lw.clone(), options)
}

pub(crate) fn run(informer: &SharedIndexInformer<ConfigMap>) -> CancellationToken {
    let stop = CancellationToken::new();
    let (informer, token) = (informer.clone(), stop.clone());
    tokio::spawn(async move { informer.run(token).await });
    stop
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_on_the_watch_list_backs_off_and_retries_the_watch_list_instead_of_listing() {
    let f = start().await;
    bulk_create(&f.server, 30);
    let lw = Recording::new(Api::namespaced(f.client.clone(), "default"), false);
    lw.inject(&[Injected::TooManyRequests, Injected::TooManyRequests]);
    let informer = informer(&lw, true, None);
    let stop = run(&informer);
    until("the informer syncs", || informer.has_synced()).await;
    assert_eq!(informer.indexer().len(), 30);
    assert!(
        lw.lists.lock().unwrap().is_empty(),
        "no fallback to a full LIST"
    );
    let watches = lw.watches.lock().unwrap().clone();
    assert!(
        watches.len() >= 3,
        "two refused watch-lists, then one that worked"
    );
    assert!(watches[..3].iter().all(|w| w.send_initial_events));
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reflector_stopped_before_it_runs_makes_no_call() {
    let f = start().await;
    let lw = Recording::new(Api::namespaced(f.client.clone(), "default"), false);
    let informer = informer(&lw, true, None);
    let stop = CancellationToken::new();
    stop.cancel();
    tokio::time::timeout(WAIT, informer.run(stop))
        .await
        .expect("run returns at once");
    assert!(lw.lists.lock().unwrap().is_empty() && lw.watches.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_explicit_page_size_is_used_for_relists_at_a_concrete_resource_version() {
    let f = start().await;
    bulk_create(&f.server, 20);
    let lw = Recording::new(Api::namespaced(f.client.clone(), "default"), false);
    let informer = informer(&lw, false, Some(7));
    let stop = run(&informer);
    until("the informer syncs", || informer.has_synced()).await;
    // The re-watch after the drop gets a 410 for certain (a compaction alone leaves a watch
    // from the newest revision valid when nothing was written since the list).
    f.server
        .faults()
        .fail_next(1, kubeclient_apiserver::Fault::Expired);
    force_relist(&f.server);
    until("a relist", || {
        lw.lists.lock().unwrap().iter().any(|l| {
            l.continue_token.is_none() && l.resource_version.as_deref().is_some_and(|rv| rv != "0")
        })
    })
    .await;
    let lists = lw.lists.lock().unwrap().clone();
    assert!(lists.iter().all(|l| l.limit == Some(7)), "{lists:?}");
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_paginated_first_list_later_relists_keep_paginating() {
    let f = start().await;
    bulk_create(&f.server, 1200);
    let relist_limit = |lists: &[ListParams]| {
        lists
            .iter()
            .find(|l| {
                l.continue_token.is_none()
                    && l.resource_version.as_deref().is_some_and(|rv| rv != "0")
            })
            .map(|l| l.limit)
    };
    for (no_watch_cache, expected) in [(true, Some(500)), (false, None)] {
        let lw = Recording::new(Api::namespaced(f.client.clone(), "default"), no_watch_cache);
        let informer = informer(&lw, false, None);
        let stop = run(&informer);
        until("the informer syncs", || informer.has_synced()).await;
        assert_eq!(informer.indexer().len(), 1200);
        // As above: the re-watch gets a 410 for certain.
        f.server
            .faults()
            .fail_next(1, kubeclient_apiserver::Fault::Expired);
        force_relist(&f.server);
        until("a relist", || {
            relist_limit(&lw.lists.lock().unwrap()).is_some()
        })
        .await;
        assert_eq!(
            relist_limit(&lw.lists.lock().unwrap()),
            Some(expected),
            "no watch cache: {no_watch_cache}"
        );
        stop.cancel();
    }
}

/// An informer on a LIST (no watch-list) that is synced, with its list and watch counts.
async fn synced(
    f: &crate::support::Fixture,
    options: ReflectorOptions,
) -> (
    Arc<Recording>,
    SharedIndexInformer<ConfigMap>,
    CancellationToken,
) {
    bulk_create(&f.server, 5);
    let lw = Recording::new(Api::namespaced(f.client.clone(), "default"), false);
    let informer = informer_with(
        &lw,
        ReflectorOptions {
            use_watch_list: false,
            ..options
        },
    );
    let stop = run(&informer);
    until("the informer syncs", || informer.has_synced()).await;
    until("the first watch opens", || lw.watch_count() == 1).await;
    // One event on the watch, so that ending it is not a "very short watch" (which relists).
    converges_on_a_new_object(f, &informer, "first-event").await;
    (lw, informer, stop)
}

/// Creates a ConfigMap and waits until the informer's cache has it.
async fn converges_on_a_new_object(
    f: &crate::support::Fixture,
    informer: &SharedIndexInformer<ConfigMap>,
    name: &str,
) {
    let object = serde_json::json!({"kind": "ConfigMap", "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "default"}});
    crate::support::store_write(&f.server, name, object);
    until("the informer sees the new object", || {
        informer
            .indexer()
            .get_by_key(&format!("default/{name}"))
            .ok()
            .flatten()
            .is_some()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_internal_error_within_the_retry_duration_rewatches_from_the_last_resource_version() {
    let f = start().await;
    let options = ReflectorOptions {
        max_internal_error_retry_duration: Duration::from_secs(60),
        ..fast_backoff()
    };
    let (lw, informer, stop) = synced(&f, options).await;
    // Make the running watch end so the next ones are the injected failures.
    lw.inject(&[Injected::InternalError, Injected::InternalError]);
    f.server.drop_watches();
    until("two internal errors and a good watch", || {
        lw.watch_count() >= 4
    })
    .await;
    converges_on_a_new_object(&f, &informer, "after-errors").await;
    assert_eq!(lw.list_count(), 1, "re-watched, never relisted");
    let rvs = lw.watch_rvs.lock().unwrap().clone();
    assert!(
        rvs.iter().all(|rv| !rv.is_empty() && rv != "0"),
        "every re-watch resumes from the last resourceVersion: {rvs:?}"
    );
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_retry_duration_an_internal_error_relists() {
    let f = start().await;
    let (lw, informer, stop) = synced(&f, fast_backoff()).await;
    lw.inject(&[Injected::InternalError]);
    f.server.drop_watches();
    until("a relist after the internal error", || lw.list_count() == 2).await;
    converges_on_a_new_object(&f, &informer, "after-relist").await;
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_broken_mid_stream_rewatches_from_the_last_resource_version_without_relisting()
{
    let f = start().await;
    let (lw, informer, stop) = synced(&f, fast_backoff()).await;
    lw.inject(&[Injected::BreakAfter(Duration::from_millis(1200))]);
    f.server.drop_watches();
    until("the broken watch and the next one", || {
        lw.watch_count() >= 3
    })
    .await;
    converges_on_a_new_object(&f, &informer, "after-reset").await;
    assert_eq!(lw.list_count(), 1, "re-watched, never relisted");
    let rvs = lw.watch_rvs.lock().unwrap().clone();
    assert!(rvs.iter().all(|rv| !rv.is_empty() && rv != "0"), "{rvs:?}");
    stop.cancel();
}

/// A queue that records every resourceVersion the reflector tells it about.
struct RvRecordingQueue {
    inner: kubeclient::cache::RealFIFO<ConfigMap>,
    seen: Mutex<Vec<String>>,
}

impl Queue<ConfigMap> for RvRecordingQueue {
    fn add(&self, obj: Arc<ConfigMap>) -> kubeclient::cache::Result<()> {
        self.inner.add(obj)
    }
    fn update(&self, obj: Arc<ConfigMap>) -> kubeclient::cache::Result<()> {
        self.inner.update(obj)
    }
    fn delete(&self, obj: Arc<ConfigMap>) -> kubeclient::cache::Result<()> {
        self.inner.delete(obj)
    }
    fn replace(&self, list: Vec<Arc<ConfigMap>>, rv: &str) -> kubeclient::cache::Result<()> {
        self.inner.replace(list, rv)
    }
    fn resync(&self) -> kubeclient::cache::Result<()> {
        self.inner.resync()
    }
    fn try_pop(&self, process: ProcessFn<'_, ConfigMap>) -> kubeclient::cache::Result<bool> {
        self.inner.try_pop(process)
    }
    fn pop_blocking(&self, process: ProcessFn<'_, ConfigMap>) -> kubeclient::cache::Result<()> {
        self.inner.pop_blocking(process)
    }
    fn pop<'a>(&'a self, process: ProcessFn<'a, ConfigMap>) -> PopFuture<'a> {
        self.inner.pop(process)
    }
    fn close(&self) {
        self.inner.close();
    }
    fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }
    fn has_synced(&self) -> bool {
        self.inner.has_synced()
    }
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn name(&self) -> &str {
        "rv-recording"
    }
    fn update_resource_version(&self, resource_version: &str) {
        self.seen.lock().unwrap().push(resource_version.to_owned());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_resource_version_updater_hook_hears_each_watch_event_in_order() {
    let f = start().await;
    bulk_create(&f.server, 3);
    let cache = Arc::new(Cache::new(CacheOptions::default()));
    let queue = Arc::new(RvRecordingQueue {
        inner: kubeclient::cache::RealFIFO::new(cache, RealFifoOptions::default()),
        seen: Mutex::new(Vec::new()),
    });
    let lw = Recording::new(Api::namespaced(f.client.clone(), "default"), false);
    let reflector = Arc::new(Reflector::new(
        lw.clone(),
        queue.clone(),
        ReflectorOptions {
            use_watch_list: false,
            ..fast_backoff()
        },
    ));
    let stop = CancellationToken::new();
    let (running, token) = (reflector.clone(), stop.clone());
    tokio::spawn(async move { running.run(token).await });
    until("the first watch opens", || lw.watch_count() == 1).await;
    assert!(
        queue.seen.lock().unwrap().is_empty(),
        "a LIST is no watch event"
    );
    let api: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    let mut written = Vec::new();
    for name in ["one", "two"] {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(name.to_owned());
        let created = api.create(&Default::default(), &cm).await.unwrap();
        written.push(created.metadata.resource_version.unwrap());
    }
    until("both writes reach the hook", || {
        queue.seen.lock().unwrap().len() >= 2
    })
    .await;
    assert_eq!(*queue.seen.lock().unwrap(), written);
    assert_eq!(reflector.last_sync_resource_version(), written[1]);
    stop.cancel();
}

/// A TCP front of the embedded server that can go down (its port refuses connections and
/// the connections it carried are cut) and come back on the same port: an API server
/// restarting behind a fixed address, as the reflector sees it.
struct Front {
    address: std::net::SocketAddr,
    upstream: std::net::SocketAddr,
    running: Mutex<Option<(CancellationToken, tokio::task::JoinHandle<()>)>>,
}

impl Front {
    async fn start(upstream: std::net::SocketAddr) -> Arc<Front> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let front = Arc::new(Front {
            address: listener.local_addr().unwrap(),
            upstream,
            running: Mutex::new(None),
        });
        front.serve(listener);
        front
    }

    fn serve(&self, listener: tokio::net::TcpListener) {
        let down = CancellationToken::new();
        let (upstream, token) = (self.upstream, down.clone());
        let accepting = tokio::spawn(async move {
            // The connections, so that `down` returns only once every one is closed (a
            // request must not race a connection still being cut).
            let mut connections = tokio::task::JoinSet::new();
            loop {
                let accepted = tokio::select! {
                    () = token.cancelled() => break,
                    accepted = listener.accept() => accepted,
                };
                let Ok((mut client, _)) = accepted else {
                    break;
                };
                let token = token.clone();
                connections.spawn(async move {
                    let Ok(mut server) = tokio::net::TcpStream::connect(upstream).await else {
                        return;
                    };
                    tokio::select! {
                        () = token.cancelled() => {}
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                    }
                });
            }
            drop(listener);
            while connections.join_next().await.is_some() {}
        });
        *self.running.lock().unwrap() = Some((down, accepting));
    }

    /// Closes the port (connecting to it is refused) and cuts every open connection.
    async fn down(&self) {
        let running = self.running.lock().unwrap().take();
        if let Some((down, accepting)) = running {
            down.cancel();
            let _ = accepting.await;
        }
    }

    /// Listens on the same port again.
    async fn up(&self) {
        let listener = tokio::net::TcpListener::bind(self.address).await.unwrap();
        self.serve(listener);
    }

    /// A client of the server through this front.
    async fn client(&self, server: &kubeclient_apiserver::ApiServer) -> kubeclient::Client {
        let mut config = crate::support::config_of(server);
        let scheme = config
            .cluster_url
            .scheme_str()
            .unwrap_or("https")
            .to_owned();
        config.cluster_url = format!("{scheme}://{}", self.address).parse().unwrap();
        kubeclient::Client::new(config).await.unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_is_told_apart_from_other_transport_errors() {
    let f = start().await;
    let front = Front::start(f.server.address()).await;
    let api: Api<ConfigMap> = Api::namespaced(front.client(&f.server).await, "default");
    api.list(&ListParams::default()).await.unwrap();
    front.down().await;
    // A client with no pooled connection: one kept from the list above may still look open
    // on the client's side when the next request goes out (and fails mid-message instead).
    let fresh: Api<ConfigMap> = Api::namespaced(front.client(&f.server).await, "default");
    let err = fresh.list(&ListParams::default()).await.unwrap_err();
    assert!(err.is_connection_refused(), "{err:?}");
    let not_found = Api::<ConfigMap>::namespaced(f.client.clone(), "default")
        .get("missing")
        .await
        .unwrap_err();
    assert!(!not_found.is_connection_refused());
}

/// client-go's `TestReflectorListAndWatchInitConnBackoff`: watches refused while the server
/// is down back off and retry from the last resourceVersion; the one LIST is the first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_watches_back_off_and_resume_from_the_last_resource_version_without_relisting() {
    for watch_list in [false, true] {
        let f = start().await;
        let front = Front::start(f.server.address()).await;
        bulk_create(&f.server, 5);
        let lw = Recording::new(
            Api::namespaced(front.client(&f.server).await, "default"),
            false,
        );
        let informer = informer(&lw, watch_list, None);
        let stop = run(&informer);
        until("the informer syncs", || informer.has_synced()).await;
        // One event on the watch, so that cutting it is not a "very short watch" (which
        // relists).
        converges_on_a_new_object(&f, &informer, "first-event").await;
        let before = f.server.faults().requests();
        let watches_before = lw.watch_count();

        front.down().await;
        // A change while the server is out of reach: the resumed watch must bring it.
        let object = serde_json::json!({"kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": "during-outage", "namespace": "default"}});
        crate::support::store_write(&f.server, "during-outage", object);
        until("five refused watches", || {
            lw.watch_count() >= watches_before + 5
        })
        .await;
        // Stable now: nothing arrives while the server is out of reach.
        let last_rv = informer.last_sync_resource_version();
        front.up().await;
        until("the change made during the outage arrives", || {
            informer
                .indexer()
                .get_by_key("default/during-outage")
                .ok()
                .flatten()
                .is_some()
        })
        .await;

        let after = f.server.faults().requests();
        let expected_lists = u64::from(!watch_list);
        assert_eq!(
            (before.lists, after.lists),
            (expected_lists, expected_lists),
            "one initial sync and no relist (watch-list: {watch_list})"
        );
        assert_eq!(lw.list_count(), usize::from(!watch_list));
        let resumed_from = lw.watch_rvs.lock().unwrap()[watches_before..].to_vec();
        assert!(
            resumed_from.iter().all(|rv| *rv == last_rv),
            "every retry resumes from {last_rv}: {resumed_from:?}"
        );
        stop.cancel();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttled_watches_back_off_and_resume_without_relisting() {
    let f = start().await;
    let (lw, informer, stop) = synced(&f, fast_backoff()).await;
    lw.inject(&[Injected::TooManyRequests; 5]);
    lw.inject(&[Injected::Refused; 2]);
    f.server.drop_watches();
    converges_on_a_new_object(&f, &informer, "after-throttling").await;
    // The first watch, five throttled, two refused, and the one that worked.
    assert_eq!(lw.watch_count(), 9);
    assert_eq!(lw.list_count(), 1, "re-watched, never relisted");
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_that_cannot_open_for_another_transport_reason_relists_as_client_go_does() {
    let f = start().await;
    let (lw, informer, stop) = synced(&f, fast_backoff()).await;
    lw.inject(&[Injected::Reset]);
    f.server.drop_watches();
    until("a relist after the failed watch", || lw.list_count() == 2).await;
    converges_on_a_new_object(&f, &informer, "after-reset").await;
    stop.cancel();
}
