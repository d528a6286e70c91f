//! The commands `exec` and `attach` run. The embedded server has no containers and never
//! starts a host process: each command is a small function of the server itself, reading
//! the session's stdin and writing its stdout and stderr.
//!
//! | command | does | exit code |
//! |---|---|---|
//! | `echo [-n] ARGS...` | prints the arguments, space-separated, and a newline (none with `-n`) | 0 |
//! | `echo-stderr ARGS...` | the same on stderr | 0 |
//! | `cat` | copies stdin to stdout until stdin ends | 0 |
//! | `date [+FORMAT]` | prints the time in UTC (`Sat Dec  5 01:20:00 UTC 2026`, or strftime's FORMAT) | 0 |
//! | `ls [PATH...]` | lists a small image's directories (`/`: `bin dev etc ...`, `/bin`: these commands) | 0 (2 for a path that does not exist) |
//! | `gzip` / `gzip -d`, `gunzip`, `zcat` | compresses / decompresses stdin to stdout | 0 (1 for data that is not gzip) |
//! | `env` | prints `HOSTNAME=<pod>` and the container's literal `env` values, one per line | 0 |
//! | `exit N` | nothing | N modulo 256 (2 and a message if N is not a number) |
//! | `sleep N` | waits N seconds (at most a day; fractions allowed) | 0 |
//! | `seq [FIRST [INCREMENT]] LAST` | prints FIRST (1) to LAST by INCREMENT (1), one per line (at most 10,000,000 lines) | 0 |
//! | `tty-size` | prints the terminal size as `WIDTHxHEIGHT` (waiting up to 5 s for the first resize), then each new size until stdin ends (or, with a TTY, a Ctrl-D byte arrives, as a terminal would turn it into EOF) | 0 |
//! | `true` / `false` | nothing | 0 / 1 |
//! | `uptime` | one line: the time, `up N min`, no users, no load | 0 |
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
pub(crate) const BUILTIN_COMMANDS: &str = "echo, echo-stderr, cat, date, env, exit, gzip, gunzip, zcat, ls, sleep, seq, tty-size, true, false, uptime, sh";

/// How long `tty-size` waits for the client's first resize message.
const FIRST_SIZE_WAIT: Duration = Duration::from_secs(5);

/// The largest `seq` bound.
const MAX_SEQ: i64 = 10_000_000;

/// The longest `sleep`.
const MAX_SLEEP_SECONDS: f64 = 86_400.0;

/// One output stream of a command: a channel of the session, a container's log (the
/// simulated kubelet's containers), memory (exec probes and lifecycle hooks), or nowhere
/// (the client did not ask for it).
#[derive(Clone, Debug)]
pub(crate) enum Output {
    Discard,
    Channel {
        writer: ChannelWriter,
        channel: u8,
    },
    Log(ContainerLogWriter),
    /// The shell's pipe to the next command of a pipeline (its reader gone: [`Gone`]).
    Pipe(mpsc::Sender<Bytes>),
    Capture(Capture),
}

/// How much output a [`Capture`] keeps by default (kubelet reads 10 KiB of an exec
/// probe's output).
const PROBE_CAPTURE: usize = 10 * 1024;

/// A command's output kept in memory, up to a limit (the rest is dropped): an exec
/// probe's or hook's (10 KiB), a shell's command substitution.
#[derive(Clone, Debug)]
pub(crate) struct Capture {
    kept: Arc<Mutex<Vec<u8>>>,
    limit: usize,
}

impl Default for Capture {
    fn default() -> Self {
        Capture::with_limit(PROBE_CAPTURE)
    }
}

impl Capture {
    /// A capture that keeps the first `limit` bytes.
    pub(crate) fn with_limit(limit: usize) -> Self {
        Capture {
            kept: Arc::default(),
            limit,
        }
    }

    fn push(&self, data: &[u8]) {
        let mut kept = crate::sync::lock(&self.kept);
        let room = self.limit.saturating_sub(kept.len());
        kept.extend_from_slice(&data[..data.len().min(room)]);
    }

    /// What was written, as text (invalid UTF-8 replaced).
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&crate::sync::lock(&self.kept)).into_owned()
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
            Output::Pipe(sender) if !data.is_empty() => sender
                .send(Bytes::copy_from_slice(data))
                .await
                .map_err(|_| Gone),
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
    pub(super) async fn read(&mut self) -> Option<Bytes> {
        match &mut self.stdin {
            Some(stdin) => stdin.recv().await,
            None => None,
        }
    }
}

/// The command is not one of the built-ins.
#[derive(Debug)]
pub(crate) struct NotFound(pub(crate) String);

/// Whether `program` (a path or a name) is one of the built-in commands.
pub(crate) fn is_builtin(program: &str) -> bool {
    let name = program.rsplit('/').next().unwrap_or(program);
    BUILTIN_NAMES.contains(&name)
}

/// Every name [`run`] answers to.
const BUILTIN_NAMES: &[&str] = &[
    "sh",
    "bash",
    "ash",
    "dash",
    "echo",
    "echo-stderr",
    "cat",
    "date",
    "env",
    "exit",
    "gzip",
    "gunzip",
    "zcat",
    "ls",
    "sleep",
    "seq",
    "tty-size",
    "true",
    "false",
    "uptime",
];

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
        "date" => date(io, args).await,
        "gzip" => {
            gzip(
                io,
                args.iter().any(|a| a.starts_with('-') && a.contains('d')),
            )
            .await
        }
        "gunzip" | "zcat" => gzip(io, true).await,
        "uptime" => uptime(io).await,
        "ls" => ls(io, args).await,
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

/// `echo [-n] ARGS...`: the arguments, space-separated, and a newline unless `-n`.
async fn echo(output: &Output, args: &[String]) -> Result<i32, Gone> {
    let (newline, args) = match args.split_first() {
        Some((flag, rest)) if flag == "-n" => (false, rest),
        _ => (true, args),
    };
    let mut line = args.join(" ");
    if newline {
        line.push('\n');
    }
    output.write(line.as_bytes()).await.map(|()| 0)
}

/// `gzip` compresses stdin to stdout; `gzip -d`, `gunzip` and `zcat` decompress (exit code
/// 1 and a message for data that is not gzip).
async fn gzip(io: &mut Stdio, decompress: bool) -> Result<i32, Gone> {
    use std::io::Write as _;
    enum Coder {
        Encode(flate2::write::GzEncoder<Vec<u8>>),
        Decode(flate2::write::GzDecoder<Vec<u8>>),
    }
    let mut coder = if decompress {
        Coder::Decode(flate2::write::GzDecoder::new(Vec::new()))
    } else {
        Coder::Encode(flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::default(),
        ))
    };
    let failed = |err: std::io::Error| format!("gzip: stdin: {err}\n");
    while let Some(chunk) = io.read().await {
        let (written, produced) = match &mut coder {
            Coder::Encode(encoder) => (encoder.write_all(&chunk), encoder.get_mut()),
            Coder::Decode(decoder) => (decoder.write_all(&chunk), decoder.get_mut()),
        };
        let output = std::mem::take(produced);
        io.stdout.write(&output).await?;
        if let Err(err) = written {
            io.stderr.write(failed(err).as_bytes()).await?;
            return Ok(1);
        }
    }
    let finished = match coder {
        Coder::Encode(encoder) => encoder.finish(),
        Coder::Decode(decoder) => decoder.finish(),
    };
    match finished {
        Ok(rest) => io.stdout.write(&rest).await.map(|()| 0),
        Err(err) => {
            io.stderr.write(failed(err).as_bytes()).await?;
            Ok(1)
        }
    }
}

/// `uptime`: the time, how long the simulated machine has been up (since the server's
/// first `uptime`), no users and no load.
async fn uptime(io: &mut Stdio) -> Result<i32, Gone> {
    static BOOTED: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let minutes = BOOTED
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_secs()
        / 60;
    let now = jiff::Timestamp::now().to_zoned(jiff::tz::TimeZone::UTC);
    let line = format!(
        " {} up {minutes} min,  0 users,  load average: 0.00, 0.00, 0.00\n",
        now.strftime("%H:%M:%S")
    );
    io.stdout.write(line.as_bytes()).await.map(|()| 0)
}

async fn cat(io: &mut Stdio) -> Result<i32, Gone> {
    while let Some(chunk) = io.read().await {
        io.stdout.write(&chunk).await?;
    }
    Ok(0)
}

/// `date` (`Sat Dec  5 01:20:00 UTC 2026`, the clock in UTC), `date +FORMAT` (strftime
/// conversions such as `+%s`); `-u` changes nothing.
async fn date(io: &mut Stdio, args: &[String]) -> Result<i32, Gone> {
    let mut format = "%a %b %e %H:%M:%S UTC %Y";
    for arg in args {
        match arg.strip_prefix('+') {
            Some(custom) => format = custom,
            None if arg == "-u" || arg == "--utc" => {}
            None => {
                io.stderr
                    .write(format!("date: unsupported argument {arg:?}\n").as_bytes())
                    .await?;
                return Ok(1);
            }
        }
    }
    let now = jiff::Timestamp::now().to_zoned(jiff::tz::TimeZone::UTC);
    match jiff::fmt::strtime::format(format, &now) {
        Ok(mut text) => {
            text.push('\n');
            io.stdout.write(text.as_bytes()).await.map(|()| 0)
        }
        Err(err) => {
            io.stderr
                .write(format!("date: invalid format {format:?}: {err}\n").as_bytes())
                .await?;
            Ok(1)
        }
    }
}

/// The directories of the simulated container's file system that `ls` shows: a small
/// image's root, with the built-in commands in `/bin`.
const ROOT_ENTRIES: &[&str] = &[
    "bin", "dev", "etc", "home", "lib", "proc", "root", "sys", "tmp", "usr", "var",
];
const BIN_ENTRIES: &[&str] = &[
    "cat", "date", "echo", "env", "false", "ls", "sh", "sleep", "seq", "true",
];

/// `ls [-a|-l|-1 ...] [PATH...]` over the simulated file system: `/` and `/bin` have
/// entries, its other top-level directories are empty, anything else does not exist
/// (exit code 2, as GNU ls).
async fn ls(io: &mut Stdio, args: &[String]) -> Result<i32, Gone> {
    let paths: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|arg| !arg.starts_with('-'))
        .collect();
    let paths = if paths.is_empty() { vec!["/"] } else { paths };
    let mut code = 0;
    let mut listing = String::new();
    for path in &paths {
        let trimmed = path.trim_end_matches('/');
        let entries: &[&str] = match trimmed {
            "" | "/." => ROOT_ENTRIES,
            "/bin" | "/usr/bin" => BIN_ENTRIES,
            other
                if other
                    .strip_prefix('/')
                    .is_some_and(|name| ROOT_ENTRIES.contains(&name)) =>
            {
                &[]
            }
            _ => {
                io.stderr
                    .write(
                        format!("ls: cannot access '{path}': No such file or directory\n")
                            .as_bytes(),
                    )
                    .await?;
                code = 2;
                continue;
            }
        };
        if paths.len() > 1 {
            listing.push_str(&format!("{path}:\n"));
        }
        for entry in entries {
            listing.push_str(entry);
            listing.push('\n');
        }
    }
    io.stdout.write(listing.as_bytes()).await?;
    Ok(code)
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

/// `seq LAST`, `seq FIRST LAST`, `seq FIRST INCREMENT LAST` (integers; at most
/// [`MAX_SEQ`] lines).
async fn seq(io: &mut Stdio, args: &[String]) -> Result<i32, Gone> {
    let numbers: Option<Vec<i64>> = args.iter().map(|raw| raw.parse::<i64>().ok()).collect();
    let bounds = match numbers.as_deref() {
        Some(&[last]) => Some((1, 1, last)),
        Some(&[first, last]) => Some((first, 1, last)),
        Some(&[first, increment, last]) if increment != 0 => Some((first, increment, last)),
        _ => None,
    };
    let count = bounds.map(|(first, increment, last)| {
        let span = i128::from(last) - i128::from(first);
        let steps = span / i128::from(increment);
        if steps < 0 { 0 } else { steps + 1 }
    });
    let (Some((first, increment, _)), Some(count)) =
        (bounds, count.filter(|n| *n <= i128::from(MAX_SEQ)))
    else {
        io.stderr
            .write(
                format!("seq: expected LAST, FIRST LAST or FIRST INCREMENT LAST (integers, at most {MAX_SEQ} lines), got {args:?}\n").as_bytes(),
            )
            .await?;
        return Ok(1);
    };
    let mut buffer = String::with_capacity(32 * 1024);
    let mut n = i128::from(first);
    for _ in 0..count {
        buffer.push_str(&n.to_string());
        buffer.push('\n');
        n += i128::from(increment);
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
