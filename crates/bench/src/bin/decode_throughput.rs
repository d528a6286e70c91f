//! Decode throughput per core: the same realistic Pods (`kubeclient_bench::pod`) as JSON and
//! as protobuf, decoded one by one into `k8s-openapi` Pods on one thread, timed by CPU time,
//! decoders interleaved run by run.
//!
//! ```text
//! cargo run -p kubeclient-bench --release --bin decode-throughput -- [PODS] [RUNS] [ONLY]
//! ```

use k8s_openapi::api::core::v1::Pod;
use kubeclient::machinery::{decode_object, protobuf};

/// The same allocator as the client programs.
#[global_allocator]
static ALLOCATOR: kubeclient_bench::CountingAllocator = kubeclient_bench::counting_allocator();

fn main() {
    let mut args = std::env::args().skip(1);
    let count: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let runs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    // Only the decoders whose name contains this (for profiling one of them).
    let only = args.next().unwrap_or_default();
    let pods: Vec<serde_json::Value> = (0..count)
        .map(|i| {
            let mut pod = kubeclient_bench::pod(i, 1);
            pod["apiVersion"] = "v1".into();
            pod["kind"] = "Pod".into();
            pod
        })
        .collect();
    let json: Vec<Vec<u8>> = pods
        .iter()
        .map(|p| serde_json::to_vec(p).expect("a Pod serializes"))
        .collect();
    let pb: Vec<Vec<u8>> = pods
        .iter()
        .map(|p| protobuf::encode(p).expect("a Pod has a protobuf form"))
        .collect();
    let mean = |bytes: &[Vec<u8>]| bytes.iter().map(Vec::len).sum::<usize>() / bytes.len().max(1);
    println!(
        "{count} Pods; mean size: JSON {} B, protobuf {} B",
        mean(&json),
        mean(&pb)
    );
    println!();
    println!("| decoder | Pods/s per core (median of {runs}) |");
    println!("|---|---|");
    type Decoder = fn(&[u8]) -> Option<Pod>;
    let decoders: [(&str, &[Vec<u8>], Decoder); 8] = [
        ("JSON: serde_json", &json, |b| {
            serde_json::from_slice(b).ok()
        }),
        ("JSON: kubeclient decode_object (simd-json)", &json, |b| {
            decode_object(b, false).ok()
        }),
        ("protobuf: through the JSON form (Value)", &pb, |b| {
            protobuf::decode(b)
                .ok()
                .and_then(|v| serde_json::from_value(v).ok())
        }),
        (
            "protobuf: serde into the struct, driven by the schema",
            &pb,
            |b| protobuf::from_protobuf_via_serde(b, false).ok(),
        ),
        ("protobuf: generated decoder (from_protobuf)", &pb, |b| {
            protobuf::from_protobuf(b).ok()
        }),
        ("JSON without managedFields (simd-json)", &json, |b| {
            decode_object(b, true).ok()
        }),
        (
            "protobuf without managedFields, serde driven by the schema",
            &pb,
            |b| protobuf::from_protobuf_via_serde(b, true).ok(),
        ),
        (
            "protobuf without managedFields, generated decoder",
            &pb,
            |b| protobuf::from_protobuf_with(b, true).ok(),
        ),
    ];
    // Interleaved run by run, and timed by the process's CPU time (one thread decodes), so
    // other load on the machine shifts every decoder alike.
    let chosen: Vec<_> = decoders
        .iter()
        .filter(|(name, _, _)| name.contains(&only))
        .collect();
    let mut rates = vec![Vec::with_capacity(runs); chosen.len()];
    for _ in 0..runs {
        for (i, (name, bodies, decode)) in chosen.iter().enumerate() {
            let start = kubeclient_bench::cpu_time();
            let mut decoded = 0usize;
            for body in bodies.iter() {
                if let Some(pod) = decode(body) {
                    decoded += usize::from(pod.metadata.name.is_some());
                }
            }
            let seconds = kubeclient_bench::cpu_time()
                .saturating_sub(start)
                .as_secs_f64();
            assert_eq!(decoded, count, "{name} decoded every Pod");
            rates[i].push(count as f64 / seconds);
        }
    }
    for ((name, _, _), rates) in chosen.iter().zip(&mut rates) {
        rates.sort_by(f64::total_cmp);
        println!("| {name} | {:.0} |", rates[rates.len() / 2]);
    }
}
