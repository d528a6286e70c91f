//! The typed client: every verb, pagination, watch resume, Status errors.

use std::time::Duration;

use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kubeclient::{
    Api, DeleteParams, Deleted, ListParams, Patch, PatchParams, PostParams, WatchParams,
};
use kubeclient_apiserver::Fault;
use kubeclient_machinery::{Object, WatchEvent};
use serde_json::json;

use crate::support::start;

fn configmap(name: &str, labels: serde_json::Value) -> ConfigMap {
    serde_json::from_value(
        json!({"metadata": {"name": name, "labels": labels}, "data": {"k": "v"}}),
    )
    .unwrap()
}

#[tokio::test]
async fn every_verb_of_the_typed_client() {
    let f = start().await;
    let api: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    let created = api
        .create(&PostParams::default(), &configmap("a", json!({"app": "x"})))
        .await
        .unwrap();
    assert_eq!(created.name(), "a");
    assert!(!created.resource_version().is_empty());
    let fetched = api.get("a").await.unwrap();
    assert_eq!(fetched.uid(), created.uid());
    assert!(api.get_opt("missing").await.unwrap().is_none());

    let mut changed = fetched.clone();
    changed.data = Some([("k".to_owned(), "2".to_owned())].into());
    let replaced = api
        .replace("a", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_eq!(replaced.data.as_ref().unwrap()["k"], "2");

    let merged = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"m": "1"}})),
        )
        .await
        .unwrap();
    assert_eq!(merged.data.as_ref().unwrap()["m"], "1");
    let strategic = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Strategic(json!({"data": {"s": "1"}})),
        )
        .await
        .unwrap();
    assert_eq!(strategic.data.as_ref().unwrap()["s"], "1");
    let ops: json_patch::Patch =
        serde_json::from_value(json!([{"op": "remove", "path": "/data/s"}])).unwrap();
    let json_patched = api
        .patch("a", &PatchParams::default(), &Patch::<()>::Json(ops))
        .await
        .unwrap();
    assert!(!json_patched.data.as_ref().unwrap().contains_key("s"));
    let applied = api
        .patch(
            "a",
            &PatchParams::apply("tests"),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"applied": "yes"}})),
        )
        .await
        .unwrap();
    assert_eq!(applied.data.as_ref().unwrap()["applied"], "yes");

    let dry = api
        .create(
            &PostParams {
                dry_run: true,
                ..PostParams::default()
            },
            &configmap("dry", json!({})),
        )
        .await
        .unwrap();
    assert_eq!(dry.name(), "dry");
    assert!(api.get_opt("dry").await.unwrap().is_none());

    api.create(&PostParams::default(), &configmap("b", json!({"app": "x"})))
        .await
        .unwrap();
    api.create(&PostParams::default(), &configmap("c", json!({"app": "y"})))
        .await
        .unwrap();
    let selected = api
        .list(&ListParams::default().labels("app=x"))
        .await
        .unwrap();
    assert_eq!(selected.items.len(), 2);

    match api.delete("a", &DeleteParams::default()).await.unwrap() {
        Deleted::Status(status) => assert_eq!(status.status, "Success"),
        Deleted::Object(_) => panic!("a ConfigMap delete answers with a Status"),
    }
    let collection = api
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("app=x"),
        )
        .await
        .unwrap();
    let Deleted::Object(list) = collection else {
        panic!("deletecollection answers with the list")
    };
    assert_eq!(list.items.len(), 1);
    assert_eq!(
        api.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );
}

#[tokio::test]
async fn status_and_scale_subresources() {
    let f = start().await;
    let api: Api<Deployment> = Api::default_namespaced(f.client.clone());
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
                 "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}
    }))
    .unwrap();
    api.create(&PostParams::default(), &deployment)
        .await
        .unwrap();
    let status = api
        .patch_status(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"readyReplicas": 1}})),
        )
        .await
        .unwrap();
    assert_eq!(status.status.unwrap().ready_replicas, Some(1));
    assert_eq!(
        api.get_status("web")
            .await
            .unwrap()
            .status
            .unwrap()
            .ready_replicas,
        Some(1)
    );
    let scale = api
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(5));
    assert_eq!(
        api.get_scale("web").await.unwrap().spec.unwrap().replicas,
        Some(5)
    );
    assert_eq!(api.get("web").await.unwrap().spec.replicas, Some(5));
}

#[tokio::test]
async fn cluster_scoped_resources_and_the_pager() {
    let f = start().await;
    let namespaces: Api<Namespace> = Api::all(f.client.clone());
    for i in 0..7 {
        let ns: Namespace =
            serde_json::from_value(json!({"metadata": {"name": format!("team-{i}")}})).unwrap();
        namespaces
            .create(&PostParams::default(), &ns)
            .await
            .unwrap();
    }
    let first = namespaces
        .list(&ListParams::default().limit(3))
        .await
        .unwrap();
    assert_eq!(first.items.len(), 3);
    assert!(first.continue_token().is_some());
    let all = namespaces
        .list_all(&ListParams::default().limit(3))
        .await
        .unwrap();
    assert_eq!(
        all.items.len(),
        11,
        "7 created plus the 4 initial namespaces"
    );
    assert!(all.metadata.continue_.is_none());
}

#[tokio::test]
async fn a_watch_resumes_from_a_resource_version() {
    let f = start().await;
    let api: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    let created = api
        .create(&PostParams::default(), &configmap("w", json!({})))
        .await
        .unwrap();
    api.patch(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "2"}})),
    )
    .await
    .unwrap();
    api.delete("w", &DeleteParams::default()).await.unwrap();
    let events: Vec<_> = api
        .watch(
            &WatchParams::default().timeout(1),
            created.resource_version(),
        )
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let kinds: Vec<&str> = events.iter().map(WatchEvent::type_name).collect();
    assert_eq!(kinds, ["MODIFIED", "DELETED"]);
}

#[tokio::test]
async fn a_watch_list_ends_its_initial_events_with_a_bookmark() {
    let f = start().await;
    let api: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    api.create(&PostParams::default(), &configmap("x", json!({})))
        .await
        .unwrap();
    let mut events = api
        .watch(&WatchParams::default().initial_events().timeout(5), "")
        .await
        .unwrap();
    assert!(matches!(
        events.next().await,
        Some(Ok(WatchEvent::Added(_)))
    ));
    match events.next().await {
        Some(Ok(WatchEvent::Bookmark(bookmark))) => assert!(bookmark.is_initial_events_end()),
        other => panic!("expected the initial-events-end bookmark, got {other:?}"),
    }
}

#[tokio::test]
async fn status_errors_are_typed() {
    let f = start().await;
    let api: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    let missing = api.get("nope").await.unwrap_err();
    assert!(missing.is_not_found(), "{missing}");
    assert_eq!(missing.to_string(), "configmaps \"nope\" not found");

    let created = api
        .create(&PostParams::default(), &configmap("c", json!({})))
        .await
        .unwrap();
    let exists = api
        .create(&PostParams::default(), &configmap("c", json!({})))
        .await
        .unwrap_err();
    assert!(exists.api().unwrap().is_already_exists());
    api.patch(
        "c",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "new"}})),
    )
    .await
    .unwrap();
    let stale = api
        .replace("c", &PostParams::default(), &created)
        .await
        .unwrap_err();
    assert!(stale.api().unwrap().is_conflict(), "{stale}");

    let invalid = api
        .create(&PostParams::default(), &configmap("Bad_Name", json!({})))
        .await
        .unwrap_err();
    assert!(invalid.api().unwrap().is_invalid(), "{invalid}");

    let rv = created.resource_version().to_owned();
    f.server.compact();
    let expired = api
        .list(&ListParams::default().at(&rv).exact())
        .await
        .unwrap_err();
    assert!(expired.api().unwrap().is_resource_expired(), "{expired}");
    let mut watch = api.watch(&WatchParams::default(), &rv).await.unwrap();
    match watch.next().await {
        Some(Ok(WatchEvent::Error(status))) => assert_eq!(status.code, 410),
        other => panic!("expected a 410 ERROR event, got {other:?}"),
    }
}

#[tokio::test(start_paused = false)]
async fn too_many_requests_is_retried_after_the_servers_delay() {
    let f = start().await;
    let api: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    f.server.faults().fail_next(
        2,
        Fault::TooManyRequests {
            retry_after_seconds: 1,
        },
    );
    let started = std::time::Instant::now();
    let list = api.list(&ListParams::default()).await.unwrap();
    assert!(list.items.is_empty());
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "two Retry-After: 1 waits were honoured"
    );
    assert_eq!(f.server.faults().pending(), 0);

    f.server.faults().fail_next(1, Fault::InternalError);
    let failed = api.list(&ListParams::default()).await.unwrap_err();
    assert_eq!(
        failed.api().unwrap().code(),
        500,
        "a 500 without Retry-After is not retried"
    );
}
