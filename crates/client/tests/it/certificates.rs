//! Certificates on the embedded server: CertificateSigningRequests requested, approved,
//! signed and waited for; client certificates rotated on disk and by an exec plugin.

use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition, CertificateSigningRequestStatus,
};
use kubeclient::machinery::Object;
use kubeclient::rest::Request;
use kubeclient::util::cert::{
    CertConfig, CertificateAuthority, ExtKeyUsage, generate_private_key_pem, make_csr,
};
use kubeclient::util::csr::{CsrError, CsrRequest, request_certificate, wait_for_certificate};
use kubeclient::{Api, Client, PostParams};
use tokio_util::sync::CancellationToken;

use crate::support::{WAIT, start};

fn client_csr(user: &str) -> String {
    let key = generate_private_key_pem().unwrap();
    make_csr(
        &key,
        &CertConfig {
            common_name: user.to_owned(),
            organization: vec!["dev".to_owned()],
            ..CertConfig::default()
        },
    )
    .unwrap()
}

fn request(name: &str) -> CsrRequest {
    CsrRequest {
        name: name.to_owned(),
        signer_name: "kubernetes.io/kube-apiserver-client".to_owned(),
        expiration: Some(Duration::from_secs(3600)),
        usages: vec!["digital signature".to_owned(), "client auth".to_owned()],
    }
}

/// Sets one condition through the `approval` subresource, as `kubectl certificate approve`.
async fn decide(client: &Client, name: &str, kind: &str) {
    let api = Api::<CertificateSigningRequest>::all(client.clone());
    let mut csr = api.get(name).await.unwrap();
    csr.status = Some(CertificateSigningRequestStatus {
        conditions: Some(vec![CertificateSigningRequestCondition {
            type_: kind.to_owned(),
            status: "True".to_owned(),
            reason: Some("Test".to_owned()),
            message: Some(format!("{kind} by the test")),
            ..CertificateSigningRequestCondition::default()
        }]),
        ..CertificateSigningRequestStatus::default()
    });
    let path = format!("/apis/certificates.k8s.io/v1/certificatesigningrequests/{name}/approval");
    let body = serde_json::to_vec(&csr).unwrap();
    let _: CertificateSigningRequest = client
        .request_json(Request::new(http::Method::PUT, path).body(body, "application/json"))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_requested_certificate_is_returned_once_approved_and_signed() {
    let fixture = start().await;
    let client = &fixture.client;
    let csr_pem = client_csr("alice");
    let created = request_certificate(client, &csr_pem, &request("alice-csr"))
        .await
        .unwrap();
    assert_eq!(created.name(), "alice-csr");
    assert_eq!(created.spec.expiration_seconds, Some(3600));
    // Requesting the same again reuses it; a different request under the name is refused.
    let again = request_certificate(client, &csr_pem, &request("alice-csr"))
        .await
        .unwrap();
    assert_eq!(again.meta().uid, created.meta().uid);
    let other = request_certificate(client, &client_csr("bob"), &request("alice-csr")).await;
    assert!(matches!(other, Err(CsrError::Incompatible(_))));

    let waiting = {
        let (client, created) = (client.clone(), created.clone());
        tokio::spawn(async move {
            wait_for_certificate(&client, &created, &CancellationToken::new()).await
        })
    };
    decide(client, "alice-csr", "Approved").await;
    // Act as the signer: sign with our own CA and write status.certificate.
    let ca = CertificateAuthority::new_self_signed("test-signer").unwrap();
    let certificate = ca
        .sign_csr(
            &csr_pem,
            Duration::from_secs(3600),
            &[ExtKeyUsage::ClientAuth],
        )
        .unwrap();
    let api = Api::<CertificateSigningRequest>::all(client.clone());
    let mut approved = api.get("alice-csr").await.unwrap();
    approved.status.get_or_insert_default().certificate =
        Some(ByteString(certificate.clone().into_bytes()));
    api.replace_status("alice-csr", &PostParams::default(), &approved)
        .await
        .unwrap();

    let issued = tokio::time::timeout(WAIT, waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(issued, certificate.into_bytes());
}

#[tokio::test]
async fn a_denied_request_ends_the_wait_with_the_reason() {
    let fixture = start().await;
    let client = &fixture.client;
    let created = request_certificate(client, &client_csr("mallory"), &request(""))
        .await
        .unwrap();
    assert!(created.name().starts_with("csr-"), "a generated name");
    let waiting = {
        let (client, created) = (client.clone(), created.clone());
        tokio::spawn(async move {
            wait_for_certificate(&client, &created, &CancellationToken::new()).await
        })
    };
    decide(client, created.name(), "Denied").await;
    let denied = tokio::time::timeout(WAIT, waiting).await.unwrap().unwrap();
    assert!(
        matches!(&denied, Err(CsrError::Denied { message, .. }) if message.contains("Denied by the test")),
        "{denied:?}"
    );
}

/// The user the server authenticated the client's next request as (`SelfSubjectReview`).
async fn whoami(client: &Client) -> String {
    let review = serde_json::json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "SelfSubjectReview",
    });
    let request = Request::new(
        http::Method::POST,
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
    )
    .body(serde_json::to_vec(&review).unwrap(), "application/json");
    let answer: serde_json::Value = client.request_json(request).await.unwrap();
    answer["status"]["userInfo"]["username"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Polls `whoami` until it is `user`; fails after [`WAIT`].
async fn until_authenticated_as(client: &Client, user: &str) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let seen = whoami(client).await;
        if seen == user {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "still authenticated as {seen:?}, not {user:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Writes `contents` to `path` through a rename, as a certificate manager would.
fn replace_file(path: &std::path::Path, contents: &str) {
    let staged = path.with_extension("new");
    std::fs::write(&staged, contents).unwrap();
    std::fs::rename(&staged, path).unwrap();
}

/// A TLS server requiring a token (so only a client certificate can authenticate a
/// client without one), and a scratch directory labelled `label`.
async fn tls_server(label: &str) -> (crate::support::Fixture, std::path::PathBuf) {
    let builder = kubeclient_apiserver::ApiServer::builder()
        .tls(true)
        .token("s3cret");
    let fixture = crate::support::start_with(builder).await;
    (fixture, crate::support::scratch(label))
}

/// A client certificate for `user`, signed by the server's CA.
fn issue(f: &crate::support::Fixture, user: &str) -> kubeclient_apiserver::CertificatePair {
    f.server
        .issue_client_certificate(user, &["dev"])
        .unwrap()
        .unwrap()
}

/// Replaces the key, then the certificate, as a certificate manager would.
fn put(
    cert_file: &std::path::Path,
    key_file: &std::path::Path,
    pair: &kubeclient_apiserver::CertificatePair,
) {
    replace_file(key_file, &pair.key_pem);
    replace_file(cert_file, &pair.certificate_pem);
}

#[tokio::test]
async fn a_client_certificate_replaced_on_disk_is_used_by_the_next_connection_while_a_watch_stays_open()
 {
    let (f, dir) = tls_server("cert-rotation").await;
    let (cert_file, key_file) = (dir.join("client.crt"), dir.join("client.key"));
    let alice = issue(&f, "alice");
    put(&cert_file, &key_file, &alice);
    let ca = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        f.server.ca_certificate_pem().unwrap(),
    );
    let kubeconfig = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {}\n    certificate-authority-data: {ca}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\ncurrent-context: c\nusers:\n- name: u\n  user:\n    client-certificate: {}\n    client-key: {}\n",
        f.server.url(),
        cert_file.display(),
        key_file.display()
    );
    let kubeconfig = kubeclient::config::Kubeconfig::from_yaml(&kubeconfig).unwrap();
    let config = kubeclient::Config::from_kubeconfig(
        &kubeconfig,
        &kubeclient::config::KubeconfigOptions::default(),
    )
    .unwrap();
    assert!(config.client_certificate_files.is_some());
    let client = Client::new(config).await.unwrap();
    assert_eq!(whoami(&client).await, "alice");

    let configmaps =
        Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(client.clone(), "default");
    let list = configmaps
        .list(&kubeclient::ListParams::default())
        .await
        .unwrap();
    let mut watch = configmaps
        .watch(
            &kubeclient::WatchParams::default(),
            list.metadata
                .resource_version
                .as_deref()
                .unwrap_or_default(),
        )
        .await
        .unwrap();

    let bob = issue(&f, "bob");
    put(&cert_file, &key_file, &bob);
    until_authenticated_as(&client, "bob").await;

    // The watch opened as alice is still open and delivers what happens next.
    let mut cm = k8s_openapi::api::core::v1::ConfigMap::default();
    cm.meta_mut().name = Some("after-rotation".to_owned());
    configmaps
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
    let event = tokio::time::timeout(WAIT, futures_util::StreamExt::next(&mut watch))
        .await
        .expect("an event before the deadline")
        .expect("the watch is still open")
        .unwrap();
    assert!(
        matches!(event, kubeclient::machinery::WatchEvent::Added(cm) if cm.name() == "after-rotation")
    );
}

#[tokio::test]
async fn a_garbled_replacement_keeps_the_current_certificate() {
    let (f, dir) = tls_server("cert-garbled").await;
    let (cert_file, key_file) = (dir.join("client.crt"), dir.join("client.key"));
    let alice = issue(&f, "alice");
    put(&cert_file, &key_file, &alice);
    let mut config = crate::support::config_of(&f.server);
    config.credentials = kubeclient::config::Credentials::None;
    config.client_identity = Some(kubeclient::config::ClientIdentity {
        certificate_pem: alice.certificate_pem.clone().into_bytes(),
        key_pem: alice.key_pem.clone().into_bytes(),
    });
    config.client_certificate_files = Some(kubeclient::config::ClientCertificateFiles {
        certificate: cert_file.clone(),
        key: key_file.clone(),
    });
    let client = Client::new(config).await.unwrap();
    assert_eq!(whoami(&client).await, "alice");
    // A certificate whose key does not match: unusable, so alice stays.
    let bob = issue(&f, "bob");
    replace_file(&cert_file, &bob.certificate_pem);
    tokio::time::pause();
    tokio::time::advance(kubeclient::rest::cert_rotation::CHECK_INTERVAL * 2).await;
    tokio::time::resume();
    assert_eq!(whoami(&client).await, "alice");
    // Once the key arrives too, bob is used.
    replace_file(&key_file, &bob.key_pem);
    until_authenticated_as(&client, "bob").await;
}

#[tokio::test]
async fn an_expired_exec_plugin_certificate_is_fetched_again() {
    let (f, dir) = tls_server("exec-cert").await;
    let (cert_file, key_file) = (dir.join("client.crt"), dir.join("client.key"));
    let alice = issue(&f, "alice");
    put(&cert_file, &key_file, &alice);
    let count_file = dir.join("count");
    let env = |name: &str, value: &std::path::Path| kubeclient::config::ExecEnvVar {
        name: name.to_owned(),
        value: value.display().to_string(),
    };
    let mut config = crate::support::config_of(&f.server);
    config.credentials =
        kubeclient::config::Credentials::Exec(Box::new(kubeclient::config::ExecConfig {
            api_version: Some("client.authentication.k8s.io/v1".to_owned()),
            command: crate::support::manifest_dir()
                .join("tests/it/fixtures/exec-cert-plugin.sh")
                .display()
                .to_string(),
            env: vec![
                env("CERT_FILE", &cert_file),
                env("KEY_FILE", &key_file),
                env("COUNT_FILE", &count_file),
            ],
            ..kubeclient::config::ExecConfig::default()
        }));
    let client = Client::new(config).await.unwrap();
    assert_eq!(whoami(&client).await, "alice");

    let bob = issue(&f, "bob");
    put(&cert_file, &key_file, &bob);
    until_authenticated_as(&client, "bob").await;
    let runs: u32 = std::fs::read_to_string(&count_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        runs >= 2,
        "the plugin ran again after its certificate expired ({runs} runs)"
    );
}
