//! The pod's phase as the kubelet tells it (`getPhase`), read from the pod's spec and the
//! runtime status the manager reads, for `pod apply` and the benchmarks that wait for a pod.

use super::{k8s, pod};
use crate::manager::{ContainerState, ContainerStatus, PodStatus};

/// The kubelet's pod phase, from the pod's spec and its runtime status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::Display)]
pub enum Phase {
    /// Not every init container has succeeded, or an app container has not started.
    Pending,
    /// The app containers have started and one is running (or will be restarted).
    Running,
    /// Every app container exited 0 and none will be restarted.
    Succeeded,
    /// Every app container ended, one failed, and none will be restarted.
    Failed,
}

/// The newest status of each named container.
fn latest<'a>(status: &'a PodStatus, name: &str) -> Option<&'a ContainerStatus> {
    status.container_statuses.iter().find(|s| s.name == name)
}

/// Whether the newest instance of every app container runs: what `pod apply` waits for.
pub fn all_running(pod: &k8s::Pod, status: &PodStatus) -> bool {
    pod::containers(pod)
        .iter()
        .all(|c| latest(status, &c.name).is_some_and(|s| s.state == ContainerState::Running))
}

/// The kubelet's `getPhase`, for what the runtime shows: init containers first (a failed one
/// fails the pod under Never), then the app containers.
pub fn phase(pod: &k8s::Pod, status: &PodStatus) -> Phase {
    let policy = pod::restart_policy(pod);
    let never = policy == pod::RestartPolicy::Never;
    for init in pod::init_containers(pod) {
        if pod::is_restartable_init_container(init) {
            continue;
        }
        match latest(status, &init.name) {
            Some(s) if s.state == ContainerState::Exited && s.exit_code == 0 => {}
            Some(s) if s.state == ContainerState::Exited && never => return Phase::Failed,
            _ => return Phase::Pending,
        }
    }
    let (mut running, mut waiting, mut succeeded, mut failed) = (0, 0, 0, 0);
    for container in pod::containers(pod) {
        match latest(status, &container.name) {
            Some(s) if s.state == ContainerState::Running => running += 1,
            Some(s) if s.state == ContainerState::Exited && s.exit_code == 0 => succeeded += 1,
            Some(s) if s.state == ContainerState::Exited => failed += 1,
            _ => waiting += 1,
        }
    }
    if waiting > 0 {
        return Phase::Pending;
    }
    if running > 0 {
        return Phase::Running;
    }
    match policy {
        // Ended containers will be started again.
        pod::RestartPolicy::Always => Phase::Running,
        pod::RestartPolicy::OnFailure if failed > 0 => Phase::Running,
        _ if failed > 0 => Phase::Failed,
        _ if succeeded > 0 => Phase::Succeeded,
        _ => Phase::Pending,
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn pod(policy: &str, init: bool) -> k8s::Pod {
        let init = if init {
            "  initContainers: [{name: setup, image: busybox}]\n"
        } else {
            ""
        };
        serde_saphyr::from_str(&format!(
            "metadata: {{name: web, namespace: default, uid: u1}}\nspec:\n  restartPolicy: {policy}\n{init}  containers: [{{name: app, image: busybox}}]\n"
        ))
        .unwrap()
    }

    fn status(containers: &[(&str, ContainerState, i32)]) -> PodStatus {
        PodStatus {
            container_statuses: containers
                .iter()
                .map(|(name, state, exit_code)| ContainerStatus {
                    name: (*name).to_owned(),
                    state: *state,
                    exit_code: *exit_code,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    use ContainerState::{Created, Exited, Running};

    #[rstest]
    #[case::nothing_yet("Always", false, &[], Phase::Pending)]
    #[case::init_not_done("Always", true, &[("setup", Running, 0)], Phase::Pending)]
    #[case::init_failed_under_never("Never", true, &[("setup", Exited, 1)], Phase::Failed)]
    #[case::init_failed_will_retry("OnFailure", true, &[("setup", Exited, 1)], Phase::Pending)]
    #[case::created_is_pending("Always", false, &[("app", Created, 0)], Phase::Pending)]
    #[case::running("Never", true, &[("app", Running, 0), ("setup", Exited, 0)], Phase::Running)]
    #[case::ended_under_always_restarts("Always", false, &[("app", Exited, 0)], Phase::Running)]
    #[case::failed_under_on_failure_restarts("OnFailure", false, &[("app", Exited, 2)], Phase::Running)]
    #[case::succeeded_under_on_failure("OnFailure", false, &[("app", Exited, 0)], Phase::Succeeded)]
    #[case::failed_under_never("Never", false, &[("app", Exited, 2)], Phase::Failed)]
    fn the_phase_follows_the_kubelet(
        #[case] policy: &str,
        #[case] init: bool,
        #[case] containers: &[(&str, ContainerState, i32)],
        #[case] expected: Phase,
    ) {
        assert_eq!(phase(&pod(policy, init), &status(containers)), expected);
    }
}
