//! `exec`: runs a command in a container through the runtime's streaming server, as `kubectl
//! exec` does: the Exec RPC answers a URL, the harness speaks the WebSocket channel protocol
//! to it (stdin, a TTY, resizes) and checks what came back on each stream and the exit code
//! from the status. The expectation and its check are shared with `attach`.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

// A stream's deadline, from dialling to the status, defaults as every bounded step's does.
pub(super) use super::wait_container::{default_within, is_default_within};
use super::{check_call, is_default, CheckError, ErrorExpect, Kind, Scope, StepDef, TextExpect};
use crate::cri::v1;
use crate::streaming::protocol::{Outcome, TerminalSize};
use crate::streaming::remote_command::{self, RemoteCommandInput, RemoteCommandOutput};
use crate::streaming::StreamError;
use crate::world::{mismatch, StepError, World};

/// `exec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "an `exec` step: `container`, `command`, `stdin`, `tty`, `resize`, `within_ms`, `expect`"
)]
pub struct Exec {
    /// Container alias.
    pub container: String,
    /// The command and its arguments.
    pub command: Vec<String>,
    /// Text for the command's stdin; given (even empty), Exec is asked for stdin and the text
    /// is sent, then the end of stdin where the protocol can say so (`v5` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<String>,
    /// Run the command on a terminal (stdout and stderr then share it).
    #[serde(default, skip_serializing_if = "is_default")]
    pub tty: bool,
    /// Terminal sizes to send, in order, before stdin (with `tty`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resize: Vec<Size>,
    /// The stream's deadline, in milliseconds, from dialling to the status.
    #[serde(default = "default_within", skip_serializing_if = "is_default_within")]
    pub within_ms: u64,
    /// Expectations (by default: exit code 0).
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: StreamExpect,
}

/// A terminal size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a terminal size: `width`, `height`")]
pub struct Size {
    /// Columns.
    pub width: u16,
    /// Rows.
    pub height: u16,
}

/// What `exec` and `attach` check.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a stream expectation: `stdout`, `stdout_bytes`, `stderr`, `exit_code`, `error`, `failure`, `refused`"
)]
pub struct StreamExpect {
    /// What arrived on stdout (read as UTF-8, lossily).
    #[serde(default, skip_serializing_if = "TextExpect::is_empty")]
    pub stdout: TextExpect,
    /// How many bytes arrived on stdout, exactly (for outputs too large to spell out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout_bytes: Option<usize>,
    /// What arrived on stderr.
    #[serde(default, skip_serializing_if = "TextExpect::is_empty")]
    pub stderr: TextExpect,
    /// The exit code from the status (default 0; not checked when the client detached).
    #[serde(default, skip_serializing_if = "is_default")]
    pub exit_code: i32,
    /// The Exec or Attach RPC itself fails like this (code and text): no stream is opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorExpect>,
    /// The stream fails like this instead of ending in an exit: a status that is no exit
    /// code, a broken connection, the deadline. The text is the failure's, redacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<TextExpect>,
    /// The command does not run, whichever way the runtime says so: the RPC fails (any code),
    /// or the stream it answers fails or ends in anything but a clean exit, for a contract
    /// that leaves open where a refusal comes.
    #[serde(default, skip_serializing_if = "is_default")]
    pub refused: bool,
}

impl StreamExpect {
    /// Checks the expectation's own consistency, in the suite's words.
    pub(crate) fn check_fields(&self, scope: &Scope) -> Result<(), CheckError> {
        scope.text("expect.stdout", &self.stdout)?;
        scope.text("expect.stderr", &self.stderr)?;
        scope.error(self.error.as_ref())?;
        if let Some(failure) = &self.failure {
            scope.text("expect.failure", failure)?;
        }
        let streams = !self.stdout.is_empty()
            || self.stdout_bytes.is_some()
            || !self.stderr.is_empty()
            || self.exit_code != 0
            || self.failure.is_some();
        if self.error.is_some() && streams {
            return Err(CheckError::rule(
                "",
                "`expect.error` is the RPC failing, so no stream opens: it takes no `stdout`, `stdout_bytes`, `stderr`, `exit_code` or `failure`",
            ));
        }
        if self.refused && (self.error.is_some() || streams) {
            return Err(CheckError::rule(
                "",
                "`expect.refused` takes any refusal, so it stands alone",
            ));
        }
        if self.failure.is_some() && self.exit_code != 0 {
            return Err(CheckError::conflict("expect", "failure", "exit_code"));
        }
        Ok(())
    }

    /// Checks a stream's result: the failure when one is expected, else the exit code (unless
    /// the client detached) and then the output. `redact` puts texts into suite terms.
    pub(crate) fn check(
        &self,
        result: Result<RemoteCommandOutput, StreamError>,
        redact: impl Fn(&str) -> String,
    ) -> Result<(), StepError> {
        let output = match result {
            Ok(output) => output,
            Err(err) => {
                let text = redact(&crate::errors::chain(&err));
                return match &self.failure {
                    Some(failure) => failure.check("failure", &text),
                    None => Err(mismatch("stream", "an exit", format!("a failure: {text}"))),
                };
            }
        };
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let shown = || format!("(stdout {:?}, stderr {:?})", short(&stdout), short(&stderr));
        match (&output.outcome, &self.failure) {
            (Some(Outcome::Failed(message)), Some(failure)) => {
                return failure.check("failure", &redact(message));
            }
            (Some(Outcome::Failed(message)), None) => {
                return Err(mismatch(
                    "exit_code",
                    self.exit_code.to_string(),
                    format!("a failure {:?} {}", redact(message), shown()),
                ));
            }
            (Some(Outcome::Exited(code)), Some(failure)) => {
                return Err(mismatch(
                    "failure",
                    format!("a failure {failure}"),
                    format!("exit code {code} {}", shown()),
                ));
            }
            (None, Some(failure)) => {
                return Err(mismatch(
                    "failure",
                    format!("a failure {failure}"),
                    format!("a detach {}", shown()),
                ));
            }
            (Some(Outcome::Exited(code)), None) if *code != self.exit_code => {
                return Err(mismatch(
                    "exit_code",
                    self.exit_code.to_string(),
                    format!("{code} {}", shown()),
                ));
            }
            (Some(Outcome::Exited(_)) | None, None) => {}
        }
        if let Some(bytes) = self.stdout_bytes {
            if output.stdout.len() != bytes {
                return Err(mismatch(
                    "stdout_bytes",
                    bytes.to_string(),
                    output.stdout.len().to_string(),
                ));
            }
        }
        self.stdout.check("stdout", &stdout)?;
        self.stderr.check("stderr", &stderr)
    }
}

/// A long output cut for a message: its start, and how much there was.
fn short(text: &str) -> String {
    const SHOWN: usize = 200;
    match text.char_indices().nth(SHOWN) {
        Some((at, _)) => format!("{}... ({} bytes)", &text[..at], text.len()),
        None => text.to_owned(),
    }
}

/// The resizes as the streaming client sends them.
pub(crate) fn sizes(resize: &[Size]) -> Vec<TerminalSize> {
    resize
        .iter()
        .map(|s| TerminalSize {
            width: s.width,
            height: s.height,
        })
        .collect()
}

/// Checks the fields `exec` and `attach` share.
pub(crate) fn check_stream_fields(
    tty: bool,
    resize: &[Size],
    within_ms: u64,
    expect: &StreamExpect,
    scope: &Scope,
) -> Result<(), CheckError> {
    if !resize.is_empty() && !tty {
        return Err(CheckError::needs(
            "resize",
            "tty: true",
            "only a terminal has a size",
        ));
    }
    if resize.iter().any(|s| s.width == 0 || s.height == 0) {
        return Err(CheckError::rule(
            "",
            "`resize`: a width and a height must be above 0",
        ));
    }
    if tty && !expect.stderr.is_empty() {
        return Err(CheckError::needs(
            "expect.stderr",
            "tty: false",
            "a terminal has one stream",
        ));
    }
    if within_ms == 0 {
        return Err(CheckError::zero("within_ms"));
    }
    expect.check_fields(scope)
}

impl StepDef for Exec {
    const NAME: &'static str = "exec";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str =
        "Runs a command in a container through the streaming server (Exec, then WebSocket): stdin, a TTY and resizes; checks stdout, stderr and the exit code, all within a deadline.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<StreamExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.container(&self.container)?;
        if self.command.is_empty() {
            return Err(CheckError::empty("command", ""));
        }
        check_stream_fields(self.tty, &self.resize, self.within_ms, &self.expect, scope)
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let id = world.aliases.container(&self.container)?.id.clone();
        let request = v1::ExecRequest {
            container_id: id,
            cmd: self.command.clone(),
            tty: self.tty,
            stdin: self.stdin.is_some(),
            stdout: true,
            // With a terminal the kubelet asks for no stderr: the terminal carries both.
            stderr: !self.tty,
            ..Default::default()
        };
        let answer = world.runtime.exec(request).await;
        let input = RemoteCommandInput {
            stdin: self.stdin.as_ref().map(|s| s.as_bytes().to_vec()),
            resize: sizes(&self.resize),
            detach_on_stdout: None,
            terminal: self.tty,
        };
        converse(world, answer, &input, self.within_ms, &self.expect).await
    }
}

/// The streaming half of `exec` and `attach`: checks the RPC's `answer` (the URL, or the
/// error a case may expect), then speaks to the URL from the runtime's network namespace
/// with `input` within `within_ms`, and checks what came back.
pub(super) async fn converse(
    world: &World,
    answer: Result<String, crate::cri::CallError>,
    input: &RemoteCommandInput,
    within_ms: u64,
    expect: &StreamExpect,
) -> Result<(), StepError> {
    if expect.refused && answer.is_err() {
        return Ok(());
    }
    let Some(url) = check_call(expect.error.as_ref(), answer, |t| world.redact(t))? else {
        return Ok(());
    };
    let deadline = Instant::now() + Duration::from_millis(within_ms);
    let result = match crate::streaming::runtime_url(&url, world.runtime.endpoint()) {
        Ok(url) => remote_command::run_at(&url, input, deadline).await,
        Err(err) => Err(err),
    };
    if expect.refused {
        return match result {
            Ok(output) if output.outcome == Some(Outcome::Exited(0)) => Err(mismatch(
                "refused",
                "the command refused, at the RPC or on its stream",
                format!(
                    "it ran and exited 0 (stdout {:?})",
                    String::from_utf8_lossy(&output.stdout)
                ),
            )),
            _ => Ok(()),
        };
    }
    expect.check(result, |t| world.redact(t))
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn step(yaml: &str) -> Exec {
        serde_saphyr::from_str(yaml).unwrap()
    }

    #[rstest]
    #[case::plain("{container: app, command: [echo, hi]}", None)]
    #[case::unknown_container(
        "{container: other, command: [echo]}",
        Some("unknown container alias `other`")
    )]
    #[case::empty_command("{container: app, command: []}", Some("`command` is empty"))]
    #[case::resize_without_tty(
        "{container: app, command: [stty, size], resize: [{width: 80, height: 24}]}",
        Some("needs `tty: true`")
    )]
    #[case::zero_size(
        "{container: app, command: [stty, size], tty: true, resize: [{width: 0, height: 24}]}",
        Some("above 0")
    )]
    #[case::stderr_on_a_tty(
        "{container: app, command: [ls], tty: true, expect: {stderr: {equals: x}}}",
        Some("needs `tty: false`")
    )]
    #[case::error_and_output(
        "{container: app, command: [ls], expect: {error: {code: NotFound}, stdout: {equals: x}}}",
        Some("no stream opens")
    )]
    #[case::failure_and_exit_code(
        "{container: app, command: [ls], expect: {failure: {contains: x}, exit_code: 2}}",
        Some("not both")
    )]
    #[case::bad_pattern(
        "{container: app, command: [ls], expect: {stdout: {matches: '('}}}",
        Some("expect.stdout: `matches`")
    )]
    #[case::no_time("{container: app, command: [ls], within_ms: 0}", Some("above 0"))]
    fn the_loader_checks_an_exec(#[case] yaml: &str, #[case] error: Option<&str>) {
        let mut scope = Scope::default();
        scope.define_container("app").unwrap();
        let result = step(yaml).check(&mut scope);
        match error {
            None => assert_eq!(result, Ok(())),
            Some(part) => {
                let message = result.unwrap_err().to_string();
                assert!(message.contains(part), "{message}");
            }
        }
    }

    fn output(stdout: &[u8], stderr: &[u8], outcome: Option<Outcome>) -> RemoteCommandOutput {
        RemoteCommandOutput {
            protocol: "v4.channel.k8s.io".to_owned(),
            stdout: stdout.to_vec(),
            stderr: stderr.to_vec(),
            outcome,
            stdin_closed: false,
        }
    }

    fn expect(yaml: &str) -> StreamExpect {
        serde_saphyr::from_str(yaml).unwrap()
    }

    fn silent() -> StreamError {
        StreamError::Deadline {
            url: "http://127.0.0.1:1/exec/x".to_owned(),
            after: Duration::from_millis(5),
        }
    }

    #[rstest]
    #[case::exit_zero_by_default("{}", Ok(output(b"", b"", Some(Outcome::Exited(0)))), None)]
    #[case::other_exit_code(
        "{exit_code: 42}",
        Ok(output(b"", b"", Some(Outcome::Exited(42)))),
        None
    )]
    #[case::wrong_exit_code(
        "{}",
        Ok(output(b"out", b"", Some(Outcome::Exited(3)))),
        Some("exit_code: expected 0, got 3 (stdout \"out\"")
    )]
    #[case::stdout_differs(
        "{stdout: {equals: \"hello\\n\"}}",
        Ok(output(b"hello\r\n", b"", Some(Outcome::Exited(0)))),
        Some("stdout: expected \"hello\\n\", got \"hello\\r\\n\"")
    )]
    #[case::stderr_holds(
        "{stderr: {contains: oops}}",
        Ok(output(b"", b"an oops", Some(Outcome::Exited(0)))),
        None
    )]
    #[case::byte_count_holds(
        "{stdout_bytes: 3}",
        Ok(output(b"abc", b"", Some(Outcome::Exited(0)))),
        None
    )]
    #[case::byte_count_short(
        "{stdout_bytes: 4}",
        Ok(output(b"abc", b"", Some(Outcome::Exited(0)))),
        Some("stdout_bytes: expected 4, got 3")
    )]
    #[case::failed_status_is_not_an_exit(
        "{}",
        Ok(output(b"", b"", Some(Outcome::Failed("no such container".into())))),
        Some("exit_code: expected 0, got a failure \"no such container\"")
    )]
    #[case::failed_status_expected(
        "{failure: {contains: 'no such'}}",
        Ok(output(b"", b"", Some(Outcome::Failed("no such container".into())))),
        None
    )]
    #[case::failure_expected_but_exited(
        "{failure: {contains: x}}",
        Ok(output(b"", b"", Some(Outcome::Exited(0)))),
        Some("failure: expected a failure containing \"x\", got exit code 0")
    )]
    #[case::detach_skips_the_exit_code(
        "{exit_code: 9, stdout: {equals: hi}}",
        Ok(output(b"hi", b"", None)),
        None
    )]
    #[case::deadline_is_a_failure(
        "{}",
        Err(silent()),
        Some("stream: expected an exit, got a failure: streaming to")
    )]
    #[case::deadline_expected("{failure: {contains: deadline}}", Err(silent()), None)]
    fn a_streams_result_is_checked_against_the_expectation(
        #[case] yaml: &str,
        #[case] result: Result<RemoteCommandOutput, StreamError>,
        #[case] error: Option<&str>,
    ) {
        let checked = expect(yaml).check(result, str::to_owned);
        match error {
            None => assert!(checked.is_ok(), "{checked:?}"),
            Some(part) => {
                let message = checked.unwrap_err().to_string();
                assert!(message.contains(part), "{message}");
            }
        }
    }

    #[tokio::test]
    async fn a_silent_streaming_server_fails_the_exec_at_its_deadline() {
        let (url, server) = super::super::port_forward::silent_server().await;
        let input = RemoteCommandInput {
            stdin: Some(b"never read".to_vec()),
            ..Default::default()
        };
        let soon = || Instant::now() + Duration::from_millis(300);
        let unexpected = remote_command::run(&url, &input, soon()).await;
        let expected = remote_command::run(&url, &input, soon()).await;
        server.abort();
        let checked = expect("{stdout: {equals: hello}}").check(unexpected, str::to_owned);
        let message = checked.unwrap_err().to_string();
        assert!(
            message.contains("did not finish within its deadline"),
            "{message}"
        );
        let checked = expect("{failure: {contains: deadline}}").check(expected, str::to_owned);
        assert!(checked.is_ok(), "{checked:?}");
    }

    #[test]
    fn a_long_output_is_cut_in_messages() {
        let long = "x".repeat(1000);
        let shown = short(&long);
        assert!(shown.ends_with("... (1000 bytes)"), "{shown}");
        assert!(shown.len() < 300, "{shown}");
        assert_eq!(short("abc"), "abc");
    }

    #[test]
    fn defaults_are_not_printed_back() {
        let text = serde_saphyr::to_string(&step("{container: a, command: [ls]}")).unwrap();
        assert!(!text.contains("within_ms"), "{text}");
        assert!(!text.contains("tty"), "{text}");
        assert!(!text.contains("stdin"), "{text}");
        let text =
            serde_saphyr::to_string(&step("{container: a, command: [cat], stdin: ''}")).unwrap();
        assert!(text.contains("stdin"), "{text}");
    }
}
