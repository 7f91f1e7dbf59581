//! The merged fleet: every node with its facts and one cell per case of the union of cases,
//! nodes ordered by group ((runtime, kernel)) then name, and the duplicates and unreadable
//! inputs said, not hidden. JUnit, JSON and HTML are renderings of this one model.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;

use serde::Serialize;

use super::read::ReadError;
use crate::report::model::{AttemptFailure, RunReport, Verdict};
use crate::report::node::Node;

/// What a runtime calls itself in a group: `containerd v1.6.38`, or `unknown runtime`.
pub fn runtime_label(node: &Node) -> String {
    match (&node.runtime_name, &node.runtime_version) {
        (Some(name), Some(version)) => format!("{name} {version}"),
        (Some(name), None) => name.clone(),
        (None, Some(version)) => version.clone(),
        (None, None) => "unknown runtime".to_owned(),
    }
}

/// The key nodes are grouped by: runtime (name and version) and kernel.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct GroupKey {
    /// [`runtime_label`] of the node.
    pub runtime: String,
    /// The kernel release.
    pub kernel: String,
}

/// One case of one node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    /// How it ended.
    pub outcome: Verdict,
    /// Why it failed or was skipped; for a case run more than once, each failed attempt
    /// follows on a line of its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The snapshot diff of a changed snapshot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// Seconds.
    pub duration: f64,
    /// How many times it ran (see [`crate::report::model::CaseReport::attempts`]).
    pub attempts: u32,
    /// Its failed attempts, when it ran more than once.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<AttemptFailure>,
}

/// One node of the merge.
#[derive(Debug, Clone, PartialEq)]
pub struct MergedNode {
    /// The name shown: the node's name, suffixed `#2`, `#3` when another input had it too.
    pub name: String,
    /// The facts the node reported (its own name unchanged).
    pub facts: Node,
    /// The file it came from.
    pub source: PathBuf,
    /// The run's id.
    pub run_id: String,
    /// One per case of [`Merged::cases`]; none where this node's run lacked the case.
    pub cells: Vec<Option<Cell>>,
    /// Problems of the run as a whole (unusable suite files, why it aborted, interrupted).
    pub problems: Vec<String>,
    /// Run wall time, seconds.
    pub duration: f64,
}

impl MergedNode {
    /// The node's group.
    pub fn group(&self) -> GroupKey {
        GroupKey {
            runtime: runtime_label(&self.facts),
            kernel: self.facts.kernel.clone(),
        }
    }

    /// Cells with this outcome.
    pub fn count(&self, outcome: Verdict) -> usize {
        self.cells
            .iter()
            .flatten()
            .filter(|c| c.outcome == outcome)
            .count()
    }

    /// Cases that fail this node's run: failed or error.
    pub fn failing(&self) -> usize {
        self.cells
            .iter()
            .flatten()
            .filter(|c| c.outcome.fails())
            .count()
    }
}

/// A node name more than one input reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Duplicate {
    /// The name they share.
    pub name: String,
    /// The names given to each, in input order (the first keeps the name).
    pub renamed: Vec<String>,
    /// Their files.
    pub sources: Vec<PathBuf>,
}

/// A group's nodes and counts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Group {
    /// Runtime and kernel.
    #[serde(flatten)]
    pub key: GroupKey,
    /// Indices into [`Merged::nodes`], in order.
    #[serde(skip)]
    pub members: Vec<usize>,
    /// Cells passed, failed and skipped over the group's nodes.
    pub passed: usize,
    /// See `passed`.
    pub failed: usize,
    /// Cells that broke only `should` clauses.
    pub warning: usize,
    /// Cells whose setup or harness failed.
    pub error: usize,
    /// Cells that failed as a listed finding.
    pub known: usize,
    /// See `passed`.
    pub skipped: usize,
    /// Cells that failed in some of their attempts only.
    pub flaky: usize,
    /// Cells a signal cut short.
    #[serde(default)]
    pub interrupted: usize,
    /// Nodes with at least one failed case or a problem of the run.
    pub failing_nodes: usize,
    /// `suite/case` of each case that failed on some node of the group, with how many.
    pub failing_cases: BTreeMap<String, usize>,
}

/// The merge of many nodes' reports.
#[derive(Debug, Clone, PartialEq)]
pub struct Merged {
    /// `(suite, case)` of every case any node ran, sorted.
    pub cases: Vec<(String, String)>,
    /// Nodes in group order, then by name.
    pub nodes: Vec<MergedNode>,
    /// Groups by (runtime, kernel), sorted.
    pub groups: Vec<Group>,
    /// Node names more than one input had.
    pub duplicates: Vec<Duplicate>,
    /// Inputs that gave no report, with why.
    pub unread: Vec<(PathBuf, String)>,
    /// What changed since a baseline (`report merge --baseline`), when one was given.
    pub changes: Option<crate::report::diff::Diff>,
}

impl Merged {
    /// Merges `reports` (each with its file, in input order); `unread` are the inputs that
    /// gave none. Duplicate node names are kept, suffixed, and listed (a pod that restarted
    /// or a file given twice must not silently hide a node's other result).
    pub fn new(reports: Vec<(PathBuf, RunReport)>, unread: Vec<ReadError>) -> Self {
        let cases: Vec<(String, String)> = reports
            .iter()
            .flat_map(|(_, r)| r.cases.iter().map(|c| (c.suite.clone(), c.case.clone())))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let index: HashMap<(&str, &str), usize> = cases
            .iter()
            .enumerate()
            .map(|(i, (s, c))| ((s.as_str(), c.as_str()), i))
            .collect();
        let (names, duplicates) = unique_names(&reports);
        let mut nodes: Vec<MergedNode> = reports
            .into_iter()
            .zip(names)
            .map(|((source, report), name)| {
                let mut cells: Vec<Option<Cell>> = vec![None; cases.len()];
                for case in report.cases {
                    let Some(&at) = index.get(&(case.suite.as_str(), case.case.as_str())) else {
                        continue;
                    };
                    let outcome = case.outcome.verdict();
                    let diff = case
                        .snapshot
                        .as_ref()
                        .and_then(|s| s.status.diff())
                        .filter(|_| outcome.fails())
                        .map(str::to_owned);
                    let message = case.outcome.reason().map(|reason| {
                        let mut message = reason.to_owned();
                        for failure in &case.failures {
                            message.push('\n');
                            message.push_str(&crate::report::attempt_line(failure));
                        }
                        message
                    });
                    cells[at] = Some(Cell {
                        outcome,
                        message,
                        diff,
                        duration: case.duration.as_secs_f64(),
                        attempts: case.attempts,
                        failures: case.failures,
                    });
                }
                let mut problems = report.errors;
                problems.extend(report.aborted);
                if report.interrupted {
                    problems.push("the run was interrupted (evicted or stopped)".to_owned());
                }
                MergedNode {
                    name,
                    facts: report.node,
                    source,
                    run_id: report.run_id,
                    cells,
                    problems,
                    duration: report.duration.as_secs_f64(),
                }
            })
            .collect();
        nodes.sort_by(|a, b| (a.group(), &a.name).cmp(&(b.group(), &b.name)));
        let groups = group(&nodes, &cases);
        Self {
            cases,
            nodes,
            groups,
            duplicates,
            unread: unread
                .into_iter()
                .map(|err| (err.path().to_owned(), crate::errors::chain(&err)))
                .collect(),
            changes: None,
        }
    }

    /// `suite/case` of case `index`.
    pub fn case_name(&self, index: usize) -> String {
        let (suite, case) = &self.cases[index];
        format!("{suite}/{case}")
    }

    /// Cells with this outcome over all nodes.
    pub fn count(&self, outcome: Verdict) -> usize {
        self.nodes.iter().map(|n| n.count(outcome)).sum()
    }
}

/// The merge's counts, as the JSON and the page open with them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Totals {
    /// Nodes merged.
    pub nodes: usize,
    /// Distinct cases over all nodes.
    pub cases: usize,
    /// Passed cells.
    pub passed: usize,
    /// Failed cells.
    pub failed: usize,
    /// Warning cells.
    pub warning: usize,
    /// Error cells.
    pub error: usize,
    /// Known-finding cells.
    pub known: usize,
    /// Skipped cells.
    pub skipped: usize,
    /// Flaky cells.
    pub flaky: usize,
    /// Cells a signal cut short.
    #[serde(default)]
    pub interrupted: usize,
}

impl Totals {
    /// The counts of `merged`.
    pub fn of(merged: &Merged) -> Self {
        Self {
            nodes: merged.nodes.len(),
            cases: merged.cases.len(),
            passed: merged.count(Verdict::Passed),
            failed: merged.count(Verdict::Failed),
            warning: merged.count(Verdict::Warning),
            error: merged.count(Verdict::Error),
            known: merged.count(Verdict::Known),
            skipped: merged.count(Verdict::Skipped),
            flaky: merged.count(Verdict::Flaky),
            interrupted: merged.count(Verdict::Interrupted),
        }
    }
}

/// The name each report is shown under, and the names more than one report had.
fn unique_names(reports: &[(PathBuf, RunReport)]) -> (Vec<String>, Vec<Duplicate>) {
    let mut by_name: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, (_, report)) in reports.iter().enumerate() {
        by_name
            .entry(report.node.name.as_str())
            .or_default()
            .push(i);
    }
    let taken: BTreeSet<&str> = by_name.keys().copied().collect();
    let mut names: Vec<String> = reports.iter().map(|(_, r)| r.node.name.clone()).collect();
    let mut given: BTreeSet<String> = BTreeSet::new();
    let mut duplicates = Vec::new();
    for (name, holders) in by_name.iter().filter(|(_, h)| h.len() > 1) {
        let mut renamed = vec![(*name).to_owned()];
        let mut suffix = 2;
        for &i in &holders[1..] {
            // Skip suffixes another node really has, or that an earlier rename took.
            let new = loop {
                let candidate = format!("{name}#{suffix}");
                suffix += 1;
                if !taken.contains(candidate.as_str()) && !given.contains(&candidate) {
                    break candidate;
                }
            };
            given.insert(new.clone());
            names[i] = new.clone();
            renamed.push(new);
        }
        duplicates.push(Duplicate {
            name: (*name).to_owned(),
            renamed,
            sources: holders.iter().map(|&i| reports[i].0.clone()).collect(),
        });
    }
    (names, duplicates)
}

fn group(nodes: &[MergedNode], cases: &[(String, String)]) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        let key = node.group();
        // Nodes are sorted by group, so a new key starts a new group.
        if groups.last().is_none_or(|g| g.key != key) {
            groups.push(Group {
                key,
                members: Vec::new(),
                passed: 0,
                failed: 0,
                warning: 0,
                error: 0,
                known: 0,
                skipped: 0,
                flaky: 0,
                interrupted: 0,
                failing_nodes: 0,
                failing_cases: BTreeMap::new(),
            });
        }
        let Some(group) = groups.last_mut() else {
            continue;
        };
        group.members.push(i);
        group.passed += node.count(Verdict::Passed);
        group.skipped += node.count(Verdict::Skipped);
        group.failed += node.count(Verdict::Failed);
        group.warning += node.count(Verdict::Warning);
        group.error += node.count(Verdict::Error);
        group.known += node.count(Verdict::Known);
        group.flaky += node.count(Verdict::Flaky);
        group.interrupted += node.count(Verdict::Interrupted);
        if node.failing() > 0 || !node.problems.is_empty() {
            group.failing_nodes += 1;
        }
        for (at, cell) in node.cells.iter().enumerate() {
            if cell.as_ref().is_some_and(|c| c.outcome.fails()) {
                let (suite, case) = &cases[at];
                *group
                    .failing_cases
                    .entry(format!("{suite}/{case}"))
                    .or_default() += 1;
            }
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;
    use crate::report::model::{CaseOutcome, SkipWhy};

    /// A case's verdict at `verdict`, with words that name the case.
    fn outcome(verdict: Verdict, name: &str) -> CaseOutcome {
        let reason = format!("why {name}");
        match verdict {
            Verdict::Passed => CaseOutcome::Passed,
            Verdict::Failed => CaseOutcome::Failed(reason),
            Verdict::Warning => CaseOutcome::Warning(reason),
            Verdict::Skipped => CaseOutcome::skipped(SkipWhy::MockOnly, reason),
            Verdict::Error => CaseOutcome::Error(reason),
            Verdict::Known => CaseOutcome::Known {
                reason,
                finding: "upstream#1".into(),
            },
            Verdict::Flaky => CaseOutcome::Flaky(reason),
            Verdict::Interrupted => CaseOutcome::Interrupted(reason),
        }
    }

    /// A node's report as a runner would read it back: the fields a merge does not use left at
    /// their defaults.
    fn node(name: &str, runtime: &str, kernel: &str, cases: &[(&str, Verdict)]) -> RunReport {
        let cases: Vec<serde_json::Value> = cases
            .iter()
            .map(|(name, verdict)| {
                let mut case = serde_json::to_value(outcome(*verdict, name)).unwrap();
                case["suite"] = "s".into();
                case["case"] = (*name).into();
                case["duration"] = 0.1.into();
                case
            })
            .collect();
        let node = Node {
            name: name.into(),
            kernel: kernel.into(),
            os_image: None,
            runtime_name: Some("containerd".into()),
            runtime_version: Some(runtime.into()),
        };
        serde_json::from_value(serde_json::json!({
            "run_id": format!("run-{name}"),
            "node": node,
            "cases": cases,
            "duration": 1.0,
        }))
        .unwrap()
    }

    fn merge(reports: Vec<RunReport>) -> Merged {
        Merged::new(
            reports
                .into_iter()
                .enumerate()
                .map(|(i, r)| (PathBuf::from(format!("in/{i}.json")), r))
                .collect(),
            Vec::new(),
        )
    }

    use Verdict::{Failed as F, Passed as P, Skipped as S};

    #[test]
    fn nodes_are_grouped_by_runtime_and_kernel_and_sorted_within() {
        let merged = merge(vec![
            node("b", "v1.7", "6.1", &[("x", P)]),
            node("a", "v1.6", "6.1", &[("x", F)]),
            node("c", "v1.7", "5.15", &[("x", P)]),
            node("a2", "v1.7", "6.1", &[("x", S)]),
        ]);
        let keys: Vec<(String, String, Vec<&str>)> = merged
            .groups
            .iter()
            .map(|g| {
                (
                    g.key.runtime.clone(),
                    g.key.kernel.clone(),
                    g.members
                        .iter()
                        .map(|&i| merged.nodes[i].name.as_str())
                        .collect(),
                )
            })
            .collect();
        assert_eq!(
            keys,
            [
                ("containerd v1.6".into(), "6.1".into(), vec!["a"]),
                ("containerd v1.7".into(), "5.15".into(), vec!["c"]),
                ("containerd v1.7".into(), "6.1".into(), vec!["a2", "b"]),
            ]
        );
        assert_eq!(merged.groups[0].failing_cases.get("s/x"), Some(&1));
        assert_eq!(merged.groups[2].failing_nodes, 0);
    }

    #[rstest]
    #[case::all_alike(vec![vec![("x", P), ("y", F)], vec![("x", P), ("y", F)]], [2, 2, 0], 2)]
    #[case::a_case_only_one_node_ran(vec![vec![("x", P)], vec![("x", S), ("y", F)]], [1, 1, 1], 2)]
    #[case::disjoint(vec![vec![("x", P)], vec![("z", S)]], [1, 0, 1], 2)]
    #[case::no_cases(vec![vec![], vec![]], [0, 0, 0], 0)]
    fn the_cases_are_the_union_and_each_cell_keeps_its_outcome(
        #[case] runs: Vec<Vec<(&str, Verdict)>>,
        #[case] counts: [usize; 3],
        #[case] union: usize,
    ) {
        let merged = merge(
            runs.iter()
                .enumerate()
                .map(|(i, cases)| node(&format!("n{i}"), "v1", "k", cases))
                .collect(),
        );
        assert_eq!(merged.cases.len(), union);
        assert_eq!([merged.count(P), merged.count(F), merged.count(S)], counts);
        let missing: usize = merged
            .nodes
            .iter()
            .map(|n| n.cells.iter().filter(|c| c.is_none()).count())
            .sum();
        assert_eq!(missing, union * runs.len() - counts.iter().sum::<usize>());
    }

    #[rstest]
    #[case::two(&["n", "n"], &["n", "n#2"])]
    #[case::three(&["n", "m", "n", "n"], &["n", "m", "n#2", "n#3"])]
    #[case::a_suffix_a_node_really_has(&["n", "n#2", "n"], &["n", "n#2", "n#3"])]
    #[case::none(&["a", "b"], &["a", "b"])]
    fn duplicate_node_names_are_kept_with_a_suffix_and_listed(
        #[case] names: &[&str],
        #[case] expected: &[&str],
    ) {
        let reports: Vec<(PathBuf, RunReport)> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (PathBuf::from(format!("{i}.log")), node(n, "v1", "k", &[])))
            .collect();
        let (given, duplicates) = unique_names(&reports);
        assert_eq!(given, expected);
        let dupes = names.len() != names.iter().collect::<BTreeSet<_>>().len();
        assert_eq!(duplicates.len(), usize::from(dupes));
        if let Some(d) = duplicates.first() {
            assert_eq!(d.renamed.len(), d.sources.len());
            assert_eq!(d.renamed[0], d.name);
        }
    }

    #[rstest]
    #[case::both(Some("containerd"), Some("v1.6.38"), "containerd v1.6.38")]
    #[case::name_only(Some("cri-o"), None, "cri-o")]
    #[case::neither(None, None, "unknown runtime")]
    fn the_runtime_label_uses_what_the_node_knows(
        #[case] name: Option<&str>,
        #[case] version: Option<&str>,
        #[case] expected: &str,
    ) {
        let node = Node {
            runtime_name: name.map(Into::into),
            runtime_version: version.map(Into::into),
            ..Node::default()
        };
        assert_eq!(runtime_label(&node), expected);
    }

    #[test]
    fn a_run_problem_makes_its_node_failing_and_unread_inputs_are_kept() {
        let mut report = node("n", "v1", "k", &[("x", P)]);
        report.aborted = Some("runtime gone".into());
        let merged = Merged::new(
            vec![("a.json".into(), report)],
            vec![ReadError::NoReport {
                path: "b.log".into(),
                source: None,
            }],
        );
        assert_eq!(merged.groups[0].failing_nodes, 1);
        assert_eq!(merged.nodes[0].problems, ["runtime gone"]);
        assert_eq!(merged.unread.len(), 1);
        assert!(merged.unread[0].1.contains("b.log"), "{:?}", merged.unread);
    }
}
