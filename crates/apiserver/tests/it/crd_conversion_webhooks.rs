//! CRD conversion webhooks (issue 28) over real HTTPS: a test-local webhook, its
//! certificate made here and trusted through the CRD's `caBundle`, converts `Widget`s
//! between `v1alpha1` (`spec.size`, a string) and `v1` (`spec.replicas`, an integer,
//! the storage version). Objects are written and read through both versions, listed
//! (one review per list), watched and patched; hostile webhooks (garbage, wrong uid,
//! wrong count, 500, a hang, a closed connection, an oversized answer, a changed name)
//! get a 500 naming the webhook's failure and leave the server serving; the CRD's
//! `spec.conversion` is validated with kube-apiserver's texts.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use kubeclient_apiserver::ApiServer;
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::support::{TestServer, eventually_status};

const V1: &str = "/apis/example.com/v1/namespaces/default/widgets";
const V1ALPHA1: &str = "/apis/example.com/v1alpha1/namespaces/default/widgets";
const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// How the test webhook answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Converts, also trying to change `metadata.generation` and adding a label.
    Convert,
    /// `200` with a body that is not JSON.
    Garbage,
    /// A review with another uid.
    WrongUid,
    /// No converted objects.
    WrongCount,
    /// `500` with a text body.
    ServerError,
    /// Never answers.
    Hang,
    /// Closes the connection without an answer.
    Close,
    /// An answer larger than the server reads.
    Oversized,
    /// Converts, but renames the object.
    Rename,
    /// Answers with the objects in the version they came in.
    SameVersion,
    /// `result.status: Failure` with a message.
    Refuse,
}

/// What the webhook saw.
#[derive(Default)]
struct Seen {
    /// Each ConversionReview's `apiVersion` and the number of objects it carried.
    reviews: Vec<(String, usize)>,
    /// The path and the object of each AdmissionReview.
    admitted: Vec<(String, Value)>,
}

/// A running conversion webhook.
struct Webhook {
    address: SocketAddr,
    ca_pem: String,
    mode: Arc<Mutex<Mode>>,
    seen: Arc<Mutex<Seen>>,
}

impl Webhook {
    fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    fn reviews(&self) -> Vec<(String, usize)> {
        self.seen.lock().unwrap().reviews.clone()
    }

    fn admitted(&self) -> Vec<(String, Value)> {
        self.seen.lock().unwrap().admitted.clone()
    }

    /// A `clientConfig` calling `path` here.
    fn client_config(&self, path: &str) -> Value {
        json!({
            "url": format!("https://{}{path}", self.address),
            "caBundle": base64::engine::general_purpose::STANDARD.encode(&self.ca_pem),
        })
    }

    /// The CRD's `spec.conversion` pointing here.
    fn conversion(&self, review_versions: &[&str]) -> Value {
        json!({
            "strategy": "Webhook",
            "webhook": {
                "clientConfig": self.client_config("/convert"),
                "conversionReviewVersions": review_versions,
            },
        })
    }
}

/// `object` converted to `desired`: `spec.size` <-> `spec.replicas`.
fn convert_widget(mut object: Value, desired: &str) -> Value {
    let spec = object["spec"].as_object_mut().cloned().unwrap_or_default();
    let mut converted = serde_json::Map::new();
    for (key, value) in spec {
        match (key.as_str(), desired) {
            ("size", "example.com/v1") => {
                let replicas: i64 = value.as_str().unwrap_or("0").parse().unwrap_or(0);
                converted.insert("replicas".to_owned(), json!(replicas));
            }
            ("replicas", "example.com/v1alpha1") => {
                converted.insert("size".to_owned(), json!(value.to_string()));
            }
            _ => {
                converted.insert(key, value);
            }
        }
    }
    object["spec"] = Value::Object(converted);
    object["apiVersion"] = json!(desired);
    object
}

/// The webhook's answer to `review` in `mode`: status, content type, body.
fn answer(review: &Value, mode: Mode) -> (u16, &'static str, Vec<u8>) {
    let request = &review["request"];
    let desired = request["desiredAPIVersion"].as_str().unwrap_or("");
    let objects = request["objects"].as_array().cloned().unwrap_or_default();
    let converted: Vec<Value> = objects
        .into_iter()
        .map(|object| match mode {
            Mode::SameVersion => object,
            _ => {
                let mut converted = convert_widget(object, desired);
                converted["metadata"]["generation"] = json!(99);
                converted["metadata"]["labels"]["converted"] = json!("yes");
                if mode == Mode::Rename {
                    converted["metadata"]["name"] = json!("someone-else");
                }
                converted
            }
        })
        .collect();
    let mut response = json!({
        "uid": request["uid"],
        "convertedObjects": converted,
        "result": {"status": "Success"},
    });
    match mode {
        Mode::Garbage => return (200, "application/json", b"this is not a review".to_vec()),
        Mode::ServerError => return (500, "text/plain", b"the converter broke".to_vec()),
        Mode::Oversized => {
            return (200, "application/json", vec![b' '; 9 * 1024 * 1024]);
        }
        Mode::WrongUid => response["uid"] = json!("not-the-uid"),
        Mode::WrongCount => response["convertedObjects"] = json!([]),
        Mode::Refuse => {
            response["result"] = json!({"status": "Failure", "message": "cannot convert that"});
        }
        _ => {}
    }
    let body = json!({
        "apiVersion": review["apiVersion"],
        "kind": "ConversionReview",
        "response": response,
    });
    (200, "application/json", body.to_string().into_bytes())
}

/// The answer to an AdmissionReview: allowed; at `/mutate` with `spec.replicas` set to 9.
fn admission_answer(review: &Value, path: &str) -> Vec<u8> {
    let mut response = json!({"uid": review["request"]["uid"], "allowed": true});
    if path.starts_with("/mutate") {
        let patch = json!([{"op": "replace", "path": "/spec/replicas", "value": 9}]);
        response["patchType"] = json!("JSONPatch");
        response["patch"] =
            json!(base64::engine::general_purpose::STANDARD.encode(patch.to_string()));
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
        .to_string()
        .into_bytes()
}

/// Starts the webhook on loopback with a fresh certificate for `127.0.0.1`.
async fn start_webhook() -> Webhook {
    let certified =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .expect("a certificate");
    let ca_pem = certified.cert.pem();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(certified.signing_key.serialize_der().into());
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("TLS versions")
    .with_no_client_auth()
    .with_single_cert(vec![certified.cert.der().clone()], key)
    .expect("a serving certificate");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let address = listener.local_addr().expect("an address");
    let mode = Arc::new(Mutex::new(Mode::Convert));
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (serve_mode, serve_seen) = (mode.clone(), seen.clone());
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let (acceptor, mode, seen) = (acceptor.clone(), serve_mode.clone(), serve_seen.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(stream).await else {
                    return;
                };
                let current = *mode.lock().unwrap();
                if current == Mode::Close {
                    drop(tls);
                    return;
                }
                let service =
                    hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
                        let seen = seen.clone();
                        async move {
                            let path = request.uri().path().to_owned();
                            let body = request.into_body().collect().await?.to_bytes();
                            let review: Value =
                                serde_json::from_slice(&body).unwrap_or(Value::Null);
                            if review["kind"] == "AdmissionReview" {
                                seen.lock()
                                    .unwrap()
                                    .admitted
                                    .push((path.clone(), review["request"]["object"].clone()));
                                return Ok(hyper::Response::builder()
                                    .header("content-type", "application/json")
                                    .body(Full::new(Bytes::from(admission_answer(&review, &path))))
                                    .expect("a response"));
                            }
                            seen.lock().unwrap().reviews.push((
                                review["apiVersion"].as_str().unwrap_or("").to_owned(),
                                review["request"]["objects"].as_array().map_or(0, Vec::len),
                            ));
                            if current == Mode::Hang {
                                tokio::time::sleep(Duration::from_secs(3600)).await;
                            }
                            let (status, content_type, body) = answer(&review, current);
                            Ok::<_, hyper::Error>(
                                hyper::Response::builder()
                                    .status(status)
                                    .header("content-type", content_type)
                                    .body(Full::new(Bytes::from(body)))
                                    .expect("a response"),
                            )
                        }
                    });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    Webhook {
        address,
        ca_pem,
        mode,
        seen,
    }
}

/// The `Widget` CRD: v1alpha1 (`spec.size`) and v1 (`spec.replicas`, stored).
fn widget_crd(conversion: Value) -> Value {
    let schema = |spec: Value| {
        json!({"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": spec},
        }}})
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [
                {"name": "v1alpha1", "served": true, "storage": false,
                 "schema": schema(json!({"size": {"type": "string"}}))},
                {"name": "v1", "served": true, "storage": true,
                 "schema": schema(json!({"replicas": {"type": "integer"}}))},
            ],
            "conversion": conversion,
        },
    })
}

/// A server, a webhook, and the Widget CRD converting through it with `review_versions`.
async fn setup_with(review_versions: &[&str]) -> (TestServer, Webhook) {
    let t = TestServer::start_with(
        ApiServer::builder().conversion_webhook_timeout(Duration::from_secs(2)),
    )
    .await;
    let webhook = start_webhook().await;
    t.create_crd(&widget_crd(webhook.conversion(review_versions)))
        .await;
    eventually_status(&t, V1, 200).await;
    eventually_status(&t, V1ALPHA1, 200).await;
    (t, webhook)
}

async fn setup() -> (TestServer, Webhook) {
    setup_with(&["v1", "v1beta1"]).await
}

fn widget(version: &str, name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": format!("example.com/{version}"), "kind": "Widget",
        "metadata": {"name": name}, "spec": spec,
    })
}

/// The v1alpha1 `spec.size` of each item of a list.
fn sizes(list: &Value) -> Vec<&str> {
    list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|item| item["spec"]["size"].as_str().unwrap_or("?"))
                .collect()
        })
        .unwrap_or_default()
}

#[track_caller]
fn assert_ok(reply: &crate::support::Reply, status: u16) -> Value {
    assert_eq!(
        reply.status,
        status,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    reply.json()
}

#[tokio::test]
async fn objects_are_converted_through_the_webhook_both_ways() {
    let (t, webhook) = setup().await;
    let created = assert_ok(
        &t.post(V1ALPHA1, &widget("v1alpha1", "a", json!({"size": "3"})))
            .await,
        201,
    );
    // Stored as v1 through the webhook, answered as v1alpha1 through it again.
    assert_eq!(created["apiVersion"], "example.com/v1alpha1");
    assert_eq!(created["spec"], json!({"size": "3"}));
    assert_eq!(
        created["metadata"]["generation"], 1,
        "metadata but labels and annotations is restored"
    );
    assert_eq!(created["metadata"]["labels"]["converted"], "yes");
    assert_eq!(webhook.reviews().len(), 2, "{:?}", webhook.reviews());
    assert_eq!(
        webhook.reviews()[0],
        ("apiextensions.k8s.io/v1".to_owned(), 1)
    );

    let v1 = assert_ok(&t.get(&format!("{V1}/a")).await, 200);
    assert_eq!(v1["apiVersion"], "example.com/v1");
    assert_eq!(v1["spec"], json!({"replicas": 3}));
    let alpha = assert_ok(&t.get(&format!("{V1ALPHA1}/a")).await, 200);
    assert_eq!(alpha["spec"], json!({"size": "3"}));
    assert_eq!(alpha["metadata"]["uid"], v1["metadata"]["uid"]);

    // A merge patch through v1alpha1 applies to the converted object and is stored as v1.
    let patched = assert_ok(
        &t.patch(
            &format!("{V1ALPHA1}/a"),
            "application/merge-patch+json",
            r#"{"spec":{"size":"7"}}"#,
        )
        .await,
        200,
    );
    assert_eq!(patched["spec"], json!({"size": "7"}));
    let v1 = assert_ok(&t.get(&format!("{V1}/a")).await, 200);
    assert_eq!(v1["spec"], json!({"replicas": 7}));
}

#[tokio::test]
async fn a_list_converts_its_items_in_one_review_and_a_watch_each_event() {
    let (t, webhook) = setup().await;
    for (name, replicas) in [("a", 1), ("b", 2), ("c", 3)] {
        assert_ok(
            &t.post(V1, &widget("v1", name, json!({"replicas": replicas})))
                .await,
            201,
        );
    }
    assert!(webhook.reviews().is_empty(), "v1 is stored as it came");
    let list = assert_ok(&t.get(V1ALPHA1).await, 200);
    assert_eq!(list["apiVersion"], "example.com/v1alpha1");
    assert_eq!(sizes(&list), ["1", "2", "3"]);
    assert_eq!(
        webhook.reviews(),
        [("apiextensions.k8s.io/v1".to_owned(), 3)],
        "one review for the whole list"
    );

    let mut watch = t.watch(&format!("{V1ALPHA1}?watch=true")).await;
    for expected in ["1", "2", "3"] {
        let event = watch.next().await.expect("an event");
        assert_eq!(event["type"], "ADDED");
        assert_eq!(event["object"]["apiVersion"], "example.com/v1alpha1");
        assert_eq!(event["object"]["spec"]["size"], expected);
    }
    assert_ok(
        &t.patch(
            &format!("{V1}/b"),
            "application/merge-patch+json",
            r#"{"spec":{"replicas":20}}"#,
        )
        .await,
        200,
    );
    let event = watch.next().await.expect("an event");
    assert_eq!(event["type"], "MODIFIED");
    assert_eq!(event["object"]["spec"]["size"], "20");

    // A conversion failing in a watch ends it with an ERROR event.
    webhook.set(Mode::Refuse);
    assert_ok(&t.delete(&format!("{V1}/c")).await, 200);
    let event = watch.next().await.expect("an event");
    assert_eq!(event["type"], "ERROR", "{event}");
    assert_eq!(event["object"]["code"], 500);
    assert_eq!(
        event["object"]["message"],
        "conversion webhook for example.com/v1, Kind=Widget failed: cannot convert that"
    );
    assert_eq!(watch.next().await, None, "the watch ends");
}

#[tokio::test]
async fn a_delete_collection_answers_its_items_converted_in_one_review() {
    let (t, webhook) = setup().await;
    for (name, replicas) in [("a", 1), ("b", 2)] {
        assert_ok(
            &t.post(V1, &widget("v1", name, json!({"replicas": replicas})))
                .await,
            201,
        );
    }
    let deleted = assert_ok(&t.delete(V1ALPHA1).await, 200);
    assert_eq!(deleted["kind"], "WidgetList");
    assert_eq!(sizes(&deleted), ["1", "2"]);
    assert_eq!(
        webhook.reviews(),
        [("apiextensions.k8s.io/v1".to_owned(), 2)]
    );
}

#[tokio::test]
async fn admission_webhooks_of_an_equivalent_version_see_the_object_converted() {
    let (t, webhook) = setup().await;
    for (kind, path) in [
        ("MutatingWebhookConfiguration", "/mutate"),
        ("ValidatingWebhookConfiguration", "/validate"),
    ] {
        let plural = format!("{}s", kind.to_ascii_lowercase());
        let configuration = json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": "widgets"},
            "webhooks": [{
                "name": "widgets.example.com",
                "clientConfig": webhook.client_config(path),
                "rules": [{"operations": ["CREATE"], "apiGroups": ["example.com"],
                           "apiVersions": ["v1"], "resources": ["widgets"]}],
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            }],
        });
        assert_ok(
            &t.post(
                &format!("/apis/admissionregistration.k8s.io/v1/{plural}"),
                &configuration,
            )
            .await,
            201,
        );
    }
    let created = assert_ok(
        &t.post(V1ALPHA1, &widget("v1alpha1", "a", json!({"size": "3"})))
            .await,
        201,
    );
    // The mutating webhook set v1's replicas: converted back before the write goes on.
    assert_eq!(created["spec"], json!({"size": "9"}));
    let admitted = webhook.admitted();
    assert_eq!(admitted.len(), 2, "{admitted:?}");
    assert_eq!(admitted[0].0, "/mutate");
    assert_eq!(admitted[0].1["apiVersion"], "example.com/v1");
    assert_eq!(admitted[0].1["spec"], json!({"replicas": 3}));
    assert_eq!(admitted[1].0, "/validate");
    assert_eq!(admitted[1].1["spec"], json!({"replicas": 9}));
    let v1 = assert_ok(&t.get(&format!("{V1}/a")).await, 200);
    assert_eq!(v1["spec"], json!({"replicas": 9}));
}

#[tokio::test]
async fn a_v1beta1_review_is_sent_when_the_crd_lists_only_v1beta1() {
    let (t, webhook) = setup_with(&["v1beta1"]).await;
    assert_ok(
        &t.post(V1ALPHA1, &widget("v1alpha1", "a", json!({"size": "4"})))
            .await,
        201,
    );
    let alpha = assert_ok(&t.get(&format!("{V1ALPHA1}/a")).await, 200);
    assert_eq!(alpha["spec"], json!({"size": "4"}));
    assert!(
        webhook
            .reviews()
            .iter()
            .all(|(version, _)| version == "apiextensions.k8s.io/v1beta1"),
        "{:?}",
        webhook.reviews()
    );
}

#[tokio::test]
async fn hostile_webhooks_get_a_500_naming_the_failure_and_the_server_serves_on() {
    let (t, webhook) = setup().await;
    assert_ok(
        &t.post(V1, &widget("v1", "a", json!({"replicas": 1}))).await,
        201,
    );
    let url = format!("https://{}/convert?timeout=2s", webhook.address);
    // What a failure starts with, for one object (`Widget`) and for a list
    // (`WidgetList`, whose items upstream counts from 1 in these messages).
    let expected = |mode: Mode, list: bool| -> String {
        let kind = if list { "WidgetList" } else { "Widget" };
        let failed = format!("conversion webhook for example.com/v1, Kind={kind} failed: ");
        let returned = format!("conversion webhook for example.com/v1, Kind={kind} returned");
        let (invalid, at) = if list {
            (
                "invalid converted object at index 1",
                "invalid converted object at index 1",
            )
        } else {
            ("invalid object", "invalid object at index 0")
        };
        match mode {
            Mode::Garbage => format!("{failed}couldn't get version/kind; json parse error: "),
            Mode::WrongUid => format!("{failed}expected response.uid="),
            Mode::WrongCount => format!("{returned} 0 objects, expected 1"),
            Mode::ServerError => format!(
                "{failed}an error on the server (\"the converter broke\") has prevented the request from succeeding"
            ),
            Mode::Hang => format!("{failed}Post \"{url}\": context deadline exceeded"),
            Mode::Close => format!("{failed}Post \"{url}\": "),
            Mode::Oversized => format!("{failed}Post \"{url}\": the answer is larger than"),
            Mode::Rename => {
                format!("{returned} {invalid}: must have the same name: a != someone-else")
            }
            Mode::SameVersion => format!(
                "{returned} {at}: invalid groupVersion (expected example.com/v1alpha1, received example.com/v1)"
            ),
            Mode::Refuse => format!("{failed}cannot convert that"),
            Mode::Convert => String::new(),
        }
    };
    for mode in [
        Mode::Garbage,
        Mode::WrongUid,
        Mode::WrongCount,
        Mode::ServerError,
        Mode::Hang,
        Mode::Close,
        Mode::Oversized,
        Mode::Rename,
        Mode::SameVersion,
        Mode::Refuse,
    ] {
        webhook.set(mode);
        for (path, list) in [
            (format!("{V1ALPHA1}/a"), false),
            (V1ALPHA1.to_owned(), true),
        ] {
            let message = expected(mode, list);
            let reply = t.get(&path).await;
            let status = assert_ok(&reply, 500);
            let text = status["message"].as_str().unwrap_or("");
            assert!(
                text.starts_with(&message),
                "{mode:?} GET {path}: {text:?} should start with {message:?}"
            );
            assert_eq!(status["kind"], "Status");
        }
        // A write through the other version needs the webhook too.
        let reply = t
            .post(V1ALPHA1, &widget("v1alpha1", "b", json!({"size": "2"})))
            .await;
        assert_ok(&reply, 500);
        // The server is alive and serves what needs no conversion.
        let v1 = assert_ok(&t.get(&format!("{V1}/a")).await, 200);
        assert_eq!(v1["spec"], json!({"replicas": 1}), "{mode:?}");
    }
    webhook.set(Mode::Convert);
    let alpha = assert_ok(&t.get(&format!("{V1ALPHA1}/a")).await, 200);
    assert_eq!(alpha["spec"], json!({"size": "1"}));
    let list = assert_ok(&t.get(V1).await, 200);
    assert_eq!(
        list["items"].as_array().map(Vec::len),
        Some(1),
        "nothing half written"
    );
}

#[tokio::test]
async fn an_unreachable_webhook_fails_the_read_with_the_dial_error() {
    let t = TestServer::start().await;
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = closed.local_addr().unwrap();
    drop(closed);
    let conversion = json!({
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {"url": format!("https://{address}/convert")},
            "conversionReviewVersions": ["v1"],
        },
    });
    t.create_crd(&widget_crd(conversion)).await;
    eventually_status(&t, V1, 200).await;
    assert_ok(
        &t.post(V1, &widget("v1", "a", json!({"replicas": 1}))).await,
        201,
    );
    let reply = t.get(&format!("{V1ALPHA1}/a")).await;
    let status = assert_ok(&reply, 500);
    assert_eq!(
        status["message"],
        format!(
            "conversion webhook for example.com/v1, Kind=Widget failed: Post \"https://{address}/convert?timeout=30s\": dial tcp {address}: connect: connection refused"
        )
    );
}

/// A `spec.conversion` with `strategy` and a webhook.
fn conversion(strategy: &str, client_config: Value, review_versions: Value) -> Value {
    json!({"strategy": strategy, "webhook": {
        "clientConfig": client_config,
        "conversionReviewVersions": review_versions,
    }})
}

#[tokio::test]
async fn spec_conversion_is_validated_with_kube_apiservers_texts() {
    let t = TestServer::start().await;
    let causes = |reply: &crate::support::Reply| {
        assert_ok(reply, 422);
        reply.causes()
    };
    let pair = |field: &str, message: &str| (field.to_owned(), message.to_owned());

    let reply = t
        .post(CRDS, &widget_crd(json!({"strategy": "Webhook"})))
        .await;
    assert_eq!(
        causes(&reply),
        [
            pair(
                "spec.conversion.webhookClientConfig",
                "Required value: required when strategy is set to Webhook"
            ),
            pair("spec.conversion.conversionReviewVersions", "Required value"),
        ]
    );

    let reply = t
        .post(
            CRDS,
            &widget_crd(conversion(
                "Webhook",
                json!({"url": "http://127.0.0.1:1/convert?x=1"}),
                json!(["v2", "v2"]),
            )),
        )
        .await;
    assert_eq!(
        causes(&reply),
        [
            pair(
                "spec.conversion.webhookClientConfig.url",
                "Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]"
            ),
            pair(
                "spec.conversion.webhookClientConfig.url",
                "Invalid value: \"x=1\": query parameters are not permitted in the URL"
            ),
            pair(
                "spec.conversion.conversionReviewVersions[1]",
                "Invalid value: \"v2\": duplicate version"
            ),
            pair(
                "spec.conversion.conversionReviewVersions",
                "Invalid value: []string{\"v2\", \"v2\"}: must include at least one of v1, v1beta1"
            ),
        ]
    );

    let reply = t
        .post(
            CRDS,
            &widget_crd(conversion(
                "Webhook",
                json!({"service": {"name": "", "namespace": "default", "path": "convert"}}),
                json!(["v1"]),
            )),
        )
        .await;
    assert_eq!(
        causes(&reply),
        [
            pair(
                "spec.conversion.webhookClientConfig.service.name",
                "Required value: service name is required"
            ),
            pair(
                "spec.conversion.webhookClientConfig.service.path",
                "Invalid value: \"convert\": must start with a '/'"
            ),
        ]
    );

    let reply = t
        .post(
            CRDS,
            &widget_crd(conversion(
                "None",
                json!({"url": "https://127.0.0.1:1/convert"}),
                json!(["v1"]),
            )),
        )
        .await;
    let forbidden = "Forbidden: should not be set when strategy is not set to Webhook";
    assert_eq!(
        causes(&reply),
        [
            pair("spec.conversion.webhookClientConfig", forbidden),
            pair("spec.conversion.conversionReviewVersions", forbidden),
        ]
    );

    let reply = t
        .post(CRDS, &widget_crd(json!({"strategy": "Magic"})))
        .await;
    assert_eq!(
        causes(&reply),
        [pair(
            "spec.conversion.strategy",
            "Unsupported value: \"Magic\": supported values: \"None\", \"Webhook\""
        )]
    );

    // A valid one is stored with v1's defaults (a service's port 443).
    let created = assert_ok(
        &t.post(
            CRDS,
            &widget_crd(conversion(
                "Webhook",
                json!({"service": {"name": "converter", "namespace": "default", "path": "/convert"}}),
                json!(["v1"]),
            )),
        )
        .await,
        201,
    );
    assert_eq!(
        created["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"],
        443
    );
}
