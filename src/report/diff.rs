//! What changed between two nights: new failures and fixes, other changed verdict levels,
//! cases added and removed, known findings that appeared or went. Each side is a report file
//! or a directory of them (a nightly's `reports/`, one run per lane); a case is matched by its
//! lane (the report's path under the directory) and its `suite/case` name, never by the run's
//! ids.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::merge::read::{self, ReadError};
use super::model::{CaseOutcome, RunReport, Verdict};

/// A case's identity across nights: its lane and its `suite/case` name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct CaseKey {
    /// The report's path under the directory given (empty for a report given as a file).
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

/// Reads a side from several inputs, as `report merge` takes them: the union of their lanes.
pub fn read_sides(inputs: &[PathBuf]) -> Result<Side, ReadError> {
    let mut side = Side::new();
    for input in inputs {
        side.extend(read_side(input)?);
    }
    Ok(side)
}

/// Every case of one side, by key.
pub type Side = BTreeMap<CaseKey, Seen>;

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
    /// Cases that fail now (failed or error) and did not before, added cases included; a case
    /// flaky before that now fails in all its attempts is one.
    pub new_failures: Vec<Change>,
    /// Cases that failed before and pass now (or only warn).
    pub fixes: Vec<Change>,
    /// Every other change of verdict level (a pass now skipped, a failure now known, a pass
    /// or a failure now flaky, a flaky case now passing, a failure cut short by a signal now
    /// `interrupted`, ...). A flaky case failed only in some attempts, and an interrupted one
    /// has no verdict: neither is a new failure or a fix.
    pub changed: Vec<Change>,
    /// Cases only the new side has.
    pub added: Vec<Only>,
    /// Cases only the old side has.
    pub removed: Vec<Only>,
    /// Known failures the new side has that the old did not show as known.
    pub new_known: Vec<FindingChange>,
    /// Known failures of the old side that no longer show, or that the new run flags as maybe
    /// fixed.
    pub fixed_known: Vec<FindingChange>,
}

impl Diff {
    /// Compares two sides.
    pub fn new(old: &Side, new: &Side) -> Self {
        let mut diff = Diff::default();
        for (key, now) in new {
            let before = old.get(key);
            if before.is_none() {
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
        for (key, before) in old {
            if !new.contains_key(key) {
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
        [
            (
                "new failures",
                self.new_failures.iter().map(change).collect(),
            ),
            ("fixed", self.fixes.iter().map(change).collect()),
            ("changed verdict", self.changed.iter().map(change).collect()),
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

/// A side's cases from one run.
fn side_of(lane: &str, report: &RunReport, side: &mut Side) {
    for case in &report.cases {
        let finding = match &case.outcome {
            CaseOutcome::Known { finding, .. } => Some(finding.clone()),
            _ => case.finding_fixed.clone(),
        };
        side.insert(
            CaseKey {
                lane: lane.to_owned(),
                case: case.full_name(),
            },
            Seen {
                verdict: case.outcome.verdict(),
                reason: case.outcome.reason().map(str::to_owned),
                finding,
            },
        );
    }
}

/// Reads one side: a report file (its lane is empty) or a directory, every report under it a
/// lane named by its path there, or by the directory's name for the report at its root. Files
/// under a directory that hold no report (a bench's JSON) are passed over; a file named
/// directly must hold one.
pub fn read_side(input: &Path) -> Result<Side, ReadError> {
    let mut side = Side::new();
    let is_dir = std::fs::metadata(input)
        .map_err(|source| ReadError::Io {
            path: input.to_owned(),
            source,
        })?
        .is_dir();
    if !is_dir {
        side_of("", &read::read(input)?, &mut side);
        return Ok(side);
    }
    let (files, mut errors) = read::files(&[input.to_owned()]);
    if let Some(error) = errors.drain(..).next() {
        return Err(error);
    }
    for file in files {
        match read::read(&file) {
            Ok(report) => side_of(&lane(input, &file), &report, &mut side),
            Err(ReadError::NoReport { .. }) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(side)
}

/// A report's lane: its path under the directory, without a trailing `results.json`; for the
/// report at the directory's root, the directory's name, so `reports/containerd` given alone
/// and `reports` holding `containerd/results.json` name the same lane.
pub(crate) fn lane(dir: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(dir).unwrap_or(file);
    let relative = if relative.file_name().is_some_and(|n| n == "results.json") {
        relative.parent().map(PathBuf::from).unwrap_or_default()
    } else {
        relative.to_path_buf()
    };
    if relative.as_os_str().is_empty() {
        // A run's own report directory given as the side: the lane is the directory's name.
        return dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
    }
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

    fn side(cases: &[(&str, Verdict, Option<&str>)]) -> Side {
        cases
            .iter()
            .map(|(case, verdict, finding)| (key(case), seen(*verdict, *finding)))
            .collect()
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
    fn a_case_is_matched_by_lane_so_another_lanes_failure_is_new() {
        let old = side(&[("s/a", Verdict::Failed, None)]);
        let mut new = Side::new();
        new.insert(
            CaseKey {
                lane: "containerd-1.7".into(),
                case: "s/a".into(),
            },
            seen(Verdict::Failed, None),
        );
        let diff = Diff::new(&old, &new);
        assert_eq!(diff.new_failures.len(), 1);
        assert_eq!(diff.removed.len(), 1);
    }

    #[test]
    fn lanes_are_report_paths_under_the_directory() {
        let dir = Path::new("/n/reports");
        assert_eq!(
            lane(dir, Path::new("/n/reports/containerd/results.json")),
            "containerd"
        );
        assert_eq!(lane(dir, Path::new("/n/reports/node-1.log")), "node-1.log");
        let own = Path::new("/n/reports/containerd");
        assert_eq!(
            lane(own, Path::new("/n/reports/containerd/results.json")),
            "containerd"
        );
    }
}
