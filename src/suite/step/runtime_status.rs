//! `runtime_status`: the runtime's CRI `Status`, asked directly (not through the manager), and
//! the conditions it reports. A condition that does not hold is shown with the runtime's reason
//! and message, since those are what a vendor debugs from.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{check_call, is_default, CheckError, ErrorExpect, Kind, Scope, StepDef};
use crate::world::{mismatch, StepError, World};

/// `runtime_status`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a `runtime_status` step: `expect`")]
pub struct RuntimeStatus {
    /// Expectations.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: RuntimeStatusExpect,
}

/// What `runtime_status` checks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `runtime_status` expectation: `error`, `conditions`"
)]
pub struct RuntimeStatusExpect {
    /// The call fails like this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorExpect>,
    /// Conditions by type (`RuntimeReady`, `NetworkReady`) and whether each must hold; each
    /// named one must be reported.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub conditions: BTreeMap<String, bool>,
}

impl StepDef for RuntimeStatus {
    const NAME: &'static str = "runtime_status";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str =
        "CRI `Status`: checks which runtime conditions are reported and whether each holds.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<RuntimeStatusExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        if let Some(bad) = self.expect.conditions.keys().find(|k| k.is_empty()) {
            return Err(CheckError::rule(
                "conditions",
                format!("a condition type cannot be {bad:?}"),
            ));
        }
        scope.error(self.expect.error.as_ref())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let result = world.runtime.status(false).await;
        let Some(answer) = check_call(self.expect.error.as_ref(), result, |t| world.redact(t))?
        else {
            return Ok(());
        };
        let conditions = answer.status.map(|s| s.conditions).unwrap_or_default();
        for (kind, wanted) in &self.expect.conditions {
            let field = format!("conditions.{kind}");
            let Some(condition) = conditions.iter().find(|c| c.r#type == *kind) else {
                let reported: Vec<&str> = conditions.iter().map(|c| c.r#type.as_str()).collect();
                return Err(mismatch(
                    field,
                    wanted.to_string(),
                    format!("not reported (reported: [{}])", reported.join(", ")),
                ));
            };
            if condition.status != *wanted {
                return Err(mismatch(
                    field,
                    wanted.to_string(),
                    format!(
                        "{} (reason {:?}, message {:?})",
                        condition.status, condition.reason, condition.message
                    ),
                ));
            }
        }
        Ok(())
    }
}
