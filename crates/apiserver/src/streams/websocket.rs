//! The WebSocket upgrade of `pods/exec`, `pods/attach` and `pods/portforward`: checking the
//! handshake, negotiating the subprotocol, and the channel writer sessions share.
//!
//! Rules, as kube-apiserver and the kubelet apply them (docs/STREAMS.md has the details):
//! a request that is not a WebSocket upgrade gets 400 `Upgrade request required`; a
//! WebSocket request offering none of the supported subprotocols gets 400 naming them
//! (client-go then reports an upgrade failure); the subprotocol chosen is the client's
//! first one the server supports. SPDY upgrades of exec and attach are refused the same
//! way (only port-forward speaks SPDY, in `port_forward_spdy`, because kubectl needs it).

use std::time::Duration;

use bytes::Bytes;
use futures_util::SinkExt as _;
use futures_util::stream::{SplitSink, SplitStream};
use http::header::{CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_PROTOCOL};
use http::header::{SEC_WEBSOCKET_VERSION, UPGRADE};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use hyper::upgrade::{OnUpgrade, Upgraded};
use hyper_util::rt::TokioIo;
use kubeclient_machinery::Status;
use tokio::io::AsyncWriteExt as _;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};

use crate::response::{Body, HandlerResult, fail, full};

/// An upgraded connection speaking WebSocket.
pub(crate) type Socket = WebSocketStream<TokioIo<Upgraded>>;
/// The receiving half of a [`Socket`].
pub(crate) type Incoming = SplitStream<Socket>;
/// The sending half of a [`Socket`].
pub(crate) type Outgoing = SplitSink<Socket, Message>;

/// The largest message a client may send (stdin chunks, resize events, forwarded bytes).
/// kubectl sends at most 32 KiB at a time; anything far larger is refused by tungstenite
/// and ends the session, which bounds the memory one client can pin.
pub(crate) const MAX_INCOMING_MESSAGE: usize = 1024 * 1024;

/// The largest payload the server puts in one message.
pub(crate) const MAX_OUTGOING_CHUNK: usize = 32 * 1024;

/// How many outgoing messages may queue before a producer waits (so a client that stops
/// reading stops the command, instead of growing the server's memory).
const OUTGOING_QUEUE: usize = 16;

/// A handshake that passed: the chosen subprotocol, the 101 answer, and the upgrade.
pub(crate) struct Accepted {
    /// The subprotocol both sides speak.
    pub(crate) protocol: &'static str,
    /// The `101 Switching Protocols` answer to send.
    pub(crate) response: Response<Body>,
    /// Resolves to the raw connection once the answer is sent.
    pub(crate) upgrade: OnUpgrade,
}

/// Checks a WebSocket upgrade request and picks a subprotocol from `supported`.
///
/// # Errors
///
/// 400 BadRequest for a request that is not a WebSocket upgrade, lacks a key, names
/// another WebSocket version, or offers none of `supported`.
pub(crate) fn accept<B>(
    request: &mut Request<B>,
    supported: &[&'static str],
) -> HandlerResult<Accepted> {
    let headers = request.headers();
    let is_websocket = headers
        .get(UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("websocket"));
    let connection_upgrade = headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|token| token.trim().eq_ignore_ascii_case("upgrade"));
    if !is_websocket || !connection_upgrade || request.method() != Method::GET {
        let spdy = headers
            .get(UPGRADE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.to_ascii_lowercase().starts_with("spdy"));
        let message = if spdy {
            "Upgrade request required: this server streams exec and attach over WebSockets only (SPDY/3.1 is not supported here); use a client that speaks v5.channel.k8s.io".to_owned()
        } else {
            "Upgrade request required".to_owned()
        };
        return Err(fail(Status::bad_request(message)));
    }
    if headers
        .get(SEC_WEBSOCKET_VERSION)
        .is_none_or(|v| v.as_bytes() != b"13")
    {
        return Err(fail(Status::bad_request(
            "websocket: unsupported version: 13 not found in 'Sec-Websocket-Version' header",
        )));
    }
    let Some(key) = headers.get(SEC_WEBSOCKET_KEY).map(HeaderValue::as_bytes) else {
        return Err(fail(Status::bad_request(
            "websocket: not a websocket handshake: 'Sec-WebSocket-Key' header is missing",
        )));
    };
    let accept_key = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key);
    let offered: Vec<String> = headers
        .get_all(SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect();
    let Some(protocol) = offered
        .iter()
        .find_map(|p| supported.iter().copied().find(|s| s == p))
    else {
        let spdy = if offered
            .iter()
            .any(|p| p.to_ascii_lowercase().starts_with("spdy/"))
        {
            " (SPDY tunnelled over WebSockets is not supported by this server; port-forward accepts plain SPDY/3.1)"
        } else {
            ""
        };
        return Err(fail(Status::bad_request(format!(
            "requested protocol(s) are not supported: {offered:?}; supports {supported:?}{spdy}"
        ))));
    };
    let upgrade = hyper::upgrade::on(&mut *request);
    let mut response = Response::new(full(Bytes::new()));
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let out = response.headers_mut();
    out.insert(UPGRADE, HeaderValue::from_static("websocket"));
    out.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    out.insert(SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static(protocol));
    if let Ok(value) = HeaderValue::from_str(&accept_key) {
        out.insert(SEC_WEBSOCKET_ACCEPT, value);
    }
    Ok(Accepted {
        protocol,
        response,
        upgrade,
    })
}

/// Waits for the upgrade and wraps the connection as a server-side WebSocket.
pub(crate) async fn open(upgrade: OnUpgrade) -> Option<Socket> {
    match upgrade.await {
        Ok(upgraded) => {
            let config = WebSocketConfig::default()
                .max_message_size(Some(MAX_INCOMING_MESSAGE))
                .max_frame_size(Some(MAX_INCOMING_MESSAGE));
            Some(
                WebSocketStream::from_raw_socket(
                    TokioIo::new(upgraded),
                    Role::Server,
                    Some(config),
                )
                .await,
            )
        }
        Err(err) => {
            tracing::debug!(%err, "the WebSocket upgrade did not complete");
            None
        }
    }
}

/// Sends channel messages to the client from any task, in order, with backpressure.
#[derive(Clone, Debug)]
pub(crate) struct ChannelWriter {
    messages: mpsc::Sender<Message>,
}

/// The client is gone (or the session is ending): nothing more can be sent.
#[derive(Debug)]
pub(crate) struct Gone;

impl ChannelWriter {
    /// Starts the task that owns the sending half of `sink`. It ends after sending a
    /// close frame or when every writer is dropped, handing the half back for
    /// [`finish`], or when the client goes away.
    pub(crate) fn spawn(mut sink: Outgoing) -> (ChannelWriter, JoinHandle<Option<Outgoing>>) {
        let (messages, mut queue) = mpsc::channel::<Message>(OUTGOING_QUEUE);
        let task = tokio::spawn(async move {
            while let Some(message) = queue.recv().await {
                let closing = matches!(message, Message::Close(_));
                if let Err(err) = sink.send(message).await {
                    tracing::debug!(%err, "stream client went away");
                    return None;
                }
                if closing {
                    break;
                }
            }
            Some(sink)
        });
        (ChannelWriter { messages }, task)
    }

    /// Writes `data` on `channel`, split into messages of at most [`MAX_OUTGOING_CHUNK`].
    /// An empty `data` sends one empty message (the "ready" signal).
    ///
    /// # Errors
    ///
    /// [`Gone`] when the client went away.
    pub(crate) async fn write(&self, channel: u8, data: &[u8]) -> Result<(), Gone> {
        if data.is_empty() {
            return self.send(vec![channel]).await;
        }
        for chunk in data.chunks(MAX_OUTGOING_CHUNK) {
            self.send(kubeclient_machinery::stream_protocol::encode_frame(
                channel, chunk,
            ))
            .await?;
        }
        Ok(())
    }

    async fn send(&self, message: Vec<u8>) -> Result<(), Gone> {
        self.messages
            .send(Message::Binary(Bytes::from(message)))
            .await
            .map_err(|_| Gone)
    }

    /// Starts the closing handshake with `code` and a reason (at most 123 bytes).
    pub(crate) async fn close(&self, code: CloseCode, reason: &str) {
        let mut cut = reason.len().min(120);
        while !reason.is_char_boundary(cut) {
            cut -= 1;
        }
        let frame = CloseFrame {
            code,
            reason: reason[..cut].to_owned().into(),
        };
        // Bounded: a client that stopped reading must not hold the session forever.
        let _ = self
            .messages
            .send_timeout(Message::Close(Some(frame)), Duration::from_secs(5))
            .await;
    }
}

/// How long ending a connection cleanly may take.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// Ends a session's connection: waits for the writer task to hand its half back, then,
/// with the receiving half, completes the closing handshake and shuts the connection
/// down (a TLS close_notify, then FIN), so the client sees a clean end rather than a
/// reset. Without both halves (a broken client) the connection is just dropped.
pub(crate) async fn finish(
    mut writer_task: JoinHandle<Option<Outgoing>>,
    incoming: Option<Incoming>,
) {
    let sink = match tokio::time::timeout(SHUTDOWN_WAIT, &mut writer_task).await {
        Ok(Ok(sink)) => sink,
        Ok(Err(_)) => None,
        Err(_) => {
            writer_task.abort();
            None
        }
    };
    let (Some(sink), Some(incoming)) = (sink, incoming) else {
        return;
    };
    let Ok(mut socket) = sink.reunite(incoming) else {
        return;
    };
    let _ = tokio::time::timeout(SHUTDOWN_WAIT, async {
        let _ = socket.close(None).await;
        let _ = socket.get_mut().shutdown().await;
    })
    .await;
}
