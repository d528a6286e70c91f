//! [`WebhookServer`]: the HTTPS server the API server calls admission and conversion
//! webhooks on (controller-runtime's `webhook.Server`): one path per webhook, the serving certificate
//! read from a directory (`tls.crt`, `tls.key`) and read again when the files change.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use k8s_openapi::Resource;

use super::{
    AdmissionReview, Conversion, ConversionReview, CustomDefaulter, CustomValidator,
    convert_review, default_review, validate_review,
};
use crate::rest::tls::crypto_provider;
use crate::util::accept_loop::AcceptLoop;

/// The largest review read (controller-runtime's limit: 7 MiB).
const MAX_REVIEW_BYTES: usize = 7 * 1024 * 1024;

/// The certificate files in a certificate directory (controller-runtime's names).
const CERT_FILE: &str = "tls.crt";
/// The key file.
const KEY_FILE: &str = "tls.key";
/// The CA certificate of a self-signed serving certificate.
const CA_FILE: &str = "ca.crt";

/// How long a connection may take to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// A route's answer to a request body: the answer's JSON, or a plain refusal.
type Answer = Result<Vec<u8>, (StatusCode, String)>;
type AnswerFuture = Pin<Box<dyn Future<Output = Answer> + Send>>;
type Route = Arc<dyn Fn(Bytes) -> AnswerFuture + Send + Sync>;

/// A route that decodes the body as a review `R` (400 when it is not one, or carries no
/// request) and answers what `handle` makes of it.
fn review_route<R, F>(kind: &'static str, has_request: fn(&R) -> bool, handle: F) -> Route
where
    R: DeserializeOwned + Serialize + Send + 'static,
    F: Fn(R) -> Pin<Box<dyn Future<Output = R> + Send>> + Send + Sync + 'static,
{
    let handle = Arc::new(handle);
    Arc::new(move |body: Bytes| {
        let handle = Arc::clone(&handle);
        Box::pin(async move {
            let review: R = serde_json::from_slice(&body).map_err(|err| {
                (
                    StatusCode::BAD_REQUEST,
                    format!("the body is not a valid {kind}: {err}"),
                )
            })?;
            if !has_request(&review) {
                return Err((
                    StatusCode::BAD_REQUEST,
                    format!("the {kind} has no request"),
                ));
            }
            let answered = handle(review).await;
            serde_json::to_vec(&answered).map_err(|_| {
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the answer does not serialize".to_owned(),
                )
            })
        })
    })
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WebhookServerError {
    /// The serving certificate or key could not be read or used.
    #[error("the webhook serving certificate in {dir}: {message}")]
    Certificate {
        /// The certificate directory.
        dir: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The address could not be bound.
    #[error("the webhook server cannot listen on {address}")]
    Listen {
        /// The address.
        address: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// Builds a [`WebhookServer`].
#[must_use]
pub struct WebhookServerBuilder {
    address: SocketAddr,
    cert_dir: PathBuf,
    routes: HashMap<String, Route>,
    /// The DNS names of a self-signed serving certificate to write when there is none.
    #[cfg(feature = "cert")]
    self_signed: Option<Vec<String>>,
}

impl WebhookServerBuilder {
    /// Listens on `address` (default `0.0.0.0:9443`, controller-runtime's port).
    pub fn address(mut self, address: SocketAddr) -> Self {
        self.address = address;
        self
    }

    /// Reads `tls.crt` and `tls.key` from `dir` (default
    /// `<temp dir>/k8s-webhook-server/serving-certs`, controller-runtime's).
    pub fn cert_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cert_dir = dir.into();
        self
    }

    /// When the certificate directory has no `tls.crt` and `tls.key`, writes a serving
    /// certificate for `dns_names` (and 127.0.0.1) there, signed by a new CA whose
    /// certificate goes to `ca.crt`: what [`WebhookServer::ca_bundle`] hands out for the
    /// webhook configurations' `caBundle`. Files already there are used as they are, so a
    /// restart keeps the same certificate. (In a cluster, cert-manager usually writes
    /// them.)
    #[cfg(feature = "cert")]
    pub fn self_signed(mut self, dns_names: &[&str]) -> Self {
        self.self_signed = Some(dns_names.iter().map(|n| (*n).to_owned()).collect());
        self
    }

    /// Serves a mutating webhook at `path` with `defaulter` (see [`default_review`]).
    pub fn defaulter<K, D>(mut self, path: &str, defaulter: D) -> Self
    where
        K: Serialize + DeserializeOwned + Send + 'static,
        D: CustomDefaulter<K> + 'static,
    {
        let defaulter = Arc::new(defaulter);
        let route = review_route("AdmissionReview", has_admission_request, move |review| {
            let defaulter = Arc::clone(&defaulter);
            Box::pin(async move { default_review(defaulter.as_ref(), review).await })
        });
        self.routes.insert(path.to_owned(), route);
        self
    }

    /// Serves a validating webhook at `path` with `validator` (see [`validate_review`]).
    pub fn validator<K, V>(mut self, path: &str, validator: V) -> Self
    where
        K: DeserializeOwned + Send + Sync + 'static,
        V: CustomValidator<K> + 'static,
    {
        let validator = Arc::new(validator);
        let route = review_route("AdmissionReview", has_admission_request, move |review| {
            let validator = Arc::clone(&validator);
            Box::pin(async move { validate_review(validator.as_ref(), review).await })
        });
        self.routes.insert(path.to_owned(), route);
        self
    }

    /// Serves a CRD's conversion webhook at `path` with `conversion` (see
    /// [`convert_review`]); point the CRD's `spec.conversion.webhook.clientConfig` at it.
    pub fn conversion<H>(mut self, path: &str, conversion: Conversion<H>) -> Self
    where
        H: Resource + Serialize + DeserializeOwned + Send + Sync + 'static,
    {
        let conversion = Arc::new(conversion);
        let route = review_route(
            "ConversionReview",
            |review: &ConversionReview| review.request.is_some(),
            move |review| {
                let conversion = Arc::clone(&conversion);
                Box::pin(async move { convert_review(conversion.as_ref(), review) })
            },
        );
        self.routes.insert(path.to_owned(), route);
        self
    }

    /// Reads the certificate and starts serving.
    ///
    /// # Errors
    ///
    /// [`WebhookServerError`] when the certificate cannot be used or the address bound.
    pub async fn start(self) -> Result<WebhookServer, WebhookServerError> {
        #[cfg(feature = "cert")]
        if let Some(dns_names) = &self.self_signed {
            write_self_signed(&self.cert_dir, dns_names).map_err(|message| {
                WebhookServerError::Certificate {
                    dir: self.cert_dir.clone(),
                    message,
                }
            })?;
        }
        let certificates = Arc::new(CertificateFiles::load(&self.cert_dir)?);
        let mut tls = rustls::ServerConfig::builder_with_provider(Arc::new(crypto_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|err| WebhookServerError::Certificate {
                dir: self.cert_dir.clone(),
                message: err.to_string(),
            })?
            .with_no_client_auth()
            .with_cert_resolver(certificates);
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let listener =
            TcpListener::bind(self.address)
                .await
                .map_err(|source| WebhookServerError::Listen {
                    address: self.address,
                    source,
                })?;
        let address = listener
            .local_addr()
            .map_err(|source| WebhookServerError::Listen {
                address: self.address,
                source,
            })?;
        let routes = Arc::new(self.routes);
        let server = AcceptLoop::spawn(address, |stop| {
            accept_loop(listener, acceptor, routes, stop)
        });
        let ca_bundle = std::fs::read_to_string(self.cert_dir.join(CA_FILE)).ok();
        Ok(WebhookServer { server, ca_bundle })
    }
}

/// Serves admission webhooks over HTTPS until shut down or dropped.
///
/// # Examples
///
/// ```no_run
/// # async fn run() -> Result<(), kubeclient::webhook::WebhookServerError> {
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeclient::webhook::{CustomValidator, WebhookServer};
///
/// struct AnyConfigMap;
/// impl CustomValidator<ConfigMap> for AnyConfigMap {}
///
/// let server = WebhookServer::builder()
///     .cert_dir("/etc/webhook/certs")
///     .validator("/validate-configmaps", AnyConfigMap)
///     .start()
///     .await?;
/// println!("webhooks on https://{}", server.local_addr());
/// # Ok(()) }
/// ```
#[must_use = "dropping the server stops it"]
pub struct WebhookServer {
    server: AcceptLoop,
    ca_bundle: Option<String>,
}

impl WebhookServer {
    /// A builder with controller-runtime's defaults and no webhook yet.
    pub fn builder() -> WebhookServerBuilder {
        WebhookServerBuilder {
            address: SocketAddr::from(([0, 0, 0, 0], 9443)),
            cert_dir: std::env::temp_dir()
                .join("k8s-webhook-server")
                .join("serving-certs"),
            routes: HashMap::new(),
            #[cfg(feature = "cert")]
            self_signed: None,
        }
    }

    /// The PEM of the CA in the certificate directory's `ca.crt` (written by
    /// [`self_signed`](WebhookServerBuilder::self_signed)), for the `caBundle` of the
    /// webhook configurations; `None` when there is none.
    #[must_use]
    pub fn ca_bundle(&self) -> Option<&str> {
        self.ca_bundle.as_deref()
    }

    /// The address it listens on.
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// Stops accepting and waits for the listener to close (requests in flight finish on
    /// their own tasks).
    pub async fn shutdown(self) {
        self.server.shutdown().await;
    }
}

async fn accept_loop(
    listener: TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    routes: Arc<HashMap<String, Route>>,
    stop: CancellationToken,
) {
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else {
            continue;
        };
        let (acceptor, routes) = (acceptor.clone(), Arc::clone(&routes));
        tokio::spawn(async move {
            let Ok(Ok(tls)) = tokio::time::timeout(REQUEST_TIMEOUT, acceptor.accept(stream)).await
            else {
                return;
            };
            let service = hyper::service::service_fn(move |request| {
                let routes = Arc::clone(&routes);
                async move { Ok::<_, std::convert::Infallible>(answer(&routes, request).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(REQUEST_TIMEOUT)
                .serve_connection(TokioIo::new(tls), service)
                .await;
        });
    }
}

/// One request: a review posted as JSON to a webhook's path.
async fn answer(
    routes: &HashMap<String, Route>,
    request: http::Request<Incoming>,
) -> Response<Full<Bytes>> {
    let Some(route) = routes.get(request.uri().path()) else {
        return plain(StatusCode::NOT_FOUND, "no webhook at this path");
    };
    if request.method() != Method::POST {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "webhooks take POST");
    }
    let json = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|t| t.trim() == "application/json")
        });
    if !json {
        return plain(
            StatusCode::BAD_REQUEST,
            "the content type must be application/json",
        );
    }
    let body = match Limited::new(request.into_body(), MAX_REVIEW_BYTES)
        .collect()
        .await
    {
        Ok(body) => body.to_bytes(),
        Err(_) => {
            return plain(
                StatusCode::BAD_REQUEST,
                "the review is larger than 7 MiB or was cut off",
            );
        }
    };
    match route(body).await {
        Ok(bytes) => Response::builder()
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(bytes)))
            .unwrap_or_else(|_| plain(StatusCode::INTERNAL_SERVER_ERROR, "")),
        Err((status, message)) => plain(status, &message),
    }
}

fn has_admission_request(review: &AdmissionReview) -> bool {
    review.request.is_some()
}

fn plain(status: StatusCode, message: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(message.to_owned())));
    *response.status_mut() = status;
    response
}

/// The serving certificate, read again when `tls.crt` or `tls.key` changes (a rotated
/// Secret volume); files that cannot be used keep the previous certificate. The files are
/// compared by content at each TLS handshake (a few KB, far cheaper than the handshake;
/// modification times can be too coarse to see a quick rotation).
#[derive(Debug)]
struct CertificateFiles {
    dir: PathBuf,
    current: Mutex<Loaded>,
}

#[derive(Debug)]
struct Loaded {
    key: Arc<CertifiedKey>,
    /// The files' bytes the key was read from (or last seen, if unusable).
    files: Option<(Vec<u8>, Vec<u8>)>,
}

impl CertificateFiles {
    fn load(dir: &Path) -> Result<Self, WebhookServerError> {
        let files = read_files(dir);
        let key = files
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|(cert, key)| certified_key(cert, key))
            .map_err(|message| WebhookServerError::Certificate {
                dir: dir.to_owned(),
                message,
            })?;
        Ok(CertificateFiles {
            dir: dir.to_owned(),
            current: Mutex::new(Loaded {
                key: Arc::new(key),
                files: files.ok(),
            }),
        })
    }

    fn current(&self) -> Arc<CertifiedKey> {
        let mut loaded = crate::sync::lock(&self.current);
        let files = read_files(&self.dir).ok();
        if files.is_some() && files != loaded.files {
            match files.as_ref().map(|(cert, key)| certified_key(cert, key)) {
                Some(Ok(key)) => loaded.key = Arc::new(key),
                Some(Err(message)) => tracing::warn!(
                    dir = %self.dir.display(),
                    %message,
                    "the webhook serving certificate changed but cannot be used; keeping the previous one"
                ),
                None => {}
            }
            loaded.files = files;
        }
        Arc::clone(&loaded.key)
    }
}

impl ResolvesServerCert for CertificateFiles {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

/// The certificate and key files' bytes.
fn read_files(dir: &Path) -> Result<(Vec<u8>, Vec<u8>), String> {
    let read = |file: &str| {
        std::fs::read(dir.join(file)).map_err(|err| format!("cannot read {file}: {err}"))
    };
    Ok((read(CERT_FILE)?, read(KEY_FILE)?))
}

fn certified_key(cert_pem: &[u8], key_pem: &[u8]) -> Result<CertifiedKey, String> {
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| format!("{CERT_FILE} is not PEM: {err}"))?;
    if chain.is_empty() {
        return Err(format!("{CERT_FILE} holds no certificate"));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem)
        .map_err(|err| format!("{KEY_FILE} is not a PEM private key: {err}"))?;
    CertifiedKey::from_der(chain, key, &crypto_provider())
        .map_err(|err| format!("the certificate and key do not go together: {err}"))
}

/// Writes a CA and a serving certificate for `dns_names` into `dir` unless a certificate
/// and key are there already.
#[cfg(feature = "cert")]
fn write_self_signed(dir: &Path, dns_names: &[String]) -> Result<(), String> {
    use crate::util::cert::{CertConfig, CertificateAuthority, ExtKeyUsage};

    if dir.join(CERT_FILE).exists() && dir.join(KEY_FILE).exists() {
        return Ok(());
    }
    let ca = CertificateAuthority::new_self_signed("kubeclient-webhook-ca")
        .map_err(|err| format!("cannot create a CA: {err}"))?;
    let serving = ca
        .sign(&CertConfig {
            common_name: dns_names
                .first()
                .cloned()
                .unwrap_or_else(|| "webhook".to_owned()),
            dns_names: dns_names.to_vec(),
            ip_addresses: vec![std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)],
            usages: vec![ExtKeyUsage::ServerAuth],
            ..CertConfig::default()
        })
        .map_err(|err| format!("cannot sign the serving certificate: {err}"))?;
    std::fs::create_dir_all(dir).map_err(|err| format!("cannot create it: {err}"))?;
    let write = |file: &str, text: &str| {
        std::fs::write(dir.join(file), text).map_err(|err| format!("cannot write {file}: {err}"))
    };
    write(CA_FILE, ca.cert_pem())?;
    write(KEY_FILE, &serving.key_pem)?;
    write(CERT_FILE, &serving.cert_pem)
}
