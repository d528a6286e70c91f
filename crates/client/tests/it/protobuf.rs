//! The typed client over protobuf (`ContentType::Protobuf`) against the embedded server:
//! every verb, the pager, watches and Status errors, with the same results as over JSON;
//! dynamic objects stay JSON.

use std::collections::BTreeMap;

use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kubeclient::machinery::{ApiResource, DynamicObject, Object, WatchEvent};
use kubeclient::rest::{ContentType, DecodeOptions};
use kubeclient::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchParams};
use serde_json::json;

use crate::support::{start_as, start_with_as_client};

fn configmap(name: &str) -> ConfigMap {
    serde_json::from_value(
        json!({"metadata": {"name": name, "labels": {"app": "pb"}}, "data": {"k": "v"}}),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_verb_over_protobuf_gives_what_json_gives() {
    let f = start_as(ContentType::Protobuf).await;
    let pb: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    assert!(pb.uses_protobuf());
    let json_client = start_with_as_client(&f.server, ContentType::Json).await;
    let json: Api<ConfigMap> = Api::namespaced(json_client, "default");
    assert!(!json.uses_protobuf());

    let created = pb
        .create(&PostParams::default(), &configmap("a"))
        .await
        .unwrap();
    assert_eq!(created, json.get("a").await.unwrap());
    assert_eq!(pb.get("a").await.unwrap(), created);

    let mut changed = created.clone();
    changed.data = Some(BTreeMap::from([("k".to_owned(), "2".to_owned())]));
    let replaced = pb
        .replace("a", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_eq!(replaced.data.as_ref().unwrap()["k"], "2");
    let patched = pb
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"m": "1"}})),
        )
        .await
        .unwrap();
    assert_eq!(patched, json.get("a").await.unwrap());

    // Secret data are bytes on the wire.
    let secrets: Api<Secret> = Api::namespaced(f.client.clone(), "default");
    let secret: Secret =
        serde_json::from_value(json!({"metadata": {"name": "s"}, "data": {"p": "AAEC/w=="}}))
            .unwrap();
    let stored = secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    assert_eq!(stored.data.unwrap()["p"], ByteString(vec![0, 1, 2, 255]));

    // Errors arrive as protobuf Status and keep their meaning.
    let missing = pb.get("nope").await.unwrap_err();
    assert!(missing.is_not_found(), "{missing}");
    let conflict = pb
        .create(&PostParams::default(), &configmap("a"))
        .await
        .unwrap_err();
    assert!(
        matches!(&conflict, kubeclient::Error::Api(err) if err.is_already_exists()),
        "{conflict}"
    );

    pb.delete("a", &DeleteParams::default()).await.unwrap();
    assert!(json.get_opt("a").await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pager_and_shared_lists_read_protobuf_pages() {
    let f = start_as(ContentType::Protobuf).await;
    crate::support::bulk_create(&f.server, 1200);
    let pb: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    let all = pb
        .list_all(&ListParams::default().limit(500))
        .await
        .unwrap();
    assert_eq!(all.items.len(), 1200);
    let page = pb.list(&ListParams::default().limit(500)).await.unwrap();
    assert_eq!(page.items.len(), 500);
    assert!(page.continue_token().is_some());
    let shared = pb
        .list_shared(
            &ListParams::default(),
            false,
            &DecodeOptions {
                strip_managed_fields: true,
                ..DecodeOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(shared.items.len(), 1200);
    assert!(shared.skipped.is_empty());
    assert!(
        !shared
            .metadata
            .resource_version
            .unwrap_or_default()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_over_protobuf_deliver_events_and_bookmarks() {
    let f = start_as(ContentType::Protobuf).await;
    let pb: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    pb.create(&PostParams::default(), &configmap("x"))
        .await
        .unwrap();
    let mut events = pb
        .watch(&WatchParams::default().initial_events().timeout(5), "")
        .await
        .unwrap();
    assert!(matches!(events.next().await, Some(Ok(WatchEvent::Added(cm))) if cm.name() == "x"));
    match events.next().await {
        Some(Ok(WatchEvent::Bookmark(bookmark))) => assert!(bookmark.is_initial_events_end()),
        other => panic!("expected the initial-events-end bookmark, got {other:?}"),
    }
    let rv = pb.get("x").await.unwrap().resource_version().to_owned();
    pb.patch(
        "x",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "2"}})),
    )
    .await
    .unwrap();
    pb.delete("x", &DeleteParams::default()).await.unwrap();
    let changes: Vec<WatchEvent<ConfigMap>> = pb
        .watch(&WatchParams::default().timeout(1), &rv)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let kinds: Vec<&str> = changes.iter().map(WatchEvent::type_name).collect();
    assert_eq!(kinds, ["MODIFIED", "DELETED"]);
    // A watch from a compacted revision gets a protobuf 410 ERROR event.
    f.server.compact();
    let mut expired = pb.watch(&WatchParams::default(), &rv).await.unwrap();
    match expired.next().await {
        Some(Ok(WatchEvent::Error(status))) => assert_eq!(status.code, 410),
        other => panic!("expected a 410 ERROR event, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_subresources_and_dynamic_objects() {
    let f = start_as(ContentType::Protobuf).await;
    let deployments: Api<Deployment> = Api::namespaced(f.client.clone(), "default");
    let deployment: Deployment = serde_json::from_value(json!({"metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}))
        .unwrap();
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();
    let mut scale = deployments.get_scale("web").await.unwrap();
    assert_eq!(scale.spec.as_ref().and_then(|s| s.replicas), Some(2));
    scale.spec.as_mut().unwrap().replicas = Some(0);
    deployments
        .replace_scale("web", &PostParams::default(), &scale)
        .await
        .unwrap();
    let scaled = deployments.get("web").await.unwrap();
    assert_eq!(
        scaled.spec.replicas,
        Some(0),
        "zero replicas survive protobuf"
    );

    // Dynamic objects never use protobuf, even for a built-in kind.
    let dynamic: Api<DynamicObject> =
        Api::namespaced_with(f.client.clone(), "default", &ApiResource::of::<ConfigMap>());
    assert!(!dynamic.uses_protobuf());
    assert!(
        dynamic
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}
