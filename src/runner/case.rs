//! One case in progress: its steps run in order on a fresh world, each step kind running
//! itself; the first failure stops the case and names the step.

pub(crate) use crate::world::Env;
pub use crate::world::{
    is_transport, namespace, pod_uid, ContainerRef, SandboxRef, StepError, World, DEFAULT_COMMAND,
};

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
}

/// A case in progress.
pub(crate) struct CaseRun<'a> {
    case: &'a Case,
    world: World,
    current: usize,
}

impl<'a> CaseRun<'a> {
    pub(crate) fn new(case: &'a Case, env: Env, run_id: &str, case_no: usize) -> Self {
        Self {
            case,
            world: World::new(env, run_id, case_no, &case.mentioned_pods, &case.pods),
            current: 0,
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

    /// Redacts text for messages.
    pub(crate) fn redact(&self, text: &str) -> String {
        self.world.redact(text)
    }

    /// Runs every step in order; stops at the first failure.
    pub(crate) async fn run(&mut self) -> Result<(), StepFailure> {
        let case = self.case;
        for (index, step) in case.steps.iter().enumerate() {
            self.current = index;
            if let Err(err) = step.run(&mut self.world).await {
                return Err(StepFailure {
                    index,
                    message: self.world.redact(&err.to_string()),
                    transport: err.is_transport(),
                    unimplemented: err.unimplemented(),
                });
            }
        }
        Ok(())
    }
}
