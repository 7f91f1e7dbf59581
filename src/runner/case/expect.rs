//! Checking results against a suite's expectations: one field at a time, with a message that
//! names the field and shows expected against actual in suite terms.

use super::StepError;
use crate::manager::ManagerError;
use crate::suite::step::{self, ErrorExpect, ErrorKind};

pub(super) fn sorted(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut items: Vec<String> = items.collect();
    items.sort();
    items
}

pub(super) fn show(items: &[String]) -> String {
    let shown: Vec<String> = items
        .iter()
        .map(|i| {
            if i.is_empty() {
                "\"\"".to_owned()
            } else {
                i.clone()
            }
        })
        .collect();
    format!("[{}]", shown.join(", "))
}

pub(super) fn mismatch(field: &str, expected: &str, actual: &str) -> StepError {
    StepError::new(format!("{field}: expected {expected}, got {actual}"))
}

pub(super) fn expect_eq(field: &str, expected: &str, actual: &str) -> Result<(), StepError> {
    if expected == actual {
        Ok(())
    } else {
        Err(mismatch(field, expected, actual))
    }
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
pub(super) fn check_error<T>(
    expect: Option<&ErrorExpect>,
    result: Result<T, ManagerError>,
) -> Result<Option<T>, String> {
    match (expect, result) {
        (None, Ok(value)) => Ok(Some(value)),
        (None, Err(err)) => Err(format!("expected success, got error: {err}")),
        (Some(want), Ok(_)) => Err(format!(
            "error: expected {}, got success",
            describe_error(want)
        )),
        (Some(want), Err(err)) => {
            let kind = error_kind(&err);
            if let Some(wanted) = want.kind {
                if wanted != kind {
                    return Err(format!("error kind: expected {wanted}, got {kind} ({err})"));
                }
            }
            if let Some(code) = want.code {
                let actual = match &err {
                    ManagerError::Call(call) => step::GrpcCode(call.code).to_string(),
                    _ => "no gRPC code".to_owned(),
                };
                if actual != code.to_string() {
                    return Err(format!("error code: expected {code}, got {actual} ({err})"));
                }
            }
            if let Some(part) = &want.contains {
                let text = err.to_string();
                if !text.contains(part.as_str()) {
                    return Err(format!(
                        "error: expected a message containing {part:?}, got {text:?}"
                    ));
                }
            }
            Ok(None)
        }
    }
}

fn describe_error(want: &ErrorExpect) -> String {
    let mut parts = Vec::new();
    if let Some(kind) = want.kind {
        parts.push(kind.to_string());
    }
    if let Some(code) = want.code {
        parts.push(format!("code {code}"));
    }
    if let Some(part) = &want.contains {
        parts.push(format!("containing {part:?}"));
    }
    if parts.is_empty() {
        "an error".to_owned()
    } else {
        format!("an error ({})", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;
    use crate::cri::CallError;
    use crate::suite::step::GrpcCode;

    fn call_error(code: tonic::Code) -> ManagerError {
        ManagerError::Call(CallError {
            method: "Version",
            endpoint: "unix:///x".into(),
            code,
            message: "boom".into(),
        })
    }

    fn expect(
        kind: Option<ErrorKind>,
        code: Option<tonic::Code>,
        contains: Option<&str>,
    ) -> ErrorExpect {
        ErrorExpect {
            kind,
            code: code.map(GrpcCode),
            contains: contains.map(str::to_owned),
        }
    }

    #[rstest]
    #[case::success_expected_and_got(None, Ok(1), Ok(Some(1)))]
    #[case::success_expected_error_got(
        None,
        Err(call_error(tonic::Code::Unknown)),
        Err("expected success")
    )]
    #[case::error_expected_success_got(
        Some(expect(Some(ErrorKind::Call), None, None)),
        Ok(1),
        Err("error: expected an error (call), got success")
    )]
    #[case::right_kind_and_code(
        Some(expect(Some(ErrorKind::Call), Some(tonic::Code::Unknown), Some("boom"))),
        Err(call_error(tonic::Code::Unknown)),
        Ok(None)
    )]
    #[case::wrong_kind(
        Some(expect(Some(ErrorKind::VersionNotSupported), None, None)),
        Err(call_error(tonic::Code::Unknown)),
        Err("error kind: expected version_not_supported, got call")
    )]
    #[case::wrong_code(
        Some(expect(None, Some(tonic::Code::NotFound), None)),
        Err(call_error(tonic::Code::Unknown)),
        Err("error code: expected NotFound, got Unknown")
    )]
    #[case::version_not_supported(
        Some(expect(Some(ErrorKind::VersionNotSupported), None, Some("0.2.0"))),
        Err(ManagerError::VersionNotSupported { version: "0.2.0".into() }),
        Ok(None)
    )]
    #[case::message_lacks_the_text(
        Some(expect(None, None, Some("elsewhere"))),
        Err(call_error(tonic::Code::Unknown)),
        Err("expected a message containing \"elsewhere\"")
    )]
    fn manager_results_are_checked_against_the_error_expectation(
        #[case] want: Option<ErrorExpect>,
        #[case] result: Result<i32, ManagerError>,
        #[case] expected: Result<Option<i32>, &str>,
    ) {
        let actual = check_error(want.as_ref(), result);
        match (actual, expected) {
            (Ok(a), Ok(e)) => assert_eq!(a, e),
            (Err(a), Err(e)) => assert!(a.contains(e), "{a:?} lacks {e:?}"),
            (a, e) => panic!("got {a:?}, expected {e:?}"),
        }
    }
}
