//! Metadata-only informers cache `PartialObjectMetadata` (apiVersion, kind, metadata),
//! also from a server that ignores `as=PartialObjectMetadata` and sends whole objects.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kubeclient::cache::{KnownObjects, ResourceEventHandlerFuncs, SharedIndexInformer, Store};
use kubeclient::informers::SharedInformerFactory;
use kubeclient::machinery::{ApiResource, DynamicObject, Object, meta_namespace_key};
use kubeclient::{Api, Client, ListParams, Patch, PatchParams, PostParams};
use serde::Serialize;
use serde_json::json;

use crate::support::{WAIT, start, until};

/// A ConfigMap with a large `data`: a cache that kept it would show.
async fn create(client: &Client, name: &str) {
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": "web"}},
        "data": {"payload": "x".repeat(8192)},
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
}

/// The top-level fields of `object` as serialized, sorted.
fn fields<K: Serialize>(object: &K) -> Vec<String> {
    let value = serde_json::to_value(object).unwrap();
    value.as_object().unwrap().keys().cloned().collect()
}

/// A handler that records the top-level fields of every object it receives.
fn recording<K: Serialize + Send + Sync + 'static>(
    handled: &Arc<Mutex<Vec<Vec<String>>>>,
) -> ResourceEventHandlerFuncs<K> {
    let (on_add, on_update) = (handled.clone(), handled.clone());
    ResourceEventHandlerFuncs::new()
        .on_add(move |obj: &Arc<K>, _| on_add.lock().unwrap().push(fields(obj.as_ref())))
        .on_update(move |_, obj: &Arc<K>| on_update.lock().unwrap().push(fields(obj.as_ref())))
}

/// Every cached object holds exactly the server's metadata and nothing else, and every
/// object a handler received held nothing else either.
async fn assert_only_metadata<K: Object + Serialize>(
    client: &Client,
    informer: &SharedIndexInformer<K>,
    handled: &Mutex<Vec<Vec<String>>>,
) {
    let server = Api::<ConfigMap>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .unwrap();
    until("the cache has the server's objects", || {
        let cached = informer.indexer().list();
        cached.len() == server.items.len()
            && server.items.iter().all(|cm| {
                informer
                    .indexer()
                    .get_by_key(&meta_namespace_key(cm))
                    .ok()
                    .flatten()
                    .is_some_and(|obj| obj.resource_version() == cm.resource_version())
            })
    })
    .await;
    for cm in &server.items {
        let cached = informer
            .indexer()
            .get_by_key(&meta_namespace_key(cm))
            .unwrap()
            .unwrap();
        assert_eq!(cached.meta(), &cm.metadata, "the server's metadata, whole");
        assert_eq!(
            (&*cached.api_version(), &*cached.kind()),
            ("meta.k8s.io/v1", "PartialObjectMetadata")
        );
        assert_eq!(
            fields(cached.as_ref()),
            ["apiVersion", "kind", "metadata"],
            "metadata only"
        );
    }
    let handled = handled.lock().unwrap();
    assert!(!handled.is_empty());
    for fields in handled.iter() {
        assert_eq!(fields, &["apiVersion", "kind", "metadata"]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_metadata_informer_keeps_only_metadata_even_when_the_server_sends_whole_objects() {
    for (ignore_as, watch_list) in [(false, false), (true, false), (true, true)] {
        let f = start().await;
        f.server.faults().ignore_as_parameter(ignore_as);
        for name in ["a", "b"] {
            create(&f.client, name).await;
        }
        // The server really answers as configured: whole objects when it ignores `as=`.
        let resource = ApiResource::of::<ConfigMap>();
        let listed = Api::<DynamicObject>::namespaced_with(f.client.clone(), "default", &resource)
            .list_metadata(&ListParams::default())
            .await
            .unwrap();
        assert_eq!(
            listed.items[0].data.contains_key("data"),
            ignore_as,
            "ignore as=: {ignore_as}"
        );

        let factory = SharedInformerFactory::new(f.client.clone())
            .namespace("default")
            .watch_list(watch_list);
        let informer = factory.metadata_informer(&resource);
        let handled = Arc::new(Mutex::new(Vec::new()));
        let _registration = informer.add_event_handler(recording(&handled)).unwrap();
        factory.start();
        assert!(
            tokio::time::timeout(WAIT, factory.wait_for_cache_sync())
                .await
                .unwrap()
        );
        assert_only_metadata(&f.client, &informer, &handled).await;

        // Watch events carry whole objects too; the cache still keeps metadata only.
        create(&f.client, "c").await;
        Api::<ConfigMap>::namespaced(f.client.clone(), "default")
            .patch(
                "a",
                &PatchParams::default(),
                &Patch::Merge(
                    json!({"metadata": {"labels": {"app": "api"}}, "data": {"more": "y"}}),
                ),
            )
            .await
            .unwrap();
        until("the watch brings the new object and the new label", || {
            let label = |key: &str| {
                informer
                    .indexer()
                    .get_by_key(key)
                    .ok()
                    .flatten()
                    .map(|obj| obj.labels().get("app").cloned())
            };
            label("default/c").is_some() && label("default/a") == Some(Some("api".to_owned()))
        })
        .await;
        assert_only_metadata(&f.client, &informer, &handled).await;
        tokio::time::timeout(Duration::from_secs(10), factory.shutdown())
            .await
            .unwrap();
    }
}
