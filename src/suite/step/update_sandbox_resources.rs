//! `update_sandbox_resources`: the runtime's CRI `UpdatePodSandboxResources` for a sandbox, as
//! the kubelet v1.35+ sends it after it resized the pod-level cgroups: the pod's overhead and
//! its resources without the overhead. The kubelet takes the call as best effort, and nothing
//! in CRI reads the figures back, so the case holds the runtime to taking it. A runtime that
//! answers Unimplemented lacks it (containerd added it in 2.1): cases declare
//! `needs: [sandbox_resources]`.

use serde::{Deserialize, Serialize};

use super::{CheckError, Kind, Scope, StepDef};
use crate::cri::v1;
use crate::world::{StepError, World};

/// `update_sandbox_resources`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `update_sandbox_resources` step: `sandbox`, `cpu_shares`, `cpu_quota`, `cpu_period`, `memory_limit`"
)]
pub struct UpdateSandboxResources {
    /// The sandbox alias.
    pub sandbox: String,
    /// The pod's CPU shares.
    #[serde(default)]
    pub cpu_shares: i64,
    /// The pod's CFS quota, in microseconds per period.
    #[serde(default)]
    pub cpu_quota: i64,
    /// The CFS period, in microseconds.
    #[serde(default)]
    pub cpu_period: i64,
    /// The pod's memory limit, in bytes.
    #[serde(default)]
    pub memory_limit: i64,
}

impl StepDef for UpdateSandboxResources {
    const NAME: &'static str = "update_sandbox_resources";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str = "UpdatePodSandboxResources for a sandbox with the pod's resources and an empty overhead, as the kubelet sends it after a pod resize: the call succeeds.";

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.sandbox(&self.sandbox)
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let id = world.aliases.sandbox(&self.sandbox)?.id.clone();
        let resources = v1::LinuxContainerResources {
            cpu_shares: self.cpu_shares,
            cpu_quota: self.cpu_quota,
            cpu_period: self.cpu_period,
            memory_limit_in_bytes: self.memory_limit,
            ..Default::default()
        };
        // The kubelet sends the overhead even when the pod has none: empty resources.
        world
            .runtime
            .update_pod_sandbox_resources(
                &id,
                Some(v1::LinuxContainerResources::default()),
                Some(resources),
            )
            .await?;
        Ok(())
    }
}
