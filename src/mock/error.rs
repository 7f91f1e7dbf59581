//! The mock's errors: [`MockError`] for starting its transports, and [`RpcError`] for refusals it
//! answers on the wire. `From<RpcError> for tonic::Status` is the one place that picks their
//! gRPC codes (containerd's codes where the facts record them; the other-runtime profile's
//! own variants where it takes a freedom of the code).

use std::path::PathBuf;

/// Starting or connecting to the mock failed.
#[derive(Debug, thiserror::Error)]
pub enum MockError {
    /// Something other than a socket sits where the socket should go.
    #[error("cannot serve the mock on {}: the path exists and is not a socket", path.display())]
    NotASocket {
        /// The requested socket path.
        path: PathBuf,
    },
    /// Another server already answers on the socket.
    #[error("cannot serve the mock on {}: another server is listening there", path.display())]
    InUse {
        /// The requested socket path.
        path: PathBuf,
    },
    /// A socket left behind by an earlier server could not be removed.
    #[error("cannot remove the stale socket {}", path.display())]
    RemoveStale {
        /// The stale socket.
        path: PathBuf,
        /// Why removing it failed.
        #[source]
        source: std::io::Error,
    },
    /// Binding the unix socket failed.
    #[error("cannot listen on unix socket {}", path.display())]
    Bind {
        /// The requested socket path.
        path: PathBuf,
        /// Why binding failed.
        #[source]
        source: std::io::Error,
    },
    /// Restricting the socket to its owner failed.
    #[error("cannot set mode 0600 on unix socket {}", path.display())]
    Permissions {
        /// The socket path.
        path: PathBuf,
        /// Why chmod failed.
        #[source]
        source: std::io::Error,
    },
    /// The thread (or its runtime) serving the socket could not be started.
    #[error("cannot start the thread serving the mock on {}", path.display())]
    ServerThread {
        /// The socket path.
        path: PathBuf,
        /// Why the thread or runtime failed to start.
        #[source]
        source: std::io::Error,
    },
    /// The in-memory channel to the mock could not be set up.
    #[error("cannot connect an in-memory channel to the mock")]
    Duplex {
        /// The transport's error.
        #[source]
        source: tonic::transport::Error,
    },
}

/// A CRI or control call the mock refuses; turned into a `tonic::Status` on the wire.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RpcError {
    /// A required request field is missing or empty.
    #[error("{method}: {field} is required")]
    MissingField {
        /// Short method name.
        method: &'static str,
        /// The field, as in the proto.
        field: &'static str,
    },
    /// A request the kubelet the mock was told of would never send (see `kubelet_wire`).
    #[error("{method}: the request is unlike the kubelet's: {what}")]
    UnlikeKubelet {
        /// Short method name.
        method: &'static str,
        /// What it lacks or holds.
        what: String,
    },
    /// No sandbox has this id (or id prefix). Worded as containerd 1.6 words it.
    #[error("an error occurred when try to find sandbox \"{id}\": not found")]
    SandboxNotFound {
        /// The id as given.
        id: String,
    },
    /// No container has this id (or id prefix). Worded as containerd 1.6 words it.
    #[error("an error occurred when try to find container \"{id}\": not found")]
    ContainerNotFound {
        /// The id as given.
        id: String,
    },
    /// An id prefix matches several objects.
    #[error("{kind} id prefix \"{prefix}\" is ambiguous")]
    AmbiguousId {
        /// "sandbox" or "container".
        kind: &'static str,
        /// The prefix as given.
        prefix: String,
    },
    /// A sandbox with the same metadata exists (stopped or not).
    #[error("failed to reserve sandbox name \"{name}\": it is reserved for sandbox \"{holder}\"")]
    SandboxNameReserved {
        /// The derived name.
        name: String,
        /// The sandbox holding it.
        holder: String,
    },
    /// A container with the same metadata exists in the sandbox.
    #[error(
        "failed to reserve container name \"{name}\": it is reserved for container \"{holder}\""
    )]
    ContainerNameReserved {
        /// The derived name.
        name: String,
        /// The container holding it.
        holder: String,
    },
    /// CreateContainer asking for a group but no user, which the runtime cannot resolve
    /// (containerd's words).
    #[error("failed to get container spec opts: failed to generate user string: user group \"{group}\" is specified without user")]
    GroupWithoutUser {
        /// The group asked for.
        group: i64,
    },
    /// CreateContainer with a mount the contract forbids (a recursive read-only mount that is
    /// not read-only and private, a writable image volume, a sub path the image lacks).
    #[error("invalid mount {container_path:?}: {reason}")]
    InvalidMount {
        /// The mount's container path.
        container_path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A sandbox or container whose process the runtime could not set up as configured (a
    /// user namespace the contract refuses, an unknown user, an unusable seccomp profile).
    #[error("{method}: {reason}")]
    ProcessRefused {
        /// Short method name.
        method: &'static str,
        /// What cannot be set up.
        reason: String,
    },
    /// ExecSync's command outlived the request's timeout.
    #[error("timeout {seconds}s exceeded running the command in container \"{id}\"")]
    ExecTimeout {
        /// The container id.
        id: String,
        /// The timeout asked for.
        seconds: i64,
    },
    /// CreateContainer in a sandbox that is not READY.
    #[error("cannot create a container in sandbox \"{id}\": no running task found")]
    SandboxNotRunning {
        /// The sandbox id.
        id: String,
    },
    /// StartContainer of a container whose sandbox is not READY.
    #[error("cannot start container \"{container}\": sandbox \"{sandbox}\" is not running")]
    SandboxStopped {
        /// The container id.
        container: String,
        /// Its sandbox id.
        sandbox: String,
    },
    /// The image was never pulled.
    #[error("image \"{image}\" not found")]
    ImageNotFound {
        /// The reference as given.
        image: String,
    },
    /// PullImage of a reference the image grammar refuses, worded as containerd 1.6 words it.
    #[error("failed to parse image reference \"{image}\": {why}")]
    ImageReferenceInvalid {
        /// The reference as given.
        image: String,
        /// What in it breaks the grammar.
        why: &'static str,
    },
    /// PullImage of a repository or tag the registry does not serve, worded as containerd 1.6
    /// words it.
    #[error("failed to pull and unpack image \"{image}\": failed to resolve reference \"{image}\": {image}: not found")]
    ManifestNotFound {
        /// The reference, normalised.
        image: String,
    },
    /// RemoveContainer of a container whose StartContainer is still in flight, worded as
    /// containerd words it.
    #[error("container {id} is in starting state, can't be removed")]
    ContainerStarting {
        /// The container id.
        id: String,
    },
    /// RemovePodSandbox of a sandbox with a container whose StartContainer is in flight.
    #[error(
        "cannot remove sandbox {id}: container {container} is in starting state, can't be removed"
    )]
    SandboxContainerStarting {
        /// The sandbox id.
        id: String,
        /// The starting container's id.
        container: String,
    },
    /// StartContainer of a container that is not CREATED.
    #[error("cannot start container \"{id}\": container is in {state} state")]
    ContainerInState {
        /// The container id.
        id: String,
        /// The state's proto name, e.g. `CONTAINER_EXITED`.
        state: &'static str,
    },
    /// ContainerStats or UpdateContainerResources of an unknown id, worded as containerd 1.6
    /// words it there (without the id).
    #[error("failed to find container: not found")]
    NoSuchContainer {
        /// The id as given.
        id: String,
    },
    /// PodSandboxStats of an unknown id, worded as containerd 1.6 words it.
    #[error("an error occurred when trying to find sandbox {id}: not found")]
    NoSuchSandbox {
        /// The id as given.
        id: String,
    },
    /// PodSandboxStats of a sandbox that is not READY, worded as containerd 1.6 words it.
    #[error(
        "failed to decode pod sandbox metrics {given}: failed to get pod sandbox stats since \
         sandbox container \"{id}\" is not in ready state: unavailable"
    )]
    SandboxNotReady {
        /// The id as given.
        given: String,
        /// The full id.
        id: String,
    },
    /// ContainerStats of a container with no running task: containerd's task service answers
    /// no metrics for it.
    #[error("unexpected metrics response: []")]
    NoTaskMetrics {
        /// The container id.
        id: String,
    },
    /// ReopenContainerLog of a container that is not running.
    #[error("container is not running")]
    ContainerNotRunning {
        /// The container id.
        id: String,
    },
    /// CheckpointContainer could not write its archive.
    #[error("cannot write the checkpoint archive {location}: {problem}")]
    CheckpointWrite {
        /// The location asked for.
        location: String,
        /// Why.
        problem: String,
    },
    /// UpdateRuntimeConfig with a pod CIDR that is no CIDR, worded as containerd 1.6 words it.
    #[error("get routes: invalid CIDR address: {cidr}")]
    InvalidPodCidr {
        /// The offending CIDR, trimmed.
        cidr: String,
    },
    /// Exec of an unknown container, worded as containerd 1.6 words it there.
    #[error("failed to find container \"{id}\" in store: not found")]
    ExecContainerNotFound {
        /// The id as given.
        id: String,
    },
    /// Attach of an unknown container, worded as containerd 1.6 words it there (without the
    /// id).
    #[error("failed to find container in store: not found")]
    AttachContainerNotFound {
        /// The id as given.
        id: String,
    },
    /// PortForward to an unknown sandbox, worded as containerd 1.6 words it there.
    #[error("failed to find sandbox \"{id}\": not found")]
    ForwardSandboxNotFound {
        /// The id as given.
        id: String,
    },
    /// Exec or Attach of a container that is not running, worded as containerd 1.6 words it.
    #[error("container is in {state} state")]
    StreamNotRunning {
        /// The container id.
        id: String,
        /// The state's proto name, e.g. `CONTAINER_EXITED`.
        state: &'static str,
    },
    /// Exec or Attach asking for no stream at all, worded as containerd 1.6's streaming server
    /// words it for each.
    #[error("one of stdin, stdout, {} stderr must be set", if *.method == "Attach" { "and" } else { "or" })]
    NoStreams {
        /// Short method name.
        method: &'static str,
    },
    /// Exec or Attach asking for a TTY and a separate stderr, which a terminal cannot give.
    #[error("tty and stderr cannot both be true")]
    TtyWithStderr {
        /// Short method name.
        method: &'static str,
    },
    /// PortForward to a sandbox that is not READY, worded as containerd 1.6 words it.
    #[error("sandbox container is not running")]
    ForwardNotReady {
        /// The sandbox id.
        id: String,
    },
    /// The streaming server holds as many unused tokens as the kubelet's allows.
    #[error("maximum number of in-flight requests exceeded")]
    TooManyStreams,
    /// The streaming server could not be started.
    #[error("{method}: the mock's streaming server cannot start: {reason}")]
    StreamingServer {
        /// Short method name.
        method: &'static str,
        /// Why, as text (the I/O error is not `Clone`).
        reason: String,
    },
    /// The other-runtime profile: a request lacks fields the kubelet always sets.
    #[error("{method}: {missing}")]
    KubeletFieldMissing {
        /// Short method name.
        method: &'static str,
        /// Each missing field, as in the proto, with why the runtime needs it.
        missing: String,
    },
    /// The other-runtime profile: an id it does not have, where the contract gives no code
    /// (StartContainer, ContainerStats), worded as CRI-O words it.
    #[error("{kind} with ID starting with {id} not found: ID does not exist")]
    IdDoesNotExist {
        /// "container" or "pod sandbox".
        kind: &'static str,
        /// The id as given.
        id: String,
    },
    /// The other-runtime profile: a pull of a repository or tag the registry lacks.
    #[error("pulling image {image}: reading manifest: manifest unknown")]
    ManifestUnknown {
        /// The reference as given.
        image: String,
    },
    /// The other-runtime profile: a pull by a reference the image grammar refuses.
    #[error("invalid image name {image:?}: {why}")]
    InvalidImageName {
        /// The reference as given.
        image: String,
        /// What in it breaks the grammar.
        why: &'static str,
    },
    /// The other-runtime profile: CreateContainer asking for a group but no user.
    #[error("user group {group} is specified without user")]
    GroupNeedsUser {
        /// The group asked for.
        group: i64,
    },
    /// Control: InjectError or InjectLatency named no CRI method.
    #[error("{control}: unknown CRI method \"{method}\"; valid methods: {valid}")]
    UnknownMethod {
        /// The control call.
        control: &'static str,
        /// The name as given.
        method: String,
        /// Every accepted name, comma-separated.
        valid: String,
    },
    /// Control: InjectError with code 0 (OK) or a number that is no gRPC code.
    #[error("InjectError: code {code} is not an error code (use 1..=16)")]
    InvalidCode {
        /// The code as given.
        code: i32,
    },
    /// Control: a fault aimed at a target for a method whose requests name none.
    #[error("{control}: {method} requests name no sandbox, container or image, so target_id cannot select them; methods that take one: {targeted}")]
    UntargetedMethod {
        /// The control call.
        control: &'static str,
        /// The method.
        method: &'static str,
        /// Every method that takes a target, with what it names, comma-separated.
        targeted: String,
    },
    /// Control: a negative instant or step for the clock.
    #[error("{control}: {value} must not be negative")]
    NegativeTime {
        /// The control call.
        control: &'static str,
        /// The value as given.
        value: i64,
    },
    /// Control: a timed exit for a container whose process has already ended.
    #[error("{control}: container \"{id}\" is in {state} state; only a created or running container can exit")]
    NotExiting {
        /// The control call.
        control: &'static str,
        /// The container's full id.
        id: String,
        /// Its CRI state's name.
        state: &'static str,
    },
    /// Control: seeding an object whose id is taken.
    #[error("{control}: a {kind} with id \"{id}\" already exists")]
    AlreadyExists {
        /// The control call.
        control: &'static str,
        /// "sandbox" or "container".
        kind: &'static str,
        /// The id.
        id: String,
    },
}

impl From<RpcError> for tonic::Status {
    fn from(err: RpcError) -> Self {
        use tonic::Code;
        let code = match &err {
            RpcError::MissingField { .. }
            | RpcError::UnlikeKubelet { .. }
            | RpcError::UnknownMethod { .. }
            | RpcError::InvalidCode { .. }
            | RpcError::UntargetedMethod { .. }
            | RpcError::NegativeTime { .. }
            | RpcError::NoStreams { .. }
            | RpcError::TtyWithStderr { .. }
            | RpcError::InvalidMount { .. }
            | RpcError::KubeletFieldMissing { .. }
            | RpcError::InvalidImageName { .. }
            | RpcError::GroupNeedsUser { .. } => Code::InvalidArgument,
            RpcError::SandboxNotFound { .. }
            | RpcError::ContainerNotFound { .. }
            | RpcError::SandboxNotRunning { .. }
            | RpcError::ImageNotFound { .. }
            | RpcError::ManifestNotFound { .. }
            | RpcError::NoSuchContainer { .. }
            | RpcError::NoSuchSandbox { .. }
            | RpcError::ExecContainerNotFound { .. }
            | RpcError::AttachContainerNotFound { .. }
            | RpcError::ForwardSandboxNotFound { .. } => Code::NotFound,
            RpcError::SandboxNotReady { .. } => Code::Unavailable,
            // containerd answers these with untyped errors, which gRPC carries as Unknown.
            RpcError::AmbiguousId { .. }
            | RpcError::SandboxNameReserved { .. }
            | RpcError::ContainerNameReserved { .. }
            | RpcError::SandboxStopped { .. }
            | RpcError::ContainerInState { .. }
            | RpcError::ContainerStarting { .. }
            | RpcError::SandboxContainerStarting { .. }
            | RpcError::NoTaskMetrics { .. }
            | RpcError::ContainerNotRunning { .. }
            | RpcError::InvalidPodCidr { .. }
            | RpcError::CheckpointWrite { .. }
            | RpcError::GroupWithoutUser { .. }
            | RpcError::ProcessRefused { .. }
            | RpcError::StreamNotRunning { .. }
            | RpcError::ImageReferenceInvalid { .. }
            | RpcError::ForwardNotReady { .. }
            | RpcError::IdDoesNotExist { .. }
            | RpcError::ManifestUnknown { .. } => Code::Unknown,
            RpcError::TooManyStreams => Code::ResourceExhausted,
            RpcError::ExecTimeout { .. } => Code::DeadlineExceeded,
            RpcError::StreamingServer { .. } => Code::Internal,
            RpcError::AlreadyExists { .. } => Code::AlreadyExists,
            RpcError::NotExiting { .. } => Code::FailedPrecondition,
        };
        tonic::Status::new(code, err.to_string())
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use tonic::Code;

    use super::*;

    #[rstest]
    #[case::missing_metadata(RpcError::MissingField { method: "RunPodSandbox", field: "config.metadata" }, Code::InvalidArgument)]
    #[case::unknown_sandbox(RpcError::SandboxNotFound { id: "x".into() }, Code::NotFound)]
    #[case::stopped_sandbox(RpcError::SandboxNotRunning { id: "x".into() }, Code::NotFound)]
    #[case::missing_image(RpcError::ImageNotFound { image: "x".into() }, Code::NotFound)]
    #[case::reserved_name(RpcError::SandboxNameReserved { name: "n".into(), holder: "h".into() }, Code::Unknown)]
    #[case::wrong_state(RpcError::ContainerInState { id: "x".into(), state: "CONTAINER_EXITED" }, Code::Unknown)]
    #[case::group_without_user(RpcError::GroupWithoutUser { group: 1002 }, Code::Unknown)]
    #[case::exec_stopped(RpcError::StreamNotRunning { id: "x".into(), state: "CONTAINER_EXITED" }, Code::Unknown)]
    #[case::exec_no_streams(RpcError::NoStreams { method: "Exec" }, Code::InvalidArgument)]
    #[case::exec_unknown(RpcError::ExecContainerNotFound { id: "x".into() }, Code::NotFound)]
    #[case::forward_stopped(RpcError::ForwardNotReady { id: "x".into() }, Code::Unknown)]
    #[case::seed_clash(RpcError::AlreadyExists { control: "SeedContainer", kind: "container", id: "x".into() }, Code::AlreadyExists)]
    #[case::userns_refused(RpcError::ProcessRefused { method: "RunPodSandbox", reason: "x".into() }, Code::Unknown)]
    #[case::exec_timeout(RpcError::ExecTimeout { id: "x".into(), seconds: 1 }, Code::DeadlineExceeded)]
    #[case::kubelet_field(RpcError::KubeletFieldMissing { method: "CreateContainer", missing: "f is required (w)".into() }, Code::InvalidArgument)]
    #[case::other_runtimes_unknown_id(RpcError::IdDoesNotExist { kind: "container", id: "x".into() }, Code::Unknown)]
    fn refusals_carry_containerds_codes(#[case] err: RpcError, #[case] code: Code) {
        let message = err.to_string();
        let status = tonic::Status::from(err);
        assert_eq!((status.code(), status.message()), (code, message.as_str()));
    }
}
