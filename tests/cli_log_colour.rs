//! Log lines of the CLI and of the mock carry no ANSI colour codes unless stderr is a terminal,
//! and `NO_COLOR` turns them off there too. A terminal comes from util-linux's `script`; where
//! it is missing those cases say so and return.

use crate::support;

use std::process::{Command, Output, Stdio};

const BIN: &str = support::BINARY;
const ESC: u8 = 0x1b;

/// `cri-harness version` against a socket that is not there exits at once, after a debug line.
const VERSION_ARGS: [&str; 3] = ["version", "-r", "/nonexistent/cri.sock"];

/// Debug logs on, and nothing from this machine's environment that could change the outcome.
fn isolated(mut command: Command) -> Command {
    support::isolate(&mut command)
        .env("RUST_LOG", "debug")
        .env_remove("NO_COLOR");
    command
}

/// Runs the version command on a pseudo-terminal (stdout and stderr both go to it).
fn on_a_terminal(no_color: Option<&str>) -> Output {
    let script = support::need::program("/usr/bin/script", "util-linux's script (bsdutils)");
    let line = format!("{BIN} {}", VERSION_ARGS.join(" "));
    let mut command = isolated(Command::new(script));
    command
        .args(["--quiet", "--return", "--command", &line, "/dev/null"])
        .stdin(Stdio::null());
    if let Some(value) = no_color {
        command.env("NO_COLOR", value);
    }
    command.output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn cli_log_lines_to_a_pipe_have_no_colour_codes() {
    let mut command = isolated(Command::new(BIN));
    let output = command.args(VERSION_ARGS).output().unwrap();
    let stderr = text(&output.stderr);
    assert!(stderr.contains("resolved CRI endpoints"), "{stderr}");
    assert!(!output.stderr.contains(&ESC), "{stderr:?}");
}

#[test]
fn mock_log_lines_to_a_pipe_have_no_colour_codes() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("mock.sock");
    let (mut child, line) = support::spawn_mock(
        Command::new(BIN)
            .arg("mock")
            .arg("--listen")
            .arg(&socket)
            .env("RUST_LOG", "info")
            .env_remove("NO_COLOR")
            .stdin(Stdio::null())
            .stderr(Stdio::piped()),
    );
    assert!(line.starts_with("mock CRI runtime listening on"), "{line}");
    // The line was written before "listening"; how the mock stops does not matter here.
    child.kill().unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = text(&output.stderr);
    assert!(stderr.contains("mock CRI runtime serving"), "{stderr}");
    assert!(!output.stderr.contains(&ESC), "{stderr:?}");
}

#[test]
#[cfg_attr(not(crih_ci), ignore = "needs util-linux's script for a terminal")]
fn cli_log_lines_on_a_terminal_are_coloured() {
    // The other cases mean something only if colours do appear where they belong.
    let output = on_a_terminal(None);
    let shown = text(&output.stdout);
    assert!(shown.contains("resolved CRI endpoints"), "{shown}");
    assert!(output.stdout.contains(&ESC), "{shown:?}");
}

#[test]
#[cfg_attr(not(crih_ci), ignore = "needs util-linux's script for a terminal")]
fn no_color_turns_colours_off_on_a_terminal() {
    let output = on_a_terminal(Some("1"));
    let shown = text(&output.stdout);
    assert!(shown.contains("resolved CRI endpoints"), "{shown}");
    assert!(!output.stdout.contains(&ESC), "{shown:?}");
}

#[test]
#[cfg_attr(not(crih_ci), ignore = "needs util-linux's script for a terminal")]
fn an_empty_no_color_leaves_colours_on() {
    // no-color.org: only a value that is set and not empty counts.
    let output = on_a_terminal(Some(""));
    assert!(output.stdout.contains(&ESC), "{:?}", text(&output.stdout));
}
