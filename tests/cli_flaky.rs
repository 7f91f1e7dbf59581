//! `cri-harness run --repeat` and `--rerun-failed` on the mock: a fault that lands on named
//! attempts makes a case fail sometimes, and the run reports it flaky, with the count and each
//! failed attempt, in its lines, results.json and JUnit, as CI readers of flaky tests expect.

use crate::support;

use std::path::Path;
use std::process::Output;

use serde_json::{json, Value};
use support::harness;

/// A user suite of four cases asking the mock's Version: one a fault breaks on attempts 1, 6,
/// 11, ... (one in five), one never broken, one broken on its first attempt only, one always.
const SUITE: &str = "\
suite: flaky
about: Version answers a fault breaks on some attempts.
cases:
  - name: one-in-five
    clause: runtime.version.answers
    needs: [mock_control]
    steps:
      - mock_inject_error: {method: Version, code: Internal, message: injected flake, attempts: {every: 5}}
      - runtime_version: {expect: {version: {equals: 0.1.0}}}
  - name: steady
    clause: runtime.version.answers
    steps:
      - runtime_version: {expect: {version: {equals: 0.1.0}}}
  - name: first-attempt-only
    clause: runtime.version.answers
    needs: [mock_control]
    steps:
      - mock_inject_error: {method: Version, code: Internal, message: first only, attempts: {from: 1}}
      - runtime_version: {expect: {version: {equals: 0.1.0}}}
  - name: always
    clause: runtime.version.answers
    needs: [mock_control]
    steps:
      - mock_inject_error: {method: Version, code: Internal, message: never answers}
      - runtime_version: {expect: {version: {equals: 0.1.0}}}
";

/// Runs the cases matching `focus` with `extra` flags; answers the output and the report
/// directory's results.json and junit.xml.
fn run(dir: &Path, focus: &str, extra: &[&str]) -> (Output, Value, String) {
    let suites = dir.join("suites");
    std::fs::create_dir_all(&suites).unwrap();
    std::fs::write(suites.join("flaky.yaml"), SUITE).unwrap();
    let reports = dir.join("out");
    let output = harness()
        .current_dir(dir)
        .args(["run", "--mock", "--suites", "suites", "--report-dir", "out"])
        .args([
            "--snapshot-dir",
            "snapshots",
            "--run-id",
            "flaky",
            "--focus",
            focus,
        ])
        .args(extra)
        .output()
        .unwrap();
    let results = std::fs::read_to_string(reports.join("results.json"))
        .unwrap_or_else(|err| panic!("no results.json ({err}): {output:?}"));
    let junit = std::fs::read_to_string(reports.join("junit.xml")).unwrap();
    (output, serde_json::from_str(&results).unwrap(), junit)
}

/// The reason a failed attempt of `case` gives: the step and the injected status.
fn reason(line: usize, case: &str, message: &str) -> String {
    format!(
        "suites/flaky.yaml:{line}: case `{case}`, step 2 `runtime_version`: CRI Version on \
         <endpoint>: Internal: {message}"
    )
}

/// Where a failed attempt stopped, as `results.json` records it: at the `runtime_version`
/// step on `line`, whose answer was the injected error `message`.
fn stopped(line: usize, message: &str) -> Value {
    json!({"step": 2, "name": "runtime_version", "line": line, "kind": "expectation",
        "error": format!("CRI Version on <endpoint>: Internal: {message}")})
}

/// `(element, message, type)` of each child of the test case named `name`.
fn testcase_children(junit: &str, name: &str) -> Vec<(String, String, String)> {
    let doc = roxmltree::Document::parse(junit).unwrap();
    let case = doc
        .descendants()
        .find(|n| n.has_tag_name("testcase") && n.attribute("name") == Some(name))
        .unwrap_or_else(|| panic!("no testcase {name} in {junit}"));
    case.children()
        .filter(roxmltree::Node::is_element)
        .map(|n| {
            let attribute = |a| n.attribute(a).unwrap_or_default().to_owned();
            (
                n.tag_name().name().to_owned(),
                attribute("message"),
                attribute("type"),
            )
        })
        .collect()
}

#[test]
fn repeat_20_reports_a_fault_landing_one_attempt_in_five_as_flaky_4_of_20() {
    let dir = tempfile::tempdir().unwrap();
    let (output, results, junit) = run(
        dir.path(),
        "^flaky/(one-in-five|steady)$",
        &["--repeat", "20"],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    // A flaky case is no regression: the run passes.
    assert!(output.status.success(), "{stdout}");
    let failed = reason(9, "one-in-five", "injected flake");
    let flaky = &results["cases"][0];
    assert_eq!(flaky["case"], "one-in-five");
    assert_eq!(flaky["outcome"], "flaky");
    assert_eq!(flaky["reason"], "flaky (4 of 20 failed)");
    assert_eq!(flaky["attempts"], 20);
    assert_eq!(flaky["clause"], "runtime.version.answers");
    let expected: Vec<Value> = [1, 6, 11, 16]
        .iter()
        .map(|attempt| {
            json!({"attempt": attempt, "verdict": "failed", "reason": failed,
                "clause": "runtime.version.answers",
                "stopped": stopped(9, "injected flake")})
        })
        .collect();
    assert_eq!(flaky["failures"], Value::Array(expected));
    let steady = &results["cases"][1];
    assert_eq!(steady["outcome"], "passed");
    assert_eq!(steady["attempts"], 20);
    assert!(steady.get("failures").is_none(), "{steady}");

    let lines: Vec<&str> = stdout.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("FLAKY flaky/one-in-five ("))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        lines[at].ends_with(") [runtime.version.answers] flaky (4 of 20 failed)"),
        "{stdout}"
    );
    for (line, attempt) in lines[at + 1..at + 5].iter().zip([1, 6, 11, 16]) {
        assert_eq!(*line, format!("  attempt {attempt} failed: {failed}"));
    }
    assert!(lines.contains(
        &"verdicts: 1 passed, 0 failed, 0 warning, 0 error, 0 known, 0 skipped, 1 flaky"
    ));
    assert!(lines.contains(&"2 passed, 0 failed, 0 skipped"), "{stdout}");

    let doc = roxmltree::Document::parse(&junit).unwrap();
    let root = doc.root_element();
    assert_eq!(
        ["tests", "failures", "errors"].map(|a| root.attribute(a)),
        [Some("2"), Some("0"), Some("0")]
    );
    let expected: Vec<(String, String, String)> = [1, 6, 11, 16]
        .iter()
        .map(|attempt| {
            (
                "flakyFailure".to_owned(),
                format!("attempt {attempt}: {failed}"),
                "CaseFailed".to_owned(),
            )
        })
        .chain([("system-out".to_owned(), String::new(), String::new())])
        .collect();
    assert_eq!(testcase_children(&junit, "one-in-five"), expected);
    assert!(testcase_children(&junit, "steady").is_empty());
}

#[test]
fn repeat_with_strict_fails_the_run_on_a_flaky_case() {
    let dir = tempfile::tempdir().unwrap();
    let (output, results, _) = run(
        dir.path(),
        "^flaky/one-in-five$",
        &["--repeat", "6", "--strict"],
    );
    assert_eq!(results["cases"][0]["reason"], "flaky (2 of 6 failed)");
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.lines().any(|l| l == "0 passed, 1 failed, 0 skipped"),
        "{stdout}"
    );
}

#[test]
fn rerun_failed_makes_a_case_passing_on_rerun_flaky_and_one_failing_throughout_failed() {
    let dir = tempfile::tempdir().unwrap();
    let (output, results, junit) = run(
        dir.path(),
        "^flaky/(steady|first-attempt-only|always)$",
        &["--rerun-failed", "2"],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    let cases = results["cases"].as_array().unwrap();
    let names: Vec<&str> = cases.iter().map(|c| c["case"].as_str().unwrap()).collect();
    assert_eq!(names, ["steady", "first-attempt-only", "always"]);
    // Passed at once: run once, nothing about attempts.
    assert_eq!(cases[0]["outcome"], "passed");
    assert!(cases[0].get("attempts").is_none(), "{}", cases[0]);
    // Failed, then passed on the first rerun.
    let first = reason(19, "first-attempt-only", "first only");
    assert_eq!(cases[1]["outcome"], "flaky");
    assert_eq!(cases[1]["reason"], "flaky (1 of 2 failed)");
    assert_eq!(cases[1]["attempts"], 2);
    assert_eq!(
        cases[1]["failures"],
        json!([{"attempt": 1, "verdict": "failed", "reason": first,
            "clause": "runtime.version.answers", "stopped": stopped(19, "first only")}])
    );
    // Failed in the first attempt and in both reruns.
    let never = reason(25, "always", "never answers");
    assert_eq!(cases[2]["outcome"], "failed");
    assert_eq!(
        cases[2]["reason"],
        format!("failed in all 3 attempts: {never}")
    );
    assert_eq!(cases[2]["attempts"], 3);
    let attempts: Vec<u64> = cases[2]["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            assert_eq!(f["reason"], never);
            assert_eq!(f["stopped"], stopped(25, "never answers"));
            f["attempt"].as_u64().unwrap()
        })
        .collect();
    assert_eq!(attempts, [1, 2, 3]);

    let element = |name: &str, message: String, ty: &str| (name.to_owned(), message, ty.to_owned());
    assert_eq!(
        testcase_children(&junit, "first-attempt-only"),
        [
            element("flakyFailure", format!("attempt 1: {first}"), "CaseFailed"),
            element("system-out", String::new(), ""),
        ]
    );
    assert_eq!(
        testcase_children(&junit, "always"),
        [
            element(
                "failure",
                format!("failed in all 3 attempts: {never}"),
                "CaseFailed"
            ),
            element("rerunFailure", format!("attempt 2: {never}"), "CaseFailed"),
            element("rerunFailure", format!("attempt 3: {never}"), "CaseFailed"),
            element("system-out", String::new(), ""),
        ]
    );
}
