//! Deletion as a cluster with kube-controller-manager does it: per-resource DELETE
//! answers, propagation policies (background, foreground, orphan) carried out by the
//! garbage collector, and namespaces emptied by the namespace controller. Checked against
//! a real kube-apiserver v1.20 with its controller manager.

use std::time::Duration;

use kubeclient_apiserver::ApiServer;
use serde_json::{Value, json};

use crate::kubectl::Kubectl;
use crate::support::{TestServer, eventually_status};

const CM: &str = "/api/v1/namespaces/default/configmaps";
const SECRETS: &str = "/api/v1/namespaces/default/secrets";

/// Creates a ConfigMap and returns its uid.
async fn owner(t: &TestServer, name: &str) -> String {
    let reply = t.post(CM, &json!({"metadata": {"name": name}})).await;
    assert_eq!(
        reply.status,
        201,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    reply.json()["metadata"]["uid"].as_str().unwrap().to_owned()
}

/// Creates a Secret owned by the ConfigMap `owner` (uid `uid`).
async fn dependent(t: &TestServer, name: &str, owner: &str, uid: &str, extra: Value) {
    let mut metadata = json!({
        "name": name,
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": owner, "uid": uid,
                             "blockOwnerDeletion": true}],
    });
    if let (Some(metadata), Some(extra)) = (metadata.as_object_mut(), extra.as_object()) {
        metadata.extend(extra.clone());
    }
    let reply = t.post(SECRETS, &json!({"metadata": metadata})).await;
    assert_eq!(
        reply.status,
        201,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
}

async fn delete_with(t: &TestServer, path: &str, options: Value) -> Value {
    let reply = t
        .request(
            "DELETE",
            path,
            Some("application/json"),
            &options.to_string(),
        )
        .await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    reply.json()
}

#[tokio::test]
async fn delete_answers_the_object_for_pods_services_and_service_accounts_and_a_status_for_configmaps()
 {
    let t = TestServer::start().await;
    let pod =
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}});
    let service = json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}});
    for (path, body, kind) in [
        ("/api/v1/namespaces/default/pods", pod, "Pod"),
        ("/api/v1/namespaces/default/services", service, "Service"),
        (
            "/api/v1/namespaces/default/serviceaccounts",
            json!({"metadata": {"name": "sa"}}),
            "ServiceAccount",
        ),
        (CM, json!({"metadata": {"name": "c"}}), "Status"),
    ] {
        let created = t.post(path, &body).await.json();
        let name = created["metadata"]["name"].as_str().unwrap();
        let deleted = t.delete(&format!("{path}/{name}")).await.json();
        assert_eq!(deleted["kind"], kind, "DELETE {path}/{name}: {deleted}");
        let uid = if kind == "Status" {
            &deleted["details"]["uid"]
        } else {
            &deleted["metadata"]["uid"]
        };
        assert_eq!(uid, &created["metadata"]["uid"]);
    }
}

#[tokio::test]
async fn background_deletion_collects_dependents_and_their_dependents() {
    let t = TestServer::start().await;
    let uid = owner(&t, "owner").await;
    dependent(&t, "child", "owner", &uid, json!({})).await;
    let child_uid = t.get(&format!("{SECRETS}/child")).await.json()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_owned();
    let grandchild = json!({"metadata": {"name": "grandchild", "ownerReferences": [
        {"apiVersion": "v1", "kind": "Secret", "name": "child", "uid": child_uid}]}});
    assert_eq!(t.post(CM, &grandchild).await.status, 201);
    let unrelated = owner(&t, "unrelated").await;
    dependent(&t, "kept", "unrelated", &unrelated, json!({})).await;

    let answer = t.delete(&format!("{CM}/owner")).await.json();
    assert_eq!(
        answer["kind"], "Status",
        "background: the owner goes at once"
    );
    eventually_status(&t, &format!("{SECRETS}/child"), 404).await;
    eventually_status(&t, &format!("{CM}/grandchild"), 404).await;
    assert_eq!(t.get(&format!("{SECRETS}/kept")).await.status, 200);
}

#[tokio::test]
async fn an_object_keeps_living_while_one_of_its_owners_exists_and_loses_the_dangling_reference() {
    let t = TestServer::start().await;
    let first = owner(&t, "first").await;
    let second = owner(&t, "second").await;
    let body = json!({"metadata": {"name": "shared", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "first", "uid": first},
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "second", "uid": second}]}});
    assert_eq!(t.post(SECRETS, &body).await.status, 201);
    t.delete(&format!("{CM}/first")).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let shared = t.get(&format!("{SECRETS}/shared")).await.json();
        let owners = shared["metadata"]["ownerReferences"]
            .as_array()
            .unwrap()
            .len();
        if owners == 1 {
            assert_eq!(
                shared["metadata"]["ownerReferences"][0]["uid"],
                second.as_str()
            );
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the dangling reference goes: {shared}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn foreground_deletion_keeps_the_owner_until_its_blocking_dependents_are_gone() {
    let t = TestServer::start().await;
    let uid = owner(&t, "owner").await;
    dependent(&t, "free", "owner", &uid, json!({})).await;
    dependent(
        &t,
        "held",
        "owner",
        &uid,
        json!({"finalizers": ["example.com/hold"]}),
    )
    .await;

    let answer = delete_with(
        &t,
        &format!("{CM}/owner"),
        json!({"propagationPolicy": "Foreground"}),
    )
    .await;
    assert_eq!(answer["kind"], "ConfigMap");
    assert_eq!(
        answer["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    assert!(answer["metadata"]["deletionTimestamp"].is_string());

    eventually_status(&t, &format!("{SECRETS}/free"), 404).await;
    let held = t.get(&format!("{SECRETS}/held")).await.json();
    assert!(held["metadata"]["deletionTimestamp"].is_string(), "{held}");
    let owner_now = t.get(&format!("{CM}/owner")).await;
    assert_eq!(owner_now.status, 200, "a blocking dependent still exists");
    assert_eq!(
        owner_now.json()["metadata"]["resourceVersion"],
        answer["metadata"]["resourceVersion"],
        "the answer carries the resourceVersion of the marking"
    );

    let release = r#"{"metadata":{"finalizers":null}}"#;
    let reply = t
        .patch(
            &format!("{SECRETS}/held"),
            "application/merge-patch+json",
            release,
        )
        .await;
    assert_eq!(reply.status, 200);
    eventually_status(&t, &format!("{CM}/owner"), 404).await;
}

#[tokio::test]
async fn orphan_deletion_removes_the_owner_and_leaves_dependents_without_the_reference() {
    let t = TestServer::start().await;
    let uid = owner(&t, "owner").await;
    dependent(&t, "orphaned", "owner", &uid, json!({})).await;
    let answer = t
        .request(
            "DELETE",
            &format!("{CM}/owner?propagationPolicy=Orphan"),
            None,
            "",
        )
        .await
        .json();
    assert_eq!(answer["metadata"]["finalizers"], json!(["orphan"]));
    eventually_status(&t, &format!("{CM}/owner"), 404).await;
    let orphan = t.get(&format!("{SECRETS}/orphaned")).await.json();
    assert!(
        orphan["metadata"].get("ownerReferences").is_none(),
        "{orphan}"
    );
}

#[tokio::test]
async fn the_garbage_collector_writes_through_the_store_like_any_client() {
    let t = TestServer::start().await;
    let uid = owner(&t, "owner").await;
    dependent(
        &t,
        "orphaned",
        "owner",
        &uid,
        json!({"labels": {"app": "a"}}),
    )
    .await;
    let before = t.get(&format!("{SECRETS}/orphaned")).await.json();
    assert!(before.to_string().contains("f:ownerReferences"), "{before}");
    t.request(
        "DELETE",
        &format!("{CM}/owner?propagationPolicy=Orphan"),
        None,
        "",
    )
    .await;
    eventually_status(&t, &format!("{CM}/owner"), 404).await;
    // The orphaning is an update: nobody owns the removed reference any more, and the
    // other fields stay with their manager.
    let orphan = t.get(&format!("{SECRETS}/orphaned")).await.json();
    let managed = orphan["metadata"]["managedFields"].to_string();
    assert!(!managed.contains("f:ownerReferences"), "{orphan}");
    assert!(managed.contains("f:app"), "{orphan}");
}

#[tokio::test]
async fn a_batch_v1_job_orphans_its_pods_by_default_and_propagation_options_are_checked() {
    let t = TestServer::start().await;
    let job = json!({"metadata": {"name": "j"}, "spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}});
    let jobs = "/apis/batch/v1/namespaces/default/jobs";
    assert_eq!(t.post(jobs, &job).await.status, 201);
    let answer = t.delete(&format!("{jobs}/j")).await.json();
    assert_eq!(
        answer["metadata"]["finalizers"],
        json!(["orphan"]),
        "{answer}"
    );

    let both = json!({"propagationPolicy": "Background", "orphanDependents": true});
    let reply = t
        .request(
            "DELETE",
            &format!("{CM}/x"),
            Some("application/json"),
            &both.to_string(),
        )
        .await;
    assert_eq!(
        reply.status,
        422,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
}

#[tokio::test]
async fn a_deleted_namespace_terminates_until_its_objects_are_gone() {
    let t = TestServer::start().await;
    assert_eq!(
        t.post("/api/v1/namespaces", &json!({"metadata": {"name": "team"}}))
            .await
            .status,
        201
    );
    let team_cm = "/api/v1/namespaces/team/configmaps";
    let held = json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}});
    assert_eq!(t.post(team_cm, &held).await.status, 201);
    assert_eq!(
        t.post(team_cm, &json!({"metadata": {"name": "plain"}}))
            .await
            .status,
        201
    );

    let answer = t.delete("/api/v1/namespaces/team").await.json();
    assert_eq!(answer["kind"], "Namespace");
    assert_eq!(answer["status"]["phase"], "Terminating");
    assert_eq!(answer["spec"]["finalizers"], json!(["kubernetes"]));
    // kube-apiserver's namespace registry sets the deletionTimestamp only.
    assert!(answer["metadata"]["deletionTimestamp"].is_string());
    assert!(
        answer["metadata"]
            .get("deletionGracePeriodSeconds")
            .is_none(),
        "{answer}"
    );

    eventually_status(&t, &format!("{team_cm}/plain"), 404).await;
    let refused = t.post(team_cm, &json!({"metadata": {"name": "new"}})).await;
    assert_eq!(
        refused.status, 403,
        "no new content in a terminating namespace"
    );
    assert_eq!(
        t.get("/api/v1/namespaces/team").await.status,
        200,
        "held by a finalizer"
    );

    let release = r#"{"metadata":{"finalizers":null}}"#;
    t.patch(
        &format!("{team_cm}/held"),
        "application/merge-patch+json",
        release,
    )
    .await;
    eventually_status(&t, "/api/v1/namespaces/team", 404).await;
}

#[tokio::test]
async fn without_the_garbage_collector_dependents_of_a_missing_owner_stay() {
    let t = TestServer::start_with(ApiServer::builder().garbage_collector(false)).await;
    dependent(&t, "stays", "nobody", "no-such-uid", json!({})).await;
    let uid = owner(&t, "owner").await;
    dependent(&t, "child", "owner", &uid, json!({})).await;
    t.delete(&format!("{CM}/owner")).await;
    // A namespace round trip: the controllers' task has run a pass after it.
    assert_eq!(
        t.post("/api/v1/namespaces", &json!({"metadata": {"name": "tick"}}))
            .await
            .status,
        201
    );
    t.delete("/api/v1/namespaces/tick").await;
    eventually_status(&t, "/api/v1/namespaces/tick", 404).await;
    assert_eq!(t.get(&format!("{SECRETS}/stays")).await.status, 200);
    assert_eq!(t.get(&format!("{SECRETS}/child")).await.status, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_delete_cascades_in_all_three_modes() {
    let t = TestServer::start().await;
    let kubectl = Kubectl::for_server(&t);
    for (mode, child_survives) in [
        ("background", false),
        ("foreground", false),
        ("orphan", true),
    ] {
        let owner_name = format!("owner-{mode}");
        let uid = owner(&t, &owner_name).await;
        let child = format!("child-{mode}");
        dependent(&t, &child, &owner_name, &uid, json!({})).await;
        kubectl
            .ok(&[
                "delete",
                "configmap",
                &owner_name,
                &format!("--cascade={mode}"),
            ])
            .await;
        // kubectl waits for the owner to be gone (--wait defaults to true).
        assert_eq!(t.get(&format!("{CM}/{owner_name}")).await.status, 404);
        if child_survives {
            let child = t.get(&format!("{SECRETS}/{child}")).await.json();
            assert!(
                child["metadata"].get("ownerReferences").is_none(),
                "{child}"
            );
        } else {
            eventually_status(&t, &format!("{SECRETS}/{child}"), 404).await;
        }
    }
    let manifest = kubectl.write(
        "ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: doomed}\n",
    );
    kubectl.ok(&["apply", "-f", &manifest]).await;
    kubectl.ok(&["delete", "namespace", "doomed"]).await;
    assert_eq!(
        t.get("/api/v1/namespaces/doomed").await.status,
        404,
        "kubectl waited for it"
    );
}

/// A deleted CustomResourceDefinition is marked (the `customresourcecleanup` finalizer, a
/// `Terminating` condition) and refuses new custom resources; its custom resources are
/// deleted, and it goes once the last of them (held by a finalizer) is gone, as with
/// apiextensions-apiserver.
#[tokio::test]
async fn a_deleted_crd_deletes_its_custom_resources_before_it_goes() {
    let t = TestServer::start().await;
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "things", "kind": "Thing"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    let crd_path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.example.com";
    t.create_crd(&crd).await;
    let things = "/apis/example.com/v1/namespaces/default/things";
    for (name, finalizers) in [("free", json!([])), ("held", json!(["example.com/hold"]))] {
        let thing = json!({"apiVersion": "example.com/v1", "kind": "Thing",
            "metadata": {"name": name, "finalizers": finalizers}});
        assert_eq!(t.post(things, &thing).await.status, 201);
    }
    let marked = t.delete(crd_path).await.json();
    assert_eq!(
        marked["metadata"]["finalizers"],
        json!(["customresourcecleanup.apiextensions.k8s.io"])
    );
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    let terminating = &marked["status"]["conditions"][2];
    assert_eq!(
        (
            terminating["type"].as_str(),
            terminating["reason"].as_str(),
            terminating["message"].as_str()
        ),
        (
            Some("Terminating"),
            Some("InstanceDeletionPending"),
            Some(
                "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon"
            )
        )
    );
    let late = t
        .post(
            things,
            &json!({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "late"}}),
        )
        .await;
    assert_eq!(late.status, 405);
    assert_eq!(
        late.json()["message"],
        "create not allowed while custom resource definition is terminating"
    );
    eventually_status(&t, &format!("{things}/free"), 404).await;
    let held = t.get(&format!("{things}/held")).await.json();
    assert!(held["metadata"]["deletionTimestamp"].is_string(), "{held}");
    let crd_now = t.get(crd_path).await.json();
    assert_eq!(
        crd_now["status"]["conditions"][2]["reason"], "InstanceDeletionInProgress",
        "{crd_now}"
    );
    t.patch(
        &format!("{things}/held"),
        "application/merge-patch+json",
        r#"{"metadata":{"finalizers":null}}"#,
    )
    .await;
    eventually_status(&t, crd_path, 404).await;
    eventually_status(&t, things, 404).await;
}
