//! Measures how a storm of tiny merge patches to one huge ConfigMap (200k keys, ~2.9 MB)
//! delays reads of *other* objects: the p50/p99/max latency of GETs of a small ConfigMap,
//! quiet and during the storm, and the server's RSS.
//!
//! ```sh
//! cargo run --release -p kubeclient-apiserver --example patch_storm -- [seconds] [patchers]
//! ```

mod support;

use std::time::{Duration, Instant};

use kubeclient_apiserver::ApiServer;
use support::{HttpClient, http_client, send};

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

async fn read_latencies(client: &HttpClient, url: &str, duration: Duration) -> Vec<Duration> {
    let mut latencies = Vec::new();
    let end = Instant::now() + duration;
    while Instant::now() < end {
        let start = Instant::now();
        let status = send(client, "GET", url, "application/json", String::new()).await;
        assert_eq!(status, 200, "GET of the small ConfigMap");
        latencies.push(start.elapsed());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    latencies.sort();
    latencies
}

fn summary(latencies: &[Duration]) -> String {
    let at = |q: f64| {
        let index = ((latencies.len() as f64 - 1.0) * q).round() as usize;
        latencies.get(index).copied().unwrap_or_default()
    };
    format!(
        "n={:>5}  p50={:>9.2?}  p99={:>9.2?}  max={:>9.2?}",
        latencies.len(),
        at(0.5),
        at(0.99),
        latencies.last().copied().unwrap_or_default()
    )
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let seconds: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(20);
    let patchers: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(4);
    let server = ApiServer::start().await?;
    let client: HttpClient = http_client();
    let base = format!("{}/api/v1/namespaces/default/configmaps", server.url());
    let data: serde_json::Map<String, serde_json::Value> = (0..200_000)
        .map(|i| {
            (
                format!("k{i:05}"),
                serde_json::Value::String(format!("v{:02}", i % 100)),
            )
        })
        .collect();
    let big = serde_json::json!({"metadata": {"name": "big"}, "data": data}).to_string();
    println!(
        "big ConfigMap body: {:.2} MB, 200000 keys",
        big.len() as f64 / 1e6
    );
    let status = send(&client, "POST", &base, "application/json", big).await;
    assert_eq!(status, 201, "create the big ConfigMap");
    let small = serde_json::json!({"metadata": {"name": "small"}, "data": {"a": "b"}}).to_string();
    assert_eq!(
        send(&client, "POST", &base, "application/json", small).await,
        201
    );
    let small_url = format!("{base}/small");
    println!("RSS after setup: {} MiB", rss_mib());
    println!(
        "quiet:  {}",
        summary(&read_latencies(&client, &small_url, Duration::from_secs(3)).await)
    );

    let big_url = format!("{base}/big");
    let stop = Instant::now() + Duration::from_secs(seconds);
    let mut storm = tokio::task::JoinSet::new();
    for p in 0..patchers {
        let (client, url) = (client.clone(), big_url.clone());
        storm.spawn(async move {
            let (mut done, mut failed) = (0u64, 0u64);
            while Instant::now() < stop {
                let patch = format!(r#"{{"data":{{"k{:05}":"x{done:04}"}}}}"#, p * 7);
                match send(
                    &client,
                    "PATCH",
                    &url,
                    "application/merge-patch+json",
                    patch,
                )
                .await
                {
                    200 => done += 1,
                    _ => failed += 1,
                }
            }
            (done, failed)
        });
    }
    let during = read_latencies(&client, &small_url, Duration::from_secs(seconds)).await;
    let (mut done, mut failed) = (0, 0);
    while let Some(Ok((d, f))) = storm.join_next().await {
        done += d;
        failed += f;
    }
    println!("storm:  {}", summary(&during));
    println!(
        "{patchers} patchers x {seconds} s: {done} merge patches applied ({:.1}/s), {failed} failed; RSS after: {} MiB",
        done as f64 / seconds as f64,
        rss_mib()
    );
    server.shutdown().await;
    Ok(())
}
