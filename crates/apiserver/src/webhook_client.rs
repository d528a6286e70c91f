//! The outbound call of a webhook, admission or CRD conversion (kube-apiserver's
//! `util/webhook` client): where a `clientConfig` points ([`Endpoint`]), one HTTPS POST
//! of a JSON body, the server's certificate verified against the webhook's `caBundle`
//! (the system's roots without one), within a deadline, with a bounded answer. Errors
//! read as Go's `net/http` client's do (`Post "URL": ...`), since kube-apiserver puts
//! them in its messages.

use std::net::SocketAddr;
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use base64::Engine;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

/// The largest answer read from a webhook (an AdmissionReview with a patch of a large
/// object; kube-apiserver's request limit is 3 MiB, and a review holds two objects).
pub(crate) const MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;

/// kube-apiserver's deadline of a CRD conversion webhook call (fixed upstream; the
/// builder's `conversion_webhook_timeout` shortens it for tests).
pub(crate) const CONVERSION_TIMEOUT: Duration = Duration::from_secs(30);

/// How the server may call webhooks (admission and CRD conversion).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WebhookPolicy {
    /// Whether webhooks off loopback may be called (default: loopback only).
    pub(crate) allow_remote: bool,
    /// The deadline of a CRD conversion webhook call (default [`CONVERSION_TIMEOUT`]).
    pub(crate) conversion_timeout: Duration,
}

impl Default for WebhookPolicy {
    fn default() -> Self {
        WebhookPolicy {
            allow_remote: false,
            conversion_timeout: CONVERSION_TIMEOUT,
        }
    }
}

/// Where a webhook is called: its `clientConfig`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// `clientConfig.url`.
    Url(String),
    /// `clientConfig.service`: there is no cluster network, so a service is called on
    /// loopback at its port, and its certificate must name `<name>.<namespace>.svc`, as
    /// in a cluster.
    Service {
        /// `namespace`.
        namespace: String,
        /// `name`.
        name: String,
        /// `path` (default `/`).
        path: String,
        /// `port` (default 443).
        port: u16,
    },
}

fn text<'a>(value: &'a serde_json::Value, field: &str) -> &'a str {
    value
        .get(field)
        .and_then(serde_json::Value::as_str)
        .unwrap_or("")
}

impl Endpoint {
    /// The endpoint a `clientConfig` names (read leniently: its validation ran when it
    /// was written), `None` when it names neither a URL nor a service.
    pub(crate) fn of_client_config(client: &serde_json::Value) -> Option<Endpoint> {
        if let Some(url) = client.get("url").and_then(serde_json::Value::as_str) {
            return Some(Endpoint::Url(url.to_owned()));
        }
        let service = client.get("service").filter(|s| s.is_object())?;
        let path = text(service, "path");
        Some(Endpoint::Service {
            namespace: text(service, "namespace").to_owned(),
            name: text(service, "name").to_owned(),
            path: if path.is_empty() { "/" } else { path }.to_owned(),
            port: service
                .get("port")
                .and_then(serde_json::Value::as_u64)
                .and_then(|p| u16::try_from(p).ok())
                .unwrap_or(443),
        })
    }
}

/// A `clientConfig`'s `caBundle`, decoded from base64 (PEM); empty when absent or not
/// base64.
pub(crate) fn ca_bundle_of(client: &serde_json::Value) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(text(client, "caBundle"))
        .unwrap_or_default()
}

/// One webhook call.
#[derive(Clone, Debug)]
pub(crate) struct WebhookRequest {
    /// The URL as the messages show it (`https://host:port/path?timeout=10s`).
    pub(crate) url: String,
    /// The host the certificate must name (the URL's host, or `<service>.<namespace>.svc`
    /// for a service reference).
    pub(crate) server_name: String,
    /// Where to connect: `host:port` to resolve.
    pub(crate) connect_to: String,
    /// The path and query sent.
    pub(crate) path_and_query: String,
    /// The PEM certificates trusted for the server (the `caBundle`); empty: the
    /// system's roots.
    pub(crate) ca_bundle: Vec<u8>,
    /// The JSON body.
    pub(crate) body: Vec<u8>,
    /// The whole call's deadline (connect, handshake, request, answer).
    pub(crate) timeout: Duration,
    /// Whether hosts off loopback may be called.
    pub(crate) allow_remote: bool,
}

/// Why a call gave no answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CallError {
    /// The TLS client could not be built (a `caBundle` without certificates).
    #[error("{0}")]
    Client(String),
    /// The request failed: connect, TLS, HTTP, the deadline (`Post "URL": ...`).
    #[error("Post \"{url}\": {reason}")]
    Transport {
        /// The URL.
        url: String,
        /// What went wrong, in Go's words where it has them.
        reason: String,
    },
    /// The webhook answered with a status other than 2xx.
    #[error("{message}")]
    Status {
        /// The HTTP status.
        code: u16,
        /// client-go's message for it.
        message: String,
    },
}

impl WebhookRequest {
    /// The call of `endpoint` with `body`, trusting `ca_bundle`, within `timeout` (also
    /// sent as the `?timeout=` query, as client-go does).
    ///
    /// # Errors
    ///
    /// Why no request can be made (kube-apiserver's `could not get REST client: `
    /// follows): no endpoint, or a URL that does not parse.
    pub(crate) fn to(
        endpoint: Option<&Endpoint>,
        ca_bundle: &[u8],
        body: Vec<u8>,
        timeout: Duration,
        allow_remote: bool,
    ) -> Result<WebhookRequest, String> {
        let (base, server_name, connect_to, path) = match endpoint {
            Some(Endpoint::Url(url)) => {
                let uri: http::Uri = url.parse().map_err(|err| format!("parse {url:?}: {err}"))?;
                let host = uri.host().unwrap_or("").trim_matches(['[', ']']).to_owned();
                let port = uri.port_u16().unwrap_or(443);
                let path = match uri.path() {
                    "" => "/".to_owned(),
                    path => path.to_owned(),
                };
                let connect_to = if host.contains(':') {
                    format!("[{host}]:{port}")
                } else {
                    format!("{host}:{port}")
                };
                (url.trim_end_matches('/').to_owned(), host, connect_to, path)
            }
            Some(Endpoint::Service {
                namespace,
                name,
                path,
                port,
            }) => {
                let host = format!("{name}.{namespace}.svc");
                (
                    format!("https://{host}:{port}{}", path.trim_end_matches('/')),
                    host,
                    format!("127.0.0.1:{port}"),
                    path.clone(),
                )
            }
            None => return Err("neither url nor service is set".to_owned()),
        };
        let query = format!("?timeout={}s", timeout.as_secs());
        let url = if path == "/" {
            format!("{base}/{query}")
        } else {
            format!("{base}{query}")
        };
        Ok(WebhookRequest {
            url,
            server_name,
            connect_to,
            path_and_query: format!("{path}{query}"),
            ca_bundle: ca_bundle.to_vec(),
            body,
            timeout,
            allow_remote,
        })
    }
}

impl CallError {
    fn transport(request: &WebhookRequest, reason: impl Into<String>) -> Self {
        CallError::Transport {
            url: request.url.clone(),
            reason: reason.into(),
        }
    }
}

/// The TLS configuration trusting `ca_bundle` (PEM), or the system's roots when empty.
fn tls_config(ca_bundle: &[u8]) -> Result<rustls::ClientConfig, CallError> {
    let mut roots = rustls::RootCertStore::empty();
    if ca_bundle.iter().all(u8::is_ascii_whitespace) {
        for certificate in rustls_native_certs::load_native_certs().certs {
            // An unusable system certificate is skipped, as Go's SystemCertPool does.
            let _ = roots.add(certificate);
        }
    } else {
        let mut found = 0usize;
        for certificate in CertificateDer::pem_slice_iter(ca_bundle) {
            let certificate = certificate.map_err(|_| {
                CallError::Client(
                    "unable to load root certificates: unable to parse bytes as PEM block"
                        .to_owned(),
                )
            })?;
            roots.add(certificate).map_err(|err| {
                CallError::Client(format!("unable to load root certificates: {err}"))
            })?;
            found += 1;
        }
        if found == 0 {
            return Err(CallError::Client(
                "unable to load root certificates: unable to parse bytes as PEM block".to_owned(),
            ));
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| CallError::Client(err.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// Go's words for a TLS failure, where it has them.
fn tls_reason(err: &std::io::Error) -> String {
    let text = err.to_string();
    if text.contains("UnknownIssuer") {
        "tls: failed to verify certificate: x509: certificate signed by unknown authority"
            .to_owned()
    } else if text.contains("NotValidForName") || text.contains("NotValidForNameContext") {
        format!(
            "tls: failed to verify certificate: x509: certificate is not valid for the host ({text})"
        )
    } else {
        format!("tls: {text}")
    }
}

/// Resolves `connect_to`, refusing addresses off loopback unless allowed.
async fn resolve(request: &WebhookRequest) -> Result<Vec<SocketAddr>, CallError> {
    let addresses: Vec<SocketAddr> = tokio::net::lookup_host(request.connect_to.as_str())
        .await
        .map_err(|err| {
            CallError::transport(
                request,
                format!("dial tcp: lookup {}: {err}", request.connect_to),
            )
        })?
        .collect();
    if addresses.is_empty() {
        return Err(CallError::transport(
            request,
            format!("dial tcp: lookup {}: no such host", request.connect_to),
        ));
    }
    if !request.allow_remote && addresses.iter().any(|a| !a.ip().is_loopback()) {
        return Err(CallError::transport(
            request,
            format!(
                "dial tcp {}: the embedded server calls webhooks on loopback addresses only",
                request.connect_to
            ),
        ));
    }
    Ok(addresses)
}

/// Connects, shakes hands, posts and reads the answer, without a deadline of its own.
async fn exchange(request: &WebhookRequest) -> Result<Bytes, CallError> {
    let config = tls_config(&request.ca_bundle)?;
    let server_name = ServerName::try_from(request.server_name.clone())
        .map_err(|err| CallError::transport(request, format!("invalid host: {err}")))?;
    let addresses = resolve(request).await?;
    let mut last_error = None;
    let mut stream = None;
    for address in &addresses {
        match tokio::net::TcpStream::connect(address).await {
            Ok(connected) => {
                stream = Some(connected);
                break;
            }
            Err(err) => last_error = Some((address, err)),
        }
    }
    let stream = match (stream, last_error) {
        (Some(stream), _) => stream,
        (None, Some((address, err))) => {
            let reason = if err.kind() == std::io::ErrorKind::ConnectionRefused {
                "connect: connection refused".to_owned()
            } else {
                err.to_string()
            };
            return Err(CallError::transport(
                request,
                format!("dial tcp {address}: {reason}"),
            ));
        }
        (None, None) => return Err(CallError::transport(request, "dial tcp: no address")),
    };
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tls = connector
        .connect(server_name, stream)
        .await
        .map_err(|err| CallError::transport(request, tls_reason(&err)))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|err| CallError::transport(request, err.to_string()))?;
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    let post = http::Request::post(request.path_and_query.as_str())
        .header(http::header::HOST, request.server_name.as_str())
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json, */*")
        .body(Full::new(Bytes::from(request.body.clone())))
        .map_err(|err| CallError::transport(request, err.to_string()))?;
    let result = async {
        let response = sender
            .send_request(post)
            .await
            .map_err(|err| CallError::transport(request, closed_reason(&err)))?;
        let code = response.status().as_u16();
        let text_body = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/"));
        let body = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
            .collect()
            .await
            .map_err(|err| {
                let reason = if err
                    .downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some()
                {
                    format!("the answer is larger than {MAX_RESPONSE_BYTES} bytes")
                } else {
                    err.to_string()
                };
                CallError::transport(request, reason)
            })?
            .to_bytes();
        if !(200..300).contains(&code) {
            return Err(error_status(code, &body, text_body));
        }
        Ok(body)
    }
    .await;
    driver.abort();
    result
}

/// client-go's error for an answer with an error status: the Status it carries, or
/// the body itself when it is text, else `unknown`.
fn error_status(code: u16, body: &[u8], text_body: bool) -> CallError {
    let status: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    if let Some(message) = status
        .as_ref()
        .filter(|s| s.get("kind").and_then(serde_json::Value::as_str) == Some("Status"))
        .and_then(|s| s.get("message"))
        .and_then(serde_json::Value::as_str)
    {
        return CallError::Status {
            code,
            message: message.to_owned(),
        };
    }
    let shown = if text_body {
        String::from_utf8_lossy(&body[..body.len().min(1024)])
            .trim()
            .to_owned()
    } else {
        "unknown".to_owned()
    };
    CallError::Status {
        code,
        message: format!(
            "an error on the server ({shown:?}) has prevented the request from succeeding"
        ),
    }
}

/// Go's words for a connection that ended before its answer.
fn closed_reason(err: &hyper::Error) -> String {
    if err.is_incomplete_message() || err.is_canceled() || err.is_closed() {
        "EOF".to_owned()
    } else {
        err.to_string()
    }
}

/// Posts the request and returns the answer's body (2xx only), within its deadline.
///
/// # Errors
///
/// [`CallError`] for a call that gave no usable answer: the deadline passed (`context
/// deadline exceeded`), the server could not be reached or verified, it answered with
/// an error status, or its answer was too large.
pub(crate) async fn post(request: WebhookRequest) -> Result<Bytes, CallError> {
    match tokio::time::timeout(request.timeout, exchange(&request)).await {
        Ok(result) => result,
        Err(_) => Err(CallError::transport(&request, "context deadline exceeded")),
    }
}

/// Runs the calls on the current runtime and waits for them, each within its deadline
/// (and a little more: the call itself enforces it), for callers that may block: the
/// store runs on the blocking pool. On a runtime worker the wait goes through
/// `block_in_place`, so the runtime keeps serving (a webhook of this very process
/// among others).
pub(crate) fn post_blocking(requests: Vec<WebhookRequest>) -> Vec<Result<Bytes, CallError>> {
    use tokio::runtime::{Handle, RuntimeFlavor};
    let expired =
        |request: &WebhookRequest| Err(CallError::transport(request, "context deadline exceeded"));
    let mut results: Vec<Result<Bytes, CallError>> = requests.iter().map(expired).collect();
    let Ok(handle) = Handle::try_current() else {
        return requests
            .iter()
            .map(|request| {
                Err(CallError::transport(
                    request,
                    "no runtime to call webhooks on",
                ))
            })
            .collect();
    };
    let longest = requests
        .iter()
        .map(|request| request.timeout)
        .max()
        .unwrap_or_default();
    let deadline = Instant::now() + longest + Duration::from_secs(1);
    let (sender, receiver) = mpsc::channel();
    for (index, request) in requests.into_iter().enumerate() {
        let sender = sender.clone();
        handle.spawn(async move {
            let _ = sender.send((index, post(request).await));
        });
    }
    drop(sender);
    let mut wait = || {
        let mut pending = results.len();
        while pending > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            match receiver.recv_timeout(left) {
                Ok((index, result)) => {
                    if let Some(slot) = results.get_mut(index) {
                        *slot = result;
                    }
                    pending -= 1;
                }
                Err(_) => break,
            }
        }
    };
    if handle.runtime_flavor() == RuntimeFlavor::MultiThread {
        tokio::task::block_in_place(wait);
    } else {
        wait();
    }
    results
}
