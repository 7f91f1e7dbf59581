//! The CRI wire layer: the generated `runtime.v1` schema, endpoint parsing, connecting the way
//! the kubelet and crictl do, and a typed client that names the method in every error and can
//! record the calls it makes for snapshots.

mod client;
mod connect;
mod endpoint;
mod summary;

pub use client::{CallError, CallLog, CallRecord, CriClient, MAX_MESSAGE_SIZE};
pub use connect::{connect, ConnectError, ConnectOptions};
pub use endpoint::{Endpoint, EndpointError, EndpointSource};
pub use summary::RequestSummary;

/// Generated code for the CRI `runtime.v1` package (`proto/runtime/v1/api.proto`).
#[allow(
    missing_docs,
    clippy::all,
    clippy::pedantic,
    rustdoc::bare_urls,
    rustdoc::broken_intra_doc_links,
    rustdoc::invalid_html_tags
)]
pub mod v1 {
    tonic::include_proto!("runtime.v1");
}

/// Label keys the kubelet writes on sandboxes and containers and reads back (spec §9).
pub mod labels {
    /// Pod name, on sandboxes and containers.
    pub const POD_NAME: &str = "io.kubernetes.pod.name";
    /// Pod namespace, on sandboxes and containers.
    pub const POD_NAMESPACE: &str = "io.kubernetes.pod.namespace";
    /// Pod UID, on sandboxes and containers; containers are grouped into pods by it.
    pub const POD_UID: &str = "io.kubernetes.pod.uid";
    /// Container name, on containers.
    pub const CONTAINER_NAME: &str = "io.kubernetes.container.name";
    /// The seed kubelet's mark on everything it manages; its value is always "true".
    pub const MANAGED: &str = "io.kubernetes.managed";
    /// Container annotation: hash of the container spec, hexadecimal.
    pub const CONTAINER_HASH: &str = "io.kubernetes.container.hash";
    /// Container annotation: restart count, decimal.
    pub const CONTAINER_RESTART_COUNT: &str = "io.kubernetes.container.restartCount";
    /// Container annotation: the pod's deletion grace period in seconds.
    pub const POD_DELETION_GRACE_PERIOD: &str = "io.kubernetes.pod.deletionGracePeriod";
    /// Container annotation: the pod's termination grace period in seconds.
    pub const POD_TERMINATION_GRACE_PERIOD: &str = "io.kubernetes.pod.terminationGracePeriod";
    /// Container annotation: the container's termination message path.
    pub const CONTAINER_TERMINATION_MESSAGE_PATH: &str =
        "io.kubernetes.container.terminationMessagePath";
    /// cri-harness's own label: the run that created the object, for cleanup.
    pub const RUN_ID: &str = "cri-harness.io/run-id";
    /// cri-harness's own label: the case that created the object.
    pub const CASE: &str = "cri-harness.io/case";
}
