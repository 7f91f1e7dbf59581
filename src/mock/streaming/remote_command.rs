//! One exec or attach session over an upgraded WebSocket: the empty "ready" message on the
//! lowest stream the client reads, stdin (closed by v5's close message or by the connection
//! going), resize, output on stdout and stderr (merged, `\n` as the terminal's line end, with a
//! TTY), and at the end the v4 status with the exit code on the error channel. All on the
//! connection's task.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, watch};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{Error, Message};
use tokio_tungstenite::WebSocketStream;

use super::commands::{self, Fd, Stdio};
use super::{Command, Program};
use crate::mock::mounts;
use crate::streaming::protocol::{frame, split, Channel, Status, TerminalSize};

/// Output chunks queued between the command and the socket (backpressure beyond that).
const OUTPUT_QUEUE: usize = 8;
/// How long the closing handshake may take once the session is over.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// How a session ended.
enum Ended {
    /// The command exited with this code.
    Exited(i32),
    /// The client closed the connection, or went silent past the deadline.
    Gone,
}

/// Serves one remote command on `socket` (`v5`: the client negotiated `v5.channel.k8s.io`).
pub(crate) async fn serve<S>(
    socket: WebSocketStream<S>,
    v5: bool,
    command: Command,
    idle: Duration,
) -> Result<(), Error>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let streams = command.streams;
    let (mut sink, mut source) = socket.split();
    // As the kubelet's server does: tell the client its streams are set up.
    let ready = if streams.stdout {
        Channel::Stdout
    } else if streams.stderr {
        Channel::Stderr
    } else {
        Channel::Error
    };
    sink.send(binary(ready as u8, &[])).await?;

    let (out, mut output) = mpsc::channel(OUTPUT_QUEUE);
    let (stdin, stdin_rx) = mpsc::unbounded_channel();
    // Without stdin the command sees its end at once.
    let mut stdin = streams.stdin.then_some(stdin);
    let (size, size_rx) = watch::channel(None::<TerminalSize>);
    let mut stdio = Stdio::new(out, stdin_rx, streams.tty.then_some(size_rx))
        .with_identity(command.identity.clone());

    let session = async {
        match &command.program {
            Program::Exec(argv) => commands::run(argv, &mut stdio).await,
            Program::Attach(process) => commands::attach(process, &mut stdio).await,
        }
    };
    let mut running = Box::pin(mounts::scope(command.mounts.clone(), session));
    let deadline = tokio::time::sleep(idle);
    tokio::pin!(deadline);
    let ended = loop {
        tokio::select! {
            code = &mut running => break Ended::Exited(code),
            Some((fd, bytes)) = output.recv() => {
                deadline.as_mut().reset(tokio::time::Instant::now() + idle);
                send_output(&mut sink, &command, fd, &bytes).await?;
            }
            message = source.next() => {
                deadline.as_mut().reset(tokio::time::Instant::now() + idle);
                let Some(Ok(message)) = message else {
                    break Ended::Gone;
                };
                match message {
                    Message::Binary(data) => match split(&data) {
                        Some((channel, payload)) if channel == Channel::Stdin as u8 => {
                            let (input, end) = terminal_input(streams.tty, payload);
                            if let Some(open) = &stdin {
                                // The command may have stopped reading; that is its business.
                                let _ = open.send(input);
                            }
                            if end {
                                stdin = None;
                            }
                        }
                        Some((channel, payload)) if channel == Channel::Resize as u8 => {
                            if let Ok(new) = serde_json::from_slice::<TerminalSize>(payload) {
                                size.send_replace(Some(new));
                            }
                        }
                        Some((channel, [closed]))
                            if v5
                                && channel == Channel::Close as u8
                                && *closed == Channel::Stdin as u8 =>
                        {
                            stdin = None;
                        }
                        _ => {}
                    },
                    Message::Close(_) => break Ended::Gone,
                    _ => {}
                }
            }
            () = &mut deadline => break Ended::Gone,
        }
    };
    drop(running);
    drop(stdio);
    let Ended::Exited(code) = ended else {
        // Nobody is listening any more: answer a close if the socket still takes one.
        let _ = tokio::time::timeout(CLOSE_GRACE, sink.close()).await;
        return Ok(());
    };
    // What the command wrote before it exited comes before its status.
    while let Some((fd, bytes)) = output.recv().await {
        send_output(&mut sink, &command, fd, &bytes).await?;
    }
    let status = serde_json::to_vec(&Status::exited(code)).unwrap_or_default();
    sink.send(binary(Channel::Error as u8, &status)).await?;
    let close = Message::Close(Some(CloseFrame {
        code: CloseCode::Normal,
        reason: "".into(),
    }));
    let _ = tokio::time::timeout(CLOSE_GRACE, async {
        sink.send(close).await?;
        // Read what the client still sends (stdin it wrote while the command ended) until it
        // answers the close: a socket dropped with unread bytes is reset by the kernel, and
        // the reset can beat the status to a client that has not read it yet.
        while let Some(Ok(message)) = source.next().await {
            if message.is_close() {
                break;
            }
        }
        sink.close().await
    })
    .await;
    Ok(())
}

/// What the command reads of a stdin message, and whether it ends the input. A terminal in
/// canonical mode turns Enter's `\r` into `\n` (`icrnl`) and ends the input at `^D`, which is
/// how a raw-mode client such as `kubectl exec -it` types.
fn terminal_input(tty: bool, payload: &[u8]) -> (Vec<u8>, bool) {
    const END_OF_TRANSMISSION: u8 = 0x04;
    if !tty {
        return (payload.to_vec(), false);
    }
    let end = payload.iter().position(|b| *b == END_OF_TRANSMISSION);
    let typed = &payload[..end.unwrap_or(payload.len())];
    let input = typed
        .iter()
        .map(|b| if *b == b'\r' { b'\n' } else { *b })
        .collect();
    (input, end.is_some())
}

/// One binary message on `channel`.
fn binary(channel: u8, payload: &[u8]) -> Message {
    Message::binary(frame(channel, payload))
}

/// Sends output on the channel the client reads it from: with a TTY, stdout and stderr share
/// stdout and each `\n` becomes the command's [line end](Command::line_end) (a terminal's
/// `onlcr`); streams the client did not ask for are dropped.
async fn send_output<S>(sink: &mut S, command: &Command, fd: Fd, bytes: &[u8]) -> Result<(), Error>
where
    S: futures::Sink<Message, Error = Error> + Unpin,
{
    let streams = command.streams;
    let channel = match (streams.tty, fd) {
        (true, _) | (false, Fd::Stdout) if streams.stdout => Channel::Stdout,
        (false, Fd::Stderr) if streams.stderr => Channel::Stderr,
        _ => return Ok(()),
    };
    if !streams.tty {
        return sink.send(binary(channel as u8, bytes)).await;
    }
    let mut translated = Vec::with_capacity(bytes.len() + bytes.len() / 16);
    for byte in bytes {
        if *byte == b'\n' {
            translated.extend_from_slice(command.line_end);
        } else {
            translated.push(*byte);
        }
    }
    sink.send(binary(channel as u8, &translated)).await
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::pipe_is_verbatim(false, b"a\r\x04b", b"a\r\x04b", false)]
    #[case::enter_is_a_newline(true, b"ls\r", b"ls\n", false)]
    #[case::control_d_ends_input(true, b"x\rrest\x04ignored", b"x\nrest", true)]
    fn a_terminal_reads_stdin_as_a_canonical_tty_would(
        #[case] tty: bool,
        #[case] payload: &[u8],
        #[case] input: &[u8],
        #[case] end: bool,
    ) {
        assert_eq!(terminal_input(tty, payload), (input.to_vec(), end));
    }
}
