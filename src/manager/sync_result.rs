//! Per-step results of a pod operation (the kubelet's `PodSyncResult`): each step records what it
//! acted on and how it failed, and the whole folds into one error text.

use serde::Serialize;

/// Error kind of a container that could not be stopped.
pub const KILL_CONTAINER_ERROR: &str = "KillContainerError";
/// Error kind of a failed network teardown.
pub const TEARDOWN_NETWORK_ERROR: &str = "TeardownNetworkError";
/// Error kind of a sandbox that could not be stopped.
pub const KILL_POD_SANDBOX_ERROR: &str = "KillPodSandboxError";
/// Error kind of a sandbox that could not be run.
pub const CREATE_POD_SANDBOX_ERROR: &str = "CreatePodSandboxError";
/// Error kind of a sandbox config that could not be generated for the containers.
pub const CONFIG_POD_SANDBOX_ERROR: &str = "ConfigPodSandboxError";
/// Error kind of a container config that could not be generated.
pub const CREATE_CONTAINER_CONFIG_ERROR: &str = "CreateContainerConfigError";
/// Error kind of a failed CreateContainer.
pub const CREATE_CONTAINER_ERROR: &str = "CreateContainerError";
/// Error kind of a failed StartContainer.
pub const RUN_CONTAINER_ERROR: &str = "RunContainerError";
/// Error kind of a start whose PostStart hook failed (the container is killed).
pub const POST_START_HOOK_ERROR: &str = "PostStartHookError";
/// Error kind of a start held back by the crash-loop back-off.
pub const CRASH_LOOP_BACK_OFF: &str = "CrashLoopBackOff";
/// Error kind of a refused in-place resize (the kubelet's `ErrResizePodInPlace`).
pub const RESIZE_POD_IN_PLACE_ERROR: &str = "ResizePodInPlaceError";
/// Error kind of a failed RemoveContainer while all containers restart. The kubelet fails that
/// step with the call's own error, which has no kind; the harness names one so suites can
/// expect it.
pub const REMOVE_CONTAINER_ERROR: &str = "RemoveContainerError";

/// What a step of a pod operation did.
/// Suites name them in snake case (`kill_container`); `Display` keeps the kubelet's own names.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantNames,
)]
#[strum(serialize_all = "snake_case")]
pub enum SyncAction {
    /// Stop one container.
    KillContainer,
    /// Tear down the pod's network through the network plugin.
    TeardownNetwork,
    /// Stop the pod's sandboxes.
    KillPodSandbox,
    /// Create and start one container.
    StartContainer,
    /// Run an init container (the kubelet keeps the action; today's SyncPod records init
    /// containers as StartContainer).
    InitContainer,
    /// Run the pod's sandbox.
    CreatePodSandbox,
    /// Generate the sandbox config the containers are created with.
    ConfigPodSandbox,
    /// Resize running containers in place (`InPlacePodVerticalScaling`).
    ResizePodInPlace,
    /// Remove one container instance while all containers restart in place
    /// (`RestartAllContainersOnContainerExits`); it is stopped first if it still runs.
    RemoveContainer,
}

impl SyncAction {
    /// The action's name as suites write it (`kill_container`).
    pub fn name(self) -> &'static str {
        self.into()
    }
}

impl std::fmt::Display for SyncAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::KillContainer => "KillContainer",
            Self::TeardownNetwork => "TeardownNetwork",
            Self::KillPodSandbox => "KillPodSandbox",
            Self::StartContainer => "StartContainer",
            Self::InitContainer => "InitContainer",
            Self::CreatePodSandbox => "CreatePodSandbox",
            Self::ConfigPodSandbox => "ConfigPodSandbox",
            Self::ResizePodInPlace => "ResizePodInPlace",
            Self::RemoveContainer => "RemoveContainer",
        })
    }
}

/// The outcome of one step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SyncResult {
    /// What the step did.
    pub action: SyncAction,
    /// What it acted on: a container name or a pod UID.
    pub target: String,
    /// The error kind (e.g. [`KILL_CONTAINER_ERROR`]) if the step failed.
    pub error: Option<String>,
    /// The failure's text ("" on success).
    pub message: String,
}

impl SyncResult {
    /// A successful step; ports `NewSyncResult` (sync_result.go).
    pub fn new(action: SyncAction, target: impl Into<String>) -> Self {
        Self {
            action,
            target: target.into(),
            error: None,
            message: String::new(),
        }
    }

    /// Marks the step failed; a later failure replaces an earlier one. Ports `SyncResult.Fail` (sync_result.go).
    pub fn fail(&mut self, kind: &str, message: impl Into<String>) {
        self.error = Some(kind.to_owned());
        self.message = message.into();
    }

    /// The step's error line, if it failed.
    fn error_line(&self) -> Option<String> {
        let kind = self.error.as_ref()?;
        Some(format!(
            "failed to {:?} for {:?} with {kind}: {:?}",
            self.action.to_string(),
            self.target,
            self.message
        ))
    }
}

/// Every step of one pod operation, plus an error that stopped the operation as a whole.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PodSyncResult {
    /// Step results in the order the steps were taken.
    pub results: Vec<SyncResult>,
    /// Set when the operation could not go on (e.g. a sandbox status it needed failed).
    pub sync_error: Option<String>,
}

impl PodSyncResult {
    /// Every failure as one text, one line each: the operation error first, then each failed
    /// step in order; `None` when nothing failed. Ports `PodSyncResult.Error` (sync_result.go).
    pub fn error(&self) -> Option<String> {
        let lines: Vec<String> = self
            .sync_error
            .iter()
            .map(|e| format!("failed to SyncPod: {e}"))
            .chain(self.results.iter().filter_map(SyncResult::error_line))
            .collect();
        (!lines.is_empty()).then(|| lines.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn ok(action: SyncAction, target: &str) -> SyncResult {
        SyncResult::new(action, target)
    }

    #[rstest]
    #[case::kill_container(SyncAction::KillContainer, "KillContainer")]
    #[case::teardown_network(SyncAction::TeardownNetwork, "TeardownNetwork")]
    #[case::kill_pod_sandbox(SyncAction::KillPodSandbox, "KillPodSandbox")]
    #[case::start_container(SyncAction::StartContainer, "StartContainer")]
    #[case::init_container(SyncAction::InitContainer, "InitContainer")]
    #[case::create_pod_sandbox(SyncAction::CreatePodSandbox, "CreatePodSandbox")]
    #[case::config_pod_sandbox(SyncAction::ConfigPodSandbox, "ConfigPodSandbox")]
    fn actions_show_as_the_kubelets_names(#[case] action: SyncAction, #[case] name: &str) {
        assert_eq!(action.to_string(), name);
    }

    fn failed(action: SyncAction, target: &str, kind: &str, message: &str) -> SyncResult {
        let mut result = SyncResult::new(action, target);
        result.fail(kind, message);
        result
    }

    #[rstest]
    #[case::nothing_at_all(vec![], None, None)]
    #[case::all_steps_succeeded(
        vec![ok(SyncAction::KillContainer, "app"), ok(SyncAction::KillPodSandbox, "uid-1")],
        None,
        None
    )]
    #[case::one_failed_container(
        vec![
            ok(SyncAction::KillContainer, "app"),
            failed(SyncAction::KillContainer, "side", KILL_CONTAINER_ERROR, "boom"),
            ok(SyncAction::KillPodSandbox, "uid-1"),
        ],
        None,
        Some(r#"failed to "KillContainer" for "side" with KillContainerError: "boom""#)
    )]
    #[case::sync_error_comes_first(
        vec![failed(SyncAction::KillContainer, "app", KILL_CONTAINER_ERROR, "x")],
        Some("status failed"),
        Some("failed to SyncPod: status failed\nfailed to \"KillContainer\" for \"app\" with KillContainerError: \"x\"")
    )]
    #[case::failures_in_step_order(
        vec![
            failed(SyncAction::TeardownNetwork, "uid-1", TEARDOWN_NETWORK_ERROR, "cni"),
            failed(SyncAction::KillPodSandbox, "uid-1", KILL_POD_SANDBOX_ERROR, "stop \"s\""),
        ],
        None,
        Some("failed to \"TeardownNetwork\" for \"uid-1\" with TeardownNetworkError: \"cni\"\nfailed to \"KillPodSandbox\" for \"uid-1\" with KillPodSandboxError: \"stop \\\"s\\\"\"")
    )]
    fn error_aggregates_sync_error_then_failed_steps(
        #[case] results: Vec<SyncResult>,
        #[case] sync_error: Option<&str>,
        #[case] expected: Option<&str>,
    ) {
        let result = PodSyncResult {
            results,
            sync_error: sync_error.map(str::to_owned),
        };
        assert_eq!(result.error().as_deref(), expected);
    }

    #[test]
    fn a_later_failure_replaces_the_earlier_message() {
        let mut result = SyncResult::new(SyncAction::KillPodSandbox, "uid");
        result.fail(KILL_POD_SANDBOX_ERROR, "first");
        result.fail(KILL_POD_SANDBOX_ERROR, "second");
        assert_eq!(result.message, "second");
        assert_eq!(result.error.as_deref(), Some(KILL_POD_SANDBOX_ERROR));
    }
}
