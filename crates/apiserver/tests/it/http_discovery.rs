//! Discovery documents (legacy and aggregated) and the shapes of unknown paths
//! (apiserver-semantics §1-2).

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
