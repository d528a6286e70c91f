//! Writes request by request: create, update, the patch types, server-side apply,
//! finalizers, deletes, dry runs, namespaces (apiserver-semantics §6-7); generation and
//! status are in `generation`.

use serde_json::json;

use crate::support::{Reply, TestServer};

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
    // Bytes that are not protobuf get 400, as from kube-apiserver; an unknown type 415.
    let protobuf = t
        .request(
            "POST",
            "/api/v1/namespaces/default/configmaps",
            Some("application/vnd.kubernetes.protobuf"),
            "x",
        )
        .await;
    assert_eq!(protobuf.status, 400);
    let unknown = t
        .request(
            "POST",
            "/api/v1/namespaces/default/configmaps",
            Some("text/plain"),
            "x",
        )
        .await;
    assert_eq!(unknown.status, 415);
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
    // The field manager refuses a patch of another version (kube-apiserver's message).
    let other_version = t
        .patch(
            &format!("{path}?fieldManager=two"),
            "application/apply-patch+yaml",
            &config("slow").replace("\"v1\"", "\"apps/v1\""),
        )
        .await;
    other_version.assert_status_message(
        400,
        "Incorrect version specified in apply patch. Specified patch version: apps/v1, expected: v1",
    );
}

/// managedFields as kube-apiserver records them: defaulted fields belong to the writer,
/// allocated addresses and node ports to nobody, and a Service's ports are keyed by port
/// and protocol, so an apply conflict names both.
#[tokio::test]
async fn managed_fields_own_defaults_but_not_allocations_and_key_ports_by_protocol() {
    let t = TestServer::start().await;
    let service = json!({"metadata": {"name": "s"}, "spec": {"type": "NodePort",
        "ports": [{"port": 80, "targetPort": 8080}]}});
    let created = t
        .post(
            "/api/v1/namespaces/default/services?fieldManager=a",
            &service,
        )
        .await
        .json();
    assert!(created["spec"]["clusterIP"].is_string(), "{created}");
    assert!(created["spec"]["ports"][0]["nodePort"].is_number());
    let spec = &created["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"];
    let port = &spec["f:ports"][r#"k:{"port":80,"protocol":"TCP"}"#];
    assert_eq!(
        port,
        &json!({".": {}, "f:port": {}, "f:protocol": {}, "f:targetPort": {}}),
        "{spec}"
    );
    assert_eq!(spec["f:ports"]["."], json!({}));
    assert_eq!(spec["f:type"], json!({}));
    assert_eq!(spec["f:sessionAffinity"], json!({}), "a default");
    for allocated in [
        "f:clusterIP",
        "f:clusterIPs",
        "f:ipFamilies",
        "f:ipFamilyPolicy",
    ] {
        assert!(spec.get(allocated).is_none(), "{allocated}: {spec}");
    }
    let apply = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
        "spec": {"ports": [{"port": 80, "targetPort": 9090}]}});
    let conflict = t
        .patch(
            "/api/v1/namespaces/default/services/s?fieldManager=b",
            "application/apply-patch+yaml",
            &apply.to_string(),
        )
        .await;
    assert_eq!(conflict.status, 409);
    assert_eq!(
        conflict.json()["message"],
        r#"Apply failed with 1 conflict: conflict with "a" using v1: .spec.ports[port=80,protocol="TCP"].targetPort"#
    );
}

/// Workloads need a selector that matches their template's labels, a pod template with
/// containers, and the restart policy they run Pods with (kube-apiserver's causes).
#[tokio::test]
async fn workloads_without_a_usable_spec_are_invalid_with_the_api_servers_causes() {
    let t = TestServer::start().await;
    let causes = |reply: Reply| -> Vec<(String, String)> {
        let body = reply.json();
        assert_eq!(reply.status, 422, "{body}");
        body["details"]["causes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                (
                    c["field"].as_str().unwrap_or("").to_owned(),
                    c["message"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect()
    };
    let empty = t
        .post(
            "/apis/apps/v1/namespaces/default/deployments",
            &json!({"metadata": {"name": "d"}, "spec": {}}),
        )
        .await;
    let body = empty.json();
    assert_eq!(
        body["message"],
        "Deployment.apps \"d\" is invalid: [spec.selector: Required value, spec.template.metadata.labels: Invalid value: map[string]string(nil): `selector` does not match template `labels`, spec.template.spec.containers: Required value]"
    );
    let bad = t
        .post(
            "/apis/apps/v1/namespaces/default/replicasets",
            &json!({"metadata": {"name": "r"}, "spec": {
                "selector": {"matchExpressions": [{"key": "a", "operator": "Bad"}]},
                "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c"}]}}}}),
        )
        .await;
    assert_eq!(
        causes(bad),
        [
            (
                "spec.selector.matchExpressions[0].operator".to_owned(),
                "Invalid value: \"Bad\": not a valid selector operator".to_owned()
            ),
            (
                "spec.selector".to_owned(),
                "Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement{v1.LabelSelectorRequirement{Key:\"a\", Operator:\"Bad\", Values:[]string(nil)}}}: invalid label selector".to_owned()
            ),
        ]
    );
    let never = t
        .post(
            "/apis/apps/v1/namespaces/default/daemonsets",
            &json!({"metadata": {"name": "ds"}, "spec": {"selector": {"matchLabels": {"a": "b"}},
                "template": {"metadata": {"labels": {"a": "b"}},
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "c"}]}}}}),
        )
        .await;
    assert_eq!(
        causes(never),
        [
            (
                "spec.template.spec.containers[0].image".to_owned(),
                "Required value".to_owned()
            ),
            (
                "spec.template.spec.restartPolicy".to_owned(),
                "Unsupported value: \"Never\": supported values: \"Always\"".to_owned()
            ),
        ]
    );
    let statefulset = t
        .post(
            "/apis/apps/v1/namespaces/default/statefulsets",
            &json!({"metadata": {"name": "s"}, "spec": {"selector": {}}}),
        )
        .await;
    assert_eq!(
        causes(statefulset),
        [(
            "spec.selector".to_owned(),
            "Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for statefulset".to_owned()
        )]
    );
    let job = t
        .post(
            "/apis/batch/v1/namespaces/default/jobs",
            &json!({"metadata": {"name": "j"}, "spec": {"template": {"spec": {}}}}),
        )
        .await;
    assert_eq!(
        causes(job),
        [
            (
                "spec.template.spec.containers".to_owned(),
                "Required value".to_owned()
            ),
            (
                "spec.template.spec.restartPolicy".to_owned(),
                "Required value: valid values: \"OnFailure\", \"Never\"".to_owned()
            ),
        ]
    );
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
            .starts_with(r#"Operation cannot be fulfilled on ConfigMap "a": the UID in the precondition (nope) does not match the UID in record ("#)
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
async fn a_dry_run_update_or_patch_answers_with_the_live_resource_version() {
    // As kube-apiserver v1.20 answers (checked against a real v1.20): `kubectl diff`
    // compares with this answer, so a missing resourceVersion shows as a change.
    let t = TestServer::start().await;
    let created = t
        .post(
            "/api/v1/namespaces/default/configmaps",
            &json!({"metadata": {"name": "dr"}, "data": {"a": "1"}}),
        )
        .await
        .json();
    let live = created["metadata"]["resourceVersion"].clone();
    let before = t.server.store().revision();
    let put = t
        .put(
            "/api/v1/namespaces/default/configmaps/dr?dryRun=All",
            &json!({"metadata": {"name": "dr"}, "data": {"a": "2"}}),
        )
        .await;
    assert_eq!(put.status, 200);
    assert_eq!(put.json()["metadata"]["resourceVersion"], live);
    assert_eq!(put.json()["data"]["a"], "2");
    let patched = t
        .patch(
            "/api/v1/namespaces/default/configmaps/dr?dryRun=All",
            "application/merge-patch+json",
            r#"{"data":{"a":"3"}}"#,
        )
        .await;
    assert_eq!(patched.status, 200);
    assert_eq!(patched.json()["metadata"]["resourceVersion"], live);
    assert_eq!(t.server.store().revision(), before, "nothing was written");
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
    // As in a list, the items of a built-in kind carry no kind or apiVersion.
    for item in reply["items"].as_array().unwrap() {
        assert!(
            item.get("kind").is_none() && item.get("apiVersion").is_none(),
            "{item}"
        );
    }
    let left = t.get("/api/v1/namespaces/default/configmaps").await.json();
    assert_eq!(left["items"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_put_creates_missing_leases_events_and_rbac_objects_and_leases_need_a_resource_version() {
    let t = TestServer::start().await;
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}, "spec": {"holderIdentity": "a"}});
    let path = "/apis/coordination.k8s.io/v1/namespaces/default/leases/l";
    assert_eq!(t.put(path, &lease).await.status, 201);
    let again = t.put(path, &lease).await;
    assert_eq!(
        again.status, 422,
        "a Lease update names the resourceVersion it replaces"
    );
    let event = json!({"metadata": {"name": "e"}, "involvedObject": {"name": "x"}});
    assert_eq!(
        t.put("/api/v1/namespaces/default/events/e", &event)
            .await
            .status,
        201
    );
    let role = json!({"metadata": {"name": "r"}, "rules": []});
    assert_eq!(
        t.put(
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles/r",
            &role
        )
        .await
        .status,
        201
    );
    let configmap = json!({"metadata": {"name": "c"}});
    assert_eq!(
        t.put("/api/v1/namespaces/default/configmaps/c", &configmap)
            .await
            .status,
        404
    );
}

#[tokio::test]
async fn writes_answer_partial_object_metadata_when_asked() {
    let t = TestServer::start().await;
    let accept = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
    let configmaps = "/api/v1/namespaces/default/configmaps";
    let body = r#"{"metadata":{"name":"m","labels":{"a":"b"}},"data":{"k":"v"}}"#;
    for (method, path, content_type, body) in [
        ("POST", configmaps.to_owned(), "application/json", body),
        (
            "PATCH",
            format!("{configmaps}/m"),
            "application/merge-patch+json",
            r#"{"metadata":{"labels":{"c":"d"}}}"#,
        ),
        ("PUT", format!("{configmaps}/m"), "application/json", body),
    ] {
        let reply = t
            .request_accepting(method, &path, Some(content_type), Some(accept), body)
            .await;
        assert!(
            reply.status < 300,
            "{method}: {}",
            String::from_utf8_lossy(&reply.body)
        );
        let answer = reply.json();
        assert_eq!(
            answer["kind"], "PartialObjectMetadata",
            "{method}: {answer}"
        );
        assert_eq!(answer["metadata"]["name"], "m");
        assert!(answer.get("data").is_none(), "{method}: metadata only");
    }
    let missing = t
        .request_accepting(
            "PATCH",
            &format!("{configmaps}/nope"),
            Some("application/merge-patch+json"),
            Some(accept),
            "{}",
        )
        .await;
    assert_eq!(missing.json()["kind"], "Status", "errors stay Status");
}

/// Issue 30: a Secret applier keeps its `stringData` fields in managedFields when another
/// manager writes the Secret later (the strategy turns `stringData` into `data`, so those
/// fields are never in the stored object; a real kube-apiserver keeps them).
#[tokio::test]
async fn a_secret_appliers_string_data_stays_owned_after_another_write() {
    let t = TestServer::start().await;
    let path = "/api/v1/namespaces/default/secrets/s3";
    for value in ["v1", "v2"] {
        let body = format!(
            r#"{{"apiVersion":"v1","kind":"Secret","metadata":{{"name":"s3","labels":{{"a":"b"}}}},"stringData":{{"k":"{value}"}}}}"#
        );
        let reply = t
            .patch(
                &format!("{path}?fieldManager=me"),
                "application/apply-patch+yaml",
                &body,
            )
            .await;
        assert_eq!(
            reply.status,
            if value == "v1" { 201 } else { 200 },
            "{}",
            String::from_utf8_lossy(&reply.body)
        );
    }
    let reply = t
        .patch(
            &format!("{path}?fieldManager=other"),
            "application/merge-patch+json",
            r#"{"data":{"x":"eA=="}}"#,
        )
        .await;
    assert_eq!(reply.status, 200);
    let managed = reply.json()["metadata"]["managedFields"].clone();
    let fields_of = |manager: &str| {
        managed
            .as_array()
            .and_then(|entries| entries.iter().find(|e| e["manager"] == manager))
            .map(|e| e["fieldsV1"].clone())
    };
    assert_eq!(
        fields_of("me"),
        Some(json!({"f:metadata": {"f:labels": {"f:a": {}}}, "f:stringData": {"f:k": {}}})),
        "as a real v1.20 records it: {managed}"
    );
    assert_eq!(fields_of("other"), Some(json!({"f:data": {"f:x": {}}})));
}
