//! A watch body that arrives one byte per HTTP chunk still yields every event.

use futures_util::TryStreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kubeclient::{Api, Client, Config, WatchParams};
use kubeclient_machinery::{Object, WatchEvent};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BODY: &str = concat!(
    r#"{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"5"},"data":{"k":"é"}}}"#,
    "\n",
    r#"{"type":"MODIFIED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"6"}}}"#,
    "\n",
    r#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"7"}}}"#,
    "\n",
    r#"{"type":"DELETED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"8"}}}"#,
);

/// Serves one watch response, writing each byte of the body as its own chunk.
async fn byte_by_byte_server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = vec![0u8; 4096];
        let _ = socket.read(&mut request).await.unwrap();
        socket
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
            .await
            .unwrap();
        for byte in BODY.as_bytes() {
            socket.write_all(b"1\r\n").await.unwrap();
            socket.write_all(&[*byte]).await.unwrap();
            socket.write_all(b"\r\n").await.unwrap();
            socket.flush().await.unwrap();
        }
        socket.write_all(b"0\r\n\r\n").await.unwrap();
    });
    url
}

#[tokio::test]
async fn a_watch_body_split_at_every_byte_yields_every_event() {
    let url = byte_by_byte_server().await;
    let client = Client::new(Config::new(url.parse().unwrap()))
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let events: Vec<WatchEvent<ConfigMap>> = api
        .watch(&WatchParams::default(), "4")
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let summary: Vec<(String, String)> = events
        .iter()
        .map(|e| {
            (
                e.type_name().to_owned(),
                e.resource_version().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("ADDED", "5"),
            ("MODIFIED", "6"),
            ("BOOKMARK", "7"),
            ("DELETED", "8")
        ]
        .map(|(t, rv)| (t.to_owned(), rv.to_owned()))
    );
    let WatchEvent::Added(first) = &events[0] else {
        panic!("ADDED first")
    };
    assert_eq!(
        first.data.as_ref().unwrap()["k"],
        "é",
        "a multi-byte character split across chunks survives"
    );
    assert_eq!(first.name(), "a");
}
