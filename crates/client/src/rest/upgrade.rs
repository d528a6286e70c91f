//! WebSocket upgrades (client-go's `transport/websocket`): exec, attach and port-forward
//! open a WebSocket through the client's own transport, so TLS, the CA, client
//! certificates, tokens, exec plugins and proxies apply exactly as for other requests.
//!
//! The upgrade needs HTTP/1.1 (`Connection: Upgrade`); HTTP/2 has no such mechanism (RFC
//! 8441 is not supported by the API server), so these requests go through a second
//! connection pool that offers only `http/1.1` in ALPN.

use bytes::Bytes;
use http::header::{
    AUTHORIZATION, CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_PROTOCOL,
    SEC_WEBSOCKET_VERSION, UPGRADE, USER_AGENT,
};
use http::{HeaderValue, StatusCode};
use http_body_util::Full;
use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use kubeclient_machinery::ApiError;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::client::generate_key;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};

use super::client::{Client, collect};
use super::request::Request;
use crate::error::{Error, Result};

/// The largest message accepted from the server. The API server sends at most 32 KiB of
/// output per message; this bound keeps a misbehaving server from pinning memory.
pub const MAX_STREAM_MESSAGE: usize = 4 * 1024 * 1024;

/// An open WebSocket to the API server and the subprotocol it chose.
#[derive(Debug)]
pub struct WebSocket {
    /// The connection.
    pub stream: WebSocketStream<TokioIo<Upgraded>>,
    /// The subprotocol the server chose (one of those offered).
    pub protocol: String,
    /// The URL, for error messages.
    pub url: String,
}

impl Client {
    /// Opens a WebSocket at `request.path` offering `protocols` (most preferred first),
    /// authenticated and rate-limited like every request (re-authenticating once after a
    /// 401 when the credentials can be refreshed).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run(client: kubeclient::Client) -> kubeclient::Result<()> {
    /// use kubeclient::rest::Request;
    ///
    /// let path = "/api/v1/namespaces/default/pods/web/exec?command=date&stdout=true";
    /// let socket = client.connect_websocket(&Request::get(path), &["v5.channel.k8s.io"]).await?;
    /// assert_eq!(socket.protocol, "v5.channel.k8s.io");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Api`] with the server's Status when it refuses (404 for a missing Pod,
    /// 400 for a bad subprotocol ...); [`Error::Upgrade`] for an answer that is not a
    /// WebSocket handshake; transport errors and [`Error::Timeout`] (the client timeout
    /// covers the handshake only).
    ///
    /// # Cancel safety
    ///
    /// Cancelling drops the half-open connection.
    pub async fn connect_websocket(
        &self,
        request: &Request,
        protocols: &[&str],
    ) -> Result<WebSocket> {
        let url = self.url(request);
        let handshake = async {
            let mut refreshed = false;
            loop {
                match self.handshake_once(&url, protocols).await? {
                    Handshake::Upgraded(socket) => return Ok(socket),
                    Handshake::Unauthorized(_) if !refreshed && self.inner.auth.can_refresh() => {
                        refreshed = true;
                        self.inner.auth.invalidate().await;
                    }
                    Handshake::Unauthorized(error) => return Err(Error::Api(Box::new(error))),
                }
            }
        };
        self.within_timeout(request, handshake).await
    }

    async fn handshake_once(&self, url: &str, protocols: &[&str]) -> Result<Handshake> {
        if let Some(limiter) = &self.inner.limiter {
            limiter.acquire().await;
        }
        let key = generate_key();
        let mut builder = hyper::Request::builder()
            .method(http::Method::GET)
            .uri(url)
            .header(USER_AGENT, self.inner.user_agent.clone())
            .header(CONNECTION, "Upgrade")
            .header(UPGRADE, "websocket")
            .header(SEC_WEBSOCKET_VERSION, "13")
            .header(SEC_WEBSOCKET_KEY, key.as_str())
            .header(SEC_WEBSOCKET_PROTOCOL, protocols.join(", "));
        if let Some(authorization) = self.inner.auth.header().await? {
            builder = builder.header(AUTHORIZATION, authorization);
        }
        for (name, value) in &self.inner.impersonation {
            builder = builder.header(name, value);
        }
        let http_request = builder
            .body(Full::new(Bytes::new()))
            .map_err(|err| Error::InvalidRequest(format!("{url}: {err}")))?;
        let transport = self.inner.transports.get(&self.inner.auth).await?;
        let response = transport
            .upgrade_http
            .request(http_request)
            .await
            .map_err(|err| Error::transport(url, err))?;
        let status = response.status();
        if status != StatusCode::SWITCHING_PROTOCOLS {
            let (parts, body) = response.into_parts();
            let body = collect(body, &parts.headers).await.unwrap_or_default();
            let error = ApiError::from_response(status.as_u16(), "GET", &body, None);
            if status == StatusCode::UNAUTHORIZED {
                return Ok(Handshake::Unauthorized(error));
            }
            return Err(Error::Api(Box::new(error)));
        }
        let upgrade_failed = |message: String| Error::Upgrade {
            url: url.to_owned(),
            message,
        };
        let expected = derive_accept_key(key.as_bytes());
        let accept = response.headers().get(SEC_WEBSOCKET_ACCEPT);
        if accept.map(HeaderValue::as_bytes) != Some(expected.as_bytes()) {
            return Err(upgrade_failed(format!(
                "Sec-WebSocket-Accept is {accept:?}, expected {expected:?} (is a proxy in the way?)"
            )));
        }
        let protocol = response
            .headers()
            .get(SEC_WEBSOCKET_PROTOCOL)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .unwrap_or("")
            .to_owned();
        if !protocols.contains(&protocol.as_str()) {
            return Err(upgrade_failed(format!(
                "the server chose subprotocol {protocol:?}, not one of {protocols:?}"
            )));
        }
        let upgraded = hyper::upgrade::on(response)
            .await
            .map_err(|err| Error::transport(url, err))?;
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_STREAM_MESSAGE))
            .max_frame_size(Some(MAX_STREAM_MESSAGE));
        let stream =
            WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Client, Some(config))
                .await;
        Ok(Handshake::Upgraded(WebSocket {
            stream,
            protocol,
            url: url.to_owned(),
        }))
    }
}

enum Handshake {
    Upgraded(WebSocket),
    Unauthorized(ApiError),
}
