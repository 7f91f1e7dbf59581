//! `runtime_version`: the runtime's CRI `Version` answer, asked directly and field by field.
//! The manager's `version` step reads one field as strict semver, as the 2016 kubelet did; a
//! conformance check needs all four as the runtime sent them (containerd's API version is a
//! bare "v1", which is no semver).

use serde::{Deserialize, Serialize};

use super::{check_call, is_default, CheckError, ErrorExpect, Kind, Scope, StepDef, TextExpect};
use crate::manager::KUBE_RUNTIME_API_VERSION;
use crate::world::{StepError, World};

/// `runtime_version`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a `runtime_version` step: `expect`")]
pub struct RuntimeVersion {
    /// Expectations.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: RuntimeVersionExpect,
}

/// What `runtime_version` checks; each given field must read as its text expectation says.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `runtime_version` expectation: `error`, `version`, `runtime_name`, `runtime_version`, `runtime_api_version`"
)]
pub struct RuntimeVersionExpect {
    /// The call fails like this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorExpect>,
    /// `version`: the CRI version the runtime speaks of ("0.1.0").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<TextExpect>,
    /// `runtime_name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_name: Option<TextExpect>,
    /// `runtime_version`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_version: Option<TextExpect>,
    /// `runtime_api_version` (`v1` for CRI v1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_api_version: Option<TextExpect>,
}

impl RuntimeVersionExpect {
    fn texts(&self) -> [(&'static str, Option<&TextExpect>); 4] {
        [
            ("version", self.version.as_ref()),
            ("runtime_name", self.runtime_name.as_ref()),
            ("runtime_version", self.runtime_version.as_ref()),
            ("runtime_api_version", self.runtime_api_version.as_ref()),
        ]
    }
}

impl StepDef for RuntimeVersion {
    const NAME: &'static str = "runtime_version";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str =
        "CRI `Version` (asking for 0.1.0): checks each field of the answer as the runtime sent it.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<RuntimeVersionExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        for (field, text) in self.expect.texts() {
            if let Some(text) = text {
                scope.text(field, text)?;
            }
        }
        scope.error(self.expect.error.as_ref())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let result = world.runtime.version(KUBE_RUNTIME_API_VERSION).await;
        let Some(answer) = check_call(self.expect.error.as_ref(), result, |t| world.redact(t))?
        else {
            return Ok(());
        };
        let actual = [
            &answer.version,
            &answer.runtime_name,
            &answer.runtime_version,
            &answer.runtime_api_version,
        ];
        for ((field, text), value) in self.expect.texts().into_iter().zip(actual) {
            if let Some(text) = text {
                text.check(field, value)?;
            }
        }
        Ok(())
    }
}
