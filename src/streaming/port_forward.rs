//! Port forwarding as client-go speaks it over WebSocket: one connection per forwarded
//! connection, the port named in the `port` query, a data and an error channel that the server
//! opens with the port number, and a relay of the caller's byte stream both ways until either
//! side closes, under one deadline and in the caller's task.

use futures::{SinkExt as _, StreamExt as _};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::{self, Message};

use super::connect::{self, StreamUrl};
use super::error::StreamError;
use super::protocol;

/// Local reads go out in messages of at most this many bytes.
const READ_CHUNK: usize = 32 * 1024;

/// How a relay ended, and what crossed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Forwarded {
    /// Bytes read from the local end and sent to the pod's port.
    pub sent: u64,
    /// Bytes received from the pod's port and written to the local end.
    pub received: u64,
    /// Which side closed first.
    pub closed_by: ClosedBy,
}

/// The side whose end stopped a relay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClosedBy {
    /// The local end reached end of file; the client then closed the WebSocket, since the
    /// channel protocol has no half-close to pass the end on and keep listening.
    Local,
    /// The server closed the WebSocket (the pod's side of the connection ended); the client
    /// then shut the local end's writing half down.
    Remote,
}

/// Forwards `port` of the pod behind `url` (the URL the runtime answered PortForward with) to
/// `local`: bytes read from `local` reach the port, bytes from the port are written to
/// `local`, until either side closes. A message on the error channel (e.g. nothing listens on
/// the port) fails the relay with the server's text. Everything must finish by `deadline`;
/// past it the call fails with [`StreamError::Deadline`] naming the URL and drops the
/// connection. No task is spawned.
///
/// The `port` query is sent as client-go sends it, but runtimes built on the kubelet's CRI
/// streaming library (containerd 1.6) ignore it and forward the ports of the PortForward
/// request, so that request must name `port` (alone: the client reads only the first pair of
/// channels). Their URLs also serve once: forward each connection through a URL of its own.
pub async fn forward<L>(
    url: &str,
    port: u16,
    local: L,
    deadline: Instant,
) -> Result<Forwarded, StreamError>
where
    L: AsyncRead + AsyncWrite,
{
    forward_at(&StreamUrl::parse(url)?, port, local, deadline).await
}

/// [`forward`] for a URL already checked, e.g. one [dialled from](StreamUrl::dialled_from)
/// the runtime's network namespace.
pub async fn forward_at<L>(
    url: &StreamUrl,
    port: u16,
    local: L,
    deadline: Instant,
) -> Result<Forwarded, StreamError>
where
    L: AsyncRead + AsyncWrite,
{
    let allowed = deadline.saturating_duration_since(Instant::now());
    let target = url.with_query(protocol::PORT_QUERY, &port.to_string())?;
    let session = async {
        let (socket, _) = connect::open(&target, &[protocol::PORT_FORWARD_V4]).await?;
        relay(url, port, socket, local, deadline).await
    };
    tokio::time::timeout_at(deadline, session)
        .await
        .map_err(|_| StreamError::Deadline {
            url: url.as_str().to_owned(),
            after: allowed,
        })?
}

/// Both directions side by side in this task, until one ends.
async fn relay<L>(
    url: &StreamUrl,
    port: u16,
    socket: connect::Socket,
    local: L,
    deadline: Instant,
) -> Result<Forwarded, StreamError>
where
    L: AsyncRead + AsyncWrite,
{
    let (mut sink, mut stream) = socket.split();
    let (mut local_read, mut local_write) = tokio::io::split(local);
    let mut sent = 0;
    let mut received = 0;
    let closed_by = {
        let upstream = send_local(url, port, &mut local_read, &mut sink, &mut sent);
        let downstream = receive_remote(url, port, &mut stream, &mut local_write, &mut received);
        tokio::pin!(upstream, downstream);
        tokio::select! {
            ended = &mut downstream => {
                ended?;
                ClosedBy::Remote
            }
            ended = &mut upstream => match ended {
                Ok(()) => ClosedBy::Local,
                // The server may have closed with its reason (an error-channel message)
                // already on the way: that reason is the better error.
                Err(e) => {
                    downstream.await?;
                    return Err(e);
                }
            },
        }
    };
    match closed_by {
        ClosedBy::Local => {
            let _ = tokio::time::timeout_at(deadline, sink.close()).await;
        }
        ClosedBy::Remote => {
            local_write
                .shutdown()
                .await
                .map_err(|source| StreamError::Local {
                    url: url.as_str().to_owned(),
                    port,
                    source,
                })?;
        }
    }
    Ok(Forwarded {
        sent,
        received,
        closed_by,
    })
}

/// Local to remote: reads until end of file, sending each read on the data channel.
async fn send_local<R, S>(
    url: &StreamUrl,
    port: u16,
    local: &mut R,
    sink: &mut S,
    sent: &mut u64,
) -> Result<(), StreamError>
where
    R: AsyncRead + Unpin,
    S: futures::Sink<Message, Error = tungstenite::Error> + Unpin,
{
    let data = protocol::data_channel(0).unwrap_or(0);
    let mut buffer = vec![0; READ_CHUNK];
    loop {
        let n = local
            .read(&mut buffer)
            .await
            .map_err(|source| StreamError::Local {
                url: url.as_str().to_owned(),
                port,
                source,
            })?;
        if n == 0 {
            return Ok(());
        }
        let message = Message::Binary(protocol::frame(data, &buffer[..n]).into());
        sink.send(message)
            .await
            .map_err(|source| StreamError::WebSocket {
                url: url.as_str().to_owned(),
                source: Box::new(source),
            })?;
        *sent += n as u64;
    }
}

/// Remote to local: checks each channel's port prefix, writes data to the local end, and
/// fails on an error-channel message; ends when the server closes.
async fn receive_remote<S, W>(
    url: &StreamUrl,
    port: u16,
    stream: &mut S,
    local: &mut W,
    received: &mut u64,
) -> Result<(), StreamError>
where
    S: futures::Stream<Item = Result<Message, tungstenite::Error>> + Unpin,
    W: AsyncWrite + Unpin,
{
    let url_text = || url.as_str().to_owned();
    let data = protocol::data_channel(0).unwrap_or(0);
    let error = protocol::error_channel(0).unwrap_or(1);
    let prefix = protocol::port_prefix(port);
    let (mut data_open, mut error_open) = (false, false);
    while let Some(bytes) = connect::next_binary(stream, url).await? {
        let Some((channel, payload)) = protocol::split(&bytes) else {
            continue;
        };
        // Each channel's first message is the port it serves, nothing else.
        let opened = if channel == data {
            &mut data_open
        } else if channel == error {
            &mut error_open
        } else {
            return Err(StreamError::UnexpectedChannel {
                url: url_text(),
                channel,
            });
        };
        if !*opened {
            if payload != prefix {
                return Err(StreamError::PortPrefix {
                    url: url_text(),
                    port,
                    channel,
                    got: payload.to_vec(),
                });
            }
            *opened = true;
            continue;
        }
        if channel == error {
            // The kubelet's library writes its reason in one message and closes.
            return Err(StreamError::PortForward {
                url: url_text(),
                port,
                message: String::from_utf8_lossy(payload).into_owned(),
            });
        }
        let local_error = |source| StreamError::Local {
            url: url_text(),
            port,
            source,
        };
        local.write_all(payload).await.map_err(local_error)?;
        local.flush().await.map_err(local_error)?;
        *received += payload.len() as u64;
    }
    if !data_open {
        return Err(StreamError::PortNotOpened {
            url: url_text(),
            port,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::streaming::test_server::{serve_once, ServerSocket};
    use std::time::Duration;

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(10)
    }

    async fn send(socket: &mut ServerSocket, channel: u8, payload: &[u8]) {
        let message = Message::Binary(protocol::frame(channel, payload).into());
        socket.send(message).await.unwrap();
    }

    /// Opens both channels with `port`, as the kubelet's library does.
    async fn open_channels(socket: &mut ServerSocket, port: u16) {
        send(socket, 0, &protocol::port_prefix(port)).await;
        send(socket, 1, &protocol::port_prefix(port)).await;
    }

    #[tokio::test]
    async fn a_relay_carries_bytes_both_ways_until_the_server_closes() {
        let served = serve_once(protocol::PORT_FORWARD_V4, |mut socket| async move {
            open_channels(&mut socket, 8080).await;
            let mut heard = Vec::new();
            while heard.len() < 4 {
                let Some(Ok(Message::Binary(data))) = socket.next().await else {
                    panic!("the client went before sending its bytes");
                };
                assert_eq!(data[0], 0, "data goes on the data channel");
                heard.extend_from_slice(&data[1..]);
            }
            send(&mut socket, 0, &heard.to_ascii_uppercase()).await;
            let _ = socket.close(None).await;
        })
        .await;
        let (mut ours, theirs) = tokio::io::duplex(1024);
        let relay = forward(&served.url, 8080, theirs, soon());
        let talk = async {
            ours.write_all(b"ping").await.unwrap();
            let mut answer = Vec::new();
            ours.read_to_end(&mut answer).await.unwrap();
            answer
        };
        let (forwarded, answer) = tokio::join!(relay, talk);
        served.task.await.unwrap();
        assert_eq!(answer, b"PING");
        assert_eq!(
            forwarded.unwrap(),
            Forwarded {
                sent: 4,
                received: 4,
                closed_by: ClosedBy::Remote
            }
        );
        let requested = served.requested.lock().unwrap().clone();
        assert_eq!(requested.as_deref(), Some("/stream/token?port=8080"));
    }

    #[tokio::test]
    async fn the_local_end_closing_closes_the_websocket() {
        let served = serve_once(protocol::PORT_FORWARD_V4, |mut socket| async move {
            open_channels(&mut socket, 80).await;
            // Runs until the client closes.
            while let Some(Ok(message)) = socket.next().await {
                if message.is_close() {
                    break;
                }
            }
        })
        .await;
        let (ours, theirs) = tokio::io::duplex(64);
        drop(ours);
        let forwarded = forward(&served.url, 80, theirs, soon()).await.unwrap();
        served.task.await.unwrap();
        assert_eq!(forwarded.closed_by, ClosedBy::Local);
        assert_eq!((forwarded.sent, forwarded.received), (0, 0));
    }

    #[tokio::test]
    async fn an_error_channel_message_fails_the_relay_with_its_text() {
        let served = serve_once(protocol::PORT_FORWARD_V4, |mut socket| async move {
            open_channels(&mut socket, 81).await;
            send(&mut socket, 1, b"connection refused on 81").await;
            let _ = socket.close(None).await;
        })
        .await;
        let (_ours, theirs) = tokio::io::duplex(64);
        let error = forward(&served.url, 81, theirs, soon()).await.unwrap_err();
        assert!(
            matches!(&error, StreamError::PortForward { port: 81, message, .. } if message == "connection refused on 81"),
            "{error:?}"
        );
    }

    #[tokio::test]
    async fn a_server_that_closes_before_opening_the_port_says_so() {
        let served = serve_once(protocol::PORT_FORWARD_V4, |mut socket| async move {
            let _ = socket.close(None).await;
        })
        .await;
        let (_ours, theirs) = tokio::io::duplex(64);
        let error = forward(&served.url, 7, theirs, soon()).await.unwrap_err();
        assert!(
            matches!(&error, StreamError::PortNotOpened { port: 7, .. }),
            "{error:?}"
        );
    }

    #[tokio::test]
    async fn a_channel_opened_for_another_port_is_an_error() {
        let served = serve_once(protocol::PORT_FORWARD_V4, |mut socket| async move {
            open_channels(&mut socket, 9).await;
            while socket.next().await.is_some() {}
        })
        .await;
        let (_ours, theirs) = tokio::io::duplex(64);
        let error = forward(&served.url, 10, theirs, soon()).await.unwrap_err();
        assert!(
            matches!(&error, StreamError::PortPrefix { port: 10, channel: 0, got, .. } if *got == [9, 0]),
            "{error:?}"
        );
    }
}
