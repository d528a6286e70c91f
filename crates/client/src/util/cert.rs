//! Certificates and keys (client-go's `util/cert` and `util/keyutil`): a self-signed CA,
//! certificates signed by it for servers and clients, a self-signed serving certificate
//! in one call, and certificate signing requests.
//!
//! Everything is PEM in and PEM out; keys are ECDSA P-256.

use std::net::IpAddr;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, CertificateSigningRequestParams, DistinguishedName,
    DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType,
};

/// How long a CA made by [`CertificateAuthority::new_self_signed`] is valid (client-go: 10
/// years).
pub const CA_VALIDITY: Duration = Duration::from_secs(10 * 365 * 24 * 60 * 60);

/// How long a certificate signed by [`CertificateAuthority::sign`] is valid unless its
/// [`CertConfig::validity`] says otherwise (client-go's serving certificates: 1 year).
pub const DEFAULT_VALIDITY: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// Why a certificate, key or CSR could not be made or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CertError {
    /// rcgen refused the parameters or the input (a malformed PEM, an unusable key).
    #[error("certificate operation failed")]
    Rcgen(#[from] rcgen::Error),
    /// A name cannot be a DNS subject alternative name (it is not ASCII).
    #[error("{0:?} is not a valid DNS name")]
    InvalidDnsName(String),
    /// A validity period does not fit the certificate's time range.
    #[error("a validity of {0:?} is out of range")]
    Validity(Duration),
}

/// What to put in a certificate (Go's `cert.Config`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[doc(alias = "Config")]
pub struct CertConfig {
    /// The subject's common name (for a client certificate: the user name).
    pub common_name: String,
    /// The subject's organizations (for a client certificate: the groups).
    pub organization: Vec<String>,
    /// DNS subject alternative names.
    pub dns_names: Vec<String>,
    /// IP subject alternative names.
    pub ip_addresses: Vec<IpAddr>,
    /// What the certificate may be used for.
    pub usages: Vec<ExtKeyUsage>,
    /// How long it is valid from now; `None` is [`DEFAULT_VALIDITY`].
    pub validity: Option<Duration>,
}

/// An extended key usage (Go's `x509.ExtKeyUsage`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ExtKeyUsage {
    /// TLS server authentication.
    ServerAuth,
    /// TLS client authentication.
    ClientAuth,
}

/// A certificate and its private key, both PEM. `Debug` never shows the key.
#[derive(Clone, PartialEq, Eq)]
pub struct CertKeyPair {
    /// The certificate (for [`generate_self_signed_cert_key`], followed by its CA).
    pub cert_pem: String,
    /// The private key.
    pub key_pem: String,
}

impl std::fmt::Debug for CertKeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertKeyPair")
            .field("cert_pem", &self.cert_pem)
            .field("key_pem", &"<redacted>")
            .finish()
    }
}

/// A certificate authority that signs certificates and CSRs.
///
/// # Examples
///
/// ```
/// use kubeclient::util::cert::{CertConfig, CertificateAuthority, ExtKeyUsage};
///
/// let ca = CertificateAuthority::new_self_signed("my-ca").unwrap();
/// let alice = ca
///     .sign(&CertConfig {
///         common_name: "alice".into(),
///         organization: vec!["dev".into()],
///         usages: vec![ExtKeyUsage::ClientAuth],
///         ..CertConfig::default()
///     })
///     .unwrap();
/// assert!(alice.cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
/// assert!(ca.cert_pem().starts_with("-----BEGIN CERTIFICATE-----"));
/// ```
pub struct CertificateAuthority {
    cert_pem: String,
    key_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl std::fmt::Debug for CertificateAuthority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertificateAuthority")
            .field("cert_pem", &self.cert_pem)
            .finish_non_exhaustive()
    }
}

impl CertificateAuthority {
    /// A new key and a self-signed CA certificate for it, valid [`CA_VALIDITY`] (Go's
    /// `NewSelfSignedCACert`).
    ///
    /// # Errors
    ///
    /// [`CertError`] when generation fails.
    #[doc(alias = "NewSelfSignedCACert")]
    pub fn new_self_signed(common_name: &str) -> Result<Self, CertError> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name = distinguished_name(common_name, &[]);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
            KeyUsagePurpose::KeyCertSign,
        ];
        set_validity(&mut params, CA_VALIDITY)?;
        let cert_pem = params.self_signed(&key)?.pem();
        let key_pem = key.serialize_pem();
        Ok(CertificateAuthority {
            cert_pem,
            key_pem,
            issuer: Issuer::new(params, key),
        })
    }

    /// A CA from its certificate and key (PEM), for example one written to disk earlier.
    ///
    /// # Errors
    ///
    /// [`CertError::Rcgen`] when either does not parse.
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Self, CertError> {
        let key = KeyPair::from_pem(key_pem)?;
        let issuer = Issuer::from_ca_cert_pem(cert_pem, key)?;
        Ok(CertificateAuthority {
            cert_pem: cert_pem.to_owned(),
            key_pem: key_pem.to_owned(),
            issuer,
        })
    }

    /// The CA certificate (what clients or servers trust).
    #[must_use]
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The CA's private key.
    #[must_use]
    pub fn key_pem(&self) -> &str {
        &self.key_pem
    }

    /// A new key and a certificate for it, signed by this CA.
    ///
    /// # Errors
    ///
    /// [`CertError`] for an invalid DNS name or validity, or when signing fails.
    pub fn sign(&self, config: &CertConfig) -> Result<CertKeyPair, CertError> {
        let key = KeyPair::generate()?;
        let params = certificate_params(config)?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(CertKeyPair {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// Signs a certificate signing request (PEM) as a signer does: the subject and names
    /// come from the request; validity and usages from `validity` and `usages`.
    ///
    /// # Errors
    ///
    /// [`CertError`] when the request does not parse, its signature is wrong, or signing
    /// fails.
    pub fn sign_csr(
        &self,
        csr_pem: &str,
        validity: Duration,
        usages: &[ExtKeyUsage],
    ) -> Result<String, CertError> {
        let mut request = CertificateSigningRequestParams::from_pem(csr_pem)?;
        set_validity(&mut request.params, validity)?;
        request.params.extended_key_usages = usages.iter().map(|u| u.purpose()).collect();
        Ok(request.signed_by(&self.issuer)?.pem())
    }
}

impl ExtKeyUsage {
    fn purpose(self) -> ExtendedKeyUsagePurpose {
        match self {
            ExtKeyUsage::ServerAuth => ExtendedKeyUsagePurpose::ServerAuth,
            ExtKeyUsage::ClientAuth => ExtendedKeyUsagePurpose::ClientAuth,
        }
    }
}

fn distinguished_name(common_name: &str, organization: &[String]) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    if !common_name.is_empty() {
        name.push(DnType::CommonName, common_name);
    }
    for org in organization {
        name.push(DnType::OrganizationName, org.as_str());
    }
    name
}

fn set_validity(params: &mut CertificateParams, validity: Duration) -> Result<(), CertError> {
    let now = time::OffsetDateTime::now_utc();
    let span = time::Duration::try_from(validity).map_err(|_| CertError::Validity(validity))?;
    let not_after = now.checked_add(span).ok_or(CertError::Validity(validity))?;
    // A little slack before now, for clocks slightly behind (client-go backdates too).
    params.not_before = now.checked_sub(time::Duration::minutes(5)).unwrap_or(now);
    params.not_after = not_after;
    Ok(())
}

fn certificate_params(config: &CertConfig) -> Result<CertificateParams, CertError> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name = distinguished_name(&config.common_name, &config.organization);
    for dns in &config.dns_names {
        let name = dns
            .as_str()
            .try_into()
            .map_err(|_| CertError::InvalidDnsName(dns.clone()))?;
        params.subject_alt_names.push(SanType::DnsName(name));
    }
    params
        .subject_alt_names
        .extend(config.ip_addresses.iter().copied().map(SanType::IpAddress));
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = config.usages.iter().map(|u| u.purpose()).collect();
    set_validity(&mut params, config.validity.unwrap_or(DEFAULT_VALIDITY))?;
    Ok(params)
}

/// A self-signed serving certificate for `host` and the given alternate names: a fresh CA
/// and a certificate it signs, the certificate PEM followed by the CA's (Go's
/// `GenerateSelfSignedCertKey`). `host` goes into the IP or DNS names as it parses.
///
/// # Examples
///
/// ```
/// let pair = kubeclient::util::cert::generate_self_signed_cert_key("localhost", &[], &[]).unwrap();
/// assert_eq!(pair.cert_pem.matches("BEGIN CERTIFICATE").count(), 2); // serving + CA
/// ```
///
/// # Errors
///
/// [`CertError`] when generation fails or a name is invalid.
#[doc(alias = "GenerateSelfSignedCertKey")]
pub fn generate_self_signed_cert_key(
    host: &str,
    alternate_ips: &[IpAddr],
    alternate_dns: &[String],
) -> Result<CertKeyPair, CertError> {
    let ca = CertificateAuthority::new_self_signed(&format!("{host}-ca"))?;
    let mut config = CertConfig {
        common_name: host.to_owned(),
        usages: vec![ExtKeyUsage::ServerAuth],
        ip_addresses: alternate_ips.to_vec(),
        dns_names: alternate_dns.to_vec(),
        ..CertConfig::default()
    };
    match host.parse::<IpAddr>() {
        Ok(ip) => config.ip_addresses.insert(0, ip),
        Err(_) => config.dns_names.insert(0, host.to_owned()),
    }
    let serving = ca.sign(&config)?;
    Ok(CertKeyPair {
        cert_pem: format!("{}{}", serving.cert_pem, ca.cert_pem()),
        key_pem: serving.key_pem,
    })
}

/// A new private key, PEM (Go's `keyutil.MakeEllipticPrivateKeyPEM`).
///
/// # Errors
///
/// [`CertError`] when generation fails.
#[doc(alias = "MakeEllipticPrivateKeyPEM")]
pub fn generate_private_key_pem() -> Result<String, CertError> {
    Ok(KeyPair::generate()?.serialize_pem())
}

/// A certificate signing request (PEM) for `key_pem` with the subject and names of
/// `subject` (Go's `cert.MakeCSR`); usages and validity are the signer's to choose and are
/// not included.
///
/// # Examples
///
/// ```
/// use kubeclient::util::cert::{CertConfig, generate_private_key_pem, make_csr};
///
/// let key = generate_private_key_pem().unwrap();
/// let csr = make_csr(&key, &CertConfig { common_name: "system:node:n1".into(), ..CertConfig::default() }).unwrap();
/// assert!(csr.starts_with("-----BEGIN CERTIFICATE REQUEST-----"));
/// ```
///
/// # Errors
///
/// [`CertError`] when the key does not parse or a name is invalid.
#[doc(alias = "MakeCSR")]
pub fn make_csr(key_pem: &str, subject: &CertConfig) -> Result<String, CertError> {
    let key = KeyPair::from_pem(key_pem)?;
    let mut params = certificate_params(subject)?;
    params.extended_key_usages.clear();
    params.key_usages.clear();
    Ok(params.serialize_request(&key)?.pem()?)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rustls::client::danger::ServerCertVerifier;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

    use super::*;

    /// Verifies `chain_pem` (leaf first) as a server certificate for `name` against `ca_pem`.
    fn verify_server(chain_pem: &str, ca_pem: &str, name: &str) -> Result<(), rustls::Error> {
        let provider = Arc::new(crate::rest::tls::crypto_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(ca_pem.as_bytes()).unwrap())
            .unwrap();
        let verifier =
            rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .unwrap();
        let chain: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(chain_pem.as_bytes())
                .collect::<Result<_, _>>()
                .unwrap();
        let name = ServerName::try_from(name.to_owned()).unwrap();
        verifier
            .verify_server_cert(&chain[0], &chain[1..], &name, &[], UnixTime::now())
            .map(drop)
    }

    #[test]
    fn a_self_signed_serving_certificate_verifies_for_its_host_and_names_only() {
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let pair =
            generate_self_signed_cert_key("localhost", &[ip], &["api.example.com".into()]).unwrap();
        let ca_pem = pair
            .cert_pem
            .split_inclusive("-----END CERTIFICATE-----\n")
            .nth(1)
            .unwrap();
        verify_server(&pair.cert_pem, ca_pem, "localhost").unwrap();
        verify_server(&pair.cert_pem, ca_pem, "api.example.com").unwrap();
        verify_server(&pair.cert_pem, ca_pem, "10.0.0.1").unwrap();
        assert!(verify_server(&pair.cert_pem, ca_pem, "other.example.com").is_err());
        assert!(!format!("{pair:?}").contains("PRIVATE KEY"));
    }

    #[test]
    fn a_certificate_from_another_ca_does_not_verify() {
        let ca = CertificateAuthority::new_self_signed("one").unwrap();
        let other = CertificateAuthority::new_self_signed("two").unwrap();
        let serving = ca
            .sign(&CertConfig {
                common_name: "svc".into(),
                dns_names: vec!["svc.local".into()],
                usages: vec![ExtKeyUsage::ServerAuth],
                ..CertConfig::default()
            })
            .unwrap();
        verify_server(&serving.cert_pem, ca.cert_pem(), "svc.local").unwrap();
        assert!(verify_server(&serving.cert_pem, other.cert_pem(), "svc.local").is_err());
    }

    #[test]
    fn a_ca_read_back_from_pem_signs_certificates_its_original_verifies() {
        let ca = CertificateAuthority::new_self_signed("ca").unwrap();
        let again = CertificateAuthority::from_pem(ca.cert_pem(), ca.key_pem()).unwrap();
        let serving = again
            .sign(&CertConfig {
                dns_names: vec!["x.local".into()],
                usages: vec![ExtKeyUsage::ServerAuth],
                ..CertConfig::default()
            })
            .unwrap();
        verify_server(&serving.cert_pem, ca.cert_pem(), "x.local").unwrap();
    }

    #[test]
    fn a_signed_csr_carries_the_requested_names() {
        let ca = CertificateAuthority::new_self_signed("ca").unwrap();
        let key = generate_private_key_pem().unwrap();
        let csr = make_csr(
            &key,
            &CertConfig {
                common_name: "node".into(),
                dns_names: vec!["node.local".into()],
                ..CertConfig::default()
            },
        )
        .unwrap();
        let cert = ca
            .sign_csr(&csr, Duration::from_secs(3600), &[ExtKeyUsage::ServerAuth])
            .unwrap();
        let chain = format!("{cert}{}", ca.cert_pem());
        verify_server(&chain, ca.cert_pem(), "node.local").unwrap();
        assert!(matches!(
            ca.sign_csr("not a csr", Duration::from_secs(1), &[]),
            Err(CertError::Rcgen(_))
        ));
    }

    #[test]
    fn an_invalid_dns_name_or_validity_is_refused() {
        let ca = CertificateAuthority::new_self_signed("ca").unwrap();
        let bad_name = ca.sign(&CertConfig {
            dns_names: vec!["caf\u{e9}.example".into()],
            ..CertConfig::default()
        });
        assert!(matches!(bad_name, Err(CertError::InvalidDnsName(_))));
        let forever = ca.sign(&CertConfig {
            validity: Some(Duration::MAX),
            ..CertConfig::default()
        });
        assert!(matches!(forever, Err(CertError::Validity(_))));
    }
}
