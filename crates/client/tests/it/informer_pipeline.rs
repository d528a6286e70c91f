//! The informer's decode path and contract under load: undecodable objects, relists that
//! share unchanged objects, per-registration sync, foreign registrations, and a relist in
//! the middle of a burst with a slow handler.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kubeclient::cache::{
    ApiListWatch, InformerOptions, KnownObjects, ResourceEventHandlerFuncs, SharedIndexInformer,
};
use kubeclient::machinery::{Object, meta_namespace_key};
use kubeclient::{Api, Client, Patch, PatchParams};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::support::{
    WAIT, cache_state, force_relist, list_then_watch_options, server_state, start, store_write,
    until,
};

fn configmaps(client: &Client) -> Api<ConfigMap> {
    Api::namespaced(client.clone(), "default")
}

fn new_informer(client: &Client) -> SharedIndexInformer<ConfigMap> {
    SharedIndexInformer::new(
        Arc::new(ApiListWatch::new(configmaps(client))),
        list_then_watch_options(),
    )
}

fn spawn(informer: &SharedIndexInformer<ConfigMap>) -> CancellationToken {
    let stop = CancellationToken::new();
    let (informer, token) = (informer.clone(), stop.clone());
    tokio::spawn(async move { informer.run(token).await });
    stop
}

fn configmap_json(name: &str, data: Value) -> Value {
    json!({"kind": "ConfigMap", "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")}, "data": data})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undecodable_object_is_skipped_and_reported_while_the_rest_converges() {
    let f = start().await;
    for i in 0..20 {
        store_write(
            &f.server,
            &format!("good-{i:02}"),
            configmap_json(&format!("good-{i:02}"), json!({"k": "v"})),
        );
    }
    // `data` must be a map of strings: this object cannot decode as a ConfigMap.
    store_write(&f.server, "bad", configmap_json("bad", json!(5)));
    let informer = new_informer(&f.client);
    let reported = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = reported.clone();
    informer
        .set_watch_error_handler(Arc::new(move |err| {
            sink.lock().unwrap().push(err.to_string())
        }))
        .unwrap();
    let stop = spawn(&informer);
    until("the informer syncs", || informer.has_synced()).await;
    assert_eq!(informer.indexer().len(), 20, "every good object is cached");
    until("the bad item is reported", || {
        !reported.lock().unwrap().is_empty()
    })
    .await;
    assert!(
        reported.lock().unwrap()[0].contains("default/bad"),
        "the report names the object: {:?}",
        reported.lock().unwrap()
    );
    // A watch event whose object does not decode is reported and skipped: no relist.
    store_write(
        &f.server,
        "good-00",
        configmap_json("good-00", json!({"k": ["not a string"]})),
    );
    until("the bad event is reported", || {
        reported.lock().unwrap().len() >= 2
    })
    .await;
    store_write(&f.server, "late", configmap_json("late", json!({"k": "v"})));
    until("a later event still arrives", || {
        informer
            .indexer()
            .get_by_key("default/late")
            .ok()
            .flatten()
            .is_some()
    })
    .await;
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relist_shares_unchanged_objects_and_decodes_only_changed_ones() {
    let f = start().await;
    for name in ["a", "b", "c"] {
        store_write(&f.server, name, configmap_json(name, json!({"v": "1"})));
    }
    let informer = new_informer(&f.client);
    let stop = spawn(&informer);
    until("the informer syncs", || informer.has_synced()).await;
    let get = |key: &str| informer.indexer().get_by_key(key).unwrap().unwrap();
    let (a_before, b_before) = (get("default/a"), get("default/b"));
    f.server.faults().set_delay(Duration::from_millis(300));
    f.server.drop_watches();
    store_write(&f.server, "b", configmap_json("b", json!({"v": "2"})));
    f.server.compact();
    f.server.faults().set_delay(Duration::ZERO);
    let server = server_state(&f.client).await;
    until("the relist converges", || cache_state(&informer) == server).await;
    assert!(
        Arc::ptr_eq(&a_before, &get("default/a")),
        "an object relisted at the same resourceVersion is the cached one, not a new copy"
    );
    let b_after = get("default/b");
    assert!(!Arc::ptr_eq(&b_before, &b_after));
    assert_eq!(b_after.data.as_ref().unwrap()["v"], "2");
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registration_has_synced_only_after_its_handler_handled_every_initial_add() {
    let f = start().await;
    for i in 0..400 {
        store_write(
            &f.server,
            &format!("cm-{i:03}"),
            configmap_json(&format!("cm-{i:03}"), json!({})),
        );
    }
    let informer = new_informer(&f.client);
    let handled = Arc::new(AtomicUsize::new(0));
    let counter = handled.clone();
    let registration = informer
        .add_event_handler(
            ResourceEventHandlerFuncs::new().on_add(move |_: &Arc<ConfigMap>, _| {
                std::thread::sleep(Duration::from_micros(300));
                counter.fetch_add(1, Ordering::SeqCst);
            }),
        )
        .unwrap();
    let stop = spawn(&informer);
    let deadline = tokio::time::Instant::now() + WAIT;
    while !registration.has_synced() {
        assert!(tokio::time::Instant::now() < deadline, "never synced");
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    assert_eq!(
        handled.load(Ordering::SeqCst),
        400,
        "has_synced turned true only once the handler had handled the whole initial list"
    );
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_a_registration_of_another_informer_is_a_no_op() {
    let f = start().await;
    let (first, second) = (new_informer(&f.client), new_informer(&f.client));
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    let foreign = first
        .add_event_handler(ResourceEventHandlerFuncs::<ConfigMap>::new())
        .unwrap();
    let own = second
        .add_event_handler(
            ResourceEventHandlerFuncs::new().on_add(move |_: &Arc<ConfigMap>, _| {
                counter.fetch_add(1, Ordering::SeqCst);
            }),
        )
        .unwrap();
    second.remove_event_handler(&foreign);
    assert!(own.is_registered() && foreign.is_registered());
    assert_eq!((first.handler_count(), second.handler_count()), (1, 1));
    assert!(!second.is_started());
    let stop = spawn(&second);
    store_write(&f.server, "x", configmap_json("x", json!({})));
    until(
        "the second informer's own handler still receives events",
        || seen.load(Ordering::SeqCst) == 1,
    )
    .await;
    assert!(second.is_started());
    first.remove_event_handler(&foreign);
    assert!(!foreign.is_registered());
    assert_eq!(first.handler_count(), 0);
    stop.cancel();
}

/// What the slow handler saw, per key: the last resourceVersion, and any break in order.
#[derive(Default)]
struct Chain {
    last: HashMap<String, u64>,
    violations: Vec<String>,
    updates: usize,
}

fn rv(cm: &ConfigMap) -> u64 {
    cm.resource_version().parse().unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relist_during_a_burst_with_a_slow_handler_delivers_changes_in_order_and_converges() {
    let f = start().await;
    for i in 0..100 {
        store_write(
            &f.server,
            &format!("cm-{i:03}"),
            configmap_json(&format!("cm-{i:03}"), json!({"n": "0"})),
        );
    }
    let informer = new_informer(&f.client);
    let chain = Arc::new(Mutex::new(Chain::default()));
    let (on_add, on_update) = (chain.clone(), chain.clone());
    informer
        .add_event_handler(
            ResourceEventHandlerFuncs::new()
                .on_add(move |cm: &Arc<ConfigMap>, _| {
                    let mut chain = on_add.lock().unwrap();
                    let key = meta_namespace_key(cm.as_ref());
                    if chain.last.insert(key.clone(), rv(cm)).is_some() {
                        chain.violations.push(format!("add of a present {key}"));
                    }
                })
                .on_update(move |old: &Arc<ConfigMap>, new: &Arc<ConfigMap>| {
                    // A slow handler: the informer must slow down, not buffer without bound.
                    std::thread::sleep(Duration::from_micros(500));
                    let mut chain = on_update.lock().unwrap();
                    chain.updates += 1;
                    let key = meta_namespace_key(new.as_ref());
                    let last = chain.last.get(&key).copied();
                    if last != Some(rv(old)) {
                        chain
                            .violations
                            .push(format!("{key}: old {} after {last:?}", rv(old)));
                    }
                    if rv(new) < rv(old) {
                        chain
                            .violations
                            .push(format!("{key}: went back to {}", rv(new)));
                    }
                    chain.last.insert(key, rv(new));
                }),
        )
        .unwrap();
    let stop = spawn(&informer);
    until("the informer syncs", || informer.has_synced()).await;
    // The writer has no client-side rate limit (3,000 writes would take a minute at 50/s).
    let mut config = crate::support::config_of(&f.server);
    config.qps = 0.0;
    let api = configmaps(&Client::new(config).await.unwrap());
    for round in 1..=30 {
        let patches = (0..100).map(|i| {
            let api = api.clone();
            async move {
                api.patch(
                    &format!("cm-{i:03}"),
                    &PatchParams::default(),
                    &Patch::Merge(json!({"data": {"n": round.to_string()}})),
                )
                .await
            }
        });
        for result in futures_util::future::join_all(patches).await {
            result.unwrap();
        }
        if round == 15 {
            force_relist(&f.server);
        }
    }
    let server = server_state(&f.client).await;
    until("the cache converges", || cache_state(&informer) == server).await;
    let expected: HashMap<String, u64> = server
        .iter()
        .map(|(key, rv)| (key.clone(), rv.parse().unwrap()))
        .collect();
    until("the handler catches up", || {
        chain.lock().unwrap().last == expected
    })
    .await;
    let chain = chain.lock().unwrap();
    assert!(chain.violations.is_empty(), "{:?}", chain.violations);
    assert!(
        chain.updates >= 100,
        "the burst reached the handler ({} updates)",
        chain.updates
    );
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_resync_period_never_overflows_the_clock() {
    let f = start().await;
    store_write(&f.server, "a", configmap_json("a", json!({})));
    let options = InformerOptions {
        name: "configmaps".to_owned(),
        resync_period: Duration::MAX,
        ..InformerOptions::default()
    };
    let informer =
        SharedIndexInformer::new(Arc::new(ApiListWatch::new(configmaps(&f.client))), options);
    let registration = informer
        .add_event_handler_with_resync_period(
            ResourceEventHandlerFuncs::<ConfigMap>::new(),
            Duration::MAX,
        )
        .unwrap();
    let stop = spawn(&informer);
    until("the informer syncs", || registration.has_synced()).await;
    assert_eq!(informer.indexer().len(), 1);
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_and_waiting_returns_once_the_running_call_returned_and_nothing_more_arrives() {
    let f = start().await;
    for i in 0..20 {
        let name = format!("cm-{i:02}");
        store_write(&f.server, &name, configmap_json(&name, json!({})));
    }
    let informer = new_informer(&f.client);
    let calls = Arc::new(AtomicUsize::new(0));
    let in_call = Arc::new(AtomicUsize::new(0));
    let (counter, busy) = (calls.clone(), in_call.clone());
    let registration = informer
        .add_event_handler(
            ResourceEventHandlerFuncs::new().on_add(move |_: &Arc<ConfigMap>, _| {
                busy.store(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(100));
                counter.fetch_add(1, Ordering::SeqCst);
                busy.store(0, Ordering::SeqCst);
            }),
        )
        .unwrap();
    let stop = spawn(&informer);
    until("the handler is inside a call", || {
        in_call.load(Ordering::SeqCst) == 1
    })
    .await;
    tokio::time::timeout(WAIT, informer.remove_event_handler_and_wait(&registration))
        .await
        .expect("removal returns");
    assert_eq!(
        in_call.load(Ordering::SeqCst),
        0,
        "the running call had returned"
    );
    let after_removal = calls.load(Ordering::SeqCst);
    assert!(after_removal < 20, "pending notifications were dropped");
    assert!(!registration.is_registered());
    assert_eq!(informer.handler_count(), 0);
    // A handler registered now: once it has heard of "late", "late" was handed out to every
    // registered handler.
    let heard_late = Arc::new(AtomicUsize::new(0));
    let sentinel = heard_late.clone();
    informer
        .add_event_handler(ResourceEventHandlerFuncs::new().on_add(
            move |cm: &Arc<ConfigMap>, _| {
                if cm.metadata.name.as_deref() == Some("late") {
                    sentinel.store(1, Ordering::SeqCst);
                }
            },
        ))
        .unwrap();
    store_write(&f.server, "late", configmap_json("late", json!({})));
    until("a registered handler hears of the late object", || {
        heard_late.load(Ordering::SeqCst) == 1
    })
    .await;
    assert_eq!(
        calls.load(Ordering::SeqCst),
        after_removal,
        "no call after removal"
    );

    // A notification stream nobody reads is shut down at once too.
    let (stream_registration, _unread) = informer.notifications().unwrap();
    store_write(&f.server, "later", configmap_json("later", json!({})));
    tokio::time::timeout(
        WAIT,
        informer.remove_event_handler_and_wait(&stream_registration),
    )
    .await
    .expect("removing an unread stream returns");
    stop.cancel();
}
