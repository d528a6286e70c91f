//! Live heap and decode time of the benchmark's Pod, by decoder: serde_json straight from
//! the bytes, a clone of that (what kube-rs's store holds), and kubeclient's
//! `decode_object` (simd-json), with and without managedFields. The measurement behind the
//! choice of decoder (see `kubeclient_machinery::decode_object`).
//!
//! ```text
//! cargo run --release -p kubeclient-bench --example pod_heap
//! ```
use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use kubeclient::machinery::decode_object;
use kubeclient_bench::{CountingAllocator, counting_allocator, pod};

#[global_allocator]
static ALLOCATOR: CountingAllocator = counting_allocator();

const PODS: usize = 2000;

/// Decodes `PODS` Pods with `decode`; prints live heap per Pod and time per Pod.
fn measure(label: &str, decode: impl Fn() -> Pod) -> Vec<Pod> {
    let before = ALLOCATOR.allocated();
    let start = Instant::now();
    let pods: Vec<Pod> = (0..PODS).map(|_| decode()).collect();
    let elapsed = start.elapsed();
    let per_pod = (ALLOCATOR.allocated() - before) / PODS;
    let per_pod_time = elapsed / u32::try_from(PODS).unwrap_or(1);
    println!("{label:<28} {per_pod:>6} B/Pod live heap, {per_pod_time:>10?} per Pod");
    pods
}

fn main() {
    let bytes = serde_json::to_vec(&pod(7, 1)).expect("the Pod encodes");
    println!(
        "one Pod: {} bytes of JSON, size_of::<Pod>() = {}",
        bytes.len(),
        std::mem::size_of::<Pod>()
    );
    let decoded = measure("serde_json::from_slice", || {
        serde_json::from_slice(&bytes).expect("a Pod")
    });
    let _cloned = measure("clone of that", || decoded[0].clone());
    let _ours = measure("decode_object", || {
        decode_object(&bytes, false).expect("a Pod")
    });
    let _stripped = measure("decode_object, stripped", || {
        decode_object(&bytes, true).expect("a Pod")
    });
    let _again = measure("serde_json::from_slice", || {
        serde_json::from_slice(&bytes).expect("a Pod")
    });
}
