//! Dialling a runtime's streaming URL: the loopback-only check, the `http` to `ws` scheme
//! change, the TCP connection and the WebSocket upgrade with the subprotocols offered. The
//! remote-command and port-forward clients share it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use http::Uri;
use tokio::net::TcpStream;
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
    let mut last = None;
    let mut tcp = None;
    for addr in &url.addrs {
        match TcpStream::connect(addr).await {
            Ok(stream) => {
                tcp = Some(stream);
                break;
            }
            Err(e) => last = Some(e),
        }
    }
    let tcp = tcp.ok_or_else(|| StreamError::Connect {
        url: url.text.clone(),
        source: last.unwrap_or_else(|| std::io::Error::other("no address to connect to")),
    })?;
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
