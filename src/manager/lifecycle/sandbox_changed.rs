//! The sandbox-changed decision (kubelet rules: #has-the-sandbox-changed): does the pod need a new
//! sandbox, with which attempt
//! number, and which sandbox is the current one. It reads the pod's sandboxes from its status,
//! newest first, and calls nothing.

use super::{k8s, pod};
use crate::cri::v1;
use crate::manager::PodStatus;

/// Whether the pod needs a new sandbox, the attempt a new one gets, and the newest sandbox's id
/// (ports `PodSandboxChanged`, kuberuntime/util/util.go). The attempt is the highest of all the
/// pod's sandboxes plus one when a new one is needed, else that highest; the id is "" when there
/// is no sandbox or its network mode no longer matches the pod (nothing of it can be kept).
///
/// A sandbox status that echoes no namespace options reads as POD network mode (the enum's zero),
/// as in the kubelet: a host-network pod on such a runtime gets a new sandbox on every sync.
// Where the kubelet would dereference a missing `metadata`, the port reads attempt 0.
pub fn pod_sandbox_changed(pod: &k8s::Pod, status: &PodStatus) -> (bool, u32, String) {
    let Some(latest) = status.sandbox_statuses.first() else {
        return (true, 0, String::new());
    };
    let ready = |s: &v1::PodSandboxStatus| s.state == i32::from(v1::PodSandboxState::SandboxReady);
    let ready_count = status.sandbox_statuses.iter().filter(|s| ready(s)).count();
    let max_attempt = status
        .sandbox_statuses
        .iter()
        .map(|s| s.metadata.as_ref().map_or(0, |m| m.attempt))
        .max()
        .unwrap_or(0);
    let next = max_attempt.saturating_add(1);

    if ready_count > 1 || !ready(latest) {
        return (true, next, latest.id.clone());
    }
    let network_mode = latest
        .linux
        .as_ref()
        .and_then(|l| l.namespaces.as_ref())
        .and_then(|n| n.options.as_ref())
        .map_or(i32::from(v1::NamespaceMode::Pod), |o| o.network);
    // Compared as the wire's integer, as the kubelet does: a value outside the enum is a change.
    if network_mode != i32::from(pod::network_namespace_for_pod(pod)) {
        return (true, next, String::new());
    }
    if !pod::host_network(pod) && latest.network.as_ref().is_some_and(|n| n.ip.is_empty()) {
        return (true, next, latest.id.clone());
    }
    (false, max_attempt, latest.id.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use v1::PodSandboxState::{SandboxNotready as NotReady, SandboxReady as Ready};

    /// One sandbox status, newest-first position given by where the caller puts it.
    fn sandbox(id: &str, attempt: u32, state: v1::PodSandboxState) -> v1::PodSandboxStatus {
        v1::PodSandboxStatus {
            id: id.to_owned(),
            metadata: Some(v1::PodSandboxMetadata {
                attempt,
                ..Default::default()
            }),
            state: state.into(),
            ..Default::default()
        }
    }

    fn with_network_mode(
        mut status: v1::PodSandboxStatus,
        mode: v1::NamespaceMode,
    ) -> v1::PodSandboxStatus {
        status.linux = Some(v1::LinuxPodSandboxStatus {
            namespaces: Some(v1::Namespace {
                options: Some(v1::NamespaceOption {
                    network: mode.into(),
                    ..Default::default()
                }),
            }),
        });
        status
    }

    fn with_ip(mut status: v1::PodSandboxStatus, ip: &str) -> v1::PodSandboxStatus {
        status.network = Some(v1::PodSandboxNetworkStatus {
            ip: ip.to_owned(),
            ..Default::default()
        });
        status
    }

    fn pod(host_network: bool) -> k8s::Pod {
        k8s::Pod {
            spec: Some(k8s::PodSpec {
                host_network: Some(host_network),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn status(sandboxes: Vec<v1::PodSandboxStatus>) -> PodStatus {
        PodStatus {
            sandbox_statuses: sandboxes,
            ..Default::default()
        }
    }

    // The cases of TestPodSandboxChanged (kuberuntime/util/util_test.go), one for one.
    #[rstest]
    #[case::pod_with_no_existing_sandboxes(pod(false), vec![], (true, 0, ""))]
    #[case::pod_with_multiple_ready_sandbox_statuses(
        pod(false),
        vec![sandbox("sandboxID2", 1, Ready), sandbox("sandboxID1", 0, Ready)],
        (true, 2, "sandboxID2")
    )]
    #[case::pod_with_no_ready_sandbox_statuses(
        pod(false),
        vec![sandbox("sandboxID2", 1, NotReady), sandbox("sandboxID1", 0, NotReady)],
        (true, 2, "sandboxID2")
    )]
    #[case::pod_with_ready_sandbox_status_but_network_namespace_mismatch(
        pod(true),
        vec![with_network_mode(sandbox("sandboxID1", 0, Ready), v1::NamespaceMode::Pod)],
        (true, 1, "")
    )]
    #[case::pod_with_ready_sandbox_status_but_no_ip(
        pod(false),
        vec![with_ip(sandbox("sandboxID1", 0, Ready), "")],
        (true, 1, "sandboxID1")
    )]
    #[case::pod_with_ready_sandbox_status_with_ip(
        pod(false),
        vec![with_ip(sandbox("sandboxID1", 0, Ready), "10.0.0.10")],
        (false, 0, "sandboxID1")
    )]
    fn pod_sandbox_changed_matches_test_pod_sandbox_changed(
        #[case] pod: k8s::Pod,
        #[case] sandboxes: Vec<v1::PodSandboxStatus>,
        #[case] expected: (bool, u32, &str),
    ) {
        check(&pod, sandboxes, expected);
    }

    // The port's own cases, for the rules the upstream table leaves implicit.
    #[rstest]
    #[case::the_attempt_is_the_highest_not_the_latest_plus_one(
        pod(false),
        vec![sandbox("new", 1, NotReady), sandbox("old", 4, NotReady)],
        (true, 5, "new")
    )]
    #[case::a_ready_sandbox_that_is_not_the_latest_is_replaced(
        pod(false),
        vec![sandbox("new", 1, NotReady), sandbox("old", 0, Ready)],
        (true, 2, "new")
    )]
    #[case::a_host_network_pod_on_a_runtime_echoing_no_namespaces_is_recreated(
        pod(true),
        vec![with_ip(sandbox("sandboxID1", 0, Ready), "")],
        (true, 1, "")
    )]
    #[case::a_host_network_pod_needs_no_ip(
        pod(true),
        vec![with_ip(with_network_mode(sandbox("sandboxID1", 3, Ready), v1::NamespaceMode::Node), "")],
        (false, 3, "sandboxID1")
    )]
    #[case::a_sandbox_without_network_status_needs_no_ip(
        pod(false),
        vec![sandbox("sandboxID1", 0, Ready)],
        (false, 0, "sandboxID1")
    )]
    #[case::a_missing_metadata_reads_as_attempt_zero(
        pod(false),
        vec![v1::PodSandboxStatus { id: "bare".to_owned(), state: NotReady.into(), ..Default::default() }],
        (true, 1, "bare")
    )]
    fn pod_sandbox_changed_follows_r6_1_at_the_edges(
        #[case] pod: k8s::Pod,
        #[case] sandboxes: Vec<v1::PodSandboxStatus>,
        #[case] expected: (bool, u32, &str),
    ) {
        check(&pod, sandboxes, expected);
    }

    fn check(pod: &k8s::Pod, sandboxes: Vec<v1::PodSandboxStatus>, expected: (bool, u32, &str)) {
        let (changed, attempt, id) = pod_sandbox_changed(pod, &status(sandboxes));
        assert_eq!((changed, attempt, id.as_str()), expected);
    }
}
