//! Malformed input answered with 400 or 422 instead of a panic, a dropped connection or a
//! silent change (issue 12): query parameters out of range, JSON patches that fail, and
//! objects that do not decode into their type or carry invalid labels.

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
