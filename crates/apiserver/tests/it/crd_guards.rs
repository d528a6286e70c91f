//! Regression tests of issue 24, item 1: a CustomResourceDefinition can neither replace
//! nor remove a built-in API.

use serde_json::{Value, json};

use crate::support::{TestServer, eventually_status};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
const CRONJOBS: &str = "/apis/batch/v1/namespaces/default/cronjobs";

fn crd(group: &str, plural: &str, kind: &str, annotations: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}"), "annotations": annotations},
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"plural": plural, "kind": kind},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
        }
    })
}

fn cronjob(name: &str) -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
        "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}
    })
}

#[tokio::test]
async fn crd_in_the_batch_group_is_refused_and_cronjobs_stay_built_in() {
    let t = TestServer::start().await;
    let reply = t
        .post(CRDS, &crd("batch", "cronjobs", "CronJob", json!({})))
        .await;
    reply.assert_status_message(422, "CustomResourceDefinition.apiextensions.k8s.io \"cronjobs.batch\" is invalid: spec.group: Invalid value: \"batch\": should be a domain with at least one dot");
    assert_eq!(t.post(CRONJOBS, &cronjob("nightly")).await.status, 201);
    let protobuf = t
        .get_accepting(
            &format!("{CRONJOBS}/nightly"),
            "application/vnd.kubernetes.protobuf",
        )
        .await;
    assert_eq!(
        protobuf.status, 200,
        "CronJobs are still served as protobuf"
    );
    let mut wrong = cronjob("wrong");
    wrong["spec"]["suspend"] = json!("yes");
    assert_eq!(
        t.post(CRONJOBS, &wrong).await.status,
        400,
        "the built-in type still decodes"
    );
}

#[tokio::test]
async fn crd_of_a_protected_group_needs_the_approval_annotation() {
    let t = TestServer::start().await;
    let reply = t
        .post(
            CRDS,
            &crd("coordination.k8s.io", "leases", "Lease", json!({})),
        )
        .await;
    assert_eq!(reply.status, 422);
    let status = reply.json();
    assert_eq!(
        status["details"]["causes"][0],
        json!({
            "reason": "FieldValueRequired",
            "message": "Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111",
            "field": "metadata.annotations[api-approved.kubernetes.io]"
        })
    );
    let reply = t
        .post(
            CRDS,
            &crd(
                "widgets.k8s.io",
                "gizmos",
                "Gizmo",
                json!({"api-approved.kubernetes.io": "not a url"}),
            ),
        )
        .await;
    assert_eq!(reply.status, 422);
    assert!(
        reply.json()["message"].as_str().is_some_and(
            |m| m.contains("with either a URL or a reason starting with \"unapproved\"")
        ),
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
}

#[tokio::test]
async fn approved_crd_for_leases_neither_shadows_nor_removes_the_built_in_leases() {
    let t = TestServer::start().await;
    let lease = json!({"metadata": {"name": "leader"}, "spec": {"holderIdentity": "node-a"}});
    assert_eq!(t.post(LEASES, &lease).await.status, 201);
    let approved =
        json!({"api-approved.kubernetes.io": "https://github.com/kubernetes/kubernetes/pull/1"});
    t.create_crd(&crd("coordination.k8s.io", "leases", "Lease", approved))
        .await;
    let bad = json!({"metadata": {"name": "bad"}, "spec": {"holderIdentity": 5}});
    assert_eq!(
        t.post(LEASES, &bad).await.status,
        400,
        "Leases are still the built-in type"
    );
    let reply = t
        .delete(&format!("{CRDS}/leases.coordination.k8s.io"))
        .await;
    assert_eq!(reply.status, 200);
    eventually_status(&t, &format!("{CRDS}/leases.coordination.k8s.io"), 404).await;
    let reply = t.get(&format!("{LEASES}/leader")).await;
    assert_eq!(reply.status, 200, "the Lease survives the CRD's deletion");
    assert_eq!(reply.json()["spec"]["holderIdentity"], "node-a");
    assert_eq!(
        t.post(LEASES, &json!({"metadata": {"name": "next"}}))
            .await
            .status,
        201
    );
}
