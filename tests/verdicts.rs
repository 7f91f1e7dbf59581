//! Every verdict level proved by a mutant on the built-in mock: a case meets a fault injected
//! through the mock's control service, or an expectation the mock's answer contradicts, and
//! ends with the verdict its clause's level declares (must: failed, should: warning, observed:
//! a note, a setup step: error, a listed finding: known), while the same case unmutated
//! passes. Then one run holding every verdict goes through the console lines, results.json,
//! JUnit and `report merge`.
//!
//! The cases make only setup, mock-control and check steps, so no reference is involved.

use crate::support;

use std::collections::BTreeMap;

use cri_harness::contract::known::{KnownError, KnownFindings};
use cri_harness::contract::Level;
use cri_harness::report;
use cri_harness::report::merge;
use cri_harness::report::model::Verdict;
use cri_harness::runner::{self, CaseOutcome, CaseReport, Interrupt, RunReport, SkipWhy, Target};
use cri_harness::suite;
use rstest::rstest;

/// The upstream reference the findings of these tests give.
const ISSUE: &str = "https://example.invalid/cri-harness-mock/issues/1";
const OTHER_ISSUE: &str = "https://example.invalid/cri-harness-mock/issues/2";

// must: the status of a ready sandbox is read as ready.
const MUST_HOLDS: &str = "
  - name: must-holds
    clause: sandbox.run.ready
    steps:
      - run_sandbox: {as: sb, pod: web}
      - sandbox_status: {sandbox: sb, expect: {state: ready, created: true}}
";

const MUST_FAULT: &str = "
  - name: must-fault
    clause: sandbox.run.ready
    needs: [mock_control]
    steps:
      - run_sandbox: {as: sb, pod: web}
      - mock_inject_error: {method: PodSandboxStatus, code: Internal, message: boom}
      - sandbox_status: {sandbox: sb, expect: {state: ready, created: true}}
";

const MUST_CONTRADICTED: &str = "
  - name: must-contradicted
    clause: sandbox.run.ready
    steps:
      - run_sandbox: {as: sb, pod: web}
      - sandbox_status: {sandbox: sb, expect: {state: not_ready}}
";

// should: a stopped sandbox reports no IP; the must check after it decides between warning
// and failure, so it must still run.
const SHOULD_WARNS: &str = "
  - name: should-warns
    clause: sandbox.stop.not-ready
    needs: [mock_control]
    steps:
      - run_sandbox: {as: sb, pod: web}
      - stop_sandbox: sb
      - mock_inject_error: {method: PodSandboxStatus, code: Internal, message: boom}
      - sandbox_status: {sandbox: sb, expect: {ip: absent}}
        clause: list.id-prefix
      - sandbox_status: {sandbox: sb, expect: {state: not_ready}}
";

const SHOULD_THEN_MUST_FAILS: &str = "
  - name: should-then-must-fails
    clause: sandbox.stop.not-ready
    needs: [mock_control]
    steps:
      - run_sandbox: {as: sb, pod: web}
      - stop_sandbox: sb
      - mock_inject_error: {method: PodSandboxStatus, code: Internal, message: boom}
      - sandbox_status: {sandbox: sb, expect: {ip: absent}}
        clause: list.id-prefix
      - sandbox_status: {sandbox: sb, expect: {state: ready}}
";

const SHOULD_HOLDS: &str = "
  - name: should-holds
    clause: sandbox.stop.not-ready
    steps:
      - run_sandbox: {as: sb, pod: web}
      - stop_sandbox: sb
      - sandbox_status: {sandbox: sb, expect: {ip: absent}}
        clause: list.id-prefix
      - sandbox_status: {sandbox: sb, expect: {state: not_ready}}
";

// observed: a container stopped before it started reads created (containerd's behaviour).
const OBSERVED_HOLDS: &str = "
  - name: observed-holds
    clause: container.stop.idempotent
    steps:
      - run_sandbox: {as: sb, pod: web}
      - create_container: {as: idle, sandbox: sb}
      - stop_container: {container: idle, timeout: 10}
        clause: container.stop.idempotent
      - container_status: {container: idle, expect: {state: created, started: false}}
        clause: container.stop.created-stays-created
";

// The answer another runtime gives: the mock's `created` contradicts it.
const OBSERVED_CONTRADICTED: &str = "
  - name: observed-contradicted
    clause: container.stop.idempotent
    steps:
      - run_sandbox: {as: sb, pod: web}
      - create_container: {as: idle, sandbox: sb}
      - stop_container: {container: idle, timeout: 10}
        clause: container.stop.idempotent
      - container_status: {container: idle, expect: {state: exited}}
        clause: container.stop.created-stays-created
";

const OBSERVED_FAULT: &str = "
  - name: observed-fault
    clause: container.stop.idempotent
    needs: [mock_control]
    steps:
      - run_sandbox: {as: sb, pod: web}
      - create_container: {as: idle, sandbox: sb}
      - stop_container: {container: idle, timeout: 10}
        clause: container.stop.idempotent
      - mock_inject_error: {method: ContainerStatus, code: Internal, message: boom}
      - container_status: {container: idle, expect: {state: created, started: false}}
        clause: container.stop.created-stays-created
";

// setup: RunPodSandbox fails where it only sets up, and where it is the subject.
const SETUP_ERRORS: &str = "
  - name: setup-errors
    clause: sandbox.run.ready
    needs: [mock_control]
    steps:
      - mock_inject_error: {method: RunPodSandbox, code: Internal, message: boom}
      - run_sandbox: {as: sb, pod: web}
      - sandbox_status: {sandbox: sb, expect: {state: ready}}
";

const SUBJECT_FAILS: &str = "
  - name: subject-fails
    clause: sandbox.run.ready
    needs: [mock_control]
    steps:
      - mock_inject_error: {method: RunPodSandbox, code: Internal, message: boom}
      - run_sandbox: {as: sb, pod: web}
        clause: sandbox.run.ready
      - sandbox_status: {sandbox: sb, expect: {state: ready}}
";

const NEEDS_PROCESS: &str = "
  - name: needs-process
    clause: runtime.status.ready
    needs: [process]
    steps:
      - runtime_status: {}
";

/// Suite `verdicts` of these cases.
fn suite_of(cases: &[&str]) -> suite::Suite {
    suite::parse("verdicts.yaml", &suite_of_text(cases)).unwrap()
}

/// The text of suite `verdicts` of these cases.
fn suite_of_text(cases: &[&str]) -> String {
    format!(
        "suite: verdicts\nabout: mutants for every verdict level\ncases:{}",
        cases.concat()
    )
}

/// Runs `cases` on fresh mocks, strict or not, with the findings given.
async fn run(cases: &[&str], strict: bool, known: Option<KnownFindings>) -> RunReport {
    let scratch = tempfile::tempdir().unwrap();
    let mut config = support::run_config(
        Target::Mock,
        vec![suite_of(cases)],
        "verdicts",
        scratch.path(),
    );
    config.strict = strict;
    config.known = known;
    let report = runner::run(config, Interrupt::new(), None).await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert!(report.aborted.is_none(), "{:?}", report.aborted);
    assert_eq!(report.cases.len(), cases.len());
    report
}

/// The case called `name`.
fn case<'a>(report: &'a RunReport, name: &str) -> &'a CaseReport {
    report
        .cases
        .iter()
        .find(|c| c.case == name)
        .unwrap_or_else(|| panic!("no case {name} in {:#?}", report.cases))
}

/// Each case's verdict as results.json spells it, and the clause it rests on.
fn verdicts(report: &RunReport) -> Vec<(&str, &'static str, Option<&str>)> {
    report
        .cases
        .iter()
        .map(|c| {
            let word = match c.outcome {
                CaseOutcome::Passed => "passed",
                CaseOutcome::Failed(_) => "failed",
                CaseOutcome::Warning(_) => "warning",
                CaseOutcome::Skipped(_) => "skipped",
                CaseOutcome::Error(_) => "error",
                CaseOutcome::Known { .. } => "known",
                CaseOutcome::Flaky(_) => "flaky",
                CaseOutcome::Interrupted(_) => "interrupted",
            };
            (c.case.as_str(), word, c.clause.as_deref())
        })
        .collect()
}

/// The reason a case gave, whatever its verdict.
fn reason(case: &CaseReport) -> &str {
    match &case.outcome {
        CaseOutcome::Passed => "",
        CaseOutcome::Failed(reason)
        | CaseOutcome::Warning(reason)
        | CaseOutcome::Error(reason)
        | CaseOutcome::Flaky(reason)
        | CaseOutcome::Interrupted(reason)
        | CaseOutcome::Known { reason, .. } => reason,
        CaseOutcome::Skipped(skip) => &skip.reason,
    }
}

/// Each note as (clause, level).
fn notes(case: &CaseReport) -> Vec<(&str, Level)> {
    case.notes
        .iter()
        .map(|n| (n.clause.as_str(), n.level))
        .collect()
}

fn findings(clause: &str, runtime: &str) -> KnownFindings {
    let text = format!(
        "- runtime: {runtime}\n  versions: \">=0.0.0\"\n  findings:\n    - {{case: verdicts/must-fault, clause: {clause}, reference: \"{ISSUE}\"}}\n    - {{case: verdicts/must-holds, clause: sandbox.run.ready, reference: \"{OTHER_ISSUE}\"}}\n"
    );
    KnownFindings::parse("test", &text).unwrap()
}

#[tokio::test]
async fn a_broken_must_clause_fails_the_case_naming_the_clause() {
    let report = run(&[MUST_HOLDS, MUST_FAULT, MUST_CONTRADICTED], false, None).await;
    assert_eq!(
        verdicts(&report),
        [
            ("must-holds", "passed", None),
            ("must-fault", "failed", Some("sandbox.run.ready")),
            ("must-contradicted", "failed", Some("sandbox.run.ready")),
        ]
    );
    let fault = reason(case(&report, "must-fault"));
    assert!(fault.contains("step 3 `sandbox_status`"), "{fault}");
    assert!(fault.contains("boom"), "{fault}");
    let contradicted = reason(case(&report, "must-contradicted"));
    assert!(
        contradicted.contains("step 2 `sandbox_status`"),
        "{contradicted}"
    );
    assert!(contradicted.contains("state"), "{contradicted}");
    assert!(report.cases.iter().all(|c| c.notes.is_empty()));
    assert!(!report.success());
    assert_eq!(
        report::summary_line(&report),
        "1 passed, 2 failed, 0 skipped"
    );
}

#[tokio::test]
async fn a_broken_should_clause_warns_and_the_case_goes_on_to_its_must_steps() {
    let report = run(
        &[SHOULD_HOLDS, SHOULD_WARNS, SHOULD_THEN_MUST_FAILS],
        false,
        None,
    )
    .await;
    assert_eq!(
        verdicts(&report),
        [
            ("should-holds", "passed", None),
            ("should-warns", "warning", Some("list.id-prefix")),
            // The step after the broken should clause ran: its must clause failed the case.
            (
                "should-then-must-fails",
                "failed",
                Some("sandbox.stop.not-ready")
            ),
        ]
    );
    let should = [("list.id-prefix", Level::Should)];
    assert_eq!(notes(case(&report, "should-holds")), []);
    for name in ["should-warns", "should-then-must-fails"] {
        let case = case(&report, name);
        assert_eq!(notes(case), should, "{name}");
        let message = &case.notes[0].message;
        assert!(message.contains("step 4 `sandbox_status`"), "{message}");
        assert!(message.contains("boom"), "{message}");
    }
    let warning = reason(case(&report, "should-warns"));
    assert!(warning.contains("(should: list.id-prefix)"), "{warning}");
    let failure = reason(case(&report, "should-then-must-fails"));
    assert!(failure.contains("step 5 `sandbox_status`"), "{failure}");
    let line = report::case_line(case(&report, "should-warns"));
    assert!(
        line.starts_with("WARN verdicts/should-warns (") && line.contains("[list.id-prefix]"),
        "{line}"
    );
}

#[rstest]
#[case::lenient(false, true, "1 passed, 0 failed, 0 skipped")]
#[case::strict(true, false, "0 passed, 1 failed, 0 skipped")]
#[tokio::test]
async fn a_warning_fails_the_run_only_when_strict(
    #[case] strict: bool,
    #[case] success: bool,
    #[case] summary: &str,
) {
    let report = run(&[SHOULD_WARNS], strict, None).await;
    assert_eq!(
        verdicts(&report),
        [("should-warns", "warning", Some("list.id-prefix"))]
    );
    assert_eq!(report.success(), success);
    assert_eq!(report::summary_line(&report), summary);
    assert_eq!(
        report::verdict_line(&report),
        "verdicts: 0 passed, 0 failed, 1 warning, 0 error, 0 known, 0 skipped"
    );
}

#[tokio::test]
async fn a_broken_observed_clause_is_only_a_note() {
    let report = run(
        &[OBSERVED_HOLDS, OBSERVED_CONTRADICTED, OBSERVED_FAULT],
        false,
        None,
    )
    .await;
    assert_eq!(
        verdicts(&report),
        [
            ("observed-holds", "passed", None),
            ("observed-contradicted", "passed", None),
            ("observed-fault", "passed", None),
        ]
    );
    let observed = [("container.stop.created-stays-created", Level::Observed)];
    assert_eq!(notes(case(&report, "observed-holds")), []);
    assert_eq!(notes(case(&report, "observed-contradicted")), observed);
    assert_eq!(notes(case(&report, "observed-fault")), observed);
    let message = &case(&report, "observed-contradicted").notes[0].message;
    assert!(message.contains("step 4 `container_status`"), "{message}");
    assert!(message.contains("created"), "{message}");
    assert!(report.success());
    assert_eq!(
        report::verdict_line(&report),
        "verdicts: 3 passed, 0 failed, 0 warning, 0 error, 0 known, 0 skipped"
    );
}

#[tokio::test]
async fn a_fault_on_a_setup_step_is_an_error_of_the_case_not_a_verdict() {
    let report = run(&[SETUP_ERRORS], false, None).await;
    assert_eq!(verdicts(&report), [("setup-errors", "error", None)]);
    let error = reason(&report.cases[0]);
    assert!(error.starts_with("setup failed: "), "{error}");
    assert!(error.contains("step 2 `run_sandbox`"), "{error}");
    assert!(error.contains("boom"), "{error}");
    assert!(!report.success());
    assert_eq!(
        report::summary_line(&report),
        "0 passed, 1 failed, 0 skipped"
    );
}

#[tokio::test]
async fn the_same_fault_on_the_step_under_test_fails_the_case() {
    let report = run(&[SUBJECT_FAILS], false, None).await;
    assert_eq!(
        verdicts(&report),
        [("subject-fails", "failed", Some("sandbox.run.ready"))]
    );
    let failure = reason(&report.cases[0]);
    assert!(!failure.starts_with("setup failed"), "{failure}");
    assert!(failure.contains("step 2 `run_sandbox`"), "{failure}");
    assert!(!report.success());
}

#[tokio::test]
async fn a_listed_failure_is_known_and_a_listed_pass_is_flagged_as_fixed() {
    let known = findings("sandbox.run.ready", "cri-harness-mock");
    let report = run(&[MUST_HOLDS, MUST_FAULT], false, Some(known)).await;
    assert_eq!(
        verdicts(&report),
        [
            ("must-holds", "passed", None),
            ("must-fault", "known", Some("sandbox.run.ready")),
        ]
    );
    let CaseOutcome::Known { reason, finding } = &case(&report, "must-fault").outcome else {
        unreachable!("checked above")
    };
    assert_eq!(finding, ISSUE);
    assert!(reason.contains("boom"), "{reason}");
    assert_eq!(case(&report, "must-fault").finding_fixed, None);
    assert_eq!(
        case(&report, "must-holds").finding_fixed.as_deref(),
        Some(OTHER_ISSUE)
    );
    assert!(report.success());
    assert_eq!(report.known_findings.as_deref(), Some("test"));
    assert_eq!(
        report::summary_line(&report),
        "2 passed, 0 failed, 0 skipped"
    );
}

#[rstest]
#[case::another_clause("sandbox.status.pod-ip", "cri-harness-mock")]
#[case::another_runtime("sandbox.run.ready", "containerd")]
#[tokio::test]
async fn a_finding_for_another_clause_or_runtime_leaves_the_failure(
    #[case] clause: &str,
    #[case] runtime: &str,
) {
    let report = run(&[MUST_FAULT], false, Some(findings(clause, runtime))).await;
    assert_eq!(
        verdicts(&report),
        [("must-fault", "failed", Some("sandbox.run.ready"))]
    );
    assert!(!report.success());
}

#[tokio::test]
async fn a_listed_case_that_only_warns_is_flagged_as_fixed() {
    // Its must clause held and only a should clause broke: the listed must finding did not
    // show, so the runtime may have fixed it, as for a pass.
    let text = format!(
        "- runtime: cri-harness-mock\n  versions: \">=0.0.0\"\n  findings:\n    - {{case: verdicts/should-warns, clause: sandbox.stop.not-ready, reference: \"{ISSUE}\"}}\n"
    );
    let known = KnownFindings::parse("test", &text).unwrap();
    let report = run(&[SHOULD_WARNS], false, Some(known)).await;
    assert_eq!(
        verdicts(&report),
        [("should-warns", "warning", Some("list.id-prefix"))]
    );
    assert_eq!(report.cases[0].finding_fixed.as_deref(), Some(ISSUE));
    assert!(report.success());
}

#[tokio::test]
async fn a_listed_case_whose_setup_errors_stays_an_error() {
    // A setup that could not be made says nothing of the finding: hiding it as known would
    // hide a broken run.
    let text = format!(
        "- runtime: cri-harness-mock\n  versions: \">=0.0.0\"\n  findings:\n    - {{case: verdicts/setup-errors, clause: sandbox.run.ready, reference: \"{ISSUE}\"}}\n"
    );
    let known = KnownFindings::parse("test", &text).unwrap();
    let report = run(&[SETUP_ERRORS], false, Some(known)).await;
    assert_eq!(verdicts(&report), [("setup-errors", "error", None)]);
    assert!(!report.success());
}

#[test]
fn a_findings_file_naming_a_should_clause_is_refused() {
    let text = format!(
        "- runtime: cri-harness-mock\n  versions: \">=0.0.0\"\n  findings:\n    - {{case: verdicts/should-warns, clause: list.id-prefix, reference: \"{ISSUE}\"}}\n"
    );
    match KnownFindings::parse("test", &text) {
        Err(KnownError::Clause { case, clause, .. }) => {
            assert_eq!(case, "verdicts/should-warns");
            assert_eq!(clause, "list.id-prefix");
        }
        other => panic!("not refused for its clause: {other:?}"),
    }
}

#[tokio::test]
async fn a_case_that_needs_a_process_is_skipped_on_the_mock() {
    let report = run(&[NEEDS_PROCESS], false, None).await;
    assert!(
        matches!(&report.cases[0].outcome, CaseOutcome::Skipped(skip) if skip.why == SkipWhy::NeedsProcess),
        "{:?}",
        report.cases[0].outcome
    );
}

// transport: the runtime does not answer the step under test.
const UNANSWERED: &str = "
  - name: unanswered
    clause: sandbox.run.ready
    needs: [mock_control]
    steps:
      - run_sandbox: {as: sb, pod: web}
      - mock_inject_error: {method: PodSandboxStatus, code: Unavailable, message: gone}
      - sandbox_status: {sandbox: sb, expect: {state: ready}}
";

/// The line, in the suite [`suite_of`] makes of `cases`, of step `step` (from 1) of the case
/// called `name`.
fn step_line(cases: &[&str], name: &str, step: usize) -> usize {
    let text = suite_of_text(cases);
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.trim() == format!("- name: {name}"))
        .unwrap();
    let at = lines[start..]
        .iter()
        .enumerate()
        .filter(|(_, l)| l.starts_with("      - "))
        .nth(step - 1)
        .unwrap()
        .0;
    start + at + 1
}

#[tokio::test]
async fn where_a_case_stopped_is_recorded_as_fields_the_words_are_made_from() {
    use cri_harness::report::model::StopKind;
    let cases = [MUST_HOLDS, MUST_CONTRADICTED, SETUP_ERRORS, UNANSWERED];
    let report = run(&cases, false, None).await;
    assert_eq!(case(&report, "must-holds").stopped, None);
    let stops: Vec<_> = report
        .cases
        .iter()
        .filter_map(|c| c.stopped.as_ref().map(|s| (c.case.as_str(), s)))
        .map(|(name, s)| (name, s.step, s.name.as_str(), s.line, s.kind))
        .collect();
    assert_eq!(
        stops,
        [
            (
                "must-contradicted",
                2,
                "sandbox_status",
                step_line(&cases, "must-contradicted", 2),
                StopKind::Expectation
            ),
            (
                "setup-errors",
                2,
                "run_sandbox",
                step_line(&cases, "setup-errors", 2),
                StopKind::Setup
            ),
            (
                "unanswered",
                3,
                "sandbox_status",
                step_line(&cases, "unanswered", 3),
                StopKind::Transport
            ),
        ]
    );
    // The verdict's words are the stop's, made in one place.
    for (name, prefix) in [
        ("must-contradicted", ""),
        ("setup-errors", "setup failed: "),
        ("unanswered", ""),
    ] {
        let stopped = case(&report, name).stopped.as_ref().unwrap();
        assert_eq!(
            reason(case(&report, name)),
            format!("{prefix}{}", stopped.message("verdicts.yaml", name))
        );
    }
    assert!(case(&report, "setup-errors")
        .stopped
        .as_ref()
        .unwrap()
        .error
        .contains("boom"));
    assert!(case(&report, "unanswered")
        .stopped
        .as_ref()
        .unwrap()
        .error
        .contains("gone"));
    // results.json carries them, and reads back the same.
    let line = report::line(&report).unwrap();
    let json: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(json["cases"][0].get("stopped"), None);
    assert_eq!(json["cases"][1]["stopped"]["kind"], "expectation");
    assert_eq!(json["cases"][1]["stopped"]["step"], 2);
    assert_eq!(json["cases"][1]["stopped"]["name"], "sandbox_status");
    assert_eq!(json["cases"][3]["stopped"]["kind"], "transport");
    let read = merge::read::parse(&line).unwrap();
    let stopped = |r: &RunReport| -> Vec<_> { r.cases.iter().map(|c| c.stopped.clone()).collect() };
    assert_eq!(stopped(&read), stopped(&report));
}

/// One run with one case of every verdict (the passed one with an observed note).
async fn every_verdict() -> RunReport {
    let text = format!(
        "- runtime: cri-harness-mock\n  versions: \">=0.0.0\"\n  findings:\n    - {{case: verdicts/must-fault, clause: sandbox.run.ready, reference: \"{ISSUE}\"}}\n"
    );
    let known = KnownFindings::parse("test", &text).unwrap();
    let report = run(
        &[
            OBSERVED_CONTRADICTED,
            MUST_CONTRADICTED,
            SHOULD_WARNS,
            NEEDS_PROCESS,
            SETUP_ERRORS,
            MUST_FAULT,
        ],
        false,
        Some(known),
    )
    .await;
    assert_eq!(
        verdicts(&report),
        [
            ("observed-contradicted", "passed", None),
            ("must-contradicted", "failed", Some("sandbox.run.ready")),
            ("should-warns", "warning", Some("list.id-prefix")),
            ("needs-process", "skipped", None),
            ("setup-errors", "error", None),
            ("must-fault", "known", Some("sandbox.run.ready")),
        ]
    );
    report
}

#[tokio::test]
async fn the_console_counts_every_verdict() {
    let report = every_verdict().await;
    let words: Vec<String> = report
        .cases
        .iter()
        .map(|c| {
            let line = report::case_line(c);
            line.split(' ').next().unwrap_or_default().to_owned()
        })
        .collect();
    assert_eq!(words, ["PASS", "FAIL", "WARN", "SKIP", "ERROR", "KNOWN"]);
    assert!(report::case_line(case(&report, "must-fault")).contains(&format!("[finding: {ISSUE}]")));
    assert_eq!(
        report::verdict_line(&report),
        "verdicts: 1 passed, 1 failed, 1 warning, 1 error, 1 known, 1 skipped"
    );
    assert_eq!(
        report::summary_line(&report),
        "3 passed, 2 failed, 1 skipped"
    );
    assert!(!report.success());
}

#[tokio::test]
async fn results_json_junit_and_the_merge_carry_every_verdict() {
    let report = every_verdict().await;
    let dir = tempfile::tempdir().unwrap();
    report::write(dir.path(), &report).unwrap();

    // results.json: the outcome words, the clause, the notes and the finding.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("results.json")).unwrap())
            .unwrap();
    let cases: BTreeMap<&str, &serde_json::Value> = json["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["case"].as_str().unwrap(), c))
        .collect();
    let outcomes: BTreeMap<&str, (&str, Option<&str>)> = cases
        .iter()
        .map(|(name, c)| {
            (
                *name,
                (c["outcome"].as_str().unwrap(), c["clause"].as_str()),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        BTreeMap::from([
            ("observed-contradicted", ("passed", None)),
            ("must-contradicted", ("failed", Some("sandbox.run.ready"))),
            ("should-warns", ("warning", Some("list.id-prefix"))),
            ("needs-process", ("skipped", None)),
            ("setup-errors", ("error", None)),
            ("must-fault", ("known", Some("sandbox.run.ready"))),
        ])
    );
    let note = |name: &str| {
        let notes = cases[name]["notes"].as_array().unwrap();
        assert_eq!(notes.len(), 1, "{name}: {notes:?}");
        (
            notes[0]["clause"].as_str().unwrap().to_owned(),
            notes[0]["level"].as_str().unwrap().to_owned(),
        )
    };
    assert_eq!(
        note("observed-contradicted"),
        (
            "container.stop.created-stays-created".into(),
            "observed".into()
        )
    );
    assert_eq!(
        note("should-warns"),
        ("list.id-prefix".into(), "should".into())
    );
    for name in ["must-contradicted", "setup-errors", "must-fault"] {
        assert!(cases[name].get("notes").is_none(), "{name}");
    }
    assert_eq!(cases["must-fault"]["finding"], ISSUE);
    assert_eq!(cases["needs-process"]["skip"], "needs_process");
    assert!(cases["setup-errors"]["reason"]
        .as_str()
        .unwrap()
        .starts_with("setup failed: "));
    assert_eq!(json["known_findings"], "test");

    // JUnit: one failure, one error, the warning and the known finding pass with the verdict
    // in their standard output.
    let xml = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let testcase = |name: &str| {
        doc.descendants()
            .find(|n| n.has_tag_name("testcase") && n.attribute("name") == Some(name))
            .unwrap_or_else(|| panic!("no testcase {name} in {xml}"))
    };
    let children = |name: &str| -> Vec<String> {
        testcase(name)
            .children()
            .filter(|n| n.is_element())
            .map(|n| n.tag_name().name().to_owned())
            .collect()
    };
    let out = |name: &str| -> String {
        testcase(name)
            .children()
            .find(|n| n.has_tag_name("system-out"))
            .and_then(|n| n.text())
            .unwrap_or_default()
            .to_owned()
    };
    let count = |tag: &str| doc.descendants().filter(|n| n.has_tag_name(tag)).count();
    assert_eq!(count("failure"), 1, "{xml}");
    assert_eq!(count("error"), 1, "{xml}");
    assert_eq!(count("skipped"), 1, "{xml}");
    assert_eq!(count("testcase"), 6, "no run problem: {xml}");
    assert!(children("must-contradicted").contains(&"failure".to_owned()));
    assert!(children("setup-errors").contains(&"error".to_owned()));
    assert!(children("needs-process").contains(&"skipped".to_owned()));
    for name in ["observed-contradicted", "should-warns", "must-fault"] {
        let kids = children(name);
        assert!(
            !kids
                .iter()
                .any(|k| ["failure", "error", "skipped"].contains(&k.as_str())),
            "{name} does not pass: {kids:?}"
        );
    }
    let warning = out("should-warns");
    assert!(
        warning.contains("verdict: warning [list.id-prefix]"),
        "{warning}"
    );
    let known = out("must-fault");
    assert!(
        known.contains(&format!(
            "verdict: known [sandbox.run.ready] finding {ISSUE}"
        )),
        "{known}"
    );
    let observed = out("observed-contradicted");
    assert!(
        observed.contains("observed [container.stop.created-stays-created]"),
        "{observed}"
    );

    // `report merge` reads the same outcomes back.
    let merged = merge::read_all(&[dir.path().to_owned()]);
    assert!(merged.unread.is_empty(), "{:?}", merged.unread);
    assert_eq!(merged.nodes.len(), 1);
    let node = &merged.nodes[0];
    let read: BTreeMap<&str, Verdict> = merged
        .cases
        .iter()
        .zip(&node.cells)
        .map(|((_, name), cell)| (name.as_str(), cell.as_ref().unwrap().outcome))
        .collect();
    assert_eq!(
        read,
        BTreeMap::from([
            ("observed-contradicted", Verdict::Passed),
            ("must-contradicted", Verdict::Failed),
            ("should-warns", Verdict::Warning),
            ("needs-process", Verdict::Skipped),
            ("setup-errors", Verdict::Error),
            ("must-fault", Verdict::Known),
        ])
    );
    assert_eq!(node.failing(), 2);
}

// A node-wide listing that fails under other cases' removals is asked again: once is noted,
// past the retries it is the answer; another code is the answer at once.
const LISTING: &str = "
  - name: listing-NAME
    clause: image.list.answers
    needs: [mock_control]
    steps:
      - pull_image: harness-one-id
      - mock_inject_error: {method: ListImages, code: CODE, message: image not known, count: COUNT}
      - list_images: {images: [harness-one-id], expect: {present: [harness-one-id]}}
";

fn listing(name: &str, code: &str, count: u32) -> String {
    LISTING
        .replace("NAME", name)
        .replace("CODE", code)
        .replace("COUNT", &count.to_string())
}

#[tokio::test]
async fn a_node_wide_listing_that_fails_under_removals_is_asked_again_and_noted() {
    let cases = [
        listing("once", "Unknown", 1),
        listing("vanished", "NotFound", 3),
        listing("always", "Unknown", 4),
        listing("internal", "Internal", 1),
    ];
    let cases: Vec<&str> = cases.iter().map(String::as_str).collect();
    let report = run(&cases, false, None).await;
    assert_eq!(
        verdicts(&report),
        [
            ("listing-once", "passed", None),
            ("listing-vanished", "passed", None),
            ("listing-always", "failed", Some("image.list.answers")),
            ("listing-internal", "failed", Some("image.list.answers")),
        ]
    );
    let once = case(&report, "listing-once");
    assert_eq!(notes(once), [("image.list.answers", Level::Observed)]);
    let message = &once.notes[0].message;
    assert!(
        message.contains("step 3 `list_images`") && message.contains("asked again"),
        "{message}"
    );
    assert_eq!(notes(case(&report, "listing-vanished")).len(), 3);
    assert_eq!(notes(case(&report, "listing-always")).len(), 3);
    assert!(notes(case(&report, "listing-internal")).is_empty());
    let failure = reason(case(&report, "listing-always"));
    assert!(failure.contains("image not known"), "{failure}");
}

// An image pulled by digest only has no tag for ImageStatus to find it by, so a step that
// needs its digest or id lists the node's images: that listing is asked again too.
const DIGEST_LOOKUP: &str = "
  - name: by-digest-NAME
    clause: image.status.references
    needs: [mock_control]
    steps:
      - remove_image: {image: harness-digest, setup: true}
      - pull_image: {image: harness-digest, by: digest}
      - mock_inject_error: {method: ListImages, code: Unknown, message: image not known, count: COUNT}
      - image_status: {image: harness-digest, refs: [digest], expect: {repo_digests: [harness-digest]}}
";

#[tokio::test]
async fn the_listing_that_finds_an_image_pulled_by_digest_is_asked_again() {
    let cases = [
        DIGEST_LOOKUP.replace("NAME", "once").replace("COUNT", "1"),
        DIGEST_LOOKUP
            .replace("NAME", "always")
            .replace("COUNT", "4"),
    ];
    let cases: Vec<&str> = cases.iter().map(String::as_str).collect();
    let report = run(&cases, false, None).await;
    assert_eq!(
        verdicts(&report),
        [
            ("by-digest-once", "passed", None),
            (
                "by-digest-always",
                "failed",
                Some("image.status.references")
            ),
        ]
    );
    let once = case(&report, "by-digest-once");
    assert_eq!(notes(once), [("image.status.references", Level::Observed)]);
    assert!(
        once.notes[0].message.contains("ListImages")
            && once.notes[0].message.contains("asked again"),
        "{}",
        once.notes[0].message
    );
    let failure = reason(case(&report, "by-digest-always"));
    assert!(failure.contains("image not known"), "{failure}");
}
