//! [`PlainClient`]: requests to endpoints that are not the API server (an OpenID provider's
//! discovery document and token endpoint), with the same TLS and proxy handling as
//! [`Client`](super::Client) but none of its API-server machinery: no authenticator, no
//! rate limit, no retries, a bounded body.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Method, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use kubeclient_machinery::ApiError;

use super::client::{HttpClient, http_client};
use super::tls::client_config;
use crate::config::Config;
use crate::error::{Error, Result};

/// How long one request may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// An HTTP(S) client for one set of trusted roots.
pub(crate) struct PlainClient {
    http: HttpClient,
}

impl PlainClient {
    /// A client trusting `config`'s roots (its `cluster_url` picks the proxy).
    pub(crate) fn new(config: &Config) -> Result<Self> {
        Ok(PlainClient {
            http: http_client(config, client_config(config, None)?, true)?,
        })
    }

    /// Sends a request and returns the body of a 2xx answer, at most `max_body` bytes.
    ///
    /// # Errors
    ///
    /// [`Error::Api`] for any other status (keeping the start of the body), transport
    /// errors, [`Error::Timeout`].
    pub(crate) async fn send(
        &self,
        method: Method,
        url: &str,
        body: Option<(Bytes, &'static str)>,
        authorization: Option<HeaderValue>,
        max_body: usize,
    ) -> Result<Bytes> {
        let mut builder = http::Request::builder()
            .method(method.clone())
            .uri(url)
            .header(header::ACCEPT, "application/json");
        if let Some(value) = authorization {
            builder = builder.header(header::AUTHORIZATION, value);
        }
        let (bytes, content_type) = body.unwrap_or_default();
        if !content_type.is_empty() {
            builder = builder.header(header::CONTENT_TYPE, content_type);
        }
        let request = builder
            .body(Full::new(bytes))
            .map_err(|err| Error::InvalidRequest(format!("{url}: {err}")))?;
        let exchange = async {
            let response = self
                .http
                .request(request)
                .await
                .map_err(|err| Error::transport(url, err))?;
            let status = response.status();
            let body = Limited::new(response.into_body(), max_body)
                .collect()
                .await
                .map_err(|err| Error::transport(url, err))?
                .to_bytes();
            Ok::<(StatusCode, Bytes), Error>((status, body))
        };
        let (status, body) = tokio::time::timeout(TIMEOUT, exchange)
            .await
            .map_err(|_| Error::Timeout {
                url: url.to_owned(),
                seconds: TIMEOUT.as_secs(),
            })??;
        if status.is_success() {
            Ok(body)
        } else {
            Err(ApiError::from_response(status.as_u16(), method.as_str(), &body, None).into())
        }
    }
}
