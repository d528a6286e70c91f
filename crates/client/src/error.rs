//! [`Error`]: everything a client call can fail with, grouped by who is at fault.

use std::path::PathBuf;

use kubeclient_machinery::{ApiError, WatchDecodeError};

use crate::cache::BoxError;
use crate::config::{ConfigError, ExecError, OidcError};

/// The error of every client call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server answered with an error Status (404, 409, 410, 422, 429, 5xx ...). Use
    /// the [`ApiError`] predicates (`is_not_found`, `is_conflict` ...) to decide.
    #[error(transparent)]
    Api(Box<ApiError>),
    /// The request never got an answer, or its body broke off: connection refused, TLS
    /// failure, reset, a watch gone silent. Check the server URL and that the server is up;
    /// the cause chain (`source()`) says what happened.
    #[error("request to {url} failed")]
    Transport {
        /// The URL.
        url: String,
        /// What went wrong.
        #[source]
        source: BoxError,
    },
    /// The bearer token file of the configuration could not be read (it is re-read when it
    /// changes, so this can happen on any request).
    #[error("cannot read the bearer token file {path} (check tokenFile in the kubeconfig)")]
    TokenFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// No answer within the configured timeout.
    #[error(
        "request to {url} timed out after {seconds} s (raise Config::timeout for slow servers)"
    )]
    Timeout {
        /// The URL.
        url: String,
        /// The timeout.
        seconds: u64,
    },
    /// The answer could not be decoded as the expected type.
    #[error("cannot decode the response of {url} as {expected}: {message}")]
    Decode {
        /// The URL.
        url: String,
        /// The expected type.
        expected: &'static str,
        /// The decoder's message.
        message: String,
    },
    /// A watch event could not be decoded (the stream goes on).
    #[error(transparent)]
    WatchEvent(#[from] WatchDecodeError),
    /// The configuration is unusable.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// An exec credential plugin failed.
    #[error(transparent)]
    Exec(#[from] ExecError),
    /// The kubeconfig's oidc auth provider has no usable id-token.
    #[error(transparent)]
    Oidc(#[from] OidcError),
    /// The TLS configuration is unusable (bad CA or client certificate).
    #[error("TLS configuration: {0}")]
    Tls(String),
    /// The request could not be built (e.g. a body that does not serialize).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The server answered a WebSocket upgrade (exec, attach, port-forward) with something
    /// that is not a valid WebSocket handshake: a proxy that strips `Upgrade` headers, or
    /// a server that does not speak the offered subprotocols.
    #[error("the server did not upgrade {url} to a WebSocket: {message}")]
    Upgrade {
        /// The URL.
        url: String,
        /// What was wrong with the answer.
        message: String,
    },
    /// An exec, attach, port-forward or log stream broke after it started.
    #[error("stream of {url} failed")]
    Stream {
        /// The URL.
        url: String,
        /// What went wrong.
        #[source]
        source: StreamError,
    },
}

/// How an open stream (exec, attach, port-forward, a followed log) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StreamError {
    /// The connection broke (reset, TLS error, a frame tungstenite refused). The command
    /// may still be running in the container.
    #[error("the connection was lost")]
    ConnectionLost(#[source] tokio_tungstenite::tungstenite::Error),
    /// The server closed the session before reporting the exit status on the error
    /// channel: it was cut off mid-stream (server shutdown, proxy timeout).
    #[error("the connection closed before the exit status arrived (closed mid-stream{})", close_reason(.code, .reason))]
    ClosedWithoutStatus {
        /// The WebSocket close code, if a close frame arrived.
        code: Option<u16>,
        /// The close frame's reason.
        reason: String,
    },
    /// A message that is not part of the channel protocol (a text message, an empty
    /// message, a malformed close signal, a port-forward channel without its port).
    #[error("the server broke the channel protocol")]
    Protocol(#[source] kubeclient_machinery::stream_protocol::FrameError),
    /// Something else the protocol does not allow (named in the message).
    #[error("the server broke the channel protocol: {0}")]
    Unexpected(String),
    /// The error channel carried something that is not a `Status`.
    #[error("the error channel did not carry a Status")]
    BadStatus(#[source] serde_json::Error),
    /// The server reported on a port's error channel that forwarding failed (nothing
    /// listens on the port, the target refused ...).
    #[error("forwarding port {port} failed: {message}")]
    PortForward {
        /// The remote port.
        port: u16,
        /// The server's message.
        message: String,
    },
    /// Reading a log stream failed.
    #[error("reading the body failed: {0}")]
    Body(String),
}

fn close_reason(code: &Option<u16>, reason: &str) -> String {
    match code {
        Some(code) if reason.is_empty() => format!(", close code {code}"),
        Some(code) => format!(", close code {code}: {reason}"),
        None => String::new(),
    }
}

impl Error {
    /// A [`Error::Transport`] for `url` caused by `cause` (an error, or a message).
    pub(crate) fn transport(url: impl Into<String>, cause: impl Into<BoxError>) -> Self {
        Error::Transport {
            url: url.into(),
            source: cause.into(),
        }
    }
}

impl From<ApiError> for Error {
    fn from(err: ApiError) -> Self {
        Error::Api(Box::new(err))
    }
}

impl Error {
    /// The API error, if the server answered with one.
    #[must_use]
    pub fn api(&self) -> Option<&ApiError> {
        match self {
            Error::Api(err) => Some(err.as_ref()),
            _ => None,
        }
    }

    /// Whether retrying later may succeed: transport failures, timeouts, 429, 5xx, and
    /// 410 Expired (after a relist).
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Api(err) => {
                err.is_too_many_requests() || err.code() >= 500 || err.is_gone_or_expired()
            }
            Error::Transport { .. } | Error::Timeout { .. } | Error::WatchEvent(_) => true,
            _ => false,
        }
    }

    /// Whether the request failed because the server refused the connection (nothing
    /// listens at the address: an API server restarting, a load balancer without a
    /// backend), found anywhere in the cause chain. Go's `utilnet.IsConnectionRefused`;
    /// the reflector re-watches from its last resourceVersion on such an error instead of
    /// relisting.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::{Error as IoError, ErrorKind};
    ///
    /// let refused = kubeclient::Error::Transport {
    ///     url: "https://10.0.0.1:6443/api/v1/pods".to_owned(),
    ///     source: Box::new(IoError::from(ErrorKind::ConnectionRefused)),
    /// };
    /// assert!(refused.is_connection_refused());
    /// let reset = kubeclient::Error::Transport {
    ///     url: "https://10.0.0.1:6443/api/v1/pods".to_owned(),
    ///     source: Box::new(IoError::from(ErrorKind::ConnectionReset)),
    /// };
    /// assert!(!reset.is_connection_refused());
    /// ```
    #[must_use]
    pub fn is_connection_refused(&self) -> bool {
        let Error::Transport { source, .. } = self else {
            return false;
        };
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(source.as_ref());
        while let Some(err) = cause {
            if err
                .downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
            {
                return true;
            }
            cause = err.source();
        }
        false
    }

    /// Whether this is a 404 from the server.
    #[must_use]
    pub fn is_not_found(&self) -> bool {
        self.api().is_some_and(ApiError::is_not_found)
    }

    /// Whether this is a 409 Conflict from the server: a write carried an outdated
    /// resourceVersion, a precondition failed or an apply conflicted (what
    /// [`retry_on_conflict`](crate::util::retry::retry_on_conflict) retries; a create whose
    /// name is taken is AlreadyExists, not a conflict).
    #[must_use]
    pub fn is_conflict(&self) -> bool {
        self.api().is_some_and(ApiError::is_conflict)
    }

    /// Whether this is a 403 Forbidden from the server: the user may not do it (RBAC
    /// refused it, or an admission plugin did).
    #[must_use]
    pub fn is_forbidden(&self) -> bool {
        self.api().is_some_and(ApiError::is_forbidden)
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
