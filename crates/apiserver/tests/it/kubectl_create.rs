//! kubectl 1.33's typed `create` commands, which send protobuf bodies (issue 14), and
//! `kubectl create token` (a TokenRequest on `serviceaccounts/{name}/token`).

use serde_json::Value;

use crate::kubectl::Kubectl;
use crate::support::TestServer;

async fn get_json(kubectl: &Kubectl, args: &[&str]) -> Value {
    let mut argv = vec!["get"];
    argv.extend_from_slice(args);
    argv.extend_from_slice(&["-o", "json"]);
    serde_json::from_str(&kubectl.ok(&argv).await).expect("kubectl prints JSON")
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_create_configmap_secret_and_namespace_send_protobuf_and_work() {
    let t = TestServer::start().await;
    let kubectl = Kubectl::for_server(&t);
    kubectl.ok(&["create", "namespace", "team"]).await;
    // -v=8 logs the request headers: the body really is protobuf.
    let output = kubectl
        .run(&[
            "create",
            "configmap",
            "cfg",
            "-n",
            "team",
            "--from-literal=mode=fast",
            "--from-literal=size=3",
            "-v=8",
        ])
        .await;
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{log}");
    assert!(
        log.contains("Content-Type: application/vnd.kubernetes.protobuf"),
        "kubectl sent protobuf: {log}"
    );
    kubectl
        .ok(&[
            "create",
            "secret",
            "generic",
            "creds",
            "-n",
            "team",
            "--from-literal=password=s3cret",
        ])
        .await;
    kubectl
        .ok(&[
            "create",
            "secret",
            "docker-registry",
            "pull",
            "-n",
            "team",
            "--docker-server=registry.example.com",
            "--docker-username=u",
            "--docker-password=p",
        ])
        .await;
    let cert =
        rcgen::generate_simple_self_signed(vec!["example.com".to_owned()]).expect("a certificate");
    let cert_path = kubectl.write("tls.crt", &cert.cert.pem());
    let key_path = kubectl.write("tls.key", &cert.signing_key.serialize_pem());
    kubectl
        .ok(&[
            "create",
            "secret",
            "tls",
            "tls",
            "-n",
            "team",
            &format!("--cert={cert_path}"),
            &format!("--key={key_path}"),
        ])
        .await;
    kubectl
        .ok(&["create", "serviceaccount", "robot", "-n", "team"])
        .await;
    // kubectl create token posts a protobuf TokenRequest to serviceaccounts/robot/token.
    let token = kubectl
        .ok(&["create", "token", "robot", "-n", "team", "--duration=20m"])
        .await;
    let parts: Vec<&str> = token.trim().split('.').collect();
    assert_eq!(parts.len(), 3, "a JWT-shaped token: {token}");
    let claims: Value = serde_json::from_slice(
        &base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, parts[1])
            .expect("base64url claims"),
    )
    .expect("JSON claims");
    assert_eq!(claims["sub"], "system:serviceaccount:team:robot");
    assert_eq!(
        claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
        1200
    );
    let missing = kubectl
        .run(&["create", "token", "nobody", "-n", "team"])
        .await;
    assert!(!missing.status.success());
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("not found"),
        "{}",
        String::from_utf8_lossy(&missing.stderr)
    );

    let ns = get_json(&kubectl, &["namespace", "team"]).await;
    assert_eq!(ns["status"]["phase"], "Active");
    let cm = get_json(&kubectl, &["configmap", "cfg", "-n", "team"]).await;
    assert_eq!(cm["data"], serde_json::json!({"mode": "fast", "size": "3"}));
    // Zero values Go wrote into the protobuf body do not show up as empty fields.
    assert!(cm["metadata"].get("generateName").is_none(), "{cm}");
    assert!(cm["metadata"].get("selfLink").is_none(), "{cm}");
    let secret = get_json(&kubectl, &["secret", "creds", "-n", "team"]).await;
    assert_eq!(secret["data"]["password"], "czNjcmV0");
    let pull = get_json(&kubectl, &["secret", "pull", "-n", "team"]).await;
    assert_eq!(pull["type"], "kubernetes.io/dockerconfigjson");
    assert!(pull["data"][".dockerconfigjson"].is_string());
    let tls = get_json(&kubectl, &["secret", "tls", "-n", "team"]).await;
    assert_eq!(tls["type"], "kubernetes.io/tls");
    let crt = base64_decode(tls["data"]["tls.crt"].as_str().expect("tls.crt"));
    assert_eq!(String::from_utf8_lossy(&crt), cert.cert.pem());
    let sa = get_json(&kubectl, &["serviceaccount", "robot", "-n", "team"]).await;
    assert_eq!(sa["metadata"]["name"], "robot");
}

fn base64_decode(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .expect("base64")
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_create_workloads_services_rbac_quota_and_priority_classes_work() {
    let t = TestServer::start().await;
    let kubectl = Kubectl::for_server(&t);
    kubectl
        .ok(&[
            "create",
            "deployment",
            "web",
            "--image=nginx:1.27",
            "--replicas=3",
            "--port=80",
        ])
        .await;
    kubectl
        .ok(&["create", "service", "clusterip", "web", "--tcp=80:8080"])
        .await;
    kubectl
        .ok(&[
            "create",
            "job",
            "once",
            "--image=busybox",
            "--",
            "echo",
            "hi",
        ])
        .await;
    kubectl
        .ok(&[
            "create",
            "cronjob",
            "tick",
            "--image=busybox",
            "--schedule=*/5 * * * *",
            "--",
            "date",
        ])
        .await;
    kubectl
        .ok(&[
            "create",
            "role",
            "reader",
            "--verb=get,list",
            "--resource=pods,configmaps",
        ])
        .await;
    kubectl
        .ok(&[
            "create",
            "rolebinding",
            "reader",
            "--role=reader",
            "--user=alice",
            "--serviceaccount=default:robot",
        ])
        .await;
    kubectl
        .ok(&[
            "create",
            "quota",
            "small",
            "--hard=pods=10,requests.cpu=2,limits.memory=1Gi",
        ])
        .await;
    kubectl
        .ok(&[
            "create",
            "priorityclass",
            "high",
            "--value=1000",
            "--description=important",
            "--preemption-policy=Never",
        ])
        .await;

    let deployment = get_json(&kubectl, &["deployment", "web"]).await;
    assert_eq!(deployment["spec"]["replicas"], 3);
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "nginx:1.27");
    assert_eq!(container["ports"][0]["containerPort"], 80);
    assert_eq!(deployment["spec"]["selector"]["matchLabels"]["app"], "web");
    let service = get_json(&kubectl, &["service", "web"]).await;
    assert_eq!(service["spec"]["ports"][0]["port"], 80);
    assert_eq!(service["spec"]["ports"][0]["targetPort"], 8080);
    assert_eq!(service["spec"]["type"], "ClusterIP");
    let job = get_json(&kubectl, &["job", "once"]).await;
    assert_eq!(
        job["spec"]["template"]["spec"]["containers"][0]["command"],
        serde_json::json!(["echo", "hi"])
    );
    let cronjob = get_json(&kubectl, &["cronjob", "tick"]).await;
    assert_eq!(cronjob["spec"]["schedule"], "*/5 * * * *");
    let role = get_json(&kubectl, &["role", "reader"]).await;
    assert_eq!(
        role["rules"][0]["verbs"],
        serde_json::json!(["get", "list"])
    );
    let binding = get_json(&kubectl, &["rolebinding", "reader"]).await;
    assert_eq!(binding["roleRef"]["name"], "reader");
    assert_eq!(binding["subjects"].as_array().map(Vec::len), Some(2));
    let quota = get_json(&kubectl, &["resourcequota", "small"]).await;
    assert_eq!(quota["spec"]["hard"]["requests.cpu"], "2");
    assert_eq!(quota["spec"]["hard"]["limits.memory"], "1Gi");
    let priority = get_json(&kubectl, &["priorityclass", "high"]).await;
    assert_eq!(priority["value"], 1000);
    assert_eq!(priority["preemptionPolicy"], "Never");

    // kubectl scale and kubectl label on a protobuf-created object keep working.
    kubectl
        .ok(&["scale", "deployment", "web", "--replicas=0"])
        .await;
    let scaled = get_json(&kubectl, &["deployment", "web"]).await;
    assert_eq!(scaled["spec"]["replicas"], 0);
}
