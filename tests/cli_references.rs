//! Reference results as a user meets them: the released binary, alone in a directory, checks
//! every embedded manager case against the reference compiled into it and writes nothing; a
//! reference that differs fails its case with the diff; an embedded case whose reference the
//! binary lacks fails as missing; a user suite's case with no reference yet is new, not passed.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Output;

use cri_harness::runner::{self, snapshot, CaseOutcome, Interrupt, Target};
use cri_harness::suite::{self, step::Kind};

const SUITE: &str = "version-gating";
const CASE: &str = "accepts-api-version-0-1-0";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Every path under `dir`, relative to it, sorted.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            found.push(path.strip_prefix(dir).unwrap().to_owned());
            if path.is_dir() {
                pending.push(path);
            }
        }
    }
    found.sort();
    found
}

fn results(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap()
}

/// The names (`suite/case`) of the embedded cases that make a manager call.
fn embedded_manager_cases() -> Vec<String> {
    let loaded = suite::load_embedded();
    loaded
        .suites
        .iter()
        .flat_map(|s| {
            s.cases
                .iter()
                .filter(|c| c.steps.iter().any(|step| step.kind() == Kind::Manager))
                .map(move |c| c.full_name(s))
        })
        .collect()
}

#[test]
fn the_binary_alone_in_an_empty_directory_checks_every_embedded_reference_and_writes_nothing() {
    let release = tempfile::tempdir().unwrap();
    let binary = release.path().join("cri-harness");
    std::fs::copy(support::BINARY, &binary).unwrap();
    let run = |extra: &[&Path]| -> Output {
        let mut command = std::process::Command::new(&binary);
        support::isolate(&mut command)
            .current_dir(release.path())
            .args(["run", "--mock", "--parallel", "2"]);
        if let Some(reports) = extra.first() {
            command.arg("--report-dir").arg(reports);
        }
        command.output().unwrap()
    };

    // No report flag: the directory holds the binary and nothing else afterwards.
    let output = run(&[]);
    let stdout = text(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        text(&output.stderr)
    );
    assert_eq!(
        tree(release.path()),
        [PathBuf::from("cri-harness")],
        "{stdout}"
    );

    // The report, written elsewhere, says each manager case that ran compared its reference
    // and found it unchanged.
    let reports = tempfile::tempdir().unwrap();
    let output = run(&[reports.path()]);
    assert!(output.status.success(), "{}", text(&output.stdout));
    assert_eq!(tree(release.path()), [PathBuf::from("cri-harness")]);
    let json = results(reports.path());
    let manager_cases = embedded_manager_cases();
    let mut compared = 0;
    for case in json["cases"].as_array().unwrap() {
        let (suite, case_name) = (
            case["suite"].as_str().unwrap(),
            case["case"].as_str().unwrap(),
        );
        let name = format!("{suite}/{case_name}");
        if case["outcome"] == "skipped" {
            continue;
        }
        assert_eq!(case["outcome"], "passed", "{name}: {case}");
        if manager_cases.contains(&name) {
            assert_eq!(case["snapshot"]["status"], "unchanged", "{name}: {case}");
            assert_eq!(
                case["snapshot"]["path"],
                format!("snapshots/{}", snapshot::file_name(suite, case_name)),
                "{name}"
            );
            compared += 1;
        } else {
            assert!(case["snapshot"].is_null(), "{name}: {case}");
        }
    }
    assert!(compared >= 60, "only {compared} cases compared a reference");
}

/// A suite directory holding a copy of the embedded `version-gating` suite (so it replaces
/// it, as a user's suite), and a snapshot directory.
fn user_suite() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let suites = dir.path().join("suites");
    let references = dir.path().join("references");
    std::fs::create_dir_all(&suites).unwrap();
    std::fs::create_dir_all(&references).unwrap();
    std::fs::copy(
        root().join(format!("suites/{SUITE}.yaml")),
        suites.join(format!("{SUITE}.yaml")),
    )
    .unwrap();
    (dir, suites, references)
}

fn run_user_suite(suites: &Path, references: &Path, reports: &Path) -> Output {
    support::harness()
        .args(["run", "--mock", "--focus", &format!("^{SUITE}/{CASE}$")])
        .arg("--suites")
        .arg(suites)
        .arg("--snapshot-dir")
        .arg(references)
        .arg("--report-dir")
        .arg(reports)
        .output()
        .unwrap()
}

#[test]
fn a_changed_reference_fails_the_case_with_the_diff() {
    let (dir, suites, references) = user_suite();
    let reference = references.join(snapshot::file_name(SUITE, CASE));
    let committed = std::fs::read_to_string(
        root()
            .join("snapshots")
            .join(snapshot::file_name(SUITE, CASE)),
    )
    .unwrap();
    let edited = committed.replacen("result: \"0.1.0\"", "result: \"0.0.9\"", 1);
    assert_ne!(committed, edited);
    std::fs::write(&reference, &edited).unwrap();

    let output = run_user_suite(&suites, &references, &dir.path().join("reports"));
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    let fail = stdout
        .lines()
        .find(|l| l.starts_with("FAIL "))
        .unwrap_or_else(|| panic!("no FAIL line in {stdout}"));
    assert!(fail.contains("differs from the reference"), "{fail}");
    assert!(fail.contains(&reference.display().to_string()), "{fail}");
    assert!(
        stdout.contains("-  result: \"0.0.9\"\n+  result: \"0.1.0\"\n"),
        "{stdout}"
    );
    let json = results(&dir.path().join("reports"));
    let case = &json["cases"][0];
    assert_eq!(case["outcome"], "failed");
    assert_eq!(case["snapshot"]["status"], "changed");
    assert!(case["snapshot"]["diff"]
        .as_str()
        .unwrap()
        .contains("+  result: \"0.1.0\""));
    // The reference is left as it was; the new result waits beside it for review.
    assert_eq!(std::fs::read_to_string(&reference).unwrap(), edited);
    let new = std::fs::read_to_string(reference.with_extension("snap.new")).unwrap();
    assert_eq!(snapshot::body(&new), snapshot::body(&committed));
}

#[test]
fn a_user_suites_case_without_a_reference_is_new_and_not_passed() {
    let (dir, suites, references) = user_suite();
    let output = run_user_suite(&suites, &references, &dir.path().join("reports"));
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    // Nothing to compare with is no verdict on the runtime: an error of the case.
    let fail = stdout
        .lines()
        .find(|l| l.starts_with("ERROR "))
        .unwrap_or_else(|| panic!("no ERROR line in {stdout}"));
    assert!(fail.contains("new reference"), "{fail}");
    assert!(fail.contains("--update-snapshots"), "{fail}");
    let json = results(&dir.path().join("reports"));
    assert_eq!(json["cases"][0]["outcome"], "error");
    assert_eq!(json["cases"][0]["snapshot"]["status"], "new");
    let name = snapshot::file_name(SUITE, CASE);
    assert_eq!(tree(&references), [PathBuf::from(format!("{name}.new"))]);
    // Renamed, it is the reference, and the case passes.
    std::fs::rename(
        references.join(format!("{name}.new")),
        references.join(&name),
    )
    .unwrap();
    let output = run_user_suite(&suites, &references, &dir.path().join("reports"));
    assert!(output.status.success(), "{}", text(&output.stdout));
    assert_eq!(
        results(&dir.path().join("reports"))["cases"][0]["snapshot"]["status"],
        "unchanged"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedded_case_whose_reference_the_binary_lacks_is_an_error_naming_it() {
    let mut suite = suite::load_embedded()
        .suites
        .into_iter()
        .find(|s| s.name == SUITE)
        .unwrap();
    assert!(suite.embedded);
    // The same embedded case under a suite name no reference is compiled in for.
    suite.name = "version-gating-unreferenced".to_owned();
    assert_eq!(snapshot::embedded(&suite.name, CASE), None);
    let scratch = tempfile::tempdir().unwrap();
    let references = tempfile::tempdir().unwrap();
    let mut config = support::run_config(Target::Mock, vec![suite], "missing", scratch.path());
    config.snapshot_dir = references.path().to_owned();
    config.filter.focus = Some(regex::Regex::new(&format!("/{CASE}$")).unwrap());
    let report = runner::run(config, Interrupt::new(), None).await;
    assert_eq!(report.cases.len(), 1);
    let case = &report.cases[0];
    let CaseOutcome::Error(reason) = &case.outcome else {
        panic!("not an error: {:?}", case.outcome);
    };
    let expected = format!(
        "snapshots/{}",
        snapshot::file_name("version-gating-unreferenced", CASE)
    );
    assert!(reason.starts_with("missing reference "), "{reason}");
    assert!(reason.contains(&expected), "{reason}");
    let checked = case.snapshot.as_ref().unwrap();
    assert_eq!(checked.status, snapshot::SnapshotStatus::Missing);
    assert_eq!(checked.path, PathBuf::from(expected));
    assert_eq!(std::fs::read_dir(references.path()).unwrap().count(), 0);
}
