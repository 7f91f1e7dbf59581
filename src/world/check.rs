//! Checking observed values one field at a time, and the typed errors of a step: a mismatch
//! names the field and shows expected against actual in suite terms; the message is only made
//! when the failure is reported.

use crate::cri::CallError;

/// Why a step failed.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// An expectation did not hold.
    #[error("{field}: expected {expected}, got {actual}")]
    Mismatch {
        /// The field, in suite terms (`pods.web.sandboxes`).
        field: String,
        /// What the suite expects.
        expected: String,
        /// What was observed.
        actual: String,
    },
    /// A CRI call the step itself made (not the manager) failed.
    #[error(transparent)]
    Call(#[from] CallError),
    /// The mock's control service refused a step.
    #[error("mock control {step} failed: {code:?}: {message}")]
    Control {
        /// The step's name.
        step: &'static str,
        /// The status code.
        code: tonic::Code,
        /// The status message.
        message: String,
    },
    /// An alias that names nothing made so far (the loader checks aliases; seeded or failed
    /// objects can still be missing at run time).
    #[error("{0}")]
    Unknown(String),
    /// The target cannot do what the step needs.
    #[error("{0}")]
    Unsupported(String),
    /// The runtime does not tell what a probe needs to know (a key its verbose status lacks,
    /// say), and no runtime-neutral way is left: the case skips as `runtime_lacks`, naming it.
    #[error("the runtime does not expose {0}")]
    RuntimeLacks(String),
    /// An expectation broke on what the runtime answered after a call of the manager's that it
    /// had answered as done: the break is of the runtime's clause, not of the step's. (A
    /// sandbox still READY after its StopPodSandbox succeeded breaks `sandbox.stop.not-ready`,
    /// whatever the kill that called it was checking.)
    #[error("{error}")]
    Breaks {
        /// The runtime's clause.
        clause: &'static str,
        /// What did not hold.
        error: Box<StepError>,
    },
}

impl StepError {
    /// The clause the error itself names, over the step's own ([`StepError::Breaks`]).
    pub fn clause(&self) -> Option<&'static str> {
        match self {
            StepError::Breaks { clause, .. } => Some(clause),
            _ => None,
        }
    }

    /// True when the runtime did not answer (unavailable or out of time), as opposed to
    /// answering wrong.
    pub fn is_transport(&self) -> bool {
        match self {
            StepError::Call(err) => is_transport(err.code),
            StepError::Control { code, .. } => is_transport(*code),
            _ => false,
        }
    }
}

impl StepError {
    /// The CRI method the runtime answered Unimplemented, when that is the failure.
    pub fn unimplemented(&self) -> Option<&'static str> {
        match self {
            StepError::Call(err) if err.code == tonic::Code::Unimplemented => Some(err.method),
            _ => None,
        }
    }
}

impl From<tonic::Status> for StepError {
    fn from(status: tonic::Status) -> Self {
        StepError::Control {
            step: "call",
            code: status.code(),
            message: status.message().to_owned(),
        }
    }
}

/// True for the codes a runtime that stopped answering produces.
pub fn is_transport(code: tonic::Code) -> bool {
    matches!(
        code,
        tonic::Code::Unavailable | tonic::Code::DeadlineExceeded
    )
}

/// A mismatch of one field.
pub fn mismatch(
    field: impl Into<String>,
    expected: impl Into<String>,
    actual: impl Into<String>,
) -> StepError {
    StepError::Mismatch {
        field: field.into(),
        expected: expected.into(),
        actual: actual.into(),
    }
}

/// Checks one field for equality.
pub fn expect_eq(field: impl Into<String>, expected: &str, actual: &str) -> Result<(), StepError> {
    if expected == actual {
        Ok(())
    } else {
        Err(mismatch(field, expected, actual))
    }
}

/// Items sorted, for comparisons in any order.
pub fn sorted(items: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut items: Vec<String> = items.into_iter().collect();
    items.sort();
    items
}

/// A list as suites write it, `""` for the empty alias.
pub fn show(items: &[String]) -> String {
    let shown: Vec<&str> = items
        .iter()
        .map(|i| if i.is_empty() { "\"\"" } else { i.as_str() })
        .collect();
    format!("[{}]", shown.join(", "))
}
