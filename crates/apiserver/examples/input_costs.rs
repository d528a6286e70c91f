//! Measures what the hostile or careless inputs of issue 24 item 4 cost the server: time
//! per request and the server's RSS (this process; the peak is reset before each step).
//!
//! ```sh
//! cargo run --release -p kubeclient-apiserver --example input_costs -- patterns [patterns] [objects]
//! cargo run --release -p kubeclient-apiserver --example input_costs -- apply [entries]
//! cargo run --release -p kubeclient-apiserver --example input_costs -- yaml-bomb [concurrent]
//! ```
//!
//! - `patterns`: a CRD whose schema has `patterns` distinct `pattern`s (300), then
//!   `objects` (100) custom resources that set every patterned field.
//! - `apply`: server-side apply of a Pod whose container has `entries` `env` entries
//!   (a list-map keyed by `name`), re-applied with a change, then a second manager taking
//!   a tenth of the entries, then a strategic merge patch of half of them.
//! - `yaml-bomb`: `concurrent` billion-laughs YAML bodies posted at once.

mod support;

use std::time::{Duration, Instant};

use kubeclient_apiserver::ApiServer;
use serde_json::{Value, json};
use support::{HttpClient, http_client, send_for_text as send};

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with(field)).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|kb| kb.parse::<u64>().ok())
            })
        })
        .unwrap_or(0)
}

/// (RSS now, peak RSS since the last reset), in MiB.
fn rss() -> (f64, f64) {
    (
        status_kib("VmRSS:") as f64 / 1024.0,
        status_kib("VmHWM:") as f64 / 1024.0,
    )
}

fn reset_peak() {
    // Linux: writing 5 resets VmHWM to the current RSS.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn short(body: &str) -> String {
    let message = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v["message"].as_str().map(str::to_owned))
        .unwrap_or_else(|| body.to_owned());
    message.chars().take(200).collect()
}

async fn patterns(client: &HttpClient, url: &str, count: usize, objects: usize) {
    let properties: serde_json::Map<String, Value> = (0..count)
        .map(|i| {
            (
                format!("f{i}"),
                json!({"type": "string",
                    "pattern": format!("^\\p{{L}}[\\p{{L}}\\p{{N}}_.]{{0,40}}-{i}$")}),
            )
        })
        .collect();
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "patterned.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "patterned", "singular": "patterned", "kind": "Patterned"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": properties}}}}}]}
    });
    let (before, _) = rss();
    reset_peak();
    let start = Instant::now();
    let (status, body) = send(
        client,
        "POST",
        &format!("{url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions"),
        "application/json",
        crd.to_string(),
    )
    .await;
    let crd_time = start.elapsed();
    assert_eq!(status, 201, "CRD create: {}", short(&body));
    let (after_crd, peak_crd) = rss();
    println!(
        "CRD with {count} patterns: create {crd_time:.2?}; RSS {before:.1} -> {after_crd:.1} MiB (peak {peak_crd:.1})"
    );
    let spec: serde_json::Map<String, Value> = (0..count)
        .map(|i| (format!("f{i}"), json!(format!("abc_d-{i}"))))
        .collect();
    let resources = format!("{url}/apis/example.com/v1/namespaces/default/patterned");
    let mut times = Vec::new();
    reset_peak();
    for n in 0..objects {
        let object = json!({"apiVersion": "example.com/v1", "kind": "Patterned",
            "metadata": {"name": format!("p{n}")}, "spec": spec});
        let start = Instant::now();
        let (status, body) = send(
            client,
            "POST",
            &resources,
            "application/json",
            object.to_string(),
        )
        .await;
        times.push(start.elapsed());
        assert_eq!(status, 201, "custom resource create: {}", short(&body));
    }
    let mut bad = spec.clone();
    bad.insert("f7".to_owned(), json!("NOPE"));
    let (status, _) = send(
        client,
        "POST",
        &resources,
        "application/json",
        json!({"apiVersion": "example.com/v1", "kind": "Patterned",
            "metadata": {"name": "bad"}, "spec": bad})
        .to_string(),
    )
    .await;
    let (after, peak) = rss();
    println!(
        "{objects} creates: {}; RSS {after_crd:.1} -> {after:.1} MiB (peak {peak:.1}); a value against its pattern: {status}",
        summary(&mut times)
    );
}

fn summary(times: &mut [Duration]) -> String {
    times.sort();
    let total: Duration = times.iter().sum();
    let at = |q: f64| {
        let index = ((times.len() as f64 - 1.0) * q).round() as usize;
        times.get(index).copied().unwrap_or_default()
    };
    format!(
        "mean {:.2?}, p50 {:.2?}, max {:.2?}",
        total / u32::try_from(times.len().max(1)).unwrap_or(1),
        at(0.5),
        times.last().copied().unwrap_or_default()
    )
}

fn env(entries: usize, value: impl Fn(usize) -> String) -> Vec<Value> {
    (0..entries)
        .map(|i| json!({"name": format!("E{i}"), "value": value(i)}))
        .collect()
}

fn pod(env: Vec<Value>) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big-env"},
        "spec": {"containers": [{"name": "main", "image": "busybox", "env": env}]}})
}

async fn step(client: &HttpClient, label: &str, method: &str, url: &str, ct: &str, body: Value) {
    let body = body.to_string();
    let size = body.len();
    reset_peak();
    let start = Instant::now();
    let (status, reply) = send(client, method, url, ct, body).await;
    let took = start.elapsed();
    let (now, peak) = rss();
    let managed = serde_json::from_str::<Value>(&reply)
        .ok()
        .map(|v| v["metadata"]["managedFields"].to_string().len())
        .unwrap_or(0);
    println!(
        "{label:<34} body {:>7.2} MiB  {status}  {took:>9.2?}  RSS {now:>7.1} MiB (peak {peak:>7.1})  managedFields {managed} B{}",
        size as f64 / (1 << 20) as f64,
        if status >= 300 {
            format!("  {}", short(&reply))
        } else {
            String::new()
        }
    );
}

async fn apply(client: &HttpClient, url: &str, entries: usize) {
    let pod_url = format!("{url}/api/v1/namespaces/default/pods/big-env");
    let apply = |manager: &str, force: bool| {
        format!(
            "{pod_url}?fieldManager={manager}{}",
            if force { "&force=true" } else { "" }
        )
    };
    let yaml = "application/apply-patch+yaml";
    println!("{entries} env entries");
    step(
        client,
        "apply (create)",
        "PATCH",
        &apply("alice", false),
        yaml,
        pod(env(entries, |i| (i % 10).to_string())),
    )
    .await;
    step(
        client,
        "re-apply, every 10th value changed",
        "PATCH",
        &apply("alice", false),
        yaml,
        pod(env(entries, |i| {
            if i % 10 == 0 {
                "w".to_owned()
            } else {
                (i % 10).to_string()
            }
        })),
    )
    .await;
    let tenth: Vec<Value> = (0..entries)
        .step_by(10)
        .map(|i| json!({"name": format!("E{i}"), "value": "b"}))
        .collect();
    step(
        client,
        "second manager takes a tenth",
        "PATCH",
        &apply("bob", true),
        yaml,
        pod(tenth),
    )
    .await;
    let half: Vec<Value> = (0..entries)
        .step_by(2)
        .map(|i| json!({"name": format!("E{i}"), "value": "s"}))
        .collect();
    step(
        client,
        "strategic merge of half",
        "PATCH",
        &format!("{pod_url}?fieldManager=carol"),
        "application/strategic-merge-patch+json",
        json!({"spec": {"containers": [{"name": "main", "env": half}]}}),
    )
    .await;
}

async fn yaml_bomb(client: &HttpClient, url: &str, concurrent: usize) {
    let mut bomb = String::from(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: laughs}\nx:\n  a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n",
    );
    let names = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];
    for pair in names.windows(2) {
        let refs = vec![format!("*{}", pair[0]); 9].join(",");
        bomb.push_str(&format!("  {}: &{} [{refs}]\n", pair[1], pair[1]));
    }
    println!("bomb: {} bytes, {concurrent} at once", bomb.len());
    let (before, _) = rss();
    reset_peak();
    let start = Instant::now();
    let mut all = tokio::task::JoinSet::new();
    for _ in 0..concurrent {
        let (client, url, bomb) = (client.clone(), url.to_owned(), bomb.clone());
        all.spawn(async move {
            send(
                &client,
                "POST",
                &format!("{url}/api/v1/namespaces/default/configmaps"),
                "application/yaml",
                bomb,
            )
            .await
        });
    }
    let mut replies = Vec::new();
    while let Some(Ok(reply)) = all.join_next().await {
        replies.push(reply);
    }
    let took = start.elapsed();
    let (after, peak) = rss();
    let (status, body) = replies.first().cloned().unwrap_or_default();
    println!(
        "{} replies in {took:.2?}; first: {status} {}; RSS {before:.1} -> {after:.1} MiB, peak {peak:.1} MiB (+{:.1})",
        replies.len(),
        short(&body),
        peak - before
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let scenario = args.next().unwrap_or_default();
    let numbers: Vec<usize> = args.filter_map(|a| a.parse().ok()).collect();
    let server = ApiServer::start().await?;
    let client: HttpClient = http_client();
    let url = server.url().to_owned();
    // Warm up: one request, so the baseline RSS includes the server's own start.
    let _ = send(
        &client,
        "GET",
        &format!("{url}/api/v1/namespaces"),
        "",
        String::new(),
    )
    .await;
    match scenario.as_str() {
        "patterns" => {
            patterns(
                &client,
                &url,
                numbers.first().copied().unwrap_or(300),
                numbers.get(1).copied().unwrap_or(100),
            )
            .await;
        }
        "apply" => apply(&client, &url, numbers.first().copied().unwrap_or(10_000)).await,
        "yaml-bomb" => yaml_bomb(&client, &url, numbers.first().copied().unwrap_or(1)).await,
        other => eprintln!("unknown scenario {other:?}: patterns | apply | yaml-bomb"),
    }
    server.shutdown().await;
    Ok(())
}
