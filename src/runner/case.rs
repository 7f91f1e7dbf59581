//! One case, step by step: setup steps act on the runtime through an unrecorded client, manager
//! steps go through the manager over a recording client, and each manager step is checked
//! against its expectations and kept (redacted) for the snapshot.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_yaml::Value;
use sha2::{Digest, Sha256};
use tonic::transport::Channel;

use super::redact::Redactor;
use crate::cri::{labels, v1, CallError, CallLog, CriClient};
use crate::images;
use crate::manager::{
    self, Container, ContainerId, ContainerSpec, KubeGenericRuntimeManager, ManagerError, Pod,
    PodSpec, PodSyncResult, RecordingNetworkPlugin, SyncAction,
};
use crate::mock::control_api;
use crate::mock::control_api::mock_control_client::MockControlClient;
use crate::suite::step::{self, ErrorExpect, ErrorKind, IpExpect, Step};
use crate::suite::Case;

/// A command that runs until stopped and exits at once on SIGTERM (PID 1 ignores signals it
/// has no handler for), so stopping takes no grace period.
const DEFAULT_COMMAND: [&str; 3] = ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"];

/// The pod UID a case gives a pod alias (`""` stays empty: the pod of unlabelled containers).
pub fn pod_uid(run_id: &str, case_no: usize, pod: &str) -> String {
    if pod.is_empty() {
        String::new()
    } else {
        format!("{run_id}-{case_no}-{pod}")
    }
}

/// The namespace of a case.
pub fn namespace(run_id: &str, case_no: usize) -> String {
    format!("crih-{run_id}-{case_no}")
}

/// What the target gives a case.
pub(super) struct Env {
    /// Unrecorded client for setup, checks and cleanup.
    pub client: CriClient,
    /// The mock's control service, on the mock only.
    pub control: Option<MockControlClient<Channel>>,
}

/// Why a step failed.
#[derive(Debug)]
pub(super) struct StepFailure {
    /// 0-based step index.
    pub index: usize,
    /// What went wrong, expected vs actual for expectations.
    pub message: String,
    /// The runtime did not answer (unavailable or out of time), as opposed to answering wrong.
    pub transport: bool,
}

#[derive(Debug)]
struct StepError {
    message: String,
    transport: bool,
}

impl StepError {
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            transport: false,
        }
    }
}

impl From<CallError> for StepError {
    fn from(err: CallError) -> Self {
        Self {
            transport: is_transport(err.code),
            message: err.to_string(),
        }
    }
}

/// True for the codes a runtime that stopped answering produces.
pub(super) fn is_transport(code: tonic::Code) -> bool {
    matches!(
        code,
        tonic::Code::Unavailable | tonic::Code::DeadlineExceeded
    )
}

struct SandboxRef {
    alias: String,
    id: String,
    pod: String,
    host_network: bool,
    config: v1::PodSandboxConfig,
}

struct ContainerRef {
    alias: String,
    id: String,
    name: String,
}

/// A case in progress.
pub(super) struct CaseRun<'a> {
    case: &'a Case,
    env: Env,
    run_id: String,
    case_no: usize,
    namespace: String,
    log: CallLog,
    recorded: CriClient,
    sandboxes: Vec<SandboxRef>,
    containers: Vec<ContainerRef>,
    pods: BTreeSet<String>,
    manager: Option<KubeGenericRuntimeManager>,
    plugin: Arc<RecordingNetworkPlugin>,
    redactor: Redactor,
    observations: Vec<Value>,
    pulled: BTreeSet<String>,
    current: usize,
}

impl<'a> CaseRun<'a> {
    pub(super) fn new(case: &'a Case, env: Env, run_id: &str, case_no: usize) -> Self {
        let namespace = namespace(run_id, case_no);
        let log = CallLog::new();
        let recorded = env.client.with_call_log(log.clone());
        let mut redactor = Redactor::new(run_id, &namespace, case_no);
        redactor.endpoint(env.client.endpoint());
        let pods = pods_of(case);
        for pod in &pods {
            redactor.pod(&pod_uid(run_id, case_no, pod), pod);
        }
        Self {
            case,
            env,
            run_id: run_id.to_owned(),
            case_no,
            namespace,
            log,
            recorded,
            sandboxes: Vec::new(),
            containers: Vec::new(),
            pods,
            manager: None,
            plugin: Arc::new(RecordingNetworkPlugin::new()),
            redactor,
            observations: Vec::new(),
            pulled: BTreeSet::new(),
            current: 0,
        }
    }

    /// The step running (or the last one run), 0-based.
    pub(super) fn current_step(&self) -> usize {
        self.current
    }

    /// The unrecorded client, for cleanup.
    pub(super) fn client(&self) -> &CriClient {
        &self.env.client
    }

    /// The redacted snapshot body: one entry per manager call.
    pub(super) fn snapshot_body(&self) -> String {
        serde_yaml::to_string(&Value::Sequence(self.observations.clone()))
            .unwrap_or_else(|err| format!("cannot render the snapshot: {err}\n"))
    }

    /// Redacts text for messages.
    pub(super) fn redact(&self, text: &str) -> String {
        self.redactor.text(text)
    }

    /// Runs every step in order; stops at the first failure.
    pub(super) async fn run(&mut self) -> Result<(), StepFailure> {
        let case = self.case;
        for (index, step) in case.steps.iter().enumerate() {
            self.current = index;
            self.step(step).await.map_err(|err| StepFailure {
                index,
                message: self.redactor.text(&err.message),
                transport: err.transport,
            })?;
        }
        Ok(())
    }

    fn uid(&self, pod: &str) -> String {
        pod_uid(&self.run_id, self.case_no, pod)
    }

    fn sandbox(&self, alias: &str) -> Result<&SandboxRef, StepError> {
        self.sandboxes
            .iter()
            .find(|s| s.alias == alias)
            .ok_or_else(|| StepError::new(format!("no sandbox `{alias}`")))
    }

    fn container_id(&self, alias: &str) -> Result<String, StepError> {
        self.containers
            .iter()
            .find(|c| c.alias == alias)
            .map(|c| c.id.clone())
            .ok_or_else(|| StepError::new(format!("no container `{alias}`")))
    }

    /// The id a sandbox alias has, or the one a seeded container made up for a missing sandbox.
    fn sandbox_id_or_made_up(&self, alias: &str) -> String {
        self.sandbox(alias)
            .map(|s| s.id.clone())
            .unwrap_or_else(|_| self.made_up_id(alias))
    }

    fn made_up_id(&self, alias: &str) -> String {
        let digest = Sha256::digest(format!("{}/{}/{alias}", self.run_id, self.case_no));
        hex::encode(digest)
    }

    /// Labels every object of the case carries.
    fn base_labels(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            (labels::RUN_ID.to_owned(), self.run_id.clone()),
            (labels::CASE.to_owned(), self.case_no.to_string()),
            (labels::MANAGED.to_owned(), "true".to_owned()),
        ])
    }

    fn pod_labels(&self, pod: &str) -> BTreeMap<String, String> {
        BTreeMap::from([
            (labels::POD_UID.to_owned(), self.uid(pod)),
            (labels::POD_NAME.to_owned(), pod.to_owned()),
            (labels::POD_NAMESPACE.to_owned(), self.namespace.clone()),
        ])
    }

    async fn step(&mut self, step: &Step) -> Result<(), StepError> {
        match step {
            Step::PullImage(image) => self.pull(image).await,
            Step::RunSandbox(s) => self.run_sandbox(s).await,
            Step::StopSandbox(alias) => {
                let id = self.sandbox(alias)?.id.clone();
                Ok(self.env.client.stop_pod_sandbox(&id).await?)
            }
            Step::RemoveSandbox(alias) => {
                let id = self.sandbox(alias)?.id.clone();
                Ok(self.env.client.remove_pod_sandbox(&id).await?)
            }
            Step::CreateContainer(c) => self.create_container(c).await,
            Step::StartContainer(alias) => {
                let id = self.container_id(alias)?;
                Ok(self.env.client.start_container(&id).await?)
            }
            Step::StopContainer(s) => {
                let id = self.container_id(&s.container)?;
                Ok(self.env.client.stop_container(&id, s.timeout).await?)
            }
            Step::RemoveContainer(alias) => {
                let id = self.container_id(alias)?;
                Ok(self.env.client.remove_container(&id).await?)
            }
            Step::SleepMs(ms) => {
                tokio::time::sleep(std::time::Duration::from_millis(*ms)).await;
                Ok(())
            }
            Step::MockSetVersion(_)
            | Step::MockInjectError(_)
            | Step::MockSetClock(_)
            | Step::MockAdvanceClock(_)
            | Step::MockSeedSandbox(_)
            | Step::MockSeedContainer(_) => self.mock_step(step).await,
            Step::NewManager(n) => self.new_manager(n).await,
            Step::Version(v) => self.version(v, false).await,
            Step::ApiVersion(v) => self.version(v, true).await,
            Step::Status(s) => self.status(s).await,
            Step::GetPods(g) => self.get_pods(g).await,
            Step::GetPodStatus(g) => self.get_pod_status(g).await,
            Step::KillPod(k) => self.kill_pod(k).await,
            Step::GetNetns(g) => self.get_netns(g).await,
            Step::GetPodContainerId(g) => self.get_pod_container_id(g).await,
        }
    }

    // ----- setup -----

    async fn pull(&mut self, symbol: &str) -> Result<(), StepError> {
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

    async fn run_sandbox(&mut self, s: &step::RunSandbox) -> Result<(), StepError> {
        let mut sandbox_labels = self.base_labels();
        if s.pod_labels {
            sandbox_labels.extend(self.pod_labels(&s.pod));
        }
        sandbox_labels.extend(s.labels.clone());
        let network = if s.host_network {
            v1::NamespaceMode::Node
        } else {
            v1::NamespaceMode::Pod
        };
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
                    namespace_options: Some(v1::NamespaceOption {
                        network: network as i32,
                        pid: v1::NamespaceMode::Container as i32,
                        ipc: v1::NamespaceMode::Pod as i32,
                        ..Default::default()
                    }),
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

    async fn create_container(&mut self, c: &step::CreateContainer) -> Result<(), StepError> {
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
        let network = if sandbox.host_network {
            v1::NamespaceMode::Node
        } else {
            v1::NamespaceMode::Pod
        };
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
                    namespace_options: Some(v1::NamespaceOption {
                        network: network as i32,
                        pid: v1::NamespaceMode::Container as i32,
                        ipc: v1::NamespaceMode::Pod as i32,
                        ..Default::default()
                    }),
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

    async fn mock_step(&mut self, step: &Step) -> Result<(), StepError> {
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
                let request = control_api::InjectErrorRequest {
                    method: i.method.clone(),
                    code: i.code.0 as i32,
                    message: i.message.clone(),
                    count: i.count,
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

    fn seeded_sandbox(&self, s: &step::MockSeedSandbox) -> v1::PodSandboxStatus {
        let mut sandbox_labels = self.base_labels();
        if s.pod_labels {
            sandbox_labels.extend(self.pod_labels(&s.pod));
        }
        sandbox_labels.extend(s.labels.clone());
        let network = if s.host_network {
            v1::NamespaceMode::Node
        } else {
            v1::NamespaceMode::Pod
        };
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
                    options: Some(v1::NamespaceOption {
                        network: network as i32,
                        pid: v1::NamespaceMode::Container as i32,
                        ipc: v1::NamespaceMode::Pod as i32,
                        ..Default::default()
                    }),
                }),
            }),
            labels: sandbox_labels,
            ..Default::default()
        }
    }

    fn seeded_container(&self, c: &step::MockSeedContainer) -> v1::ContainerStatus {
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

    // ----- manager calls -----

    /// Records a manager call for the snapshot: the call, its redacted result or error, the CRI
    /// calls it made, and anything else worth keeping (teardowns).
    fn observe(&mut self, call: String, outcome: Result<Value, String>, extra: Vec<(&str, Value)>) {
        let mut entry = serde_yaml::Mapping::new();
        entry.insert("call".into(), Value::String(self.redactor.text(&call)));
        match outcome {
            Ok(value) => entry.insert("result".into(), self.redactor.value(value)),
            Err(message) => {
                entry.insert("error".into(), Value::String(self.redactor.text(&message)))
            }
        };
        let calls: Vec<Value> = self
            .log
            .take()
            .into_iter()
            .map(|record| {
                let line = if record.request.is_empty() {
                    format!("{} -> {}", record.method, record.outcome)
                } else {
                    format!("{} {} -> {}", record.method, record.request, record.outcome)
                };
                Value::String(self.redactor.text(&line))
            })
            .collect();
        entry.insert("cri".into(), Value::Sequence(calls));
        for (key, value) in extra {
            entry.insert(key.into(), self.redactor.value(value));
        }
        self.observations.push(Value::Mapping(entry));
    }

    async fn ensure_manager(&mut self) -> Result<KubeGenericRuntimeManager, StepError> {
        if let Some(manager) = &self.manager {
            return Ok(manager.clone());
        }
        self.construct(&step::NewManagerExpect::default()).await?;
        self.manager
            .clone()
            .ok_or_else(|| StepError::new("the manager could not be constructed"))
    }

    async fn construct(&mut self, expect: &step::NewManagerExpect) -> Result<(), StepError> {
        let result =
            KubeGenericRuntimeManager::new(self.recorded.clone(), self.plugin.clone()).await;
        let outcome = match &result {
            Ok(m) => Ok(yaml(&BTreeMap::from([("runtime_type", m.runtime_type())]))),
            Err(err) => Err(err.to_string()),
        };
        self.observe("new_manager".to_owned(), outcome, Vec::new());
        let Some(manager) = check_error(expect.error.as_ref(), result).map_err(StepError::new)?
        else {
            return Ok(());
        };
        if let Some(wanted) = &expect.runtime_type {
            let wanted = if wanted == step::REPORTED_RUNTIME_NAME {
                self.env.client.version("").await?.runtime_name
            } else {
                wanted.clone()
            };
            expect_eq("runtime_type", &wanted, manager.runtime_type())?;
        }
        self.manager = Some(manager);
        Ok(())
    }

    async fn new_manager(&mut self, n: &step::NewManager) -> Result<(), StepError> {
        self.construct(&n.expect).await
    }

    async fn version(&mut self, v: &step::VersionCall, api: bool) -> Result<(), StepError> {
        let manager = self.ensure_manager().await?;
        let (name, result) = if api {
            ("api_version", manager.api_version().await)
        } else {
            ("version", manager.version().await)
        };
        let outcome = result.as_ref().map(yaml).map_err(ToString::to_string);
        self.observe(name.to_owned(), outcome, Vec::new());
        if let Some(version) =
            check_error(v.expect.error.as_ref(), result).map_err(StepError::new)?
        {
            if let Some(wanted) = &v.expect.version {
                expect_eq("version", wanted, &version.to_string())?;
            }
        }
        Ok(())
    }

    async fn status(&mut self, s: &step::StatusCall) -> Result<(), StepError> {
        let manager = self.ensure_manager().await?;
        let result = manager.status().await;
        let outcome = result.as_ref().map(yaml).map_err(ToString::to_string);
        self.observe("status".to_owned(), outcome, Vec::new());
        check_error(s.expect.error.as_ref(), result).map_err(StepError::new)?;
        Ok(())
    }

    /// The case's own pods of a listing, in a stable order: a real runtime lists other pods
    /// too, and lists in no fixed order.
    fn own_pods(&self, pods: Vec<Pod>) -> Vec<Pod> {
        let uids: BTreeSet<String> = self.pods.iter().map(|p| self.uid(p)).collect();
        let mut own: Vec<Pod> = pods
            .into_iter()
            .filter(|pod| uids.contains(&pod.id) || pod.id.is_empty())
            .map(|mut pod| {
                if pod.id.is_empty() {
                    // Unlabelled containers of anyone collapse here; keep ours.
                    pod.containers.retain(|c| self.is_known(&c.id.id));
                    pod.sandboxes.retain(|s| self.is_known(&s.id.id));
                }
                pod.containers.sort_by_key(|c| self.rank(&c.id.id));
                pod.sandboxes.sort_by_key(|s| self.rank(&s.id.id));
                pod
            })
            .filter(|pod| {
                !pod.id.is_empty() || !pod.containers.is_empty() || !pod.sandboxes.is_empty()
            })
            .collect();
        own.sort_by(|a, b| a.id.cmp(&b.id));
        own
    }

    fn is_known(&self, id: &str) -> bool {
        self.sandboxes.iter().any(|s| s.id == id) || self.containers.iter().any(|c| c.id == id)
    }

    /// Sorts by the order the case made things in, unknown ids last.
    fn rank(&self, id: &str) -> (usize, String) {
        let position = self
            .sandboxes
            .iter()
            .position(|s| s.id == id)
            .or_else(|| {
                self.containers
                    .iter()
                    .position(|c| c.id == id)
                    .map(|i| i + self.sandboxes.len())
            })
            .unwrap_or(usize::MAX);
        (position, self.redactor.text(id))
    }

    /// A sandbox or container id in suite terms: its alias, else its redacted form.
    fn alias_of(&self, id: &str) -> String {
        self.sandboxes
            .iter()
            .find(|s| s.id == id)
            .map(|s| s.alias.clone())
            .or_else(|| {
                self.containers
                    .iter()
                    .find(|c| c.id == id)
                    .map(|c| c.alias.clone())
            })
            .unwrap_or_else(|| self.redactor.text(id))
    }

    /// A pod UID in suite terms.
    fn pod_alias_of(&self, uid: &str) -> String {
        self.pods
            .iter()
            .find(|p| self.uid(p) == uid)
            .cloned()
            .unwrap_or_else(|| self.redactor.text(uid))
    }

    async fn get_pods(&mut self, g: &step::GetPods) -> Result<(), StepError> {
        let manager = self.ensure_manager().await?;
        let result = manager
            .get_pods(g.all)
            .await
            .map(|pods| self.own_pods(pods));
        let outcome = result.as_ref().map(yaml).map_err(ToString::to_string);
        self.observe(format!("get_pods all={}", g.all), outcome, Vec::new());
        let Some(pods) = check_error(g.expect.error.as_ref(), result).map_err(StepError::new)?
        else {
            return Ok(());
        };
        let by_alias: BTreeMap<String, &Pod> =
            pods.iter().map(|p| (self.pod_alias_of(&p.id), p)).collect();
        let present: Vec<String> = by_alias.keys().cloned().collect();
        if let Some(only) = &g.expect.only {
            let mut wanted = only.clone();
            wanted.sort();
            expect_eq("pods", &show(&wanted), &show(&present))?;
        }
        for absent in &g.expect.absent {
            if by_alias.contains_key(absent) {
                return Err(mismatch(&format!("pods.{absent}"), "absent", "present"));
            }
        }
        for (alias, expect) in &g.expect.pods {
            let field = if alias.is_empty() {
                "pods.\"\"".to_owned()
            } else {
                format!("pods.{alias}")
            };
            let Some(pod) = by_alias.get(alias) else {
                return Err(mismatch(
                    &field,
                    "present",
                    &format!("absent (pods: {})", show(&present)),
                ));
            };
            if let Some(wanted) = &expect.sandboxes {
                let actual = sorted(pod.sandboxes.iter().map(|s| self.alias_of(&s.id.id)));
                expect_eq(
                    &format!("{field}.sandboxes"),
                    &show(&sorted(wanted.iter().cloned())),
                    &show(&actual),
                )?;
            }
            if let Some(wanted) = &expect.containers {
                let actual = sorted(pod.containers.iter().map(|c| self.alias_of(&c.id.id)));
                expect_eq(
                    &format!("{field}.containers"),
                    &show(&sorted(wanted.iter().cloned())),
                    &show(&actual),
                )?;
            }
            for (alias, state) in &expect.states {
                let actual = pod
                    .sandboxes
                    .iter()
                    .chain(&pod.containers)
                    .find(|c| self.alias_of(&c.id.id) == *alias)
                    .map_or_else(|| "absent".to_owned(), |c| state_name(c.state).to_owned());
                expect_eq(
                    &format!("{field}.states.{alias}"),
                    suite_state_name(*state),
                    &actual,
                )?;
            }
        }
        Ok(())
    }

    async fn get_pod_status(&mut self, g: &step::GetPodStatus) -> Result<(), StepError> {
        let manager = self.ensure_manager().await?;
        let uid = self.uid(&g.pod);
        let result = manager.get_pod_status(&uid, &g.pod, &self.namespace).await;
        let outcome = result.as_ref().map(yaml).map_err(ToString::to_string);
        self.observe(format!("get_pod_status {}", g.pod), outcome, Vec::new());
        let Some(status) = check_error(g.expect.error.as_ref(), result).map_err(StepError::new)?
        else {
            return Ok(());
        };
        if let Some(ip) = &g.expect.ip {
            let actual = if status.ip.is_empty() {
                "none".to_owned()
            } else {
                self.redactor.ip_token(&status.ip)
            };
            let wanted = match ip {
                IpExpect::None => "none".to_owned(),
                IpExpect::Of(alias) => format!("<ip:{alias}>"),
            };
            expect_eq("ip", &wanted, &actual)?;
        }
        if let Some(wanted) = &g.expect.sandboxes {
            let actual: Vec<String> = status
                .sandbox_statuses
                .iter()
                .map(|s| self.alias_of(&s.id))
                .collect();
            expect_eq("sandboxes (newest first)", &show(wanted), &show(&actual))?;
        }
        if let Some(wanted) = &g.expect.containers {
            let actual = sorted(
                status
                    .container_statuses
                    .iter()
                    .map(|c| self.alias_of(&c.id.id)),
            );
            expect_eq(
                "containers",
                &show(&sorted(wanted.iter().cloned())),
                &show(&actual),
            )?;
        }
        Ok(())
    }

    async fn running_pod(
        &mut self,
        manager: &KubeGenericRuntimeManager,
        pod: &str,
    ) -> Result<Pod, StepError> {
        let uid = self.uid(pod);
        let pods = manager.get_pods(true).await;
        // Finding the running pod is not the call under test.
        self.log.take();
        let pods =
            pods.map_err(|err| StepError::new(format!("listing the running pod failed: {err}")))?;
        let mut running = pods
            .into_iter()
            .find(|p| p.id == uid)
            .unwrap_or_else(|| Pod {
                id: uid,
                name: pod.to_owned(),
                namespace: self.namespace.clone(),
                ..Default::default()
            });
        // Runtimes list in no fixed order (containerd's is a map's); the seed takes the first
        // sandbox for the latest, so hand it the case's sandboxes newest first and the
        // containers in creation order, the same on every runtime.
        running
            .sandboxes
            .sort_by_key(|s| std::cmp::Reverse(self.rank(&s.id.id)));
        running.containers.sort_by_key(|c| self.rank(&c.id.id));
        Ok(running)
    }

    async fn kill_pod(&mut self, k: &step::KillPod) -> Result<(), StepError> {
        let manager = self.ensure_manager().await?;
        let mut running = self.running_pod(&manager, &k.pod).await?;
        for id in &k.extra_containers {
            running.containers.push(Container {
                id: ContainerId {
                    r#type: manager.runtime_type().to_owned(),
                    id: id.clone(),
                },
                name: id.clone(),
                state: manager::ContainerState::Running,
                ..Default::default()
            });
        }
        let spec = k.with_spec.then(|| self.pod_spec(&k.pod, k.host_network));
        let (manager, plugin) = match &k.teardown_fails {
            Some(message) => {
                let plugin = Arc::new(RecordingNetworkPlugin::failing(message.clone()));
                let manager = KubeGenericRuntimeManager::new(self.recorded.clone(), plugin.clone())
                    .await
                    .map_err(|err| {
                        StepError::new(format!(
                            "cannot build a manager with a failing network plugin: {err}"
                        ))
                    })?;
                self.log.take();
                (manager, plugin)
            }
            None => (manager, self.plugin.clone()),
        };
        let before = plugin.calls().len();
        let result = manager
            .kill_pod(spec.as_ref(), &running, k.grace_override)
            .await;
        let teardown: Vec<_> = plugin.calls().into_iter().skip(before).collect();
        let mut call = format!("kill_pod {}", k.pod);
        if !k.with_spec {
            call.push_str(" without spec");
        }
        if let Some(grace) = k.grace_override {
            call.push_str(&format!(" grace_override={grace}"));
        }
        self.observe(call, Ok(yaml(&result)), vec![("teardown", yaml(&teardown))]);
        let expect = &k.expect;
        if let Some(wanted) = &expect.teardown {
            let actual: Vec<String> = teardown
                .iter()
                .map(|t| self.alias_of(&t.sandbox_id))
                .collect();
            expect_eq("teardown", &show(wanted), &show(&actual))?;
        }
        if let Some(failed) = expect.failed {
            let actual = result.error();
            if actual.is_some() != failed {
                return Err(mismatch(
                    "failed",
                    &failed.to_string(),
                    &match actual {
                        Some(text) => format!("true ({})", self.redactor.text(&text)),
                        None => "false".to_owned(),
                    },
                ));
            }
        }
        if let Some(wanted) = &expect.results {
            self.check_results(wanted, &result)?;
        }
        if expect.stopped.is_some() {
            self.check_stopped(&k.pod).await?;
        }
        Ok(())
    }

    fn pod_spec(&self, pod: &str, host_network: Option<bool>) -> PodSpec {
        let host_network = host_network.unwrap_or_else(|| {
            self.sandboxes
                .iter()
                .find(|s| s.pod == pod)
                .is_some_and(|s| s.host_network)
        });
        PodSpec {
            uid: self.uid(pod),
            name: pod.to_owned(),
            namespace: self.namespace.clone(),
            host_network,
            termination_grace_period_seconds: None,
            deletion_grace_period_seconds: None,
            containers: self
                .containers
                .iter()
                .map(|c| ContainerSpec {
                    name: c.name.clone(),
                    image: String::new(),
                })
                .collect(),
        }
    }

    fn check_results(
        &self,
        wanted: &[step::SyncResultExpect],
        result: &PodSyncResult,
    ) -> Result<(), StepError> {
        let describe = |r: &manager::SyncResult| {
            format!(
                "{} {} {}",
                action_name(r.action),
                self.target_alias(&r.target),
                r.error.as_deref().unwrap_or("ok")
            )
        };
        let actual: Vec<String> = result.results.iter().map(describe).collect();
        if wanted.len() != result.results.len() {
            let wanted: Vec<String> = wanted.iter().map(|w| w.action.to_string()).collect();
            return Err(mismatch("results", &show(&wanted), &show(&actual)));
        }
        for (index, (want, got)) in wanted.iter().zip(&result.results).enumerate() {
            let field = format!("results[{index}]");
            expect_eq(
                &format!("{field}.action"),
                &want.action.to_string(),
                action_name(got.action),
            )?;
            if let Some(target) = &want.target {
                expect_eq(
                    &format!("{field}.target"),
                    target,
                    &self.target_alias(&got.target),
                )?;
            }
            if let Some(error) = &want.error {
                expect_eq(
                    &format!("{field}.error"),
                    error,
                    got.error.as_deref().unwrap_or("none"),
                )?;
            }
            if let Some(part) = &want.message_contains {
                if !got.message.contains(part.as_str()) {
                    return Err(mismatch(
                        &format!("{field}.message"),
                        &format!("containing {part:?}"),
                        &format!("{:?}", self.redactor.text(&got.message)),
                    ));
                }
            }
        }
        Ok(())
    }

    /// A sync result's target in suite terms: a pod alias for a UID, a container alias for a
    /// container name or id.
    fn target_alias(&self, target: &str) -> String {
        if let Some(pod) = self.pods.iter().find(|p| self.uid(p) == target) {
            return pod.clone();
        }
        if let Some(c) = self
            .containers
            .iter()
            .find(|c| c.name == target || c.id == target)
        {
            return c.alias.clone();
        }
        self.alias_of(target)
    }

    /// After a kill: every sandbox of the pod is not ready and none of its containers runs.
    async fn check_stopped(&self, pod: &str) -> Result<(), StepError> {
        let uid = self.uid(pod);
        let own = BTreeMap::from([
            (labels::RUN_ID.to_owned(), self.run_id.clone()),
            (labels::CASE.to_owned(), self.case_no.to_string()),
        ]);
        let sandboxes = self
            .env
            .client
            .list_pod_sandbox(Some(v1::PodSandboxFilter {
                label_selector: own.clone(),
                ..Default::default()
            }))
            .await?;
        let pod_sandboxes: Vec<&v1::PodSandbox> = sandboxes
            .iter()
            .filter(|s| s.metadata.as_ref().is_some_and(|m| m.uid == uid))
            .collect();
        let ready: Vec<String> = pod_sandboxes
            .iter()
            .filter(|s| s.state == v1::PodSandboxState::SandboxReady as i32)
            .map(|s| self.alias_of(&s.id))
            .collect();
        if !ready.is_empty() {
            return Err(mismatch(
                "stopped",
                "all",
                &format!("sandboxes still ready: {}", show(&ready)),
            ));
        }
        let sandbox_ids: BTreeSet<&str> = pod_sandboxes.iter().map(|s| s.id.as_str()).collect();
        let containers = self
            .env
            .client
            .list_containers(Some(v1::ContainerFilter {
                label_selector: own,
                ..Default::default()
            }))
            .await?;
        let running: Vec<String> = containers
            .iter()
            .filter(|c| {
                c.labels.get(labels::POD_UID) == Some(&uid)
                    || sandbox_ids.contains(c.pod_sandbox_id.as_str())
            })
            .filter(|c| c.state == v1::ContainerState::ContainerRunning as i32)
            .map(|c| self.alias_of(&c.id))
            .collect();
        if !running.is_empty() {
            return Err(mismatch(
                "stopped",
                "all",
                &format!("containers still running: {}", show(&running)),
            ));
        }
        Ok(())
    }

    async fn get_netns(&mut self, g: &step::GetNetns) -> Result<(), StepError> {
        let manager = self.ensure_manager().await?;
        let id = self.sandbox(&g.sandbox)?.id.clone();
        let result = manager.get_netns(&id).await;
        let outcome = result
            .as_ref()
            .map(|path| yaml(&BTreeMap::from([("netns", netns_token(path))])))
            .map_err(ToString::to_string);
        self.observe(format!("get_netns {}", g.sandbox), outcome, Vec::new());
        if let Some(path) = check_error(g.expect.error.as_ref(), result).map_err(StepError::new)? {
            if let Some(empty) = g.expect.empty {
                expect_eq("empty", &empty.to_string(), &path.is_empty().to_string())?;
            }
        }
        Ok(())
    }

    async fn get_pod_container_id(&mut self, g: &step::GetPodContainerId) -> Result<(), StepError> {
        let manager = self.ensure_manager().await?;
        let running = self.running_pod(&manager, &g.pod).await?;
        let result = manager.get_pod_container_id(&running);
        let outcome = result.as_ref().map(yaml).map_err(ToString::to_string);
        self.observe(
            format!("get_pod_container_id {}", g.pod),
            outcome,
            Vec::new(),
        );
        if let Some(id) = check_error(g.expect.error.as_ref(), result).map_err(StepError::new)? {
            if let Some(wanted) = &g.expect.of {
                expect_eq("of", wanted, &self.alias_of(&id.id))?;
            }
        }
        Ok(())
    }
}

/// Every pod alias a case mentions.
fn pods_of(case: &Case) -> BTreeSet<String> {
    let mut pods = BTreeSet::new();
    for step in &case.steps {
        match step {
            Step::RunSandbox(s) => {
                pods.insert(s.pod.clone());
            }
            Step::MockSeedSandbox(s) => {
                pods.insert(s.pod.clone());
            }
            Step::CreateContainer(step::CreateContainer {
                pod_labels: Some(p),
                ..
            })
            | Step::MockSeedContainer(step::MockSeedContainer {
                pod_labels: Some(p),
                ..
            }) if p != "none" => {
                pods.insert(p.clone());
            }
            Step::GetPodStatus(g) => {
                pods.insert(g.pod.clone());
            }
            Step::GetPods(g) => {
                pods.extend(g.expect.pods.keys().cloned());
                pods.extend(g.expect.only.iter().flatten().cloned());
                pods.extend(g.expect.absent.iter().cloned());
            }
            Step::KillPod(k) => {
                pods.insert(k.pod.clone());
            }
            Step::GetPodContainerId(g) => {
                pods.insert(g.pod.clone());
            }
            _ => {}
        }
    }
    pods.remove("");
    pods
}

fn seed_time(seconds: Option<i64>) -> i64 {
    match seconds {
        Some(s) => s.saturating_mul(1_000_000_000),
        None => SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)),
    }
}

fn yaml<T: Serialize + ?Sized>(value: &T) -> Value {
    serde_yaml::to_value(value)
        .unwrap_or_else(|err| Value::String(format!("cannot serialize: {err}")))
}

fn netns_token(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        "<netns>".to_owned()
    }
}

fn state_name(state: manager::ContainerState) -> &'static str {
    match state {
        manager::ContainerState::Created => "created",
        manager::ContainerState::Running => "running",
        manager::ContainerState::Exited => "exited",
        manager::ContainerState::Unknown => "unknown",
    }
}

fn suite_state_name(state: step::ContainerState) -> &'static str {
    match state {
        step::ContainerState::Created => "created",
        step::ContainerState::Running => "running",
        step::ContainerState::Exited => "exited",
        step::ContainerState::Unknown => "unknown",
    }
}

fn action_name(action: SyncAction) -> &'static str {
    match action {
        SyncAction::KillContainer => "kill_container",
        SyncAction::TeardownNetwork => "teardown_network",
        SyncAction::KillPodSandbox => "kill_pod_sandbox",
    }
}

fn sorted(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut items: Vec<String> = items.collect();
    items.sort();
    items
}

fn show(items: &[String]) -> String {
    let shown: Vec<String> = items
        .iter()
        .map(|i| {
            if i.is_empty() {
                "\"\"".to_owned()
            } else {
                i.clone()
            }
        })
        .collect();
    format!("[{}]", shown.join(", "))
}

fn mismatch(field: &str, expected: &str, actual: &str) -> StepError {
    StepError::new(format!("{field}: expected {expected}, got {actual}"))
}

fn expect_eq(field: &str, expected: &str, actual: &str) -> Result<(), StepError> {
    if expected == actual {
        Ok(())
    } else {
        Err(mismatch(field, expected, actual))
    }
}

/// The kind of a manager error, as suites name it.
fn error_kind(err: &ManagerError) -> ErrorKind {
    match err {
        ManagerError::VersionNotSupported { .. } => ErrorKind::VersionNotSupported,
        ManagerError::Call(_) => ErrorKind::Call,
        _ => ErrorKind::Other,
    }
}

/// Checks a manager result against an optional error expectation: with one, the call must
/// have failed like that (`Ok(None)`); without, it must have succeeded (`Ok(Some(value))`).
fn check_error<T>(
    expect: Option<&ErrorExpect>,
    result: Result<T, ManagerError>,
) -> Result<Option<T>, String> {
    match (expect, result) {
        (None, Ok(value)) => Ok(Some(value)),
        (None, Err(err)) => Err(format!("expected success, got error: {err}")),
        (Some(want), Ok(_)) => Err(format!(
            "error: expected {}, got success",
            describe_error(want)
        )),
        (Some(want), Err(err)) => {
            let kind = error_kind(&err);
            if let Some(wanted) = want.kind {
                if wanted != kind {
                    return Err(format!("error kind: expected {wanted}, got {kind} ({err})"));
                }
            }
            if let Some(code) = want.code {
                let actual = match &err {
                    ManagerError::Call(call) => step::GrpcCode(call.code).to_string(),
                    _ => "no gRPC code".to_owned(),
                };
                if actual != code.to_string() {
                    return Err(format!("error code: expected {code}, got {actual} ({err})"));
                }
            }
            if let Some(part) = &want.contains {
                let text = err.to_string();
                if !text.contains(part.as_str()) {
                    return Err(format!(
                        "error: expected a message containing {part:?}, got {text:?}"
                    ));
                }
            }
            Ok(None)
        }
    }
}

fn describe_error(want: &ErrorExpect) -> String {
    let mut parts = Vec::new();
    if let Some(kind) = want.kind {
        parts.push(kind.to_string());
    }
    if let Some(code) = want.code {
        parts.push(format!("code {code}"));
    }
    if let Some(part) = &want.contains {
        parts.push(format!("containing {part:?}"));
    }
    if parts.is_empty() {
        "an error".to_owned()
    } else {
        format!("an error ({})", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;
    use crate::suite::step::GrpcCode;

    fn call_error(code: tonic::Code) -> ManagerError {
        ManagerError::Call(CallError {
            method: "Version",
            endpoint: "unix:///x".into(),
            code,
            message: "boom".into(),
        })
    }

    fn expect(
        kind: Option<ErrorKind>,
        code: Option<tonic::Code>,
        contains: Option<&str>,
    ) -> ErrorExpect {
        ErrorExpect {
            kind,
            code: code.map(GrpcCode),
            contains: contains.map(str::to_owned),
        }
    }

    #[rstest]
    #[case::success_expected_and_got(None, Ok(1), Ok(Some(1)))]
    #[case::success_expected_error_got(
        None,
        Err(call_error(tonic::Code::Unknown)),
        Err("expected success")
    )]
    #[case::error_expected_success_got(
        Some(expect(Some(ErrorKind::Call), None, None)),
        Ok(1),
        Err("error: expected an error (call), got success")
    )]
    #[case::right_kind_and_code(
        Some(expect(Some(ErrorKind::Call), Some(tonic::Code::Unknown), Some("boom"))),
        Err(call_error(tonic::Code::Unknown)),
        Ok(None)
    )]
    #[case::wrong_kind(
        Some(expect(Some(ErrorKind::VersionNotSupported), None, None)),
        Err(call_error(tonic::Code::Unknown)),
        Err("error kind: expected version_not_supported, got call")
    )]
    #[case::wrong_code(
        Some(expect(None, Some(tonic::Code::NotFound), None)),
        Err(call_error(tonic::Code::Unknown)),
        Err("error code: expected NotFound, got Unknown")
    )]
    #[case::version_not_supported(
        Some(expect(Some(ErrorKind::VersionNotSupported), None, Some("0.2.0"))),
        Err(ManagerError::VersionNotSupported { version: "0.2.0".into() }),
        Ok(None)
    )]
    #[case::message_lacks_the_text(
        Some(expect(None, None, Some("elsewhere"))),
        Err(call_error(tonic::Code::Unknown)),
        Err("expected a message containing \"elsewhere\"")
    )]
    fn manager_results_are_checked_against_the_error_expectation(
        #[case] want: Option<ErrorExpect>,
        #[case] result: Result<i32, ManagerError>,
        #[case] expected: Result<Option<i32>, &str>,
    ) {
        let actual = check_error(want.as_ref(), result);
        match (actual, expected) {
            (Ok(a), Ok(e)) => assert_eq!(a, e),
            (Err(a), Err(e)) => assert!(a.contains(e), "{a:?} lacks {e:?}"),
            (a, e) => panic!("got {a:?}, expected {e:?}"),
        }
    }

    #[test]
    fn pod_uids_and_namespaces_are_unique_per_run_and_case() {
        assert_eq!(pod_uid("r1", 3, "web"), "r1-3-web");
        assert_eq!(pod_uid("r1", 3, ""), "");
        assert_eq!(namespace("r1", 3), "crih-r1-3");
    }
}
