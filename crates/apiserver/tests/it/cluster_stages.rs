//! kwok-style stages on simulated nodes (issue 26): a stage selected by a Pod's labels
//! delays its start, another its readiness, another its removal; other Pods go at
//! once; the time scale multiplies the delays.

use std::time::{Duration, Instant};

use kubeclient_apiserver::{ApiServer, Stages};
use serde_json::json;

use crate::cluster::{condition_status, container, create_pod, eventually, pod, pod_path};
use crate::support::{TestServer, eventually_status};

const STAGES: &str = r#"
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: pod-create-slow}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchLabels: {speed: slow}
    matchExpressions:
    - {key: '.metadata.deletionTimestamp', operator: DoesNotExist}
  delay: {durationMilliseconds: 1500}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: pod-ready-slow}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchAnnotations: {ready: slow}
  delay: {durationMilliseconds: 1000, jitterDurationMilliseconds: 1200}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: pod-delete-slow}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: '.metadata.labels["speed"]', operator: In, values: [slow]}
  delay: {durationMilliseconds: 1000}
"#;

async fn staged(scale: f64, stages: &str) -> TestServer {
    TestServer::start_with(
        ApiServer::builder()
            .nodes(1)
            .node_heartbeat_interval(Duration::from_millis(100))
            .time_scale(scale)
            .stages(Stages::parse(stages).expect("valid stages")),
    )
    .await
}

#[tokio::test]
async fn stages_chosen_by_labels_delay_a_pods_start_readiness_and_removal() {
    let t = staged(1.0, STAGES).await;
    let spec = json!({"containers": [container(&[])]});
    let mut slow = pod("slow", spec.clone());
    slow["metadata"]["labels"] = json!({"speed": "slow"});
    let mut late = pod("late", spec.clone());
    late["metadata"]["annotations"] = json!({"ready": "slow"});
    let created = Instant::now();
    create_pod(&t, slow).await;
    create_pod(&t, late).await;
    create_pod(&t, pod("fast", spec)).await;

    // The unselected Pod runs while the slow one waits for its stage.
    eventually(&t, &pod_path("fast"), "the fast Pod is Ready", |p| {
        condition_status(p, "Ready") == "True"
    })
    .await;
    let waiting = t.get(&pod_path("slow")).await.json();
    assert_eq!(waiting["status"]["phase"], "Pending", "{waiting:#}");
    assert_eq!(waiting["spec"]["nodeName"], "node-1", "bound, not started");
    eventually(&t, &pod_path("slow"), "the slow Pod runs", |p| {
        p["status"]["phase"] == "Running"
    })
    .await;
    assert!(created.elapsed() >= Duration::from_millis(1500));

    // The annotated Pod started at once but became ready only after its stage.
    let started = eventually(&t, &pod_path("late"), "the late Pod runs", |p| {
        p["status"]["phase"] == "Running"
    })
    .await;
    let ready = eventually(&t, &pod_path("late"), "the late Pod is Ready", |p| {
        condition_status(p, "Ready") == "True"
    })
    .await;
    let started_at: jiff::Timestamp = started["status"]["containerStatuses"][0]["state"]["running"]
        ["startedAt"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .expect("a start time");
    let ready_at: jiff::Timestamp = ready["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
        .and_then(|c| c["lastTransitionTime"].as_str())
        .and_then(|t| t.parse().ok())
        .expect("a transition time");
    // Times are whole seconds: at least one second apart.
    assert!(
        ready_at.as_second() - started_at.as_second() >= 1,
        "{ready:#}"
    );

    // Both get a grace period of 1 s; the slow Pod then stays its stage's second more.
    let deleted = Instant::now();
    for name in ["slow", "fast"] {
        let reply = t
            .delete(&format!("{}?gracePeriodSeconds=1", pod_path(name)))
            .await;
        assert_eq!(reply.status, 200);
    }
    eventually_status(&t, &pod_path("fast"), 404).await;
    let slow = t.get(&pod_path("slow")).await;
    assert_eq!(slow.status, 200, "still there: {:#}", slow.json());
    eventually_status(&t, &pod_path("slow"), 404).await;
    assert!(deleted.elapsed() >= Duration::from_millis(2000));
}

#[tokio::test]
async fn the_time_scale_multiplies_stage_delays() {
    // An hour's delay, scaled by 0.
    let t = staged(0.0, &STAGES.replace("1500", "3600000")).await;
    let mut slow = pod("slow", json!({"containers": [container(&[])]}));
    slow["metadata"]["labels"] = json!({"speed": "slow"});
    create_pod(&t, slow).await;
    eventually(
        &t,
        &pod_path("slow"),
        "the slow Pod is Ready at once",
        |p| condition_status(p, "Ready") == "True",
    )
    .await;
}
