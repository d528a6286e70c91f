//! Where a replaced object is dropped, and what it costs: a cache of `OBJECTS` Pods updated
//! by `EVENTS` decoded events, the replaced Pod dropped on the decoding thread, on another
//! thread (as an informer's listener does), or handed back to the decoding thread.
//!
//! ```text
//! cargo run -p kubeclient-bench --release --example drop_locality -- [OBJECTS] [EVENTS] [RUNS]
//! ```

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use kubeclient::machinery::decode_object;

#[global_allocator]
static ALLOCATOR: kubeclient_bench::CountingAllocator = kubeclient_bench::counting_allocator();

fn main() {
    let mut args = std::env::args().skip(1);
    let objects: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let events: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let runs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(3);
    let bodies: Vec<Vec<u8>> = (0..events)
        .map(|i| {
            let pod = kubeclient_bench::pod(i % objects, 2 + i as u64);
            serde_json::to_vec(&pod).expect("a Pod serializes")
        })
        .collect();
    type Scenario = fn(&[Vec<u8>], usize);
    let scenarios: [(&str, Scenario); 3] = [
        ("decode and drop on one thread", same_thread),
        ("drop on the cache's thread", other_thread),
        ("cache's thread hands the old object back", handed_back),
    ];
    for run in 0..runs {
        for (name, scenario) in &scenarios {
            let cpu = kubeclient_bench::cpu_time();
            let wall = Instant::now();
            scenario(&bodies, objects);
            let wall = wall.elapsed();
            let cpu = kubeclient_bench::cpu_time() - cpu;
            println!(
                "run {run} | {name} | wall {:.0} ns/event | cpu {:.0} ns/event",
                wall.as_nanos() as f64 / events as f64,
                cpu.as_nanos() as f64 / events as f64
            );
        }
    }
}

fn decode(body: &[u8]) -> Arc<Pod> {
    Arc::new(decode_object::<Pod>(body, false).expect("the bench Pod decodes"))
}

fn same_thread(bodies: &[Vec<u8>], objects: usize) {
    let mut cache: Vec<Option<Arc<Pod>>> = vec![None; objects];
    for (i, body) in bodies.iter().enumerate() {
        let pod = decode(body);
        drop(cache[i % objects].replace(pod));
    }
}

fn other_thread(bodies: &[Vec<u8>], objects: usize) {
    let (send, receive) = mpsc::sync_channel::<(usize, Arc<Pod>)>(256);
    let cache = std::thread::spawn(move || {
        let mut cache: Vec<Option<Arc<Pod>>> = vec![None; objects];
        for (slot, pod) in receive {
            drop(cache[slot].replace(pod));
        }
    });
    for (i, body) in bodies.iter().enumerate() {
        let _ = send.send((i % objects, decode(body)));
    }
    drop(send);
    let _ = cache.join();
}

fn handed_back(bodies: &[Vec<u8>], objects: usize) {
    let (send, receive) = mpsc::sync_channel::<(usize, Arc<Pod>)>(256);
    let (back, returned) = mpsc::channel::<Arc<Pod>>();
    let cache = std::thread::spawn(move || {
        let mut cache: Vec<Option<Arc<Pod>>> = vec![None; objects];
        for (slot, pod) in receive {
            if let Some(old) = cache[slot].replace(pod) {
                let _ = back.send(old);
            }
        }
    });
    for (i, body) in bodies.iter().enumerate() {
        while let Ok(old) = returned.try_recv() {
            drop(old);
        }
        let _ = send.send((i % objects, decode(body)));
    }
    drop(send);
    let _ = cache.join();
}
