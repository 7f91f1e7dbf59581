//! `remove_sandbox: ALIAS`: removes a sandbox by alias. Setup, on the unrecorded client.

use serde::{Deserialize, Serialize};

use super::{CheckError, Kind, Scope, StepDef};
use crate::world::{StepError, World};

/// `remove_sandbox`: the sandbox's alias.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RemoveSandbox(pub String);

impl StepDef for RemoveSandbox {
    const NAME: &'static str = "remove_sandbox";
    const KIND: Kind = Kind::Setup;
    const ABOUT: &'static str = "Removes a sandbox by alias.";

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.sandbox(&self.0)
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let id = world.aliases.sandbox(&self.0)?.id.clone();
        Ok(world.runtime.remove_pod_sandbox(&id).await?)
    }
}
