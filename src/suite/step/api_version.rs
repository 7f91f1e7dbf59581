//! `api_version`: the manager's `APIVersion()`, the CRI API version the runtime speaks.

use serde::{Deserialize, Serialize};

use super::version::VersionExpect;
use super::{is_default, CheckError, Kind, Scope, StepDef};
use crate::world::{StepError, World};

/// `api_version`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, expecting = "an `api_version` step: `expect`")]
pub struct ApiVersion {
    /// Expectations.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: VersionExpect,
}

impl StepDef for ApiVersion {
    const NAME: &'static str = "api_version";
    const KIND: Kind = Kind::Manager;
    const ABOUT: &'static str = "`APIVersion()`: the runtime's API version.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<VersionExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.error(self.expect.error.as_ref())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        self.expect.run(world, true).await
    }
}
