//! The doing half of SyncPod: given what one sync must do ([`PodActions`], from
//! `compute_pod_actions`), kill what must go, prune old init containers, run the sandbox at its
//! attempt, then start ephemeral, init and regular containers, recording each step's result.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::backoff::{stable_key, Backoff};
use super::container_config::{
    directories_to_make, ephemeral_as_container, generate_container_config,
};
use super::images::ImageManager;
use super::k8s;
use super::options::SyncOptions;
use super::sandbox_config::{
    build_pod_logs_directory, format_pod, generate_pod_sandbox_config, identity, is_host_network,
};
use super::{
    compute_pod_actions_with, pod, pod_resources, resize, ContainerKind, ContainerToKill,
    ContainerToReset, KillReason, PodActions, ProbeResults,
};
use crate::cri::v1;
use crate::manager::{
    Container, ContainerId, ContainerSpec, ContainerState, KubeGenericRuntimeManager, ManagerError,
    Pod, PodSpec, PodStatus, PodSyncResult, SyncAction, SyncResult, CONFIG_POD_SANDBOX_ERROR,
    CRASH_LOOP_BACK_OFF, CREATE_CONTAINER_CONFIG_ERROR, CREATE_CONTAINER_ERROR,
    CREATE_POD_SANDBOX_ERROR, KILL_CONTAINER_ERROR, MINIMUM_GRACE_PERIOD_SECONDS,
    POST_START_HOOK_ERROR, REMOVE_CONTAINER_ERROR, RESIZE_POD_IN_PLACE_ERROR, RUN_CONTAINER_ERROR,
};

/// A container to start and, for an ephemeral one, the container whose PID namespace it joins.
struct StartSpec<'a> {
    container: std::borrow::Cow<'a, k8s::Container>,
    target: Option<&'a str>,
}

/// The pieces every container start of one sync shares.
struct Sandbox<'a> {
    id: &'a str,
    config: &'a v1::PodSandboxConfig,
}

/// What one SyncPod decided and what came of it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PodSync {
    /// computePodActions' answer for the status the sync read.
    pub actions: PodActions,
    /// Each step's result.
    pub result: PodSyncResult,
}

impl KubeGenericRuntimeManager {
    /// One SyncPod of today's kubelet: the pod's runtime status
    /// ([`KubeGenericRuntimeManager::get_pod_status`], under this manager's rules), the actions
    /// computePodActions derives from it and the prober's answers, and those actions carried out
    /// by [`KubeGenericRuntimeManager::execute_pod_actions`]. The 2016 seed answered "not
    /// implemented" here. A status that cannot be read ends the sync before any action.
    pub async fn sync_pod(
        &self,
        pod: &k8s::Pod,
        probes: &ProbeResults,
        options: &SyncOptions,
        backoff: &mut Backoff,
    ) -> Result<PodSync, ManagerError> {
        let options = &SyncOptions {
            kubelet: self.profile,
            ..options.clone()
        };
        let status = self
            .get_pod_status(pod::uid(pod), pod::name(pod), pod::namespace(pod))
            .await?;
        let actions = compute_pod_actions_with(pod, &status, probes, self.feature_gates());
        let result = self
            .execute_pod_actions(pod, &status, &actions, options, backoff)
            .await;
        Ok(PodSync { actions, result })
    }

    /// Carries out `actions` for `pod` whose runtime state is `status`: steps 2 to 9 of
    /// today's SyncPod (kuberuntime_manager.go) after computePodActions. The 2016 seed's SyncPod
    /// answered "not implemented"; this follows today's kubelet. Left out: events, DRA, image
    /// volumes, the pod-level cgroups of an in-place resize, and the PreStop hooks of a whole
    /// pod's kill (it goes through the seed's `kill_pod`, whose spec carries no hooks). A step
    /// that fails is
    /// recorded in its result; a failed kill, a failed sandbox and a failed regular init
    /// container end the sync, as in the kubelet. Killing the whole pod goes through
    /// [`KubeGenericRuntimeManager::kill_pod`], so it keeps that call's (the seed's) rules.
    pub async fn execute_pod_actions(
        &self,
        pod: &k8s::Pod,
        status: &PodStatus,
        actions: &PodActions,
        options: &SyncOptions,
        backoff: &mut Backoff,
    ) -> PodSyncResult {
        let mut result = PodSyncResult::default();

        // Step 2: kill the pod, or the containers that must go.
        let mut removed = BTreeSet::new();
        if actions.kill_pod {
            let killed = self
                .kill_pod(
                    Some(&kill_spec(pod)),
                    &running_pod(self.runtime_type(), status),
                    None,
                )
                .await;
            let failed = killed.error().is_some();
            result.results.extend(killed.results);
            if killed.sync_error.is_some() {
                result.sync_error = killed.sync_error;
            }
            if failed {
                return result;
            }
            if actions.create_sandbox {
                removed = self.purge_init_containers(pod, status).await;
            }
        } else {
            for (id, info) in &actions.containers_to_kill {
                let mut step = SyncResult::new(SyncAction::KillContainer, info.name.clone());
                let outcome = self.kill_container(pod, id, info, None).await;
                let failed = outcome.is_err();
                if let Err(err) = outcome {
                    step.fail(KILL_CONTAINER_ERROR, err.to_string());
                }
                result.results.push(step);
                if failed {
                    return result;
                }
            }
            // All containers restart in place: each instance is stopped at once if it still
            // runs, then removed; a failure ends the sync, and the next one goes on.
            for reset in &actions.containers_to_reset {
                let mut step = SyncResult::new(SyncAction::RemoveContainer, reset.name.clone());
                let outcome = self.reset_container(pod, reset).await;
                let failed = outcome.is_err();
                match outcome {
                    Ok(()) => {
                        removed.insert(reset.id.clone());
                    }
                    Err((kind, message)) => step.fail(kind, message),
                }
                result.results.push(step);
                if failed {
                    return result;
                }
            }
        }

        // Step 3: keep only the newest finished instance of each init container.
        self.prune_init_containers_before_start(pod, status, &removed)
            .await;

        // Step 4: run the sandbox.
        let mut sandbox_id = actions.sandbox_id.clone();
        if actions.create_sandbox {
            let mut step = SyncResult::new(SyncAction::CreatePodSandbox, format_pod(pod));
            match self.create_pod_sandbox(pod, actions.attempt, options).await {
                Ok(id) => sandbox_id = id,
                Err(message) => {
                    // A pod being deleted is not worth a failure: the next sync kills it.
                    if pod.metadata.deletion_timestamp.is_none() {
                        step.fail(CREATE_POD_SANDBOX_ERROR, message);
                    }
                    result.results.push(step);
                    return result;
                }
            }
            result.results.push(step);
            match self.client().pod_sandbox_status(&sandbox_id).await {
                Err(err) => {
                    result.sync_error = Some(err.to_string());
                    return result;
                }
                Ok(answer) => match answer.status {
                    None => {
                        result.sync_error = Some(format!(
                            "PodSandboxStatus of sandbox {sandbox_id:?} for pod {:?} answered no status",
                            format_pod(pod)
                        ));
                        return result;
                    }
                    Some(sandbox) if !is_host_network(pod) => {
                        // The pod's IPs feed only the downward API, which the harness does
                        // not resolve; they are logged for the reader.
                        tracing::debug!(pod = %format_pod(pod), ips = ?sandbox_ips(&sandbox), "sandbox running");
                    }
                    Some(_) => {}
                },
            }
        }

        // Step 5: the sandbox config the containers are created with.
        let mut step = SyncResult::new(SyncAction::ConfigPodSandbox, sandbox_id.clone());
        let sandbox_config = match generate_pod_sandbox_config(pod, actions.attempt, options) {
            Ok(config) => config,
            Err(err) => {
                step.fail(
                    CONFIG_POD_SANDBOX_ERROR,
                    format!(
                        "GeneratePodSandboxConfig for pod {:?} failed: {err}",
                        format_pod(pod)
                    ),
                );
                result.results.push(step);
                return result;
            }
        };
        result.results.push(step);
        let sandbox = Sandbox {
            id: &sandbox_id,
            config: &sandbox_config,
        };
        let spec = pod.spec.as_ref();

        // Step 6: ephemeral containers; a failure does not stop the others.
        let ephemerals = spec
            .and_then(|s| s.ephemeral_containers.as_deref())
            .unwrap_or_default();
        for &index in &actions.ephemeral_containers_to_start {
            let Some(ephemeral) = ephemerals.get(index) else {
                tracing::warn!(index, "no ephemeral container at this index of the spec");
                continue;
            };
            let start = StartSpec {
                container: std::borrow::Cow::Owned(ephemeral_as_container(ephemeral)),
                target: ephemeral
                    .target_container_name
                    .as_deref()
                    .filter(|t| !t.is_empty()),
            };
            let _ = self
                .start(pod, status, &sandbox, start, options, backoff, &mut result)
                .await;
        }

        // Step 7: init containers in order; a regular one that fails ends the sync, a sidecar
        // does not.
        let inits = spec
            .and_then(|s| s.init_containers.as_deref())
            .unwrap_or_default();
        // Under LegacySidecarContainers one init container is started; a failure ends the sync.
        let legacy_next = actions.next_init_container_to_start;
        for &index in legacy_next.iter().chain(&actions.init_containers_to_start) {
            let Some(container) = inits.get(index) else {
                tracing::warn!(index, "no init container at this index of the spec");
                continue;
            };
            let start = StartSpec {
                container: std::borrow::Cow::Borrowed(container),
                target: None,
            };
            let started = self
                .start(pod, status, &sandbox, start, options, backoff, &mut result)
                .await;
            if !started && container.restart_policy.as_deref() != Some("Always") {
                return result;
            }
        }

        // Step 8: resize running containers in place.
        if (!actions.containers_to_update.is_empty() || actions.update_pod_resources)
            && resize::in_place_resize_allowed(pod, self.feature_gates())
        {
            result
                .results
                .push(self.resize_containers(pod, actions).await);
        }

        // Step 9: regular containers; failures are recorded and the rest still start.
        let containers = spec.map(|s| s.containers.as_slice()).unwrap_or_default();
        for &index in &actions.containers_to_start {
            let Some(container) = containers.get(index) else {
                tracing::warn!(index, "no container at this index of the spec");
                continue;
            };
            let start = StartSpec {
                container: std::borrow::Cow::Borrowed(container),
                target: None,
            };
            let _ = self
                .start(pod, status, &sandbox, start, options, backoff, &mut result)
                .await;
        }
        result
    }

    /// The container half of `doPodResizeAction` (kuberuntime_manager.go) with
    /// `updatePodContainerResources`: memory first, then CPU, each container's
    /// UpdateContainerResources sending the resource's desired values and the other's most
    /// recently applied ones; the first refusal ends the resize, for the next sync to retry.
    /// The pod-level cgroup steps around it are left out: the harness drives no cgroups. Under
    /// today's kubelet (v1.35 on) a resize whose containers all took their update then tells the
    /// runtime the pod's new resources with UpdatePodSandboxResources, best effort: its answer,
    /// Unimplemented or any other failure, changes nothing (cri-api services.go: "failure will
    /// not block the Kubelet with proceeding with a resize").
    async fn resize_containers(&self, pod: &k8s::Pod, actions: &PodActions) -> SyncResult {
        let mut step = SyncResult::new(SyncAction::ResizePodInPlace, format_pod(pod));
        // One view per container of what is applied, shared by its memory and CPU updates.
        let mut applied: BTreeMap<&str, resize::ContainerResources> = BTreeMap::new();
        for (&resource, updates) in &actions.containers_to_update {
            for update in updates {
                let current = applied.entry(update.id.as_str()).or_insert(update.current);
                let with_current = resize::ContainerToUpdate {
                    current: *current,
                    ..update.clone()
                };
                let wanted = resize::update_request(resource, &with_current);
                let linux = resize::linux_resources(&wanted);
                if let Err(err) = self
                    .client()
                    .update_container_resources(&update.id, Some(linux))
                    .await
                {
                    step.fail(
                        RESIZE_POD_IN_PLACE_ERROR,
                        format!(
                            "UpdateContainerResources of container {:?} ({resource:?}) failed: {err}",
                            update.name
                        ),
                    );
                    return step;
                }
                resize::applied(resource, current, &update.desired);
            }
        }
        if self.profile().is_current() {
            self.notify_sandbox_resources(pod, &actions.sandbox_id)
                .await;
        }
        step
    }

    /// UpdatePodSandboxResources with `pod`'s pod-level resources and its overhead (none in
    /// the harness's pods, which the kubelet sends as empty resources), for sandbox
    /// `sandbox_id`; a failure is logged and dropped, as the kubelet's
    /// `updatePodSandboxResources` does.
    async fn notify_sandbox_resources(&self, pod: &k8s::Pod, sandbox_id: &str) {
        let resources = pod_resources::pod_linux_resources(pod);
        let overhead = v1::LinuxContainerResources::default();
        let answer = self
            .client()
            .update_pod_sandbox_resources(sandbox_id, Some(overhead), Some(resources))
            .await;
        match answer {
            Ok(()) => {}
            Err(err) if err.code == tonic::Code::Unimplemented => {
                tracing::debug!(
                    sandbox_id,
                    "the runtime lacks UpdatePodSandboxResources; the resize goes on"
                );
            }
            Err(err) => {
                tracing::debug!(
                    sandbox_id,
                    error = %err,
                    "UpdatePodSandboxResources failed; the resize goes on"
                );
            }
        }
    }

    /// Generates the sandbox config, makes the pod's log directory (0755) and runs the sandbox;
    /// answers its id or the failure's message. Ports `createPodSandbox` (kuberuntime_sandbox.go).
    async fn create_pod_sandbox(
        &self,
        pod: &k8s::Pod,
        attempt: u32,
        options: &SyncOptions,
    ) -> Result<String, String> {
        let config = generate_pod_sandbox_config(pod, attempt, options).map_err(|err| {
            format!(
                "Failed to generate sandbox config for pod {:?}: {err}",
                format_pod(pod)
            )
        })?;
        make_directory(Path::new(&config.log_directory)).map_err(|err| {
            format!(
                "Failed to create log directory for pod {:?}: {err}",
                format_pod(pod)
            )
        })?;
        self.client()
            .run_pod_sandbox(config, &options.runtime_handler)
            .await
            .map_err(|err| {
                format!(
                    "Failed to create sandbox for pod {:?}: {}",
                    format_pod(pod),
                    err.message
                )
            })
    }

    /// One container start with its StartContainer result: the crash-loop back-off first, then
    /// the start itself. Answers whether it started. Ports SyncPod's `start` closure.
    #[allow(clippy::too_many_arguments)]
    async fn start(
        &self,
        pod: &k8s::Pod,
        status: &PodStatus,
        sandbox: &Sandbox<'_>,
        spec: StartSpec<'_>,
        options: &SyncOptions,
        backoff: &mut Backoff,
        result: &mut PodSyncResult,
    ) -> bool {
        let container = spec.container.as_ref();
        let mut step = SyncResult::new(SyncAction::StartContainer, container.name.clone());
        // The same hash computePodActions compares, or every sync would see a changed spec.
        let hash = super::hash_container(container);
        if let Some(message) = do_back_off(pod, container, hash, status, backoff) {
            step.fail(CRASH_LOOP_BACK_OFF, message);
            result.results.push(step);
            return false;
        }
        let outcome = self
            .start_container(pod, status, sandbox, &spec, hash, options, backoff)
            .await;
        let started = outcome.is_ok();
        if let Err((kind, message)) = outcome {
            step.fail(kind, message);
        }
        result.results.push(step);
        started
    }

    /// Ensures the image, works out the restart count, generates the config, then
    /// CreateContainer and StartContainer; a failure answers its error kind and message. Ports
    /// `startContainer` (kuberuntime_container.go) with its PostStart hook, without the legacy log
    /// symlink.
    #[allow(clippy::too_many_arguments)]
    async fn start_container(
        &self,
        pod: &k8s::Pod,
        status: &PodStatus,
        sandbox: &Sandbox<'_>,
        spec: &StartSpec<'_>,
        hash: u64,
        options: &SyncOptions,
        backoff: &mut Backoff,
    ) -> Result<(), (&'static str, String)> {
        let container = spec.container.as_ref();
        let image = ImageManager::new(self.client())
            .ensure_image_exists(pod, container, backoff)
            .await
            .map_err(|failure| (failure.kind, failure.message))?;

        let (name, namespace, uid) = identity(pod);
        let log_dir = build_pod_logs_directory(&options.pod_logs_root, namespace, name, uid)
            .join(&container.name);
        let restart_count = match status
            .container_statuses
            .iter()
            .find(|s| s.name == container.name)
        {
            Some(previous) => u32::try_from(previous.restart_count).unwrap_or(0) + 1,
            // The runtime may have forgotten the container (a reboot); the log files it left
            // say how far the count had got.
            None => restart_count_by_log_dir(&log_dir),
        };

        let target_id = match spec.target {
            None => None,
            Some(target) => match status.container_statuses.iter().find(|s| s.name == target) {
                Some(found) if found.state == ContainerState::Running => Some(found.id.id.as_str()),
                _ => {
                    return Err((
                        CREATE_CONTAINER_CONFIG_ERROR,
                        format!("unable to find target container {target}"),
                    ))
                }
            },
        };

        let config_error = |err: String| (CREATE_CONTAINER_CONFIG_ERROR, err);
        make_directory(&log_dir).map_err(|err| {
            config_error(format!(
                "create container log directory {} failed: {err}",
                log_dir.display()
            ))
        })?;
        for dir in directories_to_make(pod, container, options) {
            std::fs::create_dir_all(&dir).map_err(|err| {
                config_error(format!(
                    "create volume directory {} failed: {err}",
                    dir.display()
                ))
            })?;
        }
        let config = generate_container_config(
            pod,
            container,
            restart_count,
            hash,
            &image,
            target_id,
            options,
        )
        .map_err(|err| config_error(err.to_string()))?;

        let id = self
            .client()
            .create_container(sandbox.id, config, sandbox.config.clone())
            .await
            .map_err(|err| (CREATE_CONTAINER_ERROR, err.message))?;
        self.client()
            .start_container(&id)
            .await
            .map_err(|err| (RUN_CONTAINER_ERROR, err.message))?;

        // The PostStart hook; one that fails kills the container it ran in, and the start fails.
        let post_start = container
            .lifecycle
            .as_ref()
            .and_then(|l| l.post_start.as_ref());
        if let Some(handler) = post_start {
            if let Err(message) = self
                .run_lifecycle_handler(&id, pod, container, handler)
                .await
            {
                let info = ContainerToKill {
                    name: container.name.clone(),
                    kind: ContainerKind::Regular,
                    reason: KillReason::FailedPostStartHook,
                    message: "FailedPostStartHook".to_owned(),
                };
                if let Err(err) = self.kill_container(pod, &id, &info, None).await {
                    tracing::warn!(container = %container.name, %err, "killing a container whose PostStart hook failed");
                }
                return Err((POST_START_HOOK_ERROR, message));
            }
        }
        Ok(())
    }

    /// Stops one container of the pod: its PreStop hook first, if it has one and the grace period
    /// leaves time, bounded by that grace period, whose whole seconds spent are taken from what
    /// StopContainer is given; never under 2 s. A failed hook does not fail the kill. Ports
    /// today's `killContainer` for a pod whose spec is known (SyncPod's single kills and a failed
    /// PostStart). A hook still running when the grace period ends is abandoned: its ExecSync
    /// call is cancelled, where the kubelet leaves its goroutine to finish. A grace period
    /// override replaces the pod's before the hook is considered, as in today's kubelet: an
    /// override of 0 runs no hook and gives StopContainer the 2 s minimum.
    async fn kill_container(
        &self,
        pod: &k8s::Pod,
        id: &str,
        info: &ContainerToKill,
        grace_override: Option<i64>,
    ) -> Result<(), crate::cri::CallError> {
        let mut grace = grace_override.unwrap_or_else(|| termination_grace_period(pod, info));
        tracing::debug!(container = %info.name, id, reason = ?info.reason, message = %info.message, grace, "killing container");
        let pre_stop = container_spec(pod, &info.name)
            .and_then(|c| Some((c, c.lifecycle.as_ref()?.pre_stop.as_ref()?)));
        if let Some((container, handler)) = pre_stop.filter(|_| grace > 0) {
            let started = std::time::Instant::now();
            let bound = std::time::Duration::from_secs(u64::try_from(grace).unwrap_or(0));
            let hook = self.run_lifecycle_handler(id, pod, container, handler);
            match tokio::time::timeout(bound, hook).await {
                Ok(Ok(())) => {}
                Ok(Err(message)) => {
                    tracing::info!(container = %info.name, %message, "PreStop hook failed")
                }
                Err(_) => {
                    tracing::info!(container = %info.name, grace, "PreStop hook not completed in grace period")
                }
            }
            grace -= i64::try_from(started.elapsed().as_secs()).unwrap_or(i64::MAX);
        }
        let grace = grace.max(MINIMUM_GRACE_PERIOD_SECONDS);
        match self.client().stop_container(id, grace).await {
            // The same rule as the pod's kill: today's kubelet takes a container the runtime no
            // longer has as stopped, the seed does not.
            Err(err) if self.profile.forgives(err.code) => Ok(()),
            outcome => outcome,
        }
    }

    /// Stops (with no grace period, so no PreStop hook) an instance that has not exited, then
    /// removes it, for a restart of all containers. Ports the loop over `ContainersToReset` in
    /// today's SyncPod.
    async fn reset_container(
        &self,
        pod: &k8s::Pod,
        reset: &ContainerToReset,
    ) -> Result<(), (&'static str, String)> {
        if reset.kill {
            let info = ContainerToKill {
                name: reset.name.clone(),
                kind: reset.kind,
                reason: KillReason::Unknown,
                message: format!(
                    "Container {} is stopped to restart all containers",
                    reset.name
                ),
            };
            self.kill_container(pod, &reset.id, &info, Some(0))
                .await
                .map_err(|err| (KILL_CONTAINER_ERROR, err.to_string()))?;
        }
        self.client()
            .remove_container(&reset.id)
            .await
            .map_err(|err| (REMOVE_CONTAINER_ERROR, err.to_string()))
    }

    /// Removes every instance of every init container (the sandbox is being recreated, so they
    /// run again); answers the ids removed. Failures are logged only. Ports
    /// `purgeInitContainers`.
    async fn purge_init_containers(&self, pod: &k8s::Pod, status: &PodStatus) -> BTreeSet<String> {
        let mut removed = BTreeSet::new();
        for name in init_container_names(pod) {
            for found in status.container_statuses.iter().filter(|s| s.name == name) {
                self.remove_init_container(&found.id.id, &name, &mut removed)
                    .await;
            }
        }
        removed
    }

    /// Removes all but the newest exited (or unknown) instance of each init container. Unlike
    /// the kubelet, instances the purge already removed are not asked for again. Ports
    /// `pruneInitContainersBeforeStart`.
    async fn prune_init_containers_before_start(
        &self,
        pod: &k8s::Pod,
        status: &PodStatus,
        already_removed: &BTreeSet<String>,
    ) {
        let mut removed = already_removed.clone();
        for name in init_container_names(pod) {
            let finished = status.container_statuses.iter().filter(|s| {
                s.name == name
                    && matches!(s.state, ContainerState::Exited | ContainerState::Unknown)
            });
            // Statuses are newest first: the first one is kept.
            for found in finished.skip(1) {
                if !removed.contains(&found.id.id) {
                    self.remove_init_container(&found.id.id, &name, &mut removed)
                        .await;
                }
            }
        }
    }

    async fn remove_init_container(&self, id: &str, name: &str, removed: &mut BTreeSet<String>) {
        match self.client().remove_container(id).await {
            Ok(()) => {
                removed.insert(id.to_owned());
            }
            Err(err) => {
                tracing::warn!(container = name, id, %err, "failed to remove init container")
            }
        }
    }
}

/// The names of the pod's init containers, in spec order, each once.
fn init_container_names(pod: &k8s::Pod) -> Vec<String> {
    let mut seen = BTreeSet::new();
    pod.spec
        .iter()
        .flat_map(|s| s.init_containers.iter().flatten())
        .filter(|c| seen.insert(c.name.clone()))
        .map(|c| c.name.clone())
        .collect()
}

/// Checks the crash-loop back-off of a container about to start: with an exited instance, a
/// message when it is still backing off since that instance finished; otherwise the back-off
/// is advanced and `None` lets the start go on. Ports `doBackOff` (kuberuntime_container.go).
fn do_back_off(
    pod: &k8s::Pod,
    container: &k8s::Container,
    hash: u64,
    status: &PodStatus,
    backoff: &mut Backoff,
) -> Option<String> {
    let exited = status
        .container_statuses
        .iter()
        .find(|s| s.name == container.name && s.state == ContainerState::Exited)?;
    let key = stable_key(pod, &container.name, hash);
    if backoff.is_in_back_off_since(&key, exited.finished_at) {
        return Some(format!(
            "back-off {} restarting failed container={} pod={}",
            go_duration(backoff.get(&key)),
            container.name,
            format_pod(pod)
        ));
    }
    backoff.next(&key, exited.finished_at);
    None
}

/// A whole-second duration as Go prints it (`10s`, `1m20s`, `5m0s`, `1h0m0s`).
fn go_duration(duration: std::time::Duration) -> String {
    let total = duration.as_secs();
    let (hours, minutes, seconds) = (total / 3600, total / 60 % 60, total % 60);
    if hours > 0 {
        format!("{hours}h{minutes}m{seconds}s")
    } else if minutes > 0 {
        format!("{minutes}m{seconds}s")
    } else {
        format!("{seconds}s")
    }
}

/// The StopContainer timeout of a container SyncPod kills when it has no PreStop hook: the
/// grace period, never under 2 s (the clamp of today's `killContainer`).
#[cfg(test)]
fn kill_grace_period(pod: &k8s::Pod, info: &ContainerToKill) -> i64 {
    termination_grace_period(pod, info).max(MINIMUM_GRACE_PERIOD_SECONDS)
}

/// The container of the pod's spec called `name`, regular or init.
fn container_spec<'a>(pod: &'a k8s::Pod, name: &str) -> Option<&'a k8s::Container> {
    pod.spec.as_ref().and_then(|s| {
        s.containers
            .iter()
            .chain(s.init_containers.iter().flatten())
            .find(|c| c.name == name)
    })
}

/// A killed container's grace period, before any PreStop hook spends of it: the pod's deletion
/// grace period, else (for a failed probe that sets its own) the probe's, else the termination
/// grace period, else 2 s. Ports `setTerminationGracePeriod`.
fn termination_grace_period(pod: &k8s::Pod, info: &ContainerToKill) -> i64 {
    let spec = pod.spec.as_ref();
    let container = container_spec(pod, &info.name);
    let probe = container.and_then(|c| match info.reason {
        KillReason::StartupProbe => c.startup_probe.as_ref(),
        KillReason::LivenessProbe => c.liveness_probe.as_ref(),
        _ => None,
    });
    match (
        pod.metadata.deletion_grace_period_seconds,
        spec.and_then(|s| s.termination_grace_period_seconds),
    ) {
        (Some(deletion), _) => deletion,
        (None, Some(termination)) => probe
            .and_then(|p| p.termination_grace_period_seconds)
            .unwrap_or(termination),
        (None, None) => MINIMUM_GRACE_PERIOD_SECONDS,
    }
}

/// The restart count a container's log files imply: one past the highest `<n>.log` (or
/// `<n>.log.<suffix>`) in its log directory, 0 without any. Ports `calcRestartCountByLogDir`.
fn restart_count_by_log_dir(dir: &Path) -> u32 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| !t.is_dir()))
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let (number, rest) = name.split_once(".log")?;
            let valid = !number.is_empty()
                && number.chars().all(|c| c.is_ascii_digit())
                && (rest.is_empty() || rest.starts_with('.'));
            valid.then(|| number.parse::<u32>().ok()).flatten()
        })
        .map(|count| count.saturating_add(1))
        .max()
        .unwrap_or(0)
}

/// Makes a directory and its parents, 0755 as the kubelet does.
fn make_directory(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(path)
}

/// The sandbox's IPs, primary first. Ports `determinePodSandboxIPs`.
fn sandbox_ips(status: &v1::PodSandboxStatus) -> Vec<String> {
    status
        .network
        .iter()
        .flat_map(|n| {
            std::iter::once(n.ip.clone()).chain(n.additional_ips.iter().map(|ip| ip.ip.clone()))
        })
        .filter(|ip| !ip.is_empty())
        .collect()
}

/// The pod as the seed's `kill_pod` reads it.
fn kill_spec(pod: &k8s::Pod) -> PodSpec {
    let (name, namespace, uid) = identity(pod);
    let spec = pod.spec.as_ref();
    let specs = |containers: &mut dyn Iterator<Item = (&String, &Option<String>)>| {
        containers
            .map(|(name, image)| ContainerSpec {
                name: name.clone(),
                image: image.clone().unwrap_or_default(),
            })
            .collect()
    };
    PodSpec {
        uid: uid.to_owned(),
        name: name.to_owned(),
        namespace: namespace.to_owned(),
        host_network: is_host_network(pod),
        termination_grace_period_seconds: spec.and_then(|s| s.termination_grace_period_seconds),
        deletion_grace_period_seconds: pod.metadata.deletion_grace_period_seconds,
        containers: specs(
            &mut spec
                .iter()
                .flat_map(|s| s.containers.iter())
                .map(|c| (&c.name, &c.image)),
        ),
        init_containers: specs(
            &mut spec
                .iter()
                .flat_map(|s| s.init_containers.iter().flatten())
                .map(|c| (&c.name, &c.image)),
        ),
        ephemeral_containers: specs(
            &mut spec
                .iter()
                .flat_map(|s| s.ephemeral_containers.iter().flatten())
                .map(|c| (&c.name, &c.image)),
        ),
        restart_policy: spec.and_then(|s| s.restart_policy.clone()),
        host_pid: spec.and_then(|s| s.host_pid).unwrap_or(false),
        host_ipc: spec.and_then(|s| s.host_ipc).unwrap_or(false),
    }
}

/// The running part of a pod's status: its running containers and all its sandboxes. Ports
/// `ConvertPodStatusToRunningPod`.
fn running_pod(runtime_name: &str, status: &PodStatus) -> Pod {
    Pod {
        id: status.id.clone(),
        name: status.name.clone(),
        namespace: status.namespace.clone(),
        containers: status
            .container_statuses
            .iter()
            .filter(|s| s.state == ContainerState::Running)
            .map(|s| Container {
                id: s.id.clone(),
                name: s.name.clone(),
                image: s.image.clone(),
                hash: s.hash,
                state: s.state,
            })
            .collect(),
        sandboxes: status
            .sandbox_statuses
            .iter()
            .map(|s| Container {
                id: ContainerId {
                    r#type: runtime_name.to_owned(),
                    id: s.id.clone(),
                },
                state: ContainerState::from_cri_sandbox(s.state),
                ..Default::default()
            })
            .collect(),
        // Newest sandbox first in a status; GetPods' pod time is not read by a kill.
        created_at: status.sandbox_statuses.first().map_or(0, |s| s.created_at),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::seconds(10, "10s")]
    #[case::minute_and_seconds(80, "1m20s")]
    #[case::whole_minutes(300, "5m0s")]
    #[case::hours(3_600, "1h0m0s")]
    fn durations_print_as_go_does(#[case] seconds: u64, #[case] expected: &str) {
        assert_eq!(
            go_duration(std::time::Duration::from_secs(seconds)),
            expected
        );
    }

    fn pod(yaml: &str) -> k8s::Pod {
        serde_saphyr::from_str(yaml).unwrap()
    }

    fn to_kill(name: &str, reason: KillReason) -> ContainerToKill {
        ContainerToKill {
            name: name.to_owned(),
            kind: super::super::ContainerKind::Regular,
            reason,
            message: String::new(),
        }
    }

    const PROBED: &str = "
metadata: {name: p}
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - name: app
    livenessProbe: {exec: {command: ['true']}, terminationGracePeriodSeconds: 5}
";

    #[rstest]
    #[case::termination(PROBED, KillReason::Unknown, 30)]
    #[case::liveness_probe_sets_its_own(PROBED, KillReason::LivenessProbe, 5)]
    #[case::startup_probe_unset_falls_back(PROBED, KillReason::StartupProbe, 30)]
    #[case::deletion_wins("{metadata: {name: p, deletionGracePeriodSeconds: 0}, spec: {terminationGracePeriodSeconds: 30, containers: [{name: app}]}}", KillReason::LivenessProbe, 2)]
    #[case::nothing_set(
        "{metadata: {name: p}, spec: {containers: [{name: app}]}}",
        KillReason::Unknown,
        2
    )]
    fn the_kill_grace_period_follows_todays_kubelet(
        #[case] yaml: &str,
        #[case] reason: KillReason,
        #[case] expected: i64,
    ) {
        assert_eq!(
            kill_grace_period(&pod(yaml), &to_kill("app", reason)),
            expected
        );
    }

    /// One container `foo` with the probes' grace periods given, and the pod's.
    fn graced(pod_grace: Option<i64>, startup: Option<i64>, liveness: Option<i64>) -> k8s::Pod {
        let probe = |grace: Option<i64>| {
            grace.map(|grace| k8s::Probe {
                termination_grace_period_seconds: Some(grace),
                ..Default::default()
            })
        };
        k8s::Pod {
            spec: Some(k8s::PodSpec {
                containers: vec![k8s::Container {
                    name: "foo".to_owned(),
                    startup_probe: probe(startup),
                    liveness_probe: probe(liveness),
                    ..Default::default()
                }],
                termination_grace_period_seconds: pod_grace,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    // TestKillContainerGracePeriod (kuberuntime_container_test.go), row by row: short 10 s,
    // medium 30 s, long 60 s.
    #[rstest]
    #[case::default_termination_grace_period(graced(None, None, None), KillReason::Unknown, 2)]
    #[case::use_pod_termination_grace_period(graced(Some(60), None, None), KillReason::Unknown, 60)]
    #[case::liveness_probe_overrides_pod_termination_grace_period(
        graced(Some(60), None, Some(10)),
        KillReason::LivenessProbe,
        10
    )]
    #[case::startup_probe_overrides_pod_termination_grace_period(
        graced(Some(60), Some(10), None),
        KillReason::StartupProbe,
        10
    )]
    #[case::startup_probe_overrides_pod_termination_grace_period_probe_period_pod_period(
        graced(Some(10), Some(60), None),
        KillReason::StartupProbe,
        60
    )]
    #[case::liveness_probe_overrides_pod_termination_grace_period_probe_period_pod_period(
        graced(Some(10), None, Some(60)),
        KillReason::LivenessProbe,
        60
    )]
    #[case::non_liveness_probe_failure_use_pod_termination_grace_period(
        graced(Some(60), None, Some(10)),
        KillReason::Unknown,
        60
    )]
    #[case::non_startup_probe_failure_use_pod_termination_grace_period(
        graced(Some(60), Some(10), None),
        KillReason::Unknown,
        60
    )]
    #[case::all_three_grace_periods_set_use_pod_termination_grace_period(
        graced(Some(60), Some(10), Some(30)),
        KillReason::Unknown,
        60
    )]
    #[case::all_three_grace_periods_set_use_startup_termination_grace_period(
        graced(Some(60), Some(10), Some(30)),
        KillReason::StartupProbe,
        10
    )]
    #[case::all_three_grace_periods_set_use_liveness_termination_grace_period(
        graced(Some(60), Some(10), Some(30)),
        KillReason::LivenessProbe,
        30
    )]
    fn kill_grace_period_matches_test_kill_container_grace_period(
        #[case] pod: k8s::Pod,
        #[case] reason: KillReason,
        #[case] expected: i64,
    ) {
        assert_eq!(kill_grace_period(&pod, &to_kill("foo", reason)), expected);
    }

    #[test]
    fn the_restart_count_is_one_past_the_highest_log_file() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(restart_count_by_log_dir(&dir.path().join("absent")), 0);
        assert_eq!(restart_count_by_log_dir(dir.path()), 0);
        for name in ["0.log", "3.log.20240101-000000", "7.logx", "x.log", "12"] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        std::fs::create_dir(dir.path().join("9.log")).unwrap();
        assert_eq!(restart_count_by_log_dir(dir.path()), 4);
    }

    /// TestRestartCountByLogDir (kuberuntime_container_test.go, v1.34): the log file names a
    /// container's log directory holds, and the restart count they imply.
    #[rstest]
    #[case::one_rotated_file(&["0.log.rotated-log"], 1)]
    #[case::one_file(&["0.log"], 1)]
    #[case::three_files(&["0.log", "1.log", "2.log"], 3)]
    #[case::a_rotated_file_among_them(&["0.log.rotated", "1.log", "2.log"], 3)]
    #[case::rotated_files_only(&["5.log.rotated", "6.log.rotated"], 7)]
    #[case::rotated_and_current(&["5.log.rotated", "6.log", "7.log"], 8)]
    #[case::no_files(&[], 0)]
    #[case::no_restart_count_files(&["a.log.rotated", "b.log.rotated", "12log"], 0)]
    #[case::a_doubled_log_suffix(&["145.log.log.rotated"], 146)]
    #[case::a_count_past_any_integer(&["92233720368547758089223372036854775808.log.rotated"], 0)]
    #[case::an_overflowing_count_among_valid_ones(
        &["9223372036854775808.log.rotated", "23.log", "23a.log", "1aaa.log.rotated", "2.log", "3.log.rotated"],
        24
    )]
    #[case::a_prefix_before_the_count(&["rotated.23.log"], 0)]
    #[case::letters_before_the_count(&["mylog42.log"], 0)]
    #[case::a_negative_count(&["-42.log"], 0)]
    #[case::rotated_twice(&["6.log", "6.log.rotated", "6.log.rotated.rotated"], 7)]
    fn restart_count_by_log_dir_matches_test_restart_count_by_log_dir(
        #[case] files: &[&str],
        #[case] expected: u32,
    ) {
        let dir = tempfile::tempdir().unwrap();
        for name in files {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        assert_eq!(restart_count_by_log_dir(dir.path()), expected);
    }

    #[test]
    fn the_running_pod_keeps_running_containers_and_every_sandbox() {
        let status = PodStatus {
            id: "u".to_owned(),
            sandbox_statuses: vec![
                v1::PodSandboxStatus {
                    id: "s2".to_owned(),
                    state: v1::PodSandboxState::SandboxReady.into(),
                    ..Default::default()
                },
                v1::PodSandboxStatus {
                    id: "s1".to_owned(),
                    state: v1::PodSandboxState::SandboxNotready.into(),
                    ..Default::default()
                },
            ],
            container_statuses: vec![
                crate::manager::ContainerStatus {
                    name: "up".to_owned(),
                    state: ContainerState::Running,
                    ..Default::default()
                },
                crate::manager::ContainerStatus {
                    name: "down".to_owned(),
                    state: ContainerState::Exited,
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let running = running_pod("mock", &status);
        let names: Vec<_> = running.containers.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["up"]);
        let sandboxes: Vec<_> = running
            .sandboxes
            .iter()
            .map(|s| (s.id.id.as_str(), s.state))
            .collect();
        assert_eq!(
            sandboxes,
            [
                ("s2", ContainerState::Running),
                ("s1", ContainerState::Exited)
            ]
        );
    }
}
