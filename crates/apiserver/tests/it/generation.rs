//! `metadata.generation` and the status subresource, request by request: a spec change
//! bumps the generation, a status write does not and changes only the status, and each
//! kind follows its own strategy (apiserver-semantics §6-7).

use serde_json::json;

use crate::support::{Reply, TestServer};

#[tokio::test]
async fn generation_tracks_spec_changes_and_status_goes_through_its_subresource() {
    let t = TestServer::start().await;
    let deployment = json!({"metadata": {"name": "web"}, "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    let created = t
        .post("/apis/apps/v1/namespaces/default/deployments", &deployment)
        .await
        .json();
    assert_eq!(created["metadata"]["generation"], 1);
    let path = "/apis/apps/v1/namespaces/default/deployments/web";
    let labelled = t
        .patch(
            path,
            "application/merge-patch+json",
            r#"{"metadata":{"labels":{"x":"y"}}}"#,
        )
        .await
        .json();
    assert_eq!(
        labelled["metadata"]["generation"], 1,
        "metadata changes keep the generation"
    );
    let ignored_status = t
        .patch(
            path,
            "application/merge-patch+json",
            r#"{"status":{"replicas":5}}"#,
        )
        .await
        .json();
    assert!(
        ignored_status["status"].get("replicas").is_none(),
        "the main resource ignores status: {ignored_status}"
    );
    let status = t
        .patch(
            &format!("{path}/status"),
            "application/merge-patch+json",
            r#"{"status":{"replicas":5},"spec":{"replicas":9}}"#,
        )
        .await
        .json();
    assert_eq!(
        (
            status["status"]["replicas"].as_i64(),
            status["spec"]["replicas"].as_i64()
        ),
        (Some(5), Some(1))
    );
    assert_eq!(status["metadata"]["generation"], 1);
    let scaled = t
        .patch(
            path,
            "application/merge-patch+json",
            r#"{"spec":{"replicas":3}}"#,
        )
        .await
        .json();
    assert_eq!(scaled["metadata"]["generation"], 2);
    let scale = t.get(&format!("{path}/scale")).await.json();
    assert_eq!(
        (scale["kind"].as_str(), scale["spec"]["replicas"].as_i64()),
        (Some("Scale"), Some(3))
    );
    assert_eq!(
        scale["status"]["selector"], "a=b",
        "the selector as text, as kube-apiserver's scale reports it"
    );
    let rescaled = t
        .patch(
            &format!("{path}/scale"),
            "application/merge-patch+json",
            r#"{"spec":{"replicas":4}}"#,
        )
        .await
        .json();
    assert_eq!(rescaled["spec"]["replicas"], 4);
    assert_eq!(t.get(path).await.json()["spec"]["replicas"], 4);
    // A negative count is refused as kube-apiserver's ValidateScale refuses it, by PUT and
    // by PATCH, and the object keeps its replicas.
    let mut negative = t.get(&format!("{path}/scale")).await.json();
    negative["spec"]["replicas"] = json!(-1);
    negative["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    for refused in [
        t.put(&format!("{path}/scale"), &negative).await,
        t.patch(
            &format!("{path}/scale"),
            "application/merge-patch+json",
            r#"{"spec":{"replicas":-1}}"#,
        )
        .await,
    ] {
        let body = refused.json();
        assert_eq!(refused.status, 422, "{body}");
        let message = body["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with("Scale.autoscaling \"")
                && message.ends_with(
                    "\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"
                ),
            "{message}"
        );
        assert_eq!(body["details"]["causes"][0]["field"], "spec.replicas");
    }
    assert_eq!(t.get(path).await.json()["spec"]["replicas"], 4);
}

/// The generation bumps measured on kube-apiserver: a Deployment's annotations count (they
/// are copied to its ReplicaSets), a custom resource's status counts when it has no status
/// subresource, and the start of a deletion bumps once.
#[tokio::test]
async fn generation_follows_each_types_strategy() {
    let t = TestServer::start().await;
    let merge = "application/merge-patch+json";
    let generation = |reply: Reply| {
        let body = reply.json();
        assert_eq!(reply.status / 100, 2, "{body}");
        body["metadata"]["generation"].as_i64()
    };
    let deployment = json!({"metadata": {"name": "web"}, "spec": {"selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    let path = "/apis/apps/v1/namespaces/default/deployments/web";
    let created = t
        .post("/apis/apps/v1/namespaces/default/deployments", &deployment)
        .await;
    assert_eq!(generation(created), Some(1));
    let annotated = t
        .patch(path, merge, r#"{"metadata":{"annotations":{"x":"y"}}}"#)
        .await;
    assert_eq!(
        generation(annotated),
        Some(2),
        "annotations bump a Deployment"
    );
    let labelled = t
        .patch(path, merge, r#"{"metadata":{"labels":{"x":"y"}}}"#)
        .await;
    assert_eq!(generation(labelled), Some(2), "labels do not");
    let replica_sets = "/apis/apps/v1/namespaces/default/replicasets";
    let replica_set =
        json!({"metadata": {"name": "rs", "annotations": {"x": "y"}}, "spec": deployment["spec"]});
    assert_eq!(
        generation(t.post(replica_sets, &replica_set).await),
        Some(1)
    );
    let annotated = t
        .patch(
            &format!("{replica_sets}/rs"),
            merge,
            r#"{"metadata":{"annotations":{"x":"z"}}}"#,
        )
        .await;
    assert_eq!(generation(annotated), Some(1), "a ReplicaSet's do not");

    for (plural, subresources) in [("withs", json!({"status": {}})), ("nos", json!({}))] {
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.example.com")},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": plural, "kind": plural.to_uppercase()},
                "versions": [{"name": "v1", "served": true, "storage": true, "subresources": subresources,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
        t.create_crd(&crd).await;
        let collection = format!("/apis/example.com/v1/namespaces/default/{plural}");
        let object = json!({"apiVersion": "example.com/v1", "kind": plural.to_uppercase(),
            "metadata": {"name": "o"}, "spec": {"a": 1}});
        assert_eq!(generation(t.post(&collection, &object).await), Some(1));
        let path = format!("{collection}/o");
        let annotated = t
            .patch(&path, merge, r#"{"metadata":{"annotations":{"x":"y"}}}"#)
            .await;
        assert_eq!(generation(annotated), Some(1), "{plural}: metadata");
        let status = t.patch(&path, merge, r#"{"status":{"s":1}}"#).await;
        let expected = if plural == "nos" { 2 } else { 1 };
        assert_eq!(generation(status), Some(expected), "{plural}: status");
        let finalized = t
            .patch(
                &path,
                merge,
                r#"{"metadata":{"finalizers":["example.com/x"]}}"#,
            )
            .await;
        assert_eq!(generation(finalized), Some(expected));
        assert_eq!(
            generation(t.delete(&path).await),
            Some(expected + 1),
            "{plural}: deletion starts"
        );
        assert_eq!(
            generation(t.delete(&path).await),
            Some(expected + 1),
            "{plural}: once"
        );
    }
}
