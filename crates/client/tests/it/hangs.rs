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
