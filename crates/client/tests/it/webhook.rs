//! The admission webhook server over real HTTPS, called as the API server calls it: a
//! mutating and a validating webhook, requests it must refuse, and a serving certificate
//! rotated on disk (garbled files keep the previous one).

use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;

use http::Method;
use k8s_openapi::api::core::v1::ConfigMap;
use kubeclient::rest::Request;
use kubeclient::util::cert::{CertConfig, CertificateAuthority, ExtKeyUsage};
use kubeclient::webhook::{
    AdmissionReview, CustomDefaulter, CustomValidator, Denial, Warnings, WebhookServer,
};
use kubeclient::{Client, Config};
use serde_json::{Value, json};

use crate::support::scratch;

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
        Ok(Vec::new())
    }
}

/// Writes a serving certificate for 127.0.0.1 signed by a new CA; returns the CA's PEM.
fn write_certificate(dir: &Path) -> String {
    let ca = CertificateAuthority::new_self_signed("webhook-ca").unwrap();
    let pair = ca
        .sign(&CertConfig {
            common_name: "webhook".into(),
            ip_addresses: vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
            usages: vec![ExtKeyUsage::ServerAuth],
            ..CertConfig::default()
        })
        .unwrap();
    std::fs::write(dir.join("tls.crt"), &pair.cert_pem).unwrap();
    std::fs::write(dir.join("tls.key"), &pair.key_pem).unwrap();
    ca.cert_pem().to_owned()
}

async fn client_trusting(server: &WebhookServer, ca_pem: &str) -> Client {
    let url = format!("https://127.0.0.1:{}", server.local_addr().port());
    let mut config = Config::new(url.parse().unwrap());
    config.root_certificates_pem = ca_pem.as_bytes().to_vec();
    Client::new(config).await.unwrap()
}

fn review(data: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "e911857d-c318-11e8-bbad-025000000001", "operation": "CREATE",
            "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "resource": {"group": "", "version": "v1", "resource": "configmaps"},
            "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": data},
        },
    }))
    .unwrap()
}

async fn post(client: &Client, path: &str, body: Vec<u8>) -> kubeclient::Result<AdmissionReview> {
    let bytes = client
        .request_bytes(Request::new(Method::POST, path).body(body, "application/json"))
        .await?;
    Ok(serde_json::from_slice(&bytes).unwrap())
}

/// A defaulting review through a new connection that trusts only `ca_pem`.
async fn mutate_trusting(
    server: &WebhookServer,
    ca_pem: &str,
) -> kubeclient::Result<AdmissionReview> {
    let client = client_trusting(server, ca_pem).await;
    post(&client, "/mutate-configmaps", review(json!({}))).await
}

/// A server over a new certificate directory: the server, its CA's PEM, the directory.
async fn served(label: &str) -> (WebhookServer, String, std::path::PathBuf) {
    let dir = scratch(label);
    let ca = write_certificate(&dir);
    (start(&dir).await, ca, dir)
}

async fn start(dir: &Path) -> WebhookServer {
    WebhookServer::builder()
        .address("127.0.0.1:0".parse().unwrap())
        .cert_dir(dir)
        .defaulter("/mutate-configmaps", Labels)
        .validator("/validate-configmaps", NoSecrets)
        .start()
        .await
        .unwrap()
}

#[tokio::test]
async fn mutating_and_validating_webhooks_answer_reviews_over_https() {
    let (server, ca, _) = served("webhook").await;
    let client = client_trusting(&server, &ca).await;

    let mutated = post(&client, "/mutate-configmaps", review(json!({"k": "v"})))
        .await
        .unwrap();
    let response = mutated.response.unwrap();
    assert_eq!(response.uid, "e911857d-c318-11e8-bbad-025000000001");
    assert!(response.allowed);
    let patch: Value = serde_json::from_slice(&response.patch.unwrap()).unwrap();
    assert_eq!(
        patch,
        json!([{"op": "add", "path": "/metadata/labels", "value": {"team": "core"}}])
    );

    let allowed = post(&client, "/validate-configmaps", review(json!({"k": "v"})))
        .await
        .unwrap();
    assert!(allowed.response.unwrap().allowed);
    let denied = post(
        &client,
        "/validate-configmaps",
        review(json!({"password": "x"})),
    )
    .await
    .unwrap();
    let response = denied.response.unwrap();
    assert!(!response.allowed);
    assert_eq!(
        response.result.unwrap().message,
        "passwords belong in Secrets"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn requests_that_are_not_reviews_are_refused_with_clear_statuses() {
    let (server, ca, _) = served("webhook-bad").await;
    let client = client_trusting(&server, &ca).await;
    let code = |result: kubeclient::Result<bytes::Bytes>| {
        result.unwrap_err().api().map(|e| e.code()).unwrap_or(0)
    };
    let send = |method: Method, path: &str, body: Vec<u8>, content_type: &'static str| {
        client.request_bytes(Request::new(method, path).body(body, content_type))
    };
    assert_eq!(
        code(
            send(
                Method::GET,
                "/mutate-configmaps",
                vec![],
                "application/json"
            )
            .await
        ),
        405
    );
    assert_eq!(
        code(
            send(
                Method::POST,
                "/elsewhere",
                review(json!({})),
                "application/json"
            )
            .await
        ),
        404
    );
    assert_eq!(
        code(
            send(
                Method::POST,
                "/mutate-configmaps",
                review(json!({})),
                "text/plain"
            )
            .await
        ),
        400
    );
    assert_eq!(
        code(
            send(
                Method::POST,
                "/mutate-configmaps",
                b"{not json".to_vec(),
                "application/json"
            )
            .await
        ),
        400
    );
    let no_request = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#.to_vec();
    assert_eq!(
        code(
            send(
                Method::POST,
                "/mutate-configmaps",
                no_request,
                "application/json"
            )
            .await
        ),
        400
    );
    let huge = vec![b' '; 8 * 1024 * 1024];
    assert_eq!(
        code(send(Method::POST, "/mutate-configmaps", huge, "application/json").await),
        400
    );
    // Still serving.
    assert!(
        post(&client, "/mutate-configmaps", review(json!({})))
            .await
            .is_ok()
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_rotated_certificate_is_served_and_garbled_files_keep_the_previous_one() {
    let (server, first_ca, dir) = served("webhook-rotate").await;
    assert!(mutate_trusting(&server, &first_ca).await.is_ok());

    let second_ca = write_certificate(&dir);
    assert!(
        mutate_trusting(&server, &second_ca).await.is_ok(),
        "new connections get the new certificate"
    );
    let stale = mutate_trusting(&server, &first_ca).await;
    assert!(
        matches!(stale, Err(kubeclient::Error::Transport { .. })),
        "the old certificate is gone: {stale:?}"
    );

    std::fs::write(dir.join("tls.crt"), "garbage").unwrap();
    assert!(
        mutate_trusting(&server, &second_ca).await.is_ok(),
        "a garbled file keeps the previous certificate"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_missing_or_garbled_certificate_is_a_startup_error_naming_the_directory() {
    let dir = scratch("webhook-none");
    let error = || async {
        WebhookServer::builder()
            .address("127.0.0.1:0".parse().unwrap())
            .cert_dir(&dir)
            .start()
            .await
            .err()
            .unwrap()
            .to_string()
    };
    let missing = error().await;
    assert!(missing.contains("tls.crt"), "{missing}");
    std::fs::write(dir.join("tls.crt"), "garbage").unwrap();
    std::fs::write(dir.join("tls.key"), "garbage").unwrap();
    let garbled = error().await;
    assert!(garbled.contains(&dir.display().to_string()), "{garbled}");
}

#[tokio::test]
async fn a_self_signed_certificate_is_written_once_and_its_ca_is_the_bundle() {
    let dir = scratch("webhook-self-signed").join("certs");
    let start_self_signed = || async {
        WebhookServer::builder()
            .address("127.0.0.1:0".parse().unwrap())
            .cert_dir(&dir)
            .self_signed(&["webhook.default.svc"])
            .defaulter("/mutate-configmaps", Labels)
            .start()
            .await
            .unwrap()
    };
    let server = start_self_signed().await;
    let bundle = server.ca_bundle().unwrap().to_owned();
    assert!(mutate_trusting(&server, &bundle).await.is_ok());
    server.shutdown().await;
    let restarted = start_self_signed().await;
    assert_eq!(
        restarted.ca_bundle(),
        Some(bundle.as_str()),
        "a restart keeps the certificate"
    );
    assert!(mutate_trusting(&restarted, &bundle).await.is_ok());
}
