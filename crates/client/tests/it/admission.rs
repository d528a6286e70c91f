//! The embedded server's admission chain calling real webhooks over HTTPS: a defaulter
//! and a validator from `kubeclient::webhook` registered by `MutatingWebhookConfiguration`
//! and `ValidatingWebhookConfiguration` (by `clientConfig.url` and by
//! `clientConfig.service`, the CA written by `inject_ca_bundle`), kube-apiserver's error
//! texts, `failurePolicy` with a dead webhook, timeouts, selectors, and hostile webhooks
//! (garbage, a wrong uid, 500, an oversized answer, patches that break the object), and
//! the reviews' request fields (generated names, deletes, the scale subresource,
//! `matchPolicy: Equivalent` across a CRD's versions).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kubeclient::Client;
use kubeclient::api::{Api, DeleteParams, PostParams};
use kubeclient::util::cert::{CertConfig, CertificateAuthority, ExtKeyUsage};
use kubeclient::webhook::{
    CustomDefaulter, CustomValidator, Denial, Warnings, WebhookServer, inject_ca_bundle,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{Fixture, scratch, start};

struct Labels;

impl CustomDefaulter<ConfigMap> for Labels {
    async fn default(&self, cm: &mut ConfigMap) -> Result<(), Denial> {
        cm.metadata
            .labels
            .get_or_insert_default()
            .insert("team".into(), "core".into());
        Ok(())
    }
}

struct NoSecrets;

impl CustomValidator<ConfigMap> for NoSecrets {
    async fn validate_create(&self, cm: &ConfigMap) -> Result<Warnings, Denial> {
        if cm.data.as_ref().is_some_and(|d| d.contains_key("password")) {
            return Err(Denial::new("passwords belong in Secrets"));
        }
        Ok(vec!["checked by no-secrets".to_owned()])
    }

    async fn validate_delete(&self, cm: &ConfigMap) -> Result<Warnings, Denial> {
        if cm
            .metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key("keep"))
        {
            return Err(Denial::invalid("this one is kept"));
        }
        Ok(Vec::new())
    }
}

/// The webhook server with the defaulter and the validator, its certificate valid for
/// 127.0.0.1 and `webhook.default.svc`.
async fn webhook_server() -> WebhookServer {
    WebhookServer::builder()
        .address("127.0.0.1:0".parse().unwrap())
        .cert_dir(scratch("admission").join("certs"))
        .self_signed(&["webhook.default.svc"])
        .defaulter("/mutate-configmaps", Labels)
        .validator("/validate-configmaps", NoSecrets)
        .start()
        .await
        .unwrap()
}

/// One webhook for ConfigMaps (create and update, and delete for the validator).
fn hook(name: &str, client_config: Value, extra: Value) -> Value {
    let mut hook = json!({
        "name": name,
        "clientConfig": client_config,
        "rules": [{"operations": ["CREATE", "UPDATE", "DELETE"], "apiGroups": [""],
                   "apiVersions": ["v1"], "resources": ["configmaps"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    if let (Value::Object(hook), Value::Object(extra)) = (&mut hook, extra) {
        hook.extend(extra);
    }
    hook
}

async fn mutating(client: &Client, name: &str, hooks: Vec<Value>) {
    let configuration: MutatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": name}, "webhooks": hooks,
    }))
    .unwrap();
    Api::<MutatingWebhookConfiguration>::all(client.clone())
        .create(&PostParams::default(), &configuration)
        .await
        .unwrap();
}

async fn validating(client: &Client, name: &str, hooks: Vec<Value>) {
    let configuration: ValidatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": name}, "webhooks": hooks,
    }))
    .unwrap();
    Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .create(&PostParams::default(), &configuration)
        .await
        .unwrap();
}

fn config_map(name: &str, data: Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": data})).unwrap()
}

fn url(port: u16, path: &str) -> Value {
    json!({"url": format!("https://127.0.0.1:{port}{path}")})
}

/// The Status of a failed write.
fn status(error: kubeclient::Error) -> kubeclient::machinery::Status {
    match error.api() {
        Some(api) => api.status.clone(),
        None => panic!("not an API error: {error}"),
    }
}

#[tokio::test]
async fn a_defaulter_and_a_validator_mutate_and_deny_writes_with_kube_apiservers_texts() {
    let Fixture {
        server: _server,
        client,
    } = start().await;
    let webhooks = webhook_server().await;
    let port = webhooks.local_addr().port();
    mutating(
        &client,
        "labels",
        vec![hook(
            "labels.example.com",
            url(port, "/mutate-configmaps"),
            json!({}),
        )],
    )
    .await;
    validating(
        &client,
        "no-secrets",
        vec![hook(
            "no-secrets.example.com",
            json!({"service": {"namespace": "default", "name": "webhook", "port": port,
                               "path": "/validate-configmaps"}}),
            json!({}),
        )],
    )
    .await;
    let configmaps = Api::<ConfigMap>::namespaced(client.clone(), "default");

    // Without the CA the call cannot verify the serving certificate: Fail refuses.
    let unverified = status(
        configmaps
            .create(&PostParams::default(), &config_map("a", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!(unverified.code, 500, "{unverified:?}");
    assert!(
        unverified.message.starts_with(&format!(
            "Internal error occurred: failed calling webhook \"labels.example.com\": failed to call webhook: Post \"https://127.0.0.1:{port}/mutate-configmaps?timeout=10s\": tls: failed to verify certificate: x509: certificate signed by unknown authority"
        )),
        "{}",
        unverified.message
    );

    inject_ca_bundle(
        &client,
        webhooks.ca_bundle().unwrap(),
        &["labels"],
        &["no-secrets"],
    )
    .await
    .unwrap();
    let stored = Api::<MutatingWebhookConfiguration>::all(client.clone())
        .get("labels")
        .await
        .unwrap();
    let hook = &stored.webhooks.as_ref().unwrap()[0];
    assert_eq!(
        hook.client_config.ca_bundle.as_ref().map(|b| b.0.clone()),
        Some(webhooks.ca_bundle().unwrap().as_bytes().to_vec())
    );
    assert_eq!(hook.failure_policy.as_deref(), Some("Fail"));
    assert_eq!(hook.timeout_seconds, Some(10));
    assert_eq!(hook.reinvocation_policy.as_deref(), Some("Never"));

    let created = configmaps
        .create(&PostParams::default(), &config_map("a", json!({"k": "v"})))
        .await
        .unwrap();
    assert_eq!(
        created
            .metadata
            .labels
            .unwrap()
            .get("team")
            .map(String::as_str),
        Some("core"),
        "the defaulter's patch is stored"
    );

    // An update goes through the defaulter too.
    let mut unlabelled = configmaps.get("a").await.unwrap();
    unlabelled.metadata.labels = None;
    let updated = configmaps
        .replace("a", &PostParams::default(), &unlabelled)
        .await
        .unwrap();
    assert!(updated.metadata.labels.unwrap().contains_key("team"));

    // A dry run is admitted (sideEffects None) and answers the mutated object.
    let dry = configmaps
        .create(
            &PostParams {
                dry_run: true,
                ..PostParams::default()
            },
            &config_map("dry", json!({})),
        )
        .await
        .unwrap();
    assert!(dry.metadata.labels.unwrap().contains_key("team"));
    assert!(configmaps.get_opt("dry").await.unwrap().is_none());

    let denied = status(
        configmaps
            .create(
                &PostParams::default(),
                &config_map("b", json!({"password": "x"})),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(denied.code, 403);
    assert_eq!(denied.reason, "Forbidden");
    assert_eq!(
        denied.message,
        "admission webhook \"no-secrets.example.com\" denied the request: passwords belong in Secrets"
    );

    // The validator sees deletes (with the old object) and may refuse them.
    let mut kept = config_map("kept", json!({}));
    kept.metadata.labels = Some(BTreeMap::from([("keep".into(), "yes".into())]));
    configmaps
        .create(&PostParams::default(), &kept)
        .await
        .unwrap();
    let refused = status(
        configmaps
            .delete("kept", &DeleteParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(refused.code, 422);
    assert_eq!(
        refused.message,
        "admission webhook \"no-secrets.example.com\" denied the request: this one is kept"
    );
    configmaps
        .delete("a", &DeleteParams::default())
        .await
        .unwrap();

    // Other kinds are not the webhooks' business.
    let secrets = Api::<k8s_openapi::api::core::v1::Secret>::namespaced(client.clone(), "default");
    let secret = serde_json::from_value(json!({"metadata": {"name": "s"}})).unwrap();
    let secret = secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    assert!(secret.metadata.labels.is_none());
}

#[tokio::test]
async fn a_dead_webhook_fails_writes_under_fail_and_is_skipped_under_ignore() {
    let Fixture {
        server: _server,
        client,
    } = start().await;
    // Nothing listens on port 1.
    validating(
        &client,
        "dead",
        vec![hook(
            "dead.example.com",
            url(1, ""),
            json!({"failurePolicy": "Ignore"}),
        )],
    )
    .await;
    let configmaps = Api::<ConfigMap>::namespaced(client.clone(), "default");
    configmaps
        .create(&PostParams::default(), &config_map("ignored", json!({})))
        .await
        .expect("failurePolicy Ignore lets the write through");

    let api = Api::<ValidatingWebhookConfiguration>::all(client.clone());
    let mut dead = api.get("dead").await.unwrap();
    dead.webhooks.as_mut().unwrap()[0].failure_policy = Some("Fail".into());
    api.replace("dead", &PostParams::default(), &dead)
        .await
        .unwrap();
    let failed = status(
        configmaps
            .create(&PostParams::default(), &config_map("refused", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!(failed.code, 500);
    assert_eq!(failed.reason, "InternalError");
    assert_eq!(
        failed.message,
        "Internal error occurred: failed calling webhook \"dead.example.com\": failed to call webhook: Post \"https://127.0.0.1:1/?timeout=10s\": dial tcp 127.0.0.1:1: connect: connection refused"
    );
}

#[tokio::test]
async fn a_hanging_webhook_fails_within_its_timeout() {
    let Fixture {
        server: _server,
        client,
    } = start().await;
    // Accepts connections and never says a word.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    mutating(
        &client,
        "hangs",
        vec![hook(
            "hangs.example.com",
            url(port, "/mutate"),
            json!({"timeoutSeconds": 1}),
        )],
    )
    .await;
    let configmaps = Api::<ConfigMap>::namespaced(client.clone(), "default");
    let started = Instant::now();
    let failed = status(
        configmaps
            .create(&PostParams::default(), &config_map("slow", json!({})))
            .await
            .unwrap_err(),
    );
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert!(took >= Duration::from_millis(900), "took {took:?}");
    assert_eq!(
        failed.message,
        format!(
            "Internal error occurred: failed calling webhook \"hangs.example.com\": failed to call webhook: Post \"https://127.0.0.1:{port}/mutate?timeout=1s\": context deadline exceeded"
        )
    );
    silent.abort();
}

#[tokio::test]
async fn namespace_and_object_selectors_choose_what_a_webhook_sees() {
    let Fixture {
        server: _server,
        client,
    } = start().await;
    let webhooks = webhook_server().await;
    let port = webhooks.local_addr().port();
    let bundle = base64::engine::general_purpose::STANDARD.encode(webhooks.ca_bundle().unwrap());
    let mut config = url(port, "/validate-configmaps");
    config["caBundle"] = json!(bundle);
    validating(
        &client,
        "selective",
        vec![hook(
            "selective.example.com",
            config,
            json!({
                "namespaceSelector": {"matchLabels": {"policy": "strict"}},
                "objectSelector": {"matchExpressions": [{"key": "exempt", "operator": "DoesNotExist"}]},
            }),
        )],
    )
    .await;
    let namespaces = Api::<Namespace>::all(client.clone());
    for (name, labels) in [("strict", json!({"policy": "strict"})), ("lax", json!({}))] {
        let namespace =
            serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap();
        namespaces
            .create(&PostParams::default(), &namespace)
            .await
            .unwrap();
    }
    let password = || config_map("p", json!({"password": "x"}));
    let lax = Api::<ConfigMap>::namespaced(client.clone(), "lax");
    lax.create(&PostParams::default(), &password())
        .await
        .expect("the namespace selector leaves lax out");
    let strict = Api::<ConfigMap>::namespaced(client.clone(), "strict");
    let denied = status(
        strict
            .create(&PostParams::default(), &password())
            .await
            .unwrap_err(),
    );
    assert_eq!(denied.code, 403, "{denied:?}");
    let mut exempt = password();
    exempt.metadata.labels = Some(BTreeMap::from([("exempt".into(), "yes".into())]));
    strict
        .create(&PostParams::default(), &exempt)
        .await
        .expect("the object selector leaves exempt objects out");
    // A namespace that does not exist: 404, as kube-apiserver's namespace lookup answers.
    let missing = Api::<ConfigMap>::namespaced(client.clone(), "nowhere");
    let error = status(
        missing
            .create(&PostParams::default(), &password())
            .await
            .unwrap_err(),
    );
    assert_eq!(error.code, 404);
}

/// An HTTPS server answering every review with `answer(uid)`: (status, body).
struct Hostile {
    port: u16,
    ca_pem: String,
    /// Every review it was sent.
    seen: Arc<std::sync::Mutex<Vec<Value>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn hostile(answer: impl Fn(&str) -> (u16, Vec<u8>) + Send + Sync + 'static) -> Hostile {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let ca = CertificateAuthority::new_self_signed("hostile-ca").unwrap();
    let pair = ca
        .sign(&CertConfig {
            common_name: "hostile".into(),
            ip_addresses: vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
            usages: vec![ExtKeyUsage::ServerAuth],
            ..CertConfig::default()
        })
        .unwrap();
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(pair.cert_pem.as_bytes())
            .collect::<Result<_, _>>()
            .unwrap();
    let key = PrivateKeyDer::from_pem_slice(pair.key_pem.as_bytes()).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let answer = Arc::new(answer);
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let recorded = Arc::clone(&seen);
    let task = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (acceptor, answer) = (acceptor.clone(), Arc::clone(&answer));
            let recorded = Arc::clone(&recorded);
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(stream).await else {
                    return;
                };
                let mut request = Vec::new();
                let mut buffer = [0u8; 16 * 1024];
                let body = loop {
                    let Ok(read) = tls.read(&mut buffer).await else {
                        return;
                    };
                    if read == 0 {
                        return;
                    }
                    request.extend_from_slice(&buffer[..read]);
                    let text = String::from_utf8_lossy(&request).to_string();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let length = text[..end]
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if request.len() >= end + 4 + length {
                            break request[end + 4..end + 4 + length].to_vec();
                        }
                    }
                };
                let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                recorded.lock().unwrap().push(review.clone());
                let uid = review
                    .pointer("/request/uid")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let (code, body) = answer(uid);
                let head = format!(
                    "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = tls.write_all(head.as_bytes()).await;
                let _ = tls.write_all(&body).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    Hostile {
        port,
        ca_pem: ca.cert_pem().to_owned(),
        seen,
        task,
    }
}

fn allowed_with_patch(uid: &str, patch: Value) -> Vec<u8> {
    let patch = base64::engine::general_purpose::STANDARD.encode(patch.to_string());
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "response": {"uid": uid, "allowed": true, "patchType": "JSONPatch", "patch": patch},
    }))
    .unwrap()
}

/// The Status a create of a ConfigMap gets from a mutating webhook answering with
/// `answer`.
async fn create_through(
    answer: impl Fn(&str) -> (u16, Vec<u8>) + Send + Sync + 'static,
) -> kubeclient::machinery::Status {
    let Fixture {
        server: _server,
        client,
    } = start().await;
    let hostile = hostile(answer).await;
    let mut config = url(hostile.port, "/mutate");
    config["caBundle"] = json!(base64::engine::general_purpose::STANDARD.encode(&hostile.ca_pem));
    mutating(
        &client,
        "hostile",
        vec![hook("hostile.example.com", config, json!({}))],
    )
    .await;
    let configmaps = Api::<ConfigMap>::namespaced(client.clone(), "default");
    let result = configmaps
        .create(&PostParams::default(), &config_map("c", json!({"k": "v"})))
        .await;
    // The server still serves.
    configmaps.list(&Default::default()).await.unwrap();
    status(result.unwrap_err())
}

#[tokio::test]
async fn hostile_answers_are_call_failures_or_proper_statuses() {
    let prefix = "Internal error occurred: failed calling webhook \"hostile.example.com\": ";
    let garbage = create_through(|_| (200, b"{not json".to_vec())).await;
    assert_eq!(garbage.code, 500);
    assert!(
        garbage
            .message
            .starts_with(&format!("{prefix}failed to call webhook: ")),
        "{}",
        garbage.message
    );

    let wrong_uid = create_through(|_| {
        (
            200,
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"wrong","allowed":true}}"#.to_vec(),
        )
    })
    .await;
    assert!(
        wrong_uid.message.starts_with(&format!(
            "{prefix}received invalid webhook response: expected response.uid=\""
        )) && wrong_uid.message.ends_with("got \"wrong\""),
        "{}",
        wrong_uid.message
    );

    let wrong_kind = create_through(|uid| {
        (
            200,
            serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "Status", "response": {"uid": uid, "allowed": true}})).unwrap(),
        )
    })
    .await;
    assert_eq!(
        wrong_kind.message,
        format!(
            "{prefix}failed to call webhook: converting (v1.Status) to (v1.AdmissionReview): unknown conversion"
        )
    );
    let wrong_version = create_through(|uid| {
        (
            200,
            serde_json::to_vec(&json!({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "response": {"uid": uid, "allowed": true}})).unwrap(),
        )
    })
    .await;
    assert_eq!(
        wrong_version.message,
        format!(
            "{prefix}received invalid webhook response: expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got admission.k8s.io/v1beta1, Kind=AdmissionReview"
        )
    );

    // client-go shows a body only when it is text (this one says JSON).
    let server_error = create_through(|_| (500, b"boom".to_vec())).await;
    assert_eq!(
        server_error.message,
        format!(
            "{prefix}failed to call webhook: an error on the server (\"unknown\") has prevented the request from succeeding"
        )
    );

    let huge = create_through(|_| (200, vec![b' '; 9 * 1024 * 1024])).await;
    assert!(
        huge.message.contains("the answer is larger than"),
        "{}",
        huge.message
    );

    let unappliable = create_through(|uid| {
        (
            200,
            allowed_with_patch(uid, json!([{"op": "remove", "path": "/spec/nothing"}])),
        )
    })
    .await;
    // kube-apiserver v1.20's words, checked against it.
    assert_eq!(unappliable.code, 500, "{unappliable:?}");
    assert_eq!(
        unappliable.message,
        "Internal error occurred: remove operation does not apply: doc is missing path: \"/spec/nothing\": missing value"
    );

    // A patch that applies but leaves no ConfigMap: an internal error, as kube-apiserver's
    // decoding of the patched object has it.
    let broken = create_through(|uid| {
        (
            200,
            allowed_with_patch(uid, json!([{"op": "replace", "path": "/data", "value": 7}])),
        )
    })
    .await;
    assert_eq!(broken.code, 500, "{broken:?}");
    assert!(
        broken.message.starts_with("Internal error occurred: "),
        "{}",
        broken.message
    );

    let refused_without_words = create_through(|uid| {
        (
            200,
            serde_json::to_vec(
                &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                       "response": {"uid": uid, "allowed": false}}),
            )
            .unwrap(),
        )
    })
    .await;
    assert_eq!(refused_without_words.code, 400);
    assert_eq!(
        refused_without_words.message,
        "admission webhook \"hostile.example.com\" denied the request without explanation"
    );
}

fn allowed(uid: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "response": {"uid": uid, "allowed": true},
    }))
    .unwrap()
}

/// The client config of `hostile`, trusting its CA.
fn hostile_config(hostile: &Hostile, path: &str) -> Value {
    let mut config = url(hostile.port, path);
    config["caBundle"] = json!(base64::engine::general_purpose::STANDARD.encode(&hostile.ca_pem));
    config
}

#[tokio::test]
async fn reviews_carry_the_request_fields_subresources_and_equivalent_versions() {
    use http::Method;
    use kubeclient::rest::Request;
    let Fixture {
        server: _server,
        client,
    } = start().await;
    let recorder = hostile(|uid| (200, allowed(uid))).await;
    let rule = |resources: Value, versions: Value, group: &str| json!({"rules": [{"operations": ["*"], "apiGroups": [group], "apiVersions": versions, "resources": resources}]});
    validating(
        &client,
        "recorder",
        vec![
            hook(
                "configmaps.example.com",
                hostile_config(&recorder, "/configmaps"),
                json!({}),
            ),
            hook(
                "scale.example.com",
                hostile_config(&recorder, "/scale"),
                rule(json!(["deployments/scale"]), json!(["v1"]), "apps"),
            ),
            hook(
                "widgets.example.com",
                hostile_config(&recorder, "/widgets"),
                rule(json!(["widgets"]), json!(["v1"]), "example.com"),
            ),
            hook("exact.example.com", hostile_config(&recorder, "/exact"), {
                let mut extra = rule(json!(["widgets"]), json!(["v1"]), "example.com");
                extra["matchPolicy"] = json!("Exact");
                extra
            }),
        ],
    )
    .await;
    // What the recorder was sent since the last look.
    let reviews = || -> Vec<Value> { recorder.seen.lock().unwrap().drain(..).collect() };

    // A create with generateName: the validating webhook sees the generated name.
    let configmaps = Api::<ConfigMap>::namespaced(client.clone(), "default");
    let generated: ConfigMap =
        serde_json::from_value(json!({"metadata": {"generateName": "gen-"}})).unwrap();
    let created = configmaps
        .create(&PostParams::default(), &generated)
        .await
        .unwrap();
    let seen = reviews();
    assert_eq!(seen.len(), 1, "{seen:#?}");
    let request = &seen[0]["request"];
    assert_eq!(seen[0]["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(request["operation"], "CREATE");
    assert_eq!(request["name"], json!(created.metadata.name));
    assert_eq!(request["namespace"], "default");
    assert_eq!(
        request["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(
        request["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(request["requestKind"], request["kind"]);
    assert_eq!(request["options"]["kind"], "CreateOptions");
    assert_eq!(request["options"]["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(request["dryRun"], false);
    assert_eq!(request["oldObject"], Value::Null);
    assert!(request["object"]["metadata"]["uid"].is_string());
    assert!(request["userInfo"]["username"].is_string());
    assert_eq!(request["uid"].as_str().map(str::len), Some(36));

    // A delete: the old object, DeleteOptions, no object.
    let name = created.metadata.name.unwrap();
    configmaps
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    let seen = reviews();
    let request = &seen[0]["request"];
    assert_eq!(request["operation"], "DELETE");
    assert_eq!(request["options"]["kind"], "DeleteOptions");
    assert_eq!(request["object"], Value::Null);
    assert_eq!(request["oldObject"]["metadata"]["name"], json!(name));

    // The scale subresource: Scales, subResource `scale`.
    let deployments =
        Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(client.clone(), "default");
    let deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
    }))
    .unwrap();
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();
    assert!(
        reviews().is_empty(),
        "the main resource is not deployments/scale"
    );
    deployments
        .patch_scale(
            "web",
            &kubeclient::api::PatchParams::default(),
            &kubeclient::api::Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    let seen = reviews();
    assert_eq!(seen.len(), 1, "{seen:#?}");
    let request = &seen[0]["request"];
    assert_eq!(request["subResource"], "scale");
    assert_eq!(
        request["kind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
    );
    assert_eq!(request["resource"]["resource"], "deployments");
    assert_eq!(request["object"]["spec"]["replicas"], 3);
    assert_eq!(request["oldObject"]["spec"]["replicas"], 1);

    // matchPolicy Equivalent: a write through v1alpha1 reaches the v1 rule, in v1.
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [
                     {"name": "v1alpha1", "served": true, "storage": false,
                      "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
                     {"name": "v1", "served": true, "storage": true,
                      "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    client
        .request_bytes(
            Request::new(
                Method::POST,
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            )
            .body(serde_json::to_vec(&crd).unwrap(), "application/json"),
        )
        .await
        .unwrap();
    let widget =
        json!({"apiVersion": "example.com/v1alpha1", "kind": "Widget", "metadata": {"name": "w"}});
    client
        .request_bytes(
            Request::new(
                Method::POST,
                "/apis/example.com/v1alpha1/namespaces/default/widgets",
            )
            .body(serde_json::to_vec(&widget).unwrap(), "application/json"),
        )
        .await
        .unwrap();
    let seen = reviews();
    assert_eq!(
        seen.len(),
        1,
        "only the Equivalent webhook, not the Exact one: {seen:#?}"
    );
    let request = &seen[0]["request"];
    assert_eq!(
        request["kind"],
        json!({"group": "example.com", "version": "v1", "kind": "Widget"})
    );
    assert_eq!(
        request["requestKind"],
        json!({"group": "example.com", "version": "v1alpha1", "kind": "Widget"})
    );
    assert_eq!(request["requestResource"]["version"], "v1alpha1");
    assert_eq!(request["object"]["apiVersion"], "example.com/v1");
}

/// Appends to the annotation `saw-b` whether it saw the label `b` (`y` or `n`), and counts
/// its calls.
#[derive(Default)]
pub(crate) struct SawB(pub(crate) Arc<std::sync::atomic::AtomicUsize>);

impl CustomDefaulter<ConfigMap> for SawB {
    async fn default(&self, cm: &mut ConfigMap) -> Result<(), Denial> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let saw = cm
            .metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key("b"));
        let annotations = cm.metadata.annotations.get_or_insert_default();
        let seen = annotations.get("saw-b").cloned().unwrap_or_default();
        annotations.insert(
            "saw-b".into(),
            format!("{seen}{}", if saw { "y" } else { "n" }),
        );
        Ok(())
    }
}

/// Sets the label `b` and appends `b` to the annotation `order`, unless the label is there.
pub(crate) struct SetsB;

impl CustomDefaulter<ConfigMap> for SetsB {
    async fn default(&self, cm: &mut ConfigMap) -> Result<(), Denial> {
        let labels = cm.metadata.labels.get_or_insert_default();
        if labels.contains_key("b") {
            return Ok(());
        }
        labels.insert("b".into(), "set".into());
        let annotations = cm.metadata.annotations.get_or_insert_default();
        let order = annotations.get("order").cloned().unwrap_or_default();
        annotations.insert("order".into(), format!("{order}b"));
        Ok(())
    }
}

#[tokio::test]
async fn an_if_needed_webhook_is_called_again_once_when_a_later_one_changed_the_object() {
    let Fixture {
        server: _server,
        client,
    } = start().await;
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let webhooks = WebhookServer::builder()
        .address("127.0.0.1:0".parse().unwrap())
        .cert_dir(scratch("reinvocation").join("certs"))
        .self_signed(&["webhook.default.svc"])
        .defaulter("/saw-b", SawB(calls.clone()))
        .defaulter("/sets-b", SetsB)
        .start()
        .await
        .unwrap();
    let port = webhooks.local_addr().port();
    // Configurations run in name order: "1-saw-b" first, then "2-sets-b".
    mutating(
        &client,
        "1-saw-b",
        vec![hook(
            "saw-b.example.com",
            url(port, "/saw-b"),
            json!({"reinvocationPolicy": "IfNeeded"}),
        )],
    )
    .await;
    mutating(
        &client,
        "2-sets-b",
        vec![hook("sets-b.example.com", url(port, "/sets-b"), json!({}))],
    )
    .await;
    inject_ca_bundle(
        &client,
        webhooks.ca_bundle().unwrap(),
        &["1-saw-b", "2-sets-b"],
        &[],
    )
    .await
    .unwrap();
    let configmaps = Api::<ConfigMap>::namespaced(client.clone(), "default");
    let saw_b = |cm: &ConfigMap| {
        cm.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("saw-b"))
            .cloned()
    };

    // The second webhook adds `b` after the first ran: the first runs again and sees it.
    let created = configmaps
        .create(&PostParams::default(), &config_map("a", json!({})))
        .await
        .unwrap();
    assert_eq!(saw_b(&created).as_deref(), Some("ny"));
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 2);

    // Nothing changes after it (the label is there already): called once.
    let mut labelled = config_map("b", json!({}));
    labelled.metadata.labels = Some(BTreeMap::from([("b".to_owned(), "set".to_owned())]));
    calls.store(0, std::sync::atomic::Ordering::SeqCst);
    let created = configmaps
        .create(&PostParams::default(), &labelled)
        .await
        .unwrap();
    assert_eq!(saw_b(&created).as_deref(), Some("y"));
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);

    // A webhook its selector skipped in the first round is not called in the second, even
    // when the later change makes it match (kube-apiserver's rule).
    let api = Api::<MutatingWebhookConfiguration>::all(client.clone());
    let mut first = api.get("1-saw-b").await.unwrap();
    first.webhooks.as_mut().unwrap()[0].object_selector =
        Some(serde_json::from_value(json!({"matchLabels": {"b": "set"}})).unwrap());
    api.replace("1-saw-b", &PostParams::default(), &first)
        .await
        .unwrap();
    calls.store(0, std::sync::atomic::Ordering::SeqCst);
    let created = configmaps
        .create(&PostParams::default(), &config_map("skipped", json!({})))
        .await
        .unwrap();
    assert_eq!(saw_b(&created), None);
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 0);
    let mut first = api.get("1-saw-b").await.unwrap();
    first.webhooks.as_mut().unwrap()[0].object_selector = None;
    api.replace("1-saw-b", &PostParams::default(), &first)
        .await
        .unwrap();

    // With the default policy (Never) the first webhook's view stays what it saw.
    let mut first = api.get("1-saw-b").await.unwrap();
    first.webhooks.as_mut().unwrap()[0].reinvocation_policy = Some("Never".to_owned());
    api.replace("1-saw-b", &PostParams::default(), &first)
        .await
        .unwrap();
    calls.store(0, std::sync::atomic::Ordering::SeqCst);
    let created = configmaps
        .create(&PostParams::default(), &config_map("c", json!({})))
        .await
        .unwrap();
    assert_eq!(saw_b(&created).as_deref(), Some("n"));
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
}
