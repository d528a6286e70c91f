//! Small utilities from client-go's `util` packages and `k8s.io/utils`: an injectable
//! [`Clock`](clock::Clock), retrying writes that lost a race ([`retry`]), and (feature
//! `cert`, on by default) certificate generation ([`cert`]) and CertificateSigningRequest
//! helpers ([`csr`]).

pub(crate) mod accept_loop;
#[cfg(feature = "cert")]
pub mod cert;
pub mod clock;
#[cfg(feature = "cert")]
pub mod csr;
pub mod retry;
