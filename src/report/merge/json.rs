//! The merge as one JSON file: the nodes with their facts and every case's outcome and
//! message, then a summary by (runtime, kernel) group, for scripts and later comparisons.

use std::path::Path;

use serde::Serialize;

use super::model::{Duplicate, Group, Merged, Totals};
use crate::report::model::{AttemptFailure, Verdict};
use crate::report::node::Node;
use crate::report::ReportError;

#[derive(Serialize)]
struct Document<'a> {
    totals: Totals,
    nodes: Vec<NodeView<'a>>,
    summary: Vec<GroupView<'a>>,
    duplicates: &'a [Duplicate],
    unread: Vec<Unread<'a>>,
}

#[derive(Serialize)]
struct NodeView<'a> {
    name: &'a str,
    facts: &'a Node,
    source: &'a Path,
    run_id: &'a str,
    passed: usize,
    failed: usize,
    warning: usize,
    error: usize,
    known: usize,
    skipped: usize,
    flaky: usize,
    interrupted: usize,
    problems: &'a [String],
    cases: Vec<CellView<'a>>,
}

#[derive(Serialize)]
struct CellView<'a> {
    case: String,
    outcome: Verdict,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    diff: Option<&'a str>,
    duration: f64,
    #[serde(skip_serializing_if = "is_one")]
    attempts: u32,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    failures: &'a [AttemptFailure],
}

fn is_one(attempts: &u32) -> bool {
    *attempts == 1
}

#[derive(Serialize)]
struct GroupView<'a> {
    #[serde(flatten)]
    group: &'a Group,
    nodes: Vec<&'a str>,
}

#[derive(Serialize)]
struct Unread<'a> {
    file: &'a Path,
    why: &'a str,
}

/// The merged JSON, compact: at a thousand nodes indentation alone would double its size.
pub fn render(merged: &Merged) -> Result<String, ReportError> {
    let names: Vec<String> = (0..merged.cases.len())
        .map(|i| merged.case_name(i))
        .collect();
    let document = Document {
        totals: Totals::of(merged),
        nodes: merged
            .nodes
            .iter()
            .map(|node| NodeView {
                name: &node.name,
                facts: &node.facts,
                source: &node.source,
                run_id: &node.run_id,
                passed: node.count(Verdict::Passed),
                failed: node.count(Verdict::Failed),
                warning: node.count(Verdict::Warning),
                error: node.count(Verdict::Error),
                known: node.count(Verdict::Known),
                skipped: node.count(Verdict::Skipped),
                flaky: node.count(Verdict::Flaky),
                interrupted: node.count(Verdict::Interrupted),
                problems: &node.problems,
                cases: node
                    .cells
                    .iter()
                    .enumerate()
                    .filter_map(|(at, cell)| {
                        let cell = cell.as_ref()?;
                        Some(CellView {
                            case: names[at].clone(),
                            outcome: cell.outcome,
                            message: cell.message.as_deref(),
                            diff: cell.diff.as_deref(),
                            duration: cell.duration,
                            attempts: cell.attempts,
                            failures: &cell.failures,
                        })
                    })
                    .collect(),
            })
            .collect(),
        summary: merged
            .groups
            .iter()
            .map(|group| GroupView {
                group,
                nodes: group
                    .members
                    .iter()
                    .map(|&i| merged.nodes[i].name.as_str())
                    .collect(),
            })
            .collect(),
        duplicates: &merged.duplicates,
        unread: merged
            .unread
            .iter()
            .map(|(file, why)| Unread { file, why })
            .collect(),
    };
    serde_json::to_string(&document)
        .map(|text| text + "\n")
        .map_err(ReportError::Json)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::merge::generate;

    #[test]
    fn the_json_has_every_node_case_and_a_summary_per_group() {
        let reports = generate::node_reports(10, &generate::case_names(30));
        let merged = generate::merged(&reports);
        let json: serde_json::Value = serde_json::from_str(&render(&merged).unwrap()).unwrap();
        assert_eq!(json["totals"]["nodes"], 10);
        assert_eq!(json["nodes"].as_array().unwrap().len(), 10);
        let failed: usize = reports.iter().map(|r| r.failed()).sum();
        assert_eq!(json["totals"]["failed"], failed);
        let first = &json["nodes"][0];
        assert_eq!(first["cases"].as_array().unwrap().len(), 30);
        assert!(first["facts"]["kernel"].is_string());
        let grouped: usize = json["summary"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| {
                assert!(g["runtime"].is_string() && g["kernel"].is_string());
                g["nodes"].as_array().unwrap().len()
            })
            .sum();
        assert_eq!(grouped, 10);
        let failing: usize = json["summary"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["failed"].as_u64().unwrap() as usize)
            .sum();
        assert_eq!(failing, failed);
    }
}
