//! Requests through an HTTP CONNECT proxy named by the kubeconfig's `proxy-url`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::Namespace;
use kubeclient::{Api, Client, ListParams};
use kubeclient_apiserver::ApiServer;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::support::{config_of, start_with};

/// A minimal CONNECT proxy; returns its URL and a counter of tunnels opened.
async fn connect_proxy() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let tunnels = Arc::new(AtomicUsize::new(0));
    let counter = tunnels.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let counter = counter.clone();
            tokio::spawn(async move {
                let mut client = BufReader::new(client);
                let mut request_line = String::new();
                client.read_line(&mut request_line).await.unwrap();
                let target = request_line.split_whitespace().nth(1).unwrap().to_owned();
                assert!(request_line.starts_with("CONNECT "), "{request_line}");
                loop {
                    let mut header = String::new();
                    client.read_line(&mut header).await.unwrap();
                    if header == "\r\n" || header.is_empty() {
                        break;
                    }
                }
                let mut upstream = tokio::net::TcpStream::connect(target).await.unwrap();
                counter.fetch_add(1, Ordering::SeqCst);
                let mut client = client.into_inner();
                client
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .await
                    .unwrap();
                let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
            });
        }
    });
    (url, tunnels)
}

#[tokio::test]
async fn requests_go_through_the_configured_proxy_for_http_and_https() {
    for tls in [false, true] {
        let f = start_with(ApiServer::builder().tls(tls)).await;
        let (proxy, tunnels) = connect_proxy().await;
        let mut config = config_of(&f.server);
        config.proxy_url = Some(proxy);
        let client = Client::new(config).await.unwrap();
        let namespaces = Api::<Namespace>::all(client)
            .list(&ListParams::default())
            .await
            .unwrap();
        assert_eq!(namespaces.items.len(), 4);
        assert!(
            tunnels.load(Ordering::SeqCst) >= 1,
            "the request went through the proxy (tls: {tls})"
        );
    }
}

#[tokio::test]
async fn a_socks_proxy_is_refused_with_a_clear_error() {
    let f = start_with(ApiServer::builder()).await;
    let mut config = config_of(&f.server);
    config.proxy_url = Some("socks5://127.0.0.1:1080".to_owned());
    let err = Client::new(config).await.unwrap_err().to_string();
    assert!(
        err.contains("only http:// (CONNECT) proxies are supported"),
        "{err}"
    );
}
