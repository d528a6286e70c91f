//! `certificates.k8s.io/v1` CertificateSigningRequest helpers (client-go's
//! `util/certificate/csr`): submit a CSR, then wait until it is approved and signed.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestSpec,
};
use kubeclient_machinery::{Object, WatchEvent};
use tokio_util::sync::CancellationToken;

use crate::api::{Api, PostParams};
use crate::cache::{ApiListWatch, TweakListOptions};
use crate::rest::Client;
use crate::tools::watch::{ConditionFunc, UntilError, until_with_sync};

/// Why a CSR could not be requested or did not yield a certificate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CsrError {
    /// The request failed.
    #[error(transparent)]
    Client(#[from] crate::Error),
    /// A CSR of that name exists with another request or signer.
    #[error("a CertificateSigningRequest named {0:?} already exists with a different request")]
    Incompatible(String),
    /// The CSR was denied (`Denied` condition).
    #[error("certificate signing request {name:?} is denied: {message}")]
    Denied {
        /// The CSR.
        name: String,
        /// The condition's reason and message.
        message: String,
    },
    /// Signing failed (`Failed` condition).
    #[error("certificate signing request {name:?} failed: {message}")]
    Failed {
        /// The CSR.
        name: String,
        /// The condition's reason and message.
        message: String,
    },
    /// The CSR was deleted, or recreated with another uid, while waiting.
    #[error("certificate signing request {0:?} was deleted or replaced while waiting")]
    Gone(String),
    /// Waiting ended before a certificate was issued (cancelled, or the watch failed).
    #[error("waiting for the certificate of {name:?}")]
    Wait {
        /// The CSR.
        name: String,
        /// Why waiting ended.
        #[source]
        source: UntilError,
    },
}

/// What to request (Go's `RequestCertificate` arguments).
#[derive(Clone, Debug, Default)]
pub struct CsrRequest {
    /// The CSR's name; empty to have the server generate one (`csr-` prefix).
    pub name: String,
    /// The signer, e.g. `kubernetes.io/kube-apiserver-client`.
    pub signer_name: String,
    /// How long the certificate should be valid (a request; the signer decides).
    pub expiration: Option<Duration>,
    /// The requested key usages, e.g. `digital signature`, `client auth`.
    pub usages: Vec<String>,
}

/// Submits `csr_pem` (from [`make_csr`](super::cert::make_csr)) as a
/// CertificateSigningRequest (Go's `RequestCertificate`). A CSR of the same name with the
/// same request and signer is reused.
///
/// # Examples
///
/// ```no_run
/// use kubeclient::util::cert::{CertConfig, generate_private_key_pem, make_csr};
/// use kubeclient::util::csr::{CsrRequest, request_certificate, wait_for_certificate};
/// use tokio_util::sync::CancellationToken;
///
/// # async fn run(client: kubeclient::Client) -> Result<(), Box<dyn std::error::Error>> {
/// let key = generate_private_key_pem()?;
/// let csr = make_csr(&key, &CertConfig { common_name: "alice".into(), ..CertConfig::default() })?;
/// let request = CsrRequest {
///     signer_name: "kubernetes.io/kube-apiserver-client".into(),
///     usages: vec!["digital signature".into(), "client auth".into()],
///     ..CsrRequest::default()
/// };
/// let created = request_certificate(&client, &csr, &request).await?;
/// let certificate_pem = wait_for_certificate(&client, &created, &CancellationToken::new()).await?;
/// # let _ = certificate_pem; Ok(()) }
/// ```
///
/// # Errors
///
/// [`CsrError::Client`], or [`CsrError::Incompatible`] for a same-named different CSR.
#[doc(alias = "RequestCertificate")]
pub async fn request_certificate(
    client: &Client,
    csr_pem: &str,
    request: &CsrRequest,
) -> Result<CertificateSigningRequest, CsrError> {
    let api = Api::<CertificateSigningRequest>::all(client.clone());
    let mut csr = CertificateSigningRequest {
        spec: CertificateSigningRequestSpec {
            request: ByteString(csr_pem.as_bytes().to_vec()),
            signer_name: request.signer_name.clone(),
            usages: Some(request.usages.clone()),
            expiration_seconds: request
                .expiration
                .map(|d| i32::try_from(d.as_secs()).unwrap_or(i32::MAX)),
            ..CertificateSigningRequestSpec::default()
        },
        ..CertificateSigningRequest::default()
    };
    if request.name.is_empty() {
        csr.metadata.generate_name = Some("csr-".to_owned());
    } else {
        csr.metadata.name = Some(request.name.clone());
    }
    match api.create(&PostParams::default(), &csr).await {
        Ok(created) => Ok(created),
        Err(err) if err.api().is_some_and(|e| e.is_already_exists()) => {
            let existing = api.get(&request.name).await?;
            let same = existing.spec.request == csr.spec.request
                && existing.spec.signer_name == csr.spec.signer_name;
            if same {
                Ok(existing)
            } else {
                Err(CsrError::Incompatible(request.name.clone()))
            }
        }
        Err(err) => Err(err.into()),
    }
}

/// What a CSR's state says about waiting.
enum Outcome {
    Pending,
    Issued(Vec<u8>),
    Denied(String),
    Failed(String),
}

fn outcome(csr: &CertificateSigningRequest) -> Outcome {
    let Some(status) = &csr.status else {
        return Outcome::Pending;
    };
    let mut approved = false;
    for condition in status.conditions.iter().flatten() {
        let message = format!(
            "{}: {}",
            condition.reason.as_deref().unwrap_or_default(),
            condition.message.as_deref().unwrap_or_default()
        );
        match condition.type_.as_str() {
            "Denied" => return Outcome::Denied(message),
            "Failed" => return Outcome::Failed(message),
            "Approved" => approved = true,
            _ => {}
        }
    }
    match &status.certificate {
        Some(certificate) if approved && !certificate.0.is_empty() => {
            Outcome::Issued(certificate.0.clone())
        }
        _ => Outcome::Pending,
    }
}

/// Waits until `csr` (as [`request_certificate`] returned it) is approved and signed, and
/// returns the certificate (PEM) (Go's `WaitForCertificate`). Watches the one CSR by
/// name, surviving broken watches; a CSR already issued returns at once.
///
/// # Errors
///
/// [`CsrError::Denied`], [`CsrError::Failed`], [`CsrError::Gone`] when deleted or replaced,
/// [`CsrError::Wait`] when cancelled first.
#[doc(alias = "WaitForCertificate")]
pub async fn wait_for_certificate(
    client: &Client,
    csr: &CertificateSigningRequest,
    cancel: &CancellationToken,
) -> Result<Vec<u8>, CsrError> {
    let name = csr.name().to_owned();
    let uid = csr.meta().uid.clone();
    let selector = format!("metadata.name={name}");
    let tweak: TweakListOptions = Arc::new(move |list, watch| {
        list.field_selector = Some(selector.clone());
        watch.field_selector = Some(selector.clone());
    });
    let api = Api::<CertificateSigningRequest>::all(client.clone());
    let lister_watcher = Arc::new(ApiListWatch::new(api).with_tweak(tweak));
    let verdict: Arc<std::sync::Mutex<Option<Verdict>>> = Arc::default();
    let record = Arc::clone(&verdict);
    let condition: ConditionFunc<CertificateSigningRequest> = Box::new(move |event| {
        let decided = match event {
            WatchEvent::Deleted(_) => Some(Err(CsrError::Gone(name_of(event)))),
            WatchEvent::Added(csr) | WatchEvent::Modified(csr) => {
                if uid.is_some() && csr.meta().uid != uid {
                    Some(Err(CsrError::Gone(csr.name().to_owned())))
                } else {
                    match outcome(csr) {
                        Outcome::Pending => None,
                        Outcome::Issued(certificate) => Some(Ok(certificate)),
                        Outcome::Denied(message) => Some(Err(CsrError::Denied {
                            name: csr.name().to_owned(),
                            message,
                        })),
                        Outcome::Failed(message) => Some(Err(CsrError::Failed {
                            name: csr.name().to_owned(),
                            message,
                        })),
                    }
                }
            }
            WatchEvent::Bookmark(_) | WatchEvent::Error(_) => None,
        };
        let done = decided.is_some();
        if done {
            *crate::sync::lock(&record) = decided;
        }
        Ok(done)
    });
    let waited = until_with_sync(cancel, lister_watcher, None, vec![condition]).await;
    let decided = crate::sync::lock(&verdict).take();
    match (waited, decided) {
        (_, Some(result)) => result,
        (Err(source), None) => Err(CsrError::Wait { name, source }),
        (Ok(_), None) => Err(CsrError::Wait {
            name,
            source: UntilError::WatchClosed,
        }),
    }
}

/// How waiting for a certificate ended, as the watch condition decided.
type Verdict = Result<Vec<u8>, CsrError>;

fn name_of(event: &WatchEvent<CertificateSigningRequest>) -> String {
    event
        .object()
        .map(|csr| csr.name().to_owned())
        .unwrap_or_default()
}
