//! The streaming client's error type: every way talking to a runtime's streaming server can
//! fail, each naming the URL the runtime answered with, so a failed case says which stream.

use std::time::Duration;

/// A streaming call (exec, attach or port forward) that failed.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// The URL does not parse, or names no host or port the client can dial.
    #[error("streaming URL {url:?} is not usable: {reason}")]
    InvalidUrl {
        /// The URL as the runtime gave it.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The URL's host is not a loopback address: the harness sends traffic only to the
    /// machine itself.
    #[error("refusing streaming URL {url:?}: host {host:?} is not 127.0.0.1, ::1 or localhost")]
    NotLoopback {
        /// The URL as the runtime gave it.
        url: String,
        /// Its host.
        host: String,
    },
    /// The URL asks for TLS (`https`/`wss`), which the client does not speak.
    #[error("streaming URL {url:?} asks for TLS, which the harness's client does not speak")]
    Tls {
        /// The URL as the runtime gave it.
        url: String,
    },
    /// The TCP connection to the streaming server failed.
    #[error("cannot connect to the streaming server at {url:?}")]
    Connect {
        /// The URL as the runtime gave it.
        url: String,
        /// The socket's error.
        #[source]
        source: std::io::Error,
    },
    /// The WebSocket upgrade failed (the server refused it, or answered no subprotocol the
    /// client offered).
    #[error("WebSocket upgrade of {url:?} failed (offered subprotocols {offered:?})")]
    Handshake {
        /// The URL as the runtime gave it.
        url: String,
        /// The subprotocols the client offered, best first.
        offered: Vec<String>,
        /// The WebSocket library's error, with the server's HTTP answer if it sent one.
        #[source]
        source: Box<tokio_tungstenite::tungstenite::Error>,
    },
    /// The server accepted the upgrade with a subprotocol the client did not offer, or none.
    #[error("streaming server at {url:?} chose subprotocol {chosen:?}, not one of {offered:?}")]
    Subprotocol {
        /// The URL as the runtime gave it.
        url: String,
        /// The server's `Sec-WebSocket-Protocol` (empty: none).
        chosen: String,
        /// The subprotocols the client offered.
        offered: Vec<String>,
    },
    /// Reading or writing a WebSocket message failed after the upgrade.
    #[error("WebSocket of {url:?} broke")]
    WebSocket {
        /// The URL as the runtime gave it.
        url: String,
        /// The WebSocket library's error.
        #[source]
        source: Box<tokio_tungstenite::tungstenite::Error>,
    },
    /// The whole call did not finish by the caller's deadline: the server went silent, or the
    /// command or relay simply ran longer.
    #[error("streaming to {url:?} did not finish within its deadline ({after:?})")]
    Deadline {
        /// The URL as the runtime gave it.
        url: String,
        /// How long the call had when it started.
        after: Duration,
    },
    /// The server sent a text message: the `base64` protocols, which the client never offers.
    #[error("streaming server at {url:?} sent a text message on a binary channel protocol")]
    TextMessage {
        /// The URL as the runtime gave it.
        url: String,
    },
    /// The error channel carried something that is not a JSON `metav1.Status`.
    #[error("streaming server at {url:?} sent an unreadable status {text:?}")]
    BadStatus {
        /// The URL as the runtime gave it.
        url: String,
        /// The error channel's text.
        text: String,
        /// The JSON parser's complaint.
        #[source]
        source: serde_json::Error,
    },
    /// The server closed the connection before writing the command's status.
    #[error("streaming server at {url:?} closed the connection without a status")]
    ClosedWithoutStatus {
        /// The URL as the runtime gave it.
        url: String,
    },
    /// A port-forward channel opened with a port other than the one requested, or with a
    /// payload that is not a two-byte port.
    #[error("port-forward {url:?} for port {port} opened channel {channel} with {got:?}")]
    PortPrefix {
        /// The URL as the runtime gave it.
        url: String,
        /// The port requested.
        port: u16,
        /// The channel that opened wrongly.
        channel: u8,
        /// The channel's first payload.
        got: Vec<u8>,
    },
    /// The server sent data on a channel the protocol does not have for this stream.
    #[error(
        "streaming server at {url:?} wrote on channel {channel}, which this stream does not have"
    )]
    UnexpectedChannel {
        /// The URL as the runtime gave it.
        url: String,
        /// The channel byte.
        channel: u8,
    },
    /// The server closed before opening the port's channels: it was not asked to forward this
    /// port (a runtime on the kubelet's library forwards the PortForward request's ports and
    /// ignores the `port` query).
    #[error("port-forward {url:?} closed without opening port {port}; did the PortForward request name it?")]
    PortNotOpened {
        /// The URL as the runtime gave it.
        url: String,
        /// The port requested.
        port: u16,
    },
    /// The server reported a port-forward failure on the error channel (e.g. nothing listens
    /// on the port in the pod).
    #[error("port-forward of port {port} through {url:?} failed: {message}")]
    PortForward {
        /// The URL as the runtime gave it.
        url: String,
        /// The port requested.
        port: u16,
        /// The error channel's text, as the server wrote it.
        message: String,
    },
    /// Reading or writing the caller's local end of a port-forward relay failed.
    #[error("local end of the port-forward of port {port} through {url:?} failed")]
    Local {
        /// The URL as the runtime gave it.
        url: String,
        /// The port requested.
        port: u16,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl StreamError {
    /// True when the call ran out of its deadline (as opposed to failing outright).
    pub fn is_deadline(&self) -> bool {
        matches!(self, StreamError::Deadline { .. })
    }
}
