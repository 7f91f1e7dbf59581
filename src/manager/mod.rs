//! A Rust port of the 2016 seed kubelet's `kuberuntime` manager, speaking CRI v1: version gating
//! at construction, listing pods, pod status, killing pods, the seed's netns helpers, and port
//! forwarding (the seed's "not implemented", made real through the runtime's streaming server). It talks
//! to the runtime only through [`CriClient`]; where the seed and today's kubelet differ, the seed
//! wins, except where the seed would crash (each such place says so), and except for the three
//! rules a [`KubeletProfile`] of today's kubelet switches.

mod error;
mod gates;
mod kill;
mod labels;
pub mod lifecycle;
mod lists;
mod netns;
mod network;
mod pods;
mod port_forward;
mod profile;
mod status;
mod sync_result;
mod types;
mod version;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::cri::CriClient;

pub use error::ManagerError;
pub use gates::{FeatureGate, FeatureGates, GateError};
pub use kill::MINIMUM_GRACE_PERIOD_SECONDS;
pub use network::{
    NetworkPlugin, NoopNetworkPlugin, RecordingNetworkPlugin, TeardownCall,
    NOOP_NETWORK_PLUGIN_NAME, RECORDING_NETWORK_PLUGIN_NAME,
};
pub use port_forward::PortForwardFailure;
pub use profile::KubeletProfile;
pub use sync_result::{
    PodSyncResult, SyncAction, SyncResult, CONFIG_POD_SANDBOX_ERROR, CRASH_LOOP_BACK_OFF,
    CREATE_CONTAINER_CONFIG_ERROR, CREATE_CONTAINER_ERROR, CREATE_POD_SANDBOX_ERROR,
    KILL_CONTAINER_ERROR, KILL_POD_SANDBOX_ERROR, POST_START_HOOK_ERROR, REMOVE_CONTAINER_ERROR,
    RESIZE_POD_IN_PLACE_ERROR, RUN_CONTAINER_ERROR, TEARDOWN_NETWORK_ERROR,
};
pub use types::{
    Container, ContainerId, ContainerSpec, ContainerState, ContainerStatus, Pod, PodSpec,
    PodStatus, RuntimeCondition, RuntimeStatus,
};
pub use version::RuntimeVersion;

/// The CRI API version the manager asks for and accepts (the kubelet's `kubeRuntimeAPIVersion`).
pub const KUBE_RUNTIME_API_VERSION: &str = "0.1.0";

/// The kubelet's generic runtime manager over one CRI runtime.
#[derive(Debug, Clone)]
pub struct KubeGenericRuntimeManager {
    client: CriClient,
    network: Arc<dyn NetworkPlugin>,
    runtime_name: String,
    profile: KubeletProfile,
    gates: FeatureGates,
    /// Set once the runtime answered a list stream Unimplemented (see `lists`): shared by the
    /// manager's clones, as the kubelet's one connection is.
    unary_lists: Arc<AtomicBool>,
}

impl KubeGenericRuntimeManager {
    /// Connects the manager to a runtime after one `Version("0.1.0")` call: an RPC error is
    /// returned as is, and an answer whose `version` is not exactly "0.1.0" is
    /// [`ManagerError::VersionNotSupported`] (the other three fields are not checked). Ports
    /// `NewKubeGenericRuntimeManager` (kuberuntime_manager.go).
    // The seed also created /var/log/pods here; the harness is not on the runtime's host, so no.
    pub async fn new(
        client: CriClient,
        network: Arc<dyn NetworkPlugin>,
    ) -> Result<Self, ManagerError> {
        let answer = client.version(KUBE_RUNTIME_API_VERSION).await?;
        if answer.version != KUBE_RUNTIME_API_VERSION {
            return Err(ManagerError::VersionNotSupported {
                version: answer.version,
            });
        }
        tracing::debug!(
            runtime_name = %answer.runtime_name,
            runtime_version = %answer.runtime_version,
            runtime_api_version = %answer.runtime_api_version,
            "container runtime accepted"
        );
        Ok(Self {
            client,
            network,
            runtime_name: answer.runtime_name,
            profile: KubeletProfile::default(),
            gates: FeatureGates::default(),
            unary_lists: Arc::default(),
        })
    }

    /// The same manager following `profile`'s rules where the seed and today's kubelet differ
    /// (the seed's unless told).
    #[must_use]
    pub fn with_profile(mut self, profile: KubeletProfile) -> Self {
        self.profile = profile;
        self
    }

    /// The kubelet whose rules it follows.
    pub fn profile(&self) -> KubeletProfile {
        self.profile
    }

    /// The same manager following `gates` where a kubelet feature gate switches a rule
    /// (today's defaults unless told).
    #[must_use]
    pub fn with_feature_gates(mut self, gates: FeatureGates) -> Self {
        self.gates = gates;
        self
    }

    /// The same manager tearing pod networks down with `network` instead: a run that checks
    /// what each case tears down gives every case a plugin of its own without connecting again.
    #[must_use]
    pub fn with_network_plugin(mut self, network: Arc<dyn NetworkPlugin>) -> Self {
        self.network = network;
        self
    }

    /// The feature gates it follows.
    pub fn feature_gates(&self) -> &FeatureGates {
        &self.gates
    }

    /// The runtime's name from `Version.runtime_name`. Ports `Type` (kuberuntime_manager.go).
    pub fn runtime_type(&self) -> &str {
        &self.runtime_name
    }

    /// The CRI client the manager uses.
    pub fn client(&self) -> &CriClient {
        &self.client
    }

    /// The network plugin the manager tears pod networks down with.
    pub fn network_plugin(&self) -> &Arc<dyn NetworkPlugin> {
        &self.network
    }

    /// The `version` field of a fresh `Version` answer as strict semver: the seed's reading (it
    /// is the API version echo, "0.1.0"; today's kubelet reads `runtime_version` instead). Ports
    /// `Version` (kuberuntime_manager.go, 2016).
    pub async fn version(&self) -> Result<RuntimeVersion, ManagerError> {
        let answer = self.client.version(KUBE_RUNTIME_API_VERSION).await?;
        RuntimeVersion::parse("Version.version", &answer.version)
    }

    /// The `runtime_api_version` field of a fresh `Version` answer as strict semver. A runtime
    /// answering a bare "v1" (containerd does) gets [`ManagerError::InvalidVersion`]: "v1" is not
    /// `MAJOR.MINOR.PATCH`, and the seed's strict parser refused it the same way. Ports
    /// `APIVersion` (kuberuntime_manager.go, 2016: uncached).
    pub async fn api_version(&self) -> Result<RuntimeVersion, ManagerError> {
        let answer = self.client.version(KUBE_RUNTIME_API_VERSION).await?;
        RuntimeVersion::parse("Version.runtime_api_version", &answer.runtime_api_version)
    }

    /// The runtime's conditions from the CRI `Status` call. Ports `Status`
    /// (kuberuntime_manager.go, modern): the seed's CRI had no Status RPC and only probed Version.
    pub async fn status(&self) -> Result<RuntimeStatus, ManagerError> {
        let answer = self.client.status(false).await?;
        let status = answer.status.ok_or_else(|| ManagerError::MissingStatus {
            method: "Status",
            id: String::new(),
        })?;
        Ok(RuntimeStatus {
            conditions: status.conditions.into_iter().map(Into::into).collect(),
        })
    }

    /// The id of a running pod's sandbox, the first one listed (the seed takes it for the latest;
    /// its GetPods does not sort, so "first" is the runtime's list order). No CRI call. Ports
    /// `GetPodContainerID` (kuberuntime_manager.go, 2016).
    pub fn get_pod_container_id(&self, pod: &Pod) -> Result<ContainerId, ManagerError> {
        pod.sandboxes
            .first()
            .map(|sandbox| sandbox.id.clone())
            .ok_or_else(|| ManagerError::PodSandboxesNotFound {
                pod: format!("{}_{}", pod.name, pod.namespace),
            })
    }

    fn container_id(&self, id: &str) -> ContainerId {
        ContainerId {
            r#type: self.runtime_name.clone(),
            id: id.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A manager over a channel that is never used: enough for the calls that make no RPC.
    fn offline_manager() -> KubeGenericRuntimeManager {
        let channel = tonic::transport::Endpoint::from_static("http://127.0.0.1:9").connect_lazy();
        KubeGenericRuntimeManager {
            client: CriClient::new(channel.clone(), channel, "offline", Duration::from_secs(1)),
            network: Arc::new(NoopNetworkPlugin),
            runtime_name: "mock".to_owned(),
            profile: KubeletProfile::Seed,
            gates: FeatureGates::default(),
            unary_lists: Arc::default(),
        }
    }

    fn sandbox(id: &str) -> Container {
        Container {
            id: ContainerId {
                r#type: "mock".to_owned(),
                id: id.to_owned(),
            },
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn pod_container_id_is_the_first_listed_sandbox() {
        let pod = Pod {
            sandboxes: vec![sandbox("s2"), sandbox("s1")],
            ..Default::default()
        };
        let id = offline_manager().get_pod_container_id(&pod).unwrap();
        assert_eq!(id.id, "s2");
        assert_eq!(id.r#type, "mock");
    }

    #[tokio::test]
    async fn pod_container_id_without_sandboxes_names_the_pod() {
        let pod = Pod {
            name: "web".to_owned(),
            namespace: "prod".to_owned(),
            ..Default::default()
        };
        let err = offline_manager().get_pod_container_id(&pod).unwrap_err();
        assert!(matches!(&err, ManagerError::PodSandboxesNotFound { pod } if pod == "web_prod"));
        assert_eq!(err.to_string(), r#"sandboxes for pod "web_prod" not found"#);
    }
}
