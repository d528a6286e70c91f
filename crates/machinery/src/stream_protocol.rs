//! The WebSocket channel protocols of `pods/exec`, `pods/attach` and `pods/portforward`,
//! shared by the client and the embedded server.
//!
//! Every binary WebSocket message starts with one byte naming its channel; the rest is
//! that channel's data (apimachinery's `wsstream`, "channel.k8s.io").
//!
//! - **Remote command** (`v5.channel.k8s.io`, `v4.channel.k8s.io`): channel 0 is stdin,
//!   1 stdout, 2 stderr, 3 the error channel (one `Status` JSON when the command ends: a
//!   `Success`, or a `Failure` with reason `NonZeroExitCode` and the exit code as the
//!   message of an `ExitCode` cause), 4 terminal resize (`{"Width":80,"Height":24}` JSON).
//!   v5 adds the close signal: a message `[255, channel]` says the sender will write no
//!   more on that channel (how a client says "stdin is at EOF"; v4 has no way to).
//! - **Port forward** (`v4.channel.k8s.io` on `pods/portforward?ports=8080,9090`): the
//!   i-th port gets a data channel `2i` and an error channel `2i+1`; the server's first
//!   message on each of them is the port as 2 bytes, little-endian.
//!
//! # Examples
//!
//! ```
//! use kubeclient_machinery::stream_protocol::{self as protocol, Frame};
//!
//! let message = protocol::encode_frame(protocol::STDOUT, b"hello\n");
//! assert_eq!(message[0], 1);
//! assert_eq!(
//!     Frame::parse(&message).unwrap(),
//!     Frame::Data { channel: protocol::STDOUT, data: b"hello\n" }
//! );
//! assert_eq!(Frame::parse(&[255, 0]).unwrap(), Frame::Close { channel: protocol::STDIN });
//! ```

use serde::{Deserialize, Serialize};

use crate::status::{Status, StatusCause, StatusDetails};

/// The remote-command protocol with the close signal (client-go 1.30+, kube-apiserver 1.30+).
pub const STREAM_PROTOCOL_V5: &str = "v5.channel.k8s.io";
/// The remote-command protocol without the close signal (the kubelet's WebSocket protocol).
pub const STREAM_PROTOCOL_V4: &str = "v4.channel.k8s.io";
/// The kubelet's WebSocket port-forward protocol (the same name as remote command v4; the
/// endpoint tells them apart).
pub const PORT_FORWARD_PROTOCOL_V4: &str = "v4.channel.k8s.io";

/// Channel 0: the command's standard input (client to server).
pub const STDIN: u8 = 0;
/// Channel 1: standard output (server to client).
pub const STDOUT: u8 = 1;
/// Channel 2: standard error (server to client); unused with a TTY.
pub const STDERR: u8 = 2;
/// Channel 3: the `Status` the session ended with (server to client).
pub const ERROR: u8 = 3;
/// Channel 4: terminal size changes, JSON (client to server).
pub const RESIZE: u8 = 4;
/// The v5 close signal: `[255, channel]` half-closes `channel`.
pub const CLOSE: u8 = 255;

/// `reason` of the Status of a command that exited with a non-zero code.
pub const NON_ZERO_EXIT_CODE_REASON: &str = "NonZeroExitCode";
/// The cause type (`reason` on the wire) carrying the exit code as its message.
pub const EXIT_CODE_CAUSE: &str = "ExitCode";

/// A terminal size, as the resize channel carries it (Go field names, capitalised).
///
/// # Examples
///
/// ```
/// use kubeclient_machinery::stream_protocol::TerminalSize;
///
/// let size = TerminalSize { width: 80, height: 24 };
/// assert_eq!(serde_json::to_string(&size).unwrap(), r#"{"Width":80,"Height":24}"#);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TerminalSize {
    /// Columns.
    #[serde(rename = "Width", default)]
    pub width: u16,
    /// Rows.
    #[serde(rename = "Height", default)]
    pub height: u16,
}

/// One decoded WebSocket message of a channel protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// Data on a channel (may be empty: servers send an empty message to say "ready").
    Data {
        /// The channel.
        channel: u8,
        /// The payload, without the channel byte.
        data: &'a [u8],
    },
    /// The v5 close signal for a channel.
    Close {
        /// The channel the peer will no longer write on.
        channel: u8,
    },
}

/// Why a message is not a valid channel frame.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// A message without even the channel byte. Peers never send these; the connection
    /// is not speaking a channel protocol.
    #[error("empty WebSocket message (no channel byte)")]
    Empty,
    /// A close signal that does not name exactly one channel.
    #[error("malformed close signal: {0} bytes after the 255 marker (expected 1)")]
    MalformedClose(usize),
    /// The first message of a port-forward channel did not start with the 2-byte port.
    #[error("port-forward channel {channel} did not start with its port (got {len} bytes)")]
    MissingPort {
        /// The channel.
        channel: u8,
        /// How many bytes there were.
        len: usize,
    },
}

impl<'a> Frame<'a> {
    /// Splits a binary message into its channel and data.
    ///
    /// # Errors
    ///
    /// [`FrameError::Empty`] for an empty message, [`FrameError::MalformedClose`] for a
    /// close signal without exactly one channel byte.
    pub fn parse(message: &'a [u8]) -> Result<Self, FrameError> {
        match message.split_first() {
            None => Err(FrameError::Empty),
            Some((&CLOSE, rest)) => match rest {
                [channel] => Ok(Frame::Close { channel: *channel }),
                _ => Err(FrameError::MalformedClose(rest.len())),
            },
            Some((&channel, data)) => Ok(Frame::Data { channel, data }),
        }
    }
}

/// A message carrying `data` on `channel`.
#[must_use]
pub fn encode_frame(channel: u8, data: &[u8]) -> Vec<u8> {
    let mut message = Vec::with_capacity(data.len() + 1);
    message.push(channel);
    message.extend_from_slice(data);
    message
}

/// The v5 close signal for `channel`.
#[must_use]
pub fn close_frame(channel: u8) -> Vec<u8> {
    vec![CLOSE, channel]
}

/// Splits the 2-byte little-endian port off the first message of a port-forward channel.
///
/// # Errors
///
/// [`FrameError::MissingPort`] when fewer than two bytes arrived.
///
/// # Examples
///
/// ```
/// use kubeclient_machinery::stream_protocol::split_port_prefix;
///
/// assert_eq!(split_port_prefix(0, &[0x90, 0x1f, b'x']).unwrap(), (8080, &b"x"[..]));
/// assert!(split_port_prefix(0, &[0x90]).is_err());
/// ```
pub fn split_port_prefix(channel: u8, data: &[u8]) -> Result<(u16, &[u8]), FrameError> {
    match data {
        [low, high, rest @ ..] => Ok((u16::from_le_bytes([*low, *high]), rest)),
        _ => Err(FrameError::MissingPort {
            channel,
            len: data.len(),
        }),
    }
}

/// The Status a server writes on the error channel when a command ends with `code`
/// (a `Success` for 0), as the kubelet writes it.
///
/// # Examples
///
/// ```
/// use kubeclient_machinery::stream_protocol::{exit_code, exit_status};
///
/// assert_eq!(exit_code(&exit_status(3, "exit 3")), Some(3));
/// assert_eq!(exit_code(&exit_status(0, "true")), Some(0));
/// ```
#[must_use]
pub fn exit_status(code: i32, command: &str) -> Status {
    if code == 0 {
        return Status::success(None);
    }
    Status {
        status: "Failure".to_owned(),
        reason: NON_ZERO_EXIT_CODE_REASON.to_owned(),
        message: format!(
            "command terminated with non-zero exit code: command {command:?} exited with {code}"
        ),
        details: Some(StatusDetails {
            causes: vec![StatusCause::new(EXIT_CODE_CAUSE, &code.to_string(), "")],
            ..StatusDetails::default()
        }),
        ..Status::default()
    }
}

/// The exit code a Status from the error channel reports: 0 for `Success`, the code of a
/// `NonZeroExitCode` failure, `None` for any other failure (the command did not run).
#[must_use]
pub fn exit_code(status: &Status) -> Option<i32> {
    if status.status == "Success" {
        return Some(0);
    }
    if status.reason != NON_ZERO_EXIT_CODE_REASON {
        return None;
    }
    status
        .details
        .as_ref()?
        .causes
        .iter()
        .find(|cause| cause.reason == EXIT_CODE_CAUSE)
        .and_then(|cause| cause.message.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_empty_messages_and_malformed_close_signals() {
        assert_eq!(Frame::parse(&[]), Err(FrameError::Empty));
        assert_eq!(Frame::parse(&[255]), Err(FrameError::MalformedClose(0)));
        assert_eq!(
            Frame::parse(&[255, 0, 1]),
            Err(FrameError::MalformedClose(2))
        );
        assert_eq!(
            Frame::parse(&[2]),
            Ok(Frame::Data {
                channel: 2,
                data: &[]
            })
        );
    }

    #[test]
    fn non_zero_exit_status_matches_the_kubelet_wire_form() {
        let status = exit_status(42, "exit 42");
        let wire = serde_json::to_value(&status).unwrap();
        assert_eq!(wire["status"], "Failure");
        assert_eq!(wire["reason"], "NonZeroExitCode");
        assert_eq!(wire["details"]["causes"][0]["reason"], "ExitCode");
        assert_eq!(wire["details"]["causes"][0]["message"], "42");
        let back: Status = serde_json::from_value(wire).unwrap();
        assert_eq!(exit_code(&back), Some(42));
    }

    #[test]
    fn failures_without_an_exit_code_have_none() {
        let mut status = exit_status(1, "x");
        status.details = None;
        assert_eq!(exit_code(&status), None);
        status.reason = "InternalError".to_owned();
        assert_eq!(exit_code(&status), None);
    }
}
