//! `kubeclient demo`: the main job. Starts the embedded API server (or uses a kubeconfig),
//! runs shared informers with handlers and work-queue workers, drives a workload with
//! deliberate watch drops and a compaction, and checks that every cache converged to the
//! server's state.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kubeclient::cache::{Lister, ResourceEventHandlerFuncs, SharedIndexInformer, Store};
use kubeclient::config::{Kubeconfig, KubeconfigOptions};
use kubeclient::informers::SharedInformerFactory;
use kubeclient::machinery::{
    ApiResource, DynamicObject, GroupVersionKind, Object, PartialObjectMetadata,
};
use kubeclient::workqueue::{QueueConfig, RateLimitingQueue, default_controller_rate_limiter};
use kubeclient::{Api, Client, Config, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kubeclient_apiserver::ApiServer;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// The most workload writes in flight at once.
const MAX_WRITES_IN_FLIGHT: usize = 256;

/// The label every demo object carries (informers select on it).
const DEMO_LABEL: &str = "app.kubernetes.io/managed-by";
const DEMO_VALUE: &str = "kubeclient-demo";

/// Options of `kubeclient demo`.
#[derive(Debug, clap::Args)]
pub(crate) struct DemoArgs {
    /// Use this cluster instead of the embedded server (also KUBECONFIG). Faults are then
    /// not injected.
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// How long the workload runs, in seconds.
    #[arg(long, default_value_t = 20)]
    duration: u64,
    /// Writes per second. The writes run concurrently (up to 256 in flight) on their own
    /// client whose QPS limit is this rate, so the rate is reached unless the server or
    /// the machine cannot keep up (the summary prints the rate reached).
    #[arg(long, default_value_t = 100)]
    rate: u32,
    /// Namespaces the workload spreads over.
    #[arg(long, default_value_t = 3)]
    namespaces: usize,
    /// Work-queue workers reconciling ConfigMaps.
    #[arg(long, default_value_t = 2)]
    workers: usize,
}

/// Counts of what one handler saw.
#[derive(Default)]
struct Counts {
    adds: AtomicU64,
    updates: AtomicU64,
    deletes: AtomicU64,
}

impl Counts {
    fn total(&self) -> u64 {
        self.adds.load(Ordering::Relaxed)
            + self.updates.load(Ordering::Relaxed)
            + self.deletes.load(Ordering::Relaxed)
    }
}

fn counting_handler<K: Send + Sync + 'static>(counts: Arc<Counts>) -> ResourceEventHandlerFuncs<K> {
    let (a, u, d) = (counts.clone(), counts.clone(), counts);
    ResourceEventHandlerFuncs::new()
        .on_add(move |_, _| {
            a.adds.fetch_add(1, Ordering::Relaxed);
        })
        .on_update(move |_, _| {
            u.updates.fetch_add(1, Ordering::Relaxed);
        })
        .on_delete(move |_| {
            d.deletes.fetch_add(1, Ordering::Relaxed);
        })
}

async fn client_config(
    args: &DemoArgs,
) -> Result<(Option<ApiServer>, Config), Box<dyn std::error::Error>> {
    let explicit = args
        .kubeconfig
        .clone()
        .or_else(|| std::env::var_os("KUBECONFIG").map(PathBuf::from));
    match explicit {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(&path)?;
            Ok((
                None,
                Config::from_kubeconfig(&kubeconfig, &KubeconfigOptions::default())?,
            ))
        }
        None => {
            let server = ApiServer::builder().history_window(100_000).start().await?;
            let kubeconfig = Kubeconfig::from_yaml(&server.kubeconfig())?;
            let config = Config::from_kubeconfig(&kubeconfig, &KubeconfigOptions::default())?;
            Ok((Some(server), config))
        }
    }
}

fn widget_resource() -> ApiResource {
    ApiResource::from_gvk(
        &GroupVersionKind::new("demo.kubeclient.dev", "v1", "Widget"),
        "widgets",
        true,
    )
}

async fn install_widget_crd(client: &Client) -> Result<(), kubeclient::Error> {
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.demo.kubeclient.dev"},
        "spec": {"group": "demo.kubeclient.dev", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    }))
    .map_err(|err| kubeclient::Error::InvalidRequest(err.to_string()))?;
    match Api::<CustomResourceDefinition>::all(client.clone())
        .create(&PostParams::default(), &crd)
        .await
    {
        Ok(_) => Ok(()),
        Err(err) if err.api().is_some_and(|e| e.is_already_exists()) => Ok(()),
        Err(err) => Err(err),
    }
}

/// One randomly chosen write of the workload. Conflicts and not-founds are expected (the
/// workload races itself); anything else counts as an error.
async fn one_write(client: &Client, namespace: &str, serial: u64) -> Result<(), kubeclient::Error> {
    let name = format!("obj-{}", fastrand::u32(0..40));
    let labels = json!({DEMO_LABEL: DEMO_VALUE});
    let patch = PatchParams::apply("kubeclient-demo").force();
    let result = match fastrand::u8(0..10) {
        0..=4 => {
            let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}, "data": {"serial": serial.to_string()}});
            Api::<ConfigMap>::namespaced(client.clone(), namespace)
                .patch(&name, &patch, &Patch::Apply(body))
                .await
                .map(drop)
        }
        5 => Api::<ConfigMap>::namespaced(client.clone(), namespace)
            .delete(&name, &DeleteParams::default())
            .await
            .map(drop),
        6 => {
            let body = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "labels": labels}, "stringData": {}, "data": {"s": "c2VyaWFs"}});
            Api::<Secret>::namespaced(client.clone(), namespace)
                .patch(&name, &patch, &Patch::Apply(body))
                .await
                .map(drop)
        }
        7 => Api::<Secret>::namespaced(client.clone(), namespace)
            .delete(&name, &DeleteParams::default())
            .await
            .map(drop),
        8 => {
            let body = json!({"apiVersion": "demo.kubeclient.dev/v1", "kind": "Widget", "metadata": {"name": name, "labels": labels}, "spec": {"size": serial % 10}});
            Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &widget_resource())
                .patch(&name, &patch, &Patch::Apply(body))
                .await
                .map(drop)
        }
        _ => Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &widget_resource())
            .delete(&name, &DeleteParams::default())
            .await
            .map(drop),
    };
    match result {
        Err(err) if err.is_not_found() || err.api().is_some_and(|e| e.is_conflict()) => Ok(()),
        other => other,
    }
}

/// What the workload did. A write that got an expected conflict or not-found counts as
/// written (the workload races itself).
#[derive(Default)]
struct WriteTally {
    written: AtomicU64,
    failed: AtomicU64,
    panicked: AtomicU64,
}

impl WriteTally {
    fn done(&self) -> u64 {
        self.written.load(Ordering::Relaxed) + self.failed.load(Ordering::Relaxed)
    }

    /// Why the run must fail whatever the caches say: nothing was written (so convergence
    /// proves nothing), or a write task panicked.
    fn failure(&self) -> Option<String> {
        let panicked = self.panicked.load(Ordering::Relaxed);
        if panicked > 0 {
            return Some(format!(
                "{panicked} workload task(s) panicked; the run proves nothing"
            ));
        }
        if self.written.load(Ordering::Relaxed) == 0 {
            return Some(format!(
                "the workload wrote nothing ({} writes failed): convergence of empty caches proves nothing; is the server reachable and writable?",
                self.failed.load(Ordering::Relaxed)
            ));
        }
        None
    }
}

/// Issues writes at `rate` per second until stopped: every 10 ms, the writes due by then
/// are started as tasks (at most [`MAX_WRITES_IN_FLIGHT`] at once), so the rate does not
/// depend on the latency of one write. Waits for the writes in flight before returning.
async fn drive_writes(
    client: Client,
    namespaces: Vec<String>,
    rate: u32,
    tally: Arc<WriteTally>,
    stop: CancellationToken,
) {
    let in_flight = Arc::new(tokio::sync::Semaphore::new(MAX_WRITES_IN_FLIGHT));
    let mut tasks = tokio::task::JoinSet::new();
    let mut tick = tokio::time::interval(Duration::from_millis(10));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let started = Instant::now();
    let mut issued = 0u64;
    let mut reported = 0u64;
    while !stop.is_cancelled() {
        tokio::select! {
            _ = tick.tick() => {}
            () = stop.cancelled() => break,
        }
        let due = (started.elapsed().as_secs_f64() * f64::from(rate)) as u64;
        while issued < due && !stop.is_cancelled() {
            let permit = tokio::select! {
                permit = in_flight.clone().acquire_owned() => permit,
                () = stop.cancelled() => break,
            };
            let Ok(permit) = permit else { break };
            issued += 1;
            let (client, task_tally) = (client.clone(), tally.clone());
            let namespace = namespaces[fastrand::usize(0..namespaces.len())].clone();
            tasks.spawn(async move {
                let _permit = permit;
                match one_write(&client, &namespace, issued).await {
                    Ok(()) => task_tally.written.fetch_add(1, Ordering::Relaxed),
                    Err(err) => {
                        if task_tally.failed.fetch_add(1, Ordering::Relaxed) < 3 {
                            eprintln!("write failed: {err}");
                        }
                        0
                    }
                };
            });
            // Reap finished writes as we go, counting panics.
            while let Some(joined) = tasks.try_join_next() {
                if joined.is_err() {
                    tally.panicked.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        // Far behind (the server cannot keep up): do not build an unbounded backlog.
        if due > issued + u64::from(rate) {
            issued = due.saturating_sub(u64::from(rate));
            reported += 1;
        }
    }
    if reported > 0 {
        tracing::debug!(reported, "the workload fell behind its rate");
    }
    while let Some(joined) = tasks.join_next().await {
        if joined.is_err() {
            tally.panicked.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// `namespace/name -> resourceVersion` of the server's demo objects of one resource.
async fn server_state<K>(api: Api<K>) -> Result<BTreeMap<String, String>, kubeclient::Error>
where
    K: Object + DeserializeOwned + Serialize + Send + 'static,
{
    let list = api
        .list_all(&ListParams::default().labels(&format!("{DEMO_LABEL}={DEMO_VALUE}")))
        .await?;
    Ok(list
        .items
        .iter()
        .map(|o| {
            (
                kubeclient::machinery::meta_namespace_key(o),
                o.resource_version().to_owned(),
            )
        })
        .collect())
}

fn cache_state<K: Object + Send + Sync + 'static>(
    informer: &SharedIndexInformer<K>,
) -> BTreeMap<String, String> {
    informer
        .indexer()
        .list()
        .iter()
        .map(|o| {
            (
                kubeclient::machinery::meta_namespace_key(o.as_ref()),
                o.resource_version().to_owned(),
            )
        })
        .collect()
}

struct Row {
    resource: &'static str,
    server: usize,
    cached: usize,
    counts: Arc<Counts>,
    differences: Vec<String>,
}

fn differences(server: &BTreeMap<String, String>, cache: &BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    for (key, rv) in server {
        match cache.get(key) {
            None => out.push(format!("{key}: missing from the cache")),
            Some(cached) if cached != rv => {
                out.push(format!("{key}: cached at {cached}, server at {rv}"))
            }
            Some(_) => {}
        }
    }
    for key in cache.keys().filter(|k| !server.contains_key(*k)) {
        out.push(format!("{key}: cached but gone from the server"));
    }
    out
}

/// The demo's shared informers and the handlers' counts (in the order of the summary).
struct Informers {
    factory: SharedInformerFactory,
    configmaps: SharedIndexInformer<ConfigMap>,
    secrets: SharedIndexInformer<Secret>,
    widgets: SharedIndexInformer<DynamicObject>,
    configmap_metadata: SharedIndexInformer<PartialObjectMetadata>,
    counts: Vec<Arc<Counts>>,
}

impl Informers {
    /// Informers on the demo's objects (by label), each with a counting handler.
    fn new(client: &Client, selector: &str) -> Result<Self, Box<dyn std::error::Error>> {
        let tweak_selector = selector.to_owned();
        let factory = SharedInformerFactory::new(client.clone())
            .strip_managed_fields(true)
            .resync(Duration::from_secs(10))
            .tweak_list_options(Arc::new(move |list, watch| {
                list.label_selector = Some(tweak_selector.clone());
                watch.label_selector = Some(tweak_selector.clone());
            }));
        let informers = Informers {
            configmaps: factory.informer::<ConfigMap>(),
            secrets: factory.informer::<Secret>(),
            widgets: factory.dynamic_informer(&widget_resource()),
            configmap_metadata: factory.metadata_informer(&ApiResource::of::<ConfigMap>()),
            counts: (0..4).map(|_| Arc::new(Counts::default())).collect(),
            factory,
        };
        let counts = &informers.counts;
        informers
            .configmaps
            .add_event_handler(counting_handler(counts[0].clone()))?;
        informers
            .secrets
            .add_event_handler(counting_handler(counts[1].clone()))?;
        informers
            .widgets
            .add_event_handler(counting_handler(counts[2].clone()))?;
        informers
            .configmap_metadata
            .add_event_handler(counting_handler(counts[3].clone()))?;
        Ok(informers)
    }

    fn events(&self) -> u64 {
        self.counts.iter().map(|c| c.total()).sum()
    }

    fn cached(&self) -> usize {
        self.configmaps.indexer().len()
            + self.secrets.indexer().len()
            + self.widgets.indexer().len()
    }

    /// One summary row per informer: the server's objects against the cache's.
    async fn rows(&self, client: &Client) -> Result<Vec<Row>, kubeclient::Error> {
        let configmaps = server_state(Api::<ConfigMap>::all(client.clone())).await?;
        let widgets_api = Api::<DynamicObject>::all_with(client.clone(), &widget_resource());
        Ok(vec![
            row(
                "configmaps",
                configmaps.clone(),
                cache_state(&self.configmaps),
                &self.counts[0],
            ),
            row(
                "secrets",
                server_state(Api::<Secret>::all(client.clone())).await?,
                cache_state(&self.secrets),
                &self.counts[1],
            ),
            row(
                "widgets (dynamic)",
                server_state(widgets_api).await?,
                cache_state(&self.widgets),
                &self.counts[2],
            ),
            row(
                "configmaps (metadata)",
                configmaps,
                cache_state(&self.configmap_metadata),
                &self.counts[3],
            ),
        ])
    }

    /// Waits until every cache equals the server's state, or 30 s passed; the last rows.
    async fn quiescent_rows(&self, client: &Client) -> Result<Vec<Row>, kubeclient::Error> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let rows = self.rows(client).await?;
            if rows.iter().all(|r| r.differences.is_empty()) || Instant::now() > deadline {
                return Ok(rows);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// A controller: ConfigMap events enqueue keys; workers reconcile by reading the lister.
struct Controller {
    queue: RateLimitingQueue<String>,
    reconciled: Arc<AtomicU64>,
    workers: Vec<tokio::task::JoinHandle<()>>,
}

impl Controller {
    fn start(informers: &Informers, workers: usize) -> Result<Self, Box<dyn std::error::Error>> {
        let queue: RateLimitingQueue<String> = RateLimitingQueue::new(
            default_controller_rate_limiter(),
            QueueConfig::default().name("configmaps"),
        );
        let (q1, q2, q3) = (queue.clone(), queue.clone(), queue.clone());
        informers.configmaps.add_event_handler(
            ResourceEventHandlerFuncs::<ConfigMap>::new()
                .on_add(move |cm, _| q1.add(kubeclient::machinery::meta_namespace_key(cm.as_ref())))
                .on_update(move |_, cm| {
                    q2.add(kubeclient::machinery::meta_namespace_key(cm.as_ref()))
                })
                .on_delete(move |cm| q3.add(cm.key())),
        )?;
        let lister: Lister<ConfigMap> = informers.factory.lister::<ConfigMap>();
        let reconciled = Arc::new(AtomicU64::new(0));
        let workers = (0..workers.max(1))
            .map(|_| {
                let (queue, lister, reconciled) =
                    (queue.clone(), lister.clone(), reconciled.clone());
                tokio::spawn(async move {
                    while let Some(key) = queue.get().await {
                        let (namespace, name) = key.split_once('/').unwrap_or(("", key.as_str()));
                        // Reconcile: read the desired state from the cache (absent = deleted).
                        let _exists = lister.by_namespace(namespace).get(name).is_ok();
                        reconciled.fetch_add(1, Ordering::Relaxed);
                        queue.forget(&key);
                        queue.done(&key);
                    }
                })
            })
            .collect();
        Ok(Controller {
            queue,
            reconciled,
            workers,
        })
    }

    fn reconciled(&self) -> u64 {
        self.reconciled.load(Ordering::Relaxed)
    }

    async fn stop(self) {
        self.queue.shutdown_with_drain().await;
        for worker in self.workers {
            let _ = worker.await;
        }
    }
}

/// Creates the demo's namespaces (existing ones are fine).
async fn create_namespaces(
    client: &Client,
    count: usize,
) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let namespaces: Vec<String> = (0..count.max(1))
        .map(|i| format!("kubeclient-demo-{i}"))
        .collect();
    for namespace in &namespaces {
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": namespace}}))?;
        match Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await
        {
            Err(err) if !err.api().is_some_and(|e| e.is_already_exists()) => return Err(err.into()),
            _ => {}
        }
    }
    Ok(namespaces)
}

/// While the workload runs: the planned faults (embedded server only) and a progress line
/// every half second.
async fn show_progress(
    server: Option<&ApiServer>,
    duration: Duration,
    informers: &Informers,
    controller: &Controller,
    tally: &WriteTally,
) {
    let started = Instant::now();
    let (mut dropped, mut compacted) = (false, false);
    // The line is redrawn in place only where escapes are welcome; else one line each.
    let tty = crate::terminal::stderr_allows_ansi();
    let clear = if tty { "\r\x1b[K" } else { "" };
    let mut last_events = 0u64;
    let mut last_tick = Instant::now();
    while started.elapsed() < duration {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let elapsed = started.elapsed();
        if let Some(server) = server {
            if !dropped && elapsed >= duration / 3 {
                dropped = true;
                server.drop_watches();
                eprintln!("{clear}fault: dropped every watch");
            }
            if !compacted && elapsed >= duration * 2 / 3 {
                compacted = true;
                server.compact();
                server.drop_watches();
                eprintln!(
                    "{clear}fault: compacted history and dropped watches (re-watches get 410 and relist)"
                );
            }
        }
        let events = informers.events();
        let rate = (events - last_events) as f64 / last_tick.elapsed().as_secs_f64();
        (last_events, last_tick) = (events, Instant::now());
        let line = format!(
            "[{:>4.1}s] writes {:>6}  events {:>7} ({:>6.0}/s)  cached {:>5}  queue {:>4}  reconciled {:>6}",
            elapsed.as_secs_f64(),
            tally.done(),
            events,
            rate,
            informers.cached(),
            controller.queue.len(),
            controller.reconciled()
        );
        if tty {
            eprint!("{clear}{line}");
            let _ = std::io::stderr().flush();
        } else {
            eprintln!("{line}");
        }
    }
    if tty {
        eprintln!();
    }
}

/// Prints the table of informers and the line about the workload.
fn print_summary(
    rows: &[Row],
    tally: &WriteTally,
    writing_time: Duration,
    rate: u32,
    reconciled: u64,
    selector: &str,
) {
    println!();
    println!(
        "{:<24} {:>8} {:>8} {:>8} {:>8} {:>8}  status",
        "informer", "server", "cached", "adds", "updates", "deletes"
    );
    for r in rows {
        println!(
            "{:<24} {:>8} {:>8} {:>8} {:>8} {:>8}  {}",
            r.resource,
            r.server,
            r.cached,
            r.counts.adds.load(Ordering::Relaxed),
            r.counts.updates.load(Ordering::Relaxed),
            r.counts.deletes.load(Ordering::Relaxed),
            if r.differences.is_empty() {
                "ok".to_owned()
            } else {
                format!("{} differences", r.differences.len())
            }
        );
    }
    let (written, failed, panicked) = (
        tally.written.load(Ordering::Relaxed),
        tally.failed.load(Ordering::Relaxed),
        tally.panicked.load(Ordering::Relaxed),
    );
    println!(
        "writes {written} (failed {failed}, panicked {panicked}) in {:.1} s: {:.0}/s of {rate}/s asked; reconciles {reconciled}, selector {selector}",
        writing_time.as_secs_f64(),
        written as f64 / writing_time.as_secs_f64().max(1e-3),
    );
}

/// Runs the demo; `Ok(false)` when the caches did not converge.
pub(crate) async fn run(args: DemoArgs) -> Result<bool, Box<dyn std::error::Error>> {
    let (server, config) = client_config(&args).await?;
    let client = Client::new(config.clone()).await?;
    match &server {
        Some(server) => println!(
            "embedded API server at {} (faults will be injected)",
            server.url()
        ),
        None => println!("using the cluster at {}", client.base_url()),
    }
    let namespaces = create_namespaces(&client, args.namespaces).await?;
    install_widget_crd(&client).await?;

    let selector = format!("{DEMO_LABEL}={DEMO_VALUE}");
    let informers = Informers::new(&client, &selector)?;
    let controller = Controller::start(&informers, args.workers)?;
    informers.factory.start();
    let synced_at = Instant::now();
    informers.factory.wait_for_cache_sync().await;
    println!("caches synced in {:?}", synced_at.elapsed());

    // The workload, with progress: its own client, rate-limited at exactly `--rate`.
    let rate = args.rate.max(1);
    let stop_writing = CancellationToken::new();
    let tally = Arc::new(WriteTally::default());
    let mut write_config = config;
    write_config.qps = rate as f32;
    write_config.burst = (rate / 10).clamp(1, MAX_WRITES_IN_FLIGHT as u32);
    let writer = tokio::spawn(drive_writes(
        Client::new(write_config).await?,
        namespaces,
        rate,
        tally.clone(),
        stop_writing.clone(),
    ));
    let started = Instant::now();
    let duration = Duration::from_secs(args.duration.max(1));
    show_progress(server.as_ref(), duration, &informers, &controller, &tally).await;
    stop_writing.cancel();
    let writing_time = started.elapsed();
    if writer.await.is_err() {
        tally.panicked.fetch_add(1, Ordering::Relaxed);
    }

    let rows = informers.quiescent_rows(&client).await?;
    let reconciled = controller.reconciled();
    controller.stop().await;
    informers.factory.shutdown().await;
    print_summary(&rows, &tally, writing_time, rate, reconciled, &selector);
    let outcome = match tally.failure() {
        Some(reason) => Err(reason.into()),
        None => Ok(rows.iter().all(|r| r.differences.is_empty())),
    };
    match &outcome {
        Ok(true) => println!("converged"),
        Ok(false) => {
            for r in &rows {
                for difference in r.differences.iter().take(10) {
                    println!("{}: {difference}", r.resource);
                }
            }
            println!("NOT converged");
        }
        Err(_) => {}
    }
    if let Some(server) = server {
        server.shutdown().await;
    }
    outcome
}

fn row(
    resource: &'static str,
    server: BTreeMap<String, String>,
    cache: BTreeMap<String, String>,
    counts: &Arc<Counts>,
) -> Row {
    Row {
        resource,
        server: server.len(),
        cached: cache.len(),
        counts: counts.clone(),
        differences: differences(&server, &cache),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_that_wrote_nothing_or_had_a_panicking_task_fails_with_the_reason() {
        let tally = WriteTally::default();
        tally.failed.store(5, Ordering::Relaxed);
        assert!(
            tally
                .failure()
                .unwrap()
                .contains("wrote nothing (5 writes failed)")
        );
        tally.written.store(1, Ordering::Relaxed);
        assert_eq!(tally.failure(), None);
        tally.panicked.store(2, Ordering::Relaxed);
        assert!(
            tally
                .failure()
                .unwrap()
                .contains("2 workload task(s) panicked")
        );
    }
}
