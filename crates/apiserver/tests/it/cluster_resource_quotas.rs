//! ResourceQuotas (issue 26) over real HTTP: the quota admission plugin refuses a create
//! that would exceed a quota (403 with kube-apiserver's `exceeded quota` message) or a
//! Pod that leaves out a constrained resource (`failed quota: ... must specify`), even
//! under racing creates; the resource quota controller keeps `status.hard` and
//! `status.used`, and a Pod that finished uses no share but its count. Scoped quotas count only
//! the Pods they select.

use futures_util::future::join_all;
use kubeclient_apiserver::ApiServer;
use serde_json::{Value, json};

use crate::cluster::{cluster, container, create_pod, eventually, pod, pod_path};
use crate::support::TestServer;

const QUOTAS: &str = "/api/v1/namespaces/default/resourcequotas";
const PODS: &str = "/api/v1/namespaces/default/pods";

fn quota(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name}, "spec": spec})
}

async fn create_quota(t: &TestServer, name: &str, spec: Value) {
    let reply = t.post(QUOTAS, &quota(name, spec)).await;
    assert_eq!(reply.status, 201, "{}", reply.json());
}

/// A Pod whose one container requests `cpu` and asks for nothing else.
fn pod_requesting(name: &str, cpu: &str) -> Value {
    let mut main = container(&["sleep", "3600"]);
    main["resources"] = json!({"requests": {"cpu": cpu}});
    pod(name, json!({"containers": [main]}))
}

#[tokio::test]
async fn the_controller_keeps_hard_and_used_and_finished_pods_give_their_share_back() {
    let t = cluster(1).await;
    create_quota(
        &t,
        "compute",
        json!({"hard": {"pods": "3", "requests.cpu": "2", "count/pods": "10", "services": "5"}}),
    )
    .await;
    let path = format!("{QUOTAS}/compute");
    let status = eventually(&t, &path, "the quota has a status", |q| {
        q["status"]["used"]["pods"] == "0"
    })
    .await;
    assert_eq!(
        status["status"]["hard"],
        json!({"pods": "3", "requests.cpu": "2", "count/pods": "10", "services": "5"})
    );
    assert_eq!(status["status"]["used"]["requests.cpu"], "0");
    create_pod(&t, pod_requesting("web", "500m")).await;
    eventually(&t, &path, "the Pod is counted", |q| {
        q["status"]["used"]["pods"] == "1" && q["status"]["used"]["requests.cpu"] == "500m"
    })
    .await;
    // A Pod that runs to completion (at once, at time scale 0).
    let mut done = pod_requesting("job", "250m");
    done["spec"]["restartPolicy"] = json!("Never");
    done["spec"]["containers"][0]["command"] = json!(["sh", "-c", "echo done"]);
    create_pod(&t, done).await;
    eventually(&t, &pod_path("job"), "the job Pod succeeds", |p| {
        p["status"]["phase"] == "Succeeded"
    })
    .await;
    // A Pod at its end no longer uses `pods` or its requests; `count/pods` counts it.
    let after = eventually(
        &t,
        &path,
        "the finished Pod counts in count/pods only",
        |q| {
            let used = &q["status"]["used"];
            used["count/pods"] == "2" && used["pods"] == "1" && used["requests.cpu"] == "500m"
        },
    )
    .await;
    assert_eq!(
        after["status"]["used"]["services"], "1",
        "the kubernetes Service"
    );
}

#[tokio::test]
async fn creates_over_a_quota_are_refused_as_kube_apiserver_refuses_them() {
    let t = cluster(1).await;
    create_quota(
        &t,
        "small",
        json!({"hard": {"pods": "1", "requests.cpu": "1"}}),
    )
    .await;
    // The plugin counts what is stored, so the limit holds before any status is written.
    create_pod(&t, pod_requesting("first", "600m")).await;
    let reply = t.post(PODS, &pod_requesting("second", "100m")).await;
    reply.assert_status_message(
        403,
        "pods \"second\" is forbidden: exceeded quota: small, requested: pods=1, used: pods=1, limited: pods=1",
    );
    assert_eq!(reply.json()["reason"], "Forbidden");
    assert_eq!(t.delete(&pod_path("first")).await.status, 200);
    eventually_gone(&t, &pod_path("first")).await;
    let reply = t.post(PODS, &pod_requesting("big", "1500m")).await;
    reply.assert_status_message(
        403,
        "pods \"big\" is forbidden: exceeded quota: small, requested: requests.cpu=1500m, used: requests.cpu=0, limited: requests.cpu=1",
    );
    // A container that names no CPU request cannot be counted against `requests.cpu`.
    let mut sidecar = container(&["sleep", "3600"]);
    sidecar["name"] = json!("sidecar");
    let mut bare = pod_requesting("bare", "100m");
    bare["spec"]["containers"]
        .as_array_mut()
        .expect("containers")
        .push(sidecar);
    t.post(PODS, &bare).await.assert_status_message(
        403,
        "pods \"bare\" is forbidden: failed quota: small: must specify requests.cpu for: sidecar",
    );
    // Objects the quota does not name are not its business.
    let map = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "free"}});
    let reply = t.post("/api/v1/namespaces/default/configmaps", &map).await;
    assert_eq!(reply.status, 201);
}

async fn eventually_gone(t: &TestServer, path: &str) {
    crate::support::eventually_status(t, path, 404).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_creates_never_take_more_than_the_quota_allows() {
    let t = TestServer::start().await;
    create_quota(&t, "maps", json!({"hard": {"count/configmaps": "200"}})).await;
    let creates = (0..400).map(|i| {
        let map =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("m{i}")}});
        let t = &t;
        async move {
            t.post("/api/v1/namespaces/default/configmaps", &map)
                .await
                .status
        }
    });
    let statuses = join_all(creates).await;
    let created = statuses.iter().filter(|s| **s == 201).count();
    let refused = statuses.iter().filter(|s| **s == 403).count();
    // `kube-root-ca.crt` may already take one of the 200. (Without the admission lock
    // this overran the quota in two runs of three.)
    let stored = t.get("/api/v1/namespaces/default/configmaps").await.json();
    let total = stored["items"].as_array().map_or(0, Vec::len);
    assert_eq!(total, 200, "{created} created, {refused} refused");
    assert_eq!(created + refused, 400, "{statuses:?}");
}

#[tokio::test]
async fn scoped_quotas_count_only_the_pods_they_select() {
    let t = cluster(1).await;
    create_quota(
        &t,
        "best-effort",
        json!({"hard": {"pods": "1"}, "scopes": ["BestEffort"]}),
    )
    .await;
    create_pod(
        &t,
        pod(
            "free-1",
            json!({"containers": [container(&["sleep", "3600"])]}),
        ),
    )
    .await;
    let reply = t
        .post(
            PODS,
            &pod(
                "free-2",
                json!({"containers": [container(&["sleep", "3600"])]}),
            ),
        )
        .await;
    assert_eq!(reply.status, 403, "{}", reply.json());
    // Pods with requests are not BestEffort: this quota does not count them.
    create_pod(&t, pod_requesting("paid", "100m")).await;
    let path = format!("{QUOTAS}/best-effort");
    eventually(&t, &path, "the quota counts the BestEffort Pod only", |q| {
        q["status"]["used"]["pods"] == "1"
    })
    .await;
}

#[tokio::test]
async fn without_the_controller_quotas_get_no_status_but_still_admit() {
    let t = TestServer::start_with(
        ApiServer::builder()
            .nodes(1)
            .resource_quota_controller(false),
    )
    .await;
    create_quota(&t, "one", json!({"hard": {"services": "2"}})).await;
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"ports": [{"port": 80}]}});
    // The `kubernetes` Service takes one of the two.
    assert_eq!(
        t.post("/api/v1/namespaces/default/services", &service)
            .await
            .status,
        201
    );
    let mut second = service.clone();
    second["metadata"]["name"] = json!("api");
    let reply = t.post("/api/v1/namespaces/default/services", &second).await;
    assert_eq!(reply.status, 403, "{}", reply.json());
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let quota = t.get(&format!("{QUOTAS}/one")).await.json();
    assert!(
        quota.get("status").is_none_or(|s| s.get("used").is_none()),
        "{quota:#}"
    );
}
