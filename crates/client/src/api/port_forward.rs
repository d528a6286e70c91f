//! Port forwarding (client-go's `tools/portforward`, `kubectl port-forward`) over a
//! WebSocket speaking the kubelet's `v4.channel.k8s.io` port-forward protocol: for the
//! i-th requested port, channel `2i` carries data and `2i+1` errors, and the server's
//! first message on each starts with the port (2 bytes, little-endian).
//!
//! One WebSocket carries one connection per port, so [`Api::port_forward`] gives one
//! byte stream per port, and [`Api::forward_local`] opens a new WebSocket for each
//! accepted local connection (what kubectl does with its multiplexed SPDY streams).
//! The protocol has no half-close: when the local side of a forwarded connection closes,
//! the whole forwarded connection ends.

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt as _, StreamExt as _};
use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::Pod;
use kubeclient_machinery::stream_protocol::{self as protocol, Frame, PORT_FORWARD_PROTOCOL_V4};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _, DuplexStream};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;

use super::Api;
use crate::error::{Error, Result, StreamError};
use crate::rest::{Request, WebSocket};

/// Bytes buffered per forwarded port in each direction.
const PIPE_BUFFER: usize = 64 * 1024;

/// The most bytes of a port's error message kept.
const MAX_ERROR_BYTES: usize = 16 * 1024;

/// The most ports in one request (the channel numbers must stay below 255).
pub const MAX_FORWARDED_PORTS: usize = 64;

type Socket = WebSocketStream<TokioIo<Upgraded>>;

/// An open port-forward session: one byte stream per requested port.
///
/// # Examples
///
/// ```no_run
/// # async fn run(pods: kubeclient::Api<k8s_openapi::api::core::v1::Pod>) -> kubeclient::Result<()> {
/// use tokio::io::{AsyncReadExt, AsyncWriteExt};
///
/// let mut forwarder = pods.port_forward("web-0", &[8080]).await?;
/// let mut port = forwarder.take_stream(8080).expect("requested");
/// port.write_all(b"GET / HTTP/1.0\r\n\r\n").await.expect("write");
/// let mut answer = Vec::new();
/// port.read_to_end(&mut answer).await.expect("read");
/// forwarder.join().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping the forwarder closes the connection"]
pub struct Portforwarder {
    streams: HashMap<u16, DuplexStream>,
    errors: HashMap<u16, oneshot::Receiver<String>>,
    task: tokio::task::JoinHandle<Result<()>>,
}

impl fmt::Debug for Portforwarder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Portforwarder")
            .field("ports", &self.streams.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Drop for Portforwarder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Portforwarder {
    /// The byte stream of `port`, once (`AsyncRead + AsyncWrite`). It reads EOF when the
    /// server ends the session.
    pub fn take_stream(
        &mut self,
        port: u16,
    ) -> Option<impl tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + use<>> {
        self.streams.remove(&port)
    }

    /// Resolves to the server's error message for `port` if forwarding it fails (nothing
    /// listens there ...), or to `None` when the session ends without one. Once per port.
    pub fn take_error(
        &mut self,
        port: u16,
    ) -> Option<impl Future<Output = Option<String>> + Send + use<>> {
        self.errors
            .remove(&port)
            .map(|receiver| async move { receiver.await.ok() })
    }

    /// Waits until the server ends the session.
    ///
    /// # Errors
    ///
    /// [`Error::Stream`] when the connection broke or the server broke the protocol.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future leaves the session running until the forwarder
    /// is dropped.
    pub async fn join(mut self) -> Result<()> {
        (&mut self.task)
            .await
            .unwrap_or_else(|_| Err(Error::InvalidRequest("the forwarder task ended".to_owned())))
    }
}

/// Forwards connections accepted on a local port to a Pod's port until dropped
/// (`kubectl port-forward`).
#[must_use = "dropping the handle stops forwarding"]
#[derive(Debug)]
pub struct LocalForwarder {
    local_address: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl LocalForwarder {
    /// The local address connections are accepted on (useful with port 0).
    #[must_use]
    pub fn local_address(&self) -> SocketAddr {
        self.local_address
    }
}

impl Drop for LocalForwarder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Api<Pod> {
    /// Forwards `ports` of Pod `name`: one stream per port.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRequest`] for no ports, duplicates, 0, or more than
    /// [`MAX_FORWARDED_PORTS`]; [`Error::Api`] (404 for a missing Pod, 400 for bad ports);
    /// [`Error::Upgrade`] and transport errors.
    pub async fn port_forward(&self, name: &str, ports: &[u16]) -> Result<Portforwarder> {
        if ports.is_empty() || ports.len() > MAX_FORWARDED_PORTS || ports.contains(&0) {
            return Err(Error::InvalidRequest(format!(
                "port-forward needs 1 to {MAX_FORWARDED_PORTS} ports from 1 to 65535, got {ports:?}"
            )));
        }
        let mut unique = ports.to_vec();
        unique.sort_unstable();
        unique.dedup();
        if unique.len() != ports.len() {
            return Err(Error::InvalidRequest(format!(
                "port-forward got duplicate ports: {ports:?}"
            )));
        }
        let list: Vec<String> = ports.iter().map(u16::to_string).collect();
        let request = Request::get(self.item(name, Some("portforward")))
            .query(&[("ports", list.join(",").as_str())])
            .streaming();
        let socket = self
            .client
            .connect_websocket(&request, &[PORT_FORWARD_PROTOCOL_V4])
            .await?;
        Ok(start(socket, ports))
    }

    /// Listens on `local` and forwards each accepted connection to `remote_port` of Pod
    /// `name`, over a WebSocket of its own, until the returned handle is dropped.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run(pods: kubeclient::Api<k8s_openapi::api::core::v1::Pod>) -> kubeclient::Result<()> {
    /// let forward = pods.forward_local("web-0", 8080, "127.0.0.1:0".parse().unwrap()).await?;
    /// println!("connect to {}", forward.local_address());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Transport`] when the local address cannot be bound. Failures of single
    /// connections are logged and close that connection only.
    pub async fn forward_local(
        &self,
        name: &str,
        remote_port: u16,
        local: SocketAddr,
    ) -> Result<LocalForwarder> {
        let bind_error = |err: std::io::Error| Error::transport(format!("tcp://{local}"), err);
        let listener = TcpListener::bind(local).await.map_err(bind_error)?;
        let local_address = listener.local_addr().map_err(bind_error)?;
        let api = self.clone();
        let name = name.to_owned();
        let task = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => match accepted {
                        Ok((connection, _)) => {
                            let api = api.clone();
                            let name = name.clone();
                            connections.spawn(async move {
                                if let Err(err) = forward_connection(&api, &name, remote_port, connection).await {
                                    tracing::warn!(pod = %name, port = remote_port, %err, "a forwarded connection failed");
                                }
                            });
                        }
                        Err(err) => {
                            tracing::warn!(%err, "accepting a local connection failed");
                            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                        }
                    },
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
        });
        Ok(LocalForwarder {
            local_address,
            task,
        })
    }
}

/// Copies one local connection to and from a fresh port-forward session.
async fn forward_connection(
    api: &Api<Pod>,
    name: &str,
    port: u16,
    mut connection: TcpStream,
) -> Result<()> {
    let mut forwarder = api.port_forward(name, &[port]).await?;
    let Some(mut remote) = forwarder.take_stream(port) else {
        return Ok(());
    };
    let error = forwarder.take_error(port);
    let (mut local_read, mut local_write) = connection.split();
    let (mut remote_read, mut remote_write) = tokio::io::split(&mut remote);
    // Either direction ending ends the connection: the protocol cannot half-close.
    tokio::select! {
        _ = tokio::io::copy(&mut local_read, &mut remote_write) => {}
        _ = tokio::io::copy(&mut remote_read, &mut local_write) => {}
    }
    let _ = local_write.shutdown().await;
    drop(forwarder);
    if let Some(error) = error
        && let Ok(Some(message)) =
            tokio::time::timeout(std::time::Duration::from_millis(10), error).await
    {
        return Err(Error::Stream {
            url: format!("pods/{name}/portforward"),
            source: StreamError::PortForward { port, message },
        });
    }
    Ok(())
}

/// Starts the session task for `ports`.
fn start(socket: WebSocket, ports: &[u16]) -> Portforwarder {
    let WebSocket { stream, url, .. } = socket;
    let (sink, incoming) = stream.split();
    let mut streams = HashMap::new();
    let mut errors = HashMap::new();
    let mut ours = Vec::new();
    let mut error_senders = Vec::new();
    for port in ports {
        let (mine, theirs) = tokio::io::duplex(PIPE_BUFFER);
        streams.insert(*port, theirs);
        ours.push(mine);
        let (sender, receiver) = oneshot::channel();
        errors.insert(*port, receiver);
        error_senders.push(Some(sender));
    }
    let ports = ports.to_vec();
    let task = tokio::spawn(async move {
        let (outgoing, queue) = mpsc::channel::<Vec<u8>>(8);
        let mut readers = Vec::new();
        let mut writers = Vec::new();
        for (index, pipe) in ours.into_iter().enumerate() {
            let (read, write) = tokio::io::split(pipe);
            readers.push(tokio::spawn(pump_to_server(read, index, outgoing.clone())));
            writers.push(Some(write));
        }
        drop(outgoing);
        let sender = tokio::spawn(send_all(sink, queue));
        let result = read_session(incoming, &ports, writers, error_senders)
            .await
            .map_err(|source| Error::Stream { url, source });
        for reader in readers {
            reader.abort();
        }
        sender.abort();
        result
    });
    Portforwarder {
        streams,
        errors,
        task,
    }
}

/// Reads what the caller writes on one port and queues it for the server.
async fn pump_to_server(
    mut pipe: tokio::io::ReadHalf<DuplexStream>,
    index: usize,
    outgoing: mpsc::Sender<Vec<u8>>,
) {
    let channel = u8::try_from(index * 2).unwrap_or(0);
    let mut buffer = vec![0u8; 32 * 1024];
    loop {
        match pipe.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if outgoing
                    .send(protocol::encode_frame(channel, &buffer[..n]))
                    .await
                    .is_err()
                {
                    return;
                }
            }
        }
    }
}

async fn send_all(mut sink: SplitSink<Socket, Message>, mut queue: mpsc::Receiver<Vec<u8>>) {
    while let Some(message) = queue.recv().await {
        if sink.send(Message::Binary(message.into())).await.is_err() {
            return;
        }
    }
}

/// Reads the server's messages: port prefixes, data for each port's pipe, and error
/// messages. Ends when the server closes.
async fn read_session(
    mut incoming: SplitStream<Socket>,
    ports: &[u16],
    mut writers: Vec<Option<tokio::io::WriteHalf<DuplexStream>>>,
    mut error_senders: Vec<Option<oneshot::Sender<String>>>,
) -> std::result::Result<(), StreamError> {
    let channel_count = ports.len() * 2;
    let mut prefixed = vec![false; channel_count];
    let mut error_texts: Vec<Vec<u8>> = vec![Vec::new(); ports.len()];
    let mut closed = false;
    while let Some(message) = incoming.next().await {
        let data = match message {
            Ok(Message::Binary(data)) => data,
            Ok(Message::Text(_)) => {
                return Err(StreamError::Unexpected(
                    "a text message (the port-forward protocol is binary)".to_owned(),
                ));
            }
            Ok(Message::Close(_)) => {
                closed = true;
                continue;
            }
            Ok(_) => continue,
            // After the server's close frame, a connection cut without a clean end
            // (no TLS close_notify) loses nothing.
            Err(_) if closed => break,
            Err(err) => return Err(StreamError::ConnectionLost(err)),
        };
        let Frame::Data { channel, data } = Frame::parse(&data).map_err(StreamError::Protocol)?
        else {
            continue;
        };
        let index = usize::from(channel) / 2;
        let (Some(seen), Some(port)) = (prefixed.get_mut(usize::from(channel)), ports.get(index))
        else {
            return Err(StreamError::Unexpected(format!(
                "data on channel {channel}, but only {channel_count} channels were opened"
            )));
        };
        let data = if *seen {
            data
        } else {
            let (announced, rest) =
                protocol::split_port_prefix(channel, data).map_err(StreamError::Protocol)?;
            if announced != *port {
                return Err(StreamError::Unexpected(format!(
                    "channel {channel} announced port {announced}, expected {port}"
                )));
            }
            *seen = true;
            rest
        };
        if data.is_empty() {
            continue;
        }
        if channel % 2 == 0 {
            if let Some(writer) = writers.get_mut(index).and_then(Option::as_mut)
                && writer.write_all(data).await.is_err()
            {
                writers[index] = None;
            }
        } else if let Some(text) = error_texts.get_mut(index) {
            let room = MAX_ERROR_BYTES.saturating_sub(text.len());
            text.extend_from_slice(&data[..data.len().min(room)]);
        }
    }
    for (index, text) in error_texts.into_iter().enumerate() {
        if let (false, Some(Some(sender))) = (
            text.is_empty(),
            error_senders.get_mut(index).map(Option::take),
        ) {
            let _ = sender.send(String::from_utf8_lossy(&text).into_owned());
        }
    }
    Ok(())
}
