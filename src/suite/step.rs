//! The steps a case is made of, as written in a suite file: setup steps that act on the runtime
//! directly, mock-only steps that need the mock's control service, and manager calls with the
//! partial expectations on their results. Every struct refuses unknown fields so a typo is an
//! error that names the valid fields, not a silently ignored line.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

/// The image symbol suites use for an ordinary long-running container.
pub const BUSYBOX: &str = "busybox";

/// One step of a case. Written as a single-key map: `- stop_sandbox: old`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    // ----- setup on the runtime, not recorded -----
    /// Pulls an image (a symbol such as `busybox`, or a full reference).
    PullImage(String),
    /// Creates and starts a pod sandbox.
    RunSandbox(RunSandbox),
    /// Stops a sandbox by alias.
    StopSandbox(String),
    /// Removes a sandbox by alias.
    RemoveSandbox(String),
    /// Creates a container in a sandbox (not started).
    CreateContainer(CreateContainer),
    /// Starts a container by alias.
    StartContainer(String),
    /// Stops a container.
    StopContainer(StopContainer),
    /// Removes a container by alias.
    RemoveContainer(String),
    /// Waits a few milliseconds, so creation times differ on runtimes with coarse clocks.
    SleepMs(u64),
    /// Checks through the verbose status that a sandbox's pod network is open or released.
    CheckNetwork(CheckNetwork),

    // ----- mock only: need `needs: [mock_control]` -----
    /// Replaces the mock's Version answer.
    MockSetVersion(MockSetVersion),
    /// Makes calls of one CRI method fail: the next ones, or those naming one sandbox or
    /// container, from the nth on.
    MockInjectError(MockInjectError),
    /// Freezes the mock's clock at an instant.
    MockSetClock(MockSetClock),
    /// Moves the mock's (frozen) clock forward.
    MockAdvanceClock(MockAdvanceClock),
    /// Inserts a raw sandbox, possibly one a well-behaved runtime never produces.
    MockSeedSandbox(MockSeedSandbox),
    /// Inserts a raw container, possibly without metadata or in a missing sandbox.
    MockSeedContainer(MockSeedContainer),

    // ----- manager calls, recorded in the snapshot -----
    /// Constructs the manager (done implicitly, expecting success, before the first call).
    NewManager(NewManager),
    /// `Version()`.
    Version(VersionCall),
    /// `APIVersion()`.
    ApiVersion(VersionCall),
    /// `Status()`.
    Status(StatusCall),
    /// `GetPods(all)`.
    GetPods(GetPods),
    /// `GetPodStatus(uid, name, namespace)`.
    GetPodStatus(GetPodStatus),
    /// `KillPod(pod, runningPod, gracePeriodOverride)`.
    KillPod(KillPod),
    /// `GetNetNS(sandboxID)`.
    GetNetns(GetNetns),
    /// `GetPodContainerID(pod)`.
    GetPodContainerId(GetPodContainerId),
}

/// What kind of step this is, which decides how it runs and whether it is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// Acts on the runtime through the unrecorded client.
    Setup,
    /// Acts on the mock's control service.
    MockControl,
    /// A manager call, recorded in the snapshot.
    Manager,
}

impl Step {
    /// The step's name as written in suite files.
    pub fn name(&self) -> &'static str {
        match self {
            Step::PullImage(_) => "pull_image",
            Step::RunSandbox(_) => "run_sandbox",
            Step::StopSandbox(_) => "stop_sandbox",
            Step::RemoveSandbox(_) => "remove_sandbox",
            Step::CreateContainer(_) => "create_container",
            Step::StartContainer(_) => "start_container",
            Step::StopContainer(_) => "stop_container",
            Step::RemoveContainer(_) => "remove_container",
            Step::SleepMs(_) => "sleep_ms",
            Step::CheckNetwork(_) => "check_network",
            Step::MockSetVersion(_) => "mock_set_version",
            Step::MockInjectError(_) => "mock_inject_error",
            Step::MockSetClock(_) => "mock_set_clock",
            Step::MockAdvanceClock(_) => "mock_advance_clock",
            Step::MockSeedSandbox(_) => "mock_seed_sandbox",
            Step::MockSeedContainer(_) => "mock_seed_container",
            Step::NewManager(_) => "new_manager",
            Step::Version(_) => "version",
            Step::ApiVersion(_) => "api_version",
            Step::Status(_) => "status",
            Step::GetPods(_) => "get_pods",
            Step::GetPodStatus(_) => "get_pod_status",
            Step::KillPod(_) => "kill_pod",
            Step::GetNetns(_) => "get_netns",
            Step::GetPodContainerId(_) => "get_pod_container_id",
        }
    }

    /// Setup, mock control or manager call.
    pub fn kind(&self) -> StepKind {
        match self {
            Step::PullImage(_)
            | Step::RunSandbox(_)
            | Step::StopSandbox(_)
            | Step::RemoveSandbox(_)
            | Step::CreateContainer(_)
            | Step::StartContainer(_)
            | Step::StopContainer(_)
            | Step::RemoveContainer(_)
            | Step::SleepMs(_)
            | Step::CheckNetwork(_) => StepKind::Setup,
            Step::MockSetVersion(_)
            | Step::MockInjectError(_)
            | Step::MockSetClock(_)
            | Step::MockAdvanceClock(_)
            | Step::MockSeedSandbox(_)
            | Step::MockSeedContainer(_) => StepKind::MockControl,
            Step::NewManager(_)
            | Step::Version(_)
            | Step::ApiVersion(_)
            | Step::Status(_)
            | Step::GetPods(_)
            | Step::GetPodStatus(_)
            | Step::KillPod(_)
            | Step::GetNetns(_)
            | Step::GetPodContainerId(_) => StepKind::Manager,
        }
    }
}

fn yes() -> bool {
    true
}

fn busybox() -> String {
    BUSYBOX.to_owned()
}

/// `run_sandbox`: a pod sandbox for pod alias `pod`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSandbox {
    /// Sandbox alias, used by later steps and in snapshots.
    #[serde(rename = "as")]
    pub alias: String,
    /// Pod alias: the pod's name; its UID and namespace are made unique per case.
    pub pod: String,
    /// Metadata attempt.
    #[serde(default)]
    pub attempt: u32,
    /// Share the node's network namespace.
    #[serde(default)]
    pub host_network: bool,
    /// Extra labels.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Write the `io.kubernetes.pod.*` labels (default true).
    #[serde(default = "yes")]
    pub pod_labels: bool,
}

/// `create_container`: a container in a sandbox.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateContainer {
    /// Container alias.
    #[serde(rename = "as")]
    pub alias: String,
    /// Alias of the sandbox to create it in.
    pub sandbox: String,
    /// Container name (defaults to the alias).
    #[serde(default)]
    pub name: Option<String>,
    /// Image symbol or reference (defaults to `busybox`).
    #[serde(default = "busybox")]
    pub image: String,
    /// Command; defaults to a shell that sleeps and exits at once on SIGTERM.
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// Metadata attempt.
    #[serde(default)]
    pub attempt: u32,
    /// Whose pod labels to write: a pod alias (e.g. another pod's, for an orphan), or `none`.
    /// Defaults to the sandbox's pod.
    #[serde(default)]
    pub pod_labels: Option<String>,
    /// Extra labels.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// `stop_container`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StopContainer {
    /// Container alias.
    pub container: String,
    /// Grace period in seconds.
    #[serde(default)]
    pub timeout: i64,
}

/// `check_network`: what the runtime says of a sandbox's network namespace.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckNetwork {
    /// Sandbox alias.
    pub sandbox: String,
    /// The state the namespace must be in.
    pub expect: NetworkState,
}

/// A pod network's state, as `check_network` expects it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetworkState {
    /// The runtime holds the namespace (`netNamespaceClosed` false; the file exists when this
    /// host can see the runtime's netns directory).
    Open,
    /// The runtime released it (`netNamespaceClosed` true; the file is gone when this host can
    /// see the runtime's netns directory).
    Closed,
}

/// `mock_set_version`: the four fields of the mock's Version answer (defaults: the mock's own).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MockSetVersion {
    /// `version`, the API version echo the manager gates on.
    #[serde(default = "default_api_version")]
    pub version: String,
    /// `runtime_name`.
    #[serde(default = "default_runtime_name")]
    pub runtime_name: String,
    /// `runtime_version`.
    #[serde(default = "default_runtime_version")]
    pub runtime_version: String,
    /// `runtime_api_version`.
    #[serde(default = "default_runtime_api_version")]
    pub runtime_api_version: String,
}

fn default_api_version() -> String {
    "0.1.0".to_owned()
}
fn default_runtime_name() -> String {
    "cri-harness-mock".to_owned()
}
fn default_runtime_version() -> String {
    env!("CARGO_PKG_VERSION").to_owned()
}
fn default_runtime_api_version() -> String {
    "v1".to_owned()
}

/// `mock_inject_error`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MockInjectError {
    /// Short CRI method name, e.g. `StopContainer`.
    pub method: String,
    /// gRPC status code, by name (`NotFound`) or number.
    pub code: GrpcCode,
    /// Status message.
    #[serde(default)]
    pub message: String,
    /// How many calls fail.
    #[serde(default = "one")]
    pub count: u32,
    /// Alias of the sandbox or container whose calls fail (its id must be what the call
    /// names); every call of the method when absent. Concurrent calls cannot race for it.
    #[serde(default)]
    pub target: Option<String>,
    /// The first call that fails is the nth matching one (1, the default: the next).
    #[serde(default = "one")]
    pub nth: u32,
}

fn one() -> u32 {
    1
}

/// `mock_set_clock`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MockSetClock {
    /// The instant, in seconds since the Unix epoch.
    pub unix_seconds: i64,
}

/// `mock_advance_clock`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MockAdvanceClock {
    /// How far, in milliseconds.
    pub ms: i64,
}

/// Sandbox state as written in suite files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxState {
    /// `SANDBOX_READY`.
    Ready,
    /// `SANDBOX_NOTREADY`.
    NotReady,
}

/// Container state as written in suite files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContainerState {
    /// `CONTAINER_CREATED`.
    Created,
    /// `CONTAINER_RUNNING`.
    Running,
    /// `CONTAINER_EXITED`.
    Exited,
    /// `CONTAINER_UNKNOWN`.
    Unknown,
}

/// `mock_seed_sandbox`: a sandbox inserted as given.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MockSeedSandbox {
    /// Sandbox alias.
    #[serde(rename = "as")]
    pub alias: String,
    /// Pod alias.
    pub pod: String,
    /// Carry metadata (default true); false seeds a sandbox the manager must skip.
    #[serde(default = "yes")]
    pub metadata: bool,
    /// Metadata attempt.
    #[serde(default)]
    pub attempt: u32,
    /// State (default ready).
    #[serde(default = "ready")]
    pub state: SandboxState,
    /// Creation time in seconds since the Unix epoch (default: the mock's clock).
    #[serde(default)]
    pub created_at: Option<i64>,
    /// Pod IP (none by default).
    #[serde(default)]
    pub ip: Option<String>,
    /// Node network namespace.
    #[serde(default)]
    pub host_network: bool,
    /// Write the `io.kubernetes.pod.*` labels (default true).
    #[serde(default = "yes")]
    pub pod_labels: bool,
    /// Extra labels.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

fn ready() -> SandboxState {
    SandboxState::Ready
}

fn running() -> ContainerState {
    ContainerState::Running
}

/// `mock_seed_container`: a container inserted as given.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MockSeedContainer {
    /// Container alias.
    #[serde(rename = "as")]
    pub alias: String,
    /// Sandbox alias; a sandbox never created is allowed (its id is made up from the alias).
    pub sandbox: String,
    /// Container name (defaults to the alias).
    #[serde(default)]
    pub name: Option<String>,
    /// Carry metadata (default true).
    #[serde(default = "yes")]
    pub metadata: bool,
    /// State (default running).
    #[serde(default = "running")]
    pub state: ContainerState,
    /// Creation time in seconds since the Unix epoch (default: the mock's clock).
    #[serde(default)]
    pub created_at: Option<i64>,
    /// Image symbol or reference.
    #[serde(default = "busybox")]
    pub image: String,
    /// Whose pod labels to write: a pod alias or `none`; defaults to the sandbox's pod.
    #[serde(default)]
    pub pod_labels: Option<String>,
    /// Extra labels.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// How a manager call is expected to fail.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorExpect {
    /// The manager error's kind.
    #[serde(default)]
    pub kind: Option<ErrorKind>,
    /// For a CRI call error, its gRPC code.
    #[serde(default)]
    pub code: Option<GrpcCode>,
    /// Text the error message contains.
    #[serde(default)]
    pub contains: Option<String>,
}

/// Kinds of manager errors a suite can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The runtime's Version answer is not the API version the manager speaks.
    VersionNotSupported,
    /// A CRI call failed.
    Call,
    /// Any other manager error.
    Other,
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ErrorKind::VersionNotSupported => "version_not_supported",
            ErrorKind::Call => "call",
            ErrorKind::Other => "other",
        })
    }
}

/// `new_manager`.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewManager {
    /// Expectations on the construction.
    #[serde(default)]
    pub expect: NewManagerExpect,
}

/// What `new_manager` checks. The runtime type `<runtime_name>` means "what Version reports".
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewManagerExpect {
    /// The construction fails like this (otherwise it must succeed).
    #[serde(default)]
    pub error: Option<ErrorExpect>,
    /// `runtime_type()`; `<runtime_name>` for the runtime's own Version answer.
    #[serde(default)]
    pub runtime_type: Option<String>,
}

/// The runtime-type expectation that stands for the runtime's reported `runtime_name`.
pub const REPORTED_RUNTIME_NAME: &str = "<runtime_name>";

/// `version` and `api_version`.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VersionCall {
    /// Expectations.
    #[serde(default)]
    pub expect: VersionExpect,
}

/// What `version`/`api_version` check.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VersionExpect {
    /// The call fails like this.
    #[serde(default)]
    pub error: Option<ErrorExpect>,
    /// The version, as the manager prints it.
    #[serde(default)]
    pub version: Option<String>,
}

/// `status`.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatusCall {
    /// Expectations.
    #[serde(default)]
    pub expect: StatusExpect,
}

/// What `status` checks.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatusExpect {
    /// The call fails like this.
    #[serde(default)]
    pub error: Option<ErrorExpect>,
}

/// `get_pods`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GetPods {
    /// All sandboxes and containers (true), or only ready sandboxes and running containers.
    #[serde(default = "yes")]
    pub all: bool,
    /// Expectations.
    #[serde(default)]
    pub expect: GetPodsExpect,
}

/// What `get_pods` checks; only the case's own pods are considered.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GetPodsExpect {
    /// The call fails like this.
    #[serde(default)]
    pub error: Option<ErrorExpect>,
    /// Per pod alias (`""` for the pod of containers without pod labels).
    #[serde(default)]
    pub pods: BTreeMap<String, PodExpect>,
    /// Exactly these pods, no other (of the case's own).
    #[serde(default)]
    pub only: Option<Vec<String>>,
    /// None of these pods.
    #[serde(default)]
    pub absent: Vec<String>,
}

/// One pod in a `get_pods` result.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PodExpect {
    /// Exactly these sandboxes, in any order.
    #[serde(default)]
    pub sandboxes: Option<Vec<String>>,
    /// Exactly these containers, in any order.
    #[serde(default)]
    pub containers: Option<Vec<String>>,
    /// States of sandboxes (running = ready, exited = not ready) and containers by alias.
    #[serde(default)]
    pub states: BTreeMap<String, ContainerState>,
}

/// `get_pod_status`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GetPodStatus {
    /// Pod alias.
    pub pod: String,
    /// Expectations.
    #[serde(default)]
    pub expect: PodStatusExpect,
}

/// The expected pod IP.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IpExpect {
    /// No IP.
    None,
    /// The IP the sandbox with this alias reported when it was run.
    Of(String),
}

/// What `get_pod_status` checks.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PodStatusExpect {
    /// The call fails like this.
    #[serde(default)]
    pub error: Option<ErrorExpect>,
    /// The pod IP.
    #[serde(default)]
    pub ip: Option<IpExpect>,
    /// Sandbox statuses, exactly these, newest first.
    #[serde(default)]
    pub sandboxes: Option<Vec<String>>,
    /// Container statuses, exactly these, in any order.
    #[serde(default)]
    pub containers: Option<Vec<String>>,
}

/// `kill_pod`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KillPod {
    /// Pod alias; the running pod is what `get_pods(true)` reports for it.
    pub pod: String,
    /// Pass a pod spec (default true); without one the manager reads the sandbox status.
    #[serde(default = "yes")]
    pub with_spec: bool,
    /// The spec's host network (default: what the pod's first sandbox was run with).
    #[serde(default)]
    pub host_network: Option<bool>,
    /// Grace period override in seconds.
    #[serde(default)]
    pub grace_override: Option<i64>,
    /// Make the network plugin's teardown fail with this message.
    #[serde(default)]
    pub teardown_fails: Option<String>,
    /// Container ids added to the running pod that the runtime does not know.
    #[serde(default)]
    pub extra_containers: Vec<String>,
    /// Expectations.
    #[serde(default)]
    pub expect: KillExpect,
}

/// `stopped: all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stopped {
    /// Every sandbox of the pod is not ready and no container of it runs.
    All,
}

/// What `kill_pod` checks.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KillExpect {
    /// The sandboxes torn down, in order (`[]` for none).
    #[serde(default)]
    pub teardown: Option<Vec<String>>,
    /// What is stopped afterwards, checked on the runtime.
    #[serde(default)]
    pub stopped: Option<Stopped>,
    /// The sync results, exactly these, in order.
    #[serde(default)]
    pub results: Option<Vec<SyncResultExpect>>,
    /// Whether the overall result carries an error.
    #[serde(default)]
    pub failed: Option<bool>,
}

/// Sync actions as written in suite files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SyncActionName {
    /// `KillContainer`.
    KillContainer,
    /// `TeardownNetwork`.
    TeardownNetwork,
    /// `KillPodSandbox`.
    KillPodSandbox,
}

impl fmt::Display for SyncActionName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SyncActionName::KillContainer => "kill_container",
            SyncActionName::TeardownNetwork => "teardown_network",
            SyncActionName::KillPodSandbox => "kill_pod_sandbox",
        })
    }
}

/// One expected sync result.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyncResultExpect {
    /// The action.
    pub action: SyncActionName,
    /// Its target: a container alias (or name), or a pod alias.
    #[serde(default)]
    pub target: Option<String>,
    /// The error kind (e.g. `KillContainerError`), or `none`.
    #[serde(default)]
    pub error: Option<String>,
    /// Text the result's message contains.
    #[serde(default)]
    pub message_contains: Option<String>,
}

/// `get_netns`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GetNetns {
    /// Sandbox alias.
    pub sandbox: String,
    /// Expectations.
    #[serde(default)]
    pub expect: NetnsExpect,
}

/// What `get_netns` checks.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetnsExpect {
    /// The call fails like this.
    #[serde(default)]
    pub error: Option<ErrorExpect>,
    /// Whether the path is empty.
    #[serde(default)]
    pub empty: Option<bool>,
}

/// `get_pod_container_id`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GetPodContainerId {
    /// Pod alias; the running pod is what `get_pods(true)` reports for it.
    pub pod: String,
    /// Expectations.
    #[serde(default)]
    pub expect: PodContainerIdExpect,
}

/// What `get_pod_container_id` checks.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PodContainerIdExpect {
    /// The call fails like this.
    #[serde(default)]
    pub error: Option<ErrorExpect>,
    /// The sandbox alias whose id is returned.
    #[serde(default)]
    pub of: Option<String>,
}

/// A gRPC status code written by name (`NotFound`) or number (`5`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GrpcCode(pub tonic::Code);

/// Every gRPC code, by the name suites use.
pub const GRPC_CODES: [(&str, tonic::Code); 17] = [
    ("Ok", tonic::Code::Ok),
    ("Cancelled", tonic::Code::Cancelled),
    ("Unknown", tonic::Code::Unknown),
    ("InvalidArgument", tonic::Code::InvalidArgument),
    ("DeadlineExceeded", tonic::Code::DeadlineExceeded),
    ("NotFound", tonic::Code::NotFound),
    ("AlreadyExists", tonic::Code::AlreadyExists),
    ("PermissionDenied", tonic::Code::PermissionDenied),
    ("ResourceExhausted", tonic::Code::ResourceExhausted),
    ("FailedPrecondition", tonic::Code::FailedPrecondition),
    ("Aborted", tonic::Code::Aborted),
    ("OutOfRange", tonic::Code::OutOfRange),
    ("Unimplemented", tonic::Code::Unimplemented),
    ("Internal", tonic::Code::Internal),
    ("Unavailable", tonic::Code::Unavailable),
    ("DataLoss", tonic::Code::DataLoss),
    ("Unauthenticated", tonic::Code::Unauthenticated),
];

impl GrpcCode {
    /// The name suites use for this code.
    pub fn name(self) -> &'static str {
        GRPC_CODES
            .iter()
            .find(|(_, code)| *code == self.0)
            .map_or("Unknown", |(name, _)| name)
    }
}

impl fmt::Display for GrpcCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl<'de> Deserialize<'de> for GrpcCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct CodeVisitor;

        impl Visitor<'_> for CodeVisitor {
            type Value = GrpcCode;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a gRPC status code name such as `NotFound`, or its number 0-16")
            }

            fn visit_str<E: de::Error>(self, value: &str) -> Result<GrpcCode, E> {
                GRPC_CODES
                    .iter()
                    .find(|(name, _)| *name == value)
                    .map(|(_, code)| GrpcCode(*code))
                    .ok_or_else(|| {
                        let names: Vec<String> =
                            GRPC_CODES.iter().map(|(n, _)| format!("`{n}`")).collect();
                        E::custom(format!(
                            "unknown gRPC code `{value}`, expected one of {}",
                            names.join(", ")
                        ))
                    })
            }

            fn visit_u64<E: de::Error>(self, value: u64) -> Result<GrpcCode, E> {
                match i32::try_from(value) {
                    Ok(n @ 0..=16) => Ok(GrpcCode(tonic::Code::from_i32(n))),
                    _ => Err(E::custom(format!("gRPC code {value} is not in 0-16"))),
                }
            }

            fn visit_i64<E: de::Error>(self, value: i64) -> Result<GrpcCode, E> {
                match u64::try_from(value) {
                    Ok(n) => self.visit_u64(n),
                    Err(_) => Err(E::custom(format!("gRPC code {value} is not in 0-16"))),
                }
            }
        }

        deserializer.deserialize_any(CodeVisitor)
    }
}
