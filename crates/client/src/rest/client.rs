//! [`Client`]: the HTTP client every API call goes through: TLS, HTTP/2, authentication,
//! client-side rate limiting, retries on 429/503 with `Retry-After`, gzip, `Warning`
//! headers, and Status errors.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{
    ACCEPT, ACCEPT_ENCODING, AUTHORIZATION, CONTENT_ENCODING, CONTENT_TYPE, RETRY_AFTER, USER_AGENT,
};
use http::{HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use kubeclient_machinery::ApiError;
use serde::de::DeserializeOwned;

use super::auth::Authenticator;
use super::cert_rotation::Transports;
use super::connector::Connector;
use super::gzip::{MAX_INFLATED_BODY, gunzip};
use super::rate_limit::TokenBucket;
use super::request::{JSON, Request};
use crate::config::Config;
use crate::error::{Error, Result};

/// At most this many attempts for a request the server asked us to retry (client-go: 10).
const MAX_ATTEMPTS: u32 = 10;
/// The longest `Retry-After` honoured; longer values are capped.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

pub(super) type HttpClient =
    hyper_util::client::legacy::Client<hyper_rustls::HttpsConnector<Connector>, Full<Bytes>>;

/// A client for one API server as one user. Cheap to clone (shared connection pool).
///
/// # Examples
///
/// ```no_run
/// # async fn run() -> kubeclient::Result<()> {
/// use kubeclient::rest::Request;
///
/// let client = kubeclient::Client::try_default().await?;
/// let version: serde_json::Value = client.request_json(Request::get("/version")).await?;
/// println!("server {}", version["gitVersion"]);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
#[doc(alias = "RESTClient")]
pub struct Client {
    pub(super) inner: Arc<Inner>,
}

#[derive(Debug)]
pub(super) struct Inner {
    /// The connection pools, renewed when the client certificate rotates.
    pub(super) transports: Transports,
    /// `scheme://authority` plus any path prefix, without a trailing slash.
    pub(super) base_url: String,
    pub(super) auth: Authenticator,
    pub(super) limiter: Option<TokenBucket>,
    default_namespace: String,
    pub(super) user_agent: HeaderValue,
    /// The `Impersonate-*` headers of every request (none unless `Config::impersonate`).
    pub(super) impersonation: Vec<(http::HeaderName, HeaderValue)>,
    /// `host:port` of the server, the `host` label of metrics.
    host: String,
    metrics: Option<Arc<dyn super::ClientMetrics>>,
    pub(super) timeout: Option<Duration>,
    watch_idle_margin: Duration,
    content_type: super::ContentType,
}

impl Client {
    /// A client for the configuration kubectl would use ([`Config::infer`]).
    ///
    /// # Errors
    ///
    /// A configuration or TLS error.
    pub async fn try_default() -> Result<Client> {
        Client::new(Config::infer().await?).await
    }

    /// A client for a configuration. An exec plugin that may provide a client certificate
    /// runs once here (and again when the certificate it gave expires). Client
    /// certificates from files ([`Config::client_certificate_files`]) are re-read when the
    /// files change; see [`cert_rotation`](super::cert_rotation).
    ///
    /// # Errors
    ///
    /// [`Error::Tls`] for unusable certificates, [`Error::Exec`] for a failing plugin.
    pub async fn new(config: Config) -> Result<Client> {
        let base_url = config
            .cluster_url
            .to_string()
            .trim_end_matches('/')
            .to_owned();
        let auth = Authenticator::new(&config.credentials, &base_url)?;
        let exec_identity = if config.cluster_url.scheme_str() == Some("https") {
            auth.exec_client_identity().await?
        } else {
            None
        };
        let transports = Transports::new(&config, exec_identity).await?;
        let user_agent = config.user_agent.clone().unwrap_or_else(|| {
            format!(
                "kubeclient/{} ({}/{}) kubernetes/unknown",
                env!("CARGO_PKG_VERSION"),
                std::env::consts::OS,
                std::env::consts::ARCH
            )
        });
        let user_agent = HeaderValue::from_str(&user_agent).map_err(|_| {
            Error::InvalidRequest(format!(
                "Config::user_agent {user_agent:?} is not a valid header value (use visible ASCII)"
            ))
        })?;
        let impersonation = match &config.impersonate {
            Some(impersonate) => impersonate
                .headers()
                .map_err(|err| Error::InvalidRequest(format!("Config::impersonate: {err}")))?,
            None => Vec::new(),
        };
        Ok(Client {
            inner: Arc::new(Inner {
                transports,
                impersonation,
                base_url,
                auth,
                limiter: (config.qps > 0.0).then(|| TokenBucket::new(config.qps, config.burst)),
                default_namespace: config.default_namespace,
                user_agent,
                host: config
                    .cluster_url
                    .authority()
                    .map(ToString::to_string)
                    .unwrap_or_default(),
                metrics: config.metrics.clone(),
                timeout: config.timeout,
                watch_idle_margin: config.watch_idle_margin,
                content_type: config.content_type,
            }),
        })
    }

    /// The namespace of the configuration's context (`default` if none).
    #[must_use]
    pub fn default_namespace(&self) -> &str {
        &self.inner.default_namespace
    }

    /// The server's base URL.
    #[must_use]
    pub fn base_url(&self) -> &str {
        &self.inner.base_url
    }

    /// The encoding of built-in kinds ([`Config::content_type`]).
    #[must_use]
    pub fn content_type(&self) -> super::ContentType {
        self.inner.content_type
    }

    /// How long past its `timeoutSeconds` a silent watch is given up.
    pub(crate) fn watch_idle_margin(&self) -> Duration {
        self.inner.watch_idle_margin
    }

    pub(super) fn url(&self, request: &Request) -> String {
        format!("{}{}", self.inner.base_url, request.path)
    }

    async fn send_once(&self, request: &Request) -> Result<Response<Incoming>> {
        let metrics = self.inner.metrics.as_deref();
        let verb = request.method.as_str();
        if let Some(limiter) = &self.inner.limiter {
            let waiting = tokio::time::Instant::now();
            limiter.acquire().await;
            if let Some(metrics) = metrics {
                metrics.rate_limiter_latency(verb, &self.inner.host, waiting.elapsed());
            }
        }
        let started = tokio::time::Instant::now();
        let response = self.send_unlimited(request).await;
        if let Some(metrics) = metrics {
            metrics.request_latency(verb, &self.inner.host, started.elapsed());
            let code = match &response {
                Ok(response) => response.status().as_u16().to_string(),
                Err(_) => "<error>".to_owned(),
            };
            metrics.request_result(&code, verb, &self.inner.host);
        }
        response
    }

    async fn send_unlimited(&self, request: &Request) -> Result<Response<Incoming>> {
        let url = self.url(request);
        let mut builder = hyper::Request::builder()
            .method(request.method.clone())
            .uri(&url)
            .header(USER_AGENT, self.inner.user_agent.clone())
            .header(ACCEPT, request.accept.as_deref().unwrap_or(JSON));
        if !request.streaming {
            builder = builder.header(ACCEPT_ENCODING, "gzip");
        }
        if let Some(content_type) = request.content_type {
            builder = builder.header(CONTENT_TYPE, content_type);
        }
        if let Some(authorization) = self.inner.auth.header().await? {
            builder = builder.header(AUTHORIZATION, authorization);
        }
        for (name, value) in &self.inner.impersonation {
            builder = builder.header(name, value);
        }
        let http_request = builder
            .body(Full::new(request.body.clone()))
            .map_err(|err| Error::InvalidRequest(format!("{url}: {err}")))?;
        let transport = self.inner.transports.get(&self.inner.auth).await?;
        let response = transport
            .http
            .request(http_request)
            .await
            .map_err(|err| Error::transport(url.clone(), err))?;
        for warning in response.headers().get_all("warning") {
            if let Ok(text) = warning.to_str() {
                tracing::warn!(target: "kubeclient::warning", %url, "{text}");
            }
        }
        Ok(response)
    }

    /// Sends a request: rate-limited, authenticated, retried when the server asks for it
    /// (429 or 5xx with `Retry-After`, up to 10 attempts), re-authenticated once after a
    /// 401 when credentials can be refreshed. Returns the response of a 2xx answer.
    ///
    /// # Errors
    ///
    /// [`Error::Api`] with the server's Status for any other answer; transport errors.
    pub async fn send(&self, request: &Request) -> Result<Response<Incoming>> {
        let mut refreshed = false;
        let mut attempt = 1;
        loop {
            let response = self.send_once(request).await?;
            let status = response.status();
            if status.is_success() {
                return Ok(response);
            }
            let retry_after = response
                .headers()
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok());
            let (parts, body) = response.into_parts();
            let body = collect(body, &parts.headers).await.unwrap_or_default();
            if status == StatusCode::UNAUTHORIZED && !refreshed && self.inner.auth.can_refresh() {
                refreshed = true;
                self.inner.auth.invalidate().await;
                continue;
            }
            let retry = retry_after.and_then(|s| i32::try_from(s).ok());
            let error =
                ApiError::from_response(status.as_u16(), request.method.as_str(), &body, retry);
            // A resourceVersion the server has not reached is the caller's to handle (a
            // reflector relists from ""); retrying the same request only adds delay.
            let retryable = (status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error())
                && !error.is_too_large_resource_version();
            if let (true, Some(seconds)) = (retryable, retry_after)
                && attempt < MAX_ATTEMPTS
            {
                attempt += 1;
                let delay = Duration::from_secs(seconds).min(MAX_RETRY_AFTER);
                tracing::debug!(url = %self.url(request), %status, ?delay, attempt, "retrying as the server asked");
                tokio::time::sleep(delay).await;
                continue;
            }
            return Err(Error::Api(Box::new(error)));
        }
    }

    /// Sends a request and returns the (decompressed) body of the 2xx answer.
    ///
    /// # Errors
    ///
    /// As [`send`](Self::send), plus [`Error::Timeout`].
    pub async fn request_bytes(&self, request: Request) -> Result<Bytes> {
        let url = self.url(&request);
        self.within_timeout(&request, async {
            let response = self.send(&request).await?;
            let (parts, body) = response.into_parts();
            collect(body, &parts.headers)
                .await
                .map_err(|cause| Error::transport(url.clone(), cause))
        })
        .await
    }

    /// Runs `work` within the client's timeout (none for streaming requests).
    pub(crate) async fn within_timeout<T>(
        &self,
        request: &Request,
        work: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        match self.inner.timeout.filter(|_| !request.streaming) {
            Some(limit) => tokio::time::timeout(limit, work).await.unwrap_or_else(|_| {
                Err(Error::Timeout {
                    url: self.url(request),
                    seconds: limit.as_secs(),
                })
            }),
            None => work.await,
        }
    }

    /// Sends a request and returns the answer's `Content-Type` and (decompressed) body
    /// (discovery uses it), within the client's timeout.
    ///
    /// # Errors
    ///
    /// As [`send`](Self::send), plus [`Error::Timeout`].
    pub async fn request_with_content_type(
        &self,
        request: Request,
    ) -> Result<(Option<String>, Bytes)> {
        let url = self.url(&request);
        self.within_timeout(&request, async {
            let response = self.send(&request).await?;
            let (parts, body) = response.into_parts();
            let content_type = parts
                .headers
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let bytes = collect(body, &parts.headers)
                .await
                .map_err(|cause| Error::transport(url.clone(), cause))?;
            Ok((content_type, bytes))
        })
        .await
    }

    /// Sends a request and decodes the answer: JSON, or protobuf when the server answered
    /// `application/vnd.kubernetes.protobuf` (only when the request asked for it).
    ///
    /// # Errors
    ///
    /// As [`request_bytes`](Self::request_bytes), plus [`Error::Decode`].
    pub async fn request_json<T: DeserializeOwned + 'static>(&self, request: Request) -> Result<T> {
        let url = self.url(&request);
        let (content_type, bytes) = self.request_with_content_type(request).await?;
        if super::is_protobuf(content_type.as_deref()) {
            decode_protobuf(&url, &bytes)
        } else {
            decode(&url, &bytes)
        }
    }
}

/// The pooled HTTP client: HTTP/2 by ALPN with keep-alive pings when `http2`, else
/// HTTP/1.1 only (for upgrades).
pub(super) fn http_client(
    config: &Config,
    tls: rustls::ClientConfig,
    http2: bool,
) -> Result<HttpClient> {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(Duration::from_secs(30)));
    let builder = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http();
    let builder = match &config.tls_server_name {
        Some(name) => {
            builder.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(
                rustls::pki_types::ServerName::try_from(name.clone()).map_err(|err| {
                    Error::Tls(format!(
                        "tls-server-name {name:?} is not a valid name: {err}"
                    ))
                })?,
            ))
        }
        None => builder,
    };
    let tcp = Connector::new(http, &config.cluster_url, config.proxy_url.as_deref())?;
    let connector = if http2 {
        builder.enable_http1().enable_http2().wrap_connector(tcp)
    } else {
        builder.enable_http1().wrap_connector(tcp)
    };
    Ok(
        hyper_util::client::legacy::Client::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .http2_keep_alive_interval(Duration::from_secs(30))
            .http2_keep_alive_timeout(Duration::from_secs(15))
            .build(connector),
    )
}

/// Decodes a JSON body into `T`, naming the URL and type on failure.
pub(crate) fn decode<T: DeserializeOwned>(url: &str, bytes: &[u8]) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|err| Error::Decode {
        url: url.to_owned(),
        expected: std::any::type_name::<T>(),
        message: err.to_string(),
    })
}

/// Decodes a protobuf body straight into `T`.
pub(crate) fn decode_protobuf<T: DeserializeOwned + 'static>(url: &str, bytes: &[u8]) -> Result<T> {
    kubeclient_machinery::protobuf::from_protobuf(bytes).map_err(|err| Error::Decode {
        url: url.to_owned(),
        expected: std::any::type_name::<T>(),
        message: kubeclient_machinery::ErrorChain(&err).to_string(),
    })
}

/// Reads a whole body, gunzipping it when the server compressed it.
pub(super) async fn collect(
    body: Incoming,
    headers: &http::HeaderMap,
) -> std::result::Result<Bytes, crate::cache::BoxError> {
    let bytes = body.collect().await?.to_bytes();
    if headers
        .get(CONTENT_ENCODING)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"gzip"))
    {
        Ok(gunzip(&bytes, MAX_INFLATED_BODY).map(Bytes::from)?)
    } else {
        Ok(bytes)
    }
}
