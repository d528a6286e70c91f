//! kube-rs's side of the benchmark: `reflector(store, watcher(Api::<Pod>::all))` counting
//! applied events. Prints one JSON line (see `kubeclient_bench::Report`).

use std::time::{Duration, Instant};

use clap::Parser;
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::watcher::Event;
use kube::runtime::{reflector, watcher};
use kubeclient_bench::{
    ClientArgs, CountingAllocator, Report, counting_allocator, cpu_time, peak_rss_bytes, rss_bytes,
};

/// Both peers use the same allocator (mimalloc, counting live bytes), so the comparison
/// stays fair.
#[global_allocator]
static ALLOCATOR: CountingAllocator = counting_allocator();

#[tokio::main]
async fn main() {
    let args = ClientArgs::parse();
    let start = Instant::now();
    let config = kube::Config::new(args.url.parse().expect("a URL"));
    let client = kube::Client::try_from(config).expect("a kube client");
    let api: kube::Api<Pod> = kube::Api::all(client);
    let (reader, writer) = reflector::store();
    let mut events = std::pin::pin!(reflector(writer, watcher(api, watcher::Config::default())));
    let delay = Duration::from_micros(args.handler_delay_us);
    let mut synced_at = None;
    let mut rss_after_sync = 0;
    let mut heap_after_sync = 0;
    let mut applied = 0usize;
    let mut events_started = Instant::now();
    let mut init_done = 0;
    let mut relist_seconds = 0.0;
    // The relist scenario relists once before the events flow.
    let inits = if args.scenario == "relist" { 2 } else { 1 };
    while let Some(event) = events.next().await {
        match event {
            Ok(Event::InitDone) => {
                init_done += 1;
                if init_done == 1 {
                    synced_at = Some(start.elapsed());
                    rss_after_sync = rss_bytes();
                    heap_after_sync = ALLOCATOR.allocated() as u64;
                    // Tell the runner, which then lets the load server send the watch events.
                    println!("synced");
                } else {
                    relist_seconds = events_started.elapsed().as_secs_f64();
                }
                events_started = Instant::now();
            }
            Ok(Event::Apply(_) | Event::Delete(_)) if init_done >= inits => {
                if !delay.is_zero() {
                    std::thread::sleep(delay);
                }
                applied += 1;
                if applied >= args.events {
                    break;
                }
            }
            Ok(_) => {}
            Err(err) => eprintln!("watcher error: {err}"),
        }
    }
    let report = Report {
        peer: "kube-rs reflector".to_owned(),
        objects: reader.state().len(),
        events: applied,
        sync_seconds: synced_at.unwrap_or_default().as_secs_f64(),
        events_seconds: events_started.elapsed().as_secs_f64(),
        rss_after_sync,
        peak_rss: peak_rss_bytes(),
        cpu_seconds: cpu_time().as_secs_f64(),
        heap_after_sync,
        peak_heap: ALLOCATOR.max_allocated() as u64,
        relist_seconds,
    };
    println!("{}", report.to_json());
    std::process::exit(0);
}
