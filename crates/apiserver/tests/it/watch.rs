//! Watch streams: initial state, resume from a resourceVersion, 410 as an ERROR event,
//! bookmarks, watch-list, selectors entering and leaving (apiserver-semantics §5).

use std::time::Duration;

use serde_json::json;

use crate::support::{TestServer, describe};

fn pair(kind: &str, name: &str) -> (String, String) {
    (kind.to_owned(), name.to_owned())
}

#[tokio::test]
async fn a_watch_without_resource_version_starts_with_the_current_state() {
    let t = TestServer::start().await;
    t.create_configmap("a", json!({})).await;
    let mut watch = t
        .watch("/api/v1/namespaces/default/configmaps?watch=true")
        .await;
    assert_eq!(describe(&watch.next().await.unwrap()), pair("ADDED", "a"));
    t.create_configmap("b", json!({})).await;
    let event = watch.next().await.unwrap();
    assert_eq!(describe(&event), pair("ADDED", "b"));
    assert_eq!(
        event["object"]["kind"], "ConfigMap",
        "event objects carry their kind"
    );
}

#[tokio::test]
async fn a_watch_from_a_resource_version_gets_exactly_the_later_changes() {
    let t = TestServer::start().await;
    let rv = t.create_configmap("a", json!({})).await;
    t.patch(
        "/api/v1/namespaces/default/configmaps/a",
        "application/merge-patch+json",
        r#"{"data":{"k":"2"}}"#,
    )
    .await;
    t.delete("/api/v1/namespaces/default/configmaps/a").await;
    let mut watch = t
        .watch(&format!(
            "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={rv}"
        ))
        .await;
    let modified = watch.next().await.unwrap();
    assert_eq!(describe(&modified), pair("MODIFIED", "a"));
    let deleted = watch.next().await.unwrap();
    assert_eq!(describe(&deleted), pair("DELETED", "a"));
    assert_eq!(
        deleted["object"]["data"]["k"], "2",
        "DELETED carries the last state"
    );
    let modified_rv: u64 = modified["object"]["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let deleted_rv: u64 = deleted["object"]["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(deleted_rv > modified_rv, "DELETED has the deletion's RV");
    watch.expect_quiet(Duration::from_millis(200)).await;
}

#[tokio::test]
async fn a_too_old_resource_version_gets_a_410_error_event_in_a_200_stream() {
    let t = TestServer::start().await;
    let rv = t.create_configmap("a", json!({})).await;
    t.create_configmap("b", json!({})).await;
    t.server.compact();
    let mut watch = t
        .watch(&format!(
            "/api/v1/configmaps?watch=true&resourceVersion={rv}"
        ))
        .await;
    let error = watch.next().await.unwrap();
    assert_eq!(error["type"], "ERROR");
    assert_eq!(
        (
            error["object"]["code"].as_i64(),
            error["object"]["reason"].as_str()
        ),
        (Some(410), Some("Expired"))
    );
    assert!(
        error["object"]["message"]
            .as_str()
            .unwrap()
            .starts_with("too old resource version")
    );
    assert!(
        watch.next().await.is_none(),
        "the stream ends after the error"
    );
}

/// A plain watch from a resourceVersion the server has not reached starts (as from
/// kube-apiserver's watch cache) and delivers only the changes after it; a watch-list
/// from one waits briefly, then ends with a 504 `ResourceVersionTooLarge` ERROR event.
#[tokio::test]
async fn a_watch_from_a_resource_version_not_reached_yet_waits_for_the_changes_after_it() {
    let t = TestServer::start().await;
    let ahead = t.server.store().revision() + 2;
    let mut watch = t
        .watch(&format!(
            "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={ahead}"
        ))
        .await;
    t.create_configmap("a", json!({})).await;
    t.create_configmap("b", json!({})).await;
    t.create_configmap("c", json!({})).await;
    let first = watch.next().await.expect("an event");
    assert_eq!(describe(&first), pair("ADDED", "c"), "{first}");
    let far = t.server.store().revision() + 1000;
    let mut watch_list = t
        .watch(&format!(
            "/api/v1/namespaces/default/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion={far}"
        ))
        .await;
    let error = watch_list.next().await.expect("an error event");
    assert_eq!(error["type"], "ERROR", "{error}");
    assert_eq!(error["object"]["code"], 504);
    assert_eq!(
        error["object"]["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );
}

#[tokio::test]
async fn timeout_seconds_ends_the_stream_cleanly() {
    let t = TestServer::start().await;
    let mut watch = t
        .watch("/api/v1/configmaps?watch=true&timeoutSeconds=1&resourceVersion=1")
        .await;
    assert!(
        watch
            .next_within(Duration::from_secs(4))
            .await
            .expect("ends within 4 s")
            .is_none()
    );
}

#[tokio::test]
async fn watch_list_sends_the_state_then_the_initial_events_end_bookmark() {
    let t = TestServer::start().await;
    t.create_configmap("a", json!({})).await;
    t.create_configmap("b", json!({})).await;
    let mut watch = t
        .watch("/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")
        .await;
    assert_eq!(describe(&watch.next().await.unwrap()), pair("ADDED", "a"));
    assert_eq!(describe(&watch.next().await.unwrap()), pair("ADDED", "b"));
    let bookmark = watch.next().await.unwrap();
    assert_eq!(bookmark["type"], "BOOKMARK");
    assert_eq!(
        bookmark["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    assert_eq!(bookmark["object"]["kind"], "ConfigMap");
    assert_eq!(
        bookmark["object"]["metadata"]["resourceVersion"],
        t.server.store().revision().to_string()
    );
    let invalid = t
        .get("/api/v1/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=Exact")
        .await;
    assert_eq!(invalid.status, 422);
    let no_initial = t
        .get("/api/v1/configmaps?watch=true&resourceVersionMatch=NotOlderThan")
        .await;
    assert_eq!(no_initial.status, 422);
}

#[tokio::test]
async fn periodic_bookmarks_carry_a_resumable_resource_version() {
    let t = TestServer::start_with(
        kubeclient_apiserver::ApiServer::builder().bookmark_interval(Duration::from_millis(100)),
    )
    .await;
    let rv = t.create_configmap("a", json!({})).await;
    let mut watch = t
        .watch(&format!(
            "/api/v1/configmaps?watch=true&allowWatchBookmarks=true&resourceVersion={rv}"
        ))
        .await;
    t.create_configmap("b", json!({})).await;
    assert_eq!(describe(&watch.next().await.unwrap()), pair("ADDED", "b"));
    let bookmark = watch.next().await.unwrap();
    assert_eq!(bookmark["type"], "BOOKMARK");
    assert_eq!(
        bookmark["object"]["metadata"]["resourceVersion"],
        t.server.store().revision().to_string()
    );
}

#[tokio::test]
async fn selectors_turn_updates_into_added_and_deleted() {
    let t = TestServer::start().await;
    t.create_configmap("a", json!({"tier": "web"})).await;
    let mut watch = t.watch("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=1&labelSelector=tier%3Ddb").await;
    let path = "/api/v1/namespaces/default/configmaps/a";
    t.patch(
        path,
        "application/merge-patch+json",
        r#"{"metadata":{"labels":{"tier":"db"}}}"#,
    )
    .await;
    assert_eq!(
        describe(&watch.next().await.unwrap()),
        pair("ADDED", "a"),
        "entering the selector is ADDED"
    );
    t.patch(
        path,
        "application/merge-patch+json",
        r#"{"data":{"k":"2"}}"#,
    )
    .await;
    assert_eq!(
        describe(&watch.next().await.unwrap()),
        pair("MODIFIED", "a")
    );
    t.patch(
        path,
        "application/merge-patch+json",
        r#"{"metadata":{"labels":{"tier":"web"}}}"#,
    )
    .await;
    assert_eq!(
        describe(&watch.next().await.unwrap()),
        pair("DELETED", "a"),
        "leaving the selector is DELETED"
    );
}

#[tokio::test]
async fn dropped_watches_end_and_can_resume_without_loss() {
    let t = TestServer::start().await;
    let rv = t.create_configmap("a", json!({})).await;
    let mut watch = t
        .watch(&format!(
            "/api/v1/configmaps?watch=true&resourceVersion={rv}"
        ))
        .await;
    t.server.drop_watches();
    assert!(watch.next().await.is_none(), "the server ended the stream");
    t.create_configmap("b", json!({})).await;
    let mut resumed = t
        .watch(&format!(
            "/api/v1/configmaps?watch=true&resourceVersion={rv}"
        ))
        .await;
    assert_eq!(describe(&resumed.next().await.unwrap()), pair("ADDED", "b"));
}

#[tokio::test]
async fn one_write_reaches_every_watcher() {
    let t = TestServer::start().await;
    let mut watches = Vec::new();
    for _ in 0..20 {
        watches.push(
            t.watch("/api/v1/configmaps?watch=true&resourceVersion=1")
                .await,
        );
    }
    t.create_configmap("fan", json!({})).await;
    for watch in &mut watches {
        assert_eq!(describe(&watch.next().await.unwrap()), pair("ADDED", "fan"));
    }
}

#[tokio::test]
async fn an_injected_expired_fault_on_a_watch_is_an_error_event() {
    let t = TestServer::start().await;
    t.server
        .faults()
        .fail_next(1, kubeclient_apiserver::Fault::Expired);
    let mut watch = t
        .watch("/api/v1/configmaps?watch=true&resourceVersion=1")
        .await;
    let error = watch.next().await.unwrap();
    assert_eq!(
        (error["type"].as_str(), error["object"]["code"].as_i64()),
        (Some("ERROR"), Some(410))
    );
}

#[tokio::test]
async fn table_watches_send_columns_once() {
    let t = TestServer::start().await;
    t.create_configmap("a", json!({})).await;
    let mut watch = t
        .watch_accepting(
            "/api/v1/namespaces/default/configmaps?watch=true",
            Some("application/json;as=Table;v=v1;g=meta.k8s.io,application/json"),
        )
        .await;
    let first = watch.next().await.unwrap();
    assert_eq!(first["object"]["kind"], "Table");
    assert!(first["object"]["columnDefinitions"].is_array());
    t.create_configmap("b", json!({})).await;
    let second = watch.next().await.unwrap();
    assert!(second["object"]["columnDefinitions"].is_null());
    assert_eq!(second["object"]["rows"][0]["cells"][0], "b");
}
