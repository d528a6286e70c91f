//! Probes and lifecycle hooks on simulated nodes (issue 26): a readiness probe making a
//! Pod unready (and its address not ready in Endpoints) then ready, a failing liveness
//! probe restarting its container with kubelet's Events, a startup probe holding the
//! other probes, `postStart` holding and failing a container, `preStop` running within
//! the grace period.

use std::time::Duration;

use kubeclient_apiserver::CLOSED_PORTS_ANNOTATION;
use serde_json::{Value, json};

use crate::cluster::{
    cluster, cluster_at, condition_status, container, create_pod, eventually, pod, pod_path,
};
use crate::support::{TestServer, eventually_status};

/// The Events about the Pod `name`.
async fn events_of(t: &TestServer, name: &str) -> Vec<Value> {
    let list = t
        .get(&format!(
            "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3D{name}"
        ))
        .await
        .json();
    list["items"].as_array().cloned().unwrap_or_default()
}

/// Waits for an Event about `name` with `reason` whose message starts with `message`.
async fn eventually_event(t: &TestServer, name: &str, reason: &str, message: &str) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let events = events_of(t, name).await;
        if let Some(event) = events.iter().find(|e| {
            e["reason"] == reason
                && e["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with(message))
        }) {
            return event.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "a {reason} Event \"{message}...\" about {name} within 10 s; events: {events:#?}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

fn status_of<'a>(pod: &'a Value, container: &str) -> &'a Value {
    pod["status"]["containerStatuses"]
        .as_array()
        .and_then(|s| s.iter().find(|c| c["name"] == container))
        .unwrap_or(&Value::Null)
}

async fn set_closed_ports(t: &TestServer, name: &str, ports: Option<&str>) {
    let patch = json!({"metadata": {"annotations": {CLOSED_PORTS_ANNOTATION: ports}}});
    let reply = t
        .patch(
            &pod_path(name),
            "application/merge-patch+json",
            &patch.to_string(),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.json());
}

#[tokio::test]
async fn a_readiness_probe_on_a_closed_port_keeps_the_pod_unready_until_it_answers() {
    let t = cluster(1).await;
    let service = json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": "http"}]},
    });
    assert_eq!(
        t.post("/api/v1/namespaces/default/services", &service)
            .await
            .status,
        201
    );
    let mut web = container(&[]);
    web["ports"] = json!([{"name": "http", "containerPort": 8080}]);
    web["readinessProbe"] =
        json!({"httpGet": {"port": "http", "path": "/ready"}, "periodSeconds": 1});
    let mut spec = pod("web", json!({"containers": [web]}));
    spec["metadata"]["labels"] = json!({"app": "web"});
    spec["metadata"]["annotations"] = json!({CLOSED_PORTS_ANNOTATION: "8080"});
    create_pod(&t, spec).await;

    let running = eventually(&t, &pod_path("web"), "the Pod runs", |p| {
        p["status"]["phase"] == "Running" && status_of(p, "main")["started"] == true
    })
    .await;
    assert_eq!(status_of(&running, "main")["ready"], false, "{running:#}");
    assert_eq!(condition_status(&running, "Ready"), "False");
    assert_eq!(condition_status(&running, "ContainersReady"), "False");
    let ip = running["status"]["podIP"]
        .as_str()
        .expect("an address")
        .to_owned();
    let failed = eventually_event(&t, "web", "Unhealthy", "Readiness probe failed: ").await;
    assert_eq!(
        failed["message"],
        format!(
            "Readiness probe failed: Get \"http://{ip}:8080/ready\": dial tcp {ip}:8080: connect: connection refused"
        )
    );
    assert_eq!(failed["type"], "Warning");
    assert_eq!(
        failed["involvedObject"]["fieldPath"],
        "spec.containers{main}"
    );
    assert_eq!(failed["source"]["component"], "kubelet");
    let endpoints = "/api/v1/namespaces/default/endpoints/web";
    eventually(&t, endpoints, "the address is not ready", |e| {
        e["subsets"][0]["notReadyAddresses"][0]["ip"] == ip.as_str()
    })
    .await;

    // The port answers: ready, and a ready address.
    set_closed_ports(&t, "web", None).await;
    eventually(&t, &pod_path("web"), "the Pod is Ready", |p| {
        condition_status(p, "Ready") == "True" && status_of(p, "main")["ready"] == true
    })
    .await;
    eventually(&t, endpoints, "the address is ready", |e| {
        e["subsets"][0]["addresses"][0]["ip"] == ip.as_str()
    })
    .await;

    // Closed again: unready after failureThreshold failures, never restarted.
    set_closed_ports(&t, "web", Some("http")).await;
    let unready = eventually(&t, &pod_path("web"), "the Pod is unready again", |p| {
        condition_status(p, "Ready") == "False"
    })
    .await;
    assert_eq!(status_of(&unready, "main")["restartCount"], 0);
    assert_eq!(status_of(&unready, "main")["started"], true);
    // Repeated failures are one Event with a count, not an Event each.
    let repeated = eventually_event(&t, "web", "Unhealthy", "Readiness probe failed: ").await;
    let same: Vec<Value> = events_of(&t, "web")
        .await
        .into_iter()
        .filter(|e| e["message"] == repeated["message"])
        .collect();
    assert_eq!(same.len(), 1, "{same:#?}");
}

#[tokio::test]
async fn a_failing_liveness_probe_kills_and_restarts_its_container_with_kubelet_events() {
    let t = cluster(1).await;
    let mut sick = container(&["sleep", "86400"]);
    sick["livenessProbe"] = json!({
        "exec": {"command": ["sh", "-c", "echo not well; exit 1"]}, "failureThreshold": 2,
    });
    let mut slow = container(&["sleep", "86400"]);
    slow["name"] = json!("slow");
    slow["livenessProbe"] = json!({"exec": {"command": ["sleep", "5"]}, "timeoutSeconds": 1});
    let mut well = container(&["sleep", "86400"]);
    well["name"] = json!("well");
    well["livenessProbe"] = json!({"exec": {"command": ["true"]}, "periodSeconds": 1});
    create_pod(&t, pod("sick", json!({"containers": [sick, slow, well]}))).await;

    let restarted = eventually(&t, &pod_path("sick"), "the container restarts", |p| {
        status_of(p, "main")["restartCount"].as_u64() >= Some(1)
            && status_of(p, "main")["state"]["running"].is_object()
    })
    .await;
    let last = &status_of(&restarted, "main")["lastState"]["terminated"];
    assert_eq!(last["exitCode"], 137, "{restarted:#}");
    assert_eq!(last["reason"], "Error");
    let unhealthy = eventually_event(&t, "sick", "Unhealthy", "Liveness probe failed: ").await;
    assert_eq!(unhealthy["message"], "Liveness probe failed: not well\n");
    assert_eq!(unhealthy["type"], "Warning");
    let killing = eventually_event(&t, "sick", "Killing", "Container main").await;
    assert_eq!(
        killing["message"],
        "Container main failed liveness probe, will be restarted"
    );
    assert_eq!(killing["type"], "Normal");
    assert_eq!(
        killing["involvedObject"]["fieldPath"],
        "spec.containers{main}"
    );
    // A probe past its timeout fails with kubelet's message.
    eventually_event(
        &t,
        "sick",
        "Unhealthy",
        "Liveness probe failed: command \"sleep 5\" timed out",
    )
    .await;
    // A passing probe leaves its container alone.
    let now = t.get(&pod_path("sick")).await.json();
    assert_eq!(status_of(&now, "well")["restartCount"], 0, "{now:#}");
    assert_eq!(status_of(&now, "well")["ready"], true);
}

#[tokio::test]
async fn a_startup_probe_holds_started_ready_and_liveness_until_it_succeeds() {
    let t = cluster(1).await;
    let mut gated = container(&[]);
    gated["startupProbe"] = json!({"tcpSocket": {"port": 9000}, "failureThreshold": 100000});
    // Would restart the container at once if it ran before the startup probe succeeded.
    gated["livenessProbe"] = json!({"exec": {"command": ["false"]}, "failureThreshold": 1});
    let mut spec = pod("gated", json!({"containers": [gated]}));
    spec["metadata"]["annotations"] = json!({CLOSED_PORTS_ANNOTATION: "9000"});
    create_pod(&t, spec).await;
    let failing = eventually_event(&t, "gated", "Unhealthy", "Startup probe failed: ").await;
    assert!(
        failing["message"]
            .as_str()
            .is_some_and(|m| m.ends_with(":9000: connect: connection refused"))
    );
    // Several startup probes later: not started, not ready, no liveness probe ran.
    eventually(&t, &pod_path("gated"), "the Pod runs", |p| {
        p["status"]["phase"] == "Running"
    })
    .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let events = events_of(&t, "gated").await;
        let count = events
            .iter()
            .find(|e| {
                e["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("Startup probe failed"))
            })
            .and_then(|e| e["count"].as_u64())
            .unwrap_or(0);
        if count >= 3 {
            assert!(
                !events.iter().any(|e| e["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("Liveness"))),
                "{events:#?}"
            );
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "three startup probes in 10 s: {events:#?}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let held = t.get(&pod_path("gated")).await.json();
    assert_eq!(status_of(&held, "main")["started"], false, "{held:#}");
    assert_eq!(status_of(&held, "main")["ready"], false);
    assert_eq!(status_of(&held, "main")["restartCount"], 0);

    // The port opens: started, then the liveness probe runs and fails.
    set_closed_ports(&t, "gated", None).await;
    eventually_event(&t, "gated", "Unhealthy", "Liveness probe failed: ").await;
    eventually(&t, &pod_path("gated"), "the container restarts", |p| {
        status_of(p, "main")["restartCount"].as_u64() >= Some(1)
    })
    .await;

    // A startup probe reaching its failureThreshold kills the container.
    let mut never = container(&[]);
    never["startupProbe"] = json!({"exec": {"command": ["exit", "3"]}, "failureThreshold": 2});
    create_pod(&t, pod("never", json!({"containers": [never]}))).await;
    let killing = eventually_event(&t, "never", "Killing", "Container main").await;
    assert_eq!(
        killing["message"],
        "Container main failed startup probe, will be restarted"
    );
}

#[tokio::test]
async fn post_start_holds_the_containers_after_it_and_a_failing_one_kills_its_container() {
    let t = cluster(1).await;
    let mut first = container(&[]);
    first["lifecycle"] = json!({"postStart": {"exec": {"command": ["sleep", "2"]}}});
    let mut second = container(&[]);
    second["name"] = json!("second");
    create_pod(&t, pod("hooked", json!({"containers": [first, second]}))).await;
    let during = eventually(&t, &pod_path("hooked"), "the hook runs", |p| {
        status_of(p, "main")["state"]["waiting"]["reason"] == "ContainerCreating"
            && p["status"]["podIP"].is_string()
    })
    .await;
    assert_eq!(during["status"]["phase"], "Pending", "{during:#}");
    assert_eq!(status_of(&during, "main")["started"], false);
    assert!(
        status_of(&during, "second")["containerID"].is_null(),
        "{during:#}"
    );
    let after = eventually(&t, &pod_path("hooked"), "both run", |p| {
        condition_status(p, "Ready") == "True"
    })
    .await;
    assert_eq!(status_of(&after, "second")["started"], true);

    let mut failing = container(&["sleep", "86400"]);
    failing["lifecycle"] = json!({"postStart": {"exec": {"command": ["sh", "-c", "exit 1"]}}});
    create_pod(&t, pod("failing", json!({"containers": [failing]}))).await;
    let hook = eventually_event(&t, "failing", "FailedPostStartHook", "").await;
    assert_eq!(hook["message"], "PostStartHook failed");
    assert_eq!(hook["type"], "Warning");
    let killing = eventually_event(&t, "failing", "Killing", "").await;
    assert_eq!(killing["message"], "FailedPostStartHook");
    let restarted = eventually(&t, &pod_path("failing"), "the container restarts", |p| {
        status_of(p, "main")["restartCount"].as_u64() >= Some(1)
    })
    .await;
    assert_eq!(
        status_of(&restarted, "main")["lastState"]["terminated"]["exitCode"],
        137
    );
}

#[tokio::test]
async fn pre_stop_runs_within_the_grace_period_and_is_cut_off_when_it_ends() {
    // 0.1: a grace period of 30 s lasts 3 s, one of 5 s half a second.
    let t = cluster_at(1, 0.1).await;
    let stopper = |grace: u64, hook: &str| {
        let mut main = container(&["sleep", "86400"]);
        main["lifecycle"] = json!({"preStop": {"exec": {"command": ["sh", "-c", hook]}}});
        json!({"terminationGracePeriodSeconds": grace, "containers": [main]})
    };
    create_pod(&t, pod("finishes", stopper(30, "sleep 1; exit 3"))).await;
    create_pod(&t, pod("cut", stopper(5, "sleep 3; exit 3"))).await;
    for name in ["finishes", "cut"] {
        eventually(&t, &pod_path(name), "the Pod is Ready", |p| {
            condition_status(p, "Ready") == "True"
        })
        .await;
        assert_eq!(t.delete(&pod_path(name)).await.status, 200);
    }
    // The hook that ends within the grace period is reported (it failed) while the Pod
    // is still terminating.
    let failed = eventually_event(&t, "finishes", "FailedPreStopHook", "").await;
    assert_eq!(failed["message"], "PreStopHook failed");
    assert_eq!(
        failed["involvedObject"]["fieldPath"],
        "spec.containers{main}"
    );
    let terminating = t.get(&pod_path("finishes")).await;
    assert_eq!(terminating.status, 200, "still there within its 3 s");
    eventually_status(&t, &pod_path("finishes"), 404).await;
    // The other's hook outlived its grace period: cut off, the Pod gone, no Event even
    // after the hook would have ended.
    eventually_status(&t, &pod_path("cut"), 404).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let events = events_of(&t, "cut").await;
    assert!(
        !events.iter().any(|e| e["reason"] == "FailedPreStopHook"),
        "{events:#?}"
    );
}
