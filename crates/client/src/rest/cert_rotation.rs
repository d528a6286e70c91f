//! Client certificates that change while a client runs (client-go's
//! `transport/cert_rotation.go`): certificate and key files re-read when they change, and
//! exec-plugin certificates fetched again when they expire.
//!
//! A client's TLS identity is fixed per connection, so a new identity needs new
//! connections: on a change the client builds a new connection pool and sends every later
//! request through it. Requests and streams already running (an open watch) keep their
//! connection until they end. client-go closes those connections instead; here an open
//! watch finishes on the old identity (its reflector then reconnects on the new one).
//!
//! The check runs before a request, at most once per [`CHECK_INTERVAL`], and costs two
//! `stat`s of the files (async) or a look at the exec credential's expiry.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use super::auth::Authenticator;
use super::client::{HttpClient, http_client};
use super::tls::client_config;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::sync::{read, write};

/// How often, at most, a client looks for a new client certificate.
pub const CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// A certificate and key, PEM.
pub(super) type Identity = (Vec<u8>, Vec<u8>);

/// The connection pools of one TLS identity.
#[derive(Debug)]
pub(super) struct Transport {
    pub(super) http: HttpClient,
    /// HTTP/1.1 only (no `h2` in ALPN): WebSocket upgrades for exec, attach and
    /// port-forward need HTTP/1.1's `Upgrade`, which HTTP/2 does not have.
    pub(super) upgrade_http: HttpClient,
}

impl Transport {
    pub(super) fn new(config: &Config, identity: Option<Identity>) -> Result<Self> {
        let tls = client_config(config, identity)?;
        Ok(Transport {
            http: http_client(config, tls.clone(), true)?,
            upgrade_http: http_client(config, tls, false)?,
        })
    }
}

/// Where a rotating identity comes from.
#[derive(Debug)]
enum Source {
    Files { certificate: PathBuf, key: PathBuf },
    Exec,
}

/// The files' modification times and sizes, to notice a change cheaply.
type FileStamp = Option<(SystemTime, u64)>;

#[derive(Debug)]
struct State {
    checked_at: Option<Instant>,
    stamps: (FileStamp, FileStamp),
    identity: Option<Identity>,
}

/// The current transport of a client, and how to renew it when its identity changes.
#[derive(Debug)]
pub(super) struct Transports {
    current: RwLock<Arc<Transport>>,
    rotation: Option<Rotation>,
}

#[derive(Debug)]
struct Rotation {
    /// The client's configuration, to build new pools from.
    config: Config,
    source: Source,
    /// Serializes checks; never held across a request.
    state: tokio::sync::Mutex<State>,
}

async fn stamp(path: &PathBuf) -> FileStamp {
    let metadata = tokio::fs::metadata(path).await.ok()?;
    Some((metadata.modified().ok()?, metadata.len()))
}

impl Transports {
    /// The transport for `config` with `identity` (an exec plugin's, overriding the
    /// config's), rotating when the config names certificate files or the identity came
    /// from an exec plugin.
    pub(super) async fn new(config: &Config, exec_identity: Option<Identity>) -> Result<Self> {
        let from_exec = exec_identity.is_some();
        let identity = exec_identity.or_else(|| {
            config
                .client_identity
                .as_ref()
                .map(|i| (i.certificate_pem.clone(), i.key_pem.clone()))
        });
        let current = Transport::new(config, identity.clone())?;
        let source = match (&config.client_certificate_files, from_exec) {
            (_, true) => Some(Source::Exec),
            (Some(files), false) => Some(Source::Files {
                certificate: files.certificate.clone(),
                key: files.key.clone(),
            }),
            (None, false) => None,
        };
        let rotation = match source {
            None => None,
            Some(source) => {
                let stamps = match &source {
                    Source::Files { certificate, key } => {
                        (stamp(certificate).await, stamp(key).await)
                    }
                    Source::Exec => (None, None),
                };
                Some(Rotation {
                    config: config.clone(),
                    source,
                    state: tokio::sync::Mutex::new(State {
                        checked_at: Some(Instant::now()),
                        stamps,
                        identity,
                    }),
                })
            }
        };
        Ok(Transports {
            current: RwLock::new(Arc::new(current)),
            rotation,
        })
    }

    /// The transport for the next request, renewed first if the identity changed. A new
    /// identity that cannot be used (a half-written file, a key that does not match) is
    /// logged and the old one kept, as client-go does.
    pub(super) async fn get(&self, auth: &Authenticator) -> Result<Arc<Transport>> {
        if let Some(rotation) = &self.rotation
            && let Some(renewed) = rotation.check(auth).await?
        {
            *write(&self.current) = Arc::new(renewed);
        }
        Ok(Arc::clone(&read(&self.current)))
    }
}

impl Rotation {
    async fn check(&self, auth: &Authenticator) -> Result<Option<Transport>> {
        let mut state = self.state.lock().await;
        let now = Instant::now();
        if state
            .checked_at
            .is_some_and(|at| now.saturating_duration_since(at) < CHECK_INTERVAL)
        {
            return Ok(None);
        }
        state.checked_at = Some(now);
        let (identity, stamps) = match &self.source {
            Source::Files { certificate, key } => {
                let stamps = (stamp(certificate).await, stamp(key).await);
                if stamps == state.stamps {
                    return Ok(None);
                }
                let read = async {
                    let certificate = tokio::fs::read(certificate).await?;
                    let key = tokio::fs::read(key).await?;
                    Ok::<_, std::io::Error>((certificate, key))
                };
                match read.await {
                    Ok(identity) => (Some(identity), stamps),
                    Err(err) => {
                        tracing::warn!(error = %err, "reading the rotated client certificate failed; keeping the current one");
                        return Ok(None);
                    }
                }
            }
            Source::Exec => (auth.exec_client_identity_fresh().await?, state.stamps),
        };
        if identity == state.identity {
            state.stamps = stamps;
            return Ok(None);
        }
        match Transport::new(&self.config, identity.clone()) {
            Ok(transport) => {
                tracing::info!("the client certificate changed; new connections use it");
                state.identity = identity;
                state.stamps = stamps;
                Ok(Some(transport))
            }
            Err(err @ Error::Tls(_)) => {
                tracing::warn!(error = %kubeclient_machinery::ErrorChain(&err), "the rotated client certificate is unusable; keeping the current one");
                Ok(None)
            }
            Err(err) => Err(err),
        }
    }
}
