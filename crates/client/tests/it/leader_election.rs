//! Leader election with three candidates on the embedded server: a leader cut off from
//! the server (a standing fault on its User-Agent) or stopped is replaced, a cancelled
//! leader that releases hands over at once, and at no moment do two candidates believe
//! they lead (checked on a shared observation log).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kubeclient::leaderelection::{LeaderCallbacks, LeaderElectionConfig, LeaderElector, LeaseLock};
use kubeclient::{Api, CancellationToken, Client};
use kubeclient_apiserver::{ApiServer, Fault};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::support::{config_of, start, until};

/// What a candidate saw, in the order it happened across all candidates.
#[derive(Clone, Debug, PartialEq)]
enum Seen {
    Started(String),
    Stopped(String),
    NewLeader { observer: String, leader: String },
    RunEnded(String),
}

#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<(Instant, Seen)>>>);

impl Log {
    fn push(&self, seen: Seen) {
        self.0.lock().unwrap().push((Instant::now(), seen));
    }

    fn entries(&self) -> Vec<(Instant, Seen)> {
        self.0.lock().unwrap().clone()
    }

    /// The candidates that believe they lead now.
    fn leaders(&self) -> Vec<String> {
        let mut leaders = Vec::new();
        for (_, seen) in self.entries() {
            match seen {
                Seen::Started(id) => leaders.push(id),
                Seen::Stopped(id) => leaders.retain(|l| *l != id),
                Seen::NewLeader { .. } | Seen::RunEnded(_) => {}
            }
        }
        leaders
    }

    /// When `id` last started leading.
    fn started_at(&self, id: &str) -> Option<Instant> {
        self.entries()
            .into_iter()
            .rev()
            .find(|(_, seen)| *seen == Seen::Started(id.to_owned()))
            .map(|(at, _)| at)
    }

    /// Replays the log: never two leaders at once.
    fn assert_never_two_leaders(&self) {
        let mut leaders: Vec<String> = Vec::new();
        for (_, seen) in self.entries() {
            match seen {
                Seen::Started(id) => {
                    assert!(
                        leaders.is_empty(),
                        "{id} started leading while {leaders:?} led: {:#?}",
                        self.entries()
                    );
                    leaders.push(id);
                }
                Seen::Stopped(id) => leaders.retain(|l| *l != id),
                Seen::NewLeader { .. } | Seen::RunEnded(_) => {}
            }
        }
    }
}

struct Candidate {
    id: String,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

const LEASE: &str = "election";

async fn candidate(
    server: &ApiServer,
    id: &str,
    config: LeaderElectionConfig,
    log: &Log,
) -> Candidate {
    let mut client_config = config_of(server);
    client_config.user_agent = Some(format!("kubeclient-test/{id}"));
    let client = Client::new(client_config).await.expect("a client");
    let lock = LeaseLock::new(client, "default", LEASE, id);
    let (started, stopped, observed) = (log.clone(), log.clone(), log.clone());
    let (who, observer, ended) = (id.to_owned(), id.to_owned(), id.to_owned());
    let callbacks = LeaderCallbacks::new()
        .on_started_leading(move |lost: CancellationToken| {
            let (log, who) = (started.clone(), who.clone());
            async move {
                log.push(Seen::Started(who.clone()));
                lost.cancelled().await;
                log.push(Seen::Stopped(who));
            }
        })
        .on_stopped_leading(move || stopped.push(Seen::RunEnded(ended.clone())))
        .on_new_leader(move |leader| {
            observed.push(Seen::NewLeader {
                observer: observer.clone(),
                leader: leader.to_owned(),
            });
        });
    let elector = LeaderElector::new(lock, config, callbacks).expect("a valid config");
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let stop = stop.clone();
        async move { elector.run(stop).await }
    });
    Candidate {
        id: id.to_owned(),
        stop,
        task,
    }
}

/// Short timings for tests: a 1 s lease (Leases store whole seconds), renewals given up
/// after 600 ms, attempts every 100 ms.
fn quick() -> LeaderElectionConfig {
    LeaderElectionConfig::default()
        .lease_duration(Duration::from_secs(1))
        .renew_deadline(Duration::from_millis(600))
        .retry_period(Duration::from_millis(100))
}

async fn three(server: &ApiServer, config: LeaderElectionConfig, log: &Log) -> Vec<Candidate> {
    let mut candidates = Vec::new();
    for id in ["candidate-a", "candidate-b", "candidate-c"] {
        candidates.push(candidate(server, id, config.clone(), log).await);
    }
    candidates
}

async fn first_leader(log: &Log) -> String {
    until("a leader is elected", || log.leaders().len() == 1).await;
    log.leaders().remove(0)
}

async fn lease_holder(client: &Client) -> (String, i32) {
    let lease = Api::<Lease>::namespaced(client.clone(), "default")
        .get(LEASE)
        .await
        .expect("the lease exists");
    let spec = lease.spec.expect("a spec");
    (
        spec.holder_identity.unwrap_or_default(),
        spec.lease_transitions.unwrap_or(0),
    )
}

async fn stop_all(candidates: Vec<Candidate>) {
    for candidate in &candidates {
        candidate.stop.cancel();
    }
    for candidate in candidates {
        tokio::time::timeout(Duration::from_secs(10), candidate.task)
            .await
            .expect("a candidate stops")
            .ok();
    }
}

#[tokio::test]
async fn a_leader_cut_off_from_the_server_is_replaced_and_two_never_lead_at_once() {
    let fx = start().await;
    let log = Log::default();
    let candidates = three(&fx.server, quick(), &log).await;
    let leader = first_leader(&log).await;
    let (holder, _) = lease_holder(&fx.client).await;
    assert_eq!(holder, leader, "the Lease names the leader");

    // Every request of the leader now fails: it cannot renew.
    let cut_at = Instant::now();
    fx.server
        .faults()
        .fail_user_agent(&format!("kubeclient-test/{leader}"), Fault::InternalError);
    until("another candidate leads", || {
        log.leaders().first().is_some_and(|new| *new != leader)
    })
    .await;
    let new_leader = log.leaders().remove(0);
    let took = log.started_at(&new_leader).expect("started") - cut_at;
    println!("handover after the leader was cut off: {took:?} (lease 1 s, retry 100 ms)");
    fx.server.faults().clear();
    let (holder, transitions) = lease_holder(&fx.client).await;
    assert_eq!(holder, new_leader);
    assert!(transitions >= 1, "the handover counts as a transition");
    until("the other follower reports the new leader", || {
        log.entries().iter().any(|(_, seen)| {
            matches!(seen, Seen::NewLeader { observer, leader: l }
                if *observer != new_leader && *observer != leader && *l == new_leader)
        })
    })
    .await;
    stop_all(candidates).await;
    log.assert_never_two_leaders();
}

#[tokio::test]
async fn a_stopped_leader_is_replaced_after_its_lease_expires() {
    let fx = start().await;
    let log = Log::default();
    let mut candidates = three(&fx.server, quick(), &log).await;
    let leader = first_leader(&log).await;
    // The leader's process dies: no release, no more renewals.
    let index = candidates
        .iter()
        .position(|c| c.id == leader)
        .expect("a candidate");
    let dead = candidates.remove(index);
    let stopped_at = Instant::now();
    dead.task.abort();
    let _ = dead.task.await;
    until("another candidate leads", || {
        log.leaders().first().is_some_and(|new| *new != leader)
    })
    .await;
    let new_leader = log.leaders().remove(0);
    let took = log.started_at(&new_leader).expect("started") - stopped_at;
    println!("handover after the leader stopped: {took:?} (lease 1 s, retry 100 ms)");
    stop_all(candidates).await;
    log.assert_never_two_leaders();
}

#[tokio::test]
async fn a_cancelled_leader_releases_and_hands_over_before_its_lease_would_expire() {
    let fx = start().await;
    let log = Log::default();
    // A 30 s lease: without the release, nobody could take over within the test's wait.
    let config = LeaderElectionConfig::default()
        .lease_duration(Duration::from_secs(30))
        .renew_deadline(Duration::from_secs(20))
        .retry_period(Duration::from_millis(100))
        .release_on_cancel(true);
    let mut candidates = three(&fx.server, config, &log).await;
    let leader = first_leader(&log).await;
    let index = candidates
        .iter()
        .position(|c| c.id == leader)
        .expect("a candidate");
    let old = candidates.remove(index);
    let cancelled_at = Instant::now();
    old.stop.cancel();
    old.task.await.expect("the leader's run returns");
    let ended: Vec<Seen> = log
        .entries()
        .into_iter()
        .map(|(_, seen)| seen)
        .filter(|seen| matches!(seen, Seen::Stopped(id) | Seen::RunEnded(id) if *id == leader))
        .collect();
    assert_eq!(
        ended,
        [
            Seen::Stopped(leader.clone()),
            Seen::RunEnded(leader.clone())
        ],
        "the leading work ended before run returned and called on_stopped_leading"
    );
    let deadline = cancelled_at + Duration::from_secs(20);
    while log.leaders().first().is_none_or(|new| *new == leader) {
        assert!(
            Instant::now() < deadline,
            "no handover within 20 s of a 30 s lease: the lease was not released"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let new_leader = log.leaders().remove(0);
    let took = log.started_at(&new_leader).expect("started") - cancelled_at;
    println!("handover after a release: {took:?} (lease 30 s, retry 100 ms)");
    stop_all(candidates).await;
    log.assert_never_two_leaders();
}

#[test]
fn timings_that_break_client_go_rules_are_refused() {
    let too_long_renewal = LeaderElectionConfig::default().renew_deadline(Duration::from_secs(15));
    assert!(too_long_renewal.validate().is_err());
    let retry_too_slow = LeaderElectionConfig::default().retry_period(Duration::from_secs(9));
    assert!(retry_too_slow.validate().is_err());
    assert!(LeaderElectionConfig::default().validate().is_ok());
}

/// Writes a Lease held by someone else with the holder's (possibly skewed) timestamps.
async fn foreign_lease(client: &Client, renew_time: &str) {
    let lease: Lease = serde_json::from_value(serde_json::json!({
        "metadata": {"name": LEASE, "namespace": "default"},
        "spec": {"holderIdentity": "ghost", "leaseDurationSeconds": 1,
                 "acquireTime": renew_time, "renewTime": renew_time, "leaseTransitions": 4}
    }))
    .expect("a Lease");
    Api::<Lease>::namespaced(client.clone(), "default")
        .create(&kubeclient::PostParams::default(), &lease)
        .await
        .expect("created");
}

#[tokio::test]
async fn expiry_is_judged_by_the_candidates_clock_not_the_holders_timestamps() {
    let fx = start().await;
    // An ancient renewTime: a candidate trusting it would take over at once; by the
    // observed-time rule it waits a full lease duration from when it first saw the record.
    foreign_lease(&fx.client, "2000-01-01T00:00:00.000000Z").await;
    let log = Log::default();
    let started = Instant::now();
    let candidate = candidate(&fx.server, "candidate-a", quick(), &log).await;
    until("the candidate takes the abandoned lease", || {
        log.leaders().len() == 1
    })
    .await;
    let waited = log.started_at("candidate-a").expect("started") - started;
    assert!(
        waited >= Duration::from_secs(1),
        "took over after {waited:?}, before the 1 s lease ran out by its own clock"
    );
    let (holder, transitions) = lease_holder(&fx.client).await;
    assert_eq!((holder.as_str(), transitions), ("candidate-a", 5));
    stop_all(vec![candidate]).await;
}

#[tokio::test]
async fn a_holder_clock_far_in_the_future_does_not_block_the_others() {
    let fx = start().await;
    // A renewTime in 2100 (a holder with a skewed clock that then died): still expires one
    // lease duration after the candidate saw it.
    foreign_lease(&fx.client, "2100-01-01T00:00:00.000000Z").await;
    let log = Log::default();
    let candidate = candidate(&fx.server, "candidate-b", quick(), &log).await;
    until("the candidate takes the lease", || log.leaders().len() == 1).await;
    stop_all(vec![candidate]).await;
}

#[tokio::test]
async fn a_leader_cut_off_from_the_server_fails_its_health_check() {
    use kubeclient::metrics::{Metrics, MetricsServer};
    let fx = start().await;
    let mut client_config = config_of(&fx.server);
    client_config.user_agent = Some("kubeclient-test/lonely".to_owned());
    let client = Client::new(client_config).await.expect("a client");
    let log = Log::default();
    let started = log.clone();
    let elector = Arc::new(
        LeaderElector::new(
            LeaseLock::new(client, "default", LEASE, "lonely"),
            quick(),
            LeaderCallbacks::new().on_started_leading(move |lost: CancellationToken| {
                let log = started.clone();
                async move {
                    log.push(Seen::Started("lonely".to_owned()));
                    lost.cancelled().await;
                    log.push(Seen::Stopped("lonely".to_owned()));
                }
            }),
        )
        .expect("valid"),
    );
    let server = MetricsServer::start(
        "127.0.0.1:0".parse().unwrap(),
        Arc::new(Metrics::new()),
        || true,
    )
    .await
    .expect("listens");
    let checked = elector.clone();
    server.set_health_check(move || checked.check(Duration::ZERO).map_err(|e| e.to_string()));
    let stop = CancellationToken::new();
    let run = tokio::spawn({
        let (elector, stop) = (elector.clone(), stop.clone());
        async move { elector.run(stop).await }
    });
    until("leading", || log.leaders().len() == 1).await;
    assert_eq!(crate::metrics::get(&server, "/healthz").await.0, 200);
    fx.server
        .faults()
        .fail_user_agent("kubeclient-test/lonely", Fault::InternalError);
    // It stops leading after the renew deadline; the health check fails once the lease
    // (1 s) has passed without a renewal.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (code, body) = crate::metrics::get(&server, "/healthz").await;
        if code == 500 {
            assert!(body.contains("was last renewed"), "{body}");
            break;
        }
        assert!(Instant::now() < deadline, "the health check never failed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        log.leaders().is_empty(),
        "it stopped leading before its health check failed"
    );
    stop.cancel();
    run.await.expect("stopped");
    server.shutdown().await;
}
