//! `mock_inject_error`: makes calls of one CRI method fail with a gRPC status.

use serde::{Deserialize, Serialize};

use super::{Kind, Scope, StepDef, GrpcCode};
use crate::mock::control_api::InjectErrorRequest;
use crate::world::{control_failed, World, StepError};

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
    expecting = "a `mock_inject_error` step: `method`, `code`, `message`, `count`"
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
}

impl StepDef for MockInjectError {
    const NAME: &'static str = "mock_inject_error";
    const KIND: Kind = Kind::MockControl;
    const ABOUT: &'static str = "Makes the next calls of one CRI method fail.";

    fn check(&self, _scope: &mut Scope) -> Result<(), String> {
        if self.code.0 == tonic::Code::Ok {
            return Err("`code` must be an error, not `Ok`".to_owned());
        }
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let request = InjectErrorRequest {
            method: self.method.clone(),
            code: self.code.0 as i32,
            message: self.message.clone(),
            count: self.count,
        };
        world
            .control(Self::NAME)?
            .inject_error(request)
            .await
            .map_err(control_failed(Self::NAME))?;
        Ok(())
    }
}
