//! `start_container: ALIAS`: starts a container by alias. Setup, on the unrecorded client.

use serde::{Deserialize, Serialize};

use super::{CheckError, Kind, Scope, StepDef};
use crate::world::{StepError, World};

/// `start_container`: the container's alias.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct StartContainer(pub String);

impl StepDef for StartContainer {
    const NAME: &'static str = "start_container";
    const KIND: Kind = Kind::Setup;
    const ABOUT: &'static str = "Starts a container by alias.";

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.container(&self.0)
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let id = world.aliases.container(&self.0)?.id.clone();
        Ok(world.runtime.start_container(&id).await?)
    }
}
