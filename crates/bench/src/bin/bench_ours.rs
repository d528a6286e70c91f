//! kubeclient's side of the benchmark: a shared informer on all Pods with a counting handler.
//! Prints one JSON line (see `kubeclient_bench::Report`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use k8s_openapi::api::core::v1::Pod;
use kubeclient::cache::{ResourceEventHandlerFuncs, SharedIndexInformer};
use kubeclient::informers::SharedInformerFactory;
use kubeclient::machinery::{ApiResource, Object, PartialObjectMetadata};
use kubeclient::{Client, Config};
use kubeclient_bench::{
    ClientArgs, CountingAllocator, Report, counting_allocator, cpu_time, peak_rss_bytes,
    relist_changes, rss_bytes,
};

/// Both peers use the same allocator (mimalloc, counting live bytes), so the comparison
/// stays fair.
#[global_allocator]
static ALLOCATOR: CountingAllocator = counting_allocator();

async fn wait_for(counter: &AtomicUsize, target: usize) {
    while counter.load(Ordering::Relaxed) < target {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

async fn measure<K: Object + Send + Sync + 'static>(
    factory: &SharedInformerFactory,
    informer: SharedIndexInformer<K>,
    args: &ClientArgs,
    peer: String,
    start: Instant,
) -> Report {
    let updates = Arc::new(AtomicUsize::new(0));
    let counter = updates.clone();
    let delay = Duration::from_micros(args.handler_delay_us);
    let _registration = informer
        // Only the new object, as kube-rs's watcher gives (a compact cache then never
        // decodes the object an update replaced).
        .add_event_handler(
            ResourceEventHandlerFuncs::new().on_update_new(move |_: &Arc<K>| {
                if !delay.is_zero() {
                    // A slow handler, as a user's blocking code would be.
                    std::thread::sleep(delay);
                }
                counter.fetch_add(1, Ordering::Relaxed);
            }),
        )
        .expect("the informer is not stopped");
    factory.start();
    factory.wait_for_cache_sync().await;
    let synced = start.elapsed();
    let rss_after_sync = rss_bytes();
    let heap_after_sync = ALLOCATOR.allocated() as u64;
    // Tell the runner, which then lets the load server send the watch events.
    println!("synced");
    let mut events_started = Instant::now();
    let mut relist_seconds = 0.0;
    let mut events = args.events;
    if args.scenario == "relist" {
        // The first watch gets a 410; the relist changes every tenth Pod.
        wait_for(&updates, relist_changes(args.objects)).await;
        relist_seconds = events_started.elapsed().as_secs_f64();
        events_started = Instant::now();
        events =
            args.expected_updates() - updates.load(Ordering::Relaxed).min(args.expected_updates());
    }
    wait_for(&updates, args.expected_updates()).await;
    Report {
        peer,
        objects: informer.indexer().len(),
        events,
        sync_seconds: synced.as_secs_f64(),
        events_seconds: events_started.elapsed().as_secs_f64(),
        rss_after_sync,
        peak_rss: peak_rss_bytes(),
        cpu_seconds: cpu_time().as_secs_f64(),
        heap_after_sync,
        peak_heap: ALLOCATOR.max_allocated() as u64,
        relist_seconds,
    }
}

#[tokio::main]
async fn main() {
    let args = ClientArgs::parse();
    let start = Instant::now();
    // metadata-full: the load server ignores `as=` under this prefix (whole Pods answer
    // the metadata informer's requests).
    let url = if args.mode == "metadata-full" {
        format!("{}/ignore-as", args.url.trim_end_matches('/'))
    } else {
        args.url.clone()
    };
    let mut config = Config::new(url.parse().expect("a URL"));
    config.timeout = None;
    // JSON unless the mode says protobuf (the library's default), so that each mode
    // measures one encoding.
    config.content_type = if args.mode.ends_with("-pb") {
        kubeclient::rest::ContentType::Protobuf
    } else {
        kubeclient::rest::ContentType::Json
    };
    let client = Client::new(config).await.expect("a client");
    // LIST + WATCH, like the peer (the load server refuses watch-list).
    let compact = args.mode.starts_with("compact");
    let factory = SharedInformerFactory::new(client)
        .watch_list(false)
        .strip_managed_fields(matches!(
            args.mode.as_str(),
            "strip" | "strip-pb" | "compact-strip" | "compact-strip-pb"
        ))
        .compact_cache(compact);
    let peer = format!("kubeclient {}", args.mode);
    let report = match args.mode.as_str() {
        "typed" | "strip" | "typed-pb" | "strip-pb" | "compact" | "compact-strip"
        | "compact-pb" | "compact-strip-pb" => {
            measure(&factory, factory.informer::<Pod>(), &args, peer, start).await
        }
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
        "metadata" | "metadata-full" => {
            let informer: SharedIndexInformer<PartialObjectMetadata> =
                factory.metadata_informer(&ApiResource::of::<Pod>());
            measure(&factory, informer, &args, peer, start).await
        }
        other => panic!(
            "unknown mode {other:?}: typed, typed-pb, strip, strip-pb, compact, compact-pb, compact-strip, compact-strip-pb, dynamic, metadata or metadata-full"
        ),
    };
    println!("{}", report.to_json());
    std::process::exit(0);
}
