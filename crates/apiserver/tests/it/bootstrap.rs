//! The objects a fresh cluster has: system namespaces, `default/kubernetes`, a `default`
//! ServiceAccount per namespace (kept by the service-account controller), bootstrap RBAC.

use std::time::Duration;

use serde_json::json;

use crate::support::TestServer;

async fn eventually_exists(t: &TestServer, path: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while t.get(path).await.status != 200 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{path} exists within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_new_server_has_the_objects_of_a_fresh_cluster() {
    let t = TestServer::start().await;
    let service = t
        .get("/api/v1/namespaces/default/services/kubernetes")
        .await
        .json();
    assert_eq!(service["spec"]["ports"][0]["port"], 443);
    assert_eq!(
        service["spec"]["ports"][0]["targetPort"],
        t.server.address().port()
    );
    assert_eq!(service["spec"]["type"], "ClusterIP");
    let endpoints = t
        .get("/api/v1/namespaces/default/endpoints/kubernetes")
        .await
        .json();
    assert_eq!(
        endpoints["subsets"][0]["ports"][0]["port"],
        t.server.address().port()
    );
    for namespace in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let ns = t
            .get(&format!("/api/v1/namespaces/{namespace}"))
            .await
            .json();
        assert_eq!(
            ns["metadata"]["labels"]["kubernetes.io/metadata.name"],
            namespace
        );
        let path = format!("/api/v1/namespaces/{namespace}/serviceaccounts/default");
        assert_eq!(t.get(&path).await.status, 200, "{path}");
    }
    let roles = t
        .get("/apis/rbac.authorization.k8s.io/v1/clusterroles")
        .await
        .json();
    let names: Vec<&str> = roles["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["metadata"]["name"].as_str())
        .collect();
    for role in ["cluster-admin", "admin", "edit", "view"] {
        assert!(names.contains(&role), "{role} in {names:?}");
    }
    let binding = t
        .get("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/cluster-admin")
        .await
        .json();
    assert_eq!(binding["subjects"][0]["name"], "system:masters");
}

#[tokio::test]
async fn every_namespace_gets_a_default_service_account_and_keeps_it() {
    let t = TestServer::start().await;
    let created = t
        .post(
            "/api/v1/namespaces",
            &json!({"metadata": {"generateName": "team-"}}),
        )
        .await
        .json();
    let name = created["metadata"]["name"].as_str().unwrap().to_owned();
    assert_eq!(
        created["metadata"]["labels"]["kubernetes.io/metadata.name"],
        name.as_str()
    );
    let path = format!("/api/v1/namespaces/{name}/serviceaccounts/default");
    eventually_exists(&t, &path).await;
    let first_uid = t.get(&path).await.json()["metadata"]["uid"].clone();
    assert_eq!(t.delete(&path).await.status, 200);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let reply = t.get(&path).await;
        if reply.status == 200 && reply.json()["metadata"]["uid"] != first_uid {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the default ServiceAccount comes back"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The manager of the first managedFields entry of `object`, and its operation.
fn first_manager(object: &serde_json::Value) -> (String, String) {
    let entry = &object["metadata"]["managedFields"][0];
    let text = |field: &str| entry[field].as_str().unwrap_or("").to_owned();
    (text("manager"), text("operation"))
}

#[tokio::test]
async fn bootstrap_objects_are_written_like_any_write() {
    let t = TestServer::start().await;
    // Bootstrap writes through the generic store: its objects carry managedFields, as
    // kube-apiserver's own objects do.
    for path in [
        "/api/v1/namespaces/default",
        "/api/v1/namespaces/default/services/kubernetes",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/cluster-admin",
    ] {
        let object = t.get(path).await.json();
        assert_eq!(
            first_manager(&object),
            ("kube-apiserver".to_owned(), "Update".to_owned()),
            "{path}: {object}"
        );
    }
}
