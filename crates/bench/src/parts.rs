//! Benchmarks of kubeclient's parts: the work queue, the indexer, the embedded server.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kubeclient::cache::{Cache, CacheOptions, Indexer, Indexers, NAMESPACE_INDEX, Store};
use kubeclient::config::{Kubeconfig, KubeconfigOptions};
use kubeclient::machinery::{GroupResource, Object};
use kubeclient::workqueue::{QueueConfig, WorkQueue};
use kubeclient::{Api, Client, Config, ListParams, PostParams, WatchParams};
use kubeclient_apiserver::ApiServer;
use kubeclient_apiserver::storage::Write;

/// Runs every part benchmark and prints its table.
pub(crate) async fn run_all() {
    work_queue().await;
    indexer();
    api_server().await;
}

async fn work_queue() {
    println!();
    println!("### Work queue: add, get, done");
    println!();
    println!("| workers | items | distinct keys | items/s |");
    println!("|---|---|---|---|");
    for (workers, items, distinct) in [
        (1, 200_000, 200_000),
        (2, 200_000, 200_000),
        (8, 200_000, 200_000),
        (8, 200_000, 100),
    ] {
        let queue: WorkQueue<usize> = WorkQueue::new(QueueConfig::default());
        let processed = Arc::new(AtomicUsize::new(0));
        let started = Instant::now();
        let mut handles = Vec::new();
        for _ in 0..workers {
            let (queue, processed) = (queue.clone(), processed.clone());
            handles.push(tokio::spawn(async move {
                while let Some(item) = queue.get().await {
                    processed.fetch_add(1, Ordering::Relaxed);
                    queue.done(&item);
                }
            }));
        }
        for i in 0..items {
            queue.add(i % distinct);
            if i % 1024 == 0 {
                tokio::task::yield_now().await;
            }
        }
        queue.shutdown_with_drain().await;
        for handle in handles {
            let _ = handle.await;
        }
        let elapsed = started.elapsed().as_secs_f64();
        println!(
            "| {workers} | {items} | {distinct} | {:.0} (processed {}) |",
            items as f64 / elapsed,
            processed.load(Ordering::Relaxed)
        );
    }
}

fn indexer() {
    println!();
    println!("### Indexer: pods of one namespace, by index vs a full scan");
    println!();
    println!("| objects | by_index | full scan | speed-up |");
    println!("|---|---|---|---|");
    for objects in [10_000usize, 50_000] {
        let cache: Cache<Pod> = Cache::new(CacheOptions::default().indexers(Indexers::namespace()));
        for i in 0..objects {
            let pod: Pod = serde_json::from_value(kubeclient_bench::pod(i, 1)).unwrap_or_default();
            let _ = cache.add(Arc::new(pod));
        }
        let queries = 200;
        let started = Instant::now();
        let mut found = 0;
        for q in 0..queries {
            found += cache
                .by_index(NAMESPACE_INDEX, &format!("team-{}", q % 20))
                .map(|v| v.len())
                .unwrap_or(0);
        }
        let by_index = started.elapsed() / queries;
        let started = Instant::now();
        let mut scanned = 0;
        for q in 0..queries {
            let namespace = format!("team-{}", q % 20);
            scanned += cache
                .list()
                .iter()
                .filter(|p| p.namespace() == Some(namespace.as_str()))
                .count();
        }
        let scan = started.elapsed() / queries;
        assert_eq!(found, scanned, "both find the same pods");
        println!(
            "| {objects} | {:?} | {:?} | {:.0}x |",
            by_index,
            scan,
            scan.as_secs_f64() / by_index.as_secs_f64()
        );
    }
}

async fn api_server() {
    println!();
    println!("### Embedded API server");
    println!();
    let Ok(server) = ApiServer::builder()
        .history_window(200_000)
        .garbage_collector(false)
        .start()
        .await
    else {
        println!("the embedded server did not start");
        return;
    };
    let Ok(kubeconfig) = Kubeconfig::from_yaml(&server.kubeconfig()) else {
        return;
    };
    let Ok(mut config) = Config::from_kubeconfig(&kubeconfig, &KubeconfigOptions::default()) else {
        return;
    };
    config.qps = 0.0;
    let Ok(client) = Client::new(config).await else {
        return;
    };
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    // Creates over HTTP, 8 concurrent writers.
    let creates = 4_000;
    let started = Instant::now();
    let created = Arc::new(AtomicUsize::new(0));
    let mut writers = Vec::new();
    for w in 0..8 {
        let (api, created) = (api.clone(), created.clone());
        writers.push(tokio::spawn(async move {
            for i in 0..creates / 8 {
                let cm: ConfigMap = serde_json::from_value(serde_json::json!({"metadata": {"name": format!("w{w}-{i}")}, "data": {"k": "v"}})).unwrap_or_default();
                if api.create(&PostParams::default(), &cm).await.is_ok() {
                    created.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for writer in writers {
        let _ = writer.await;
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!("| measure | result |");
    println!("|---|---|");
    println!(
        "| creates over HTTP (8 concurrent clients, {} of {creates} succeeded) | {:.0}/s |",
        created.load(Ordering::Relaxed),
        created.load(Ordering::Relaxed) as f64 / elapsed
    );
    // Lists of 10k and 100k Pods (inserted through storage).
    let pods = GroupResource::new("", "pods");
    let mut inserted = 0usize;
    for target in [10_000usize, 100_000] {
        while inserted < target {
            let mut object = kubeclient_bench::pod(inserted, 1);
            object["kind"] = "Pod".into();
            object["apiVersion"] = "v1".into();
            object["metadata"]["namespace"] = "default".into();
            let key = format!(
                "default/{}",
                object["metadata"]["name"].as_str().unwrap_or("")
            );
            let _ = server
                .store()
                .write(&pods, &key, |_| Ok::<_, ()>(Write::Create(object)));
            inserted += 1;
        }
        let mut times = Vec::new();
        for _ in 0..3 {
            let started = Instant::now();
            let request = kubeclient::rest::Request::get("/api/v1/pods?resourceVersion=0");
            let bytes = client
                .request_bytes(request)
                .await
                .map(|b| b.len())
                .unwrap_or(0);
            times.push((started.elapsed(), bytes));
        }
        times.sort();
        let (median, bytes) = times[1];
        println!(
            "| LIST of {target} Pods ({:.0} MB, server + transfer, raw bytes) | {median:?} |",
            bytes as f64 / 1_048_576.0
        );
    }
    // One write fanned out to 100 watchers.
    let rv = api
        .list(&ListParams::default().limit(1))
        .await
        .ok()
        .and_then(|l| l.metadata.resource_version)
        .unwrap_or_default();
    let mut watches = Vec::new();
    for _ in 0..100 {
        if let Ok(stream) = api.watch(&WatchParams::default(), &rv).await {
            watches.push(stream);
        }
    }
    let received = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let cm: ConfigMap =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "fan-out"}}))
            .unwrap_or_default();
    let _ = api.create(&PostParams::default(), &cm).await;
    let mut waiting = Vec::new();
    for mut stream in watches {
        let received = received.clone();
        waiting.push(tokio::spawn(async move {
            use futures_util::StreamExt;
            while let Some(event) = stream.next().await {
                if matches!(event, Ok(kubeclient::machinery::WatchEvent::Added(_))) {
                    received.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            }
        }));
    }
    for waiter in waiting {
        let _ = tokio::time::timeout(Duration::from_secs(10), waiter).await;
    }
    println!(
        "| one write fanned out to 100 watchers (all received) | {:?} ({} received) |",
        started.elapsed(),
        received.load(Ordering::Relaxed)
    );
    server.shutdown().await;
}
