//! metrics-server's API (`metrics.k8s.io/v1beta1`) on a simulated cluster (issue 26) over
//! real HTTP and through `kubectl top`: PodMetrics of running Pods with their containers'
//! simulated usage, NodeMetrics with their Pods' share, label selectors, read only; a
//! server without a cluster does not serve the group.

use serde_json::{Value, json};

use crate::cluster::{cluster, container, create_pod, eventually, pod, pod_path};
use crate::kubectl::Kubectl;
use crate::support::TestServer;

const POD_METRICS: &str = "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods";
const NODE_METRICS: &str = "/apis/metrics.k8s.io/v1beta1/nodes";

fn web_pod(name: &str, cpu: &str, memory: &str) -> Value {
    let mut main = container(&["sleep", "3600"]);
    main["resources"] = json!({"requests": {"cpu": cpu, "memory": memory}});
    let mut web = pod(name, json!({"containers": [main]}));
    web["metadata"]["labels"] = json!({"app": name});
    web
}

#[tokio::test]
async fn running_pods_and_nodes_have_metrics_and_kubectl_top_shows_them() {
    let t = cluster(1).await;
    create_pod(&t, web_pod("web", "250m", "64Mi")).await;
    create_pod(&t, web_pod("api", "100m", "32Mi")).await;
    for name in ["web", "api"] {
        eventually(&t, &pod_path(name), "the Pod runs", |p| {
            p["status"]["phase"] == "Running"
        })
        .await;
    }
    let web = t.get(&format!("{POD_METRICS}/web")).await;
    assert_eq!(web.status, 200, "{}", web.json());
    let web = web.json();
    assert_eq!(web["kind"], "PodMetrics");
    assert_eq!(web["metadata"]["labels"]["app"], "web");
    assert_eq!(
        web["containers"],
        json!([{"name": "main", "usage": {"cpu": "250000000n", "memory": "65536Ki"}}])
    );
    assert!(web["timestamp"].is_string() && web["window"].is_string());
    let selected = t
        .get(&format!("{POD_METRICS}?labelSelector=app%3Dapi"))
        .await
        .json();
    assert_eq!(selected["kind"], "PodMetricsList");
    let names: Vec<&str> = selected["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| item["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["api"]);
    // The node: its own 50m and 128Mi plus its two Pods.
    let node = t.get(&format!("{NODE_METRICS}/node-1")).await.json();
    assert_eq!(
        node["usage"],
        json!({"cpu": "400000000n", "memory": "229376Ki"})
    );
    // Read only, like metrics-server.
    assert_eq!(t.post(POD_METRICS, &json!({})).await.status, 405);
    assert_eq!(
        t.get(&format!("{POD_METRICS}?watch=true")).await.status,
        405
    );
    assert_eq!(t.get(&format!("{POD_METRICS}/absent")).await.status, 404);

    let kubectl = Kubectl::for_server(&t);
    let top = kubectl.ok(&["top", "pod", "web"]).await;
    assert!(
        top.contains("web") && top.contains("250m") && top.contains("64Mi"),
        "{top}"
    );
    let top = kubectl.ok(&["top", "node"]).await;
    assert!(
        top.contains("node-1") && top.contains("400m") && top.contains("224Mi"),
        "{top}"
    );
}

#[tokio::test]
async fn without_a_cluster_there_is_no_metrics_api() {
    let t = TestServer::start().await;
    assert_eq!(t.get(NODE_METRICS).await.status, 404);
    let groups = t.get("/apis").await.json();
    let served = groups["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|group| group["name"] == "metrics.k8s.io");
    assert!(!served, "{groups:#}");
}
