//! Protobuf over HTTP (apiserver-semantics §8.3): bodies in and out for built-in kinds,
//! watch frames, Status errors, and 406/415 for custom resources.

use std::time::Duration;

use http_body_util::BodyExt;
use kubeclient_machinery::protobuf::{self, MEDIA_TYPE, WatchFrameDecoder};
use serde_json::{Value, json};

use crate::support::{Reply, TestServer};

const TYPED_ACCEPT: &str = "application/vnd.kubernetes.protobuf,application/json";

fn decoded(reply: &Reply) -> Value {
    assert_eq!(
        reply.header("content-type"),
        Some(MEDIA_TYPE),
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    protobuf::decode(&reply.body).expect("a protobuf body")
}

fn configmap(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "default", "labels": {"app": "pb"}},
           "data": {"a": "1"}, "binaryData": {"b": "AAEC"}})
}

#[tokio::test(flavor = "multi_thread")]
async fn protobuf_bodies_create_and_update_and_reads_answer_in_protobuf() {
    let t = TestServer::start().await;
    let path = "/api/v1/namespaces/default/configmaps";
    let body = protobuf::encode(&configmap("pb")).unwrap();
    let created = t
        .request_accepting("POST", path, Some(MEDIA_TYPE), Some(TYPED_ACCEPT), &body)
        .await;
    assert_eq!(
        created.status,
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    let created = decoded(&created);
    assert_eq!(created["data"], json!({"a": "1"}));
    assert_eq!(created["binaryData"], json!({"b": "AAEC"}));
    assert!(created["metadata"]["uid"].is_string());

    // The same object as JSON and as protobuf.
    let as_json = t.get(&format!("{path}/pb")).await.json();
    let as_pb = t
        .request_accepting("GET", &format!("{path}/pb"), None, Some(MEDIA_TYPE), "")
        .await;
    assert_eq!(decoded(&as_pb), as_json);

    // Update with a protobuf body.
    let mut changed = as_json.clone();
    changed["data"]["a"] = json!("2");
    let updated = t
        .request_accepting(
            "PUT",
            &format!("{path}/pb"),
            Some(MEDIA_TYPE),
            Some(TYPED_ACCEPT),
            protobuf::encode(&changed).unwrap(),
        )
        .await;
    assert_eq!(
        updated.status,
        200,
        "{}",
        String::from_utf8_lossy(&updated.body)
    );
    assert_eq!(decoded(&updated)["data"]["a"], "2");

    // A list, as protobuf, has the same items as the JSON list.
    let list = decoded(
        &t.request_accepting("GET", path, None, Some(TYPED_ACCEPT), "")
            .await,
    );
    assert_eq!(list["kind"], "ConfigMapList");
    let json_list = t.get(path).await.json();
    assert_eq!(list["items"][0]["data"], json_list["items"][0]["data"]);
    assert_eq!(
        list["metadata"]["resourceVersion"],
        json_list["metadata"]["resourceVersion"]
    );

    // JSON first in Accept gets JSON; a Table stays JSON.
    let json_first = t
        .request_accepting(
            "GET",
            path,
            None,
            Some("application/json,application/vnd.kubernetes.protobuf"),
            "",
        )
        .await;
    assert_eq!(json_first.header("content-type"), Some("application/json"));
    let table = t
        .request_accepting(
            "GET",
            path,
            None,
            Some(
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/vnd.kubernetes.protobuf",
            ),
            "",
        )
        .await;
    assert_eq!(table.json()["kind"], "Table");
}

#[tokio::test(flavor = "multi_thread")]
async fn errors_are_protobuf_status_and_bad_bodies_are_refused_as_the_real_server_does() {
    let t = TestServer::start().await;
    let missing = t
        .request_accepting(
            "GET",
            "/api/v1/namespaces/default/configmaps/nope",
            None,
            Some(TYPED_ACCEPT),
            "",
        )
        .await;
    assert_eq!(missing.status, 404);
    let status = decoded(&missing);
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "NotFound");
    assert_eq!(status["code"], 404);

    let garbage = t
        .request(
            "POST",
            "/api/v1/namespaces/default/configmaps",
            Some(MEDIA_TYPE),
            "garbage",
        )
        .await;
    assert_eq!(garbage.status, 400);
    assert_eq!(
        garbage.json()["message"],
        "the object provided is unrecognized (must be of type ConfigMap): provided data does not appear to be a protobuf message, expected prefix [107 56 115 0] (67617262616765)"
    );
    let mut truncated = protobuf::encode(&configmap("t")).unwrap();
    truncated.truncate(truncated.len() / 2);
    let reply = t
        .request(
            "POST",
            "/api/v1/namespaces/default/configmaps",
            Some(MEDIA_TYPE),
            &truncated,
        )
        .await;
    assert_eq!(reply.status, 400);
}

#[tokio::test(flavor = "multi_thread")]
async fn custom_resources_refuse_protobuf_with_406_and_415() {
    let t = TestServer::start().await;
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    // The CRD itself is a built-in kind: created from a protobuf body.
    let created = t
        .request(
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            Some(MEDIA_TYPE),
            protobuf::encode(&crd).unwrap(),
        )
        .await;
    assert_eq!(
        created.status,
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    let path = "/apis/example.com/v1/namespaces/default/widgets";
    let mut reply = t
        .request_accepting("GET", path, None, Some(MEDIA_TYPE), "")
        .await;
    for _ in 0..100 {
        if reply.status != 404 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        reply = t
            .request_accepting("GET", path, None, Some(MEDIA_TYPE), "")
            .await;
    }
    assert_eq!(reply.status, 406);
    assert_eq!(reply.json()["reason"], "NotAcceptable");
    let fallback = t
        .request_accepting("GET", path, None, Some(TYPED_ACCEPT), "")
        .await;
    assert_eq!(fallback.status, 200);
    assert_eq!(fallback.header("content-type"), Some("application/json"));
    let widget = b"k8s\0\x0a\x1a\x0a\x0fexample.com/v1\x12\x06Widget\x12\x00";
    let refused = t.request("POST", path, Some(MEDIA_TYPE), &widget[..]).await;
    assert_eq!(refused.status, 415);
    assert_eq!(refused.json()["reason"], "UnsupportedMediaType");
}

/// Reads protobuf watch frames until `count` events arrived.
async fn frames(
    body: &mut hyper::body::Incoming,
    decoder: &mut WatchFrameDecoder,
    count: usize,
) -> Vec<Value> {
    let mut events = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while events.len() < count {
        while let Some(event) = decoder.next_event() {
            events.push(event.expect("a valid frame"));
        }
        if events.len() >= count {
            break;
        }
        let frame = tokio::time::timeout_at(deadline, body.frame())
            .await
            .expect("events within 10 s")
            .expect("the stream is open")
            .expect("readable");
        if let Ok(data) = frame.into_data() {
            decoder.push(&data);
        }
    }
    events
}

#[tokio::test(flavor = "multi_thread")]
async fn watches_stream_length_prefixed_protobuf_frames_with_bookmarks() {
    let t = TestServer::start().await;
    let path = "/api/v1/namespaces/default/configmaps";
    t.post(path, &configmap("w1")).await;
    let response = t
        .send(
            "GET",
            &format!("{path}?watch=1&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"),
            None,
            Some(TYPED_ACCEPT),
            "",
        )
        .await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers().get("content-type").unwrap(),
        "application/vnd.kubernetes.protobuf;stream=watch"
    );
    let mut body = response.into_body();
    let mut decoder = WatchFrameDecoder::new();
    let initial = frames(&mut body, &mut decoder, 2).await;
    assert_eq!(initial[0]["type"], "ADDED");
    assert_eq!(initial[0]["object"]["metadata"]["name"], "w1");
    assert_eq!(initial[1]["type"], "BOOKMARK");
    assert_eq!(
        initial[1]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    t.post(path, &configmap("w2")).await;
    t.delete(&format!("{path}/w1")).await;
    let events = frames(&mut body, &mut decoder, 2).await;
    assert_eq!(
        (
            events[0]["type"].as_str(),
            events[0]["object"]["metadata"]["name"].as_str()
        ),
        (Some("ADDED"), Some("w2"))
    );
    assert_eq!(
        (
            events[1]["type"].as_str(),
            events[1]["object"]["metadata"]["name"].as_str()
        ),
        (Some("DELETED"), Some("w1"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_watch_from_a_compacted_revision_gets_a_protobuf_error_event() {
    let t = TestServer::start().await;
    let path = "/api/v1/namespaces/default/configmaps";
    let rv = t.create_configmap("a", json!({})).await;
    t.create_configmap("b", json!({})).await;
    t.server.compact();
    let response = t
        .send(
            "GET",
            &format!("{path}?watch=1&resourceVersion={rv}"),
            None,
            Some(MEDIA_TYPE),
            "",
        )
        .await;
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    let mut decoder = WatchFrameDecoder::new();
    let events = frames(&mut body, &mut decoder, 1).await;
    assert_eq!(events[0]["type"], "ERROR");
    assert_eq!(events[0]["object"]["kind"], "Status");
    assert_eq!(events[0]["object"]["code"], 410);
}

/// client-go's metadata client asks for protobuf PartialObjectMetadata first; it is served
/// for built-in kinds and custom resources alike (PartialObjectMetadata is a built-in kind).
#[tokio::test(flavor = "multi_thread")]
async fn metadata_clients_get_protobuf_partial_object_metadata() {
    const METADATA_LIST: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
    const METADATA: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
    let t = TestServer::start().await;
    let path = "/api/v1/namespaces/default/configmaps";
    t.post(path, &configmap("m")).await;
    let list = decoded(
        &t.request_accepting("GET", path, None, Some(METADATA_LIST), "")
            .await,
    );
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert_eq!(list["items"][0]["metadata"]["name"], "m");
    assert!(list["items"][0].get("data").is_none());
    let one = decoded(
        &t.request_accepting("GET", &format!("{path}/m"), None, Some(METADATA), "")
            .await,
    );
    assert_eq!(one["kind"], "PartialObjectMetadata");
    assert_eq!(one["metadata"]["labels"]["app"], "pb");

    // A custom resource's metadata, in protobuf, while its objects are JSON only.
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    assert_eq!(
        t.post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd
        )
        .await
        .status,
        201
    );
    let gadgets = "/apis/example.com/v1/namespaces/default/gadgets";
    let created = t
        .post(gadgets, &json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": {"x": 1}}))
        .await;
    assert_eq!(
        created.status,
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    let list = decoded(
        &t.request_accepting("GET", gadgets, None, Some(METADATA_LIST), "")
            .await,
    );
    assert_eq!(list["items"][0]["metadata"]["name"], "g");
    let response = t
        .send(
            "GET",
            &format!("{gadgets}?watch=1"),
            None,
            Some(METADATA),
            "",
        )
        .await;
    assert_eq!(
        response.headers().get("content-type").unwrap(),
        "application/vnd.kubernetes.protobuf;stream=watch"
    );
    let mut body = response.into_body();
    let mut decoder = WatchFrameDecoder::new();
    let events = frames(&mut body, &mut decoder, 1).await;
    assert_eq!(events[0]["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(events[0]["object"]["metadata"]["name"], "g");
}
