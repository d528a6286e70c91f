//! Measures the server's write and list paths over HTTP: `N` ConfigMaps created (POST),
//! replaced (PUT), merge-patched (PATCH), server-side applied, listed (LIST of all of
//! them, JSON) and deleted (DELETE), each phase by `W` concurrent clients; prints the
//! rate of each phase (the median of `R` rounds, each on a fresh server).
//!
//! ```sh
//! cargo run --release -p kubeclient-apiserver --example write_paths -- [N] [W] [R]
//! ```

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use kubeclient_apiserver::ApiServer;
use support::{HttpClient, http_client, send};

fn config_map(i: usize, value: &str) -> String {
    serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("cm-{i}"), "namespace": "default",
                     "labels": {"app": "bench", "shard": (i % 10).to_string()}},
        "data": {"key": value, "other": "x".repeat(200)},
    })
    .to_string()
}

/// Runs `operation(i)` for every `i < n` on `writers` tasks; the operations per second.
async fn phase<F, Fut>(n: usize, writers: usize, expected: u16, operation: F) -> f64
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = u16> + Send,
{
    let operation = Arc::new(operation);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..writers {
        let operation = operation.clone();
        tasks.push(tokio::spawn(async move {
            let mut failed = 0usize;
            for i in (w..n).step_by(writers) {
                if operation(i).await != expected {
                    failed += 1;
                }
            }
            failed
        }));
    }
    let mut failed = 0;
    for task in tasks {
        failed += task.await.unwrap_or(n);
    }
    assert_eq!(failed, 0, "{failed} operations failed");
    n as f64 / started.elapsed().as_secs_f64()
}

async fn round(n: usize, writers: usize) -> Vec<(&'static str, f64)> {
    let server = ApiServer::builder()
        .history_window(4 * n + 1000)
        .start()
        .await
        .expect("the server starts");
    let client: HttpClient = http_client();
    let base = format!("{}/api/v1/namespaces/default/configmaps", server.url());
    let mut rates = Vec::new();
    let (c, b) = (client.clone(), base.clone());
    rates.push((
        "create (POST)",
        phase(n, writers, 201, move |i| {
            let (c, b) = (c.clone(), b.clone());
            async move { send(&c, "POST", &b, "application/json", config_map(i, "v1")).await }
        })
        .await,
    ));
    let (c, b) = (client.clone(), base.clone());
    rates.push((
        "replace (PUT)",
        phase(n, writers, 200, move |i| {
            let (c, b) = (c.clone(), b.clone());
            async move {
                send(
                    &c,
                    "PUT",
                    &format!("{b}/cm-{i}"),
                    "application/json",
                    config_map(i, "v2"),
                )
                .await
            }
        })
        .await,
    ));
    let (c, b) = (client.clone(), base.clone());
    rates.push((
        "merge patch (PATCH)",
        phase(n, writers, 200, move |i| {
            let (c, b) = (c.clone(), b.clone());
            async move {
                let patch = serde_json::json!({"data": {"key": "v3"}}).to_string();
                send(
                    &c,
                    "PATCH",
                    &format!("{b}/cm-{i}"),
                    "application/merge-patch+json",
                    patch,
                )
                .await
            }
        })
        .await,
    ));
    let (c, b) = (client.clone(), base.clone());
    rates.push((
        "server-side apply (PATCH)",
        phase(n, writers, 200, move |i| {
            let (c, b) = (c.clone(), b.clone());
            async move {
                let url = format!("{b}/cm-{i}?fieldManager=bench&force=true");
                send(
                    &c,
                    "PATCH",
                    &url,
                    "application/apply-patch+yaml",
                    config_map(i, "v4"),
                )
                .await
            }
        })
        .await,
    ));
    let lists = 20;
    let started = Instant::now();
    for _ in 0..lists {
        assert_eq!(send(&client, "GET", &base, "", String::new()).await, 200);
    }
    let per_list = started.elapsed() / lists;
    rates.push(("LIST of all (objects/s)", n as f64 / per_list.as_secs_f64()));
    let (c, b) = (client.clone(), base.clone());
    rates.push((
        "delete (DELETE)",
        phase(n, writers, 200, move |i| {
            let (c, b) = (c.clone(), b.clone());
            async move { send(&c, "DELETE", &format!("{b}/cm-{i}"), "", String::new()).await }
        })
        .await,
    ));
    server.shutdown().await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    rates
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>().ok());
    let n = args.next().flatten().unwrap_or(5_000);
    let writers = args.next().flatten().unwrap_or(8);
    let rounds = args.next().flatten().unwrap_or(3).max(1);
    let mut all: Vec<Vec<(&'static str, f64)>> = Vec::new();
    for _ in 0..rounds {
        all.push(round(n, writers).await);
    }
    println!(
        "| phase ({n} ConfigMaps, {writers} clients) | median of {rounds} (ops/s) | all rounds |"
    );
    println!("|---|---|---|");
    for (index, (name, _)) in all[0].iter().enumerate() {
        let mut values: Vec<f64> = all.iter().map(|r| r[index].1).collect();
        let shown: Vec<String> = values.iter().map(|v| format!("{v:.0}")).collect();
        values.sort_by(f64::total_cmp);
        println!(
            "| {name} | {:.0} | {} |",
            values[values.len() / 2],
            shown.join(", ")
        );
    }
}
