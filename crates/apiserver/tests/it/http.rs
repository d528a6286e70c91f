//! Request-by-request checks of the HTTP behaviour clients depend on
//! (apiserver-semantics §1-4, §6-8).

use serde_json::{Value, json};

use crate::support::TestServer;

#[tokio::test]
async fn discovery_documents_describe_core_and_named_groups() {
    let t = TestServer::start().await;
    let api = t.get("/api").await.json();
    assert_eq!(api["versions"], json!(["v1"]));
    let groups = t.get("/apis").await.json();
    assert!(
        groups["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["name"] == "apps")
    );
    let core = t.get("/api/v1").await.json();
    assert!(
        core.get("apiVersion").is_none(),
        "core resource list has no apiVersion"
    );
    let apps = t.get("/apis/apps/v1").await.json();
    assert_eq!(apps["apiVersion"], "v1");
    assert!(
        apps["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "deployments/scale")
    );
    let version = t.get("/version").await.json();
    assert_eq!(version["major"], "1");
}

#[tokio::test]
async fn aggregated_discovery_echoes_its_kind_and_supports_etags() {
    let t = TestServer::start().await;
    let accept =
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
    let response = t.send("GET", "/apis", None, Some(accept), "").await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
    let etag = response.headers()["etag"].to_str().unwrap().to_owned();
    use http_body_util::BodyExt;
    let body: Value =
        serde_json::from_slice(&response.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(body["kind"], "APIGroupDiscoveryList");
    let apps = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "apps")
        .unwrap();
    let deployments = apps["versions"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "deployments")
        .unwrap();
    assert_eq!(
        (
            deployments["scope"].as_str(),
            deployments["responseKind"]["kind"].as_str()
        ),
        (Some("Namespaced"), Some("Deployment"))
    );
    assert!(
        deployments["subresources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["subresource"] == "scale")
    );
    let core = t.send("GET", "/api", None, Some(accept), "").await;
    let core: Value =
        serde_json::from_slice(&core.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(core["items"][0]["metadata"], json!({}));
    // The same document again: 304 with no body.
    let request = hyper::Request::builder()
        .uri(format!("{}/apis", t.server.url()))
        .header("accept", accept)
        .header("if-none-match", &etag)
        .body(http_body_util::Full::new(bytes::Bytes::new()))
        .unwrap();
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http();
    let not_modified = client.request(request).await.unwrap();
    assert_eq!(not_modified.status(), 304);
    // Without the aggregated clause: legacy JSON with a plain Content-Type.
    let legacy = t
        .send("GET", "/apis", None, Some("application/json"), "")
        .await;
    assert_eq!(legacy.headers()["content-type"], "application/json");
}

#[tokio::test]
async fn unknown_paths_get_the_two_upstream_shapes() {
    let t = TestServer::start().await;
    let outside = t.get("/apis/nosuch.example.com/v1/things").await;
    assert_eq!(
        (outside.status, outside.body.as_ref()),
        (404, b"404 page not found\n".as_ref())
    );
    let inside = t.get("/api/v1/foos").await;
    assert_eq!(inside.status, 404);
    assert_eq!(
        inside.json()["message"],
        "the server could not find the requested resource"
    );
}

#[tokio::test]
async fn create_fills_system_fields_and_returns_201() {
    let t = TestServer::start().await;
    let reply = t
        .post(
            "/api/v1/namespaces/default/configmaps",
            &json!({"metadata": {"generateName": "cfg-"}, "data": {"a": "b"}}),
        )
        .await;
    assert_eq!(reply.status, 201);
    let object = reply.json();
    let name = object["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("cfg-") && name.len() == 9, "{name}");
    assert_eq!(object["metadata"]["namespace"], "default");
    assert_eq!(object["kind"], "ConfigMap");
    assert_eq!(object["metadata"]["uid"].as_str().unwrap().len(), 36);
    assert!(
        object["metadata"]["creationTimestamp"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    assert_eq!(
        object["metadata"]["managedFields"][0]["operation"],
        "Update"
    );
}

#[tokio::test]
async fn bad_writes_get_proper_statuses_and_change_nothing() {
    let t = TestServer::start().await;
    let before = t.server.store().revision();
    let cases: Vec<(&str, String, u16, &str)> = vec![
        ("malformed JSON", "{\"metadata\":".into(), 400, "BadRequest"),
        ("array body", "[1,2]".into(), 400, "BadRequest"),
        (
            "no name",
            json!({"metadata": {}}).to_string(),
            422,
            "Invalid",
        ),
        (
            "invalid name",
            json!({"metadata": {"name": "Bad_Name"}}).to_string(),
            422,
            "Invalid",
        ),
        (
            "wrong kind",
            json!({"kind": "Secret", "apiVersion": "v1", "metadata": {"name": "a"}}).to_string(),
            400,
            "BadRequest",
        ),
        (
            "wrong namespace",
            json!({"metadata": {"name": "a", "namespace": "other"}}).to_string(),
            400,
            "BadRequest",
        ),
        (
            "resourceVersion set",
            json!({"metadata": {"name": "a", "resourceVersion": "5"}}).to_string(),
            500,
            "InternalError",
        ),
    ];
    for (what, body, code, reason) in cases {
        let reply = t
            .request(
                "POST",
                "/api/v1/namespaces/default/configmaps",
                Some("application/json"),
                &body,
            )
            .await;
        assert_eq!(
            reply.status,
            code,
            "{what}: {}",
            String::from_utf8_lossy(&reply.body)
        );
        let status = reply.json();
        assert_eq!(
            (status["kind"].as_str(), status["reason"].as_str()),
            (Some("Status"), Some(reason)),
            "{what}"
        );
        assert_eq!(status["code"], code, "{what}");
    }
    let missing_namespace = t
        .post(
            "/api/v1/namespaces/nope/configmaps",
            &json!({"metadata": {"name": "a"}}),
        )
        .await;
    assert_eq!(
        missing_namespace.json()["message"],
        "namespaces \"nope\" not found"
    );
    let protobuf = t
        .request(
            "POST",
            "/api/v1/namespaces/default/configmaps",
            Some("application/vnd.kubernetes.protobuf"),
            "x",
        )
        .await;
    assert_eq!(protobuf.status, 415);
    let huge = format!(
        "{{\"metadata\":{{\"name\":\"big\"}},\"data\":{{\"k\":\"{}\"}}}}",
        "x".repeat(4 * 1024 * 1024)
    );
    assert_eq!(
        t.request(
            "POST",
            "/api/v1/namespaces/default/configmaps",
            Some("application/json"),
            &huge
        )
        .await
        .status,
        413
    );
    assert_eq!(
        t.server.store().revision(),
        before,
        "no failed write changed anything"
    );
}

#[tokio::test]
async fn duplicate_create_is_409_already_exists() {
    let t = TestServer::start().await;
    t.create_configmap("a", json!({})).await;
    let reply = t
        .post(
            "/api/v1/namespaces/default/configmaps",
            &json!({"metadata": {"name": "a"}}),
        )
        .await;
    assert_eq!(reply.status, 409);
    assert_eq!(reply.json()["reason"], "AlreadyExists");
    assert_eq!(reply.json()["message"], "configmaps \"a\" already exists");
}

#[tokio::test]
async fn update_with_a_stale_resource_version_is_a_conflict() {
    let t = TestServer::start().await;
    let rv = t.create_configmap("a", json!({})).await;
    let path = "/api/v1/namespaces/default/configmaps/a";
    let updated = t
        .put(
            path,
            &json!({"metadata": {"name": "a", "resourceVersion": rv}, "data": {"k": "2"}}),
        )
        .await;
    assert_eq!(updated.status, 200);
    let stale = t
        .put(
            path,
            &json!({"metadata": {"name": "a", "resourceVersion": rv}, "data": {"k": "3"}}),
        )
        .await;
    assert_eq!(stale.status, 409);
    assert_eq!(stale.json()["reason"], "Conflict");
    let wrong_name = t
        .put(path, &json!({"metadata": {"name": "b"}, "data": {}}))
        .await;
    assert_eq!(wrong_name.status, 400);
}

#[tokio::test]
async fn a_no_op_update_keeps_the_resource_version() {
    let t = TestServer::start().await;
    let rv = t.create_configmap("a", json!({})).await;
    let current = t
        .get("/api/v1/namespaces/default/configmaps/a")
        .await
        .json();
    let again = t
        .put("/api/v1/namespaces/default/configmaps/a", &current)
        .await;
    assert_eq!(again.status, 200);
    assert_eq!(again.json()["metadata"]["resourceVersion"], rv);
}

#[tokio::test]
async fn every_patch_type_applies() {
    let t = TestServer::start().await;
    t.create_configmap("a", json!({"app": "x"})).await;
    let path = "/api/v1/namespaces/default/configmaps/a";
    let json_patch = t
        .patch(
            path,
            "application/json-patch+json",
            r#"[{"op":"add","path":"/data/j","value":"1"}]"#,
        )
        .await;
    assert_eq!(json_patch.json()["data"]["j"], "1");
    let failed_test = t
        .patch(
            path,
            "application/json-patch+json",
            r#"[{"op":"test","path":"/data/j","value":"2"}]"#,
        )
        .await;
    assert_eq!(failed_test.status, 422);
    let merge = t
        .patch(
            path,
            "application/merge-patch+json",
            r#"{"data":{"j":null,"m":"2"}}"#,
        )
        .await;
    assert_eq!(merge.json()["data"], json!({"k": "v", "m": "2"}));
    let strategic = t
        .patch(
            path,
            "application/strategic-merge-patch+json",
            r#"{"metadata":{"finalizers":["a/b"]}}"#,
        )
        .await;
    assert_eq!(strategic.json()["metadata"]["finalizers"], json!(["a/b"]));
    let apply = t
        .patch(
            &format!("{path}?fieldManager=tester"),
            "application/apply-patch+yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  applied: \"yes\"\n",
        )
        .await;
    assert_eq!(
        apply.status,
        200,
        "{}",
        String::from_utf8_lossy(&apply.body)
    );
    assert_eq!(apply.json()["data"]["applied"], "yes");
    let unsupported = t.patch(path, "text/plain", "x").await;
    assert_eq!(unsupported.status, 415);
    let no_manager = t.patch(path, "application/apply-patch+yaml", "{}").await;
    assert_eq!(no_manager.status, 422);
    let force_on_merge = t
        .patch(
            &format!("{path}?force=true"),
            "application/merge-patch+json",
            "{}",
        )
        .await;
    assert_eq!(force_on_merge.status, 422);
    let missing = t
        .patch(
            "/api/v1/namespaces/default/configmaps/none",
            "application/merge-patch+json",
            "{}",
        )
        .await;
    assert_eq!(missing.status, 404);
}

#[tokio::test]
async fn server_side_apply_conflicts_are_409_until_forced() {
    let t = TestServer::start().await;
    let path = "/api/v1/namespaces/default/configmaps/ssa";
    let config = |mode: &str| {
        format!(
            "{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"ssa\"}},\"data\":{{\"mode\":\"{mode}\"}}}}"
        )
    };
    let created = t
        .patch(
            &format!("{path}?fieldManager=one"),
            "application/apply-patch+yaml",
            &config("fast"),
        )
        .await;
    assert_eq!(created.status, 201);
    let conflict = t
        .patch(
            &format!("{path}?fieldManager=two"),
            "application/apply-patch+yaml",
            &config("slow"),
        )
        .await;
    assert_eq!(conflict.status, 409);
    let status = conflict.json();
    assert_eq!(
        status["message"],
        "Apply failed with 1 conflict: conflict with \"one\": .data.mode"
    );
    assert_eq!(
        status["details"]["causes"][0]["reason"],
        "FieldManagerConflict"
    );
    let forced = t
        .patch(
            &format!("{path}?fieldManager=two&force=true"),
            "application/apply-patch+yaml",
            &config("slow"),
        )
        .await;
    assert_eq!(forced.status, 200);
    assert_eq!(forced.json()["data"]["mode"], "slow");
}

#[tokio::test]
async fn generation_tracks_spec_changes_and_status_goes_through_its_subresource() {
    let t = TestServer::start().await;
    let deployment = json!({"metadata": {"name": "web"}, "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    let created = t
        .post("/apis/apps/v1/namespaces/default/deployments", &deployment)
        .await
        .json();
    assert_eq!(created["metadata"]["generation"], 1);
    let path = "/apis/apps/v1/namespaces/default/deployments/web";
    let labelled = t
        .patch(
            path,
            "application/merge-patch+json",
            r#"{"metadata":{"labels":{"x":"y"}}}"#,
        )
        .await
        .json();
    assert_eq!(
        labelled["metadata"]["generation"], 1,
        "metadata changes keep the generation"
    );
    let ignored_status = t
        .patch(
            path,
            "application/merge-patch+json",
            r#"{"status":{"replicas":5}}"#,
        )
        .await
        .json();
    assert!(
        ignored_status.get("status").is_none(),
        "the main resource ignores status"
    );
    let status = t
        .patch(
            &format!("{path}/status"),
            "application/merge-patch+json",
            r#"{"status":{"replicas":5},"spec":{"replicas":9}}"#,
        )
        .await
        .json();
    assert_eq!(
        (
            status["status"]["replicas"].as_i64(),
            status["spec"]["replicas"].as_i64()
        ),
        (Some(5), Some(1))
    );
    assert_eq!(status["metadata"]["generation"], 1);
    let scaled = t
        .patch(
            path,
            "application/merge-patch+json",
            r#"{"spec":{"replicas":3}}"#,
        )
        .await
        .json();
    assert_eq!(scaled["metadata"]["generation"], 2);
    let scale = t.get(&format!("{path}/scale")).await.json();
    assert_eq!(
        (scale["kind"].as_str(), scale["spec"]["replicas"].as_i64()),
        (Some("Scale"), Some(3))
    );
    let rescaled = t
        .patch(
            &format!("{path}/scale"),
            "application/merge-patch+json",
            r#"{"spec":{"replicas":4}}"#,
        )
        .await
        .json();
    assert_eq!(rescaled["spec"]["replicas"], 4);
    assert_eq!(t.get(path).await.json()["spec"]["replicas"], 4);
}

#[tokio::test]
async fn finalizers_hold_a_deleted_object_until_removed() {
    let t = TestServer::start().await;
    t.post(
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "held", "finalizers": ["example.com/x"]}}),
    )
    .await;
    let path = "/api/v1/namespaces/default/configmaps/held";
    let deleting = t.delete(path).await;
    assert_eq!(deleting.status, 200);
    assert!(deleting.json()["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(
        t.get(path).await.status,
        200,
        "still readable while finalizers remain"
    );
    let released = t
        .patch(
            path,
            "application/json-patch+json",
            r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
        )
        .await;
    assert_eq!(released.status, 200);
    assert_eq!(
        t.get(path).await.status,
        404,
        "removing the last finalizer deletes it"
    );
}

#[tokio::test]
async fn delete_returns_a_success_status_and_checks_preconditions() {
    let t = TestServer::start().await;
    t.create_configmap("a", json!({})).await;
    let path = "/api/v1/namespaces/default/configmaps/a";
    let wrong_uid = t
        .request(
            "DELETE",
            path,
            Some("application/json"),
            r#"{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"nope"}}"#,
        )
        .await;
    assert_eq!(wrong_uid.status, 409);
    assert!(
        wrong_uid.json()["message"]
            .as_str()
            .unwrap()
            .contains("Precondition failed: UID in precondition: nope")
    );
    let deleted = t.delete(path).await.json();
    assert_eq!(
        (deleted["kind"].as_str(), deleted["status"].as_str()),
        (Some("Status"), Some("Success"))
    );
    assert!(deleted.get("code").is_none());
    assert_eq!(deleted["details"]["kind"], "configmaps");
    assert_eq!(t.delete(path).await.status, 404);
}

#[tokio::test]
async fn dry_run_writes_nothing() {
    let t = TestServer::start().await;
    let before = t.server.store().revision();
    let reply = t
        .post(
            "/api/v1/namespaces/default/configmaps?dryRun=All",
            &json!({"metadata": {"name": "ghost"}}),
        )
        .await;
    assert_eq!(reply.status, 201);
    assert!(reply.json()["metadata"].get("resourceVersion").is_none());
    assert_eq!(
        t.get("/api/v1/namespaces/default/configmaps/ghost")
            .await
            .status,
        404
    );
    assert_eq!(
        t.post(
            "/api/v1/namespaces/default/configmaps?dryRun=Some",
            &json!({"metadata": {"name": "g"}})
        )
        .await
        .status,
        422
    );
    assert_eq!(t.server.store().revision(), before);
}

#[tokio::test]
async fn lists_paginate_at_one_snapshot_with_selectors() {
    let t = TestServer::start().await;
    for i in 0..7 {
        t.create_configmap(
            &format!("cm-{i}"),
            json!({"parity": if i % 2 == 0 { "even" } else { "odd" }}),
        )
        .await;
    }
    let first = t
        .get("/api/v1/namespaces/default/configmaps?limit=3")
        .await
        .json();
    assert_eq!(first["kind"], "ConfigMapList");
    assert_eq!(first["items"].as_array().unwrap().len(), 3);
    assert_eq!(first["metadata"]["remainingItemCount"], 4);
    let snapshot = first["metadata"]["resourceVersion"].clone();
    t.create_configmap("cm-late", json!({})).await;
    let token = first["metadata"]["continue"].as_str().unwrap().to_owned();
    let second = t
        .get(&format!(
            "/api/v1/namespaces/default/configmaps?limit=10&continue={token}"
        ))
        .await
        .json();
    assert_eq!(
        second["metadata"]["resourceVersion"], snapshot,
        "later pages are served at the first page's RV"
    );
    let names: Vec<&str> = second["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["cm-3", "cm-4", "cm-5", "cm-6"],
        "the later create is not in the snapshot"
    );
    assert!(second["metadata"].get("continue").is_none());

    let odd = t
        .get("/api/v1/namespaces/default/configmaps?labelSelector=parity%3Dodd")
        .await
        .json();
    assert_eq!(odd["items"].as_array().unwrap().len(), 3);
    let by_name = t
        .get("/api/v1/configmaps?fieldSelector=metadata.name%3Dcm-2")
        .await
        .json();
    assert_eq!(by_name["items"].as_array().unwrap().len(), 1);
    let bad_label = t.get("/api/v1/configmaps?labelSelector=a%20in%20b").await;
    assert_eq!(
        (bad_label.status, bad_label.json()["reason"].as_str()),
        (400, Some("BadRequest"))
    );
    let bad_field = t.get("/api/v1/configmaps?fieldSelector=spec.foo%3Db").await;
    assert_eq!(
        bad_field.json()["message"],
        "field label not supported: spec.foo"
    );
}

#[tokio::test]
async fn list_resource_version_rules_follow_the_api_server() {
    let t = TestServer::start().await;
    let rv: u64 = t.create_configmap("a", json!({})).await.parse().unwrap();
    t.create_configmap("b", json!({})).await;
    let exact = t
        .get(&format!(
            "/api/v1/namespaces/default/configmaps?resourceVersion={rv}&resourceVersionMatch=Exact"
        ))
        .await
        .json();
    assert_eq!(
        exact["items"].as_array().unwrap().len(),
        1,
        "Exact serves the older snapshot"
    );
    let cases = [
        ("resourceVersionMatch=NotOlderThan", 422),
        ("resourceVersion=0&resourceVersionMatch=Exact", 422),
        ("resourceVersion=1&resourceVersionMatch=Foo", 422),
        ("resourceVersion=abc", 400),
        ("sendInitialEvents=true", 422),
        ("continue=garbage", 400),
    ];
    for (query, code) in cases {
        let reply = t.get(&format!("/api/v1/configmaps?{query}")).await;
        assert_eq!(
            reply.status,
            code,
            "{query}: {}",
            String::from_utf8_lossy(&reply.body)
        );
    }
    t.server.compact();
    let expired = t
        .get(&format!(
            "/api/v1/namespaces/default/configmaps?resourceVersion={rv}&resourceVersionMatch=Exact"
        ))
        .await;
    assert_eq!(
        (expired.status, expired.json()["reason"].as_str()),
        (410, Some("Expired"))
    );
    let too_new = t
        .get("/api/v1/configmaps?resourceVersion=999999&resourceVersionMatch=Exact")
        .await;
    assert_eq!(too_new.status, 504);
    assert_eq!(
        too_new.json()["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );
    assert_eq!(too_new.header("retry-after"), Some("1"));
}

#[tokio::test]
async fn tables_and_partial_object_metadata_are_served_on_request() {
    let t = TestServer::start().await;
    t.create_configmap("a", json!({})).await;
    let table_accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    let response = t
        .send(
            "GET",
            "/api/v1/namespaces/default/configmaps",
            None,
            Some(table_accept),
            "",
        )
        .await;
    assert_eq!(
        response.headers()["content-type"],
        "application/json",
        "as= is never echoed"
    );
    let table = t
        .request_with_accept("/api/v1/namespaces/default/configmaps", table_accept)
        .await;
    assert_eq!(table["kind"], "Table");
    assert_eq!(table["rows"][0]["cells"][0], "a");
    let metadata = t
        .request_with_accept(
            "/api/v1/namespaces/default/configmaps",
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
        )
        .await;
    assert_eq!(metadata["kind"], "PartialObjectMetadataList");
    assert_eq!(metadata["items"][0]["kind"], "PartialObjectMetadata");
    assert!(metadata["items"][0].get("data").is_none());
    let refused = t
        .send(
            "GET",
            "/api/v1/namespaces/default/configmaps",
            None,
            Some("application/vnd.kubernetes.protobuf"),
            "",
        )
        .await;
    assert_eq!(refused.status(), 406);
}

#[tokio::test]
async fn custom_resources_are_served_once_their_crd_exists() {
    let t = TestServer::start().await;
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}}]}
    });
    assert_eq!(
        t.get("/apis/example.com/v1/namespaces/default/widgets")
            .await
            .status,
        404
    );
    let created = t
        .post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd,
        )
        .await
        .json();
    assert_eq!(created["status"]["conditions"][1]["type"], "Established");
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}});
    assert_eq!(
        t.post("/apis/example.com/v1/namespaces/default/widgets", &widget)
            .await
            .status,
        201
    );
    let no_kind = t
        .post(
            "/apis/example.com/v1/namespaces/default/widgets",
            &json!({"metadata": {"name": "x"}}),
        )
        .await;
    assert_eq!(no_kind.status, 400);
    let strategic = t
        .patch(
            "/apis/example.com/v1/namespaces/default/widgets/w",
            "application/strategic-merge-patch+json",
            "{}",
        )
        .await;
    assert_eq!(
        strategic.status, 415,
        "strategic merge patch is for built-ins only"
    );
    let no_rv = t
        .put("/apis/example.com/v1/namespaces/default/widgets/w", &widget)
        .await;
    assert_eq!(
        no_rv.status, 422,
        "custom resources require a resourceVersion on update"
    );
    let deleted: Value = t
        .delete("/apis/example.com/v1/namespaces/default/widgets/w")
        .await
        .json();
    assert_eq!(
        deleted["kind"], "Widget",
        "custom resources return the deleted object"
    );
    t.delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com")
        .await;
    assert_eq!(
        t.get("/apis/example.com/v1/namespaces/default/widgets")
            .await
            .status,
        404
    );
}

#[tokio::test]
async fn deleting_a_namespace_deletes_its_contents() {
    let t = TestServer::start().await;
    t.post("/api/v1/namespaces", &json!({"metadata": {"name": "team"}}))
        .await;
    t.post(
        "/api/v1/namespaces/team/configmaps",
        &json!({"metadata": {"name": "a"}}),
    )
    .await;
    assert_eq!(t.delete("/api/v1/namespaces/team").await.status, 200);
    assert_eq!(
        t.get("/api/v1/namespaces/team/configmaps/a").await.status,
        404
    );
    assert_eq!(t.get("/api/v1/namespaces/team").await.status, 404);
}

#[tokio::test]
async fn delete_collection_removes_the_selected_objects() {
    let t = TestServer::start().await;
    t.create_configmap("keep", json!({"x": "keep"})).await;
    t.create_configmap("drop-1", json!({"x": "drop"})).await;
    t.create_configmap("drop-2", json!({"x": "drop"})).await;
    let reply = t
        .delete("/api/v1/namespaces/default/configmaps?labelSelector=x%3Ddrop")
        .await
        .json();
    assert_eq!(reply["kind"], "ConfigMapList");
    assert_eq!(reply["items"].as_array().unwrap().len(), 2);
    let left = t.get("/api/v1/namespaces/default/configmaps").await.json();
    assert_eq!(left["items"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn injected_faults_answer_with_their_status_then_stop() {
    let t = TestServer::start().await;
    t.server.faults().fail_next(
        1,
        kubeclient_apiserver::Fault::TooManyRequests {
            retry_after_seconds: 2,
        },
    );
    t.server
        .faults()
        .fail_next(1, kubeclient_apiserver::Fault::InternalError);
    let throttled = t.get("/api/v1/configmaps").await;
    assert_eq!(
        (throttled.status, throttled.header("retry-after")),
        (429, Some("2"))
    );
    assert_eq!(t.get("/api/v1/configmaps").await.status, 500);
    assert_eq!(t.get("/api/v1/configmaps").await.status, 200);
    assert_eq!(
        t.get("/version").await.status,
        200,
        "faults never hit version or discovery"
    );
}

#[tokio::test]
async fn a_token_is_required_when_configured() {
    let t =
        TestServer::start_with(kubeclient_apiserver::ApiServer::builder().token("s3cret")).await;
    let denied = t.get("/api/v1/configmaps").await;
    assert_eq!(
        (denied.status, denied.json()["reason"].as_str()),
        (401, Some("Unauthorized"))
    );
    assert_eq!(t.get("/healthz").await.status, 200);
    assert!(t.server.kubeconfig().contains("token: s3cret"));
}

impl TestServer {
    async fn request_with_accept(&self, path: &str, accept: &str) -> Value {
        use http_body_util::BodyExt;
        let response = self.send("GET", path, None, Some(accept), "").await;
        let body = response.into_body().collect().await.unwrap().to_bytes();
        serde_json::from_slice(&body).unwrap()
    }
}
