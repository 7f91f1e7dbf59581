//! `report diff`, `report history` and `report merge --baseline` over nights laid out as a
//! nightly keeps them: one directory per night named by its date, holding one lane's
//! `results.json` at its root or several lanes in sub-directories. Lanes pair by what ran, as
//! the reports record it, so equal nights show no change, a fix shows as fixed, a regression
//! gates, and a lane that came or went is listed as a lane, never as its cases.

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use cri_harness::report::model::{CaseOutcome, CaseReport, RunReport};
use cri_harness::report::node::Node;
use support::{harness, printed};

/// What a lane ran against.
#[derive(Clone, Copy)]
struct Lane {
    runtime: &'static str,
    version: &'static str,
    /// The endpoint, or none for the mock.
    endpoint: Option<&'static str>,
    /// The mock's profile (empty for the default one).
    mock_profile: &'static str,
    kubelet: &'static str,
}

const MOCK: Lane = Lane {
    runtime: "cri-harness-mock",
    version: "0.1.0",
    endpoint: None,
    mock_profile: "",
    kubelet: "seed",
};
const OTHER_MOCK: Lane = Lane {
    mock_profile: "other-runtime",
    ..MOCK
};
const CONTAINERD: Lane = Lane {
    runtime: "containerd",
    version: "v2.1.9",
    endpoint: Some("unix:///run/containerd-2.1/containerd.sock"),
    mock_profile: "",
    kubelet: "seed",
};
const CONTAINERD_CURRENT: Lane = Lane {
    kubelet: "current",
    ..CONTAINERD
};
/// CRI-O in its two signature-policy modes: one identity, told apart by their directories.
const CRIO: Lane = Lane {
    runtime: "cri-o",
    version: "1.36.3",
    endpoint: Some("unix:///run/crio/crio.sock"),
    mock_profile: "",
    kubelet: "seed",
};

const CASES: [&str; 4] = ["stop-twice", "exec-sync", "pod-ip", "image-status"];

/// A report of `lane` whose cases all pass but those in `failing`.
fn report(lane: Lane, failing: &[&str]) -> RunReport {
    let cases = CASES
        .iter()
        .enumerate()
        .map(|(i, case)| CaseReport {
            suite: "lifecycle".into(),
            case: (*case).into(),
            source: "suites/lifecycle.yaml".into(),
            line: 10 * (i + 1),
            number: i + 1,
            outcome: if failing.contains(case) {
                CaseOutcome::Failed("StopContainer answered Unknown".into())
            } else {
                CaseOutcome::Passed
            },
            duration: Duration::from_millis(120),
            snapshot: None,
            clause: None,
            notes: Vec::new(),
            finding_fixed: None,
            environment: None,
            timing: Default::default(),
            unreachable: false,
            feature_gates: Default::default(),
            attempts: 1,
            failures: Vec::new(),
            stopped: None,
            rpcs: Vec::new(),
        })
        .collect();
    RunReport {
        run_id: "0badcafe".into(),
        target: lane.endpoint.unwrap_or("mock").into(),
        target_kind: if lane.endpoint.is_some() {
            lane.runtime.into()
        } else {
            "mock".into()
        },
        runtime_handler: String::new(),
        mock_profile: lane.mock_profile.into(),
        kubelet: Some(lane.kubelet.into()),
        cases,
        errors: Vec::new(),
        aborted: None,
        interrupted: false,
        duration: Duration::from_secs(3),
        started_at: Some("2026-12-04T02:00:00Z".into()),
        node: Node {
            name: "ci-runner".into(),
            kernel: "6.1.0-28-amd64".into(),
            os_image: Some("Debian GNU/Linux 12 (bookworm)".into()),
            runtime_name: Some(lane.runtime.into()),
            runtime_version: Some(lane.version.into()),
        },
        strict: false,
        known_findings: None,
        feature_gates: Default::default(),
    }
}

/// Writes `report` as `run --report-dir DIR` does: `DIR/results.json` and `DIR/junit.xml`.
fn write(dir: &Path, report: &RunReport) {
    cri_harness::report::write(dir, report).unwrap();
}

/// Runs `report diff OLD NEW --json FILE`: its exit code, stdout and JSON.
fn diff(old: &Path, new: &Path) -> (Option<i32>, String, serde_json::Value) {
    let json = old.with_extension("diff.json");
    let output = harness()
        .args(["report", "diff"])
        .args([old, new])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(output.stderr.is_empty(), "{}", printed(&output));
    let value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (
        output.status.code(),
        String::from_utf8(output.stdout).unwrap(),
        value,
    )
}

/// Two night directories named by their dates under a fresh directory.
fn nights() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("reports/2026-12-03");
    let new = dir.path().join("reports/2026-12-04");
    (dir, old, new)
}

#[test]
fn one_lane_a_night_pairs_across_date_named_directories() {
    let (_dir, old, new) = nights();
    write(&old, &report(CONTAINERD, &["stop-twice"]));
    write(&new, &report(CONTAINERD, &["stop-twice"]));
    let (code, stdout, json) = diff(&old, &new);
    assert_eq!((code, stdout.as_str()), (Some(0), "no change\n"));
    for list in ["added", "removed", "lanes_added", "lanes_removed"] {
        assert_eq!(json[list], serde_json::json!([]), "{list}");
    }

    // The next night fixes it: shown as fixed, under the lane of what ran.
    write(&new, &report(CONTAINERD, &[]));
    let (code, stdout, json) = diff(&old, &new);
    assert_eq!(code, Some(0), "{stdout}");
    assert_eq!(
        stdout,
        "fixed (1):\n  containerd v2.1.9 (endpoint, kubelet seed): lifecycle/stop-twice (failed -> passed)\n"
    );
    assert_eq!(
        json["fixes"][0]["key"]["lane"],
        "containerd v2.1.9 (endpoint, kubelet seed)"
    );

    // A regression gates, as a new failure always has.
    write(&new, &report(CONTAINERD, &["stop-twice", "exec-sync"]));
    let (code, stdout, _) = diff(&old, &new);
    assert_eq!(code, Some(1), "{stdout}");
    assert_eq!(
        stdout,
        "new failures (1):\n  containerd v2.1.9 (endpoint, kubelet seed): lifecycle/exec-sync (passed -> failed): StopContainer answered Unknown\n"
    );
}

/// The night's lanes, each in its own directory.
fn several(night: &Path, lanes: &[(&str, Lane, &[&str])]) {
    for (at, lane, failing) in lanes {
        write(&night.join(at), &report(*lane, failing));
    }
}

#[test]
fn several_lanes_a_night_pair_by_what_ran_not_by_their_directories() {
    let (_dir, old, new) = nights();
    // The same lanes, their directories named otherwise on each night but for CRI-O's two,
    // which only their directories tell apart.
    several(
        &old,
        &[
            ("mock", MOCK, &[]),
            ("mock-other", OTHER_MOCK, &[]),
            ("containerd", CONTAINERD, &["pod-ip"]),
            ("containerd-current", CONTAINERD_CURRENT, &[]),
            ("crio-signed", CRIO, &["image-status"]),
            ("crio-system", CRIO, &[]),
        ],
    );
    several(
        &new,
        &[
            ("0-mock", MOCK, &[]),
            ("1-other-runtime", OTHER_MOCK, &[]),
            ("2-containerd-2.1", CONTAINERD, &["pod-ip"]),
            ("3-containerd-2.1-current", CONTAINERD_CURRENT, &[]),
            ("crio-signed", CRIO, &["image-status"]),
            ("crio-system", CRIO, &[]),
        ],
    );
    let (code, stdout, _) = diff(&old, &new);
    assert_eq!((code, stdout.as_str()), (Some(0), "no change\n"));

    // A fix on one lane, a regression on another of the same runtime, a regression on one
    // CRI-O mode only.
    several(
        &new,
        &[
            ("2-containerd-2.1", CONTAINERD, &[]),
            (
                "3-containerd-2.1-current",
                CONTAINERD_CURRENT,
                &["exec-sync"],
            ),
            ("crio-system", CRIO, &["stop-twice"]),
        ],
    );
    let (code, stdout, json) = diff(&old, &new);
    assert_eq!(code, Some(1), "{stdout}");
    assert_eq!(
        stdout,
        "new failures (2):
  containerd v2.1.9 (endpoint, kubelet current): lifecycle/exec-sync (passed -> failed): StopContainer answered Unknown
  cri-o 1.36.3 (endpoint, kubelet seed) at crio-system: lifecycle/stop-twice (passed -> failed): StopContainer answered Unknown
fixed (1):
  containerd v2.1.9 (endpoint, kubelet seed): lifecycle/pod-ip (failed -> passed)
"
    );
    assert!(json["added"].as_array().unwrap().is_empty());
}

#[test]
fn a_lane_that_came_or_went_is_listed_as_a_lane_and_a_failing_new_lane_gates() {
    let (_dir, old, new) = nights();
    several(
        &old,
        &[("mock", MOCK, &[]), ("containerd", CONTAINERD, &[])],
    );
    several(
        &new,
        &[
            ("mock", MOCK, &[]),
            ("containerd", CONTAINERD_CURRENT, &[]),
            ("mock-other", OTHER_MOCK, &["pod-ip"]),
        ],
    );
    let (code, stdout, json) = diff(&old, &new);
    assert_eq!(code, Some(1), "{stdout}");
    let lane_line = |night: &Path, at: &str, label: &str, failing: usize| {
        format!(
            "  {label}: 4 cases, {failing} failing ({})\n",
            night.join(at).join("results.json").display()
        )
    };
    assert_eq!(
        stdout,
        format!(
            "new failures (1):
  cri-harness-mock 0.1.0 (mock profile other-runtime, kubelet seed): lifecycle/pod-ip (absent -> failed): StopContainer answered Unknown
lanes added (2):
{}{}lanes removed (1):
{}",
            lane_line(
                &new,
                "containerd",
                "containerd v2.1.9 (endpoint, kubelet current)",
                0
            ),
            lane_line(
                &new,
                "mock-other",
                "cri-harness-mock 0.1.0 (mock profile other-runtime, kubelet seed)",
                1
            ),
            lane_line(
                &old,
                "containerd",
                "containerd v2.1.9 (endpoint, kubelet seed)",
                0
            ),
        )
    );
    assert_eq!(json["lanes_added"][0]["id"]["kubelet"], "current");
    assert_eq!(
        json["lanes_added"][1]["id"]["target"],
        serde_json::json!({"mock": {"profile": "other-runtime"}})
    );
}

#[test]
fn a_report_of_an_older_harness_pairs_with_the_lane_it_fits() {
    let (_dir, old, new) = nights();
    write(&old, &report(CONTAINERD, &["stop-twice"]));
    // An older harness recorded neither the kubelet profile nor the mock's profile.
    let results = old.join("results.json");
    let mut value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();
    value.as_object_mut().unwrap().remove("kubelet");
    std::fs::write(&results, value.to_string()).unwrap();
    write(&new, &report(CONTAINERD, &[]));
    let (code, stdout, _) = diff(&old, &new);
    assert_eq!(code, Some(0), "{stdout}");
    assert_eq!(
        stdout,
        "fixed (1):\n  containerd v2.1.9 (endpoint, kubelet seed): lifecycle/stop-twice (failed -> passed)\n"
    );
}

#[test]
fn history_draws_one_row_per_lane_across_date_named_nights() {
    let (dir, old, new) = nights();
    for (night, start) in [
        (&old, "2026-12-03T02:00:00Z"),
        (&new, "2026-12-04T02:00:00Z"),
    ] {
        let mut report = report(CONTAINERD, &["stop-twice"]);
        report.started_at = Some(start.into());
        write(night, &report);
    }
    let out = dir.path().join("history");
    let output = harness()
        .args(["report", "history"])
        .args([&old, &new])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", printed(&output));
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.starts_with(
            "2 nights, 1 lanes, ordered by start time
failing in the latest night (1):
  containerd v2.1.9 (endpoint, kubelet seed): lifecycle/stop-twice failing since 2026-12-03 (2026-12-03T02:00:00Z), 2 nights: StopContainer answered Unknown
"
        ),
        "{stdout}"
    );
}

#[test]
fn two_inputs_of_one_lane_at_one_path_are_an_error_naming_both() {
    let (dir, old, new) = nights();
    write(&old, &report(CONTAINERD, &[]));
    let (a, b) = (new.join("a"), new.join("b"));
    write(&a, &report(CONTAINERD, &[]));
    write(&b, &report(CONTAINERD, &[]));
    let output = harness()
        .args(["report", "merge"])
        .args([&a, &b])
        .arg("--baseline")
        .arg(&old)
        .arg("--out")
        .arg(dir.path().join("merged"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", printed(&output));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains(&format!(
            "{} and {} are both the lane containerd v2.1.9 (endpoint, kubelet seed)",
            a.join("results.json").display(),
            b.join("results.json").display()
        )),
        "{stderr}"
    );
}
