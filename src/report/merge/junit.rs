//! The merge as one JUnit file: a `testsuite` per node, named by the node, its facts as
//! properties, so a CI dashboard shows which node failed what. A case run more than once
//! carries its failed attempts as the run's own JUnit does ([`crate::report::junit_reruns`]).

use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::model::{runtime_label, Merged};
use crate::report::model::Verdict;
use crate::report::ReportError;

/// The merged JUnit XML.
pub fn render(merged: &Merged) -> Result<String, ReportError> {
    let mut report = Report::new("cri-harness fleet");
    let mut total = 0.0;
    for node in &merged.nodes {
        let mut suite = TestSuite::new(node.name.as_str());
        suite.add_property(("node", node.facts.name.as_str()));
        suite.add_property(("kernel", node.facts.kernel.as_str()));
        suite.add_property((
            "os-image",
            node.facts.os_image.as_deref().unwrap_or("unknown"),
        ));
        suite.add_property(("runtime", runtime_label(&node.facts).as_str()));
        suite.add_property(("run-id", node.run_id.as_str()));
        suite.add_property(("source", node.source.display().to_string().as_str()));
        suite.set_time(seconds(node.duration));
        total += node.duration;
        for (at, cell) in node.cells.iter().enumerate() {
            let Some(cell) = cell else { continue };
            let message = cell.message.as_deref().unwrap_or_default();
            let mut status = match cell.outcome {
                Verdict::Passed => TestCaseStatus::success(),
                Verdict::Failed => {
                    let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    let description = match &cell.diff {
                        Some(diff) => format!("{message}\n\n{diff}"),
                        None => message.to_owned(),
                    };
                    status
                        .set_type("CaseFailed")
                        .set_message(message.lines().next().unwrap_or_default())
                        .set_description(description);
                    status
                }
                Verdict::Error => {
                    let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
                    status
                        .set_type("CaseError")
                        .set_message(message.lines().next().unwrap_or_default())
                        .set_description(message);
                    status
                }
                Verdict::Warning | Verdict::Known | Verdict::Flaky => TestCaseStatus::success(),
                Verdict::Skipped => {
                    let mut status = TestCaseStatus::skipped();
                    status.set_message(message);
                    status
                }
                // As the run's own JUnit: not judged, so skipped rather than a red error.
                Verdict::Interrupted => {
                    let mut status = TestCaseStatus::skipped();
                    status.set_message(format!("interrupted: {message}"));
                    status
                }
            };
            status.add_reruns(crate::report::junit_reruns(cell.outcome, &cell.failures));
            let (suite_name, case_name) = &merged.cases[at];
            let mut case = TestCase::new(case_name.as_str(), status);
            case.set_classname(suite_name.as_str())
                .set_time(seconds(cell.duration));
            match cell.outcome {
                Verdict::Warning => {
                    case.set_system_out(format!("verdict: warning: {message}"));
                }
                Verdict::Known => {
                    case.set_system_out(format!("verdict: known finding: {message}"));
                }
                Verdict::Flaky => {
                    case.set_system_out(format!("verdict: {message}"));
                }
                _ => {}
            }
            suite.add_test_case(case);
        }
        for (index, problem) in node.problems.iter().enumerate() {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
            status
                .set_type("RunProblem")
                .set_message(problem.lines().next().unwrap_or_default())
                .set_description(problem.as_str());
            let mut case = TestCase::new(format!("problem-{}", index + 1), status);
            case.set_classname("cri-harness").set_time(Duration::ZERO);
            suite.add_test_case(case);
        }
        report.add_test_suite(suite);
    }
    report.set_time(seconds(total));
    report.to_string().map_err(ReportError::Junit)
}

/// Seconds as a duration; a negative or absurd figure from a hand-edited file counts as zero.
fn seconds(value: f64) -> Duration {
    Duration::try_from_secs_f64(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::merge::generate;

    #[test]
    fn each_node_is_a_testsuite_with_its_facts_and_cases() {
        let reports = generate::node_reports(4, &generate::case_names(12));
        let merged = generate::merged(&reports);
        let xml = render(&merged).unwrap();
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let suites: Vec<_> = doc
            .root_element()
            .children()
            .filter(|n| n.has_tag_name("testsuite"))
            .collect();
        assert_eq!(suites.len(), 4);
        for (suite, node) in suites.iter().zip(&merged.nodes) {
            assert_eq!(suite.attribute("name"), Some(node.name.as_str()));
            let properties: Vec<(&str, &str)> = suite
                .descendants()
                .filter(|n| n.has_tag_name("property"))
                .map(|p| (p.attribute("name").unwrap(), p.attribute("value").unwrap()))
                .collect();
            assert!(properties.contains(&("kernel", node.facts.kernel.as_str())));
            let runtime = runtime_label(&node.facts);
            assert!(properties.contains(&("runtime", runtime.as_str())));
            assert!(properties.iter().any(|(k, _)| *k == "os-image"));
            let count = |tag: &str| suite.descendants().filter(|n| n.has_tag_name(tag)).count();
            assert_eq!(count("testcase"), node.cells.iter().flatten().count());
            assert_eq!(count("failure"), node.count(Verdict::Failed));
            assert_eq!(count("skipped"), node.count(Verdict::Skipped));
            assert_eq!(
                suite.attribute("failures"),
                Some(node.count(Verdict::Failed).to_string().as_str())
            );
        }
    }
}
