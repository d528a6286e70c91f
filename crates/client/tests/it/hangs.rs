//! A server that accepts connections and never answers must not hang the client: every
//! non-watch request, discovery included, ends at the client's timeout.

use std::time::Duration;

use kubeclient::discovery::Discovery;
use kubeclient::{Client, Config, Error};

/// Accepts connections and reads from them, never writing a byte.
async fn silent_server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    format!("http://{address}")
}

#[tokio::test]
async fn discovery_against_a_server_that_never_answers_times_out_instead_of_hanging() {
    let url = silent_server().await;
    let mut config = Config::new(url.parse().unwrap());
    config.timeout = Some(Duration::from_millis(500));
    let client = Client::new(config).await.unwrap();
    let discovery = Discovery::new(client);
    let outcome = tokio::time::timeout(Duration::from_secs(20), discovery.resources())
        .await
        .expect("discovery returns instead of hanging");
    assert!(matches!(outcome, Err(Error::Timeout { .. })), "{outcome:?}");
}

/// Accepts connections, reads the request, answers a watch's headers, then never writes
/// another byte (a proxy that swallowed the stream).
async fn server_that_goes_silent_after_headers() -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut request = vec![0u8; 4096];
            let _ = stream.read(&mut request).await;
            let headers = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
            let _ = stream.write_all(headers.as_bytes()).await;
            held.push(stream);
        }
    });
    format!("http://{address}")
}

#[tokio::test]
async fn a_watch_that_goes_silent_after_its_headers_ends_past_its_timeout_plus_the_idle_margin() {
    use futures_util::StreamExt;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kubeclient::{Api, WatchParams};

    let url = server_that_goes_silent_after_headers().await;
    let mut config = Config::new(url.parse().unwrap());
    config.watch_idle_margin = Duration::from_millis(500);
    let client = Client::new(config).await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let params = WatchParams {
        timeout_seconds: 1,
        ..WatchParams::default()
    };
    let started = std::time::Instant::now();
    let mut events = api.watch(&params, "0").await.expect("headers arrive");
    let first = tokio::time::timeout(Duration::from_secs(20), events.next())
        .await
        .expect("the silent watch is given up instead of hanging");
    let elapsed = started.elapsed();
    assert!(
        matches!(first, Some(Err(Error::Transport { .. }))),
        "{first:?}"
    );
    assert!(
        elapsed >= Duration::from_millis(1500),
        "not before timeoutSeconds plus the margin: {elapsed:?}"
    );
    assert!(
        events.next().await.is_none(),
        "the stream ends after the error"
    );
}
