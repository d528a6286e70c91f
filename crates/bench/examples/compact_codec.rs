//! Where the compact cache's time goes, per benchmark Pod: JSON and protobuf encode and
//! decode, the codec's encode (protobuf + zstd) and decode, with and without the trained dictionary; the size held; and a
//! compact cache's reads against a shared one (`get` p50/p99, `by_index` of one namespace).
//!
//! ```text
//! cargo run --release -p kubeclient-bench --example compact_codec
//! ```
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kubeclient::cache::{
    Cache, CacheOptions, CompactRepr, Indexer, Indexers, KnownObjects, SharedOrCompact, Store,
    TRAINING_SAMPLES,
};
use kubeclient::machinery::decode_object;
use kubeclient::machinery::protobuf::{decode_message, encode_message};
use kubeclient_bench::pod;

const PODS: usize = 10_000;

fn per_pod(label: &str, elapsed: Duration, count: usize) {
    println!(
        "{label:<34} {:>8.2} µs per Pod",
        elapsed.as_secs_f64() * 1e6 / count as f64
    );
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn main() {
    let pods: Vec<Arc<Pod>> = (0..PODS)
        .map(|i| {
            let json = serde_json::to_vec(&pod(i, 1 + i as u64)).expect("the Pod encodes");
            Arc::new(decode_object(&json, false).expect("a Pod"))
        })
        .collect();
    let start = Instant::now();
    let json: Vec<Vec<u8>> = pods
        .iter()
        .map(|p| serde_json::to_vec(&**p).expect("encodes"))
        .collect();
    per_pod("serde_json::to_vec", start.elapsed(), PODS);
    let start = Instant::now();
    for p in &pods {
        let _ = simd_json::serde::to_vec(&**p).expect("encodes");
    }
    per_pod("simd_json::serde::to_vec", start.elapsed(), PODS);
    let json_len: usize = json.iter().map(Vec::len).sum::<usize>() / PODS;
    let start = Instant::now();
    for bytes in &json {
        let _: Pod = decode_object(bytes, false).expect("decodes");
    }
    per_pod("decode_object (simd-json)", start.elapsed(), PODS);
    let start = Instant::now();
    let protobuf: Vec<Vec<u8>> = pods
        .iter()
        .map(|p| {
            let mut bytes = Vec::new();
            encode_message(&**p, &mut bytes).expect("a Pod has a generated encoder");
            bytes
        })
        .collect();
    per_pod("encode_message (generated protobuf)", start.elapsed(), PODS);
    let protobuf_len: usize = protobuf.iter().map(Vec::len).sum::<usize>() / PODS;
    let start = Instant::now();
    for bytes in &protobuf {
        let _: Pod = decode_message(bytes).expect("a decoder").expect("decodes");
    }
    per_pod("decode_message (generated protobuf)", start.elapsed(), PODS);

    let codec = CompactRepr::<Pod>::new();
    let start = Instant::now();
    let early: Vec<_> = pods[..TRAINING_SAMPLES]
        .iter()
        .map(|p| codec.encode(p).expect("encodes"))
        .collect();
    per_pod(
        "encode without a dictionary",
        start.elapsed(),
        TRAINING_SAMPLES,
    );
    let trained = Instant::now();
    while !codec.has_dictionary() {
        std::thread::sleep(Duration::from_millis(1));
    }
    println!(
        "dictionary trained in {:?} (after the {TRAINING_SAMPLES} samples)",
        trained.elapsed()
    );
    let start = Instant::now();
    let stored: Vec<_> = pods
        .iter()
        .map(|p| codec.encode(p).expect("encodes"))
        .collect();
    per_pod("encode with the dictionary", start.elapsed(), PODS);
    let start = Instant::now();
    for s in &stored {
        codec.decode(s).expect("decodes");
    }
    per_pod("decode with the dictionary", start.elapsed(), PODS);
    let start = Instant::now();
    for s in &early {
        codec.decode(s).expect("decodes");
    }
    per_pod(
        "decode without a dictionary",
        start.elapsed(),
        TRAINING_SAMPLES,
    );
    let size = |objects: &[kubeclient::cache::CompactObject]| {
        objects.iter().map(|o| o.encoded_len()).sum::<usize>() / objects.len()
    };
    println!(
        "bytes per Pod: JSON {json_len}, protobuf {protobuf_len}, zstd {} without a dictionary, {} with it",
        size(&early),
        size(&stored)
    );

    // Reads: a shared cache against a compact one, both with the namespace index.
    for (label, repr) in [
        ("shared", SharedOrCompact::Shared),
        ("compact", SharedOrCompact::Compact(CompactRepr::new())),
    ] {
        let cache = Cache::with_representation(
            CacheOptions::default().indexers(Indexers::namespace()),
            repr,
        );
        for p in &pods {
            cache.add(Arc::clone(p)).expect("stored");
        }
        // Rewrite everything once the dictionary exists, as watch events would.
        std::thread::sleep(Duration::from_millis(200));
        for p in &pods {
            cache.add(Arc::clone(p)).expect("stored");
        }
        let keys = cache.list_keys();
        let mut times: Vec<Duration> = keys
            .iter()
            .map(|key| {
                let start = Instant::now();
                let _ = cache.get_by_key(key);
                start.elapsed()
            })
            .collect();
        times.sort();
        let start = Instant::now();
        let in_namespace = cache.by_index("namespace", "team-3").expect("indexed");
        let by_index = start.elapsed();
        println!(
            "{label:<8} get p50 {:?} p99 {:?}; by_index of one namespace ({} Pods) {:?}",
            percentile(&times, 0.5),
            percentile(&times, 0.99),
            in_namespace.len(),
            by_index
        );
    }
}
