//! Measures what watchers that never read cost the server: RSS after writing many 50 KB
//! ConfigMaps with N stalled watchers open (the server ends their watches once they fall
//! too far behind, see `WatcherLimits`), and whether their watches were ended.
//!
//! ```sh
//! cargo run --release -p kubeclient-apiserver --example stalled_watchers -- [watchers] [objects]
//! ```

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use kubeclient_apiserver::ApiServer;
use kubeclient_machinery::GroupResource;
use tokio::io::AsyncWriteExt;

fn rss_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|kb| kb.parse::<u64>().ok())
            })
        })
        .map_or(0, |kb| kb / 1024)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let watchers: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2);
    let objects: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(4000);
    let server = ApiServer::start().await?;
    let configmaps = GroupResource::new("", "configmaps");
    let mut stalled = Vec::new();
    for _ in 0..watchers {
        let mut stream = tokio::net::TcpStream::connect(server.address()).await?;
        stream
            .write_all(
                b"GET /api/v1/namespaces/default/configmaps?watch=1 HTTP/1.1\r\nHost: x\r\n\r\n",
            )
            .await?;
        stalled.push(stream); // never read
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    println!(
        "{watchers} stalled watchers open: {}",
        server.store().watcher_count(&configmaps)
    );
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let url = format!("{}/api/v1/namespaces/default/configmaps", server.url());
    let value = "x".repeat(50_000);
    let mut peak = 0;
    for i in 0..objects {
        let body =
            serde_json::json!({"metadata": {"name": format!("cm-{i}")}, "data": {"k": value}});
        let request = hyper::Request::post(&url)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body.to_string())))?;
        let response = client.request(request).await?;
        let _ = response.into_body().collect().await;
        if i % 500 == 0 {
            peak = peak.max(rss_mib());
        }
    }
    peak = peak.max(rss_mib());
    println!(
        "wrote {objects} x 50 KB ConfigMaps ({} MB): watchers still open {}, peak RSS {peak} MiB, RSS now {} MiB",
        objects * 50 / 1000,
        server.store().watcher_count(&configmaps),
        rss_mib()
    );
    drop(stalled);
    server.shutdown().await;
    Ok(())
}
