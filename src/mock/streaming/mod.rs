//! The mock's streaming server: Exec, Attach and PortForward answer a URL on a small HTTP
//! server on 127.0.0.1 (started with the first such call, stopped with the mock), where a
//! WebSocket client speaks the Kubernetes channel protocols (`crate::streaming::protocol`) to
//! a built-in command set run in-process, or to an echo server per forwarded port.

mod commands;
mod error;
mod port_forward;
mod remote_command;
pub(crate) mod rpc;
mod server;
mod tokens;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokens::Tokens;

/// How long a connection may go without a message either way before the mock drops it. The
/// kubelet's default is hours; a test harness wants a silent client gone much sooner.
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// Which of the process's streams a client asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Streams {
    /// The client sends stdin.
    pub(crate) stdin: bool,
    /// The client wants stdout.
    pub(crate) stdout: bool,
    /// The client wants stderr apart (never with a TTY).
    pub(crate) stderr: bool,
    /// The process runs on a terminal: stderr joins stdout, and `\n` leaves as
    /// [`Command::line_end`].
    pub(crate) tty: bool,
}

/// What Attach connects to: the container's main process, as the mock models it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Attached {
    /// A shell reading commands from stdin (`sh`, `bash` without `-c`).
    Shell,
    /// `cat`: stdin back to stdout.
    Cat,
    /// Anything else, or a container without stdin: it reads nothing and writes nothing.
    Silent,
}

impl Attached {
    /// The model of a container's process from its command line and stdin setting.
    pub(crate) fn of(argv: &[String], stdin: bool) -> Attached {
        let name = argv.first().map(|a| commands::base_name(a));
        match name {
            _ if !stdin => Attached::Silent,
            Some("sh" | "bash" | "ash" | "dash") if argv.len() == 1 => Attached::Shell,
            Some("cat") if argv.len() == 1 => Attached::Cat,
            _ => Attached::Silent,
        }
    }
}

/// A remote command waiting for its connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Command {
    /// What runs: an exec's command line, or the attached process.
    pub(crate) program: Program,
    /// The streams the request asked for.
    pub(crate) streams: Streams,
    /// The container's mounts, as its commands see them.
    pub(crate) mounts: std::sync::Arc<crate::mock::mounts::MountTable>,
    /// The container's process, whose ids and confinement the command has.
    pub(crate) identity: crate::mock::process::Identity,
    /// What a line end the command writes on a terminal reaches the client as: one terminal's
    /// `onlcr` makes `\n` into `\r\n` ([`TERMINAL_LINE_END`]); the other-runtime profile's
    /// nested terminal translates it twice ([`NESTED_TERMINAL_LINE_END`]).
    pub(crate) line_end: &'static [u8],
}

/// A line end on one terminal.
pub(crate) const TERMINAL_LINE_END: &[u8] = b"\r\n";
/// A line end through two terminals that each translate it (see
/// [`Freedom::TerminalNested`](crate::mock::profile::Freedom::TerminalNested)).
pub(crate) const NESTED_TERMINAL_LINE_END: &[u8] = b"\r\r\n";

/// What a remote command runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Program {
    /// Exec: a command line of the built-in set.
    Exec(Vec<String>),
    /// Attach: the container's process.
    Attach(Attached),
}

/// A port forward waiting for its connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Forward {
    /// The sandbox's full id, for error messages.
    pub(crate) sandbox: String,
    /// The ports its pod listens on.
    pub(crate) listening: Vec<u16>,
}

/// A request a token stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pending {
    /// Exec or Attach (boxed: it carries the container's process).
    Command(Box<Command>),
    /// PortForward.
    PortForward(Forward),
}

impl Pending {
    /// The URL path segment that serves this kind of request.
    fn route(&self) -> &'static str {
        match self {
            Pending::Command(command) => match command.program {
                Program::Exec(_) => "exec",
                Program::Attach(_) => "attach",
            },
            Pending::PortForward(_) => "portforward",
        }
    }
}

/// What the accept loop and every connection share.
#[derive(Debug)]
pub(crate) struct Shared {
    tokens: Mutex<Tokens>,
    idle: Duration,
}

impl Shared {
    fn consume(&self, token: &str) -> Option<Pending> {
        self.tokens
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .consume(token, Instant::now())
    }
}

/// The mock's streaming server, if started: part of the mock's state, so it lives as long as
/// the mock (dropping it stops the server and every connection).
#[derive(Debug, Default)]
pub(crate) struct Streaming {
    running: Option<server::Running>,
}

impl Streaming {
    /// The URL a client connects to for `pending`, starting the server if it is not running
    /// (it never started, or the runtime it ran on is gone with an earlier socket server).
    pub(crate) fn url(
        &mut self,
        method: &'static str,
        pending: Pending,
    ) -> Result<String, crate::mock::error::RpcError> {
        use crate::mock::error::RpcError;
        if !self.running.as_ref().is_some_and(server::Running::is_alive) {
            let running =
                server::Running::start(IDLE_TIMEOUT).map_err(|err| RpcError::StreamingServer {
                    method,
                    reason: err.to_string(),
                })?;
            self.running = Some(running);
        }
        let Some(running) = &self.running else {
            return Err(RpcError::StreamingServer {
                method,
                reason: "not running".to_owned(),
            });
        };
        let route = pending.route();
        let token = running
            .shared
            .tokens
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(pending, Instant::now())
            .ok_or(RpcError::TooManyStreams)?;
        Ok(format!("http://{}/{route}/{token}", running.addr))
    }

    /// Stops the server and drops every connection.
    pub(crate) fn stop(&mut self) {
        self.running = None;
    }
}

/// The exit code an ExecSync past its timeout answers under the other-runtime profile.
const TIMED_OUT_EXIT_CODE: i32 = -1;

/// Runs ExecSync's command to its end, or to `timeout` seconds (0: no limit), collecting what
/// it writes on each stream.
pub(crate) async fn exec_sync(
    target: crate::mock::process::ExecTarget,
    timeout: i64,
) -> Result<crate::cri::v1::ExecSyncResponse, crate::mock::error::RpcError> {
    use tokio::sync::mpsc;
    let (out, mut output) = mpsc::channel(4);
    // ExecSync gives the command no stdin: it reads the end at once.
    let (_, stdin) = mpsc::unbounded_channel();
    let mut stdio = commands::Stdio::new(out, stdin, None).with_identity(target.identity);
    let argv = target.argv;
    let as_exit_code = target.timeout_as_exit_code;
    let command = async move {
        let code = commands::run(&argv, &mut stdio).await;
        drop(stdio);
        code
    };
    let collect = async {
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        while let Some((fd, bytes)) = output.recv().await {
            match fd {
                commands::Fd::Stdout => stdout.extend(bytes),
                commands::Fd::Stderr => stderr.extend(bytes),
            }
        }
        (stdout, stderr)
    };
    // ExecSync's command sees the container's mounts, as an exec session's does.
    let both = crate::mock::mounts::scope(target.mounts.clone(), async {
        tokio::join!(command, collect)
    });
    let (exit_code, (stdout, stderr)) = match u64::try_from(timeout) {
        Ok(seconds) if seconds > 0 => {
            match tokio::time::timeout(Duration::from_secs(seconds), both).await {
                Ok(done) => done,
                // The command is ended either way; a runtime may say so in the answer itself
                // (the kubelet's client reads a non-zero exit code as a failed command).
                Err(_) if as_exit_code => (
                    TIMED_OUT_EXIT_CODE,
                    (Vec::new(), b"command timed out\n".to_vec()),
                ),
                Err(_) => {
                    return Err(crate::mock::error::RpcError::ExecTimeout {
                        id: target.id.clone(),
                        seconds: timeout,
                    })
                }
            }
        }
        _ => both.await,
    };
    Ok(crate::cri::v1::ExecSyncResponse {
        stdout,
        stderr,
        exit_code,
    })
}

/// Shared state handed to the server at start.
fn shared(idle: Duration) -> Arc<Shared> {
    Arc::new(Shared {
        tokens: Mutex::new(Tokens::default()),
        idle,
    })
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::shell(&["sh"], true, Attached::Shell)]
    #[case::shell_by_path(&["/bin/bash"], true, Attached::Shell)]
    #[case::cat(&["cat"], true, Attached::Cat)]
    #[case::shell_script(&["sh", "-c", "sleep 9"], true, Attached::Silent)]
    #[case::no_stdin(&["sh"], false, Attached::Silent)]
    #[case::image_default(&[], true, Attached::Silent)]
    fn attach_sees_a_shell_cat_or_a_silent_process(
        #[case] argv: &[&str],
        #[case] stdin: bool,
        #[case] attached: Attached,
    ) {
        let argv: Vec<String> = argv.iter().map(|a| (*a).to_owned()).collect();
        assert_eq!(Attached::of(&argv, stdin), attached);
    }
}
