//! Times one LIST of all Pods from a URL (`kubeclient-bench --serve-only N` serves one):
//! the streaming, parallel decode of informers against a plain whole-body decode.
//!
//! ```text
//! cargo run --release -p kubeclient-bench --example list_time -- http://127.0.0.1:PORT
//! ```
use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use kubeclient::rest::DecodeOptions;
use kubeclient::{Api, Client, Config, ListParams};
use kubeclient_bench::{CountingAllocator, counting_allocator};

#[global_allocator]
static ALLOCATOR: CountingAllocator = counting_allocator();

#[tokio::main]
async fn main() {
    let url = std::env::args().nth(1).expect("a URL");
    let mut config = Config::new(url.parse().expect("a URL"));
    config.timeout = None;
    let client = Client::new(config).await.expect("a client");
    let pods: Api<Pod> = Api::all(client);
    let params = ListParams {
        resource_version: Some("0".into()),
        ..ListParams::default()
    };
    for strip in [false, true, false] {
        let options = DecodeOptions {
            strip_managed_fields: strip,
            ..DecodeOptions::default()
        };
        let start = Instant::now();
        let list = pods
            .list_shared(&params, false, &options)
            .await
            .expect("a list");
        println!(
            "streamed (strip {strip}): {} items in {:?}, live heap {} MB, peak {} MB",
            list.items.len(),
            start.elapsed(),
            ALLOCATOR.allocated() >> 20,
            ALLOCATOR.max_allocated() >> 20
        );
    }
    let start = Instant::now();
    let list = pods.list(&params).await.expect("a list");
    println!(
        "whole body, serde_json: {} items in {:?}",
        list.items.len(),
        start.elapsed()
    );
}
