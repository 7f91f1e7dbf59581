//! `mock_exit_container`: makes a container's process end by itself with an exit code once the
//! mock's clock reaches an instant, so restart policies can be exercised without real processes.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{is_default, CheckError, Kind, Scope, StepDef};
use crate::cri::control::ExitContainerRequest;
use crate::world::{control_failed, StepError, World};

/// `mock_exit_container`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `mock_exit_container` step: `container`, `exit_code`, `reason`, `at`, `after`"
)]
pub struct MockExitContainer {
    /// Container alias.
    pub container: String,
    /// The exit code its status then reports.
    #[serde(default, skip_serializing_if = "is_default")]
    pub exit_code: i32,
    /// The reason its status then reports (default: `Completed` for 0, else `Error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The instant on the mock's clock, in seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<i64>,
    /// How long after the mock clock's reading when the step runs, e.g. `10s`, `1m30s`, `0s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

impl MockExitContainer {
    /// `after` as a duration.
    fn after(&self) -> Result<Option<Duration>, CheckError> {
        self.after
            .as_deref()
            .map(|text| {
                humantime::parse_duration(text).map_err(|err| {
                    CheckError::malformed("after", text, "a duration like `10s`", err.to_string())
                })
            })
            .transpose()
    }
}

impl StepDef for MockExitContainer {
    const NAME: &'static str = "mock_exit_container";
    const KIND: Kind = Kind::MockControl;
    const ABOUT: &'static str =
        "Makes a container's process exit with `exit_code` when the mock's clock reaches `at` (Unix seconds) or `after` a duration.";

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.container(&self.container)?;
        match (self.at, self.after()?) {
            (Some(_), Some(_)) | (None, None) => Err(CheckError::rule(
                "",
                "give the exit's time as exactly one of `at` and `after`",
            )),
            (Some(at), None) if at <= 0 => Err(CheckError::before_epoch("at")),
            _ => Ok(()),
        }
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let after = self
            .after()
            .map_err(|err| StepError::Unsupported(err.to_string()))?;
        let nanos = |d: Duration| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX);
        let request = ExitContainerRequest {
            container_id: world.aliases.container(&self.container)?.id.clone(),
            exit_code: self.exit_code,
            reason: self.reason.clone().unwrap_or_default(),
            at_unix_nanos: self.at.map_or(0, |s| s.saturating_mul(1_000_000_000)),
            after_nanos: after.map_or(0, nanos),
        };
        world
            .control(Self::NAME)?
            .exit_container(request)
            .await
            .map_err(control_failed(Self::NAME))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use crate::suite::parse;

    fn case_with(step: &str) -> Result<(), String> {
        let text = format!(
            "suite: s\nabout: x\ncases:\n  - name: c\n    needs: [mock_control]\n    steps:\n      - run_sandbox: {{as: sb, pod: p}}\n      - create_container: {{as: app, sandbox: sb}}\n      - mock_exit_container: {step}\n      - version: {{}}\n"
        );
        parse("s.yaml", &text)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    #[rstest]
    #[case::at_an_instant("{container: app, exit_code: 1, at: 1700000000}")]
    #[case::after_a_duration("{container: app, after: 1m30s}")]
    #[case::at_once("{container: app, exit_code: 2, reason: OOMKilled, after: 0s}")]
    fn a_timed_exit_names_a_container_and_exactly_one_time(#[case] step: &str) {
        assert_eq!(case_with(step), Ok(()));
    }

    #[rstest]
    #[case::no_time("{container: app}", "exactly one of `at` and `after`")]
    #[case::both_times(
        "{container: app, at: 5, after: 1s}",
        "exactly one of `at` and `after`"
    )]
    #[case::bad_duration("{container: app, after: soon}", "after: `soon` is not a duration")]
    #[case::before_the_epoch("{container: app, at: 0}", "`at` must be after the epoch")]
    #[case::unknown_container("{container: web, after: 1s}", "unknown container alias `web`")]
    fn a_bad_timed_exit_is_refused_saying_why(#[case] step: &str, #[case] wanted: &str) {
        let message = case_with(step).unwrap_err();
        assert!(message.contains(wanted), "{message:?} lacks {wanted:?}");
        assert!(message.contains("s.yaml:9:"), "{message:?}");
    }
}
