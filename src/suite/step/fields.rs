//! Field types that several steps share: error and text expectations, gRPC codes by name,
//! object states by the one table of names the manager's types carry, and the small helpers
//! that let a step print back only what differs from its defaults.

use std::fmt;
use std::str::FromStr;

use regex::Regex;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::cri::CallError;
use crate::manager::{ContainerState, ManagerError, SyncAction};
use crate::world::{mismatch, StepError};

/// The image symbol suites use for an ordinary long-running container.
pub const BUSYBOX: &str = "busybox";

pub(crate) fn yes() -> bool {
    true
}

pub(crate) fn is_true(value: &bool) -> bool {
    *value
}

/// A count of 1, the default of counts that say how many calls or connections.
pub(crate) fn one() -> u32 {
    1
}

pub(crate) fn is_one(n: &u32) -> bool {
    *n == 1
}

pub(crate) fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

pub(crate) fn busybox() -> String {
    BUSYBOX.to_owned()
}

pub(crate) fn is_busybox(image: &str) -> bool {
    image == BUSYBOX
}

/// How a text (an error message, a sync result's message) must read. Any combination may be
/// given; each must hold.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a text expectation")]
pub struct TextExpect {
    /// The whole text, exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<String>,
    /// A part of the text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contains: Option<String>,
    /// A regular expression the text matches (anywhere; anchor it with `^...$`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matches: Option<String>,
}

impl TextExpect {
    /// Checks `text` (in suite terms, redacted) as field `field`.
    pub fn check(&self, field: &str, text: &str) -> Result<(), StepError> {
        if let Some(whole) = &self.equals {
            if whole != text {
                return Err(mismatch(field, format!("{whole:?}"), format!("{text:?}")));
            }
        }
        if let Some(part) = &self.contains {
            if !text.contains(part.as_str()) {
                return Err(mismatch(
                    field,
                    format!("a text containing {part:?}"),
                    format!("{text:?}"),
                ));
            }
        }
        if let Some(pattern) = &self.matches {
            let re = Regex::new(pattern).map_err(|err| {
                StepError::Unsupported(format!("{field}.matches is not a valid pattern: {err}"))
            })?;
            if !re.is_match(text) {
                return Err(mismatch(
                    field,
                    format!("a text matching /{pattern}/"),
                    format!("{text:?}"),
                ));
            }
        }
        Ok(())
    }

    /// True when nothing is asked.
    pub fn is_empty(&self) -> bool {
        self.equals.is_none() && self.contains.is_none() && self.matches.is_none()
    }

    /// Why `matches` does not compile as a regular expression, if it does not.
    pub fn bad_pattern(&self) -> Option<String> {
        let pattern = self.matches.as_ref()?;
        Regex::new(pattern).err().map(|err| err.to_string())
    }
}

impl fmt::Display for TextExpect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(whole) = &self.equals {
            parts.push(format!("equal to {whole:?}"));
        }
        if let Some(part) = &self.contains {
            parts.push(format!("containing {part:?}"));
        }
        if let Some(pattern) = &self.matches {
            parts.push(format!("matching /{pattern}/"));
        }
        f.write_str(&parts.join(", "))
    }
}

/// How a manager call is expected to fail.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, expecting = "an error expectation")]
pub struct ErrorExpect {
    /// The manager error's kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ErrorKind>,
    /// For a CRI call error, its gRPC code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<GrpcCode>,
    /// The whole error text, exactly (in suite terms: ids and UIDs redacted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<String>,
    /// A part of the error text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contains: Option<String>,
    /// A regular expression the error text matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matches: Option<String>,
}

impl ErrorExpect {
    /// The expectation on the error's text.
    pub fn text(&self) -> TextExpect {
        TextExpect {
            equals: self.equals.clone(),
            contains: self.contains.clone(),
            matches: self.matches.clone(),
        }
    }
}

impl fmt::Display for ErrorExpect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(kind) = self.kind {
            parts.push(kind.to_string());
        }
        if let Some(code) = self.code {
            parts.push(format!("code {code}"));
        }
        let text = self.text();
        if !text.is_empty() {
            parts.push(text.to_string());
        }
        if parts.is_empty() {
            f.write_str("an error")
        } else {
            write!(f, "an error ({})", parts.join(", "))
        }
    }
}

/// Kinds of manager errors a suite can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::Display)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ErrorKind {
    /// The runtime's Version answer is not the API version the manager speaks.
    VersionNotSupported,
    /// A CRI call failed.
    Call,
    /// Any other manager error.
    Other,
}

/// A container's (or sandbox's) state by its suite name: `created`, `running`, `exited`,
/// `unknown` (for sandboxes, `running` is ready and `exited` not ready).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct State(pub ContainerState);

impl Serialize for State {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0.name())
    }
}

impl<'de> Deserialize<'de> for State {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        ContainerState::from_str(&name).map(State).map_err(|_| {
            de::Error::unknown_variant(&name, <ContainerState as strum::VariantNames>::VARIANTS)
        })
    }
}

/// A sync action by its suite name (`kill_container`, `teardown_network`, `kill_pod_sandbox`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Action(pub SyncAction);

impl Serialize for Action {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0.name())
    }
}

impl<'de> Deserialize<'de> for Action {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        SyncAction::from_str(&name).map(Action).map_err(|_| {
            de::Error::unknown_variant(&name, <SyncAction as strum::VariantNames>::VARIANTS)
        })
    }
}

/// Sandbox state as written in suite files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxState {
    /// `SANDBOX_READY`.
    #[default]
    Ready,
    /// `SANDBOX_NOTREADY`.
    NotReady,
}

/// A gRPC status code written by name (`NotFound`) or number (`5`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GrpcCode(pub tonic::Code);

/// Every gRPC code, by the name suites use.
pub const GRPC_CODES: [(&str, tonic::Code); 17] = [
    ("Ok", tonic::Code::Ok),
    ("Cancelled", tonic::Code::Cancelled),
    ("Unknown", tonic::Code::Unknown),
    ("InvalidArgument", tonic::Code::InvalidArgument),
    ("DeadlineExceeded", tonic::Code::DeadlineExceeded),
    ("NotFound", tonic::Code::NotFound),
    ("AlreadyExists", tonic::Code::AlreadyExists),
    ("PermissionDenied", tonic::Code::PermissionDenied),
    ("ResourceExhausted", tonic::Code::ResourceExhausted),
    ("FailedPrecondition", tonic::Code::FailedPrecondition),
    ("Aborted", tonic::Code::Aborted),
    ("OutOfRange", tonic::Code::OutOfRange),
    ("Unimplemented", tonic::Code::Unimplemented),
    ("Internal", tonic::Code::Internal),
    ("Unavailable", tonic::Code::Unavailable),
    ("DataLoss", tonic::Code::DataLoss),
    ("Unauthenticated", tonic::Code::Unauthenticated),
];

impl GrpcCode {
    /// The name suites use for this code.
    pub fn name(self) -> &'static str {
        GRPC_CODES
            .iter()
            .find(|(_, code)| *code == self.0)
            .map_or("Unknown", |(name, _)| name)
    }
}

impl fmt::Display for GrpcCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for GrpcCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for GrpcCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct CodeVisitor;

        impl Visitor<'_> for CodeVisitor {
            type Value = GrpcCode;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a gRPC status code name such as `NotFound`, or its number 0-16")
            }

            fn visit_str<E: de::Error>(self, value: &str) -> Result<GrpcCode, E> {
                GRPC_CODES
                    .iter()
                    .find(|(name, _)| *name == value)
                    .map(|(_, code)| GrpcCode(*code))
                    .ok_or_else(|| {
                        let names: Vec<String> =
                            GRPC_CODES.iter().map(|(n, _)| format!("`{n}`")).collect();
                        E::custom(format!(
                            "unknown gRPC code `{value}`, expected one of {}",
                            names.join(", ")
                        ))
                    })
            }

            fn visit_u64<E: de::Error>(self, value: u64) -> Result<GrpcCode, E> {
                match i32::try_from(value) {
                    Ok(n @ 0..=16) => Ok(GrpcCode(tonic::Code::from_i32(n))),
                    _ => Err(E::custom(format!("gRPC code {value} is not in 0-16"))),
                }
            }

            fn visit_i64<E: de::Error>(self, value: i64) -> Result<GrpcCode, E> {
                match u64::try_from(value) {
                    Ok(n) => self.visit_u64(n),
                    Err(_) => Err(E::custom(format!("gRPC code {value} is not in 0-16"))),
                }
            }
        }

        deserializer.deserialize_any(CodeVisitor)
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

/// Checks a CRI call the step made itself against an optional error expectation, like
/// [`check_error`] for manager calls: the code and the runtime's own message (redacted) must
/// be as expected. A `kind` other than `call` can never hold here.
pub fn check_call<T>(
    expect: Option<&ErrorExpect>,
    result: Result<T, CallError>,
    redact: impl Fn(&str) -> String,
) -> Result<Option<T>, StepError> {
    match (expect, result) {
        (None, Ok(value)) => Ok(Some(value)),
        (None, Err(err)) => Err(StepError::Call(err)),
        (Some(want), Ok(_)) => Err(mismatch("error", want.to_string(), "success")),
        (Some(want), Err(err)) => {
            let text = redact(&err.message);
            if let Some(kind) = want.kind.filter(|k| *k != ErrorKind::Call) {
                return Err(mismatch(
                    "error.kind",
                    kind.to_string(),
                    format!("call ({text})"),
                ));
            }
            if let Some(code) = want.code {
                if code.0 != err.code {
                    return Err(mismatch(
                        "error.code",
                        code.to_string(),
                        format!("{} ({text})", GrpcCode(err.code)),
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
    use crate::cri::CallError;

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
