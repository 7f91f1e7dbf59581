//! `remove_container: ALIAS`: removes a container by alias. Setup, on the unrecorded client.

use serde::{Deserialize, Serialize};

use super::{CheckError, Kind, Scope, StepDef};
use crate::world::{StepError, World};

/// `remove_container`: the container's alias.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RemoveContainer(pub String);

impl StepDef for RemoveContainer {
    const NAME: &'static str = "remove_container";
    const KIND: Kind = Kind::Setup;
    const ABOUT: &'static str = "Removes a container by alias.";

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.container(&self.0)
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let id = world.aliases.container(&self.0)?.id.clone();
        Ok(world.runtime.remove_container(&id).await?)
    }
}
