//! The commands `exec` and `attach` run. The embedded server has no containers and never
//! starts a host process: each command is a small function of the server itself, reading
//! the session's stdin and writing its stdout and stderr.
//!
//! | command | does | exit code |
//! |---|---|---|
//! | `echo ARGS...` | prints the arguments, space-separated, and a newline | 0 |
//! | `echo-stderr ARGS...` | the same on stderr | 0 |
//! | `cat` | copies stdin to stdout until stdin ends | 0 |
//! | `env` | prints `HOSTNAME=<pod>` and the container's literal `env` values, one per line | 0 |
//! | `exit N` | nothing | N modulo 256 (2 and a message if N is not a number) |
//! | `sleep N` | waits N seconds (at most a day; fractions allowed) | 0 |
//! | `seq N` | prints 1 to N, one per line (N at most 10,000,000) | 0 |
//! | `tty-size` | prints the terminal size as `WIDTHxHEIGHT` (waiting up to 5 s for the first resize), then each new size until stdin ends (or, with a TTY, a Ctrl-D byte arrives, as a terminal would turn it into EOF) | 0 |
//! | `true` / `false` | nothing | 0 / 1 |
//! | `sh -c SCRIPT` (also `bash`) | runs the script over these commands ([`shell`](super::shell)) | the script's |
//!
//! Any other command fails to start, as an executable missing from a container image does.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use kubeclient_machinery::stream_protocol::TerminalSize;
use tokio::sync::{mpsc, watch};

use super::websocket::{ChannelWriter, Gone};
use crate::pod_logs::ContainerLogWriter;

/// The names of the built-in commands, for error messages.
pub(crate) const BUILTIN_COMMANDS: &str =
    "echo, echo-stderr, cat, env, exit, sleep, seq, tty-size, true, false, sh -c";

/// How long `tty-size` waits for the client's first resize message.
const FIRST_SIZE_WAIT: Duration = Duration::from_secs(5);

/// The largest `seq` bound.
const MAX_SEQ: u64 = 10_000_000;

/// The longest `sleep`.
const MAX_SLEEP_SECONDS: f64 = 86_400.0;

/// One output stream of a command: a channel of the session, a container's log (the
/// simulated kubelet's containers), memory (exec probes and lifecycle hooks), or nowhere
/// (the client did not ask for it).
#[derive(Clone, Debug)]
pub(crate) enum Output {
    Discard,
    Channel { writer: ChannelWriter, channel: u8 },
    Log(ContainerLogWriter),
    Capture(Capture),
}

/// The most output a [`Capture`] keeps (kubelet reads 10 KiB of an exec probe's output).
const MAX_CAPTURE: usize = 10 * 1024;

/// A command's output kept in memory, its first 10 KiB (the rest is dropped).
#[derive(Clone, Debug, Default)]
pub(crate) struct Capture(Arc<Mutex<Vec<u8>>>);

impl Capture {
    fn push(&self, data: &[u8]) {
        let mut kept = crate::sync::lock(&self.0);
        let room = MAX_CAPTURE.saturating_sub(kept.len());
        kept.extend_from_slice(&data[..data.len().min(room)]);
    }

    /// What was written, as text (invalid UTF-8 replaced).
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&crate::sync::lock(&self.0)).into_owned()
    }
}

impl Output {
    pub(super) async fn write(&self, data: &[u8]) -> Result<(), Gone> {
        match self {
            Output::Channel { writer, channel } if !data.is_empty() => {
                writer.write(*channel, data).await
            }
            Output::Log(log) => {
                log.write(data);
                Ok(())
            }
            Output::Capture(capture) => {
                capture.push(data);
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// What a command runs with.
#[derive(Debug)]
pub(crate) struct Stdio {
    /// Chunks of stdin; `None` (or a closed channel) is EOF.
    pub(crate) stdin: Option<mpsc::Receiver<Bytes>>,
    pub(crate) stdout: Output,
    /// With a TTY this is the stdout channel, as a terminal merges them.
    pub(crate) stderr: Output,
    /// The terminal size, once the client sent one.
    pub(crate) size: watch::Receiver<Option<TerminalSize>>,
    /// `NAME=value` lines for `env`.
    pub(crate) env: Vec<String>,
    /// Whether the session has a TTY.
    pub(crate) tty: bool,
}

impl Stdio {
    async fn read(&mut self) -> Option<Bytes> {
        match &mut self.stdin {
            Some(stdin) => stdin.recv().await,
            None => None,
        }
    }
}

/// The command is not one of the built-ins.
#[derive(Debug)]
pub(crate) struct NotFound(pub(crate) String);

/// Runs `argv` and returns its exit code. A client that goes away ends the command early
/// (its exit code no longer matters then).
///
/// # Errors
///
/// [`NotFound`] when `argv` is empty or names no built-in command.
pub(crate) async fn run(argv: &[String], io: &mut Stdio) -> Result<i32, NotFound> {
    let Some((program, args)) = argv.split_first() else {
        return Err(NotFound(String::new()));
    };
    // `/bin/echo` is `echo`: the built-ins stand for the image's binaries.
    let program = program.rsplit('/').next().unwrap_or(program);
    let result = match program {
        "sh" | "bash" | "ash" | "dash" => super::shell::sh(args, io).await,
        "echo" => echo(&io.stdout, args).await,
        "echo-stderr" => echo(&io.stderr, args).await,
        "cat" => cat(io).await,
        "env" => {
            let text: String = io.env.iter().map(|line| format!("{line}\n")).collect();
            io.stdout.write(text.as_bytes()).await.map(|()| 0)
        }
        "exit" => exit(&io.stderr, args).await,
        "sleep" => sleep(&io.stderr, args).await,
        "seq" => seq(io, args).await,
        "tty-size" => tty_size(io).await,
        "true" => Ok(0),
        "false" => Ok(1),
        _ => return Err(NotFound(program.to_owned())),
    };
    // A client that left gets no exit code; any value will do.
    Ok(result.unwrap_or(1))
}

async fn echo(output: &Output, args: &[String]) -> Result<i32, Gone> {
    let mut line = args.join(" ");
    line.push('\n');
    output.write(line.as_bytes()).await.map(|()| 0)
}

async fn cat(io: &mut Stdio) -> Result<i32, Gone> {
    while let Some(chunk) = io.read().await {
        io.stdout.write(&chunk).await?;
    }
    Ok(0)
}

async fn exit(stderr: &Output, args: &[String]) -> Result<i32, Gone> {
    let Some(raw) = args.first() else {
        return Ok(0);
    };
    match raw.parse::<i64>() {
        Ok(code) => Ok(i32::try_from(code.rem_euclid(256)).unwrap_or(1)),
        Err(_) => {
            stderr
                .write(format!("exit: {raw}: numeric argument required\n").as_bytes())
                .await?;
            Ok(2)
        }
    }
}

async fn sleep(stderr: &Output, args: &[String]) -> Result<i32, Gone> {
    let seconds = args.first().and_then(|raw| raw.parse::<f64>().ok());
    match seconds {
        Some(seconds) if (0.0..=MAX_SLEEP_SECONDS).contains(&seconds) => {
            tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
            Ok(0)
        }
        _ => {
            stderr
                .write(
                    format!(
                        "sleep: invalid time interval {args:?} (0 to {MAX_SLEEP_SECONDS} seconds)\n"
                    )
                    .as_bytes(),
                )
                .await?;
            Ok(1)
        }
    }
}

async fn seq(io: &mut Stdio, args: &[String]) -> Result<i32, Gone> {
    let Some(last) = args
        .first()
        .and_then(|raw| raw.parse::<u64>().ok())
        .filter(|n| *n <= MAX_SEQ)
    else {
        io.stderr
            .write(
                format!("seq: expected one number from 0 to {MAX_SEQ}, got {args:?}\n").as_bytes(),
            )
            .await?;
        return Ok(1);
    };
    let mut buffer = String::with_capacity(32 * 1024);
    for n in 1..=last {
        buffer.push_str(&n.to_string());
        buffer.push('\n');
        if buffer.len() >= 31 * 1024 {
            io.stdout.write(buffer.as_bytes()).await?;
            buffer.clear();
        }
    }
    io.stdout.write(buffer.as_bytes()).await?;
    Ok(0)
}

async fn tty_size(io: &mut Stdio) -> Result<i32, Gone> {
    let mut size = io.size.clone();
    let received = matches!(
        tokio::time::timeout(FIRST_SIZE_WAIT, size.wait_for(Option::is_some)).await,
        Ok(Ok(_))
    );
    if !received {
        io.stderr
            .write(b"tty-size: no terminal size received (request a TTY and send a resize)\n")
            .await?;
        return Ok(1);
    }
    let print =
        |current: Option<TerminalSize>| current.map(|s| format!("{}x{}\n", s.width, s.height));
    let current = *size.borrow_and_update();
    if let Some(line) = print(current) {
        io.stdout.write(line.as_bytes()).await?;
    }
    if io.stdin.is_none() {
        return Ok(0);
    }
    let mut stdin_open = true;
    loop {
        tokio::select! {
            changed = size.changed() => {
                if changed.is_err() {
                    return Ok(0);
                }
                let current = *size.borrow_and_update();
                if let Some(line) = print(current) {
                    io.stdout.write(line.as_bytes()).await?;
                }
            }
            chunk = io.read(), if stdin_open => match chunk {
                None => stdin_open = false,
                // A terminal's line discipline turns Ctrl-D into EOF; kubectl's raw mode
                // sends the byte itself.
                Some(bytes) if io.tty && bytes.contains(&0x04) => stdin_open = false,
                Some(_) => {}
            },
        }
        if !stdin_open {
            return Ok(0);
        }
    }
}
