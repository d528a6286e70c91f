//! Request authentication: static tokens, token files re-read when they change, basic
//! auth, exec plugins with their credential cached until it expires or a 401, and the
//! kubeconfig's oidc auth provider.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use base64::Engine as _;
use http::HeaderValue;

use crate::config::exec::run_exec_plugin;
use crate::config::oidc::{OidcProvider, provider};
use crate::config::{Credentials, ExecConfig, ExecCredential};
use crate::error::{Error, Result};

/// How long before `expirationTimestamp` a cached exec credential is renewed.
const EXPIRY_MARGIN_SECONDS: i64 = 10;

/// Produces the `Authorization` header of each request.
#[derive(Debug)]
pub(crate) struct Authenticator {
    kind: AuthKind,
    cluster_server: String,
}

#[derive(Debug)]
enum AuthKind {
    None,
    Fixed(HeaderValue),
    TokenFile {
        path: PathBuf,
        /// The token and the file's modification time when it was read.
        cached: Mutex<Option<(HeaderValue, Option<SystemTime>)>>,
    },
    Exec {
        config: Box<ExecConfig>,
        cached: tokio::sync::Mutex<Option<ExecCredential>>,
    },
    Oidc(Arc<OidcProvider>),
}

fn bearer(token: &str) -> Result<HeaderValue> {
    let mut value = HeaderValue::from_str(&format!("Bearer {}", token.trim())).map_err(|_| {
        Error::InvalidRequest(
            "the bearer token contains characters not allowed in a header".to_owned(),
        )
    })?;
    value.set_sensitive(true);
    Ok(value)
}

impl Authenticator {
    pub(crate) fn new(credentials: &Credentials, cluster_server: &str) -> Result<Self> {
        let kind = match credentials {
            Credentials::None => AuthKind::None,
            Credentials::Token(token) => AuthKind::Fixed(bearer(token)?),
            Credentials::Basic { username, password } => {
                let encoded = base64::engine::general_purpose::STANDARD
                    .encode(format!("{username}:{password}"));
                let mut value =
                    HeaderValue::from_str(&format!("Basic {encoded}")).map_err(|_| {
                        Error::InvalidRequest(
                            "basic auth credentials are not a valid header".to_owned(),
                        )
                    })?;
                value.set_sensitive(true);
                AuthKind::Fixed(value)
            }
            Credentials::TokenFile(path) => AuthKind::TokenFile {
                path: path.clone(),
                cached: Mutex::new(None),
            },
            Credentials::Exec(config) => AuthKind::Exec {
                config: config.clone(),
                cached: tokio::sync::Mutex::new(None),
            },
            Credentials::Oidc(config) => AuthKind::Oidc(provider(config)),
        };
        Ok(Authenticator {
            kind,
            cluster_server: cluster_server.to_owned(),
        })
    }

    /// Whether a 401 may be cured by fetching credentials again.
    pub(crate) fn can_refresh(&self) -> bool {
        matches!(
            self.kind,
            AuthKind::Exec { .. } | AuthKind::TokenFile { .. }
        )
    }

    /// Forgets cached credentials (after a 401).
    pub(crate) async fn invalidate(&self) {
        match &self.kind {
            AuthKind::Exec { cached, .. } => *cached.lock().await = None,
            AuthKind::TokenFile { cached, .. } => {
                *crate::sync::lock(cached) = None;
            }
            // client-go's oidc provider keeps an unexpired id-token after a 401.
            AuthKind::None | AuthKind::Fixed(_) | AuthKind::Oidc(_) => {}
        }
    }

    /// The header for the next request, if any.
    pub(crate) async fn header(&self) -> Result<Option<HeaderValue>> {
        match &self.kind {
            AuthKind::None => Ok(None),
            AuthKind::Fixed(value) => Ok(Some(value.clone())),
            AuthKind::TokenFile { path, cached } => {
                let modified = tokio::fs::metadata(path)
                    .await
                    .and_then(|m| m.modified())
                    .ok();
                {
                    let cached = crate::sync::lock(cached);
                    if let Some((value, read_at)) = cached.as_ref()
                        && *read_at == modified
                    {
                        return Ok(Some(value.clone()));
                    }
                }
                let token =
                    tokio::fs::read_to_string(path)
                        .await
                        .map_err(|source| Error::TokenFile {
                            path: path.clone(),
                            source,
                        })?;
                let value = bearer(&token)?;
                *crate::sync::lock(cached) = Some((value.clone(), modified));
                Ok(Some(value))
            }
            AuthKind::Oidc(provider) => Ok(Some(bearer(&provider.id_token().await?)?)),
            AuthKind::Exec { config, cached } => {
                let mut cached = cached.lock().await;
                if !cached.as_ref().is_some_and(is_fresh) {
                    *cached = Some(run_exec_plugin(config, &self.cluster_server).await?);
                }
                match cached.as_ref().and_then(|c| c.token.as_deref()) {
                    Some(token) => Ok(Some(bearer(token)?)),
                    None => Ok(None),
                }
            }
        }
    }

    /// Runs an exec plugin once at construction when it might provide a client
    /// certificate (TLS identities are fixed per connection pool).
    pub(crate) async fn exec_client_identity(&self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.exec_identity(|cached| cached.is_some()).await
    }

    /// The exec plugin's client certificate, running the plugin again when the cached
    /// credential has expired (client-go refreshes exec certificates on expiry).
    pub(crate) async fn exec_client_identity_fresh(&self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.exec_identity(|cached| cached.is_some_and(is_fresh))
            .await
    }

    async fn exec_identity(
        &self,
        usable: impl FnOnce(Option<&ExecCredential>) -> bool,
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let AuthKind::Exec { config, cached } = &self.kind else {
            return Ok(None);
        };
        let mut cached = cached.lock().await;
        if !usable(cached.as_ref()) {
            *cached = Some(run_exec_plugin(config, &self.cluster_server).await?);
        }
        Ok(cached
            .as_ref()
            .and_then(|c| match (&c.client_certificate_data, &c.client_key_data) {
                (Some(cert), Some(key)) => {
                    Some((cert.clone().into_bytes(), key.clone().into_bytes()))
                }
                _ => None,
            }))
    }
}

/// Whether a cached exec credential is still good: no expiry, or more than
/// [`EXPIRY_MARGIN_SECONDS`] before it.
fn is_fresh(credential: &ExecCredential) -> bool {
    credential.expires_at().is_none_or(|expiry| {
        jiff::Timestamp::now().as_second() + EXPIRY_MARGIN_SECONDS < expiry.as_second()
    })
}
