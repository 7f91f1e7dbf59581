//! The kubelet's pod life cycle, ported from today's kubelet for CRI v1: the sandbox-changed
//! decision and `computePodActions`, the generated sandbox and container configs, the image
//! puller, `SyncPod` itself and `GarbageCollect`.
//!
//! The 2016 seed answered "not implemented" to SyncPod and GarbageCollect; there was nothing to be
//! faithful to, so this part follows today's kubelet (`kuberuntime_manager.go`,
//! `kuberuntime_container.go`, `kuberuntime_sandbox.go`, `kuberuntime_gc.go`). Pods come in as
//! real Kubernetes objects (`k8s-openapi`), so a manifest from `kubectl get pod -o yaml` feeds it
//! as is.
//!
//! This file holds the types the parts share: what one sync must do ([`PodActions`]) and the
//! prober's answers the decision reads ([`ProbeResults`]), which the harness supplies itself
//! because it runs no prober.

mod actions;
mod backoff;
mod container_config;
mod delete;
mod gc;
mod hash;
mod hooks;
mod images;
mod options;
pub mod phase;
pub mod pod;
mod pod_resources;
mod resize;
mod sandbox_changed;
mod sandbox_config;
mod sync_pod;

pub use backoff::{
    stable_key, Backoff, Clock, CrashLoopConfig, CrashLoopConfigError, ManualClock, WallClock,
    CRASH_LOOP_EXPIRY, INITIAL_BACKOFF, MAX_BACKOFF, REDUCED_INITIAL_BACKOFF, REDUCED_MAX_BACKOFF,
};
pub use container_config::{
    build_container_log_path, container_annotations, container_labels, directories_to_make,
    empty_dir_path, ephemeral_as_container, expand, generate_container_config,
    ContainerConfigError, CONTAINER_PORTS, CONTAINER_PRE_STOP_HANDLER,
    CONTAINER_TERMINATION_MESSAGE_POLICY,
};
pub use delete::PodDeletion;
pub use images::{
    pull_policy, EnsuredImage, ImageFailure, ImageManager, PullPolicy, ERR_IMAGE_INSPECT,
    ERR_IMAGE_NEVER_PULL, ERR_IMAGE_PULL, ERR_IMAGE_PULL_BACK_OFF, ERR_INVALID_IMAGE_NAME,
};
pub use options::SyncOptions;
pub use phase::{all_running, phase, Phase};
pub use sandbox_config::{
    build_pod_logs_directory, generate_pod_sandbox_config, pod_labels, sysctl_name_with_dots,
    SandboxConfigError,
};
pub use sync_pod::PodSync;

use std::collections::BTreeMap;

use serde::Serialize;

/// The Kubernetes core/v1 types the life cycle reads (`Pod`, `Container`, ...).
pub use k8s_openapi::api::core::v1 as k8s;

pub use actions::{compute_pod_actions, compute_pod_actions_with};
pub use gc::{
    legacy_log_symlink, wall_clock_unix_nanos, GcError, GcLogDirs, GcPhaseError, GcPolicy, GcScope,
    PodStateOracle,
};
pub use hash::hash_container;
pub use resize::{
    desired_resources, linux_resources, quantity, runtime_resources, ContainerResources,
    ContainerToUpdate, ResourceName, RuntimeResources,
};
pub use sandbox_changed::pod_sandbox_changed;

/// What one SyncPod must do for a pod (the kubelet's `podActions`). Indices point into the pod's
/// `spec.initContainers`, `spec.containers` and `spec.ephemeralContainers`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PodActions {
    /// Stop every container and sandbox of the pod first.
    pub kill_pod: bool,
    /// Run a new sandbox (after the kill, when `kill_pod` is also set).
    pub create_sandbox: bool,
    /// The newest sandbox's id ("" when there is none, or the network mode changed).
    pub sandbox_id: String,
    /// The attempt a new sandbox gets (0 for the first, then the highest so far plus one).
    pub attempt: u32,
    /// Init containers to start, in spec order.
    pub init_containers_to_start: Vec<usize>,
    /// Regular containers to start, in spec order.
    pub containers_to_start: Vec<usize>,
    /// Containers to stop, by runtime container id.
    pub containers_to_kill: BTreeMap<String, ContainerToKill>,
    /// Ephemeral containers to start, in spec order.
    pub ephemeral_containers_to_start: Vec<usize>,
    /// The one init container to start, under `LegacySidecarContainers` for a pod without
    /// sidecars (the kubelet's `NextInitContainerToStart`); `init_containers_to_start` is then
    /// empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_init_container_to_start: Option<usize>,
    /// Running containers to resize in place, per resource, decreases first
    /// (`InPlacePodVerticalScaling`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub containers_to_update: BTreeMap<ResourceName, Vec<ContainerToUpdate>>,
    /// A resize restarts a container, so the pod's resources change too.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub update_pod_resources: bool,
    /// The pod restarts all its containers in place (`RestartAllContainersOnContainerExits`):
    /// every instance of every init and regular container is stopped if need be and removed,
    /// in this order, and nothing else is done this sync.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub containers_to_reset: Vec<ContainerToReset>,
}

impl PodActions {
    /// Whether the sync has nothing to do: no kill, no sandbox, nothing to start or stop.
    pub fn is_empty(&self) -> bool {
        !self.kill_pod
            && !self.create_sandbox
            && self.init_containers_to_start.is_empty()
            && self.containers_to_start.is_empty()
            && self.containers_to_kill.is_empty()
            && self.ephemeral_containers_to_start.is_empty()
            && self.next_init_container_to_start.is_none()
            && self.containers_to_update.is_empty()
            && !self.update_pod_resources
            && self.containers_to_reset.is_empty()
    }
}

/// One container instance a restart of all containers removes (the kubelet's
/// `containerToRemoveInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContainerToReset {
    /// The runtime's id of the instance.
    pub id: String,
    /// The container's name in the spec.
    pub name: String,
    /// Which list of the spec it belongs to.
    pub kind: ContainerKind,
    /// It has not exited: it is stopped, with no grace period and no PreStop hook, first.
    pub kill: bool,
}

/// Why and what to stop (the kubelet's `containerToKillInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContainerToKill {
    /// The container's name in the spec.
    pub name: String,
    /// Which list of the spec it belongs to.
    pub kind: ContainerKind,
    /// The kill's reason, e.g. the failed probe.
    pub reason: KillReason,
    /// The message the kill event carries, e.g. "Container app definition changed".
    pub message: String,
}

/// The lists of a pod spec a container can come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ContainerKind {
    /// `spec.initContainers` (sidecars included).
    Init,
    /// `spec.containers`.
    Regular,
    /// `spec.ephemeralContainers`.
    Ephemeral,
}

/// The kubelet's `containerKillReason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KillReason {
    /// The startup probe failed.
    StartupProbe,
    /// The liveness probe failed.
    LivenessProbe,
    /// The post-start hook failed.
    FailedPostStartHook,
    /// Any other reason (a changed spec, an unknown state, ...).
    Unknown,
}

/// The prober's latest answers for the pod's containers, by runtime container id, one map per
/// probe kind as today's kubelet keeps them (its liveness, readiness and startup results managers).
/// The harness runs no prober; a case or a caller states the results. A container absent from a
/// map has no result yet, which is not the same as [`ProbeResult::Unknown`]: a result the prober
/// has set but that is not yet known either way.
///
/// `compute_pod_actions` reads liveness and startup only, as the kubelet does: readiness decides
/// whether a pod serves traffic, never whether a container is restarted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ProbeResults {
    /// Liveness probe results.
    pub liveness: BTreeMap<String, ProbeResult>,
    /// Readiness probe results.
    pub readiness: BTreeMap<String, ProbeResult>,
    /// Startup probe results.
    pub startup: BTreeMap<String, ProbeResult>,
}

/// One probe result (the kubelet's `proberesults.Result`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeResult {
    /// The probe passed.
    Success,
    /// The probe failed: for liveness and startup, the container is killed.
    Failure,
    /// The probe has a result that is neither, e.g. a startup probe still in progress.
    Unknown,
}
