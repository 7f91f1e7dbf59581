//! The merge as one static page: a node × case matrix, nodes grouped by runtime and kernel,
//! each failed or skipped cell opening its message and snapshot diff. The data rides in the
//! page as JSON (messages interned: a failure a whole group shares is stored once) and a few
//! lines of inline script draw it with `textContent`, so no text is ever parsed as markup and
//! the page needs nothing from the network.

use std::collections::HashMap;

use serde::Serialize;

use super::model::{runtime_label, Merged, Totals};
use crate::report::model::Verdict;
use crate::report::ReportError;

const PAGE: &str = include_str!("page.html");

#[derive(Serialize)]
struct Data<'a> {
    totals: Totals,
    warnings: Vec<String>,
    cases: Vec<String>,
    strings: Vec<&'a str>,
    groups: Vec<GroupData<'a>>,
    nodes: Vec<NodeData<'a>>,
    /// `[title, lines]` of each section of the changes since the baseline; none without one.
    changes: Option<Vec<(&'static str, Vec<String>)>>,
}

#[derive(Serialize)]
struct GroupData<'a> {
    runtime: &'a str,
    kernel: &'a str,
    nodes: &'a [usize],
    failing_nodes: usize,
    passed: usize,
    failed: usize,
    warning: usize,
    error: usize,
    known: usize,
    skipped: usize,
    flaky: usize,
    failing_cases: Vec<String>,
}

#[derive(Serialize)]
struct NodeData<'a> {
    name: &'a str,
    kernel: &'a str,
    os: &'a str,
    runtime: String,
    source: String,
    problems: &'a [String],
    failing: bool,
    /// One letter per case: `p`assed, `f`ailed, `w`arning, `e`rror, `k`nown, `s`kipped,
    /// flak`y`, `-` not run.
    cells: String,
    /// `[case, message, diff]` of each failed or skipped cell, indices into `strings`, -1 for
    /// none.
    notes: Vec<[i64; 3]>,
}

/// Interns text so each distinct message is stored once.
#[derive(Default)]
struct Strings<'a> {
    list: Vec<&'a str>,
    index: HashMap<&'a str, i64>,
}

impl<'a> Strings<'a> {
    fn add(&mut self, text: Option<&'a str>) -> i64 {
        let Some(text) = text else { return -1 };
        if let Some(&at) = self.index.get(text) {
            return at;
        }
        let at = i64::try_from(self.list.len()).unwrap_or(i64::MAX);
        self.list.push(text);
        self.index.insert(text, at);
        at
    }
}

/// The page.
pub fn render(merged: &Merged) -> Result<String, ReportError> {
    let mut strings = Strings::default();
    let nodes: Vec<NodeData<'_>> = merged
        .nodes
        .iter()
        .map(|node| {
            let mut cells = String::with_capacity(node.cells.len());
            let mut notes = Vec::new();
            for (at, cell) in node.cells.iter().enumerate() {
                let Some(cell) = cell else {
                    cells.push('-');
                    continue;
                };
                cells.push(cell.outcome.letter());
                if cell.outcome != Verdict::Passed {
                    let message = strings.add(cell.message.as_deref());
                    let diff = strings.add(cell.diff.as_deref());
                    notes.push([i64::try_from(at).unwrap_or(-1), message, diff]);
                }
            }
            NodeData {
                name: &node.name,
                kernel: &node.facts.kernel,
                os: node.facts.os_image.as_deref().unwrap_or("unknown OS"),
                runtime: runtime_label(&node.facts),
                source: node.source.display().to_string(),
                problems: &node.problems,
                failing: node.failing() > 0 || !node.problems.is_empty(),
                cells,
                notes,
            }
        })
        .collect();
    let mut warnings: Vec<String> = merged
        .duplicates
        .iter()
        .map(|d| {
            format!(
                "node name {} was reported {} times; shown as {}",
                d.name,
                d.renamed.len(),
                d.renamed.join(", ")
            )
        })
        .collect();
    warnings.extend(merged.unread.iter().map(|(_, why)| why.clone()));
    let data = Data {
        totals: Totals::of(merged),
        warnings,
        cases: (0..merged.cases.len())
            .map(|i| merged.case_name(i))
            .collect(),
        strings: strings.list,
        groups: merged
            .groups
            .iter()
            .map(|g| GroupData {
                runtime: &g.key.runtime,
                kernel: &g.key.kernel,
                nodes: &g.members,
                failing_nodes: g.failing_nodes,
                passed: g.passed,
                failed: g.failed,
                warning: g.warning,
                error: g.error,
                known: g.known,
                skipped: g.skipped,
                flaky: g.flaky,
                failing_cases: g
                    .failing_cases
                    .iter()
                    .map(|(case, n)| format!("{case} ({n})"))
                    .collect(),
            })
            .collect(),
        nodes,
        changes: merged.changes.as_ref().map(|diff| diff.sections()),
    };
    let json = serde_json::to_string(&data).map_err(ReportError::Json)?;
    Ok(PAGE.replacen("{{DATA}}", &script_safe(&json), 1))
}

/// JSON that can sit inside a `<script>` element: no `<`, `>` or `&` that could close it or
/// open a comment, and no U+2028/U+2029. These only occur inside JSON strings, where the
/// `\u` escape means the same.
pub(crate) fn script_safe(json: &str) -> String {
    let mut out = String::with_capacity(json.len() + json.len() / 64);
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;
    use crate::report::merge::generate;
    use crate::report::model::CaseOutcome;

    const HOSTILE: &str = "</script><script>alert(1)</script> <!-- & <b>\"'\u{2028}\u{2029} ]]>";

    #[rstest]
    #[case::script_end("</script>", "\\u003c/script\\u003e")]
    #[case::comment("<!--", "\\u003c!--")]
    #[case::amp("a&b", "a\\u0026b")]
    #[case::separators("\u{2028}\u{2029}", "\\u2028\\u2029")]
    #[case::plain("plain \\\" text", "plain \\\" text")]
    fn script_safe_json_escapes_what_html_would_read(#[case] json: &str, #[case] expected: &str) {
        assert_eq!(script_safe(json), expected);
    }

    #[test]
    fn hostile_text_stays_inside_the_data_and_reads_back_unchanged() {
        let mut reports = generate::node_reports(2, &generate::case_names(5));
        reports[0].node.name = HOSTILE.into();
        reports[0].node.kernel = HOSTILE.into();
        reports[0].cases[1].outcome = CaseOutcome::Failed(HOSTILE.into());
        reports[0].cases[1].case = HOSTILE.into();
        let page = render(&generate::merged(&reports)).unwrap();
        // The page's own markup is the template's; the hostile text adds none.
        assert_eq!(page.matches("<script").count(), 2, "{page}");
        assert_eq!(page.matches("</script>").count(), 2);
        assert!(!page.contains("<!-- &"));
        let start = page.find("id=\"data\">").unwrap() + "id=\"data\">".len();
        let end = start + page[start..].find("</script>").unwrap();
        let data: serde_json::Value = serde_json::from_str(&page[start..end]).unwrap();
        let names: Vec<&str> = data["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&HOSTILE));
        assert!(data["strings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == HOSTILE));
    }

    #[test]
    fn a_message_many_nodes_share_is_stored_once() {
        let reports = generate::node_reports(40, &generate::case_names(10));
        let merged = generate::merged(&reports);
        let shared = "snapshot changed: PodSandboxStatus differs from the stored snapshot";
        let failing = reports
            .iter()
            .filter(|r| matches!(&r.cases[5].outcome, CaseOutcome::Failed(m) if m == shared))
            .count();
        assert!(failing > 5, "{failing}");
        assert_eq!(render(&merged).unwrap().matches(shared).count(), 1);
    }
}
