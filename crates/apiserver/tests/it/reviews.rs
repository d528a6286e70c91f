//! Reviews, ServiceAccount tokens, eviction and ephemeral containers: the APIs behind
//! `kubectl auth can-i`, `kubectl auth whoami`, `kubectl create token`, `kubectl drain`
//! and `kubectl debug`.

use kubeclient_apiserver::ApiServer;
use serde_json::json;

use crate::support::{TestServer, with_bearer};

const SSAR: &str = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";

#[tokio::test]
async fn access_reviews_are_allowed_validated_and_never_stored() {
    let t = TestServer::start().await;
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "create", "resource": "pods", "namespace": "default"}}});
    let reply = t.post(SSAR, &review).await;
    assert_eq!(
        reply.status,
        201,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let answer = reply.json();
    assert_eq!(answer["status"]["allowed"], true);
    assert_eq!(answer["spec"], review["spec"]);

    let neither = json!({"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1", "spec": {}});
    let refused = t.post(SSAR, &neither).await;
    assert_eq!(refused.status, 422);
    assert!(
        refused.json()["message"].as_str().unwrap().contains(
            "exactly one of nonResourceAttributes or resourceAttributes must be specified"
        )
    );
    let sar = json!({"kind": "SubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
        "spec": {"nonResourceAttributes": {"path": "/healthz", "verb": "get"}}});
    let no_user = t
        .post("/apis/authorization.k8s.io/v1/subjectaccessreviews", &sar)
        .await;
    assert_eq!(
        no_user.status, 422,
        "a SubjectAccessReview names a user or group"
    );

    assert_eq!(t.get(SSAR).await.status, 405, "reviews can only be created");
    let discovery = t.get("/apis/authorization.k8s.io/v1").await.json();
    let entry = discovery["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "selfsubjectaccessreviews")
        .cloned()
        .unwrap();
    assert_eq!(entry["verbs"], json!(["create"]));
}

#[tokio::test]
async fn a_token_request_issues_a_token_the_server_accepts_as_the_service_account() {
    let t = TestServer::start_with(ApiServer::builder().token("admin-secret")).await;
    let admin = |method: &'static str, path: String, body: serde_json::Value| {
        with_bearer(&t, method, path, "admin-secret".to_owned(), body)
    };
    let path = "/api/v1/namespaces/default/serviceaccounts/default/token".to_owned();
    let (status, issued) = admin(
        "POST",
        path.clone(),
        json!({"spec": {"expirationSeconds": 1200}}),
    )
    .await;
    assert_eq!(status, 201, "{issued}");
    let token = issued["status"]["token"].as_str().unwrap().to_owned();
    assert_eq!(issued["spec"]["expirationSeconds"], 1200);
    assert!(issued["status"]["expirationTimestamp"].is_string());

    let (status, _) = admin(
        "POST",
        path.clone(),
        json!({"spec": {"expirationSeconds": 60}}),
    )
    .await;
    assert_eq!(status, 422, "at least ten minutes");
    let (status, _) = admin(
        "POST",
        "/api/v1/namespaces/default/serviceaccounts/nobody/token".to_owned(),
        json!({}),
    )
    .await;
    assert_eq!(status, 404);

    let (status, whoami) = admin(
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews".to_owned(),
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
    )
    .await;
    assert_eq!(status, 201);
    assert!(
        whoami["status"]["userInfo"]["groups"]
            .as_array()
            .unwrap()
            .contains(&json!("system:masters"))
    );

    // The issued token works as a credential, as the ServiceAccount.
    let (status, me) = with_bearer(
        &t,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews".to_owned(),
        token.clone(),
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(
        me["status"]["userInfo"]["username"],
        "system:serviceaccount:default:default"
    );

    let (status, review) = admin(
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews".to_owned(),
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}),
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(review["status"]["authenticated"], true);
    assert_eq!(
        review["status"]["user"]["username"],
        "system:serviceaccount:default:default"
    );
    let (_, forged) = admin(
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews".to_owned(),
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": "forged"}}),
    )
    .await;
    assert_eq!(forged["status"]["authenticated"], false);
}

#[tokio::test]
async fn eviction_deletes_a_pod_unless_a_disruption_budget_forbids_it() {
    let t = TestServer::start().await;
    let pods = "/api/v1/namespaces/default/pods";
    for (name, app) in [("free", "batch"), ("guarded", "web")] {
        let pod = json!({"metadata": {"name": name, "labels": {"app": app}},
            "spec": {"containers": [{"name": "c", "image": "x"}]}});
        assert_eq!(t.post(pods, &pod).await.status, 201);
    }
    let budget = json!({"metadata": {"name": "web-pdb"}, "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "web"}}}});
    assert_eq!(
        t.post(
            "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
            &budget
        )
        .await
        .status,
        201
    );
    let eviction = |name: &str| json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": "default"}});
    let evicted = t
        .post(&format!("{pods}/free/eviction"), &eviction("free"))
        .await;
    assert_eq!(
        evicted.status,
        201,
        "{}",
        String::from_utf8_lossy(&evicted.body)
    );
    assert_eq!(t.get(&format!("{pods}/free")).await.status, 404);
    let refused = t
        .post(&format!("{pods}/guarded/eviction"), &eviction("guarded"))
        .await;
    assert_eq!(refused.status, 429);
    assert_eq!(
        refused.json()["message"],
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    assert_eq!(t.get(&format!("{pods}/guarded")).await.status, 200);
}

#[tokio::test]
async fn ephemeral_containers_change_only_through_their_subresource() {
    let t = TestServer::start().await;
    let pods = "/api/v1/namespaces/default/pods";
    let pod =
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}});
    assert_eq!(t.post(pods, &pod).await.status, 201);
    let patch = r#"{"spec":{"ephemeralContainers":[{"name":"debugger","image":"busybox"}],"restartPolicy":"Never"},"metadata":{"labels":{"x":"y"}}}"#;
    let reply = t
        .patch(
            &format!("{pods}/p/ephemeralcontainers"),
            "application/strategic-merge-patch+json",
            patch,
        )
        .await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let stored = t.get(&format!("{pods}/p")).await.json();
    assert_eq!(stored["spec"]["ephemeralContainers"][0]["name"], "debugger");
    assert_eq!(
        stored["spec"]["restartPolicy"], "Always",
        "nothing else changes"
    );
    assert!(stored["metadata"].get("labels").is_none());
}

#[tokio::test]
async fn the_events_certificates_and_apiregistration_groups_are_served() {
    let t = TestServer::start().await;
    let events = "/apis/events.k8s.io/v1/namespaces/default/events";
    let incomplete = t
        .post(events, &json!({"metadata": {"name": "e1"}, "note": "hi"}))
        .await;
    assert_eq!(incomplete.status, 422);
    assert_eq!(
        incomplete.json()["message"],
        r#"Event "e1" is invalid: [eventTime: Required value, type: Invalid value: "": has invalid value: ]"#
    );
    let event = json!({"metadata": {"name": "e2"}, "eventTime": "2026-12-01T09:00:00.000000Z",
        "reportingController": "example.com/ctl", "reportingInstance": "ctl-1", "action": "Create",
        "reason": "Created", "type": "Normal", "regarding": {"kind": "Pod", "name": "p", "namespace": "default"},
        "note": "hello"});
    let created = t.post(events, &event).await;
    assert_eq!(
        created.status,
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    assert_eq!(created.json()["deprecatedSource"], json!({}));
    let table = t
        .get_accepting(events, "application/json;as=Table;v=v1;g=meta.k8s.io")
        .await
        .json();
    let cells = &table["rows"][0]["cells"];
    assert_eq!(cells[2], "Created", "{table}");
    assert_eq!(cells[3], "pod/p");
    assert_eq!(
        cells[5], "example.com/ctl, ctl-1",
        "the source is the reporting controller and instance when the deprecated source is empty"
    );

    let core = t
        .post(
            "/api/v1/namespaces/default/events",
            &json!({"metadata": {"name": "c1"}, "involvedObject": {"kind": "Pod", "name": "p"}, "reason": "R", "message": "m"}),
        )
        .await
        .json();
    assert_eq!(core["source"], json!({}));
    assert!(core["eventTime"].is_null() && core.get("eventTime").is_some());
    assert_eq!(core["reportingComponent"], "");

    let csr = json!({"metadata": {"name": "node-csr"}, "spec": {"request": "LS0tLS1CRUdJTg==",
        "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"]}});
    assert_eq!(
        t.post(
            "/apis/certificates.k8s.io/v1/certificatesigningrequests",
            &csr
        )
        .await
        .status,
        201
    );
    let apiservice = json!({"metadata": {"name": "v1beta1.metrics.k8s.io"}, "spec": {"group": "metrics.k8s.io",
        "version": "v1beta1", "groupPriorityMinimum": 100, "versionPriority": 100}});
    assert_eq!(
        t.post("/apis/apiregistration.k8s.io/v1/apiservices", &apiservice)
            .await
            .status,
        201
    );
    let duplicate_ports = json!({"metadata": {"name": "dup"}, "spec": {"ports": [
        {"name": "http", "port": 80}, {"name": "http", "port": 81}]}});
    let refused = t
        .post("/api/v1/namespaces/default/services", &duplicate_ports)
        .await;
    assert_eq!(
        refused.json()["message"],
        r#"Service "dup" is invalid: spec.ports[1].name: Duplicate value: "http""#
    );
}

#[tokio::test]
async fn csr_approval_componentstatuses_and_status_bodies_as_kube_apiserver_serves_them() {
    let t = TestServer::start().await;
    let csrs = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
    let csr = json!({"metadata": {"name": "fake"}, "spec": {"request": "LS0tLS1CRUdJTg==",
        "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"]}});
    assert_eq!(t.post(csrs, &csr).await.status, 201);
    let approval = r#"{"status":{"conditions":[{"type":"Approved","status":"True","reason":"Test"}]},"spec":{"usages":["server auth"]}}"#;
    let approved = t
        .patch(
            &format!("{csrs}/fake/approval"),
            "application/merge-patch+json",
            approval,
        )
        .await;
    assert_eq!(
        approved.status,
        200,
        "{}",
        String::from_utf8_lossy(&approved.body)
    );
    let stored = t.get(&format!("{csrs}/fake")).await.json();
    assert_eq!(stored["status"]["conditions"][0]["type"], "Approved");
    assert_eq!(
        stored["spec"]["usages"],
        json!(["client auth"]),
        "approval changes only conditions"
    );

    let statuses = t.get("/api/v1/componentstatuses").await.json();
    assert_eq!(statuses["items"].as_array().map(Vec::len), Some(3));
    let scheduler = t.get("/api/v1/componentstatuses/scheduler").await.json();
    assert_eq!(scheduler["conditions"][0]["type"], "Healthy");
    let refused = t
        .post(
            "/api/v1/componentstatuses",
            &json!({"metadata": {"name": "mine"}}),
        )
        .await;
    assert_eq!(refused.status, 405, "componentstatuses are read-only");

    // Status bodies keep Go's field order (clients compare them byte for byte).
    let missing = t.get("/api/v1/namespaces/default/configmaps/nope").await;
    let text = String::from_utf8_lossy(&missing.body).into_owned();
    let order: Vec<usize> = [
        "\"kind\"",
        "\"apiVersion\"",
        "\"metadata\"",
        "\"status\"",
        "\"message\"",
        "\"reason\"",
        "\"details\"",
        "\"code\"",
    ]
    .iter()
    .map(|key| text.find(key).unwrap_or(usize::MAX))
    .collect();
    assert!(order.windows(2).all(|pair| pair[0] < pair[1]), "{text}");
}
