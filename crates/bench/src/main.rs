//! The benchmark runner: kubeclient against kube-rs on the same data, side by side, plus
//! the work queue, the indexer and the embedded API server.
//!
//! ```text
//! cargo run -p kubeclient-bench --release -- [--sizes 10000,50000] [--events 50000] [--runs 3]
//! ```
//!
//! Each client runs as its own process (so its memory is its own) against a neutral load
//! server that serves a precomputed list and watch stream from memory. Peers are
//! interleaved run by run (A B A B ...); the tables show medians and ratios.

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
    /// Which peers: ours-typed, kube, ours-strip, ours-dynamic, ours-metadata.
    #[arg(
        long,
        default_value = "ours-typed,kube,ours-strip,ours-dynamic,ours-metadata",
        value_delimiter = ','
    )]
    peers: Vec<String>,
    /// Skip the parts benchmarks (work queue, indexer, embedded server).
    #[arg(long)]
    skip_parts: bool,
    /// Only the parts benchmarks.
    #[arg(long)]
    parts_only: bool,
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

async fn run_client(
    peer: &str,
    url: &str,
    objects: usize,
    events: usize,
    data: &load_server::LoadData,
) -> Result<Value, String> {
    use tokio::io::AsyncBufReadExt;
    let (program, mode) = match peer {
        "kube" => ("bench-kube", "typed"),
        other => ("bench-ours", other.trim_start_matches("ours-")),
    };
    data.release.send_replace(false);
    let mut child = tokio::process::Command::new(sibling(program))
        .args(["--url", url, "--objects", &objects.to_string(), "--events", &events.to_string(), "--mode", mode])
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
    eprintln!(
        "generating {objects} pods and {} watch events ...",
        args.events
    );
    let data = Arc::new(load_server::LoadData::generate(objects, args.events));
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
            eprintln!("run {}/{}: {peer} ({objects} objects)", run + 1, args.runs);
            match run_client(peer, &url, objects, args.events, &data).await {
                Ok(report) => reports.push(report),
                Err(err) => eprintln!("  failed: {err}"),
            }
        }
    }
    println!();
    println!(
        "### {objects} Pods (≈{:.1} KB of JSON each), then {} watch events; medians of {} runs",
        average as f64 / 1024.0,
        args.events,
        args.runs
    );
    println!();
    println!(
        "| client | time to sync | watch events/s | memory per cached Pod | RSS after sync | peak RSS | CPU s |"
    );
    println!("|---|---|---|---|---|---|---|");
    let mut medians: Vec<(String, [f64; 5])> = Vec::new();
    for (peer, reports) in &results {
        let field = |name: &str| -> f64 {
            let mut values: Vec<f64> = reports.iter().filter_map(|r| r[name].as_f64()).collect();
            median(&mut values)
        };
        let m = [
            field("sync_seconds"),
            field("events_per_second"),
            field("rss_after_sync"),
            field("peak_rss"),
            field("cpu_seconds"),
        ];
        println!(
            "| {peer} | {:.2} s | {:.0} | {:.1} KB | {:.0} MB | {:.0} MB | {:.1} |",
            m[0],
            m[1],
            m[2] / objects as f64 / 1024.0,
            m[2] / 1_048_576.0,
            m[3] / 1_048_576.0,
            m[4]
        );
        medians.push((peer.clone(), m));
    }
    if let (Some(ours), Some(kube)) = (
        medians.iter().find(|(p, _)| p == "ours-typed"),
        medians.iter().find(|(p, _)| p == "kube"),
    ) {
        println!();
        println!(
            "ours-typed vs kube-rs: sync {:.2}x faster, {:.2}x the watch events/s, {:.2}x the memory per cached Pod, peak RSS {:.2}x",
            kube.1[0] / ours.1[0],
            ours.1[1] / kube.1[1],
            ours.1[2] / kube.1[2],
            ours.1[3] / kube.1[3]
        );
    }
}
