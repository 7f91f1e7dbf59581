//! `reopen_container_log`: rotates a running container's log as the kubelet's log manager
//! does (rename the file, then `ReopenContainerLog`) and checks what rotation relies on: the
//! runtime creates the file again at once, the container's new output lands in it (polled
//! within a bound), and the renamed file stops growing. Without `rotate`, only the call is made,
//! for the cases where it must fail.

use serde::{Deserialize, Serialize};

use super::check_log::{log_path, read_records, rotated_path};
use super::wait_container::{check_within, default_within, is_default_within, Poll};
use super::{check_call, is_default, is_true, yes, CheckError, ErrorExpect, Kind, Scope, StepDef};
use crate::world::{mismatch, StepError, World};

/// `reopen_container_log`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `reopen_container_log` step: `container`, `rotate`, `within_ms`, `expect`"
)]
pub struct ReopenContainerLog {
    /// Container alias.
    pub container: String,
    /// Rename the log first and check the runtime's new one (default true).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub rotate: bool,
    /// How long to wait for new output in the new file, in milliseconds.
    #[serde(default = "default_within", skip_serializing_if = "is_default_within")]
    pub within_ms: u64,
    /// Expectations.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: ReopenExpect,
}

/// What `reopen_container_log` checks besides the rotation.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `reopen_container_log` expectation: `error`"
)]
pub struct ReopenExpect {
    /// The call fails like this (e.g. for a container that is not running).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorExpect>,
}

fn size(path: &std::path::Path) -> Result<u64, StepError> {
    std::fs::metadata(path).map(|m| m.len()).map_err(|err| {
        StepError::Unsupported(format!("cannot read the size of {}: {err}", path.display()))
    })
}

impl StepDef for ReopenContainerLog {
    const NAME: &'static str = "reopen_container_log";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str = "Renames a container's log, calls `ReopenContainerLog`, and checks that new output goes to a new file.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<ReopenExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.container(&self.container)?;
        check_within(self.within_ms)?;
        if self.rotate && self.expect.error.is_some() {
            return Err(CheckError::rule(
                "expect.error",
                "a reopen expected to fail rotates nothing; say `rotate: false`",
            ));
        }
        scope.error(self.expect.error.as_ref())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let alias = self.container.as_str();
        let id = world.aliases.container(alias)?.id.clone();
        let paths = if self.rotate {
            let path = log_path(world, alias)?;
            let rotated = rotated_path(&path);
            std::fs::rename(&path, &rotated).map_err(|err| {
                StepError::Unsupported(format!(
                    "cannot rename the log of `{alias}` ({}) before reopening it: {err}",
                    path.display()
                ))
            })?;
            Some((path, rotated))
        } else {
            None
        };
        let result = world.runtime.reopen_container_log(&id).await;
        if check_call(self.expect.error.as_ref(), result, |t| world.redact(t))?.is_none() {
            return Ok(());
        }
        let Some((path, rotated)) = paths else {
            return Ok(());
        };
        let field = format!("reopen_container_log {alias}");
        if !path.exists() {
            return Err(mismatch(
                field,
                "a new log file at the log path once the call returns",
                "none",
            ));
        }
        // Output from now on belongs to the new file; the old one must not grow.
        let old_size = size(&rotated)?;
        let mut poll = Poll::new(self.within_ms);
        loop {
            let new_records = read_records(alias, &path)?.map_or(0, |r| r.len());
            if new_records > 0 {
                break;
            }
            if !poll.next().await {
                return Err(mismatch(
                    field,
                    format!("a line in the new log file within {} ms", self.within_ms),
                    "none",
                ));
            }
        }
        let grown = size(&rotated)?;
        if grown != old_size {
            return Err(mismatch(
                field,
                format!("the rotated file to stay at {old_size} bytes"),
                format!("{grown} bytes: output still lands in it"),
            ));
        }
        Ok(())
    }
}
