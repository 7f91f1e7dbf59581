//! `mock_set_version`: replaces the four fields of the mock's Version answer.

use serde::{Deserialize, Serialize};

use super::{CheckError, Kind, Scope, StepDef};
use crate::cri::control::SetVersionRequest;
use crate::cri::v1;
use crate::world::{control_failed, StepError, World};

/// `mock_set_version` (defaults: the mock's own answer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `mock_set_version` step: `version`, `runtime_name`, `runtime_version`, `runtime_api_version`"
)]
pub struct MockSetVersion {
    /// `version`, the API version echo the manager gates on.
    #[serde(default = "default_api_version")]
    pub version: String,
    /// `runtime_name`.
    #[serde(default = "default_runtime_name")]
    pub runtime_name: String,
    /// `runtime_version`.
    #[serde(default = "default_runtime_version")]
    pub runtime_version: String,
    /// `runtime_api_version`.
    #[serde(default = "default_runtime_api_version")]
    pub runtime_api_version: String,
}

fn default_api_version() -> String {
    "0.1.0".to_owned()
}
fn default_runtime_name() -> String {
    "cri-harness-mock".to_owned()
}
fn default_runtime_version() -> String {
    env!("CARGO_PKG_VERSION").to_owned()
}
fn default_runtime_api_version() -> String {
    "v1".to_owned()
}

impl StepDef for MockSetVersion {
    const NAME: &'static str = "mock_set_version";
    const KIND: Kind = Kind::MockControl;
    const ABOUT: &'static str = "Replaces the mock's Version answer.";

    fn check(&self, _scope: &mut Scope) -> Result<(), CheckError> {
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let request = SetVersionRequest {
            version: Some(v1::VersionResponse {
                version: self.version.clone(),
                runtime_name: self.runtime_name.clone(),
                runtime_version: self.runtime_version.clone(),
                runtime_api_version: self.runtime_api_version.clone(),
            }),
        };
        world
            .control(Self::NAME)?
            .set_version(request)
            .await
            .map_err(control_failed(Self::NAME))?;
        Ok(())
    }
}
