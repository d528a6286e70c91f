//! Regression tests of issue 12 (hardening): each test is named after the failure it pins.

use serde_json::json;

use crate::support::TestServer;
use kubeclient_apiserver::ApiServer;

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn fault_count_of_u64_max_answers_400_instead_of_panicking() {
    let t = TestServer::start_with(ApiServer::builder().enable_admin_faults(true)).await;
    for count in [
        "18446744073709551615",
        "999999999999",
        "1000001",
        "-1",
        "abc",
    ] {
        let reply = t
            .request(
                "POST",
                &format!("/_kubeclient/faults/internal-error?count={count}"),
                None,
                "",
            )
            .await;
        assert_eq!(reply.status, 400, "count={count}");
        assert_eq!(reply.json()["reason"], "BadRequest");
    }
    assert_eq!(t.server.faults().pending(), 0);
    let reply = t
        .request(
            "POST",
            "/_kubeclient/faults/internal-error?count=1000000",
            None,
            "",
        )
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(t.server.faults().pending(), 1_000_000);
    assert_eq!(t.get(CONFIGMAPS).await.status, 500);
    assert_eq!(t.server.faults().pending(), 999_999);
}

#[tokio::test]
async fn json_patch_move_then_failing_test_answers_422_instead_of_dropping_the_connection() {
    let t = TestServer::start().await;
    t.create_configmap("cm", json!({})).await;
    let reply = t
        .patch(
            &format!("{CONFIGMAPS}/cm"),
            "application/json-patch+json",
            r#"[{"op":"move","from":"/data/k","path":"/data"},{"op":"test","path":"/nope","value":1}]"#,
        )
        .await;
    assert_eq!(reply.status, 422);
    let status = reply.json();
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(
        status["message"],
        "test operation does not apply: doc is missing path: /nope"
    );
    assert_eq!(
        t.get(&format!("{CONFIGMAPS}/cm")).await.json()["data"],
        json!({"k": "v"}),
        "nothing was written"
    );
}

#[tokio::test]
async fn failed_json_patch_test_op_is_reported_as_a_failed_test_not_an_invalid_path() {
    let t = TestServer::start().await;
    t.create_configmap("cm", json!({})).await;
    let reply = t
        .patch(
            &format!("{CONFIGMAPS}/cm"),
            "application/json-patch+json",
            r#"[{"op":"test","path":"/data/k","value":"other"}]"#,
        )
        .await;
    assert_eq!(reply.status, 422);
    assert_eq!(reply.json()["message"], "testing value /data/k failed");
}

#[tokio::test]
async fn watch_with_timeout_seconds_u64_max_answers_400_instead_of_panicking() {
    let t = TestServer::start().await;
    let reply = t
        .get(&format!(
            "{CONFIGMAPS}?watch=1&timeoutSeconds=18446744073709551615"
        ))
        .await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.json()["message"],
        "strconv.ParseInt: parsing \"18446744073709551615\": value out of range"
    );
    // The largest int64 is accepted (clamped), not an overflow.
    let mut watch = t
        .watch(&format!(
            "{CONFIGMAPS}?watch=1&timeoutSeconds=9223372036854775807"
        ))
        .await;
    t.create_configmap("after", json!({})).await;
    assert_eq!(watch.next().await.unwrap()["type"], "ADDED");
}

#[tokio::test]
async fn timeout_seconds_abc_is_400_and_negative_ends_the_watch_at_once() {
    let t = TestServer::start().await;
    for path in [
        format!("{CONFIGMAPS}?watch=1&timeoutSeconds=abc"),
        format!("{CONFIGMAPS}?timeoutSeconds=abc"),
        format!("{CONFIGMAPS}?limit=abc"),
        format!("{CONFIGMAPS}?watch=1&timeoutSeconds=1.5"),
    ] {
        let reply = t.get(&path).await;
        assert_eq!(reply.status, 400, "{path}");
        assert!(
            reply.json()["message"]
                .as_str()
                .unwrap()
                .starts_with("strconv.ParseInt: parsing"),
            "{path}"
        );
    }
    // As upstream: a negative timeout ends the stream at once; a negative limit is no limit.
    let mut watch = t
        .watch(&format!("{CONFIGMAPS}?watch=1&timeoutSeconds=-1"))
        .await;
    assert!(watch.next().await.is_none());
    assert_eq!(t.get(&format!("{CONFIGMAPS}?limit=-1")).await.status, 200);
}

#[tokio::test]
async fn configmap_with_finalizers_string_data_number_or_labels_array_is_rejected_with_400() {
    let t = TestServer::start().await;
    for (name, body) in [
        ("b1", json!({"metadata": {"name": "b1", "finalizers": "x"}})),
        ("b2", json!({"metadata": {"name": "b2"}, "data": 5})),
        ("b3", json!({"metadata": {"name": "b3", "labels": [1]}})),
    ] {
        let reply = t.post(CONFIGMAPS, &body).await;
        assert_eq!(
            reply.status,
            400,
            "{name}: {}",
            String::from_utf8_lossy(&reply.body)
        );
        let status = reply.json();
        assert_eq!(status["reason"], "BadRequest");
        assert!(
            status["message"]
                .as_str()
                .unwrap()
                .starts_with("ConfigMap in version \"v1\" cannot be handled as a ConfigMap: "),
            "{status}"
        );
    }
    // The same through every other write path: the stored object stays decodable.
    t.create_configmap("good", json!({})).await;
    let path = format!("{CONFIGMAPS}/good");
    let merge = t
        .patch(&path, "application/merge-patch+json", r#"{"data":5}"#)
        .await;
    assert_eq!(merge.status, 400);
    let json_patch = t
        .patch(
            &path,
            "application/json-patch+json",
            r#"[{"op":"add","path":"/metadata/finalizers","value":"x"}]"#,
        )
        .await;
    assert_eq!(json_patch.status, 400);
    let strategic = t
        .patch(
            &path,
            "application/strategic-merge-patch+json",
            r#"{"metadata":{"labels":[1]}}"#,
        )
        .await;
    assert_eq!(strategic.status, 400);
    let apply = t
        .patch(
            &format!("{path}?fieldManager=m&force=true"),
            "application/apply-patch+yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: good\ndata: 5\n",
        )
        .await;
    assert_eq!(apply.status, 400);
    let mut current = t.get(&path).await.json();
    current["data"] = json!(5);
    assert_eq!(t.put(&path, &current).await.status, 400);
    let list = t.get(CONFIGMAPS).await.json();
    let items: Vec<k8s_openapi::api::core::v1::ConfigMap> =
        serde_json::from_value(list["items"].clone()).expect("every stored ConfigMap decodes");
    assert_eq!(items.len(), 1);
}

#[tokio::test]
async fn custom_resource_with_undecodable_metadata_is_rejected_and_numeric_quantities_are_accepted()
{
    let t = TestServer::start().await;
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i",
        "resources": {"limits": {"cpu": 1, "memory": "1Gi"}}}]}});
    let reply = t.post("/api/v1/namespaces/default/pods", &pod).await;
    assert_eq!(
        reply.status,
        201,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    });
    let reply = t
        .post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd,
        )
        .await;
    assert_eq!(
        reply.status,
        201,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    let bad = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "ownerReferences": {"a": 1}}});
    assert_eq!(t.post(widgets, &bad).await.status, 400);
    let good = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"anything": [1, "x"]}});
    assert_eq!(t.post(widgets, &good).await.status, 201);
}

#[tokio::test]
async fn label_key_over_63_characters_and_label_value_with_space_are_rejected_with_422() {
    let t = TestServer::start().await;
    let long_key = "a".repeat(64);
    let reply = t
        .post(
            CONFIGMAPS,
            &json!({"metadata": {"name": "b4", "labels": {long_key.clone(): "v"}}}),
        )
        .await;
    assert_eq!(reply.status, 422);
    assert_eq!(
        reply.json()["message"],
        format!(
            "ConfigMap \"b4\" is invalid: metadata.labels: Invalid value: \"{long_key}\": name part must be no more than 63 characters"
        )
    );
    let reply = t
        .post(
            CONFIGMAPS,
            &json!({"metadata": {"name": "b5", "labels": {"a": "with space"}}}),
        )
        .await;
    assert_eq!(reply.status, 422);
    let status = reply.json();
    assert_eq!(status["details"]["causes"][0]["field"], "metadata.labels");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("Invalid value: \"with space\": a valid label must be an empty string")
    );
    t.create_configmap("ok", json!({"example.com/app": "web-1.2_x"}))
        .await;
    let reply = t
        .patch(
            &format!("{CONFIGMAPS}/ok"),
            "application/merge-patch+json",
            r#"{"metadata":{"labels":{"bad key":"v"}}}"#,
        )
        .await;
    assert_eq!(reply.status, 422);
}

/// Sends raw bytes on a new connection and returns what the server answers within `wait`
/// (`None` if it closed the connection without a byte).
async fn raw_exchange(t: &TestServer, request: &[u8], wait: std::time::Duration) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(t.server.address())
        .await
        .unwrap();
    stream.write_all(request).await.unwrap();
    let mut buffer = vec![0u8; 4096];
    match tokio::time::timeout(wait, stream.read(&mut buffer)).await {
        Ok(Ok(0)) | Ok(Err(_)) => None,
        Ok(Ok(n)) => Some(String::from_utf8_lossy(&buffer[..n]).into_owned()),
        Err(_) => Some(String::new()),
    }
}

#[tokio::test]
async fn expect_100_continue_with_a_99_mb_body_is_answered_413_instead_of_100() {
    let t = TestServer::start().await;
    t.create_configmap("cm", json!({})).await;
    let request = format!(
        "PATCH {CONFIGMAPS}/cm HTTP/1.1\r\nHost: x\r\nContent-Type: application/merge-patch+json\r\nContent-Length: 99000000\r\nExpect: 100-continue\r\n\r\n"
    );
    let answer = raw_exchange(&t, request.as_bytes(), std::time::Duration::from_secs(5))
        .await
        .expect("an answer");
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(
        answer.contains("Request entity too large: limit is 3145728"),
        "{answer}"
    );
}

#[tokio::test]
async fn request_body_over_the_configured_limit_is_413() {
    let t = TestServer::start_with(ApiServer::builder().max_request_body_bytes(1000)).await;
    let reply = t
        .post(
            CONFIGMAPS,
            &json!({"metadata": {"name": "big"}, "data": {"k": "x".repeat(2000)}}),
        )
        .await;
    assert_eq!(reply.status, 413);
    assert_eq!(reply.json()["reason"], "RequestEntityTooLarge");
    t.create_configmap("small", json!({})).await;
}

#[tokio::test]
async fn slow_loris_connections_are_closed_after_the_header_read_timeout() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let timeout = std::time::Duration::from_millis(300);
    let t = TestServer::start_with(ApiServer::builder().header_read_timeout(timeout)).await;
    let mut connections = Vec::new();
    for i in 0..100 {
        let mut stream = tokio::net::TcpStream::connect(t.server.address())
            .await
            .unwrap();
        if i % 2 == 0 {
            // Half send a partial request head, the other half nothing at all.
            stream
                .write_all(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                .await
                .unwrap();
        }
        connections.push(stream);
    }
    tokio::time::sleep(timeout * 3).await;
    let mut closed = 0;
    for stream in &mut connections {
        let mut buffer = [0u8; 512];
        // A closed connection reads EOF (maybe after a 408 answer) at once.
        let read_to_end = tokio::time::timeout(std::time::Duration::from_secs(2), async {
            loop {
                match stream.read(&mut buffer).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        });
        if read_to_end.await.is_ok() {
            closed += 1;
        }
    }
    assert_eq!(closed, 100, "every slow-loris connection is closed");
    assert_eq!(
        t.get("/api/v1/namespaces").await.status,
        200,
        "the server still serves"
    );
}

#[tokio::test]
async fn stalled_watcher_is_ended_when_it_falls_too_far_behind() {
    let t = TestServer::start_with(ApiServer::builder().watcher_limits(
        kubeclient_apiserver::WatcherLimits {
            max_queued_changes: 100,
            max_queued_bytes: 1024 * 1024,
        },
    ))
    .await;
    let configmaps = kubeclient_machinery::GroupResource::new("", "configmaps");
    // A watcher that never reads its body; a fast one that does.
    let stalled = t
        .send("GET", &format!("{CONFIGMAPS}?watch=1"), None, None, "")
        .await;
    let mut fast = t.watch(&format!("{CONFIGMAPS}?watch=1")).await;
    assert_eq!(t.server.store().watcher_count(&configmaps), 2);
    let value = "x".repeat(100_000);
    let mut ended_after = None;
    for i in 0..400 {
        let reply = t
            .post(
                CONFIGMAPS,
                &json!({"metadata": {"name": format!("cm-{i}")}, "data": {"k": value}}),
            )
            .await;
        assert_eq!(reply.status, 201);
        assert!(fast.next().await.is_some(), "the fast watcher keeps up");
        if t.server.store().watcher_count(&configmaps) == 1 {
            ended_after = Some(i);
            break;
        }
    }
    let ended_after = ended_after.expect("the stalled watch is ended");
    assert!(
        ended_after > 10,
        "not before it fell behind ({ended_after})"
    );
    // Its stream ends cleanly (no ERROR event): the client re-watches, as with upstream.
    use http_body_util::BodyExt;
    let body = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        stalled.into_body().collect(),
    )
    .await
    .expect("the stalled stream ends")
    .expect("cleanly")
    .to_bytes();
    assert!(!String::from_utf8_lossy(&body).contains("\"ERROR\""));
}

#[cfg(unix)]
#[tokio::test]
async fn kubeconfig_is_written_0600_and_a_planted_symlink_is_replaced_not_followed() {
    use std::os::unix::fs::PermissionsExt;
    let t = TestServer::start_with(ApiServer::builder().token("s3cret")).await;
    let dir = std::env::temp_dir().join(format!("kubeclient-kubeconfig-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let victim = dir.join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let path = dir.join("kubeconfig");
    std::os::unix::fs::symlink(&victim, &path).unwrap();
    t.server.write_kubeconfig(&path).unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    let metadata = std::fs::symlink_metadata(&path).unwrap();
    assert!(
        metadata.file_type().is_file(),
        "the link was replaced by a file"
    );
    assert_eq!(metadata.permissions().mode() & 0o777, 0o600);
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .contains("token: s3cret")
    );
    let leftovers = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(leftovers, 2, "no temporary file left behind");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_server_side_applies_creating_one_object_all_succeed_instead_of_already_exists()
{
    let t = std::sync::Arc::new(TestServer::start().await);
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..8 {
        let t = t.clone();
        tasks.spawn(async move {
            // Enough data that computing the apply takes a while: the creates overlap.
            let data: String = (0..3000).map(|k| format!("  k{k}: \"{i}\"\n")).collect();
            let body =
                format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: raced\ndata:\n{data}");
            t.patch(
                &format!("{CONFIGMAPS}/raced?fieldManager=demo&force=true"),
                "application/apply-patch+yaml",
                &body,
            )
            .await
        });
    }
    while let Some(reply) = tasks.join_next().await {
        let reply = reply.unwrap();
        assert!(
            reply.status == 200 || reply.status == 201,
            "{}: {}",
            reply.status,
            String::from_utf8_lossy(&reply.body)
        );
    }
}
