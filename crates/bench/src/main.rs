//! The benchmark runner: kubeclient against kube-rs on the same data, side by side, plus
//! the work queue, the indexer and the embedded API server.
//!
//! ```text
//! cargo run -p kubeclient-bench --release -- [--sizes 10000,50000] [--events 50000] [--runs 3]
//! cargo run -p kubeclient-bench --release -- --cluster [--nodes 1000] [--pods 100000]
//! ```
//!
//! Each client runs as its own process (so its memory is its own) against a neutral load
//! server that serves a precomputed list and watch stream from memory. Peers are
//! interleaved run by run (A B A B ...); the tables show medians and ratios.

mod cluster_scale;
mod load_server;
mod parts;

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use serde_json::Value;

/// Options of the runner.
#[derive(Debug, Parser)]
#[command(
    name = "kubeclient-bench",
    about = "kubeclient vs kube-rs, side by side"
)]
struct Args {
    /// List sizes (objects), comma-separated.
    #[arg(long, default_value = "10000,50000", value_delimiter = ',')]
    sizes: Vec<usize>,
    /// Watch events after the list.
    #[arg(long, default_value_t = 50_000)]
    events: usize,
    /// Runs per peer (medians are reported).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Which peers: ours-typed, kube, ours-strip, ours-compact, ours-compact-strip, ours-compact-pb,
    /// ours-compact-strip-pb (compact caches over protobuf),
    /// ours-dynamic, ours-metadata, ours-typed-pb (typed over protobuf), ours-strip-pb, ours-metadata-full
    /// (the metadata informer against a server that ignores `as=PartialObjectMetadata` and
    /// sends whole Pods).
    #[arg(
        long,
        default_value = "ours-typed,kube,ours-strip,ours-dynamic,ours-metadata",
        value_delimiter = ','
    )]
    peers: Vec<String>,
    /// Scenarios: held (events wait until the client has synced), during-sync (events
    /// flow as soon as the watch opens), relist (the first watch gets 410 and the client
    /// relists a list where every tenth Pod changed, then the events flow), slow-handler
    /// (the handler sleeps --handler-delay-us per event; --slow-events events).
    #[arg(long, default_value = "held", value_delimiter = ',')]
    scenarios: Vec<String>,
    /// The slow handler's sleep per event, microseconds.
    #[arg(long, default_value_t = 1000)]
    handler_delay_us: u64,
    /// Watch events of the slow-handler scenario.
    #[arg(long, default_value_t = 5000)]
    slow_events: usize,
    /// Only serve the load data (this many Pods, --events events released at once) and
    /// print its URL, for profiling one client by hand.
    #[arg(long)]
    serve_only: Option<usize>,
    /// Skip the parts benchmarks (work queue, indexer, embedded server).
    #[arg(long)]
    skip_parts: bool,
    /// Only the parts benchmarks.
    #[arg(long)]
    parts_only: bool,
    /// Only the simulated-cluster scenario: the embedded server with --nodes nodes (in a
    /// child process), --pods Pods created over HTTP and run; see `cluster_scale`.
    #[arg(long)]
    cluster: bool,
    /// Simulated nodes of the cluster scenario.
    #[arg(long, default_value_t = 1000)]
    nodes: usize,
    /// Pods the cluster scenario creates.
    #[arg(long, default_value_t = 100_000)]
    pods: usize,
    /// Concurrent creators of the cluster scenario.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Seconds the cluster scenario holds the Pods once all run.
    #[arg(long, default_value_t = 30)]
    hold_seconds: u64,
    /// The cluster scenario's server process (started by the runner itself).
    #[arg(long, hide = true)]
    cluster_server: bool,
}

fn sibling(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from(name));
    exe.with_file_name(name)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// One client run: which peer, on what, in which scenario.
struct Run<'a> {
    peer: &'a str,
    url: &'a str,
    objects: usize,
    events: usize,
    scenario: &'a str,
    handler_delay_us: u64,
}

async fn run_client(run: &Run<'_>, data: &load_server::LoadData) -> Result<Value, String> {
    let Run {
        peer,
        url,
        objects,
        events,
        scenario,
        handler_delay_us,
    } = *run;
    use tokio::io::AsyncBufReadExt;
    let (program, mode) = match peer {
        "kube" => ("bench-kube", "typed"),
        other => ("bench-ours", other.trim_start_matches("ours-")),
    };
    data.reset(scenario == "during-sync", scenario == "relist");
    let delay = if scenario == "slow-handler" {
        handler_delay_us
    } else {
        0
    };
    let mut child = tokio::process::Command::new(sibling(program))
        .args(["--url", url, "--objects", &objects.to_string(), "--events", &events.to_string(), "--mode", mode])
        .args(["--scenario", scenario, "--handler-delay-us", &delay.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|err| format!("cannot run {program} (build it with `cargo build --release -p kubeclient-bench`): {err}"))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let read = async {
        let mut last = None;
        while let Ok(Some(line)) = lines.next_line().await {
            if line == "synced" {
                // The client's cache is synced: let the watch events flow.
                data.release.send_replace(true);
            } else {
                last = Some(line);
            }
        }
        last
    };
    let line = tokio::time::timeout(Duration::from_secs(600), read)
        .await
        .map_err(|_| format!("{peer} did not finish within 10 minutes"))?
        .ok_or_else(|| format!("{peer} printed nothing"))?;
    let _ = child.wait().await;
    serde_json::from_str(&line).map_err(|err| format!("{peer} printed {line:?}: {err}"))
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    if args.cluster_server {
        cluster_scale::serve(args.nodes).await;
        return;
    }
    if args.cluster {
        let options = cluster_scale::ScaleOptions {
            nodes: args.nodes,
            pods: args.pods,
            concurrency: args.concurrency,
            hold: Duration::from_secs(args.hold_seconds),
            timeout: Duration::from_secs(3600),
        };
        if let Err(err) = cluster_scale::run(&options).await {
            eprintln!("cluster scenario: {err}");
            std::process::exit(1);
        }
        return;
    }
    if let Some(objects) = args.serve_only {
        let data = Arc::new(load_server::LoadData::generate(objects, args.events));
        data.reset(true, false);
        match load_server::serve(data).await {
            Ok(address) => println!("http://{address}"),
            Err(err) => {
                eprintln!("cannot start the load server: {err}");
                std::process::exit(1);
            }
        }
        std::future::pending::<()>().await;
    }
    if !args.parts_only {
        for &objects in &args.sizes {
            peers(&args, objects).await;
        }
    }
    if !args.skip_parts {
        parts::run_all().await;
    }
}

async fn peers(args: &Args, objects: usize) {
    for scenario in &args.scenarios {
        let events = if scenario == "slow-handler" {
            args.slow_events.min(args.events)
        } else {
            args.events
        };
        scenario_table(args, objects, events, scenario).await;
    }
}

/// The columns of a scenario table, medians over runs.
const COLUMNS: [&str; 9] = [
    "sync_seconds",
    "events_per_second",
    "rss_after_sync",
    "heap_after_sync",
    "peak_rss",
    "peak_heap",
    "cpu_seconds",
    "relist_seconds",
    "peak_over_steady",
];

async fn scenario_table(args: &Args, objects: usize, events: usize, scenario: &str) {
    eprintln!("generating {objects} pods and {events} watch events ({scenario}) ...");
    let data = Arc::new(load_server::LoadData::generate(objects, events));
    let average = data.list_bytes() / objects.max(1);
    let address = match load_server::serve(data.clone()).await {
        Ok(address) => address,
        Err(err) => {
            eprintln!("cannot start the load server: {err}");
            std::process::exit(1);
        }
    };
    let url = format!("http://{address}");
    let mut results: Vec<(String, Vec<Value>)> =
        args.peers.iter().map(|p| (p.clone(), Vec::new())).collect();
    for run in 0..args.runs {
        for (peer, reports) in &mut results {
            eprintln!(
                "run {}/{}: {peer} ({objects} objects, {scenario})",
                run + 1,
                args.runs
            );
            let client = Run {
                peer,
                url: &url,
                objects,
                events,
                scenario,
                handler_delay_us: args.handler_delay_us,
            };
            match run_client(&client, &data).await {
                Ok(mut report) => {
                    let steady = report["rss_after_sync"].as_f64().unwrap_or(f64::NAN);
                    let peak = report["peak_rss"].as_f64().unwrap_or(f64::NAN);
                    report["peak_over_steady"] = (peak / steady).into();
                    reports.push(report);
                }
                Err(err) => eprintln!("  failed: {err}"),
            }
        }
    }
    println!();
    println!(
        "### {objects} Pods (≈{:.1} KB of JSON each), then {events} watch events, scenario `{scenario}`; medians of {} runs",
        average as f64 / 1024.0,
        args.runs
    );
    println!();
    println!(
        "| client | time to sync | watch events/s | RSS per Pod | live heap per Pod | RSS after sync | peak RSS | peak / steady RSS | peak heap | CPU s | relist s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut medians: Vec<(String, [f64; 9])> = Vec::new();
    for (peer, reports) in &results {
        let mut m = [f64::NAN; 9];
        for (slot, name) in m.iter_mut().zip(COLUMNS) {
            let mut values: Vec<f64> = reports.iter().filter_map(|r| r[name].as_f64()).collect();
            *slot = median(&mut values);
        }
        let kb_per_pod = |bytes: f64| bytes / objects as f64 / 1024.0;
        println!(
            "| {peer} | {:.2} s | {:.0} | {:.1} KB | {:.1} KB | {:.0} MB | {:.0} MB | {:.2} | {:.0} MB | {:.1} | {} |",
            m[0],
            m[1],
            kb_per_pod(m[2]),
            kb_per_pod(m[3]),
            m[2] / 1_048_576.0,
            m[4] / 1_048_576.0,
            m[8],
            m[5] / 1_048_576.0,
            m[6],
            if scenario == "relist" {
                format!("{:.2}", m[7])
            } else {
                "-".to_owned()
            },
        );
        medians.push((peer.clone(), m));
    }
    let kube = medians.iter().find(|(p, _)| p == "kube").map(|(_, m)| *m);
    if let Some(kube) = kube {
        println!();
        for (peer, ours) in medians.iter().filter(|(p, _)| p != "kube") {
            println!(
                "{peer} vs kube-rs: sync {:.2}x faster, {:.2}x the watch events/s, {:.2}x the RSS per Pod, {:.2}x the live heap per Pod, peak RSS {:.2}x",
                kube[0] / ours[0],
                ours[1] / kube[1],
                ours[2] / kube[2],
                ours[3] / kube[3],
                ours[4] / kube[4]
            );
        }
    }
}
