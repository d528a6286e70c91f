//! RBAC against a **real kube-apiserver** run with `--authorization-mode=RBAC`
//! (`KUBECLIENT_REALAPI_RBAC_KUBECONFIG`; `.ci/run` starts one): the same Role and
//! RoleBinding on both servers, then the same requests as the bound ServiceAccount
//! (impersonated by the administrator, as `kubectl --as` does) and the same access reviews;
//! status codes, reasons and messages must agree.

use http::Method;
use kubeclient::config::Impersonation;
use kubeclient::rest::{ContentType, Request};
use kubeclient::{Client, Error};
use kubeclient_apiserver::{ApiServer, AuthorizationMode};
use serde_json::{Value, json};

use crate::realapi::{fresh_namespace, real_server_named};
use crate::support::config_of;

/// What an answer is compared by: the code, the Status reason and message (the namespace
/// written `{ns}`), or for a success the code and the `status` of a review.
async fn answer(
    client: &Client,
    namespace: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Value {
    let mut request = Request::new(method, path.replace("{ns}", namespace));
    if let Some(body) = body {
        request = request.body(
            body.to_string().replace("{ns}", namespace),
            "application/json",
        );
    }
    match client.request_bytes(request).await {
        Ok(bytes) => {
            let value: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            json!({"ok": true, "status": value.get("status").cloned().unwrap_or(Value::Null)})
        }
        Err(Error::Api(error)) => json!({
            "code": error.code(),
            "reason": error.reason(),
            "message": error.status.message.replace(namespace, "{ns}"),
        }),
        Err(other) => json!({"transport": other.to_string()}),
    }
}

async fn set_up(admin: &Client, namespace: &str) {
    let objects = [
        (
            "/api/v1/namespaces/{ns}/serviceaccounts",
            json!({"metadata": {"name": "bot"}}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
            json!({"metadata": {"name": "reader"},
                   "rules": [{"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list", "watch"]}]}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
            json!({"metadata": {"name": "rb"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
                   "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "{ns}"}]}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
            json!({"metadata": {"name": "rbac-writer"},
                   "rules": [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"], "verbs": ["create"]}]}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
            json!({"metadata": {"name": "rbw"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "rbac-writer"},
                   "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "{ns}"}]}),
        ),
    ];
    for (path, body) in objects {
        let outcome = answer(admin, namespace, Method::POST, path, Some(body)).await;
        assert_eq!(outcome["ok"], true, "{path}: {outcome}");
    }
}

/// The ServiceAccount's requests and the administrator's reviews, answered by one server.
async fn transcript(admin: &Client, bot: &Client, namespace: &str) -> Vec<(String, Value)> {
    set_up(admin, namespace).await;
    let as_bot: &[(Method, &str, Option<Value>)] = &[
        (Method::GET, "/api/v1/namespaces/{ns}/pods", None),
        (Method::GET, "/api/v1/namespaces/{ns}/pods/web", None),
        (Method::GET, "/api/v1/namespaces/{ns}/secrets", None),
        (Method::GET, "/api/v1/namespaces/{ns}/secrets/token", None),
        (Method::GET, "/api/v1/nodes", None),
        (Method::GET, "/api/v1/pods", None),
        (Method::DELETE, "/api/v1/namespaces/{ns}/pods/web", None),
        (Method::DELETE, "/api/v1/namespaces/{ns}/pods", None),
        (
            Method::POST,
            "/api/v1/namespaces/{ns}/configmaps",
            Some(json!({"metadata": {"name": "c"}})),
        ),
        (
            Method::GET,
            "/apis/apps/v1/namespaces/{ns}/deployments",
            None,
        ),
        (Method::GET, "/apis/nope.io/v1/things", None),
        (Method::GET, "/foo", None),
        // Escalation: a Role with a rule the account does not hold; one it holds; a
        // binding of a Role it holds and of one that does not exist.
        (
            Method::POST,
            "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
            Some(
                json!({"metadata": {"name": "sneaky"}, "rules": [{"apiGroups": [""], "resources": ["secrets", "pods"], "verbs": ["get", "delete"]}]}),
            ),
        ),
        (
            Method::POST,
            "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
            Some(
                json!({"metadata": {"name": "held"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
            ),
        ),
        (
            Method::POST,
            "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
            Some(
                json!({"metadata": {"name": "okb"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
                        "subjects": [{"kind": "User", "name": "bob"}]}),
            ),
        ),
        (
            Method::POST,
            "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
            Some(
                json!({"metadata": {"name": "nob"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "missing"},
                        "subjects": [{"kind": "User", "name": "bob"}]}),
            ),
        ),
    ];
    let mut answers = Vec::new();
    for (method, path, body) in as_bot {
        let outcome = answer(bot, namespace, method.clone(), path, body.clone()).await;
        let outcome = if outcome["ok"] == true {
            json!({"ok": true})
        } else {
            outcome
        };
        answers.push((format!("bot {method} {path}"), outcome));
    }
    for verb in ["list", "delete"] {
        let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": "system:serviceaccount:{ns}:bot",
                     "groups": ["system:serviceaccounts", "system:serviceaccounts:{ns}", "system:authenticated"],
                     "resourceAttributes": {"namespace": "{ns}", "verb": verb, "resource": "pods"}}});
        let outcome = answer(
            admin,
            namespace,
            Method::POST,
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            Some(review),
        )
        .await;
        let outcome = serde_json::from_str(&outcome.to_string().replace(namespace, "{ns}"))
            .unwrap_or(outcome);
        answers.push((format!("review {verb} pods"), outcome));
    }
    answers
}

fn acting_as_bot(mut config: kubeclient::Config, namespace: &str) -> kubeclient::Config {
    config.impersonate = Some(Impersonation::user(format!(
        "system:serviceaccount:{namespace}:bot"
    )));
    config.content_type = ContentType::Json;
    config
}

#[tokio::test]
async fn rbac_answers_agree_with_a_real_rbac_server() {
    let Some(real_admin) =
        real_server_named("KUBECLIENT_REALAPI_RBAC_KUBECONFIG", ContentType::Json).await
    else {
        return;
    };
    let namespace = fresh_namespace(&real_admin, "rbac").await;
    let path = std::env::var("KUBECLIENT_REALAPI_RBAC_KUBECONFIG").expect("set: checked above");
    let kubeconfig = kubeclient::config::Kubeconfig::read_from(&path).expect("the kubeconfig");
    let real_config =
        kubeclient::Config::from_kubeconfig(&kubeconfig, &Default::default()).expect("a context");
    let real_bot = Client::new(acting_as_bot(real_config, &namespace))
        .await
        .expect("a client");
    let real = transcript(&real_admin, &real_bot, &namespace).await;

    let server = ApiServer::builder()
        .authorization_mode(AuthorizationMode::Rbac)
        .start()
        .await
        .expect("the embedded server");
    let ours_admin = Client::new(config_of(&server)).await.expect("a client");
    let created = answer(
        &ours_admin,
        &namespace,
        Method::POST,
        "/api/v1/namespaces",
        Some(json!({"metadata": {"name": "{ns}"}})),
    )
    .await;
    assert_eq!(created["ok"], true, "{created}");
    let ours_bot = Client::new(acting_as_bot(config_of(&server), &namespace))
        .await
        .expect("a client");
    let ours = transcript(&ours_admin, &ours_bot, &namespace).await;

    let mut agreed = 0;
    for ((step, theirs), (_, mine)) in real.iter().zip(&ours) {
        assert_eq!(mine, theirs, "{step}: ours vs the real server");
        agreed += 1;
    }
    eprintln!(
        "RBAC: {agreed} of {} answers agree with the real kube-apiserver",
        real.len()
    );
}
