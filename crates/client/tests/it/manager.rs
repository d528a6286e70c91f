//! The controller manager on the embedded server: the probe server, the caches and a
//! controller started in order and stopped gracefully; two managers electing one leader
//! that hands over on stop; a runnable stuck past the graceful shutdown timeout; a failing
//! runnable stopping the manager with its error.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kubeclient::controller::{Action, ReconcileRequest, retry_with_backoff};
use kubeclient::leaderelection::LeaderElectionConfig;
use kubeclient::machinery::ErrorChain;
use kubeclient::manager::{Manager, ManagerError, Runnable};
use kubeclient::{Api, CancellationToken, PostParams};
use kubeclient_apiserver::ApiServer;
use serde_json::json;

use crate::metrics::get_at;
use crate::support::{config_of, start, until};

/// The keys each manager's controller reconciled, by manager.
type Seen = Arc<Mutex<Vec<(String, String)>>>;

async fn record(
    request: ReconcileRequest<ConfigMap>,
    ctx: Arc<(String, Seen)>,
) -> Result<Action, std::io::Error> {
    ctx.1.lock().unwrap().push((ctx.0.clone(), request.key));
    Ok(Action::done())
}

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "namespace": "default"}}))
        .expect("a ConfigMap")
}

/// A manager with a ConfigMap controller recording into `seen` as `id`.
async fn manager_with_controller(
    server: &ApiServer,
    id: &str,
    seen: &Seen,
    elect: bool,
) -> Manager {
    let mut builder =
        Manager::builder(config_of(server)).probe_address("127.0.0.1:0".parse().unwrap());
    if elect {
        builder = builder
            .leader_election("default", "manager-test")
            .leader_election_identity(id)
            .leader_election_config(
                LeaderElectionConfig::default()
                    .lease_duration(Duration::from_secs(4))
                    .renew_deadline(Duration::from_secs(3))
                    .retry_period(Duration::from_millis(100))
                    .release_on_cancel(true),
            );
    }
    let manager = builder.build().await.expect("the manager builds");
    let controller = manager
        .controller::<ConfigMap>("config-maps")
        .build()
        .expect("built");
    manager.add(controller.into_runnable(
        record,
        retry_with_backoff,
        Arc::new((id.to_owned(), seen.clone())),
    ));
    manager
}

#[tokio::test]
async fn a_manager_serves_probes_syncs_runs_its_controller_and_stops_gracefully() {
    let fx = start().await;
    let seen = Seen::default();
    let manager = manager_with_controller(&fx.server, "solo", &seen, false).await;
    let probes = manager.probe_address().expect("probes are served");
    assert_eq!(
        get_at(probes, "/readyz").await.0,
        503,
        "not ready before the caches synced"
    );
    let stop = CancellationToken::new();
    let run = tokio::spawn(manager.start(stop.clone()));
    Api::<ConfigMap>::namespaced(fx.client.clone(), "default")
        .create(&PostParams::default(), &config_map("managed"))
        .await
        .expect("created");
    until("the controller reconciled the ConfigMap", || {
        seen.lock()
            .unwrap()
            .contains(&("solo".to_owned(), "default/managed".to_owned()))
    })
    .await;
    assert_eq!(get_at(probes, "/readyz").await, (200, "ok".to_owned()));
    assert_eq!(get_at(probes, "/healthz").await, (200, "ok".to_owned()));
    let metrics = get_at(probes, "/metrics").await.1;
    assert!(
        metrics.contains("workqueue_adds_total{name=\"config-maps\"}"),
        "the controller's queue reports to the manager's registry:\n{metrics}"
    );
    assert!(metrics.contains("rest_client_requests_total"), "{metrics}");
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(40), run)
        .await
        .expect("the manager stops within its graceful shutdown timeout")
        .expect("the task ends cleanly")
        .expect("a clean stop is not an error");
    assert!(
        tokio::net::TcpStream::connect(probes).await.is_err(),
        "the probe server stopped"
    );
}

#[tokio::test]
async fn two_managers_elect_one_leader_that_hands_over_on_stop() {
    let fx = start().await;
    let seen = Seen::default();
    let first = manager_with_controller(&fx.server, "first", &seen, true).await;
    let second = manager_with_controller(&fx.server, "second", &seen, true).await;
    let (stop_first, stop_second) = (CancellationToken::new(), CancellationToken::new());
    let run_first = tokio::spawn(first.start(stop_first.clone()));
    let leases: Api<Lease> = Api::namespaced(fx.client.clone(), "default");
    let holder = || async {
        leases
            .get_opt("manager-test")
            .await
            .expect("a GET")
            .and_then(|l| l.spec?.holder_identity)
    };
    for _ in 0..3000 {
        if holder().await.as_deref() == Some("first") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        holder().await.as_deref(),
        Some("first"),
        "the first manager leads"
    );
    let run_second = tokio::spawn(second.start(stop_second.clone()));
    let config_maps: Api<ConfigMap> = Api::namespaced(fx.client.clone(), "default");
    config_maps
        .create(&PostParams::default(), &config_map("one"))
        .await
        .expect("created");
    until("the leader reconciled it", || {
        seen.lock()
            .unwrap()
            .contains(&("first".to_owned(), "default/one".to_owned()))
    })
    .await;
    assert!(
        seen.lock().unwrap().iter().all(|(who, _)| who == "first"),
        "only the leader reconciles: {:?}",
        seen.lock().unwrap()
    );

    stop_first.cancel();
    tokio::time::timeout(Duration::from_secs(40), run_first)
        .await
        .expect("the first manager stops")
        .expect("ends cleanly")
        .expect("a clean stop");
    config_maps
        .create(&PostParams::default(), &config_map("two"))
        .await
        .expect("created");
    until("the new leader reconciled the next change", || {
        seen.lock()
            .unwrap()
            .contains(&("second".to_owned(), "default/two".to_owned()))
    })
    .await;
    assert_eq!(holder().await.as_deref(), Some("second"));
    stop_second.cancel();
    tokio::time::timeout(Duration::from_secs(40), run_second)
        .await
        .expect("the second manager stops")
        .expect("ends cleanly")
        .expect("a clean stop");
}

#[tokio::test]
async fn a_runnable_stuck_past_the_graceful_timeout_is_reported_by_name() {
    let fx = start().await;
    let manager = Manager::builder(config_of(&fx.server))
        .graceful_shutdown_timeout(Duration::from_millis(200))
        .build()
        .await
        .expect("built");
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    manager.add(Runnable::new("stuck", move |_stop| async move {
        let _ = started_tx.send(());
        std::future::pending::<()>().await;
        Ok::<_, std::io::Error>(())
    }));
    manager.add(Runnable::new("polite", |stop| async move {
        stop.cancelled().await;
        Ok::<_, std::io::Error>(())
    }));
    let stop = CancellationToken::new();
    let run = tokio::spawn(manager.start(stop.clone()));
    tokio::time::timeout(Duration::from_secs(30), started_rx)
        .await
        .expect("the runnable starts")
        .expect("sent");
    stop.cancel();
    let outcome = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the manager gives up waiting")
        .expect("ends cleanly");
    match outcome {
        Err(ManagerError::GracefulShutdownTimeout { pending, timeout }) => {
            assert_eq!(pending, ["stuck"]);
            assert_eq!(timeout, Duration::from_millis(200));
        }
        other => panic!("expected a graceful shutdown timeout, got {other:?}"),
    }
}

#[tokio::test]
async fn a_failing_runnable_stops_the_manager_and_the_others_with_its_error() {
    let fx = start().await;
    let manager = Manager::builder(config_of(&fx.server))
        .build()
        .await
        .expect("built");
    let stopped = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stopped.clone();
    manager.add(Runnable::new("patient", move |stop| async move {
        stop.cancelled().await;
        flag.store(true, std::sync::atomic::Ordering::SeqCst);
        Ok::<_, std::io::Error>(())
    }));
    manager.add(Runnable::new("broken", |_stop| async {
        Err(std::io::Error::other("cannot open the database"))
    }));
    let outcome = tokio::time::timeout(
        Duration::from_secs(30),
        manager.start(CancellationToken::new()),
    )
    .await
    .expect("the failure stops the manager");
    let err = outcome.expect_err("the runnable's error");
    assert_eq!(
        ErrorChain(&err).to_string(),
        "runnable broken failed: cannot open the database"
    );
    assert!(
        stopped.load(std::sync::atomic::Ordering::SeqCst),
        "the other runnable was stopped and awaited"
    );
}
