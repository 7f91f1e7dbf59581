//! `run --hold`, which a DaemonSet pod runs (its containers are always restarted, so the
//! process must outlive the run): the reports are written, the process stays, and SIGTERM ends
//! it with the run's exit code.

use crate::support;

use std::io::{BufRead as _, BufReader};
use std::process::Stdio;

use rustix::process::{kill_process, Pid, Signal};

#[test]
fn a_held_run_writes_its_reports_waits_and_exits_with_its_code_on_sigterm() {
    let reports = tempfile::tempdir().unwrap();
    let mut child = support::harness()
        .args([
            "run",
            "--mock",
            "--focus",
            "^conformance-container/a-created-container-is-created-and-listed$",
            "--hold",
            "--report-dir",
        ])
        .arg(reports.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let held = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|line| line.starts_with("holding until SIGTERM"));
    assert!(held, "no hold line");
    assert!(reports.path().join("results.json").is_file());
    assert!(
        child.try_wait().unwrap().is_none(),
        "exited instead of holding"
    );

    let pid = Pid::from_child(&child);
    kill_process(pid, Signal::TERM).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(0),
        "the run passed, so the held process exits 0"
    );
}
