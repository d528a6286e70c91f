//! kubeclient's side of the benchmark: a shared informer on all Pods with a counting handler.
//! Prints one JSON line (see `kubeclient_bench::Report`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use k8s_openapi::api::core::v1::Pod;
use kubeclient::cache::{ResourceEventHandlerFuncs, SharedIndexInformer};
use kubeclient::informers::SharedInformerFactory;
use kubeclient::machinery::{ApiResource, DynamicObject, Object};
use kubeclient::{Client, Config};
use kubeclient_bench::{ClientArgs, Report, cpu_time, peak_rss_bytes, rss_bytes};

async fn measure<K: Object + Send + Sync + 'static>(
    factory: &SharedInformerFactory,
    informer: SharedIndexInformer<K>,
    args: &ClientArgs,
    peer: String,
    start: Instant,
) -> Report {
    let updates = Arc::new(AtomicUsize::new(0));
    let counter = updates.clone();
    let _registration = informer
        .add_event_handler(ResourceEventHandlerFuncs::new().on_update(
            move |_: &Arc<K>, _: &Arc<K>| {
                counter.fetch_add(1, Ordering::Relaxed);
            },
        ))
        .expect("the informer is not stopped");
    factory.start();
    factory.wait_for_cache_sync().await;
    let synced = start.elapsed();
    let rss_after_sync = rss_bytes();
    // Tell the runner, which then lets the load server send the watch events.
    println!("synced");
    let events_started = Instant::now();
    while updates.load(Ordering::Relaxed) < args.events {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    Report {
        peer,
        objects: informer.indexer().len(),
        events: updates.load(Ordering::Relaxed),
        sync_seconds: synced.as_secs_f64(),
        events_seconds: events_started.elapsed().as_secs_f64(),
        rss_after_sync,
        peak_rss: peak_rss_bytes(),
        cpu_seconds: cpu_time().as_secs_f64(),
    }
}

/// Both peers use the same allocator (mimalloc), so the comparison stays fair.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() {
    let args = ClientArgs::parse();
    let start = Instant::now();
    let mut config = Config::new(args.url.parse().expect("a URL"));
    config.timeout = None;
    let client = Client::new(config).await.expect("a client");
    // LIST + WATCH, like the peer (the load server refuses watch-list).
    let factory = SharedInformerFactory::new(client)
        .watch_list(false)
        .strip_managed_fields(args.mode == "strip");
    let peer = format!("kubeclient {}", args.mode);
    let report = match args.mode.as_str() {
        "typed" | "strip" => measure(&factory, factory.informer::<Pod>(), &args, peer, start).await,
        "dynamic" => {
            measure(
                &factory,
                factory.dynamic_informer(&ApiResource::of::<Pod>()),
                &args,
                peer,
                start,
            )
            .await
        }
        "metadata" => {
            let informer: SharedIndexInformer<DynamicObject> =
                factory.metadata_informer(&ApiResource::of::<Pod>());
            measure(&factory, informer, &args, peer, start).await
        }
        other => panic!("unknown mode {other:?}: typed, strip, dynamic or metadata"),
    };
    println!("{}", report.to_json());
    std::process::exit(0);
}
