//! The StatefulSet controller of the simulated cluster (issue 26), over real HTTP and
//! kubectl: Pods by ordinal, each started once the one before is Ready, with stable
//! hostnames and claims from `volumeClaimTemplates`; scale-down from the highest ordinal;
//! `kubectl rollout status sts/...` through a rolling update.

use serde_json::{Value, json};

use crate::cluster::{cluster, condition_status, container, eventually};
use crate::kubectl::Kubectl;
use crate::support::describe;

const PATH: &str = "/apis/apps/v1/namespaces/default/statefulsets";
const PODS: &str = "/api/v1/namespaces/default/pods";

#[tokio::test]
async fn a_stateful_set_starts_pods_in_order_and_rolls_out_from_the_top() {
    let t = cluster(2).await;
    let list = t.get(PODS).await.json();
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("0")
        .to_owned();
    let mut events = t
        .watch(&format!(
            "{PODS}?watch=true&labelSelector=app%3Ddb&resourceVersion={rv}"
        ))
        .await;
    let set = json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 3, "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [container(&[])]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
            }}],
        },
    });
    let created = t.post(PATH, &set).await;
    assert_eq!(created.status, 201, "{}", created.json());
    // Each Pod appears only after the one before it is Ready.
    let mut ready: Vec<String> = Vec::new();
    let mut added: Vec<String> = Vec::new();
    while ready.len() < 3 {
        let event = events.next().await.expect("the watch goes on");
        let (kind, name) = describe(&event);
        if kind == "ADDED" {
            let ordinal: usize = name
                .trim_start_matches("db-")
                .parse()
                .expect("an ordinal name");
            assert_eq!(
                ordinal,
                added.len(),
                "Pods come in ordinal order: {added:?} then {name}"
            );
            assert_eq!(
                ready.len(),
                ordinal,
                "{name} waits for the Pods before it to be Ready"
            );
            added.push(name.clone());
        }
        if condition_status(&event["object"], "Ready") == "True" && !ready.contains(&name) {
            ready.push(name);
        }
    }
    let pod = t.get(&format!("{PODS}/db-1")).await.json();
    assert_eq!(pod["spec"]["hostname"], "db-1");
    assert_eq!(pod["spec"]["subdomain"], "db");
    assert_eq!(
        pod["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"],
        "db-1"
    );
    assert_eq!(
        pod["metadata"]["labels"]["apps.kubernetes.io/pod-index"],
        "1"
    );
    let volume = pod["spec"]["volumes"]
        .as_array()
        .and_then(|v| v.iter().find(|v| v["name"] == "data").cloned())
        .unwrap_or(Value::Null);
    assert_eq!(volume["persistentVolumeClaim"]["claimName"], "data-db-1");
    for ordinal in 0..3 {
        let claim = t
            .get(&format!(
                "/api/v1/namespaces/default/persistentvolumeclaims/data-db-{ordinal}"
            ))
            .await;
        assert_eq!(claim.status, 200, "the claim of db-{ordinal}");
    }
    let kubectl = Kubectl::for_server(&t);
    let status = kubectl
        .ok(&["rollout", "status", "statefulset/db", "--timeout=20s"])
        .await;
    assert!(
        status.contains("partitioned roll out complete")
            || status.contains("rolling update complete"),
        "{status}"
    );
    // A new image rolls out from the highest ordinal down.
    kubectl
        .ok(&["set", "image", "statefulset/db", "main=busybox:2"])
        .await;
    let mut deleted: Vec<String> = Vec::new();
    while deleted.len() < 3 {
        let event = events.next().await.expect("the watch goes on");
        let (kind, name) = describe(&event);
        if kind == "DELETED" {
            deleted.push(name);
        }
    }
    assert_eq!(deleted, ["db-2", "db-1", "db-0"]);
    let status = kubectl
        .ok(&["rollout", "status", "statefulset/db", "--timeout=20s"])
        .await;
    assert!(status.contains("complete"), "{status}");
    let set = eventually(&t, &format!("{PATH}/db"), "every Pod updated", |s| {
        s["status"]["updatedReplicas"] == 3 && s["status"]["readyReplicas"] == 3
    })
    .await;
    assert_eq!(
        set["status"]["currentRevision"],
        set["status"]["updateRevision"]
    );
    // Scaled down, the highest ordinals go first, one at a time.
    kubectl
        .ok(&["scale", "statefulset/db", "--replicas=1"])
        .await;
    let mut gone: Vec<String> = Vec::new();
    while gone.len() < 2 {
        let event = events.next().await.expect("the watch goes on");
        let (kind, name) = describe(&event);
        if kind == "DELETED" {
            gone.push(name);
        }
    }
    assert_eq!(gone, ["db-2", "db-1"]);
    // The claims stay.
    assert_eq!(
        t.get("/api/v1/namespaces/default/persistentvolumeclaims/data-db-2")
            .await
            .status,
        200
    );
}
