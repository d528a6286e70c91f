//! `pods/portforward` over WebSockets (`v4.channel.k8s.io`, the kubelet's protocol).
//!
//! `?ports=8080,9090` (or repeated `ports=`) is required, each from 1 to 65535 (400
//! otherwise, as the kubelet answers). Port *i* gets data channel `2i` and error channel
//! `2i+1`; the server's first message on each is the port, 2 bytes little-endian.
//!
//! The embedded server has no containers: the Pod annotation
//! `port-forward.kubeclient.dev/<port>` names a **loopback** `host:port` to connect to
//! (for example `127.0.0.1:41234`, a test's echo server). A port without the annotation,
//! with a non-loopback target, or whose target refuses the connection gets a message on
//! its error channel, as the kubelet reports a failed forward. The session ends when
//! every port's target has closed its side, or when the client closes.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt as _;
use http::{Request, Response};
use kubeclient_machinery::stream_protocol::{Frame, PORT_FORWARD_PROTOCOL_V4};
use kubeclient_machinery::{ErrorChain, Status};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use super::pod_target::{find_pod, require_host};
use super::port_forward_target::{PortTarget, PortTargetError, TargetWrite, connect, port_target};
use super::websocket::{self, ChannelWriter, Incoming, MAX_OUTGOING_CHUNK};
use crate::response::{Body, HandlerResult, fail};
use crate::sessions::stopped;
use crate::state::State;

/// The most ports one request may forward.
const MAX_PORTS: usize = 64;

/// How many client chunks may wait for a slow target, per port.
const TO_TARGET_QUEUE: usize = 8;

/// Answers a `pods/{name}/portforward` request: the 101 upgrade (the session runs in its
/// own task), or the error Status.
pub(crate) fn handle<B>(
    state: &Arc<State>,
    mut request: Request<B>,
    namespace: &str,
    name: &str,
) -> HandlerResult<Response<Body>> {
    let target = find_pod(state, namespace, name)?;
    require_host(&target)?;
    // The kubelet reads `ports` from the query of WebSocket requests only (SPDY clients
    // name ports per stream), so the upgrade is checked first.
    let accepted = websocket::accept(&mut request, &[PORT_FORWARD_PROTOCOL_V4])?;
    let ports = parse_ports(request.uri().query())?;
    let targets: Vec<Result<PortTarget, PortTargetError>> = ports
        .iter()
        .map(|port| port_target(&target, *port, state.sessions.port_forward_allowlist()))
        .collect();
    let session = Session {
        state: state.clone(),
        pod: target.name.clone(),
        ports,
        targets,
    };
    tokio::spawn(session.run(accepted.upgrade));
    Ok(accepted.response)
}

/// The `ports` query parameter(s), with the kubelet's messages.
fn parse_ports(raw_query: Option<&str>) -> HandlerResult<Vec<u16>> {
    let mut ports = Vec::new();
    let mut seen_parameter = false;
    for (name, value) in form_urlencoded::parse(raw_query.unwrap_or("").as_bytes()) {
        if name != "ports" {
            continue;
        }
        seen_parameter = true;
        if value.is_empty() {
            return Err(fail(Status::bad_request(
                "query parameter \"ports\" cannot be empty",
            )));
        }
        for part in value.split(',') {
            let port = part.trim().parse::<u16>().map_err(|err| {
                fail(Status::bad_request(format!(
                    "unable to parse {value:?} as a port: {err}"
                )))
            })?;
            if port == 0 {
                return Err(fail(Status::bad_request(format!(
                    "port {value:?} must be > 0"
                ))));
            }
            ports.push(port);
        }
    }
    if !seen_parameter {
        return Err(fail(Status::bad_request(
            "query parameter \"ports\" is required",
        )));
    }
    if ports.len() > MAX_PORTS {
        return Err(fail(Status::bad_request(format!(
            "at most {MAX_PORTS} ports may be forwarded in one request"
        ))));
    }
    Ok(ports)
}

struct Session {
    state: Arc<State>,
    pod: String,
    ports: Vec<u16>,
    targets: Vec<Result<PortTarget, PortTargetError>>,
}

impl Session {
    async fn run(self, upgrade: hyper::upgrade::OnUpgrade) {
        let Some(socket) = websocket::open(upgrade).await else {
            return;
        };
        let (sink, incoming) = socket.split();
        let (writer, writer_task) = ChannelWriter::spawn(sink);
        let mut to_targets = Vec::with_capacity(self.ports.len());
        let mut forwards = JoinSet::new();
        for (index, (port, target)) in self.ports.iter().zip(self.targets).enumerate() {
            let (data_channel, error_channel) = channels(index);
            let prefix = port.to_le_bytes();
            if writer.write(data_channel, &prefix).await.is_err()
                || writer.write(error_channel, &prefix).await.is_err()
            {
                return;
            }
            let (sender, receiver) = mpsc::channel::<Bytes>(TO_TARGET_QUEUE);
            to_targets.push(sender);
            forwards.spawn(forward(
                target,
                receiver,
                writer.clone(),
                data_channel,
                error_channel,
                self.pod.clone(),
            ));
        }
        let mut reader = tokio::spawn(read_client(
            incoming,
            to_targets.into_iter().map(Some).collect(),
        ));
        let mut stopping = self.state.sessions.stopping();
        let all_done = async { while forwards.join_next().await.is_some() {} };
        let close_wait = Duration::from_secs(2);
        let incoming = tokio::select! {
            () = all_done => {
                writer.close(CloseCode::Normal, "").await;
                tokio::time::timeout(close_wait, &mut reader).await.ok().and_then(Result::ok)
            }
            half = &mut reader => half.ok(),
            () = stopped(&mut stopping) => {
                writer.close(CloseCode::Away, "the API server is shutting down").await;
                tokio::time::timeout(close_wait, &mut reader).await.ok().and_then(Result::ok)
            }
        };
        reader.abort();
        drop(writer);
        websocket::finish(writer_task, incoming).await;
    }
}

/// The data and error channels of the `index`-th port. `MAX_PORTS` keeps them below the
/// close marker (255).
fn channels(index: usize) -> (u8, u8) {
    let data = u8::try_from(index * 2).unwrap_or(u8::MAX - 1);
    (data, data.saturating_add(1))
}

/// Forwards one port: connects to its target, then copies both ways until the target
/// closes its side. Errors go to the port's error channel.
/// Writes what the client sends into the target connection, then half-closes it and
/// stays pending (so that the other direction decides when the forwarding ends). Shared
/// by the WebSocket and the SPDY port-forward.
pub(super) async fn into_target(
    from_client: &mut mpsc::Receiver<Bytes>,
    target_write: &mut TargetWrite,
) {
    while let Some(chunk) = from_client.recv().await {
        if target_write.write_all(&chunk).await.is_err() {
            break;
        }
    }
    let _ = target_write.shutdown().await;
    std::future::pending::<()>().await;
}

async fn forward(
    target: Result<PortTarget, PortTargetError>,
    mut from_client: mpsc::Receiver<Bytes>,
    writer: ChannelWriter,
    data_channel: u8,
    error_channel: u8,
    pod: String,
) {
    let connected = match target {
        Ok(target) => connect(target)
            .await
            .map_err(|message| format!("error forwarding to pod {pod}: {message}")),
        Err(err) => Err(ErrorChain(&err).to_string()),
    };
    let (mut target_read, mut target_write) = match connected {
        Ok(halves) => halves,
        Err(message) => {
            let _ = writer.write(error_channel, message.as_bytes()).await;
            return;
        }
    };
    let to_target = into_target(&mut from_client, &mut target_write);
    let from_target = async {
        let mut buffer = vec![0u8; MAX_OUTGOING_CHUNK];
        loop {
            match target_read.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if writer.write(data_channel, &buffer[..n]).await.is_err() {
                        break;
                    }
                }
            }
        }
    };
    tokio::select! {
        () = from_target => {}
        () = to_target => {}
    }
}

/// Reads the client's messages and hands each port's data to its forwarder. Returns when
/// the client closes or breaks the protocol.
async fn read_client(
    mut incoming: Incoming,
    mut to_targets: Vec<Option<mpsc::Sender<Bytes>>>,
) -> Incoming {
    while let Some(message) = incoming.next().await {
        let data = match message {
            Ok(Message::Binary(data)) => data,
            Ok(Message::Text(text)) => Bytes::from(text),
            Ok(Message::Close(_)) | Err(_) => return incoming,
            Ok(_) => continue,
        };
        let Ok(Frame::Data { channel, data }) = Frame::parse(&data) else {
            continue;
        };
        // Only data channels (even) carry bytes to the target; the client never writes
        // on error channels.
        if channel % 2 != 0 || data.is_empty() {
            continue;
        }
        let Some(slot) = to_targets.get_mut(usize::from(channel / 2)) else {
            continue;
        };
        if let Some(sender) = slot
            && sender.send(Bytes::copy_from_slice(data)).await.is_err()
        {
            // The target is gone; later data for this port is dropped.
            *slot = None;
        }
    }
    incoming
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_required_non_zero_and_may_repeat_or_be_comma_separated() {
        assert_eq!(
            parse_ports(Some("ports=80,8080&ports=9090")).unwrap(),
            [80, 8080, 9090]
        );
        for (query, message) in [
            (None, "query parameter \"ports\" is required"),
            (Some("ports="), "query parameter \"ports\" cannot be empty"),
            (Some("ports=0"), "port \"0\" must be > 0"),
        ] {
            let status = parse_ports(query).unwrap_err();
            assert_eq!((status.code, status.message.as_str()), (400, message));
        }
        assert!(parse_ports(Some("ports=70000")).is_err());
        assert!(parse_ports(Some("ports=http")).is_err());
    }

    #[test]
    fn channels_pair_data_and_error_per_port() {
        assert_eq!(channels(0), (0, 1));
        assert_eq!(channels(3), (6, 7));
    }
}
