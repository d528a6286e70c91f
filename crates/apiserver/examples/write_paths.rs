//! Measures the server's write and list paths over HTTP: `N` ConfigMaps created (POST),
//! replaced (PUT), merge-patched (PATCH), server-side applied, listed (LIST of all of
//! them, JSON) and deleted (DELETE), each phase by `W` concurrent clients; prints the
//! rate of each phase (the median of `R` rounds, each on a fresh server).
//!
//! `STORAGE` is `memory` (the default), `disk` (the disk backend in a fresh data
//! directory, feature `disk`) or `both`: rounds of each, interleaved, side by side with
//! the ratio disk / memory.
//!
//! ```sh
//! cargo run --release -p kubeclient-apiserver --features disk --example write_paths -- [N] [W] [R] [STORAGE]
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

/// Where a round's server keeps its objects.
#[derive(Clone, Copy, PartialEq)]
enum Storage {
    Memory,
    Disk,
}

/// A fresh server on `storage`, and the data directory to remove after it.
async fn server(n: usize, storage: Storage) -> (ApiServer, Option<std::path::PathBuf>) {
    let builder = ApiServer::builder().history_window(4 * n + 1000);
    let (builder, dir) = match storage {
        Storage::Memory => (builder, None),
        #[cfg(feature = "disk")]
        Storage::Disk => {
            let dir = std::env::temp_dir().join(format!(
                "kubeclient-write-paths-{}-{}",
                std::process::id(),
                fastrand::u64(..)
            ));
            (builder.data_dir(&dir), Some(dir))
        }
        #[cfg(not(feature = "disk"))]
        Storage::Disk => panic!("the disk backend needs --features disk"),
    };
    (builder.start().await.expect("the server starts"), dir)
}

async fn round(n: usize, writers: usize, storage: Storage) -> Vec<(&'static str, f64)> {
    let (server, dir) = server(n, storage).await;
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
    if let Some(dir) = dir {
        let _ = std::fs::remove_dir_all(dir);
    }
    rates
}

/// The median of each phase over `rounds`, and every round's value.
fn medians(rounds: &[Vec<(&'static str, f64)>]) -> Vec<(&'static str, f64, String)> {
    let Some(first) = rounds.first() else {
        return Vec::new();
    };
    first
        .iter()
        .enumerate()
        .map(|(index, (name, _))| {
            let mut values: Vec<f64> = rounds.iter().map(|r| r[index].1).collect();
            let shown: Vec<String> = values.iter().map(|v| format!("{v:.0}")).collect();
            values.sort_by(f64::total_cmp);
            (*name, values[values.len() / 2], shown.join(", "))
        })
        .collect()
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let mut number = |default: usize| {
        args.next()
            .and_then(|a| a.parse::<usize>().ok())
            .unwrap_or(default)
    };
    let n = number(5_000);
    let writers = number(8);
    let rounds = number(3).max(1);
    let storages = match std::env::args().nth(4).as_deref() {
        None | Some("memory") => vec![Storage::Memory],
        Some("disk") => vec![Storage::Disk],
        Some("both") => vec![Storage::Memory, Storage::Disk],
        Some(other) => panic!("STORAGE is memory, disk or both, not {other}"),
    };
    let mut memory = Vec::new();
    let mut disk = Vec::new();
    for _ in 0..rounds {
        for storage in &storages {
            let rates = round(n, writers, *storage).await;
            match storage {
                Storage::Memory => memory.push(rates),
                Storage::Disk => disk.push(rates),
            }
        }
    }
    if storages.len() == 2 {
        println!(
            "| phase ({n} ConfigMaps, {writers} clients, {rounds} rounds each, interleaved) | memory (median, ops/s) | disk (median, ops/s) | disk / memory | disk rounds |"
        );
        println!("|---|---|---|---|---|");
        for ((name, in_memory, _), (_, on_disk, shown)) in
            medians(&memory).into_iter().zip(medians(&disk))
        {
            println!(
                "| {name} | {in_memory:.0} | {on_disk:.0} | {:.2} | {shown} |",
                on_disk / in_memory
            );
        }
        return;
    }
    println!(
        "| phase ({n} ConfigMaps, {writers} clients) | median of {rounds} (ops/s) | all rounds |"
    );
    println!("|---|---|---|");
    for (name, median, shown) in medians(if disk.is_empty() { &memory } else { &disk }) {
        println!("| {name} | {median:.0} | {shown} |");
    }
}
