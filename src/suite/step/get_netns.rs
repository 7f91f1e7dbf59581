//! `get_netns`: the manager's `GetNetNS(sandboxID)`, the path of a sandbox's network
//! namespace as the runtime reports it.

use serde::{Deserialize, Serialize};

use super::{check_error, is_default, CheckError, ErrorExpect, Kind, Scope, StepDef};
use crate::observe::Answer;
use crate::world::{expect_eq, StepError, World};

/// `get_netns`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `get_netns` step: `sandbox`, `expect`"
)]
pub struct GetNetns {
    /// Sandbox alias.
    pub sandbox: String,
    /// Expectations.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: NetnsExpect,
}

/// What `get_netns` checks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `get_netns` expectation: `error`, `empty`"
)]
pub struct NetnsExpect {
    /// The call fails like this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorExpect>,
    /// Whether the path is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub empty: Option<bool>,
}

impl StepDef for GetNetns {
    const NAME: &'static str = "get_netns";
    const KIND: Kind = Kind::Manager;
    const ABOUT: &'static str = "`GetNetNS(sandboxID)`: a sandbox's network namespace path.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<NetnsExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.error(self.expect.error.as_ref())?;
        scope.sandbox(&self.sandbox)
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let manager = world.ensure_manager().await?;
        let id = world.aliases.sandbox(&self.sandbox)?.id.clone();
        let result = manager.get_netns(&id).await;
        world.observe(format!("get_netns {}", self.sandbox), &result, |path| {
            Answer::Netns(path.clone())
        });
        if let Some(path) = check_error(self.expect.error.as_ref(), result, |t| world.redact(t))? {
            if let Some(empty) = self.expect.empty {
                expect_eq("empty", &empty.to_string(), &path.is_empty().to_string())?;
            }
        }
        Ok(())
    }
}
