//! `mock_hold_call` reaches the mock: a StartContainer held past the run's call deadline fails
//! that step with DeadlineExceeded, while the same case with a hold shorter than the deadline
//! (the control) passes, and so does the case without any hold.

use crate::support;

use serde_json::Value;
use support::harness;

/// Three cases, the same but for the hold on the container's StartContainer.
const SUITE: &str = "\
suite: hold
about: A StartContainer held for longer or shorter than the call deadline.
cases:
  - name: held-past-the-deadline
    clause: container.start.running
    needs: [mock_control]
    steps:
      - run_sandbox: {as: sb, pod: web}
      - create_container: {as: app, sandbox: sb}
      - mock_hold_call: {method: StartContainer, ms: 3000, target: app}
      - start_container: app
      - container_status: {container: app, expect: {state: running}}
  - name: held-within-the-deadline
    clause: container.start.running
    needs: [mock_control]
    steps:
      - run_sandbox: {as: sb, pod: web}
      - create_container: {as: app, sandbox: sb}
      - mock_hold_call: {method: StartContainer, ms: 200, target: app}
      - start_container: app
      - container_status: {container: app, expect: {state: running}}
  - name: not-held
    clause: container.start.running
    steps:
      - run_sandbox: {as: sb, pod: web}
      - create_container: {as: app, sandbox: sb}
      - start_container: app
      - container_status: {container: app, expect: {state: running}}
";

#[test]
fn a_start_held_past_the_call_deadline_fails_and_a_shorter_hold_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let suites = dir.path().join("suites");
    std::fs::create_dir_all(&suites).unwrap();
    std::fs::write(suites.join("hold.yaml"), SUITE).unwrap();
    let output = harness()
        .current_dir(dir.path())
        .args(["run", "--mock", "--suites", "suites", "--report-dir", "out"])
        .args([
            "--snapshot-dir",
            "snapshots",
            "--run-id",
            "hold",
            "--focus",
            "^hold/",
        ])
        .args(["--timeout", "1s"])
        .output()
        .unwrap();
    let results: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("out/results.json"))
            .unwrap_or_else(|err| panic!("no results.json ({err}): {output:?}")),
    )
    .unwrap();
    let outcome = |name: &str| {
        results["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|case| case["case"] == name)
            .unwrap_or_else(|| panic!("no case {name} in {results}"))
            .clone()
    };
    let held = outcome("held-past-the-deadline");
    // The start is a setup step, so the case is an error of its own, not a verdict.
    assert_eq!(held["outcome"], "error", "{held}");
    assert_eq!(
        held["reason"],
        "setup failed: suites/hold.yaml:11: case `held-past-the-deadline`, step 4 \
         `start_container`: CRI StartContainer on <endpoint>: DeadlineExceeded: no answer within 1s"
    );
    for control in ["held-within-the-deadline", "not-held"] {
        assert_eq!(
            outcome(control)["outcome"],
            "passed",
            "{}",
            outcome(control)
        );
    }
}
