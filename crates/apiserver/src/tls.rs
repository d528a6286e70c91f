//! TLS for `serve --tls` and `ApiServer::builder().tls(true)`: a fresh CA per server, a
//! serving certificate for `localhost`/`127.0.0.1`/`::1`, and optional client certificates
//! signed by the same CA (a verified client certificate authenticates a request).

use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;

/// The certificates of one server.
pub(crate) struct TlsMaterial {
    /// The CA, PEM (what clients trust).
    pub(crate) ca_pem: String,
    issuer: CertifiedIssuer<'static, KeyPair>,
    /// The rustls configuration serving with the CA-signed certificate.
    pub(crate) server_config: Arc<rustls::ServerConfig>,
}

impl std::fmt::Debug for TlsMaterial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsMaterial").finish_non_exhaustive()
    }
}

/// A certificate and its private key, both PEM.
#[derive(Clone)]
pub struct CertificatePair {
    /// The certificate, PEM.
    pub certificate_pem: String,
    /// The private key, PEM. Never logged.
    pub key_pem: String,
}

impl std::fmt::Debug for CertificatePair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertificatePair")
            .field("certificate_pem", &self.certificate_pem)
            .field("key_pem", &"<redacted>")
            .finish()
    }
}

/// Errors creating certificates or the TLS configuration.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// Certificate generation failed.
    #[error("generating a certificate failed: {0}")]
    Certificate(#[from] rcgen::Error),
    /// rustls refused the configuration.
    #[error("building the TLS configuration failed: {0}")]
    Rustls(#[from] rustls::Error),
    /// The client verifier could not be built.
    #[error("building the client certificate verifier failed: {0}")]
    Verifier(#[from] rustls::server::VerifierBuilderError),
    /// A generated PEM could not be read back.
    #[error("reading a generated PEM failed: {0}")]
    Pem(#[from] rustls::pki_types::pem::Error),
}

impl TlsMaterial {
    /// A new CA and serving certificate.
    pub(crate) fn generate() -> Result<Self, TlsError> {
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "kubeclient-ca");
        let issuer = CertifiedIssuer::self_signed(ca_params, KeyPair::generate()?)?;
        let ca_pem = issuer.pem();

        let mut server_params = CertificateParams::new(vec![
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
            "::1".to_owned(),
        ])?;
        server_params
            .distinguished_name
            .push(DnType::CommonName, "kubeclient-apiserver");
        server_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let server_key = KeyPair::generate()?;
        let server_cert = server_params.signed_by(&server_key, &issuer)?;

        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots.add(CertificateDer::from_pem_slice(ca_pem.as_bytes())?)?;
        let verifier =
            WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                .allow_unauthenticated()
                .build()?;
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_client_cert_verifier(verifier)
            .with_single_cert(
                vec![server_cert.der().clone(), issuer.der().clone()],
                PrivateKeyDer::from_pem_slice(server_key.serialize_pem().as_bytes())?,
            )?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(TlsMaterial {
            ca_pem,
            issuer,
            server_config: Arc::new(config),
        })
    }

    /// A client certificate for `user` (its common name), in `groups` (organizations).
    pub(crate) fn client_certificate(
        &self,
        user: &str,
        groups: &[&str],
    ) -> Result<CertificatePair, TlsError> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name.push(DnType::CommonName, user);
        for group in groups {
            params
                .distinguished_name
                .push(DnType::OrganizationName, *group);
        }
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let key = KeyPair::generate()?;
        let certificate = params.signed_by(&key, &self.issuer)?;
        Ok(CertificatePair {
            certificate_pem: certificate.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}
