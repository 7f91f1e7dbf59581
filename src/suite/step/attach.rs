//! `attach`: joins a running container's own process through the runtime's streaming server,
//! as `kubectl attach` does: the Attach RPC answers a URL, the harness sends stdin (the
//! container must have been created with `stdin: true`) and reads the process's output,
//! leaving once stdout holds a given text, since an attach otherwise ends only with the
//! container.

use serde::{Deserialize, Serialize};

use super::exec::{
    check_stream_fields, converse, default_within, is_default_within, sizes, Size, StreamExpect,
};
use super::{is_default, CheckError, Kind, Scope, StepDef};
use crate::cri::v1;
use crate::streaming::remote_command::RemoteCommandInput;
use crate::world::{StepError, World};

/// `attach`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "an `attach` step: `container`, `stdin`, `tty`, `resize`, `detach_on`, `within_ms`, `expect`"
)]
pub struct Attach {
    /// Container alias (created with `stdin: true`, and `tty: true` for `tty`).
    pub container: String,
    /// Text for the process's stdin; given (even empty), Attach is asked for stdin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<String>,
    /// The container runs on a terminal (it was created with `tty: true`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub tty: bool,
    /// Terminal sizes to send, in order, before stdin (with `tty`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resize: Vec<Size>,
    /// Leave once stdout holds this text (without it, the step waits for the process to end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detach_on: Option<String>,
    /// The stream's deadline, in milliseconds.
    #[serde(default = "default_within", skip_serializing_if = "is_default_within")]
    pub within_ms: u64,
    /// Expectations, as `exec`'s (the exit code is not checked after a detach).
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: StreamExpect,
}

impl StepDef for Attach {
    const NAME: &'static str = "attach";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str =
        "Attaches to a container's process through the streaming server (Attach, then WebSocket): sends stdin, leaves once stdout holds a text or the process ends; checks as `exec` does.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<StreamExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.container(&self.container)?;
        if self.detach_on.as_deref() == Some("") {
            return Err(CheckError::empty(
                "detach_on",
                "it would leave before anything arrived",
            ));
        }
        check_stream_fields(self.tty, &self.resize, self.within_ms, &self.expect, scope)
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let id = world.aliases.container(&self.container)?.id.clone();
        let request = v1::AttachRequest {
            container_id: id,
            stdin: self.stdin.is_some(),
            tty: self.tty,
            stdout: true,
            stderr: !self.tty,
            ..Default::default()
        };
        let answer = world.runtime.attach(request).await;
        let input = RemoteCommandInput {
            stdin: self.stdin.as_ref().map(|s| s.as_bytes().to_vec()),
            resize: sizes(&self.resize),
            detach_on_stdout: self.detach_on.as_ref().map(|s| s.as_bytes().to_vec()),
            terminal: self.tty,
        };
        converse(world, answer, &input, self.within_ms, &self.expect).await
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::detaching("{container: sh, stdin: \"echo hi\\n\", detach_on: \"hi\\n\"}", None)]
    #[case::unknown_container("{container: other}", Some("unknown container alias `other`"))]
    #[case::empty_detach("{container: sh, detach_on: ''}", Some("`detach_on` is empty"))]
    #[case::resize_without_tty(
        "{container: sh, resize: [{width: 80, height: 24}]}",
        Some("needs `tty: true`")
    )]
    #[case::error_and_failure(
        "{container: sh, expect: {error: {code: NotFound}, failure: {contains: x}}}",
        Some("no stream opens")
    )]
    fn the_loader_checks_an_attach(#[case] yaml: &str, #[case] error: Option<&str>) {
        let mut scope = Scope::default();
        scope.define_container("sh").unwrap();
        let step: Attach = serde_saphyr::from_str(yaml).unwrap();
        let result = step.check(&mut scope);
        match error {
            None => assert_eq!(result, Ok(())),
            Some(part) => {
                let message = result.unwrap_err().to_string();
                assert!(message.contains(part), "{message}");
            }
        }
    }
}
