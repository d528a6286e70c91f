//! The kubeconfig's `oidc` auth provider (client-go's `plugin/pkg/client/auth/oidc`): the
//! `id-token` is sent as the bearer token until 10 seconds before its `exp`; then a new one
//! is fetched with the `refresh-token` from the token endpoint the issuer's discovery
//! document names, and both tokens are written back to the kubeconfig file that defines
//! the user, so the next program starts with them.
//!
//! ```yaml
//! users:
//! - name: alice
//!   user:
//!     auth-provider:
//!       name: oidc
//!       config:
//!         idp-issuer-url: https://login.example.com
//!         client-id: kubernetes
//!         client-secret: s3cret                 # optional
//!         id-token: eyJhbGciOi...               # optional: fetched when absent or expired
//!         refresh-token: 1//0gq...
//!         idp-certificate-authority: ca.pem     # or idp-certificate-authority-data (base64)
//! ```
//!
//! Like client-go: no scopes are sent when refreshing (`extra-scopes` is ignored), a 401 from
//! the API server does not refresh a token that has not expired, and clients of one issuer
//! and client id in a process share their tokens (one refresh for all of them).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};

use base64::Engine as _;
use bytes::Bytes;
use http::{HeaderValue, Method};

use super::Config;
use crate::rest::plain_client::PlainClient;

/// How long before its `exp` an id-token counts as expired (client-go's `expiryDelta`).
const EXPIRY_MARGIN_SECONDS: f64 = 10.0;

/// The largest discovery document or token response read (a hostile issuer must not make
/// the client buffer without bound).
const MAX_RESPONSE_BYTES: usize = 1024 * 1024;

/// The `oidc` auth provider's settings, from a kubeconfig user's `auth-provider.config`.
/// `Debug` never shows the tokens or the secret.
#[derive(Clone, PartialEq)]
pub struct OidcConfig {
    /// `idp-issuer-url`: where `/.well-known/openid-configuration` is.
    pub issuer_url: String,
    /// `client-id`.
    pub client_id: String,
    /// `client-secret` (none for a public client).
    pub client_secret: Option<String>,
    /// `id-token`: the bearer token, while it has not expired.
    pub id_token: Option<String>,
    /// `refresh-token`: what gets a new id-token.
    pub refresh_token: Option<String>,
    /// The issuer's CA (`idp-certificate-authority(-data)`), PEM; empty: the system's roots.
    pub certificate_authority_pem: Vec<u8>,
    /// Where refreshed tokens are written: the kubeconfig files (in precedence order) and
    /// the user's name; `None` keeps them in memory only.
    pub persist_to: Option<OidcPersistTarget>,
}

impl std::fmt::Debug for OidcConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let redacted = |v: &Option<String>| v.as_ref().map(|_| "<redacted>");
        f.debug_struct("OidcConfig")
            .field("issuer_url", &self.issuer_url)
            .field("client_id", &self.client_id)
            .field("client_secret", &redacted(&self.client_secret))
            .field("id_token", &redacted(&self.id_token))
            .field("refresh_token", &redacted(&self.refresh_token))
            .field("persist_to", &self.persist_to)
            .finish_non_exhaustive()
    }
}

/// The kubeconfig user refreshed oidc tokens are written to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OidcPersistTarget {
    /// The kubeconfig files; the first that defines the user is rewritten.
    pub files: Vec<PathBuf>,
    /// The user's name in them.
    pub user: String,
}

impl OidcConfig {
    /// Reads an `auth-provider.config` map. `Err` names the missing or bad key.
    ///
    /// # Examples
    ///
    /// ```
    /// use kubeclient::config::OidcConfig;
    ///
    /// let settings = [("idp-issuer-url", "https://login.example.com"), ("client-id", "kubernetes"), ("refresh-token", "r1")]
    ///     .into_iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect();
    /// let oidc = OidcConfig::from_provider_config(&settings).unwrap();
    /// assert_eq!(oidc.client_id, "kubernetes");
    /// assert!(OidcConfig::from_provider_config(&Default::default()).is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// `(key, why)` when `idp-issuer-url` or `client-id` is missing, or the certificate
    /// authority cannot be read.
    pub fn from_provider_config(
        settings: &BTreeMap<String, String>,
    ) -> Result<Self, (&'static str, String)> {
        let value = |key: &str| settings.get(key).filter(|v| !v.is_empty()).cloned();
        let issuer_url =
            value("idp-issuer-url").ok_or(("idp-issuer-url", "must be set".to_owned()))?;
        let client_id = value("client-id").ok_or(("client-id", "must be set".to_owned()))?;
        let certificate_authority_pem = if let Some(data) = value("idp-certificate-authority-data")
        {
            base64::engine::general_purpose::STANDARD
                .decode(data.trim())
                .map_err(|err| {
                    (
                        "idp-certificate-authority-data",
                        format!("not base64: {err}"),
                    )
                })?
        } else if let Some(path) = value("idp-certificate-authority") {
            std::fs::read(&path).map_err(|err| {
                (
                    "idp-certificate-authority",
                    format!("cannot read {path}: {err}"),
                )
            })?
        } else {
            Vec::new()
        };
        Ok(OidcConfig {
            issuer_url,
            client_id,
            client_secret: value("client-secret"),
            id_token: value("id-token"),
            refresh_token: value("refresh-token"),
            certificate_authority_pem,
            persist_to: None,
        })
    }
}

/// Why no id-token could be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OidcError {
    /// The id-token is not a JWT whose payload has a numeric `exp`.
    #[error("the oidc id-token is not a valid JWT ({0}); log in again")]
    InvalidIdToken(&'static str),
    /// It expired and there is no refresh token.
    #[error(
        "the oidc id-token is missing or expired, and there is no refresh-token to get a new one: log in again (for example with kubelogin) or use an exec plugin"
    )]
    NoRefreshToken,
    /// A request to the issuer failed.
    #[error("oidc: {what} {url} failed")]
    Request {
        /// What was asked (the discovery document, a refresh).
        what: &'static str,
        /// The URL.
        url: String,
        /// Why.
        #[source]
        source: Box<crate::Error>,
    },
    /// The token endpoint refused the refresh with an OAuth2 error (RFC 6749 §5.2).
    #[error("oidc: {url} refused to refresh the id-token: {refusal}; log in again")]
    Refused {
        /// The token endpoint.
        url: String,
        /// What it said.
        refusal: OAuthRefusal,
    },
    /// The issuer answered something unusable.
    #[error("oidc: {url} answered {message}")]
    InvalidResponse {
        /// The URL.
        url: String,
        /// What is wrong.
        message: String,
    },
    /// The token response had no id-token.
    #[error(
        "oidc: the token response of {url} did not contain an id_token: either the scope \"openid\" was not requested at login, or the provider does not return id_tokens when refreshing"
    )]
    NoIdToken {
        /// The token endpoint.
        url: String,
    },
    /// The new tokens could not be written to the kubeconfig.
    #[error("could not write the new oidc tokens to {path}")]
    Persist {
        /// The kubeconfig file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// The tokens of one issuer and client id, shared by every client of the process.
pub(crate) struct OidcProvider {
    config: OidcConfig,
    tokens: tokio::sync::Mutex<Tokens>,
}

#[derive(Clone)]
struct Tokens {
    id_token: Option<String>,
    refresh_token: Option<String>,
}

type ProviderKey = (String, String);

/// client-go's provider cache: one provider per issuer and client id, so concurrent
/// clients never refresh the same credentials twice.
static PROVIDERS: Mutex<Option<HashMap<ProviderKey, Weak<OidcProvider>>>> = Mutex::new(None);

/// The shared provider for `config`'s issuer and client id (a new one when none is alive).
pub(crate) fn provider(config: &OidcConfig) -> Arc<OidcProvider> {
    let mut providers = crate::sync::lock(&PROVIDERS);
    let providers = providers.get_or_insert_with(HashMap::new);
    providers.retain(|_, provider| provider.strong_count() > 0);
    let key = (config.issuer_url.clone(), config.client_id.clone());
    if let Some(existing) = providers.get(&key).and_then(Weak::upgrade) {
        return existing;
    }
    let created = Arc::new(OidcProvider {
        config: config.clone(),
        tokens: tokio::sync::Mutex::new(Tokens {
            id_token: config.id_token.clone(),
            refresh_token: config.refresh_token.clone(),
        }),
    });
    providers.insert(key, Arc::downgrade(&created));
    created
}

impl std::fmt::Debug for OidcProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcProvider")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl OidcProvider {
    /// The id-token to send: the cached one while it is valid, else a refreshed one.
    pub(crate) async fn id_token(&self) -> Result<String, OidcError> {
        let mut tokens = self.tokens.lock().await;
        if let Some(token) = valid_cached(&tokens)? {
            return Ok(token);
        }
        let refresh_token = tokens
            .refresh_token
            .clone()
            .filter(|t| !t.is_empty())
            .ok_or(OidcError::NoRefreshToken)?;
        let token_url = self.token_endpoint().await?;
        let refreshed = self.refresh(&token_url, &refresh_token).await?;
        let id_token = refreshed.id_token;
        let fresh = Tokens {
            id_token: Some(id_token.clone()),
            refresh_token: Some(refreshed.refresh_token.unwrap_or(refresh_token)),
        };
        if let Some(target) = self.config.persist_to.clone() {
            let written = fresh.clone();
            tokio::task::spawn_blocking(move || persist(&target, &written))
                .await
                .map_err(|err| OidcError::Persist {
                    path: PathBuf::new(),
                    source: std::io::Error::other(err.to_string()),
                })??;
        }
        *tokens = fresh;
        Ok(id_token)
    }

    /// A client trusting the issuer's CA (the system's roots when it names none).
    fn client(&self, url: &str, what: &'static str) -> Result<PlainClient, OidcError> {
        let failed = |source: crate::Error| OidcError::Request {
            what,
            url: url.to_owned(),
            source: Box::new(source),
        };
        let uri: http::Uri = url
            .parse()
            .map_err(|err| failed(crate::Error::InvalidRequest(format!("not a URL: {err}"))))?;
        let mut config = Config::new(uri);
        config.root_certificates_pem = self.config.certificate_authority_pem.clone();
        PlainClient::new(&config).map_err(failed)
    }

    /// The token endpoint from the issuer's discovery document.
    async fn token_endpoint(&self) -> Result<String, OidcError> {
        const WHAT: &str = "reading the discovery document";
        let url = format!(
            "{}/.well-known/openid-configuration",
            self.config.issuer_url.trim_end_matches('/')
        );
        let body = self
            .client(&url, WHAT)?
            .send(Method::GET, &url, None, None, MAX_RESPONSE_BYTES)
            .await
            .map_err(|source| OidcError::Request {
                what: WHAT,
                url: url.clone(),
                source: Box::new(source),
            })?;
        let invalid = |message: &str| OidcError::InvalidResponse {
            url: url.clone(),
            message: message.to_owned(),
        };
        let document: serde_json::Value = serde_json::from_slice(&body)
            .map_err(|_| invalid("a discovery document that is not JSON"))?;
        document
            .get("token_endpoint")
            .and_then(serde_json::Value::as_str)
            .filter(|u| !u.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| invalid("a discovery document without a token_endpoint"))
    }

    /// An OAuth2 refresh-token grant. The client authenticates with HTTP basic auth, and
    /// when that is refused, with its id and secret in the form (golang.org/x/oauth2's
    /// auto-detection, which client-go uses).
    async fn refresh(&self, url: &str, refresh_token: &str) -> Result<Refreshed, OidcError> {
        const WHAT: &str = "refreshing the id-token at";
        const FORM: &str = "application/x-www-form-urlencoded";
        let encode =
            |value: &str| -> String { form_urlencoded::byte_serialize(value.as_bytes()).collect() };
        let secret = self.config.client_secret.clone().unwrap_or_default();
        let basic = base64::engine::general_purpose::STANDARD.encode(format!(
            "{}:{}",
            encode(&self.config.client_id),
            encode(&secret)
        ));
        let mut in_header = HeaderValue::from_str(&format!("Basic {basic}")).map_err(|_| {
            OidcError::InvalidResponse {
                url: url.to_owned(),
                message: "a client id that cannot be sent in a header".to_owned(),
            }
        })?;
        in_header.set_sensitive(true);
        let form = |with_client: bool| {
            let mut form = form_urlencoded::Serializer::new(String::new());
            form.append_pair("grant_type", "refresh_token")
                .append_pair("refresh_token", refresh_token);
            if with_client {
                form.append_pair("client_id", &self.config.client_id);
                if !secret.is_empty() {
                    form.append_pair("client_secret", &secret);
                }
            }
            Some((Bytes::from(form.finish()), FORM))
        };
        let client = self.client(url, WHAT)?;
        let first = client
            .send(
                Method::POST,
                url,
                form(false),
                Some(in_header),
                MAX_RESPONSE_BYTES,
            )
            .await;
        let answer = match first {
            Err(err) if err.api().is_some_and(|e| (400..500).contains(&e.code())) => {
                client
                    .send(Method::POST, url, form(true), None, MAX_RESPONSE_BYTES)
                    .await
            }
            other => other,
        };
        let body = answer.map_err(|source| match source.api().and_then(OAuthRefusal::of) {
            Some(refusal) => OidcError::Refused {
                url: url.to_owned(),
                refusal,
            },
            None => OidcError::Request {
                what: WHAT,
                url: url.to_owned(),
                source: Box::new(source),
            },
        })?;
        Refreshed::parse(url, &body)
    }
}

/// The cached id-token, if there is one and it has not expired.
fn valid_cached(tokens: &Tokens) -> Result<Option<String>, OidcError> {
    match tokens.id_token.as_deref().filter(|t| !t.is_empty()) {
        Some(token) if still_valid(token, jiff::Timestamp::now().as_second() as f64)? => {
            Ok(Some(token.to_owned()))
        }
        _ => Ok(None),
    }
}

/// An OAuth2 error response: its status, `error` code and `error_description`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OAuthRefusal {
    /// The HTTP status.
    pub status: u16,
    /// The `error` code (`invalid_grant`, `invalid_client`, ...).
    pub error: String,
    /// The `error_description`, if any.
    pub description: Option<String>,
}

impl OAuthRefusal {
    /// The OAuth2 error in a failed answer's body, if it holds one.
    fn of(answer: &kubeclient_machinery::ApiError) -> Option<Self> {
        let body: serde_json::Value = serde_json::from_str(answer.body.as_deref()?).ok()?;
        let text = |name: &str| body.get(name).and_then(serde_json::Value::as_str);
        Some(OAuthRefusal {
            status: answer.code(),
            error: text("error")?.to_owned(),
            description: text("error_description").map(str::to_owned),
        })
    }
}

impl std::fmt::Display for OAuthRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.status, self.error)?;
        match &self.description {
            Some(description) => write!(f, " ({description})"),
            None => Ok(()),
        }
    }
}

/// What a token response gave.
#[derive(Debug, PartialEq)]
struct Refreshed {
    id_token: String,
    refresh_token: Option<String>,
}

impl Refreshed {
    /// Reads a token response: JSON, or a form (as some providers answer).
    fn parse(url: &str, body: &[u8]) -> Result<Self, OidcError> {
        let invalid = |message: &str| OidcError::InvalidResponse {
            url: url.to_owned(),
            message: message.to_owned(),
        };
        let fields: BTreeMap<String, String> =
            match serde_json::from_slice::<BTreeMap<String, serde_json::Value>>(body) {
                Ok(json) => json
                    .into_iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k, v.to_owned())))
                    .collect(),
                Err(_) => form_urlencoded::parse(body).into_owned().collect(),
            };
        let field = |name: &str| fields.get(name).filter(|v| !v.is_empty()).cloned();
        if field("access_token").is_none() {
            return Err(invalid("a token response without an access_token"));
        }
        Ok(Refreshed {
            id_token: field("id_token").ok_or_else(|| OidcError::NoIdToken {
                url: url.to_owned(),
            })?,
            refresh_token: field("refresh_token"),
        })
    }
}

/// Whether `token`'s `exp` is more than [`EXPIRY_MARGIN_SECONDS`] after `now` (client-go
/// reads the claim without verifying the token: the API server verifies it).
fn still_valid(token: &str, now: f64) -> Result<bool, OidcError> {
    let mut parts = token.split('.');
    let (Some(_), Some(payload), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(OidcError::InvalidIdToken("not three dot-separated parts"));
    };
    let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .map_err(|_| OidcError::InvalidIdToken("the payload is not base64url"))?;
    let claims: serde_json::Value = serde_json::from_slice(&payload)
        .map_err(|_| OidcError::InvalidIdToken("the payload is not JSON"))?;
    let expiry = claims
        .get("exp")
        .and_then(serde_json::Value::as_f64)
        .ok_or(OidcError::InvalidIdToken("no numeric exp claim"))?;
    Ok(now + EXPIRY_MARGIN_SECONDS < expiry.trunc())
}

/// Writes the tokens into the first of the target's files that defines its user (the one
/// whose definition won when they were merged), through a temporary file and a rename so
/// a crash never leaves half a kubeconfig.
fn persist(target: &OidcPersistTarget, tokens: &Tokens) -> Result<(), OidcError> {
    for path in &target.files {
        let failed = |source: std::io::Error| OidcError::Persist {
            path: path.clone(),
            source,
        };
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        let Ok(mut document) = serde_saphyr::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        let Some(settings) = user_provider_config(&mut document, &target.user) else {
            continue;
        };
        for (key, value) in [
            ("id-token", &tokens.id_token),
            ("refresh-token", &tokens.refresh_token),
        ] {
            if let Some(value) = value {
                settings.insert(key.to_owned(), serde_json::Value::String(value.clone()));
            }
        }
        let yaml = serde_saphyr::to_string(&document)
            .map_err(|err| failed(std::io::Error::other(err.to_string())))?;
        let temporary = path.with_extension(format!("oidc-{}.tmp", std::process::id()));
        std::fs::write(&temporary, yaml).map_err(failed)?;
        if let Ok(metadata) = std::fs::metadata(path) {
            let _ = std::fs::set_permissions(&temporary, metadata.permissions());
        }
        return std::fs::rename(&temporary, path).map_err(|err| {
            let _ = std::fs::remove_file(&temporary);
            failed(err)
        });
    }
    tracing::debug!(user = %target.user, "no kubeconfig file defines the user: the refreshed oidc tokens are kept in memory only");
    Ok(())
}

/// `users[name == user].user.auth-provider.config` of a kubeconfig document.
fn user_provider_config<'a>(
    document: &'a mut serde_json::Value,
    user: &str,
) -> Option<&'a mut serde_json::Map<String, serde_json::Value>> {
    let entry = document
        .get_mut("users")?
        .as_array_mut()?
        .iter_mut()
        .find(|u| u.get("name").and_then(serde_json::Value::as_str) == Some(user))?;
    let provider = entry
        .get_mut("user")?
        .get_mut("auth-provider")?
        .as_object_mut()?;
    provider
        .entry("config")
        .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()))
        .as_object_mut()
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;

    use super::{OidcError, Refreshed, still_valid};

    fn jwt(payload: &str) -> String {
        let encode = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        format!("{}.{}.sig", encode(r#"{"alg":"RS256"}"#), encode(payload))
    }

    #[test]
    fn an_id_token_is_valid_until_ten_seconds_before_its_expiry() {
        let token = jwt(r#"{"exp": 1000}"#);
        assert!(still_valid(&token, 989.0).unwrap());
        assert!(!still_valid(&token, 990.0).unwrap());
        assert!(!still_valid(&token, 2000.0).unwrap());
        assert!(
            still_valid(&jwt(r#"{"exp": 1000.9}"#), 989.0).unwrap(),
            "a float exp"
        );
    }

    #[test]
    fn tokens_that_are_not_jwts_are_errors_never_panics() {
        for token in [
            String::new(),
            "a.b".to_owned(),
            "a.b.c.d".to_owned(),
            "a.!!!.c".to_owned(),
            jwt("not json"),
            jwt(r#"{"exp": "tomorrow"}"#),
            jwt(r#"{"sub": "alice"}"#),
        ] {
            assert!(
                matches!(still_valid(&token, 0.0), Err(OidcError::InvalidIdToken(_))),
                "{token:?}"
            );
        }
    }

    #[test]
    fn token_responses_as_json_or_form_and_without_what_they_need() {
        let json = br#"{"access_token":"a","token_type":"Bearer","id_token":"i2","refresh_token":"r2","expires_in":3600}"#;
        assert_eq!(
            Refreshed::parse("u", json).unwrap(),
            Refreshed {
                id_token: "i2".into(),
                refresh_token: Some("r2".into())
            }
        );
        let form = b"access_token=a&id_token=i3";
        assert_eq!(
            Refreshed::parse("u", form).unwrap(),
            Refreshed {
                id_token: "i3".into(),
                refresh_token: None
            }
        );
        assert!(matches!(
            Refreshed::parse("u", br#"{"access_token":"a"}"#),
            Err(OidcError::NoIdToken { .. })
        ));
        assert!(matches!(
            Refreshed::parse("u", br#"{"id_token":"i"}"#),
            Err(OidcError::InvalidResponse { .. })
        ));
        assert!(Refreshed::parse("u", &[0xff; 64]).is_err());
    }
}
