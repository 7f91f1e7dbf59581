//! The decision half of SyncPod (kubelet rules: #what-a-sync-does): from the pod, its status as the
//! runtime reports it and
//! the prober's answers, what one sync must do. Pure: it calls no runtime and reads no clock, so
//! the same inputs always give the same [`PodActions`].
//!
//! It follows today's kubelet with sidecars (`computeInitContainerActions`); under the
//! `LegacySidecarContainers` gate (off by default since 1.33) a pod without sidecars takes the
//! legacy `findNextInitContainerToRun` path instead. Under `InPlacePodVerticalScaling` (on by
//! default) a running container whose resources differ from what the runtime reports is resized
//! or, where its resize policy says so, restarted (see [`super::resize`]). Under
//! `ContainerRestartRules` (on by default since 1.35) a regular container's own `restartPolicy`
//! and `restartPolicyRules` decide over the pod's policy; init containers keep the pod's (and
//! sidecars their `Always`). Under `RestartAllContainersOnContainerExits` (on by default in 1.36)
//! a container whose latest instance exited by a rule with the `RestartAllContainers` action
//! makes the sync stop and remove every init and regular container instead (see
//! [`should_all_containers_restart`]). The kubelet's internal post-stop hook (releasing a
//! stopped container's pinned CPUs) has no counterpart.

use super::hash::hash_container;
use super::pod::{self, RestartPolicy};
use super::resize::{compute_pod_resize_action, in_place_resize_allowed};
use super::sandbox_changed::pod_sandbox_changed;
use super::{
    k8s, ContainerKind, ContainerToKill, ContainerToReset, KillReason, PodActions, ProbeResult,
    ProbeResults,
};
use crate::manager::{ContainerState, ContainerStatus, FeatureGate, FeatureGates, PodStatus};

/// The latest status of the container called `name`: the first match, since the status lists
/// newest first (the kubelet's `FindContainerStatusByName`). Statuses carry no container kind, so
/// a name is matched in whichever list of the spec it comes from.
pub(crate) fn find_container_status_by_name<'a>(
    status: &'a PodStatus,
    name: &str,
) -> Option<&'a ContainerStatus> {
    status.container_statuses.iter().find(|s| s.name == name)
}

/// What one SyncPod must do for `pod` (ports `computePodActions`, kuberuntime_manager.go, as the
/// module says). `status` is the pod's status as `GetPodStatus` reads it (sandboxes and containers
/// newest first); `probes` holds the prober's latest answers by runtime container id.
///
/// A new sandbox means killing everything and starting over from the first init container (or
/// every container that should run); otherwise ephemeral containers without a status are started,
/// the init containers and sidecars are driven, and once the pod has initialized each regular
/// container is started, restarted, killed or kept by the restart policy, its hash and its probes.
/// A pod left with nothing running and nothing to start is killed.
pub fn compute_pod_actions(
    pod: &k8s::Pod,
    status: &PodStatus,
    probes: &ProbeResults,
) -> PodActions {
    compute_pod_actions_with(pod, status, probes, &FeatureGates::default())
}

/// [`compute_pod_actions`] under the given kubelet feature gates (today's defaults in
/// [`compute_pod_actions`]).
pub fn compute_pod_actions_with(
    pod: &k8s::Pod,
    status: &PodStatus,
    probes: &ProbeResults,
    gates: &FeatureGates,
) -> PodActions {
    // The legacy path only ever handles pods without sidecars.
    let legacy = gates.enabled(FeatureGate::LegacySidecarContainers)
        && !pod::init_containers(pod)
            .iter()
            .any(pod::is_restartable_init_container);
    let resize = in_place_resize_allowed(pod, gates);
    let (create_sandbox, attempt, sandbox_id) = pod_sandbox_changed(pod, status);
    let mut changes = PodActions {
        kill_pod: create_sandbox,
        create_sandbox,
        sandbox_id,
        attempt,
        ..PodActions::default()
    };
    // The pod restarts in place: every container goes, the sandbox stays (a changed sandbox
    // is still killed and run again), and nothing starts until all are gone.
    if should_all_containers_restart(pod, status, gates) {
        changes.containers_to_reset = containers_to_reset(pod, status);
        return changes;
    }
    let policy = pod::restart_policy(pod);
    let rules = gates.enabled(FeatureGate::ContainerRestartRules);
    let containers = pod::containers(pod);

    if create_sandbox {
        // A pod that never restarts, whose containers have run in an earlier sandbox, is done:
        // kill what is left and create nothing. With no container status at all, no container was
        // ever created, so the sandbox is retried.
        if !policy.restarts_on_failure() && attempt != 0 && !status.container_statuses.is_empty() {
            changes.create_sandbox = false;
            return changes;
        }
        let to_start: Vec<usize> = containers
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                // A container's own policy stands for the pod's here.
                let own = c.restart_policy.as_deref().filter(|_| rules);
                let run_once = own.map_or(policy == RestartPolicy::OnFailure, |p| p == "OnFailure");
                !(run_once && container_succeeded(c, status))
            })
            .map(|(idx, _)| idx)
            .collect();
        let initialized = if legacy {
            find_next_init_container_to_run(pod, status).done
        } else {
            has_any_regular_container_created(pod, status)
        };
        if to_start.is_empty() && initialized {
            changes.create_sandbox = false;
            return changes;
        }
        // A new sandbox starts from the initial state: the first init container, or else every
        // container that should run.
        if !pod::init_containers(pod).is_empty() {
            if legacy {
                changes.next_init_container_to_start = Some(0);
            } else {
                changes.init_containers_to_start = vec![0];
            }
        } else {
            changes.containers_to_start = to_start;
        }
        return changes;
    }

    // Ephemeral containers may start before initialization completes, and are never restarted
    // or killed: only one with no status at all is started.
    changes.ephemeral_containers_to_start = pod::ephemeral_containers(pod)
        .iter()
        .enumerate()
        .filter(|(_, c)| find_container_status_by_name(status, &c.name).is_none())
        .map(|(idx, _)| idx)
        .collect();

    if legacy {
        let next = find_next_init_container_to_run(pod, status);
        if !next.done {
            if let Some(index) = next.next {
                let failed = next.failed.is_some();
                if failed && !policy.restarts_on_failure() {
                    changes.kill_pod = true;
                } else {
                    // A container in an unknown state may still run: stop it first.
                    if let Some(s) = next.failed.filter(|s| s.state == ContainerState::Unknown) {
                        changes.containers_to_kill.insert(
                            s.id.id.clone(),
                            kill(
                                s,
                                ContainerKind::Init,
                                KillReason::Unknown,
                                unknown_state_message("Init container", s),
                            ),
                        );
                    }
                    changes.next_init_container_to_start = Some(index);
                }
            }
            // Initialization failed or is still under way: the regular containers wait.
            return changes;
        }
    } else if !compute_init_container_actions(pod, status, probes, resize, &mut changes)
        || changes.kill_pod
    {
        // Initialization failed or is still under way: the regular containers wait.
        return changes;
    }

    let mut keep_count = 0;
    for (idx, container) in containers.iter().enumerate() {
        let container_status = match find_container_status_by_name(status, &container.name) {
            Some(s) if s.state == ContainerState::Running => s,
            other => {
                if should_container_be_restarted(container, pod, status, gates) {
                    changes.containers_to_start.push(idx);
                    // An unknown container may still be running: kill it first so that two
                    // instances never run side by side.
                    if let Some(s) = other.filter(|s| s.state == ContainerState::Unknown) {
                        changes.containers_to_kill.insert(
                            s.id.id.clone(),
                            kill(
                                s,
                                ContainerKind::Regular,
                                KillReason::Unknown,
                                unknown_state_message("Container", s),
                            ),
                        );
                    }
                }
                continue;
            }
        };

        let id = &container_status.id.id;
        // A running container has no exit code for the rules: only its own policy counts.
        let mut restart = match container.restart_policy.as_deref().filter(|_| rules) {
            Some(own) => own != "Never",
            None => policy.restarts_on_failure(),
        };
        let (message, reason) = if container_changed(container, container_status) {
            // A changed spec is restarted whatever the policy says.
            restart = true;
            (
                format!("Container {} definition changed", container.name),
                KillReason::Unknown,
            )
        } else if probes.liveness.get(id) == Some(&ProbeResult::Failure) {
            (
                format!("Container {} failed liveness probe", container.name),
                KillReason::LivenessProbe,
            )
        } else if probes.startup.get(id) == Some(&ProbeResult::Failure) {
            (
                format!("Container {} failed startup probe", container.name),
                KillReason::StartupProbe,
            )
        } else if resize
            && !compute_pod_resize_action(
                container,
                ContainerKind::Regular,
                container_status,
                &mut changes,
            )
        {
            // The resize policy restarts it; the kill is recorded already.
            changes.containers_to_start.push(idx);
            continue;
        } else {
            keep_count += 1;
            continue;
        };
        let message = if restart {
            changes.containers_to_start.push(idx);
            format!("{message}, will be restarted")
        } else {
            message
        };
        changes.containers_to_kill.insert(
            id.clone(),
            kill(container_status, ContainerKind::Regular, reason, message),
        );
    }

    if keep_count == 0 && changes.containers_to_start.is_empty() {
        changes.kill_pod = true;
        // Sidecars must not keep a finished pod alive.
        if !legacy {
            changes.init_containers_to_start.clear();
        }
    }
    changes
}

/// Drives the init containers and sidecars for a pod whose sandbox is kept, and says whether the
/// pod has initialized (ports `computeInitContainerActions`, kuberuntime_container.go).
///
/// The scan runs from the last init container back to the first, because finished init
/// containers may have been removed from the runtime: the furthest one with a status shows how
/// far initialization got. Once that point is found, only sidecars are looked after. A regular
/// init container that failed under restart policy Never sets `kill_pod` and returns false.
fn compute_init_container_actions(
    pod: &k8s::Pod,
    status: &PodStatus,
    probes: &ProbeResults,
    resize: bool,
    changes: &mut PodActions,
) -> bool {
    let init_containers = pod::init_containers(pod);
    if init_containers.is_empty() {
        return true;
    }
    let last = init_containers.len() - 1;

    // A regular container that was created or runs means every init container ran once, even if
    // the runtime no longer lists them. An exited one proves nothing: after a node reboot every
    // container is exited and the new sandbox has not initialized.
    let mut pod_has_initialized = pod::containers(pod).iter().any(|c| {
        find_container_status_by_name(status, &c.name)
            .is_some_and(|s| matches!(s.state, ContainerState::Created | ContainerState::Running))
    });
    // Whether the init containers before the one looked at have run (at some point).
    let mut previously_initialized = pod_has_initialized;
    let restart_on_failure = pod::restart_policy(pod).restarts_on_failure();
    let mut to_start = Vec::new();

    for (i, container) in init_containers.iter().enumerate().rev() {
        let sidecar = pod::is_restartable_init_container(container);
        let Some(container_status) = find_container_status_by_name(status, &container.name) else {
            // A sidecar of an initialized pod whose status is gone is started again.
            if previously_initialized && sidecar {
                to_start.push(i);
            }
            continue;
        };
        if previously_initialized && !sidecar {
            // After initialization only sidecars are kept running.
            continue;
        }
        let id = &container_status.id.id;

        match container_status.state {
            // SyncPod creates and starts in one step, so a created init container most likely
            // failed to start: start it again rather than leave it stuck.
            ContainerState::Created => to_start.push(i),
            ContainerState::Running if !sidecar => {
                // A regular init container is still running: wait for it.
            }
            ContainerState::Running => 'running: {
                if container.startup_probe.is_some() {
                    match probes.startup.get(id) {
                        // Not started yet (no result, or the probe still in progress): wait.
                        None | Some(ProbeResult::Unknown) => break 'running,
                        Some(ProbeResult::Failure) => {
                            changes.containers_to_kill.insert(
                                id.clone(),
                                kill(
                                    container_status,
                                    ContainerKind::Init,
                                    KillReason::StartupProbe,
                                    format!(
                                        "Init container {} failed startup probe",
                                        container.name
                                    ),
                                ),
                            );
                            to_start.push(i);
                            break 'running;
                        }
                        Some(ProbeResult::Success) => {}
                    }
                }
                // The sidecar has started.
                if i == last {
                    pod_has_initialized = true;
                } else if !previously_initialized {
                    to_start.push(i + 1);
                }
                if container_changed(container, container_status) {
                    changes.containers_to_kill.insert(
                        id.clone(),
                        kill(
                            container_status,
                            ContainerKind::Init,
                            KillReason::Unknown,
                            format!("Init container {} definition changed", container.name),
                        ),
                    );
                    to_start.push(i);
                    break 'running;
                }
                // Liveness does not hold back the next init container, but a failed one restarts
                // the sidecar. No result yet, Unknown and Success all leave it running.
                if container.liveness_probe.is_some()
                    && probes.liveness.get(id) == Some(&ProbeResult::Failure)
                {
                    changes.containers_to_kill.insert(
                        id.clone(),
                        kill(
                            container_status,
                            ContainerKind::Init,
                            KillReason::LivenessProbe,
                            format!("Init container {} failed liveness probe", container.name),
                        ),
                    );
                    to_start.push(i);
                } else if resize
                    && !compute_pod_resize_action(
                        container,
                        ContainerKind::Init,
                        container_status,
                        changes,
                    )
                {
                    // The resize policy restarts the sidecar.
                    to_start.push(i);
                }
            }
            // A sidecar is restarted whatever the pod's restart policy.
            ContainerState::Exited if sidecar => to_start.push(i),
            ContainerState::Exited => {
                if is_init_container_failed(container_status) {
                    if !restart_on_failure {
                        changes.kill_pod = true;
                        changes.init_containers_to_start.clear();
                        return false;
                    }
                    to_start.push(i);
                } else if i == last {
                    pod_has_initialized = true;
                } else {
                    to_start.push(i + 1);
                }
            }
            ContainerState::Unknown => {
                if !sidecar && !restart_on_failure {
                    changes.kill_pod = true;
                    changes.init_containers_to_start.clear();
                    return false;
                }
                changes.containers_to_kill.insert(
                    id.clone(),
                    kill(
                        container_status,
                        ContainerKind::Init,
                        KillReason::Unknown,
                        unknown_state_message("Init container", container_status),
                    ),
                );
                to_start.push(i);
            }
        }
        previously_initialized = true;
    }

    // No init container has run yet: start the first.
    if !previously_initialized {
        to_start.push(0);
    }
    // The scan went backwards; starts go in spec order.
    to_start.reverse();
    changes.init_containers_to_start.extend(to_start);
    pod_has_initialized
}

/// How far a pod without sidecars got through its init containers, read the legacy way.
struct NextInit<'a> {
    /// The last failed init container's status, when one failed (then `next` is that one).
    failed: Option<&'a ContainerStatus>,
    /// The init container to start next.
    next: Option<usize>,
    /// Every init container has run.
    done: bool,
}

/// The legacy reading of init progress (ports `findNextInitContainerToRun`,
/// kuberuntime_container.go): done once a regular container runs or the last init container
/// exited; otherwise the last failed one again, nothing while one runs, or the one after the
/// furthest that exited (the first when none did).
fn find_next_init_container_to_run<'a>(pod: &k8s::Pod, status: &'a PodStatus) -> NextInit<'a> {
    let init_containers = pod::init_containers(pod);
    let done = NextInit {
        failed: None,
        next: None,
        done: true,
    };
    if init_containers.is_empty() {
        return done;
    }
    // A running regular container means every init container ran once, even if the runtime
    // has removed them since.
    if pod::containers(pod).iter().any(|c| {
        find_container_status_by_name(status, &c.name)
            .is_some_and(|s| s.state == ContainerState::Running)
    }) {
        return done;
    }
    let statuses = || {
        init_containers
            .iter()
            .enumerate()
            .rev()
            .filter_map(|(i, c)| find_container_status_by_name(status, &c.name).map(|s| (i, s)))
    };
    if let Some((i, failed)) = statuses().find(|(_, s)| is_init_container_failed(s)) {
        return NextInit {
            failed: Some(failed),
            next: Some(i),
            done: false,
        };
    }
    for (i, s) in statuses() {
        match s.state {
            ContainerState::Running => {
                return NextInit {
                    failed: None,
                    next: None,
                    done: false,
                }
            }
            ContainerState::Exited if i == init_containers.len() - 1 => return done,
            ContainerState::Exited => {
                return NextInit {
                    failed: None,
                    next: Some(i + 1),
                    done: false,
                }
            }
            _ => {}
        }
    }
    NextInit {
        failed: None,
        next: Some(0),
        done: false,
    }
}

/// Whether the container must be (re)started (ports `ShouldContainerBeRestarted`,
/// kubelet/container/helpers.go): never once the pod is being deleted; always when it has no
/// status or is created or unknown; never while running; otherwise by the restart policy and,
/// under `OnFailure`, the exit code.
fn should_container_be_restarted(
    container: &k8s::Container,
    pod: &k8s::Pod,
    status: &PodStatus,
    gates: &FeatureGates,
) -> bool {
    if pod::deletion_requested(pod) {
        return false;
    }
    let Some(container_status) = find_container_status_by_name(status, &container.name) else {
        // Never started, or every instance was garbage-collected.
        return true;
    };
    match container_status.state {
        ContainerState::Running => false,
        ContainerState::Unknown | ContainerState::Created => true,
        ContainerState::Exited if gates.enabled(FeatureGate::ContainerRestartRules) => {
            pod::container_should_restart(container, pod, container_status.exit_code)
        }
        ContainerState::Exited => match pod::restart_policy(pod) {
            RestartPolicy::Never => false,
            RestartPolicy::OnFailure => container_status.exit_code != 0,
            RestartPolicy::Always => true,
        },
    }
}

/// Whether the pod restarts all its containers in place: both gates are on and the latest
/// instance of an init or regular container exited by a rule whose action is
/// `RestartAllContainers` (ports `ShouldAllContainersRestart`, kubelet/container/helpers.go,
/// from the runtime's side). The kubelet also keeps the decision in the pod's
/// `AllContainersRestarting` condition until no container is left; the harness has no API
/// status, and needs none: [`containers_to_reset`] removes the exited trigger last, so a sync
/// cut short sees it again and goes on, and once it is gone no container is left either.
pub fn should_all_containers_restart(
    pod: &k8s::Pod,
    status: &PodStatus,
    gates: &FeatureGates,
) -> bool {
    // A pod being deleted restarts nothing: the kubelet terminates it instead of syncing it.
    if !gates.enabled(FeatureGate::ContainerRestartRules)
        || !gates.enabled(FeatureGate::RestartAllContainersOnContainerExits)
        || pod::deletion_requested(pod)
    {
        return false;
    }
    pod::init_containers(pod)
        .iter()
        .chain(pod::containers(pod))
        .any(|c| {
            find_container_status_by_name(status, &c.name).is_some_and(|s| {
                s.state == ContainerState::Exited && pod::restarts_all_containers(c, s.exit_code)
            })
        })
}

/// Every instance of every init and regular container, in the order they go: first the ones
/// the restart resets (each not yet exited is stopped first), then the exited instances whose
/// exit triggered it, which go last so the decision outlives a sync cut short (ports
/// `getContainersToReset`). Ephemeral containers stay.
fn containers_to_reset(pod: &k8s::Pod, status: &PodStatus) -> Vec<ContainerToReset> {
    let mut targets = Vec::new();
    let mut triggers = Vec::new();
    let kinds = pod::init_containers(pod)
        .iter()
        .map(|c| (c, ContainerKind::Init))
        .chain(
            pod::containers(pod)
                .iter()
                .map(|c| (c, ContainerKind::Regular)),
        );
    for (container, kind) in kinds {
        for instance in status
            .container_statuses
            .iter()
            .filter(|s| s.name == container.name)
        {
            let exited = instance.state == ContainerState::Exited;
            let reset = ContainerToReset {
                id: instance.id.id.clone(),
                name: container.name.clone(),
                kind,
                kill: !exited,
            };
            if exited && pod::restarts_all_containers(container, instance.exit_code) {
                triggers.push(reset);
            } else {
                targets.push(reset);
            }
        }
    }
    targets.extend(triggers);
    targets
}

/// Whether the container's latest instance exited with code 0 (the kubelet's `containerSucceeded`).
fn container_succeeded(container: &k8s::Container, status: &PodStatus) -> bool {
    find_container_status_by_name(status, &container.name)
        .is_some_and(|s| s.state == ContainerState::Exited && s.exit_code == 0)
}

/// Whether any regular container has a created, running or exited instance, which means the init
/// containers all ran once (the kubelet's `hasAnyRegularContainerCreated`).
fn has_any_regular_container_created(pod: &k8s::Pod, status: &PodStatus) -> bool {
    pod::containers(pod).iter().any(|c| {
        find_container_status_by_name(status, &c.name).is_some_and(|s| {
            matches!(
                s.state,
                ContainerState::Created | ContainerState::Running | ContainerState::Exited
            )
        })
    })
}

/// Whether an init container's instance failed: OOM-killed, exited non-zero, or unknown (the
/// kubelet's `isInitContainerFailed`).
fn is_init_container_failed(status: &ContainerStatus) -> bool {
    status.reason == "OOMKilled"
        || (status.state == ContainerState::Exited && status.exit_code != 0)
        || status.state == ContainerState::Unknown
}

/// Whether the running instance was made from another spec: its hash annotation differs from the
/// spec's hash (the kubelet's `containerChanged`).
fn container_changed(container: &k8s::Container, status: &ContainerStatus) -> bool {
    status.hash != hash_container(container)
}

/// The kubelet's message for killing a container in an unknown state before restarting it.
fn unknown_state_message(what: &str, status: &ContainerStatus) -> String {
    format!(
        "{what} is in {:?} state, try killing it before restart",
        status.state.name()
    )
}

fn kill(
    status: &ContainerStatus,
    kind: ContainerKind,
    reason: KillReason,
    message: String,
) -> ContainerToKill {
    ContainerToKill {
        name: status.name.clone(),
        kind,
        reason,
        message,
    }
}

#[cfg(test)]
mod tests {
    //! The upstream tables of kuberuntime_manager_test.go, one rstest table each, every case named
    //! after the upstream one. Pods and statuses come from the builders below, which rebuild the
    //! upstream fixtures (`makeBasePodAndStatus` and its variants) rather than copy them.
    //!
    //! Probe results are set as upstream sets them in its probe managers: Success, Failure or
    //! Unknown, or removed (no result yet), by the index of the container's status.
    //!
    //! Every case of the ported tables is here, including the two `LegacySidecarContainers`
    //! tables (the gate on, as upstream sets it per case) and TestComputePodActionsForPodResize.
    //! The re-runs of TestComputePodActions inside both ephemeral tables are the
    //! `legacy_sidecars` values of its table: every row runs with the gate off and on. The
    //! re-run of TestComputePodActionsWithInitContainers (gate off) is its own table, and that
    //! of the legacy init table is the legacy table itself.

    use super::*;
    use crate::cri::v1;
    use crate::manager::lifecycle::resize::{ContainerResources, ResourceName, RuntimeResources};
    use crate::manager::lifecycle::ContainerToUpdate;
    use crate::manager::ContainerId;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
    use rstest::rstest;
    use std::collections::BTreeMap;
    use ContainerKind::{Init, Regular};
    use ContainerState::{Created, Exited, Running, Unknown};

    /// One case's inputs, built from a base fixture and then changed by the case.
    #[derive(Debug)]
    struct Case {
        pod: k8s::Pod,
        status: PodStatus,
        probes: ProbeResults,
        gates: FeatureGates,
    }

    impl Case {
        fn spec(&mut self) -> &mut k8s::PodSpec {
            self.pod.spec.get_or_insert_with(Default::default)
        }

        fn policy(&mut self, policy: &str) {
            self.spec().restart_policy = Some(policy.to_owned());
        }

        fn sandbox(&mut self) -> &mut v1::PodSandboxStatus {
            &mut self.status.sandbox_statuses[0]
        }

        fn sandbox_dead(&mut self) {
            self.sandbox().state = v1::PodSandboxState::SandboxNotready.into();
        }

        fn sandbox_attempt(&mut self, attempt: u32) {
            if let Some(metadata) = self.sandbox().metadata.as_mut() {
                metadata.attempt = attempt;
            }
        }

        fn state(&mut self, index: usize, state: ContainerState) {
            self.status.container_statuses[index].state = state;
        }

        fn exited(&mut self, index: usize, exit_code: i32) {
            let status = &mut self.status.container_statuses[index];
            status.state = Exited;
            status.exit_code = exit_code;
        }

        /// Keeps only the statuses in `range` (upstream's reslicing).
        fn keep_statuses(&mut self, range: std::ops::Range<usize>) {
            self.status.container_statuses = self.status.container_statuses.drain(range).collect();
        }

        fn no_statuses(&mut self) {
            self.status.container_statuses.clear();
        }

        /// Adds a status for every regular container (ids `id1`, `id2`, ...).
        fn regular_statuses(&mut self, state: ContainerState, exit_code: i32) {
            let added: Vec<ContainerStatus> = pod::containers(&self.pod)
                .iter()
                .enumerate()
                .map(|(i, c)| ContainerStatus {
                    exit_code,
                    ..status_of(&format!("id{}", i + 1), c, state)
                })
                .collect();
            self.status.container_statuses.extend(added);
        }

        fn id(&self, index: usize) -> String {
            self.status.container_statuses[index].id.id.clone()
        }

        fn liveness(&mut self, index: usize, result: Option<ProbeResult>) {
            let id = self.id(index);
            set(&mut self.probes.liveness, id, result);
        }

        fn readiness(&mut self, index: usize, result: Option<ProbeResult>) {
            let id = self.id(index);
            set(&mut self.probes.readiness, id, result);
        }

        fn startup(&mut self, index: usize, result: Option<ProbeResult>) {
            let id = self.id(index);
            set(&mut self.probes.startup, id, result);
        }

        fn actions(&self) -> PodActions {
            compute_pod_actions_with(&self.pod, &self.status, &self.probes, &self.gates)
        }

        fn legacy_sidecars(&mut self) {
            self.gates = self
                .gates
                .clone()
                .with(FeatureGate::LegacySidecarContainers, true);
        }

        /// Sets the container's spec limits and what the runtime reports it runs with.
        fn resources(&mut self, index: usize, spec: (&str, &str), reported: RuntimeResources) {
            let name = pod::containers(&self.pod)[index].name.clone();
            let limits = [("cpu", spec.0), ("memory", spec.1)]
                .into_iter()
                .filter(|(_, v)| !v.is_empty())
                .map(|(k, v)| (k.to_owned(), Quantity(v.to_owned())))
                .collect();
            self.spec().containers[index].resources = Some(k8s::ResourceRequirements {
                limits: Some(limits),
                ..Default::default()
            });
            if let Some(status) = self
                .status
                .container_statuses
                .iter_mut()
                .find(|s| s.name == name)
            {
                status.resources = Some(reported);
            }
        }

        /// Sets the container's resize policies for CPU and memory.
        fn resize_policy(&mut self, index: usize, cpu: &str, memory: &str) {
            self.spec().containers[index].resize_policy = Some(vec![
                k8s::ContainerResizePolicy {
                    resource_name: "cpu".to_owned(),
                    restart_policy: cpu.to_owned(),
                },
                k8s::ContainerResizePolicy {
                    resource_name: "memory".to_owned(),
                    restart_policy: memory.to_owned(),
                },
            ]);
        }
    }

    /// Sets a result, or removes it with `None` (upstream's `Set` and `Remove`).
    fn set(results: &mut BTreeMap<String, ProbeResult>, id: String, result: Option<ProbeResult>) {
        match result {
            Some(result) => results.insert(id, result),
            None => results.remove(&id),
        };
    }

    fn container(name: &str, image: &str) -> k8s::Container {
        k8s::Container {
            name: name.to_owned(),
            image: Some(image.to_owned()),
            ..Default::default()
        }
    }

    fn sidecar(name: &str, probed: bool) -> k8s::Container {
        k8s::Container {
            restart_policy: Some("Always".to_owned()),
            liveness_probe: probed.then(k8s::Probe::default),
            startup_probe: probed.then(k8s::Probe::default),
            ..container(name, "bar-image")
        }
    }

    /// A status whose hash matches the spec it was made from.
    fn status_of(id: &str, container: &k8s::Container, state: ContainerState) -> ContainerStatus {
        ContainerStatus {
            id: ContainerId {
                r#type: String::new(),
                id: id.to_owned(),
            },
            name: container.name.clone(),
            image: container.image.clone().unwrap_or_default(),
            hash: hash_container(container),
            state,
            ..Default::default()
        }
    }

    /// A pod of three running busybox containers in a ready sandbox with an IP
    /// (upstream's `makeBasePodAndStatus`).
    fn base() -> Case {
        let containers = vec![
            container("foo1", "busybox"),
            container("foo2", "busybox"),
            container("foo3", "busybox"),
        ];
        let pod = k8s::Pod {
            metadata: ObjectMeta {
                uid: Some("12345678".to_owned()),
                name: Some("foo".to_owned()),
                namespace: Some("foo-ns".to_owned()),
                ..Default::default()
            },
            spec: Some(k8s::PodSpec {
                containers,
                ..Default::default()
            }),
            ..Default::default()
        };
        let sandbox = v1::PodSandboxStatus {
            id: "sandboxID".to_owned(),
            state: v1::PodSandboxState::SandboxReady.into(),
            metadata: Some(v1::PodSandboxMetadata {
                name: "foo".to_owned(),
                namespace: "foo-ns".to_owned(),
                uid: "sandboxuid".to_owned(),
                attempt: 0,
            }),
            network: Some(v1::PodSandboxNetworkStatus {
                ip: "10.0.0.1".to_owned(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut case = Case {
            status: PodStatus {
                id: "12345678".to_owned(),
                name: "foo".to_owned(),
                namespace: "foo-ns".to_owned(),
                ip: "10.0.0.1".to_owned(),
                sandbox_statuses: vec![sandbox],
                container_statuses: Vec::new(),
            },
            pod,
            probes: ProbeResults::default(),
            gates: FeatureGates::default(),
        };
        case.regular_statuses(Running, 0);
        case
    }

    /// The base pod with three init containers, all exited with code 0, and no regular container
    /// status (upstream's `makeBasePodAndStatusWithInitContainers`).
    fn with_init_containers() -> Case {
        let init = ["init1", "init2", "init3"].map(|n| container(n, "bar-image"));
        with_init(base(), init.to_vec(), Exited)
    }

    /// The base pod with three running sidecars, the last two probed and started, and no regular
    /// container status (upstream's `makeBasePodAndStatusWithRestartableInitContainers`, with the
    /// liveness and startup Success its table sets for the probed two before every case).
    fn with_restartable_init_containers() -> Case {
        let init = vec![
            sidecar("restartable-init-1", false),
            sidecar("restartable-init-2", true),
            sidecar("restartable-init-3", true),
        ];
        let mut case = with_init(base(), init, Running);
        for index in [1, 2] {
            case.liveness(index, Some(ProbeResult::Success));
            case.startup(index, Some(ProbeResult::Success));
        }
        case
    }

    /// The base pod with one finished init container and one running ephemeral container; statuses
    /// are foo1, foo2, foo3, init1, debug (upstream's
    /// `makeBasePodAndStatusWithInitAndEphemeralContainers`).
    fn with_init_and_ephemeral_containers() -> Case {
        let mut case = base();
        let init = container("init1", "bar-image");
        let debug = k8s::EphemeralContainer {
            name: "debug".to_owned(),
            image: Some("busybox".to_owned()),
            ..Default::default()
        };
        let init_status = status_of("initid1", &init, Exited);
        let debug_status = status_of("debug1", &pod::ephemeral_container_common(&debug), Running);
        case.spec().init_containers = Some(vec![init]);
        case.spec().ephemeral_containers = Some(vec![debug]);
        case.status
            .container_statuses
            .extend([init_status, debug_status]);
        case
    }

    /// Replaces the statuses with one per init container (ids `initid1`, ...), in `state`.
    fn with_init(mut case: Case, init: Vec<k8s::Container>, state: ContainerState) -> Case {
        case.status.container_statuses = init
            .iter()
            .enumerate()
            .map(|(i, c)| status_of(&format!("initid{}", i + 1), c, state))
            .collect();
        case.spec().init_containers = Some(init);
        case
    }

    /// Nothing to do in the base fixtures' ready sandbox (upstream's `noAction`).
    fn no_action() -> PodActions {
        PodActions {
            sandbox_id: "sandboxID".to_owned(),
            ..Default::default()
        }
    }

    fn start(containers: &[usize]) -> PodActions {
        PodActions {
            containers_to_start: containers.to_vec(),
            ..no_action()
        }
    }

    fn start_init(init_containers: &[usize]) -> PodActions {
        PodActions {
            init_containers_to_start: init_containers.to_vec(),
            ..no_action()
        }
    }

    /// A new sandbox at `attempt` after killing the pod, keeping the dead one's id.
    fn recreate(attempt: u32) -> PodActions {
        PodActions {
            kill_pod: true,
            create_sandbox: true,
            attempt,
            ..no_action()
        }
    }

    fn kill_pod() -> PodActions {
        PodActions {
            kill_pod: true,
            ..no_action()
        }
    }

    fn kill_pod_only(attempt: u32) -> PodActions {
        PodActions {
            attempt,
            ..kill_pod()
        }
    }

    fn kills(
        entries: &[(&str, &str, ContainerKind, KillReason, &str)],
    ) -> BTreeMap<String, ContainerToKill> {
        entries
            .iter()
            .map(|(id, name, kind, reason, message)| {
                let entry = ContainerToKill {
                    name: (*name).to_owned(),
                    kind: *kind,
                    reason: *reason,
                    message: (*message).to_owned(),
                };
                ((*id).to_owned(), entry)
            })
            .collect()
    }

    fn check(base: fn() -> Case, change: fn(&mut Case), expected: PodActions) {
        let mut case = base();
        change(&mut case);
        assert_eq!(case.actions(), expected, "inputs: {case:#?}");
    }

    fn next_init(index: usize) -> PodActions {
        PodActions {
            next_init_container_to_start: Some(index),
            ..no_action()
        }
    }

    /// A base pod of upstream's TestComputePodActionsForPodResize: every container's resize
    /// policy is NotRequired for CPU and memory.
    fn resizable() -> Case {
        let mut case = base();
        for i in 0..3 {
            case.resize_policy(i, "NotRequired", "NotRequired");
        }
        case
    }

    const MI: i64 = 1024 * 1024;

    fn reported(cpu_limit: i64, memory_limit: i64) -> RuntimeResources {
        RuntimeResources {
            cpu_request: None,
            cpu_limit: Some(cpu_limit),
            memory_limit: Some(memory_limit),
        }
    }

    /// One container's update with limits only (`desired`/`current` as cpu millicores and
    /// memory MiB).
    fn update(index: usize, desired: (i64, i64), current: (i64, i64)) -> ContainerToUpdate {
        let limits = |(cpu, mem): (i64, i64)| ContainerResources {
            cpu_limit: cpu,
            memory_limit: mem * MI,
            ..Default::default()
        };
        ContainerToUpdate {
            name: format!("foo{}", index + 1),
            kind: Regular,
            id: format!("id{}", index + 1),
            desired: limits(desired),
            current: limits(current),
        }
    }

    fn updates(entries: &[(ResourceName, ContainerToUpdate)]) -> PodActions {
        let mut actions = no_action();
        for (resource, update) in entries {
            actions
                .containers_to_update
                .entry(*resource)
                .or_default()
                .push(update.clone());
        }
        actions
    }

    fn resize_restart(index: usize) -> PodActions {
        let name = format!("foo{}", index + 1);
        let id = format!("id{}", index + 1);
        let message = format!("Container {name} resize requires restart");
        PodActions {
            containers_to_kill: kills(&[(&id, &name, Regular, KillReason::Unknown, &message)]),
            update_pod_resources: true,
            ..start(&[index])
        }
    }

    #[rstest]
    #[case::everything_is_good_do_nothing(|_: &mut Case| {}, no_action())]
    #[case::start_pod_sandbox_and_all_containers_for_a_new_pod(
        |c: &mut Case| {
            c.status.sandbox_statuses.clear();
            c.no_statuses();
        },
        PodActions { sandbox_id: String::new(), containers_to_start: vec![0, 1, 2], ..recreate(0) }
    )]
    #[case::restart_exited_containers_if_restart_policy_is_always(
        |c: &mut Case| {
            c.policy("Always");
            c.exited(0, 0);
            c.exited(1, 111);
        },
        start(&[0, 1])
    )]
    #[case::restart_failed_containers_if_restart_policy_is_on_failure(
        |c: &mut Case| {
            c.policy("OnFailure");
            c.exited(0, 0);
            c.exited(1, 111);
        },
        start(&[1])
    )]
    #[case::restart_created_but_not_started_containers_if_restart_policy_is_on_failure(
        |c: &mut Case| {
            c.policy("OnFailure");
            c.exited(0, 0);
            c.state(1, Created);
        },
        start(&[1])
    )]
    #[case::dont_restart_containers_if_restart_policy_is_never(
        |c: &mut Case| {
            c.policy("Never");
            c.exited(0, 0);
            c.exited(1, 111);
        },
        no_action()
    )]
    #[case::kill_pod_and_recreate_everything_if_the_pod_sandbox_is_dead_and_restart_policy_is_always(
        |c: &mut Case| {
            c.policy("Always");
            c.sandbox_dead();
        },
        PodActions { containers_to_start: vec![0, 1, 2], ..recreate(1) }
    )]
    #[case::kill_pod_and_recreate_all_containers_except_for_the_succeeded_one_if_the_pod_sandbox_is_dead_and_restart_policy_is_on_failure(
        |c: &mut Case| {
            c.policy("OnFailure");
            c.sandbox_dead();
            c.exited(1, 0);
        },
        PodActions { containers_to_start: vec![0, 2], ..recreate(1) }
    )]
    #[case::kill_pod_and_recreate_all_containers_if_the_pod_sandbox_does_not_have_an_ip(
        |c: &mut Case| {
            if let Some(network) = c.sandbox().network.as_mut() {
                network.ip.clear();
            }
        },
        PodActions { containers_to_start: vec![0, 1, 2], ..recreate(1) }
    )]
    #[case::kill_and_recreate_the_container_if_the_containers_spec_changed(
        |c: &mut Case| {
            c.policy("Always");
            c.status.container_statuses[1].hash = 432_423_432;
        },
        PodActions {
            containers_to_kill: kills(&[(
                "id2", "foo2", Regular, KillReason::Unknown,
                "Container foo2 definition changed, will be restarted",
            )]),
            ..start(&[1])
        }
    )]
    #[case::kill_and_recreate_the_container_if_the_liveness_check_has_failed(
        |c: &mut Case| {
            c.policy("Always");
            c.liveness(1, Some(ProbeResult::Failure));
        },
        PodActions {
            containers_to_kill: kills(&[(
                "id2", "foo2", Regular, KillReason::LivenessProbe,
                "Container foo2 failed liveness probe, will be restarted",
            )]),
            ..start(&[1])
        }
    )]
    #[case::kill_and_recreate_the_container_if_the_startup_check_has_failed(
        |c: &mut Case| {
            c.policy("Always");
            c.startup(1, Some(ProbeResult::Failure));
        },
        PodActions {
            containers_to_kill: kills(&[(
                "id2", "foo2", Regular, KillReason::StartupProbe,
                "Container foo2 failed startup probe, will be restarted",
            )]),
            ..start(&[1])
        }
    )]
    #[case::verify_we_do_not_create_a_pod_sandbox_if_no_ready_sandbox_for_pod_with_restart_policy_never_and_all_containers_exited(
        |c: &mut Case| {
            c.policy("Never");
            c.sandbox_dead();
            c.sandbox_attempt(1);
            (0..3).for_each(|i| c.exited(i, 0));
        },
        kill_pod_only(2)
    )]
    #[case::verify_we_do_not_create_a_pod_sandbox_if_no_ready_sandbox_for_pod_with_restart_policy_on_failure_and_all_containers_succeeded(
        |c: &mut Case| {
            c.policy("OnFailure");
            c.sandbox_dead();
            c.sandbox_attempt(1);
            (0..3).for_each(|i| c.exited(i, 0));
        },
        kill_pod_only(2)
    )]
    #[case::verify_we_create_a_pod_sandbox_if_no_ready_sandbox_for_pod_with_restart_policy_never_and_no_containers_have_ever_been_created(
        |c: &mut Case| {
            c.policy("Never");
            c.sandbox_dead();
            c.sandbox_attempt(2);
            c.no_statuses();
        },
        PodActions { containers_to_start: vec![0, 1, 2], ..recreate(3) }
    )]
    #[case::kill_and_recreate_the_container_if_the_container_is_in_unknown_state(
        |c: &mut Case| {
            c.policy("Never");
            c.state(1, Unknown);
        },
        PodActions {
            containers_to_kill: kills(&[(
                "id2", "foo2", Regular, KillReason::Unknown,
                "Container is in \"unknown\" state, try killing it before restart",
            )]),
            ..start(&[1])
        }
    )]
    #[case::restart_the_container_if_the_container_is_in_created_state(
        |c: &mut Case| {
            c.policy("Never");
            c.state(1, Created);
        },
        start(&[1])
    )]
    fn compute_pod_actions_matches_test_compute_pod_actions(
        #[case] change: fn(&mut Case),
        #[case] expected: PodActions,
        #[values(false, true)] legacy_sidecars: bool,
    ) {
        let mut case = base();
        if legacy_sidecars {
            case.legacy_sidecars();
        }
        change(&mut case);
        assert_eq!(case.actions(), expected, "inputs: {case:#?}");
    }

    #[rstest]
    #[case::initialization_completed_start_all_containers(|_: &mut Case| {}, start(&[0, 1, 2]))]
    #[case::no_init_containers_have_been_started_start_the_first_one(
        |c: &mut Case| c.no_statuses(),
        start_init(&[0])
    )]
    #[case::initialization_in_progress_do_nothing(
        |c: &mut Case| {
            c.policy("Always");
            c.state(2, Running);
        },
        no_action()
    )]
    #[case::kill_pod_and_restart_the_first_init_container_if_the_pod_sandbox_is_dead(
        |c: &mut Case| {
            c.policy("Always");
            c.sandbox_dead();
        },
        PodActions { init_containers_to_start: vec![0], ..recreate(1) }
    )]
    #[case::initialization_failed_restart_the_last_init_container_if_restart_policy_is_always(
        |c: &mut Case| {
            c.policy("Always");
            c.exited(2, 137);
        },
        start_init(&[2])
    )]
    #[case::initialization_failed_restart_the_last_init_container_if_restart_policy_is_on_failure(
        |c: &mut Case| {
            c.policy("OnFailure");
            c.exited(2, 137);
        },
        start_init(&[2])
    )]
    #[case::initialization_failed_kill_pod_if_restart_policy_is_never(
        |c: &mut Case| {
            c.policy("Never");
            c.exited(2, 137);
        },
        kill_pod()
    )]
    #[case::init_container_state_unknown_kill_and_recreate_the_last_init_container_if_restart_policy_is_always(
        |c: &mut Case| {
            c.policy("Always");
            c.state(2, Unknown);
        },
        PodActions {
            containers_to_kill: kills(&[(
                "initid3", "init3", Init, KillReason::Unknown,
                "Init container is in \"unknown\" state, try killing it before restart",
            )]),
            ..start_init(&[2])
        }
    )]
    #[case::init_container_state_unknown_kill_and_recreate_the_last_init_container_if_restart_policy_is_on_failure(
        |c: &mut Case| {
            c.policy("OnFailure");
            c.state(2, Unknown);
        },
        PodActions {
            containers_to_kill: kills(&[(
                "initid3", "init3", Init, KillReason::Unknown,
                "Init container is in \"unknown\" state, try killing it before restart",
            )]),
            ..start_init(&[2])
        }
    )]
    #[case::init_container_state_unknown_kill_pod_if_restart_policy_is_never(
        |c: &mut Case| {
            c.policy("Never");
            c.state(2, Unknown);
        },
        kill_pod()
    )]
    #[case::pod_sandbox_not_ready_init_container_failed_but_restart_policy_is_never_kill_pod_only(
        |c: &mut Case| {
            c.policy("Never");
            c.sandbox_dead();
        },
        kill_pod_only(1)
    )]
    #[case::pod_sandbox_not_ready_and_restart_policy_is_never_but_no_visible_init_containers_create_a_new_pod_sandbox(
        |c: &mut Case| {
            c.policy("Never");
            c.sandbox_dead();
            c.no_statuses();
        },
        PodActions { init_containers_to_start: vec![0], ..recreate(1) }
    )]
    #[case::pod_sandbox_not_ready_init_container_failed_and_restart_policy_is_on_failure_create_a_new_pod_sandbox(
        |c: &mut Case| {
            c.policy("OnFailure");
            c.sandbox_dead();
            c.exited(2, 137);
        },
        PodActions { init_containers_to_start: vec![0], ..recreate(1) }
    )]
    #[case::some_of_the_init_container_statuses_are_missing_but_the_last_init_container_is_running_dont_restart_preceding_ones(
        |c: &mut Case| {
            c.policy("Always");
            c.state(2, Running);
            c.keep_statuses(2..3);
        },
        no_action()
    )]
    #[case::an_init_container_is_in_the_created_state_due_to_an_unknown_error_when_starting_container_restart_it(
        |c: &mut Case| {
            c.policy("Always");
            c.state(2, Created);
        },
        start_init(&[2])
    )]
    fn compute_pod_actions_matches_test_compute_pod_actions_with_init_containers(
        #[case] change: fn(&mut Case),
        #[case] expected: PodActions,
    ) {
        check(with_init_containers, change, expected);
    }

    #[rstest]
    #[case::initialization_completed_start_all_containers(|_: &mut Case| {}, start(&[0, 1, 2]))]
    #[case::no_init_containers_have_been_started_start_the_first_one(
        |c: &mut Case| c.no_statuses(),
        start_init(&[0])
    )]
    #[case::an_init_container_is_stuck_in_the_created_state_restart_it(
        |c: &mut Case| {
            c.policy("Always");
            c.state(2, Created);
        },
        start_init(&[2])
    )]
    #[case::restartable_init_container_has_started_start_the_next(
        |c: &mut Case| {
            c.policy("Always");
            c.keep_statuses(0..1);
        },
        start_init(&[1])
    )]
    #[case::liveness_probe_has_not_been_run_start_the_nothing(
        |c: &mut Case| {
            c.policy("Always");
            c.liveness(1, None);
            c.keep_statuses(0..2);
        },
        start_init(&[2])
    )]
    #[case::liveness_probe_in_progress_start_the_next(
        |c: &mut Case| {
            c.policy("Always");
            c.liveness(1, Some(ProbeResult::Unknown));
            c.keep_statuses(0..2);
        },
        start_init(&[2])
    )]
    #[case::liveness_probe_has_completed_start_the_next(
        |c: &mut Case| {
            c.policy("Always");
            c.keep_statuses(0..2);
        },
        start_init(&[2])
    )]
    #[case::kill_and_recreate_the_restartable_init_container_if_the_liveness_check_has_failed(
        |c: &mut Case| {
            c.policy("Always");
            c.liveness(2, Some(ProbeResult::Failure));
        },
        PodActions {
            init_containers_to_start: vec![2],
            containers_to_kill: kills(&[(
                "initid3", "restartable-init-3", Init, KillReason::LivenessProbe,
                "Init container restartable-init-3 failed liveness probe",
            )]),
            ..start(&[0, 1, 2])
        }
    )]
    #[case::startup_probe_has_not_been_run_do_nothing(
        |c: &mut Case| {
            c.policy("Always");
            c.startup(1, None);
            c.keep_statuses(0..2);
        },
        no_action()
    )]
    #[case::startup_probe_in_progress_do_nothing(
        |c: &mut Case| {
            c.policy("Always");
            c.startup(1, Some(ProbeResult::Unknown));
            c.keep_statuses(0..2);
        },
        no_action()
    )]
    #[case::startup_probe_has_completed_start_the_next(
        |c: &mut Case| {
            c.policy("Always");
            c.keep_statuses(0..2);
        },
        start_init(&[2])
    )]
    #[case::kill_and_recreate_the_restartable_init_container_if_the_startup_check_has_failed(
        |c: &mut Case| {
            c.policy("Always");
            if let Some(init) = c.spec().init_containers.as_mut() {
                init[2].startup_probe = Some(k8s::Probe::default());
            }
            c.startup(2, Some(ProbeResult::Failure));
        },
        PodActions {
            containers_to_kill: kills(&[(
                "initid3", "restartable-init-3", Init, KillReason::StartupProbe,
                "Init container restartable-init-3 failed startup probe",
            )]),
            ..start_init(&[2])
        }
    )]
    #[case::kill_and_recreate_the_restartable_init_container_if_the_container_definition_changes(
        |c: &mut Case| {
            c.policy("Always");
            if let Some(init) = c.spec().init_containers.as_mut() {
                init[2].image = Some("foo-image".to_owned());
            }
        },
        PodActions {
            init_containers_to_start: vec![2],
            containers_to_kill: kills(&[(
                "initid3", "restartable-init-3", Init, KillReason::Unknown,
                "Init container restartable-init-3 definition changed",
            )]),
            ..start(&[0, 1, 2])
        }
    )]
    #[case::restart_terminated_restartable_init_container_and_next_init_container(
        |c: &mut Case| {
            c.policy("Always");
            c.state(0, Exited);
            c.state(2, Exited);
        },
        start_init(&[0, 2])
    )]
    #[case::restart_terminated_restartable_init_container_and_regular_containers(
        |c: &mut Case| {
            c.policy("Always");
            c.state(0, Exited);
        },
        PodActions { init_containers_to_start: vec![0], ..start(&[0, 1, 2]) }
    )]
    #[case::pod_sandbox_not_ready_restartable_init_container_failed_but_restart_policy_is_never_kill_pod_only(
        |c: &mut Case| {
            c.policy("Never");
            c.sandbox_dead();
            c.exited(2, 137);
        },
        kill_pod_only(1)
    )]
    #[case::pod_sandbox_not_ready_and_restart_policy_is_never_but_no_visible_restartable_init_containers_create_a_new_pod_sandbox(
        |c: &mut Case| {
            c.policy("Never");
            c.sandbox_dead();
            c.no_statuses();
        },
        PodActions { init_containers_to_start: vec![0], ..recreate(1) }
    )]
    #[case::pod_sandbox_not_ready_restartable_init_container_failed_and_restart_policy_is_on_failure_create_a_new_pod_sandbox(
        |c: &mut Case| {
            c.policy("OnFailure");
            c.sandbox_dead();
            c.exited(2, 137);
        },
        PodActions { init_containers_to_start: vec![0], ..recreate(1) }
    )]
    #[case::pod_sandbox_not_ready_restartable_init_container_failed_and_restart_policy_is_always_create_a_new_pod_sandbox(
        |c: &mut Case| {
            c.policy("Always");
            c.sandbox_dead();
            c.exited(2, 137);
        },
        PodActions { init_containers_to_start: vec![0], ..recreate(1) }
    )]
    #[case::initialization_failed_restart_the_last_restartable_init_container_even_if_pods_restart_policy_is_never(
        |c: &mut Case| {
            c.policy("Never");
            c.exited(2, 137);
        },
        start_init(&[2])
    )]
    #[case::restartable_init_container_state_unknown_kill_and_recreate_the_last_restartable_init_container_even_if_pods_restart_policy_is_never(
        |c: &mut Case| {
            c.policy("Never");
            c.state(2, Unknown);
        },
        PodActions {
            containers_to_kill: kills(&[(
                "initid3", "restartable-init-3", Init, KillReason::Unknown,
                "Init container is in \"unknown\" state, try killing it before restart",
            )]),
            ..start_init(&[2])
        }
    )]
    #[case::restart_restartable_init_container_if_regular_containers_are_running_even_if_pods_restart_policy_is_never(
        |c: &mut Case| {
            c.policy("Never");
            c.exited(2, 137);
            c.regular_statuses(Running, 0);
        },
        start_init(&[2])
    )]
    #[case::kill_the_pod_if_all_main_containers_succeeded_if_pods_restart_policy_is_never(
        |c: &mut Case| {
            c.policy("Never");
            c.regular_statuses(Exited, 0);
        },
        kill_pod()
    )]
    #[case::some_of_the_init_container_statuses_are_missing_but_the_last_init_container_is_running_restart_restartable_init_and_regular_containers(
        |c: &mut Case| {
            c.policy("Always");
            c.keep_statuses(2..3);
        },
        PodActions { init_containers_to_start: vec![0, 1], ..start(&[0, 1, 2]) }
    )]
    fn compute_pod_actions_matches_test_compute_pod_actions_with_restartable_init_containers(
        #[case] change: fn(&mut Case),
        #[case] expected: PodActions,
    ) {
        check(with_restartable_init_containers, change, expected);
    }

    #[rstest]
    #[case::steady_state_do_nothing_ignore_ephemeral_container(|_: &mut Case| {}, no_action())]
    #[case::no_ephemeral_containers_running_start_one(
        |c: &mut Case| c.keep_statuses(0..4),
        PodActions { ephemeral_containers_to_start: vec![0], ..no_action() }
    )]
    #[case::start_second_ephemeral_container(
        |c: &mut Case| {
            let debug2 = k8s::EphemeralContainer {
                name: "debug2".to_owned(),
                image: Some("busybox".to_owned()),
                ..Default::default()
            };
            if let Some(ephemeral) = c.spec().ephemeral_containers.as_mut() {
                ephemeral.push(debug2);
            }
        },
        PodActions { ephemeral_containers_to_start: vec![1], ..no_action() }
    )]
    #[case::ephemeral_container_exited_do_not_restart(
        |c: &mut Case| {
            c.policy("Always");
            c.state(4, Exited);
        },
        no_action()
    )]
    #[case::initialization_in_progress_start_ephemeral_container(
        |c: &mut Case| {
            c.state(3, Running);
            c.keep_statuses(0..4);
        },
        PodActions { ephemeral_containers_to_start: vec![0], ..no_action() }
    )]
    #[case::create_a_new_pod_sandbox_if_the_pod_sandbox_is_dead_init_container_failed_and_restart_policy_is_on_failure(
        |c: &mut Case| {
            c.policy("OnFailure");
            c.sandbox_dead();
            c.keep_statuses(3..5);
            c.exited(0, 137);
        },
        PodActions { init_containers_to_start: vec![0], ..recreate(1) }
    )]
    #[case::kill_pod_and_do_not_restart_ephemeral_container_if_the_pod_sandbox_is_dead(
        |c: &mut Case| {
            c.policy("Always");
            c.sandbox_dead();
        },
        PodActions { init_containers_to_start: vec![0], ..recreate(1) }
    )]
    #[case::kill_pod_if_all_containers_exited_except_ephemeral_container(
        |c: &mut Case| {
            c.policy("Never");
            (0..3).for_each(|i| c.exited(i, 0));
        },
        kill_pod()
    )]
    #[case::ephemeral_container_is_in_unknown_state_leave_it_alone(
        |c: &mut Case| {
            c.policy("Never");
            c.state(4, Unknown);
        },
        no_action()
    )]
    fn compute_pod_actions_matches_test_compute_pod_actions_with_init_and_ephemeral_containers(
        #[case] change: fn(&mut Case),
        #[case] expected: PodActions,
    ) {
        check(with_init_and_ephemeral_containers, change, expected);
    }

    fn with_legacy(base: fn() -> Case, change: fn(&mut Case), expected: PodActions) {
        let mut case = base();
        case.legacy_sidecars();
        change(&mut case);
        assert_eq!(case.actions(), expected, "inputs: {case:#?}");
    }

    const UNKNOWN_INIT3: &str =
        "Init container is in \"unknown\" state, try killing it before restart";

    #[rstest]
    #[case::initialization_completed_start_all_containers(|_: &mut Case| {}, start(&[0, 1, 2]))]
    #[case::no_init_containers_have_been_started_start_the_first_one(
        |c: &mut Case| c.no_statuses(),
        next_init(0)
    )]
    #[case::initialization_in_progress_do_nothing(
        |c: &mut Case| {
            c.policy("Always");
            c.state(2, Running);
        },
        no_action()
    )]
    #[case::kill_pod_and_restart_the_first_init_container_if_the_pod_sandbox_is_dead(
        |c: &mut Case| {
            c.policy("Always");
            c.sandbox_dead();
        },
        PodActions { next_init_container_to_start: Some(0), ..recreate(1) }
    )]
    #[case::initialization_failed_restart_the_last_init_container_if_restart_policy_is_always(
        |c: &mut Case| {
            c.policy("Always");
            c.exited(2, 137);
        },
        next_init(2)
    )]
    #[case::initialization_failed_restart_the_last_init_container_if_restart_policy_is_on_failure(
        |c: &mut Case| {
            c.policy("OnFailure");
            c.exited(2, 137);
        },
        next_init(2)
    )]
    #[case::initialization_failed_kill_pod_if_restart_policy_is_never(
        |c: &mut Case| {
            c.policy("Never");
            c.exited(2, 137);
        },
        kill_pod()
    )]
    #[case::init_container_state_unknown_kill_and_recreate_the_last_init_container_if_restart_policy_is_always(
        |c: &mut Case| {
            c.policy("Always");
            c.state(2, Unknown);
        },
        PodActions {
            containers_to_kill: kills(&[("initid3", "init3", Init, KillReason::Unknown, UNKNOWN_INIT3)]),
            ..next_init(2)
        }
    )]
    #[case::init_container_state_unknown_kill_and_recreate_the_last_init_container_if_restart_policy_is_on_failure(
        |c: &mut Case| {
            c.policy("OnFailure");
            c.state(2, Unknown);
        },
        PodActions {
            containers_to_kill: kills(&[("initid3", "init3", Init, KillReason::Unknown, UNKNOWN_INIT3)]),
            ..next_init(2)
        }
    )]
    #[case::init_container_state_unknown_kill_pod_if_restart_policy_is_never(
        |c: &mut Case| {
            c.policy("Never");
            c.state(2, Unknown);
        },
        kill_pod()
    )]
    #[case::pod_sandbox_not_ready_init_container_failed_but_restart_policy_is_never_kill_pod_only(
        |c: &mut Case| {
            c.policy("Never");
            c.sandbox_dead();
        },
        kill_pod_only(1)
    )]
    #[case::pod_sandbox_not_ready_and_restart_policy_is_never_but_no_visible_init_containers_create_a_new_pod_sandbox(
        |c: &mut Case| {
            c.policy("Never");
            c.sandbox_dead();
            c.no_statuses();
        },
        PodActions { next_init_container_to_start: Some(0), ..recreate(1) }
    )]
    #[case::pod_sandbox_not_ready_init_container_failed_and_restart_policy_is_on_failure_create_a_new_pod_sandbox(
        |c: &mut Case| {
            c.policy("OnFailure");
            c.sandbox_dead();
            c.exited(2, 137);
        },
        PodActions { next_init_container_to_start: Some(0), ..recreate(1) }
    )]
    #[case::some_of_the_init_container_statuses_are_missing_but_the_last_init_container_is_running_dont_restart_preceding_ones(
        |c: &mut Case| {
            c.policy("Always");
            c.state(2, Running);
            c.keep_statuses(2..3);
        },
        no_action()
    )]
    #[case::an_init_container_is_in_the_created_state_due_to_an_unknown_error_when_starting_container_restart_it(
        |c: &mut Case| {
            c.policy("Always");
            c.state(2, Created);
        },
        next_init(2)
    )]
    fn compute_pod_actions_matches_test_compute_pod_actions_with_init_containers_with_legacy_sidecar_containers(
        #[case] change: fn(&mut Case),
        #[case] expected: PodActions,
    ) {
        with_legacy(with_init_containers, change, expected);
    }

    #[rstest]
    #[case::steady_state_do_nothing_ignore_ephemeral_container(|_: &mut Case| {}, no_action())]
    #[case::no_ephemeral_containers_running_start_one(
        |c: &mut Case| c.keep_statuses(0..4),
        PodActions { ephemeral_containers_to_start: vec![0], ..no_action() }
    )]
    #[case::start_second_ephemeral_container(
        |c: &mut Case| {
            let debug2 = k8s::EphemeralContainer {
                name: "debug2".to_owned(),
                image: Some("busybox".to_owned()),
                ..Default::default()
            };
            if let Some(ephemeral) = c.spec().ephemeral_containers.as_mut() {
                ephemeral.push(debug2);
            }
        },
        PodActions { ephemeral_containers_to_start: vec![1], ..no_action() }
    )]
    #[case::ephemeral_container_exited_do_not_restart(
        |c: &mut Case| {
            c.policy("Always");
            c.state(4, Exited);
        },
        no_action()
    )]
    #[case::initialization_in_progress_start_ephemeral_container(
        |c: &mut Case| {
            c.state(3, Running);
            c.keep_statuses(0..4);
        },
        PodActions { ephemeral_containers_to_start: vec![0], ..no_action() }
    )]
    #[case::create_a_new_pod_sandbox_if_the_pod_sandbox_is_dead_init_container_failed_and_restart_policy_is_on_failure(
        |c: &mut Case| {
            c.policy("OnFailure");
            c.sandbox_dead();
            c.keep_statuses(3..5);
            c.exited(0, 137);
        },
        PodActions { next_init_container_to_start: Some(0), ..recreate(1) }
    )]
    #[case::kill_pod_and_do_not_restart_ephemeral_container_if_the_pod_sandbox_is_dead(
        |c: &mut Case| {
            c.policy("Always");
            c.sandbox_dead();
        },
        PodActions { next_init_container_to_start: Some(0), ..recreate(1) }
    )]
    #[case::kill_pod_if_all_containers_exited_except_ephemeral_container(
        |c: &mut Case| {
            c.policy("Never");
            (0..3).for_each(|i| c.exited(i, 0));
        },
        kill_pod()
    )]
    #[case::ephemeral_container_is_in_unknown_state_leave_it_alone(
        |c: &mut Case| {
            c.policy("Never");
            c.state(4, Unknown);
        },
        no_action()
    )]
    fn compute_pod_actions_matches_test_compute_pod_actions_with_init_and_ephemeral_containers_with_legacy_sidecar_containers(
        #[case] change: fn(&mut Case),
        #[case] expected: PodActions,
    ) {
        with_legacy(with_init_and_ephemeral_containers, change, expected);
    }

    #[test]
    fn the_legacy_gate_leaves_a_pod_with_sidecars_on_todays_path() {
        let mut case = with_restartable_init_containers();
        case.legacy_sidecars();
        case.no_statuses();
        assert_eq!(case.actions(), start_init(&[0]));
    }

    #[rstest]
    #[case::update_container_cpu_and_memory_resources(
        |c: &mut Case| c.resources(1, ("100m", "100Mi"), reported(200, 200 * MI)),
        updates(&[
            (ResourceName::Memory, update(1, (100, 100), (200, 200))),
            (ResourceName::Cpu, update(1, (100, 100), (200, 200))),
        ])
    )]
    #[case::update_container_cpu_resources(
        |c: &mut Case| c.resources(1, ("100m", "100Mi"), reported(200, 100 * MI)),
        updates(&[(ResourceName::Cpu, update(1, (100, 100), (200, 100)))])
    )]
    #[case::update_container_memory_resources(
        |c: &mut Case| c.resources(2, ("200m", "200Mi"), reported(200, 100 * MI)),
        updates(&[(ResourceName::Memory, update(2, (200, 200), (200, 100)))])
    )]
    #[case::nothing_when_spec_resources_and_status_resources_are_equal(
        |c: &mut Case| c.resources(1, ("200m", ""), RuntimeResources { cpu_limit: Some(200), ..Default::default() }),
        no_action()
    )]
    #[case::nothing_when_spec_resources_and_status_resources_are_equivalent(
        |c: &mut Case| c.resources(1, ("", ""), RuntimeResources { cpu_request: Some(2), ..Default::default() }),
        no_action()
    )]
    #[case::update_container_cpu_resources_to_equivalent_value(
        |c: &mut Case| {
            c.resources(1, ("1m", ""), RuntimeResources { cpu_request: Some(2), cpu_limit: Some(10), memory_limit: None });
            if let Some(r) = c.spec().containers[1].resources.as_mut() {
                r.requests = Some(BTreeMap::from([("cpu".to_owned(), Quantity("1m".to_owned()))]));
            }
        },
        no_action()
    )]
    #[case::update_container_cpu_and_memory_resources_with_restart_policy_for_cpu(
        |c: &mut Case| {
            c.resize_policy(0, "RestartContainer", "NotRequired");
            c.resources(0, ("200m", "200Mi"), reported(100, 100 * MI));
        },
        resize_restart(0)
    )]
    #[case::update_container_cpu_and_memory_resources_with_restart_policy_for_memory(
        |c: &mut Case| {
            c.resize_policy(2, "NotRequired", "RestartContainer");
            c.resources(2, ("200m", "200Mi"), reported(100, 100 * MI));
        },
        resize_restart(2)
    )]
    #[case::update_container_memory_resources_with_restart_policy_for_cpu(
        |c: &mut Case| {
            c.resize_policy(1, "RestartContainer", "NotRequired");
            c.resources(1, ("100m", "200Mi"), reported(100, 100 * MI));
        },
        updates(&[(ResourceName::Memory, update(1, (100, 200), (100, 100)))])
    )]
    #[case::update_container_cpu_resources_with_restart_policy_for_memory(
        |c: &mut Case| {
            c.resize_policy(2, "NotRequired", "RestartContainer");
            c.resources(2, ("200m", "100Mi"), reported(100, 100 * MI));
        },
        updates(&[(ResourceName::Cpu, update(2, (200, 100), (100, 100)))])
    )]
    fn compute_pod_actions_matches_test_compute_pod_actions_for_pod_resize(
        #[case] change: fn(&mut Case),
        #[case] expected: PodActions,
    ) {
        check(resizable, change, expected);
    }

    #[rstest]
    #[case::gate_off(|c: &mut Case| c.gates = FeatureGates::default().with(FeatureGate::InPlacePodVerticalScaling, false))]
    #[case::static_pod(|c: &mut Case| {
        c.pod.metadata.annotations = Some(BTreeMap::from([(
            "kubernetes.io/config.source".to_owned(),
            "file".to_owned(),
        )]));
    })]
    #[case::not_running(|c: &mut Case| c.state(1, Created))]
    #[case::nothing_reported(|c: &mut Case| c.status.container_statuses[1].resources = None)]
    fn a_resize_is_not_computed_without_the_gate_a_running_container_or_its_resources(
        #[case] change: fn(&mut Case),
    ) {
        let mut case = resizable();
        case.resources(1, ("100m", "100Mi"), reported(200, 200 * MI));
        change(&mut case);
        let actions = case.actions();
        assert!(actions.containers_to_update.is_empty(), "{actions:#?}");
        assert!(!actions.update_pod_resources);
    }

    #[test]
    fn a_sidecar_whose_resize_policy_restarts_it_is_killed_and_started_again() {
        let mut case = with_restartable_init_containers();
        if let Some(init) = case.spec().init_containers.as_mut() {
            init[0].resources = Some(k8s::ResourceRequirements {
                limits: Some(BTreeMap::from([(
                    "memory".to_owned(),
                    Quantity("64Mi".to_owned()),
                )])),
                ..Default::default()
            });
            init[0].resize_policy = Some(vec![k8s::ContainerResizePolicy {
                resource_name: "memory".to_owned(),
                restart_policy: "RestartContainer".to_owned(),
            }]);
        }
        case.status.container_statuses[0].resources = Some(RuntimeResources {
            memory_limit: Some(32 * MI),
            ..Default::default()
        });
        let message = "Container restartable-init-1 resize requires restart";
        assert_eq!(
            case.actions(),
            PodActions {
                init_containers_to_start: vec![0],
                containers_to_kill: kills(&[(
                    "initid1",
                    "restartable-init-1",
                    Init,
                    KillReason::Unknown,
                    message
                )]),
                update_pod_resources: true,
                ..start(&[0, 1, 2])
            }
        );
    }

    // Rules the upstream tables leave implicit.
    #[rstest]
    #[case::a_pod_being_deleted_restarts_nothing_and_is_killed(
        |c: &mut Case| {
            c.pod.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
            (0..3).for_each(|i| c.exited(i, 1));
        },
        kill_pod()
    )]
    #[case::the_newest_status_of_a_name_decides(
        |c: &mut Case| {
            // foo2's newest instance exited; an older one that still reads as running is ignored.
            let mut older = c.status.container_statuses[1].clone();
            older.id.id = "id2-old".to_owned();
            c.exited(1, 1);
            c.status.container_statuses.push(older);
        },
        start(&[1])
    )]
    // Only a Failure kills a running container: Unknown and Success keep it, and readiness is
    // never read (the kubelet's readiness results gate traffic, not restarts).
    #[case::an_unknown_liveness_result_keeps_the_container(
        |c: &mut Case| c.liveness(1, Some(ProbeResult::Unknown)),
        no_action()
    )]
    #[case::an_unknown_startup_result_keeps_the_container(
        |c: &mut Case| c.startup(1, Some(ProbeResult::Unknown)),
        no_action()
    )]
    #[case::a_failed_readiness_probe_restarts_nothing(
        |c: &mut Case| c.readiness(1, Some(ProbeResult::Failure)),
        no_action()
    )]
    #[case::a_failed_liveness_probe_under_never_kills_without_restart(
        |c: &mut Case| {
            c.policy("Never");
            c.liveness(1, Some(ProbeResult::Failure));
        },
        PodActions {
            containers_to_kill: kills(&[(
                "id2", "foo2", Regular, KillReason::LivenessProbe,
                "Container foo2 failed liveness probe",
            )]),
            ..no_action()
        }
    )]
    #[case::a_changed_spec_is_restarted_even_under_never(
        |c: &mut Case| {
            c.policy("Never");
            if let Some(spec) = c.pod.spec.as_mut() {
                spec.containers[0].image = Some("busybox:other".to_owned());
            }
        },
        PodActions {
            containers_to_kill: kills(&[(
                "id1", "foo1", Regular, KillReason::Unknown,
                "Container foo1 definition changed, will be restarted",
            )]),
            ..start(&[0])
        }
    )]
    #[case::a_pod_with_nothing_left_running_is_killed(
        |c: &mut Case| {
            c.policy("OnFailure");
            (0..3).for_each(|i| c.exited(i, 0));
        },
        kill_pod()
    )]
    fn compute_pod_actions_follows_the_kubelet_at_the_edges(
        #[case] change: fn(&mut Case),
        #[case] expected: PodActions,
    ) {
        check(base, change, expected);
    }

    #[rstest]
    #[case::oom_killed_with_code_zero(Exited, 0, "OOMKilled", true)]
    #[case::exited_non_zero(Exited, 1, "Error", true)]
    #[case::unknown(Unknown, 0, "", true)]
    #[case::exited_zero(Exited, 0, "Completed", false)]
    #[case::running(Running, 0, "", false)]
    fn an_init_container_failed_when_oom_killed_non_zero_or_unknown(
        #[case] state: ContainerState,
        #[case] exit_code: i32,
        #[case] reason: &str,
        #[case] failed: bool,
    ) {
        let status = ContainerStatus {
            state,
            exit_code,
            reason: reason.to_owned(),
            ..Default::default()
        };
        assert_eq!(is_init_container_failed(&status), failed);
    }

    #[test]
    fn an_oom_killed_init_container_under_never_kills_the_pod() {
        let mut case = with_init_containers();
        case.policy("Never");
        case.status.container_statuses[2].reason = "OOMKilled".to_owned();
        assert_eq!(case.actions(), kill_pod());
    }

    #[test]
    fn the_same_inputs_give_the_same_actions() {
        let mut case = with_restartable_init_containers();
        case.state(0, Exited);
        case.liveness(2, Some(ProbeResult::Failure));
        assert_eq!(case.actions(), case.actions());
    }

    /// A rule `action` on exit codes `operator values`.
    fn rule(action: &str, operator: &str, values: &[i32]) -> k8s::ContainerRestartRule {
        k8s::ContainerRestartRule {
            action: action.to_owned(),
            exit_codes: Some(k8s::ContainerRestartRuleOnExitCodes {
                operator: operator.to_owned(),
                values: Some(values.to_vec()),
            }),
        }
    }

    /// Gives regular container `index` its own restart policy and rules.
    fn own_policy(
        case: &mut Case,
        index: usize,
        policy: &str,
        rules: Vec<k8s::ContainerRestartRule>,
    ) {
        let container = &mut case.spec().containers[index];
        container.restart_policy = Some(policy.to_owned());
        container.restart_policy_rules = Some(rules);
    }

    fn starts(indices: Vec<usize>) -> PodActions {
        PodActions {
            containers_to_start: indices,
            ..no_action()
        }
    }

    #[rstest]
    #[case::a_restart_rule_overrides_never(&"Never", "Never", vec![rule("Restart", "In", &[42])], 42, vec![0])]
    #[case::an_unmatched_rule_leaves_its_own_never(&"Never", "Never", vec![rule("Restart", "In", &[42])], 1, vec![])]
    #[case::not_in_matches_every_other_code(&"Never", "Never", vec![rule("Restart", "NotIn", &[0])], 3, vec![0])]
    #[case::own_never_beats_the_pods_always(&"Always", "Never", vec![], 1, vec![])]
    #[case::own_on_failure_beats_the_pods_never(&"Never", "OnFailure", vec![], 1, vec![0])]
    #[case::own_on_failure_leaves_a_success(&"Never", "OnFailure", vec![], 0, vec![])]
    fn a_regular_container_s_own_policy_and_rules_decide_its_restart(
        #[case] pod_policy: &str,
        #[case] own: &str,
        #[case] rules: Vec<k8s::ContainerRestartRule>,
        #[case] exit_code: i32,
        #[case] start: Vec<usize>,
    ) {
        let mut case = base();
        case.policy(pod_policy);
        own_policy(&mut case, 0, own, rules);
        case.exited(0, exit_code);
        assert_eq!(case.actions(), starts(start));
    }

    #[test]
    fn without_the_rules_gate_the_pod_s_policy_decides() {
        let mut case = base();
        case.policy("Always");
        own_policy(&mut case, 0, "Never", vec![]);
        case.exited(0, 1);
        case.gates = case
            .gates
            .clone()
            .with(FeatureGate::ContainerRestartRules, false);
        assert_eq!(case.actions(), starts(vec![0]));
    }

    #[test]
    fn a_rule_without_exit_codes_or_with_an_unknown_operator_matches_nothing() {
        let mut container = container("app", "busybox");
        container.restart_policy_rules = Some(vec![
            k8s::ContainerRestartRule {
                action: "Restart".to_owned(),
                exit_codes: None,
            },
            rule("Restart", "Exists", &[1]),
            rule("RestartAllContainers", "In", &[1]),
            rule("Restart", "In", &[1]),
        ]);
        assert_eq!(
            pod::matching_restart_rule(&container, 1).map(|r| r.action.as_str()),
            Some("RestartAllContainers"),
            "the first rule that matches wins"
        );
        assert!(pod::matching_restart_rule(&container, 2).is_none());
    }

    /// The base pod with a finished init container, foo2 exited 42 by a `RestartAllContainers`
    /// rule, an older exited instance of foo1 beside its running one, and foo1 and foo3 running.
    /// Statuses: foo1, foo2, foo3, init1, foo1's older instance.
    fn restarting_all() -> Case {
        let mut case = base();
        case.policy("Never");
        own_policy(
            &mut case,
            1,
            "Never",
            vec![rule("RestartAllContainers", "In", &[42])],
        );
        case.exited(1, 42);
        let init = container("init1", "bar-image");
        let init_status = ContainerStatus {
            exit_code: 0,
            ..status_of("initid1", &init, Exited)
        };
        let older = ContainerStatus {
            exit_code: 1,
            ..status_of("id1-old", &pod::containers(&case.pod)[0].clone(), Exited)
        };
        case.spec().init_containers = Some(vec![init]);
        case.status.container_statuses.extend([init_status, older]);
        case
    }

    fn reset(id: &str, name: &str, kind: ContainerKind, kill: bool) -> ContainerToReset {
        ContainerToReset {
            id: id.to_owned(),
            name: name.to_owned(),
            kind,
            kill,
        }
    }

    #[test]
    fn a_restart_all_exit_removes_every_instance_and_the_trigger_last() {
        let case = restarting_all();
        assert!(should_all_containers_restart(
            &case.pod,
            &case.status,
            &case.gates
        ));
        assert_eq!(
            case.actions(),
            PodActions {
                containers_to_reset: vec![
                    reset("initid1", "init1", Init, false),
                    reset("id1", "foo1", Regular, true),
                    reset("id1-old", "foo1", Regular, false),
                    reset("id3", "foo3", Regular, true),
                    reset("id2", "foo2", Regular, false),
                ],
                ..no_action()
            }
        );
    }

    #[test]
    fn a_restart_all_keeps_a_changed_sandbox_s_kill_and_run() {
        let mut case = restarting_all();
        case.sandbox_dead();
        let actions = case.actions();
        assert!(actions.kill_pod && actions.create_sandbox, "{actions:?}");
        assert_eq!(actions.attempt, 1);
        assert_eq!(actions.containers_to_reset.len(), 5);
        assert!(
            actions.containers_to_start.is_empty() && actions.init_containers_to_start.is_empty()
        );
    }

    #[rstest]
    #[case::restart_all_off(FeatureGate::RestartAllContainersOnContainerExits)]
    #[case::rules_off(FeatureGate::ContainerRestartRules)]
    fn without_either_gate_a_restart_all_exit_restarts_nothing(#[case] off: FeatureGate) {
        let mut case = restarting_all();
        case.gates = case.gates.clone().with(off, false);
        let actions = case.actions();
        assert!(actions.containers_to_reset.is_empty(), "{actions:?}");
        // Under restart policy Never (the pod's, and foo2's own) nothing starts.
        assert!(actions.containers_to_start.is_empty(), "{actions:?}");
    }

    #[test]
    fn a_pod_being_deleted_restarts_nothing_in_place() {
        let mut case = restarting_all();
        case.pod.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
        assert!(!should_all_containers_restart(
            &case.pod,
            &case.status,
            &case.gates
        ));
        assert!(case.actions().containers_to_reset.is_empty());
    }

    #[rstest]
    #[case::another_code(7, false)]
    #[case::its_code(42, true)]
    fn only_the_rule_s_exit_code_restarts_all(#[case] exit_code: i32, #[case] all: bool) {
        let mut case = restarting_all();
        case.exited(1, exit_code);
        assert_eq!(
            should_all_containers_restart(&case.pod, &case.status, &case.gates),
            all
        );
    }

    #[test]
    fn an_init_container_s_exit_can_restart_all() {
        let mut case = restarting_all();
        case.exited(1, 0);
        case.spec().init_containers.as_mut().unwrap()[0].restart_policy_rules =
            Some(vec![rule("RestartAllContainers", "In", &[5])]);
        case.spec().init_containers.as_mut().unwrap()[0].restart_policy = Some("Never".to_owned());
        case.exited(3, 5);
        let actions = case.actions();
        let order: Vec<&str> = actions
            .containers_to_reset
            .iter()
            .map(|r| r.id.as_str())
            .collect();
        assert_eq!(order, ["id1", "id1-old", "id2", "id3", "initid1"]);
    }

    /// Gives regular containers `indices` their own restart policy `policy`.
    fn own(c: &mut Case, indices: &[usize], policy: &str) {
        for &i in indices {
            c.spec().containers[i].restart_policy = Some(policy.to_owned());
        }
    }

    /// The rows of upstream's TestComputePodActionsWithContainerRestartRules (v1.35, the
    /// `ContainerRestartRules` gate on), as the store holds them: a third-party port of that
    /// table (stored id 54563841024), whose row names are upstream's. The same test re-runs
    /// TestComputePodActions and TestComputePodActionsWithInitContainers with the gate on; the
    /// tables above run under today's defaults, where it is on.
    #[rstest]
    #[case::restart_exited_containers_if_restart_policy_is_always(
        |c: &mut Case| {
            own(c, &[0, 1], "Always");
            c.policy("Never");
            c.exited(0, 0);
            c.exited(1, 111);
        },
        start(&[0, 1])
    )]
    #[case::restart_failed_containers_if_restart_policy_is_on_failure(
        |c: &mut Case| {
            own(c, &[0, 1], "OnFailure");
            c.policy("Never");
            c.exited(0, 0);
            c.exited(1, 111);
        },
        start(&[1])
    )]
    #[case::restart_created_but_not_started_containers_if_restart_policy_is_on_failure(
        |c: &mut Case| {
            own(c, &[0, 1], "OnFailure");
            c.policy("Never");
            c.exited(0, 0);
            c.state(1, Created);
        },
        start(&[1])
    )]
    #[case::dont_restart_containers_if_restart_policy_is_never(
        |c: &mut Case| {
            own(c, &[0, 1], "Never");
            c.policy("Always");
            c.exited(0, 0);
            c.exited(1, 111);
        },
        no_action()
    )]
    #[case::kill_pod_and_recreate_all_containers_except_for_the_succeeded_one_if_the_pod_sandbox_is_dead(
        |c: &mut Case| {
            own(c, &[1], "OnFailure");
            c.policy("Always");
            c.sandbox_dead();
            c.exited(1, 0);
        },
        PodActions { containers_to_start: vec![0, 2], ..recreate(1) }
    )]
    fn compute_pod_actions_matches_test_compute_pod_actions_with_container_restart_rules(
        #[case] change: fn(&mut Case),
        #[case] expected: PodActions,
    ) {
        check(base, change, expected);
    }

    /// The rows of upstream's TestComputePodActionsForRestartAllContainers that the store holds
    /// (the same third-party port; upstream's init-container and sidecar rows are not in it).
    /// Upstream hands computePodActions the decision, read from the pod's
    /// `AllContainersRestarting` condition; the port reads it from the runtime (an exited
    /// trigger), so its row "pod marked for RestartAllContainers", a condition with no exited
    /// trigger, has no counterpart here.
    #[rstest]
    #[case::pod_not_marked_for_restart_all_containers(|_: &mut Case| {}, no_action())]
    #[case::removes_past_terminated_statuses(
        |c: &mut Case| {
            c.policy("Always");
            own(c, &[2], "Always");
            c.spec().containers[2].restart_policy_rules =
                Some(vec![rule("RestartAllContainers", "In", &[1])]);
            c.exited(2, 1);
            for name in ["foo1", "foo2", "foo3"] {
                let spec = pod::containers(&c.pod).iter().find(|s| s.name == name).unwrap().clone();
                let past = ContainerStatus {
                    exit_code: 99,
                    ..status_of(&format!("id{}-past", &name[3..]), &spec, Exited)
                };
                c.status.container_statuses.push(past);
            }
        },
        PodActions {
            containers_to_reset: vec![
                reset("id1", "foo1", Regular, true),
                reset("id1-past", "foo1", Regular, false),
                reset("id2", "foo2", Regular, true),
                reset("id2-past", "foo2", Regular, false),
                reset("id3-past", "foo3", Regular, false),
                reset("id3", "foo3", Regular, false),
            ],
            ..no_action()
        }
    )]
    #[case::all_containers_removed_start_regular_container(
        |c: &mut Case| c.no_statuses(),
        start(&[0, 1, 2])
    )]
    fn compute_pod_actions_matches_test_compute_pod_actions_for_restart_all_containers(
        #[case] change: fn(&mut Case),
        #[case] expected: PodActions,
    ) {
        check(base, change, expected);
    }
}
