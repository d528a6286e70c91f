//! The DaemonSet controller of the simulated cluster (issue 26), over real HTTP and
//! kubectl: one Pod per node its tolerations allow, a tainted node skipped until the taint
//! goes, a cordoned node keeping its Pod, `kubectl rollout status ds/...` and a new image
//! rolled out node by node.

use serde_json::{Value, json};

use crate::cluster::{cluster, condition_status, container, eventually};
use crate::kubectl::Kubectl;
use crate::support::TestServer;

const PATH: &str = "/apis/apps/v1/namespaces/default/daemonsets";

async fn agent_pods(t: &TestServer) -> Vec<Value> {
    let pods = t
        .get("/api/v1/namespaces/default/pods?labelSelector=app%3Dagent")
        .await
        .json();
    pods["items"].as_array().cloned().unwrap_or_default()
}

fn nodes_of(pods: &[Value]) -> Vec<String> {
    let mut nodes: Vec<String> = pods
        .iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .filter_map(|p| p["spec"]["nodeName"].as_str().map(str::to_owned))
        .collect();
    nodes.sort();
    nodes
}

#[tokio::test]
async fn a_daemon_set_runs_one_pod_per_eligible_node_and_rolls_out() {
    let t = cluster(3).await;
    let taint = r#"{"spec":{"taints":[{"key":"dedicated","value":"db","effect":"NoSchedule"}]}}"#;
    let reply = t
        .patch(
            "/api/v1/nodes/node-3",
            "application/merge-patch+json",
            taint,
        )
        .await;
    assert_eq!(reply.status, 200);
    let daemon_set = json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "agent"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [container(&[])]}},
        },
    });
    assert_eq!(t.post(PATH, &daemon_set).await.status, 201);
    let agent = format!("{PATH}/agent");
    let status = eventually(&t, &agent, "two ready nodes", |ds| {
        ds["status"]["numberReady"] == 2 && ds["status"]["desiredNumberScheduled"] == 2
    })
    .await;
    assert_eq!(status["status"]["numberAvailable"], 2);
    assert_eq!(status["status"]["updatedNumberScheduled"], 2);
    assert_eq!(status["status"]["numberMisscheduled"], 0);
    let pods = agent_pods(&t).await;
    assert_eq!(nodes_of(&pods), ["node-1", "node-2"]);
    for pod in &pods {
        assert_eq!(pod["metadata"]["ownerReferences"][0]["kind"], "DaemonSet");
        assert!(pod["metadata"]["labels"]["controller-revision-hash"].is_string());
        let field = &pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"][0]["matchFields"][0];
        assert_eq!(field["key"], "metadata.name");
        assert_eq!(field["values"][0], pod["spec"]["nodeName"]);
        let tolerations = pod["spec"]["tolerations"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(
            tolerations
                .iter()
                .any(|t| t["key"] == "node.kubernetes.io/unschedulable")
        );
    }
    // The taint goes: node-3 gets its Pod. Cordoning node-1 keeps its Pod.
    let untaint = r#"{"spec":{"taints":null}}"#;
    assert_eq!(
        t.patch(
            "/api/v1/nodes/node-3",
            "application/merge-patch+json",
            untaint
        )
        .await
        .status,
        200
    );
    let kubectl = Kubectl::for_server(&t);
    kubectl.ok(&["cordon", "node-1"]).await;
    eventually(&t, &agent, "three ready nodes", |ds| {
        ds["status"]["numberReady"] == 3
    })
    .await;
    assert_eq!(
        nodes_of(&agent_pods(&t).await),
        ["node-1", "node-2", "node-3"]
    );
    let status = kubectl
        .ok(&["rollout", "status", "daemonset/agent", "--timeout=20s"])
        .await;
    assert!(status.contains("successfully rolled out"), "{status}");
    // A new image replaces every node's Pod.
    kubectl
        .ok(&["set", "image", "daemonset/agent", "main=busybox:2"])
        .await;
    let status = kubectl
        .ok(&["rollout", "status", "daemonset/agent", "--timeout=20s"])
        .await;
    assert!(status.contains("successfully rolled out"), "{status}");
    let pods = eventually(
        &t,
        "/api/v1/namespaces/default/pods?labelSelector=app%3Dagent",
        "three Pods of the new image, ready",
        |list| {
            list["items"].as_array().is_some_and(|pods| {
                pods.len() == 3
                    && pods.iter().all(|p| {
                        p["spec"]["containers"][0]["image"] == "busybox:2"
                            && condition_status(p, "Ready") == "True"
                    })
            })
        },
    )
    .await;
    assert_eq!(
        nodes_of(pods["items"].as_array().map_or(&[][..], Vec::as_slice)),
        ["node-1", "node-2", "node-3"]
    );
    let listed = kubectl.ok(&["get", "daemonset", "agent"]).await;
    assert!(
        listed.lines().nth(1).is_some_and(|l| l.contains(" 3 ")),
        "{listed}"
    );
}
