//! The settings a sync reads beside the pod: shared by the sandbox and container configs and
//! SyncPod itself, so it sits below all three.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::cri::v1;

/// What a sync needs beyond the pod and its status: where the harness keeps pod logs and
/// volumes, the runtime handler, and the kubelet settings the configs read.
#[derive(Debug, Clone)]
pub struct SyncOptions {
    /// The pod log root the harness owns (the kubelet's `/var/log/pods`, which the harness
    /// never writes to): each sandbox's log directory is made under it.
    pub pod_logs_root: PathBuf,
    /// Where emptyDir volumes are made: `<volumes_root>/<pod uid>/kubernetes.io~empty-dir/<name>`
    /// (the kubelet's `/var/lib/kubelet/pods` layout).
    pub volumes_root: PathBuf,
    /// The runtime handler RunPodSandbox is given ("" for the runtime's default);
    /// `spec.runtimeClassName` is not resolved, as there is no RuntimeClass to read.
    pub runtime_handler: String,
    /// The node's resolver settings (the kubelet's `--resolv-conf`) that every DNS policy but
    /// None starts from; `None` is the kubelet with an empty `--resolv-conf`.
    pub resolver: Option<v1::DnsConfig>,
    /// The kubelet's `seccompDefault`: containers without a seccomp profile get RuntimeDefault
    /// instead of Unconfined.
    pub seccomp_default: bool,
    /// Labels the harness adds to every sandbox and container beside the kubelet's (e.g. its
    /// run id, so `clean` finds them).
    pub extra_labels: BTreeMap<String, String>,
    /// Whose rules the configs follow; a manager's sync sets its own.
    pub kubelet: crate::manager::KubeletProfile,
}

impl SyncOptions {
    /// Options with the given roots, the default runtime handler, an empty
    /// `--resolv-conf`, `seccompDefault` on and no extra labels.
    pub fn new(pod_logs_root: impl Into<PathBuf>, volumes_root: impl Into<PathBuf>) -> Self {
        Self {
            pod_logs_root: pod_logs_root.into(),
            volumes_root: volumes_root.into(),
            runtime_handler: String::new(),
            resolver: None,
            seccomp_default: true,
            extra_labels: BTreeMap::new(),
            kubelet: crate::manager::KubeletProfile::default(),
        }
    }
}
