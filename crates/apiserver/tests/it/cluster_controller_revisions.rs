//! ControllerRevisions of StatefulSets and DaemonSets (issue 26) over real HTTP and the
//! real kubectl: one per template, numbered, with the template patch as `data`;
//! `kubectl rollout history` lists them and `kubectl rollout undo` restores a template,
//! whose revision then gets the next number; the ReplicationController controller keeps
//! its replicas.

use serde_json::{Value, json};

use crate::cluster::{cluster, condition_status, container, eventually};
use crate::kubectl::Kubectl;
use crate::support::TestServer;

const REVISIONS: &str = "/apis/apps/v1/namespaces/default/controllerrevisions";

/// The revisions labelled `app=<app>`, as (name, revision, image), by revision.
async fn revisions(t: &TestServer, app: &str) -> Vec<(String, i64, String)> {
    let list = t
        .get(&format!("{REVISIONS}?labelSelector=app%3D{app}"))
        .await
        .json();
    let mut found: Vec<(String, i64, String)> = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            (
                r["metadata"]["name"].as_str().unwrap_or("").to_owned(),
                r["revision"].as_i64().unwrap_or(0),
                r["data"]["spec"]["template"]["spec"]["containers"][0]["image"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
            )
        })
        .collect();
    found.sort_by_key(|r| r.1);
    found
}

async fn until_revisions(
    t: &TestServer,
    app: &str,
    what: &str,
    done: impl Fn(&[(String, i64, String)]) -> bool,
) -> Vec<(String, i64, String)> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let found = revisions(t, app).await;
        if done(&found) {
            return found;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what} within 10 s: {found:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
}

fn images(found: &[(String, i64, String)]) -> Vec<(i64, &str)> {
    found.iter().map(|(_, n, i)| (*n, i.as_str())).collect()
}

#[tokio::test]
async fn stateful_set_revisions_are_recorded_listed_and_undone_by_kubectl() {
    let t = cluster(1).await;
    let set = json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1, "serviceName": "web",
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [container(&[])]}},
        },
    });
    let path = "/apis/apps/v1/namespaces/default/statefulsets";
    assert_eq!(t.post(path, &set).await.status, 201);
    let first = until_revisions(&t, "web", "the first revision", |r| r.len() == 1).await;
    let (name, number, image) = &first[0];
    assert_eq!((*number, image.as_str()), (1, "busybox"));
    let revision = t.get(&format!("{REVISIONS}/{name}")).await.json();
    assert_eq!(
        revision["metadata"]["ownerReferences"][0]["kind"],
        "StatefulSet"
    );
    assert_eq!(
        revision["metadata"]["ownerReferences"][0]["controller"],
        true
    );
    assert_eq!(revision["data"]["spec"]["template"]["$patch"], "replace");
    assert!(revision["metadata"]["labels"]["controller.kubernetes.io/hash"].is_string());
    let sts = eventually(&t, &format!("{path}/web"), "its update revision", |s| {
        s["status"]["updateRevision"].is_string()
    })
    .await;
    assert_eq!(sts["status"]["updateRevision"], name.as_str());
    let kubectl = Kubectl::for_server(&t);
    kubectl
        .ok(&["set", "image", "statefulset/web", "main=busybox:2"])
        .await;
    let second = until_revisions(&t, "web", "the second revision", |r| r.len() == 2).await;
    assert_eq!(images(&second), [(1, "busybox"), (2, "busybox:2")]);
    let history = kubectl.ok(&["rollout", "history", "statefulset/web"]).await;
    let numbers: Vec<&str> = history
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.parse::<i64>().is_ok())
        .collect();
    assert_eq!(numbers, ["1", "2"], "{history}");
    let undone = kubectl.ok(&["rollout", "undo", "statefulset/web"]).await;
    assert!(undone.contains("rolled back"), "{undone}");
    let sts = t.get(&format!("{path}/web")).await.json();
    assert_eq!(
        sts["spec"]["template"]["spec"]["containers"][0]["image"],
        "busybox"
    );
    // The first template is the newest revision again, under its old name.
    let third = until_revisions(&t, "web", "revision 1 renumbered 3", |r| {
        r.iter().any(|(_, n, i)| *n == 3 && i == "busybox")
    })
    .await;
    assert_eq!(images(&third), [(2, "busybox:2"), (3, "busybox")]);
    assert_eq!(third[1].0, first[0].0);
    eventually(
        &t,
        "/api/v1/namespaces/default/pods/web-0",
        "the old image runs again",
        |p| {
            p["spec"]["containers"][0]["image"] == "busybox"
                && condition_status(p, "Ready") == "True"
        },
    )
    .await;
}

#[tokio::test]
async fn daemon_set_revisions_are_undone_to_a_chosen_revision_and_trimmed_by_the_limit() {
    let t = cluster(1).await;
    let ds = json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "agent"},
        "spec": {
            "revisionHistoryLimit": 1,
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [container(&[])]}},
        },
    });
    let path = "/apis/apps/v1/namespaces/default/daemonsets";
    assert_eq!(t.post(path, &ds).await.status, 201);
    until_revisions(&t, "agent", "the first revision", |r| r.len() == 1).await;
    let kubectl = Kubectl::for_server(&t);
    for image in ["busybox:2", "busybox:3"] {
        kubectl
            .ok(&["set", "image", "daemonset/agent", &format!("main={image}")])
            .await;
        kubectl
            .ok(&["rollout", "status", "daemonset/agent", "--timeout=20s"])
            .await;
    }
    // Limit 1: the current revision and one more stay.
    let kept = until_revisions(&t, "agent", "two revisions kept", |r| {
        r.len() == 2 && r.iter().any(|(_, _, i)| i == "busybox:3")
    })
    .await;
    assert_eq!(images(&kept), [(2, "busybox:2"), (3, "busybox:3")]);
    let revision = t.get(&format!("{REVISIONS}/{}", kept[1].0)).await.json();
    let hash = revision["metadata"]["labels"]["controller-revision-hash"]
        .as_str()
        .unwrap_or("");
    assert_eq!(kept[1].0, format!("agent-{hash}"));
    let undone = kubectl
        .ok(&["rollout", "undo", "daemonset/agent", "--to-revision=2"])
        .await;
    assert!(undone.contains("rolled back"), "{undone}");
    let ds: Value = t.get(&format!("{path}/agent")).await.json();
    assert_eq!(
        ds["spec"]["template"]["spec"]["containers"][0]["image"],
        "busybox:2"
    );
    until_revisions(&t, "agent", "revision 2 renumbered 4", |r| {
        r.iter().any(|(_, n, i)| *n == 4 && i == "busybox:2")
    })
    .await;
    let status = kubectl
        .ok(&["rollout", "status", "daemonset/agent", "--timeout=20s"])
        .await;
    assert!(status.contains("successfully rolled out"), "{status}");
}

#[tokio::test]
async fn a_replication_controller_keeps_its_replicas_by_its_equality_selector() {
    let t = cluster(2).await;
    let rc = json!({
        "apiVersion": "v1", "kind": "ReplicationController",
        "metadata": {"name": "legacy"},
        "spec": {
            "replicas": 3,
            "template": {"metadata": {"labels": {"app": "legacy"}}, "spec": {"containers": [container(&[])]}},
        },
    });
    let path = "/api/v1/namespaces/default/replicationcontrollers";
    let created = t.post(path, &rc).await;
    assert_eq!(created.status, 201, "{}", created.json());
    assert_eq!(created.json()["spec"]["selector"], json!({"app": "legacy"}));
    let rc_path = format!("{path}/legacy");
    eventually(&t, &rc_path, "3 ready replicas", |rc| {
        rc["status"]["readyReplicas"] == 3
            && rc["status"]["availableReplicas"] == 3
            && rc["status"]["fullyLabeledReplicas"] == 3
    })
    .await;
    let pods = t
        .get("/api/v1/namespaces/default/pods?labelSelector=app%3Dlegacy")
        .await
        .json();
    let items = pods["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 3);
    for pod in &items {
        let owner = &pod["metadata"]["ownerReferences"][0];
        assert_eq!(owner["kind"], "ReplicationController");
        assert_eq!(owner["name"], "legacy");
    }
    let kubectl = Kubectl::for_server(&t);
    kubectl
        .ok(&["scale", "replicationcontroller/legacy", "--replicas=1"])
        .await;
    eventually(
        &t,
        "/api/v1/namespaces/default/pods?labelSelector=app%3Dlegacy",
        "one Pod left",
        |pods| pods["items"].as_array().is_some_and(|p| p.len() == 1),
    )
    .await;
    let rc = eventually(&t, &rc_path, "one replica", |rc| {
        rc["status"]["replicas"] == 1
    })
    .await;
    assert_eq!(
        rc["status"]["observedGeneration"],
        rc["metadata"]["generation"]
    );
    let events = t.get("/api/v1/namespaces/default/events").await.json();
    let from_controller: Vec<&str> = events["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["involvedObject"]["name"] == "legacy")
        .filter(|e| e["source"]["component"] == "replication-controller")
        .filter_map(|e| e["reason"].as_str())
        .collect();
    assert!(
        from_controller.contains(&"SuccessfulCreate"),
        "{from_controller:?}"
    );
    assert!(
        from_controller.contains(&"SuccessfulDelete"),
        "{from_controller:?}"
    );
}
