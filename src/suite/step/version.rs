//! `version`: the manager's `Version()`, the runtime's version as the manager parses it.

use serde::{Deserialize, Serialize};

use super::{check_error, is_default, CheckError, ErrorExpect, Kind, Scope, StepDef};
use crate::observe::Answer;
use crate::world::{expect_eq, StepError, World};

/// `version`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a `version` step: `expect`")]
pub struct Version {
    /// Expectations.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: VersionExpect,
}

/// What `version` and `api_version` check.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a version expectation: `error`, `version`"
)]
pub struct VersionExpect {
    /// The call fails like this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorExpect>,
    /// The version, as the manager prints it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

impl VersionExpect {
    /// Runs `version` or `api_version` and checks it.
    pub(super) async fn run(&self, world: &mut World, api: bool) -> Result<(), StepError> {
        let manager = world.ensure_manager().await?;
        let (name, result) = if api {
            ("api_version", manager.api_version().await)
        } else {
            ("version", manager.version().await)
        };
        world.observe(name, &result, |v| Answer::Version(v.clone()));
        if let Some(version) = check_error(self.error.as_ref(), result, |t| world.redact(t))? {
            if let Some(wanted) = &self.version {
                expect_eq("version", wanted, &version.to_string())?;
            }
        }
        Ok(())
    }
}

impl StepDef for Version {
    const NAME: &'static str = "version";
    const KIND: Kind = Kind::Manager;
    const ABOUT: &'static str = "`Version()`: the runtime's version.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<VersionExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.error(self.expect.error.as_ref())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        self.expect.run(world, false).await
    }
}
