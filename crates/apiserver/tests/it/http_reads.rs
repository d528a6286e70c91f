//! Lists (pagination, resourceVersion rules, selectors), Tables and metadata-only
//! output, custom resources, injected faults and token authentication, request by request
//! (apiserver-semantics §3-4, §8).

use serde_json::{Value, json};

use crate::support::{TestServer, eventually_status};

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
        .get_accepting("/api/v1/namespaces/default/configmaps", table_accept)
        .await
        .json();
    assert_eq!(table["kind"], "Table");
    assert_eq!(table["rows"][0]["cells"][0], "a");
    let metadata = t
        .get_accepting(
            "/api/v1/namespaces/default/configmaps",
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
        )
        .await
        .json();
    assert_eq!(metadata["kind"], "PartialObjectMetadataList");
    assert_eq!(metadata["items"][0]["kind"], "PartialObjectMetadata");
    assert!(metadata["items"][0].get("data").is_none());
    // Protobuf is served for built-in kinds (see `protobuf.rs`); a type nothing serves is 406.
    let protobuf = t
        .send(
            "GET",
            "/api/v1/namespaces/default/configmaps",
            None,
            Some("application/vnd.kubernetes.protobuf"),
            "",
        )
        .await;
    assert_eq!(protobuf.status(), 200);
    assert_eq!(
        protobuf.headers().get("content-type").unwrap(),
        "application/vnd.kubernetes.protobuf"
    );
    let refused = t
        .send(
            "GET",
            "/api/v1/namespaces/default/configmaps",
            None,
            Some("text/plain"),
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
        (
            deleted["kind"].as_str(),
            deleted["details"]["kind"].as_str()
        ),
        (Some("Status"), Some("widgets")),
        "a custom resource's DELETE answers a Status, as kube-apiserver's"
    );
    t.delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com")
        .await;
    // The CRD goes once its cleanup finalizer is done, and with it the resource.
    eventually_status(&t, "/apis/example.com/v1/namespaces/default/widgets", 404).await;
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

#[tokio::test]
async fn json_bodies_put_kind_first_and_end_with_a_newline_as_kube_apiserver_does() {
    let t = TestServer::start().await;
    let created = t
        .post(
            "/api/v1/namespaces/default/configmaps",
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}),
        )
        .await;
    let fetched = t.get("/api/v1/namespaces/default/configmaps/a").await;
    let listed = t.get("/api/v1/namespaces/default/configmaps").await;
    let missing = t.get("/api/v1/namespaces/default/configmaps/nope").await;
    let dry = t
        .request(
            "PUT",
            "/api/v1/namespaces/default/configmaps/a?dryRun=All",
            Some("application/json"),
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"}}"#,
        )
        .await;
    for (what, reply) in [
        ("create", &created),
        ("get", &fetched),
        ("list", &listed),
        ("404", &missing),
        ("dry-run update", &dry),
    ] {
        let body = String::from_utf8_lossy(&reply.body);
        assert!(
            body.starts_with("{\"kind\":"),
            "{what}: kind comes first: {body}"
        );
        assert!(
            body.ends_with("}\n"),
            "{what}: one trailing newline: {body:?}"
        );
        assert!(
            !body.ends_with("\n\n"),
            "{what}: one trailing newline: {body:?}"
        );
    }
}
