//! `report merge`: many nodes' reports (JSON files or saved pod logs) into one JUnit, one JSON
//! and one static HTML page. Reading, the merged model and each rendering live in their own
//! files; this one runs them in order and writes the outputs.

use std::path::{Path, PathBuf};

pub mod generate;
pub mod html;
pub mod json;
pub mod junit;
pub mod model;
pub mod read;

pub use model::Merged;
pub use read::ReadError;

use super::ReportError;

/// The outputs a merge writes, in order: JUnit, JSON, HTML.
pub const OUTPUTS: [&str; 3] = ["junit.xml", "merged.json", "index.html"];

/// Reads every report under `inputs` (see [`read::files`]) and merges them; inputs that gave
/// none are in [`Merged::unread`]. Files are parsed on all cores: at a thousand nodes the
/// reading is most of the work.
pub fn read_all(inputs: &[PathBuf]) -> Merged {
    let (files, mut unread) = read::files(inputs);
    let results = super::read_in_parallel(
        &files,
        |path| read::read(path).map(|r| (path.to_owned(), r)),
        |path| ReadError::NoReport {
            path: path.to_owned(),
            source: None,
        },
    );
    let mut reports = Vec::with_capacity(results.len());
    for result in results {
        match result {
            Ok(report) => reports.push(report),
            Err(err) => unread.push(err),
        }
    }
    Merged::new(reports, unread)
}

/// Writes [`OUTPUTS`] for `merged` into `dir` (created if needed); answers their paths.
pub fn write(dir: &Path, merged: &Merged) -> Result<Vec<PathBuf>, ReportError> {
    let fail = |path: &Path| {
        let path = path.to_owned();
        move |source| ReportError::Write { path, source }
    };
    std::fs::create_dir_all(dir).map_err(fail(dir))?;
    let [junit_name, json_name, html_name] = OUTPUTS;
    let mut written = Vec::new();
    for (name, text) in [
        (junit_name, junit::render(merged)?),
        (json_name, json::render(merged)?),
        (html_name, html::render(merged)?),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(fail(&path))?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::Verdict;

    #[test]
    fn reports_and_logs_in_a_tree_merge_and_a_file_without_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let reports = generate::node_reports(6, &generate::case_names(20));
        for (i, report) in reports.iter().enumerate() {
            let line = crate::report::line(report).unwrap();
            let (name, text) = if i % 2 == 0 {
                (
                    format!("logs/{i}/pod.log"),
                    format!("PASS a\nsummary\n{line}\n"),
                )
            } else {
                (format!("json/{i}.json"), line)
            };
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        std::fs::write(dir.path().join("logs/crashed.log"), "panicked at ...\n").unwrap();
        let merged = read_all(&[dir.path().to_owned()]);
        assert_eq!(merged.nodes.len(), 6);
        assert_eq!(merged.unread.len(), 1);
        assert!(merged.unread[0].0.ends_with("logs/crashed.log"));
        assert_eq!(
            merged.count(Verdict::Failed),
            reports.iter().map(|r| r.failed()).sum::<usize>()
        );
        let out = dir.path().join("out");
        let written = write(&out, &merged).unwrap();
        assert_eq!(written.len(), 3);
        for name in OUTPUTS {
            assert!(std::fs::metadata(out.join(name)).unwrap().len() > 0);
        }
    }

    #[test]
    fn a_flaky_case_reads_back_and_shows_its_attempts_in_every_rendering() {
        use crate::report::model::{AttemptFailure, CaseOutcome};
        let mut reports = generate::node_reports(2, &generate::case_names(3));
        let flaky = &mut reports[1].cases[1];
        flaky.outcome = CaseOutcome::Flaky("flaky (1 of 4 failed)".into());
        flaky.attempts = 4;
        flaky.failures = vec![AttemptFailure {
            attempt: 3,
            verdict: Verdict::Failed,
            reason: "lost the sandbox".into(),
            clause: None,
            stopped: None,
        }];
        let merged = generate::merged(&reports);
        assert_eq!(merged.count(Verdict::Flaky), 1);
        assert_eq!(model::Totals::of(&merged).flaky, 1);
        assert_eq!(merged.groups.iter().map(|g| g.flaky).sum::<usize>(), 1);
        // A flaky case fails no node.
        assert!(merged.groups.iter().all(|g| g.failing_cases.is_empty()));

        let xml = junit::render(&merged).unwrap();
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let reruns: Vec<(&str, Option<&str>)> = doc
            .descendants()
            .filter(|n| n.tag_name().name().contains("lakyFailure"))
            .map(|n| (n.tag_name().name(), n.attribute("message")))
            .collect();
        assert_eq!(
            reruns,
            [("flakyFailure", Some("attempt 3: lost the sandbox"))]
        );
        assert_eq!(doc.root_element().attribute("failures"), Some("0"));

        let json: serde_json::Value =
            serde_json::from_str(&json::render(&merged).unwrap()).unwrap();
        assert_eq!(json["totals"]["flaky"], 1);
        let cell = json["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|n| n["cases"].as_array().unwrap())
            .find(|c| c["outcome"] == "flaky")
            .unwrap();
        assert_eq!(cell["attempts"], 4);
        assert_eq!(
            cell["message"],
            "flaky (1 of 4 failed)\nattempt 3 failed: lost the sandbox"
        );
        assert_eq!(cell["failures"][0]["attempt"], 3);

        let page = html::render(&merged).unwrap();
        assert!(page.contains("attempt 3 failed: lost the sandbox"));
        assert_eq!(
            page.matches(r#""flaky":1"#).count(),
            2,
            "the totals and the group"
        );
    }
}
