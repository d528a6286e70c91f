//! `exec` and `attach` (client-go's `tools/remotecommand`): a command's stdin, stdout and
//! stderr, terminal resizes, and its exit status, over a WebSocket speaking
//! `v5.channel.k8s.io` (falling back to `v4.channel.k8s.io`), as client-go does since 1.30.
//!
//! The session runs in two tasks: one reads the server's messages into the stdout and
//! stderr pipes, the other sends stdin and resize events. Keeping them apart means a
//! command that fills its output while the caller is still writing stdin cannot deadlock
//! the connection. Pipes are bounded: a caller that stops reading stdout stops the reader,
//! which stops reading the socket, which (through TCP) pauses the command.
//!
//! SPDY (the older transport) is not supported: kube-apiserver has accepted WebSockets for
//! exec and attach since 1.30 and kubectl uses them by default.

use std::fmt;

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt as _, StreamExt as _};
use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::Pod;
use kubeclient_machinery::stream_protocol::{
    self as protocol, Frame, STREAM_PROTOCOL_V4, STREAM_PROTOCOL_V5, TerminalSize,
};
use kubeclient_machinery::{ApiError, Status};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _, DuplexStream};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;

use super::Api;
use crate::error::{Error, Result, StreamError};
use crate::rest::{Request, WebSocket};

/// Bytes buffered in each stdin/stdout/stderr pipe.
const PIPE_BUFFER: usize = 64 * 1024;

/// The most bytes of the error channel kept (a Status is small; this bounds a bad server).
const MAX_STATUS_BYTES: usize = 64 * 1024;

/// Which streams an exec or attach session opens (client-go's `StreamOptions` and the
/// `PodExecOptions` query).
///
/// # Examples
///
/// ```
/// use kubeclient::api::AttachParams;
///
/// let params = AttachParams::default().container("main").stdin(true).stderr(false);
/// assert!(params.stdin && params.stdout && !params.stderr && !params.tty);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub struct AttachParams {
    /// The container (may be left out when the Pod has one).
    pub container: Option<String>,
    /// Open stdin. Default false.
    pub stdin: bool,
    /// Open stdout. Default true.
    pub stdout: bool,
    /// Open stderr. Default true (ignored with a TTY: a terminal has one output).
    pub stderr: bool,
    /// Allocate a TTY. Default false.
    pub tty: bool,
}

impl Default for AttachParams {
    fn default() -> Self {
        AttachParams {
            container: None,
            stdin: false,
            stdout: true,
            stderr: true,
            tty: false,
        }
    }
}

impl AttachParams {
    /// The container to run in.
    pub fn container(mut self, name: impl Into<String>) -> Self {
        self.container = Some(name.into());
        self
    }

    /// Whether to open stdin.
    pub fn stdin(mut self, enabled: bool) -> Self {
        self.stdin = enabled;
        self
    }

    /// Whether to open stdout.
    pub fn stdout(mut self, enabled: bool) -> Self {
        self.stdout = enabled;
        self
    }

    /// Whether to open stderr.
    pub fn stderr(mut self, enabled: bool) -> Self {
        self.stderr = enabled;
        self
    }

    /// Whether to allocate a TTY (stderr is then merged into stdout by the server).
    pub fn tty(mut self, enabled: bool) -> Self {
        self.tty = enabled;
        if enabled {
            self.stderr = false;
        }
        self
    }

    fn query(&self, command: &[&str]) -> Vec<(&'static str, String)> {
        let mut query = Vec::new();
        if let Some(container) = &self.container {
            query.push(("container", container.clone()));
        }
        for (name, enabled) in [
            ("stdin", self.stdin),
            ("stdout", self.stdout),
            ("stderr", self.stderr && !self.tty),
            ("tty", self.tty),
        ] {
            if enabled {
                query.push((name, "true".to_owned()));
            }
        }
        for part in command {
            query.push(("command", (*part).to_owned()));
        }
        query
    }
}

/// How a command ended: its exit code, and the Status the server reported.
#[derive(Clone, Debug, PartialEq)]
pub struct ExitStatus {
    /// The exit code (0 for success).
    pub code: i32,
    /// The Status from the error channel.
    pub status: Status,
}

impl ExitStatus {
    /// Whether the command exited with 0.
    #[must_use]
    pub fn success(&self) -> bool {
        self.code == 0
    }
}

/// A running exec or attach session.
///
/// Take the pipes you asked for with [`stdin`](Self::stdin), [`stdout`](Self::stdout) and
/// [`stderr`](Self::stderr); close stdin (drop it, or `shutdown()`) to send EOF, which
/// needs `v5.channel.k8s.io` ([`protocol`](Self::protocol)); then [`join`](Self::join) for
/// the exit status. Dropping the session closes the connection.
///
/// # Examples
///
/// ```no_run
/// # async fn run(pods: kubeclient::Api<k8s_openapi::api::core::v1::Pod>) -> kubeclient::Result<()> {
/// use kubeclient::api::AttachParams;
/// use tokio::io::{AsyncReadExt, AsyncWriteExt};
///
/// let mut process = pods.exec("web-0", ["cat"], &AttachParams::default().stdin(true)).await?;
/// let mut stdin = process.stdin().expect("stdin was requested");
/// let mut stdout = process.stdout().expect("stdout was requested");
/// stdin.write_all(b"hello\n").await.expect("write");
/// drop(stdin); // EOF: cat exits
/// let mut echoed = String::new();
/// stdout.read_to_string(&mut echoed).await.expect("read");
/// assert_eq!(echoed, "hello\n");
/// assert!(process.join().await?.success());
/// # Ok(()) }
/// ```
#[must_use = "dropping the session closes the connection"]
pub struct AttachedProcess {
    protocol: String,
    stdin: Option<DuplexStream>,
    stdout: Option<DuplexStream>,
    stderr: Option<DuplexStream>,
    resize: Option<mpsc::Sender<TerminalSize>>,
    outcome: Option<oneshot::Receiver<Result<ExitStatus>>>,
    reader: tokio::task::JoinHandle<()>,
    writer: tokio::task::JoinHandle<()>,
}

impl fmt::Debug for AttachedProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AttachedProcess")
            .field("protocol", &self.protocol)
            .finish_non_exhaustive()
    }
}

impl Drop for AttachedProcess {
    fn drop(&mut self) {
        self.reader.abort();
        self.writer.abort();
    }
}

impl AttachedProcess {
    /// The subprotocol the server chose (`v5.channel.k8s.io` or `v4.channel.k8s.io`).
    #[must_use]
    pub fn protocol(&self) -> &str {
        &self.protocol
    }

    /// The command's stdin, once (`None` if not requested or already taken). Dropping or
    /// shutting it down sends EOF (v5 only; on v4 the command sees EOF when the session ends).
    pub fn stdin(&mut self) -> Option<impl tokio::io::AsyncWrite + Unpin + use<>> {
        self.stdin.take()
    }

    /// The command's stdout, once. It ends when the session ends.
    pub fn stdout(&mut self) -> Option<impl tokio::io::AsyncRead + Unpin + use<>> {
        self.stdout.take()
    }

    /// The command's stderr, once (`None` with a TTY).
    pub fn stderr(&mut self) -> Option<impl tokio::io::AsyncRead + Unpin + use<>> {
        self.stderr.take()
    }

    /// A handle that sends terminal sizes (TTY sessions only), once.
    pub fn terminal_size(&mut self) -> Option<TerminalSizeSender> {
        self.resize
            .take()
            .map(|sender| TerminalSizeSender { sender })
    }

    /// Waits for the session to end and returns the command's exit status. Unread output
    /// still in the pipes stays readable.
    ///
    /// # Errors
    ///
    /// [`Error::Api`] when the command could not run (the Status is not an exit code);
    /// [`Error::Stream`] when the connection broke or closed before the status arrived.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: the status is lost if the future is dropped.
    pub async fn join(mut self) -> Result<ExitStatus> {
        let Some(outcome) = self.outcome.take() else {
            return Err(Error::InvalidRequest("join called twice".to_owned()));
        };
        match outcome.await {
            Ok(result) => result,
            Err(_) => Err(Error::InvalidRequest(
                "the session task ended without a result".to_owned(),
            )),
        }
    }
}

/// Sends terminal size changes to a TTY session.
#[derive(Clone, Debug)]
pub struct TerminalSizeSender {
    sender: mpsc::Sender<TerminalSize>,
}

impl TerminalSizeSender {
    /// Sends a new size.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRequest`] when the session has ended.
    pub async fn resize(&self, width: u16, height: u16) -> Result<()> {
        self.sender
            .send(TerminalSize { width, height })
            .await
            .map_err(|_| Error::InvalidRequest("the session has ended".to_owned()))
    }
}

impl Api<Pod> {
    /// Runs `command` in a container of Pod `name` (`kubectl exec`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run(pods: kubeclient::Api<k8s_openapi::api::core::v1::Pod>) -> kubeclient::Result<()> {
    /// use kubeclient::api::AttachParams;
    /// use tokio::io::AsyncReadExt;
    ///
    /// let mut process = pods.exec("web-0", ["echo", "hi"], &AttachParams::default()).await?;
    /// let mut out = String::new();
    /// process.stdout().expect("stdout").read_to_string(&mut out).await.expect("read");
    /// let status = process.join().await?;
    /// println!("{out} exited with {}", status.code);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Api`] (404 for a missing Pod, 400 for a bad container or options),
    /// [`Error::Upgrade`] and transport errors.
    pub async fn exec<I, S>(
        &self,
        name: &str,
        command: I,
        params: &AttachParams,
    ) -> Result<AttachedProcess>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let command: Vec<S> = command.into_iter().collect();
        let command: Vec<&str> = command.iter().map(AsRef::as_ref).collect();
        self.open_session(name, "exec", params, &command).await
    }

    /// Attaches to the main process of a container of Pod `name` (`kubectl attach`).
    ///
    /// # Errors
    ///
    /// As [`exec`](Self::exec).
    pub async fn attach(&self, name: &str, params: &AttachParams) -> Result<AttachedProcess> {
        self.open_session(name, "attach", params, &[]).await
    }

    async fn open_session(
        &self,
        name: &str,
        subresource: &str,
        params: &AttachParams,
        command: &[&str],
    ) -> Result<AttachedProcess> {
        let query = params.query(command);
        let request = Request::get(self.item(name, Some(subresource)))
            .query(&super::query_pairs(&query))
            .streaming();
        let socket = self
            .client
            .connect_websocket(&request, &[STREAM_PROTOCOL_V5, STREAM_PROTOCOL_V4])
            .await?;
        Ok(start(socket, params))
    }
}

type Socket = WebSocketStream<TokioIo<Upgraded>>;

/// Starts the reader and writer tasks of a session.
fn start(socket: WebSocket, params: &AttachParams) -> AttachedProcess {
    let WebSocket {
        stream,
        protocol,
        url,
    } = socket;
    let v5 = protocol == STREAM_PROTOCOL_V5;
    let (sink, incoming) = stream.split();
    let pipe = |enabled: bool| {
        if enabled {
            let (ours, theirs) = tokio::io::duplex(PIPE_BUFFER);
            (Some(ours), Some(theirs))
        } else {
            (None, None)
        }
    };
    let (stdin_ours, stdin_theirs) = pipe(params.stdin);
    let (stdout_ours, stdout_theirs) = pipe(params.stdout);
    let (stderr_ours, stderr_theirs) = pipe(params.stderr && !params.tty);
    let (resize_sender, resize) = mpsc::channel(4);
    let (done, outcome) = oneshot::channel();
    let reader = tokio::spawn(async move {
        let result = read_session(incoming, stdout_ours, stderr_ours)
            .await
            .map_err(|source| Error::Stream {
                url: url.clone(),
                source,
            })
            .and_then(exit_status);
        let _ = done.send(result);
    });
    let writer = tokio::spawn(write_session(sink, stdin_ours, resize, v5));
    AttachedProcess {
        protocol,
        stdin: stdin_theirs,
        stdout: stdout_theirs,
        stderr: stderr_theirs,
        resize: params.tty.then_some(resize_sender),
        outcome: Some(outcome),
        reader,
        writer,
    }
}

/// The exit status a Status reports, or the Status as an error when it is not an exit.
fn exit_status(status: Status) -> Result<ExitStatus> {
    match protocol::exit_code(&status) {
        Some(code) => Ok(ExitStatus { code, status }),
        None => Err(Error::Api(Box::new(ApiError::from_status(status)))),
    }
}

/// Reads the server's messages until the connection ends; returns the Status from the
/// error channel.
async fn read_session(
    mut incoming: SplitStream<Socket>,
    mut stdout: Option<DuplexStream>,
    mut stderr: Option<DuplexStream>,
) -> std::result::Result<Status, StreamError> {
    let mut status_bytes: Vec<u8> = Vec::new();
    let mut close: Option<(u16, String)> = None;
    while let Some(message) = incoming.next().await {
        let data = match message {
            Ok(Message::Binary(data)) => data,
            Ok(Message::Close(frame)) => {
                close = Some(frame.map_or((1005, String::new()), |f| {
                    (u16::from(f.code), f.reason.to_string())
                }));
                continue;
            }
            Ok(Message::Text(_)) => {
                return Err(StreamError::Unexpected(
                    "a text message (the channel protocol is binary)".to_owned(),
                ));
            }
            Ok(_) => continue,
            // After the server's close frame the session is over; a connection then cut
            // without a clean end (no TLS close_notify) loses nothing.
            Err(_) if close.is_some() => break,
            Err(err) => return Err(StreamError::ConnectionLost(err)),
        };
        match Frame::parse(&data).map_err(StreamError::Protocol)? {
            Frame::Data {
                channel: protocol::STDOUT,
                data,
            } => write_pipe(&mut stdout, data).await,
            Frame::Data {
                channel: protocol::STDERR,
                data,
            } => write_pipe(&mut stderr, data).await,
            Frame::Data {
                channel: protocol::ERROR,
                data,
            } => {
                if status_bytes.len() + data.len() > MAX_STATUS_BYTES {
                    return Err(StreamError::Unexpected(format!(
                        "more than {MAX_STATUS_BYTES} bytes on the error channel"
                    )));
                }
                status_bytes.extend_from_slice(data);
            }
            // Other channels (and close signals) carry nothing for the client.
            Frame::Data { .. } | Frame::Close { .. } => {}
        }
    }
    // The pipes end here (dropping our halves gives the caller EOF).
    drop(stdout);
    drop(stderr);
    if status_bytes.iter().all(u8::is_ascii_whitespace) {
        let (code, reason) = close.map_or((None, String::new()), |(c, r)| (Some(c), r));
        return Err(StreamError::ClosedWithoutStatus { code, reason });
    }
    serde_json::from_slice(&status_bytes).map_err(StreamError::BadStatus)
}

/// Writes output to a pipe; a caller that dropped its end no longer gets output (the rest
/// of the session goes on).
async fn write_pipe(pipe: &mut Option<DuplexStream>, data: &[u8]) {
    if let Some(writer) = pipe
        && writer.write_all(data).await.is_err()
    {
        *pipe = None;
    }
}

/// Sends stdin (then, on v5, its close signal) and resize events until both end or the
/// connection fails.
async fn write_session(
    mut sink: SplitSink<Socket, Message>,
    mut stdin: Option<DuplexStream>,
    mut resize: mpsc::Receiver<TerminalSize>,
    v5: bool,
) {
    let mut buffer = vec![0u8; 32 * 1024];
    let mut resize_open = true;
    loop {
        let message = tokio::select! {
            read = async {
                match &mut stdin {
                    Some(pipe) => pipe.read(&mut buffer).await,
                    None => std::future::pending().await,
                }
            } => match read {
                Ok(n) if n > 0 => Some(protocol::encode_frame(protocol::STDIN, &buffer[..n])),
                // EOF (or a broken pipe): stdin is done.
                _ => {
                    stdin = None;
                    v5.then(|| protocol::close_frame(protocol::STDIN))
                }
            },
            size = resize.recv(), if resize_open => match size {
                Some(size) => serde_json::to_vec(&size)
                    .ok()
                    .map(|json| protocol::encode_frame(protocol::RESIZE, &json)),
                None => {
                    resize_open = false;
                    None
                }
            },
            else => return,
        };
        if let Some(message) = message
            && sink.send(Message::Binary(message.into())).await.is_err()
        {
            return;
        }
        if stdin.is_none() && !resize_open {
            return;
        }
    }
}
