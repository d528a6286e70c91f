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
