//! The neutral load server: a precomputed PodList (paged or whole) and a precomputed watch
//! stream, served from memory so the server is never the bottleneck; as JSON, as
//! PartialObjectMetadata, or as protobuf when `Accept` starts with it. Under
//! `/ignore-as/...` it ignores `as=PartialObjectMetadata` and sends whole Pods.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::Frame;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::sync::mpsc;

use kubeclient::machinery::protobuf;
use kubeclient_bench::{LIST_RESOURCE_VERSION, RELIST_CHANGE_EVERY, pod};

/// The path prefix under which the server ignores `as=` (see [`handle`]).
pub(crate) const IGNORE_AS_PREFIX: &str = "/ignore-as";

/// The ERROR event that ends the first watch of the relist scenario.
const GONE: &[u8] = br#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 999999 (1000000)","reason":"Expired","code":410}}
"#;

/// The data served: every Pod's JSON, and every watch event line.
pub(crate) struct LoadData {
    /// Watch events are held back until the runner releases them (after the client has
    /// synced), so syncing never competes with the event burst and events/s measures
    /// event handling alone.
    pub(crate) release: tokio::sync::watch::Sender<bool>,
    items: Vec<Bytes>,
    events: Vec<Bytes>,
    /// The same, as `PartialObjectMetadata` (for metadata-only clients).
    metadata_items: Vec<Bytes>,
    metadata_events: Vec<Bytes>,
    /// The relist scenario's second list: every tenth Pod at a new resourceVersion.
    relist_items: Vec<Bytes>,
    metadata_relist_items: Vec<Bytes>,
    /// The same Pods, list items and events in protobuf (`ours-typed-pb`).
    protobuf: ProtobufData,
    /// The relist scenario is on: the first watch ends with 410 Expired.
    pub(crate) relist: AtomicBool,
    /// The 410 was sent: lists now serve the second list.
    gone_sent: AtomicBool,
}

/// The protobuf form of the data: each Pod as a list item message, each event as a frame.
struct ProtobufData {
    items: Vec<Bytes>,
    relist_items: Vec<Bytes>,
    events: Vec<Bytes>,
    gone: Bytes,
}

impl ProtobufData {
    fn generate(
        pods: &[serde_json::Value],
        relisted: &[serde_json::Value],
        events: &[serde_json::Value],
    ) -> Self {
        let typed = |pod: &serde_json::Value| {
            let mut pod = pod.clone();
            pod["kind"] = "Pod".into();
            pod["apiVersion"] = "v1".into();
            pod
        };
        let item = |pod: &serde_json::Value| {
            Bytes::from(protobuf::encode_item(&typed(pod)).expect("a Pod has a protobuf form"))
        };
        let gone: serde_json::Value = serde_json::from_slice(GONE).expect("GONE is JSON");
        ProtobufData {
            items: pods.iter().map(item).collect(),
            relist_items: relisted.iter().map(item).collect(),
            events: events
                .iter()
                .map(|pod| {
                    Bytes::from(
                        protobuf::encode_watch_event("MODIFIED", pod)
                            .expect("a Pod has a protobuf form"),
                    )
                })
                .collect(),
            gone: Bytes::from(
                protobuf::encode_watch_event("ERROR", &gone["object"])
                    .expect("a Status has a protobuf form"),
            ),
        }
    }
}

fn metadata_only(object: &serde_json::Value) -> serde_json::Value {
    serde_json::json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": object["metadata"].clone()})
}

fn event_line(object: &serde_json::Value) -> Bytes {
    let mut line = br#"{"type":"MODIFIED","object":"#.to_vec();
    line.extend_from_slice(&serde_json::to_vec(object).unwrap_or_default());
    line.extend_from_slice(b"}\n");
    Bytes::from(line)
}

impl LoadData {
    /// `objects` Pods and `events` MODIFIED events cycling over them with increasing RVs.
    pub(crate) fn generate(objects: usize, events: usize) -> Self {
        let pods: Vec<serde_json::Value> = (0..objects)
            .map(|i| pod(i, LIST_RESOURCE_VERSION - 1))
            .collect();
        let encode = |v: &serde_json::Value| Bytes::from(serde_json::to_vec(v).unwrap_or_default());
        let items = pods.iter().map(encode).collect();
        let metadata_items = pods.iter().map(|p| encode(&metadata_only(p))).collect();
        let relisted: Vec<serde_json::Value> = (0..objects)
            .map(|i| {
                let changed = i % RELIST_CHANGE_EVERY == 0;
                pod(i, LIST_RESOURCE_VERSION - if changed { 2 } else { 1 })
            })
            .collect();
        let relist_items = relisted.iter().map(encode).collect();
        let metadata_relist_items = relisted.iter().map(|p| encode(&metadata_only(p))).collect();
        let mut event_lines = Vec::with_capacity(events);
        let mut metadata_events = Vec::with_capacity(events);
        let mut event_objects = Vec::with_capacity(events);
        for e in 0..events {
            let mut object = pod(e % objects.max(1), LIST_RESOURCE_VERSION + 1 + e as u64);
            object["kind"] = "Pod".into();
            object["apiVersion"] = "v1".into();
            event_lines.push(event_line(&object));
            metadata_events.push(event_line(&metadata_only(&object)));
            event_objects.push(object);
        }
        let protobuf = ProtobufData::generate(&pods, &relisted, &event_objects);
        LoadData {
            release: tokio::sync::watch::channel(false).0,
            items,
            events: event_lines,
            metadata_items,
            metadata_events,
            relist_items,
            metadata_relist_items,
            protobuf,
            relist: AtomicBool::new(false),
            gone_sent: AtomicBool::new(false),
        }
    }

    /// Back to the state before a client ran.
    pub(crate) fn reset(&self, released: bool, relist: bool) {
        self.release.send_replace(released);
        self.relist.store(relist, Ordering::SeqCst);
        self.gone_sent.store(false, Ordering::SeqCst);
    }

    /// Bytes of the list JSON (for reports).
    pub(crate) fn list_bytes(&self) -> usize {
        self.items.iter().map(Bytes::len).sum()
    }
}

type Body = BoxBody<Bytes, Infallible>;

fn full(status: u16, body: impl Into<Bytes>) -> Response<Body> {
    full_as(status, body, "application/json")
}

fn full_as(status: u16, body: impl Into<Bytes>, content_type: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(body.into()).boxed());
    *response.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::OK);
    response.headers_mut().insert(
        "content-type",
        hyper::header::HeaderValue::from_static(content_type),
    );
    response
}

/// How a request wants its answer.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    Json,
    Metadata,
    Protobuf,
}

fn list(data: &LoadData, query: &[(String, String)], form: Form) -> Response<Body> {
    let relisted = data.gone_sent.load(Ordering::SeqCst);
    let items = match (form, relisted) {
        (Form::Metadata, false) => &data.metadata_items,
        (Form::Json, false) => &data.items,
        (Form::Metadata, true) => &data.metadata_relist_items,
        (Form::Json, true) => &data.relist_items,
        (Form::Protobuf, false) => &data.protobuf.items,
        (Form::Protobuf, true) => &data.protobuf.relist_items,
    };
    let get = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let start: usize = get("continue").and_then(|c| c.parse().ok()).unwrap_or(0);
    let whole = get("resourceVersion") == Some("0");
    let limit: usize = if whole {
        0
    } else {
        get("limit").and_then(|l| l.parse().ok()).unwrap_or(0)
    };
    let end = if limit == 0 {
        items.len()
    } else {
        (start + limit).min(items.len())
    };
    let mut list_metadata = format!("{{\"resourceVersion\":\"{LIST_RESOURCE_VERSION}\"");
    if end < items.len() {
        list_metadata.push_str(&format!(
            ",\"continue\":\"{end}\",\"remainingItemCount\":{}",
            items.len() - end
        ));
    }
    list_metadata.push('}');
    let slice = items.get(start..end).unwrap_or(&[]);
    if form == Form::Protobuf {
        let metadata: serde_json::Value = serde_json::from_str(&list_metadata).unwrap_or_default();
        return match protobuf::encode_list("v1", "PodList", &metadata, slice) {
            Ok(body) => full_as(200, body, protobuf::MEDIA_TYPE),
            Err(err) => full(500, err.to_string()),
        };
    }
    let mut body =
        BytesMut::with_capacity(slice.iter().map(Bytes::len).sum::<usize>() + slice.len() + 128);
    body.put_slice(
        format!(
            "{{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{list_metadata},\"items\":["
        )
        .as_bytes(),
    );
    for (i, item) in slice.iter().enumerate() {
        if i > 0 {
            body.put_u8(b',');
        }
        body.put_slice(item);
    }
    body.put_slice(b"]}");
    full(200, body.freeze())
}

fn watch(data: Arc<LoadData>, form: Form) -> Response<Body> {
    let (sender, receiver) = mpsc::channel::<Bytes>(8);
    tokio::spawn(async move {
        let mut released = data.release.subscribe();
        if released.wait_for(|r| *r).await.is_err() {
            return;
        }
        if data.relist.load(Ordering::SeqCst) && !data.gone_sent.swap(true, Ordering::SeqCst) {
            let gone = match form {
                Form::Protobuf => data.protobuf.gone.clone(),
                _ => Bytes::from_static(GONE),
            };
            let _ = sender.send(gone).await;
            return;
        }
        // Batches of about 64 KiB, as a busy server flushes.
        let mut batch = BytesMut::with_capacity(80 * 1024);
        let lines = match form {
            Form::Metadata => &data.metadata_events,
            Form::Json => &data.events,
            Form::Protobuf => &data.protobuf.events,
        };
        for line in lines {
            batch.put_slice(line);
            if batch.len() >= 64 * 1024 && sender.send(batch.split().freeze()).await.is_err() {
                return;
            }
        }
        if !batch.is_empty() && sender.send(batch.freeze()).await.is_err() {
            return;
        }
        // Then stay open, quiet, like a watch with nothing to say.
        tokio::select! {
            () = sender.closed() => {}
            () = tokio::time::sleep(Duration::from_secs(600)) => {}
        }
    });
    let stream = futures_util::stream::unfold(receiver, |mut receiver| async move {
        let chunk = receiver.recv().await?;
        Some((Ok::<_, Infallible>(Frame::data(chunk)), receiver))
    });
    let mut response = Response::new(BodyExt::boxed(StreamBody::new(stream)));
    let content_type = match form {
        Form::Protobuf => protobuf::WATCH_MEDIA_TYPE,
        _ => "application/json",
    };
    response.headers_mut().insert(
        "content-type",
        hyper::header::HeaderValue::from_static(content_type),
    );
    response
}

async fn handle(data: Arc<LoadData>, request: Request<hyper::body::Incoming>) -> Response<Body> {
    let query: Vec<(String, String)> = request
        .uri()
        .query()
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default();
    // Under `/ignore-as` the server ignores `as=PartialObjectMetadata` and answers
    // metadata-only clients with whole Pods, as older or non-standard servers do.
    let (path, ignore_as) = match request.uri().path().strip_prefix(IGNORE_AS_PREFIX) {
        Some(path) => (path, true),
        None => (request.uri().path(), false),
    };
    if path != "/api/v1/pods" {
        return full(
            404,
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"NotFound","code":404}"#,
        );
    }
    let accept = request
        .headers()
        .get("accept")
        .and_then(|a| a.to_str().ok())
        .unwrap_or_default();
    let form = if accept.contains("as=PartialObjectMetadata") && !ignore_as {
        Form::Metadata
    } else if accept.starts_with(protobuf::MEDIA_TYPE) {
        Form::Protobuf
    } else {
        Form::Json
    };
    let flag = |name: &str| {
        query
            .iter()
            .any(|(k, v)| k == name && v != "false" && v != "0")
    };
    if flag("watch") {
        if flag("sendInitialEvents") {
            return full(
                422,
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"sendInitialEvents is not supported by the load server","reason":"Invalid","code":422}"#,
            );
        }
        return watch(data, form);
    }
    list(&data, &query, form)
}

/// Serves `data` on a loopback port; returns the address.
pub(crate) async fn serve(data: Arc<LoadData>) -> std::io::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let data = data.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request| {
                    let data = data.clone();
                    async move { Ok::<_, Infallible>(handle(data, request).await) }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(address)
}
