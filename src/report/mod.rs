//! Reports of a run: the console lines (one per case, a summary CI can grep), JUnit XML for CI
//! dashboards and a JSON results file, both written to `--report-dir`, the same JSON as one
//! line for a pod's log, and the merge of many nodes' reports into one ([`merge`]).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestRerun, TestSuite};

use self::model::{AttemptFailure, CaseOutcome, CaseReport, RunReport, SnapshotStatus, Verdict};

pub mod attempts;
pub mod bench;
pub mod coverage;
pub mod diff;
pub mod history;
pub mod lane;
pub mod latency;
pub mod merge;
pub mod model;
pub mod node;

/// A report file that could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The directory or a file in it could not be written.
    #[error("cannot write report {}", path.display())]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The JSON could not be rendered.
    #[error("cannot render the JSON results")]
    Json(#[source] serde_json::Error),
    /// The JUnit XML could not be rendered.
    #[error("cannot render the JUnit report")]
    Junit(#[source] quick_junit::SerializeError),
}

/// A duration as people read it: `850 µs`, `1.2 ms`, `3.40 s`.
pub fn human(duration: Duration) -> String {
    let micros = duration.as_micros();
    if micros < 1_000 {
        format!("{micros} µs")
    } else if micros < 1_000_000 {
        format!("{:.1} ms", duration.as_secs_f64() * 1e3)
    } else {
        format!("{:.2} s", duration.as_secs_f64())
    }
}

/// `PASS suite/case (1.2 ms)`, `FAIL suite/case (1.2 ms) reason`, `SKIP suite/case (0 µs) reason`;
/// a case run more than once adds an indented line per failed attempt (`  attempt 5 failed:
/// reason`).
pub fn case_line(case: &CaseReport) -> String {
    let (word, reason) = match &case.outcome {
        CaseOutcome::Passed => ("PASS", None),
        CaseOutcome::Failed(reason) => ("FAIL", Some(reason.clone())),
        CaseOutcome::Warning(reason) => ("WARN", Some(reason.clone())),
        CaseOutcome::Skipped(skip) => ("SKIP", Some(skip.reason.clone())),
        CaseOutcome::Error(reason) => ("ERROR", Some(reason.clone())),
        CaseOutcome::Known { reason, finding } => {
            ("KNOWN", Some(format!("[finding: {finding}] {reason}")))
        }
        CaseOutcome::Flaky(reason) => ("FLAKY", Some(reason.clone())),
        CaseOutcome::Interrupted(reason) => ("INTERRUPTED", Some(reason.clone())),
    };
    let mut line = format!("{word} {} ({})", case.full_name(), human(case.duration));
    if let Some(clause) = case.clause.as_deref().filter(|_| reason.is_some()) {
        line.push_str(&format!(" [{clause}]"));
    }
    if let Some(reason) = reason {
        line.push(' ');
        line.push_str(&reason);
    }
    if let Some(finding) = &case.finding_fixed {
        line.push_str(&format!(
            " (listed as a known finding, {finding}, but passed: fixed?)"
        ));
    }
    for failure in &case.failures {
        line.push_str(&format!("\n  {}", attempt_line(failure)));
    }
    line
}

/// `attempt 5 failed: reason`, `attempt 2 error: reason`.
pub fn attempt_line(failure: &AttemptFailure) -> String {
    let word = if failure.verdict == Verdict::Error {
        "error"
    } else {
        "failed"
    };
    format!("attempt {} {word}: {}", failure.attempt, failure.reason)
}

/// A case's failed attempts as JUnit reruns, the way Maven Surefire writes them and CI tools
/// read them: each failed attempt of a flaky (passing) test case, which quick-junit writes as
/// `flakyFailure` or `flakyError`; for a test case that failed in all its attempts, those
/// after the first (its own `failure` or `error` stands for the first), written as
/// `rerunFailure` or `rerunError`. The message is the attempt's number and its reason's first
/// line; the whole reason goes in `stackTrace`, where Surefire puts the failure's detail.
pub fn junit_reruns(verdict: Verdict, failures: &[AttemptFailure]) -> Vec<TestRerun> {
    let reruns = if verdict.fails() {
        failures.get(1..).unwrap_or_default()
    } else {
        failures
    };
    reruns
        .iter()
        .map(|failure| {
            let (kind, ty) = if failure.verdict == Verdict::Error {
                (NonSuccessKind::Error, "CaseError")
            } else {
                (NonSuccessKind::Failure, "CaseFailed")
            };
            let mut rerun = TestRerun::new(kind);
            rerun
                .set_type(ty)
                .set_message(format!(
                    "attempt {}: {}",
                    failure.attempt,
                    first_line(&failure.reason)
                ))
                .set_stack_trace(failure.reason.as_str());
            rerun
        })
        .collect()
}

/// `verdicts: N passed, N failed, N warning, N error, N known, N skipped`: every level, and
/// `, N flaky` when a case was (only runs that repeat cases have them), and `, N interrupted`
/// after them when a signal stopped the run.
pub fn verdict_line(report: &RunReport) -> String {
    let mut line = format!(
        "verdicts: {} passed, {} failed, {} warning, {} error, {} known, {} skipped",
        report.passed(),
        report.failed(),
        report.warnings(),
        report.errored(),
        report.known(),
        report.skipped()
    );
    let flaky = report.flaky();
    if flaky > 0 {
        line.push_str(&format!(", {flaky} flaky"));
    }
    if report.interrupted || report.interrupted_cases() > 0 {
        let _ = write!(line, ", {} interrupted", report.interrupted_cases());
    }
    line
}

/// `N passed, N failed, N skipped`: alone on its line, in exactly this form, for CI. Here
/// `failed` counts every case that fails the run (failed and error, and warning and flaky
/// under `--strict`); `passed` counts passes, warnings and flaky cases that do not fail the
/// run and known findings; `skipped` counts the cases a signal cut short too (no verdict, as
/// for a skip).
pub fn summary_line(report: &RunReport) -> String {
    let warnings = report.warnings() + report.flaky();
    let (failing_warnings, passing_warnings) = if report.strict {
        (warnings, 0)
    } else {
        (0, warnings)
    };
    format!(
        "{} passed, {} failed, {} skipped",
        report.passed() + passing_warnings + report.known(),
        report.failed() + report.errored() + failing_warnings,
        report.skipped() + report.interrupted_cases()
    )
}

/// Everything printed after the per-case lines: changed snapshots' diffs, suite file errors,
/// why the run stopped (with `clean_with`, the command that removes what an interrupted or
/// aborted run may have left on a runtime), the summary line and the wall time.
pub fn epilogue(report: &RunReport, clean_with: Option<&str>) -> String {
    let mut out = String::new();
    for case in &report.cases {
        if let Some(snapshot) = &case.snapshot {
            match &snapshot.status {
                SnapshotStatus::Changed { diff, .. } => {
                    let _ = writeln!(out, "\nsnapshot of {} changed:\n{diff}", case.full_name());
                }
                SnapshotStatus::Updated { diff } => {
                    let _ = writeln!(out, "\nsnapshot of {} updated:\n{diff}", case.full_name());
                }
                _ => {}
            }
        }
    }
    let written = snapshot_paths(report, |s| s == &SnapshotStatus::Written);
    if !written.is_empty() {
        let _ = writeln!(out, "\nwrote {} new references:", written.len());
        for path in written {
            let _ = writeln!(out, "  {}", path.display());
        }
    }
    let new = snapshot_paths(report, |s| matches!(s, SnapshotStatus::New { .. }));
    if !new.is_empty() {
        let _ = writeln!(
            out,
            "\n{} cases have no reference yet; review each .snap.new and rename it to .snap, or run with --update-snapshots:",
            new.len()
        );
        for path in new {
            let _ = writeln!(out, "  {}", path.display());
        }
    }
    for error in &report.errors {
        let _ = writeln!(out, "error: {error}");
    }
    if let Some(aborted) = &report.aborted {
        let _ = writeln!(out, "error: {aborted}");
    }
    if report.interrupted {
        let _ = writeln!(
            out,
            "interrupted: stopped starting cases and cleaned up the running ones"
        );
    }
    if let Some(command) = clean_with.filter(|_| report.interrupted || report.aborted.is_some()) {
        let _ = writeln!(
            out,
            "if anything is left on the runtime, remove it with: {command}"
        );
    }
    let fixed: Vec<&CaseReport> = report
        .cases
        .iter()
        .filter(|c| c.finding_fixed.is_some())
        .collect();
    if !fixed.is_empty() {
        let _ = writeln!(
            out,
            "\n{} cases listed as known findings passed (or only warned); the runtime may have fixed them:",
            fixed.len()
        );
        for case in fixed {
            let _ = writeln!(out, "  {}", case.full_name());
        }
    }
    // The cases that fail the run, again, next to the counts: the per-case lines of a long
    // parallel run are far above, and a CI log is often kept only from its tail.
    let failing: Vec<&CaseReport> = report
        .cases
        .iter()
        .filter(|c| {
            c.outcome.verdict().fails()
                || (report.strict && c.outcome.verdict() == Verdict::Warning)
        })
        .collect();
    if !failing.is_empty() {
        let _ = writeln!(out, "\n{} cases fail the run:", failing.len());
        for case in failing {
            let _ = writeln!(out, "  {}", case_line(case));
        }
    }
    let _ = writeln!(out, "{}", verdict_line(report));
    let _ = writeln!(out, "{}", summary_line(report));
    let _ = writeln!(
        out,
        "run {} against {} in {}",
        report.run_id,
        report.target,
        human(report.duration)
    );
    out
}

/// Writes `junit.xml` and `results.json` into `dir` (created if needed); answers their paths.
pub fn write(dir: &Path, report: &RunReport) -> Result<Vec<PathBuf>, ReportError> {
    let fail = |path: &Path| {
        let path = path.to_owned();
        move |source| ReportError::Write { path, source }
    };
    std::fs::create_dir_all(dir).map_err(fail(dir))?;
    let junit_path = dir.join("junit.xml");
    std::fs::write(&junit_path, junit(report)?).map_err(fail(&junit_path))?;
    let json_path = dir.join("results.json");
    let json = serde_json::to_string_pretty(report).map_err(ReportError::Json)?;
    std::fs::write(&json_path, json + "\n").map_err(fail(&json_path))?;
    Ok(vec![junit_path, json_path])
}

/// The whole JSON report as one compact line (no newline in it): the last line a pod prints,
/// so its log carries the report to whoever collects the logs.
pub fn line(report: &RunReport) -> Result<String, ReportError> {
    serde_json::to_string(report).map_err(ReportError::Json)
}

/// The run as JUnit XML (quick-junit, which escapes and counts): a `testsuite` per suite, a
/// `testcase` per case with `failure` or `skipped` and the suite file's `file` and `line` (an
/// extension GitLab and Jenkins read); unusable suite files and an aborted run appear as
/// `error`s of a `cri-harness` suite so CI shows them.
pub fn junit(report: &RunReport) -> Result<String, ReportError> {
    let mut suites: Vec<TestSuite> = Vec::new();
    for case in &report.cases {
        let index = match suites.iter().position(|s| s.name.as_str() == case.suite) {
            Some(index) => index,
            None => {
                suites.push(TestSuite::new(case.suite.as_str()));
                suites.len() - 1
            }
        };
        let suite = &mut suites[index];
        suite.time = Some(suite.time.unwrap_or_default() + case.duration);
        suite.add_test_case(test_case(case));
    }
    let problems: Vec<&String> = report.errors.iter().chain(&report.aborted).collect();
    if !problems.is_empty() {
        let mut suite = TestSuite::new("cri-harness");
        suite.set_time(Duration::ZERO);
        for (index, problem) in problems.iter().enumerate() {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
            status
                .set_type("RunProblem")
                .set_message(first_line(problem))
                .set_description(problem.as_str());
            let mut case = TestCase::new(format!("problem-{}", index + 1), status);
            case.set_classname("cri-harness").set_time(Duration::ZERO);
            suite.add_test_case(case);
        }
        suites.push(suite);
    }
    if !report.runtime_handler.is_empty() {
        for suite in &mut suites {
            suite.add_property(("runtime-handler", report.runtime_handler.as_str()));
        }
    }
    let mut junit = Report::new("cri-harness");
    junit.set_time(report.duration).add_test_suites(suites);
    junit.to_string().map_err(ReportError::Junit)
}

fn test_case(case: &CaseReport) -> TestCase {
    let mut status = match &case.outcome {
        CaseOutcome::Passed => TestCaseStatus::success(),
        CaseOutcome::Failed(reason) => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            status
                .set_type("CaseFailed")
                .set_message(first_line(reason))
                .set_description(failure_text(case, reason));
            status
        }
        CaseOutcome::Error(reason) => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
            status
                .set_type("CaseError")
                .set_message(first_line(reason))
                .set_description(failure_text(case, reason));
            status
        }
        // A warning and a known finding do not fail the run: the test case passes, and what
        // broke is told in its standard output (below).
        CaseOutcome::Warning(_) | CaseOutcome::Known { .. } => TestCaseStatus::success(),
        // Nor does a flaky case: it passes with its failed attempts (below).
        CaseOutcome::Flaky(_) => TestCaseStatus::success(),
        // Skipped, not error: the case was not judged, and CI tools count an error as a red
        // test. The run's own exit status (130) says it was stopped.
        CaseOutcome::Interrupted(reason) => {
            let mut status = TestCaseStatus::skipped();
            status.set_message(format!("interrupted: {reason}"));
            status
        }
        CaseOutcome::Skipped(skip) => {
            let mut status = TestCaseStatus::skipped();
            // The schema CI tools validate against allows a skip only a message: the kind
            // leads it, so dashboards can still group skips by why.
            let why: &'static str = skip.why.into();
            status.set_message(format!("{why}: {}", skip.reason));
            status
        }
    };
    status.add_reruns(junit_reruns(case.outcome.verdict(), &case.failures));
    let mut test = TestCase::new(case.case.as_str(), status);
    test.set_classname(case.suite.as_str())
        .set_time(case.duration);
    test.extra
        .insert("file".into(), case.source.as_str().into());
    test.extra
        .insert("line".into(), case.line.to_string().into());
    // Test cases carry no properties in that schema; standard output is where a reader of
    // the case looks.
    let mut out = Vec::new();
    if let Some(environment) = &case.environment {
        out.push(format!("environment-dependent: {environment}"));
    }
    match &case.outcome {
        CaseOutcome::Warning(reason) => out.push(format!(
            "verdict: warning [{}]: {reason}",
            case.clause.as_deref().unwrap_or("-")
        )),
        CaseOutcome::Known { reason, finding } => out.push(format!(
            "verdict: known [{}] finding {finding}: {reason}",
            case.clause.as_deref().unwrap_or("-")
        )),
        CaseOutcome::Flaky(reason) => out.push(format!("verdict: {reason}")),
        CaseOutcome::Failed(_) => {
            if let Some(clause) = &case.clause {
                out.push(format!("clause: {clause}"));
            }
        }
        _ => {}
    }
    for note in &case.notes {
        out.push(format!(
            "{} [{}]: {}",
            note.level, note.clause, note.message
        ));
    }
    if let Some(finding) = &case.finding_fixed {
        out.push(format!(
            "listed as known finding {finding} but passed: the runtime may have fixed it"
        ));
    }
    if !out.is_empty() {
        test.set_system_out(out.join("\n"));
    }
    test
}

/// The reference paths of the cases whose snapshot status `pick` selects, in case order.
fn snapshot_paths(report: &RunReport, pick: fn(&SnapshotStatus) -> bool) -> Vec<&Path> {
    report
        .cases
        .iter()
        .filter_map(|c| c.snapshot.as_ref())
        .filter(|s| pick(&s.status))
        .map(|s| s.path.as_path())
        .collect()
}

/// The failure's body: the reason and, for a changed snapshot, its diff.
fn failure_text(case: &CaseReport, reason: &str) -> String {
    match case.snapshot.as_ref().map(|s| &s.status) {
        Some(SnapshotStatus::Changed { diff, .. }) => {
            format!("{reason}\n\n{diff}")
        }
        _ => reason.to_owned(),
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

/// `read` applied to every path on up to 8 threads, answers in the paths' order: at a thousand
/// reports (a fleet's nodes, a history's nights) the reading is most of a command's work. A
/// worker only panics on a bug; its paths then get `lost`'s error rather than vanish.
pub(crate) fn read_in_parallel<T: Send, E: Send>(
    paths: &[PathBuf],
    read: impl Fn(&Path) -> Result<T, E> + Sync,
    lost: impl Fn(&Path) -> E,
) -> Vec<Result<T, E>> {
    let threads = std::thread::available_parallelism()
        .map(usize::from)
        .unwrap_or(1)
        .clamp(1, 8);
    let chunk = paths.len().div_ceil(threads).max(1);
    let read = &read;
    std::thread::scope(|s| {
        let workers: Vec<_> = paths
            .chunks(chunk)
            .map(|part| s.spawn(move || part.iter().map(|p| read(p)).collect::<Vec<_>>()))
            .collect();
        workers
            .into_iter()
            .zip(paths.chunks(chunk))
            .flat_map(|(worker, part)| {
                worker
                    .join()
                    .unwrap_or_else(|_| part.iter().map(|p| Err(lost(p))).collect())
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;
    use crate::report::model::{SkipWhy, SnapshotReport, SnapshotStatus};

    /// A case run `attempts` times whose attempts in `failed` failed (the second of them
    /// erred), with `outcome`.
    fn attempted(name: &str, outcome: CaseOutcome, attempts: u32, failed: &[u32]) -> CaseReport {
        let mut case = case("s", name, outcome);
        case.attempts = attempts;
        case.failures = failed
            .iter()
            .enumerate()
            .map(|(i, &attempt)| AttemptFailure {
                attempt,
                verdict: if i == 1 {
                    Verdict::Error
                } else {
                    Verdict::Failed
                },
                reason: format!("broke on attempt {attempt}\ndetail"),
                clause: None,
                stopped: None,
            })
            .collect();
        case
    }

    fn case(suite: &str, name: &str, outcome: CaseOutcome) -> CaseReport {
        CaseReport {
            suite: suite.into(),
            case: name.into(),
            source: format!("suites/{suite}.yaml"),
            line: 7,
            number: 1,
            outcome,
            duration: Duration::from_micros(1_200),
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
        }
    }

    fn report(cases: Vec<CaseReport>) -> RunReport {
        RunReport {
            run_id: "r1".into(),
            target: "mock".into(),
            target_kind: "mock".into(),
            runtime_handler: String::new(),
            mock_profile: String::new(),
            kubelet: Some("seed".into()),
            cases,
            errors: Vec::new(),
            aborted: None,
            interrupted: false,
            duration: Duration::from_millis(15),
            started_at: None,
            node: node::Node {
                name: "node-a".into(),
                kernel: "6.1.0".into(),
                os_image: Some("Debian GNU/Linux 12 (bookworm)".into()),
                runtime_name: Some("containerd".into()),
                runtime_version: Some("v1.6.38".into()),
            },
            strict: false,
            known_findings: None,
            feature_gates: Default::default(),
        }
    }

    #[rstest]
    #[case::passed(CaseOutcome::Passed, "PASS s/c (1.2 ms)")]
    #[case::failed(CaseOutcome::Failed("ip: expected none, got <ip:a>".into()), "FAIL s/c (1.2 ms) ip: expected none, got <ip:a>")]
    #[case::skipped(
        CaseOutcome::skipped(SkipWhy::MockOnly, "needs mock_control"),
        "SKIP s/c (1.2 ms) needs mock_control"
    )]
    #[case::interrupted(
        CaseOutcome::Interrupted("s.yaml:9: case `c`, step 3 `start_container`: interrupted".into()),
        "INTERRUPTED s/c (1.2 ms) s.yaml:9: case `c`, step 3 `start_container`: interrupted"
    )]
    fn each_case_is_one_line(#[case] outcome: CaseOutcome, #[case] expected: &str) {
        assert_eq!(case_line(&case("s", "c", outcome)), expected);
    }

    #[rstest]
    #[case::mock_only(SkipWhy::MockOnly, "mock_only")]
    #[case::needs_process(SkipWhy::NeedsProcess, "needs_process")]
    #[case::runtime_lacks(SkipWhy::RuntimeLacks, "runtime_lacks")]
    #[case::environment(SkipWhy::Environment, "environment")]
    #[case::host_lacks(SkipWhy::HostLacks, "host_lacks")]
    #[case::not_run(SkipWhy::NotRun, "not_run")]
    fn each_skip_kind_is_named_in_json_and_junit(#[case] why: SkipWhy, #[case] name: &str) {
        let report = report(vec![case(
            "s",
            "c",
            CaseOutcome::skipped(why, "the reason"),
        )]);
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["cases"][0]["outcome"], "skipped");
        assert_eq!(json["cases"][0]["skip"], name);
        assert_eq!(json["cases"][0]["reason"], "the reason");
        let xml = junit(&report).unwrap();
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let skipped = doc
            .descendants()
            .find(|n| n.has_tag_name("skipped"))
            .unwrap();
        assert_eq!(
            skipped.attribute("message"),
            Some(format!("{name}: the reason").as_str())
        );
    }

    #[rstest]
    #[case::micros(Duration::from_micros(850), "850 µs")]
    #[case::millis(Duration::from_micros(1_250), "1.2 ms")]
    #[case::seconds(Duration::from_millis(3_400), "3.40 s")]
    fn durations_read_naturally(#[case] duration: Duration, #[case] expected: &str) {
        assert_eq!(human(duration), expected);
    }

    #[test]
    fn the_summary_counts_each_outcome() {
        let report = report(vec![
            case("s", "a", CaseOutcome::Passed),
            case("s", "b", CaseOutcome::Passed),
            case("s", "c", CaseOutcome::Failed("x".into())),
            case("t", "d", CaseOutcome::skipped(SkipWhy::NotRun, "y")),
        ]);
        assert_eq!(summary_line(&report), "2 passed, 1 failed, 1 skipped");
        assert!(epilogue(&report, None)
            .lines()
            .any(|l| l == "2 passed, 1 failed, 1 skipped"));
    }

    #[test]
    fn the_cases_that_fail_the_run_are_listed_again_above_the_counts() {
        let failing = report(vec![
            case("s", "a", CaseOutcome::Failed("ip: expected none".into())),
            case("s", "b", CaseOutcome::Passed),
            case("s", "c", CaseOutcome::Error("setup failed".into())),
            case("s", "d", CaseOutcome::skipped(SkipWhy::NotRun, "y")),
        ]);
        let text = epilogue(&failing, None);
        let lines: Vec<&str> = text.lines().collect();
        let at = lines
            .iter()
            .position(|l| *l == "2 cases fail the run:")
            .expect("the list's heading");
        assert!(
            lines[at + 1].starts_with("  FAIL s/a ")
                && lines[at + 1].ends_with("ip: expected none")
        );
        assert!(
            lines[at + 2].starts_with("  ERROR s/c ") && lines[at + 2].ends_with("setup failed")
        );
        assert!(lines[at + 3].starts_with("verdicts: "));
        let passing = report(vec![case("s", "a", CaseOutcome::Passed)]);
        assert!(!epilogue(&passing, None).contains("fail the run"));
    }

    #[test]
    fn a_case_cut_short_is_interrupted_in_json_a_skip_in_junit_and_counted_apart() {
        let mut report = report(vec![
            case("s", "a", CaseOutcome::Passed),
            case(
                "s",
                "b",
                CaseOutcome::Interrupted("step 2: interrupted".into()),
            ),
        ]);
        report.interrupted = true;
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["cases"][1]["outcome"], "interrupted");
        assert_eq!(json["cases"][1]["reason"], "step 2: interrupted");
        let xml = junit(&report).unwrap();
        check_against_the_schema(&xml);
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let skipped: Vec<_> = doc
            .descendants()
            .filter(|n| n.has_tag_name("skipped"))
            .collect();
        assert_eq!(skipped.len(), 1);
        assert_eq!(
            skipped[0].attribute("message"),
            Some("interrupted: step 2: interrupted")
        );
        assert!(!doc
            .descendants()
            .any(|n| n.has_tag_name("failure") || n.has_tag_name("error")));
        assert_eq!(summary_line(&report), "1 passed, 0 failed, 1 skipped");
        assert_eq!(
            verdict_line(&report),
            "verdicts: 1 passed, 0 failed, 0 warning, 0 error, 0 known, 0 skipped, 1 interrupted"
        );
    }

    #[test]
    fn an_interrupted_run_says_how_to_clean_up_and_a_finished_one_does_not() {
        let command = "cri-harness clean -r unix:///run/x.sock --run-id r1";
        let mut report = report(vec![case("s", "a", CaseOutcome::Passed)]);
        assert!(!epilogue(&report, Some(command)).contains(command));
        report.interrupted = true;
        let text = epilogue(&report, Some(command));
        assert!(
            text.lines()
                .any(|l| l.starts_with("if anything is left") && l.ends_with(command)),
            "{text}"
        );
    }

    #[test]
    fn junit_groups_cases_by_suite_with_failures_skips_and_problems() {
        let mut changed = case(
            "s",
            "b<&>",
            CaseOutcome::Failed("snapshot changed\nsee diff".into()),
        );
        changed.snapshot = Some(SnapshotReport {
            path: "snapshots/s__b.snap".into(),
            status: SnapshotStatus::Changed {
                diff: "-old\n+new\n".into(),
                new_path: None,
            },
        });
        let mut report = report(vec![
            case("s", "a", CaseOutcome::Passed),
            changed,
            case(
                "t",
                "c",
                CaseOutcome::skipped(SkipWhy::MockOnly, "needs \"mock\""),
            ),
        ]);
        report
            .errors
            .push("suites/bad.yaml:3:5: unknown variant `x`".into());
        let xml = junit(&report).unwrap();
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "testsuites");
        fn counts(node: roxmltree::Node<'_, '_>) -> [String; 4] {
            ["tests", "failures", "errors", "skipped"]
                .map(|a| node.attribute(a).unwrap_or("-").to_owned())
        }
        assert_eq!(counts(root), ["4", "1", "1", "1"]);
        assert_eq!(root.attribute("time"), Some("0.015"));
        let suites: Vec<_> = root.children().filter(|n| n.is_element()).collect();
        let names: Vec<_> = suites
            .iter()
            .map(|s| s.attribute("name").unwrap())
            .collect();
        assert_eq!(names, ["s", "t", "cri-harness"]);
        assert_eq!(counts(suites[0]), ["2", "1", "0", "0"]);
        assert_eq!(suites[0].attribute("time"), Some("0.002"));
        let cases: Vec<_> = suites[0].children().filter(|n| n.is_element()).collect();
        assert_eq!(cases[1].attribute("name"), Some("b<&>"));
        assert_eq!(cases[1].attribute("classname"), Some("s"));
        assert_eq!(cases[1].attribute("file"), Some("suites/s.yaml"));
        assert_eq!(cases[1].attribute("line"), Some("7"));
        assert_eq!(cases[1].attribute("time"), Some("0.001"));
        let failure = cases[1].first_element_child().unwrap();
        assert_eq!(failure.tag_name().name(), "failure");
        assert_eq!(failure.attribute("message"), Some("snapshot changed"));
        assert_eq!(
            failure.text(),
            Some("snapshot changed\nsee diff\n\n-old\n+new\n")
        );
        let skipped = doc
            .descendants()
            .find(|n| n.has_tag_name("skipped"))
            .unwrap();
        assert_eq!(
            skipped.attribute("message"),
            Some("mock_only: needs \"mock\"")
        );
        let error = doc.descendants().find(|n| n.has_tag_name("error")).unwrap();
        assert_eq!(
            error.attribute("message"),
            Some("suites/bad.yaml:3:5: unknown variant `x`")
        );
        assert_eq!(counts(suites[2]), ["1", "0", "1", "0"]);
    }

    /// The elements and attributes of the JUnit schema CI tools validate against (the Ant
    /// junit-4.xsd that Jenkins ships), plus `file` and `line` on a testcase, which GitLab and
    /// Jenkins read. `(element, required attributes, optional attributes, children)`.
    type SchemaElement = (
        &'static str,
        &'static [&'static str],
        &'static [&'static str],
        &'static [&'static str],
    );
    const JUNIT_SCHEMA: &[SchemaElement] = &[
        (
            "testsuites",
            &[],
            &[
                "name", "time", "tests", "failures", "disabled", "errors", "skipped",
            ],
            &["testsuite"],
        ),
        (
            "testsuite",
            &["name", "tests"],
            &[
                "failures",
                "errors",
                "time",
                "disabled",
                "skipped",
                "timestamp",
                "hostname",
                "id",
                "package",
            ],
            &["properties", "testcase", "system-out", "system-err"],
        ),
        (
            "testcase",
            &["name"],
            &["assertions", "time", "classname", "status", "file", "line"],
            &[
                "skipped",
                "error",
                "failure",
                "system-out",
                "system-err",
                "flakyFailure",
                "flakyError",
                "rerunFailure",
                "rerunError",
            ],
        ),
        ("failure", &["type", "message"], &[], &[]),
        ("error", &["type", "message"], &[], &[]),
        ("skipped", &[], &["message"], &[]),
        ("system-out", &[], &[], &[]),
        // Maven Surefire's reruns (its surefire-test-report XSD), which Jenkins, GitLab and
        // other readers of flaky tests take.
        RERUN,
        ("flakyError", RERUN.1, RERUN.2, RERUN.3),
        ("rerunFailure", RERUN.1, RERUN.2, RERUN.3),
        ("rerunError", RERUN.1, RERUN.2, RERUN.3),
        ("stackTrace", &[], &[], &[]),
    ];
    const RERUN: SchemaElement = (
        "flakyFailure",
        &["type"],
        &["message"],
        &["stackTrace", "system-out", "system-err"],
    );

    fn check_against_the_schema(xml: &str) {
        let doc = roxmltree::Document::parse(xml).unwrap();
        assert_eq!(doc.root_element().tag_name().name(), "testsuites");
        for node in doc.descendants().filter(roxmltree::Node::is_element) {
            let name = node.tag_name().name();
            let Some((_, required, optional, children)) =
                JUNIT_SCHEMA.iter().find(|(element, ..)| *element == name)
            else {
                panic!("element <{name}> is not in the JUnit schema");
            };
            for attribute in *required {
                assert!(node.has_attribute(*attribute), "<{name}> lacks {attribute}");
            }
            for attribute in node.attributes() {
                let attribute = attribute.name();
                assert!(
                    required.contains(&attribute) || optional.contains(&attribute),
                    "<{name}> has {attribute}, which the schema does not allow"
                );
            }
            for child in node.children().filter(roxmltree::Node::is_element) {
                let child = child.tag_name().name();
                assert!(children.contains(&child), "<{child}> inside <{name}>");
            }
        }
    }

    #[test]
    fn junit_follows_the_junit_schema_for_every_outcome() {
        let mut report = report(vec![
            case("s", "a", CaseOutcome::Passed),
            case("s", "b", CaseOutcome::Failed("wrong ip".into())),
            case(
                "t",
                "c",
                CaseOutcome::skipped(SkipWhy::MockOnly, "needs mock_control"),
            ),
        ]);
        report.errors.push("suites/bad.yaml:3:5: bad".into());
        report.aborted = Some("the runtime stopped answering".into());
        check_against_the_schema(&junit(&report).unwrap());
        check_against_the_schema(&junit(&self::report(Vec::new())).unwrap());
    }

    #[test]
    fn a_flaky_case_passes_in_junit_with_a_flaky_failure_per_failed_attempt() {
        let report = report(vec![attempted(
            "f",
            CaseOutcome::Flaky("flaky (2 of 5 failed)".into()),
            5,
            &[1, 4],
        )]);
        let xml = junit(&report).unwrap();
        check_against_the_schema(&xml);
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let root = doc.root_element();
        assert_eq!(root.attribute("failures"), Some("0"));
        assert_eq!(root.attribute("errors"), Some("0"));
        let case = doc
            .descendants()
            .find(|n| n.has_tag_name("testcase"))
            .unwrap();
        type Child<'a> = (&'a str, Option<&'a str>, Option<&'a str>, Option<&'a str>);
        let children: Vec<Child<'_>> = case
            .children()
            .filter(roxmltree::Node::is_element)
            .map(|n| {
                let trace = n
                    .children()
                    .find(|c| c.has_tag_name("stackTrace"))
                    .and_then(|c| c.text());
                (
                    n.tag_name().name(),
                    n.attribute("type"),
                    n.attribute("message"),
                    trace.or(n.text()),
                )
            })
            .collect();
        assert_eq!(
            children,
            [
                (
                    "flakyFailure",
                    Some("CaseFailed"),
                    Some("attempt 1: broke on attempt 1"),
                    Some("broke on attempt 1\ndetail")
                ),
                (
                    "flakyError",
                    Some("CaseError"),
                    Some("attempt 4: broke on attempt 4"),
                    Some("broke on attempt 4\ndetail")
                ),
                (
                    "system-out",
                    None,
                    None,
                    Some("verdict: flaky (2 of 5 failed)")
                ),
            ]
        );
    }

    #[test]
    fn a_case_failing_every_attempt_has_its_failure_and_a_rerun_failure_per_rerun() {
        let report = report(vec![attempted(
            "f",
            CaseOutcome::Failed("failed in all 3 attempts: broke on attempt 1".into()),
            3,
            &[1, 2, 3],
        )]);
        let xml = junit(&report).unwrap();
        check_against_the_schema(&xml);
        let doc = roxmltree::Document::parse(&xml).unwrap();
        assert_eq!(doc.root_element().attribute("failures"), Some("1"));
        let case = doc
            .descendants()
            .find(|n| n.has_tag_name("testcase"))
            .unwrap();
        let children: Vec<(&str, Option<&str>)> = case
            .children()
            .filter(roxmltree::Node::is_element)
            .map(|n| (n.tag_name().name(), n.attribute("message")))
            .collect();
        assert_eq!(
            children,
            [
                (
                    "failure",
                    Some("failed in all 3 attempts: broke on attempt 1")
                ),
                ("rerunError", Some("attempt 2: broke on attempt 2")),
                ("rerunFailure", Some("attempt 3: broke on attempt 3")),
            ]
        );
    }

    #[test]
    fn flaky_cases_count_as_passed_unless_strict_and_list_their_attempts() {
        let flaky = attempted(
            "f",
            CaseOutcome::Flaky("flaky (1 of 2 failed)".into()),
            2,
            &[1],
        );
        let mut report = report(vec![case("s", "a", CaseOutcome::Passed), flaky]);
        assert_eq!(
            case_line(&report.cases[1]),
            "FLAKY s/f (1.2 ms) flaky (1 of 2 failed)\n  attempt 1 failed: broke on attempt 1\ndetail"
        );
        let text = epilogue(&report, None);
        assert!(
            text.lines().any(|l| l
                == "verdicts: 1 passed, 0 failed, 0 warning, 0 error, 0 known, 0 skipped, 1 flaky"),
            "{text}"
        );
        assert_eq!(summary_line(&report), "2 passed, 0 failed, 0 skipped");
        assert!(report.success());
        report.strict = true;
        assert_eq!(summary_line(&report), "1 passed, 1 failed, 0 skipped");
        assert!(!report.success());
    }

    #[test]
    fn hostile_text_still_gives_well_formed_junit() {
        let hostile = "a & <b> \"q\" 'x' ]]> \u{1b}[31mred\u{0} \u{202e}rtl µs ✓";
        let report = report(vec![
            case("s", hostile, CaseOutcome::Failed(hostile.into())),
            case(hostile, "c", CaseOutcome::skipped(SkipWhy::NotRun, hostile)),
        ]);
        let xml = junit(&report).unwrap();
        check_against_the_schema(&xml);
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let name = doc
            .descendants()
            .find(|n| n.has_tag_name("testcase"))
            .and_then(|n| n.attribute("name"))
            .unwrap();
        // Markup survives as text; escape codes and NUL, which XML cannot carry, are dropped.
        assert!(name.starts_with("a & <b> \"q\" 'x' ]]> red"), "{name:?}");
        assert!(name.ends_with("\u{202e}rtl µs ✓"), "{name:?}");
    }

    #[test]
    fn the_report_files_are_written_and_the_json_names_each_outcome() {
        let dir = tempfile::tempdir().unwrap();
        let report = report(vec![
            case("s", "a", CaseOutcome::Passed),
            case("s", "b", CaseOutcome::Failed("boom".into())),
        ]);
        let paths = write(&dir.path().join("out"), &report).unwrap();
        assert_eq!(paths.len(), 2);
        let json: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("out/results.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(json["run_id"], "r1");
        assert_eq!(json["cases"][0]["outcome"], "passed");
        assert_eq!(json["cases"][1]["outcome"], "failed");
        assert_eq!(json["cases"][1]["reason"], "boom");
        assert_eq!(json["cases"][1]["duration"], 0.0012);
        assert_eq!(json["node"]["name"], "node-a");
        assert_eq!(json["node"]["kernel"], "6.1.0");
        assert_eq!(json["node"]["os_image"], "Debian GNU/Linux 12 (bookworm)");
        assert_eq!(json["node"]["runtime_name"], "containerd");
        assert_eq!(json["node"]["runtime_version"], "v1.6.38");
    }

    #[test]
    fn the_report_line_is_one_line_holding_the_same_json_as_the_file() {
        let report = report(vec![case(
            "s",
            "b",
            CaseOutcome::Failed("two\nlines\n".into()),
        )]);
        let line = line(&report).unwrap();
        assert!(!line.contains('\n'), "{line}");
        let from_line: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(from_line, serde_json::to_value(&report).unwrap());
        assert_eq!(from_line["cases"][0]["reason"], "two\nlines\n");
    }
}
