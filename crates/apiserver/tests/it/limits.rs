//! The server's limits (issue 12): request bodies, the header read timeout against slow
//! clients, and watchers that fall too far behind.

use serde_json::json;

use crate::support::TestServer;
use kubeclient_apiserver::ApiServer;

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn expect_100_continue_with_a_99_mb_body_is_answered_413_instead_of_100() {
    let t = TestServer::start().await;
    t.create_configmap("cm", json!({})).await;
    let request = format!(
        "PATCH {CONFIGMAPS}/cm HTTP/1.1\r\nHost: x\r\nContent-Type: application/merge-patch+json\r\nContent-Length: 99000000\r\nExpect: 100-continue\r\n\r\n"
    );
    let answer = raw_exchange(&t, request.as_bytes(), std::time::Duration::from_secs(5))
        .await
        .expect("an answer");
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(
        answer.contains("Request entity too large: limit is 3145728"),
        "{answer}"
    );
}

#[tokio::test]
async fn request_body_over_the_configured_limit_is_413() {
    let t = TestServer::start_with(ApiServer::builder().max_request_body_bytes(1000)).await;
    let reply = t
        .post(
            CONFIGMAPS,
            &json!({"metadata": {"name": "big"}, "data": {"k": "x".repeat(2000)}}),
        )
        .await;
    assert_eq!(reply.status, 413);
    assert_eq!(reply.json()["reason"], "RequestEntityTooLarge");
    t.create_configmap("small", json!({})).await;
}

#[tokio::test]
async fn slow_loris_connections_are_closed_after_the_header_read_timeout() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let timeout = std::time::Duration::from_millis(300);
    let t = TestServer::start_with(ApiServer::builder().header_read_timeout(timeout)).await;
    let mut connections = Vec::new();
    for i in 0..100 {
        let mut stream = tokio::net::TcpStream::connect(t.server.address())
            .await
            .unwrap();
        if i % 2 == 0 {
            // Half send a partial request head, the other half nothing at all.
            stream
                .write_all(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                .await
                .unwrap();
        }
        connections.push(stream);
    }
    tokio::time::sleep(timeout * 3).await;
    let mut closed = 0;
    for stream in &mut connections {
        let mut buffer = [0u8; 512];
        // A closed connection reads EOF (maybe after a 408 answer) at once.
        let read_to_end = tokio::time::timeout(std::time::Duration::from_secs(2), async {
            loop {
                match stream.read(&mut buffer).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        });
        if read_to_end.await.is_ok() {
            closed += 1;
        }
    }
    assert_eq!(closed, 100, "every slow-loris connection is closed");
    assert_eq!(
        t.get("/api/v1/namespaces").await.status,
        200,
        "the server still serves"
    );
}

#[tokio::test]
async fn stalled_watcher_is_ended_when_it_falls_too_far_behind() {
    let t = TestServer::start_with(ApiServer::builder().watcher_limits(
        kubeclient_apiserver::WatcherLimits {
            max_queued_changes: 100,
            max_queued_bytes: 1024 * 1024,
        },
    ))
    .await;
    let configmaps = kubeclient_machinery::GroupResource::new("", "configmaps");
    // A watcher that never reads its body; a fast one that does.
    let stalled = t
        .send("GET", &format!("{CONFIGMAPS}?watch=1"), None, None, "")
        .await;
    let mut fast = t.watch(&format!("{CONFIGMAPS}?watch=1")).await;
    assert_eq!(t.server.store().watcher_count(&configmaps), 2);
    let value = "x".repeat(100_000);
    let mut ended_after = None;
    for i in 0..400 {
        let reply = t
            .post(
                CONFIGMAPS,
                &json!({"metadata": {"name": format!("cm-{i}")}, "data": {"k": value}}),
            )
            .await;
        assert_eq!(reply.status, 201);
        assert!(fast.next().await.is_some(), "the fast watcher keeps up");
        if t.server.store().watcher_count(&configmaps) == 1 {
            ended_after = Some(i);
            break;
        }
    }
    let ended_after = ended_after.expect("the stalled watch is ended");
    assert!(
        ended_after > 10,
        "not before it fell behind ({ended_after})"
    );
    // Its stream ends cleanly (no ERROR event): the client re-watches, as with upstream.
    use http_body_util::BodyExt;
    let body = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        stalled.into_body().collect(),
    )
    .await
    .expect("the stalled stream ends")
    .expect("cleanly")
    .to_bytes();
    assert!(!String::from_utf8_lossy(&body).contains("\"ERROR\""));
}

/// Sends raw bytes on a new connection and returns what the server answers within `wait`
/// (`None` if it closed the connection without a byte).
async fn raw_exchange(t: &TestServer, request: &[u8], wait: std::time::Duration) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(t.server.address())
        .await
        .unwrap();
    stream.write_all(request).await.unwrap();
    let mut buffer = vec![0u8; 4096];
    match tokio::time::timeout(wait, stream.read(&mut buffer)).await {
        Ok(Ok(0)) | Ok(Err(_)) => None,
        Ok(Ok(n)) => Some(String::from_utf8_lossy(&buffer[..n]).into_owned()),
        Err(_) => Some(String::new()),
    }
}
