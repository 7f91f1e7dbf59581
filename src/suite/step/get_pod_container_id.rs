//! `get_pod_container_id`: the manager's `GetPodContainerID(pod)`, the id of the running pod's
//! latest sandbox.

use serde::{Deserialize, Serialize};

use super::{check_error, is_default, CheckError, ErrorExpect, Kind, Scope, StepDef};
use crate::observe::Answer;
use crate::world::{expect_eq, StepError, World};

/// `get_pod_container_id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `get_pod_container_id` step: `pod`, `expect`"
)]
pub struct GetPodContainerId {
    /// Pod alias; the running pod is what `get_pods(true)` reports for it.
    pub pod: String,
    /// Expectations.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: PodContainerIdExpect,
}

/// What `get_pod_container_id` checks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `get_pod_container_id` expectation: `error`, `of`"
)]
pub struct PodContainerIdExpect {
    /// The call fails like this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorExpect>,
    /// The sandbox alias whose id is returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub of: Option<String>,
}

impl StepDef for GetPodContainerId {
    const NAME: &'static str = "get_pod_container_id";
    const KIND: Kind = Kind::Manager;
    const ABOUT: &'static str = "`GetPodContainerID(pod)`: the running pod's sandbox id.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<PodContainerIdExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.error(self.expect.error.as_ref())?;
        scope.pod(&self.pod)?;
        if let Some(of) = &self.expect.of {
            scope.sandbox(of)?;
        }
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let manager = world.ensure_manager().await?;
        let running = world.running_pod(&manager, &self.pod).await?;
        let result = manager.get_pod_container_id(&running);
        world.observe(
            format!("get_pod_container_id {}", self.pod),
            &result,
            |id| Answer::ContainerId(id.clone()),
        );
        if let Some(id) = check_error(self.expect.error.as_ref(), result, |t| world.redact(t))? {
            if let Some(wanted) = &self.expect.of {
                expect_eq("of", wanted, &world.alias_of(&id.id))?;
            }
        }
        Ok(())
    }
}
