//! `sleep_ms: N`: waits, so creation times differ on runtimes with coarse clocks.

use serde::{Deserialize, Serialize};

use super::{CheckError, Kind, Scope, StepDef};
use crate::world::{StepError, World};

/// `sleep_ms`: milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SleepMs(pub u64);

impl StepDef for SleepMs {
    const NAME: &'static str = "sleep_ms";
    const KIND: Kind = Kind::Setup;
    const ABOUT: &'static str = "Waits N milliseconds (the case's deadline still holds).";

    fn check(&self, _scope: &mut Scope) -> Result<(), CheckError> {
        Ok(())
    }

    async fn run(&self, _world: &mut World) -> Result<(), StepError> {
        crate::timing::pause(std::time::Duration::from_millis(self.0)).await;
        Ok(())
    }
}
