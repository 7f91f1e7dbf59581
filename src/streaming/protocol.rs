//! The Kubernetes WebSocket channel protocols, as the kubelet's streaming server library
//! (`k8s.io/kubelet/pkg/cri/streaming`, which containerd embeds) and client-go speak them.
//!
//! Every WebSocket message carries one channel's data: its first byte is the channel number,
//! the rest is the payload (in the binary protocols; the `base64` variants, which this crate
//! does not speak, send text). An empty payload is legal and means nothing but "this channel
//! is open": the server sends one on its lowest writable channel once the streams are ready.
//!
//! Remote command (exec, attach): stdin 0, stdout 1, stderr 2, error 3, resize 4. From `v4`
//! the error channel carries one JSON `metav1.Status` with the exit code; `v5` adds a close
//! message on channel 255 that half-closes one channel (stdin), which `v4` cannot express.
//!
//! Port forward: a pair of channels per requested port, data `2i` and error `2i + 1`; the
//! server opens each channel with the port number as two little-endian bytes.

use serde::{Deserialize, Serialize};

/// Remote command, version 4: the JSON status on the error channel.
pub const REMOTE_COMMAND_V4: &str = "v4.channel.k8s.io";
/// Remote command, version 5: version 4 plus the close message.
pub const REMOTE_COMMAND_V5: &str = "v5.channel.k8s.io";
/// The subprotocols a client offers for exec and attach, best first.
pub const REMOTE_COMMAND_PROTOCOLS: &[&str] = &[REMOTE_COMMAND_V5, REMOTE_COMMAND_V4];
/// Port forward over WebSocket (the server accepts the same v4 channel protocol name).
pub const PORT_FORWARD_V4: &str = "v4.channel.k8s.io";
/// The query parameter that names a port to forward, once per port, as client-go sends it.
/// containerd 1.6 (the kubelet's CRI streaming library) ignores it and forwards the ports of
/// the PortForward request instead.
pub const PORT_QUERY: &str = "port";

/// A remote-command channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Channel {
    /// The process's standard input, client to server.
    Stdin = 0,
    /// Its standard output (with a TTY, standard error too).
    Stdout = 1,
    /// Its standard error (absent with a TTY).
    Stderr = 2,
    /// The outcome: a JSON status (v4 and later).
    Error = 3,
    /// Terminal size changes, client to server, as JSON.
    Resize = 4,
    /// v5: the payload's one byte names a channel the sender will write no more to.
    Close = 255,
}

impl Channel {
    /// The channel with this number, if remote command defines one.
    pub fn from_byte(byte: u8) -> Option<Channel> {
        Some(match byte {
            0 => Channel::Stdin,
            1 => Channel::Stdout,
            2 => Channel::Stderr,
            3 => Channel::Error,
            4 => Channel::Resize,
            255 => Channel::Close,
            _ => return None,
        })
    }
}

/// One message: the channel byte, then the payload.
pub fn frame(channel: u8, payload: &[u8]) -> Vec<u8> {
    let mut message = Vec::with_capacity(payload.len() + 1);
    message.push(channel);
    message.extend_from_slice(payload);
    message
}

/// A message's channel and payload; `None` for an empty message, which carries neither.
pub fn split(message: &[u8]) -> Option<(u8, &[u8])> {
    message
        .split_first()
        .map(|(channel, payload)| (*channel, payload))
}

/// Port forward: the data channel of the `index`th requested port.
pub fn data_channel(index: usize) -> Option<u8> {
    u8::try_from(index * 2).ok()
}

/// Port forward: the error channel of the `index`th requested port.
pub fn error_channel(index: usize) -> Option<u8> {
    u8::try_from(index * 2 + 1).ok()
}

/// Port forward: the payload that opens a port's channels.
pub fn port_prefix(port: u16) -> [u8; 2] {
    port.to_le_bytes()
}

/// A terminal size, the resize channel's message (Go's field names, capitalised).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TerminalSize {
    /// Columns.
    #[serde(rename = "Width")]
    pub width: u16,
    /// Rows.
    #[serde(rename = "Height")]
    pub height: u16,
}

/// The `metav1.Status` a v4 server writes on the error channel when the command ends. Only
/// the fields the outcome depends on are read; unknown ones are ignored.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Status {
    /// `Success` or `Failure`.
    #[serde(default)]
    pub status: String,
    /// Why it failed, e.g. `NonZeroExitCode`, or `InternalError`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// The human-readable failure.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Details: with `NonZeroExitCode`, a cause `ExitCode` whose message is the code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<StatusDetails>,
}

/// `metav1.StatusDetails`, the causes only.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StatusDetails {
    /// The causes.
    #[serde(default)]
    pub causes: Vec<StatusCause>,
}

/// `metav1.StatusCause`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StatusCause {
    /// E.g. `ExitCode`.
    #[serde(default)]
    pub reason: String,
    /// E.g. `3`.
    #[serde(default)]
    pub message: String,
}

/// What a command's status says about how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It exited with this code (0 for `Success`).
    Exited(i32),
    /// The server could not run it, or lost it: the status's message.
    Failed(String),
}

const NON_ZERO_EXIT: &str = "NonZeroExitCode";
const EXIT_CODE_CAUSE: &str = "ExitCode";

impl Status {
    /// The status of a command that exited with `code`, as the kubelet's server writes it.
    pub fn exited(code: i32) -> Status {
        if code == 0 {
            return Status {
                status: "Success".to_owned(),
                ..Status::default()
            };
        }
        Status {
            status: "Failure".to_owned(),
            reason: NON_ZERO_EXIT.to_owned(),
            message: format!("command terminated with non-zero exit code: exit status {code}"),
            details: Some(StatusDetails {
                causes: vec![StatusCause {
                    reason: EXIT_CODE_CAUSE.to_owned(),
                    message: code.to_string(),
                }],
            }),
        }
    }

    /// The status of a command the server could not run.
    pub fn failed(message: impl Into<String>) -> Status {
        Status {
            status: "Failure".to_owned(),
            reason: "InternalError".to_owned(),
            message: message.into(),
            details: None,
        }
    }

    /// How the command ended. A `Failure` that names no readable exit code is a failure of
    /// the server, not an exit.
    pub fn outcome(&self) -> Outcome {
        if self.status == "Success" {
            return Outcome::Exited(0);
        }
        let code = (self.reason == NON_ZERO_EXIT)
            .then_some(self.details.as_ref())
            .flatten()
            .and_then(|details| {
                details
                    .causes
                    .iter()
                    .find(|cause| cause.reason == EXIT_CODE_CAUSE)
            })
            .and_then(|cause| cause.message.trim().parse().ok());
        match code {
            Some(code) => Outcome::Exited(code),
            None if self.message.is_empty() => {
                Outcome::Failed(format!("status {:?} without a message", self.status))
            }
            None => Outcome::Failed(self.message.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(0)]
    #[case(1)]
    #[case(42)]
    #[case(255)]
    fn an_exit_status_reads_back_as_its_code(#[case] code: i32) {
        let json = serde_json::to_string(&Status::exited(code)).unwrap();
        let status: Status = serde_json::from_str(&json).unwrap();
        assert_eq!(status.outcome(), Outcome::Exited(code));
    }

    #[test]
    fn the_kubelets_failure_json_gives_the_exit_code() {
        let json = r#"{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: error executing command [sh -c exit 7], exit code 7","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"7"}]}}"#;
        let status: Status = serde_json::from_str(json).unwrap();
        assert_eq!(status.outcome(), Outcome::Exited(7));
    }

    #[test]
    fn a_failure_without_an_exit_code_is_the_servers_failure() {
        let status = Status::failed("container not running");
        assert_eq!(
            status.outcome(),
            Outcome::Failed("container not running".to_owned())
        );
        assert!(matches!(Status::default().outcome(), Outcome::Failed(_)));
    }

    #[test]
    fn a_frame_splits_into_its_channel_and_payload() {
        let message = frame(Channel::Stderr as u8, b"oops");
        assert_eq!(split(&message), Some((2, &b"oops"[..])));
        assert_eq!(split(&frame(1, b"")), Some((1, &b""[..])));
        assert_eq!(split(b""), None);
        assert_eq!(Channel::from_byte(255), Some(Channel::Close));
        assert_eq!(Channel::from_byte(9), None);
    }

    #[test]
    fn port_channels_pair_up_and_open_with_the_port() {
        assert_eq!((data_channel(0), error_channel(0)), (Some(0), Some(1)));
        assert_eq!((data_channel(3), error_channel(3)), (Some(6), Some(7)));
        assert_eq!(data_channel(200), None);
        assert_eq!(port_prefix(8080), [0x90, 0x1f]);
    }

    #[test]
    fn a_resize_uses_gos_field_names() {
        let json = serde_json::to_string(&TerminalSize {
            width: 80,
            height: 24,
        })
        .unwrap();
        assert_eq!(json, r#"{"Width":80,"Height":24}"#);
    }
}
