//! The streaming server's own failures: starting its listener and serving one connection.
//! None reaches a CRI caller as a status; they end a connection and are logged.

/// Starting the streaming server or serving a connection failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StreamingError {
    /// Binding the loopback listener failed.
    #[error("cannot listen on 127.0.0.1 for the mock's streaming server")]
    Bind {
        /// Why binding failed.
        #[source]
        source: std::io::Error,
    },
    /// The HTTP exchange before the upgrade failed.
    #[error("HTTP exchange with a streaming client from {peer} failed")]
    Http {
        /// The client's address.
        peer: std::net::SocketAddr,
        /// hyper's error.
        #[source]
        source: hyper::Error,
    },
    /// The upgraded connection could not be taken over.
    #[error("taking over the upgraded connection from {peer} failed")]
    Upgrade {
        /// The client's address.
        peer: std::net::SocketAddr,
        /// hyper's error.
        #[source]
        source: hyper::Error,
    },
    /// Reading or writing a WebSocket message failed.
    #[error("WebSocket {route} session failed")]
    WebSocket {
        /// `exec`, `attach` or `portforward`.
        route: &'static str,
        /// tungstenite's error.
        #[source]
        source: tokio_tungstenite::tungstenite::Error,
    },
}
