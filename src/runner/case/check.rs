//! Checking results against a suite's expectations, one field at a time, and the typed errors
//! of a step: a mismatch names the field and shows expected against actual in suite terms; the
//! message is only made when the failure is reported.

use crate::cri::CallError;
use crate::manager::ManagerError;
use crate::suite::step::{ErrorExpect, ErrorKind, GrpcCode};

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
}

impl StepError {
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

/// The kind of a manager error, as suites name it.
fn error_kind(err: &ManagerError) -> ErrorKind {
    match err {
        ManagerError::VersionNotSupported { .. } => ErrorKind::VersionNotSupported,
        ManagerError::Call(_) => ErrorKind::Call,
        _ => ErrorKind::Other,
    }
}

/// Checks a manager result against an optional error expectation: with one, the call must
/// have failed like that (`Ok(None)`); without, it must have succeeded (`Ok(Some(value))`).
/// `redact` turns the error text into suite terms for messages and text matches.
pub fn check_error<T>(
    expect: Option<&ErrorExpect>,
    result: Result<T, ManagerError>,
    redact: impl Fn(&str) -> String,
) -> Result<Option<T>, StepError> {
    match (expect, result) {
        (None, Ok(value)) => Ok(Some(value)),
        (None, Err(err)) => Err(mismatch("error", "success", redact(&err.to_string()))),
        (Some(want), Ok(_)) => Err(mismatch("error", want.to_string(), "success")),
        (Some(want), Err(err)) => {
            let text = redact(&err.to_string());
            let kind = error_kind(&err);
            if let Some(wanted) = want.kind {
                if wanted != kind {
                    return Err(mismatch(
                        "error.kind",
                        wanted.to_string(),
                        format!("{kind} ({text})"),
                    ));
                }
            }
            if let Some(code) = want.code {
                let actual = match &err {
                    ManagerError::Call(call) => GrpcCode(call.code).to_string(),
                    _ => "no gRPC code".to_owned(),
                };
                if actual != code.to_string() {
                    return Err(mismatch(
                        "error.code",
                        code.to_string(),
                        format!("{actual} ({text})"),
                    ));
                }
            }
            want.text().check("error", &text)?;
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;
    use crate::suite::step::TextExpect;

    fn call_error(code: tonic::Code) -> ManagerError {
        ManagerError::Call(CallError {
            method: "Version",
            endpoint: "unix:///x".into(),
            code,
            message: "boom".into(),
        })
    }

    fn expect(kind: Option<ErrorKind>, code: Option<tonic::Code>, text: TextExpect) -> ErrorExpect {
        ErrorExpect {
            kind,
            code: code.map(GrpcCode),
            equals: text.equals,
            contains: text.contains,
            matches: text.matches,
        }
    }

    fn contains(part: &str) -> TextExpect {
        TextExpect {
            contains: Some(part.to_owned()),
            ..TextExpect::default()
        }
    }

    #[rstest]
    #[case::success_expected_and_got(None, Ok(1), Ok(Some(1)))]
    #[case::success_expected_error_got(
        None,
        Err(call_error(tonic::Code::Unknown)),
        Err("error: expected success, got CRI Version")
    )]
    #[case::error_expected_success_got(
        Some(expect(Some(ErrorKind::Call), None, TextExpect::default())),
        Ok(1),
        Err("error: expected an error (call), got success")
    )]
    #[case::right_kind_and_code(
        Some(expect(Some(ErrorKind::Call), Some(tonic::Code::Unknown), contains("boom"))),
        Err(call_error(tonic::Code::Unknown)),
        Ok(None)
    )]
    #[case::wrong_kind(
        Some(expect(Some(ErrorKind::VersionNotSupported), None, TextExpect::default())),
        Err(call_error(tonic::Code::Unknown)),
        Err("error.kind: expected version_not_supported, got call")
    )]
    #[case::wrong_code(
        Some(expect(None, Some(tonic::Code::NotFound), TextExpect::default())),
        Err(call_error(tonic::Code::Unknown)),
        Err("error.code: expected NotFound, got Unknown")
    )]
    #[case::version_not_supported(
        Some(expect(Some(ErrorKind::VersionNotSupported), None, contains("0.2.0"))),
        Err(ManagerError::VersionNotSupported { version: "0.2.0".into() }),
        Ok(None)
    )]
    #[case::message_lacks_the_text(
        Some(expect(None, None, contains("elsewhere"))),
        Err(call_error(tonic::Code::Unknown)),
        Err("error: expected a text containing \"elsewhere\"")
    )]
    #[case::exact_text(
        Some(expect(None, None, TextExpect { equals: Some("CRI Version on unix:///x: Unknown: boom".into()), ..TextExpect::default() })),
        Err(call_error(tonic::Code::Unknown)),
        Ok(None)
    )]
    fn manager_results_are_checked_against_the_error_expectation(
        #[case] want: Option<ErrorExpect>,
        #[case] result: Result<i32, ManagerError>,
        #[case] expected: Result<Option<i32>, &str>,
    ) {
        let actual = check_error(want.as_ref(), result, str::to_owned);
        match (actual, expected) {
            (Ok(a), Ok(e)) => assert_eq!(a, e),
            (Err(a), Err(e)) => assert!(a.to_string().contains(e), "{a} lacks {e:?}"),
            (a, e) => panic!("got {a:?}, expected {e:?}"),
        }
    }
}
