//! The embedded server over etcd against the in-memory store, in one interleaved run:
//! creates per second and their p50/p99 latency over HTTP, a watch fanned out to many
//! watchers, and a list of many objects (with the time a server takes to load them from
//! etcd into its watch cache), on one local etcd member and on a three-member cluster on
//! loopback ports, with `etcdctl check perf` beside them as etcd's own limit.
//!
//! ```text
//! cargo run -p kubeclient-bench --release --bin storage-bench -- [--runs 3] [--writes 2000]
//!     [--list-objects 100000] [--watchers 100] [--check-perf]
//! ```
//!
//! etcd is Debian's `etcd` (or `$KUBECLIENT_ETCD`), `etcdctl` Debian's `etcd-client`;
//! without etcd only the in-memory store runs, without etcdctl its column says so.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kubeclient::config::{Kubeconfig, KubeconfigOptions};
use kubeclient::machinery::GroupResource;
use kubeclient::{Api, Client, Config, ListParams, PostParams, WatchParams};
use kubeclient_apiserver::storage::{EtcdConfig, Write};
use kubeclient_apiserver::testing::{TestEtcd, TestEtcdCluster};
use kubeclient_apiserver::{ApiServer, ApiServerBuilder};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Options of the storage benchmark.
#[derive(Debug, Parser)]
#[command(
    name = "storage-bench",
    about = "the embedded server over etcd vs in memory"
)]
struct Args {
    /// Interleaved runs (each setup once per run); ranges are reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Creates per run.
    #[arg(long, default_value_t = 2000)]
    writes: usize,
    /// Concurrent writers.
    #[arg(long, default_value_t = 8)]
    writers: usize,
    /// Objects in the list measure (0 skips it).
    #[arg(long, default_value_t = 100_000)]
    list_objects: usize,
    /// Watchers of the fan-out measure.
    #[arg(long, default_value_t = 100)]
    watchers: usize,
    /// Writes each watcher receives in the fan-out measure.
    #[arg(long, default_value_t = 200)]
    watch_events: usize,
    /// Also run `etcdctl check perf` (about a minute per etcd setup).
    #[arg(long)]
    check_perf: bool,
}

/// Where a server keeps its objects.
enum Setup {
    Memory,
    OneMember(TestEtcd),
    ThreeMembers(TestEtcdCluster),
}

impl Setup {
    fn name(&self) -> &'static str {
        match self {
            Setup::Memory => "in memory",
            Setup::OneMember(_) => "etcd, 1 member",
            Setup::ThreeMembers(_) => "etcd, 3 members",
        }
    }

    fn etcd(&self) -> Option<EtcdConfig> {
        match self {
            Setup::Memory => None,
            Setup::OneMember(etcd) => Some(etcd.config()),
            Setup::ThreeMembers(cluster) => Some(cluster.config()),
        }
    }

    /// A server over this setup, its objects under `prefix` in etcd.
    fn builder(&self, prefix: &str) -> ApiServerBuilder {
        let builder = ApiServer::builder()
            .garbage_collector(false)
            .nodes(0)
            .history_window(200_000);
        match self.etcd() {
            Some(config) => builder.etcd(config.with_prefix(prefix)),
            None => builder,
        }
    }
}

/// What one run of one setup measured.
#[derive(Default)]
struct Measured {
    writes_per_second: Vec<f64>,
    p50_ms: Vec<f64>,
    p99_ms: Vec<f64>,
    fan_out_events_per_second: Vec<f64>,
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let mut setups = vec![Setup::Memory];
    if let Some(etcd) = TestEtcd::start("storage-bench").await {
        setups.push(Setup::OneMember(etcd));
    }
    if let Some(cluster) = TestEtcdCluster::start("storage-bench", 3).await {
        setups.push(Setup::ThreeMembers(cluster));
    }
    let mut measured: Vec<Measured> = setups.iter().map(|_| Measured::default()).collect();
    for run in 0..args.runs {
        for (index, setup) in setups.iter().enumerate() {
            let prefix = format!("/bench-{run}");
            let Ok(server) = setup.builder(&prefix).start().await else {
                println!("{}: the server did not start", setup.name());
                continue;
            };
            let Some(client) = client_of(&server).await else {
                continue;
            };
            let api: Api<ConfigMap> = Api::namespaced(client, "default");
            let (rate, p50, p99) = writes(&api, args.writes, args.writers).await;
            let fan_out = fan_out(&api, args.watchers, args.watch_events).await;
            let entry = &mut measured[index];
            entry.writes_per_second.push(rate);
            entry.p50_ms.push(p50);
            entry.p99_ms.push(p99);
            entry.fan_out_events_per_second.push(fan_out);
            eprintln!(
                "run {run} {}: {rate:.0} writes/s, p50 {p50:.1} ms, p99 {p99:.1} ms, fan-out {fan_out:.0} events/s",
                setup.name()
            );
            server.shutdown().await;
        }
    }
    print_writes(&setups, &measured, &args);
    if args.check_perf {
        print_check_perf(&setups);
    }
    if args.list_objects > 0 {
        print_lists(&setups, args.list_objects).await;
    }
}

/// A kubeclient client of `server`, without client-side rate limits.
async fn client_of(server: &ApiServer) -> Option<Client> {
    let kubeconfig = Kubeconfig::from_yaml(&server.kubeconfig()).ok()?;
    let mut config = Config::from_kubeconfig(&kubeconfig, &KubeconfigOptions::default()).ok()?;
    config.qps = 0.0;
    Client::new(config).await.ok()
}

fn configmap(name: &str) -> ConfigMap {
    serde_json::from_value(serde_json::json!({"metadata": {"name": name}, "data": {"k": "v"}}))
        .unwrap_or_default()
}

/// `count` creates from `writers` concurrent clients: writes per second, p50 and p99
/// latency in milliseconds (of the creates that succeeded).
async fn writes(api: &Api<ConfigMap>, count: usize, writers: usize) -> (f64, f64, f64) {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for writer in 0..writers.max(1) {
        let api = api.clone();
        let each = count / writers.max(1);
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(each);
            for i in 0..each {
                let began = Instant::now();
                let created = api
                    .create(
                        &PostParams::default(),
                        &configmap(&format!("w{writer}-{i}")),
                    )
                    .await;
                if created.is_ok() {
                    latencies.push(began.elapsed().as_secs_f64() * 1000.0);
                }
            }
            latencies
        }));
    }
    let mut latencies = Vec::with_capacity(count);
    for task in tasks {
        latencies.extend(task.await.unwrap_or_default());
    }
    let elapsed = started.elapsed().as_secs_f64();
    latencies.sort_by(f64::total_cmp);
    let at = |q: f64| {
        latencies
            .get(((latencies.len() as f64 * q) as usize).min(latencies.len().saturating_sub(1)))
            .copied()
            .unwrap_or(f64::NAN)
    };
    (latencies.len() as f64 / elapsed, at(0.50), at(0.99))
}

/// `watchers` watches of the namespace, then `events` creates: events delivered per
/// second, from the first create until every watcher received every event.
async fn fan_out(api: &Api<ConfigMap>, watchers: usize, events: usize) -> f64 {
    let rv = api
        .list(&ListParams::default().limit(1))
        .await
        .ok()
        .and_then(|list| list.metadata.resource_version)
        .unwrap_or_default();
    let mut streams = Vec::new();
    for _ in 0..watchers {
        if let Ok(stream) = api.watch(&WatchParams::default(), &rv).await {
            streams.push(stream);
        }
    }
    let received = Arc::new(AtomicUsize::new(0));
    let mut readers = Vec::new();
    for mut stream in streams {
        let received = received.clone();
        readers.push(tokio::spawn(async move {
            let mut mine = 0;
            while mine < events {
                match stream.next().await {
                    Some(Ok(kubeclient::machinery::WatchEvent::Added(_))) => {
                        mine += 1;
                        received.fetch_add(1, Ordering::Relaxed);
                    }
                    Some(_) => {}
                    None => return,
                }
            }
        }));
    }
    let started = Instant::now();
    for i in 0..events {
        let _ = api
            .create(&PostParams::default(), &configmap(&format!("fan-{i}")))
            .await;
    }
    for reader in readers {
        let _ = tokio::time::timeout(Duration::from_secs(60), reader).await;
    }
    received.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

/// `min–max (ratio to memory min–max)` of one measure.
fn range(values: &[f64], decimals: usize) -> String {
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if values.is_empty() {
        "-".to_owned()
    } else {
        format!("{min:.decimals$}–{max:.decimals$}")
    }
}

/// The median of `values`.
fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN)
}

fn print_writes(setups: &[Setup], measured: &[Measured], args: &Args) {
    println!();
    println!(
        "### Writes ({} creates from {} clients over HTTP per run, {} runs interleaved; range, and the ratio of medians to in memory)",
        args.writes, args.writers, args.runs
    );
    println!();
    println!(
        "| store | creates/s | ×memory | p50 ms | p99 ms | ×memory (p99) | fan-out to {} watchers, events/s | ×memory |",
        args.watchers
    );
    println!("|---|---|---|---|---|---|---|---|");
    let Some(memory) = measured.first() else {
        return;
    };
    for (setup, m) in setups.iter().zip(measured) {
        println!(
            "| {} | {} | {:.2} | {} | {} | {:.1} | {} | {:.2} |",
            setup.name(),
            range(&m.writes_per_second, 0),
            median(&m.writes_per_second) / median(&memory.writes_per_second),
            range(&m.p50_ms, 1),
            range(&m.p99_ms, 1),
            median(&m.p99_ms) / median(&memory.p99_ms),
            range(&m.fan_out_events_per_second, 0),
            median(&m.fan_out_events_per_second) / median(&memory.fan_out_events_per_second),
        );
    }
}

/// etcd's own figure: `etcdctl check perf` (its throughput and slowest request lines).
fn print_check_perf(setups: &[Setup]) {
    println!();
    println!("### etcdctl check perf (etcd's own limit, load `s`)");
    println!();
    for setup in setups {
        let Some(config) = setup.etcd() else {
            continue;
        };
        let output = std::process::Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .arg(format!("--endpoints={}", config.servers.join(",")))
            .args(["check", "perf", "--load=s"])
            .output();
        match output {
            Ok(output) => {
                let text = String::from_utf8_lossy(&output.stdout);
                // Its progress bar shares the lines (carriage returns): keep the verdicts.
                let lines: Vec<&str> = text
                    .split(['\n', '\r'])
                    .filter_map(|line| {
                        let at = line.find("PASS").or_else(|| line.find("FAIL"))?;
                        line.get(at..)
                    })
                    .collect();
                println!("- {}: {}", setup.name(), lines.join("; "));
            }
            Err(error) => println!("- {}: etcdctl did not run ({error})", setup.name()),
        }
    }
}

/// Fills each setup with `count` ConfigMaps (through the store, 16 threads), then times
/// a new server's start (over etcd: loading them into its watch cache) and full LISTs.
async fn print_lists(setups: &[Setup], count: usize) {
    println!();
    println!(
        "### A list of {count} ConfigMaps (median of 3 full LISTs; start = a new server loading them)"
    );
    println!();
    println!("| store | fill, objects/s | server start | LIST | items, MB | ×memory |");
    println!("|---|---|---|---|---|---|");
    let mut memory_list = None;
    for setup in setups {
        let prefix = "/bench-list";
        let Ok(server) = setup.builder(prefix).start().await else {
            continue;
        };
        let store = server.store();
        let started = Instant::now();
        tokio::task::block_in_place(|| {
            std::thread::scope(|scope| {
                for thread in 0..16 {
                    scope.spawn(move || {
                        let configmaps = GroupResource::new("", "configmaps");
                        for i in (thread..count).step_by(16) {
                            let name = format!("listed-{i:06}");
                            let object = serde_json::json!({
                                "apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": name, "namespace": "default"},
                                "data": {"k": "v"}
                            });
                            let _ = store.write(&configmaps, &format!("default/{name}"), |_| {
                                Ok::<_, ()>(Write::Create(object))
                            });
                        }
                    });
                }
            });
        });
        let fill = count as f64 / started.elapsed().as_secs_f64();
        // Over etcd a new server loads everything into its cache; in memory the same
        // server is listed (a new one would be empty).
        let (server, start) = if setup.etcd().is_some() {
            server.shutdown().await;
            let began = Instant::now();
            let Ok(again) = setup.builder(prefix).start().await else {
                continue;
            };
            (again, format!("{:.2} s", began.elapsed().as_secs_f64()))
        } else {
            (server, "-".to_owned())
        };
        let Some(client) = client_of(&server).await else {
            continue;
        };
        let mut times = Vec::new();
        let (mut items, mut size) = (0, 0);
        for _ in 0..3 {
            let began = Instant::now();
            let request = kubeclient::rest::Request::get("/api/v1/namespaces/default/configmaps");
            if let Ok(bytes) = client.request_bytes(request).await {
                times.push(began.elapsed().as_secs_f64());
                size = bytes.len();
                items = serde_json::from_slice::<serde_json::Value>(&bytes)
                    .ok()
                    .and_then(|list| list["items"].as_array().map(Vec::len))
                    .unwrap_or(0);
            }
        }
        let list = median(&times);
        let ratio = *memory_list.get_or_insert(list);
        println!(
            "| {} | {fill:.0} | {start} | {:.3} s | {items}, {:.1} | {:.2} |",
            setup.name(),
            list,
            size as f64 / 1_048_576.0,
            list / ratio
        );
        server.shutdown().await;
    }
}
