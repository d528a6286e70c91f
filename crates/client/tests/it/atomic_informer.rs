//! An informer on the atomic RealFIFO (client-go's `AtomicFIFO`): the initial list and a
//! relist after a 410 each reach the cache as one replacement, and handlers hear the
//! relist's deletions, then its updates and adds.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kubeclient::cache::{
    ApiListWatch, InformerOptions, KnownObjects, Notification, SharedIndexInformer,
};
use kubeclient::machinery::{DeletedObject, GroupResource, Object};
use kubeclient::{Api, PostParams};
use kubeclient_apiserver::Fault;
use kubeclient_apiserver::storage::Write;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::support::{WAIT, list_then_watch_options, start, store_write};

fn configmap(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.meta_mut().name = Some(name.to_owned());
    cm.data = Some(BTreeMap::from([("v".to_owned(), "1".to_owned())]));
    cm
}

/// A notification as `"Add a initial"`, `"Update b"`, `"Delete c tombstone"`.
fn describe(notification: &Notification<ConfigMap>) -> String {
    match notification {
        Notification::Add {
            obj,
            is_in_initial_list,
        } => format!(
            "Add {}{}",
            obj.name(),
            if *is_in_initial_list { " initial" } else { "" }
        ),
        Notification::Update { new, .. } => format!("Update {}", new.name()),
        Notification::Delete(DeletedObject::Final(obj)) => format!("Delete {}", obj.name()),
        Notification::Delete(DeletedObject::FinalStateUnknown(tombstone)) => {
            format!("Delete {} tombstone", tombstone.key)
        }
    }
}

#[tokio::test]
async fn an_atomic_informer_applies_the_initial_list_and_a_relist_as_one_replacement_each() {
    let fixture = start().await;
    let api = Api::<ConfigMap>::namespaced(fixture.client.clone(), "default");
    for name in ["a", "b", "c"] {
        api.create(&PostParams::default(), &configmap(name))
            .await
            .unwrap();
    }
    let options = InformerOptions {
        atomic_events: true,
        ..list_then_watch_options()
    };
    let informer = SharedIndexInformer::new(Arc::new(ApiListWatch::new(api.clone())), options);
    let (_registration, notifications) = informer.notifications().unwrap();
    let mut notifications = Box::pin(notifications);
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (informer, stop) = (informer.clone(), stop.clone());
        async move { informer.run(stop).await }
    });
    assert!(informer.wait_for_cache_sync(&stop).await);

    let mut next = async || {
        let notification = tokio::time::timeout(WAIT, notifications.next())
            .await
            .expect("a notification before the deadline")
            .expect("the stream is open");
        describe(&notification)
    };
    let mut initial = vec![next().await, next().await, next().await];
    initial.sort();
    assert_eq!(initial, ["Add a initial", "Add b initial", "Add c initial"]);

    // The informer's re-watch gets 410, so it relists; the changes are made straight in
    // storage (no request to take the fault) before it can.
    fixture.server.faults().fail_next(1, Fault::Expired);
    fixture.server.drop_watches();
    store_write(
        &fixture.server,
        "b",
        json!({"kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": "b", "namespace": "default"}, "data": {"v": "2"}}),
    );
    store_write(
        &fixture.server,
        "d",
        json!({"kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": "d", "namespace": "default", "uid": "uid-d"}}),
    );
    fixture
        .server
        .store()
        .write(&GroupResource::new("", "configmaps"), "default/c", |_| {
            Ok::<_, ()>(Write::Delete)
        })
        .unwrap();

    // Deletions first, then updates and adds in list order; "a" is unchanged, so only
    // resyncing handlers would hear it.
    let sorted_keys = || {
        let mut keys = informer.indexer().list_keys();
        keys.sort();
        keys
    };
    let first = next().await;
    // The whole relist is in the cache before handlers hear its first change (without the
    // atomic mode "d" would be added only after the deletion of "c" was handed out).
    assert_eq!(sorted_keys(), ["default/a", "default/b", "default/d"]);
    let relist = [first, next().await, next().await];
    assert_eq!(relist, ["Delete default/c tombstone", "Update b", "Add d"]);

    stop.cancel();
    tokio::time::timeout(WAIT, task).await.unwrap().unwrap();
}
