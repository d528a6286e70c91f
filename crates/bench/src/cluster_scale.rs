//! The simulated cluster at scale: the embedded server with N nodes (kubelets
//! heartbeating every 10 s, the scheduler, the controllers) runs in a child process; this
//! process creates Pods through the API over HTTP with the project's client, watches them
//! reach `Running` with an informer on all Pods, and measures the server process's RSS and
//! CPU time while it holds them.
//!
//! ```text
//! kubeclient-bench --cluster --nodes 1000 --pods 100000
//! kubeclient-bench --cluster --nodes 100 --pods 10000      # a quick run
//! ```

use std::collections::HashSet;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kubeclient::cache::ResourceEventHandlerFuncs;
use kubeclient::config::{Kubeconfig, KubeconfigOptions};
use kubeclient::informers::SharedInformerFactory;
use kubeclient::{Api, Client, Config, ListParams, PostParams};
use kubeclient_apiserver::ApiServer;
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

use kubeclient_bench::{ProcessSample, process_sample};

/// The sizes and pacing of one run.
#[derive(Clone, Debug)]
pub(crate) struct ScaleOptions {
    /// Simulated nodes.
    pub(crate) nodes: usize,
    /// Pods to create.
    pub(crate) pods: usize,
    /// Concurrent creators (each its own request in flight).
    pub(crate) concurrency: usize,
    /// How long to hold the Pods once all run (heartbeats going), for the steady-state
    /// CPU figure.
    pub(crate) hold: Duration,
    /// Give up waiting for `Running` after this long.
    pub(crate) timeout: Duration,
}

/// What one run measured.
#[derive(Debug)]
struct Outcome {
    created: usize,
    create_seconds: f64,
    running: usize,
    running_seconds: f64,
    /// Pods Running by the time the last create was answered.
    running_at_create_end: usize,
    rss_running: u64,
    peak_rss: u64,
    cpu_creating: f64,
    cpu_hold: f64,
    rss_hold_end: u64,
    informer_count: usize,
    server_count: usize,
    watch_errors: usize,
    runner_rss: u64,
    runner_cpu: f64,
}

/// The child process's part: starts the embedded server with `nodes` nodes, prints its
/// kubeconfig as one JSON line, and serves until its standard input closes (the runner
/// ended).
pub(crate) async fn serve(nodes: usize) {
    let server = match ApiServer::builder().nodes(nodes).start().await {
        Ok(server) => server,
        Err(err) => {
            eprintln!("the embedded server did not start: {err}");
            std::process::exit(1);
        }
    };
    println!("{}", json!({"kubeconfig": server.kubeconfig()}));
    let _ = tokio::task::spawn_blocking(|| {
        let mut sink = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink)
    })
    .await;
    server.shutdown().await;
}

/// Runs the scenario and prints its table; `Err` when it could not run at all or the
/// informer did not stay in sync.
pub(crate) async fn run(options: &ScaleOptions) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|err| format!("no executable: {err}"))?;
    let mut child = tokio::process::Command::new(exe)
        .args(["--cluster-server", "--nodes", &options.nodes.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|err| format!("cannot start the server process: {err}"))?;
    let pid = child.id().ok_or("the server process has no id")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let first = tokio::time::timeout(Duration::from_secs(120), lines.next_line())
        .await
        .map_err(|_| "the server did not start within 2 minutes")?
        .map_err(|err| format!("reading the server: {err}"))?
        .ok_or("the server printed nothing")?;
    let line: Value = serde_json::from_str(&first).map_err(|err| format!("{first:?}: {err}"))?;
    let kubeconfig = Kubeconfig::from_yaml(line["kubeconfig"].as_str().unwrap_or(""))
        .map_err(|err| format!("kubeconfig: {err}"))?;
    let mut config = Config::from_kubeconfig(&kubeconfig, &KubeconfigOptions::default())
        .map_err(|err| format!("config: {err}"))?;
    config.qps = 0.0;
    config.timeout = None;
    let client = Client::new(config)
        .await
        .map_err(|err| format!("client: {err}"))?;
    let started = process_sample(pid);
    eprintln!(
        "cluster: {} nodes registered; server RSS {:.0} MB",
        options.nodes,
        mb(started.rss)
    );
    let outcome = measure(&client, pid, options, &started).await;
    // Closing its input ends the server.
    drop(child.stdin.take());
    let _ = tokio::time::timeout(Duration::from_secs(30), child.wait()).await;
    let outcome = outcome?;
    print_table(options, &outcome);
    if outcome.informer_count != outcome.server_count {
        return Err(format!(
            "the informer holds {} Pods, the server {}",
            outcome.informer_count, outcome.server_count
        ));
    }
    if outcome.running < options.pods {
        return Err(format!(
            "{} of {} Pods reached Running",
            outcome.running, options.pods
        ));
    }
    Ok(())
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1_048_576.0
}

/// The informer on all Pods: counts the Pods seen `Running` (once each) and its list
/// and watch errors.
struct Watching {
    running: Arc<Mutex<HashSet<String>>>,
    errors: Arc<AtomicUsize>,
    factory: SharedInformerFactory,
    informer: kubeclient::cache::SharedIndexInformer<Pod>,
}

fn watch_pods(client: &Client) -> Result<Watching, String> {
    let factory = SharedInformerFactory::new(client.clone());
    let informer = factory.informer::<Pod>();
    let running = Arc::new(Mutex::new(HashSet::new()));
    let errors = Arc::new(AtomicUsize::new(0));
    let counted = errors.clone();
    informer
        .set_watch_error_handler(Arc::new(move |err: &kubeclient::Error| {
            counted.fetch_add(1, Ordering::Relaxed);
            eprintln!("  informer: list/watch error: {err}");
        }))
        .map_err(|err| format!("informer: {err}"))?;
    let seen = |running: &Arc<Mutex<HashSet<String>>>| {
        let running = running.clone();
        move |pod: &Arc<Pod>| {
            let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
            if phase == Some("Running")
                && let Some(uid) = pod.metadata.uid.as_ref()
                && let Ok(mut running) = running.lock()
                && !running.contains(uid)
            {
                running.insert(uid.clone());
            }
        }
    };
    let (on_add, on_update) = (seen(&running), seen(&running));
    informer
        .add_event_handler(
            ResourceEventHandlerFuncs::new()
                .on_add(move |pod: &Arc<Pod>, _| on_add(pod))
                .on_update_new(on_update),
        )
        .map_err(|err| format!("informer: {err}"))?;
    Ok(Watching {
        running,
        errors,
        factory,
        informer,
    })
}

fn running_count(watching: &Watching) -> usize {
    watching.running.lock().map(|r| r.len()).unwrap_or(0)
}

async fn measure(
    client: &Client,
    pid: u32,
    options: &ScaleOptions,
    at_start: &ProcessSample,
) -> Result<Outcome, String> {
    let watching = watch_pods(client)?;
    watching.factory.start();
    watching.factory.wait_for_cache_sync().await;
    let api: Api<Pod> = Api::namespaced(client.clone(), "default");
    let created = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut creators = Vec::new();
    for _ in 0..options.concurrency.max(1) {
        let (api, created, failed, next) =
            (api.clone(), created.clone(), failed.clone(), next.clone());
        let total = options.pods;
        creators.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    return;
                }
                match api.create(&PostParams::default(), &bench_pod(i)).await {
                    Ok(_) => created.fetch_add(1, Ordering::Relaxed),
                    Err(err) => {
                        if failed.fetch_add(1, Ordering::Relaxed) < 5 {
                            eprintln!("  create failed: {err}");
                        }
                        0
                    }
                };
            }
        }));
    }
    let progress = {
        let (created, running, informer) = (
            created.clone(),
            watching.running.clone(),
            watching.informer.clone(),
        );
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(5)).await;
                let sample = process_sample(pid);
                eprintln!(
                    "  {:>5.0} s: {} created, {} Running, informer {}, server RSS {:.0} MB, CPU {:.1} s",
                    start.elapsed().as_secs_f64(),
                    created.load(Ordering::Relaxed),
                    running.lock().map(|r| r.len()).unwrap_or(0),
                    informer.indexer().len(),
                    mb(sample.rss),
                    sample.cpu.as_secs_f64(),
                );
            }
        })
    };
    for creator in creators {
        let _ = creator.await;
    }
    let create_time = start.elapsed();
    let running_at_create_end = running_count(&watching);
    let created = created.load(Ordering::Relaxed);
    eprintln!(
        "  created {created} in {:.1} s ({} failed); waiting for Running ...",
        create_time.as_secs_f64(),
        failed.load(Ordering::Relaxed)
    );
    while running_count(&watching) < created && start.elapsed() < options.timeout {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    progress.abort();
    let running_time = start.elapsed();
    let running = running_count(&watching);
    let at_running = process_sample(pid);
    eprintln!(
        "  {running} Running after {:.1} s; holding them {:.0} s (heartbeats going) ...",
        running_time.as_secs_f64(),
        options.hold.as_secs_f64()
    );
    tokio::time::sleep(options.hold).await;
    let at_hold_end = process_sample(pid);
    let server_count = count_pods(&api).await?;
    // The informer may still be applying the last events: give it a moment.
    let settle = Instant::now();
    while watching.informer.indexer().len() != server_count
        && settle.elapsed() < Duration::from_secs(30)
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let runner = process_sample(std::process::id());
    let (informer_count, watch_errors) = (
        watching.informer.indexer().len(),
        watching.errors.load(Ordering::Relaxed),
    );
    // Stopped before the server goes, so its end is not counted as an error.
    watching.factory.shutdown().await;
    Ok(Outcome {
        created,
        create_seconds: create_time.as_secs_f64(),
        running,
        running_seconds: running_time.as_secs_f64(),
        running_at_create_end,
        rss_running: at_running.rss,
        peak_rss: at_hold_end.peak_rss,
        cpu_creating: (at_running.cpu.saturating_sub(at_start.cpu)).as_secs_f64(),
        cpu_hold: (at_hold_end.cpu.saturating_sub(at_running.cpu)).as_secs_f64(),
        rss_hold_end: at_hold_end.rss,
        informer_count,
        server_count,
        watch_errors,
        runner_rss: runner.rss,
        runner_cpu: runner.cpu.as_secs_f64(),
    })
}

/// The Pods the server holds, by a paginated LIST.
async fn count_pods(api: &Api<Pod>) -> Result<usize, String> {
    let mut count = 0;
    let mut params = ListParams::default().limit(5000);
    loop {
        let page = api
            .list(&params)
            .await
            .map_err(|err| format!("list: {err}"))?;
        count += page.items.len();
        match page.continue_token() {
            Some(token) => params = ListParams::default().limit(5000).continue_token(token),
            None => return Ok(count),
        }
    }
}

/// The `i`th Pod: one container, no requests (kwok's and clusterloader's density Pod).
fn bench_pod(i: usize) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": format!("scale-{i:06}"), "labels": {"app": "scale", "group": format!("g{}", i % 100)}},
        "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]},
    }))
    .unwrap_or_default()
}

fn print_table(options: &ScaleOptions, o: &Outcome) {
    println!();
    println!(
        "### Simulated cluster: {} nodes (heartbeats every 10 s), {} Pods created over HTTP by {} concurrent clients",
        options.nodes, options.pods, options.concurrency
    );
    println!();
    println!("| measure | result |");
    println!("|---|---|");
    println!(
        "| Pods created | {} in {:.1} s: {:.0}/s |",
        o.created,
        o.create_seconds,
        o.created as f64 / o.create_seconds.max(1e-9)
    );
    println!(
        "| Pods Running (seen by the informer) | {} in {:.1} s from the first create: {:.0}/s ({} Running when the last create was answered) |",
        o.running,
        o.running_seconds,
        o.running as f64 / o.running_seconds.max(1e-9),
        o.running_at_create_end
    );
    println!(
        "| server CPU while creating and starting them | {:.1} s ({:.2} cores) |",
        o.cpu_creating,
        o.cpu_creating / o.running_seconds.max(1e-9)
    );
    println!(
        "| server RSS with all Running / after holding them / peak | {:.0} MB / {:.0} MB / {:.0} MB |",
        mb(o.rss_running),
        mb(o.rss_hold_end),
        mb(o.peak_rss)
    );
    println!(
        "| server CPU holding them (heartbeats) | {:.2} s over {:.0} s ({:.1}% of one core) |",
        o.cpu_hold,
        options.hold.as_secs_f64(),
        100.0 * o.cpu_hold / options.hold.as_secs_f64().max(1e-9)
    );
    println!(
        "| informer on all Pods | {} Pods cached, server lists {}; {} list/watch errors |",
        o.informer_count, o.server_count, o.watch_errors
    );
    println!(
        "| this process (clients + informer) | RSS {:.0} MB, CPU {:.1} s |",
        mb(o.runner_rss),
        o.runner_cpu
    );
}
