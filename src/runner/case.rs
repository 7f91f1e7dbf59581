//! One case in progress: its steps run in order on a fresh world, each step kind running
//! itself; the first failure stops the case and names the step.

pub(crate) use crate::world::Env;
pub use crate::world::{
    is_transport, namespace, pod_uid, ContainerRef, SandboxRef, StepError, World, DEFAULT_COMMAND,
};

use super::{Note, StopKind};
use crate::contract::{self, Level};
use crate::cri::CriClient;
use crate::suite::Case;

/// Why a case's step failed.
#[derive(Debug)]
pub(crate) struct StepFailure {
    /// 0-based step index.
    pub index: usize,
    /// What went wrong, in suite terms.
    pub message: String,
    /// The runtime did not answer (unavailable or out of time), as opposed to answering wrong.
    pub transport: bool,
    /// The CRI method the step called that the runtime answered Unimplemented, if that is
    /// why it failed.
    pub unimplemented: Option<&'static str>,
    /// The `must` clause the step's expectation broke.
    pub clause: Option<String>,
    /// The step makes no expectation: a setup that could not be made.
    pub setup: bool,
    /// What the runtime does not expose that a probe needed (the case skips).
    pub lacks: Option<String>,
}

impl StepFailure {
    /// The kind of stop this failure is, for the report.
    pub fn kind(&self) -> StopKind {
        if self.lacks.is_some() {
            StopKind::RuntimeLacks
        } else if self.unimplemented.is_some() {
            StopKind::Unimplemented
        } else if self.transport {
            StopKind::Transport
        } else if self.setup {
            StopKind::Setup
        } else {
            StopKind::Expectation
        }
    }
}

/// A case in progress.
pub(crate) struct CaseRun<'a> {
    case: &'a Case,
    world: World,
    current: usize,
    notes: Vec<Note>,
}

impl<'a> CaseRun<'a> {
    pub(crate) fn new(case: &'a Case, env: Env, run_id: &str, case_no: usize) -> Self {
        Self {
            case,
            world: World::new(env, run_id, case_no, &case.mentioned_pods, &case.pods),
            current: 0,
            notes: Vec::new(),
        }
    }

    /// The step running (or the last one run), 0-based.
    pub(crate) fn current_step(&self) -> usize {
        self.current
    }

    /// The unrecorded client, for cleanup.
    pub(crate) fn client(&self) -> &CriClient {
        self.world.client()
    }

    /// The redacted snapshot body: one entry per manager call.
    pub(crate) fn snapshot_body(&self) -> String {
        self.world.snapshot_body()
    }

    /// The cgroup parents the case's sandboxes asked for.
    pub(crate) fn cgroup_parents(&self) -> &[String] {
        self.world.cgroup_parents()
    }

    /// The shared sandboxes the case held, for the runner to give back after its sweep.
    pub(crate) fn take_held(&mut self) -> Vec<crate::world::Pooled> {
        self.world.take_held()
    }

    /// Redacts text for messages.
    pub(crate) fn redact(&self, text: &str) -> String {
        self.world.redact(text)
    }

    /// The expectations below `must` that did not hold so far.
    pub(crate) fn take_notes(&mut self) -> Vec<Note> {
        std::mem::take(&mut self.notes)
    }

    /// Runs every step in order. A broken expectation at `should` or `observed` level is
    /// noted and the case goes on; anything else stops it at that step.
    pub(crate) async fn run(&mut self) -> Result<(), StepFailure> {
        let case = self.case;
        for (index, step) in case.steps.iter().enumerate() {
            self.current = index;
            self.world
                .enter_step(case.clause_of(index).filter(|_| case.expects(index)));
            // Boxed: the future of the largest step kind would otherwise sit in every case's
            // future, on the stack of whichever thread polls it.
            let result = Box::pin(step.run(&mut self.world)).await;
            for note in self.world.take_observations() {
                self.notes.push(Note {
                    clause: note
                        .clause
                        .or_else(|| case.clause_of(index))
                        .unwrap_or("-")
                        .to_owned(),
                    level: Level::Observed,
                    message: format!("step {} `{}`: {}", index + 1, step.name(), note.what),
                });
            }
            let Err(err) = result else {
                continue;
            };
            let message = self.world.redact(&err.to_string());
            let expects = case.expects(index);
            let clause = err
                .clause()
                .or_else(|| case.clause_of(index))
                .filter(|_| expects);
            let level = clause.map_or(Level::Must, contract::level);
            // A runtime that did not answer, or lacks the call, broke no lesser clause.
            let answered = !err.is_transport()
                && err.unimplemented().is_none()
                && !matches!(err, StepError::RuntimeLacks(_));
            if let (Some(clause), Level::Should | Level::Observed, true) = (clause, level, answered)
            {
                self.notes.push(Note {
                    clause: clause.to_owned(),
                    level,
                    message: format!("step {} `{}`: {message}", index + 1, step.name()),
                });
                continue;
            }
            return Err(StepFailure {
                index,
                message,
                transport: err.is_transport(),
                unimplemented: err.unimplemented(),
                // Unanswered, no clause was judged: the failure is the runtime's silence.
                clause: clause.filter(|_| answered).map(str::to_owned),
                setup: !expects,
                lacks: match &err {
                    StepError::RuntimeLacks(what) => Some(what.clone()),
                    _ => None,
                },
            });
        }
        Ok(())
    }
}
