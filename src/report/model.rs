//! The one report model: a run, its cases, their verdicts (the contract's levels), snapshot
//! statuses, timings and the node's facts. The runner fills it; the console, JSON and JUnit
//! writers and the fleet merge read it, JSON both ways through the same types.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How a case ended: its verdict. Only `Failed` and `Error` fail a run (and `Warning` and
/// `Flaky` under `--strict`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaseOutcome {
    /// Every step and its expectations held, cleanup left nothing, the reference matches.
    Passed,
    /// A `must` clause was broken: why.
    Failed(String),
    /// Only `should` clauses were broken: why. The kubelet copes, so the run does not fail
    /// unless `--strict`.
    Warning(String),
    /// Why it did not run.
    Skipped(Skip),
    /// A setup step or the harness failed, so there is no verdict on the runtime: the cause.
    Error(String),
    /// It failed at the must clause a listed finding names for this runtime.
    Known {
        /// Why it failed, as it would have been reported.
        reason: String,
        /// The finding's upstream reference (an issue or the fixing commit).
        finding: String,
    },
    /// Run more than once (`--repeat`, `--rerun-failed`), it failed in some attempts and not
    /// in others: `flaky (k of n failed)`. The attempts are the case's
    /// [`CaseReport::attempts`] and [`CaseReport::failures`]. A case that passed on a rerun is
    /// no regression, so it fails the run only under `--strict`.
    Flaky(String),
    /// A signal (SIGINT, SIGTERM) cut it short: where it stood, and anything its cleanup
    /// could not undo. No verdict on the runtime; the run as a whole reports the interruption.
    Interrupted(String),
}

/// A verdict's level without its words: what reports count and colour by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// It passed.
    Passed,
    /// It failed: a `must` clause broken.
    Failed,
    /// Only `should` clauses broken.
    Warning,
    /// It did not run.
    Skipped,
    /// Its setup or the harness failed: no verdict on the runtime.
    Error,
    /// It failed as a listed finding says.
    Known,
    /// It failed in some of its attempts only.
    Flaky,
    /// A signal cut it short: no verdict.
    Interrupted,
}

impl Verdict {
    /// Its letter in the report pages' grids (and their CSS classes).
    pub fn letter(self) -> char {
        match self {
            Verdict::Passed => 'p',
            Verdict::Failed => 'f',
            Verdict::Warning => 'w',
            Verdict::Error => 'e',
            Verdict::Known => 'k',
            Verdict::Skipped => 's',
            Verdict::Flaky => 'y',
            Verdict::Interrupted => 'i',
        }
    }

    /// True when the case fails its run (failed or error).
    pub fn fails(self) -> bool {
        matches!(self, Verdict::Failed | Verdict::Error)
    }
}

impl CaseOutcome {
    /// The verdict's level.
    pub fn verdict(&self) -> Verdict {
        match self {
            CaseOutcome::Passed => Verdict::Passed,
            CaseOutcome::Failed(_) => Verdict::Failed,
            CaseOutcome::Warning(_) => Verdict::Warning,
            CaseOutcome::Skipped(_) => Verdict::Skipped,
            CaseOutcome::Error(_) => Verdict::Error,
            CaseOutcome::Known { .. } => Verdict::Known,
            CaseOutcome::Flaky(_) => Verdict::Flaky,
            CaseOutcome::Interrupted(_) => Verdict::Interrupted,
        }
    }

    /// Why it failed, warned, erred, was skipped, is known, flaky or was interrupted; nothing
    /// for a pass.
    pub fn reason(&self) -> Option<&str> {
        match self {
            CaseOutcome::Passed => None,
            CaseOutcome::Failed(reason)
            | CaseOutcome::Warning(reason)
            | CaseOutcome::Error(reason)
            | CaseOutcome::Flaky(reason)
            | CaseOutcome::Interrupted(reason)
            | CaseOutcome::Known { reason, .. } => Some(reason),
            CaseOutcome::Skipped(skip) => Some(&skip.reason),
        }
    }

    /// A skip for `why`, saying `reason`.
    pub fn skipped(why: SkipWhy, reason: impl Into<String>) -> Self {
        CaseOutcome::Skipped(Skip {
            why,
            reason: reason.into(),
        })
    }
}

/// Why a case did not run, in words and as a kind reports can group by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip {
    /// The kind of reason.
    pub why: SkipWhy,
    /// The reason, in words.
    pub reason: String,
}

/// The kinds of reasons a case does not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum SkipWhy {
    /// It needs the mock's control service and the target is a real runtime.
    MockOnly,
    /// It needs a real process and the target is the mock.
    NeedsProcess,
    /// The runtime lacks an optional feature the case declares.
    RuntimeLacks,
    /// It depends on the machine (e.g. internet access), which this run does not offer.
    Environment,
    /// The host's kernel lacks a security module the case needs (AppArmor, SELinux).
    HostLacks,
    /// The run was interrupted or aborted before it.
    NotRun,
    /// It states the rules of another kubelet than the run's `--kubelet`.
    KubeletProfile,
}

/// A verdict as JSON has it, flat in its case: `{"outcome": "skipped", "reason": "...",
/// "skip": "mock_only"}`.
#[derive(Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
enum OutcomeWire {
    Passed,
    Failed { reason: String },
    Warning { reason: String },
    Skipped { reason: String, skip: SkipWhy },
    Error { reason: String },
    Known { reason: String, finding: String },
    Flaky { reason: String },
    Interrupted { reason: String },
}

impl Serialize for CaseOutcome {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        OutcomeWire::from(self.clone()).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for CaseOutcome {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        OutcomeWire::deserialize(deserializer).map(CaseOutcome::from)
    }
}

impl From<CaseOutcome> for OutcomeWire {
    fn from(outcome: CaseOutcome) -> Self {
        match outcome {
            CaseOutcome::Passed => OutcomeWire::Passed,
            CaseOutcome::Failed(reason) => OutcomeWire::Failed { reason },
            CaseOutcome::Warning(reason) => OutcomeWire::Warning { reason },
            CaseOutcome::Error(reason) => OutcomeWire::Error { reason },
            CaseOutcome::Known { reason, finding } => OutcomeWire::Known { reason, finding },
            CaseOutcome::Flaky(reason) => OutcomeWire::Flaky { reason },
            CaseOutcome::Interrupted(reason) => OutcomeWire::Interrupted { reason },
            CaseOutcome::Skipped(Skip { why, reason }) => {
                OutcomeWire::Skipped { reason, skip: why }
            }
        }
    }
}

impl From<OutcomeWire> for CaseOutcome {
    fn from(wire: OutcomeWire) -> Self {
        match wire {
            OutcomeWire::Passed => CaseOutcome::Passed,
            OutcomeWire::Failed { reason } => CaseOutcome::Failed(reason),
            OutcomeWire::Warning { reason } => CaseOutcome::Warning(reason),
            OutcomeWire::Error { reason } => CaseOutcome::Error(reason),
            OutcomeWire::Known { reason, finding } => CaseOutcome::Known { reason, finding },
            OutcomeWire::Flaky { reason } => CaseOutcome::Flaky(reason),
            OutcomeWire::Interrupted { reason } => CaseOutcome::Interrupted(reason),
            OutcomeWire::Skipped { reason, skip } => {
                CaseOutcome::Skipped(Skip { why: skip, reason })
            }
        }
    }
}

/// The snapshot of one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapshotReport {
    /// The `.snap` file.
    pub path: PathBuf,
    /// How it compared.
    #[serde(flatten)]
    pub status: SnapshotStatus,
}

/// One case's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseReport {
    /// Suite name.
    pub suite: String,
    /// Case name.
    pub case: String,
    /// The suite file.
    #[serde(default)]
    pub source: String,
    /// The case's line in it.
    #[serde(default)]
    pub line: usize,
    /// Its number in this run (namespace `crih-<run>-<number>`).
    #[serde(default)]
    pub number: usize,
    /// How it ended.
    #[serde(flatten)]
    pub outcome: CaseOutcome,
    /// Wall time, setup to cleanup.
    #[serde(with = "seconds")]
    #[serde(default)]
    pub duration: Duration,
    /// Its snapshot, when it got that far and makes manager calls.
    #[serde(default)]
    pub snapshot: Option<SnapshotReport>,
    /// The contract clause the verdict rests on: the broken expectation's, for a failure or
    /// a warning.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(default)]
    pub clause: Option<String>,
    /// Expectations at `should` and `observed` level that did not hold, each with its clause:
    /// recorded whatever the verdict.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(default)]
    pub notes: Vec<Note>,
    /// A listed finding for this case that did not show (it passed or only warned): the
    /// runtime may have fixed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(default)]
    pub finding_fixed: Option<String>,
    /// What makes its result depend on the machine rather than the runtime, if anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(default)]
    pub environment: Option<String>,
    /// When it started and where its time went.
    #[serde(default)]
    pub timing: CaseTiming,
    /// It failed because the runtime did not answer.
    #[serde(skip)]
    pub unreachable: bool,
    /// The feature gates the case set over the run's, if any.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub feature_gates: std::collections::BTreeMap<String, bool>,
    /// How many times it ran: more than once under `--repeat` or `--rerun-failed`.
    #[serde(default = "one_attempt", skip_serializing_if = "is_one_attempt")]
    pub attempts: u32,
    /// Its attempts that failed (failed or error), in attempt order, when it ran more than
    /// once: a flaky case's, or each attempt of a case that failed in all of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<AttemptFailure>,
    /// The step its steps stopped at, if they stopped early (reports of older runs have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<StepStop>,
    /// The CRI methods its steps called, each once, sorted, as the mock received them (runs
    /// on the mock only; the RPC coverage table is made from them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rpcs: Vec<String>,
}

/// One attempt of a case run more than once that failed (its verdict fails a run).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptFailure {
    /// Its number, from 1, in the order the attempts ran.
    pub attempt: u32,
    /// Its verdict: failed or error.
    pub verdict: Verdict,
    /// Why.
    pub reason: String,
    /// The clause it broke, if one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clause: Option<String>,
    /// The step its steps stopped at, if they stopped early.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<StepStop>,
}

/// Where a case's steps stopped early, and why, as fields: what a tool reads instead of
/// parsing the verdict's words. The words are made from it once, by [`StepStop::message`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepStop {
    /// The step's number in the case, from 1.
    pub step: usize,
    /// The step's kind, as the suite names it (`exec_sync`).
    pub name: String,
    /// The step's line in the suite file.
    pub line: usize,
    /// What kind of stop it was.
    pub kind: StopKind,
    /// The error itself, redacted, without the position.
    pub error: String,
}

impl StepStop {
    /// The one way a stop is told: `SOURCE:LINE: case `CASE`, step N `NAME`: ERROR`, so a
    /// reader can jump to the line.
    pub fn message(&self, source: &str, case: &str) -> String {
        format!(
            "{source}:{}: case `{case}`, step {} `{}`: {}",
            self.line, self.step, self.name, self.error
        )
    }
}

/// What stopped a case's steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopKind {
    /// The runtime answered, and an expectation of the step did not hold.
    Expectation,
    /// A step that makes no expectation (a setup) could not be done.
    Setup,
    /// The runtime did not answer: unavailable, or out of time for the call.
    Transport,
    /// The runtime answered Unimplemented for the step's call.
    Unimplemented,
    /// A probe found nothing runtime-neutral to read on this runtime.
    RuntimeLacks,
    /// The case ran out of its time (`--case-timeout`).
    Timeout,
    /// A signal cut the case short.
    Interrupted,
}

fn one_attempt() -> u32 {
    1
}

fn is_one_attempt(attempts: &u32) -> bool {
    *attempts == 1
}

/// When a case started, from the run's start, and how much of its time went to CRI calls and
/// to waiting on purpose (polls, retries, sleeps); the rest is the harness's own work and
/// time the runtime spent outside a call (e.g. a process's start seen by a poll).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaseTiming {
    /// From the run's start to the case's.
    #[serde(with = "seconds")]
    pub started: Duration,
    /// Summed time inside the case's CRI calls.
    #[serde(with = "seconds")]
    pub cri: Duration,
    /// How many CRI calls it made.
    pub calls: u32,
    /// Summed time it waited on purpose.
    #[serde(with = "seconds")]
    pub waiting: Duration,
    /// Time its cleanup took: waiting for calls in flight, sweeping until two listings agree,
    /// removing its host directory.
    #[serde(with = "seconds", default)]
    pub cleanup: Duration,
}

impl CaseReport {
    /// `suite/case`.
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.suite, self.case)
    }
}

/// Durations as seconds (a float) in JSON, both ways.
mod seconds {
    use std::time::Duration;

    use serde::{Deserialize as _, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(duration.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        let seconds = f64::deserialize(deserializer)?;
        Duration::try_from_secs_f64(seconds).map_err(serde::de::Error::custom)
    }
}

/// The result of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// The run id on every object it made.
    pub run_id: String,
    /// `mock` or the runtime endpoint.
    #[serde(default)]
    pub target: String,
    /// `mock` or the runtime's name as a file name (references do not depend on it).
    #[serde(default)]
    pub target_kind: String,
    /// The RuntimeClass handler the sandboxes asked for; empty for the runtime's default.
    #[serde(default)]
    pub runtime_handler: String,
    /// The mock's profile, for a run on the mock: empty for the default one (containerd's
    /// answers), which is all a report of a harness without profiles ran.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mock_profile: String,
    /// The kubelet profile the managers followed (`--kubelet`: `seed`, `current`); none in
    /// reports of harnesses that did not record it. A name, not the enum, so a report of a
    /// later harness with another profile still reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubelet: Option<String>,
    /// Every selected case, in suite and file order.
    pub cases: Vec<CaseReport>,
    /// Suite files that could not be used, and problems of the run as a whole.
    #[serde(default)]
    pub errors: Vec<String>,
    /// Why the run stopped early, if it did.
    #[serde(default)]
    pub aborted: Option<String>,
    /// It was interrupted by a signal.
    #[serde(default)]
    pub interrupted: bool,
    /// Wall time.
    #[serde(with = "seconds")]
    #[serde(default)]
    pub duration: Duration,
    /// When it started, as an RFC 3339 UTC time (`2026-01-31T02:00:00Z`): what orders nights
    /// in a history. None in reports written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// The node it ran on and the runtime's Version answer, so merged fleet reports can group.
    #[serde(default)]
    pub node: super::node::Node,
    /// Warnings fail the run too (`--strict`).
    #[serde(default)]
    pub strict: bool,
    /// The findings file the run applied (`--known`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(default)]
    pub known_findings: Option<String>,
    /// Every kubelet feature gate the managers followed, with its value, so the run can be
    /// repeated (a case may override some: see [`CaseReport::feature_gates`]).
    #[serde(default)]
    pub feature_gates: std::collections::BTreeMap<String, bool>,
}

/// An expectation below `must` that did not hold: recorded, and a warning for `should`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Note {
    /// The clause.
    pub clause: String,
    /// Its level.
    pub level: crate::contract::Level,
    /// Where and what, in suite terms.
    pub message: String,
}

impl RunReport {
    fn count(&self, pick: fn(&CaseOutcome) -> bool) -> usize {
        self.cases.iter().filter(|c| pick(&c.outcome)).count()
    }

    /// Cases that passed.
    pub fn passed(&self) -> usize {
        self.count(|o| matches!(o, CaseOutcome::Passed))
    }

    /// Cases that failed.
    pub fn failed(&self) -> usize {
        self.count(|o| matches!(o, CaseOutcome::Failed(_)))
    }

    /// Cases that were skipped.
    pub fn skipped(&self) -> usize {
        self.count(|o| matches!(o, CaseOutcome::Skipped(_)))
    }

    /// Cases that broke only `should` clauses.
    pub fn warnings(&self) -> usize {
        self.count(|o| matches!(o, CaseOutcome::Warning(_)))
    }

    /// Cases whose setup or the harness failed.
    pub fn errored(&self) -> usize {
        self.count(|o| matches!(o, CaseOutcome::Error(_)))
    }

    /// Cases that failed as a listed finding says.
    pub fn known(&self) -> usize {
        self.count(|o| matches!(o, CaseOutcome::Known { .. }))
    }

    /// Cases that failed in some of their attempts only.
    pub fn flaky(&self) -> usize {
        self.count(|o| matches!(o, CaseOutcome::Flaky(_)))
    }

    /// Cases a signal cut short.
    pub fn interrupted_cases(&self) -> usize {
        self.count(|o| matches!(o, CaseOutcome::Interrupted(_)))
    }

    /// No failure or error (nor warning or flaky case under `--strict`), no bad suite file,
    /// not aborted or interrupted.
    pub fn success(&self) -> bool {
        self.failed() == 0
            && self.errored() == 0
            && (!self.strict || self.warnings() + self.flaky() == 0)
            && self.errors.is_empty()
            && self.aborted.is_none()
            && !self.interrupted
    }
}

/// How this run's result compares with the case's reference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum SnapshotStatus {
    /// Same body.
    Unchanged,
    /// There was none; `--update-snapshots` wrote it.
    Written,
    /// An embedded case whose reference the binary does not hold: the case fails.
    Missing,
    /// A user suite's case with no reference file yet: this run's result is in
    /// `<name>.snap.new` beside where it would go, for review; the case is not passed.
    New {
        /// The `.snap.new` file.
        new_path: PathBuf,
    },
    /// It differed and was overwritten (`--update-snapshots`).
    Updated {
        /// Unified diff, reference to new.
        diff: String,
    },
    /// It differs: the case fails.
    Changed {
        /// Unified diff, reference to new.
        diff: String,
        /// The `.snap.new` written beside a user suite's reference file; none for an embedded
        /// reference, since a run writes nothing without `--update-snapshots`.
        #[serde(skip_serializing_if = "Option::is_none")]
        new_path: Option<PathBuf>,
    },
}

impl SnapshotStatus {
    /// The unified diff, reference to new, where the result differed.
    pub fn diff(&self) -> Option<&str> {
        match self {
            SnapshotStatus::Changed { diff, .. } | SnapshotStatus::Updated { diff } => Some(diff),
            _ => None,
        }
    }

    /// True when the case must fail because of its reference.
    pub fn fails(&self) -> bool {
        matches!(
            self,
            SnapshotStatus::Missing | SnapshotStatus::New { .. } | SnapshotStatus::Changed { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::merge::read;

    /// One case per verdict, with a snapshot status of each kind and every optional field.
    fn report() -> RunReport {
        let skip = CaseOutcome::skipped(SkipWhy::RuntimeLacks, "the runtime lacks image_id");
        let outcomes = [
            CaseOutcome::Passed,
            CaseOutcome::Failed("a must clause broke".into()),
            CaseOutcome::Warning("a should clause broke".into()),
            skip,
            CaseOutcome::Error("the setup failed".into()),
            CaseOutcome::Known {
                reason: "NotFound".into(),
                finding: "containerd/containerd#10520".into(),
            },
            CaseOutcome::Flaky("flaky (1 of 3 failed)".into()),
            CaseOutcome::Interrupted("step 2 `start`: interrupted".into()),
        ];
        let statuses = [
            SnapshotStatus::Unchanged,
            SnapshotStatus::Changed {
                diff: "-a\n+b\n".into(),
                new_path: Some("x.snap.new".into()),
            },
            SnapshotStatus::Updated {
                diff: "-c\n+d\n".into(),
            },
            SnapshotStatus::Written,
            SnapshotStatus::Missing,
            SnapshotStatus::New {
                new_path: "y.snap.new".into(),
            },
            SnapshotStatus::Unchanged,
        ];
        let cases = outcomes
            .into_iter()
            .zip(statuses)
            .enumerate()
            .map(|(i, (outcome, status))| CaseReport {
                suite: "s".into(),
                case: format!("c{i}"),
                source: "suites/s.yaml".into(),
                line: 10 + i,
                number: i + 1,
                outcome,
                duration: Duration::from_millis(250 * i as u64),
                snapshot: Some(SnapshotReport {
                    path: format!("snapshots/s__c{i}.snap").into(),
                    status,
                }),
                clause: Some("cri.stop.idempotent".into()),
                notes: vec![Note {
                    clause: "kubelet.fixtures".into(),
                    level: crate::contract::Level::Should,
                    message: "a label was added".into(),
                }],
                finding_fixed: (i == 0).then(|| "containerd/containerd#10521".into()),
                environment: (i == 1).then(|| "needs the internet".into()),
                timing: CaseTiming {
                    started: Duration::from_millis(125),
                    cri: Duration::from_millis(500),
                    calls: 7,
                    waiting: Duration::from_millis(1500),
                    cleanup: Duration::from_millis(750),
                },
                unreachable: false,
                feature_gates: [("LegacySidecarContainers".to_owned(), true)].into(),
                attempts: if i == 6 { 3 } else { 1 },
                failures: if i == 6 {
                    vec![AttemptFailure {
                        attempt: 2,
                        verdict: Verdict::Error,
                        reason: "setup failed: Unavailable".into(),
                        clause: Some("cri.run.sandbox".into()),
                        stopped: Some(StepStop {
                            step: 1,
                            name: "run_sandbox".into(),
                            line: 12,
                            kind: StopKind::Transport,
                            error: "Unavailable".into(),
                        }),
                    }]
                } else {
                    Vec::new()
                },
                stopped: (i == 1).then(|| StepStop {
                    step: 2,
                    name: "stop_container".into(),
                    line: 14,
                    kind: StopKind::Expectation,
                    error: "a must clause broke".into(),
                }),
                rpcs: Vec::new(),
            })
            .collect();
        RunReport {
            run_id: "r1".into(),
            target: "unix:///run/containerd/containerd.sock".into(),
            target_kind: "containerd".into(),
            runtime_handler: "runc".into(),
            mock_profile: "other-runtime".into(),
            kubelet: Some("current".into()),
            cases,
            errors: vec!["suites/bad.yaml: not YAML".into()],
            aborted: Some("the runtime stopped answering".into()),
            interrupted: true,
            duration: Duration::from_millis(4500),
            started_at: Some("2026-01-31T02:00:00Z".into()),
            node: crate::report::node::Node {
                name: "n1".into(),
                kernel: "6.1.0".into(),
                os_image: Some("Debian GNU/Linux 12 (bookworm)".into()),
                runtime_name: Some("containerd".into()),
                runtime_version: Some("v1.6.20".into()),
            },
            strict: true,
            known_findings: Some("findings/containerd-1.6.yaml".into()),
            feature_gates: [("InPlacePodVerticalScaling".to_owned(), false)].into(),
        }
    }

    #[test]
    fn a_stop_is_told_with_the_place_a_reader_jumps_to() {
        let stop = StepStop {
            step: 7,
            name: "exec_sync".into(),
            line: 267,
            kind: StopKind::Expectation,
            error: "exit_code: expected 0, got 137".into(),
        };
        assert_eq!(
            stop.message("suites/lifecycle-sync.yaml", "exit-3"),
            "suites/lifecycle-sync.yaml:267: case `exit-3`, step 7 `exec_sync`: exit_code: expected 0, got 137"
        );
        let json = serde_json::to_value(&stop).unwrap();
        assert_eq!(json["kind"], "expectation");
        assert_eq!(json["step"], 7);
    }

    #[test]
    fn the_merge_reads_back_exactly_what_the_runner_writes() {
        let report = report();
        let line = crate::report::line(&report).unwrap();
        assert_eq!(read::parse(&line).unwrap(), report);
    }

    #[test]
    fn a_report_of_an_older_harness_still_reads_with_defaults() {
        let old = r#"{"run_id":"r0","node":{"name":"n0","kernel":"5.10"},"cases":[
            {"suite":"s","case":"c","outcome":"skipped","reason":"mock only","skip":"mock_only"}]}"#;
        let report = read::parse(old).unwrap();
        assert_eq!(
            report.cases[0].outcome,
            CaseOutcome::skipped(SkipWhy::MockOnly, "mock only")
        );
        assert_eq!(report.cases[0].timing, CaseTiming::default());
        assert_eq!(report.cases[0].attempts, 1);
        assert!(report.cases[0].failures.is_empty());
        assert_eq!(report.cases[0].stopped, None);
        assert!(!report.interrupted);
        assert_eq!(report.kubelet, None);
        assert_eq!(report.mock_profile, "");
    }

    #[test]
    fn a_flaky_case_is_flat_json_with_its_attempts_and_failures() {
        let mut report = report();
        report.cases.truncate(7);
        let json = serde_json::to_value(&report).unwrap();
        let flaky = &json["cases"][6];
        assert_eq!(flaky["outcome"], "flaky");
        assert_eq!(flaky["reason"], "flaky (1 of 3 failed)");
        assert_eq!(flaky["attempts"], 3);
        assert_eq!(
            flaky["failures"],
            serde_json::json!([{"attempt": 2, "verdict": "error",
                "reason": "setup failed: Unavailable", "clause": "cri.run.sandbox",
                "stopped": {"step": 1, "name": "run_sandbox", "line": 12, "kind": "transport",
                    "error": "Unavailable"}}])
        );
        // A case run once says nothing of attempts.
        assert!(json["cases"][0].get("attempts").is_none());
        assert!(json["cases"][0].get("failures").is_none());
    }

    #[test]
    fn a_flaky_case_fails_the_run_only_under_strict() {
        let mut report = report();
        report.cases.retain(|c| {
            c.outcome.verdict() != Verdict::Failed
                && c.outcome.verdict() != Verdict::Error
                && c.outcome.verdict() != Verdict::Warning
        });
        report.errors.clear();
        report.aborted = None;
        report.interrupted = false;
        report.strict = false;
        assert_eq!(report.flaky(), 1);
        assert!(!Verdict::Flaky.fails());
        assert!(report.success());
        report.strict = true;
        assert!(!report.success());
    }
}
