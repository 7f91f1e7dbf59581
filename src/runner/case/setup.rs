//! Setup steps: objects made on the runtime through the unrecorded client (labelled for
//! cleanup and named for redaction), and the mock-only steps that reach its control service.

use std::time::{SystemTime, UNIX_EPOCH};

use super::{is_transport, CaseRun, ContainerRef, SandboxRef, StepError, DEFAULT_COMMAND};
use crate::cri::{labels, v1};
use crate::images;
use crate::mock::control_api;
use crate::suite::step::{self, Step};

impl CaseRun<'_> {
    pub(super) async fn pull(&mut self, symbol: &str) -> Result<(), StepError> {
        let image = images::resolve(symbol);
        if self.pulled.contains(&image) {
            return Ok(());
        }
        // A runtime that already has the image answers ImageStatus without the registry.
        if self.env.client.image_status(&image).await?.is_none() {
            self.env.client.pull_image(&image).await?;
        }
        self.pulled.insert(image);
        Ok(())
    }

    pub(super) async fn run_sandbox(&mut self, s: &step::RunSandbox) -> Result<(), StepError> {
        let mut sandbox_labels = self.base_labels();
        if s.pod_labels {
            sandbox_labels.extend(self.pod_labels(&s.pod));
        }
        sandbox_labels.extend(s.labels.clone());
        let config = v1::PodSandboxConfig {
            metadata: Some(v1::PodSandboxMetadata {
                name: s.pod.clone(),
                uid: self.uid(&s.pod),
                namespace: self.namespace.clone(),
                attempt: s.attempt,
            }),
            hostname: if s.host_network {
                String::new()
            } else {
                s.pod.clone()
            },
            labels: sandbox_labels,
            linux: Some(v1::LinuxPodSandboxConfig {
                security_context: Some(v1::LinuxSandboxSecurityContext {
                    namespace_options: Some(namespace_options(s.host_network)),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let id = self.env.client.run_pod_sandbox(config.clone(), "").await?;
        self.redactor.sandbox(&id, &s.alias);
        self.sandboxes.push(SandboxRef {
            alias: s.alias.clone(),
            id: id.clone(),
            pod: s.pod.clone(),
            host_network: s.host_network,
            config,
        });
        // The IPs it reports now are how snapshots and `ip: {of: ALIAS}` name them.
        let status = self.env.client.pod_sandbox_status(&id).await?;
        if let Some(network) = status.status.and_then(|s| s.network) {
            self.redactor.ip(&network.ip, &s.alias);
            for ip in network.additional_ips {
                self.redactor.ip(&ip.ip, &s.alias);
            }
        }
        Ok(())
    }

    pub(super) async fn create_container(
        &mut self,
        c: &step::CreateContainer,
    ) -> Result<(), StepError> {
        self.pull(&c.image).await?;
        let sandbox = self.sandbox(&c.sandbox)?;
        let name = c.name.clone().unwrap_or_else(|| c.alias.clone());
        let mut container_labels = self.base_labels();
        match c.pod_labels.as_deref() {
            Some("none") => {}
            Some(pod) => container_labels.extend(self.pod_labels(pod)),
            None => container_labels.extend(self.pod_labels(&sandbox.pod)),
        }
        container_labels.insert(labels::CONTAINER_NAME.to_owned(), name.clone());
        container_labels.extend(c.labels.clone());
        let command = c
            .command
            .clone()
            .unwrap_or_else(|| DEFAULT_COMMAND.iter().map(|s| (*s).to_owned()).collect());
        let config = v1::ContainerConfig {
            metadata: Some(v1::ContainerMetadata {
                name: name.clone(),
                attempt: c.attempt,
            }),
            image: Some(v1::ImageSpec {
                image: images::resolve(&c.image),
                ..Default::default()
            }),
            command,
            labels: container_labels,
            linux: Some(v1::LinuxContainerConfig {
                security_context: Some(v1::LinuxContainerSecurityContext {
                    namespace_options: Some(namespace_options(sandbox.host_network)),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let sandbox_id = sandbox.id.clone();
        let sandbox_config = sandbox.config.clone();
        let id = self
            .env
            .client
            .create_container(&sandbox_id, config, sandbox_config)
            .await?;
        self.redactor.container(&id, &c.alias);
        self.containers.push(ContainerRef {
            alias: c.alias.clone(),
            id,
            name,
        });
        Ok(())
    }

    // ----- mock control -----

    pub(super) async fn mock_step(&mut self, step: &Step) -> Result<(), StepError> {
        let mut control = self.env.control.clone().ok_or_else(|| {
            StepError::new("the target has no mock control service (the case needs mock_control)")
        })?;
        let failed = |err: tonic::Status| StepError {
            message: format!(
                "mock control {} failed: {:?}: {}",
                step.name(),
                err.code(),
                err.message()
            ),
            transport: is_transport(err.code()),
        };
        match step {
            Step::MockSetVersion(v) => {
                let request = control_api::SetVersionRequest {
                    version: Some(v1::VersionResponse {
                        version: v.version.clone(),
                        runtime_name: v.runtime_name.clone(),
                        runtime_version: v.runtime_version.clone(),
                        runtime_api_version: v.runtime_api_version.clone(),
                    }),
                };
                control.set_version(request).await.map_err(failed)?;
            }
            Step::MockInjectError(i) => {
                let target_id = match &i.target {
                    Some(alias) => self.alias_id(alias)?,
                    None => String::new(),
                };
                let request = control_api::InjectErrorRequest {
                    method: i.method.clone(),
                    code: i.code.0 as i32,
                    message: i.message.clone(),
                    count: i.count,
                    target_id,
                    nth: i.nth,
                };
                control.inject_error(request).await.map_err(failed)?;
            }
            Step::MockSetClock(c) => {
                let request = control_api::SetClockRequest {
                    unix_nanos: c.unix_seconds.saturating_mul(1_000_000_000),
                };
                control.set_clock(request).await.map_err(failed)?;
            }
            Step::MockAdvanceClock(a) => {
                let request = control_api::AdvanceClockRequest {
                    nanos: a.ms.saturating_mul(1_000_000),
                };
                control.advance_clock(request).await.map_err(failed)?;
            }
            Step::MockSeedSandbox(s) => {
                let status = self.seeded_sandbox(s);
                self.redactor.sandbox(&status.id, &s.alias);
                self.redactor.ip(
                    status.network.as_ref().map_or("", |n| n.ip.as_str()),
                    &s.alias,
                );
                let id = status.id.clone();
                let request = control_api::SeedPodSandboxRequest {
                    status: Some(status),
                };
                control.seed_pod_sandbox(request).await.map_err(failed)?;
                self.sandboxes.push(SandboxRef {
                    alias: s.alias.clone(),
                    id,
                    pod: s.pod.clone(),
                    host_network: s.host_network,
                    config: v1::PodSandboxConfig::default(),
                });
            }
            Step::MockSeedContainer(c) => {
                let sandbox_id = self.sandbox_id_or_made_up(&c.sandbox);
                let status = self.seeded_container(c);
                self.redactor.container(&status.id, &c.alias);
                let id = status.id.clone();
                let name = c.name.clone().unwrap_or_else(|| c.alias.clone());
                let request = control_api::SeedContainerRequest {
                    pod_sandbox_id: sandbox_id,
                    status: Some(status),
                };
                control.seed_container(request).await.map_err(failed)?;
                self.containers.push(ContainerRef {
                    alias: c.alias.clone(),
                    id,
                    name,
                });
            }
            _ => return Err(StepError::new("not a mock control step")),
        }
        Ok(())
    }

    /// The id of the sandbox or container an alias names (aliases are unique across both).
    fn alias_id(&self, alias: &str) -> Result<String, StepError> {
        self.container_id(alias)
            .or_else(|_| self.sandbox(alias).map(|s| s.id.clone()))
            .map_err(|_| StepError::new(format!("no sandbox or container `{alias}`")))
    }

    pub(super) fn seeded_sandbox(&self, s: &step::MockSeedSandbox) -> v1::PodSandboxStatus {
        let mut sandbox_labels = self.base_labels();
        if s.pod_labels {
            sandbox_labels.extend(self.pod_labels(&s.pod));
        }
        sandbox_labels.extend(s.labels.clone());
        v1::PodSandboxStatus {
            id: self.made_up_id(&s.alias),
            metadata: s.metadata.then(|| v1::PodSandboxMetadata {
                name: s.pod.clone(),
                uid: self.uid(&s.pod),
                namespace: self.namespace.clone(),
                attempt: s.attempt,
            }),
            state: match s.state {
                step::SandboxState::Ready => v1::PodSandboxState::SandboxReady as i32,
                step::SandboxState::NotReady => v1::PodSandboxState::SandboxNotready as i32,
            },
            created_at: seed_time(s.created_at),
            network: Some(v1::PodSandboxNetworkStatus {
                ip: s.ip.clone().unwrap_or_default(),
                additional_ips: Vec::new(),
            }),
            linux: Some(v1::LinuxPodSandboxStatus {
                namespaces: Some(v1::Namespace {
                    options: Some(namespace_options(s.host_network)),
                }),
            }),
            labels: sandbox_labels,
            ..Default::default()
        }
    }

    pub(super) fn seeded_container(&self, c: &step::MockSeedContainer) -> v1::ContainerStatus {
        let name = c.name.clone().unwrap_or_else(|| c.alias.clone());
        let sandbox_pod = self.sandbox(&c.sandbox).ok().map(|s| s.pod.clone());
        let mut container_labels = self.base_labels();
        match (c.pod_labels.as_deref(), sandbox_pod) {
            (Some("none"), _) | (None, None) => {}
            (Some(pod), _) => container_labels.extend(self.pod_labels(pod)),
            (None, Some(pod)) => container_labels.extend(self.pod_labels(&pod)),
        }
        container_labels.insert(labels::CONTAINER_NAME.to_owned(), name.clone());
        container_labels.extend(c.labels.clone());
        v1::ContainerStatus {
            id: self.made_up_id(&c.alias),
            metadata: c
                .metadata
                .then_some(v1::ContainerMetadata { name, attempt: 0 }),
            state: match c.state {
                step::ContainerState::Created => v1::ContainerState::ContainerCreated,
                step::ContainerState::Running => v1::ContainerState::ContainerRunning,
                step::ContainerState::Exited => v1::ContainerState::ContainerExited,
                step::ContainerState::Unknown => v1::ContainerState::ContainerUnknown,
            } as i32,
            created_at: seed_time(c.created_at),
            image: Some(v1::ImageSpec {
                image: images::resolve(&c.image),
                ..Default::default()
            }),
            image_ref: images::resolve(&c.image),
            labels: container_labels,
            ..Default::default()
        }
    }
}

/// The namespaces the kubelet asks for: the pod's network (or the node's), the pod's IPC, a
/// PID namespace per container. Sandboxes and their containers must agree.
fn namespace_options(host_network: bool) -> v1::NamespaceOption {
    let network = if host_network {
        v1::NamespaceMode::Node
    } else {
        v1::NamespaceMode::Pod
    };
    v1::NamespaceOption {
        network: network as i32,
        pid: v1::NamespaceMode::Container as i32,
        ipc: v1::NamespaceMode::Pod as i32,
        ..Default::default()
    }
}

fn seed_time(seconds: Option<i64>) -> i64 {
    match seconds {
        Some(s) => s.saturating_mul(1_000_000_000),
        None => SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)),
    }
}

impl CaseRun<'_> {
    /// `check_network`: asks the runtime (verbose PodSandboxStatus, unrecorded) what became of
    /// a sandbox's network namespace. `netNamespaceClosed` is the runtime's word; where this
    /// host can see the runtime's netns directory (a runtime on this machine, as in CI), the
    /// namespace file must agree, so a released network is checked, not just claimed.
    pub(super) async fn check_network(&mut self, c: &step::CheckNetwork) -> Result<(), StepError> {
        let id = self.sandbox(&c.sandbox)?.id.clone();
        let answer = self.env.client.pod_sandbox_status_with(&id, true).await?;
        let alias = &c.sandbox;
        let want_closed = c.expect == step::NetworkState::Closed;
        let wanted = if want_closed { "closed" } else { "open" };
        let netns = crate::cri::sandbox_netns(&answer.info).ok_or_else(|| {
            StepError::new(format!(
                "check_network `{alias}`: the verbose status has no JSON info to read the network namespace from"
            ))
        })?;
        match netns.closed {
            None => {
                return Err(StepError::new(format!(
                    "check_network `{alias}`: expected {wanted}, but the runtime does not say (no netNamespaceClosed in its verbose status)"
                )))
            }
            Some(closed) if closed != want_closed => {
                return Err(StepError::new(format!(
                    "check_network `{alias}`: expected {wanted}, the runtime says netNamespaceClosed={closed}"
                )))
            }
            Some(_) => {}
        }
        if let Some(path) = netns.path.as_deref().filter(|p| !p.is_empty()) {
            let path = std::path::Path::new(path);
            let visible = path.parent().is_some_and(std::path::Path::is_dir);
            if visible && path.exists() == want_closed {
                let what = if want_closed {
                    "still exists"
                } else {
                    "is missing"
                };
                return Err(StepError::new(format!(
                    "check_network `{alias}`: expected {wanted}, but the namespace file {} {what}",
                    path.display()
                )));
            }
        }
        Ok(())
    }
}
