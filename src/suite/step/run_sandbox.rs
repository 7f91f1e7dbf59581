//! `run_sandbox`: creates and starts a pod sandbox for a pod alias, labelled for cleanup, with
//! the namespaces and the pod-level security context the kubelet asks for; the IPs it reports
//! name `<ip:ALIAS>` from then on.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::create_container::Seccomp;
use super::{check_call, is_default, is_true, yes, CheckError, ErrorExpect, Kind, Scope, StepDef};
use crate::cri::{namespace_options, v1, PodSandbox};
use crate::world::{Pooled, SandboxPool, SandboxRef, StepError, World};

/// `run_sandbox`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `run_sandbox` step: `as`, `pod`, `attempt`, `host_network`, `labels`, `annotations`, `pod_labels`, `hostname`, `dns`, `ports`, `sysctls`, `log_directory`, `host_pid`, `host_ipc`, `share_pid`, `security`, `cgroup_parent`, `userns`, `expect`"
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
    /// kubelet always does, so its containers' logs can be read back (default true; `false`
    /// sends a sandbox no kubelet would, for a case about exactly that).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub log_directory: bool,
    /// Share the node's PID namespace (the pod's `hostPID`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub host_pid: bool,
    /// Share the node's IPC namespace (the pod's `hostIPC`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub host_ipc: bool,
    /// One PID namespace for the pod's containers (the pod's `shareProcessNamespace`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub share_pid: bool,
    /// The pod-level Linux security context.
    #[serde(default, skip_serializing_if = "is_default")]
    pub security: PodSecurity,
    /// Give the sandbox a cgroup parent of its own, as the kubelet always does (containerd
    /// needs one to answer PodSandboxStats); the runner removes it with the case.
    #[serde(default, skip_serializing_if = "is_default")]
    pub cgroup_parent: bool,
    /// The pod's user namespace (`NamespaceOption.userns_options`; default: none sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub userns: Option<Userns>,
    /// What is expected of the call (default: it succeeds).
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: RunSandboxExpect,
}

/// What `run_sandbox` checks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `run_sandbox` expectation: `error`"
)]
pub struct RunSandboxExpect {
    /// RunPodSandbox fails like this; the alias then names no sandbox.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorExpect>,
}

/// A pod's user namespace, as CRI's `UserNamespace` has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a `userns`: `mode`, `uids`, `gids`")]
pub struct Userns {
    /// `pod` (a namespace of the pod's own, mapped by `uids` and `gids`) or `node`; CRI
    /// names `container` and `target` too, which a runtime must refuse.
    pub mode: UsernsMode,
    /// Container ids mapped to host ids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uids: Vec<IdMapping>,
    /// Container group ids mapped to host ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gids: Vec<IdMapping>,
}

/// `NamespaceMode`, every value of it, for user namespaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UsernsMode {
    /// The pod's own.
    Pod,
    /// Each container's own.
    Container,
    /// The node's.
    Node,
    /// Another container's.
    Target,
}

/// One id range of a user namespace: `length` ids from `container` on are `host` on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping: `container`, `host`, `length`"
)]
pub struct IdMapping {
    /// First id inside.
    pub container: u32,
    /// First id on the host.
    pub host: u32,
    /// How many.
    pub length: u32,
}

impl Userns {
    fn to_cri(&self) -> v1::UserNamespace {
        let mode = match self.mode {
            UsernsMode::Pod => v1::NamespaceMode::Pod,
            UsernsMode::Container => v1::NamespaceMode::Container,
            UsernsMode::Node => v1::NamespaceMode::Node,
            UsernsMode::Target => v1::NamespaceMode::Target,
        };
        let ids = |mappings: &[IdMapping]| {
            mappings
                .iter()
                .map(|m| v1::IdMapping {
                    container_id: m.container,
                    host_id: m.host,
                    length: m.length,
                })
                .collect()
        };
        v1::UserNamespace {
            mode: mode as i32,
            uids: ids(&self.uids),
            gids: ids(&self.gids),
        }
    }
}

/// A pod's Linux security context, as the kubelet fills `LinuxSandboxSecurityContext`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a pod `security` context: `run_as_user`, `run_as_group`, `supplemental_groups`, `readonly_rootfs`, `privileged`, `seccomp`"
)]
pub struct PodSecurity {
    /// The UID of the sandbox's process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_as_user: Option<i64>,
    /// The GID of the sandbox's process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_as_group: Option<i64>,
    /// Groups for the sandbox's process.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub supplemental_groups: Vec<i64>,
    /// The sandbox's root filesystem read-only.
    #[serde(default, skip_serializing_if = "is_default")]
    pub readonly_rootfs: bool,
    /// A privileged pod: the runtime lets only such a pod hold privileged containers.
    #[serde(default, skip_serializing_if = "is_default")]
    pub privileged: bool,
    /// The sandbox's seccomp profile (default: RuntimeDefault, the one the kubelet always sends a
    /// sandbox; `nil` sends none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seccomp: Option<Seccomp>,
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
            log_directory: true,
            cgroup_parent: false,
            host_pid: false,
            host_ipc: false,
            share_pid: false,
            security: PodSecurity::default(),
            userns: None,
            expect: RunSandboxExpect::default(),
        }
    }
}

impl RunSandbox {
    /// The kubelet's namespace options for this pod: network and IPC the node's or the pod's,
    /// PID the node's, the pod's or each container's own.
    pub(crate) fn namespaces(&self) -> v1::NamespaceOption {
        let mode = |node: bool| {
            if node {
                v1::NamespaceMode::Node
            } else {
                v1::NamespaceMode::Pod
            }
        };
        let pid = match (self.host_pid, self.share_pid) {
            (true, _) => v1::NamespaceMode::Node,
            (false, true) => v1::NamespaceMode::Pod,
            (false, false) => v1::NamespaceMode::Container,
        };
        v1::NamespaceOption {
            ipc: mode(self.host_ipc) as i32,
            pid: pid as i32,
            userns_options: self.userns.as_ref().map(Userns::to_cri),
            ..namespace_options(self.host_network)
        }
    }

    /// The CRI pod security context; `host_path` makes a relative seccomp path absolute.
    // The deprecated seccomp path is set on purpose: critest's specs still speak it.
    #[allow(deprecated)]
    pub(crate) fn security_context(
        &self,
        host_path: impl FnOnce(&str) -> Result<String, StepError>,
    ) -> Result<v1::LinuxSandboxSecurityContext, StepError> {
        let security = &self.security;
        let seccomp = security
            .seccomp
            .as_ref()
            .map(|s| s.to_cri(host_path))
            .transpose()?
            .unwrap_or_default();
        Ok(v1::LinuxSandboxSecurityContext {
            namespace_options: Some(self.namespaces()),
            run_as_user: security.run_as_user.map(|value| v1::Int64Value { value }),
            run_as_group: security.run_as_group.map(|value| v1::Int64Value { value }),
            supplemental_groups: security.supplemental_groups.clone(),
            readonly_rootfs: security.readonly_rootfs,
            privileged: security.privileged,
            seccomp: seccomp.profile,
            seccomp_profile_path: seccomp.path,
            ..Default::default()
        })
    }
}

impl StepDef for RunSandbox {
    const NAME: &'static str = "run_sandbox";
    const KIND: Kind = Kind::Setup;
    const ABOUT: &'static str = "Creates and starts a pod sandbox for a pod alias.";

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.pod(&self.pod)?;
        if self.host_network && self.hostname.is_some() {
            return Err(CheckError::rule(
                "",
                "a host-network pod has the node's hostname; drop `hostname` or `host_network`",
            ));
        }
        if self.host_pid && self.share_pid {
            return Err(CheckError::rule(
                "",
                "a host-PID pod shares the node's PID namespace; drop `share_pid` or `host_pid`",
            ));
        }
        if let Some(seccomp) = &self.security.seccomp {
            seccomp.check()?;
        }
        if let Some(port) = self.ports.iter().find(|p| p.container_port == 0) {
            return Err(CheckError::rule(
                "ports",
                format!(
                    "container_port 0 (host_port {}) names no port",
                    port.host_port
                ),
            ));
        }
        scope.error(self.expect.error.as_ref())?;
        scope.define_sandbox(&self.alias)
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        if let Some(pool) = world.pool() {
            return self.take_shared(world, &pool).await;
        }
        let pod = world.ids.pod(&self.pod);
        let log_directory = if self.log_directory {
            let dir = world.host_path(&format!("logs/{}", self.alias))?;
            make_dir(&dir)?;
            Some(dir)
        } else {
            None
        };
        let labels = world
            .ids
            .sandbox_labels(&self.pod, self.pod_labels, &self.labels);
        let cgroup_parent = if self.cgroup_parent {
            world.cgroup_parent_for_driver(&self.alias).await
        } else {
            String::new()
        };
        let config = self.config(world, &pod, labels, log_directory.as_deref(), cgroup_parent)?;
        let handler = world.runtime_handler.clone();
        let result = world
            .runtime
            .run_pod_sandbox(config.clone(), &handler)
            .await;
        // The runner redacts the failure message.
        let Some(id) = check_call(self.expect.error.as_ref(), result, str::to_owned)? else {
            return Ok(());
        };
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
        self.learn_ips(world, status.status);
        Ok(())
    }
}

impl RunSandbox {
    /// True when a shared sandbox run with the same options can stand for this one: it asks
    /// for nothing a case could tell apart from another case's sandbox (no labels,
    /// annotations, hostname, DNS, ports, sysctls or user namespace of its own, no fixed
    /// attempt, no expected failure), no file of the case's (a localhost seccomp profile),
    /// and a log directory, as the kubelet always gives.
    pub fn shareable(&self) -> bool {
        let own_file = matches!(
            self.security.seccomp,
            Some(Seccomp::Localhost(_) | Seccomp::ProfilePath(_))
        );
        self.attempt == 0
            && self.labels.is_empty()
            && self.annotations.is_empty()
            && self.pod_labels
            && self.hostname.is_none()
            && self.dns.is_none()
            && self.ports.is_empty()
            && self.sysctls.is_empty()
            && self.log_directory
            && self.userns.is_none()
            && self.expect == RunSandboxExpect::default()
            && !own_file
    }

    /// What tells shared sandboxes apart: the step's options, its aliases left out. Every
    /// shared sandbox has a cgroup parent, as the kubelet always gives one, so that option
    /// is left out too.
    pub fn pool_key(&self) -> String {
        let options = Self {
            alias: String::new(),
            pod: String::new(),
            cgroup_parent: false,
            ..self.clone()
        };
        serde_json::to_string(&options).unwrap_or_default()
    }

    /// Takes a READY sandbox run with this step's options from the run's pool, or runs one for
    /// it, and makes the alias (and the pod alias) name it for the rest of the case.
    async fn take_shared(&self, world: &mut World, pool: &SandboxPool) -> Result<(), StepError> {
        let key = self.pool_key();
        let mut taken = None;
        while let Some(pooled) = pool.take(&key) {
            // Only what the case needs to go on: the sandbox is still READY. One that is not
            // is never given back, and the run removes it at its end.
            let status = world.runtime.pod_sandbox_status(&pooled.id).await?.status;
            if status
                .as_ref()
                .is_some_and(|s| s.state == v1::PodSandboxState::SandboxReady as i32)
            {
                taken = Some((pooled, status));
                break;
            }
        }
        pool.got(&key);
        let (pooled, status) = match taken {
            Some(taken) => taken,
            None => self.run_shared(world, pool, key).await?,
        };
        world.ids.adopt(&self.pod, pooled.pod.clone());
        world.recorder.redactor.pod(&pooled.pod.uid, &self.pod);
        world.recorder.redactor.sandbox(&pooled.id, &self.alias);
        world.aliases.sandboxes.push(SandboxRef {
            alias: self.alias.clone(),
            id: pooled.id.clone(),
            pod: self.pod.clone(),
            host_network: self.host_network,
            config: pooled.config.clone(),
            log_directory: Some(pooled.log_directory.clone()),
        });
        world.hold(pooled);
        self.learn_ips(world, status);
        Ok(())
    }

    /// Runs a sandbox for the pool, with the pool's pod, labels, log directory and cgroup
    /// parent and this step's options.
    async fn run_shared(
        &self,
        world: &mut World,
        pool: &SandboxPool,
        key: String,
    ) -> Result<(Pooled, Option<v1::PodSandboxStatus>), StepError> {
        let (number, pod) = pool.next_pod();
        let log_directory = pool.log_directory(number);
        make_dir(&log_directory)?;
        let labels = world.ids.pool_labels(&pod, number);
        let cgroup_parent = world
            .pool_cgroup_parent(&format!("{}-{number}", pool.namespace()))
            .await;
        let config = self.config(
            world,
            &pod,
            labels,
            Some(&log_directory),
            cgroup_parent.clone(),
        )?;
        let handler = world.runtime_handler.clone();
        let id = world
            .runtime
            .run_pod_sandbox(config.clone(), &handler)
            .await?;
        let pooled = Pooled {
            key,
            number,
            id,
            pod,
            config,
            log_directory,
            cgroup_parent,
        };
        pool.made(&pooled);
        let status = world.runtime.pod_sandbox_status(&pooled.id).await?.status;
        Ok((pooled, status))
    }

    /// The config this step runs its sandbox with, for pod `pod`.
    fn config(
        &self,
        world: &World,
        pod: &crate::world::PodWho,
        labels: BTreeMap<String, String>,
        log_directory: Option<&std::path::Path>,
        cgroup_parent: String,
    ) -> Result<v1::PodSandboxConfig, StepError> {
        let security_context =
            self.security_context(|path| Ok(world.host_path(path)?.display().to_string()))?;
        let hostname = match &self.hostname {
            Some(hostname) if !self.host_network => hostname.clone(),
            _ if self.host_network => String::new(),
            _ => pod.name.clone(),
        };
        Ok(PodSandbox::new(&pod.name, &pod.namespace, &pod.uid)
            .attempt(self.attempt)
            .network(self.host_network)
            .hostname(hostname)
            .log_directory(
                log_directory
                    .map(|dir| dir.display().to_string())
                    .unwrap_or_default(),
            )
            .dns(self.dns.as_ref().map(|dns| v1::DnsConfig {
                servers: dns.servers.clone(),
                searches: dns.searches.clone(),
                options: dns.options.clone(),
            }))
            .port_mappings(
                self.ports
                    .iter()
                    .map(|port| v1::PortMapping {
                        protocol: port.protocol.to_cri() as i32,
                        container_port: i32::from(port.container_port),
                        host_port: i32::from(port.host_port),
                        host_ip: port.host_ip.clone(),
                    })
                    .collect(),
            )
            .labels(labels)
            .annotations(self.annotations.clone())
            .cgroup_parent(cgroup_parent)
            .sysctls(self.sysctls.clone())
            .security(security_context)
            .nil_seccomp(self.security.seccomp == Some(Seccomp::Nil))
            .build())
    }

    /// Teaches the redactor the IPs a sandbox's status reports: snapshots and
    /// `ip: {of: ALIAS}` name them by the alias.
    fn learn_ips(&self, world: &mut World, status: Option<v1::PodSandboxStatus>) {
        if let Some(network) = status.and_then(|s| s.network) {
            world.recorder.redactor.ip(&network.ip, &self.alias);
            for ip in network.additional_ips {
                world.recorder.redactor.ip(&ip.ip, &self.alias);
            }
        }
    }
}

/// Makes a sandbox's log directory.
fn make_dir(dir: &std::path::Path) -> Result<(), StepError> {
    std::fs::create_dir_all(dir).map_err(|err| {
        StepError::Unsupported(format!(
            "cannot make the log directory {}: {err}",
            dir.display()
        ))
    })
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn sandbox(yaml: &str) -> RunSandbox {
        serde_saphyr::from_str(&format!("{{as: sb, pod: web{yaml}}}")).unwrap()
    }

    #[rstest]
    #[case::default(
        "",
        v1::NamespaceMode::Pod,
        v1::NamespaceMode::Container,
        v1::NamespaceMode::Pod
    )]
    #[case::host_network(
        ", host_network: true",
        v1::NamespaceMode::Node,
        v1::NamespaceMode::Container,
        v1::NamespaceMode::Pod
    )]
    #[case::host_pid(
        ", host_pid: true",
        v1::NamespaceMode::Pod,
        v1::NamespaceMode::Node,
        v1::NamespaceMode::Pod
    )]
    #[case::share_pid(
        ", share_pid: true",
        v1::NamespaceMode::Pod,
        v1::NamespaceMode::Pod,
        v1::NamespaceMode::Pod
    )]
    #[case::host_ipc(
        ", host_ipc: true",
        v1::NamespaceMode::Pod,
        v1::NamespaceMode::Container,
        v1::NamespaceMode::Node
    )]
    fn namespaces_follow_the_pods_host_and_share_flags(
        #[case] yaml: &str,
        #[case] network: v1::NamespaceMode,
        #[case] pid: v1::NamespaceMode,
        #[case] ipc: v1::NamespaceMode,
    ) {
        let namespaces = sandbox(yaml).namespaces();
        assert_eq!(
            (namespaces.network, namespaces.pid, namespaces.ipc),
            (network as i32, pid as i32, ipc as i32)
        );
    }

    #[test]
    fn the_default_namespaces_are_the_ones_the_harness_always_sent() {
        assert_eq!(sandbox("").namespaces(), namespace_options(false));
        assert_eq!(
            sandbox(", host_network: true").namespaces(),
            namespace_options(true)
        );
    }

    #[test]
    fn the_pod_security_context_maps_to_its_cri_fields() {
        let context = sandbox(
            ", security: {run_as_user: 1001, run_as_group: 1002, supplemental_groups: [7], readonly_rootfs: true, privileged: true, seccomp: {localhost: block.json}}",
        )
        .security_context(|path| Ok(format!("/case/{path}")))
        .unwrap();
        assert_eq!(context.run_as_user, Some(v1::Int64Value { value: 1001 }));
        assert_eq!(context.run_as_group, Some(v1::Int64Value { value: 1002 }));
        assert_eq!(context.supplemental_groups, vec![7]);
        assert!(context.readonly_rootfs && context.privileged);
        assert_eq!(
            context.seccomp,
            Some(v1::SecurityProfile {
                profile_type: v1::security_profile::ProfileType::Localhost as i32,
                localhost_ref: "/case/block.json".to_owned(),
            })
        );
    }

    #[test]
    fn an_empty_pod_security_context_sends_only_namespaces() {
        let context = sandbox("").security_context(|_| unreachable!()).unwrap();
        assert_eq!(
            context,
            v1::LinuxSandboxSecurityContext {
                namespace_options: Some(namespace_options(false)),
                ..Default::default()
            }
        );
    }

    #[test]
    fn a_user_namespace_maps_to_its_cri_options() {
        let options = sandbox(
            ", userns: {mode: pod, uids: [{container: 0, host: 1000, length: 100000}], gids: [{container: 0, host: 2000, length: 10}]}",
        )
        .namespaces()
        .userns_options
        .unwrap();
        assert_eq!(options.mode, v1::NamespaceMode::Pod as i32);
        assert_eq!(
            (
                options.uids[0].host_id,
                options.uids[0].length,
                options.gids[0].host_id
            ),
            (1000, 100_000, 2000)
        );
        assert_eq!(sandbox("").namespaces().userns_options, None);
    }

    #[test]
    fn host_pid_and_share_pid_together_are_refused() {
        let mut scope = Scope::default();
        let err = sandbox(", host_pid: true, share_pid: true")
            .check(&mut scope)
            .unwrap_err()
            .to_string();
        assert!(err.contains("share_pid"), "{err}");
    }
}
