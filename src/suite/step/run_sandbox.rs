//! `run_sandbox`: creates and starts a pod sandbox for a pod alias, labelled for cleanup, with
//! the namespaces the kubelet asks for; the IPs it reports name `<ip:ALIAS>` from then on.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{is_default, is_true, yes, Kind, Scope, StepDef};
use crate::cri::{namespace_options, v1};
use crate::world::{World, SandboxRef, StepError};

/// `run_sandbox`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `run_sandbox` step: `as`, `pod`, `attempt`, `host_network`, `labels`, `annotations`, `pod_labels`"
)]
pub struct RunSandbox {
    /// Sandbox alias, used by later steps and in snapshots.
    #[serde(rename = "as")]
    pub alias: String,
    /// Pod alias: its UID, name and namespace come from the case's `pods:` or are made unique.
    pub pod: String,
    /// Metadata attempt.
    #[serde(default, skip_serializing_if = "is_default")]
    pub attempt: u32,
    /// Share the node's network namespace.
    #[serde(default, skip_serializing_if = "is_default")]
    pub host_network: bool,
    /// Extra labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Write the `io.kubernetes.pod.*` labels (default true).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub pod_labels: bool,
}

impl StepDef for RunSandbox {
    const NAME: &'static str = "run_sandbox";
    const KIND: Kind = Kind::Setup;
    const ABOUT: &'static str = "Creates and starts a pod sandbox for a pod alias.";

    fn check(&self, scope: &mut Scope) -> Result<(), String> {
        scope.pod(&self.pod)?;
        scope.define_sandbox(&self.alias)
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let pod = world.ids.pod(&self.pod);
        let labels = world
            .ids
            .sandbox_labels(&self.pod, self.pod_labels, &self.labels);
        let config = v1::PodSandboxConfig {
            metadata: Some(v1::PodSandboxMetadata {
                name: pod.name.clone(),
                uid: pod.uid,
                namespace: pod.namespace,
                attempt: self.attempt,
            }),
            hostname: if self.host_network {
                String::new()
            } else {
                pod.name
            },
            labels,
            annotations: self.annotations.clone(),
            linux: Some(v1::LinuxPodSandboxConfig {
                security_context: Some(v1::LinuxSandboxSecurityContext {
                    namespace_options: Some(namespace_options(self.host_network)),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let id = world.runtime.run_pod_sandbox(config.clone(), "").await?;
        world.recorder.redactor.sandbox(&id, &self.alias);
        world.aliases.sandboxes.push(SandboxRef {
            alias: self.alias.clone(),
            id: id.clone(),
            pod: self.pod.clone(),
            host_network: self.host_network,
            config,
        });
        // The IPs it reports now are how snapshots and `ip: {of: ALIAS}` name them.
        let status = world.runtime.pod_sandbox_status(&id).await?;
        if let Some(network) = status.status.and_then(|s| s.network) {
            world.recorder.redactor.ip(&network.ip, &self.alias);
            for ip in network.additional_ips {
                world.recorder.redactor.ip(&ip.ip, &self.alias);
            }
        }
        Ok(())
    }
}
