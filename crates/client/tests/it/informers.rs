//! Informers against the embedded server: sync, events, recovery from every fault, handler
//! isolation, late handlers, resync, factories, and a randomized convergence test.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kubeclient::cache::{
    ApiListWatch, BoxFuture, Indexer, InformerOptions, ListerWatcher, Notification,
    ReflectorOptions, ResourceEventHandler, ResourceEventHandlerFuncs, SharedIndexInformer,
};
use kubeclient::informers::SharedInformerFactory;
use kubeclient::machinery::{
    DeletedObject, GroupResource, LabelSelector, Object, meta_namespace_key,
};
use kubeclient::rest::watch::WatchStream;
use kubeclient::rest::{ContentType, DecodeOptions, SharedList};
use kubeclient::{
    Api, Client, DeleteParams, ListParams, ObjectList, Patch, PatchParams, PostParams, WatchParams,
};
use kubeclient_apiserver::storage::Write;
use kubeclient_apiserver::{ApiServer, Fault};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::support::{
    Fixture, bulk_create, cache_state, config_of, server_state, start, start_as, start_with,
    store_write,
};

const WAIT: Duration = Duration::from_secs(20);

/// Counts the LIST and WATCH requests a reflector makes.
struct Counting {
    inner: ApiListWatch<ConfigMap>,
    lists: Arc<AtomicUsize>,
    watches: Arc<AtomicUsize>,
}

impl ListerWatcher<ConfigMap> for Counting {
    fn list<'a>(
        &'a self,
        params: &'a ListParams,
    ) -> BoxFuture<'a, kubeclient::Result<ObjectList<ConfigMap>>> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        self.inner.list(params)
    }

    fn list_shared<'a>(
        &'a self,
        params: &'a ListParams,
        options: &'a DecodeOptions<ConfigMap>,
    ) -> BoxFuture<'a, kubeclient::Result<SharedList<ConfigMap>>> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        self.inner.list_shared(params, options)
    }

    fn watch<'a>(
        &'a self,
        params: &'a WatchParams,
        rv: &'a str,
    ) -> BoxFuture<'a, kubeclient::Result<WatchStream<ConfigMap>>> {
        self.watches.fetch_add(1, Ordering::SeqCst);
        self.inner.watch(params, rv)
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}

struct Running {
    informer: SharedIndexInformer<ConfigMap>,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
    lists: Arc<AtomicUsize>,
    watches: Arc<AtomicUsize>,
}

impl Running {
    async fn stop(self) {
        self.stop.cancel();
        tokio::time::timeout(WAIT, self.task)
            .await
            .expect("the informer stops")
            .unwrap();
    }
}

fn informer(client: &Client, watch_list: bool, resync: Duration) -> Running {
    informer_holding(client, watch_list, resync, Holding::Shared)
}

/// How the informer's cache holds objects: every scenario run with `Holding::Compact` must
/// pass exactly as with shared objects.
#[derive(Clone, Copy, Debug)]
enum Holding {
    Shared,
    Compact,
}

fn informer_holding(
    client: &Client,
    watch_list: bool,
    resync: Duration,
    holding: Holding,
) -> Running {
    let api = Api::<ConfigMap>::namespaced(client.clone(), "default");
    assert_eq!(
        api.uses_protobuf(),
        client.content_type() == ContentType::Protobuf,
        "a typed Api of a built-in kind speaks the configured encoding"
    );
    let lists = Arc::new(AtomicUsize::new(0));
    let watches = Arc::new(AtomicUsize::new(0));
    let lister_watcher = Counting {
        inner: ApiListWatch::new(Api::<ConfigMap>::namespaced(client.clone(), "default")),
        lists: lists.clone(),
        watches: watches.clone(),
    };
    let options = InformerOptions {
        name: "configmaps".to_owned(),
        resync_period: resync,
        reflector: ReflectorOptions {
            use_watch_list: watch_list,
            ..ReflectorOptions::default()
        },
        ..InformerOptions::default()
    };
    let options = match holding {
        Holding::Shared => options,
        Holding::Compact => options.compact_cache(),
    };
    let informer = SharedIndexInformer::new(Arc::new(lister_watcher), options);
    let stop = CancellationToken::new();
    Running {
        informer,
        stop,
        task: tokio::spawn(async {}),
        lists,
        watches,
    }
}

fn run(mut running: Running) -> Running {
    let (informer, stop) = (running.informer.clone(), running.stop.clone());
    running.task = tokio::spawn(async move { informer.run(stop).await });
    running
}

/// Waits until the cache equals the server's state.
async fn converge(client: &Client, informer: &SharedIndexInformer<ConfigMap>) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let (server, cache) = (server_state(client).await, cache_state(informer));
        if server == cache {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the cache did not converge within {WAIT:?}: {} on the server, {} cached",
            server.len(),
            cache.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn synced(informer: &SharedIndexInformer<ConfigMap>) {
    let stop = CancellationToken::new();
    tokio::time::timeout(WAIT, informer.wait_for_cache_sync(&stop))
        .await
        .expect("the informer syncs (is the reflector stuck?)");
}

async fn create(client: &Client, name: &str) -> ConfigMap {
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": name}, "data": {"v": "1"}})).unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &cm)
        .await
        .unwrap()
}

async fn touch(client: &Client, name: &str, value: &str) {
    Api::<ConfigMap>::namespaced(client.clone(), "default")
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"v": value}})),
        )
        .await
        .unwrap();
}

async fn remove(client: &Client, name: &str) {
    Api::<ConfigMap>::namespaced(client.clone(), "default")
        .delete(name, &DeleteParams::default())
        .await
        .unwrap();
}

/// Records notifications and checks they are consistent per key.
#[derive(Default)]
struct Recorder {
    present: Mutex<HashSet<String>>,
    log: Mutex<Vec<String>>,
    violations: Mutex<Vec<String>>,
    tombstones: AtomicUsize,
}

/// A handler that records into a shared [`Recorder`].
struct Shared(Arc<Recorder>);

impl ResourceEventHandler<ConfigMap> for Shared {
    fn on_add(&self, obj: &Arc<ConfigMap>, initial: bool) {
        let key = meta_namespace_key(obj.as_ref());
        if !self.0.present.lock().unwrap().insert(key.clone()) {
            self.0
                .violations
                .lock()
                .unwrap()
                .push(format!("add of present {key}"));
        }
        self.0
            .log
            .lock()
            .unwrap()
            .push(format!("add {key} {initial}"));
    }

    fn on_update(&self, old: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
        let key = meta_namespace_key(new.as_ref());
        if !self.0.present.lock().unwrap().contains(&key) {
            self.0
                .violations
                .lock()
                .unwrap()
                .push(format!("update of unknown {key}"));
        }
        let kind = if old.resource_version() == new.resource_version() {
            "sync"
        } else {
            "update"
        };
        // The values before and after: the old object is the cached one, decoded in full.
        let value = |cm: &ConfigMap| {
            cm.data
                .as_ref()
                .and_then(|data| data.get("v"))
                .cloned()
                .unwrap_or_default()
        };
        self.0
            .log
            .lock()
            .unwrap()
            .push(format!("{kind} {key} {}->{}", value(old), value(new)));
    }

    fn on_delete(&self, obj: &DeletedObject<ConfigMap>) {
        let key = obj.key();
        if matches!(obj, DeletedObject::FinalStateUnknown(_)) {
            self.0.tombstones.fetch_add(1, Ordering::SeqCst);
        }
        if !self.0.present.lock().unwrap().remove(&key) {
            self.0
                .violations
                .lock()
                .unwrap()
                .push(format!("delete of unknown {key}"));
        }
        self.0.log.lock().unwrap().push(format!("delete {key}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_objects_sync_by_watch_list_and_by_list() {
    thousands_of_objects_sync_by_watch_list_and_by_list_as(ContentType::Json).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_objects_sync_by_watch_list_and_by_list_over_protobuf() {
    thousands_of_objects_sync_by_watch_list_and_by_list_as(ContentType::Protobuf).await;
}

async fn thousands_of_objects_sync_by_watch_list_and_by_list_as(content: ContentType) {
    let f = start_as(content).await;
    bulk_create(&f.server, 3000);
    for watch_list in [true, false] {
        let running = run(informer(&f.client, watch_list, Duration::ZERO));
        synced(&running.informer).await;
        assert_eq!(
            running.informer.indexer().len(),
            3000,
            "watch_list: {watch_list}"
        );
        let expected_lists = usize::from(!watch_list);
        assert_eq!(
            running.lists.load(Ordering::SeqCst),
            expected_lists,
            "watch-list syncs without a LIST"
        );
        running.stop().await;
    }
}

/// Reports how much of the list the informer's cache already holds when a LIST returns.
struct ObservingList {
    inner: ApiListWatch<ConfigMap>,
    cache: Arc<Mutex<Option<Arc<kubeclient::cache::Cache<ConfigMap>>>>>,
    cached_when_listed: Arc<Mutex<Vec<usize>>>,
}

impl ListerWatcher<ConfigMap> for ObservingList {
    fn list<'a>(
        &'a self,
        params: &'a ListParams,
    ) -> BoxFuture<'a, kubeclient::Result<ObjectList<ConfigMap>>> {
        self.inner.list(params)
    }

    fn list_shared<'a>(
        &'a self,
        params: &'a ListParams,
        options: &'a DecodeOptions<ConfigMap>,
    ) -> BoxFuture<'a, kubeclient::Result<SharedList<ConfigMap>>> {
        Box::pin(async move {
            let listed = self.inner.list_shared(params, options).await;
            let cached = self
                .cache
                .lock()
                .unwrap()
                .as_ref()
                .map_or(0, |cache| cache.len());
            self.cached_when_listed.lock().unwrap().push(cached);
            listed
        })
    }

    fn watch<'a>(
        &'a self,
        params: &'a WatchParams,
        rv: &'a str,
    ) -> BoxFuture<'a, kubeclient::Result<WatchStream<ConfigMap>>> {
        self.inner.watch(params, rv)
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}

/// The decoded items of a list go into the queue part by part while the list is still
/// being read (and the reading waits while the queue is full), so a list never holds all
/// its decoded objects at once; handlers still get every item as an initial add, and the
/// registration syncs only after the last one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_list_reaches_the_cache_part_by_part_while_it_is_read() {
    for holding in [Holding::Shared, Holding::Compact] {
        let f = start().await;
        // 4 KB each: the 12 MB list arrives and decodes in many batches.
        let filler = "x".repeat(4096);
        for i in 0..3000 {
            let name = format!("big-{i:05}");
            let object = json!({"kind": "ConfigMap", "apiVersion": "v1",
                "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{i}")},
                "data": {"filler": filler}});
            store_write(&f.server, &name, object);
        }
        let cache = Arc::new(Mutex::new(None));
        let cached_when_listed = Arc::new(Mutex::new(Vec::new()));
        let lister = ObservingList {
            inner: ApiListWatch::new(Api::<ConfigMap>::namespaced(f.client.clone(), "default")),
            cache: cache.clone(),
            cached_when_listed: cached_when_listed.clone(),
        };
        let options = InformerOptions {
            name: "configmaps".to_owned(),
            reflector: ReflectorOptions {
                use_watch_list: false,
                // One page: the whole list is one response.
                page_size: Some(10_000),
                list_in_parts: matches!(holding, Holding::Shared),
                ..ReflectorOptions::default()
            },
            ..InformerOptions::default()
        };
        let options = match holding {
            Holding::Shared => options,
            Holding::Compact => options.compact_cache(),
        };
        let informer = SharedIndexInformer::new(Arc::new(lister), options);
        *cache.lock().unwrap() = Some(informer.indexer());
        let initial_adds = Arc::new(AtomicUsize::new(0));
        let counter = initial_adds.clone();
        let registration = informer
            .add_event_handler(ResourceEventHandlerFuncs::new().on_add(
                move |_: &Arc<ConfigMap>, initial: bool| {
                    assert!(initial, "every listed object is an initial add");
                    // A handler slower than the list, so the queue fills up.
                    std::thread::sleep(Duration::from_micros(200));
                    counter.fetch_add(1, Ordering::SeqCst);
                },
            ))
            .unwrap();
        let running = run(Running {
            informer,
            stop: CancellationToken::new(),
            task: tokio::spawn(async {}),
            lists: Arc::new(AtomicUsize::new(0)),
            watches: Arc::new(AtomicUsize::new(0)),
        });
        let deadline = tokio::time::Instant::now() + WAIT;
        while !registration.has_synced() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{holding:?}: the handler syncs"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(initial_adds.load(Ordering::SeqCst), 3000, "{holding:?}");
        assert_eq!(running.informer.indexer().len(), 3000, "{holding:?}");
        let cached = cached_when_listed.lock().unwrap().clone();
        assert_eq!(cached.len(), 1, "{holding:?}: one LIST");
        assert!(
            cached[0] >= 2000,
            "{holding:?}: most of the list was in the cache before the LIST returned ({} of 3000)",
            cached[0]
        );
        running.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_after_sync_reach_the_cache_and_handlers_in_order() {
    events_after_sync_reach_the_cache_and_handlers_in_order_as(ContentType::Json).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_after_sync_reach_the_cache_and_handlers_in_order_over_protobuf() {
    events_after_sync_reach_the_cache_and_handlers_in_order_as(ContentType::Protobuf).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_after_sync_reach_a_compact_cache_and_handlers_in_order() {
    events_after_sync_reach_the_cache_and_handlers_in_order_holding(
        ContentType::Json,
        Holding::Compact,
    )
    .await;
}

async fn events_after_sync_reach_the_cache_and_handlers_in_order_as(content: ContentType) {
    events_after_sync_reach_the_cache_and_handlers_in_order_holding(content, Holding::Shared).await;
}

async fn events_after_sync_reach_the_cache_and_handlers_in_order_holding(
    content: ContentType,
    holding: Holding,
) {
    let f = start_as(content).await;
    create(&f.client, "before").await;
    let running = informer_holding(&f.client, true, Duration::ZERO, holding);
    let recorder = Arc::new(Recorder::default());
    running
        .informer
        .add_event_handler(Shared(recorder.clone()))
        .unwrap();
    let running = run(running);
    synced(&running.informer).await;
    create(&f.client, "after").await;
    touch(&f.client, "after", "2").await;
    remove(&f.client, "before").await;
    converge(&f.client, &running.informer).await;
    crate::support::until("the handler saw all four changes", || {
        recorder.log.lock().unwrap().len() >= 4
    })
    .await;
    let log = recorder.log.lock().unwrap().clone();
    assert_eq!(
        log,
        [
            "add default/before true",
            "add default/after false",
            "update default/after 1->2",
            "delete default/before"
        ]
    );
    assert!(recorder.violations.lock().unwrap().is_empty());
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_watch_resumes_without_a_relist() {
    a_dropped_watch_resumes_without_a_relist_as(ContentType::Json).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_watch_resumes_without_a_relist_over_protobuf() {
    a_dropped_watch_resumes_without_a_relist_as(ContentType::Protobuf).await;
}

async fn a_dropped_watch_resumes_without_a_relist_as(content: ContentType) {
    let f = start_as(content).await;
    let running = run(informer(&f.client, false, Duration::ZERO));
    synced(&running.informer).await;
    create(&f.client, "a").await;
    converge(&f.client, &running.informer).await;
    let watches_before = running.watches.load(Ordering::SeqCst);
    f.server.drop_watches();
    create(&f.client, "b").await;
    converge(&f.client, &running.informer).await;
    assert_eq!(
        running.lists.load(Ordering::SeqCst),
        1,
        "no relist after a normal watch end"
    );
    assert!(
        running.watches.load(Ordering::SeqCst) > watches_before,
        "it re-watched"
    );
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_410_forces_a_paged_relist_that_reports_missed_deletions_as_tombstones() {
    a_410_forces_a_paged_relist_that_reports_missed_deletions_as_tombstones_as(ContentType::Json)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_410_forces_a_paged_relist_that_reports_missed_deletions_as_tombstones_over_protobuf() {
    a_410_forces_a_paged_relist_that_reports_missed_deletions_as_tombstones_as(
        ContentType::Protobuf,
    )
    .await;
}

/// 1,200 objects: the compact cache trains its dictionary during the first list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_410_forces_a_paged_relist_of_a_compact_cache_that_reports_missed_deletions_as_tombstones()
 {
    a_410_forces_a_paged_relist_that_reports_missed_deletions_as_tombstones_holding(
        ContentType::Json,
        Holding::Compact,
    )
    .await;
}

async fn a_410_forces_a_paged_relist_that_reports_missed_deletions_as_tombstones_as(
    content: ContentType,
) {
    a_410_forces_a_paged_relist_that_reports_missed_deletions_as_tombstones_holding(
        content,
        Holding::Shared,
    )
    .await;
}

async fn a_410_forces_a_paged_relist_that_reports_missed_deletions_as_tombstones_holding(
    content: ContentType,
    holding: Holding,
) {
    let f = start_as(content).await;
    bulk_create(&f.server, 1200);
    let running = informer_holding(&f.client, false, Duration::ZERO, holding);
    let recorder = Arc::new(Recorder::default());
    running
        .informer
        .add_event_handler(Shared(recorder.clone()))
        .unwrap();
    let running = run(running);
    synced(&running.informer).await;
    // Miss some deletions: stop the watch from seeing them, then make its RV too old.
    f.server.faults().set_delay(Duration::from_millis(300));
    f.server.drop_watches();
    let resource = GroupResource::new("", "configmaps");
    for i in 0..5 {
        let key = format!("default/bulk-{i:05}");
        f.server
            .store()
            .write(&resource, &key, |_| Ok::<_, ()>(Write::Delete))
            .unwrap();
    }
    f.server.compact();
    f.server.faults().set_delay(Duration::ZERO);
    converge(&f.client, &running.informer).await;
    crate::support::until("the handler saw the five inferred deletions", || {
        recorder.tombstones.load(Ordering::SeqCst) >= 5
    })
    .await;
    assert_eq!(running.informer.indexer().len(), 1195);
    assert_eq!(
        recorder.tombstones.load(Ordering::SeqCst),
        5,
        "missed deletions arrive as DeletedFinalStateUnknown"
    );
    assert!(
        running.lists.load(Ordering::SeqCst) >= 2,
        "the 410 forced a relist"
    );
    assert!(
        recorder.violations.lock().unwrap().is_empty(),
        "{:?}",
        recorder.violations.lock().unwrap()
    );
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_storm_and_a_malformed_event_do_not_break_convergence() {
    a_429_storm_and_a_malformed_event_do_not_break_convergence_as(ContentType::Json).await;
}

/// The injected malformed event is JSON text inside a protobuf stream: its first four
/// bytes read as a huge frame length, which ends the stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_storm_and_a_malformed_event_do_not_break_convergence_over_protobuf() {
    a_429_storm_and_a_malformed_event_do_not_break_convergence_as(ContentType::Protobuf).await;
}

async fn a_429_storm_and_a_malformed_event_do_not_break_convergence_as(content: ContentType) {
    let f = start_as(content).await;
    create(&f.client, "a").await;
    f.server.faults().fail_next(
        4,
        Fault::TooManyRequests {
            retry_after_seconds: 1,
        },
    );
    let running = run(informer(&f.client, false, Duration::ZERO));
    synced(&running.informer).await;
    assert_eq!(
        f.server.faults().pending(),
        0,
        "the storm was absorbed by retries"
    );
    f.server.faults().malformed_watch_events(1);
    f.server.drop_watches();
    create(&f.client, "b").await;
    converge(&f.client, &running.informer).await;
    assert!(
        running.lists.load(Ordering::SeqCst) >= 2,
        "a malformed event means events may be lost: relist"
    );
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_restarts_empty_is_followed() {
    let f = start().await;
    for name in ["a", "b", "c"] {
        create(&f.client, name).await;
    }
    let running = run(informer(&f.client, false, Duration::ZERO));
    synced(&running.informer).await;
    assert_eq!(running.informer.indexer().len(), 3);
    let address = f.server.address();
    f.server.shutdown().await;
    let restarted = ApiServer::builder()
        .listen(address)
        .start()
        .await
        .expect("restart on the same port");
    let client = Client::new(config_of(&restarted)).await.unwrap();
    create(&client, "fresh").await;
    converge(&client, &running.informer).await;
    assert_eq!(
        cache_state(&running.informer).keys().collect::<Vec<_>>(),
        ["default/fresh"]
    );
    running.stop().await;
    restarted.shutdown().await;
}

/// The disk backend (`--data-dir`): after a restart on the same directory and port the
/// server has every object and later revisions; the informer resumes from its last
/// resourceVersion (or relists after 410) and converges on the writes made after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_restarts_on_its_data_dir_is_followed() {
    let dir = std::env::temp_dir().join(format!(
        "kubeclient-informer-data-dir-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let f = start_with(ApiServer::builder().data_dir(&dir)).await;
    for name in ["a", "b", "c"] {
        create(&f.client, name).await;
    }
    let running = run(informer(&f.client, false, Duration::ZERO));
    synced(&running.informer).await;
    let before = server_state(&f.client).await;
    let address = f.server.address();
    f.server.shutdown().await;
    // The shut-down server's storage thread closes the database (and its lock) just after.
    let deadline = tokio::time::Instant::now() + WAIT;
    let restarted = loop {
        match ApiServer::builder()
            .listen(address)
            .data_dir(&dir)
            .start()
            .await
        {
            Ok(server) => break server,
            Err(_) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(error) => panic!("restart on the same port and directory: {error}"),
        }
    };
    let client = Client::new(config_of(&restarted)).await.unwrap();
    assert_eq!(server_state(&client).await, before, "every object survived");
    remove(&client, "b").await;
    touch(&client, "a", "2").await;
    create(&client, "fresh").await;
    converge(&client, &running.informer).await;
    assert_eq!(
        cache_state(&running.informer).keys().collect::<Vec<_>>(),
        ["default/a", "default/c", "default/fresh"]
    );
    running.stop().await;
    restarted.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_slow_handler_does_not_delay_other_handlers() {
    let f = start().await;
    let running = informer(&f.client, true, Duration::ZERO);
    let fast = Arc::new(AtomicUsize::new(0));
    let slow = Arc::new(AtomicUsize::new(0));
    let (fast_count, slow_count) = (fast.clone(), slow.clone());
    running
        .informer
        .add_event_handler(
            ResourceEventHandlerFuncs::new().on_add(move |_: &Arc<ConfigMap>, _| {
                fast_count.fetch_add(1, Ordering::SeqCst);
            }),
        )
        .unwrap();
    running
        .informer
        .add_event_handler(
            ResourceEventHandlerFuncs::new().on_add(move |_: &Arc<ConfigMap>, _| {
                std::thread::sleep(Duration::from_millis(300));
                slow_count.fetch_add(1, Ordering::SeqCst);
            }),
        )
        .unwrap();
    let running = run(running);
    synced(&running.informer).await;
    for i in 0..10 {
        create(&f.client, &format!("cm-{i}")).await;
    }
    let deadline = tokio::time::Instant::now() + WAIT;
    while fast.load(Ordering::SeqCst) < 10 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the fast handler got everything"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        slow.load(Ordering::SeqCst) < 10,
        "the slow handler was still behind when the fast one finished"
    );
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_added_late_gets_the_cache_as_initial_adds() {
    let f = start().await;
    for name in ["a", "b"] {
        create(&f.client, name).await;
    }
    let running = run(informer(&f.client, true, Duration::ZERO));
    synced(&running.informer).await;
    let recorder = Arc::new(Recorder::default());
    let registration = running
        .informer
        .add_event_handler(Shared(recorder.clone()))
        .unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    while !registration.has_synced() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the late registration syncs"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut log = recorder.log.lock().unwrap().clone();
    log.sort();
    assert_eq!(log, ["add default/a true", "add default/b true"]);
    running.informer.remove_event_handler(&registration);
    // A handler that stays registered: once it has heard of "c", "c" was handed out to
    // every registered handler, so a removed one that still heard would have it too.
    let sentinel = Arc::new(Recorder::default());
    running
        .informer
        .add_event_handler(Shared(sentinel.clone()))
        .unwrap();
    create(&f.client, "c").await;
    converge(&f.client, &running.informer).await;
    let deadline = tokio::time::Instant::now() + WAIT;
    while !sentinel.present.lock().unwrap().contains("default/c") {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the sentinel handler hears of c"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        recorder.log.lock().unwrap().len(),
        2,
        "a removed handler hears nothing more"
    );
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resync_redelivers_cached_objects_as_updates_with_the_same_version() {
    resync_redelivers_cached_objects_holding(Holding::Shared).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resync_redelivers_objects_of_a_compact_cache_as_updates_with_the_same_version() {
    resync_redelivers_cached_objects_holding(Holding::Compact).await;
}

async fn resync_redelivers_cached_objects_holding(holding: Holding) {
    let f = start().await;
    create(&f.client, "a").await;
    let running = informer_holding(&f.client, true, Duration::from_secs(1), holding);
    let recorder = Arc::new(Recorder::default());
    running
        .informer
        .add_event_handler(Shared(recorder.clone()))
        .unwrap();
    let never = Arc::new(Recorder::default());
    running
        .informer
        .add_event_handler_with_resync_period(Shared(never.clone()), Duration::ZERO)
        .unwrap();
    let running = run(running);
    synced(&running.informer).await;
    let resynced = || {
        recorder
            .log
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.starts_with("sync"))
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !resynced() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "resync re-delivers the object within 20 s at a 1 s period: {:?}",
            recorder.log.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        never
            .log
            .lock()
            .unwrap()
            .iter()
            .all(|l| !l.starts_with("sync")),
        "a handler with period 0 never resyncs"
    );
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_factory_shares_informers_and_two_factories_share_nothing() {
    let f = start().await;
    create(&f.client, "a").await;
    let first = SharedInformerFactory::new(f.client.clone());
    let second = SharedInformerFactory::new(f.client.clone());
    let a1 = first.informer::<ConfigMap>();
    let a2 = first.informer::<ConfigMap>();
    let b = second.informer::<ConfigMap>();
    assert!(
        Arc::ptr_eq(&a1.indexer(), &a2.indexer()),
        "the same informer on every request"
    );
    assert!(
        !Arc::ptr_eq(&a1.indexer(), &b.indexer()),
        "factories share nothing"
    );
    first.start();
    second.start();
    assert!(
        tokio::time::timeout(WAIT, first.wait_for_cache_sync())
            .await
            .unwrap()
    );
    assert!(
        tokio::time::timeout(WAIT, second.wait_for_cache_sync())
            .await
            .unwrap()
    );
    let lister = first.lister::<ConfigMap>();
    assert_eq!(lister.by_namespace("default").get("a").unwrap().name(), "a");
    assert!(
        lister
            .by_namespace("default")
            .get("zzz")
            .unwrap_err()
            .is_not_found()
    );
    assert_eq!(lister.list(&LabelSelector::everything()).len(), 1);
    first.shutdown().await;
    second.shutdown().await;
    assert!(a1.is_stopped() && b.is_stopped());
}

/// A factory with `compact_cache(true)`: listers, indexes and late handlers read the
/// compact objects back as the server wrote them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compact_factory_serves_listers_indexes_and_late_handlers() {
    let f = start().await;
    bulk_create(&f.server, 600);
    touch(&f.client, "bulk-00007", "changed").await;
    let factory = SharedInformerFactory::new(f.client.clone()).compact_cache(true);
    let informer = factory.informer::<ConfigMap>();
    assert!(informer.indexer().representation().is_compact());
    let lister = factory.lister::<ConfigMap>();
    factory.start();
    assert!(
        tokio::time::timeout(WAIT, factory.wait_for_cache_sync())
            .await
            .unwrap()
    );
    converge(&f.client, &informer).await;
    let server: ConfigMap = Api::<ConfigMap>::namespaced(f.client.clone(), "default")
        .get("bulk-00007")
        .await
        .unwrap();
    let cached = lister.by_namespace("default").get("bulk-00007").unwrap();
    assert_eq!(
        *cached, server,
        "the cached object is the server's, field for field"
    );
    assert_eq!(
        informer
            .indexer()
            .by_index(kubeclient::cache::NAMESPACE_INDEX, "default")
            .unwrap()
            .len(),
        600
    );
    let late = Arc::new(Recorder::default());
    let registration = informer.add_event_handler(Shared(late.clone())).unwrap();
    crate::support::until("the late handler gets every cached object", || {
        registration.has_synced()
    })
    .await;
    assert_eq!(late.present.lock().unwrap().len(), 600);
    factory.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_are_also_a_stream() {
    use futures_util::StreamExt;
    let f = start().await;
    create(&f.client, "a").await;
    let running = informer(&f.client, true, Duration::ZERO);
    let (registration, mut stream) = running.informer.notifications().unwrap();
    let running = run(running);
    match tokio::time::timeout(WAIT, stream.next()).await.unwrap() {
        Some(Notification::Add {
            obj,
            is_in_initial_list,
        }) => assert!(obj.name() == "a" && is_in_initial_list),
        other => panic!("expected the initial add, got {other:?}"),
    }
    synced(&running.informer).await;
    let deadline = tokio::time::Instant::now() + WAIT;
    while !registration.has_synced() {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    running.stop().await;
}

/// Random writes and random faults, then quiescence: the cache equals the server and every
/// handler saw a consistent story.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_writes_and_faults_always_converge() {
    random_writes_and_faults_always_converge_holding(Holding::Shared).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_writes_and_faults_always_converge_in_a_compact_cache() {
    random_writes_and_faults_always_converge_holding(Holding::Compact).await;
}

async fn random_writes_and_faults_always_converge_holding(holding: Holding) {
    for seed in [7_u64, 42, 1234] {
        let f: Fixture = start_with(ApiServer::builder().history_window(50)).await;
        let running = informer_holding(&f.client, seed % 2 == 0, Duration::ZERO, holding);
        let recorder = Arc::new(Recorder::default());
        running
            .informer
            .add_event_handler(Shared(recorder.clone()))
            .unwrap();
        let running = run(running);
        synced(&running.informer).await;
        let mut rng = fastrand::Rng::with_seed(seed);
        let api = Api::<ConfigMap>::namespaced(f.client.clone(), "default");
        for step in 0..150 {
            let name = format!("cm-{}", rng.u8(0..15));
            match rng.u8(0..10) {
                0..=5 => {
                    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"step": step.to_string()}});
                    // An injected 500 may hit this write too; the server then stored nothing.
                    let _ = api
                        .patch(
                            &name,
                            &PatchParams::apply("chaos").force(),
                            &Patch::Apply(body),
                        )
                        .await;
                }
                6..=7 => {
                    let _ = api.delete(&name, &DeleteParams::default()).await;
                }
                8 => match rng.u8(0..4) {
                    0 => f.server.drop_watches(),
                    1 => f.server.compact(),
                    2 => f.server.faults().malformed_watch_events(1),
                    _ => f.server.faults().fail_next(1, Fault::InternalError),
                },
                _ => tokio::time::sleep(Duration::from_millis(u64::from(rng.u8(0..20)))).await,
            }
        }
        f.server.faults().clear();
        converge(&f.client, &running.informer).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        let violations = recorder.violations.lock().unwrap().clone();
        assert!(
            violations.is_empty(),
            "seed {seed}: inconsistent notifications {violations:?}"
        );
        let present: BTreeMap<String, String> = recorder
            .present
            .lock()
            .unwrap()
            .iter()
            .map(|k| (k.clone(), String::new()))
            .collect();
        let cached: BTreeMap<String, String> = cache_state(&running.informer)
            .keys()
            .map(|k| (k.clone(), String::new()))
            .collect();
        assert_eq!(
            present, cached,
            "seed {seed}: the handler's view equals the cache"
        );
        running.stop().await;
    }
}
