//! The simulated cluster over real HTTP (issue 26): nodes that register and heartbeat,
//! the node lifecycle controller marking a silent node, the scheduler's filters and its
//! `FailedScheduling` message, and the kubelets' Pod phases, conditions, container
//! statuses, restarts and graceful deletion; kubectl sees Running Pods on nodes. The
//! workload controllers are in `cluster_workloads`.

use std::time::{Duration, Instant};

use kubeclient_apiserver::ApiServer;
use serde_json::{Value, json};

use crate::kubectl::Kubectl;
use crate::support::TestServer;

/// A cluster of `nodes` with fast heartbeats and instant grace periods.
pub(crate) async fn cluster(nodes: usize) -> TestServer {
    cluster_at(nodes, 0.0).await
}

/// A cluster of `nodes` with fast heartbeats whose simulated durations are multiplied by
/// `time_scale` (0.01: a 30 s grace period lasts 0.3 s).
pub(crate) async fn cluster_at(nodes: usize, time_scale: f64) -> TestServer {
    TestServer::start_with(
        ApiServer::builder()
            .nodes(nodes)
            .node_heartbeat_interval(Duration::from_millis(100))
            .time_scale(time_scale),
    )
    .await
}

/// GETs `path` until `done` holds for the object (10 s at most); the last object.
pub(crate) async fn eventually(
    t: &TestServer,
    path: &str,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let reply = t.get(path).await;
        let object = reply.json();
        if reply.status == 200 && done(&object) {
            return object;
        }
        assert!(
            Instant::now() < deadline,
            "{what} within 10 s; last answer ({}): {object:#}",
            reply.status
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

pub(crate) fn condition<'a>(object: &'a Value, kind: &str) -> Option<&'a Value> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

pub(crate) fn condition_status<'a>(object: &'a Value, kind: &str) -> &'a str {
    condition(object, kind)
        .and_then(|c| c["status"].as_str())
        .unwrap_or("")
}

pub(crate) async fn create_pod(t: &TestServer, pod: Value) -> Value {
    let reply = t.post("/api/v1/namespaces/default/pods", &pod).await;
    assert_eq!(reply.status, 201, "{}", reply.json());
    reply.json()
}

pub(crate) fn pod(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
}

pub(crate) fn container(command: &[&str]) -> Value {
    let mut container = json!({"name": "main", "image": "busybox"});
    if !command.is_empty() {
        container["command"] = json!(command);
    }
    container
}

pub(crate) fn pod_path(name: &str) -> String {
    format!("/api/v1/namespaces/default/pods/{name}")
}

#[tokio::test]
async fn nodes_register_ready_with_capacity_and_addresses_and_renew_their_leases() {
    let t = cluster(2).await;
    let nodes = t.get("/api/v1/nodes").await.json();
    let items = nodes["items"].as_array().expect("a node list");
    let names: Vec<&str> = items
        .iter()
        .filter_map(|n| n["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["node-1", "node-2"]);
    for node in items {
        assert_eq!(condition_status(node, "Ready"), "True", "{node:#}");
        assert_eq!(condition_status(node, "MemoryPressure"), "False");
        assert_eq!(node["status"]["allocatable"]["cpu"], "4");
        assert_eq!(node["status"]["capacity"]["pods"], "110");
        assert_eq!(node["status"]["addresses"][0]["type"], "InternalIP");
        assert_eq!(
            node["metadata"]["labels"]["kubernetes.io/hostname"],
            node["metadata"]["name"]
        );
    }
    assert_eq!(items[0]["spec"]["podCIDR"], "10.244.1.0/24");
    assert_eq!(items[1]["spec"]["podCIDR"], "10.244.2.0/24");
    let lease_path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-1";
    let lease = t.get(lease_path).await.json();
    assert_eq!(lease["spec"]["holderIdentity"], "node-1");
    assert_eq!(lease["metadata"]["ownerReferences"][0]["kind"], "Node");
    let first = lease["spec"]["renewTime"].clone();
    eventually(&t, lease_path, "the lease is renewed", |lease| {
        lease["spec"]["renewTime"] != first
    })
    .await;
    // The scheduler holds its leader Lease.
    let scheduler = t
        .get("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler")
        .await;
    assert_eq!(scheduler.status, 200);
}

#[tokio::test]
async fn a_node_whose_kubelet_stops_goes_not_ready_and_tainted_then_recovers() {
    let t = TestServer::start_with(
        ApiServer::builder()
            .nodes(2)
            .node_heartbeat_interval(Duration::from_millis(50))
            .node_monitor_grace_period(Duration::from_millis(400))
            .time_scale(0.0),
    )
    .await;
    // A Pod running on node-2 first.
    let on_two = json!({
        "nodeSelector": {"kubernetes.io/hostname": "node-2"},
        "containers": [container(&[])],
    });
    create_pod(&t, pod("on-two", on_two)).await;
    eventually(&t, &pod_path("on-two"), "the Pod is Ready", |p| {
        condition_status(p, "Ready") == "True"
    })
    .await;
    assert!(t.server.cluster().stop_kubelet("node-2"));
    assert!(!t.server.cluster().stop_kubelet("node-9"));
    let node = eventually(
        &t,
        "/api/v1/nodes/node-2",
        "node-2 goes Unknown and tainted",
        |node| {
            condition_status(node, "Ready") == "Unknown"
                && node["spec"]["taints"]
                    .as_array()
                    .is_some_and(|t| t.len() == 2)
        },
    )
    .await;
    let ready = condition(&node, "Ready").expect("a Ready condition");
    assert_eq!(ready["reason"], "NodeStatusUnknown");
    assert_eq!(ready["message"], "Kubelet stopped posting node status.");
    let taints = node["spec"]["taints"].as_array().expect("taints");
    assert!(
        taints
            .iter()
            .all(|t| t["key"] == "node.kubernetes.io/unreachable")
    );
    assert!(
        taints
            .iter()
            .any(|t| t["effect"] == "NoExecute" && t["timeAdded"].is_string())
    );
    // Its Pod is not Ready any more, and (its 300 s toleration of the taint scaled to 0)
    // evicted: it stays Terminating while no kubelet confirms.
    let evicted = eventually(&t, &pod_path("on-two"), "the Pod is evicted", |p| {
        p["metadata"]["deletionTimestamp"].is_string()
    })
    .await;
    assert_eq!(condition_status(&evicted, "Ready"), "False", "{evicted:#}");
    // The other node heartbeats on.
    let other = t.get("/api/v1/nodes/node-1").await.json();
    assert_eq!(condition_status(&other, "Ready"), "True");
    // New Pods go to the healthy node only.
    create_pod(&t, pod("after", json!({"containers": [container(&[])]}))).await;
    let placed = eventually(&t, &pod_path("after"), "the Pod is bound", |p| {
        p["spec"]["nodeName"].is_string()
    })
    .await;
    assert_eq!(placed["spec"]["nodeName"], "node-1");
    assert!(t.server.cluster().start_kubelet("node-2"));
    eventually(
        &t,
        "/api/v1/nodes/node-2",
        "node-2 is Ready again, untainted",
        |node| condition_status(node, "Ready") == "True" && node["spec"].get("taints").is_none(),
    )
    .await;
    // The restarted kubelet finishes the eviction's deletion.
    let deadline = Instant::now() + Duration::from_secs(10);
    while t.get(&pod_path("on-two")).await.status != 404 {
        assert!(
            Instant::now() < deadline,
            "the evicted Pod goes within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test]
async fn the_scheduler_filters_by_selector_affinity_taints_and_requests() {
    let t = cluster(2).await;
    let patch = |labels: Value| serde_json::to_string(&labels).expect("json");
    let reply = t
        .patch(
            "/api/v1/nodes/node-1",
            "application/merge-patch+json",
            &patch(json!({"metadata": {"labels": {"disk": "ssd"}}})),
        )
        .await;
    assert_eq!(reply.status, 200);
    let reply = t
        .patch(
            "/api/v1/nodes/node-2",
            "application/merge-patch+json",
            &patch(json!({"spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}})),
        )
        .await;
    assert_eq!(reply.status, 200);
    create_pod(
        &t,
        pod(
            "ssd",
            json!({"nodeSelector": {"disk": "ssd"}, "containers": [container(&[])]}),
        ),
    )
    .await;
    create_pod(
        &t,
        pod(
            "gpu",
            json!({
                "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [
                        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-2"]}
                    ]}]
                }}},
                "containers": [container(&[])],
            }),
        ),
    )
    .await;
    for (name, node) in [("ssd", "node-1"), ("gpu", "node-2")] {
        let bound = eventually(&t, &pod_path(name), "the Pod is bound", |p| {
            p["spec"]["nodeName"].is_string()
        })
        .await;
        assert_eq!(bound["spec"]["nodeName"], node, "{name}");
        assert_eq!(condition_status(&bound, "PodScheduled"), "True");
    }
    let big = json!({"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "5"}}});
    create_pod(&t, pod("too-big", json!({"containers": [big]}))).await;
    create_pod(
        &t,
        pod(
            "hdd",
            json!({"nodeSelector": {"disk": "hdd"}, "containers": [container(&[])]}),
        ),
    )
    .await;
    let expected = [
        (
            "too-big",
            // node-2's taint is checked before resources.
            "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s). \
             no new claims to deallocate, preemption: 0/2 nodes are available: \
             1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling.",
        ),
        (
            "hdd",
            "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, \
             1 node(s) had untolerated taint(s). no new claims to deallocate, preemption: \
             0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
        ),
    ];
    for (name, message) in expected {
        let pending = eventually(&t, &pod_path(name), "PodScheduled=False", |p| {
            condition_status(p, "PodScheduled") == "False"
        })
        .await;
        let scheduled = condition(&pending, "PodScheduled").expect("PodScheduled");
        assert_eq!(scheduled["reason"], "Unschedulable");
        assert_eq!(scheduled["message"], message, "{name}");
        assert!(pending["spec"].get("nodeName").is_none());
        let selector = format!("involvedObject.name={name},reason=FailedScheduling");
        // The scheduler writes the Event after the Pod's condition.
        let events = eventually(
            &t,
            &format!(
                "/api/v1/namespaces/default/events?fieldSelector={}",
                selector.replace('=', "%3D").replace(',', "%2C")
            ),
            "a FailedScheduling event",
            |e| e["items"].as_array().is_some_and(|i| !i.is_empty()),
        )
        .await;
        let event = &events["items"][0];
        assert_eq!(event["type"], "Warning", "{events:#}");
        assert_eq!(event["message"], message);
        assert_eq!(event["source"]["component"], "default-scheduler");
    }
    let scheduled_events = eventually(
        &t,
        "/api/v1/namespaces/default/events?fieldSelector=reason%3DScheduled",
        "the Scheduled event of ssd",
        |e| {
            e["items"].as_array().is_some_and(|i| {
                i.iter()
                    .any(|e| e["message"] == "Successfully assigned default/ssd to node-1")
            })
        },
    )
    .await;
    let messages: Vec<&str> = scheduled_events["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["message"].as_str())
        .collect();
    assert!(
        messages.contains(&"Successfully assigned default/ssd to node-1"),
        "{messages:?}"
    );
    // Another scheduler's Pod is left alone.
    create_pod(
        &t,
        pod(
            "other",
            json!({"schedulerName": "my-scheduler", "containers": [container(&[])]}),
        ),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let other = t.get(&pod_path("other")).await.json();
    assert!(other["spec"].get("nodeName").is_none(), "{other:#}");
    assert!(condition(&other, "PodScheduled").is_none());
}

#[tokio::test]
async fn anti_affinity_by_hostname_spreads_and_freed_room_is_used() {
    let t = cluster(2).await;
    let spread = |name: &str| {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "spread"}},
            "spec": {
                "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "spread"}}, "topologyKey": "kubernetes.io/hostname"}
                ]}},
                "containers": [container(&[])],
            },
        })
    };
    for name in ["a", "b"] {
        create_pod(&t, spread(name)).await;
        eventually(&t, &pod_path(name), "the Pod is bound", |p| {
            p["spec"]["nodeName"].is_string()
        })
        .await;
    }
    let a = t.get(&pod_path("a")).await.json();
    let b = t.get(&pod_path("b")).await.json();
    assert_ne!(a["spec"]["nodeName"], b["spec"]["nodeName"]);
    create_pod(&t, spread("c")).await;
    let c = eventually(&t, &pod_path("c"), "c is unschedulable", |p| {
        condition_status(p, "PodScheduled") == "False"
    })
    .await;
    assert_eq!(
        condition(&c, "PodScheduled").expect("condition")["message"],
        "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules. \
         no new claims to deallocate, preemption: 0/2 nodes are available: \
         2 No preemption victims found for incoming pod."
    );
    // Deleting `a` (no grace period at time scale 0) frees its node for `c`.
    assert_eq!(t.delete(&pod_path("a")).await.status, 200);
    let c = eventually(&t, &pod_path("c"), "c is bound", |p| {
        p["spec"]["nodeName"].is_string()
    })
    .await;
    assert_eq!(c["spec"]["nodeName"], a["spec"]["nodeName"]);
}

#[tokio::test]
async fn a_custom_scheduler_binds_through_the_binding_subresource() {
    let t = cluster(1).await;
    let mut spec = json!({"containers": [container(&["sleep", "3600"])]});
    spec["schedulerName"] = json!("my-scheduler");
    create_pod(&t, pod("custom", spec)).await;
    // The default scheduler leaves it alone.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let waiting = t.get(&pod_path("custom")).await.json();
    assert_eq!(waiting["spec"]["nodeName"], Value::Null, "{waiting:#}");
    let binding = |name: &str, target: Value| json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name}, "target": target});
    let path = format!("{}/binding", pod_path("custom"));
    t.post(
        &path,
        &binding("other", json!({"kind": "Node", "name": "node-1"})),
    )
    .await
    .assert_status_message(400, "name in URL does not match name in Binding object");
    t.post(&path, &binding("custom", json!({"kind": "Pod", "name": "node-1"})))
        .await
        .assert_status_message(
            500,
            "Internal error occurred: target.kind: Unsupported value: \"Pod\": supported values: \"Node\", \"<empty>\"",
        );
    t.post(&path, &binding("custom", json!({})))
        .await
        .assert_status_message(500, "Internal error occurred: target.name: Required value");
    let bound = t
        .post(
            &path,
            &binding("custom", json!({"kind": "Node", "name": "node-1"})),
        )
        .await;
    assert_eq!(bound.status, 201, "{}", bound.json());
    assert_eq!(bound.json()["status"], "Success");
    let running = eventually(&t, &pod_path("custom"), "the bound Pod runs", |p| {
        p["status"]["phase"] == "Running"
    })
    .await;
    assert_eq!(running["spec"]["nodeName"], "node-1");
    assert_eq!(condition_status(&running, "PodScheduled"), "True");
    t.post(&path, &binding("custom", json!({"name": "node-1"})))
        .await
        .assert_status_message(
            409,
            "Operation cannot be fulfilled on pods/binding \"custom\": pod custom is already assigned to node \"node-1\"",
        );
    let discovery = t.get("/api/v1").await.json();
    let listed = discovery["resources"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["name"] == "pods/binding").cloned())
        .unwrap_or_default();
    assert_eq!(listed["verbs"], json!(["create"]), "{listed:#}");
    assert_eq!(listed["kind"], "Binding");
}

#[tokio::test]
async fn kubelets_run_pods_with_addresses_conditions_and_container_statuses() {
    let t = cluster(1).await;
    let mut spec = json!({
        "initContainers": [{"name": "setup", "image": "busybox", "command": ["echo", "ready"]}],
        "containers": [container(&[])],
    });
    spec["containers"][0]["name"] = json!("web");
    create_pod(&t, pod("web", spec)).await;
    let running = eventually(&t, &pod_path("web"), "the Pod is Running and Ready", |p| {
        p["status"]["phase"] == "Running" && condition_status(p, "Ready") == "True"
    })
    .await;
    let status = &running["status"];
    assert_eq!(running["spec"]["nodeName"], "node-1");
    assert!(
        status["podIP"]
            .as_str()
            .is_some_and(|ip| ip.starts_with("10.244.1.")),
        "{status:#}"
    );
    assert_eq!(status["hostIP"], "172.18.0.3");
    assert_eq!(status["podIPs"][0]["ip"], status["podIP"]);
    for kind in [
        "PodReadyToStartContainers",
        "Initialized",
        "ContainersReady",
        "Ready",
        "PodScheduled",
    ] {
        assert_eq!(
            condition_status(&running, kind),
            "True",
            "{kind}: {status:#}"
        );
    }
    let init = &status["initContainerStatuses"][0];
    assert_eq!(init["name"], "setup");
    assert_eq!(init["state"]["terminated"]["exitCode"], 0);
    assert_eq!(init["state"]["terminated"]["reason"], "Completed");
    let web = &status["containerStatuses"][0];
    assert_eq!(web["name"], "web");
    assert_eq!(web["ready"], true);
    assert_eq!(web["started"], true);
    assert_eq!(web["restartCount"], 0);
    assert!(web["state"]["running"]["startedAt"].is_string());
    assert!(
        web["containerID"]
            .as_str()
            .is_some_and(|id| id.starts_with("containerd://"))
    );
    assert_eq!(status["qosClass"], "BestEffort");
    // A second Pod gets another address.
    create_pod(&t, pod("second", json!({"containers": [container(&[])]}))).await;
    let second = eventually(&t, &pod_path("second"), "the second Pod runs", |p| {
        p["status"]["phase"] == "Running"
    })
    .await;
    assert_ne!(second["status"]["podIP"], status["podIP"]);
}

#[tokio::test]
async fn run_to_completion_pods_end_with_their_commands_exit_codes() {
    let t = cluster(1).await;
    let cases = [
        ("succeeds", "Never", vec!["true"], "Succeeded", 0),
        ("fails", "Never", vec!["exit", "3"], "Failed", 3),
        ("retried", "OnFailure", vec!["echo", "done"], "Succeeded", 0),
    ];
    for (name, policy, command, _, _) in &cases {
        create_pod(
            &t,
            pod(
                name,
                json!({"restartPolicy": policy, "containers": [container(command)]}),
            ),
        )
        .await;
    }
    for (name, _, _, phase, code) in cases {
        let done = eventually(&t, &pod_path(name), "the Pod finishes", |p| {
            matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed"))
        })
        .await;
        assert_eq!(
            done["status"]["phase"], phase,
            "{name}: {:#}",
            done["status"]
        );
        let terminated = &done["status"]["containerStatuses"][0]["state"]["terminated"];
        assert_eq!(terminated["exitCode"], code, "{name}");
        assert_eq!(
            terminated["reason"],
            if code == 0 { "Completed" } else { "Error" }
        );
        assert_eq!(condition_status(&done, "Ready"), "False");
        assert_eq!(
            condition(&done, "Ready").expect("Ready")["reason"],
            "PodCompleted"
        );
    }
    // A failing init container under `Never` fails the Pod before its containers start.
    create_pod(
        &t,
        pod(
            "init-fails",
            json!({
                "restartPolicy": "Never",
                "initContainers": [{"name": "setup", "image": "busybox", "command": ["false"]}],
                "containers": [container(&[])],
            }),
        ),
    )
    .await;
    let failed = eventually(&t, &pod_path("init-fails"), "the Pod fails", |p| {
        p["status"]["phase"] == "Failed"
    })
    .await;
    assert_eq!(
        failed["status"]["initContainerStatuses"][0]["state"]["terminated"]["exitCode"],
        1
    );
    assert!(failed["status"]["containerStatuses"][0]["state"]["waiting"].is_object());
}

#[tokio::test]
async fn a_crashing_container_restarts_with_back_off() {
    let t = cluster_at(1, 0.01).await;
    create_pod(
        &t,
        pod("crash", json!({"containers": [container(&["exit", "1"])]})),
    )
    .await;
    let crashing = eventually(&t, &pod_path("crash"), "the container restarts", |p| {
        p["status"]["containerStatuses"][0]["restartCount"]
            .as_u64()
            .is_some_and(|n| n >= 2)
    })
    .await;
    let status = &crashing["status"]["containerStatuses"][0];
    assert_eq!(crashing["status"]["phase"], "Running");
    assert_eq!(status["lastState"]["terminated"]["exitCode"], 1);
    let waiting = eventually(&t, &pod_path("crash"), "CrashLoopBackOff shows", |p| {
        p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    })
    .await;
    let message = waiting["status"]["containerStatuses"][0]["state"]["waiting"]["message"]
        .as_str()
        .unwrap_or("");
    assert!(message.starts_with("back-off "), "{message}");
    assert!(
        message.contains("restarting failed container=main pod=crash_default("),
        "{message}"
    );
}

#[tokio::test]
async fn a_deleted_pod_terminates_after_its_scaled_grace_period() {
    let t = cluster_at(1, 0.5).await;
    create_pod(
        &t,
        pod("slow", json!({"terminationGracePeriodSeconds": 2, "containers": [container(&["sleep", "600"])]})),
    )
    .await;
    eventually(&t, &pod_path("slow"), "the Pod runs", |p| {
        p["status"]["phase"] == "Running"
    })
    .await;
    let started = Instant::now();
    let reply = t.delete(&pod_path("slow")).await;
    assert_eq!(reply.status, 200);
    let marked = reply.json();
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 2);
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    // Still there while the grace period (2 s x 0.5) runs.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(t.get(&pod_path("slow")).await.status, 200);
    let deadline = Instant::now() + Duration::from_secs(10);
    while t.get(&pod_path("slow")).await.status != 404 {
        assert!(Instant::now() < deadline, "the Pod goes within 10 s");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(900), "gone after {took:?}");
    // A Pod that never ran here (another scheduler's, unbound) goes at once.
    create_pod(
        &t,
        pod(
            "unbound",
            json!({"schedulerName": "none", "containers": [container(&[])]}),
        ),
    )
    .await;
    assert_eq!(t.delete(&pod_path("unbound")).await.status, 200);
    assert_eq!(t.get(&pod_path("unbound")).await.status, 404);
}

#[tokio::test]
async fn without_nodes_pods_are_bound_at_create_and_nothing_runs() {
    let t = TestServer::start().await;
    assert!(t.server.cluster().node_names().is_empty());
    let created = create_pod(&t, pod("plain", json!({"containers": [container(&[])]}))).await;
    assert_eq!(created["spec"]["nodeName"], "kubeclient-node");
    assert_eq!(created["status"]["phase"], "Pending");
    let nodes = t.get("/api/v1/nodes").await.json();
    assert_eq!(nodes["items"], json!([]));
}

#[tokio::test]
async fn kubectl_sees_nodes_and_running_pods() {
    let t = cluster(2).await;
    let kubectl = Kubectl::for_server(&t);
    let nodes = kubectl.ok(&["get", "nodes"]).await;
    assert!(
        nodes.lines().filter(|l| l.contains(" Ready ")).count() == 2,
        "{nodes}"
    );
    kubectl.ok(&["run", "web", "--image=nginx"]).await;
    kubectl
        .ok(&["wait", "--for=condition=Ready", "pod/web", "--timeout=20s"])
        .await;
    let wide = kubectl.ok(&["get", "pods", "-o", "wide"]).await;
    let line = wide
        .lines()
        .find(|l| l.starts_with("web "))
        .unwrap_or_default();
    assert!(line.contains("Running"), "{wide}");
    assert!(line.contains("node-"), "{wide}");
    assert!(line.contains("10.244."), "{wide}");
    kubectl
        .ok(&["delete", "pod", "web", "--wait=true", "--timeout=20s"])
        .await;
}
