//! `mock_hold_call`: makes the mock hold calls of one CRI method open for a while before they
//! take effect, so a case can put a create or a start in transition: the object appears, or
//! starts, only when the hold ends. With `finish_if_abandoned` the held call still takes effect
//! after its client stopped waiting (its deadline passed, the run was cut short), as a runtime
//! that does not watch its caller; without it such a call changes nothing.

use serde::{Deserialize, Serialize};

use super::{is_default, is_one, one, CheckError, Kind, Scope, StepDef};
use crate::cri::control::InjectLatencyRequest;
use crate::world::{control_failed, StepError, World};

/// `mock_hold_call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `mock_hold_call` step: `method`, `ms`, `count`, `target`, `nth`, `finish_if_abandoned`"
)]
pub struct MockHoldCall {
    /// Short CRI method name, e.g. `StartContainer`.
    pub method: String,
    /// How long each held call is held, in milliseconds.
    pub ms: u64,
    /// How many calls are held (1 by default).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub count: u32,
    /// Alias of the sandbox or container whose calls are held (the call must name its id);
    /// every call of the method when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The first call held is the nth matching one (1, the default: the next).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub nth: u32,
    /// The held call takes effect even when its client has gone by the time the hold ends.
    #[serde(default, skip_serializing_if = "is_default")]
    pub finish_if_abandoned: bool,
}

impl StepDef for MockHoldCall {
    const NAME: &'static str = "mock_hold_call";
    const KIND: Kind = Kind::MockControl;
    const ABOUT: &'static str =
        "Holds the next calls of one CRI method (or those naming one sandbox or container) open for a while before they take effect.";

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        if self.ms == 0 {
            return Err(CheckError::zero("ms"));
        }
        if self.count == 0 {
            // The mock reads a count of 0 as every call until reset; a suite says how many.
            return Err(CheckError::zero("count"));
        }
        if let Some(alias) = &self.target {
            scope.either(alias)?;
        }
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let target_id = world.aliases.target_id(self.target.as_deref())?;
        let request = InjectLatencyRequest {
            method: self.method.clone(),
            delay_ms: self.ms,
            count: self.count,
            target_id,
            nth: self.nth,
            finish_if_abandoned: self.finish_if_abandoned,
        };
        world
            .control(Self::NAME)?
            .inject_latency(request)
            .await
            .map_err(control_failed(Self::NAME))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::MockHoldCall;
    use crate::suite::step::{Scope, StepDef};

    #[rstest]
    #[case::held("{method: StartContainer, ms: 300}", None)]
    #[case::no_hold("{method: StartContainer, ms: 0}", Some("`ms` must be above 0"))]
    #[case::no_calls(
        "{method: StartContainer, ms: 5, count: 0}",
        Some("`count` must be above 0")
    )]
    #[case::unknown_target(
        "{method: StopContainer, ms: 5, target: app}",
        Some("unknown alias `app`")
    )]
    fn a_hold_is_checked_when_the_suite_loads(#[case] yaml: &str, #[case] refusal: Option<&str>) {
        let step: MockHoldCall = serde_saphyr::from_str(yaml).unwrap();
        match (step.check(&mut Scope::default()), refusal) {
            (Ok(()), None) => {}
            (Err(error), Some(wanted)) => assert!(error.to_string().contains(wanted), "{error}"),
            (got, wanted) => panic!("got {got:?}, wanted a refusal {wanted:?}"),
        }
    }
}
