//! `cri-harness fuzz --mock` as a CI job runs it: a break that holds on every replay fails the
//! run and is written shrunk; a break only some runs show (a race) is reported flaky with its
//! count and written as found, and fails the run only under `--strict`.

use crate::support;

use std::path::Path;

use support::harness;

/// Fuzzes a mock with `defect`, one worker, seed 2, for at most 150 sequences; the suite goes
/// to `dir/fuzz/fuzz.yaml`. Answers the exit code and what was printed.
fn fuzz(dir: &Path, defect: &str, extra: &[&str]) -> (Option<i32>, String) {
    let output = harness()
        .current_dir(dir)
        .args(["fuzz", "--mock", "--mock-defect", defect])
        .args(["--parallel", "1", "--seed", "2", "--sequences", "150"])
        .args(["--duration", "300s", "--out", "fuzz/fuzz.yaml"])
        .args(extra)
        .output()
        .unwrap();
    let text = support::printed(&output);
    (output.status.code(), text)
}

/// The names of the cases in the suite the run wrote, which must load.
fn case_names(dir: &Path) -> Vec<String> {
    let suite = std::fs::read_to_string(dir.join("fuzz/fuzz.yaml")).unwrap();
    let parsed =
        cri_harness::suite::parse("fuzz.yaml", &suite).unwrap_or_else(|e| panic!("{e}\n{suite}"));
    parsed.cases.into_iter().map(|c| c.name).collect()
}

#[test]
fn a_race_is_reported_flaky_and_fails_the_run_only_under_strict() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out) = fuzz(dir.path(), "RacyStopOfExitedContainer", &[]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains(
            "flaky [container.stop.exited] in 1 sequences: the first broke it in 6 of 11 runs"
        ),
        "{out}"
    );
    assert!(
        out.contains("flaky breaks only: reported, not failing the run"),
        "{out}"
    );
    assert!(!out.contains("FAILED"), "{out}");
    assert_eq!(case_names(dir.path()), ["fuzz-flaky-container-stop-exited"]);

    let (code, out) = fuzz(dir.path(), "RacyStopOfExitedContainer", &["--strict"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("FAILED: flaky breaks fail the run under --strict"),
        "{out}"
    );
}

#[test]
fn a_break_every_replay_shows_fails_the_run_shrunk() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out) = fuzz(dir.path(), "StopUnknownContainerNotFound", &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("FAILED [container.stop.idempotent]")
            && out.contains("in every one of 11 runs"),
        "{out}"
    );
    assert!(!out.contains("flaky ["), "{out}");
    assert_eq!(case_names(dir.path()), ["fuzz-container-stop-idempotent"]);
}
