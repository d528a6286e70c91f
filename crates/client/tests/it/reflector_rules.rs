//! The reflector's edge rules, each as client-go's reflector keeps it, against the
//! embedded server (a recording lister-watcher in between sees every request).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kubeclient::cache::{
    ApiListWatch, Backoff, BoxFuture, InformerOptions, ListerWatcher, ReflectorOptions,
    SharedIndexInformer,
};
use kubeclient::machinery::{ApiError, Status};
use kubeclient::rest::watch::WatchStream;
use kubeclient::rest::{DecodeOptions, SharedList};
use kubeclient::{Api, CancellationToken, ListParams, ObjectList, WatchParams};

use crate::support::{WAIT, bulk_create, force_relist, start, until};

/// Records every list and watch, can fail the next watches with 429, and can pretend the
/// server has no watch cache (lists at "0" are served paginated, from storage).
struct Recording {
    inner: ApiListWatch<ConfigMap>,
    lists: Mutex<Vec<ListParams>>,
    watches: Mutex<Vec<WatchParams>>,
    failing_watches: AtomicUsize,
    no_watch_cache: bool,
}

impl Recording {
    fn new(api: Api<ConfigMap>, no_watch_cache: bool) -> Arc<Self> {
        Arc::new(Recording {
            inner: ApiListWatch::new(api),
            lists: Mutex::new(Vec::new()),
            watches: Mutex::new(Vec::new()),
            failing_watches: AtomicUsize::new(0),
            no_watch_cache,
        })
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
        let fail = self
            .failing_watches
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        Box::pin(async move {
            if fail {
                let status = Status::too_many_requests("injected: the server is overloaded", 1);
                return Err(kubeclient::Error::Api(Box::new(ApiError::from(status))));
            }
            self.inner.watch(params, rv).await
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
    let options = InformerOptions {
        name: "configmaps".to_owned(),
        reflector: ReflectorOptions {
            use_watch_list: watch_list,
            page_size,
            backoff: Backoff::new(
                Duration::from_millis(20),
                Duration::from_millis(100),
                Duration::from_secs(60),
            ),
            ..ReflectorOptions::default()
        },
        ..InformerOptions::default()
    };
    SharedIndexInformer::new(lw.clone(), options)
}

fn run(informer: &SharedIndexInformer<ConfigMap>) -> CancellationToken {
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
    lw.failing_watches.store(2, Ordering::SeqCst);
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
