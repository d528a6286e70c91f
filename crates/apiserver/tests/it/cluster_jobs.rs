//! The Job controller's extras over real HTTP (issue 26): the back-off delay between
//! failed Pods under a time scale, `activeDeadlineSeconds`, `podFailurePolicy` (`FailJob`,
//! `Ignore`, `FailIndex`) and the TTL-after-finished controller.

use std::time::{Duration, Instant};

use kubeclient_apiserver::ApiServer;
use serde_json::{Value, json};

use crate::cluster::{cluster, condition, container, eventually};
use crate::support::TestServer;

const JOBS: &str = "/apis/batch/v1/namespaces/default/jobs";

/// A one-node cluster whose simulated durations are `scale` times the real ones.
pub(crate) async fn scaled_cluster(scale: f64) -> TestServer {
    TestServer::start_with(
        ApiServer::builder()
            .nodes(1)
            .node_heartbeat_interval(Duration::from_millis(100))
            .time_scale(scale),
    )
    .await
}

fn job(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": spec})
}

fn template(command: &[&str]) -> Value {
    json!({"spec": {"restartPolicy": "Never", "containers": [container(command)]}})
}

async fn create_job(t: &TestServer, job: &Value) {
    let created = t.post(JOBS, job).await;
    assert_eq!(created.status, 201, "{}", created.json());
}

fn has_condition(job: &Value, kind: &str) -> bool {
    condition(job, kind).is_some_and(|c| c["status"] == "True")
}

async fn job_pods(t: &TestServer, job: &str) -> Vec<Value> {
    let pods = t
        .get(&format!(
            "/api/v1/namespaces/default/pods?labelSelector=batch.kubernetes.io%2Fjob-name%3D{job}"
        ))
        .await
        .json();
    pods["items"].as_array().cloned().unwrap_or_default()
}

/// Waits (10 s at most) until the Job's Pods are gone.
async fn until_no_pods(t: &TestServer, job: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !job_pods(t, job).await.is_empty() {
        assert!(
            Instant::now() < deadline,
            "the Pods of Job {job} are deleted"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test]
async fn failed_pods_are_replaced_after_a_doubling_back_off_scaled_by_the_time_scale() {
    // At scale 0.2 the delays are 2 s, then 4 s (counted from the failed Pod's finish
    // time, which has whole seconds: up to 1 s less).
    let t = scaled_cluster(0.2).await;
    create_job(
        &t,
        &job(
            "flaky",
            json!({"backoffLimit": 2, "template": template(&["exit", "1"])}),
        ),
    )
    .await;
    let started = Instant::now();
    let mut seen: Vec<(String, Duration)> = Vec::new();
    while seen.len() < 3 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "three Pods within 20 s; saw {seen:?}"
        );
        for pod in job_pods(&t, "flaky").await {
            let name = pod["metadata"]["name"].as_str().unwrap_or("").to_owned();
            if !seen.iter().any(|(n, _)| *n == name) {
                seen.push((name, started.elapsed()));
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let first_gap = seen[1].1 - seen[0].1;
    let second_gap = seen[2].1 - seen[1].1;
    assert!(
        (Duration::from_millis(900)..Duration::from_millis(3_500)).contains(&first_gap),
        "the first back-off is 2 s (scaled 10 s): {first_gap:?}"
    );
    assert!(
        (Duration::from_millis(2_900)..Duration::from_millis(5_500)).contains(&second_gap),
        "the second back-off is 4 s (scaled 20 s): {second_gap:?}"
    );
    let failed = eventually(&t, &format!("{JOBS}/flaky"), "the Job fails", |j| {
        has_condition(j, "Failed")
    })
    .await;
    assert_eq!(failed["status"]["failed"], 3, "{:#}", failed["status"]);
    assert_eq!(
        condition(&failed, "Failed").map(|c| c["reason"].clone()),
        Some(json!("BackoffLimitExceeded"))
    );
}

#[tokio::test]
async fn a_job_past_its_active_deadline_fails_and_its_pods_go() {
    // 200 s at scale 0.01: 2 s (from a startTime of whole seconds: 1 to 2 s).
    let t = scaled_cluster(0.01).await;
    let started = Instant::now();
    create_job(
        &t,
        &job(
            "slow",
            json!({"activeDeadlineSeconds": 200, "template": template(&[])}),
        ),
    )
    .await;
    eventually(&t, &format!("{JOBS}/slow"), "the Pod runs", |j| {
        j["status"]["active"] == 1
    })
    .await;
    let failed = eventually(&t, &format!("{JOBS}/slow"), "the Job fails", |j| {
        has_condition(j, "Failed")
    })
    .await;
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(900),
        "not before the (scaled) deadline: {took:?}"
    );
    for kind in ["FailureTarget", "Failed"] {
        let c = condition(&failed, kind).expect("the condition");
        assert_eq!(c["reason"], "DeadlineExceeded");
        assert_eq!(
            c["message"],
            "Job was active longer than specified deadline"
        );
    }
    assert!(failed["status"].get("active").is_none());
    until_no_pods(&t, "slow").await;
}

#[tokio::test]
async fn the_pod_failure_policy_fails_the_job_ignores_failures_and_fails_indexes() {
    let t = cluster(1).await;
    create_job(
        &t,
        &job(
            "fatal",
            json!({
                "backoffLimit": 6, "template": template(&["exit", "42"]),
                "podFailurePolicy": {"rules": [
                    {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]}},
                ]},
            }),
        ),
    )
    .await;
    let fatal = eventually(&t, &format!("{JOBS}/fatal"), "the Job fails", |j| {
        has_condition(j, "Failed")
    })
    .await;
    let pods = job_pods(&t, "fatal").await;
    assert_eq!(pods.len(), 1, "no Pod is retried after FailJob");
    let pod = pods[0]["metadata"]["name"].as_str().unwrap_or("");
    let message = format!(
        "Container main for pod default/{pod} failed with exit code 42 matching FailJob rule at index 0"
    );
    for kind in ["FailureTarget", "Failed"] {
        let c = condition(&fatal, kind).expect("the condition");
        assert_eq!(c["reason"], "PodFailurePolicy");
        assert_eq!(c["message"], message.as_str());
    }
    assert_eq!(fatal["status"]["failed"], 1);

    // Ignored failures are replaced without counting against backoffLimit 0.
    create_job(
        &t,
        &job(
            "ignored",
            json!({
                "backoffLimit": 0, "template": template(&["exit", "3"]),
                "podFailurePolicy": {"rules": [
                    {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [3]}},
                ]},
            }),
        ),
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let failed = job_pods(&t, "ignored")
            .await
            .iter()
            .filter(|p| p["status"]["phase"] == "Failed")
            .count();
        if failed >= 3 {
            break;
        }
        assert!(Instant::now() < deadline, "three ignored failures");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let ignored = t.get(&format!("{JOBS}/ignored")).await.json();
    assert!(
        !has_condition(&ignored, "Failed"),
        "{:#}",
        ignored["status"]
    );
    assert!(ignored["status"].get("failed").is_none());
    assert_eq!(t.delete(&format!("{JOBS}/ignored")).await.status, 200);

    // FailIndex: index 1 exits 1 and fails; index 0 completes.
    create_job(
        &t,
        &job(
            "indexes",
            json!({
                "completions": 2, "parallelism": 2, "completionMode": "Indexed",
                "backoffLimitPerIndex": 0,
                "template": template(&["sh", "-c", "exit $JOB_COMPLETION_INDEX"]),
                "podFailurePolicy": {"rules": [
                    {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [1]}},
                ]},
            }),
        ),
    )
    .await;
    let indexes = eventually(&t, &format!("{JOBS}/indexes"), "the Job fails", |j| {
        has_condition(j, "Failed")
    })
    .await;
    assert_eq!(indexes["status"]["completedIndexes"], "0");
    assert_eq!(indexes["status"]["failedIndexes"], "1");
    assert_eq!(
        condition(&indexes, "Failed").map(|c| c["reason"].clone()),
        Some(json!("FailedIndexes"))
    );
}

#[tokio::test]
async fn a_finished_job_with_a_ttl_is_deleted() {
    let t = cluster(1).await;
    create_job(
        &t,
        &job(
            "brief",
            json!({"ttlSecondsAfterFinished": 0, "template": template(&["true"])}),
        ),
    )
    .await;
    create_job(&t, &job("kept", json!({"template": template(&["true"])}))).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while t.get(&format!("{JOBS}/brief")).await.status != 404 {
        assert!(Instant::now() < deadline, "the finished Job is deleted");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let kept = eventually(&t, &format!("{JOBS}/kept"), "the other completes", |j| {
        has_condition(j, "Complete")
    })
    .await;
    assert!(kept["metadata"].get("deletionTimestamp").is_none());
    // Its Pods go with it (propagation Background).
    until_no_pods(&t, "brief").await;
}
