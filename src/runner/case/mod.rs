//! One case, step by step: setup steps act on the runtime through an unrecorded client, manager
//! steps go through the manager over a recording client, and each manager step is checked
//! against its expectations and kept (redacted) for the snapshot.

mod calls;
mod expect;
mod setup;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_yaml::Value;
use sha2::{Digest, Sha256};
use tonic::transport::Channel;

use super::redact::Redactor;
use crate::cri::{labels, v1, CallError, CallLog, CriClient};
use crate::manager::{KubeGenericRuntimeManager, RecordingNetworkPlugin};
use crate::mock::control_api::mock_control_client::MockControlClient;
use crate::suite::step::{self, Step};
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
            Step::CheckNetwork(c) => self.check_network(c).await,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_uids_and_namespaces_are_unique_per_run_and_case() {
        assert_eq!(pod_uid("r1", 3, "web"), "r1-3-web");
        assert_eq!(pod_uid("r1", 3, ""), "");
        assert_eq!(namespace("r1", 3), "crih-r1-3");
    }
}
