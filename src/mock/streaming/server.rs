//! The streaming server's HTTP side: a listener on 127.0.0.1 (an ephemeral port), one task per
//! connection held in the accept loop's `JoinSet`, so stopping the loop drops them all. A
//! request names its kind and token in the path; a valid WebSocket upgrade is answered 101
//! with the subprotocol picked, and the session then runs on the same task.

use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use http::{header, HeaderMap, HeaderValue, Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::{JoinHandle, JoinSet};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::WebSocketStream;
use tokio_util::sync::CancellationToken;

use super::error::StreamingError;
use super::{port_forward, remote_command, shared, Pending, Shared};
use crate::streaming::protocol::{PORT_FORWARD_V4, REMOTE_COMMAND_V4, REMOTE_COMMAND_V5};

/// The body of every answer that is not an upgrade.
type Body = String;

/// Pause after a failed accept (e.g. out of file descriptors) so the loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// A started server: where it listens, its tokens, and the handle that stops it.
#[derive(Debug)]
pub(crate) struct Running {
    /// The listener's address (always 127.0.0.1).
    pub(crate) addr: SocketAddr,
    /// Tokens and settings shared with the accept loop.
    pub(crate) shared: Arc<Shared>,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl Running {
    /// Binds 127.0.0.1 on an ephemeral port and spawns the accept loop on the current tokio
    /// runtime (the mock's own, when it serves a socket), so it ends with that runtime too.
    pub(crate) fn start(idle: Duration) -> Result<Running, StreamingError> {
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .and_then(TcpListener::from_std)
            .map_err(|source| StreamingError::Bind { source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| StreamingError::Bind { source })?;
        let shared = shared(idle);
        let stop = CancellationToken::new();
        let task = tokio::spawn(accept_loop(listener, shared.clone(), stop.clone()));
        tracing::info!(%addr, "mock streaming server listening");
        Ok(Running {
            addr,
            shared,
            stop,
            task,
        })
    }

    /// True while the accept loop runs.
    pub(crate) fn is_alive(&self) -> bool {
        !self.stop.is_cancelled() && !self.task.is_finished()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.cancel();
        // Also abort: the loop may sit on a runtime that is not polling it right now.
        self.task.abort();
    }
}

/// Accepts connections until stopped; dropping the `JoinSet` on the way out aborts every
/// connection still open, upgraded or not.
async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, stop: CancellationToken) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    connections.spawn(connection(stream, peer, shared.clone()));
                }
                Err(err) => {
                    tracing::warn!(%err, "mock streaming server cannot accept");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    tracing::debug!(open = connections.len(), "mock streaming server stopped");
}

/// An accepted upgrade: the connection to take over and what to run on it.
struct Upgrade {
    on_upgrade: OnUpgrade,
    pending: Pending,
    protocol: Option<&'static str>,
    /// A port forward's ports, from the query.
    ports: Vec<u16>,
}

/// Serves one connection: HTTP until an upgrade (all of it within the idle deadline), then
/// the session.
async fn connection(stream: TcpStream, peer: SocketAddr, shared: Arc<Shared>) {
    let (upgraded, upgrade) = oneshot::channel::<Upgrade>();
    let upgraded = Mutex::new(Some(upgraded));
    let idle = shared.idle;
    let service = hyper::service::service_fn(|request: Request<Incoming>| {
        let answer = route(request, &shared, &upgraded);
        async move { Ok::<_, Infallible>(answer) }
    });
    let http = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    match tokio::time::timeout(idle, http).await {
        Err(_) => {
            tracing::debug!(%peer, "streaming client idle before upgrading");
            return;
        }
        Ok(Err(source)) => {
            let err = StreamingError::Http { peer, source };
            tracing::debug!(err = %err, "streaming connection ended");
            return;
        }
        Ok(Ok(())) => {}
    }
    let Ok(Upgrade {
        on_upgrade,
        pending,
        protocol,
        ports,
    }) = upgrade.await
    else {
        return;
    };
    let io = match tokio::time::timeout(idle, on_upgrade).await {
        Ok(Ok(io)) => TokioIo::new(io),
        Ok(Err(source)) => {
            let err = StreamingError::Upgrade { peer, source };
            tracing::debug!(err = %err, "streaming upgrade failed");
            return;
        }
        Err(_) => return,
    };
    let socket = WebSocketStream::from_raw_socket(io, Role::Server, None).await;
    let route = pending.route();
    let ended = match pending {
        Pending::Command(command) => {
            remote_command::serve(socket, protocol == Some(REMOTE_COMMAND_V5), *command, idle).await
        }
        Pending::PortForward(forward) => port_forward::serve(socket, forward, ports, idle).await,
    };
    if let Err(source) = ended {
        let err = StreamingError::WebSocket { route, source };
        tracing::debug!(err = %err, %peer, "streaming session ended");
    }
}

/// Answers one HTTP request: 404 for an unknown path or token (consumed either way, as the
/// kubelet's server does), 400 for anything but a WebSocket upgrade, 403 when no subprotocol
/// fits, else 101 with the upgrade handed to the connection task.
fn route(
    mut request: Request<Incoming>,
    shared: &Shared,
    upgraded: &Mutex<Option<oneshot::Sender<Upgrade>>>,
) -> Response<Body> {
    let path = request.uri().path().to_owned();
    let mut segments = path.trim_start_matches('/').splitn(2, '/');
    let (Some(kind), Some(token)) = (segments.next(), segments.next()) else {
        return plain(StatusCode::NOT_FOUND, "404 page not found\n");
    };
    let Some(pending) = shared
        .consume(token)
        .filter(|pending| pending.route() == kind)
    else {
        return plain(StatusCode::NOT_FOUND, "404 page not found\n");
    };
    let headers = request.headers();
    let Some(key) = websocket_key(headers) else {
        return plain(
            StatusCode::BAD_REQUEST,
            &format!(
                "the cri-harness mock's streaming server speaks WebSocket only ({} or {} for \
                 exec and attach, {} for port forward), not SPDY or plain HTTP\n",
                REMOTE_COMMAND_V5, REMOTE_COMMAND_V4, PORT_FORWARD_V4
            ),
        );
    };
    let offered = offered_protocols(headers);
    let supported: &[&'static str] = match pending {
        Pending::Command(_) => &[REMOTE_COMMAND_V5, REMOTE_COMMAND_V4],
        Pending::PortForward(_) => &[PORT_FORWARD_V4],
    };
    let protocol = match pick_protocol(&offered, supported, pending.accepts_none()) {
        Ok(protocol) => protocol,
        Err(()) => {
            return plain(
                StatusCode::FORBIDDEN,
                &format!(
                    "requested protocol(s) are not supported: {offered:?}; supports {supported:?}\n"
                ),
            )
        }
    };
    let ports = match &pending {
        Pending::PortForward(_) => match port_forward::ports_of(request.uri().query()) {
            Ok(ports) => ports,
            Err(err) => return plain(StatusCode::BAD_REQUEST, &format!("{err}\n")),
        },
        Pending::Command(_) => Vec::new(),
    };
    let on_upgrade = hyper::upgrade::on(&mut request);
    let sender = upgraded
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    let Some(sender) = sender else {
        return plain(StatusCode::BAD_REQUEST, "one upgrade per connection\n");
    };
    if sender
        .send(Upgrade {
            on_upgrade,
            pending,
            protocol,
            ports,
        })
        .is_err()
    {
        return plain(StatusCode::SERVICE_UNAVAILABLE, "connection closing\n");
    }
    let mut response = Response::new(Body::new());
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    if let Ok(accept) = HeaderValue::from_str(&derive_accept_key(key.as_bytes())) {
        headers.insert(header::SEC_WEBSOCKET_ACCEPT, accept);
    }
    if let Some(protocol) = protocol {
        headers.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static(protocol),
        );
    }
    response
}

impl Pending {
    /// Port forward also accepts a client that offers no subprotocol, as the kubelet's does.
    fn accepts_none(&self) -> bool {
        matches!(self, Pending::PortForward(_))
    }
}

/// A plain-text answer.
fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(text.to_owned());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// The `Sec-WebSocket-Key` of a WebSocket (version 13) upgrade request, else `None`.
fn websocket_key(headers: &HeaderMap) -> Option<String> {
    let has_token = |name: header::HeaderName, token: &str| {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|v| v.trim().eq_ignore_ascii_case(token))
    };
    let version = headers
        .get(header::SEC_WEBSOCKET_VERSION)
        .and_then(|v| v.to_str().ok())
        .map(str::trim);
    (has_token(header::UPGRADE, "websocket")
        && has_token(header::CONNECTION, "upgrade")
        && version == Some("13"))
    .then(|| headers.get(header::SEC_WEBSOCKET_KEY))
    .flatten()
    .and_then(|v| v.to_str().ok())
    .map(str::to_owned)
}

/// The subprotocols the client offers, in its order.
fn offered_protocols(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect()
}

/// The client's first offered protocol the server supports; with none offered, no protocol
/// if `accepts_none`. `Err` when nothing fits.
fn pick_protocol(
    offered: &[String],
    supported: &[&'static str],
    accepts_none: bool,
) -> Result<Option<&'static str>, ()> {
    if offered.is_empty() {
        return if accepts_none { Ok(None) } else { Err(()) };
    }
    offered
        .iter()
        .find_map(|p| supported.iter().find(|s| **s == p.as_str()).copied())
        .map(Some)
        .ok_or(())
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn owned(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[rstest]
    #[case::v5_first(&["v5.channel.k8s.io", "v4.channel.k8s.io"], Ok(Some(REMOTE_COMMAND_V5)))]
    #[case::clients_order_wins(&["v4.channel.k8s.io", "v5.channel.k8s.io"], Ok(Some(REMOTE_COMMAND_V4)))]
    #[case::unknown_skipped(&["v3.channel.k8s.io", "v4.channel.k8s.io"], Ok(Some(REMOTE_COMMAND_V4)))]
    #[case::nothing_fits(&["base64.channel.k8s.io"], Err(()))]
    #[case::none_offered(&[], Err(()))]
    fn remote_command_picks_the_clients_first_supported_protocol(
        #[case] offered: &[&str],
        #[case] picked: Result<Option<&'static str>, ()>,
    ) {
        let supported = [REMOTE_COMMAND_V5, REMOTE_COMMAND_V4];
        assert_eq!(pick_protocol(&owned(offered), &supported, false), picked);
    }

    /// A started server with one port-forward token; answers it and the token's URL.
    fn forwarding(idle: Duration) -> (Running, String) {
        let running = Running::start(idle).unwrap();
        let pending = Pending::PortForward(super::super::Forward {
            sandbox: "s".to_owned(),
            listening: vec![80],
        });
        let token = running
            .shared
            .tokens
            .lock()
            .unwrap()
            .insert(pending, std::time::Instant::now())
            .unwrap();
        let url = format!("ws://{}/portforward/{token}?port=80", running.addr);
        (running, url)
    }

    use tokio_tungstenite::tungstenite::Message;

    /// Upgrades to `url`, reads the two port prefixes, says so on `opened`, then waits
    /// silently for the end; answers the last message, if any.
    async fn silent_client(url: &str, opened: oneshot::Sender<()>) -> Option<Message> {
        use futures::StreamExt;
        let host = url.trim_start_matches("ws://").split('/').next().unwrap();
        let stream = TcpStream::connect(host).await.unwrap();
        let (mut socket, _) = tokio_tungstenite::client_async(url, stream).await.unwrap();
        for _ in 0..2 {
            assert!(matches!(socket.next().await, Some(Ok(Message::Binary(_)))));
        }
        let _ = opened.send(());
        // A guard against a hang, far beyond the deadline under test.
        tokio::time::timeout(Duration::from_secs(20), socket.next())
            .await
            .expect("the server lets a silent client go")
            .and_then(Result::ok)
    }

    #[tokio::test]
    async fn a_silent_client_is_dropped_at_the_idle_deadline() {
        let (_running, url) = forwarding(Duration::from_millis(200));
        let (opened, _) = oneshot::channel();
        let last = silent_client(&url, opened).await;
        assert!(matches!(last, None | Some(Message::Close(_))), "{last:?}");
    }

    #[tokio::test]
    async fn dropping_the_server_ends_its_connections() {
        let (running, url) = forwarding(Duration::from_secs(3600));
        let (opened, is_open) = oneshot::channel();
        let client = tokio::spawn(async move { silent_client(&url, opened).await });
        is_open.await.unwrap();
        drop(running);
        let last = client.await.unwrap();
        assert!(matches!(last, None | Some(Message::Close(_))), "{last:?}");
    }

    #[test]
    fn port_forward_accepts_a_client_offering_no_protocol() {
        assert_eq!(pick_protocol(&[], &[PORT_FORWARD_V4], true), Ok(None));
    }

    #[test]
    fn only_a_version_13_websocket_upgrade_has_a_key() {
        let mut headers = HeaderMap::new();
        headers.insert(header::UPGRADE, HeaderValue::from_static("SPDY/3.1"));
        headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
        headers.insert(header::SEC_WEBSOCKET_KEY, HeaderValue::from_static("k"));
        headers.insert(
            header::SEC_WEBSOCKET_VERSION,
            HeaderValue::from_static("13"),
        );
        assert_eq!(websocket_key(&headers), None);
        headers.insert(header::UPGRADE, HeaderValue::from_static("WebSocket"));
        assert_eq!(websocket_key(&headers).as_deref(), Some("k"));
        headers.insert(header::SEC_WEBSOCKET_VERSION, HeaderValue::from_static("8"));
        assert_eq!(websocket_key(&headers), None);
    }
}
