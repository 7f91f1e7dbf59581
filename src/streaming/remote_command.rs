//! Exec and attach as the kubelet's clients speak them over WebSocket: the client offers
//! `v5.channel.k8s.io` then `v4.channel.k8s.io`, writes resizes and stdin, and reads stdout,
//! stderr and the status with the exit code, all under one deadline and in the caller's task.

use futures::{SinkExt as _, StreamExt as _};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::{self, Message};

use super::connect::{self, StreamUrl};
use super::error::StreamError;
use super::protocol::{self, Channel, Outcome, Status, TerminalSize};

/// Stdin is written in messages of at most this many bytes, so one large input does not
/// become one message the server must hold whole.
const STDIN_CHUNK: usize = 32 * 1024;

/// What the client sends to a command and when it stops listening.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemoteCommandInput {
    /// Bytes for the process's stdin, then the end of stdin (see
    /// [`RemoteCommandOutput::stdin_closed`]); `None` writes nothing. The Exec or Attach
    /// request must have asked for stdin.
    pub stdin: Option<Vec<u8>>,
    /// Terminal sizes, sent in order before stdin (meaningful only with a TTY).
    pub resize: Vec<TerminalSize>,
    /// Detach, i.e. close the connection without waiting for the status, once stdout holds
    /// these bytes. An attach ends by itself only when the container does; this is how a
    /// client leaves a running one.
    pub detach_on_stdout: Option<Vec<u8>>,
    /// The session has a terminal: the end of stdin is sent only after [`TERMINAL_STDIN_HOLD`]
    /// (a command that ends sooner ends the session without it), as critest's client holds
    /// its stdin open. A runtime may hang up a terminal as soon as its stdin ends, and with it
    /// what the command had still to write there.
    pub terminal: bool,
}

/// How long a terminal's stdin stays open after its bytes are sent.
pub const TERMINAL_STDIN_HOLD: std::time::Duration = std::time::Duration::from_secs(1);

/// What a command wrote, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteCommandOutput {
    /// The subprotocol the server chose, e.g. `v4.channel.k8s.io`.
    pub protocol: String,
    /// Everything on the stdout channel (with a TTY, stderr too), in order.
    pub stdout: Vec<u8>,
    /// Everything on the stderr channel.
    pub stderr: Vec<u8>,
    /// How the command ended, from the server's status; `None` when the client detached
    /// first ([`RemoteCommandInput::detach_on_stdout`]).
    pub outcome: Option<Outcome>,
    /// True when the server was told that stdin ended. Only `v5` can say so (its close
    /// message); `v4` has no half-close, so there the client leaves stdin open until the
    /// connection ends, and a command that reads stdin to its end does not end by itself.
    pub stdin_closed: bool,
}

/// Runs the exec or attach session at `url` (the URL the runtime answered Exec or Attach
/// with): sends `input`, collects the output and the status. Everything, from the TCP
/// connection to the status, must finish by `deadline`; past it the call fails with
/// [`StreamError::Deadline`] naming the URL and drops the connection. No task is spawned.
pub async fn run(
    url: &str,
    input: &RemoteCommandInput,
    deadline: Instant,
) -> Result<RemoteCommandOutput, StreamError> {
    run_at(&StreamUrl::parse(url)?, input, deadline).await
}

/// [`run`] for a URL already checked, e.g. one [dialled from](StreamUrl::dialled_from) the
/// runtime's network namespace.
pub async fn run_at(
    url: &StreamUrl,
    input: &RemoteCommandInput,
    deadline: Instant,
) -> Result<RemoteCommandOutput, StreamError> {
    let allowed = deadline.saturating_duration_since(Instant::now());
    let session = async {
        let (socket, protocol) = connect::open(url, protocol::REMOTE_COMMAND_PROTOCOLS).await?;
        converse(url, socket, protocol, input, deadline).await
    };
    tokio::time::timeout_at(deadline, session)
        .await
        .map_err(|_| StreamError::Deadline {
            url: url.as_str().to_owned(),
            after: allowed,
        })?
}

/// The session after the upgrade: the writer and the reader run side by side in this task,
/// so a server that reads stdin only as fast as the client reads stdout cannot deadlock it.
async fn converse(
    url: &StreamUrl,
    socket: connect::Socket,
    protocol: String,
    input: &RemoteCommandInput,
    deadline: Instant,
) -> Result<RemoteCommandOutput, StreamError> {
    let (mut sink, mut stream) = socket.split();
    let v5 = protocol == protocol::REMOTE_COMMAND_V5;
    let mut stdin_closed = false;
    let mut output = Collected::default();

    let ended = {
        let writer = write_input(&mut sink, input, v5, &mut stdin_closed);
        let reader = read_output(url, &mut stream, input, &mut output);
        tokio::pin!(writer, reader);
        let mut writing = true;
        loop {
            tokio::select! {
                ended = &mut reader => break ended,
                written = &mut writer, if writing => {
                    writing = false;
                    // A server that has finished closes before reading everything (a command
                    // that exits without reading stdin): the reader has the outcome to report.
                    if let Err(e) = written {
                        tracing::debug!(url = url.as_str(), error = %e, "stopped writing to a stream");
                    }
                }
            }
        }
    };
    let ended = ended?;
    // Say goodbye; a server that has already gone makes this fail, which changes nothing.
    let _ = tokio::time::timeout_at(deadline, sink.close()).await;
    Ok(RemoteCommandOutput {
        protocol,
        stdout: output.stdout,
        stderr: output.stderr,
        outcome: ended,
        stdin_closed,
    })
}

/// The output channels so far.
#[derive(Default)]
struct Collected {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// Sends the resizes, then stdin and (on `v5`) its end.
async fn write_input<S>(
    sink: &mut S,
    input: &RemoteCommandInput,
    v5: bool,
    stdin_closed: &mut bool,
) -> Result<(), tungstenite::Error>
where
    S: futures::Sink<Message, Error = tungstenite::Error> + Unpin,
{
    for size in &input.resize {
        // A struct of two integers always serialises.
        let json = serde_json::to_vec(size).unwrap_or_default();
        sink.send(binary(Channel::Resize as u8, &json)).await?;
    }
    let Some(stdin) = &input.stdin else {
        return Ok(());
    };
    for chunk in stdin.chunks(STDIN_CHUNK) {
        sink.send(binary(Channel::Stdin as u8, chunk)).await?;
    }
    if v5 {
        if input.terminal {
            tokio::time::sleep(TERMINAL_STDIN_HOLD).await;
        }
        sink.send(binary(Channel::Close as u8, &[Channel::Stdin as u8]))
            .await?;
        *stdin_closed = true;
    }
    Ok(())
}

/// Reads until the status (answering its outcome), the detach point (`None`), or the end of
/// the connection (an error: the status is missing).
async fn read_output<S>(
    url: &StreamUrl,
    stream: &mut S,
    input: &RemoteCommandInput,
    output: &mut Collected,
) -> Result<Option<Outcome>, StreamError>
where
    S: futures::Stream<Item = Result<Message, tungstenite::Error>> + Unpin,
{
    let url_text = || url.as_str().to_owned();
    while let Some(data) = connect::next_binary(stream, url).await? {
        // An empty message, or a channel with an empty payload, only says "open".
        let Some((channel, payload)) = protocol::split(&data) else {
            continue;
        };
        match Channel::from_byte(channel) {
            Some(Channel::Stdout) => output.stdout.extend_from_slice(payload),
            Some(Channel::Stderr) => output.stderr.extend_from_slice(payload),
            Some(Channel::Error) if payload.is_empty() => {}
            Some(Channel::Error) => {
                let status: Status =
                    serde_json::from_slice(payload).map_err(|source| StreamError::BadStatus {
                        url: url_text(),
                        text: String::from_utf8_lossy(payload).into_owned(),
                        source,
                    })?;
                return Ok(Some(status.outcome()));
            }
            // The server announces the end of one of its channels; the status still follows.
            Some(Channel::Close) => {}
            _ => {
                return Err(StreamError::UnexpectedChannel {
                    url: url_text(),
                    channel,
                })
            }
        }
        if let Some(marker) = &input.detach_on_stdout {
            if contains(&output.stdout, marker) {
                return Ok(None);
            }
        }
    }
    Err(StreamError::ClosedWithoutStatus { url: url_text() })
}

/// One binary message on `channel`.
fn binary(channel: u8, payload: &[u8]) -> Message {
    Message::Binary(protocol::frame(channel, payload).into())
}

/// True when `needle` occurs in `haystack` (an empty needle always does).
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
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
        socket.send(binary(channel, payload)).await.unwrap();
    }

    async fn send_status(socket: &mut ServerSocket, status: &Status) {
        let json = serde_json::to_vec(status).unwrap();
        send(socket, Channel::Error as u8, &json).await;
    }

    /// The next binary message's channel and payload, `None` once the client has gone.
    async fn next(socket: &mut ServerSocket) -> Option<(u8, Vec<u8>)> {
        while let Some(Ok(message)) = socket.next().await {
            if let Message::Binary(data) = message {
                let (channel, payload) = protocol::split(&data)?;
                return Some((channel, payload.to_vec()));
            }
        }
        None
    }

    #[tokio::test]
    async fn a_v5_server_hears_the_end_of_stdin_and_the_exit_code_comes_back() {
        let served = serve_once(protocol::REMOTE_COMMAND_V5, |mut socket| async move {
            send(&mut socket, Channel::Stdout as u8, b"").await;
            let mut stdin = Vec::new();
            loop {
                match next(&mut socket).await {
                    Some((0, data)) => stdin.extend(data),
                    Some((255, data)) if data == [0] => break,
                    other => panic!("unexpected {other:?}"),
                }
            }
            send(&mut socket, Channel::Stdout as u8, &stdin).await;
            send(&mut socket, Channel::Stderr as u8, b"to stderr").await;
            send_status(&mut socket, &Status::exited(42)).await;
            let _ = socket.close(None).await;
        })
        .await;
        let input = RemoteCommandInput {
            stdin: Some(vec![b'x'; 100_000]),
            ..Default::default()
        };
        let output = run(&served.url, &input, soon()).await.unwrap();
        served.task.await.unwrap();
        assert_eq!(output.protocol, protocol::REMOTE_COMMAND_V5);
        assert_eq!(output.stdout, vec![b'x'; 100_000]);
        assert_eq!(output.stderr, b"to stderr");
        assert_eq!(output.outcome, Some(Outcome::Exited(42)));
        assert!(output.stdin_closed);
    }

    #[tokio::test]
    async fn on_v4_resizes_go_before_stdin_and_stdin_stays_open() {
        let served = serve_once(protocol::REMOTE_COMMAND_V4, |mut socket| async move {
            let mut heard = Vec::new();
            for _ in 0..3 {
                let (channel, payload) = next(&mut socket).await.unwrap();
                heard.push(channel);
                heard.extend(payload);
                heard.push(b'|');
            }
            send(&mut socket, Channel::Stdout as u8, &heard).await;
            send_status(&mut socket, &Status::exited(0)).await;
            let _ = socket.close(None).await;
        })
        .await;
        let input = RemoteCommandInput {
            stdin: Some(b"typed".to_vec()),
            resize: vec![
                TerminalSize {
                    width: 80,
                    height: 24,
                },
                TerminalSize {
                    width: 100,
                    height: 30,
                },
            ],
            ..Default::default()
        };
        let output = run(&served.url, &input, soon()).await.unwrap();
        served.task.await.unwrap();
        assert_eq!(output.protocol, protocol::REMOTE_COMMAND_V4);
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            "\u{4}{\"Width\":80,\"Height\":24}|\u{4}{\"Width\":100,\"Height\":30}|\u{0}typed|"
        );
        assert_eq!(output.outcome, Some(Outcome::Exited(0)));
        assert!(!output.stdin_closed);
    }

    #[tokio::test]
    async fn a_server_that_closes_without_a_status_fails_the_call() {
        let served = serve_once(protocol::REMOTE_COMMAND_V4, |mut socket| async move {
            send(&mut socket, Channel::Stdout as u8, b"partial").await;
            let _ = socket.close(None).await;
        })
        .await;
        let error = run(&served.url, &RemoteCommandInput::default(), soon())
            .await
            .unwrap_err();
        assert!(
            matches!(&error, StreamError::ClosedWithoutStatus { url } if *url == served.url),
            "{error:?}"
        );
    }

    #[tokio::test]
    async fn an_unreadable_status_is_an_error_quoting_it() {
        let served = serve_once(protocol::REMOTE_COMMAND_V4, |mut socket| async move {
            send(&mut socket, Channel::Error as u8, b"not json").await;
            let _ = socket.close(None).await;
        })
        .await;
        let error = run(&served.url, &RemoteCommandInput::default(), soon())
            .await
            .unwrap_err();
        assert!(
            matches!(&error, StreamError::BadStatus { text, .. } if text == "not json"),
            "{error:?}"
        );
    }

    #[tokio::test]
    async fn detaching_on_stdout_leaves_a_silent_session_without_a_status() {
        let served = serve_once(protocol::REMOTE_COMMAND_V4, |mut socket| async move {
            send(&mut socket, Channel::Stdout as u8, b"$ ").await;
            send(&mut socket, Channel::Stdout as u8, b"hello\n").await;
            // Then nothing, until the client goes.
            while next(&mut socket).await.is_some() {}
        })
        .await;
        let input = RemoteCommandInput {
            detach_on_stdout: Some(b"hello\n".to_vec()),
            ..Default::default()
        };
        let output = run(&served.url, &input, soon()).await.unwrap();
        served.task.await.unwrap();
        assert_eq!(output.stdout, b"$ hello\n");
        assert_eq!(output.outcome, None);
    }

    #[tokio::test]
    async fn a_server_offering_no_subprotocol_of_ours_fails_the_upgrade() {
        let served = serve_once("v9.channel.k8s.io", |_socket| async move {}).await;
        let error = run(&served.url, &RemoteCommandInput::default(), soon())
            .await
            .unwrap_err();
        assert!(
            matches!(&error, StreamError::Handshake { offered, .. } if offered.len() == 2),
            "{error:?}"
        );
    }
}
