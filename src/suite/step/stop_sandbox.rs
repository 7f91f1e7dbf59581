//! `stop_sandbox: ALIAS`: stops a sandbox by alias. Setup, on the unrecorded client.

use serde::{Deserialize, Serialize};

use super::{CheckError, Kind, Scope, StepDef};
use crate::world::{StepError, World};

/// `stop_sandbox`: the sandbox's alias.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct StopSandbox(pub String);

impl StepDef for StopSandbox {
    const NAME: &'static str = "stop_sandbox";
    const KIND: Kind = Kind::Setup;
    const ABOUT: &'static str = "Stops a sandbox by alias.";

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.sandbox(&self.0)
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let id = world.aliases.sandbox(&self.0)?.id.clone();
        Ok(world.runtime.stop_pod_sandbox(&id).await?)
    }
}
