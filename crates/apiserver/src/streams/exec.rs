//! `pods/exec` and `pods/attach` over WebSockets (`v5.channel.k8s.io`, `v4.channel.k8s.io`).
//!
//! Checks, in the API server's order: the Pod exists (404), the container is valid (400),
//! the options make sense (400), the request is a WebSocket upgrade with a supported
//! subprotocol (400). The session then follows kube-apiserver's stream translator: an
//! empty message on the lowest output channel says "ready"; stdin, resize and (v5) close
//! signals are read while the command runs; its exit status goes out as a `Status` on
//! channel 3; then the server sends a close frame and waits for the client's.
//!
//! The command is one of the server's [built-in commands](super::builtin_commands), never a
//! host process. `exec` runs `command`; `attach` runs the container's `command` and `args`
//! from the Pod spec (`cat` when the spec has none), a fresh instance per attach.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt as _;
use http::{Request, Response};
use kubeclient_machinery::stream_protocol::{
    self as protocol, Frame, STREAM_PROTOCOL_V4, STREAM_PROTOCOL_V5, TerminalSize,
};
use kubeclient_machinery::{Status, StatusReason};
use tokio::sync::{mpsc, watch};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use super::builtin_commands::{self, BUILTIN_COMMANDS, NotFound, Output, Stdio};
use super::pod_target::{PodTarget, require_host, resolve};
use super::websocket::{self, ChannelWriter, Incoming};
use crate::response::{Body, HandlerResult, fail};
use crate::sessions::stopped;
use crate::state::State;

/// The subprotocols offered, most preferred first.
const PROTOCOLS: [&str; 2] = [STREAM_PROTOCOL_V5, STREAM_PROTOCOL_V4];

/// How long the server waits for the client to close after the command ended
/// (kube-apiserver waits up to 15 minutes for slow readers; tests need less).
const FINISH_WAIT: Duration = Duration::from_secs(60);

/// How many stdin chunks may wait for a command that is not reading.
const STDIN_QUEUE: usize = 8;

/// Which subresource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Exec,
    Attach,
}

/// The session options from the query string (`PodExecOptions` / `PodAttachOptions`).
#[derive(Debug, Default)]
struct Options {
    command: Vec<String>,
    container: Option<String>,
    stdin: bool,
    stdout: bool,
    stderr: bool,
    tty: bool,
}

impl Options {
    /// Reads the query with the API server's boolean rule (present and not `false`/`0`).
    fn parse(raw_query: Option<&str>) -> Self {
        let mut options = Options::default();
        let flag = |value: &str| value != "0" && !value.eq_ignore_ascii_case("false");
        for (name, value) in form_urlencoded::parse(raw_query.unwrap_or("").as_bytes()) {
            match name.as_ref() {
                "command" => options.command.push(value.into_owned()),
                "container" => options.container = Some(value.into_owned()),
                "stdin" => options.stdin = flag(&value),
                "stdout" => options.stdout = flag(&value),
                "stderr" => options.stderr = flag(&value),
                "tty" => options.tty = flag(&value),
                _ => {}
            }
        }
        // The kubelet drops stderr with a TTY: a terminal has one output stream.
        if options.tty {
            options.stderr = false;
        }
        options
    }
}

/// Answers a `pods/{name}/exec` or `pods/{name}/attach` request: the 101 upgrade (the
/// session runs in its own task), or the error Status.
pub(crate) fn handle<B>(
    state: &Arc<State>,
    mut request: Request<B>,
    namespace: &str,
    name: &str,
    kind: Kind,
) -> HandlerResult<Response<Body>> {
    let options = Options::parse(request.uri().query());
    let target = resolve(state, namespace, name, options.container.as_deref())?;
    require_host(&target)?;
    let argv = match kind {
        Kind::Exec => options.command.clone(),
        Kind::Attach => attached_command(&target),
    };
    if kind == Kind::Exec && argv.is_empty() {
        return Err(fail(Status::bad_request(
            "you must specify at least 1 command",
        )));
    }
    if !options.stdin && !options.stdout && !options.stderr {
        return Err(fail(Status::bad_request(
            "you must specify at least 1 of stdin, stdout, stderr",
        )));
    }
    let protocols: &[&'static str] = if state.sessions.is_legacy_remote_command() {
        &[STREAM_PROTOCOL_V4]
    } else {
        &PROTOCOLS
    };
    let accepted = websocket::accept(&mut request, protocols)?;
    let session = Session {
        state: state.clone(),
        v5: accepted.protocol == STREAM_PROTOCOL_V5,
        env: environment(&target),
        argv,
        options,
    };
    tracing::debug!(pod = %target.name, container = %target.container, ?kind, protocol = accepted.protocol, "stream session starts");
    tokio::spawn(session.run(accepted.upgrade));
    Ok(accepted.response)
}

/// What `attach` runs: the container's command and args, or `cat`.
fn attached_command(target: &PodTarget) -> Vec<String> {
    let spec = target.container_spec();
    let strings = |field: &str| -> Vec<String> {
        spec[field]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut argv = strings("command");
    argv.extend(strings("args"));
    if argv.is_empty() {
        argv.push("cat".to_owned());
    }
    argv
}

/// `HOSTNAME` and the container's literal `env` values.
fn environment(target: &PodTarget) -> Vec<String> {
    let mut env = vec![format!("HOSTNAME={}", target.name)];
    if let Some(vars) = target.container_spec()["env"].as_array() {
        for var in vars {
            if let (Some(name), Some(value)) = (var["name"].as_str(), var["value"].as_str()) {
                env.push(format!("{name}={value}"));
            }
        }
    }
    env
}

struct Session {
    state: Arc<State>,
    v5: bool,
    env: Vec<String>,
    argv: Vec<String>,
    options: Options,
}

/// Why the client's side of a session ended.
#[derive(Debug)]
enum ClientEnd {
    /// It closed the connection (or it broke).
    Closed,
    /// It sent something that is not the protocol. The stdin sender is handed back so
    /// the command does not see EOF (and finish "successfully") before the session ends
    /// with the protocol error.
    ProtocolError {
        why: String,
        _stdin: Option<mpsc::Sender<Bytes>>,
    },
}

impl Session {
    async fn run(self, upgrade: hyper::upgrade::OnUpgrade) {
        let Some(socket) = websocket::open(upgrade).await else {
            return;
        };
        let (sink, incoming) = socket.split();
        let (writer, writer_task) = ChannelWriter::spawn(sink);
        let options = &self.options;
        let ready = if options.stdout {
            protocol::STDOUT
        } else if options.stderr {
            protocol::STDERR
        } else {
            protocol::ERROR
        };
        if writer.write(ready, &[]).await.is_err() {
            return;
        }
        let (stdin_sender, stdin) = if options.stdin {
            let (sender, receiver) = mpsc::channel(STDIN_QUEUE);
            (Some(sender), Some(receiver))
        } else {
            (None, None)
        };
        let (size_sender, size) = watch::channel(None);
        let mut reader = tokio::spawn(read_client(incoming, stdin_sender, size_sender, self.v5));
        let output = |enabled: bool, channel: u8| {
            if enabled {
                Output::Channel {
                    writer: writer.clone(),
                    channel,
                }
            } else {
                Output::Discard
            }
        };
        let stderr = if options.tty {
            output(options.stdout, protocol::STDOUT)
        } else {
            output(options.stderr, protocol::STDERR)
        };
        let mut stdio = Stdio {
            stdin,
            stdout: output(options.stdout, protocol::STDOUT),
            stderr,
            size,
            env: self.env.clone(),
            tty: options.tty,
        };
        let mut stopping = self.state.sessions.stopping();
        let argv = &self.argv;
        // The receiving half, once the reader hands it back (for a clean shutdown).
        let mut incoming = None;
        tokio::select! {
            // The client's end first: a protocol error must win over a command that
            // happens to finish in the same instant.
            biased;
            end = &mut reader => {
                if let Ok((end, half)) = end {
                    incoming = Some(half);
                    if let ClientEnd::ProtocolError { why, .. } = end {
                        tracing::debug!(%why, "stream client broke the protocol");
                        writer.close(CloseCode::Protocol, &why).await;
                    }
                }
            }
            result = builtin_commands::run(argv, &mut stdio) => {
                drop(stdio);
                let status = match result {
                    Ok(code) => protocol::exit_status(code, &argv.join(" ")),
                    Err(NotFound(program)) => Status::failure(
                        StatusReason::InternalError,
                        format!(
                            "Internal error occurred: error executing command in container: {program:?}: executable file not found (the embedded server runs only its built-in commands: {BUILTIN_COMMANDS})"
                        ),
                    ),
                };
                let encoded = serde_json::to_vec(&status).unwrap_or_default();
                // Status, close frame, then the client's close; a client that neither
                // reads nor closes gets FINISH_WAIT, then is cut off.
                let finish = async {
                    if writer.write(protocol::ERROR, &encoded).await.is_err() {
                        return None;
                    }
                    writer.close(CloseCode::Normal, "").await;
                    (&mut reader).await.ok().map(|(_, half)| half)
                };
                incoming = tokio::time::timeout(FINISH_WAIT, finish).await.ok().flatten();
            }
            () = stopped(&mut stopping) => {
                writer.close(CloseCode::Away, "the API server is shutting down").await;
                incoming = tokio::time::timeout(Duration::from_secs(2), &mut reader)
                    .await
                    .ok()
                    .and_then(Result::ok)
                    .map(|(_, half)| half);
            }
        }
        reader.abort();
        drop(writer);
        websocket::finish(writer_task, incoming).await;
    }
}

/// Reads the client's messages: stdin data (with backpressure), resize events, and the v5
/// close signal for stdin. Returns when the client closes or breaks the protocol.
async fn read_client(
    mut incoming: Incoming,
    stdin: Option<mpsc::Sender<Bytes>>,
    size: watch::Sender<Option<TerminalSize>>,
    v5: bool,
) -> (ClientEnd, Incoming) {
    let end = read_messages(&mut incoming, stdin, &size, v5).await;
    (end, incoming)
}

async fn read_messages(
    incoming: &mut Incoming,
    mut stdin: Option<mpsc::Sender<Bytes>>,
    size: &watch::Sender<Option<TerminalSize>>,
    v5: bool,
) -> ClientEnd {
    while let Some(message) = incoming.next().await {
        let data = match message {
            Ok(Message::Binary(data)) => data,
            // As the kubelet's stream server, a text message is read as its bytes (the
            // Python client sends strings that way).
            Ok(Message::Text(text)) => bytes::Bytes::from(text),
            Ok(Message::Close(_)) | Err(_) => return ClientEnd::Closed,
            Ok(_) => continue,
        };
        match Frame::parse(&data) {
            Ok(Frame::Data {
                channel: protocol::STDIN,
                data: chunk,
            }) => {
                if let Some(sender) = &stdin
                    && !chunk.is_empty()
                    && sender.send(Bytes::copy_from_slice(chunk)).await.is_err()
                {
                    // The command stopped reading: drop what else arrives.
                    stdin = None;
                }
            }
            Ok(Frame::Data {
                channel: protocol::RESIZE,
                data: json,
            }) => match serde_json::from_slice::<TerminalSize>(json) {
                Ok(new_size) => {
                    size.send_replace(Some(new_size));
                }
                Err(err) => {
                    return ClientEnd::ProtocolError {
                        why: format!("bad resize message: {err}"),
                        _stdin: stdin,
                    };
                }
            },
            Ok(Frame::Close {
                channel: protocol::STDIN,
            }) if v5 => stdin = None,
            Ok(_) => {}
            Err(err) => {
                return ClientEnd::ProtocolError {
                    why: err.to_string(),
                    _stdin: stdin,
                };
            }
        }
    }
    ClientEnd::Closed
}
