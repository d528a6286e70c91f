//! Metrics end to end: a client, a factory, a controller and a leader elector report to
//! one registry; `/metrics` is fetched over HTTP and its exposition text parsed and
//! checked; `/healthz` and `/readyz` answer as documented.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kubeclient::controller::{Action, Controller, retry_with_backoff};
use kubeclient::informers::SharedInformerFactory;
use kubeclient::leaderelection::{LeaderCallbacks, LeaderElectionConfig, LeaderElector, LeaseLock};
use kubeclient::metrics::{Metrics, MetricsServer};
use kubeclient::{Api, CancellationToken, Client, PostParams};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{config_of, start, until};

/// `GET path` on the metrics server: (status code, body).
pub(crate) async fn get(server: &MetricsServer, path: &str) -> (u16, String) {
    get_at(server.local_addr(), path).await
}

/// `GET path` on a metrics server at `address`: (status code, body).
pub(crate) async fn get_at(address: std::net::SocketAddr, path: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("connects");
    stream
        .write_all(format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").as_bytes())
        .await
        .expect("sent");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("read");
    let code = response
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("a status line");
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (code, body)
}

/// `name{labels}` -> value, from exposition text.
fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            Some((series.to_owned(), value.parse().ok()?))
        })
        .collect()
}

fn sample(samples: &BTreeMap<String, f64>, name: &str, label_parts: &[&str]) -> f64 {
    samples
        .iter()
        .filter(|(series, _)| {
            series.split('{').next() == Some(name) && label_parts.iter().all(|p| series.contains(p))
        })
        .map(|(_, value)| *value)
        .sum()
}

#[tokio::test]
async fn metrics_text_reports_client_queue_informer_and_leader_with_client_go_names() {
    let fx = start().await;
    let metrics = Arc::new(Metrics::new());
    let mut config = config_of(&fx.server);
    config.metrics = Some(metrics.clone());
    let client = Client::new(config).await.expect("a client");

    let ready = Arc::new(AtomicBool::new(false));
    let flag = ready.clone();
    let server = MetricsServer::start("127.0.0.1:0".parse().unwrap(), metrics.clone(), move || {
        flag.load(Ordering::SeqCst)
    })
    .await
    .expect("listens");
    assert_eq!(get(&server, "/healthz").await, (200, "ok".to_owned()));
    assert_eq!(
        get(&server, "/readyz").await.0,
        503,
        "not ready before the caches sync"
    );
    assert_eq!(get(&server, "/nope").await.0, 404);

    let factory = SharedInformerFactory::new(client.clone()).metrics_provider(metrics.clone());
    let controller = Controller::<ConfigMap>::builder("configmaps", &factory)
        .metrics_provider(metrics.clone())
        .build()
        .expect("built");
    factory.start();
    assert!(factory.wait_for_cache_sync().await);
    ready.store(true, Ordering::SeqCst);
    assert_eq!(get(&server, "/readyz").await, (200, "ok".to_owned()));

    let attempts = Arc::new(AtomicUsize::new(0));
    let counter = attempts.clone();
    let stop = CancellationToken::new();
    let run = tokio::spawn(controller.run(
        move |_request, _ctx: Arc<()>| {
            let attempt = counter.fetch_add(1, Ordering::SeqCst);
            async move {
                if attempt == 0 {
                    Err(std::io::Error::other("first attempt fails"))
                } else {
                    Ok(Action::done())
                }
            }
        },
        retry_with_backoff,
        Arc::new(()),
        stop.clone(),
    ));
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "counted"}})).expect("a ConfigMap");
    Api::<ConfigMap>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &cm)
        .await
        .expect("created");
    until("the failed key was retried", || {
        attempts.load(Ordering::SeqCst) >= 2
    })
    .await;

    let lock = LeaseLock::new(client.clone(), "default", "metrics-test", "me");
    let elector_config = LeaderElectionConfig::default()
        .lease_duration(Duration::from_secs(2))
        .renew_deadline(Duration::from_secs(1))
        .retry_period(Duration::from_millis(100))
        .master_status_metric(metrics.leader_election_master_status("metrics-test"));
    let leading = Arc::new(AtomicBool::new(false));
    let flag = leading.clone();
    let elector = LeaderElector::new(
        lock,
        elector_config,
        LeaderCallbacks::new().on_started_leading(move |lost| {
            let flag = flag.clone();
            async move {
                flag.store(true, Ordering::SeqCst);
                lost.cancelled().await;
            }
        }),
    )
    .expect("valid");
    let elector_stop = CancellationToken::new();
    let election = tokio::spawn({
        let stop = elector_stop.clone();
        async move { elector.run(stop).await }
    });
    until("leading", || leading.load(Ordering::SeqCst)).await;

    let (code, text) = get(&server, "/metrics").await;
    assert_eq!(code, 200);
    let s = samples(&text);
    let host = format!("host=\"{}\"", fx.server.address());
    assert!(
        sample(
            &s,
            "rest_client_requests_total",
            &["code=\"201\"", "method=\"POST\"", &host]
        ) >= 2.0,
        "{text}"
    );
    assert!(
        sample(
            &s,
            "rest_client_request_duration_seconds_count",
            &["verb=\"GET\"", &host]
        ) >= 1.0
    );
    assert!(
        sample(
            &s,
            "rest_client_rate_limiter_duration_seconds_count",
            &[&host]
        ) >= 1.0
    );
    let queue = "name=\"configmaps\"";
    assert!(
        sample(&s, "workqueue_adds_total", &[queue]) >= 2.0,
        "the add and the retry: {text}"
    );
    assert!(sample(&s, "workqueue_retries_total", &[queue]) >= 1.0);
    assert!(sample(&s, "workqueue_queue_duration_seconds_count", &[queue]) >= 2.0);
    assert!(sample(&s, "workqueue_work_duration_seconds_count", &[queue]) >= 2.0);
    assert_eq!(sample(&s, "workqueue_depth", &[queue]), 0.0);
    for family in [
        "workqueue_unfinished_work_seconds",
        "workqueue_longest_running_processor_seconds",
    ] {
        assert!(
            s.keys().any(|k| k.starts_with(family)),
            "{family} is exported"
        );
    }
    let informer = "name=\"v1, Resource=configmaps\"";
    assert!(
        sample(&s, "reflector_lists_total", &[informer])
            + sample(&s, "reflector_watches_total", &[informer])
            >= 1.0,
        "{text}"
    );
    assert!(
        sample(&s, "reflector_last_resource_version", &[informer]) > 0.0,
        "{text}"
    );
    assert_eq!(
        sample(
            &s,
            "leader_election_master_status",
            &["name=\"metrics-test\""]
        ),
        1.0
    );

    elector_stop.cancel();
    election.await.expect("stopped");
    let s = samples(&get(&server, "/metrics").await.1);
    assert_eq!(
        sample(
            &s,
            "leader_election_master_status",
            &["name=\"metrics-test\""]
        ),
        0.0
    );
    stop.cancel();
    run.await.expect("stopped").expect("the caches synced");
    factory.shutdown().await;
    server.shutdown().await;
}
