//! `new_manager`: constructs the manager (done implicitly, expecting success, before the first
//! manager call), which asks the runtime for its version once.

use serde::{Deserialize, Serialize};

use super::{check_error, is_default, CheckError, ErrorExpect, Kind, Scope, StepDef};
use crate::world::{expect_eq, StepError, World};

/// The runtime-type expectation that stands for the runtime's reported `runtime_name`.
pub const REPORTED_RUNTIME_NAME: &str = "<runtime_name>";

/// `new_manager`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a `new_manager` step: `expect`")]
pub struct NewManager {
    /// Expectations on the construction.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: NewManagerExpect,
}

/// What `new_manager` checks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `new_manager` expectation: `error`, `runtime_type`"
)]
pub struct NewManagerExpect {
    /// The construction fails like this (otherwise it must succeed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorExpect>,
    /// `runtime_type()`; `<runtime_name>` for the runtime's own Version answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_type: Option<String>,
}

impl StepDef for NewManager {
    const NAME: &'static str = "new_manager";
    const KIND: Kind = Kind::Manager;
    const ABOUT: &'static str = "Constructs the manager (implicit before the first manager call).";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<NewManagerExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.error(self.expect.error.as_ref())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let result = world.construct().await;
        let Some(manager) = check_error(self.expect.error.as_ref(), result, |t| world.redact(t))?
        else {
            return Ok(());
        };
        if let Some(wanted) = &self.expect.runtime_type {
            let wanted = if wanted == REPORTED_RUNTIME_NAME {
                world.runtime.version("").await?.runtime_name
            } else {
                wanted.clone()
            };
            expect_eq("runtime_type", &wanted, manager.runtime_type())?;
        }
        Ok(())
    }
}
