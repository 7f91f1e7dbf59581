//! `mock_inject_error`: makes calls of one CRI method fail with a gRPC status, on every attempt
//! at the case or, for testing how a run reports flakes, on the attempts it names.

use serde::{Deserialize, Serialize};

use super::{is_one, one, CheckError, GrpcCode, Kind, Scope, StepDef};
use crate::cri::control::InjectErrorRequest;
use crate::world::{control_failed, StepError, World};

/// `mock_inject_error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `mock_inject_error` step: `method`, `code`, `message`, `count`, `target`, `nth`, `attempts`"
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
    /// The attempts at the case (`run --repeat`, `--rerun-failed`) on which the fault lands;
    /// every attempt when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<OnAttempts>,
}

/// Which attempts at a case a fault lands on: `from` (1 by default), then every `every`th
/// after it (`{every: 5}`: attempts 1, 6, 11, ...; `{from: 2, every: 1}`: all but the first).
/// The attempt's number decides, so the same attempts fail in every run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "the attempts a fault lands on: `from`, `every`"
)]
pub struct OnAttempts {
    /// The first attempt it lands on, from 1.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub from: u32,
    /// It lands again every this many attempts; 0 (the default): on `from` only.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub every: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl OnAttempts {
    /// True when the fault lands on `attempt` (from 1).
    pub fn lands_on(&self, attempt: u32) -> bool {
        match attempt.checked_sub(self.from) {
            None => false,
            Some(0) => true,
            Some(after) => self.every > 0 && after % self.every == 0,
        }
    }
}

impl StepDef for MockInjectError {
    const NAME: &'static str = "mock_inject_error";
    const KIND: Kind = Kind::MockControl;
    const ABOUT: &'static str =
        "Makes calls of one CRI method fail: the next ones, or those naming one sandbox or container from the nth on.";

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        if self.code.0 == tonic::Code::Ok {
            return Err(CheckError::rule("", "`code` must be an error, not `Ok`"));
        }
        if let Some(alias) = &self.target {
            scope.either(alias)?;
        }
        if self.attempts.is_some_and(|a| a.from == 0) {
            return Err(CheckError::zero("attempts.from"));
        }
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        if self
            .attempts
            .is_some_and(|on| !on.lands_on(world.attempt()))
        {
            return Ok(());
        }
        let target_id = world.aliases.target_id(self.target.as_deref())?;
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

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::OnAttempts;

    #[rstest]
    #[case::one_in_five(1, 5, &[1, 6, 11, 16])]
    #[case::fifth_of_five(5, 5, &[5, 10, 15, 20])]
    #[case::first_only(1, 0, &[1])]
    #[case::all_but_the_first(2, 1, &[2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20])]
    fn a_fault_lands_on_the_attempts_it_names(
        #[case] from: u32,
        #[case] every: u32,
        #[case] expected: &[u32],
    ) {
        let on = OnAttempts { from, every };
        let landed: Vec<u32> = (1..=20).filter(|&a| on.lands_on(a)).collect();
        assert_eq!(landed, expected);
    }
}
