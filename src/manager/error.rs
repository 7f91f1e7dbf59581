//! The manager's error type: every way a manager call can fail, each naming the call and the
//! object it was about. CRI failures are kept whole so callers can still ask for the code.

use crate::cri::CallError;

/// A manager call that failed.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// The runtime answered `Version` with an API version other than [`super::KUBE_RUNTIME_API_VERSION`].
    #[error("runtime api version is not supported: runtime answered version {version:?}, the manager speaks {expected:?}", expected = super::KUBE_RUNTIME_API_VERSION)]
    VersionNotSupported {
        /// The `version` field of the runtime's answer.
        version: String,
    },
    /// A CRI call failed; the error names the method and the endpoint.
    #[error(transparent)]
    Call(#[from] CallError),
    /// A version string is not a strict `MAJOR.MINOR.PATCH[-pre][+build]` semver.
    #[error("version {text:?} ({what}) is not a strict semver version")]
    InvalidVersion {
        /// Where the text came from, e.g. `Version.runtime_api_version`.
        what: &'static str,
        /// The text as given.
        text: String,
        /// The parser's complaint.
        #[source]
        source: semver::Error,
    },
    /// A CRI answer lacked the status message the call exists for.
    #[error("CRI {method} answered without a status for {id:?}")]
    MissingStatus {
        /// Short CRI method name.
        method: &'static str,
        /// The object asked about ("" for runtime-wide calls such as `Status`).
        id: String,
    },
    /// No ready, managed sandbox has the id.
    #[error("sandbox {id:?} is not found")]
    SandboxNotFound {
        /// The sandbox id asked for.
        id: String,
    },
    /// The runtime's verbose sandbox status carries no network namespace path: the seed's
    /// answer for a sandbox without Linux status, in its words.
    #[error("not supported")]
    NetNsNotSupported {
        /// The sandbox id asked for.
        id: String,
    },
    /// A port forward to a pod failed: the runtime gave no URL, or the relay through it
    /// failed (e.g. nothing listens on the port).
    #[error("port forward to port {port} of pod {pod:?} failed: {source}")]
    PortForward {
        /// `<name>_<namespace>` of the pod.
        pod: String,
        /// The pod's port.
        port: u16,
        /// Why.
        #[source]
        source: Box<super::port_forward::PortForwardFailure>,
    },
    /// Today's kubelet kills a container of a pod it has the spec of only if the spec names
    /// it (a container, an init container or an ephemeral one): it fails before any
    /// StopContainer (`killContainer`, kuberuntime_container.go).
    #[error(
        "failed to get containerSpec {name:?} (id={id:?}) in pod {pod:?} when killing container"
    )]
    ContainerSpecNotFound {
        /// The container's name.
        name: String,
        /// The container's id, as the kubelet writes it (`TYPE://ID`).
        id: String,
        /// `<name>_<namespace>(<uid>)` of the pod.
        pod: String,
    },
    /// A running pod has no sandboxes, so it has no pod container id.
    #[error("sandboxes for pod {pod:?} not found")]
    PodSandboxesNotFound {
        /// `<name>_<namespace>` of the pod.
        pod: String,
    },
}
