//! `stop_container`: stops a container with a grace period, on the unrecorded client.

use serde::{Deserialize, Serialize};

use super::{is_default, Kind, Scope, StepDef};
use crate::world::{World, StepError};

/// `stop_container`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a `stop_container` step: `container`, `timeout`")]
pub struct StopContainer {
    /// Container alias.
    pub container: String,
    /// Grace period in seconds.
    #[serde(default, skip_serializing_if = "is_default")]
    pub timeout: i64,
}

impl StepDef for StopContainer {
    const NAME: &'static str = "stop_container";
    const KIND: Kind = Kind::Setup;
    const ABOUT: &'static str = "Stops a container, with a grace period in seconds.";

    fn check(&self, scope: &mut Scope) -> Result<(), String> {
        scope.container(&self.container)
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let id = world.aliases.container(&self.container)?.id.clone();
        Ok(world.runtime.stop_container(&id, self.timeout).await?)
    }
}
