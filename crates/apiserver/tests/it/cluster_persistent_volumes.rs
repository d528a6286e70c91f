//! The default StorageClass and the PersistentVolume controller (issue 26) over real
//! HTTP: a claim naming no class gets `standard` at create and is bound at once to a
//! provisioned host-path volume `pvc-<uid>`; `storageClassName: ""` stays pending; a
//! deleted claim's volume goes.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::cluster::{cluster, eventually};
use crate::support::TestServer;

const CLAIMS: &str = "/api/v1/namespaces/default/persistentvolumeclaims";

fn claim(name: &str, class: Option<&str>) -> Value {
    let mut claim = json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "2Gi"}}},
    });
    if let Some(class) = class {
        claim["spec"]["storageClassName"] = json!(class);
    }
    claim
}

#[tokio::test]
async fn claims_get_the_default_class_and_are_bound_to_provisioned_volumes() {
    let t = cluster(1).await;
    let class = t
        .get("/apis/storage.k8s.io/v1/storageclasses/standard")
        .await
        .json();
    assert_eq!(
        class["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"],
        "true"
    );
    assert_eq!(class["volumeBindingMode"], "Immediate");
    let created = t.post(CLAIMS, &claim("data", None)).await;
    assert_eq!(created.status, 201, "{}", created.json());
    let created = created.json();
    assert_eq!(created["spec"]["storageClassName"], "standard");
    let uid = created["metadata"]["uid"].as_str().unwrap_or("").to_owned();
    let bound = eventually(&t, &format!("{CLAIMS}/data"), "the claim is bound", |c| {
        c["status"]["phase"] == "Bound"
    })
    .await;
    let volume_name = format!("pvc-{uid}");
    assert_eq!(bound["spec"]["volumeName"], volume_name.as_str());
    assert_eq!(bound["status"]["capacity"]["storage"], "2Gi");
    assert_eq!(
        bound["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"],
        "yes"
    );
    let volume_path = format!("/api/v1/persistentvolumes/{volume_name}");
    let volume = eventually(&t, &volume_path, "the volume is bound", |v| {
        v["status"]["phase"] == "Bound"
    })
    .await;
    assert_eq!(volume["spec"]["claimRef"]["name"], "data");
    assert_eq!(volume["spec"]["claimRef"]["uid"], uid.as_str());
    assert_eq!(volume["spec"]["storageClassName"], "standard");
    assert_eq!(volume["spec"]["persistentVolumeReclaimPolicy"], "Delete");
    assert!(volume["spec"]["hostPath"]["path"].is_string());
    // No class asked for: no default, no volume.
    let created = t.post(CLAIMS, &claim("static", Some(""))).await.json();
    assert_eq!(created["spec"]["storageClassName"], "");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let pending = t.get(&format!("{CLAIMS}/static")).await.json();
    assert_eq!(pending["status"]["phase"], "Pending");
    // The claim goes; its volume (reclaim policy Delete) follows.
    assert_eq!(t.delete(&format!("{CLAIMS}/data")).await.status, 200);
    let deadline = Instant::now() + Duration::from_secs(10);
    while t.get(&volume_path).await.status != 404 {
        assert!(Instant::now() < deadline, "the volume is deleted");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test]
async fn without_a_cluster_there_is_no_default_class() {
    let t = TestServer::start().await;
    let created = t.post(CLAIMS, &claim("data", None)).await;
    assert_eq!(created.status, 201);
    assert!(created.json()["spec"].get("storageClassName").is_none());
}
