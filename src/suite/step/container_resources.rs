//! `container_resources`: the CPU and memory a container's `ContainerStatus.resources` reports,
//! read as the kubelet reads them (millicores from `cpu_shares` and `cpu_quota`/`cpu_period`,
//! bytes of `memory_limit_in_bytes`) and compared with quantities. A runtime that reports no
//! resources at all leaves the case skipped as `runtime_lacks`: the field is the runtime's to
//! fill, and the kubelet then skips an in-place resize rather than failing it.

use serde::{Deserialize, Serialize};

use super::{is_default, CheckError, Kind, Scope, StepDef};
use crate::manager::lifecycle::{quantity, runtime_resources};
use crate::world::{expect_eq, StepError, World};

/// `container_resources`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `container_resources` step: `container`, `expect`"
)]
pub struct ContainerResources {
    /// Container alias.
    pub container: String,
    /// Expectations.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: ResourcesExpect,
}

/// What `container_resources` checks, each as a Kubernetes quantity (`200m`, `64Mi`); `"0"`
/// for none reported. Unstated fields are not checked.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `container_resources` expectation: `cpu_request`, `cpu_limit`, `memory_limit`"
)]
pub struct ResourcesExpect {
    /// The CPU request, from `cpu_shares`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_request: Option<String>,
    /// The CPU limit, from `cpu_quota` over `cpu_period`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_limit: Option<String>,
    /// The memory limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit: Option<String>,
}

impl ResourcesExpect {
    /// Each stated field with its value in the kubelet's units (millicores, bytes).
    fn wanted(&self) -> Result<Vec<(&'static str, i64)>, CheckError> {
        [
            ("cpu_request", &self.cpu_request, true),
            ("cpu_limit", &self.cpu_limit, true),
            ("memory_limit", &self.memory_limit, false),
        ]
        .into_iter()
        .filter_map(|(name, text, milli)| text.as_ref().map(|t| (name, t, milli)))
        .map(|(name, text, milli)| {
            quantity(text, milli).map(|v| (name, v)).ok_or_else(|| {
                CheckError::malformed(format!("expect.{name}"), text, "a quantity", "")
            })
        })
        .collect()
    }
}

impl StepDef for ContainerResources {
    const NAME: &'static str = "container_resources";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str = "Reads a container's `ContainerStatus.resources` as the kubelet does and compares the CPU request and limit and the memory limit with quantities; a runtime reporting none skips the case as `runtime_lacks`.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<ResourcesExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.container(&self.container)?;
        if self.expect.wanted()?.is_empty() {
            return Err(CheckError::empty("expect", "state at least one resource"));
        }
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let id = world.aliases.container(&self.container)?.id.clone();
        let answer = world.runtime.container_status(&id).await?;
        let reported = answer.status.as_ref().and_then(|s| s.resources.as_ref());
        let Some(resources) = runtime_resources(reported) else {
            return Err(StepError::RuntimeLacks(format!(
                "ContainerStatus.resources: no CPU or memory reported for `{}`",
                self.container
            )));
        };
        let wanted = self
            .expect
            .wanted()
            .map_err(|err| StepError::Unsupported(err.to_string()))?;
        for (field, want) in wanted {
            let actual = match field {
                "cpu_request" => resources.cpu_request,
                "cpu_limit" => resources.cpu_limit,
                _ => resources.memory_limit,
            };
            expect_eq(
                format!("{} resources.{field}", self.container),
                &want.to_string(),
                &actual.unwrap_or(0).to_string(),
            )?;
        }
        Ok(())
    }
}
