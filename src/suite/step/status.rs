//! `status`: the manager's `Status()`, the runtime's conditions.

use serde::{Deserialize, Serialize};

use super::{check_error, is_default, CheckError, ErrorExpect, Kind, Scope, StepDef};
use crate::observe::Answer;
use crate::world::{StepError, World};

/// `status`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a `status` step: `expect`")]
pub struct Status {
    /// Expectations.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: StatusExpect,
}

/// What `status` checks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a `status` expectation: `error`")]
pub struct StatusExpect {
    /// The call fails like this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorExpect>,
}

impl StepDef for Status {
    const NAME: &'static str = "status";
    const KIND: Kind = Kind::Manager;
    const ABOUT: &'static str = "`Status()`: the runtime's conditions.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<StatusExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.error(self.expect.error.as_ref())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let manager = world.ensure_manager().await?;
        let result = manager.status().await;
        world.observe("status", &result, Answer::status);
        check_error(self.expect.error.as_ref(), result, |t| world.redact(t))?;
        Ok(())
    }
}
