//! The manager's own view of pods and containers (the kubelet's `kubecontainer` types), built
//! from CRI messages. Everything here is plain data that serializes in a stable field order, so
//! a runner can snapshot it.

use serde::{Deserialize, Serialize};

use crate::cri::v1;

/// A runtime object's id together with the runtime that owns it (the kubelet's `ContainerID`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize)]
pub struct ContainerId {
    /// The runtime's name, as answered by `Version.runtime_name`.
    pub r#type: String,
    /// The runtime's id for the sandbox or container.
    pub id: String,
}

impl std::fmt::Display for ContainerId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}", self.r#type, self.id)
    }
}

/// A container's (or sandbox's) state as the manager sees it. Snapshots show the variant
/// (`Running`); suites, property checks and messages use the snake-case names of this one
/// table (`running`).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantNames,
)]
#[strum(serialize_all = "snake_case")]
pub enum ContainerState {
    /// Created but not started.
    Created,
    /// Running (for a sandbox: READY).
    Running,
    /// Exited (for a sandbox: NOTREADY).
    Exited,
    /// Anything the manager does not recognise.
    #[default]
    Unknown,
}

impl ContainerState {
    /// The state's name as suites write it (`running`).
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// Maps a CRI container state; values outside the enum read as `Unknown`.
    pub fn from_cri_container(state: i32) -> Self {
        match v1::ContainerState::try_from(state) {
            Ok(v1::ContainerState::ContainerCreated) => Self::Created,
            Ok(v1::ContainerState::ContainerRunning) => Self::Running,
            Ok(v1::ContainerState::ContainerExited) => Self::Exited,
            Ok(v1::ContainerState::ContainerUnknown) | Err(_) => Self::Unknown,
        }
    }

    /// The CRI container state this stands for.
    pub fn to_cri_container(self) -> v1::ContainerState {
        match self {
            Self::Created => v1::ContainerState::ContainerCreated,
            Self::Running => v1::ContainerState::ContainerRunning,
            Self::Exited => v1::ContainerState::ContainerExited,
            Self::Unknown => v1::ContainerState::ContainerUnknown,
        }
    }

    /// Maps a CRI sandbox state: READY is Running, NOTREADY is Exited, anything else Unknown.
    pub fn from_cri_sandbox(state: i32) -> Self {
        match v1::PodSandboxState::try_from(state) {
            Ok(v1::PodSandboxState::SandboxReady) => Self::Running,
            Ok(v1::PodSandboxState::SandboxNotready) => Self::Exited,
            Err(_) => Self::Unknown,
        }
    }
}

/// A container or sandbox of a running pod, as listed by [`super::KubeGenericRuntimeManager::get_pods`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Container {
    /// Runtime and id.
    pub id: ContainerId,
    /// The `io.kubernetes.container.name` label ("" for sandboxes).
    pub name: String,
    /// The image as requested (`image.image`; "" for sandboxes).
    pub image: String,
    /// The `io.kubernetes.container.hash` annotation read as hex (0 if absent or bad, and for sandboxes).
    pub hash: u64,
    /// Current state.
    pub state: ContainerState,
}

/// A pod as found on the runtime: its sandboxes and containers grouped by pod UID.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Pod {
    /// The pod UID.
    pub id: String,
    /// Pod name.
    pub name: String,
    /// Pod namespace.
    pub namespace: String,
    /// The `created_at` of its last listed sandbox, Unix nanoseconds, which today's kubelet
    /// sorts pods by; 0 under the seed (which has no such field) and for a pod built from
    /// containers alone. Not written out: what it decides is the pods' order, which a case
    /// checks as such (`get_pods` `order:`), while the value is a runtime timestamp a snapshot
    /// would only redact; so a snapshot reads the same under either kubelet.
    #[serde(skip)]
    pub created_at: i64,
    /// Containers, in the runtime's list order.
    pub containers: Vec<Container>,
    /// Sandboxes, in the runtime's list order (the seed treats the first as the latest).
    pub sandboxes: Vec<Container>,
}

/// A container's status as reported by [`super::KubeGenericRuntimeManager::get_pod_status`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ContainerStatus {
    /// Runtime and id.
    pub id: ContainerId,
    /// The `io.kubernetes.container.name` label.
    pub name: String,
    /// The image as requested.
    pub image: String,
    /// The image the runtime resolved it to.
    pub image_ref: String,
    /// The `io.kubernetes.container.hash` annotation read as hex (0 if absent or bad).
    pub hash: u64,
    /// The `io.kubernetes.container.restartCount` annotation read as decimal (0 if absent or bad).
    pub restart_count: i32,
    /// Current state.
    pub state: ContainerState,
    /// Creation time, Unix nanoseconds.
    pub created_at: i64,
    /// Start time, Unix nanoseconds; set while running under the seed's rules, and for every
    /// container past created under today's kubelet.
    pub started_at: i64,
    /// Finish time, Unix nanoseconds; set when not running (seed) or when exited (today).
    pub finished_at: i64,
    /// Exit code; set when not running (seed) or when exited (today).
    pub exit_code: i32,
    /// Short reason the runtime gives, e.g. "Error"; set like the exit code.
    pub reason: String,
    /// The runtime's message; set like the exit code.
    pub message: String,
    /// The CPU and memory the runtime reports having applied (`ContainerStatus.resources`),
    /// none when it reports none: what an in-place resize compares the spec with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<crate::manager::lifecycle::RuntimeResources>,
}

/// A pod's status: its sandboxes newest first, its IP and its containers' statuses.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PodStatus {
    /// The pod UID asked for.
    pub id: String,
    /// The pod name asked for.
    pub name: String,
    /// The pod namespace asked for.
    pub namespace: String,
    /// The newest sandbox's IP while it is READY, else "".
    pub ip: String,
    /// The pod's sandboxes, newest first by `created_at`.
    #[serde(serialize_with = "serialize_sandbox_statuses")]
    pub sandbox_statuses: Vec<v1::PodSandboxStatus>,
    /// Container statuses, sandbox by sandbox (newest sandbox first), each batch newest first.
    pub container_statuses: Vec<ContainerStatus>,
}

/// The part of a pod spec the manager reads (the kubelet's `v1.Pod`, trimmed).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodSpec {
    /// The pod UID.
    pub uid: String,
    /// Pod name.
    pub name: String,
    /// Pod namespace.
    pub namespace: String,
    /// The pod uses the node's network namespace.
    #[serde(default)]
    pub host_network: bool,
    /// `spec.terminationGracePeriodSeconds`.
    #[serde(default)]
    pub termination_grace_period_seconds: Option<i64>,
    /// `metadata.deletionGracePeriodSeconds`, set once the pod is being deleted.
    #[serde(default)]
    pub deletion_grace_period_seconds: Option<i64>,
    /// The pod's containers.
    #[serde(default)]
    pub containers: Vec<ContainerSpec>,
    /// `spec.initContainers` (the seed's kill looks grace periods up in `containers` only).
    #[serde(default)]
    pub init_containers: Vec<ContainerSpec>,
    /// `spec.ephemeralContainers`.
    #[serde(default)]
    pub ephemeral_containers: Vec<ContainerSpec>,
    /// `spec.restartPolicy` (`Always`, `OnFailure`, `Never`), if given.
    #[serde(default)]
    pub restart_policy: Option<String>,
    /// The pod uses the node's PID namespace.
    #[serde(default)]
    pub host_pid: bool,
    /// The pod uses the node's IPC namespace.
    #[serde(default)]
    pub host_ipc: bool,
}

/// One container of a [`PodSpec`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerSpec {
    /// Container name.
    pub name: String,
    /// Image reference.
    #[serde(default)]
    pub image: String,
}

/// The runtime's health, from the CRI `Status` call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RuntimeStatus {
    /// Conditions in the runtime's order (e.g. RuntimeReady, NetworkReady).
    pub conditions: Vec<RuntimeCondition>,
}

impl RuntimeStatus {
    /// The condition of the given type, if the runtime reported it.
    pub fn condition(&self, r#type: &str) -> Option<&RuntimeCondition> {
        self.conditions.iter().find(|c| c.r#type == r#type)
    }
}

/// One runtime condition.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RuntimeCondition {
    /// Condition type, e.g. `RuntimeReady`.
    pub r#type: String,
    /// Whether the condition holds.
    pub status: bool,
    /// Short CamelCase reason when it does not.
    pub reason: String,
    /// Human-readable message.
    pub message: String,
}

impl From<v1::RuntimeCondition> for RuntimeCondition {
    fn from(c: v1::RuntimeCondition) -> Self {
        Self {
            r#type: c.r#type,
            status: c.status,
            reason: c.reason,
            message: c.message,
        }
    }
}

/// A serializable view of a CRI sandbox status (prost types carry no serde derives); fields are
/// those a conformance check looks at, in a fixed order.
#[derive(Serialize)]
struct SandboxStatusView<'a> {
    id: &'a str,
    name: &'a str,
    uid: &'a str,
    namespace: &'a str,
    attempt: u32,
    state: &'static str,
    created_at: i64,
    ip: &'a str,
    additional_ips: Vec<&'a str>,
    network_namespace: &'static str,
    labels: &'a std::collections::BTreeMap<String, String>,
    annotations: &'a std::collections::BTreeMap<String, String>,
    runtime_handler: &'a str,
}

fn serialize_sandbox_statuses<S: serde::Serializer>(
    statuses: &[v1::PodSandboxStatus],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(statuses.iter().map(|s| {
        let metadata = s.metadata.as_ref();
        let network = s.network.as_ref();
        let network_mode = s
            .linux
            .as_ref()
            .and_then(|l| l.namespaces.as_ref())
            .and_then(|n| n.options.as_ref())
            .map(|o| o.network());
        SandboxStatusView {
            id: &s.id,
            name: metadata.map_or("", |m| m.name.as_str()),
            uid: metadata.map_or("", |m| m.uid.as_str()),
            namespace: metadata.map_or("", |m| m.namespace.as_str()),
            attempt: metadata.map_or(0, |m| m.attempt),
            state: v1::PodSandboxState::try_from(s.state).map_or("UNKNOWN", |st| st.as_str_name()),
            created_at: s.created_at,
            ip: network.map_or("", |n| n.ip.as_str()),
            additional_ips: network.map_or_else(Vec::new, |n| {
                n.additional_ips.iter().map(|ip| ip.ip.as_str()).collect()
            }),
            network_namespace: network_mode.map_or("", |m| m.as_str_name()),
            labels: &s.labels,
            annotations: &s.annotations,
            runtime_handler: &s.runtime_handler,
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_status_serializes_sandbox_statuses_through_a_stable_view() {
        let status = PodStatus {
            id: "u1".to_owned(),
            ip: "10.88.0.2".to_owned(),
            sandbox_statuses: vec![v1::PodSandboxStatus {
                id: "s1".to_owned(),
                metadata: Some(v1::PodSandboxMetadata {
                    name: "web".to_owned(),
                    uid: "u1".to_owned(),
                    namespace: "ns".to_owned(),
                    attempt: 1,
                }),
                state: v1::PodSandboxState::SandboxNotready.into(),
                created_at: 5,
                network: Some(v1::PodSandboxNetworkStatus {
                    ip: "10.88.0.2".to_owned(),
                    additional_ips: vec![v1::PodIp {
                        ip: "fd00::2".to_owned(),
                    }],
                }),
                linux: Some(v1::LinuxPodSandboxStatus {
                    namespaces: Some(v1::Namespace {
                        options: Some(v1::NamespaceOption {
                            network: v1::NamespaceMode::Node.into(),
                            ..Default::default()
                        }),
                    }),
                }),
                ..Default::default()
            }],
            ..Default::default()
        };
        let yaml = serde_saphyr::to_string(&status).unwrap();
        let expected = "\
id: u1
name: \"\"
namespace: \"\"
ip: \"10.88.0.2\"
sandbox_statuses:
- id: s1
  name: web
  uid: u1
  namespace: ns
  attempt: 1
  state: SANDBOX_NOTREADY
  created_at: 5
  ip: \"10.88.0.2\"
  additional_ips:
  - fd00::2
  network_namespace: NODE
  labels: {}
  annotations: {}
  runtime_handler: \"\"
container_statuses: []
";
        assert_eq!(yaml, expected);
    }

    #[test]
    fn container_id_displays_as_a_uri() {
        let id = ContainerId {
            r#type: "containerd".to_owned(),
            id: "abc".to_owned(),
        };
        assert_eq!(id.to_string(), "containerd://abc");
    }
}
