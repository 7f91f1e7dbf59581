//! Reports of a run: the console lines (one per case, a summary CI can grep), JUnit XML for CI
//! dashboards and a JSON results file, both written to `--report-dir`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::runner::{CaseOutcome, CaseReport, RunReport};

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

/// `PASS suite/case (1.2 ms)`, `FAIL suite/case (1.2 ms) reason`, `SKIP suite/case (0 µs) reason`.
pub fn case_line(case: &CaseReport) -> String {
    let (word, reason) = match &case.outcome {
        CaseOutcome::Passed => ("PASS", None),
        CaseOutcome::Failed(reason) => ("FAIL", Some(reason)),
        CaseOutcome::Skipped(reason) => ("SKIP", Some(reason)),
    };
    let mut line = format!("{word} {} ({})", case.full_name(), human(case.duration));
    if let Some(reason) = reason {
        line.push(' ');
        line.push_str(reason);
    }
    line
}

/// `N passed, N failed, N skipped`: alone on its line, in exactly this form, for CI.
pub fn summary_line(report: &RunReport) -> String {
    format!(
        "{} passed, {} failed, {} skipped",
        report.passed(),
        report.failed(),
        report.skipped()
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
                crate::runner::snapshot::SnapshotStatus::Changed { diff, .. } => {
                    let _ = writeln!(out, "\nsnapshot of {} changed:\n{diff}", case.full_name());
                }
                crate::runner::snapshot::SnapshotStatus::Updated { diff } => {
                    let _ = writeln!(out, "\nsnapshot of {} updated:\n{diff}", case.full_name());
                }
                _ => {}
            }
        }
    }
    let written: Vec<&CaseReport> = report
        .cases
        .iter()
        .filter(|c| {
            c.snapshot
                .as_ref()
                .is_some_and(|s| s.status == crate::runner::snapshot::SnapshotStatus::Written)
        })
        .collect();
    if !written.is_empty() {
        let _ = writeln!(out, "\nwrote {} new snapshots:", written.len());
        for case in written {
            if let Some(snapshot) = &case.snapshot {
                let _ = writeln!(out, "  {}", snapshot.path.display());
            }
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
    std::fs::write(&junit_path, junit(report)).map_err(fail(&junit_path))?;
    let json_path = dir.join("results.json");
    let json = serde_json::to_string_pretty(report).map_err(ReportError::Json)?;
    std::fs::write(&json_path, json + "\n").map_err(fail(&json_path))?;
    Ok(vec![junit_path, json_path])
}

/// The run as JUnit XML: a `testsuite` per suite, a `testcase` per case with `failure` or
/// `skipped`; unusable suite files and an aborted run appear as `error`s of a `cri-harness`
/// suite so CI shows them.
pub fn junit(report: &RunReport) -> String {
    let mut suites: Vec<(&str, Vec<&CaseReport>)> = Vec::new();
    for case in &report.cases {
        match suites.iter_mut().find(|(name, _)| *name == case.suite) {
            Some((_, cases)) => cases.push(case),
            None => suites.push((&case.suite, vec![case])),
        }
    }
    let problems: Vec<&String> = report.errors.iter().chain(&report.aborted).collect();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"cri-harness\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3}\">",
        report.cases.len() + problems.len(),
        report.failed(),
        problems.len(),
        report.skipped(),
        report.duration.as_secs_f64()
    );
    for (name, cases) in &suites {
        let failures = cases
            .iter()
            .filter(|c| matches!(c.outcome, CaseOutcome::Failed(_)))
            .count();
        let skipped = cases
            .iter()
            .filter(|c| matches!(c.outcome, CaseOutcome::Skipped(_)))
            .count();
        let time: f64 = cases.iter().map(|c| c.duration.as_secs_f64()).sum();
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{time:.3}\">",
            escape(name),
            cases.len()
        );
        for case in cases {
            let _ = write!(
                out,
                "    <testcase name=\"{}\" classname=\"{}\" file=\"{}\" line=\"{}\" time=\"{:.3}\"",
                escape(&case.case),
                escape(&case.suite),
                escape(&case.source),
                case.line,
                case.duration.as_secs_f64()
            );
            match &case.outcome {
                CaseOutcome::Passed => out.push_str("/>\n"),
                CaseOutcome::Failed(reason) => {
                    let _ = writeln!(
                        out,
                        ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>",
                        escape(first_line(reason)),
                        escape(&failure_text(case, reason))
                    );
                }
                CaseOutcome::Skipped(reason) => {
                    let _ = writeln!(
                        out,
                        ">\n      <skipped message=\"{}\"/>\n    </testcase>",
                        escape(reason)
                    );
                }
            }
        }
        out.push_str("  </testsuite>\n");
    }
    if !problems.is_empty() {
        let _ = writeln!(
            out,
            "  <testsuite name=\"cri-harness\" tests=\"{0}\" failures=\"0\" errors=\"{0}\" skipped=\"0\" time=\"0.000\">",
            problems.len()
        );
        for (index, problem) in problems.iter().enumerate() {
            let _ = writeln!(
                out,
                "    <testcase name=\"problem-{}\" classname=\"cri-harness\" time=\"0.000\">\n      <error message=\"{}\">{}</error>\n    </testcase>",
                index + 1,
                escape(first_line(problem)),
                escape(problem)
            );
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

/// The failure's body: the reason and, for a changed snapshot, its diff.
fn failure_text(case: &CaseReport, reason: &str) -> String {
    match case.snapshot.as_ref().map(|s| &s.status) {
        Some(crate::runner::snapshot::SnapshotStatus::Changed { diff, .. }) => {
            format!("{reason}\n\n{diff}")
        }
        _ => reason.to_owned(),
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

/// Escapes text for XML attributes and content; characters XML 1.0 cannot carry at all (most
/// control characters, e.g. a terminal's escape codes) become U+FFFD.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;
    use crate::runner::snapshot::SnapshotStatus;
    use crate::runner::SnapshotReport;

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
            unreachable: false,
        }
    }

    fn report(cases: Vec<CaseReport>) -> RunReport {
        RunReport {
            run_id: "r1".into(),
            target: "mock".into(),
            target_kind: "mock".into(),
            cases,
            errors: Vec::new(),
            aborted: None,
            interrupted: false,
            duration: Duration::from_millis(15),
        }
    }

    #[rstest]
    #[case::ampersand_and_angles("a & <b>", "a &amp; &lt;b&gt;")]
    #[case::quotes("say \"x\" 'y'", "say &quot;x&quot; &apos;y&apos;")]
    #[case::newline_kept("a\nb", "a\nb")]
    #[case::escape_code_replaced("\u{1b}[31mred", "\u{FFFD}[31mred")]
    #[case::nul_replaced("a\0b", "a\u{FFFD}b")]
    #[case::unicode_kept("µs ✓", "µs ✓")]
    fn xml_text_is_escaped(#[case] input: &str, #[case] expected: &str) {
        assert_eq!(escape(input), expected);
    }

    #[rstest]
    #[case::passed(CaseOutcome::Passed, "PASS s/c (1.2 ms)")]
    #[case::failed(CaseOutcome::Failed("ip: expected none, got <ip:a>".into()), "FAIL s/c (1.2 ms) ip: expected none, got <ip:a>")]
    #[case::skipped(CaseOutcome::Skipped("needs mock_control".into()), "SKIP s/c (1.2 ms) needs mock_control")]
    fn each_case_is_one_line(#[case] outcome: CaseOutcome, #[case] expected: &str) {
        assert_eq!(case_line(&case("s", "c", outcome)), expected);
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
            case("t", "d", CaseOutcome::Skipped("y".into())),
        ]);
        assert_eq!(summary_line(&report), "2 passed, 1 failed, 1 skipped");
        assert!(epilogue(&report, None)
            .lines()
            .any(|l| l == "2 passed, 1 failed, 1 skipped"));
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
            path: "snapshots/mock/s__b.snap".into(),
            status: SnapshotStatus::Changed {
                diff: "-old\n+new\n".into(),
                new_path: "snapshots/mock/s__b.snap.new".into(),
            },
        });
        let mut report = report(vec![
            case("s", "a", CaseOutcome::Passed),
            changed,
            case("t", "c", CaseOutcome::Skipped("needs \"mock\"".into())),
        ]);
        report
            .errors
            .push("suites/bad.yaml:3:5: unknown variant `x`".into());
        let xml = junit(&report);
        let expected = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="cri-harness" tests="4" failures="1" errors="1" skipped="1" time="0.015">
  <testsuite name="s" tests="2" failures="1" errors="0" skipped="0" time="0.002">
    <testcase name="a" classname="s" file="suites/s.yaml" line="7" time="0.001"/>
    <testcase name="b&lt;&amp;&gt;" classname="s" file="suites/s.yaml" line="7" time="0.001">
      <failure message="snapshot changed">snapshot changed
see diff

-old
+new
</failure>
    </testcase>
  </testsuite>
  <testsuite name="t" tests="1" failures="0" errors="0" skipped="1" time="0.001">
    <testcase name="c" classname="t" file="suites/t.yaml" line="7" time="0.001">
      <skipped message="needs &quot;mock&quot;"/>
    </testcase>
  </testsuite>
  <testsuite name="cri-harness" tests="1" failures="0" errors="1" skipped="0" time="0.000">
    <testcase name="problem-1" classname="cri-harness" time="0.000">
      <error message="suites/bad.yaml:3:5: unknown variant `x`">suites/bad.yaml:3:5: unknown variant `x`</error>
    </testcase>
  </testsuite>
</testsuites>
"#;
        assert_eq!(xml, expected);
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
    }
}
