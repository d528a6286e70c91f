//! The controller builder on the embedded server: a ConfigMap that owns a Service (create,
//! spec change, a deleted Service re-created, cleanup through a finalizer), backoff on
//! errors, a panicking reconcile, requeue_after, two controllers on one factory, and the
//! drain on shutdown.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kubeclient::controller::{
    Action, Controller, ControllerError, FinalizerError, FinalizerEvent, OwnerReferenceError,
    ReconcileError, ReconcileRequest, contains_finalizer, finalizer, is_controlled_by,
    retry_with_backoff, set_controller_reference,
};
use kubeclient::informers::SharedInformerFactory;
use kubeclient::machinery::Object;
use kubeclient::{Api, CancellationToken, Client, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::support::{start, until};

const FINALIZER: &str = "example.kubeclient.dev/cleanup";

fn config_map(name: &str, port: i32) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "data": {"port": port.to_string()}
    }))
    .expect("a ConfigMap")
}

/// The Service a ConfigMap wants: same name, its `port`, controlled by it.
fn desired_service(cm: &ConfigMap) -> Result<Service, OwnerReferenceError> {
    let port: i32 = cm
        .data
        .as_ref()
        .and_then(|d| d.get("port"))
        .and_then(|p| p.parse().ok())
        .unwrap_or(80);
    let mut service: Service = serde_json::from_value(json!({
        "metadata": {"name": cm.name(), "namespace": "default"},
        "spec": {"ports": [{"port": port}]}
    }))
    .expect("a Service");
    set_controller_reference(cm, &mut service)?;
    Ok(service)
}

fn service_port(svc: &Service) -> Option<i32> {
    svc.spec.as_ref()?.ports.as_ref()?.first().map(|p| p.port)
}

/// Why the Service reconcile failed.
#[derive(Debug)]
enum ServiceError {
    Api(kubeclient::Error),
    Owner(OwnerReferenceError),
}

impl std::fmt::Display for ServiceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("cannot sync the Service")
    }
}

impl std::error::Error for ServiceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServiceError::Api(err) => Some(err),
            ServiceError::Owner(err) => Some(err),
        }
    }
}

/// Owner cleanup through a finalizer (it does not rely on a garbage collector).
async fn reconcile_service(
    request: ReconcileRequest<ConfigMap>,
    client: Arc<Client>,
) -> Result<Action, FinalizerError<ServiceError>> {
    let Some(cm) = request.object else {
        return Ok(Action::done());
    };
    let config_maps: Api<ConfigMap> = Api::namespaced((*client).clone(), &request.namespace);
    let services: Api<Service> = Api::namespaced((*client).clone(), &request.namespace);
    finalizer(&config_maps, FINALIZER, cm, |event| async move {
        match event {
            FinalizerEvent::Cleanup(cm) => {
                match services.delete(cm.name(), &DeleteParams::default()).await {
                    Err(err) if !err.is_not_found() => Err(ServiceError::Api(err)),
                    _ => Ok(Action::done()),
                }
            }
            FinalizerEvent::Apply(cm) => {
                assert!(
                    contains_finalizer(cm.as_ref(), FINALIZER),
                    "applied behind the finalizer"
                );
                let desired = desired_service(&cm).map_err(ServiceError::Owner)?;
                let current = services
                    .get_opt(cm.name())
                    .await
                    .map_err(ServiceError::Api)?;
                match current {
                    None => {
                        services
                            .create(&PostParams::default(), &desired)
                            .await
                            .map_err(ServiceError::Api)?;
                    }
                    Some(mut current) if service_port(&current) != service_port(&desired) => {
                        current.spec = desired.spec;
                        services
                            .replace(cm.name(), &PostParams::default(), &current)
                            .await
                            .map_err(ServiceError::Api)?;
                    }
                    Some(_) => {}
                }
                Ok(Action::done())
            }
        }
    })
    .await
}

#[tokio::test]
async fn a_controller_creates_updates_recreates_and_finalizes_owned_services() {
    let fx = start().await;
    let factory = SharedInformerFactory::new(fx.client.clone());
    let controller = Controller::<ConfigMap>::builder("services", &factory)
        .owns::<Service>()
        .workers(2)
        .build()
        .expect("the informers run");
    // Nobody starts the factory: `run` does.
    let stop = CancellationToken::new();
    let run = tokio::spawn(controller.run(
        reconcile_service,
        retry_with_backoff,
        Arc::new(fx.client.clone()),
        stop.clone(),
    ));
    let config_maps: Api<ConfigMap> = Api::namespaced(fx.client.clone(), "default");
    let services: Api<Service> = Api::namespaced(fx.client.clone(), "default");
    let service_lister = factory.lister::<Service>();
    config_maps
        .create(&PostParams::default(), &config_map("web", 80))
        .await
        .expect("created");

    until("the Service is created with port 80 and an owner", || {
        service_lister
            .by_namespace("default")
            .get("web")
            .is_ok_and(|svc| {
                service_port(&svc) == Some(80)
                    && svc.controller_of().is_some_and(|o| o.name == "web")
            })
    })
    .await;
    let cm = config_maps.get("web").await.expect("exists");
    assert_eq!(
        cm.finalizers(),
        [FINALIZER],
        "the helper added the finalizer once"
    );
    let service = services.get("web").await.expect("exists");
    assert!(
        is_controlled_by(&service, &cm),
        "{:?}",
        service.owner_references()
    );

    config_maps
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"port": "8080"}})),
        )
        .await
        .expect("patched");
    until("the Service follows the new port", || {
        service_lister
            .by_namespace("default")
            .get("web")
            .is_ok_and(|svc| service_port(&svc) == Some(8080))
    })
    .await;

    // Deleting the owned Service enqueues its owner, which re-creates it.
    let old_uid = services.get("web").await.expect("exists").uid().to_owned();
    services
        .delete("web", &DeleteParams::default())
        .await
        .expect("deleted");
    until("the deleted Service is re-created", || {
        service_lister
            .by_namespace("default")
            .get("web")
            .is_ok_and(|svc| svc.uid() != old_uid)
    })
    .await;

    // Deleting the owner: the finalizer holds it until the Service is gone.
    config_maps
        .delete("web", &DeleteParams::default())
        .await
        .expect("deletion started");
    let cm_lister = factory.lister::<ConfigMap>();
    until("the owner and its Service are gone", || {
        cm_lister.by_namespace("default").get("web").is_err()
            && service_lister.by_namespace("default").get("web").is_err()
    })
    .await;
    assert!(services.get_opt("web").await.expect("a GET").is_none());
    assert!(config_maps.get_opt("web").await.expect("a GET").is_none());

    stop.cancel();
    let summary = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("the controller stops (a worker may be stuck)")
        .expect("the controller task ends cleanly")
        .expect("the caches synced");
    assert!(summary.succeeded >= 4, "{summary:?}");
    factory.shutdown().await;
}

/// Reconcile outcomes the tests script per key: how many attempts fail (or panic) first.
#[derive(Default)]
struct Script {
    attempts: Mutex<BTreeMap<String, Vec<usize>>>,
}

impl Script {
    /// Records an attempt with the key's failure count as the queue saw it; returns the
    /// attempt number (1-based).
    fn attempt(&self, key: &str, requeues: usize) -> usize {
        let mut attempts = self.attempts.lock().unwrap();
        let seen = attempts.entry(key.to_owned()).or_default();
        seen.push(requeues);
        seen.len()
    }

    fn of(&self, key: &str) -> Vec<usize> {
        self.attempts
            .lock()
            .unwrap()
            .get(key)
            .cloned()
            .unwrap_or_default()
    }
}

#[tokio::test]
async fn errors_back_off_panics_are_retried_and_success_forgets() {
    let fx = start().await;
    let factory = SharedInformerFactory::new(fx.client.clone());
    let controller = Controller::<ConfigMap>::builder("flaky", &factory)
        .build()
        .expect("the informers run");
    factory.start();
    let script = Arc::new(Script::default());
    let queue = controller.queue().clone();
    let stop = CancellationToken::new();
    let (reconciler_script, reconciler_queue) = (script.clone(), queue.clone());
    let run = tokio::spawn(controller.run(
        move |request: ReconcileRequest<ConfigMap>, _ctx: Arc<()>| {
            let attempt = reconciler_script
                .attempt(&request.key, reconciler_queue.num_requeues(&request.key));
            async move {
                match (request.name.as_str(), attempt) {
                    ("flaky", 1..=3) => Err(std::io::Error::other(format!(
                        "transient failure {attempt}"
                    ))),
                    ("panics", 1) => panic!("reconcile bug on the first attempt"),
                    _ => Ok(Action::done()),
                }
            }
        },
        retry_with_backoff,
        Arc::new(()),
        stop.clone(),
    ));
    let config_maps: Api<ConfigMap> = Api::namespaced(fx.client.clone(), "default");
    for name in ["flaky", "panics", "fine"] {
        config_maps
            .create(&PostParams::default(), &config_map(name, 1))
            .await
            .expect("created");
    }
    until("every key reconciled successfully", || {
        script.of("default/flaky").len() == 4
            && script.of("default/panics").len() == 2
            && !script.of("default/fine").is_empty()
    })
    .await;
    // Each retry came through the rate limiter: the failure count grew by one per attempt.
    assert_eq!(script.of("default/flaky"), [0, 1, 2, 3]);
    assert_eq!(script.of("default/panics"), [0, 1]);
    assert_eq!(script.of("default/fine"), [0]);
    until("success forgets the failures", || {
        queue.num_requeues(&"default/flaky".to_owned()) == 0
            && queue.num_requeues(&"default/panics".to_owned()) == 0
    })
    .await;
    stop.cancel();
    let summary = run
        .await
        .expect("a worker survived the panic and the controller stopped")
        .expect("the caches synced");
    assert_eq!((summary.failed, summary.panicked), (3, 1), "{summary:?}");
    assert!(summary.succeeded >= 3, "{summary:?}");
    factory.shutdown().await;
}

#[tokio::test]
async fn requeue_after_reconciles_again_without_a_change() {
    let fx = start().await;
    let factory = SharedInformerFactory::new(fx.client.clone());
    let controller = Controller::<ConfigMap>::builder("poller", &factory)
        .build()
        .expect("the informers run");
    factory.start();
    let count = Arc::new(AtomicUsize::new(0));
    let stop = CancellationToken::new();
    let counter = count.clone();
    let run = tokio::spawn(controller.run(
        move |_request, _ctx: Arc<()>| {
            counter.fetch_add(1, Ordering::SeqCst);
            async { Ok::<_, std::io::Error>(Action::requeue_after(Duration::from_millis(20))) }
        },
        retry_with_backoff,
        Arc::new(()),
        stop.clone(),
    ));
    Api::<ConfigMap>::namespaced(fx.client.clone(), "default")
        .create(&PostParams::default(), &config_map("poll", 1))
        .await
        .expect("created");
    until("the key is reconciled three times", || {
        count.load(Ordering::SeqCst) >= 3
    })
    .await;
    stop.cancel();
    run.await.expect("stopped").expect("the caches synced");
    factory.shutdown().await;
}

#[tokio::test]
async fn two_controllers_share_one_informer_and_a_late_one_replays_the_cache() {
    let fx = start().await;
    let factory = SharedInformerFactory::new(fx.client.clone());
    let config_maps: Api<ConfigMap> = Api::namespaced(fx.client.clone(), "default");
    config_maps
        .create(&PostParams::default(), &config_map("early", 1))
        .await
        .expect("created");
    let first = Controller::<ConfigMap>::builder("first", &factory)
        .build()
        .expect("built");
    factory.start();
    assert!(factory.wait_for_cache_sync().await);
    // Built after the factory started: its handler gets the cache replayed.
    let second = Controller::<ConfigMap>::builder("second", &factory)
        .owns::<Service>()
        .build()
        .expect("built");
    factory.start();
    let informer = factory.informer::<ConfigMap>();
    assert_eq!(informer.handler_count(), 2, "one shared ConfigMap informer");
    let seen: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let stop = CancellationToken::new();
    let mut runs = Vec::new();
    for controller in [first, second] {
        let seen = seen.clone();
        let name = controller.name().to_owned();
        runs.push(tokio::spawn(controller.run(
            move |request, _ctx: Arc<()>| {
                seen.lock().unwrap().push((name.clone(), request.key));
                async { Ok::<_, std::io::Error>(Action::done()) }
            },
            retry_with_backoff,
            Arc::new(()),
            stop.clone(),
        )));
    }
    config_maps
        .create(&PostParams::default(), &config_map("late", 1))
        .await
        .expect("created");
    until("both controllers reconciled both keys", || {
        let seen = seen.lock().unwrap();
        ["first", "second"].iter().all(|c| {
            ["default/early", "default/late"]
                .iter()
                .all(|k| seen.contains(&((*c).to_owned(), (*k).to_owned())))
        })
    })
    .await;
    stop.cancel();
    for run in runs {
        run.await.expect("stopped").expect("the caches synced");
    }
    // Stopped controllers removed their handlers; the shared informer goes on.
    assert_eq!(informer.handler_count(), 0);
    assert!(!informer.is_stopped());
    factory.shutdown().await;
}

#[tokio::test]
async fn shutdown_waits_for_the_reconcile_in_flight() {
    let fx = start().await;
    let factory = SharedInformerFactory::new(fx.client.clone());
    let controller = Controller::<ConfigMap>::builder("drain", &factory)
        .build()
        .expect("built");
    factory.start();
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let (release_tx, release_rx) = tokio::sync::oneshot::channel::<()>();
    let started_tx = Arc::new(Mutex::new(Some(started_tx)));
    let release_rx = Arc::new(tokio::sync::Mutex::new(Some(release_rx)));
    let finished = Arc::new(AtomicUsize::new(0));
    let stop = CancellationToken::new();
    let done = finished.clone();
    let run = tokio::spawn(controller.run(
        move |_request, _ctx: Arc<()>| {
            let (started_tx, release_rx, done) =
                (started_tx.clone(), release_rx.clone(), done.clone());
            async move {
                if let Some(tx) = started_tx.lock().unwrap().take() {
                    let _ = tx.send(());
                }
                if let Some(rx) = release_rx.lock().await.take() {
                    let _ = rx.await;
                }
                done.fetch_add(1, Ordering::SeqCst);
                Ok::<_, std::io::Error>(Action::done())
            }
        },
        retry_with_backoff,
        Arc::new(()),
        stop.clone(),
    ));
    Api::<ConfigMap>::namespaced(fx.client.clone(), "default")
        .create(&PostParams::default(), &config_map("slow", 1))
        .await
        .expect("created");
    tokio::time::timeout(Duration::from_secs(30), started_rx)
        .await
        .expect("the reconcile starts")
        .expect("sent");
    stop.cancel();
    tokio::task::yield_now().await;
    assert!(
        !run.is_finished(),
        "run returned while a reconcile was in flight"
    );
    release_tx.send(()).expect("the reconcile waits");
    tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("the controller stops once the reconcile returns")
        .expect("ended cleanly")
        .expect("the caches synced");
    assert_eq!(finished.load(Ordering::SeqCst), 1);
    factory.shutdown().await;
}

#[tokio::test]
async fn a_watched_type_enqueues_the_keys_its_mapping_function_returns() {
    use k8s_openapi::api::core::v1::Secret;
    let fx = start().await;
    let factory = SharedInformerFactory::new(fx.client.clone());
    // A Secret labelled `config=<name>` reconciles the ConfigMap of that name.
    let controller = Controller::<ConfigMap>::builder("mapped", &factory)
        .watches::<Secret>(|secret| {
            secret
                .labels()
                .get("config")
                .map(|name| format!("{}/{name}", secret.namespace().unwrap_or_default()))
                .into_iter()
                .collect()
        })
        .build()
        .expect("built");
    factory.start();
    let seen: Arc<Mutex<Vec<(String, bool)>>> = Arc::default();
    let stop = CancellationToken::new();
    let record = seen.clone();
    let run = tokio::spawn(controller.run(
        move |request: ReconcileRequest<ConfigMap>, _ctx: Arc<()>| {
            record
                .lock()
                .unwrap()
                .push((request.key, request.object.is_some()));
            async { Ok::<_, std::io::Error>(Action::done()) }
        },
        retry_with_backoff,
        Arc::new(()),
        stop.clone(),
    ));
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "creds", "namespace": "default", "labels": {"config": "app-settings"}}
    }))
    .expect("a Secret");
    Api::<Secret>::namespaced(fx.client.clone(), "default")
        .create(&PostParams::default(), &secret)
        .await
        .expect("created");
    until("the mapped key is reconciled", || {
        seen.lock()
            .unwrap()
            .contains(&("default/app-settings".to_owned(), false))
    })
    .await;
    stop.cancel();
    run.await.expect("stopped").expect("the caches synced");
    factory.shutdown().await;
}

/// A reconcile error with a cause, to see the chain survive.
#[derive(Debug)]
struct SyncError {
    key: String,
    cause: std::io::Error,
}

impl std::fmt::Display for SyncError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot sync {}", self.key)
    }
}

impl std::error::Error for SyncError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.cause)
    }
}

/// What the error policy of the next test is given.
struct GiveUp {
    after: usize,
}

#[tokio::test]
async fn an_error_policy_gives_up_and_the_outcomes_keep_the_cause_chain() {
    use futures_util::StreamExt;
    use kubeclient::machinery::ErrorChain;

    let fx = start().await;
    let factory = SharedInformerFactory::new(fx.client.clone());
    let controller = Controller::<ConfigMap>::builder("gives-up", &factory)
        .build()
        .expect("built");
    let queue = controller.queue().clone();
    let mut outcomes = controller.outcomes();
    let stop = CancellationToken::new();
    let run = tokio::spawn(controller.run(
        |request: ReconcileRequest<ConfigMap>, _ctx: Arc<GiveUp>| async move {
            Err::<Action, _>(SyncError {
                key: format!("{} (retry {})", request.key, request.retries),
                cause: std::io::Error::other("disk full"),
            })
        },
        |request: &ReconcileRequest<ConfigMap>, _err: &SyncError, ctx: &GiveUp| {
            if request.retries >= ctx.after {
                Action::done()
            } else {
                Action::requeue()
            }
        },
        Arc::new(GiveUp { after: 2 }),
        stop.clone(),
    ));
    Api::<ConfigMap>::namespaced(fx.client.clone(), "default")
        .create(&PostParams::default(), &config_map("broken", 1))
        .await
        .expect("created");
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let outcome = tokio::time::timeout(Duration::from_secs(30), outcomes.next())
            .await
            .expect("an outcome arrives (is a worker stuck?)")
            .expect("the stream lasts while the controller runs");
        assert_eq!(outcome.key, "default/broken");
        assert_eq!(&*outcome.controller, "gives-up");
        let err = outcome.result.expect_err("every reconcile fails");
        assert!(matches!(err, ReconcileError::Failed(_)));
        seen.push((ErrorChain(&err).to_string(), outcome.next));
    }
    assert_eq!(
        seen,
        [
            (
                "reconcile failed: cannot sync default/broken (retry 0): disk full".to_owned(),
                Action::requeue()
            ),
            (
                "reconcile failed: cannot sync default/broken (retry 1): disk full".to_owned(),
                Action::requeue()
            ),
            (
                "reconcile failed: cannot sync default/broken (retry 2): disk full".to_owned(),
                Action::done()
            ),
        ]
    );
    // Given up: the key's failures are forgotten and it is not queued again.
    assert_eq!(queue.num_requeues(&"default/broken".to_owned()), 0);
    stop.cancel();
    let summary = run.await.expect("stopped").expect("the caches synced");
    assert_eq!((summary.succeeded, summary.failed), (0, 3));
    assert!(
        outcomes.next().await.is_none(),
        "the outcome stream ends with the run"
    );
    factory.shutdown().await;
}

#[tokio::test]
async fn run_reports_a_factory_shut_down_before_the_caches_synced() {
    let fx = start().await;
    let factory = SharedInformerFactory::new(fx.client.clone());
    let controller = Controller::<ConfigMap>::builder("orphan", &factory)
        .build()
        .expect("built");
    factory.shutdown().await;
    let outcome = tokio::time::timeout(
        Duration::from_secs(10),
        controller.run(
            |_request, _ctx: Arc<()>| async { Ok::<_, std::io::Error>(Action::done()) },
            retry_with_backoff,
            Arc::new(()),
            CancellationToken::new(),
        ),
    )
    .await
    .expect("run returns instead of waiting forever");
    assert!(
        matches!(outcome, Err(ControllerError::FactoryShutDown)),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn a_labels_predicate_lets_label_changes_through_and_drops_data_changes() {
    use kubeclient::controller::predicate::LabelsChanged;

    let fx = start().await;
    let factory = SharedInformerFactory::new(fx.client.clone());
    let controller = Controller::<ConfigMap>::builder("labels", &factory)
        .predicate(LabelsChanged)
        .build()
        .expect("built");
    // Each reconcile records the `port` of the ConfigMap it saw.
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let record = seen.clone();
    let stop = CancellationToken::new();
    let run = tokio::spawn(controller.run(
        move |request: ReconcileRequest<ConfigMap>, _ctx: Arc<()>| {
            let port = request
                .object
                .and_then(|cm| cm.data.as_ref()?.get("port").cloned())
                .unwrap_or_default();
            record.lock().unwrap().push(port);
            async { Ok::<_, std::io::Error>(Action::done()) }
        },
        retry_with_backoff,
        Arc::new(()),
        stop.clone(),
    ));
    let config_maps: Api<ConfigMap> = Api::namespaced(fx.client.clone(), "default");
    config_maps
        .create(&PostParams::default(), &config_map("filtered", 1))
        .await
        .expect("created");
    until("the create is reconciled", || {
        seen.lock().unwrap().len() == 1
    })
    .await;
    for patch in [
        json!({"data": {"port": "2"}}),
        json!({"metadata": {"labels": {"tier": "web"}}, "data": {"port": "3"}}),
    ] {
        config_maps
            .patch("filtered", &PatchParams::default(), &Patch::Merge(patch))
            .await
            .expect("patched");
    }
    until("the label change is reconciled", || {
        seen.lock().unwrap().last().is_some_and(|p| p == "3")
    })
    .await;
    assert_eq!(
        *seen.lock().unwrap(),
        ["1", "3"],
        "the data-only change was filtered"
    );
    stop.cancel();
    run.await.expect("stopped").expect("the caches synced");
    factory.shutdown().await;
}

/// An external system the next test's reconcile keeps in line with its ConfigMaps.
struct External {
    client: Client,
    items: Mutex<std::collections::BTreeSet<String>>,
    down: std::sync::atomic::AtomicBool,
}

async fn reconcile_external(
    request: ReconcileRequest<ConfigMap>,
    ctx: Arc<External>,
) -> Result<Action, FinalizerError<std::io::Error>> {
    let Some(cm) = request.object else {
        return Ok(Action::done());
    };
    let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &request.namespace);
    let key = request.key.clone();
    finalizer(&api, FINALIZER, cm, |event| async move {
        match event {
            FinalizerEvent::Apply(_) => {
                ctx.items.lock().unwrap().insert(key);
            }
            FinalizerEvent::Cleanup(_) => {
                if ctx.down.load(Ordering::SeqCst) {
                    return Err(std::io::Error::other("the external system is down"));
                }
                ctx.items.lock().unwrap().remove(&key);
            }
        }
        Ok(Action::done())
    })
    .await
}

#[tokio::test]
async fn a_failed_cleanup_keeps_the_finalizer_until_a_retry_succeeds() {
    use futures_util::StreamExt;
    use kubeclient::machinery::ErrorChain;

    let fx = start().await;
    let factory = SharedInformerFactory::new(fx.client.clone());
    let controller = Controller::<ConfigMap>::builder("external", &factory)
        .build()
        .expect("built");
    let mut outcomes = controller.outcomes();
    let ctx = Arc::new(External {
        client: fx.client.clone(),
        items: Mutex::default(),
        down: std::sync::atomic::AtomicBool::new(false),
    });
    let stop = CancellationToken::new();
    let run = tokio::spawn(controller.run(
        reconcile_external,
        retry_with_backoff,
        ctx.clone(),
        stop.clone(),
    ));
    let config_maps: Api<ConfigMap> = Api::namespaced(fx.client.clone(), "default");
    config_maps
        .create(&PostParams::default(), &config_map("ext", 1))
        .await
        .expect("created");
    until("the external item exists", || {
        ctx.items.lock().unwrap().contains("default/ext")
    })
    .await;
    assert_eq!(
        config_maps.get("ext").await.expect("exists").finalizers(),
        [FINALIZER]
    );

    ctx.down.store(true, Ordering::SeqCst);
    config_maps
        .delete("ext", &DeleteParams::default())
        .await
        .expect("deletion started");
    let failure = loop {
        let outcome = tokio::time::timeout(Duration::from_secs(30), outcomes.next())
            .await
            .expect("an outcome arrives (is a worker stuck?)")
            .expect("the controller runs");
        if let Err(err) = outcome.result {
            break ErrorChain(&err).to_string();
        }
    };
    assert_eq!(
        failure,
        "reconcile failed: cleanup failed: the external system is down"
    );
    let held = config_maps.get("ext").await.expect("held by the finalizer");
    assert!(held.deletion_timestamp().is_some());
    assert_eq!(held.finalizers(), [FINALIZER]);

    ctx.down.store(false, Ordering::SeqCst);
    until("the retried cleanup removed the external item", || {
        ctx.items.lock().unwrap().is_empty()
    })
    .await;
    let cm_lister = factory.lister::<ConfigMap>();
    until("the ConfigMap is gone", || {
        cm_lister.by_namespace("default").get("ext").is_err()
    })
    .await;
    assert!(config_maps.get_opt("ext").await.expect("a GET").is_none());
    stop.cancel();
    let summary = run.await.expect("stopped").expect("the caches synced");
    assert!(summary.failed >= 1, "{summary:?}");
    factory.shutdown().await;
}
