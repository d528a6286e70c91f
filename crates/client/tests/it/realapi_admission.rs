//! Admission webhooks against a **real kube-apiserver** (`KUBECLIENT_REALAPI_KUBECONFIG`;
//! `.ci/run` starts v1.20): the same webhook servers registered on both servers, then the
//! same writes; the objects the mutating webhooks leave (their order, and
//! `reinvocationPolicy: IfNeeded`) and the refusals and failures (codes, reasons, texts)
//! must agree (issue 28).

use std::sync::Arc;

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kubeclient::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kubeclient::rest::ContentType;
use kubeclient::webhook::{CustomValidator, Denial, Warnings, WebhookServer};
use kubeclient::{Client, Error};
use serde_json::{Value, json};

use crate::admission::{SawB, SetsB};
use crate::realapi::{fresh_namespace, real_server};
use crate::support::{scratch, start};

/// Refuses passwords (403) and the value `bad` (422).
struct Policy;

impl CustomValidator<ConfigMap> for Policy {
    async fn validate_create(&self, cm: &ConfigMap) -> Result<Warnings, Denial> {
        Policy::check(cm)
    }

    async fn validate_update(&self, _: &ConfigMap, cm: &ConfigMap) -> Result<Warnings, Denial> {
        Policy::check(cm)
    }
}

impl Policy {
    fn check(cm: &ConfigMap) -> Result<Warnings, Denial> {
        let data = cm.data.clone().unwrap_or_default();
        if data.contains_key("password") {
            return Err(Denial::new("passwords belong in Secrets"));
        }
        if data.values().any(|v| v == "bad") {
            return Err(Denial::invalid("data: Invalid value: \"bad\": not allowed"));
        }
        Ok(Vec::new())
    }
}

/// The configurations of one run, all limited to objects labelled `run: <run>`.
fn configurations(run: &str, port: u16, dead: u16, ca: &[u8]) -> (Vec<Value>, Vec<Value>) {
    let bundle = serde_json::to_value(ByteString(ca.to_vec())).unwrap_or(Value::Null);
    let hook = |name: &str, port: u16, path: &str, extra: Value| {
        let mut selector = json!({"run": run});
        if let Some(dead) = extra.get("dead") {
            selector["dead"] = dead.clone();
        }
        let mut hook = json!({
            "name": name,
            "clientConfig": {"url": format!("https://127.0.0.1:{port}{path}"), "caBundle": bundle},
            "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""],
                       "apiVersions": ["v1"], "resources": ["configmaps"]}],
            "objectSelector": {"matchLabels": selector},
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        });
        if let (Value::Object(hook), Value::Object(extra)) = (&mut hook, extra) {
            hook.extend(extra.into_iter().filter(|(k, _)| k != "dead"));
        }
        hook
    };
    let mutating = vec![
        json!({"metadata": {"name": format!("{run}-1")}, "webhooks": [
            hook("saw-b.example.com", port, "/saw-b", json!({"reinvocationPolicy": "IfNeeded"})),
        ]}),
        json!({"metadata": {"name": format!("{run}-2")}, "webhooks": [
            hook("sets-b.example.com", port, "/sets-b", json!({})),
        ]}),
    ];
    let validating = vec![
        json!({"metadata": {"name": format!("{run}-v")}, "webhooks": [
            hook("policy.example.com", port, "/policy", json!({})),
            hook("dead-fail.example.com", dead, "/", json!({"dead": "fail"})),
            hook("dead-ignore.example.com", dead, "/", json!({"dead": "ignore", "failurePolicy": "Ignore"})),
        ]}),
    ];
    (mutating, validating)
}

async fn register(client: &Client, mutating: &[Value], validating: &[Value]) {
    for configuration in mutating {
        let configuration: MutatingWebhookConfiguration =
            serde_json::from_value(configuration.clone()).unwrap();
        Api::<MutatingWebhookConfiguration>::all(client.clone())
            .create(&PostParams::default(), &configuration)
            .await
            .unwrap();
    }
    for configuration in validating {
        let configuration: ValidatingWebhookConfiguration =
            serde_json::from_value(configuration.clone()).unwrap();
        Api::<ValidatingWebhookConfiguration>::all(client.clone())
            .create(&PostParams::default(), &configuration)
            .await
            .unwrap();
    }
}

async fn unregister(client: &Client, run: &str) {
    let delete = DeleteParams::default();
    for suffix in ["1", "2"] {
        let _ = Api::<MutatingWebhookConfiguration>::all(client.clone())
            .delete(&format!("{run}-{suffix}"), &delete)
            .await;
    }
    let _ = Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .delete(&format!("{run}-v"), &delete)
        .await;
}

/// An answer as compared: for a write that worked, the labels and annotations of the
/// object; for one that failed, its code, reason and message (the run, the namespace
/// and the dead port written as placeholders).
fn outcome(result: Result<ConfigMap, Error>, replace: &[(&str, &str)]) -> Value {
    match result {
        Ok(cm) => json!({
            "labels": cm.metadata.labels,
            "annotations": cm.metadata.annotations,
        }),
        Err(Error::Api(error)) => {
            let mut message = error.status.message.clone();
            for (from, to) in replace {
                message = message.replace(from, to);
            }
            json!({"code": error.code(), "reason": error.reason(), "message": message})
        }
        Err(other) => json!({"transport": other.to_string()}),
    }
}

/// The writes, answered by one server.
async fn transcript(
    client: &Client,
    namespace: &str,
    run: &str,
    dead: u16,
) -> Vec<(String, Value)> {
    let api = Api::<ConfigMap>::namespaced(client.clone(), namespace);
    let dead_port = dead.to_string();
    let replace = [
        (run, "{run}"),
        (namespace, "{ns}"),
        (dead_port.as_str(), "{port}"),
    ];
    let config_map = |name: &str, labels: Value, data: Value| -> ConfigMap {
        let mut labels = labels;
        labels["run"] = json!(run);
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}, "data": data}))
            .unwrap()
    };
    let mut answers = Vec::new();
    let steps: [(&str, ConfigMap); 6] = [
        (
            "mutated in order, reinvoked",
            config_map("plain", json!({}), json!({"k": "v"})),
        ),
        (
            "labelled already: no reinvocation",
            config_map("labelled", json!({"b": "x"}), json!({})),
        ),
        (
            "a password (403)",
            config_map("secret", json!({}), json!({"password": "p"})),
        ),
        (
            "a bad value (422)",
            config_map("bad", json!({}), json!({"k": "bad"})),
        ),
        (
            "a dead webhook under Fail",
            config_map("dead-fail", json!({"dead": "fail"}), json!({})),
        ),
        (
            "a dead webhook under Ignore",
            config_map("dead-ignore", json!({"dead": "ignore"}), json!({})),
        ),
    ];
    for (step, cm) in steps {
        let result = api.create(&PostParams::default(), &cm).await;
        answers.push((step.to_owned(), outcome(result, &replace)));
    }
    let patched = api
        .patch(
            "plain",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "w"}})),
        )
        .await;
    answers.push((
        "an update, mutated again".to_owned(),
        outcome(patched, &replace),
    ));
    let refused = api
        .patch(
            "plain",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "bad"}})),
        )
        .await;
    answers.push(("an update refused".to_owned(), outcome(refused, &replace)));
    answers
}

/// v1.20's answer as current Kubernetes words it: since 1.23 a call that fails says
/// `failed to call webhook: ` before the transport's error (`ErrCallingWebhook`'s
/// reason), and current Kubernetes wins.
fn current(answer: &Value) -> Value {
    let mut answer = answer.clone();
    if let Some(Value::String(message)) = answer.get_mut("message")
        && let Some(at) = message.find("\": Post \"")
    {
        message.insert_str(at + "\": ".len(), "failed to call webhook: ");
    }
    answer
}

#[tokio::test]
async fn admission_webhooks_agree_with_a_real_kube_apiserver() {
    let Some(real) = real_server().await else {
        return;
    };
    let namespace = fresh_namespace(&real, "admission").await;
    let run = namespace.clone();
    let webhooks: Arc<WebhookServer> = Arc::new(
        WebhookServer::builder()
            .address("127.0.0.1:0".parse().unwrap())
            .cert_dir(scratch("realapi-admission").join("certs"))
            .self_signed(&["webhook.default.svc"])
            .defaulter("/saw-b", SawB::default())
            .defaulter("/sets-b", SetsB)
            .validator("/policy", Policy)
            .start()
            .await
            .unwrap(),
    );
    // A port nothing listens on.
    let dead = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let ca = webhooks.ca_bundle().unwrap().as_bytes().to_vec();
    let (mutating, validating) = configurations(&run, webhooks.local_addr().port(), dead, &ca);

    register(&real, &mutating, &validating).await;
    let theirs = transcript(&real, &namespace, &run, dead).await;
    unregister(&real, &run).await;
    let _ = Api::<Namespace>::all(real.clone())
        .delete(&namespace, &DeleteParams::default())
        .await;

    let fixture = start().await;
    let ours_client =
        crate::support::start_with_as_client(&fixture.server, ContentType::Json).await;
    let mut ns = Namespace::default();
    ns.metadata.name = Some(namespace.clone());
    Api::<Namespace>::all(ours_client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    register(&ours_client, &mutating, &validating).await;
    let ours = transcript(&ours_client, &namespace, &run, dead).await;

    // The webhooks did act: the first saw no `b`, the second set it, the first ran again.
    assert_eq!(
        theirs[0].1["annotations"],
        json!({"order": "b", "saw-b": "ny"}),
        "{theirs:?}"
    );
    for ((step, theirs), (_, mine)) in theirs.iter().zip(&ours) {
        assert_eq!(mine, &current(theirs), "{step}: ours vs the real server");
    }
    assert_eq!(ours.len(), theirs.len());
    eprintln!(
        "admission: {} of {} answers agree with the real kube-apiserver",
        ours.len(),
        theirs.len()
    );
}

/// The conversions, answered by one server: written, read, listed and patched through
/// both versions, and a write the webhook cannot convert.
async fn conversion_transcript(client: &Client, namespace: &str) -> Vec<(String, Value)> {
    use crate::conversion_webhook::{v1, v1alpha1};
    let old: Api<v1alpha1::Gizmo> = Api::namespaced(client.clone(), namespace);
    let new: Api<v1::Gizmo> = Api::namespaced(client.clone(), namespace);
    let replace = |text: String| text.replace(namespace, "{ns}");
    let answer = |result: Result<Value, Error>| match result {
        Ok(value) => value,
        Err(Error::Api(error)) => json!({"code": error.code(), "reason": error.reason(),
                                         "message": replace(error.status.message.clone())}),
        Err(other) => json!({"transport": other.to_string()}),
    };
    let size = |size: &str| {
        v1alpha1::Gizmo::new(
            "g",
            v1alpha1::GizmoSpec {
                size: size.to_owned(),
            },
        )
    };
    let mut answers = Vec::new();
    let created = old.create(&PostParams::default(), &size("3")).await;
    answers.push((
        "create as v1alpha1",
        answer(created.map(|g| json!(g.spec.size))),
    ));
    let read = new.get("g").await;
    answers.push(("read as v1", answer(read.map(|g| json!(g.spec.replicas)))));
    let listed = old.list(&Default::default()).await;
    answers.push((
        "list as v1alpha1",
        answer(listed.map(|l| {
            json!(
                l.items
                    .iter()
                    .map(|g| g.spec.size.clone())
                    .collect::<Vec<_>>()
            )
        })),
    ));
    let patched = old
        .patch(
            "g",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": "5"}})),
        )
        .await;
    answers.push((
        "patch as v1alpha1",
        answer(patched.map(|g| json!(g.spec.size))),
    ));
    let read = new.get("g").await;
    answers.push((
        "read the patch as v1",
        answer(read.map(|g| json!(g.spec.replicas))),
    ));
    let mut many = size("many");
    many.metadata.name = Some("many".to_owned());
    let refused = old.create(&PostParams::default(), &many).await;
    answers.push((
        "a size that does not convert",
        answer(refused.map(|g| json!(g.spec.size))),
    ));
    answers
        .into_iter()
        .map(|(step, answer)| (step.to_owned(), answer))
        .collect()
}

#[tokio::test]
async fn conversion_webhooks_agree_with_a_real_kube_apiserver() {
    let Some(real) = real_server().await else {
        return;
    };
    let namespace = fresh_namespace(&real, "conversion").await;
    let webhooks = WebhookServer::builder()
        .address("127.0.0.1:0".parse().unwrap())
        .cert_dir(scratch("realapi-conversion").join("certs"))
        .self_signed(&["gizmo-webhook.default.svc"])
        .conversion("/convert", crate::conversion_webhook::conversion())
        .start()
        .await
        .unwrap();
    let (address, ca) = (webhooks.local_addr(), webhooks.ca_bundle().unwrap());
    crate::conversion_webhook::install(&real, address, ca, "v1").await;
    let theirs = conversion_transcript(&real, &namespace).await;
    let _ = Api::<Namespace>::all(real.clone())
        .delete(&namespace, &DeleteParams::default())
        .await;

    let fixture = start().await;
    let mut ns = Namespace::default();
    ns.metadata.name = Some(namespace.clone());
    Api::<Namespace>::all(fixture.client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    crate::conversion_webhook::install(&fixture.client, address, ca, "v1").await;
    let ours = conversion_transcript(&fixture.client, &namespace).await;

    assert_eq!(
        theirs[1].1,
        json!(3),
        "the real server converted: {theirs:?}"
    );
    for ((step, theirs), (_, mine)) in theirs.iter().zip(&ours) {
        assert_eq!(mine, theirs, "{step}: ours vs the real server");
    }
    eprintln!(
        "conversion: {} of {} answers agree with the real kube-apiserver",
        ours.len(),
        theirs.len()
    );
}
