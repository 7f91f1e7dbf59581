//! Dialling a runtime's streaming URL: the loopback-only check, the `http` to `ws` scheme
//! change, the TCP connection and the WebSocket upgrade with the subprotocols offered. The
//! remote-command and port-forward clients share it.
//!
//! A streaming server's loopback address is its own network namespace's: a runtime that runs
//! in a namespace of its own (as CI's containerd does) answers URLs only reachable from
//! there. [`StreamUrl::dialled_from`] makes the client create its socket in that namespace,
//! and [`runtime_netns`] finds the namespace of the process serving a CRI socket.

use std::fs::File;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::AsFd as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use http::Uri;
use rustix::thread::{move_into_link_name_space, LinkNameSpaceType};
use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::WebSocketStream;

use super::error::StreamError;

/// The header that carries the offered subprotocols and the server's choice.
const PROTOCOL_HEADER: &str = "Sec-WebSocket-Protocol";

/// A streaming URL the client may dial: it parsed, it is plain HTTP or WebSocket, and its host
/// is loopback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamUrl {
    /// The URL as the runtime gave it, for messages.
    text: String,
    /// The same URL with the `ws` scheme.
    ws: Uri,
    /// Where to connect, in order of preference.
    addrs: Vec<SocketAddr>,
    /// The network namespace to create the socket in; `None`: the caller's.
    netns: Option<PathBuf>,
}

impl StreamUrl {
    /// Checks `url` (as a runtime answered Exec, Attach or PortForward) and keeps it for
    /// dialling. Only `http`/`ws` URLs whose host is `127.0.0.1`, `::1` or `localhost` pass:
    /// the harness sends traffic only to the machine itself.
    pub fn parse(url: &str) -> Result<StreamUrl, StreamError> {
        let invalid = |reason: &str| StreamError::InvalidUrl {
            url: url.to_owned(),
            reason: reason.to_owned(),
        };
        let uri: Uri = url.parse().map_err(|e: http::uri::InvalidUri| {
            invalid(&format!("it does not parse as a URI ({e})"))
        })?;
        match uri.scheme_str() {
            Some("http" | "ws") => {}
            Some("https" | "wss") => {
                return Err(StreamError::Tls {
                    url: url.to_owned(),
                })
            }
            Some(other) => return Err(invalid(&format!("scheme {other:?} is not http or ws"))),
            None => return Err(invalid("it has no scheme (an absolute http URL is needed)")),
        }
        let host = uri.host().ok_or_else(|| invalid("it has no host"))?;
        let port = uri.port_u16().unwrap_or(80);
        let ips = loopback_ips(host).ok_or_else(|| StreamError::NotLoopback {
            url: url.to_owned(),
            host: host.to_owned(),
        })?;
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        let authority = uri.authority().map_or("", |a| a.as_str());
        let ws: Uri =
            format!("ws://{authority}{path}")
                .parse()
                .map_err(|e: http::uri::InvalidUri| {
                    invalid(&format!("its ws form is invalid ({e})"))
                })?;
        Ok(StreamUrl {
            text: url.to_owned(),
            ws,
            addrs: ips
                .into_iter()
                .map(|ip| SocketAddr::new(ip, port))
                .collect(),
            netns: None,
        })
    }

    /// The URL as the runtime gave it.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The same URL with `name=value` added to its query (client-go names forwarded ports
    /// this way).
    pub fn with_query(&self, name: &str, value: &str) -> Result<StreamUrl, StreamError> {
        let separator = if self.ws.query().is_some() { '&' } else { '?' };
        let ws: Uri = format!("{}{separator}{name}={value}", self.ws)
            .parse()
            .map_err(|e: http::uri::InvalidUri| StreamError::InvalidUrl {
                url: self.text.clone(),
                reason: format!("adding {name}={value} to its query makes it invalid ({e})"),
            })?;
        Ok(StreamUrl { ws, ..self.clone() })
    }

    /// The `ws` form the client requests.
    pub fn ws(&self) -> &Uri {
        &self.ws
    }

    /// The same URL, dialled from the network namespace at `netns` (a `/proc/PID/ns/net` link
    /// or a bind mount of one, e.g. from [`runtime_netns`]). Entering another namespace needs
    /// `CAP_SYS_ADMIN`; a namespace that is the caller's own is not entered.
    pub fn dialled_from(self, netns: impl Into<PathBuf>) -> StreamUrl {
        StreamUrl {
            netns: Some(netns.into()),
            ..self
        }
    }

    /// A TCP connection to the URL's host and port, from its network namespace, trying
    /// each address in turn (`localhost`: IPv4 first).
    pub async fn tcp(&self) -> Result<TcpStream, StreamError> {
        let mut last = None;
        for addr in &self.addrs {
            let connected = match self.socket(addr) {
                Ok(socket) => socket.connect(*addr).await,
                Err(e) => Err(e),
            };
            match connected {
                Ok(stream) => return Ok(stream),
                Err(e) => last = Some(e),
            }
        }
        Err(StreamError::Connect {
            url: self.text.clone(),
            source: last.unwrap_or_else(|| std::io::Error::other("no address to connect to")),
        })
    }

    /// A socket for `addr`, created in the URL's network namespace.
    fn socket(&self, addr: &SocketAddr) -> std::io::Result<TcpSocket> {
        socket_in(self.netns.as_deref(), addr)
    }
}

/// A socket for `addr`, created in the network namespace at `netns` (here without one).
fn socket_in(netns: Option<&Path>, addr: &SocketAddr) -> std::io::Result<TcpSocket> {
    let new = || match addr {
        SocketAddr::V4(_) => TcpSocket::new_v4(),
        SocketAddr::V6(_) => TcpSocket::new_v6(),
    };
    let Some(netns) = netns else {
        return new();
    };
    let target = File::open(netns)?;
    let own = File::open(OWN_NETNS)?;
    let (t, o) = (target.metadata()?, own.metadata()?);
    if (t.dev(), t.ino()) == (o.dev(), o.ino()) {
        return new();
    }
    // A socket stays in the namespace it was made in, so this thread enters the target only
    // for the socket() call and goes straight back: nothing else runs on it meanwhile, and the
    // connect happens asynchronously afterwards.
    move_into_link_name_space(target.as_fd(), Some(LinkNameSpaceType::Network))?;
    let socket = new();
    if let Err(e) = move_into_link_name_space(own.as_fd(), Some(LinkNameSpaceType::Network)) {
        tracing::error!(netns = %netns.display(), error = %e, "cannot return this thread to its network namespace");
        return Err(e.into());
    }
    socket
}

/// A TCP connection to `addr` from the node: the network namespace of the runtime serving the
/// CRI `endpoint`, as [`runtime_url`] dials (here for a TCP or in-memory endpoint). The kubelet's
/// own connections to a pod (an HTTP lifecycle hook) start there.
pub async fn tcp_from_runtime(endpoint: &str, addr: SocketAddr) -> std::io::Result<TcpStream> {
    let netns = crate::cri::Endpoint::parse_relative_to(endpoint, None)
        .ok()
        .and_then(|e| e.unix_path().map(Path::to_path_buf))
        .and_then(|socket| runtime_netns(&socket).ok());
    socket_in(netns.as_deref(), &addr)?.connect(addr).await
}

/// The calling thread's own network namespace.
const OWN_NETNS: &str = "/proc/thread-self/ns/net";

/// `url`, a streaming URL the runtime at CRI `endpoint` answered, dialled from that runtime's
/// network namespace when it serves a unix socket: a runtime may run in a namespace of its
/// own (CI's containerd does), and its streaming server's 127.0.0.1 is then that
/// namespace's loopback. A TCP or in-memory endpoint, or a socket whose server cannot be
/// asked, dials from here.
pub fn runtime_url(url: &str, endpoint: &str) -> Result<StreamUrl, StreamError> {
    let url = StreamUrl::parse(url)?;
    let netns = crate::cri::Endpoint::parse_relative_to(endpoint, None)
        .ok()
        .and_then(|e| e.unix_path().map(Path::to_path_buf))
        .and_then(|socket| runtime_netns(&socket).ok());
    Ok(match netns {
        Some(netns) => url.dialled_from(netns),
        None => url,
    })
}

/// The network namespace of the process serving the unix socket at `socket` (a CRI
/// endpoint): `/proc/PID/ns/net` of the socket's peer, where the runtime's streaming server
/// listens.
pub fn runtime_netns(socket: &Path) -> std::io::Result<PathBuf> {
    let stream = std::os::unix::net::UnixStream::connect(socket)?;
    let peer = rustix::net::sockopt::socket_peercred(&stream)?;
    Ok(PathBuf::from(format!(
        "/proc/{}/ns/net",
        peer.pid.as_raw_nonzero()
    )))
}

/// The addresses of a loopback host, IPv4 first; `None` for any other host. `localhost` is
/// not looked up: a resolver could map it off the machine.
fn loopback_ips(host: &str) -> Option<Vec<IpAddr>> {
    if host.eq_ignore_ascii_case("localhost") {
        return Some(vec![
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(Ipv6Addr::LOCALHOST),
        ]);
    }
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let ip: IpAddr = bare.parse().ok()?;
    (ip == IpAddr::V4(Ipv4Addr::LOCALHOST) || ip == IpAddr::V6(Ipv6Addr::LOCALHOST))
        .then(|| vec![ip])
}

/// A WebSocket to a streaming server and the subprotocol it chose.
pub(crate) type Socket = WebSocketStream<TcpStream>;

/// Connects to `url` and upgrades, offering `protocols` (best first); answers the socket and
/// the server's choice, which is one of them.
pub(crate) async fn open(
    url: &StreamUrl,
    protocols: &[&str],
) -> Result<(Socket, String), StreamError> {
    let offered = || {
        protocols
            .iter()
            .map(|p| (*p).to_owned())
            .collect::<Vec<_>>()
    };
    let tcp = url.tcp().await?;
    // Streams are many small messages (a keystroke, a resize): waiting to fill a segment
    // would only add latency.
    let _ = tcp.set_nodelay(true);

    let handshake = |source| StreamError::Handshake {
        url: url.text.clone(),
        offered: offered(),
        source: Box::new(source),
    };
    let mut request = url.ws.clone().into_client_request().map_err(handshake)?;
    let header =
        HeaderValue::from_str(&protocols.join(", ")).map_err(|_| StreamError::InvalidUrl {
            url: url.text.clone(),
            reason: format!("subprotocols {protocols:?} do not fit in a header"),
        })?;
    request.headers_mut().insert(PROTOCOL_HEADER, header);
    let (socket, response) = tokio_tungstenite::client_async(request, tcp)
        .await
        .map_err(handshake)?;

    let chosen = response
        .headers()
        .get(PROTOCOL_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .trim()
        .to_owned();
    if !protocols.contains(&chosen.as_str()) {
        return Err(StreamError::Subprotocol {
            url: url.text.clone(),
            chosen,
            offered: offered(),
        });
    }
    Ok((socket, chosen))
}

/// The next binary message the server sends, skipping pings and pongs; `None` once it closes
/// (a close message, or the connection ending). A text message is a protocol error: these
/// protocols are binary.
pub(crate) async fn next_binary<S>(
    stream: &mut S,
    url: &StreamUrl,
) -> Result<Option<tokio_tungstenite::tungstenite::Bytes>, StreamError>
where
    S: futures::Stream<
            Item = Result<
                tokio_tungstenite::tungstenite::Message,
                tokio_tungstenite::tungstenite::Error,
            >,
        > + Unpin,
{
    use futures::StreamExt as _;
    use tokio_tungstenite::tungstenite::{Error, Message};
    while let Some(message) = stream.next().await {
        match message {
            Ok(Message::Binary(bytes)) => return Ok(Some(bytes)),
            Ok(Message::Text(_)) => {
                return Err(StreamError::TextMessage {
                    url: url.as_str().to_owned(),
                })
            }
            Ok(Message::Close(_)) | Err(Error::ConnectionClosed | Error::AlreadyClosed) => break,
            Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_)) => {}
            Err(e) => {
                return Err(StreamError::WebSocket {
                    url: url.as_str().to_owned(),
                    source: Box::new(e),
                })
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::ipv4_loopback("http://127.0.0.1:38211/exec/AbC", "ws://127.0.0.1:38211/exec/AbC")]
    #[case::ipv6_loopback("http://[::1]:10010/attach/t", "ws://[::1]:10010/attach/t")]
    #[case::localhost(
        "http://localhost:8080/portforward/t",
        "ws://localhost:8080/portforward/t"
    )]
    #[case::ws_scheme_kept("ws://127.0.0.1:1/exec/t?x=1", "ws://127.0.0.1:1/exec/t?x=1")]
    fn a_loopback_url_is_dialled_as_a_websocket(#[case] url: &str, #[case] ws: &str) {
        let parsed = StreamUrl::parse(url).unwrap();
        assert_eq!(parsed.ws().to_string(), ws);
        assert_eq!(parsed.as_str(), url);
        assert!(parsed.addrs.iter().all(|a| a.ip().is_loopback()));
    }

    #[rstest]
    #[case::pod_address("http://10.88.0.5:10010/exec/t", "10.88.0.5")]
    #[case::other_loopback("http://127.0.0.2:10010/exec/t", "127.0.0.2")]
    #[case::any_address("http://0.0.0.0:10010/exec/t", "0.0.0.0")]
    #[case::a_name("http://node.example:10010/exec/t", "node.example")]
    fn a_url_off_loopback_is_refused_naming_its_host(#[case] url: &str, #[case] host: &str) {
        match StreamUrl::parse(url) {
            Err(StreamError::NotLoopback { host: got, .. }) => assert_eq!(got, host),
            other => panic!("expected NotLoopback, got {other:?}"),
        }
    }

    #[rstest]
    #[case::relative("/exec/t")]
    #[case::other_scheme("unix:///run/x.sock")]
    fn a_url_the_client_cannot_dial_is_invalid(#[case] url: &str) {
        assert!(
            matches!(StreamUrl::parse(url), Err(StreamError::InvalidUrl { .. })),
            "{url}"
        );
    }

    #[test]
    fn a_tls_url_is_refused_as_tls() {
        assert!(matches!(
            StreamUrl::parse("https://127.0.0.1:1/exec/t"),
            Err(StreamError::Tls { .. })
        ));
    }

    #[tokio::test]
    async fn dialling_from_the_callers_own_namespace_connects_without_entering_it() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/exec/t", listener.local_addr().unwrap());
        let url = StreamUrl::parse(&url).unwrap().dialled_from(OWN_NETNS);
        let (dialled, accepted) = tokio::join!(url.tcp(), listener.accept());
        assert_eq!(
            dialled.unwrap().peer_addr().unwrap(),
            accepted.unwrap().0.local_addr().unwrap()
        );
    }

    #[tokio::test]
    async fn dialling_from_a_missing_namespace_fails_to_connect_naming_the_url() {
        let url = StreamUrl::parse("http://127.0.0.1:9/exec/t")
            .unwrap()
            .dialled_from("/nonexistent/netns");
        match url.tcp().await {
            Err(StreamError::Connect { url, source }) => {
                assert_eq!(url, "http://127.0.0.1:9/exec/t");
                assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
            }
            other => panic!("expected a connect error, got {other:?}"),
        }
    }

    #[test]
    fn a_query_is_added_with_the_right_separator() {
        let plain = StreamUrl::parse("http://127.0.0.1:5/portforward/t").unwrap();
        assert_eq!(
            plain.with_query("port", "80").unwrap().ws().to_string(),
            "ws://127.0.0.1:5/portforward/t?port=80"
        );
        let queried = StreamUrl::parse("http://127.0.0.1:5/portforward/t?a=b").unwrap();
        assert_eq!(
            queried.with_query("port", "80").unwrap().ws().to_string(),
            "ws://127.0.0.1:5/portforward/t?a=b&port=80"
        );
    }
}
