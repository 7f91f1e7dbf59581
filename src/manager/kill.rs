//! `kill_pod`: stop every container of a running pod, tear its network down through the network
//! plugin unless it uses the host network, then stop every sandbox, recording each step's result
//! as the seed's `killPodWithSyncResult` does.

use futures::future::join_all;

#[cfg(doc)]
use super::KubeletProfile;
use super::{
    labels, Container, KubeGenericRuntimeManager, ManagerError, Pod, PodSpec, PodSyncResult,
    SyncAction, SyncResult, KILL_CONTAINER_ERROR, KILL_POD_SANDBOX_ERROR, TEARDOWN_NETWORK_ERROR,
};
use crate::cri::labels::{POD_DELETION_GRACE_PERIOD, POD_TERMINATION_GRACE_PERIOD};
use crate::cri::v1;

/// The shortest stop timeout the kubelet gives a container, in seconds.
pub const MINIMUM_GRACE_PERIOD_SECONDS: i64 = 2;

impl KubeGenericRuntimeManager {
    /// Kills a running pod: every container, then (if it has sandboxes) the pod network and
    /// every sandbox. `pod` is the spec if the caller still has it; without it, grace periods and
    /// the host-network choice are read back from the runtime. Never fails as a whole: each
    /// step's outcome is in the result. Ports `KillPod`/`killPodWithSyncResult`
    /// (kuberuntime_manager.go, 2016). Under [`KubeletProfile::Current`] a StopContainer or
    /// StopPodSandbox answered NotFound is a success, as in today's kubelet (kubelet rules:
    /// #killing-the-containers, #stopping-the-sandboxes).
    pub async fn kill_pod(
        &self,
        pod: Option<&PodSpec>,
        running_pod: &Pod,
        grace_period_override: Option<i64>,
    ) -> PodSyncResult {
        let mut result = PodSyncResult::default();

        // Containers are killed concurrently as in the seed, in two waves: every grace period
        // (which may ask the runtime for a container's status), then every StopContainer. The
        // wave barrier and join_all's order keep the CRI calls issued, and the results kept, in
        // container order; the seed's per-container goroutines made both depend on timing, which
        // a snapshot cannot.
        let containers = &running_pod.containers;
        let graces = join_all(
            containers
                .iter()
                .map(|container| self.container_grace(pod, container, grace_period_override)),
        )
        .await;
        let stops = containers
            .iter()
            .zip(graces)
            .map(|(container, grace)| async move {
                match self.client.stop_container(&container.id.id, grace?).await {
                    // Today's kubelet: a container the runtime no longer has is stopped.
                    Err(err) if !self.profile.forgives(err.code) => Err(err.into()),
                    _ => Ok::<(), ManagerError>(()),
                }
            });
        for (container, outcome) in containers.iter().zip(join_all(stops).await) {
            let mut step = SyncResult::new(SyncAction::KillContainer, container.name.clone());
            if let Err(err) = outcome {
                step.fail(KILL_CONTAINER_ERROR, err.to_string());
            }
            result.results.push(step);
        }

        // Seed: with no sandbox there is neither a teardown nor a KillPodSandbox step.
        let Some(sandbox) = running_pod.sandboxes.first() else {
            return result;
        };
        let host_network = match pod {
            Some(spec) => spec.host_network,
            None => match self.client.pod_sandbox_status(&sandbox.id.id).await {
                Ok(answer) => is_host_network(answer.status.as_ref()),
                Err(err) => {
                    // Seed kept (kubelet rules: #upstream-hazards-the-port-decides, item 3):
                    // without the sandbox's status it gives up before
                    // stopping any sandbox; the failure is the sync error.
                    result.sync_error = Some(err.to_string());
                    return result;
                }
            },
        };
        if !host_network {
            // Target is the running pod's UID: the seed read it from the spec, which crashed
            // when there was none (kubelet rules: #upstream-hazards-the-port-decides, item 1).
            let mut step = SyncResult::new(SyncAction::TeardownNetwork, running_pod.id.clone());
            let plugin = &self.network;
            if let Err(err) = plugin
                .tear_down_pod(&running_pod.namespace, &running_pod.name, &sandbox.id)
                .await
            {
                step.fail(
                    TEARDOWN_NETWORK_ERROR,
                    format!(
                        "network teardown of pod \"{}_{}\" ({}) with plugin {:?} failed: {err}",
                        running_pod.name,
                        running_pod.namespace,
                        running_pod.id,
                        plugin.name()
                    ),
                );
            }
            result.results.push(step);
        }

        // One step for all sandboxes; each is stopped even after a failure, and the last
        // failure's text is the one kept (the seed's single result object).
        let mut step = SyncResult::new(SyncAction::KillPodSandbox, running_pod.id.clone());
        for sandbox in &running_pod.sandboxes {
            match self.client.stop_pod_sandbox(&sandbox.id.id).await {
                // Today's kubelet, by the same rule as StopContainer's: gone is stopped.
                Err(err) if !self.profile.forgives(err.code) => {
                    step.fail(KILL_POD_SANDBOX_ERROR, err.to_string());
                }
                _ => {}
            }
        }
        result.results.push(step);
        result
    }

    /// The StopContainer timeout for one container, the first half of `killContainer`
    /// (kuberuntime_container.go; `kill_pod` issues the StopContainer). With a spec, the
    /// container is looked up by name: the seed only wanted its hooks, while today's kubelet
    /// fails the kill of a container the spec does not name; without a spec, the grace periods
    /// come from the container's annotations, so a ContainerStatus failure fails that
    /// container's kill.
    pub(super) async fn container_grace(
        &self,
        pod: Option<&PodSpec>,
        container: &Container,
        grace_period_override: Option<i64>,
    ) -> Result<i64, ManagerError> {
        let (deletion, termination) = match pod {
            Some(spec) => {
                let named = spec
                    .containers
                    .iter()
                    .chain(&spec.init_containers)
                    .chain(&spec.ephemeral_containers)
                    .any(|c| c.name == container.name);
                if !named && self.profile.is_current() {
                    return Err(ManagerError::ContainerSpecNotFound {
                        name: container.name.clone(),
                        id: container.id.to_string(),
                        pod: format!("{}_{}({})", spec.name, spec.namespace, spec.uid),
                    });
                }
                // The late seed dereferenced a missing container spec (kubelet rules:
                // #upstream-hazards-the-port-decides, item 2); under
                // the seed's rules a missing one only means no hooks, and the harness runs no
                // hook handlers anyway.
                (
                    spec.deletion_grace_period_seconds,
                    spec.termination_grace_period_seconds,
                )
            }
            None => {
                let answer = self.client.container_status(&container.id.id).await?;
                // An answer without a status has no annotations: the default grace applies, so
                // the container is still stopped.
                let annotations = answer.status.map(|s| s.annotations).unwrap_or_default();
                (
                    labels::seconds(&annotations, POD_DELETION_GRACE_PERIOD),
                    labels::seconds(&annotations, POD_TERMINATION_GRACE_PERIOD),
                )
            }
        };
        // No preStop hook runs here (the harness runs no hook handlers), so nothing is subtracted.
        Ok(grace_period_seconds(
            deletion,
            termination,
            grace_period_override,
        ))
    }
}

/// The StopContainer timeout: the deletion grace period if set, else the termination grace
/// period, else the minimum; raised to the minimum; then an override replaces it outright. The
/// override comes after the clamp as in the seed (kubelet rules:
/// #upstream-hazards-the-port-decides, item 4: today's kubelet clamps last, so
/// an override of 0 gives 2 there and 0 here).
pub(crate) fn grace_period_seconds(
    deletion: Option<i64>,
    termination: Option<i64>,
    grace_period_override: Option<i64>,
) -> i64 {
    let grace = deletion
        .or(termination)
        .unwrap_or(MINIMUM_GRACE_PERIOD_SECONDS)
        .max(MINIMUM_GRACE_PERIOD_SECONDS);
    grace_period_override.unwrap_or(grace)
}

/// Whether a sandbox status says the sandbox uses the node's network namespace; a status without
/// namespace options reads as pod network (the seed's default of false).
pub(crate) fn is_host_network(status: Option<&v1::PodSandboxStatus>) -> bool {
    status
        .and_then(|s| s.linux.as_ref())
        .and_then(|l| l.namespaces.as_ref())
        .and_then(|n| n.options.as_ref())
        .is_some_and(|o| o.network == i32::from(v1::NamespaceMode::Node))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::nothing_set(None, None, None, 2)]
    #[case::termination_only(None, Some(30), None, 30)]
    #[case::deletion_wins_over_termination(Some(10), Some(30), None, 10)]
    #[case::deletion_zero_is_clamped(Some(0), Some(30), None, 2)]
    #[case::termination_one_is_clamped(None, Some(1), None, 2)]
    #[case::negative_is_clamped(None, Some(-5), None, 2)]
    #[case::override_replaces_everything(Some(10), Some(30), Some(5), 5)]
    #[case::override_zero_is_not_clamped(None, Some(30), Some(0), 0)]
    #[case::override_one_is_not_clamped(None, None, Some(1), 1)]
    #[case::override_above_the_rest(None, Some(3), Some(60), 60)]
    fn grace_period_follows_the_seeds_rules(
        #[case] deletion: Option<i64>,
        #[case] termination: Option<i64>,
        #[case] grace_override: Option<i64>,
        #[case] expected: i64,
    ) {
        assert_eq!(
            grace_period_seconds(deletion, termination, grace_override),
            expected
        );
    }

    fn status_with(options: Option<v1::NamespaceOption>) -> v1::PodSandboxStatus {
        v1::PodSandboxStatus {
            linux: Some(v1::LinuxPodSandboxStatus {
                namespaces: Some(v1::Namespace { options }),
            }),
            ..Default::default()
        }
    }

    fn network(mode: v1::NamespaceMode) -> Option<v1::NamespaceOption> {
        Some(v1::NamespaceOption {
            network: mode.into(),
            ..Default::default()
        })
    }

    #[rstest]
    #[case::no_status(None, false)]
    #[case::no_linux_section(Some(v1::PodSandboxStatus::default()), false)]
    #[case::no_options(Some(status_with(None)), false)]
    #[case::pod_network(Some(status_with(network(v1::NamespaceMode::Pod))), false)]
    #[case::node_network(Some(status_with(network(v1::NamespaceMode::Node))), true)]
    #[case::container_network(Some(status_with(network(v1::NamespaceMode::Container))), false)]
    fn host_network_means_node_network_mode(
        #[case] status: Option<v1::PodSandboxStatus>,
        #[case] expected: bool,
    ) {
        assert_eq!(is_host_network(status.as_ref()), expected);
    }
}
