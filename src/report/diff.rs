//! What changed between two nights: new failures and fixes, other changed verdict levels,
//! cases added and removed, lanes that came or went, known findings that appeared or went.
//! Each side is a report file or a directory of them (a nightly's `reports/`, one run per
//! lane). A report's lane is what ran, as the report records it (see [`super::lane`]), never
//! the directory it sits in, so nights named by date pair; a case is matched by its lane and
//! its `suite/case` name, never by the run's ids.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::lane::{self, LaneError, LaneId, LaneKey, Placed};
use super::merge::read::{self, ReadError};
use super::model::{CaseOutcome, RunReport, Verdict};

/// A case's identity across nights: its lane and its `suite/case` name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct CaseKey {
    /// The lane: what ran (see [`LaneKey::label`]).
    pub lane: String,
    /// `suite/case`.
    pub case: String,
}

impl std::fmt::Display for CaseKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.lane.is_empty() {
            f.write_str(&self.case)
        } else {
            write!(f, "{}: {}", self.lane, self.case)
        }
    }
}

/// One case's result on one side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Seen {
    /// Its verdict's level.
    pub verdict: Verdict,
    /// Why, for anything but a pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The finding a known failure is listed under, or the one a pass says may be fixed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finding: Option<String>,
}

/// One run report of a side, as read: where it was and what ran, and its cases by
/// `suite/case`. Its lane is only known once it is paired with the other side's.
#[derive(Debug, Clone)]
pub struct LaneReport {
    /// Where it was and what ran.
    pub placed: Placed,
    /// Its cases.
    pub cases: BTreeMap<String, Seen>,
}

/// A lane of one side: the report it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LaneSeen {
    /// What ran.
    pub id: LaneId,
    /// The report file.
    pub path: PathBuf,
    /// Its cases.
    pub cases: usize,
    /// Its cases that fail (failed or error).
    pub failing: usize,
}

/// Every case and lane of one side, by key, once paired with the other side.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Side {
    /// Every case.
    pub cases: BTreeMap<CaseKey, Seen>,
    /// Every lane, by label.
    pub lanes: BTreeMap<String, LaneSeen>,
}

/// Reads a side from several inputs, as `report merge` takes them: the union of their reports.
pub fn read_sides(inputs: &[PathBuf]) -> Result<Vec<LaneReport>, ReadError> {
    let mut side = Vec::new();
    for input in inputs {
        side.extend(read_side(input)?);
    }
    Ok(side)
}

/// Pairs the reports of two sides by their lanes ([`lane::resolve`]).
pub fn pair(old: Vec<LaneReport>, new: Vec<LaneReport>) -> Result<(Side, Side), LaneError> {
    let places = |side: &[LaneReport]| side.iter().map(|r| r.placed.clone()).collect();
    let keys = lane::resolve(&[places(&old), places(&new)])?;
    let mut sides = keys.into_iter().zip([old, new]).map(|(keys, reports)| {
        let mut side = Side::default();
        for (key, report) in keys.iter().zip(reports) {
            side_of(key, report, &mut side);
        }
        side
    });
    let old = sides.next().unwrap_or_default();
    let new = sides.next().unwrap_or_default();
    Ok((old, new))
}

/// A case whose verdict moved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// The case.
    pub key: CaseKey,
    /// Before; none for a case the old side did not have.
    pub old: Option<Seen>,
    /// After.
    pub new: Seen,
}

/// A case present on one side only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Only {
    /// The case.
    pub key: CaseKey,
    /// Its result there.
    pub seen: Seen,
}

/// A lane present on one side only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LaneOnly {
    /// The lane's label.
    pub lane: String,
    /// Its report there.
    #[serde(flatten)]
    pub seen: LaneSeen,
}

/// A known finding that appeared or went, with the case that shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FindingChange {
    /// The case.
    pub key: CaseKey,
    /// The finding's upstream reference.
    pub finding: String,
}

/// What changed from the old side to the new.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Diff {
    /// Cases that fail now (failed or error) and did not before, added cases and the cases of
    /// added lanes included; a case flaky before that now fails in all its attempts is one.
    pub new_failures: Vec<Change>,
    /// Cases that failed before and pass now (or only warn).
    pub fixes: Vec<Change>,
    /// Every other change of verdict level (a pass now skipped, a failure now known, a pass
    /// or a failure now flaky, a flaky case now passing, a failure cut short by a signal now
    /// `interrupted`, ...). A flaky case failed only in some attempts, and an interrupted one
    /// has no verdict: neither is a new failure or a fix.
    pub changed: Vec<Change>,
    /// Lanes only the new side ran: their cases are in no `added` list.
    pub lanes_added: Vec<LaneOnly>,
    /// Lanes only the old side ran: their cases are in no `removed` list.
    pub lanes_removed: Vec<LaneOnly>,
    /// Cases only the new side has, in a lane both sides ran.
    pub added: Vec<Only>,
    /// Cases only the old side has, in a lane both sides ran.
    pub removed: Vec<Only>,
    /// Known failures the new side has that the old did not show as known.
    pub new_known: Vec<FindingChange>,
    /// Known failures of the old side that no longer show, or that the new run flags as maybe
    /// fixed.
    pub fixed_known: Vec<FindingChange>,
}

impl Diff {
    /// Pairs two sides' reports by lane and compares them.
    pub fn between(old: Vec<LaneReport>, new: Vec<LaneReport>) -> Result<Self, LaneError> {
        let (old, new) = pair(old, new)?;
        Ok(Self::new(&old, &new))
    }

    /// Compares two paired sides.
    pub fn new(old: &Side, new: &Side) -> Self {
        let lane_only = |(lane, seen): (&String, &LaneSeen)| LaneOnly {
            lane: lane.clone(),
            seen: seen.clone(),
        };
        let mut diff = Diff {
            lanes_added: new
                .lanes
                .iter()
                .filter(|(lane, _)| !old.lanes.contains_key(*lane))
                .map(lane_only)
                .collect(),
            lanes_removed: old
                .lanes
                .iter()
                .filter(|(lane, _)| !new.lanes.contains_key(*lane))
                .map(lane_only)
                .collect(),
            ..Diff::default()
        };
        for (key, now) in &new.cases {
            let before = old.cases.get(key);
            // A lane the old side did not run is listed once, as a lane; its failures still
            // gate, as an added case's do.
            if before.is_none() && old.lanes.contains_key(&key.lane) {
                diff.added.push(Only {
                    key: key.clone(),
                    seen: now.clone(),
                });
            }
            let change = || Change {
                key: key.clone(),
                old: before.cloned(),
                new: now.clone(),
            };
            let was = before.map(|b| b.verdict);
            if now.verdict.fails() && !was.is_some_and(Verdict::fails) {
                diff.new_failures.push(change());
            } else if was.is_some_and(Verdict::fails)
                && matches!(now.verdict, Verdict::Passed | Verdict::Warning)
            {
                diff.fixes.push(change());
            } else if was.is_some_and(|was| was != now.verdict) {
                diff.changed.push(change());
            }
            let finding_change = |seen: &Seen| {
                seen.finding.clone().map(|finding| FindingChange {
                    key: key.clone(),
                    finding,
                })
            };
            if now.verdict == Verdict::Interrupted {
                // Cut short, the case says nothing of a finding either way.
                continue;
            }
            if now.verdict == Verdict::Known && was != Some(Verdict::Known) {
                diff.new_known.extend(finding_change(now));
            }
            match before {
                Some(before)
                    if before.verdict == Verdict::Known && now.verdict != Verdict::Known =>
                {
                    diff.fixed_known.extend(finding_change(before));
                }
                _ if now.verdict != Verdict::Known => diff.fixed_known.extend(finding_change(now)),
                _ => {}
            }
        }
        for (key, before) in &old.cases {
            // A lane the new side did not run says nothing of its cases or findings.
            if new.cases.contains_key(key) || !new.lanes.contains_key(&key.lane) {
                continue;
            }
            diff.removed.push(Only {
                key: key.clone(),
                seen: before.clone(),
            });
            if before.verdict == Verdict::Known {
                if let Some(finding) = &before.finding {
                    diff.fixed_known.push(FindingChange {
                        key: key.clone(),
                        finding: finding.clone(),
                    });
                }
            }
        }
        diff
    }

    /// True when a case fails now that did not: what a job gates on.
    pub fn has_new_failures(&self) -> bool {
        !self.new_failures.is_empty()
    }

    /// The diff's sections, titled, one line per case, empty sections left out: what the text
    /// and the merged page show.
    pub fn sections(&self) -> Vec<(&'static str, Vec<String>)> {
        let change = |c: &Change| {
            let old = c.old.as_ref().map_or("absent", |o| verdict_name(o.verdict));
            let why = c
                .new
                .reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default();
            format!("{} ({old} -> {}){why}", c.key, verdict_name(c.new.verdict))
        };
        let only = |o: &Only| format!("{} ({})", o.key, verdict_name(o.seen.verdict));
        let finding = |f: &FindingChange| format!("{}: {}", f.key, f.finding);
        let lane = |l: &LaneOnly| {
            format!(
                "{}: {} cases, {} failing ({})",
                l.lane,
                l.seen.cases,
                l.seen.failing,
                l.seen.path.display()
            )
        };
        [
            (
                "new failures",
                self.new_failures.iter().map(change).collect(),
            ),
            ("fixed", self.fixes.iter().map(change).collect()),
            ("changed verdict", self.changed.iter().map(change).collect()),
            ("lanes added", self.lanes_added.iter().map(lane).collect()),
            (
                "lanes removed",
                self.lanes_removed.iter().map(lane).collect(),
            ),
            ("added", self.added.iter().map(only).collect()),
            ("removed", self.removed.iter().map(only).collect()),
            (
                "new known findings",
                self.new_known.iter().map(finding).collect(),
            ),
            (
                "known findings gone or maybe fixed",
                self.fixed_known.iter().map(finding).collect(),
            ),
        ]
        .into_iter()
        .filter(|(_, lines): &(&str, Vec<String>)| !lines.is_empty())
        .collect()
    }

    /// The diff as text: each section's title and count, then its lines indented.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for (title, lines) in self.sections() {
            out.push_str(&format!("{title} ({}):\n", lines.len()));
            for line in lines {
                out.push_str(&format!("  {line}\n"));
            }
        }
        if out.is_empty() {
            out.push_str("no change\n");
        }
        out
    }
}

fn verdict_name(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Passed => "passed",
        Verdict::Failed => "failed",
        Verdict::Warning => "warning",
        Verdict::Skipped => "skipped",
        Verdict::Error => "error",
        Verdict::Known => "known",
        Verdict::Flaky => "flaky",
        Verdict::Interrupted => "interrupted",
    }
}

/// A run's cases, by `suite/case`.
fn cases_of(report: &RunReport) -> BTreeMap<String, Seen> {
    report
        .cases
        .iter()
        .map(|case| {
            let finding = match &case.outcome {
                CaseOutcome::Known { finding, .. } => Some(finding.clone()),
                _ => case.finding_fixed.clone(),
            };
            let seen = Seen {
                verdict: case.outcome.verdict(),
                reason: case.outcome.reason().map(str::to_owned),
                finding,
            };
            (case.full_name(), seen)
        })
        .collect()
}

/// Adds one report's lane and cases, as lane `key`, to a side.
fn side_of(key: &LaneKey, report: LaneReport, side: &mut Side) {
    let lane = key.label();
    side.lanes.insert(
        lane.clone(),
        LaneSeen {
            id: report.placed.id,
            path: report.placed.path,
            cases: report.cases.len(),
            failing: report.cases.values().filter(|s| s.verdict.fails()).count(),
        },
    );
    for (case, seen) in report.cases {
        side.cases.insert(
            CaseKey {
                lane: lane.clone(),
                case,
            },
            seen,
        );
    }
}

/// Reads one side: a report file, or a directory with every report under it. Files under a
/// directory that hold no report (a bench's JSON) are passed over; a file named directly must
/// hold one.
pub fn read_side(input: &Path) -> Result<Vec<LaneReport>, ReadError> {
    let is_dir = std::fs::metadata(input)
        .map_err(|source| ReadError::Io {
            path: input.to_owned(),
            source,
        })?
        .is_dir();
    if !is_dir {
        let report = read::read(input)?;
        let dir = input.parent().unwrap_or(Path::new(""));
        return Ok(vec![lane_report(placed(dir, input, &report), &report)]);
    }
    let (files, mut errors) = read::files(&[input.to_owned()]);
    if let Some(error) = errors.drain(..).next() {
        return Err(error);
    }
    let mut side = Vec::new();
    for file in files {
        match read::read(&file) {
            Ok(report) => side.push(lane_report(placed(input, &file, &report), &report)),
            Err(ReadError::NoReport { .. }) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(side)
}

fn lane_report(placed: Placed, report: &RunReport) -> LaneReport {
    LaneReport {
        placed,
        cases: cases_of(report),
    }
}

/// Where `file`, read from under `dir`, was and what ran.
pub(crate) fn placed(dir: &Path, file: &Path, report: &RunReport) -> Placed {
    Placed {
        path: file.to_owned(),
        at: at(dir, file),
        id: LaneId::of(report),
    }
}

/// A report's path under the directory, without a trailing `results.json`: empty for the
/// directory's own report; a file given directly is under its own directory. It only tells
/// apart two reports of one identity in a night (see [`LaneKey`]).
fn at(dir: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(dir).unwrap_or(Path::new(""));
    let relative = if relative.file_name().is_some_and(|n| n == "results.json") {
        relative.parent().unwrap_or(Path::new(""))
    } else {
        relative
    };
    relative.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(verdict: Verdict, finding: Option<&str>) -> Seen {
        Seen {
            verdict,
            reason: (verdict != Verdict::Passed).then(|| "why".to_owned()),
            finding: finding.map(str::to_owned),
        }
    }

    fn key(case: &str) -> CaseKey {
        CaseKey {
            lane: "containerd".into(),
            case: case.into(),
        }
    }

    fn lane_seen(cases: usize) -> LaneSeen {
        LaneSeen {
            id: LaneId {
                runtime_name: Some("containerd".into()),
                runtime_version: Some("v1.7.24".into()),
                runtime_handler: String::new(),
                target: Some(lane::TargetKind::Endpoint),
                kubelet: Some("seed".into()),
            },
            path: "containerd/results.json".into(),
            cases,
            failing: 0,
        }
    }

    fn side(cases: &[(&str, Verdict, Option<&str>)]) -> Side {
        Side {
            cases: cases
                .iter()
                .map(|(case, verdict, finding)| (key(case), seen(*verdict, *finding)))
                .collect(),
            lanes: [("containerd".to_owned(), lane_seen(cases.len()))].into(),
        }
    }

    fn names<T>(items: &[T], key_of: impl Fn(&T) -> &CaseKey) -> Vec<String> {
        items.iter().map(|i| key_of(i).case.clone()).collect()
    }

    #[test]
    fn each_kind_of_change_lands_in_its_list() {
        use Verdict::*;
        let old = side(&[
            ("s/steady", Passed, None),
            ("s/breaks", Passed, None),
            ("s/mended", Failed, None),
            ("s/now-skipped", Passed, None),
            ("s/now-known", Failed, None),
            ("s/known-fixed", Known, Some("upstream#1")),
            ("s/dropped", Passed, None),
            ("s/dropped-known", Known, Some("upstream#2")),
            ("s/erred", Error, None),
        ]);
        let new = side(&[
            ("s/steady", Passed, None),
            ("s/breaks", Failed, None),
            ("s/mended", Passed, None),
            ("s/now-skipped", Skipped, None),
            ("s/now-known", Known, Some("upstream#3")),
            ("s/known-fixed", Passed, Some("upstream#1")),
            ("s/new-and-failing", Error, None),
            ("s/new", Passed, None),
            ("s/erred", Failed, None),
        ]);
        let diff = Diff::new(&old, &new);
        assert_eq!(
            names(&diff.new_failures, |c| &c.key),
            ["s/breaks", "s/new-and-failing"]
        );
        assert_eq!(names(&diff.fixes, |c| &c.key), ["s/mended"]);
        assert_eq!(
            names(&diff.changed, |c| &c.key),
            ["s/erred", "s/known-fixed", "s/now-known", "s/now-skipped"]
        );
        assert_eq!(
            names(&diff.added, |o| &o.key),
            ["s/new", "s/new-and-failing"]
        );
        assert_eq!(
            names(&diff.removed, |o| &o.key),
            ["s/dropped", "s/dropped-known"]
        );
        assert_eq!(names(&diff.new_known, |f| &f.key), ["s/now-known"]);
        assert_eq!(
            names(&diff.fixed_known, |f| &f.key),
            ["s/known-fixed", "s/dropped-known"]
        );
        assert!(diff.has_new_failures());
    }

    #[test]
    fn a_change_to_or_from_flaky_is_a_changed_level_and_no_new_failure() {
        use Verdict::*;
        let old = side(&[
            ("s/starts-flaking", Passed, None),
            ("s/half-mended", Failed, None),
            ("s/settles", Flaky, None),
            ("s/breaks-for-good", Flaky, None),
            ("s/steady-flake", Flaky, None),
        ]);
        let new = side(&[
            ("s/starts-flaking", Flaky, None),
            ("s/half-mended", Flaky, None),
            ("s/settles", Passed, None),
            ("s/breaks-for-good", Failed, None),
            ("s/steady-flake", Flaky, None),
            ("s/new-flake", Flaky, None),
        ]);
        let diff = Diff::new(&old, &new);
        assert_eq!(names(&diff.new_failures, |c| &c.key), ["s/breaks-for-good"]);
        assert!(diff.fixes.is_empty());
        assert_eq!(
            names(&diff.changed, |c| &c.key),
            ["s/half-mended", "s/settles", "s/starts-flaking"]
        );
        assert_eq!(names(&diff.added, |o| &o.key), ["s/new-flake"]);
        assert!(diff
            .text()
            .contains("containerd: s/settles (flaky -> passed)"));
    }

    #[test]
    fn an_interrupted_case_is_a_changed_level_never_a_failure_a_fix_or_a_finding_gone() {
        use Verdict::*;
        let old = side(&[
            ("s/was-failing", Failed, None),
            ("s/was-passing", Passed, None),
            ("s/was-known", Known, Some("upstream#1")),
        ]);
        let new = side(&[
            ("s/was-failing", Interrupted, None),
            ("s/was-passing", Interrupted, None),
            ("s/was-known", Interrupted, None),
            ("s/new-cut-short", Interrupted, None),
        ]);
        let diff = Diff::new(&old, &new);
        assert!(diff.new_failures.is_empty() && diff.fixes.is_empty());
        assert!(diff.new_known.is_empty() && diff.fixed_known.is_empty());
        assert_eq!(
            names(&diff.changed, |c| &c.key),
            ["s/was-failing", "s/was-known", "s/was-passing"]
        );
        assert_eq!(names(&diff.added, |o| &o.key), ["s/new-cut-short"]);
        assert!(!diff.has_new_failures());
        assert!(
            diff.text()
                .contains("s/was-failing (failed -> interrupted)"),
            "{}",
            diff.text()
        );
    }

    #[test]
    fn the_same_night_twice_is_no_change_and_does_not_gate() {
        let night = side(&[
            ("s/a", Verdict::Passed, None),
            ("s/b", Verdict::Known, Some("upstream#1")),
            ("s/c", Verdict::Failed, None),
        ]);
        let diff = Diff::new(&night, &night);
        assert_eq!(diff, Diff::default());
        assert!(!diff.has_new_failures());
        assert_eq!(diff.text(), "no change\n");
    }

    #[test]
    fn a_lane_on_one_side_only_is_listed_as_a_lane_and_its_new_failures_still_gate() {
        use Verdict::*;
        let old = side(&[("s/a", Failed, None), ("s/k", Known, Some("upstream#1"))]);
        let mut new = Side::default();
        for (case, verdict) in [("s/a", Failed), ("s/b", Passed)] {
            let key = CaseKey {
                lane: "containerd-1.7".into(),
                case: case.into(),
            };
            new.cases.insert(key, seen(verdict, None));
        }
        new.lanes.insert("containerd-1.7".into(), lane_seen(2));
        let diff = Diff::new(&old, &new);
        assert_eq!(names(&diff.new_failures, |c| &c.key), ["s/a"]);
        assert!(diff.added.is_empty() && diff.removed.is_empty());
        assert!(diff.fixed_known.is_empty(), "a lane not run fixed nothing");
        assert_eq!(diff.lanes_added.len(), 1);
        assert_eq!(diff.lanes_removed.len(), 1);
        assert_eq!(
            diff.sections()[1],
            (
                "lanes added",
                vec!["containerd-1.7: 2 cases, 0 failing (containerd/results.json)".to_owned()]
            )
        );
    }

    #[test]
    fn a_report_is_at_its_path_under_the_directory_and_a_root_report_nowhere() {
        let dir = Path::new("/n/2026-12-04");
        assert_eq!(
            at(dir, Path::new("/n/2026-12-04/containerd/results.json")),
            "containerd"
        );
        assert_eq!(at(dir, Path::new("/n/2026-12-04/node-1.log")), "node-1.log");
        assert_eq!(at(dir, Path::new("/n/2026-12-04/results.json")), "");
    }

    /// A side of one report per `(path under the night, runtime, version)`, each with case
    /// `s/a` at the verdict given.
    fn night(reports: &[(&str, &str, &str, Verdict)]) -> Vec<LaneReport> {
        reports
            .iter()
            .map(|(at, runtime, version, verdict)| LaneReport {
                placed: Placed {
                    path: format!("{at}/results.json").into(),
                    at: (*at).into(),
                    id: LaneId {
                        runtime_name: Some((*runtime).into()),
                        runtime_version: Some((*version).into()),
                        ..lane_seen(0).id
                    },
                },
                cases: [("s/a".to_owned(), seen(*verdict, None))].into(),
            })
            .collect()
    }

    #[test]
    fn lanes_pair_by_what_ran_whatever_their_directories_are_named() {
        use Verdict::*;
        let old = night(&[
            ("", "containerd", "v1.7.24", Failed),
            ("x", "containerd", "v2.1.9", Passed),
        ]);
        let new = night(&[
            ("y", "containerd", "v1.7.24", Passed),
            ("", "containerd", "v2.1.9", Passed),
        ]);
        let diff = Diff::between(old.clone(), new).unwrap();
        assert_eq!(
            diff.text(),
            "fixed (1):\n  containerd v1.7.24 (endpoint, kubelet seed): s/a (failed -> passed)\n"
        );
        assert_eq!(Diff::between(old.clone(), old).unwrap(), Diff::default());
    }
}
