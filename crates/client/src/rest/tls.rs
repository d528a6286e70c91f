//! The rustls client configuration of a [`Config`](crate::Config): trusted roots, client
//! certificate, and the (insecure, opt-in) skip of server verification.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

use crate::config::Config;
use crate::error::{Error, Result};

fn tls_error(message: impl std::fmt::Display) -> Error {
    Error::Tls(message.to_string())
}

/// rustls's crypto provider chosen by the crate's features (`rustls-ring`, the default, or
/// `rustls-aws-lc`).
#[cfg(feature = "rustls-ring")]
pub(crate) fn crypto_provider() -> rustls::crypto::CryptoProvider {
    rustls::crypto::ring::default_provider()
}

#[cfg(all(feature = "rustls-aws-lc", not(feature = "rustls-ring")))]
pub(crate) fn crypto_provider() -> rustls::crypto::CryptoProvider {
    rustls::crypto::aws_lc_rs::default_provider()
}

#[cfg(not(any(feature = "rustls-ring", feature = "rustls-aws-lc")))]
compile_error!(
    "kubeclient needs a TLS crypto provider: enable the `rustls-ring` or `rustls-aws-lc` feature"
);

/// Builds the client TLS configuration. `identity` overrides the config's client
/// certificate (one obtained from an exec plugin).
pub(crate) fn client_config(
    config: &Config,
    identity: Option<(Vec<u8>, Vec<u8>)>,
) -> Result<rustls::ClientConfig> {
    let provider = Arc::new(crypto_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(tls_error)?;
    let builder = if config.accept_invalid_certs {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyServerCertificate { provider }))
    } else {
        let mut roots = rustls::RootCertStore::empty();
        if config.root_certificates_pem.is_empty() {
            let native = rustls_native_certs::load_native_certs();
            for certificate in native.certs {
                let _ = roots.add(certificate);
            }
        } else {
            for certificate in CertificateDer::pem_slice_iter(&config.root_certificates_pem) {
                let certificate = certificate.map_err(|err| {
                    tls_error(format!("the certificate authority is not valid PEM: {err}"))
                })?;
                roots.add(certificate).map_err(|err| {
                    tls_error(format!("the certificate authority was refused: {err}"))
                })?;
            }
            if roots.is_empty() {
                return Err(tls_error("the certificate authority holds no certificate"));
            }
        }
        builder.with_root_certificates(roots)
    };
    let identity = identity.or_else(|| {
        config
            .client_identity
            .as_ref()
            .map(|i| (i.certificate_pem.clone(), i.key_pem.clone()))
    });
    match identity {
        Some((certificate_pem, key_pem)) => {
            let chain = CertificateDer::pem_slice_iter(&certificate_pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|err| {
                    tls_error(format!("the client certificate is not valid PEM: {err}"))
                })?;
            let key = PrivateKeyDer::from_pem_slice(&key_pem)
                .map_err(|err| tls_error(format!("the client key is not valid PEM: {err}")))?;
            builder.with_client_auth_cert(chain, key).map_err(|err| {
                tls_error(format!(
                    "the client certificate and key do not match: {err}"
                ))
            })
        }
        None => Ok(builder.with_no_client_auth()),
    }
}

/// `insecure-skip-tls-verify: true`: accepts any server certificate (signatures are still
/// checked so the handshake is well formed).
#[derive(Debug)]
struct AcceptAnyServerCertificate {
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl ServerCertVerifier for AcceptAnyServerCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
