//! `mock_set_clock`: freezes the mock's clock at an instant.

use serde::{Deserialize, Serialize};

use super::{CheckError, Kind, Scope, StepDef};
use crate::cri::control::SetClockRequest;
use crate::world::{control_failed, StepError, World};

/// `mock_set_clock`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `mock_set_clock` step: `unix_seconds`"
)]
pub struct MockSetClock {
    /// The instant, in seconds since the Unix epoch.
    pub unix_seconds: i64,
}

impl StepDef for MockSetClock {
    const NAME: &'static str = "mock_set_clock";
    const KIND: Kind = Kind::MockControl;
    const ABOUT: &'static str = "Freezes the mock's clock at an instant (Unix seconds).";

    fn check(&self, _scope: &mut Scope) -> Result<(), CheckError> {
        if self.unix_seconds <= 0 {
            return Err(CheckError::before_epoch("unix_seconds"));
        }
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let request = SetClockRequest {
            unix_nanos: self.unix_seconds.saturating_mul(1_000_000_000),
        };
        world
            .control(Self::NAME)?
            .set_clock(request)
            .await
            .map_err(control_failed(Self::NAME))?;
        Ok(())
    }
}
