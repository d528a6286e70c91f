//! The workload controllers of the simulated cluster (issue 26) over real HTTP and
//! kubectl: a ReplicaSet keeping its replicas, Deployments rolled out, updated, undone,
//! restarted, paused and resumed, and Jobs completing, failing by their backoff limit
//! and indexing their Pods.

use serde_json::{Value, json};

use crate::cluster::{cluster, condition_status, container, eventually, pod_path};
use crate::kubectl::Kubectl;

#[tokio::test]
async fn a_replica_set_keeps_its_replicas_and_counts_them_in_its_status() {
    let t = cluster(2).await;
    let replica_set = json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "rs"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "rs"}},
            "template": {"metadata": {"labels": {"app": "rs"}}, "spec": {"containers": [container(&[])]}},
        },
    });
    let path = "/apis/apps/v1/namespaces/default/replicasets";
    assert_eq!(t.post(path, &replica_set).await.status, 201);
    let rs_path = format!("{path}/rs");
    eventually(&t, &rs_path, "3 ready replicas", |rs| {
        rs["status"]["readyReplicas"] == 3 && rs["status"]["availableReplicas"] == 3
    })
    .await;
    let pods = t
        .get("/api/v1/namespaces/default/pods?labelSelector=app%3Drs")
        .await
        .json();
    let items = pods["items"].as_array().expect("pods");
    assert_eq!(items.len(), 3);
    for pod in items {
        assert!(
            pod["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("rs-"))
        );
        assert_eq!(pod["metadata"]["ownerReferences"][0]["kind"], "ReplicaSet");
        assert_eq!(pod["metadata"]["ownerReferences"][0]["controller"], true);
    }
    // A deleted Pod is replaced.
    let victim = items[0]["metadata"]["name"]
        .as_str()
        .expect("a name")
        .to_owned();
    assert_eq!(t.delete(&pod_path(&victim)).await.status, 200);
    // The kubelet finishes the deletion (grace period scaled to 0); a replacement runs.
    eventually(
        &t,
        "/api/v1/namespaces/default/pods?labelSelector=app%3Drs",
        "three ready Pods, the deleted one gone",
        |pods| {
            pods["items"].as_array().is_some_and(|p| {
                p.len() == 3
                    && p.iter().all(|pod| {
                        pod["metadata"]["name"] != victim.as_str()
                            && condition_status(pod, "Ready") == "True"
                    })
            })
        },
    )
    .await;
    eventually(&t, &rs_path, "3 ready replicas again", |rs| {
        rs["status"]["readyReplicas"] == 3
    })
    .await;
    // Scaled down, the surplus goes.
    let reply = t
        .patch(
            &rs_path,
            "application/merge-patch+json",
            r#"{"spec":{"replicas":1}}"#,
        )
        .await;
    assert_eq!(reply.status, 200);
    let rs = eventually(&t, &rs_path, "one replica", |rs| {
        rs["status"]["replicas"] == 1
    })
    .await;
    assert_eq!(
        rs["status"]["observedGeneration"],
        rs["metadata"]["generation"]
    );
    let events = eventually(
        &t,
        "/api/v1/namespaces/default/events?fieldSelector=reason%3DSuccessfulCreate",
        "four SuccessfulCreate events",
        |e| e["items"].as_array().is_some_and(|e| e.len() >= 4),
    )
    .await;
    assert!(
        events["items"].as_array().is_some_and(|e| e.len() >= 4),
        "{events:#}"
    );
}

#[tokio::test]
async fn kubectl_rolls_a_deployment_out_updates_and_undoes_it() {
    let t = cluster(3).await;
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
        .ok(&["rollout", "status", "deployment/web", "--timeout=30s"])
        .await;
    assert!(status.contains("successfully rolled out"), "{status}");
    let wide = kubectl
        .ok(&["get", "pods", "-o", "wide", "-l", "app=web"])
        .await;
    assert_eq!(
        wide.lines().filter(|l| l.contains("Running")).count(),
        3,
        "{wide}"
    );
    let deployment = t
        .get("/apis/apps/v1/namespaces/default/deployments/web")
        .await
        .json();
    let status = &deployment["status"];
    assert_eq!(status["replicas"], 3);
    assert_eq!(status["updatedReplicas"], 3);
    assert_eq!(status["availableReplicas"], 3);
    assert_eq!(
        deployment["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "1"
    );
    let conditions = status["conditions"].as_array().expect("conditions");
    assert!(
        conditions
            .iter()
            .any(|c| c["type"] == "Available" && c["status"] == "True")
    );
    assert!(
        conditions
            .iter()
            .any(|c| c["type"] == "Progressing" && c["reason"] == "NewReplicaSetAvailable")
    );
    // A new image rolls out through a second ReplicaSet.
    kubectl
        .ok(&["set", "image", "deployment/web", "nginx=nginx:1.27"])
        .await;
    kubectl
        .ok(&["rollout", "status", "deployment/web", "--timeout=30s"])
        .await;
    let sets = t
        .get("/apis/apps/v1/namespaces/default/replicasets?labelSelector=app%3Dweb")
        .await
        .json();
    let sets = sets["items"].as_array().expect("replica sets");
    assert_eq!(sets.len(), 2, "{sets:#?}");
    let by_revision = |revision: &str| {
        sets.iter()
            .find(|rs| {
                rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == revision
            })
            .unwrap_or_else(|| panic!("a ReplicaSet of revision {revision}"))
    };
    assert_eq!(by_revision("1")["spec"]["replicas"], 0);
    assert_eq!(by_revision("2")["spec"]["replicas"], 3);
    let hash = by_revision("2")["metadata"]["labels"]["pod-template-hash"].clone();
    assert!(hash.is_string());
    assert_eq!(
        by_revision("2")["metadata"]["name"],
        format!("web-{}", hash.as_str().unwrap_or(""))
    );
    let images = kubectl
        .ok(&[
            "get",
            "pods",
            "-l",
            "app=web",
            "-o",
            "jsonpath={.items[*].spec.containers[0].image}",
        ])
        .await;
    assert_eq!(
        images
            .split_whitespace()
            .filter(|i| *i == "nginx:1.27")
            .count(),
        3,
        "{images}"
    );
    let history = kubectl.ok(&["rollout", "history", "deployment/web"]).await;
    assert!(history.contains('1') && history.contains('2'), "{history}");
    kubectl.ok(&["rollout", "undo", "deployment/web"]).await;
    kubectl
        .ok(&["rollout", "status", "deployment/web", "--timeout=30s"])
        .await;
    let deployment = t
        .get("/apis/apps/v1/namespaces/default/deployments/web")
        .await
        .json();
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx"
    );
    assert_eq!(
        deployment["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "3"
    );
    // Scaling down leaves one Pod.
    kubectl
        .ok(&["scale", "deployment/web", "--replicas=1"])
        .await;
    kubectl
        .ok(&["rollout", "status", "deployment/web", "--timeout=30s"])
        .await;
    eventually(
        &t,
        "/apis/apps/v1/namespaces/default/deployments/web",
        "one replica",
        |d| d["status"]["replicas"] == 1,
    )
    .await;
}

#[tokio::test]
async fn jobs_complete_fail_by_their_backoff_limit_and_index_their_pods() {
    let t = cluster(2).await;
    let job = |name: &str, spec: Value| json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": spec});
    let template = |command: &[&str]| json!({"spec": {"restartPolicy": "Never", "containers": [container(command)]}});
    let path = "/apis/batch/v1/namespaces/default/jobs";
    let created = t
        .post(
            path,
            &job(
                "done",
                json!({"completions": 3, "parallelism": 2, "template": template(&["true"])}),
            ),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.json());
    let created = t
        .post(
            path,
            &job(
                "broken",
                json!({"backoffLimit": 1, "template": template(&["exit", "2"])}),
            ),
        )
        .await;
    assert_eq!(created.status, 201);
    let created = t
        .post(
            path,
            &job("indexed", json!({"completions": 3, "parallelism": 3, "completionMode": "Indexed", "template": template(&["true"])})),
        )
        .await;
    assert_eq!(created.status, 201);
    let done = eventually(&t, &format!("{path}/done"), "the Job completes", |j| {
        j["status"]["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["type"] == "Complete"))
    })
    .await;
    assert_eq!(done["status"]["succeeded"], 3, "{:#}", done["status"]);
    assert!(done["status"]["completionTime"].is_string());
    assert!(done["status"].get("active").is_none());
    let types: Vec<&str> = done["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["type"].as_str())
        .collect();
    assert_eq!(types, ["SuccessCriteriaMet", "Complete"]);
    let broken = eventually(&t, &format!("{path}/broken"), "the Job fails", |j| {
        j["status"]["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["type"] == "Failed"))
    })
    .await;
    assert_eq!(broken["status"]["failed"], 2, "{:#}", broken["status"]);
    let failed = broken["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Failed").cloned())
        .expect("a Failed condition");
    assert_eq!(failed["reason"], "BackoffLimitExceeded");
    let indexed = eventually(
        &t,
        &format!("{path}/indexed"),
        "the indexed Job completes",
        |j| {
            j["status"]["conditions"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["type"] == "Complete"))
        },
    )
    .await;
    assert_eq!(indexed["status"]["completedIndexes"], "0-2");
    let pods = t
        .get("/api/v1/namespaces/default/pods?labelSelector=batch.kubernetes.io%2Fjob-name%3Dindexed")
        .await
        .json();
    let mut indexes: Vec<&str> = pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| {
            p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"].as_str()
        })
        .collect();
    indexes.sort_unstable();
    assert_eq!(indexes, ["0", "1", "2"]);
    // kubectl waits for it as for any Job.
    let kubectl = Kubectl::for_server(&t);
    kubectl
        .ok(&[
            "create",
            "job",
            "hello",
            "--image=busybox",
            "--",
            "echo",
            "hello",
        ])
        .await;
    kubectl
        .ok(&[
            "wait",
            "--for=condition=complete",
            "job/hello",
            "--timeout=20s",
        ])
        .await;
}

#[tokio::test]
async fn kubectl_restarts_pauses_and_resumes_a_rollout() {
    let t = cluster(2).await;
    let kubectl = Kubectl::for_server(&t);
    kubectl
        .ok(&[
            "create",
            "deployment",
            "api",
            "--image=nginx",
            "--replicas=2",
        ])
        .await;
    kubectl
        .ok(&["rollout", "status", "deployment/api", "--timeout=30s"])
        .await;
    kubectl.ok(&["rollout", "restart", "deployment/api"]).await;
    kubectl
        .ok(&["rollout", "status", "deployment/api", "--timeout=30s"])
        .await;
    let deployment = t
        .get("/apis/apps/v1/namespaces/default/deployments/api")
        .await
        .json();
    assert_eq!(
        deployment["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "2"
    );
    kubectl.ok(&["rollout", "pause", "deployment/api"]).await;
    kubectl
        .ok(&["set", "image", "deployment/api", "nginx=nginx:2"])
        .await;
    let paused = eventually(
        &t,
        "/apis/apps/v1/namespaces/default/deployments/api",
        "Progressing says paused",
        |d| {
            d["status"]["conditions"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["reason"] == "DeploymentPaused"))
        },
    )
    .await;
    assert_eq!(
        paused["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "2"
    );
    let sets = t
        .get("/apis/apps/v1/namespaces/default/replicasets?labelSelector=app%3Dapi")
        .await
        .json();
    assert_eq!(
        sets["items"].as_array().map(Vec::len),
        Some(2),
        "no new ReplicaSet while paused"
    );
    kubectl.ok(&["rollout", "resume", "deployment/api"]).await;
    kubectl
        .ok(&["rollout", "status", "deployment/api", "--timeout=30s"])
        .await;
    let images = kubectl
        .ok(&[
            "get",
            "pods",
            "-l",
            "app=api",
            "-o",
            "jsonpath={.items[*].spec.containers[0].image}",
        ])
        .await;
    assert_eq!(
        images
            .split_whitespace()
            .filter(|i| *i == "nginx:2")
            .count(),
        2,
        "{images}"
    );
}
