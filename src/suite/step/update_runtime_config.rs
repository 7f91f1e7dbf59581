//! `update_runtime_config`: the runtime's CRI `UpdateRuntimeConfig` with a pod CIDR, as the
//! kubelet sends the node's once it has one. The runtime must take it; what it does with it is
//! its own (containerd writes a CNI config from a template only while no network is ready,
//! CRI-O ignores it), so the case asks nothing more of the call than success.

use serde::{Deserialize, Serialize};

use super::{CheckError, Kind, Scope, StepDef};
use crate::world::{StepError, World};

/// `update_runtime_config`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `update_runtime_config` step: `pod_cidr`"
)]
pub struct UpdateRuntimeConfig {
    /// The pod CIDRs sent, comma-separated as the kubelet joins a dual-stack node's.
    pub pod_cidr: String,
}

impl StepDef for UpdateRuntimeConfig {
    const NAME: &'static str = "update_runtime_config";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str =
        "UpdateRuntimeConfig with the node's pod CIDR, as the kubelet sends it: the call succeeds.";

    fn check(&self, _scope: &mut Scope) -> Result<(), CheckError> {
        let malformed = self
            .pod_cidr
            .split(',')
            .map(str::trim)
            .find(|cidr| cidr.parse::<ipnet::IpNet>().is_err());
        match malformed {
            Some(cidr) => Err(CheckError::rule(
                "pod_cidr",
                format!("`{cidr}` is not a CIDR (`10.88.0.0/16`; several joined by `,`)"),
            )),
            None => Ok(()),
        }
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        world.runtime.update_runtime_config(&self.pod_cidr).await?;
        Ok(())
    }
}
