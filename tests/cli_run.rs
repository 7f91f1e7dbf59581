//! `cri-harness run` and `clean` as a user types them: the summary line, `--focus`, a suite
//! file with a misspelt step, an expectation that no longer holds, and an endpoint that is not
//! there.

use crate::support;
use std::path::{Path, PathBuf};

use std::process::Output;

use support::harness;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// An empty directory for `--snapshot-dir`: embedded cases compare with the references in the
/// binary and must write nothing there.
fn empty_snapshot_dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn run_mock(snapshots: &Path, extra: &[&str]) -> Output {
    harness()
        .args(["run", "--mock", "--snapshot-dir"])
        .arg(snapshots)
        .args(extra)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn summary(stdout: &str) -> (usize, usize, usize) {
    let line = stdout
        .lines()
        .find(|l| l.ends_with(" skipped") && l.contains(" passed, ") && !l.starts_with("verdicts:"))
        .unwrap_or_else(|| panic!("no summary line in {stdout}"));
    let numbers: Vec<usize> = line
        .split(", ")
        .map(|part| part.split(' ').next().unwrap().parse().unwrap())
        .collect();
    (numbers[0], numbers[1], numbers[2])
}

#[test]
fn run_mock_passes_every_case_and_prints_one_line_each_and_the_summary() {
    let snapshots = empty_snapshot_dir();
    let output = run_mock(snapshots.path(), &[]);
    let stdout = text(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        text(&output.stderr)
    );
    let (passed, failed, skipped) = summary(&stdout);
    assert!(passed >= 16, "{stdout}");
    assert_eq!(failed, 0, "{stdout}");
    // Only cases that need the internet, a real process or a security module the host's
    // kernel lacks skip: the mock reaches no registry and runs no process. Cases of today's
    // kubelet skip too: the run follows the seed's rules.
    let skip_lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("SKIP ")).collect();
    assert_eq!(skip_lines.len(), skipped, "{stdout}");
    assert!(
        skip_lines
            .iter()
            .all(|l| l.contains("environment-dependent")
                || l.contains("needs a real process")
                || l.contains("the host lacks ")
                || l.contains("(run with --kubelet current)")),
        "{stdout}"
    );
    let pass_lines = stdout.lines().filter(|l| l.starts_with("PASS ")).count();
    assert_eq!(pass_lines, passed);
    // Nothing was written into the snapshot directory.
    assert_eq!(
        std::fs::read_dir(snapshots.path()).unwrap().count(),
        0,
        "{stdout}"
    );
}

#[test]
fn focus_selects_cases_by_suite_and_case_name() {
    let snapshots = empty_snapshot_dir();
    let output = run_mock(
        snapshots.path(),
        &["--focus", "^latest-sandbox-ip/one-ready", "--report-dir"],
    );
    // `--report-dir` needs a value; a clap error proves flags are parsed strictly.
    assert!(!output.status.success());

    let reports = tempfile::tempdir().unwrap();
    let output = harness()
        .args([
            "run",
            "--mock",
            "--focus",
            "^latest-sandbox-ip/one-ready",
            "--snapshot-dir",
        ])
        .arg(snapshots.path())
        .arg("--report-dir")
        .arg(reports.path())
        .output()
        .unwrap();
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert_eq!(summary(&stdout), (1, 0, 0));
    assert!(stdout.contains("PASS latest-sandbox-ip/one-ready-sandbox-gives-its-ip ("));
    let junit = std::fs::read_to_string(reports.path().join("junit.xml")).unwrap();
    assert!(junit.contains("<testcase name=\"one-ready-sandbox-gives-its-ip\""));
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(reports.path().join("results.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(json["cases"][0]["outcome"], "passed");
}

#[test]
fn a_misspelt_step_names_file_line_and_the_valid_steps_while_the_good_cases_run() {
    let snapshots = empty_snapshot_dir();
    let suites = tempfile::tempdir().unwrap();
    std::fs::write(
        suites.path().join("typo.yaml"),
        "suite: typo\nabout: x\ncases:\n  - name: c\n    steps:\n      - run_sandbx: {as: a, pod: p}\n      - version: {}\n",
    )
    .unwrap();
    let output = run_mock(
        snapshots.path(),
        &[
            "--suites",
            suites.path().to_str().unwrap(),
            "--focus",
            "^(typo|version-gating)/",
        ],
    );
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    let error = stdout
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line in {stdout}"));
    let file = suites.path().join("typo.yaml");
    assert!(
        error.contains(&format!("{}:6:9:", file.display())),
        "{error}"
    );
    assert!(error.contains("unknown step `run_sandbx`"), "{error}");
    assert!(
        error.contains("`run_sandbox`") && error.contains("`kill_pod`"),
        "{error}"
    );
    let (passed, failed, _) = summary(&stdout);
    assert!(passed >= 1 && failed == 0, "{stdout}");
}

#[test]
fn an_edited_expectation_fails_naming_file_case_expected_and_actual() {
    let snapshots = empty_snapshot_dir();
    let suites = tempfile::tempdir().unwrap();
    let original = std::fs::read_to_string(root().join("suites/latest-sandbox-ip.yaml")).unwrap();
    let edited = original.replacen("expect: {ip: {of: only}", "expect: {ip: none", 1);
    assert_ne!(original, edited);
    let file = suites.path().join("latest-sandbox-ip.yaml");
    std::fs::write(&file, edited).unwrap();
    let output = run_mock(
        snapshots.path(),
        &[
            "--suites",
            suites.path().to_str().unwrap(),
            "--focus",
            "one-ready-sandbox",
        ],
    );
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("FAIL "))
        .unwrap_or_else(|| panic!("no FAIL line in {stdout}"));
    assert!(line.contains(&file.display().to_string()), "{line}");
    assert!(
        line.contains("case `one-ready-sandbox-gives-its-ip`"),
        "{line}"
    );
    assert!(line.contains("`get_pod_status`"), "{line}");
    assert!(line.contains("ip: expected none, got <ip:only>"), "{line}");
    assert_eq!(summary(&stdout), (0, 1, 0));
}

#[test]
fn an_endpoint_that_is_not_there_fails_fast_with_one_line() {
    let output = harness()
        .args([
            "run",
            "-r",
            "unix:///nonexistent/cri.sock",
            "--connect-timeout",
            "2s",
        ])
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty(), "{}", text(&output.stdout));
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: ") && stderr.contains("/nonexistent/cri.sock"),
        "{stderr}"
    );
}

#[test]
fn clean_against_an_endpoint_that_is_not_there_fails_with_one_line() {
    let output = harness()
        .args([
            "clean",
            "-r",
            "unix:///nonexistent/cri.sock",
            "--connect-timeout",
            "2s",
        ])
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("/nonexistent/cri.sock"), "{stderr}");
}

#[test]
fn a_run_id_that_cannot_name_a_namespace_is_refused() {
    let output = harness()
        .args(["run", "--mock", "--run-id", "Not Valid"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("run id \"Not Valid\""));
}

#[test]
fn an_embedded_suite_reads_its_manifest_file_from_the_binary_in_any_directory() {
    let snapshots = empty_snapshot_dir();
    let elsewhere = tempfile::tempdir().unwrap();
    let output = harness()
        .current_dir(elsewhere.path())
        .args(["run", "--mock", "--snapshot-dir"])
        .arg(snapshots.path())
        .args([
            "--focus",
            "^lifecycle-sync/a-kubectl-manifest-from-a-file-runs-on-the-mock$",
        ])
        .env_remove("CI")
        .output()
        .unwrap();
    let stdout = text(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        text(&output.stderr)
    );
    assert_eq!(summary(&stdout), (1, 0, 0), "{stdout}");
}
