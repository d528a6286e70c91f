//! Defaulting of built-in kinds, as a real kube-apiserver fills them in (checked against
//! v1.20 with the fields newer versions add).

use serde_json::{Value, json};

use crate::kubectl::Kubectl;
use crate::support::TestServer;

#[tokio::test]
async fn pods_get_their_spec_defaults_and_a_pending_status() {
    let t = TestServer::start().await;
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]},
        {"name": "d", "image": "busybox:1.36", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}});
    let created = t.post("/api/v1/namespaces/default/pods", &pod).await.json();
    let spec = &created["spec"];
    assert_eq!(spec["restartPolicy"], "Always");
    assert_eq!(spec["dnsPolicy"], "ClusterFirst");
    assert_eq!(spec["schedulerName"], "default-scheduler");
    assert_eq!(spec["terminationGracePeriodSeconds"], 30);
    assert_eq!(spec["serviceAccountName"], "default");
    assert_eq!(spec["enableServiceLinks"], true);
    assert_eq!(spec["tolerations"].as_array().map(Vec::len), Some(2));
    assert_eq!(spec["containers"][0]["imagePullPolicy"], "Always");
    assert_eq!(spec["containers"][1]["imagePullPolicy"], "IfNotPresent");
    assert_eq!(spec["containers"][0]["ports"][0]["protocol"], "TCP");
    assert_eq!(
        spec["containers"][0]["terminationMessagePath"],
        "/dev/termination-log"
    );
    assert_eq!(created["status"]["phase"], "Pending");
    assert_eq!(created["status"]["qosClass"], "Burstable");
}

#[tokio::test]
async fn workloads_get_strategies_limits_and_job_selectors() {
    let t = TestServer::start().await;
    let template = json!({"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "x:1"}]}});
    let deployment = t
        .post(
            "/apis/apps/v1/namespaces/default/deployments",
            &json!({"metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": template}}),
        )
        .await
        .json();
    assert_eq!(deployment["spec"]["replicas"], 1);
    assert_eq!(
        deployment["spec"]["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
    );
    assert_eq!(deployment["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(deployment["spec"]["progressDeadlineSeconds"], 600);
    assert_eq!(
        deployment["spec"]["template"]["spec"]["restartPolicy"],
        "Always"
    );

    let job = t
        .post(
            "/apis/batch/v1/namespaces/default/jobs",
            &json!({"metadata": {"name": "j"}, "spec": {"template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}}),
        )
        .await
        .json();
    let uid = job["metadata"]["uid"].clone();
    assert_eq!(job["spec"]["completions"], 1);
    assert_eq!(job["spec"]["parallelism"], 1);
    assert_eq!(job["spec"]["backoffLimit"], 6);
    assert_eq!(
        job["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"],
        uid
    );
    assert_eq!(
        job["spec"]["template"]["metadata"]["labels"]["job-name"],
        "j"
    );
    assert_eq!(job["metadata"]["labels"]["controller-uid"], uid);
}

#[tokio::test]
async fn services_get_addresses_and_ports_that_updates_keep() {
    let t = TestServer::start().await;
    let services = "/api/v1/namespaces/default/services";
    let body =
        json!({"metadata": {"name": "np"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}});
    let created = t.post(services, &body).await.json();
    let spec = &created["spec"];
    let ip = spec["clusterIP"].as_str().unwrap().to_owned();
    assert!(ip.starts_with("10.96."), "{ip}");
    assert_ne!(ip, "10.96.0.1", "the kubernetes Service's address is taken");
    assert_eq!(spec["clusterIPs"], json!([ip]));
    let port = &spec["ports"][0];
    assert_eq!(
        (port["protocol"].as_str(), port["targetPort"].as_i64()),
        (Some("TCP"), Some(80))
    );
    let node_port = port["nodePort"].as_i64().unwrap();
    assert!((30000..=32767).contains(&node_port));
    assert_eq!(spec["externalTrafficPolicy"], "Cluster");
    assert_eq!(spec["sessionAffinity"], "None");

    // A PUT without the allocated values keeps them.
    let mut update = body.clone();
    update["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"].clone();
    update["metadata"]["labels"] = json!({"x": "y"});
    let updated = t.put(&format!("{services}/np"), &update).await.json();
    assert_eq!(updated["spec"]["clusterIP"], ip.as_str());
    assert_eq!(updated["spec"]["ports"][0]["nodePort"], node_port);

    let other = t
        .post(
            services,
            &json!({"metadata": {"name": "other"}, "spec": {"ports": [{"port": 80}]}}),
        )
        .await
        .json();
    assert_ne!(
        other["spec"]["clusterIP"],
        ip.as_str(),
        "addresses are not reused"
    );
    assert_eq!(other["spec"]["type"], "ClusterIP");
    let headless = t
        .post(
            services,
            &json!({"metadata": {"name": "headless"}, "spec": {"clusterIP": "None", "ports": [{"port": 80}]}}),
        )
        .await
        .json();
    assert_eq!(headless["spec"]["clusterIPs"], json!(["None"]));
}

#[tokio::test]
async fn secrets_default_to_opaque_and_merge_string_data() {
    let t = TestServer::start().await;
    let secret = t
        .post(
            "/api/v1/namespaces/default/secrets",
            &json!({"metadata": {"name": "s"}, "stringData": {"password": "hunter2"}}),
        )
        .await
        .json();
    assert_eq!(secret["type"], "Opaque");
    assert_eq!(secret["data"]["password"], "aHVudGVyMg==");
    assert!(secret.get("stringData").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_describe_and_get_show_the_defaults() {
    let t = TestServer::start().await;
    let kubectl = Kubectl::for_server(&t);
    let manifest = kubectl.write(
        "all.yaml",
        r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: "nginx:1", ports: [{containerPort: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec: {selector: {app: web}, ports: [{port: 80}]}
"#,
    );
    kubectl.ok(&["apply", "-f", &manifest]).await;
    let described = kubectl.ok(&["describe", "deployment", "web"]).await;
    assert!(
        described.contains("StrategyType:           RollingUpdate"),
        "{described}"
    );
    assert!(described.contains("Port:          80/TCP"), "{described}");
    let service: Value =
        serde_json::from_str(&kubectl.ok(&["get", "service", "web", "-o", "json"]).await)
            .expect("kubectl prints JSON");
    assert_eq!(service["spec"]["type"], "ClusterIP");
    assert!(
        service["spec"]["clusterIP"]
            .as_str()
            .is_some_and(|ip| ip.starts_with("10.96."))
    );
}
