//! The WebSocket rules of `pods/exec`, `pods/attach` and `pods/portforward`, checked with
//! a raw WebSocket client: upgrade and subprotocol errors, the exact v4 message sequence,
//! malformed frames, and the admin path that appends log lines (issue 17).

use std::time::Duration;

use futures_util::{SinkExt as _, StreamExt as _};
use http::header::SEC_WEBSOCKET_PROTOCOL;
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::{WebSocketStream, client_async};

use crate::support::TestServer;

const LIMIT: Duration = Duration::from_secs(10);

async fn with_pod(t: &TestServer) {
    let reply = t
        .post(
            "/api/v1/namespaces/default/pods",
            &json!({"metadata": {"name": "web"}, "spec": {"containers": [{"name": "main", "image": "x"}]}}),
        )
        .await;
    assert_eq!(
        reply.status,
        201,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
}

/// Opens a WebSocket at `path` offering `protocols`: the stream, or the HTTP status and
/// body of a refusal.
async fn open(
    t: &TestServer,
    path: &str,
    protocols: &str,
) -> Result<(WebSocketStream<TcpStream>, String), (u16, Value)> {
    let url = format!("{}{path}", t.server.url().replacen("http", "ws", 1));
    let mut request = url.into_client_request().expect("a WebSocket request");
    if !protocols.is_empty() {
        request
            .headers_mut()
            .insert(SEC_WEBSOCKET_PROTOCOL, protocols.parse().expect("a header"));
    }
    let tcp = TcpStream::connect(t.server.address())
        .await
        .expect("connect");
    match tokio::time::timeout(LIMIT, client_async(request, tcp)).await {
        Ok(Ok((socket, response))) => {
            let protocol = response
                .headers()
                .get(SEC_WEBSOCKET_PROTOCOL)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned();
            Ok((socket, protocol))
        }
        Ok(Err(WsError::Http(response))) => {
            let body = response.body().clone().unwrap_or_default();
            Err((
                response.status().as_u16(),
                serde_json::from_slice(&body).unwrap_or(Value::Null),
            ))
        }
        Ok(Err(other)) => panic!("the handshake failed oddly: {other}"),
        Err(_) => panic!("no handshake answer within {LIMIT:?}"),
    }
}

async fn next(socket: &mut WebSocketStream<TcpStream>) -> Message {
    tokio::time::timeout(LIMIT, socket.next())
        .await
        .expect("a message within the limit")
        .expect("the socket is open")
        .expect("a valid message")
}

#[tokio::test]
async fn plain_get_of_exec_is_400_upgrade_request_required() {
    let t = TestServer::start().await;
    with_pod(&t).await;
    let reply = t
        .get("/api/v1/namespaces/default/pods/web/exec?command=true&stdout=true")
        .await;
    assert_eq!(reply.status, 400);
    assert_eq!(reply.json()["message"], "Upgrade request required");
    let missing = t
        .get("/api/v1/namespaces/default/pods/nope/exec?command=true&stdout=true")
        .await;
    assert_eq!(missing.status, 404, "the Pod is looked up first");
}

#[tokio::test]
async fn unsupported_or_missing_subprotocols_are_400_naming_the_supported_ones() {
    let t = TestServer::start().await;
    with_pod(&t).await;
    let path = "/api/v1/namespaces/default/pods/web/exec?command=true&stdout=true";
    for offered in ["v3.channel.k8s.io", "", "SPDY/3.1+portforward.k8s.io"] {
        let (status, body) = open(&t, path, offered).await.expect_err("refused");
        assert_eq!(status, 400, "{offered}: {body}");
        let message = body["message"].as_str().unwrap_or("");
        assert!(
            message.contains("v5.channel.k8s.io") && message.contains("not supported"),
            "{offered}: {message}"
        );
    }
    let (status, body) = open(
        &t,
        "/api/v1/namespaces/default/pods/web/exec?command=true&stdout=true&container=other",
        "v5.channel.k8s.io",
    )
    .await
    .expect_err("refused");
    assert_eq!(
        (status, body["message"].as_str()),
        (400, Some("container other is not valid for pod web"))
    );
    let (status, _) = open(
        &t,
        "/api/v1/namespaces/default/pods/nope/attach?stdout=true",
        "v5.channel.k8s.io",
    )
    .await
    .expect_err("refused");
    assert_eq!(status, 404);
}

#[tokio::test]
async fn v4_exec_sends_ready_output_status_and_a_close_frame_in_order() {
    let t = TestServer::start().await;
    with_pod(&t).await;
    let (mut socket, protocol) = open(
        &t,
        "/api/v1/namespaces/default/pods/web/exec?command=echo&command=hi&stdout=true",
        "v4.channel.k8s.io, v5.channel.k8s.io",
    )
    .await
    .expect("upgraded");
    assert_eq!(
        protocol, "v4.channel.k8s.io",
        "the client's first choice wins"
    );
    assert_eq!(next(&mut socket).await, Message::Binary(vec![1].into()));
    assert_eq!(
        next(&mut socket).await,
        Message::Binary(b"\x01hi\n".to_vec().into())
    );
    let Message::Binary(status) = next(&mut socket).await else {
        panic!("expected the status message");
    };
    assert_eq!(status.first(), Some(&3));
    let status: Value = serde_json::from_slice(&status[1..]).expect("a Status");
    assert_eq!(status["status"], "Success");
    match next(&mut socket).await {
        Message::Close(Some(frame)) => assert_eq!(frame.code, CloseCode::Normal),
        other => panic!("expected a close frame, got {other:?}"),
    }
}

#[tokio::test]
async fn a_malformed_frame_ends_the_session_with_a_protocol_error() {
    let t = TestServer::start().await;
    with_pod(&t).await;
    let (mut socket, _) = open(
        &t,
        "/api/v1/namespaces/default/pods/web/exec?command=cat&stdin=true&stdout=true",
        "v5.channel.k8s.io",
    )
    .await
    .expect("upgraded");
    assert_eq!(next(&mut socket).await, Message::Binary(vec![1].into()));
    socket
        .send(Message::Binary(vec![255, 0, 0].into()))
        .await
        .expect("send");
    match next(&mut socket).await {
        Message::Close(Some(frame)) => {
            assert_eq!(frame.code, CloseCode::Protocol);
            assert!(frame.reason.contains("close signal"), "{}", frame.reason);
        }
        other => panic!("expected a protocol-error close, got {other:?}"),
    }
}

#[tokio::test]
async fn port_forward_over_websockets_needs_ports_and_announces_them() {
    let t = TestServer::start().await;
    with_pod(&t).await;
    let base = "/api/v1/namespaces/default/pods/web/portforward";
    let (status, body) = open(&t, base, "v4.channel.k8s.io")
        .await
        .expect_err("refused");
    assert_eq!(
        (status, body["message"].as_str()),
        (400, Some("query parameter \"ports\" is required"))
    );
    let (status, _) = open(&t, &format!("{base}?ports=0"), "v4.channel.k8s.io")
        .await
        .expect_err("refused");
    assert_eq!(status, 400);
    let (mut socket, _) = open(&t, &format!("{base}?ports=8080"), "v4.channel.k8s.io")
        .await
        .expect("upgraded");
    assert_eq!(
        next(&mut socket).await,
        Message::Binary(vec![0, 0x90, 0x1f].into())
    );
    assert_eq!(
        next(&mut socket).await,
        Message::Binary(vec![1, 0x90, 0x1f].into())
    );
    let Message::Binary(error) = next(&mut socket).await else {
        panic!("expected the error message");
    };
    assert_eq!(error.first(), Some(&1));
    assert!(String::from_utf8_lossy(&error[1..]).contains("port-forward.kubeclient.dev/8080"));
}

#[tokio::test]
async fn admin_path_appends_log_lines_only_when_enabled() {
    let t = TestServer::start_with(
        kubeclient_apiserver::ApiServer::builder().enable_admin_faults(true),
    )
    .await;
    with_pod(&t).await;
    let append = t
        .request(
            "POST",
            "/_kubeclient/pods/default/web/log",
            Some("text/plain"),
            "a\nb\n",
        )
        .await;
    assert_eq!(
        append.status,
        200,
        "{}",
        String::from_utf8_lossy(&append.body)
    );
    let log = t.get("/api/v1/namespaces/default/pods/web/log").await;
    assert_eq!(
        (log.status, log.header("content-type")),
        (200, Some("text/plain"))
    );
    assert_eq!(&log.body[..], b"a\nb\n");
    let missing = t
        .request("POST", "/_kubeclient/pods/default/nope/log", None, "x")
        .await;
    assert_eq!(missing.status, 404);

    let closed = TestServer::start().await;
    with_pod(&closed).await;
    let refused = closed
        .request("POST", "/_kubeclient/pods/default/web/log", None, "x")
        .await;
    assert_eq!(refused.status, 404, "admin paths are off by default");
}

/// A Pod no node holds (it waits for another scheduler) has no streams: exec, attach and
/// port-forward answer kube-apiserver's 400 before any upgrade, its log is empty (204);
/// the embedded scheduler binds every other Pod.
#[tokio::test]
async fn an_unscheduled_pod_has_no_host_for_its_streams() {
    let t = TestServer::start().await;
    let created = t
        .post(
            "/api/v1/namespaces/default/pods",
            &json!({"metadata": {"name": "waiting"}, "spec": {"schedulerName": "elsewhere",
                "containers": [{"name": "main", "image": "x"}]}}),
        )
        .await
        .json();
    assert!(created["spec"].get("nodeName").is_none(), "{created}");
    for path in [
        "exec?command=ls&stdout=true",
        "attach?stdout=true",
        "portforward?ports=80",
    ] {
        let url = format!("/api/v1/namespaces/default/pods/waiting/{path}");
        let answer = t.get(&url).await;
        assert_eq!(answer.status, 400, "{path}");
        assert_eq!(
            answer.json()["message"],
            "pod waiting does not have a host assigned",
            "{path}"
        );
        let upgraded = open(&t, &url, "v4.channel.k8s.io").await;
        assert!(
            matches!(&upgraded, Err((400, status)) if status["message"] == "pod waiting does not have a host assigned"),
            "{path}: {:?}",
            upgraded.err()
        );
    }
    let log = t.get("/api/v1/namespaces/default/pods/waiting/log").await;
    assert_eq!((log.status, log.body.len()), (204, 0));
    with_pod(&t).await;
    let bound = t.get("/api/v1/namespaces/default/pods/web").await.json();
    assert_eq!(bound["spec"]["nodeName"], "kubeclient-node");
    let owners = bound["metadata"]["managedFields"].to_string();
    assert!(
        !owners.contains("nodeName"),
        "the scheduler's binding: {owners}"
    );
}
