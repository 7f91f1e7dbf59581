//! `call_unknown_id`: one CRI call that takes a sandbox or container id, made with a 64-hex id
//! no runtime holds (made up from the run and case). The CRI contract splits these calls: the
//! status calls and stops answer NotFound, the removes succeed, since removing what is gone is
//! how a kubelet retries safely.

use serde::{Deserialize, Serialize};

use super::{check_call, is_default, CheckError, ErrorExpect, Kind, Scope, StepDef};
use crate::cri::CallError;
use crate::world::{StepError, World};

/// A CRI call that takes one sandbox or container id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::Display)]
pub enum IdMethod {
    /// `PodSandboxStatus`.
    PodSandboxStatus,
    /// `StopPodSandbox`.
    StopPodSandbox,
    /// `RemovePodSandbox`.
    RemovePodSandbox,
    /// `ContainerStatus`.
    ContainerStatus,
    /// `StartContainer`.
    StartContainer,
    /// `StopContainer` (no grace period).
    StopContainer,
    /// `RemoveContainer`.
    RemoveContainer,
}

/// `call_unknown_id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `call_unknown_id` step: `method`, `expect`"
)]
pub struct CallUnknownId {
    /// The call.
    pub method: IdMethod,
    /// Expectations; without `error`, the call must succeed.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: CallUnknownIdExpect,
}

/// What `call_unknown_id` checks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `call_unknown_id` expectation: `error`"
)]
pub struct CallUnknownIdExpect {
    /// The call fails like this (e.g. `code: NotFound`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorExpect>,
}

impl StepDef for CallUnknownId {
    const NAME: &'static str = "call_unknown_id";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str =
        "Makes one id-taking CRI call with an id no runtime holds; checks it fails (or not) as expected.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<CallUnknownIdExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.error(self.expect.error.as_ref())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let id = world.aliases.made_up_id("unknown-id");
        world.recorder.redactor.container(&id, "unknown");
        let client = &world.runtime;
        let result: Result<(), CallError> = match self.method {
            IdMethod::PodSandboxStatus => client.pod_sandbox_status(&id).await.map(drop),
            IdMethod::StopPodSandbox => client.stop_pod_sandbox(&id).await,
            IdMethod::RemovePodSandbox => client.remove_pod_sandbox(&id).await,
            IdMethod::ContainerStatus => client.container_status(&id).await.map(drop),
            IdMethod::StartContainer => client.start_container(&id).await,
            IdMethod::StopContainer => client.stop_container(&id, 0).await,
            IdMethod::RemoveContainer => client.remove_container(&id).await,
        };
        check_call(self.expect.error.as_ref(), result, |t| world.redact(t))?;
        Ok(())
    }
}
