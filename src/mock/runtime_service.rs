//! `runtime.v1.RuntimeService` on the mock: sandbox and container lifecycles with containerd
//! 1.6's answers where CRI leaves room (see the containerd facts), and every RPC past them
//! (the streaming lists, pod resources, checkpoints) by the contract alone.

use sha2::{Digest, Sha256};
use tonic::{Request, Response, Status};

use super::error::RpcError;
use super::events::{self, Kind};
use super::image_service::find_image;
use super::index::{Filter, Key};
use super::kubelet_wire;
use super::list_stream::{self, ListStream};
use super::process::{self, Identity};
use super::state::{container_name, is_host_network, sandbox_name, selector, Process};
use super::{
    metrics, mounts, oom, profile, runtime_config, stats, status_info, streaming, Defect, Freedom,
    Inner, MockRuntime,
};
use crate::cri::v1;

use v1::ContainerState::{ContainerCreated, ContainerExited, ContainerRunning, ContainerUnknown};
use v1::PodSandboxState::{SandboxNotready, SandboxReady};

/// Exit code of the modelled process when killed (128 + SIGKILL).
const KILLED_EXIT_CODE: i32 = 137;

/// The label the other-runtime profile adds to every sandbox, as CRI-O does to name its
/// infra container.
const ADDED_SANDBOX_LABEL: (&str, &str) = ("io.kubernetes.container.name", "POD");

/// The label the other-runtime profile adds to every container.
const ADDED_CONTAINER_LABEL: (&str, &str) = ("io.cri-harness.mock/profile", "other-runtime");

/// Serves RuntimeService from a mock's shared state.
#[derive(Debug, Clone)]
pub(crate) struct MockRuntimeService(pub(crate) MockRuntime);

fn version(
    inner: &mut Inner,
    _request: v1::VersionRequest,
) -> Result<v1::VersionResponse, RpcError> {
    // containerd answers the same whatever version the client asks about.
    Ok(inner.version.clone())
}

fn status(_inner: &mut Inner, request: v1::StatusRequest) -> Result<v1::StatusResponse, RpcError> {
    let ready = |kind: &str| v1::RuntimeCondition {
        r#type: kind.to_owned(),
        status: true,
        reason: String::new(),
        message: String::new(),
    };
    let info = if request.verbose {
        status_info::info()
    } else {
        Default::default()
    };
    Ok(v1::StatusResponse {
        status: Some(v1::RuntimeStatus {
            conditions: vec![ready("RuntimeReady"), ready("NetworkReady")],
        }),
        info,
        runtime_handlers: HANDLERS
            .iter()
            .map(|&(name, features)| v1::RuntimeHandler {
                name: name.to_owned(),
                features: Some(features),
            })
            .collect(),
        features: Some(v1::RuntimeFeatures {
            supplemental_groups_policy: true,
            user_namespaces_host_network: false,
        }),
    })
}

/// The runtime handlers the mock reports, with their features: the default one has every
/// feature CRI lets a handler report; `featureless` has none, so a run with
/// `--runtime-handler featureless` shows the cases that need one skip.
pub(crate) const HANDLERS: &[(&str, v1::RuntimeHandlerFeatures)] = &[
    (
        "",
        v1::RuntimeHandlerFeatures {
            recursive_read_only_mounts: true,
            user_namespaces: true,
        },
    ),
    (
        "featureless",
        v1::RuntimeHandlerFeatures {
            recursive_read_only_mounts: false,
            user_namespaces: false,
        },
    ),
];

/// The network namespace path of a pod-network sandbox, stable per id (containerd keeps naming
/// it after StopPodSandbox closed it).
fn netns_path(status: &v1::PodSandboxStatus) -> String {
    let digest = hex::encode(Sha256::digest(format!("netns-{}", status.id).as_bytes()));
    // Shaped like the UUID-named namespaces containerd's CNI setup creates, under a directory
    // that exists on no host, so nothing mistakes it for a real namespace file.
    format!(
        "/run/cri-harness-mock/netns/cni-{}-{}-{}-{}-{}",
        &digest[0..8],
        &digest[8..12],
        &digest[12..16],
        &digest[16..20],
        &digest[20..32]
    )
}

fn run_pod_sandbox(
    inner: &mut Inner,
    request: v1::RunPodSandboxRequest,
) -> Result<v1::RunPodSandboxResponse, RpcError> {
    const METHOD: &str = "RunPodSandbox";
    let config = request.config.ok_or(RpcError::MissingField {
        method: METHOD,
        field: "config",
    })?;
    if let Some(kubelet) = inner.kubelet_wire {
        kubelet_wire::check_labels("RunPodSandbox", kubelet, &config.labels)?;
    }
    if inner.profile.kubelet_requests {
        profile::check_sandbox(
            &config,
            MockRuntime::takes(inner, Freedom::CgroupDriverSystemd),
        )?;
    }
    let metadata = config.metadata.ok_or(RpcError::MissingField {
        method: METHOD,
        field: "config.metadata",
    })?;
    let name = sandbox_name(&metadata);
    let mut labels = config.labels;
    if MockRuntime::takes(inner, Freedom::SandboxLabelsAdded) {
        let (key, value) = ADDED_SANDBOX_LABEL;
        labels.insert(key.to_owned(), value.to_owned());
    }
    let options = config
        .linux
        .and_then(|l| l.security_context)
        .and_then(|s| s.namespace_options)
        .unwrap_or_default();
    process::check_userns(inner, &options)?;
    let state = &mut inner.state;
    let id = state.mint_sandbox_id();
    state.reserve_sandbox_name(&name, &id)?;
    let ip = if options.network == v1::NamespaceMode::Node as i32 {
        String::new()
    } else {
        state.mint_pod_ip()
    };
    let status = v1::PodSandboxStatus {
        id: id.clone(),
        metadata: Some(metadata),
        state: SandboxReady as i32,
        created_at: inner.clock.now(),
        network: Some(v1::PodSandboxNetworkStatus {
            ip,
            additional_ips: Vec::new(),
        }),
        linux: Some(v1::LinuxPodSandboxStatus {
            namespaces: Some(v1::Namespace {
                options: Some(options),
            }),
        }),
        labels,
        annotations: config.annotations,
        runtime_handler: request.runtime_handler,
    };
    // The ports PortForward finds open: what the pod declares, as a pod's servers would.
    let ports = config
        .port_mappings
        .iter()
        .filter_map(|mapping| u16::try_from(mapping.container_port).ok())
        .collect();
    let pod = process::PodFiles::of(&config.hostname, config.dns_config.as_ref());
    let key = inner.state.insert_sandbox(status, Some(name));
    inner.state.sandboxes.update(key, |sandbox| {
        sandbox.ports = ports;
        sandbox.pod = pod;
    });
    // The mock's sandbox is made and started in one step: both transitions are reported.
    events::emit(inner, &id, &id, Kind::ContainerCreatedEvent, None);
    events::emit(inner, &id, &id, Kind::ContainerStartedEvent, None);
    Ok(v1::RunPodSandboxResponse { pod_sandbox_id: id })
}

/// Ends a running (or unknown-state) container's process: a grace period lets the modelled
/// test process exit 0 on SIGTERM; none means SIGKILL at once.
fn stop_process(status: &mut v1::ContainerStatus, now: i64, graceful: bool) {
    stop_process_as(status, now, graceful, false);
}

/// [`stop_process`], or, with `created_exits`, a container that never started ends too (exit
/// code 0: it ran nothing), as a runtime that reports it EXITED does.
fn stop_process_as(
    status: &mut v1::ContainerStatus,
    now: i64,
    graceful: bool,
    created_exits: bool,
) {
    if created_exits && status.state == ContainerCreated as i32 {
        status.state = ContainerExited as i32;
        status.finished_at = now;
        status.exit_code = 0;
        status.reason = "Completed".to_owned();
        return;
    }
    if status.state != ContainerRunning as i32 && status.state != ContainerUnknown as i32 {
        return;
    }
    status.state = ContainerExited as i32;
    status.finished_at = now;
    (status.exit_code, status.reason) = if graceful {
        (0, "Completed".to_owned())
    } else {
        (KILLED_EXIT_CODE, "Error".to_owned())
    };
}

/// Stops a sandbox: kills its containers and closes its network (the IP goes).
fn stop_sandbox(inner: &mut Inner, key: Key) {
    let now = inner.clock.now();
    let keeps_ip = MockRuntime::takes(inner, Freedom::StoppedSandboxKeepsIp);
    let signal_first = MockRuntime::takes(inner, Freedom::StopSignalFirst);
    let state = &mut inner.state;
    let Some((id, was_ready)) = state.sandboxes.update(key, |sandbox| {
        let status = &mut sandbox.status;
        let was_ready = status.state == SandboxReady as i32;
        status.state = SandboxNotready as i32;
        if let Some(network) = status.network.as_mut().filter(|_| !keeps_ip) {
            network.ip.clear();
            network.additional_ips.clear();
        }
        (status.id.clone(), was_ready)
    }) else {
        return;
    };
    let members: Vec<Key> = state.containers.in_group(&id).map(|(key, _)| key).collect();
    let mut stopped = Vec::new();
    for member in members {
        let ended = state.containers.update(member, |c| {
            let before = c.status.state;
            // Forcibly terminated, as StopContainer at timeout 0 is: see `stop_container`.
            let graceful = signal_first && process::traps_term(&c.process.argv);
            stop_process(&mut c.status, now, graceful);
            (before != c.status.state).then(|| c.status.id.clone())
        });
        stopped.extend(ended.flatten());
    }
    for container in stopped {
        events::emit(inner, &container, &id, Kind::ContainerStoppedEvent, None);
    }
    if was_ready {
        events::emit(inner, &id, &id, Kind::ContainerStoppedEvent, None);
    }
}

fn stop_pod_sandbox(
    inner: &mut Inner,
    request: v1::StopPodSandboxRequest,
) -> Result<v1::StopPodSandboxResponse, RpcError> {
    // The contract makes the stop idempotent: an id that names nothing (any more) has nothing
    // left to release, so the stop succeeds (containerd 1.6.20 answers NotFound, a bug that
    // 1.7 fixed).
    match inner.state.find_sandbox(&request.pod_sandbox_id) {
        Ok(key) => {
            let stays_ready = MockRuntime::has(inner, Defect::StoppedHostNetworkSandboxStaysReady)
                && is_host_network(&inner.state.sandboxes[key].status);
            stop_sandbox(inner, key);
            if stays_ready {
                inner.state.sandboxes.update(key, |sandbox| {
                    sandbox.status.state = SandboxReady as i32;
                });
            }
        }
        Err(RpcError::SandboxNotFound { .. }) => {}
        Err(err) => return Err(err),
    }
    Ok(v1::StopPodSandboxResponse {})
}

fn remove_pod_sandbox(
    inner: &mut Inner,
    request: v1::RemovePodSandboxRequest,
) -> Result<v1::RemovePodSandboxResponse, RpcError> {
    match inner.state.find_sandbox(&request.pod_sandbox_id) {
        Ok(key) => {
            let id = inner.state.sandboxes[key].status.id.clone();
            inner.transitions.check_sandbox_removal(
                &id,
                inner
                    .state
                    .containers
                    .in_group(&id)
                    .map(|(_, c)| c.status.id.as_str()),
            )?;
            stop_sandbox(inner, key);
            let last = inner.state.sandboxes[key].status.clone();
            let members: Vec<String> = inner
                .state
                .containers
                .in_group(&last.id)
                .map(|(_, c)| c.status.id.clone())
                .collect();
            inner.state.remove_sandbox(key);
            // Its containers go first, then the sandbox; the last status stands in for the
            // sandbox the events' pod status would name.
            for container in members {
                events::emit(
                    inner,
                    &container,
                    &last.id,
                    Kind::ContainerDeletedEvent,
                    Some(&last),
                );
            }
            events::emit(
                inner,
                &last.id,
                &last.id,
                Kind::ContainerDeletedEvent,
                Some(&last),
            );
        }
        // Removing what is already gone succeeds: the contract makes removal idempotent.
        Err(RpcError::SandboxNotFound { .. }) => {}
        Err(err) => return Err(err),
    }
    Ok(v1::RemovePodSandboxResponse {})
}

fn pod_sandbox_status(
    inner: &mut Inner,
    request: v1::PodSandboxStatusRequest,
) -> Result<v1::PodSandboxStatusResponse, RpcError> {
    let key = inner.state.find_sandbox(&request.pod_sandbox_id)?;
    let status = inner.state.sandboxes[key].status.clone();
    let mut info = std::collections::BTreeMap::new();
    if request.verbose {
        // A small subset of containerd's verbose info, in its shape: the netns path sits in the
        // OCI runtime spec (kept after stop, as containerd does) and `netNamespaceClosed` says
        // whether it was released. Host-network sandboxes have no network namespace to close.
        let ready = status.state == SandboxReady as i32;
        let host_network = is_host_network(&status);
        let mut namespaces = vec![
            serde_json::json!({"type": "pid"}),
            serde_json::json!({"type": "ipc"}),
            serde_json::json!({"type": "mount"}),
        ];
        // A sandbox without Linux status (as the 2016 kubelet's fakes made them) has no
        // network namespace to name.
        if !host_network && status.linux.is_some() {
            namespaces.push(serde_json::json!({"type": "uts"}));
            namespaces.push(serde_json::json!({"type": "network", "path": netns_path(&status)}));
        }
        let verbose = serde_json::json!({
            "netNamespaceClosed": !ready && !host_network,
            "processStatus": if ready { "running" } else { "deleted" },
            "runtimeHandler": status.runtime_handler,
            "runtimeSpec": {"linux": {"namespaces": namespaces}},
        });
        info.insert("info".to_owned(), verbose.to_string());
    }
    Ok(v1::PodSandboxStatusResponse {
        status: Some(status),
        info,
        ..Default::default()
    })
}

fn list_pod_sandbox(
    inner: &mut Inner,
    request: v1::ListPodSandboxRequest,
) -> Result<v1::ListPodSandboxResponse, RpcError> {
    let filter = request.filter.unwrap_or_default();
    let drops_state = MockRuntime::has(inner, Defect::ListSandboxDropsStateFilter);
    let newest_first = MockRuntime::takes(inner, Freedom::ListsNewestFirst);
    let state = &inner.state;
    let wanted = Filter {
        id: (!filter.id.is_empty()).then(|| state.sandbox_filter_id(&filter.id)),
        group: None,
        state: filter
            .state
            .as_ref()
            .map(|f| f.state)
            .filter(|_| !drops_state),
        labels: selector(&filter.label_selector),
    };
    let mut items: Vec<v1::PodSandbox> = state
        .sandboxes
        .select(wanted)
        .map(|(_, s)| &s.status)
        .map(|s| v1::PodSandbox {
            id: s.id.clone(),
            metadata: s.metadata.clone(),
            state: s.state,
            created_at: s.created_at,
            labels: s.labels.clone(),
            annotations: s.annotations.clone(),
            runtime_handler: s.runtime_handler.clone(),
        })
        .collect();
    if newest_first {
        items.reverse();
    }
    Ok(v1::ListPodSandboxResponse { items })
}

fn create_container(
    inner: &mut Inner,
    request: v1::CreateContainerRequest,
) -> Result<v1::CreateContainerResponse, RpcError> {
    const METHOD: &str = "CreateContainer";
    if let Some((kubelet, config)) = inner.kubelet_wire.zip(request.config.as_ref()) {
        kubelet_wire::check_labels("CreateContainer", kubelet, &config.labels)?;
    }
    if inner.profile.kubelet_requests {
        profile::check_container(&request)?;
    }
    let config = request.config.ok_or(RpcError::MissingField {
        method: METHOD,
        field: "config",
    })?;
    let metadata = config.metadata.ok_or(RpcError::MissingField {
        method: METHOD,
        field: "config.metadata",
    })?;
    let image_spec = config.image.unwrap_or_default();
    if image_spec.image.is_empty() {
        return Err(RpcError::MissingField {
            method: METHOD,
            field: "config.image.image",
        });
    }
    let state = &mut inner.state;
    let sandbox = &state.sandboxes[state.find_sandbox(&request.pod_sandbox_id)?];
    let pod = sandbox.pod.clone();
    let sandbox = &sandbox.status;
    if sandbox.state != SandboxReady as i32 {
        return Err(RpcError::SandboxNotRunning {
            id: sandbox.id.clone(),
        });
    }
    let pod_sandbox_id = sandbox.id.clone();
    // The process joins its sandbox's namespaces, its user namespace among them.
    let sandbox_namespaces = sandbox
        .linux
        .as_ref()
        .and_then(|l| l.namespaces.as_ref())
        .and_then(|n| n.options.clone());
    // Like containerd, the name comes from the sandbox config the caller sends along.
    let sandbox_metadata = request
        .sandbox_config
        .as_ref()
        .and_then(|c| c.metadata.clone())
        .or_else(|| sandbox.metadata.clone())
        .unwrap_or_default();
    let image = find_image(&state.images, &image_spec.image)
        .map(|index| state.images[index].clone())
        .ok_or_else(|| RpcError::ImageNotFound {
            image: image_spec.image.clone(),
        })?;
    // As containerd: a group alone names no user to run as.
    let security = config
        .linux
        .as_ref()
        .and_then(|l| l.security_context.as_ref());
    if let Some(security) = security {
        if let (Some(group), None, true) = (
            &security.run_as_group,
            &security.run_as_user,
            security.run_as_username.is_empty(),
        ) {
            if MockRuntime::takes(inner, Freedom::GroupWithoutUserInvalidArgument) {
                return Err(RpcError::GroupNeedsUser { group: group.value });
            }
            return Err(RpcError::GroupWithoutUser { group: group.value });
        }
    }
    let handler_rro = HANDLERS.iter().any(|(name, features)| {
        *name == sandbox.runtime_handler && features.recursive_read_only_mounts
    });
    let mounts = mounts::build(
        &config.mounts,
        &image,
        &state.images,
        handler_rro,
        |defect| inner.defects.contains(&defect),
    )?;
    let argv: Vec<String> = config.command.iter().chain(&config.args).cloned().collect();
    let identity = Identity::of(inner, security, sandbox_namespaces.as_ref(), &image)?
        .in_pod(pod, &argv, &image);
    let user = identity.container_user(inner);
    let state = &mut inner.state;
    let name = container_name(&metadata, &sandbox_metadata);
    let id = state.mint_container_id();
    state.reserve_container_name(&name, &id)?;
    let resources = config.linux.as_ref().and_then(|l| l.resources.clone());
    let memory_limit = resources.as_ref().map_or(0, |r| r.memory_limit_in_bytes);
    let log_directory = request
        .sandbox_config
        .map(|c| c.log_directory)
        .unwrap_or_default();
    let log_path = if log_directory.is_empty() || config.log_path.is_empty() {
        String::new()
    } else {
        format!(
            "{}/{}",
            log_directory.trim_end_matches('/'),
            config.log_path
        )
    };
    let status = v1::ContainerStatus {
        id: id.clone(),
        metadata: Some(metadata),
        state: ContainerCreated as i32,
        created_at: inner.clock.now(),
        image: Some(v1::ImageSpec {
            image: image.repo_tags.first().unwrap_or(&image.id).clone(),
            ..image_spec
        }),
        image_ref: image.id.clone(),
        image_id: if MockRuntime::has(inner, Defect::ContainerImageIdDiffers) {
            // The manifest digest in place of the image's id: a plausible wrong answer.
            image
                .repo_digests
                .first()
                .and_then(|d| d.split_once('@'))
                .map_or_else(|| image.id.clone(), |(_, digest)| digest.to_owned())
        } else {
            image.id
        },
        labels: {
            let mut labels = config.labels;
            if MockRuntime::takes(inner, Freedom::ContainerLabelsAdded) {
                let (key, value) = ADDED_CONTAINER_LABEL;
                labels.insert(key.to_owned(), value.to_owned());
            }
            labels
        },
        annotations: config.annotations,
        mounts: mounts.status,
        log_path,
        stop_signal: config.stop_signal,
        user: Some(user),
        // What it was created with, as a runtime reports the resources it applied.
        resources: resources.map(|linux| v1::ContainerResources {
            linux: Some(linux),
            windows: None,
        }),
        ..Default::default()
    };
    let process = Process {
        argv,
        stdin: config.stdin,
        tty: config.tty,
        identity,
    };
    let key =
        inner
            .state
            .insert_container(pod_sandbox_id.clone(), status, Some(name), memory_limit);
    inner.state.containers.update(key, |c| {
        c.process = process;
        c.mounts = mounts.table;
    });
    events::emit(
        inner,
        &id,
        &pod_sandbox_id,
        Kind::ContainerCreatedEvent,
        None,
    );
    Ok(v1::CreateContainerResponse { container_id: id })
}

fn state_name(state: i32) -> &'static str {
    v1::ContainerState::try_from(state).map_or("CONTAINER_UNKNOWN", |s| s.as_str_name())
}

fn start_container(
    inner: &mut Inner,
    request: v1::StartContainerRequest,
) -> Result<v1::StartContainerResponse, RpcError> {
    let now = inner.clock.now();
    let oom_as_error = MockRuntime::has(inner, Defect::OomReportedAsError);
    let unknown_code = MockRuntime::takes(inner, Freedom::StartUnknownUnknown);
    let state = &mut inner.state;
    let key = state
        .find_container(&request.container_id)
        .map_err(|err| match err {
            RpcError::ContainerNotFound { id } if unknown_code => RpcError::IdDoesNotExist {
                kind: "container",
                id,
            },
            other => other,
        })?;
    let container = &state.containers[key];
    if container.status.state != ContainerCreated as i32 {
        return Err(RpcError::ContainerInState {
            id: container.status.id.clone(),
            state: state_name(container.status.state),
        });
    }
    let sandbox = state
        .find_exact_sandbox(&container.pod_sandbox_id)
        .map(|i| &state.sandboxes[i].status)
        .ok_or_else(|| RpcError::SandboxNotFound {
            id: container.pod_sandbox_id.clone(),
        })?;
    if sandbox.state != SandboxReady as i32 {
        return Err(RpcError::SandboxStopped {
            container: container.status.id.clone(),
            sandbox: sandbox.id.clone(),
        });
    }
    let Some((id, sandbox_id, ended)) = state.containers.update(key, |c| {
        c.status.state = ContainerRunning as i32;
        c.status.started_at = now;
        // A process the mock models as ending at once (see `oom`) has ended by the next call.
        if let Some(mut ending) = oom::ending(&c.process.argv, c.memory_limit) {
            if oom_as_error && ending == oom::OOM_KILLED {
                ending = oom::Ending {
                    exit_code: 1,
                    reason: "Error",
                };
            }
            c.status.state = ContainerExited as i32;
            c.status.finished_at = now;
            c.status.exit_code = ending.exit_code;
            c.status.reason = ending.reason.to_owned();
        }
        let ended = c.status.state == ContainerExited as i32;
        (c.status.id.clone(), c.pod_sandbox_id.clone(), ended)
    }) else {
        return Ok(v1::StartContainerResponse {});
    };
    touch_log(&state.containers[key].status.log_path);
    events::emit(inner, &id, &sandbox_id, Kind::ContainerStartedEvent, None);
    if ended {
        events::emit(inner, &id, &sandbox_id, Kind::ContainerStoppedEvent, None);
    }
    Ok(v1::StartContainerResponse {})
}

/// Makes a started container's log file, empty, as a runtime opens it for the container's
/// output at its start: the kubelet counts a container's restarts from these files once the
/// runtime no longer has its earlier instances (`calcRestartCountByLogDir`). The mock writes no
/// output there. Best effort: a log directory the caller did not make (a property run's, which
/// names directories it never creates) leaves no file, as the mock does not fail a start on it.
fn touch_log(path: &str) {
    if path.is_empty() {
        return;
    }
    let _ = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path);
}

fn stop_container(
    inner: &mut Inner,
    request: v1::StopContainerRequest,
) -> Result<v1::StopContainerResponse, RpcError> {
    let now = inner.clock.now();
    // Idempotent by the contract, as StopPodSandbox: an unknown id is already stopped.
    let key = match inner.state.find_container(&request.container_id) {
        Ok(key) => key,
        Err(err @ RpcError::ContainerNotFound { .. })
            if MockRuntime::has(inner, Defect::StopUnknownContainerNotFound) =>
        {
            return Err(err)
        }
        Err(RpcError::ContainerNotFound { .. }) => return Ok(v1::StopContainerResponse {}),
        Err(err) => return Err(err),
    };
    let racy = MockRuntime::has(inner, Defect::RacyStopOfExitedContainer);
    let signal_first = MockRuntime::takes(inner, Freedom::StopSignalFirst);
    let created_exits = MockRuntime::takes(inner, Freedom::StopCreatedExits);
    // The mock does not wait out the grace period: the modelled process exits on SIGTERM. With
    // the stop signal sent first even without one, a process that traps it exits as it does
    // on a graceful stop; any other is PID 1 without a handler, which ignores it, so SIGKILL
    // ends it.
    let stopped = inner.state.containers.update(key, |c| {
        if racy && c.status.state == ContainerExited as i32 {
            return Err(RpcError::ProcessRefused {
                method: "StopContainer",
                reason: "the container's process has exited and its end is not yet recorded".into(),
            });
        }
        let before = c.status.state;
        let graceful =
            request.timeout > 0 || (signal_first && process::traps_term(&c.process.argv));
        stop_process_as(&mut c.status, now, graceful, created_exits);
        Ok((before != c.status.state).then(|| (c.status.id.clone(), c.pod_sandbox_id.clone())))
    });
    let stopped = stopped.transpose()?.flatten();
    if let Some((id, sandbox_id)) = stopped {
        events::emit(inner, &id, &sandbox_id, Kind::ContainerStoppedEvent, None);
    }
    Ok(v1::StopContainerResponse {})
}

fn remove_container(
    inner: &mut Inner,
    request: v1::RemoveContainerRequest,
) -> Result<v1::RemoveContainerResponse, RpcError> {
    match inner.state.find_container(&request.container_id) {
        Ok(key) => {
            let container = &inner.state.containers[key];
            let used = stats::cpu_nanos(container, inner.clock.now());
            let (id, sandbox_id) = (
                container.status.id.clone(),
                container.pod_sandbox_id.clone(),
            );
            inner.transitions.check_container_removal(&id)?;
            inner.state.remove_container(key, used);
            events::emit(inner, &id, &sandbox_id, Kind::ContainerDeletedEvent, None);
        }
        Err(RpcError::ContainerNotFound { .. }) => {}
        Err(err) => return Err(err),
    }
    Ok(v1::RemoveContainerResponse {})
}

fn container_status(
    inner: &mut Inner,
    request: v1::ContainerStatusRequest,
) -> Result<v1::ContainerStatusResponse, RpcError> {
    let key = inner.state.find_container(&request.container_id)?;
    let container = &inner.state.containers[key];
    let mut info = std::collections::BTreeMap::new();
    if request.verbose {
        let verbose = serde_json::json!({ "sandboxID": container.pod_sandbox_id });
        info.insert("info".to_owned(), verbose.to_string());
    }
    Ok(v1::ContainerStatusResponse {
        status: Some(container.status.clone()),
        info,
    })
}

fn list_containers(
    inner: &mut Inner,
    request: v1::ListContainersRequest,
) -> Result<v1::ListContainersResponse, RpcError> {
    let filter = request.filter.unwrap_or_default();
    let newest_first = MockRuntime::takes(inner, Freedom::ListsNewestFirst);
    let state = &inner.state;
    let wanted = Filter {
        id: (!filter.id.is_empty()).then(|| state.container_filter_id(&filter.id)),
        group: (!filter.pod_sandbox_id.is_empty())
            .then(|| state.container_sandbox_filter_id(&filter.pod_sandbox_id)),
        state: filter.state.as_ref().map(|f| f.state),
        labels: selector(&filter.label_selector),
    };
    let mut containers: Vec<v1::Container> = state
        .containers
        .select(wanted)
        .map(|(_, c)| c)
        .map(|c| v1::Container {
            id: c.status.id.clone(),
            pod_sandbox_id: c.pod_sandbox_id.clone(),
            metadata: c.status.metadata.clone(),
            image: c.status.image.clone(),
            image_ref: c.status.image_ref.clone(),
            state: c.status.state,
            created_at: c.status.created_at,
            labels: c.status.labels.clone(),
            annotations: c.status.annotations.clone(),
            image_id: c.status.image_id.clone(),
        })
        .collect();
    if newest_first {
        containers.reverse();
    }
    Ok(v1::ListContainersResponse { containers })
}

fn update_container_resources(
    inner: &mut Inner,
    request: v1::UpdateContainerResourcesRequest,
) -> Result<v1::UpdateContainerResourcesResponse, RpcError> {
    let key = inner.state.find_container_tersely(&request.container_id)?;
    let reported = !MockRuntime::has(inner, Defect::UpdatedResourcesNotReported);
    // containerd updates the spec in any state (a created container starts with the new
    // limits, an exited one keeps them unused); the mock keeps the memory limit its stats use
    // and reports the new resources in ContainerStatus.
    if let Some(resources) = request.linux {
        inner.state.containers.update(key, |c| {
            c.memory_limit = resources.memory_limit_in_bytes;
            if reported {
                c.status.resources = Some(v1::ContainerResources {
                    linux: Some(resources),
                    windows: None,
                });
            }
        });
    }
    Ok(v1::UpdateContainerResourcesResponse {})
}

fn reopen_container_log(
    inner: &mut Inner,
    request: v1::ReopenContainerLogRequest,
) -> Result<v1::ReopenContainerLogResponse, RpcError> {
    let key = inner.state.find_container(&request.container_id)?;
    let running = inner.state.containers[key].status.state == ContainerRunning as i32;
    if !running && !MockRuntime::takes(inner, Freedom::ReopenNotRunningSucceeds) {
        return Err(RpcError::ContainerNotRunning {
            id: inner.state.containers[key].status.id.clone(),
        });
    }
    // The mock writes no log, so there is nothing to reopen.
    Ok(v1::ReopenContainerLogResponse {})
}

fn checkpoint_container(
    inner: &mut Inner,
    request: v1::CheckpointContainerRequest,
) -> Result<v1::CheckpointContainerResponse, RpcError> {
    let key = inner.state.find_container(&request.container_id)?;
    let status = &inner.state.containers[key].status;
    if status.state != ContainerRunning as i32 {
        return Err(RpcError::ContainerNotRunning {
            id: status.id.clone(),
        });
    }
    if MockRuntime::has(inner, Defect::CheckpointArchiveMissing) {
        return Ok(v1::CheckpointContainerResponse {});
    }
    // The mock runs no process, so its checkpoint is a record of the container, archived
    // where the caller asked (on the caller's own host, as the mock serves there).
    let record = serde_json::json!({
        "checkpointedBy": "cri-harness mock",
        "container": request.container_id,
    })
    .to_string();
    write_checkpoint(&request.location, record.as_bytes()).map_err(|err| {
        RpcError::CheckpointWrite {
            location: request.location.clone(),
            problem: err.to_string(),
        }
    })?;
    Ok(v1::CheckpointContainerResponse {})
}

/// Writes a tar archive of one file, `checkpoint.json`, at `location`.
fn write_checkpoint(location: &str, record: &[u8]) -> std::io::Result<()> {
    let file = std::fs::File::create(location)?;
    let mut archive = tar::Builder::new(file);
    let mut header = tar::Header::new_gnu();
    header.set_size(record.len() as u64);
    header.set_mode(0o600);
    header.set_cksum();
    archive.append_data(&mut header, "checkpoint.json", record)?;
    archive.into_inner()?.sync_all()
}

fn update_pod_sandbox_resources(
    inner: &mut Inner,
    request: v1::UpdatePodSandboxResourcesRequest,
) -> Result<v1::UpdatePodSandboxResourcesResponse, RpcError> {
    let key = inner.state.find_sandbox(&request.pod_sandbox_id)?;
    // The kubelet has already resized the pod's cgroups; the runtime only learns the figures
    // (for its own use: a VM's size, an NRI plugin), and the mock has no use for them.
    if MockRuntime::has(inner, Defect::SandboxResourcesRefused) {
        return Err(RpcError::SandboxNotRunning {
            id: inner.state.sandboxes[key].status.id.clone(),
        });
    }
    Ok(v1::UpdatePodSandboxResourcesResponse {})
}

/// True for an IPv4 or IPv6 CIDR such as `10.244.0.0/24`, as Go's `net.ParseCIDR` accepts.
pub(crate) fn is_cidr(cidr: &str) -> bool {
    cidr.parse::<ipnet::IpNet>().is_ok()
}

fn update_runtime_config(
    _inner: &mut Inner,
    request: v1::UpdateRuntimeConfigRequest,
) -> Result<v1::UpdateRuntimeConfigResponse, RpcError> {
    let pod_cidr = request
        .runtime_config
        .and_then(|c| c.network_config)
        .map(|n| n.pod_cidr)
        .unwrap_or_default();
    // containerd checks the kubelet's pod CIDRs, then, with no CNI config template set (its
    // default), leaves the network config to whoever drops it in the conf dir.
    if !pod_cidr.is_empty() {
        if let Some(bad) = pod_cidr.split(',').map(str::trim).find(|c| !is_cidr(c)) {
            return Err(RpcError::InvalidPodCidr {
                cidr: bad.to_owned(),
            });
        }
    }
    Ok(v1::UpdateRuntimeConfigResponse {})
}

#[tonic::async_trait]
impl v1::runtime_service_server::RuntimeService for MockRuntimeService {
    async fn version(
        &self,
        request: Request<v1::VersionRequest>,
    ) -> Result<Response<v1::VersionResponse>, Status> {
        self.0.dispatch("Version", request, version).await
    }

    async fn run_pod_sandbox(
        &self,
        request: Request<v1::RunPodSandboxRequest>,
    ) -> Result<Response<v1::RunPodSandboxResponse>, Status> {
        self.0
            .dispatch("RunPodSandbox", request, run_pod_sandbox)
            .await
    }

    async fn stop_pod_sandbox(
        &self,
        request: Request<v1::StopPodSandboxRequest>,
    ) -> Result<Response<v1::StopPodSandboxResponse>, Status> {
        self.0
            .dispatch("StopPodSandbox", request, stop_pod_sandbox)
            .await
    }

    async fn remove_pod_sandbox(
        &self,
        request: Request<v1::RemovePodSandboxRequest>,
    ) -> Result<Response<v1::RemovePodSandboxResponse>, Status> {
        self.0
            .dispatch("RemovePodSandbox", request, remove_pod_sandbox)
            .await
    }

    async fn pod_sandbox_status(
        &self,
        request: Request<v1::PodSandboxStatusRequest>,
    ) -> Result<Response<v1::PodSandboxStatusResponse>, Status> {
        self.0
            .dispatch("PodSandboxStatus", request, pod_sandbox_status)
            .await
    }

    async fn list_pod_sandbox(
        &self,
        request: Request<v1::ListPodSandboxRequest>,
    ) -> Result<Response<v1::ListPodSandboxResponse>, Status> {
        self.0
            .dispatch("ListPodSandbox", request, list_pod_sandbox)
            .await
    }

    type StreamPodSandboxesStream = ListStream<v1::StreamPodSandboxesResponse>;

    async fn stream_pod_sandboxes(
        &self,
        request: Request<v1::StreamPodSandboxesRequest>,
    ) -> Result<Response<Self::StreamPodSandboxesStream>, Status> {
        self.0
            .dispatch("StreamPodSandboxes", request, |inner, r| {
                let items =
                    list_pod_sandbox(inner, v1::ListPodSandboxRequest { filter: r.filter })?.items;
                Ok(list_stream::stream(inner, items, |batch| {
                    v1::StreamPodSandboxesResponse {
                        pod_sandboxes: batch,
                    }
                }))
            })
            .await
    }

    async fn create_container(
        &self,
        request: Request<v1::CreateContainerRequest>,
    ) -> Result<Response<v1::CreateContainerResponse>, Status> {
        self.0
            .dispatch("CreateContainer", request, create_container)
            .await
    }

    async fn start_container(
        &self,
        request: Request<v1::StartContainerRequest>,
    ) -> Result<Response<v1::StartContainerResponse>, Status> {
        self.0
            .dispatch("StartContainer", request, start_container)
            .await
    }

    async fn stop_container(
        &self,
        request: Request<v1::StopContainerRequest>,
    ) -> Result<Response<v1::StopContainerResponse>, Status> {
        self.0
            .dispatch("StopContainer", request, stop_container)
            .await
    }

    async fn remove_container(
        &self,
        request: Request<v1::RemoveContainerRequest>,
    ) -> Result<Response<v1::RemoveContainerResponse>, Status> {
        self.0
            .dispatch("RemoveContainer", request, remove_container)
            .await
    }

    async fn list_containers(
        &self,
        request: Request<v1::ListContainersRequest>,
    ) -> Result<Response<v1::ListContainersResponse>, Status> {
        self.0
            .dispatch("ListContainers", request, list_containers)
            .await
    }

    type StreamContainersStream = ListStream<v1::StreamContainersResponse>;

    async fn stream_containers(
        &self,
        request: Request<v1::StreamContainersRequest>,
    ) -> Result<Response<Self::StreamContainersStream>, Status> {
        self.0
            .dispatch("StreamContainers", request, |inner, r| {
                let items = list_containers(inner, v1::ListContainersRequest { filter: r.filter })?
                    .containers;
                Ok(list_stream::stream(inner, items, |batch| {
                    v1::StreamContainersResponse { containers: batch }
                }))
            })
            .await
    }

    async fn container_status(
        &self,
        request: Request<v1::ContainerStatusRequest>,
    ) -> Result<Response<v1::ContainerStatusResponse>, Status> {
        self.0
            .dispatch("ContainerStatus", request, container_status)
            .await
    }

    async fn update_container_resources(
        &self,
        request: Request<v1::UpdateContainerResourcesRequest>,
    ) -> Result<Response<v1::UpdateContainerResourcesResponse>, Status> {
        self.0
            .dispatch(
                "UpdateContainerResources",
                request,
                update_container_resources,
            )
            .await
    }

    async fn reopen_container_log(
        &self,
        request: Request<v1::ReopenContainerLogRequest>,
    ) -> Result<Response<v1::ReopenContainerLogResponse>, Status> {
        self.0
            .dispatch("ReopenContainerLog", request, reopen_container_log)
            .await
    }

    async fn exec_sync(
        &self,
        request: Request<v1::ExecSyncRequest>,
    ) -> Result<Response<v1::ExecSyncResponse>, Status> {
        let (target, timeout) = self
            .0
            .dispatch("ExecSync", request, process::exec_target)
            .await?
            .into_inner();
        let answer = streaming::exec_sync(target, timeout).await?;
        Ok(Response::new(answer))
    }

    async fn exec(
        &self,
        request: Request<v1::ExecRequest>,
    ) -> Result<Response<v1::ExecResponse>, Status> {
        self.0.dispatch("Exec", request, streaming::rpc::exec).await
    }

    async fn attach(
        &self,
        request: Request<v1::AttachRequest>,
    ) -> Result<Response<v1::AttachResponse>, Status> {
        self.0
            .dispatch("Attach", request, streaming::rpc::attach)
            .await
    }

    async fn port_forward(
        &self,
        request: Request<v1::PortForwardRequest>,
    ) -> Result<Response<v1::PortForwardResponse>, Status> {
        self.0
            .dispatch("PortForward", request, streaming::rpc::port_forward)
            .await
    }

    async fn container_stats(
        &self,
        request: Request<v1::ContainerStatsRequest>,
    ) -> Result<Response<v1::ContainerStatsResponse>, Status> {
        self.0
            .dispatch("ContainerStats", request, stats::container_stats_rpc)
            .await
    }

    async fn list_container_stats(
        &self,
        request: Request<v1::ListContainerStatsRequest>,
    ) -> Result<Response<v1::ListContainerStatsResponse>, Status> {
        self.0
            .dispatch("ListContainerStats", request, stats::list_container_stats)
            .await
    }

    type StreamContainerStatsStream = ListStream<v1::StreamContainerStatsResponse>;

    async fn stream_container_stats(
        &self,
        request: Request<v1::StreamContainerStatsRequest>,
    ) -> Result<Response<Self::StreamContainerStatsStream>, Status> {
        self.0
            .dispatch("StreamContainerStats", request, |inner, r| {
                let items = stats::list_container_stats(
                    inner,
                    v1::ListContainerStatsRequest { filter: r.filter },
                )?
                .stats;
                Ok(list_stream::stream(inner, items, |batch| {
                    v1::StreamContainerStatsResponse {
                        container_stats: batch,
                    }
                }))
            })
            .await
    }

    async fn pod_sandbox_stats(
        &self,
        request: Request<v1::PodSandboxStatsRequest>,
    ) -> Result<Response<v1::PodSandboxStatsResponse>, Status> {
        self.0
            .dispatch("PodSandboxStats", request, stats::pod_sandbox_stats)
            .await
    }

    async fn list_pod_sandbox_stats(
        &self,
        request: Request<v1::ListPodSandboxStatsRequest>,
    ) -> Result<Response<v1::ListPodSandboxStatsResponse>, Status> {
        self.0
            .dispatch(
                "ListPodSandboxStats",
                request,
                stats::list_pod_sandbox_stats,
            )
            .await
    }

    type StreamPodSandboxStatsStream = ListStream<v1::StreamPodSandboxStatsResponse>;

    async fn stream_pod_sandbox_stats(
        &self,
        request: Request<v1::StreamPodSandboxStatsRequest>,
    ) -> Result<Response<Self::StreamPodSandboxStatsStream>, Status> {
        self.0
            .dispatch("StreamPodSandboxStats", request, |inner, r| {
                let items = stats::list_pod_sandbox_stats(
                    inner,
                    v1::ListPodSandboxStatsRequest { filter: r.filter },
                )?
                .stats;
                Ok(list_stream::stream(inner, items, |batch| {
                    v1::StreamPodSandboxStatsResponse {
                        pod_sandbox_stats: batch,
                    }
                }))
            })
            .await
    }

    async fn update_runtime_config(
        &self,
        request: Request<v1::UpdateRuntimeConfigRequest>,
    ) -> Result<Response<v1::UpdateRuntimeConfigResponse>, Status> {
        self.0
            .dispatch("UpdateRuntimeConfig", request, update_runtime_config)
            .await
    }

    async fn status(
        &self,
        request: Request<v1::StatusRequest>,
    ) -> Result<Response<v1::StatusResponse>, Status> {
        self.0.dispatch("Status", request, status).await
    }

    async fn checkpoint_container(
        &self,
        request: Request<v1::CheckpointContainerRequest>,
    ) -> Result<Response<v1::CheckpointContainerResponse>, Status> {
        self.0
            .dispatch("CheckpointContainer", request, checkpoint_container)
            .await
    }

    type GetContainerEventsStream = events::EventStream;

    async fn get_container_events(
        &self,
        request: Request<v1::GetEventsRequest>,
    ) -> Result<Response<Self::GetContainerEventsStream>, Status> {
        self.0
            .dispatch("GetContainerEvents", request, events::get_container_events)
            .await
    }

    async fn list_metric_descriptors(
        &self,
        request: Request<v1::ListMetricDescriptorsRequest>,
    ) -> Result<Response<v1::ListMetricDescriptorsResponse>, Status> {
        self.0
            .dispatch(
                "ListMetricDescriptors",
                request,
                metrics::list_metric_descriptors,
            )
            .await
    }

    async fn list_pod_sandbox_metrics(
        &self,
        request: Request<v1::ListPodSandboxMetricsRequest>,
    ) -> Result<Response<v1::ListPodSandboxMetricsResponse>, Status> {
        self.0
            .dispatch(
                "ListPodSandboxMetrics",
                request,
                metrics::list_pod_sandbox_metrics,
            )
            .await
    }

    type StreamPodSandboxMetricsStream = ListStream<v1::StreamPodSandboxMetricsResponse>;

    async fn stream_pod_sandbox_metrics(
        &self,
        request: Request<v1::StreamPodSandboxMetricsRequest>,
    ) -> Result<Response<Self::StreamPodSandboxMetricsStream>, Status> {
        self.0
            .dispatch("StreamPodSandboxMetrics", request, |inner, _| {
                let items =
                    metrics::list_pod_sandbox_metrics(inner, v1::ListPodSandboxMetricsRequest {})?
                        .pod_metrics;
                Ok(list_stream::stream(inner, items, |batch| {
                    v1::StreamPodSandboxMetricsResponse {
                        pod_sandbox_metrics: batch,
                    }
                }))
            })
            .await
    }

    async fn runtime_config(
        &self,
        request: Request<v1::RuntimeConfigRequest>,
    ) -> Result<Response<v1::RuntimeConfigResponse>, Status> {
        self.0
            .dispatch("RuntimeConfig", request, runtime_config::runtime_config)
            .await
    }

    async fn update_pod_sandbox_resources(
        &self,
        request: Request<v1::UpdatePodSandboxResourcesRequest>,
    ) -> Result<Response<v1::UpdatePodSandboxResourcesResponse>, Status> {
        self.0
            .dispatch(
                "UpdatePodSandboxResources",
                request,
                update_pod_sandbox_resources,
            )
            .await
    }
}
