//! The seeds' controller, typed: an `Installation` custom resource (replicas, image,
//! service port) wants a Service. Two replicas of the controller run, each a
//! [`Manager`]; leader election on a Lease picks one to reconcile; the leader gives every
//! Installation a Service with an owner reference, writes its status, records an event for
//! each outcome and cleans up through a finalizer. Each replica serves `/metrics`,
//! `/healthz` and `/readyz`. A third manager serves the Installation's webhooks
//! (`webhooks.rs`): defaulting, validation, and the conversion between the stored v1 and
//! the older v1alpha1.
//!
//! `cargo run -p sample-controller` starts the embedded API server (or uses `KUBECONFIG`),
//! drives a workload (creates, spec changes, deletes, a leader handover, writes the
//! webhooks default, refuse and convert), prints progress and a final check, and exits 0
//! when every Installation has the right Service, status and finalizer and each webhook
//! did its part.

mod installation;
mod reconcile;
mod webhooks;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Event, Service};
use kubeclient::config::{Kubeconfig, KubeconfigOptions};
use kubeclient::controller::retry_with_backoff;
use kubeclient::customresource::CustomResourceExt;
use kubeclient::leaderelection::LeaderElectionConfig;
use kubeclient::machinery::{ErrorChain, Object};
use kubeclient::manager::{Manager, ManagerError, Runnable};
use kubeclient::record::{EventBroadcaster, EventSource};
use kubeclient::{
    Api, CancellationToken, Client, Config, DeleteParams, ListParams, Patch, PatchParams,
    PostParams,
};
use kubeclient_apiserver::ApiServer;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinHandle;

use installation::{Installation, InstallationSpec, v1alpha1};
use reconcile::{Context, FINALIZER, reconcile, service_port};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const NAMESPACE: &str = "default";
const LEASE: &str = "sample-controller";
/// How long the workload waits for the controller to converge after each step.
const CONVERGE_WITHIN: Duration = Duration::from_secs(60);

/// One running copy of the controller: a manager with the Installation controller.
struct Replica {
    id: String,
    stop: CancellationToken,
    manager: JoinHandle<Result<(), ManagerError>>,
    leading: Arc<AtomicBool>,
    broadcaster: Arc<EventBroadcaster>,
    probes: SocketAddr,
}

impl Replica {
    async fn start(id: &str, base: &Config) -> Result<Replica, BoxError> {
        let mut config = base.clone();
        config.user_agent = Some(format!("sample-controller/{id}"));
        // Caches run on every replica, so a new leader starts warm; only the leader
        // reconciles. /healthz fails when this replica believes it leads but stopped
        // renewing; /readyz passes once the caches synced.
        let manager = Manager::builder(config)
            .leader_election(NAMESPACE, LEASE)
            .leader_election_identity(id)
            .leader_election_config(
                LeaderElectionConfig::default()
                    .lease_duration(Duration::from_secs(4))
                    .renew_deadline(Duration::from_secs(3))
                    .retry_period(Duration::from_millis(500))
                    .release_on_cancel(true),
            )
            .probe_address("127.0.0.1:0".parse()?)
            .build()
            .await?;
        let broadcaster = Arc::new(EventBroadcaster::new());
        broadcaster.start_recording_to_sink(manager.client().clone());
        let ctx = Arc::new(Context {
            client: manager.client().clone(),
            recorder: broadcaster.new_recorder(EventSource {
                component: "sample-controller".to_owned(),
                host: id.to_owned(),
            }),
        });
        let controller = manager
            .controller::<Installation>("installations")
            .owns::<Service>()
            .workers(2)
            .build()?;
        manager.add(controller.into_runnable(reconcile, retry_with_backoff, ctx));
        let leading = Arc::new(AtomicBool::new(false));
        let (who, flag) = (id.to_owned(), leading.clone());
        manager.add(Runnable::new("leader-announcer", move |lost| async move {
            flag.store(true, Ordering::SeqCst);
            println!("  [{who}] became the leader; the controller runs");
            lost.cancelled().await;
            flag.store(false, Ordering::SeqCst);
            println!("  [{who}] stopped leading");
            Ok::<_, std::convert::Infallible>(())
        }));
        let probes = manager
            .probe_address()
            .ok_or("the manager serves no probes")?;
        let stop = CancellationToken::new();
        let manager = tokio::spawn(manager.start(stop.clone()));
        Ok(Replica {
            id: id.to_owned(),
            stop,
            manager,
            leading,
            broadcaster,
            probes,
        })
    }

    async fn stop(self) {
        self.stop.cancel();
        match self.manager.await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => eprintln!("  [{}] {}", self.id, ErrorChain(&err)),
            Err(err) => eprintln!("  [{}] the manager task failed: {err}", self.id),
        }
        self.broadcaster.shutdown().await;
    }
}

/// `GET /metrics` of a replica, as text.
async fn scrape(replica: &Replica) -> Result<String, BoxError> {
    let mut stream = tokio::net::TcpStream::connect(replica.probes).await?;
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    Ok(response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default())
}

/// What is wrong with the cluster compared with `expected` (Installation name -> port).
async fn problems(
    client: &Client,
    expected: &BTreeMap<String, i32>,
) -> Result<Vec<String>, BoxError> {
    let installations = Api::<Installation>::namespaced(client.clone(), NAMESPACE)
        .list(&ListParams::default())
        .await?;
    let services = Api::<Service>::namespaced(client.clone(), NAMESPACE)
        .list(&ListParams::default())
        .await?;
    let services: BTreeMap<&str, &Service> = services.items.iter().map(|s| (s.name(), s)).collect();
    let mut problems = Vec::new();
    let found: Vec<&str> = installations.items.iter().map(Object::name).collect();
    for name in expected.keys() {
        if !found.contains(&name.as_str()) {
            problems.push(format!("{name}: Installation missing"));
        }
    }
    for installation in &installations.items {
        let name = installation.name();
        let Some(port) = expected.get(name) else {
            problems.push(format!("{name}: should have been deleted"));
            continue;
        };
        match services.get(name) {
            None => problems.push(format!("{name}: no Service")),
            Some(service) => {
                if service.controller_of().map(|o| o.uid.as_str()) != Some(installation.uid()) {
                    problems.push(format!("{name}: Service not owned by the Installation"));
                }
                if service_port(service) != Some(*port) {
                    problems.push(format!(
                        "{name}: Service port {:?}, want {port}",
                        service_port(service)
                    ));
                }
            }
        }
        if installation.spec.image.is_empty() {
            problems.push(format!(
                "{name}: no image (the defaulting webhook sets one)"
            ));
        }
        if !installation
            .finalizers()
            .iter()
            .any(|f| f.as_str() == FINALIZER)
        {
            problems.push(format!("{name}: no {FINALIZER} finalizer"));
        }
        let status = installation.status.clone().unwrap_or_default();
        if status.observed_generation != Some(installation.generation()) {
            problems.push(format!(
                "{name}: status.observedGeneration {:?}, generation {}",
                status.observed_generation,
                installation.generation()
            ));
        }
        if !status
            .conditions
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True")
        {
            problems.push(format!("{name}: not Ready"));
        }
    }
    for name in services.keys() {
        if !expected.contains_key(*name) && *name != "kubernetes" {
            problems.push(format!("{name}: Service of a deleted Installation"));
        }
    }
    Ok(problems)
}

/// Waits until the cluster matches `expected`; the problems left otherwise.
async fn converge(
    client: &Client,
    expected: &BTreeMap<String, i32>,
    step: &str,
) -> Result<Vec<String>, BoxError> {
    let started = Instant::now();
    loop {
        let left = problems(client, expected).await?;
        if left.is_empty() {
            println!(
                "  converged after {step} in {:.2} s",
                started.elapsed().as_secs_f64()
            );
            return Ok(left);
        }
        if started.elapsed() > CONVERGE_WITHIN {
            return Ok(left);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What the webhook step saw: what worked, and what did not.
#[derive(Default)]
struct WebhookChecks {
    passed: Vec<String>,
    failed: Vec<String>,
}

impl WebhookChecks {
    fn check(&mut self, ok: bool, passed: String, failed: String) {
        if ok {
            self.passed.push(passed);
        } else {
            self.failed.push(failed);
        }
    }
}

/// Writes that each webhook and CEL rule acts on: an Installation without an image
/// (defaulted), two out of range (refused by the validating webhook), a `:latest` image
/// and an image change (refused by the CRD's rule and transition rule), one written and
/// read through v1alpha1 (converted both ways).
async fn exercise_webhooks(
    client: &Client,
    expected: &mut BTreeMap<String, i32>,
) -> Result<WebhookChecks, BoxError> {
    let mut checks = WebhookChecks::default();
    let api: Api<Installation> = Api::namespaced(client.clone(), NAMESPACE);
    let mut bare = spec(1, 9200);
    bare.image.clear();
    let created = api
        .create(&PostParams::default(), &Installation::new("bare", bare))
        .await?;
    expected.insert("bare".to_owned(), 9200);
    checks.check(
        created.spec.image == webhooks::DEFAULT_IMAGE,
        format!(
            "defaulting: an Installation created without an image got {:?}",
            created.spec.image
        ),
        format!(
            "bare: image {:?} after create, want {:?} from the defaulting webhook",
            created.spec.image,
            webhooks::DEFAULT_IMAGE
        ),
    );

    let denied = format!(
        "admission webhook {:?} denied the request",
        webhooks::VALIDATING_WEBHOOK
    );
    let too_big = api
        .create(
            &PostParams::default(),
            &Installation::new("huge", spec(webhooks::MAX_REPLICAS + 40, 9300)),
        )
        .await;
    let bad_patch = api
        .patch(
            "shop",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"servicePort": 70000}})),
        )
        .await;
    for (what, outcome) in [
        ("a create of 50 replicas", too_big.map(|_| ())),
        ("a patch to port 70000", bad_patch.map(|_| ())),
    ] {
        let message = match &outcome {
            Err(kubeclient::Error::Api(err)) => err.status.message.clone(),
            Err(other) => other.to_string(),
            Ok(()) => "accepted".to_owned(),
        };
        checks.check(
            message.starts_with(&denied),
            format!("validation: {what} was refused: {message}"),
            format!("validation: {what}: {message}, want a refusal by the validating webhook"),
        );
    }

    let unpinned = api
        .create(&PostParams::default(), &{
            let mut latest = spec(1, 9500);
            latest.image = "nginx:latest".to_owned();
            Installation::new("unpinned", latest)
        })
        .await;
    let image_change = api
        .patch(
            "blog",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"image": "nginx:1.28"}})),
        )
        .await;
    for (what, outcome, rule) in [
        (
            "a :latest image",
            unpinned.map(|_| ()),
            "a :latest tag is not allowed",
        ),
        (
            "an image change",
            image_change.map(|_| ()),
            "the image is immutable",
        ),
    ] {
        let message = match &outcome {
            Err(kubeclient::Error::Api(err)) if err.code() == 422 => err.status.message.clone(),
            Err(other) => other.to_string(),
            Ok(()) => "accepted".to_owned(),
        };
        checks.check(
            message.contains("spec.image: Invalid value") && message.contains(rule),
            format!("CEL rules: {what} was refused: {message}"),
            format!("CEL rules: {what}: {message}, want a 422 from the CRD's rule"),
        );
    }

    let legacy: Api<v1alpha1::Installation> = Api::namespaced(client.clone(), NAMESPACE);
    let old_spec = v1alpha1::InstallationSpec {
        size: 2,
        image: String::new(),
        port: 9400,
    };
    legacy
        .create(
            &PostParams::default(),
            &v1alpha1::Installation::new("legacy", old_spec),
        )
        .await?;
    expected.insert("legacy".to_owned(), 9400);
    let as_v1 = api.get("legacy").await?;
    let shop_as_v1alpha1 = legacy.get("shop").await?;
    let shop_port = expected.get("shop").copied().unwrap_or_default();
    checks.check(
        as_v1.spec.replicas == 2
            && as_v1.spec.service_port == 9400
            && as_v1.spec.image == webhooks::DEFAULT_IMAGE
            && shop_as_v1alpha1.spec.port == shop_port,
        format!(
            "conversion: written as v1alpha1 {{size: 2, port: 9400}}, read as v1 {{replicas: {}, servicePort: {}, image: {:?}}}; shop read as v1alpha1 has port {}",
            as_v1.spec.replicas,
            as_v1.spec.service_port,
            as_v1.spec.image,
            shop_as_v1alpha1.spec.port
        ),
        format!(
            "conversion: legacy read as v1 is {:?}, shop read as v1alpha1 is {:?}",
            as_v1.spec, shop_as_v1alpha1.spec
        ),
    );
    Ok(checks)
}

fn spec(replicas: i32, port: i32) -> InstallationSpec {
    InstallationSpec {
        replicas,
        image: "nginx:1.27".to_owned(),
        service_port: port,
    }
}

async fn run(config: Config) -> Result<bool, BoxError> {
    let client = Client::new(config.clone()).await?;
    println!("starting the webhook server (defaulting, validation, v1alpha1 <-> v1 conversion)");
    let webhook_manager = Manager::builder(config.clone())
        .webhook_server(webhooks::server())
        .build()
        .await?;
    let webhook_server = webhook_manager
        .webhook_server()
        .ok_or("the manager has no webhook server")?;
    println!(
        "installing the Installation CRD ({}, v1 and v1alpha1) and the webhook configurations for https://{}",
        Installation::crd_name(),
        webhook_server.local_addr()
    );
    webhooks::register(&client, webhook_server).await?;
    let webhooks_stop = CancellationToken::new();
    let webhooks_task = tokio::spawn(webhook_manager.start(webhooks_stop.clone()));

    println!("starting two controller replicas");
    let mut replicas = vec![
        Replica::start("replica-a", &config).await?,
        Replica::start("replica-b", &config).await?,
    ];
    let api: Api<Installation> = Api::namespaced(client.clone(), NAMESPACE);
    let mut expected = BTreeMap::new();

    println!("step 1: create six Installations");
    for (i, name) in ["shop", "blog", "wiki", "chat", "docs", "mail"]
        .iter()
        .enumerate()
    {
        let port = 8080 + i32::try_from(i)?;
        api.create(
            &PostParams::default(),
            &Installation::new(name, spec(1, port)),
        )
        .await?;
        expected.insert((*name).to_owned(), port);
    }
    let mut left = converge(&client, &expected, "the creates").await?;

    println!("step 2: change the spec of three (new ports, more replicas)");
    for name in ["shop", "blog", "wiki"] {
        let port = expected.get(name).copied().unwrap_or(0) + 1000;
        api.patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"servicePort": port, "replicas": 3}})),
        )
        .await?;
        expected.insert(name.to_owned(), port);
    }
    left.extend(converge(&client, &expected, "the spec changes").await?);

    println!("step 3: delete two (their Services go through the finalizer)");
    for name in ["chat", "mail"] {
        api.delete(name, &DeleteParams::default()).await?;
        expected.remove(name);
    }
    left.extend(converge(&client, &expected, "the deletes").await?);

    println!("step 4: leader handover (the leader stops and releases its Lease)");
    let leader = replicas
        .iter()
        .position(|r| r.leading.load(Ordering::SeqCst));
    if let Some(index) = leader {
        let old = replicas.remove(index);
        let old_id = old.id.clone();
        let handover = Instant::now();
        old.stop().await;
        while !replicas.iter().any(|r| r.leading.load(Ordering::SeqCst))
            && handover.elapsed() < CONVERGE_WITHIN
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        println!(
            "  {old_id} stopped; new leader after {:.2} s",
            handover.elapsed().as_secs_f64()
        );
    } else {
        left.push("no replica was leading".to_owned());
    }

    println!("step 5: more changes under the new leader");
    api.create(
        &PostParams::default(),
        &Installation::new("news", spec(2, 9000)),
    )
    .await?;
    expected.insert("news".to_owned(), 9000);
    api.patch(
        "docs",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"servicePort": 9100}})),
    )
    .await?;
    expected.insert("docs".to_owned(), 9100);
    left.extend(converge(&client, &expected, "the changes under the new leader").await?);

    println!("step 6: the webhooks default, refuse and convert; the CRD's CEL rules refuse");
    let webhook_checks = exercise_webhooks(&client, &mut expected).await?;
    left.extend(converge(&client, &expected, "the webhook step").await?);

    println!("final check:");
    println!("  NAME     PORT GENERATION OBSERVED  READY");
    for installation in api.list(&ListParams::default()).await?.items {
        let status = installation.status.clone().unwrap_or_default();
        let ready = status
            .conditions
            .iter()
            .find(|c| c.type_ == "Ready")
            .map_or("-", |c| c.status.as_str());
        println!(
            "  {:<6} {:>6} {:>10} {:>8}  {ready}",
            installation.name(),
            installation.spec.service_port,
            installation.generation(),
            status
                .observed_generation
                .map_or_else(|| "-".to_owned(), |g| g.to_string())
        );
    }
    let final_problems = problems(&client, &expected).await?;
    let events = Api::<Event>::namespaced(client.clone(), NAMESPACE)
        .list(&ListParams::default())
        .await?;
    let mut by_reason: BTreeMap<String, i32> = BTreeMap::new();
    for event in &events.items {
        *by_reason
            .entry(event.reason.clone().unwrap_or_default())
            .or_default() += event.count.unwrap_or(1);
    }
    println!("  events by reason: {by_reason:?}");
    if let Some(leader) = replicas.iter().find(|r| r.leading.load(Ordering::SeqCst)) {
        let text = scrape(leader).await?;
        for line in text.lines().filter(|l| {
            l.starts_with("workqueue_adds_total")
                || l.starts_with("workqueue_retries_total")
                || l.starts_with("leader_election_master_status")
        }) {
            println!("  {} /metrics: {line}", leader.id);
        }
    }
    for line in &webhook_checks.passed {
        println!("  {line}");
    }
    let with_finalizer = api
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .filter(|i| i.finalizers().iter().any(|f| f.as_str() == FINALIZER))
        .count();
    println!(
        "  finalizer: {with_finalizer} of {} Installations hold {FINALIZER}; the deleted ones' Services are gone",
        expected.len()
    );
    for replica in replicas {
        replica.stop().await;
    }
    webhooks_stop.cancel();
    match webhooks_task.await {
        Ok(Ok(())) => {}
        Ok(Err(err)) => eprintln!("  [webhooks] {}", ErrorChain(&err)),
        Err(err) => eprintln!("  [webhooks] the manager task failed: {err}"),
    }
    let mut final_problems = final_problems;
    final_problems.extend(webhook_checks.failed);
    if final_problems.is_empty() {
        if !left.is_empty() {
            println!("  (converged late; earlier steps reported: {left:?})");
        }
        println!("converged: every Installation has its Service and an up-to-date status");
        Ok(true)
    } else {
        for problem in &final_problems {
            println!("  problem: {problem}");
        }
        Ok(false)
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let outcome = async {
        let (server, config) = match std::env::var_os("KUBECONFIG") {
            Some(path) => (
                None,
                Config::from_kubeconfig(
                    &Kubeconfig::read_from(path)?,
                    &KubeconfigOptions::default(),
                )?,
            ),
            None => {
                let server = ApiServer::start().await?;
                println!("embedded API server at {}", server.url());
                let config = Config::from_kubeconfig(
                    &Kubeconfig::from_yaml(&server.kubeconfig())?,
                    &KubeconfigOptions::default(),
                )?;
                (Some(server), config)
            }
        };
        let converged = run(config).await;
        if let Some(server) = server {
            server.shutdown().await;
        }
        converged
    }
    .await;
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(err) => {
            eprintln!("error: {err}");
            let mut source = err.source();
            while let Some(cause) = source {
                eprintln!("caused by: {cause}");
                source = cause.source();
            }
            ExitCode::from(2)
        }
    }
}
