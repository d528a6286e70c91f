//! Immutable fields refused on update with kube-apiserver's messages (selectors, cluster
//! IPs, Secret type, `immutable` ConfigMaps and Secrets, `metadata.uid`).

use serde_json::json;

use crate::support::TestServer;

#[tokio::test]
async fn immutable_fields_are_refused_with_the_api_servers_messages() {
    let t = TestServer::start().await;
    let merge = "application/merge-patch+json";
    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    let deployment = json!({"metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b", "c": "d"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}});
    assert_eq!(t.post(deployments, &deployment).await.status, 201);
    let reply = t
        .patch(
            &format!("{deployments}/d"),
            merge,
            r#"{"spec":{"selector":{"matchLabels":{"c":"d"}}}}"#,
        )
        .await;
    assert_eq!(reply.status, 422);
    assert_eq!(
        reply.json()["message"],
        r#"Deployment.apps "d" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"a":"b", "c":"d"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"#
    );

    let configmaps = "/api/v1/namespaces/default/configmaps";
    let frozen = json!({"metadata": {"name": "frozen"}, "data": {"a": "b"}, "immutable": true});
    assert_eq!(t.post(configmaps, &frozen).await.status, 201);
    let reply = t
        .patch(
            &format!("{configmaps}/frozen"),
            merge,
            r#"{"data":{"a":"c"}}"#,
        )
        .await;
    assert_eq!(
        reply.json()["message"],
        "ConfigMap \"frozen\" is invalid: data: Forbidden: field is immutable when `immutable` is set"
    );
    let reply = t
        .patch(
            &format!("{configmaps}/frozen"),
            merge,
            r#"{"immutable":false}"#,
        )
        .await;
    assert_eq!(reply.status, 422, "immutable cannot be unset");
    let labels = t
        .patch(
            &format!("{configmaps}/frozen"),
            merge,
            r#"{"metadata":{"labels":{"x":"y"}}}"#,
        )
        .await;
    assert_eq!(labels.status, 200, "metadata still changes");
    let uid = t
        .patch(
            &format!("{configmaps}/frozen"),
            merge,
            r#"{"metadata":{"uid":"abc"}}"#,
        )
        .await;
    assert_eq!(uid.status, 422);
    let put = t
        .put(&format!("{configmaps}/frozen"), &json!({"metadata": {"name": "frozen", "uid": "abc"}, "data": {"a": "b"}, "immutable": true}))
        .await;
    assert_eq!(
        put.status, 409,
        "another uid in a PUT fails its precondition"
    );

    let services = "/api/v1/namespaces/default/services";
    let created = t
        .post(
            services,
            &json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}),
        )
        .await
        .json();
    let reply = t
        .patch(
            &format!("{services}/s"),
            merge,
            r#"{"spec":{"clusterIP":"10.96.99.99","clusterIPs":["10.96.99.99"]}}"#,
        )
        .await;
    assert_eq!(reply.status, 422);
    assert_eq!(
        reply.json()["message"],
        r#"Service "s" is invalid: spec.clusterIPs[0]: Invalid value: []string{"10.96.99.99"}: may not change once set"#
    );
    assert_eq!(
        t.get(&format!("{services}/s")).await.json()["spec"]["clusterIP"],
        created["spec"]["clusterIP"]
    );

    let secrets = "/api/v1/namespaces/default/secrets";
    assert_eq!(
        t.post(secrets, &json!({"metadata": {"name": "s"}}))
            .await
            .status,
        201
    );
    let reply = t
        .patch(
            &format!("{secrets}/s"),
            merge,
            r#"{"type":"kubernetes.io/tls"}"#,
        )
        .await;
    assert_eq!(reply.status, 422);
}
