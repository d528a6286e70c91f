//! [`EtcdConfig`]: where the etcd cluster is and how to reach it, named as
//! kube-apiserver's flags name it.

use std::path::PathBuf;
use std::time::Duration;

use etcd_client::{Certificate, ConnectOptions, Identity, TlsOptions};

use super::super::BackendError;

/// How to reach etcd: kube-apiserver's `--etcd-servers`, `--etcd-prefix`,
/// `--etcd-cafile`, `--etcd-certfile` and `--etcd-keyfile`.
///
/// ```
/// use kubeclient_apiserver::storage::EtcdConfig;
///
/// let config = EtcdConfig::new(["http://127.0.0.1:2379"]);
/// assert_eq!(config.prefix, "/registry");
/// ```
#[derive(Clone, Debug)]
pub struct EtcdConfig {
    /// The members' client URLs (`http://host:port` or `https://host:port`).
    pub servers: Vec<String>,
    /// The prefix of every key (default `/registry`).
    pub prefix: String,
    /// The CA bundle that signed the members' serving certificates (`--etcd-cafile`).
    pub ca_file: Option<PathBuf>,
    /// The client certificate (`--etcd-certfile`), with `key_file`.
    pub cert_file: Option<PathBuf>,
    /// The client certificate's private key (`--etcd-keyfile`).
    pub key_file: Option<PathBuf>,
    /// How long one request may take before it fails with
    /// [`BackendError::Timeout`] (default 30 s); watches are not bounded.
    pub request_timeout: Duration,
    /// How long connecting to a member may take (default 5 s).
    pub connect_timeout: Duration,
}

impl EtcdConfig {
    /// The default prefix, kube-apiserver's.
    pub const DEFAULT_PREFIX: &'static str = "/registry";

    /// A configuration for these members, without TLS, under `/registry`.
    pub fn new<S: Into<String>>(servers: impl IntoIterator<Item = S>) -> Self {
        EtcdConfig {
            servers: servers.into_iter().map(Into::into).collect(),
            prefix: Self::DEFAULT_PREFIX.to_owned(),
            ca_file: None,
            cert_file: None,
            key_file: None,
            request_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
        }
    }

    /// The same members under another key prefix.
    #[must_use]
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The client's connection options, with the TLS files read.
    pub(crate) fn connect_options(&self) -> Result<ConnectOptions, BackendError> {
        let mut options = ConnectOptions::new()
            .with_connect_timeout(self.connect_timeout)
            .with_keep_alive(Duration::from_secs(30), Duration::from_secs(15));
        let mut tls = None;
        if let Some(ca_file) = &self.ca_file {
            let ca = read(ca_file, "--etcd-cafile")?;
            tls = Some(TlsOptions::new().ca_certificate(Certificate::from_pem(ca)));
        }
        match (&self.cert_file, &self.key_file) {
            (Some(cert_file), Some(key_file)) => {
                let identity = Identity::from_pem(
                    read(cert_file, "--etcd-certfile")?,
                    read(key_file, "--etcd-keyfile")?,
                );
                tls = Some(tls.unwrap_or_default().identity(identity));
            }
            (None, None) => {}
            _ => {
                return Err(BackendError::Config {
                    context: "--etcd-certfile and --etcd-keyfile go together".to_owned(),
                    source: None,
                });
            }
        }
        if let Some(tls) = tls {
            options = options.with_tls(tls);
        }
        Ok(options)
    }
}

fn read(path: &std::path::Path, flag: &str) -> Result<Vec<u8>, BackendError> {
    std::fs::read(path).map_err(|error| BackendError::Config {
        context: format!("reading {flag} {}", path.display()),
        source: Some(Box::new(error)),
    })
}
