//! `mock_seed_sandbox`: a sandbox inserted into the mock exactly as given, possibly one a
//! well-behaved runtime never produces (no metadata, no network status, no namespaces).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{is_default, is_true, yes, CheckError, Kind, SandboxState, Scope, StepDef};
use crate::cri::control::SeedPodSandboxRequest;
use crate::cri::{namespace_options, v1};
use crate::world::{control_failed, seed_time, SandboxRef, StepError, World};

/// `mock_seed_sandbox`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `mock_seed_sandbox` step: `as`, `pod`, `metadata`, `attempt`, `state`, `created_at`, `ip`, `network`, `namespace_options`, `host_network`, `pod_labels`, `labels`, `annotations`"
)]
pub struct MockSeedSandbox {
    /// Sandbox alias.
    #[serde(rename = "as")]
    pub alias: String,
    /// Pod alias.
    pub pod: String,
    /// Carry metadata (default true); false seeds a sandbox the manager must skip.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub metadata: bool,
    /// Metadata attempt.
    #[serde(default, skip_serializing_if = "is_default")]
    pub attempt: u32,
    /// State (default ready).
    #[serde(default, skip_serializing_if = "is_default")]
    pub state: SandboxState,
    /// Creation time in seconds since the Unix epoch (default: now).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<i64>,
    /// Pod IP (none by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<String>,
    /// Carry a network status at all (default true; the 2016 fake had none).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub network: bool,
    /// Carry namespace options at all (default true; the 2016 fake had none).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub namespace_options: bool,
    /// Node network namespace.
    #[serde(default, skip_serializing_if = "is_default")]
    pub host_network: bool,
    /// Write the `io.kubernetes.pod.*` labels (default true).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub pod_labels: bool,
    /// Extra labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl StepDef for MockSeedSandbox {
    const NAME: &'static str = "mock_seed_sandbox";
    const KIND: Kind = Kind::MockControl;
    const ABOUT: &'static str =
        "Inserts a raw sandbox, possibly one a real runtime never produces.";

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        if self.ip.is_some() && !self.network {
            return Err(CheckError::needs(
                "ip",
                "network: true",
                "the IP is part of the network status",
            ));
        }
        scope.pod(&self.pod)?;
        scope.define_sandbox(&self.alias)
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let pod = world.ids.pod(&self.pod);
        let labels = world
            .ids
            .sandbox_labels(&self.pod, self.pod_labels, &self.labels);
        let status = v1::PodSandboxStatus {
            id: world.aliases.made_up_id(&self.alias),
            metadata: self.metadata.then_some(v1::PodSandboxMetadata {
                name: pod.name,
                uid: pod.uid,
                namespace: pod.namespace,
                attempt: self.attempt,
            }),
            state: match self.state {
                SandboxState::Ready => v1::PodSandboxState::SandboxReady,
                SandboxState::NotReady => v1::PodSandboxState::SandboxNotready,
            } as i32,
            created_at: seed_time(self.created_at),
            network: self.network.then(|| v1::PodSandboxNetworkStatus {
                ip: self.ip.clone().unwrap_or_default(),
                additional_ips: Vec::new(),
            }),
            linux: self.namespace_options.then(|| v1::LinuxPodSandboxStatus {
                namespaces: Some(v1::Namespace {
                    options: Some(namespace_options(self.host_network)),
                }),
            }),
            labels,
            annotations: self.annotations.clone(),
            ..Default::default()
        };
        let id = status.id.clone();
        world.recorder.redactor.sandbox(&id, &self.alias);
        world
            .recorder
            .redactor
            .ip(self.ip.as_deref().unwrap_or(""), &self.alias);
        world
            .control(Self::NAME)?
            .seed_pod_sandbox(SeedPodSandboxRequest {
                status: Some(status),
            })
            .await
            .map_err(control_failed(Self::NAME))?;
        world.aliases.sandboxes.push(SandboxRef {
            alias: self.alias.clone(),
            id,
            pod: self.pod.clone(),
            host_network: self.host_network,
            config: v1::PodSandboxConfig::default(),
            log_directory: None,
        });
        Ok(())
    }
}
