//! Applying a resolved scenario to a runtime over CRI, with labels and UIDs as the kubelet
//! writes them, and reading the runtime's state back. The mock is driven through the same gRPC
//! client as a real runtime; its control service only sets the clock and injects faults.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use tonic::transport::Channel;

use super::error::PropError;
use super::model::{Action, Model, Naming, Outcome, CLOCK_BASE_SECONDS};
use super::scenario::MAX_PODS;
use crate::cri::control::{self, mock_control_client::MockControlClient};
use crate::cri::{
    labels, namespace_options, v1, CallError, Container, CriClient, PodSandbox, MAX_MESSAGE_SIZE,
};
use crate::images;
use crate::manager::{
    ContainerState, KubeGenericRuntimeManager, KubeletProfile, ManagerError, NetworkPlugin,
    NoopNetworkPlugin,
};
use crate::mock::MockRuntime;
use crate::observe::Redactor;
use crate::runner::case::DEFAULT_COMMAND;
use crate::suite::step::BUSYBOX;

/// StopContainer grace period the scenarios use (the kubelet's minimum).
pub(crate) const STOP_TIMEOUT_SECONDS: i64 = 2;

/// The message of every error the prop run injects, so results can be traced back to it.
pub const INJECTED_MESSAGE: &str = "injected by cri-harness prop";

/// A runtime a property runs against.
#[derive(Debug, Clone)]
pub struct Target {
    /// The CRI client.
    pub client: CriClient,
    /// The mock's control service; `None` on a real runtime.
    pub control: Option<MockControlClient<Channel>>,
    /// The kubelet whose rules the managers built for it follow.
    pub kubelet: KubeletProfile,
    /// The manager the cases share, connected (one Version call) by the first that needs it:
    /// it keeps no state between calls, so a case's verdict does not depend on another's.
    manager: Arc<tokio::sync::OnceCell<KubeGenericRuntimeManager>>,
}

impl Target {
    /// A target on a mock over the in-memory duplex, control service included.
    pub async fn mock(mock: &MockRuntime) -> Result<Self, PropError> {
        let channel = mock
            .duplex_channel()
            .await
            .map_err(|source| PropError::Mock { source })?;
        let client = mock
            .duplex_client()
            .await
            .map_err(|source| PropError::Mock { source })?;
        // Pulled once here and kept through every reset (see `reset`), so no case pulls it.
        ensure_image(&client).await?;
        Ok(Self {
            client,
            control: Some(control_client(channel)),
            kubelet: KubeletProfile::default(),
            manager: Arc::default(),
        })
    }

    /// A target on a real runtime (no control service).
    pub fn endpoint(client: CriClient) -> Self {
        Self {
            client,
            control: None,
            kubelet: KubeletProfile::default(),
            manager: Arc::default(),
        }
    }

    /// The same target, its managers following `kubelet`'s rules.
    #[must_use]
    pub fn with_kubelet(mut self, kubelet: KubeletProfile) -> Self {
        self.kubelet = kubelet;
        // A manager connected under the old kubelet is not this target's.
        self.manager = Arc::default();
        self
    }

    /// The shared manager, following the target's kubelet, tearing networks down with
    /// `network`. Connects it on first use: the Version call's error is returned as is.
    pub async fn manager(
        &self,
        network: Arc<dyn NetworkPlugin>,
    ) -> Result<KubeGenericRuntimeManager, ManagerError> {
        let shared = self
            .manager
            .get_or_try_init(|| async {
                KubeGenericRuntimeManager::new(self.client.clone(), Arc::new(NoopNetworkPlugin))
                    .await
                    .map(|manager| manager.with_profile(self.kubelet))
            })
            .await?;
        Ok(shared.clone().with_network_plugin(network))
    }

    /// True on the mock.
    pub fn is_mock(&self) -> bool {
        self.control.is_some()
    }

    fn control(&self, what: &'static str) -> Result<MockControlClient<Channel>, PropError> {
        self.control.clone().ok_or(PropError::NoControl { what })
    }

    /// Forgets everything on the mock but its images, which no case removes (a no-op on a real
    /// runtime: cases are kept apart by naming there, and cleaned up by [`Target::cleanup`]).
    pub async fn reset(&self) -> Result<(), PropError> {
        if let Some(mut control) = self.control.clone() {
            control
                .reset(control::ResetRequest { keep_images: true })
                .await
                .map_err(|source| PropError::Control {
                    method: "Reset",
                    source,
                })?;
        }
        Ok(())
    }

    /// Makes the next `count` calls of `method` fail with Internal and [`INJECTED_MESSAGE`].
    pub async fn inject_error(&self, method: &str, count: u32) -> Result<(), PropError> {
        if count == 0 {
            return Ok(());
        }
        let mut control = self.control("injecting errors")?;
        let request = control::InjectErrorRequest {
            method: method.to_owned(),
            code: tonic::Code::Internal as i32,
            message: INJECTED_MESSAGE.to_owned(),
            count,
            ..Default::default()
        };
        control
            .inject_error(request)
            .await
            .map_err(|source| PropError::Control {
                method: "InjectError",
                source,
            })?;
        Ok(())
    }

    /// Sets the mock's Version answer.
    pub async fn set_version(&self, version: v1::VersionResponse) -> Result<(), PropError> {
        let mut control = self.control("setting the version")?;
        control
            .set_version(control::SetVersionRequest {
                version: Some(version),
            })
            .await
            .map_err(|source| PropError::Control {
                method: "SetVersion",
                source,
            })?;
        Ok(())
    }

    async fn set_clock(&self, unix_seconds: i64) -> Result<(), PropError> {
        let mut control = self.control("setting the clock")?;
        control
            .set_clock(control::SetClockRequest {
                unix_nanos: unix_seconds.saturating_mul(1_000_000_000),
            })
            .await
            .map_err(|source| PropError::Control {
                method: "SetClock",
                source,
            })?;
        Ok(())
    }

    /// Removes every sandbox and container of the case `naming` names (by its labels).
    pub async fn cleanup(&self, naming: &Naming) -> Result<(), PropError> {
        let own = own_selector(naming);
        let call = |what: &str| {
            let what = format!("{what} of case {} (cleanup)", naming.case);
            move |source| PropError::Call { what, source }
        };
        let containers = self
            .client
            .list_containers(Some(v1::ContainerFilter {
                label_selector: own.clone(),
                ..Default::default()
            }))
            .await
            .map_err(call("listing the containers"))?;
        for container in containers {
            self.client
                .remove_container(&container.id)
                .await
                .map_err(call("removing a container"))?;
        }
        let sandboxes = self
            .client
            .list_pod_sandbox(Some(v1::PodSandboxFilter {
                label_selector: own,
                ..Default::default()
            }))
            .await
            .map_err(call("listing the sandboxes"))?;
        for sandbox in sandboxes {
            self.client
                .remove_pod_sandbox(&sandbox.id)
                .await
                .map_err(call("removing a sandbox"))?;
        }
        Ok(())
    }
}

/// A control client with the CRI client's message limits.
pub fn control_client(channel: Channel) -> MockControlClient<Channel> {
    MockControlClient::new(channel)
        .max_decoding_message_size(MAX_MESSAGE_SIZE)
        .max_encoding_message_size(MAX_MESSAGE_SIZE)
}

/// The labels every object of a case carries.
fn own_selector(naming: &Naming) -> BTreeMap<String, String> {
    BTreeMap::from([
        (labels::RUN_ID.to_owned(), naming.run_id.clone()),
        (labels::CASE.to_owned(), naming.case.to_string()),
    ])
}

/// The runtime's ids and answers for a scenario's objects, by number.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Applied {
    /// Sandbox ids (`None`: the runtime refused to make it).
    pub sandboxes: Vec<Option<String>>,
    /// The IP each sandbox reported right after it was run ("" for none).
    pub ips: Vec<String>,
    /// Container ids.
    pub containers: Vec<Option<String>>,
    /// Each step's answer: `Ok`, the error's code, or `None` when skipped (its object is
    /// missing because the runtime refused to make it).
    pub outcomes: Vec<Option<Result<(), tonic::Code>>>,
}

impl Applied {
    /// The number of the sandbox with this id.
    pub fn sandbox_number(&self, id: &str) -> Option<usize> {
        self.sandboxes.iter().position(|s| s.as_deref() == Some(id))
    }

    /// The number of the container with this id.
    pub fn container_number(&self, id: &str) -> Option<usize> {
        self.containers
            .iter()
            .position(|c| c.as_deref() == Some(id))
    }

    /// Sandbox `n`'s id ("" when it was never made).
    pub fn sandbox_id(&self, n: usize) -> &str {
        self.sandboxes
            .get(n)
            .and_then(|s| s.as_deref())
            .unwrap_or_default()
    }

    /// The IP sandbox `n` reported when it was run.
    pub fn ip(&self, n: usize) -> &str {
        self.ips.get(n).map_or("", String::as_str)
    }

    /// The one redactor, taught the scenario's objects by alias: sandbox `n` reads
    /// `<sandbox:sN>` and its IP `<ip:sN>`, container `n` reads `<container:cN>` and pod `pN`'s
    /// UID `<uid:pN>`, so answers of two runtimes (and of two runs) read alike.
    pub fn redactor(&self, naming: &Naming) -> Redactor {
        let case = usize::try_from(naming.case).unwrap_or(usize::MAX);
        let mut redactor = Redactor::new(&naming.run_id, &naming.namespace(), case);
        for (n, id) in self.sandboxes.iter().enumerate() {
            let alias = Naming::sandbox_alias(n);
            if let Some(id) = id {
                redactor.sandbox(id, &alias);
            }
            redactor.ip(self.ip(n), &alias);
        }
        for (n, id) in self.containers.iter().enumerate() {
            if let Some(id) = id {
                redactor.container(id, &Naming::container_alias(n));
            }
        }
        for pod in 0..MAX_PODS {
            redactor.pod(&naming.pod_uid(pod), &Naming::pod_name(pod));
        }
        redactor
    }
}

/// The seed kubelet's mark, on what its rules list; today's kubelet writes none.
fn managed_label(kubelet: KubeletProfile) -> Option<(String, String)> {
    (!kubelet.is_current()).then(|| (labels::MANAGED.to_owned(), "true".to_owned()))
}

/// The sandbox config of pod `pod`'s sandbox, labelled as `kubelet` labels it plus the run's
/// labels.
pub fn sandbox_config(
    naming: &Naming,
    pod: u8,
    attempt: u32,
    host_network: bool,
    kubelet: KubeletProfile,
) -> v1::PodSandboxConfig {
    let name = Naming::pod_name(pod);
    let uid = naming.pod_uid(pod);
    let namespace = naming.namespace();
    let mut sandbox_labels = own_selector(naming);
    sandbox_labels.extend(managed_label(kubelet));
    sandbox_labels.extend([
        (labels::POD_UID.to_owned(), uid.clone()),
        (labels::POD_NAME.to_owned(), name.clone()),
        (labels::POD_NAMESPACE.to_owned(), namespace.clone()),
    ]);
    PodSandbox::new(&name, &namespace, &uid)
        .attempt(attempt)
        .network(host_network)
        .labels(sandbox_labels)
        .build()
}

/// A container config named `name`, carrying pod `labels`' pod labels (none for `None`), as
/// `kubelet` labels it.
fn container_config(
    naming: &Naming,
    name: &str,
    labels_of: Option<u8>,
    host_network: bool,
    kubelet: KubeletProfile,
) -> v1::ContainerConfig {
    let mut container_labels = own_selector(naming);
    container_labels.extend(managed_label(kubelet));
    container_labels.insert(labels::CONTAINER_NAME.to_owned(), name.to_owned());
    if let Some(pod) = labels_of {
        container_labels.extend([
            (labels::POD_UID.to_owned(), naming.pod_uid(pod)),
            (labels::POD_NAME.to_owned(), Naming::pod_name(pod)),
            (labels::POD_NAMESPACE.to_owned(), naming.namespace()),
        ]);
    }
    Container::new(
        name,
        &images::resolve(BUSYBOX),
        namespace_options(host_network),
    )
    .command(DEFAULT_COMMAND.iter().map(|s| (*s).to_owned()).collect())
    .labels(container_labels)
    .build()
}

/// One step's description in scenario terms (`run_sandbox s2 (p1, attempt 0)`).
pub fn describe(action: &Action) -> String {
    match action {
        Action::RunSandbox {
            sandbox,
            pod,
            attempt,
            host_network,
            ..
        } => format!(
            "run_sandbox {} (p{pod}, attempt {attempt}{})",
            sandbox.map_or_else(|| "-".to_owned(), Naming::sandbox_alias),
            if *host_network { ", host network" } else { "" }
        ),
        Action::StopSandbox { sandbox } => format!("stop_sandbox s{sandbox}"),
        Action::RemoveSandbox { sandbox } => format!("remove_sandbox s{sandbox}"),
        Action::CreateContainer {
            container,
            sandbox,
            name,
            ..
        } => format!(
            "create_container {} ({name} in s{sandbox})",
            container.map_or_else(|| "-".to_owned(), Naming::container_alias)
        ),
        Action::StopContainer { container } => format!("stop_container c{container}"),
        Action::RemoveContainer { container } => format!("remove_container c{container}"),
    }
}

/// Which sandboxes' IPs [`apply`] reads, with a PodSandboxStatus right after running each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IpReads {
    /// Every sandbox's: the redactor then knows every IP (the differential).
    All,
    /// Only these sandboxes' (by number): the ones a check compares.
    Of(BTreeSet<usize>),
}

impl IpReads {
    /// None: the check compares no IP.
    pub fn none() -> Self {
        Self::Of(BTreeSet::new())
    }

    fn reads(&self, sandbox: usize) -> bool {
        match self {
            Self::All => true,
            Self::Of(numbers) => numbers.contains(&sandbox),
        }
    }
}

/// Applies the model's steps to `target`, reading the IPs `ips` names. With `strict`, the
/// first answer that differs from the model's outcome is a [`PropError::Disagreement`];
/// without, answers are only recorded (the differential compares them between runtimes).
pub async fn apply(
    model: &Model,
    target: &Target,
    naming: &Naming,
    strict: bool,
    ips: &IpReads,
) -> Result<Applied, PropError> {
    let mut applied = Applied {
        sandboxes: vec![None; model.sandboxes.len()],
        ips: vec![String::new(); model.sandboxes.len()],
        containers: vec![None; model.containers.len()],
        outcomes: Vec::with_capacity(model.steps.len()),
    };
    let mut configs: BTreeMap<usize, v1::PodSandboxConfig> = BTreeMap::new();
    let mut image_ready = false;
    let client = &target.client;
    for (index, step) in model.steps.iter().enumerate() {
        let answer: Option<Result<(), CallError>> = match &step.action {
            Action::RunSandbox {
                sandbox,
                pod,
                attempt,
                host_network,
                created_rank,
            } => {
                if model.clock {
                    target.set_clock(CLOCK_BASE_SECONDS + created_rank).await?;
                }
                let config = sandbox_config(naming, *pod, *attempt, *host_network, target.kubelet);
                let answer = client.run_pod_sandbox(config.clone(), "").await;
                Some(match (answer, sandbox) {
                    (Ok(id), Some(number)) => {
                        if ips.reads(*number) {
                            let status =
                                client.pod_sandbox_status(&id).await.map_err(|source| {
                                    PropError::Call {
                                        what: format!(
                                            "reading s{number}'s status after running it"
                                        ),
                                        source,
                                    }
                                })?;
                            applied.ips[*number] = status
                                .status
                                .and_then(|s| s.network)
                                .map(|n| n.ip)
                                .unwrap_or_default();
                        }
                        applied.sandboxes[*number] = Some(id);
                        configs.insert(*number, config);
                        Ok(())
                    }
                    (Ok(_), None) => Ok(()),
                    (Err(err), _) => Err(err),
                })
            }
            Action::StopSandbox { sandbox } => match &applied.sandboxes[*sandbox] {
                Some(id) => Some(client.stop_pod_sandbox(id).await),
                None => None,
            },
            Action::RemoveSandbox { sandbox } => match &applied.sandboxes[*sandbox] {
                Some(id) => Some(client.remove_pod_sandbox(id).await),
                None => None,
            },
            Action::CreateContainer {
                container,
                sandbox,
                name,
                labels,
                start,
            } => match (&applied.sandboxes[*sandbox], configs.get(sandbox)) {
                (Some(sandbox_id), Some(sandbox_config)) => {
                    // A mock target pulled it when it was made, and keeps it.
                    if !image_ready && !target.is_mock() {
                        ensure_image(client).await?;
                        image_ready = true;
                    }
                    let host_network = model.sandboxes[*sandbox].host_network;
                    let config =
                        container_config(naming, name, *labels, host_network, target.kubelet);
                    let created = client
                        .create_container(sandbox_id, config, sandbox_config.clone())
                        .await;
                    Some(match created {
                        Ok(id) => {
                            if let Some(number) = container {
                                applied.containers[*number] = Some(id.clone());
                            }
                            if *start {
                                client.start_container(&id).await
                            } else {
                                Ok(())
                            }
                        }
                        Err(err) => Err(err),
                    })
                }
                _ => None,
            },
            Action::StopContainer { container } => match &applied.containers[*container] {
                Some(id) => Some(client.stop_container(id, STOP_TIMEOUT_SECONDS).await),
                None => None,
            },
            Action::RemoveContainer { container } => match &applied.containers[*container] {
                Some(id) => Some(client.remove_container(id).await),
                None => None,
            },
        };
        let outcome = answer.map(|a| a.map_err(|err| err.code));
        if strict {
            let agrees = match (&outcome, step.expect) {
                (Some(Ok(())), Outcome::Accepted) => true,
                (Some(Err(_)), Outcome::Refused(_)) => true,
                (None, _) => false,
                _ => false,
            };
            if !agrees {
                return Err(PropError::Disagreement {
                    step: index,
                    action: describe(&step.action),
                    expected: format!("{:?}", step.expect),
                    actual: match outcome {
                        Some(Ok(())) => "OK".to_owned(),
                        Some(Err(code)) => format!("{code:?}"),
                        None => "nothing (its object was never made)".to_owned(),
                    },
                });
            }
        }
        applied.outcomes.push(outcome);
    }
    Ok(applied)
}

/// Pulls the test image unless the runtime has it (a real runtime in CI has it preloaded).
async fn ensure_image(client: &CriClient) -> Result<(), PropError> {
    let image = images::resolve(BUSYBOX);
    let present = client
        .image_status(&image)
        .await
        .map_err(|source| PropError::Call {
            what: "asking for the test image".to_owned(),
            source,
        })?;
    if present.is_none() {
        client
            .pull_image(&image)
            .await
            .map_err(|source| PropError::Call {
                what: "pulling the test image".to_owned(),
                source,
            })?;
    }
    Ok(())
}

/// The runtime's state of a scenario's objects, by number.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuntimeState {
    /// Listed sandboxes: READY or not.
    pub sandboxes: BTreeMap<usize, bool>,
    /// Listed containers and their states.
    pub containers: BTreeMap<usize, ContainerState>,
}

/// Lists the runtime's sandboxes and containers and keeps those of the scenario.
pub async fn read_state(target: &Target, applied: &Applied) -> Result<RuntimeState, PropError> {
    let call = |what: &str| {
        let what = what.to_owned();
        move |source| PropError::Call { what, source }
    };
    let sandboxes = target
        .client
        .list_pod_sandbox(None)
        .await
        .map_err(call("listing the sandboxes after the call"))?;
    let containers = target
        .client
        .list_containers(None)
        .await
        .map_err(call("listing the containers after the call"))?;
    let mut state = RuntimeState::default();
    for sandbox in sandboxes {
        if let Some(number) = applied.sandbox_number(&sandbox.id) {
            let ready = sandbox.state == v1::PodSandboxState::SandboxReady as i32;
            state.sandboxes.insert(number, ready);
        }
    }
    for container in containers {
        if let Some(number) = applied.container_number(&container.id) {
            state
                .containers
                .insert(number, ContainerState::from_cri_container(container.state));
        }
    }
    Ok(state)
}
