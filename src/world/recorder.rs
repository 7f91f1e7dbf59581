//! The recorder of a case: the CRI call log of the manager's client, the redactor that names
//! what the case made, and the observations that become its snapshot.

use crate::cri::CallLog;
use crate::manager::TeardownCall;
use crate::observe::{self, Answer, CriCall, Observation, Redactor};

/// What a case has observed so far.
#[derive(Debug)]
pub(crate) struct Recorder {
    /// The recording client's log.
    pub log: CallLog,
    /// Ids, UIDs and IPs to aliases.
    pub redactor: Redactor,
    observations: Vec<Observation>,
}

impl Recorder {
    /// A recorder over `log`, redacting with `redactor`.
    pub fn new(log: CallLog, redactor: Redactor) -> Self {
        Self {
            log,
            redactor,
            observations: Vec::new(),
        }
    }

    /// Records a manager call with the CRI calls made since the last one.
    pub fn observe(
        &mut self,
        call: impl Into<String>,
        outcome: Result<Answer, String>,
        teardown: Option<Vec<TeardownCall>>,
    ) {
        let cri = self.log.take().into_iter().map(CriCall::from).collect();
        let mut observation = Observation::new(call, outcome, cri);
        observation.teardown = teardown;
        self.observations.push(observation);
    }

    /// Records a manager call made several times at once (port-forward's `connections: N`):
    /// the order its CRI calls reach the runtime is the scheduler's, not the manager's, so they
    /// are recorded sorted by what they say once redacted, never by the order of arrival.
    pub fn observe_concurrent(&mut self, call: impl Into<String>, outcome: Result<Answer, String>) {
        let mut cri: Vec<CriCall> = self.log.take().into_iter().map(CriCall::from).collect();
        cri.sort_by_cached_key(|c| {
            (
                c.method.clone(),
                self.redactor.text(&c.request),
                self.redactor.text(&c.outcome),
            )
        });
        self.observations.push(Observation::new(call, outcome, cri));
    }

    /// Forgets the CRI calls made since the last observation (helper calls that are not the
    /// call under test).
    pub fn forget_calls(&self) {
        self.log.take();
    }

    /// Everything observed, in order.
    pub fn observations(&self) -> &[Observation] {
        &self.observations
    }

    /// The redacted snapshot body.
    pub fn snapshot_body(&self) -> String {
        observe::render(&self.observations, &self.redactor)
    }
}
