//! `mock_inject_error`: makes calls of one CRI method fail with a gRPC status.

use serde::{Deserialize, Serialize};

use super::{GrpcCode, Kind, Scope, StepDef};
use crate::cri::control::InjectErrorRequest;
use crate::world::{control_failed, StepError, World};

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// `mock_inject_error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `mock_inject_error` step: `method`, `code`, `message`, `count`, `target`, `nth`"
)]
pub struct MockInjectError {
    /// Short CRI method name, e.g. `StopContainer`.
    pub method: String,
    /// gRPC status code, by name (`NotFound`) or number.
    pub code: GrpcCode,
    /// Status message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// How many calls fail.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub count: u32,
    /// Alias of the sandbox or container whose calls fail (its id must be what the call
    /// names); every call of the method when absent. Concurrent calls cannot race for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The first call that fails is the nth matching one (1, the default: the next).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub nth: u32,
}

impl StepDef for MockInjectError {
    const NAME: &'static str = "mock_inject_error";
    const KIND: Kind = Kind::MockControl;
    const ABOUT: &'static str =
        "Makes calls of one CRI method fail: the next ones, or those naming one sandbox or container from the nth on.";

    fn check(&self, scope: &mut Scope) -> Result<(), String> {
        if self.code.0 == tonic::Code::Ok {
            return Err("`code` must be an error, not `Ok`".to_owned());
        }
        if let Some(alias) = &self.target {
            scope.either(alias)?;
        }
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let target_id = match &self.target {
            Some(alias) => world.aliases.id(alias)?,
            None => String::new(),
        };
        let request = InjectErrorRequest {
            method: self.method.clone(),
            code: self.code.0 as i32,
            message: self.message.clone(),
            count: self.count,
            target_id,
            nth: self.nth,
        };
        world
            .control(Self::NAME)?
            .inject_error(request)
            .await
            .map_err(control_failed(Self::NAME))?;
        Ok(())
    }
}
