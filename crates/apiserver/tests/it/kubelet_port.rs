//! The kubelet port (issue 26, `ApiServerBuilder::kubelet_port`): a kubelet's own HTTPS
//! paths on loopback, over TLS with the port's CA, answered by the simulated kubelets'
//! streams after the API server's authentication: `/healthz`, `/containerLogs`, and
//! `/exec` over WebSocket with the kubelet's `input`/`output` names.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use http::header::{AUTHORIZATION, SEC_WEBSOCKET_PROTOCOL};
use kubeclient_apiserver::ApiServer;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;

use crate::cluster::{container, pod, pod_path};
use crate::support::{TestServer, with_bearer};

const TOKEN: &str = "kubelet-port-token";

/// A TLS connection to the kubelet port, trusting its CA.
async fn connect(t: &TestServer) -> TlsStream<TcpStream> {
    let address = t.server.kubelet_address().expect("a kubelet port");
    let ca = t.server.kubelet_ca_pem().expect("its CA");
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca.as_bytes()).expect("a PEM certificate"))
        .expect("a CA");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = TcpStream::connect(address).await.expect("connect");
    TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("localhost").expect("a name"), tcp)
        .await
        .expect("the TLS handshake")
}

/// An HTTP/1.1 GET of `path` with `token`: the status line and the body.
async fn get(t: &TestServer, path: &str, token: Option<&str>) -> (String, String) {
    let mut tls = connect(t).await;
    let authorization = token
        .map(|token| format!("Authorization: Bearer {token}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: localhost\r\n{authorization}Connection: close\r\n\r\n"
    );
    tls.write_all(request.as_bytes()).await.expect("write");
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(10), tls.read_to_string(&mut answer))
        .await
        .expect("an answer within 10 s")
        .ok();
    let status = answer.lines().next().unwrap_or("").to_owned();
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    (status, body)
}

#[tokio::test]
async fn the_kubelet_port_serves_health_logs_and_exec_over_tls() {
    let t = TestServer::start_with(
        ApiServer::builder()
            .nodes(1)
            .time_scale(0.0)
            .token(TOKEN)
            .kubelet_port(0),
    )
    .await;
    let mut shell = container(&["sh", "-c", "echo started; sleep 3600"]);
    shell["name"] = json!("shell");
    let (created, answer) = with_bearer(
        &t,
        "POST",
        "/api/v1/namespaces/default/pods".to_owned(),
        TOKEN.to_owned(),
        pod("busy", json!({"containers": [shell]})),
    )
    .await;
    assert_eq!(created, 201, "{answer}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (_, busy) = with_bearer(&t, "GET", pod_path("busy"), TOKEN.to_owned(), json!({})).await;
        if busy["status"]["phase"] == "Running" {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the Pod runs: {busy}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }

    let (status, body) = get(&t, "/healthz", None).await;
    assert!(status.contains("200"), "{status}");
    assert!(body.contains("ok"), "{body}");
    let (status, _) = get(&t, "/containerLogs/default/busy/shell", None).await;
    assert!(status.contains("401"), "no token: {status}");
    let (status, body) = get(&t, "/containerLogs/default/busy/shell", Some(TOKEN)).await;
    assert!(status.contains("200"), "{status}: {body}");
    assert!(body.contains("started"), "{body}");
    let (status, _) = get(&t, "/stats/summary", Some(TOKEN)).await;
    assert!(status.contains("404"), "{status}");

    // exec as kube-rs's kubelet_node_exec asks for it.
    let address = t.server.kubelet_address().expect("a kubelet port");
    let url = format!(
        "wss://{address}/exec/default/busy/shell?&output=1&command=sh&command=-c&command=for%20i%20in%201%202%203%3B%20do%20echo%20%24i%3B%20done"
    );
    let mut request = url.into_client_request().expect("a WebSocket request");
    request.headers_mut().insert(
        SEC_WEBSOCKET_PROTOCOL,
        "v4.channel.k8s.io".parse().expect("a header"),
    );
    request.headers_mut().insert(
        AUTHORIZATION,
        format!("Bearer {TOKEN}").parse().expect("a header"),
    );
    let tls = connect(&t).await;
    let (mut socket, _) = tokio::time::timeout(
        Duration::from_secs(10),
        tokio_tungstenite::client_async(request, tls),
    )
    .await
    .expect("a handshake within 10 s")
    .expect("upgraded");
    let mut stdout = Vec::new();
    let mut status = Value::Null;
    while let Ok(Some(Ok(message))) =
        tokio::time::timeout(Duration::from_secs(10), socket.next()).await
    {
        match message {
            Message::Binary(frame) if frame.first() == Some(&1) => {
                stdout.extend_from_slice(&frame[1..]);
            }
            Message::Binary(frame) if frame.first() == Some(&3) => {
                status = serde_json::from_slice(&frame[1..]).unwrap_or(Value::Null);
            }
            Message::Close(_) => break,
            _ => {}
        }
    }
    assert_eq!(String::from_utf8_lossy(&stdout), "1\n2\n3\n");
    assert_eq!(status["status"], "Success", "{status}");
}
