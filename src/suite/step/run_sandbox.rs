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
    expecting = "a `run_sandbox` step: `as`, `pod`, `attempt`, `host_network`, `labels`, `annotations`, `pod_labels`, `hostname`, `dns`, `ports`, `sysctls`, `log_directory`, `cgroup_parent`"
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
    /// The hostname (default: the pod's name; none for a host-network pod).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// The DNS config the runtime writes into the pod's resolv.conf.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns: Option<Dns>,
    /// Port mappings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<Port>,
    /// Sysctls for the pod's namespaces.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sysctls: BTreeMap<String, String>,
    /// Give the sandbox a log directory (a fresh one under the case's host directory), as the
    /// kubelet does, so its containers' logs can be read back.
    #[serde(default, skip_serializing_if = "is_default")]
    pub log_directory: bool,
    /// Give the sandbox a cgroup parent of its own, as the kubelet always does (containerd
    /// needs one to answer PodSandboxStats); the runner removes it with the case.
    #[serde(default, skip_serializing_if = "is_default")]
    pub cgroup_parent: bool,
}

/// A pod's DNS config.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `dns` config: `servers`, `searches`, `options`"
)]
pub struct Dns {
    /// Name servers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<String>,
    /// Search domains.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub searches: Vec<String>,
    /// resolv.conf options.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
}

/// A port mapping.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a port mapping: `container_port`, `host_port`, `protocol`, `host_ip`"
)]
pub struct Port {
    /// The port inside the pod.
    pub container_port: u16,
    /// The port on the node (0: none).
    #[serde(default, skip_serializing_if = "is_default")]
    pub host_port: u16,
    /// `tcp` (default), `udp` or `sctp`.
    #[serde(default, skip_serializing_if = "is_default")]
    pub protocol: Protocol,
    /// The node address to bind (default: all).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub host_ip: String,
}

/// A port mapping's protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// TCP.
    #[default]
    Tcp,
    /// UDP.
    Udp,
    /// SCTP.
    Sctp,
}

impl Protocol {
    fn to_cri(self) -> v1::Protocol {
        match self {
            Protocol::Tcp => v1::Protocol::Tcp,
            Protocol::Udp => v1::Protocol::Udp,
            Protocol::Sctp => v1::Protocol::Sctp,
        }
    }
}

impl RunSandbox {
    /// A sandbox `alias` for pod `pod` with every other field at its default.
    pub fn new(alias: impl Into<String>, pod: impl Into<String>) -> Self {
        Self {
            alias: alias.into(),
            pod: pod.into(),
            attempt: 0,
            host_network: false,
            labels: BTreeMap::new(),
            annotations: BTreeMap::new(),
            pod_labels: true,
            hostname: None,
            dns: None,
            ports: Vec::new(),
            sysctls: BTreeMap::new(),
            log_directory: false,
            cgroup_parent: false,
        }
    }
}

impl StepDef for RunSandbox {
    const NAME: &'static str = "run_sandbox";
    const KIND: Kind = Kind::Setup;
    const ABOUT: &'static str = "Creates and starts a pod sandbox for a pod alias.";

    fn check(&self, scope: &mut Scope) -> Result<(), String> {
        scope.pod(&self.pod)?;
        if self.host_network && self.hostname.is_some() {
            return Err(
                "a host-network pod has the node's hostname; drop `hostname` or `host_network`"
                    .to_owned(),
            );
        }
        if let Some(port) = self.ports.iter().find(|p| p.container_port == 0) {
            return Err(format!("ports: container_port 0 (host_port {}) names no port", port.host_port));
        }
        scope.define_sandbox(&self.alias)
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let pod = world.ids.pod(&self.pod);
        let log_directory = if self.log_directory {
            let dir = world.host_path(&format!("logs/{}", self.alias))?;
            std::fs::create_dir_all(&dir).map_err(|err| {
                StepError::Unsupported(format!(
                    "cannot make the log directory {}: {err}",
                    dir.display()
                ))
            })?;
            Some(dir)
        } else {
            None
        };
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
            hostname: match (&self.hostname, self.host_network) {
                (_, true) => String::new(),
                (Some(hostname), false) => hostname.clone(),
                (None, false) => pod.name,
            },
            log_directory: log_directory
                .as_ref()
                .map(|dir| dir.display().to_string())
                .unwrap_or_default(),
            dns_config: self.dns.as_ref().map(|dns| v1::DnsConfig {
                servers: dns.servers.clone(),
                searches: dns.searches.clone(),
                options: dns.options.clone(),
            }),
            port_mappings: self
                .ports
                .iter()
                .map(|port| v1::PortMapping {
                    protocol: port.protocol.to_cri() as i32,
                    container_port: i32::from(port.container_port),
                    host_port: i32::from(port.host_port),
                    host_ip: port.host_ip.clone(),
                })
                .collect(),
            labels,
            annotations: self.annotations.clone(),
            linux: Some(v1::LinuxPodSandboxConfig {
                cgroup_parent: if self.cgroup_parent {
                    world.cgroup_parent(&self.alias)
                } else {
                    String::new()
                },
                sysctls: self.sysctls.clone(),
                security_context: Some(v1::LinuxSandboxSecurityContext {
                    namespace_options: Some(namespace_options(self.host_network)),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let handler = world.runtime_handler.clone();
        let id = world.runtime.run_pod_sandbox(config.clone(), &handler).await?;
        world.recorder.redactor.sandbox(&id, &self.alias);
        world.aliases.sandboxes.push(SandboxRef {
            alias: self.alias.clone(),
            id: id.clone(),
            pod: self.pod.clone(),
            host_network: self.host_network,
            config,
            log_directory,
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
