//! `pods/portforward` over SPDY/3.1 (`portforward.k8s.io`), which is what `kubectl
//! port-forward` speaks: kubectl 1.31+ first tries SPDY tunnelled in a WebSocket, which
//! this server refuses (400), then falls back to a plain `Upgrade: SPDY/3.1` request.
//!
//! As the kubelet's `portforward/httpstream.go`: the client opens two streams per
//! forwarded connection, an error stream and a data stream, both carrying the headers
//! `streamtype`, `port` and `requestid`. Once both of a request id arrived, the server
//! connects to the port's target (the Pod annotation, loopback only) and copies bytes:
//! the client's FIN on the data stream half-closes the target, the target's EOF ends the
//! data stream, and the error stream then ends, carrying a message first if forwarding
//! failed. The server answers each SYN_STREAM with a SYN_REPLY, echoes PINGs, and ends
//! on GOAWAY or when the connection closes.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{CONNECTION, UPGRADE};
use http::{HeaderValue, Request, Response, StatusCode};
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use kubeclient_machinery::{ErrorChain, Status};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::pod_target::{find_pod, require_host};
use super::port_forward_streams::{Complete, Delivery, Kind, Opened, Streams};
use super::port_forward_target::{
    PortTarget, PortTargetError, TargetRead, TargetWrite, connect, port_target,
};
use super::spdy::{self, Frame, FrameReader, HeaderDecoder, HeaderEncoder};
use crate::response::{Body, HandlerResult, fail, full};
use crate::sessions::stopped;
use crate::state::State;

/// The SPDY port-forward protocol name (`X-Stream-Protocol-Version`).
const PROTOCOL: &str = "portforward.k8s.io";
const PROTOCOL_HEADER: &str = "x-stream-protocol-version";

/// Frames queued for the client before producers wait.
const OUTGOING_QUEUE: usize = 32;
/// The largest DATA frame sent.
const MAX_DATA: usize = 32 * 1024;

/// Whether a request asks for a SPDY upgrade.
pub(crate) fn is_spdy_upgrade<B>(request: &Request<B>) -> bool {
    request
        .headers()
        .get(UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("SPDY/3.1"))
}

/// Answers a SPDY port-forward upgrade: 101 (the session runs in its own task), or 400 if
/// the client offers protocol versions but not `portforward.k8s.io`.
pub(crate) fn handle<B>(
    state: &Arc<State>,
    mut request: Request<B>,
    namespace: &str,
    name: &str,
) -> HandlerResult<Response<Body>> {
    let pod = find_pod(state, namespace, name)?;
    require_host(&pod)?;
    let offered: Vec<String> = request
        .headers()
        .get_all(PROTOCOL_HEADER)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect();
    if !offered.is_empty() && !offered.iter().any(|p| p == PROTOCOL) {
        return Err(fail(Status::bad_request(format!(
            "unable to upgrade: unable to negotiate protocol: client supports {offered:?}, server supports [\"{PROTOCOL}\"]"
        ))));
    }
    let upgrade = hyper::upgrade::on(&mut request);
    let mut response = Response::new(full(Bytes::new()));
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    headers.insert(UPGRADE, HeaderValue::from_static("SPDY/3.1"));
    headers.insert(PROTOCOL_HEADER, HeaderValue::from_static(PROTOCOL));
    let session = Session {
        state: state.clone(),
        pod,
    };
    tokio::spawn(session.run(upgrade));
    Ok(response)
}

struct Session {
    state: Arc<State>,
    pod: super::pod_target::PodTarget,
}

impl Session {
    async fn run(self, upgrade: OnUpgrade) {
        let io = match upgrade.await {
            Ok(upgraded) => TokioIo::new(upgraded),
            Err(err) => {
                tracing::debug!(%err, "the SPDY upgrade did not complete");
                return;
            }
        };
        let (reader, mut writer) = tokio::io::split(io);
        let (frames, mut queue) = mpsc::channel::<Vec<u8>>(OUTGOING_QUEUE);
        let writer_task = tokio::spawn(async move {
            while let Some(frame) = queue.recv().await {
                if writer.write_all(&frame).await.is_err() {
                    return;
                }
            }
            let _ = writer.shutdown().await;
        });
        // Cancel safe: a frame half read when another branch wins stays buffered.
        let mut reader = FrameReader::new(reader);
        let mut decoder = HeaderDecoder::new();
        let mut encoder = HeaderEncoder::new();
        let mut streams = Streams::default();
        let mut forwards = JoinSet::<String>::new();
        let mut stopping = self.state.sessions.stopping();
        let mut last_stream = 0;
        loop {
            let frame = tokio::select! {
                frame = reader.next() => frame,
                Some(done) = forwards.join_next(), if !forwards.is_empty() => {
                    // A cancelled forward (its stream was reset) is already forgotten.
                    if let Ok(request_id) = done {
                        streams.finished(&request_id);
                    }
                    continue;
                }
                () = stopped(&mut stopping) => break,
            };
            let frame = match frame {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(err) => {
                    tracing::debug!(%err, "SPDY port-forward connection ended");
                    break;
                }
            };
            match frame {
                Frame::SynStream {
                    stream_id,
                    fin,
                    header_block,
                } => {
                    last_stream = stream_id;
                    let headers = match decoder.decode(&header_block) {
                        Ok(headers) => headers,
                        Err(err) => {
                            // The compression context is now out of step: the
                            // connection cannot go on.
                            tracing::debug!(%err, "bad SPDY headers");
                            break;
                        }
                    };
                    let header = |name: &str| {
                        headers
                            .iter()
                            .find(|(n, _)| n == name)
                            .map(|(_, v)| v.as_str())
                    };
                    let port = header("port").and_then(|p| p.parse::<u16>().ok());
                    let kind = match header("streamtype") {
                        Some("data") => Some(Kind::Data),
                        Some("error") => Some(Kind::Error),
                        _ => None,
                    };
                    let request_id = header("requestid").unwrap_or_default().to_owned();
                    let (Some(port), Some(kind)) = (port, kind) else {
                        let _ = frames
                            .send(spdy::rst_stream_frame(stream_id, spdy::RST_PROTOCOL_ERROR))
                            .await;
                        continue;
                    };
                    let opened = streams.open(stream_id, &request_id, kind, port, fin);
                    if matches!(opened, Opened::Refused) {
                        let _ = frames
                            .send(spdy::rst_stream_frame(stream_id, spdy::RST_REFUSED_STREAM))
                            .await;
                        continue;
                    }
                    let block = encoder.encode(&[]);
                    if frames
                        .send(spdy::syn_reply_frame(stream_id, &block))
                        .await
                        .is_err()
                    {
                        break;
                    }
                    if let Opened::Complete(complete) = opened {
                        let target = port_target(
                            &self.pod,
                            complete.port,
                            self.state.sessions.port_forward_allowlist(),
                        );
                        let (frames, data, error) = (frames.clone(), complete.data, complete.error);
                        let request_id = complete.request_id.clone();
                        let (from_client, complete) = take_receiver(complete);
                        let abort = forwards.spawn(async move {
                            forward(target, from_client, frames, data, error).await;
                            request_id
                        });
                        streams.started(&complete, abort);
                    }
                }
                Frame::Data {
                    stream_id,
                    fin,
                    data,
                } => match streams.data(stream_id, data.clone(), fin) {
                    Delivery::Forward(sender) => {
                        if sender.send(data).await.is_err() {
                            streams.target_gone(stream_id);
                        }
                    }
                    Delivery::Refuse => {
                        let _ = frames
                            .send(spdy::rst_stream_frame(
                                stream_id,
                                spdy::RST_FLOW_CONTROL_ERROR,
                            ))
                            .await;
                    }
                    Delivery::Done => {}
                },
                Frame::RstStream { stream_id } => streams.reset(stream_id),
                Frame::Ping { id } => {
                    if frames.send(spdy::ping_frame(id)).await.is_err() {
                        break;
                    }
                }
                Frame::GoAway => break,
                Frame::Ignored => {}
            }
        }
        let _ = frames.send(spdy::goaway_frame(last_stream)).await;
        streams.abort_all();
        forwards.abort_all();
        drop(frames);
        drop(forwards);
        let mut writer_task = writer_task;
        if tokio::time::timeout(Duration::from_secs(5), &mut writer_task)
            .await
            .is_err()
        {
            writer_task.abort();
        }
    }
}

/// Splits the client-data receiver off a completed pair, for the forward to own.
fn take_receiver(mut complete: Complete) -> (mpsc::Receiver<Bytes>, Complete) {
    let (_, empty) = mpsc::channel(1);
    let receiver = std::mem::replace(&mut complete.from_client, empty);
    (receiver, complete)
}

/// Forwards one connection: the data stream to and from the target, then the end of the
/// error stream (with the failure, if any).
async fn forward(
    target: Result<PortTarget, PortTargetError>,
    mut from_client: mpsc::Receiver<Bytes>,
    frames: mpsc::Sender<Vec<u8>>,
    data_stream: u32,
    error_stream: u32,
) {
    let connected = match target {
        Ok(target) => connect(target).await,
        Err(err) => Err(ErrorChain(&err).to_string()),
    };
    let failure = match connected {
        Ok((target_read, target_write)) => {
            copy(
                target_read,
                target_write,
                &mut from_client,
                &frames,
                data_stream,
            )
            .await;
            None
        }
        Err(message) => Some(message),
    };
    if let Some(message) = failure {
        let _ = frames.send(spdy::data_frame(data_stream, true, &[])).await;
        let _ = frames
            .send(spdy::data_frame(error_stream, false, message.as_bytes()))
            .await;
    }
    let _ = frames.send(spdy::data_frame(error_stream, true, &[])).await;
}

/// Copies until the target closes its side; the client's FIN half-closes the target.
async fn copy(
    mut target_read: TargetRead,
    mut target_write: TargetWrite,
    from_client: &mut mpsc::Receiver<Bytes>,
    frames: &mpsc::Sender<Vec<u8>>,
    data_stream: u32,
) {
    let to_target = super::port_forward::into_target(from_client, &mut target_write);
    let from_target = async {
        let mut buffer = vec![0u8; MAX_DATA];
        loop {
            match target_read.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if frames
                        .send(spdy::data_frame(data_stream, false, &buffer[..n]))
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
            }
        }
        let _ = frames.send(spdy::data_frame(data_stream, true, &[])).await;
    };
    tokio::select! {
        () = from_target => {}
        () = to_target => {}
    }
}
