//! One port-forward session over an upgraded WebSocket: the ports come from the `port` query
//! parameters (read at upgrade), each gets a data and an error channel opened with its number,
//! and an in-process echo answers on each port the pod listens on (its port mappings'
//! container ports). Any other port gets the kubelet's forwarding error on its error channel,
//! as a real pod with nothing listening there would.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::tungstenite::{Error, Message};
use tokio_tungstenite::WebSocketStream;

use super::Forward;
use crate::streaming::protocol::{data_channel, error_channel, frame, port_prefix, split};

/// How long the closing handshake may take once the client is gone.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// The ports a request names, from its query (`port=80&port=8080`), in order.
pub(crate) fn ports_of(query: Option<&str>) -> Result<Vec<u16>, String> {
    let mut ports = Vec::new();
    for pair in query.unwrap_or_default().split('&') {
        let Some(value) = pair.strip_prefix("port=") else {
            continue;
        };
        for text in value.split(',') {
            match text.parse::<u16>() {
                Ok(0) | Err(_) => return Err(format!("invalid port \"{text}\"")),
                Ok(port) => ports.push(port),
            }
        }
    }
    if ports.is_empty() {
        return Err("query parameter \"port\" is required".to_owned());
    }
    // Each port takes two channels of one byte's range.
    if error_channel(ports.len() - 1).is_none() {
        return Err(format!("too many ports: {}", ports.len()));
    }
    Ok(ports)
}

/// The kubelet's message for a port nothing listens on, with the mock's reason.
fn refused(forward: &Forward, port: u16) -> String {
    let listening: Vec<String> = forward.listening.iter().map(u16::to_string).collect();
    format!(
        "error forwarding port {port} to pod {}, uid : failed to connect to localhost:{port} \
         inside the mock pod: connection refused (it listens on its port mappings' container \
         ports only: [{}])",
        forward.sandbox,
        listening.join(" ")
    )
}

/// Serves a port forward of `ports` on `socket` until the client leaves or goes silent.
pub(crate) async fn serve<S>(
    socket: WebSocketStream<S>,
    forward: Forward,
    ports: Vec<u16>,
    idle: Duration,
) -> Result<(), Error>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (mut sink, mut source) = socket.split();
    let mut open = Vec::with_capacity(ports.len());
    for (index, port) in ports.iter().enumerate() {
        let (Some(data), Some(error)) = (data_channel(index), error_channel(index)) else {
            break;
        };
        sink.send(Message::binary(frame(data, &port_prefix(*port))))
            .await?;
        sink.send(Message::binary(frame(error, &port_prefix(*port))))
            .await?;
        let listening = forward.listening.contains(port);
        if !listening {
            let message = refused(&forward, *port);
            sink.send(Message::binary(frame(error, message.as_bytes())))
                .await?;
        }
        open.push(listening);
    }
    loop {
        let message = match tokio::time::timeout(idle, source.next()).await {
            Ok(Some(Ok(message))) => message,
            // Closed, broken or silent past the deadline: the session is over.
            Ok(_) | Err(_) => break,
        };
        match message {
            Message::Binary(data) => {
                let Some((channel, payload)) = split(&data) else {
                    continue;
                };
                // Data channels are even; the echo answers on the one it heard.
                let index = usize::from(channel / 2);
                if channel % 2 == 0 && open.get(index) == Some(&true) && !payload.is_empty() {
                    sink.send(Message::binary(frame(channel, payload))).await?;
                }
            }
            Message::Close(_) => break,
            _ => {}
        }
    }
    let _ = tokio::time::timeout(CLOSE_GRACE, sink.close()).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::one(Some("port=80"), Ok(vec![80]))]
    #[case::repeated(Some("port=80&port=8080"), Ok(vec![80, 8080]))]
    #[case::comma_list(Some("port=80,81"), Ok(vec![80, 81]))]
    #[case::missing(None, Err("query parameter \"port\" is required".to_owned()))]
    #[case::zero(Some("port=0"), Err("invalid port \"0\"".to_owned()))]
    #[case::not_a_number(Some("port=http"), Err("invalid port \"http\"".to_owned()))]
    fn the_query_names_the_ports(
        #[case] query: Option<&str>,
        #[case] ports: Result<Vec<u16>, String>,
    ) {
        assert_eq!(ports_of(query), ports);
    }

    #[test]
    fn a_closed_port_names_the_pod_the_port_and_what_listens() {
        let forward = Forward {
            sandbox: "abc".to_owned(),
            listening: vec![80, 8080],
        };
        let message = refused(&forward, 81);
        assert!(message.starts_with("error forwarding port 81 to pod abc, uid : "));
        assert!(message.ends_with("[80 8080])"));
    }
}
