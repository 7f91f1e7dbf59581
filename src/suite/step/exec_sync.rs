//! `exec_sync`: runs a command in a container with ExecSync and checks what it printed on each
//! stream and how it exited; the suites' way of reading back, from inside a container, what
//! the runtime set up (a file's content, the hostname, resolv.conf, a sysctl).

use serde::{Deserialize, Serialize};

use super::{check_call, is_default, CheckError, ErrorExpect, Kind, Scope, StepDef, TextExpect};
use crate::world::{mismatch, StepError, World};

/// `exec_sync`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "an `exec_sync` step: `container`, `command`, `timeout_s`, `expect`"
)]
pub struct ExecSync {
    /// Container alias.
    pub container: String,
    /// The command and its arguments.
    pub command: Vec<String>,
    /// The timeout the runtime is asked to enforce, in seconds (0: none).
    #[serde(default, skip_serializing_if = "is_default")]
    pub timeout_s: u32,
    /// Expectations (by default: exit code 0).
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: ExecExpect,
}

/// What `exec_sync` checks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "an `exec_sync` expectation: `stdout`, `stderr`, `exit_code`, `error`, `fails`"
)]
pub struct ExecExpect {
    /// What it printed on stdout.
    #[serde(default, skip_serializing_if = "TextExpect::is_empty")]
    pub stdout: TextExpect,
    /// What it printed on stderr.
    #[serde(default, skip_serializing_if = "TextExpect::is_empty")]
    pub stderr: TextExpect,
    /// Its exit code (default 0).
    #[serde(default, skip_serializing_if = "is_default")]
    pub exit_code: i32,
    /// The ExecSync call itself fails like this (e.g. a timeout the runtime enforces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorExpect>,
    /// The command fails, in either way the kubelet's client (cri-client's `ExecSync`, which
    /// critest uses) reads as one: the call fails, or it answers a non-zero exit code.
    #[serde(default, skip_serializing_if = "is_default")]
    pub fails: bool,
}

impl StepDef for ExecSync {
    const NAME: &'static str = "exec_sync";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str =
        "Runs a command in a container (ExecSync) and checks its output and exit code.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<ExecExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.container(&self.container)?;
        if self.command.is_empty() {
            return Err(CheckError::empty("command", ""));
        }
        scope.text("expect.stdout", &self.expect.stdout)?;
        scope.text("expect.stderr", &self.expect.stderr)?;
        if self.expect.fails
            && (self.expect.error.is_some()
                || self.expect.exit_code != 0
                || !self.expect.stdout.is_empty()
                || !self.expect.stderr.is_empty())
        {
            return Err(CheckError::rule(
                "expect.fails",
                "`fails` accepts any failure: give it alone",
            ));
        }
        scope.error(self.expect.error.as_ref())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let id = world.aliases.container(&self.container)?.id.clone();
        let timeout = std::time::Duration::from_secs(u64::from(self.timeout_s));
        let result = world
            .runtime
            .exec_sync(&id, self.command.clone(), timeout)
            .await;
        if self.expect.fails {
            return match result {
                Ok(answer) if answer.exit_code == 0 => Err(mismatch(
                    "fails",
                    "an error or a non-zero exit code",
                    format!(
                        "exit code 0 (stdout {:?})",
                        String::from_utf8_lossy(&answer.stdout)
                    ),
                )),
                _ => Ok(()),
            };
        }
        // Output is compared as printed (an address in resolv.conf is the point, not noise);
        // the runner redacts the failure message.
        let Some(answer) = check_call(self.expect.error.as_ref(), result, str::to_owned)? else {
            return Ok(());
        };
        let stdout = String::from_utf8_lossy(&answer.stdout);
        let stderr = String::from_utf8_lossy(&answer.stderr);
        if answer.exit_code != self.expect.exit_code {
            return Err(mismatch(
                "exit_code",
                self.expect.exit_code.to_string(),
                format!(
                    "{} (stdout {stdout:?}, stderr {stderr:?})",
                    answer.exit_code
                ),
            ));
        }
        self.expect.stdout.check("stdout", &stdout)?;
        self.expect.stderr.check("stderr", &stderr)
    }
}
