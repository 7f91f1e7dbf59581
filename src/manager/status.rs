//! `get_pod_status`: a pod's sandboxes newest first, its IP from the newest sandbox while that
//! one is READY, and its containers' statuses gathered sandbox by sandbox (the seed's way).

use std::collections::BTreeMap;

use super::{
    labels, ContainerId, ContainerState, ContainerStatus, KubeGenericRuntimeManager,
    KubeletProfile, ManagerError, PodStatus,
};
use crate::cri::labels::POD_UID;
use crate::cri::v1;

impl KubeGenericRuntimeManager {
    /// The status of pod `uid`: every sandbox with its label (newest first, any state), the pod
    /// IP, and the statuses of the containers of those sandboxes. Any CRI error fails the whole
    /// call (the seed's rule), except that under [`KubeletProfile::Current`] a container whose
    /// ContainerStatus answers NotFound is left out, as today's kubelet does (kubelet rules:
    /// #container-statuses). Ports
    /// `GetPodStatus` (kuberuntime_manager.go, 2016).
    pub async fn get_pod_status(
        &self,
        uid: &str,
        name: &str,
        namespace: &str,
    ) -> Result<PodStatus, ManagerError> {
        let filter = v1::PodSandboxFilter {
            label_selector: BTreeMap::from([(POD_UID.to_owned(), uid.to_owned())]),
            ..Default::default()
        };
        let mut sandboxes = self.list_sandboxes(Some(filter)).await?;
        sort_sandboxes_newest_first(&mut sandboxes);

        let mut sandbox_statuses = Vec::with_capacity(sandboxes.len());
        for sandbox in &sandboxes {
            let answer = self.client.pod_sandbox_status(&sandbox.id).await?;
            // A v1 answer may omit the status; the seed would have read through nil, so fail.
            let status = answer.status.ok_or_else(|| ManagerError::MissingStatus {
                method: "PodSandboxStatus",
                id: sandbox.id.clone(),
            })?;
            sandbox_statuses.push(status);
        }
        // The seed let a non-default network plugin override this IP; the harness's plugins
        // report no IPs, so the runtime's answer stands.
        let ip = pod_ip(&sandbox_statuses);

        let mut container_statuses = Vec::new();
        for sandbox in &sandboxes {
            container_statuses.extend(self.sandbox_container_statuses(&sandbox.id).await?);
        }
        Ok(PodStatus {
            id: uid.to_owned(),
            name: name.to_owned(),
            namespace: namespace.to_owned(),
            ip,
            sandbox_statuses,
            container_statuses,
        })
    }

    /// Statuses of one sandbox's containers, newest first. Seed rule kept (kubelet rules:
    /// #upstream-hazards-the-port-decides, item 6):
    /// containers whose sandbox was removed are not found this way; today's kubelet lists by
    /// pod-uid label and would report them. Ports `getKubeletContainerStatuses`
    /// (kuberuntime_container.go, 2016).
    async fn sandbox_container_statuses(
        &self,
        sandbox_id: &str,
    ) -> Result<Vec<ContainerStatus>, ManagerError> {
        let filter = v1::ContainerFilter {
            pod_sandbox_id: sandbox_id.to_owned(),
            ..Default::default()
        };
        let mut containers = self.list_containers(Some(filter)).await?;
        // Ask in a fixed order, not the runtime's list order (containerd's varies), so the
        // calls a case records are the same on every run: newest first, and among equal times
        // (upstream's fixtures all share one) by name and then newest attempt, which the pod
        // fixes; the id, which the runtime makes, decides only between otherwise equal twins.
        containers.sort_by(|a, b| {
            let meta = |c: &v1::Container| {
                c.metadata
                    .as_ref()
                    .map(|m| (m.name.clone(), std::cmp::Reverse(m.attempt)))
            };
            b.created_at
                .cmp(&a.created_at)
                .then_with(|| meta(a).cmp(&meta(b)))
                .then_with(|| a.id.cmp(&b.id))
        });
        let mut statuses = Vec::with_capacity(containers.len());
        for container in &containers {
            let answer = match self.client.container_status(&container.id).await {
                Ok(answer) => answer,
                // Today's kubelet: it went between the list and the status; skip it.
                Err(err) if self.profile.forgives(err.code) => continue,
                Err(err) => return Err(err.into()),
            };
            let status = answer.status.ok_or_else(|| ManagerError::MissingStatus {
                method: "ContainerStatus",
                id: container.id.clone(),
            })?;
            statuses.push(to_container_status(
                self.container_id(&status.id),
                &status,
                self.profile,
            ));
        }
        sort_statuses_newest_first(&mut statuses);
        Ok(statuses)
    }
}

/// Newest first by `created_at`; a stable sort so equal times keep the runtime's list order (the
/// seed's sort was unstable, leaving ties unspecified).
pub(crate) fn sort_sandboxes_newest_first(sandboxes: &mut [v1::PodSandbox]) {
    sandboxes.sort_by_key(|s| std::cmp::Reverse(s.created_at));
}

/// Newest first by creation time, stable like [`sort_sandboxes_newest_first`].
pub(crate) fn sort_statuses_newest_first(statuses: &mut [ContainerStatus]) {
    statuses.sort_by_key(|s| std::cmp::Reverse(s.created_at));
}

/// The pod IP: `network.ip` of the newest sandbox (index 0) if it is READY, else "". Older
/// sandboxes never contribute, even when the newest is not ready. Ports
/// `determinePodSandboxIP` plus the latest-sandbox rule of `GetPodStatus` (2016).
pub(crate) fn pod_ip(newest_first: &[v1::PodSandboxStatus]) -> String {
    match newest_first.first() {
        Some(latest) if latest.state == i32::from(v1::PodSandboxState::SandboxReady) => latest
            .network
            .as_ref()
            .map(|n| n.ip.clone())
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// The manager's view of a CRI container status. Timestamps stay in nanoseconds as CRI v1 says
/// (the seed's v1alpha1 fake wrote seconds: kubelet rules:
/// #upstream-hazards-the-port-decides, item 8). The termination-message file is not
/// read: the harness does not run on the runtime's host.
///
/// Which fields are kept depends on the state, and the two kubelets split differently. The seed
/// (`getKubeletContainerStatuses`, kuberuntime_container.go, 2016) keeps the start time of a
/// running container and the exit fields of any other. Today's kubelet (`toKubeContainerStatus`)
/// keeps the start time of every container past created (it was started, even if it has since
/// exited or is unknown) and the exit fields (finish time, exit code, reason, message) of an
/// exited one only.
pub(crate) fn to_container_status(
    id: ContainerId,
    status: &v1::ContainerStatus,
    profile: KubeletProfile,
) -> ContainerStatus {
    let state = ContainerState::from_cri_container(status.state);
    let mut converted = ContainerStatus {
        id,
        name: labels::container_name(&status.labels),
        image: status
            .image
            .as_ref()
            .map(|i| i.image.clone())
            .unwrap_or_default(),
        image_ref: status.image_ref.clone(),
        hash: labels::container_hash(&status.annotations),
        restart_count: labels::restart_count(&status.annotations),
        state,
        created_at: status.created_at,
        resources: crate::manager::lifecycle::runtime_resources(status.resources.as_ref()),
        ..Default::default()
    };
    let (started, exited) = if profile.is_current() {
        (
            state != ContainerState::Created,
            state == ContainerState::Exited,
        )
    } else {
        (
            state == ContainerState::Running,
            state != ContainerState::Running,
        )
    };
    if started {
        converted.started_at = status.started_at;
    }
    if exited {
        converted.finished_at = status.finished_at;
        converted.exit_code = status.exit_code;
        converted.reason = status.reason.clone();
        converted.message = status.message.clone();
    }
    converted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cri::labels::{CONTAINER_HASH, CONTAINER_NAME, CONTAINER_RESTART_COUNT};
    use rstest::rstest;
    use v1::PodSandboxState::{SandboxNotready as NotReady, SandboxReady as Ready};

    fn listed(id: &str, created_at: i64) -> v1::PodSandbox {
        v1::PodSandbox {
            id: id.to_owned(),
            created_at,
            ..Default::default()
        }
    }

    #[rstest]
    #[case::already_ordered(vec![("a", 3), ("b", 2), ("c", 1)], vec!["a", "b", "c"])]
    #[case::oldest_first_reversed(vec![("a", 1), ("b", 2), ("c", 3)], vec!["c", "b", "a"])]
    #[case::by_time_not_by_list_position(vec![("a", 2), ("b", 9), ("c", 5)], vec!["b", "c", "a"])]
    #[case::ties_keep_list_order(vec![("a", 5), ("b", 5), ("c", 7)], vec!["c", "a", "b"])]
    #[case::one(vec![("a", 1)], vec!["a"])]
    fn sandboxes_sort_newest_first(#[case] input: Vec<(&str, i64)>, #[case] expected: Vec<&str>) {
        let mut sandboxes: Vec<_> = input.into_iter().map(|(id, t)| listed(id, t)).collect();
        sort_sandboxes_newest_first(&mut sandboxes);
        let ids: Vec<_> = sandboxes.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, expected);
    }

    fn sandbox_status(state: v1::PodSandboxState, ip: Option<&str>) -> v1::PodSandboxStatus {
        v1::PodSandboxStatus {
            state: state.into(),
            network: ip.map(|ip| v1::PodSandboxNetworkStatus {
                ip: ip.to_owned(),
                additional_ips: vec![],
            }),
            ..Default::default()
        }
    }

    #[rstest]
    #[case::no_sandboxes(vec![], "")]
    #[case::one_ready(vec![sandbox_status(Ready, Some("10.88.0.2"))], "10.88.0.2")]
    #[case::newest_ready_wins(
        vec![sandbox_status(Ready, Some("10.88.0.3")), sandbox_status(Ready, Some("10.88.0.2"))],
        "10.88.0.3"
    )]
    #[case::newest_not_ready_hides_an_older_ready_ip(
        vec![sandbox_status(NotReady, Some("10.88.0.3")), sandbox_status(Ready, Some("10.88.0.2"))],
        ""
    )]
    #[case::ready_without_network(vec![sandbox_status(Ready, None)], "")]
    #[case::host_network_reports_no_ip(vec![sandbox_status(Ready, Some(""))], "")]
    fn pod_ip_comes_from_the_newest_sandbox_only_while_ready(
        #[case] statuses: Vec<v1::PodSandboxStatus>,
        #[case] expected: &str,
    ) {
        assert_eq!(pod_ip(&statuses), expected);
    }

    fn cri_status(state: v1::ContainerState) -> v1::ContainerStatus {
        v1::ContainerStatus {
            id: "c1".to_owned(),
            state: state.into(),
            created_at: 10,
            started_at: 20,
            finished_at: 30,
            exit_code: 3,
            image: Some(v1::ImageSpec {
                image: "busybox".to_owned(),
                ..Default::default()
            }),
            image_ref: "sha256:abc".to_owned(),
            reason: "Error".to_owned(),
            message: "bye".to_owned(),
            labels: BTreeMap::from([(CONTAINER_NAME.to_owned(), "app".to_owned())]),
            annotations: BTreeMap::from([
                (CONTAINER_HASH.to_owned(), "ff".to_owned()),
                (CONTAINER_RESTART_COUNT.to_owned(), "2".to_owned()),
            ]),
            ..Default::default()
        }
    }

    /// (started_at, finished_at, exit_code, reason) after conversion under the seed's rules.
    #[rstest]
    #[case::running_reports_start_only(v1::ContainerState::ContainerRunning, (20, 0, 0, ""))]
    #[case::exited_reports_exit_only(v1::ContainerState::ContainerExited, (0, 30, 3, "Error"))]
    #[case::created_counts_as_not_running(v1::ContainerState::ContainerCreated, (0, 30, 3, "Error"))]
    #[case::unknown_counts_as_not_running(v1::ContainerState::ContainerUnknown, (0, 30, 3, "Error"))]
    fn container_status_splits_start_and_exit_fields_on_running(
        #[case] state: v1::ContainerState,
        #[case] expected: (i64, i64, i32, &str),
    ) {
        let id = ContainerId {
            r#type: "mock".to_owned(),
            id: "c1".to_owned(),
        };
        let s = to_container_status(id, &cri_status(state), KubeletProfile::Seed);
        assert_eq!(
            (s.started_at, s.finished_at, s.exit_code, s.reason.as_str()),
            expected
        );
        assert_eq!(
            (
                s.name.as_str(),
                s.image.as_str(),
                s.image_ref.as_str(),
                s.hash,
                s.restart_count,
                s.created_at
            ),
            ("app", "busybox", "sha256:abc", 0xff, 2, 10)
        );
    }

    /// TestToKubeContainerStatus (kuberuntime_container_test.go, v1.34), row by row: a CRI status
    /// of each state with upstream's times (created 327, started 999, finished 1278, in
    /// nanoseconds), exit code 121, reason "GotKilled" and message "The container was killed" in
    /// the exited row, converted under today's rules. Upstream's other rows fill only what the
    /// state has; here every input carries every field, so the table also shows which ones the
    /// conversion drops.
    #[rstest]
    #[case::created_container(v1::ContainerState::ContainerCreated, ContainerState::Created, (0, 0, 0, "", ""))]
    #[case::running_container(v1::ContainerState::ContainerRunning, ContainerState::Running, (999, 0, 0, "", ""))]
    #[case::exited_container(
        v1::ContainerState::ContainerExited,
        ContainerState::Exited,
        (999, 1278, 121, "GotKilled", "The container was killed")
    )]
    #[case::unknown_container(v1::ContainerState::ContainerUnknown, ContainerState::Unknown, (999, 0, 0, "", ""))]
    fn to_kube_container_status_matches_test_to_kube_container_status(
        #[case] cri_state: v1::ContainerState,
        #[case] state: ContainerState,
        #[case] expected: (i64, i64, i32, &str, &str),
    ) {
        let input = v1::ContainerStatus {
            id: "dummyid".to_owned(),
            metadata: Some(v1::ContainerMetadata {
                name: "cname".to_owned(),
                attempt: 3,
            }),
            image: Some(v1::ImageSpec {
                image: "fimage".to_owned(),
                ..Default::default()
            }),
            state: cri_state.into(),
            created_at: 327,
            started_at: 999,
            finished_at: 1278,
            exit_code: 121,
            reason: "GotKilled".to_owned(),
            message: "The container was killed".to_owned(),
            ..Default::default()
        };
        let id = ContainerId {
            r#type: "testRuntime".to_owned(),
            id: "dummyid".to_owned(),
        };
        let s = to_container_status(id.clone(), &input, KubeletProfile::Current);
        let (started_at, finished_at, exit_code, reason, message) = expected;
        let want = ContainerStatus {
            id,
            image: "fimage".to_owned(),
            state,
            created_at: 327,
            started_at,
            finished_at,
            exit_code,
            reason: reason.to_owned(),
            message: message.to_owned(),
            ..Default::default()
        };
        assert_eq!(s, want);
    }

    #[test]
    fn container_statuses_sort_newest_first_keeping_ties() {
        let status = |id: &str, created_at| ContainerStatus {
            id: ContainerId {
                r#type: "mock".to_owned(),
                id: id.to_owned(),
            },
            created_at,
            ..Default::default()
        };
        let mut statuses = vec![status("a", 1), status("b", 3), status("c", 1)];
        sort_statuses_newest_first(&mut statuses);
        let ids: Vec<_> = statuses.iter().map(|s| s.id.id.as_str()).collect();
        assert_eq!(ids, ["b", "a", "c"]);
    }
}
