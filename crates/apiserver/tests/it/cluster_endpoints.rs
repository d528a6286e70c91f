//! The Endpoints and EndpointSlice controllers of the simulated cluster (issue 26), over
//! real HTTP and kubectl: every Service with a selector gets Endpoints and
//! `discovery.k8s.io/v1` EndpointSlices from the Pods it selects (ready and not ready,
//! ports by name and number, `nodeName`, `targetRef`, the slices' `ready`, `serving` and
//! `terminating` conditions), kept as Pods come and go, removed with the Service.

use std::time::Duration;

use serde_json::{Value, json};

use crate::cluster::{cluster_at, container, create_pod, eventually, pod, pod_path};
use crate::kubectl::Kubectl;
use crate::support::{TestServer, eventually_status};

const ENDPOINTS: &str = "/api/v1/namespaces/default/endpoints";
const SLICES: &str = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices";

fn labelled(mut pod: Value, app: &str) -> Value {
    pod["metadata"]["labels"] = json!({"app": app});
    pod
}

fn serving(ports: Value) -> Value {
    let mut main = container(&[]);
    main["ports"] = ports;
    main
}

fn names(addresses: &Value) -> Vec<&str> {
    let mut names: Vec<&str> = addresses
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a["targetRef"]["name"].as_str())
        .collect();
    names.sort_unstable();
    names
}

/// The slices of Service `web`, by the name of their first port ("" for none).
async fn slices_of(t: &TestServer, service: &str) -> Vec<Value> {
    let reply = t
        .get(&format!(
            "{SLICES}?labelSelector=kubernetes.io%2Fservice-name%3D{service}"
        ))
        .await;
    assert_eq!(reply.status, 200);
    reply.json()["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The Service's slices once the slice controller has written `count` of them, each with
/// endpoints (the Endpoints and EndpointSlice controllers run apart: one being done says
/// nothing of the other).
async fn settled_slices(t: &TestServer, service: &str, count: usize) -> Vec<Value> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let slices = slices_of(t, service).await;
        let settled = slices.len() == count
            && slices
                .iter()
                .all(|s| s["endpoints"].as_array().is_some_and(|e| !e.is_empty()));
        if settled {
            return slices;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{count} slices with endpoints for {service} within 10 s: {slices:#?}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test]
async fn services_get_endpoints_and_slices_of_their_pods() {
    let t = cluster_at(2, 1.0).await;
    let http = json!([{"name": "http", "containerPort": 8080}]);
    // Ready, with the named port; ready without it; not ready (its init container
    // sleeps); another app's; finished.
    create_pod(
        &t,
        labelled(
            pod("web-a", json!({"containers": [serving(http.clone())]})),
            "web",
        ),
    )
    .await;
    create_pod(
        &t,
        labelled(pod("web-b", json!({"containers": [container(&[])]})), "web"),
    )
    .await;
    let waiting = json!({
        "initContainers": [{"name": "wait", "image": "busybox", "command": ["sleep", "600"]}],
        "containers": [serving(http.clone())],
    });
    create_pod(&t, labelled(pod("web-c", waiting), "web")).await;
    create_pod(
        &t,
        labelled(
            pod("other", json!({"containers": [serving(http.clone())]})),
            "other",
        ),
    )
    .await;
    create_pod(
        &t,
        labelled(
            pod(
                "done",
                json!({"restartPolicy": "Never", "containers": [container(&["true"])]}),
            ),
            "web",
        ),
    )
    .await;
    let service = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "labels": {"tier": "front"}},
        "spec": {"selector": {"app": "web"}, "ports": [
            {"name": "http", "port": 80, "targetPort": "http"},
            {"name": "metrics", "port": 9090},
        ]},
    });
    assert_eq!(
        t.post("/api/v1/namespaces/default/services", &service)
            .await
            .status,
        201
    );
    let endpoints = eventually(
        &t,
        &format!("{ENDPOINTS}/web"),
        "two subsets, web-c not ready",
        |e| {
            e["subsets"].as_array().is_some_and(|s| {
                s.len() == 2
                    && s.iter()
                        .any(|s| names(&s["notReadyAddresses"]) == ["web-c"])
            }) && e["subsets"].as_array().is_some_and(|s| {
                s.iter()
                    .map(|s| names(&s["addresses"]).len())
                    .sum::<usize>()
                    == 2
            })
        },
    )
    .await;
    assert_eq!(endpoints["metadata"]["labels"], json!({"tier": "front"}));
    let subsets = endpoints["subsets"].as_array().expect("subsets");
    let both = subsets
        .iter()
        .find(|s| s["ports"].as_array().is_some_and(|p| p.len() == 2))
        .expect("the subset with both ports");
    assert_eq!(names(&both["addresses"]), ["web-a"]);
    assert_eq!(
        both["ports"],
        json!([
            {"name": "http", "port": 8080, "protocol": "TCP"},
            {"name": "metrics", "port": 9090, "protocol": "TCP"},
        ])
    );
    let address = &both["addresses"][0];
    let web_a = t.get(&pod_path("web-a")).await.json();
    assert_eq!(address["ip"], web_a["status"]["podIP"]);
    assert_eq!(address["nodeName"], web_a["spec"]["nodeName"]);
    assert_eq!(address["targetRef"]["uid"], web_a["metadata"]["uid"]);
    assert_eq!(address["targetRef"]["kind"], "Pod");
    let metrics_only = subsets
        .iter()
        .find(|s| s["ports"].as_array().is_some_and(|p| p.len() == 1))
        .expect("the subset with the metrics port only");
    assert_eq!(names(&metrics_only["addresses"]), ["web-b"]);
    assert_eq!(
        metrics_only["ports"],
        json!([{"name": "metrics", "port": 9090, "protocol": "TCP"}])
    );

    // The slices: one per set of ports, owned by the Service.
    let slices = settled_slices(&t, "web", 2).await;
    let service = t
        .get("/api/v1/namespaces/default/services/web")
        .await
        .json();
    for slice in &slices {
        assert_eq!(slice["addressType"], "IPv4");
        assert!(
            slice["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("web-"))
        );
        assert_eq!(
            slice["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"],
            "endpointslice-controller.k8s.io"
        );
        assert_eq!(slice["metadata"]["labels"]["tier"], "front");
        let owner = &slice["metadata"]["ownerReferences"][0];
        assert_eq!(owner["kind"], "Service");
        assert_eq!(owner["uid"], service["metadata"]["uid"]);
        assert_eq!(owner["controller"], true);
    }
    let both = slices
        .iter()
        .find(|s| s["ports"].as_array().is_some_and(|p| p.len() == 2))
        .expect("the slice with both ports");
    let endpoint = |slice: &Value, name: &str| -> Value {
        slice["endpoints"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|e| e["targetRef"]["name"] == name)
            .cloned()
            .unwrap_or(Value::Null)
    };
    let a = endpoint(both, "web-a");
    assert_eq!(
        a["conditions"],
        json!({"ready": true, "serving": true, "terminating": false})
    );
    assert_eq!(a["addresses"], json!([web_a["status"]["podIP"]]));
    assert_eq!(a["nodeName"], web_a["spec"]["nodeName"]);
    assert_eq!(
        endpoint(both, "web-c")["conditions"],
        json!({"ready": false, "serving": false, "terminating": false})
    );
    assert_eq!(both["endpoints"].as_array().map(Vec::len), Some(2));

    // web-a is deleted with its 30 s grace period: the slice shows it terminating and
    // still serving; Endpoints drop it.
    assert_eq!(t.delete(&pod_path("web-a")).await.status, 200);
    eventually(
        &t,
        &format!("{ENDPOINTS}/web"),
        "web-a leaves Endpoints",
        |e| {
            e["subsets"]
                .as_array()
                .is_some_and(|s| s.iter().all(|s| !names(&s["addresses"]).contains(&"web-a")))
        },
    )
    .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let slices = slices_of(&t, "web").await;
        let terminating = slices
            .iter()
            .map(|s| endpoint(s, "web-a"))
            .find(|e| !e.is_null());
        if terminating
            .as_ref()
            .is_some_and(|e| e["conditions"]["terminating"] == true)
        {
            assert_eq!(
                terminating.map(|e| e["conditions"].clone()),
                Some(json!({"ready": false, "serving": true, "terminating": true}))
            );
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "web-a terminating in a slice: {slices:#?}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }

    // kubectl reads them as it reads a real cluster's.
    let kubectl = Kubectl::for_server(&t);
    let listed = kubectl
        .ok(&[
            "get",
            "endpointslices",
            "-l",
            "kubernetes.io/service-name=web",
        ])
        .await;
    assert!(listed.contains("IPv4"), "{listed}");
    let described = kubectl.ok(&["get", "endpoints", "web"]).await;
    assert!(described.contains(":9090"), "{described}");

    // A Service without a selector gets nothing; one selecting nothing an empty
    // Endpoints and a placeholder slice.
    let manual = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "manual"}, "spec": {"ports": [{"port": 80}]}});
    assert_eq!(
        t.post("/api/v1/namespaces/default/services", &manual)
            .await
            .status,
        201
    );
    let empty = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "empty"}, "spec": {"selector": {"app": "none"}, "ports": [{"port": 80}]}});
    assert_eq!(
        t.post("/api/v1/namespaces/default/services", &empty)
            .await
            .status,
        201
    );
    eventually_status(&t, &format!("{ENDPOINTS}/empty"), 200).await;
    let placeholder = loop {
        let slices = slices_of(&t, "empty").await;
        if let Some(slice) = slices.first() {
            break slice.clone();
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    assert!(
        placeholder["endpoints"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "{placeholder:#}"
    );
    assert!(
        placeholder.get("ports").is_none_or(Value::is_null),
        "{placeholder:#}"
    );
    assert_eq!(t.get(&format!("{ENDPOINTS}/manual")).await.status, 404);
    assert!(slices_of(&t, "manual").await.is_empty());

    // The Service goes: its Endpoints and slices go with it.
    assert_eq!(
        t.delete("/api/v1/namespaces/default/services/web")
            .await
            .status,
        200
    );
    eventually_status(&t, &format!("{ENDPOINTS}/web"), 404).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !slices_of(&t, "web").await.is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the slices go with the Service"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test]
async fn a_headless_service_publishing_not_ready_pods_lists_them_as_ready() {
    let t = cluster_at(1, 0.0).await;
    let waiting = json!({
        "hostname": "db-0", "subdomain": "db",
        "initContainers": [{"name": "wait", "image": "busybox", "command": ["sleep", "600"]}],
        "containers": [container(&[])],
    });
    create_pod(&t, labelled(pod("db-0", waiting), "db")).await;
    eventually(&t, &pod_path("db-0"), "the Pod has an address", |p| {
        p["status"]["podIP"].is_string()
    })
    .await;
    let service = json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "db"},
        "spec": {"clusterIP": "None", "publishNotReadyAddresses": true, "selector": {"app": "db"}},
    });
    assert_eq!(
        t.post("/api/v1/namespaces/default/services", &service)
            .await
            .status,
        201
    );
    let endpoints = eventually(&t, &format!("{ENDPOINTS}/db"), "db-0 listed", |e| {
        e["subsets"][0]["addresses"].is_array()
    })
    .await;
    assert_eq!(
        endpoints["metadata"]["labels"]["service.kubernetes.io/headless"],
        ""
    );
    assert_eq!(endpoints["subsets"][0]["addresses"][0]["hostname"], "db-0");
    assert!(endpoints["subsets"][0].get("ports").is_none());
    let slices = settled_slices(&t, "db", 1).await;
    let endpoint = &slices[0]["endpoints"][0];
    assert_eq!(
        endpoint["conditions"],
        json!({"ready": true, "serving": true, "terminating": false})
    );
    assert_eq!(endpoint["hostname"], "db-0");
    assert_eq!(
        slices[0]["metadata"]["labels"]["service.kubernetes.io/headless"],
        ""
    );
}
