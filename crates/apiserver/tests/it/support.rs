//! A fresh server per test and a small HTTP client for raw requests.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kubeclient_apiserver::{ApiServer, ApiServerBuilder};
use serde_json::Value;

/// A running server and a client for it.
pub(crate) struct TestServer {
    pub(crate) server: ApiServer,
    pub(crate) client: Client<HttpConnector, Full<Bytes>>,
}

/// A complete response.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: http::HeaderMap,
    pub(crate) body: Bytes,
}

impl Reply {
    /// The body as JSON (panics with the body text if it is not JSON).
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|err| {
            panic!(
                "body is not JSON ({err}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// Asserts the status code (showing the body when it differs) and the Status message.
    #[track_caller]
    pub(crate) fn assert_status_message(&self, status: u16, message: &str) {
        assert_eq!(
            self.status,
            status,
            "{}",
            String::from_utf8_lossy(&self.body)
        );
        assert_eq!(self.json()["message"], message);
    }

    /// The `(field, message)` of each cause of a Status body.
    pub(crate) fn causes(&self) -> Vec<(String, String)> {
        self.json()["details"]["causes"]
            .as_array()
            .map(|causes| {
                causes
                    .iter()
                    .map(|c| {
                        (
                            c["field"].as_str().unwrap_or("").to_owned(),
                            c["message"].as_str().unwrap_or("").to_owned(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// Asserts that a write succeeded (201 or 200), showing the body when it did not.
#[track_caller]
pub(crate) fn assert_created(reply: &Reply) {
    assert!(
        reply.status == 201 || reply.status == 200,
        "{}: {}",
        reply.status,
        String::from_utf8_lossy(&reply.body)
    );
}

impl TestServer {
    pub(crate) async fn start() -> Self {
        Self::start_with(ApiServer::builder()).await
    }

    pub(crate) async fn start_with(builder: ApiServerBuilder) -> Self {
        let server = builder.start().await.expect("the test server starts");
        Self::over(server)
    }

    /// A client for a server started elsewhere.
    pub(crate) fn over(server: ApiServer) -> Self {
        let client = Client::builder(TokioExecutor::new()).build_http();
        TestServer { server, client }
    }

    pub(crate) async fn request(
        &self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: impl AsRef<[u8]>,
    ) -> Reply {
        self.request_accepting(method, path, content_type, None, body)
            .await
    }

    /// GET with an `Accept` header.
    pub(crate) async fn get_accepting(&self, path: &str, accept: &str) -> Reply {
        self.request_accepting("GET", path, None, Some(accept), "")
            .await
    }

    /// A request with an `Accept` header and a body of any bytes.
    pub(crate) async fn request_accepting(
        &self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        accept: Option<&str>,
        body: impl AsRef<[u8]>,
    ) -> Reply {
        let response = self.send(method, path, content_type, accept, body).await;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = tokio::time::timeout(Duration::from_secs(10), response.into_body().collect())
            .await
            .expect("the response body ends within 10 s (a watch without timeoutSeconds?)")
            .expect("the body is readable")
            .to_bytes();
        Reply {
            status,
            headers,
            body,
        }
    }

    pub(crate) async fn send(
        &self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        accept: Option<&str>,
        body: impl AsRef<[u8]>,
    ) -> hyper::Response<Incoming> {
        let mut request = hyper::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.server.url()));
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type);
        }
        if let Some(accept) = accept {
            request = request.header("accept", accept);
        }
        let request = request
            .body(Full::new(Bytes::copy_from_slice(body.as_ref())))
            .expect("a valid request");
        tokio::time::timeout(Duration::from_secs(10), self.client.request(request))
            .await
            .expect("the server answers within 10 s")
            .expect("the request reaches the server")
    }

    pub(crate) async fn get(&self, path: &str) -> Reply {
        self.request("GET", path, None, "").await
    }

    pub(crate) async fn post(&self, path: &str, body: &Value) -> Reply {
        self.request("POST", path, Some("application/json"), &body.to_string())
            .await
    }

    pub(crate) async fn put(&self, path: &str, body: &Value) -> Reply {
        self.request("PUT", path, Some("application/json"), &body.to_string())
            .await
    }

    pub(crate) async fn patch(&self, path: &str, content_type: &str, body: &str) -> Reply {
        self.request("PATCH", path, Some(content_type), body).await
    }

    pub(crate) async fn delete(&self, path: &str) -> Reply {
        self.request("DELETE", path, None, "").await
    }

    /// Creates a ConfigMap in `default` and returns its resourceVersion.
    pub(crate) async fn create_configmap(&self, name: &str, labels: Value) -> String {
        let reply = self
            .post(
                "/api/v1/namespaces/default/configmaps",
                &serde_json::json!({"metadata": {"name": name, "labels": labels}, "data": {"k": "v"}}),
            )
            .await;
        assert_eq!(
            reply.status,
            201,
            "create {name}: {}",
            String::from_utf8_lossy(&reply.body)
        );
        reply.json()["metadata"]["resourceVersion"]
            .as_str()
            .expect("an RV")
            .to_owned()
    }

    /// Opens a watch and returns a reader of its events.
    /// Creates a CustomResourceDefinition (it must be accepted).
    pub(crate) async fn create_crd(&self, crd: &Value) {
        let reply = self
            .post(
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                crd,
            )
            .await;
        assert_eq!(
            reply.status,
            201,
            "the CRD is created: {}",
            String::from_utf8_lossy(&reply.body)
        );
    }

    pub(crate) async fn watch(&self, path: &str) -> WatchReader {
        self.watch_accepting(path, None).await
    }

    pub(crate) async fn watch_accepting(&self, path: &str, accept: Option<&str>) -> WatchReader {
        let response = self.send("GET", path, None, accept, "").await;
        assert_eq!(response.status(), 200, "watch {path}");
        WatchReader {
            body: response.into_body(),
            buffer: Vec::new(),
        }
    }
}

/// Reads newline-delimited events from a watch body.
pub(crate) struct WatchReader {
    body: Incoming,
    buffer: Vec<u8>,
}

impl WatchReader {
    /// The next event, or `None` if the stream ended. Panics after 5 s without one.
    pub(crate) async fn next(&mut self) -> Option<Value> {
        self.next_within(Duration::from_secs(5))
            .await
            .expect("a watch event within 5 s (is the server fanning out?)")
    }

    /// The next event within `limit`: `Err(())` on timeout, `Ok(None)` at the end.
    pub(crate) async fn next_within(&mut self, limit: Duration) -> Result<Option<Value>, ()> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Some(newline) = self.buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=newline).collect();
                return Ok(Some(
                    serde_json::from_slice(&line).expect("each line is one JSON event"),
                ));
            }
            match tokio::time::timeout_at(deadline, self.body.frame()).await {
                Err(_) => return Err(()),
                Ok(None) => return Ok(None),
                Ok(Some(frame)) => {
                    if let Ok(data) = frame.expect("the stream is readable").into_data() {
                        self.buffer.extend_from_slice(&data);
                    }
                }
            }
        }
    }

    /// Asserts no event arrives within `limit`.
    pub(crate) async fn expect_quiet(&mut self, limit: Duration) {
        if let Ok(event) = self.next_within(limit).await {
            panic!("expected no event, got {event:?}");
        }
    }
}

/// The names of a list's items, in order.
pub(crate) fn item_names(list: &Value) -> Vec<&str> {
    list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|item| item["metadata"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default()
}

/// `(type, name)` of an event.
pub(crate) fn describe(event: &Value) -> (String, String) {
    (
        event["type"].as_str().unwrap_or("").to_owned(),
        event["object"]["metadata"]["name"]
            .as_str()
            .unwrap_or("")
            .to_owned(),
    )
}

/// Waits until GET `path` answers `status` (the controllers work in the background).
pub(crate) async fn eventually_status(t: &TestServer, path: &str, status: u16) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let reply = t.get(path).await;
        if reply.status == status {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "GET {path} answers {status} within 10 s; still {}: {}",
            reply.status,
            String::from_utf8_lossy(&reply.body)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Sends a JSON request with a bearer token; the status and the decoded body.
pub(crate) async fn with_bearer(
    t: &TestServer,
    method: &str,
    path: String,
    token: String,
    body: serde_json::Value,
) -> (u16, serde_json::Value) {
    let request = hyper::Request::builder()
        .method(method)
        .uri(format!("{}{path}", t.server.url()))
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .body(http_body_util::Full::new(bytes::Bytes::from(
            body.to_string(),
        )))
        .unwrap();
    let response = t.client.request(request).await.unwrap();
    let status = response.status().as_u16();
    let body = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    (status, serde_json::from_slice(&body).unwrap_or_default())
}

/// This crate's directory as cargo tells the running test: a path baked in at build time
/// goes stale when one build directory serves several checkouts.
pub(crate) fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(
        || env!("CARGO_MANIFEST_DIR").into(),
        std::path::PathBuf::from,
    )
}
