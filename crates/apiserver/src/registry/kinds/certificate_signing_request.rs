//! CertificateSigningRequests (kube-apiserver's `pkg/registry/certificates/
//! certificates`): the generic store's behaviour, and the `approval` subresource through
//! which a signer approves or denies a request.

use crate::registry::strategy::{Strategy, Subresource};

/// The CertificateSigningRequest strategy.
pub(crate) struct CertificateSigningRequestStrategy;

impl Strategy for CertificateSigningRequestStrategy {
    /// `certificatesigningrequests/approval`: the request itself.
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource {
            name: "approval",
            group: "certificates.k8s.io",
            version: "v1",
            kind: "CertificateSigningRequest",
            verbs: &["get", "patch", "update"],
        }]
    }
}
