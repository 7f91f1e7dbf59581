//! What can end a property case: the manager breaking a property (a violation), the runtime
//! answering an operation otherwise than the model says, or the harness failing to reach the
//! runtime or the mock's control service.

use crate::cri::CallError;
use crate::manager::ManagerError;
use crate::mock::MockError;

/// Why a property case failed.
#[derive(Debug, thiserror::Error)]
pub enum PropError {
    /// The manager's answer (or the state it left) breaks a property.
    #[error("{property}: {what}: expected {expected}, got {actual}")]
    Violation {
        /// The property's name.
        property: &'static str,
        /// What was compared.
        what: String,
        /// What the model says.
        expected: String,
        /// What was observed.
        actual: String,
    },
    /// The runtime accepted an operation the model says it refuses, or the other way round.
    #[error("step {step} ({action}): the model expects {expected}, the runtime answered {actual}")]
    Disagreement {
        /// 0-based step of the scenario.
        step: usize,
        /// The operation, in scenario terms.
        action: String,
        /// The model's outcome.
        expected: String,
        /// The runtime's answer.
        actual: String,
    },
    /// A CRI call the harness makes itself (setup, reading state back, cleanup) failed.
    #[error("{what} failed")]
    Call {
        /// What the harness was doing.
        what: String,
        /// The call's error.
        #[source]
        source: CallError,
    },
    /// A manager call failed where the property needs its answer.
    #[error("{property}: manager {call} failed")]
    Manager {
        /// The property's name.
        property: &'static str,
        /// The manager method.
        call: &'static str,
        /// Its error.
        #[source]
        source: ManagerError,
    },
    /// A call of the mock's control service failed.
    #[error("mock control {method} failed")]
    Control {
        /// The control method.
        method: &'static str,
        /// The status it answered.
        #[source]
        source: tonic::Status,
    },
    /// The target needs the mock's control service and has none.
    #[error("{what} needs the mock's control service; the target is a real runtime")]
    NoControl {
        /// What needed it.
        what: &'static str,
    },
    /// A suite file of failing cases could not be rendered as YAML.
    #[error("cannot render suite {suite}")]
    Render {
        /// The suite's name.
        suite: String,
        /// The serializer's error.
        #[source]
        source: serde_saphyr::SerializeError,
    },
    /// The generator gave up on a value (a strategy rejected too many).
    #[error("cannot generate {what}: {reason}")]
    Generate {
        /// What was being generated.
        what: &'static str,
        /// proptest's reason.
        reason: String,
    },
    /// The in-memory mock could not be reached.
    #[error("cannot connect to the in-memory mock")]
    Mock {
        /// Why.
        #[source]
        source: MockError,
    },
}

impl PropError {
    /// The error with its causes, one line, for failure reports.
    pub fn chain(&self) -> String {
        crate::errors::chain(self)
    }

    /// True when the failure is the manager's or the runtime's (a finding), not the harness's.
    pub fn is_finding(&self) -> bool {
        matches!(self, Self::Violation { .. } | Self::Disagreement { .. })
    }
}

/// A violation of `property`.
pub(crate) fn violation(
    property: &'static str,
    what: impl Into<String>,
    expected: impl std::fmt::Display,
    actual: impl std::fmt::Display,
) -> PropError {
    PropError::Violation {
        property,
        what: what.into(),
        expected: expected.to_string(),
        actual: actual.to_string(),
    }
}

/// Maps a failed manager `call` of `property` to its error.
pub(crate) fn manager_failed(
    property: &'static str,
    call: &'static str,
) -> impl FnOnce(ManagerError) -> PropError {
    move |source| PropError::Manager {
        property,
        call,
        source,
    }
}
