//! `mock_advance_clock`: moves the mock's (frozen) clock forward.

use serde::{Deserialize, Serialize};

use super::{CheckError, Kind, Scope, StepDef};
use crate::cri::control::AdvanceClockRequest;
use crate::world::{control_failed, StepError, World};

/// `mock_advance_clock`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a `mock_advance_clock` step: `ms`")]
pub struct MockAdvanceClock {
    /// How far, in milliseconds.
    pub ms: i64,
}

impl StepDef for MockAdvanceClock {
    const NAME: &'static str = "mock_advance_clock";
    const KIND: Kind = Kind::MockControl;
    const ABOUT: &'static str = "Moves the mock's clock forward by `ms` milliseconds.";

    fn check(&self, _scope: &mut Scope) -> Result<(), CheckError> {
        if self.ms < 0 {
            return Err(CheckError::rule(
                "",
                "`ms` must not be negative: the clock only moves forward",
            ));
        }
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let request = AdvanceClockRequest {
            nanos: self.ms.saturating_mul(1_000_000),
        };
        world
            .control(Self::NAME)?
            .advance_clock(request)
            .await
            .map_err(control_failed(Self::NAME))?;
        Ok(())
    }
}
