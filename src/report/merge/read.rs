//! Reading the nodes' reports: a JSON report file as `run --report-dir` writes it, or a pod's
//! log saved to a file, whose last line that parses as a report is the one (`run
//! --report-line` prints it last). Logs in the CRI format of /var/log/pods are understood too,
//! split lines joined, because that is what a node keeps when nobody ran `kubectl logs`.
//! A report parses into the runner's own [`RunReport`]: fields a report lacks take their
//! defaults, and fields it has that the model does not are ignored, so older and newer
//! harnesses' reports still merge.

use std::path::{Path, PathBuf};

use crate::report::model::RunReport;

/// An input that gave no report.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file or directory could not be read.
    #[error("cannot read {}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file holds no line (and is not a document) that parses as a cri-harness report.
    #[error("{} holds no cri-harness report (no line parses as one)", path.display())]
    NoReport {
        /// The file.
        path: PathBuf,
        /// Why the file as a whole did not parse, when it looked like one JSON document.
        #[source]
        source: Option<serde_json::Error>,
    },
}

impl ReadError {
    /// The input the error is about.
    pub fn path(&self) -> &Path {
        match self {
            ReadError::Io { path, .. } | ReadError::NoReport { path, .. } => path,
        }
    }
}

/// Every `*.json` and `*.log` file under the given inputs, directories read recursively; a
/// file named directly is taken whatever its name. Sorted, so merges are reproducible.
pub fn files(inputs: &[PathBuf]) -> (Vec<PathBuf>, Vec<ReadError>) {
    let mut found = Vec::new();
    let mut errors = Vec::new();
    for input in inputs {
        match std::fs::metadata(input) {
            Ok(meta) if meta.is_dir() => walk(input, &mut found, &mut errors),
            Ok(_) => found.push(input.clone()),
            Err(source) => errors.push(ReadError::Io {
                path: input.clone(),
                source,
            }),
        }
    }
    found.sort();
    found.dedup();
    (found, errors)
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>, errors: &mut Vec<ReadError>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(source) => {
            errors.push(ReadError::Io {
                path: dir.to_owned(),
                source,
            });
            return;
        }
    };
    for entry in entries {
        let entry = match entry {
            Ok(entry) => entry,
            Err(source) => {
                errors.push(ReadError::Io {
                    path: dir.to_owned(),
                    source,
                });
                continue;
            }
        };
        let path = entry.path();
        // Follows links, as a user listing the directory would expect.
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_dir() => walk(&path, found, errors),
            Ok(_) if has_extension(&path, &["json", "log"]) => found.push(path),
            Ok(_) => {}
            Err(source) => errors.push(ReadError::Io { path, source }),
        }
    }
}

fn has_extension(path: &Path, wanted: &[&str]) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| wanted.contains(&e))
}

/// Reads the report in one file.
pub fn read(path: &Path) -> Result<RunReport, ReadError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReadError::Io {
        path: path.to_owned(),
        source,
    })?;
    parse(&text).map_err(|source| ReadError::NoReport {
        path: path.to_owned(),
        source,
    })
}

/// The report in a file's text: the whole text as one document, else its last line (plain or
/// in the CRI log format) that parses as a report. The error is the whole text's, when it
/// looked like one document.
pub fn parse(text: &str) -> Result<RunReport, Option<serde_json::Error>> {
    let mut whole_error = None;
    if text.trim_start().starts_with('{') {
        match serde_json::from_str::<RunReport>(text) {
            Ok(report) => return Ok(report),
            // One line: it is the only candidate, and its error says why.
            Err(err) if !text.trim().contains('\n') => return Err(Some(err)),
            Err(err) => whole_error = Some(err),
        }
    }
    log_lines(text)
        .iter()
        .rev()
        .filter(|line| line.trim_start().starts_with('{'))
        .find_map(|line| serde_json::from_str::<RunReport>(line).ok())
        .ok_or(whole_error)
}

/// The lines a program printed, from a plain log or one in the CRI format
/// (`<time> <stream> <P|F>[:...] <text>`), where the runtime splits a long line into partial
/// (`P`) pieces ended by a full (`F`) one.
fn log_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    // Pieces of a split line, per stream: stdout and stderr interleave.
    let mut partial: [String; 2] = Default::default();
    for raw in text.lines() {
        match cri_log_line(raw) {
            Some((stream, full, content)) => {
                partial[stream].push_str(content);
                if full {
                    lines.push(std::mem::take(&mut partial[stream]));
                }
            }
            None => lines.push(raw.to_owned()),
        }
    }
    lines.extend(partial.into_iter().filter(|p| !p.is_empty()));
    lines
}

/// `(stream index, full, content)` of a CRI log line; none for a plain line.
fn cri_log_line(line: &str) -> Option<(usize, bool, &str)> {
    let (time, rest) = line.split_once(' ')?;
    // An RFC 3339 time starts with a four-digit year and a dash; JSON never does.
    if !(time.len() >= 20
        && time.as_bytes()[..4].iter().all(u8::is_ascii_digit)
        && time.as_bytes()[4] == b'-')
    {
        return None;
    }
    let (stream, rest) = rest.split_once(' ')?;
    let stream = match stream {
        "stdout" => 0,
        "stderr" => 1,
        _ => return None,
    };
    let (tags, content) = rest.split_once(' ').unwrap_or((rest, ""));
    let full = match tags.split(':').next() {
        Some("F") => true,
        Some("P") => false,
        _ => return None,
    };
    Some((stream, full, content))
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    const REPORT: &str = r#"{"run_id":"r1","node":{"name":"n1","kernel":"6.1.0","os_image":null,"runtime_name":"containerd","runtime_version":"v1.6.38"},"cases":[{"suite":"s","case":"c","outcome":"failed","reason":"boom","duration":0.1,"snapshot":null}],"errors":[],"aborted":null,"interrupted":false,"duration":1.5}"#;

    fn cri_split(line: &str, piece: usize) -> String {
        let chunks: Vec<&str> = line
            .as_bytes()
            .chunks(piece)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        let mut out = String::from("2026-12-01T20:00:00.000000001Z stderr F starting\n");
        for (i, chunk) in chunks.iter().enumerate() {
            let tag = if i + 1 == chunks.len() { "F" } else { "P" };
            out.push_str(&format!(
                "2026-12-01T20:00:01.{i:09}Z stdout {tag} {chunk}\n"
            ));
            // The other stream interleaves between the pieces.
            out.push_str("2026-12-01T20:00:01.5Z stderr F a warning\n");
        }
        out
    }

    #[rstest]
    #[case::the_json_file(REPORT.to_owned())]
    #[case::pretty_json(serde_json::to_string_pretty(&serde_json::from_str::<serde_json::Value>(REPORT).unwrap()).unwrap())]
    #[case::a_log_ending_in_the_line(format!("PASS s/c (1 ms)\n1 passed, 0 failed, 0 skipped\n{REPORT}\n"))]
    #[case::a_later_non_report_line(format!("{REPORT}\n{{\"not\": \"a report\"}}\nbye\n"))]
    #[case::a_cri_log_with_split_lines(cri_split(REPORT, 40))]
    fn the_report_is_found_in_files_and_logs(#[case] text: String) {
        let report = parse(&text).unwrap();
        assert_eq!(report.node.name, "n1");
        assert_eq!(
            report.cases[0].outcome,
            crate::report::model::CaseOutcome::Failed("boom".into())
        );
    }

    #[test]
    fn the_last_of_two_reports_in_a_log_wins() {
        let second = REPORT.replace("\"r1\"", "\"r2\"");
        let report = parse(&format!("{REPORT}\n{second}\n")).unwrap();
        assert_eq!(report.run_id, "r2");
    }

    #[rstest]
    #[case::empty("", false)]
    #[case::plain_log("PASS a\nFAIL b\n", false)]
    #[case::truncated_json(&REPORT[..60], true)]
    #[case::other_json("{\"kind\": \"Pod\"}", true)]
    fn a_file_without_a_report_says_so(#[case] text: &str, #[case] has_json_error: bool) {
        let err = parse(text).unwrap_err();
        assert_eq!(err.is_some(), has_json_error);
    }

    #[test]
    fn directories_are_read_recursively_for_json_and_log_files() {
        let dir = tempfile::tempdir().unwrap();
        let nested = dir.path().join("a/b");
        std::fs::create_dir_all(&nested).unwrap();
        for name in ["x.json", "a/y.log", "a/b/z.json", "a/b/notes.txt"] {
            std::fs::write(dir.path().join(name), REPORT).unwrap();
        }
        let named = dir.path().join("a/b/notes.txt");
        let (found, errors) = files(&[
            dir.path().to_owned(),
            named.clone(),
            dir.path().join("gone"),
        ]);
        let relative: Vec<_> = found
            .iter()
            .map(|p| {
                p.strip_prefix(dir.path())
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(
            relative,
            ["a/b/notes.txt", "a/b/z.json", "a/y.log", "x.json"]
        );
        assert_eq!(errors.len(), 1);
        assert!(errors[0].path().ends_with("gone"));
    }
}
