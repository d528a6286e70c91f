//! Live heap of one decoded Pod: straight from serde_json, and after a clone.
use k8s_openapi::api::core::v1::Pod;
use kubeclient_bench::{CountingAllocator, counting_allocator, pod};

#[global_allocator]
static ALLOCATOR: CountingAllocator = counting_allocator();

fn main() {
    let bytes = serde_json::to_vec(&pod(7, 1)).unwrap();
    let n = 1000;
    let before = ALLOCATOR.allocated();
    let decoded: Vec<Pod> = (0..n)
        .map(|_| serde_json::from_slice(&bytes).unwrap())
        .collect();
    let after_decode = ALLOCATOR.allocated();
    let cloned: Vec<Pod> = decoded.iter().cloned().collect();
    let after_clone = ALLOCATOR.allocated();
    println!(
        "json {} B; decoded {} B/pod; cloned {} B/pod; size_of Pod {}",
        bytes.len(),
        (after_decode - before) / n,
        (after_clone - after_decode) / n,
        std::mem::size_of::<Pod>()
    );
    let t = std::time::Instant::now();
    let again: Vec<Pod> = (0..n)
        .map(|_| serde_json::from_slice(&bytes).unwrap())
        .collect();
    let d = t.elapsed();
    let t = std::time::Instant::now();
    let c: Vec<Pod> = again.iter().cloned().collect();
    println!(
        "decode {:?}/pod clone {:?}/pod",
        d / n as u32,
        t.elapsed() / n as u32
    );
    drop((cloned, c));
    let before = ALLOCATOR.allocated();
    let mut scratch = bytes.clone();
    let t = std::time::Instant::now();
    let simd: Vec<Pod> = (0..n)
        .map(|_| {
            scratch.copy_from_slice(&bytes);
            simd_json::serde::from_slice(&mut scratch).unwrap()
        })
        .collect();
    let d = t.elapsed();
    println!(
        "simd decoded {} B/pod in {:?}/pod",
        (ALLOCATOR.allocated() - before - bytes.len()) / n,
        d / n as u32
    );
    let t = std::time::Instant::now();
    let again: Vec<Pod> = (0..n)
        .map(|_| serde_json::from_slice(&bytes).unwrap())
        .collect();
    println!("serde_json again {:?}/pod", t.elapsed() / n as u32);
    drop((simd, again));
}

#[allow(dead_code)]
fn simd() {}
