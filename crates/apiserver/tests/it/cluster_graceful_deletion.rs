//! Graceful deletion of Pods on simulated nodes (issue 26): the DELETE's own
//! `gracePeriodSeconds` (query or body) over the Pod's `terminationGracePeriodSeconds`,
//! a second DELETE shortening a running grace period (the kubelet then ends it sooner),
//! `kubectl delete --force --grace-period=0` removing at once, and a rolling update that
//! completes while the old Pods are still terminating.

use std::time::Duration;

use kubeclient_apiserver::ApiServer;
use serde_json::{Value, json};

use crate::cluster::{
    cluster_at, condition_status, container, create_pod, eventually, pod, pod_path,
};
use crate::kubectl::Kubectl;
use crate::support::{TestServer, eventually_status};

/// A Pod that runs until killed, with a grace period of 3,000 s (30 s at the test's
/// time scale of 0.01).
fn sleeper(name: &str) -> Value {
    pod(
        name,
        json!({"terminationGracePeriodSeconds": 3000, "containers": [container(&["sleep", "86400"])]}),
    )
}

fn timestamp(object: &Value) -> jiff::Timestamp {
    object["metadata"]["deletionTimestamp"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("a deletionTimestamp: {object:#}"))
}

#[tokio::test]
async fn delete_options_grace_periods_mark_shorten_and_force_pod_deletion() {
    let t = cluster_at(1, 0.01).await;
    for name in ["long", "asked", "forced", "negative"] {
        create_pod(&t, sleeper(name)).await;
    }
    for name in ["long", "asked", "forced", "negative"] {
        eventually(&t, &pod_path(name), "the Pod runs", |p| {
            condition_status(p, "Ready") == "True"
        })
        .await;
    }
    // No options: the Pod's own grace period; marked first, still there.
    let marked = t.delete(&pod_path("long")).await;
    assert_eq!(marked.status, 200);
    let marked = marked.json();
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 3000);
    let first = timestamp(&marked);
    let still = t.get(&pod_path("long")).await;
    assert_eq!(still.status, 200);
    assert_eq!(still.json()["metadata"]["deletionGracePeriodSeconds"], 3000);
    // A second DELETE with a shorter period moves the deadline earlier by the difference;
    // a longer one changes nothing.
    let longer = t
        .request(
            "DELETE",
            &pod_path("long"),
            Some("application/json"),
            json!({"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 9000})
                .to_string(),
        )
        .await;
    assert_eq!(longer.status, 200);
    assert_eq!(
        longer.json()["metadata"]["deletionGracePeriodSeconds"],
        3000
    );
    let shortened = t
        .delete(&format!("{}?gracePeriodSeconds=100", pod_path("long")))
        .await;
    assert_eq!(shortened.status, 200);
    let shortened = shortened.json();
    assert_eq!(shortened["metadata"]["deletionGracePeriodSeconds"], 100);
    assert_eq!(
        first.as_second() - timestamp(&shortened).as_second(),
        2900,
        "{shortened:#}"
    );
    // The kubelet ends the shortened period (1 s scaled) instead of the first (30 s).
    eventually_status(&t, &pod_path("long"), 404).await;

    // The request's period on a fresh DELETE, in the body, over the Pod's.
    let asked = t
        .request(
            "DELETE",
            &pod_path("asked"),
            Some("application/json"),
            json!({"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 50})
                .to_string(),
        )
        .await;
    assert_eq!(asked.status, 200);
    assert_eq!(asked.json()["metadata"]["deletionGracePeriodSeconds"], 50);
    eventually_status(&t, &pod_path("asked"), 404).await;
    // A negative one counts as 1 s.
    let negative = t
        .delete(&format!("{}?gracePeriodSeconds=-5", pod_path("negative")))
        .await;
    assert_eq!(negative.json()["metadata"]["deletionGracePeriodSeconds"], 1);

    // kubectl's force deletion: gone when kubectl returns.
    let kubectl = Kubectl::for_server(&t);
    kubectl
        .ok(&["delete", "pod", "forced", "--grace-period=0", "--force"])
        .await;
    assert_eq!(t.get(&pod_path("forced")).await.status, 404);
    // A bad value is a 400, not a panic.
    create_pod(&t, sleeper("bad")).await;
    let bad = t
        .delete(&format!("{}?gracePeriodSeconds=soon", pod_path("bad")))
        .await;
    assert_eq!(bad.status, 400);
}

#[tokio::test]
async fn kubectl_rollout_completes_while_old_pods_still_terminate() {
    // Real durations: each old Pod's 30 s grace period runs out well after the rollout.
    let t = TestServer::start_with(
        ApiServer::builder()
            .nodes(3)
            .node_heartbeat_interval(Duration::from_millis(200))
            .time_scale(1.0),
    )
    .await;
    let kubectl = Kubectl::for_server(&t);
    kubectl
        .ok(&[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=3",
        ])
        .await;
    let status = kubectl
        .ok(&["rollout", "status", "deployment/web", "--timeout=20s"])
        .await;
    assert!(status.contains("successfully rolled out"), "{status}");
    kubectl
        .ok(&["set", "image", "deployment/web", "nginx=nginx:1.27"])
        .await;
    let status = kubectl
        .ok(&["rollout", "status", "deployment/web", "--timeout=20s"])
        .await;
    assert!(status.contains("successfully rolled out"), "{status}");
    let pods = t
        .get("/api/v1/namespaces/default/pods?labelSelector=app%3Dweb")
        .await
        .json();
    let items = pods["items"].as_array().cloned().unwrap_or_default();
    let terminating: Vec<&Value> = items
        .iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_string())
        .collect();
    assert!(
        !terminating.is_empty(),
        "old Pods still terminating: {items:#?}"
    );
    for pod in &terminating {
        assert_eq!(pod["spec"]["containers"][0]["image"], "nginx");
        assert_eq!(pod["metadata"]["deletionGracePeriodSeconds"], 30);
    }
    let running_new = items
        .iter()
        .filter(|p| {
            p["metadata"]["deletionTimestamp"].is_null()
                && p["spec"]["containers"][0]["image"] == "nginx:1.27"
                && condition_status(p, "Ready") == "True"
        })
        .count();
    assert_eq!(running_new, 3);
    let listed = kubectl.ok(&["get", "pods", "-l", "app=web"]).await;
    assert!(listed.contains("Terminating"), "{listed}");
}

/// As kube-apiserver v1.20 does (checked against `../shared/realapi`): an update never
/// removes a Pod in its grace period, not even one that takes away its last finalizer;
/// the grace period's end (the kubelet's DELETE with a period of 0) does.
#[tokio::test]
async fn updates_leave_a_pod_in_its_grace_period_until_the_kubelet_deletes_it() {
    let t = cluster_at(1, 0.01).await;
    let mut held = sleeper("held");
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    create_pod(&t, held).await;
    create_pod(&t, sleeper("plain")).await;
    for name in ["held", "plain"] {
        eventually(&t, &pod_path(name), "the Pod runs", |p| {
            condition_status(p, "Ready") == "True"
        })
        .await;
        assert_eq!(t.delete(&pod_path(name)).await.status, 200);
    }
    let label = r#"{"metadata":{"labels":{"touched":"yes"}}}"#;
    let touched = t
        .patch(&pod_path("plain"), "application/merge-patch+json", label)
        .await;
    assert_eq!(touched.status, 200, "{}", touched.json());
    let unheld = t
        .patch(
            &pod_path("held"),
            "application/merge-patch+json",
            r#"{"metadata":{"finalizers":null}}"#,
        )
        .await;
    assert_eq!(unheld.status, 200, "{}", unheld.json());
    for name in ["held", "plain"] {
        let still = t.get(&pod_path(name)).await;
        assert_eq!(still.status, 200, "{name} is still there");
        assert_eq!(still.json()["metadata"]["deletionGracePeriodSeconds"], 3000);
    }
    // The kubelet's status updates meanwhile do not remove them either; a DELETE with a
    // period of 0 does.
    tokio::time::sleep(Duration::from_millis(300)).await;
    for name in ["held", "plain"] {
        assert_eq!(t.get(&pod_path(name)).await.status, 200, "{name}");
        let now = t
            .delete(&format!("{}?gracePeriodSeconds=0", pod_path(name)))
            .await;
        assert_eq!(now.status, 200);
        eventually_status(&t, &pod_path(name), 404).await;
    }
}
