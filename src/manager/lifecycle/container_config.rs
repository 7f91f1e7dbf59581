//! The container config the kubelet sends with CreateContainer, generated from one container of
//! a Pod manifest (regular, init or ephemeral) and its restart count: metadata with the attempt,
//! the kubelet's labels and annotations, command and environment, the log path, mounts of
//! hostPath and emptyDir volumes, and the Linux security context.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::images::EnsuredImage;
use super::k8s;
use super::options::SyncOptions;
use super::sandbox_config::{format_pod, identity, namespaces_for_pod, selinux_option};
use crate::cri::labels::{
    CONTAINER_HASH, CONTAINER_NAME, CONTAINER_RESTART_COUNT, CONTAINER_TERMINATION_MESSAGE_PATH,
    MANAGED, POD_DELETION_GRACE_PERIOD, POD_NAME, POD_NAMESPACE, POD_TERMINATION_GRACE_PERIOD,
    POD_UID,
};
use crate::cri::v1;

/// Container annotation: the termination message policy (`File` or `FallbackToLogsOnError`).
pub const CONTAINER_TERMINATION_MESSAGE_POLICY: &str =
    "io.kubernetes.container.terminationMessagePolicy";
/// Container annotation: the preStop handler as JSON.
pub const CONTAINER_PRE_STOP_HANDLER: &str = "io.kubernetes.container.preStopHandler";
/// Container annotation: the container's ports as JSON.
pub const CONTAINER_PORTS: &str = "io.kubernetes.container.ports";

/// The API server's default `terminationMessagePath`.
const DEFAULT_TERMINATION_MESSAGE_PATH: &str = "/dev/termination-log";
/// The API server's default `terminationMessagePolicy`.
const DEFAULT_TERMINATION_MESSAGE_POLICY: &str = "File";
/// The `emptyDir` plugin's directory under a pod's volumes (as in `/var/lib/kubelet/pods`).
const EMPTY_DIR_PLUGIN: &str = "kubernetes.io~empty-dir";

/// `/proc` paths the kubelet masks unless `procMount: Unmasked` (`DefaultMaskedPaths`).
const DEFAULT_MASKED_PATHS: [&str; 11] = [
    "/proc/asound",
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
];
/// `/proc` paths the kubelet makes read-only unless `procMount: Unmasked`
/// (`DefaultReadonlyPaths`).
const DEFAULT_READONLY_PATHS: [&str; 5] = [
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
    "/proc/sys",
    "/proc/sysrq-trigger",
];

/// Why a container config could not be generated (the kubelet's CreateContainerConfigError).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContainerConfigError {
    /// A volume mount names a volume the pod does not declare.
    #[error("cannot find volume {volume:?} to mount into container {container:?}")]
    VolumeNotFound {
        /// The volume name of the mount.
        volume: String,
        /// The container.
        container: String,
    },
    /// A mount's `mountPropagation` is not one of the API's modes.
    #[error("invalid mount propagation {mode:?} of volume {volume:?} in container {container:?}")]
    InvalidPropagation {
        /// The mode as given.
        mode: String,
        /// The volume name of the mount.
        volume: String,
        /// The container.
        container: String,
    },
    /// `runAsNonRoot` is set and the container would run as root, or as a user name the
    /// kubelet cannot check.
    #[error("{reason} (pod: {pod:?}, container: {container})")]
    NonRoot {
        /// What breaks the policy.
        reason: String,
        /// The pod as `name_namespace(uid)`.
        pod: String,
        /// The container.
        container: String,
    },
}

/// The config for one container at `restart_count`, with `hash` the container's spec hash and
/// `image` what the image manager ensured. `target_id` is the running container an ephemeral
/// container targets, whose PID namespace it then joins. Ports `generateContainerConfig`
/// (kuberuntime_container.go) with `generateLinuxContainerConfig` and
/// `determineEffectiveSecurityContext`. Left out, as the harness has no kubelet node around the
/// runtime: resources beyond CPU and memory, cgroups, devices, the `/etc/hosts` and termination-message mounts,
/// AppArmor, env from `valueFrom`/`envFrom` and service links (a `valueFrom` variable is left
/// out, not set empty), volumes other than hostPath and emptyDir (their mounts are skipped).
pub fn generate_container_config(
    pod: &k8s::Pod,
    container: &k8s::Container,
    restart_count: u32,
    hash: u64,
    image: &EnsuredImage,
    target_id: Option<&str>,
    options: &SyncOptions,
) -> Result<v1::ContainerConfig, ContainerConfigError> {
    verify_run_as_non_root(pod, container, image)?;
    let envs = environment(container);
    let expand_all = |items: &Option<Vec<String>>| -> Vec<String> {
        items
            .iter()
            .flatten()
            .map(|item| expand(item, &envs))
            .collect()
    };
    Ok(v1::ContainerConfig {
        metadata: Some(v1::ContainerMetadata {
            name: container.name.clone(),
            attempt: restart_count,
        }),
        image: Some(v1::ImageSpec {
            image: image.image_ref.clone(),
            user_specified_image: container.image.clone().unwrap_or_default(),
            ..Default::default()
        }),
        command: expand_all(&container.command),
        args: expand_all(&container.args),
        working_dir: container.working_dir.clone().unwrap_or_default(),
        envs: envs
            .iter()
            .map(|(key, value)| v1::KeyValue {
                key: key.clone(),
                value: value.clone(),
            })
            .collect(),
        mounts: make_mounts(pod, container, options)?,
        log_path: build_container_log_path(&container.name, restart_count),
        stdin: container.stdin.unwrap_or(false),
        stdin_once: container.stdin_once.unwrap_or(false),
        tty: container.tty.unwrap_or(false),
        labels: container_labels(pod, container, options),
        annotations: container_annotations(pod, container, restart_count, hash),
        linux: Some(v1::LinuxContainerConfig {
            // Only a spec that states CPU or memory sends them, so an in-place resize has
            // something to compare; cgroup parents and the rest stay left out.
            resources: super::resize::linux_resources_for_spec(container),
            security_context: Some(security_context(
                pod,
                container,
                image,
                target_id,
                options.seccomp_default,
            )),
        }),
        ..Default::default()
    })
}

/// An ephemeral container as the container it is run as (the kubelet converts
/// `EphemeralContainerCommon` to `v1.Container` the same way).
pub fn ephemeral_as_container(ephemeral: &k8s::EphemeralContainer) -> k8s::Container {
    let e = ephemeral.clone();
    k8s::Container {
        args: e.args,
        command: e.command,
        env: e.env,
        env_from: e.env_from,
        image: e.image,
        image_pull_policy: e.image_pull_policy,
        lifecycle: e.lifecycle,
        liveness_probe: e.liveness_probe,
        name: e.name,
        ports: e.ports,
        readiness_probe: e.readiness_probe,
        resize_policy: e.resize_policy,
        resources: e.resources,
        restart_policy: e.restart_policy,
        restart_policy_rules: e.restart_policy_rules,
        security_context: e.security_context,
        startup_probe: e.startup_probe,
        stdin: e.stdin,
        stdin_once: e.stdin_once,
        termination_message_path: e.termination_message_path,
        termination_message_policy: e.termination_message_policy,
        tty: e.tty,
        volume_devices: e.volume_devices,
        volume_mounts: e.volume_mounts,
        working_dir: e.working_dir,
    }
}

/// `<container name>/<restart count>.log`, relative to the sandbox's log directory. Ports
/// `buildContainerLogsPath`.
pub fn build_container_log_path(container_name: &str, restart_count: u32) -> String {
    format!("{container_name}/{restart_count}.log")
}

/// The container's labels: the kubelet's pod name, namespace, uid and container name, plus
/// The kubelet's pod and container labels, `io.kubernetes.managed=true` under the seed's rules
/// (its readers list containers by it; today's kubelet has no such label), and the harness's
/// extra labels. Ports `newContainerLabels` (labels.go).
pub fn container_labels(
    pod: &k8s::Pod,
    container: &k8s::Container,
    options: &SyncOptions,
) -> BTreeMap<String, String> {
    let (name, namespace, uid) = identity(pod);
    let mut labels = BTreeMap::from([
        (POD_NAME.to_owned(), name.to_owned()),
        (POD_NAMESPACE.to_owned(), namespace.to_owned()),
        (POD_UID.to_owned(), uid.to_owned()),
        (CONTAINER_NAME.to_owned(), container.name.clone()),
    ]);
    if !options.kubelet.is_current() {
        labels.insert(MANAGED.to_owned(), "true".to_owned());
    }
    labels.extend(options.extra_labels.clone());
    labels
}

/// The container's annotations: hash (hex), restart count, termination message path and policy
/// (the API server's defaults when unset), the pod's grace periods when set, the preStop handler
/// and the ports as JSON. Ports `newContainerAnnotations` (labels.go).
pub fn container_annotations(
    pod: &k8s::Pod,
    container: &k8s::Container,
    restart_count: u32,
    hash: u64,
) -> BTreeMap<String, String> {
    let mut annotations = BTreeMap::from([
        (CONTAINER_HASH.to_owned(), format!("{hash:x}")),
        (
            CONTAINER_RESTART_COUNT.to_owned(),
            restart_count.to_string(),
        ),
        (
            CONTAINER_TERMINATION_MESSAGE_PATH.to_owned(),
            container
                .termination_message_path
                .clone()
                .unwrap_or_else(|| DEFAULT_TERMINATION_MESSAGE_PATH.to_owned()),
        ),
        (
            CONTAINER_TERMINATION_MESSAGE_POLICY.to_owned(),
            container
                .termination_message_policy
                .clone()
                .unwrap_or_else(|| DEFAULT_TERMINATION_MESSAGE_POLICY.to_owned()),
        ),
    ]);
    if let Some(seconds) = pod.metadata.deletion_grace_period_seconds {
        annotations.insert(POD_DELETION_GRACE_PERIOD.to_owned(), seconds.to_string());
    }
    if let Some(seconds) = pod
        .spec
        .as_ref()
        .and_then(|s| s.termination_grace_period_seconds)
    {
        annotations.insert(POD_TERMINATION_GRACE_PERIOD.to_owned(), seconds.to_string());
    }
    let pre_stop = container
        .lifecycle
        .as_ref()
        .and_then(|l| l.pre_stop.as_ref());
    if let Some(json) = pre_stop.and_then(|handler| to_json(handler, &container.name)) {
        annotations.insert(CONTAINER_PRE_STOP_HANDLER.to_owned(), json);
    }
    if let Some(ports) = container.ports.as_ref().filter(|p| !p.is_empty()) {
        if let Some(json) = to_json(ports, &container.name) {
            annotations.insert(CONTAINER_PORTS.to_owned(), json);
        }
    }
    annotations
}

fn to_json<T: serde::Serialize>(value: &T, container: &str) -> Option<String> {
    match serde_json::to_string(value) {
        Ok(json) => Some(json),
        Err(err) => {
            // The kubelet logs and leaves the annotation out too.
            tracing::error!(container, %err, "cannot write an annotation as JSON");
            None
        }
    }
}

/// The container's environment: plain values in spec order, each expanded against those
/// before it; a later variable of the same name wins. Listed by name (the kubelet's order is a
/// map's). Ports `makeEnvironmentVariables` for values only.
fn environment(container: &k8s::Container) -> BTreeMap<String, String> {
    let mut envs = BTreeMap::new();
    for var in container.env.iter().flatten() {
        if var.value_from.is_some() && var.value.as_deref().unwrap_or_default().is_empty() {
            tracing::debug!(container = %container.name, var = %var.name, "valueFrom is not resolved by the harness");
            continue;
        }
        let value = expand(var.value.as_deref().unwrap_or_default(), &envs);
        envs.insert(var.name.clone(), value);
    }
    envs
}

/// Replaces `$(NAME)` with the variable's value, `$$` with `$`; an unknown or unclosed
/// reference stays as written. Ports `expansion.Expand` (third_party/forked/golang/expansion).
pub fn expand(input: &str, envs: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(inner) = after.strip_prefix('(') {
            match inner.find(')') {
                Some(end) => {
                    let name = &inner[..end];
                    match envs.get(name) {
                        Some(value) => out.push_str(value),
                        None => {
                            out.push_str("$(");
                            out.push_str(name);
                            out.push(')');
                        }
                    }
                    rest = &inner[end + 1..];
                }
                None => {
                    out.push_str("$(");
                    out.push_str(inner);
                    rest = "";
                }
            }
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// Where a pod's emptyDir volume lives on the host:
/// `<volumes_root>/<pod uid>/kubernetes.io~empty-dir/<volume>` (the kubelet's layout under
/// `/var/lib/kubelet/pods`, rooted where the harness says).
pub fn empty_dir_path(pod: &k8s::Pod, volume: &str, options: &SyncOptions) -> PathBuf {
    options
        .volumes_root
        .join(identity(pod).2)
        .join(EMPTY_DIR_PLUGIN)
        .join(volume)
}

/// The host directories the container's mounts need before CreateContainer: its emptyDir
/// volumes (and their subPaths) and hostPath volumes of type `DirectoryOrCreate`. The kubelet's
/// volume manager makes these before SyncPod; the harness has none, so the executor does.
pub fn directories_to_make(
    pod: &k8s::Pod,
    container: &k8s::Container,
    options: &SyncOptions,
) -> Vec<PathBuf> {
    let volumes = pod.spec.as_ref().and_then(|s| s.volumes.as_ref());
    let mut dirs = Vec::new();
    for mount in container.volume_mounts.iter().flatten() {
        let Some(volume) = volumes.and_then(|v| v.iter().find(|v| v.name == mount.name)) else {
            continue;
        };
        let base = if volume.empty_dir.is_some() {
            empty_dir_path(pod, &volume.name, options)
        } else if let Some(host) = volume
            .host_path
            .as_ref()
            .filter(|h| h.type_.as_deref() == Some("DirectoryOrCreate"))
        {
            PathBuf::from(&host.path)
        } else {
            continue;
        };
        let sub = mount.sub_path.as_deref().filter(|s| !s.is_empty());
        dirs.push(match sub {
            Some(sub) if volume.empty_dir.is_some() => base.join(sub),
            _ => base,
        });
    }
    dirs
}

/// The CRI mounts of the container's volume mounts. Ports `makeMounts` (kubelet_pods.go and
/// kuberuntime_container.go) for hostPath and emptyDir volumes: the host path (joined with the
/// subPath), read-only as asked, propagation mapped (unset or None is private). SELinux
/// relabelling is not asked for.
fn make_mounts(
    pod: &k8s::Pod,
    container: &k8s::Container,
    options: &SyncOptions,
) -> Result<Vec<v1::Mount>, ContainerConfigError> {
    let volumes = pod.spec.as_ref().and_then(|s| s.volumes.as_ref());
    let mut mounts = Vec::new();
    for mount in container.volume_mounts.iter().flatten() {
        let volume = volumes
            .and_then(|v| v.iter().find(|v| v.name == mount.name))
            .ok_or_else(|| ContainerConfigError::VolumeNotFound {
                volume: mount.name.clone(),
                container: container.name.clone(),
            })?;
        let host_path = if let Some(host) = &volume.host_path {
            PathBuf::from(&host.path)
        } else if volume.empty_dir.is_some() {
            empty_dir_path(pod, &volume.name, options)
        } else {
            // A `kubectl get pod -o yaml` manifest carries the projected service-account token;
            // the harness has no API server to project it from.
            tracing::debug!(container = %container.name, volume = %volume.name, "volume type not supported by the harness; mount skipped");
            continue;
        };
        let host_path = match mount.sub_path.as_deref().filter(|s| !s.is_empty()) {
            Some(sub) => host_path.join(sub),
            None => host_path,
        };
        let propagation = match mount.mount_propagation.as_deref() {
            None | Some("None") => v1::MountPropagation::PropagationPrivate,
            Some("HostToContainer") => v1::MountPropagation::PropagationHostToContainer,
            Some("Bidirectional") => v1::MountPropagation::PropagationBidirectional,
            Some(other) => {
                return Err(ContainerConfigError::InvalidPropagation {
                    mode: other.to_owned(),
                    volume: mount.name.clone(),
                    container: container.name.clone(),
                })
            }
        };
        mounts.push(v1::Mount {
            container_path: mount.mount_path.clone(),
            host_path: host_path.to_string_lossy().into_owned(),
            readonly: mount.read_only.unwrap_or(false),
            propagation: propagation.into(),
            ..Default::default()
        });
    }
    Ok(mounts)
}

/// The container's security context over the pod's: the container's own fields win.
fn effective<T: Clone>(
    container: Option<&k8s::SecurityContext>,
    pod: Option<&k8s::PodSecurityContext>,
    from_container: impl Fn(&k8s::SecurityContext) -> Option<T>,
    from_pod: impl Fn(&k8s::PodSecurityContext) -> Option<T>,
) -> Option<T> {
    container
        .and_then(from_container)
        .or_else(|| pod.and_then(from_pod))
}

/// Refuses a container that `runAsNonRoot` forbids: user 0 asked for, or no user asked for and
/// the image runs as root or names its user by name. Ports `verifyRunAsNonRoot`.
fn verify_run_as_non_root(
    pod: &k8s::Pod,
    container: &k8s::Container,
    image: &EnsuredImage,
) -> Result<(), ContainerConfigError> {
    let pod_sc = pod.spec.as_ref().and_then(|s| s.security_context.as_ref());
    let sc = container.security_context.as_ref();
    if effective(sc, pod_sc, |c| c.run_as_non_root, |p| p.run_as_non_root) != Some(true) {
        return Ok(());
    }
    let reason = match effective(sc, pod_sc, |c| c.run_as_user, |p| p.run_as_user) {
        Some(0) => "container's runAsUser breaks non-root policy".to_owned(),
        Some(_) => return Ok(()),
        None => match (image.uid, image.username.as_str()) {
            (Some(0), _) => "container has runAsNonRoot and image will run as root".to_owned(),
            (None, name) if !name.is_empty() => format!(
                "container has runAsNonRoot and image has non-numeric user ({name}), cannot verify user is non-root"
            ),
            _ => return Ok(()),
        },
    };
    Err(ContainerConfigError::NonRoot {
        reason,
        pod: format_pod(pod),
        container: container.name.clone(),
    })
}

/// Ports `getSeccompProfile`: the container's profile, else the pod's, else RuntimeDefault when
/// the kubelet's `seccompDefault` is on, else Unconfined. A Localhost profile is passed as
/// written (the kubelet joins it to its seccomp root, which the harness does not have).
fn seccomp(
    container: Option<&k8s::SecurityContext>,
    pod: Option<&k8s::PodSecurityContext>,
    seccomp_default: bool,
) -> v1::SecurityProfile {
    use v1::security_profile::ProfileType;
    let profile = effective(
        container,
        pod,
        |c| c.seccomp_profile.clone(),
        |p| p.seccomp_profile.clone(),
    );
    let (profile_type, localhost_ref) = match profile {
        Some(p) if p.type_ == "Localhost" => (
            ProfileType::Localhost,
            p.localhost_profile.unwrap_or_default(),
        ),
        Some(p) if p.type_ == "RuntimeDefault" => (ProfileType::RuntimeDefault, String::new()),
        Some(_) => (ProfileType::Unconfined, String::new()),
        None if seccomp_default => (ProfileType::RuntimeDefault, String::new()),
        None => (ProfileType::Unconfined, String::new()),
    };
    v1::SecurityProfile {
        profile_type: profile_type.into(),
        localhost_ref,
    }
}

/// Ports `determineEffectiveSecurityContext` (security_context.go) and
/// `convertToRuntimeSecurityContext`.
fn security_context(
    pod: &k8s::Pod,
    container: &k8s::Container,
    image: &EnsuredImage,
    target_id: Option<&str>,
    seccomp_default: bool,
) -> v1::LinuxContainerSecurityContext {
    let pod_sc = pod.spec.as_ref().and_then(|s| s.security_context.as_ref());
    let sc = container.security_context.as_ref();
    let capabilities = sc.and_then(|s| s.capabilities.as_ref());
    let mut run_as_user = effective(sc, pod_sc, |c| c.run_as_user, |p| p.run_as_user)
        .map(|value| v1::Int64Value { value });
    let mut run_as_username = String::new();
    if run_as_user.is_none() {
        // No user asked for: the image's user, as containerd would read it.
        run_as_user = image.uid.map(|value| v1::Int64Value { value });
        run_as_username = image.username.clone();
    }
    let mut namespaces = namespaces_for_pod(pod);
    if let Some(target) = target_id {
        if namespaces.pid == i32::from(v1::NamespaceMode::Container) {
            namespaces.pid = v1::NamespaceMode::Target.into();
            namespaces.target_id = target.to_owned();
        }
    }
    let unmasked = sc.and_then(|s| s.proc_mount.as_deref()) == Some("Unmasked");
    let paths = |defaults: &[&str]| -> Vec<String> {
        if unmasked {
            Vec::new()
        } else {
            defaults.iter().map(|p| (*p).to_owned()).collect()
        }
    };
    v1::LinuxContainerSecurityContext {
        capabilities: Some(v1::Capability {
            add_capabilities: capabilities.and_then(|c| c.add.clone()).unwrap_or_default(),
            drop_capabilities: capabilities
                .and_then(|c| c.drop.clone())
                .unwrap_or_default(),
            add_ambient_capabilities: Vec::new(),
        }),
        privileged: sc.and_then(|s| s.privileged).unwrap_or(false),
        namespace_options: Some(namespaces),
        selinux_options: effective(
            sc,
            pod_sc,
            |c| c.se_linux_options.clone(),
            |p| p.se_linux_options.clone(),
        )
        .as_ref()
        .map(selinux_option),
        run_as_user,
        run_as_group: effective(sc, pod_sc, |c| c.run_as_group, |p| p.run_as_group)
            .map(|value| v1::Int64Value { value }),
        run_as_username,
        readonly_rootfs: sc
            .and_then(|s| s.read_only_root_filesystem)
            .unwrap_or(false),
        supplemental_groups: pod_sc
            .map(|p| {
                p.fs_group
                    .into_iter()
                    .chain(p.supplemental_groups.iter().flatten().copied())
                    .collect()
            })
            .unwrap_or_default(),
        // Only an explicit `allowPrivilegeEscalation: false` sets it (`AddNoNewPrivileges`).
        no_new_privs: sc.and_then(|s| s.allow_privilege_escalation) == Some(false),
        masked_paths: paths(&DEFAULT_MASKED_PATHS),
        readonly_paths: paths(&DEFAULT_READONLY_PATHS),
        seccomp: Some(seccomp(sc, pod_sc, seccomp_default)),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn options() -> SyncOptions {
        SyncOptions::new("/tmp/h/logs", "/tmp/h/volumes")
    }

    fn image() -> EnsuredImage {
        EnsuredImage {
            image_ref: "sha256:abc".to_owned(),
            uid: Some(0),
            username: String::new(),
        }
    }

    const POD: &str = "
metadata:
  name: web
  namespace: prod
  uid: u-1
  deletionGracePeriodSeconds: 5
spec:
  terminationGracePeriodSeconds: 30
  securityContext: {runAsGroup: 7, fsGroup: 9, supplementalGroups: [11]}
  volumes:
  - {name: data, emptyDir: {}}
  - {name: host, hostPath: {path: /srv/host, type: DirectoryOrCreate}}
  - {name: token, projected: {sources: []}}
  containers:
  - name: app
    image: busybox:1.36
    command: [sh, -c]
    args: ['echo $(GREETING) $$(GREETING) $(MISSING)']
    workingDir: /work
    stdin: true
    tty: true
    env:
    - {name: NAME, value: world}
    - {name: GREETING, value: hello-$(NAME)}
    - name: FROM_FIELD
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    ports: [{containerPort: 80}]
    lifecycle: {preStop: {exec: {command: [sleep, '1']}}}
    volumeMounts:
    - {name: data, mountPath: /data}
    - {name: data, mountPath: /sub, subPath: part}
    - {name: host, mountPath: /host, readOnly: true, mountPropagation: HostToContainer}
    - {name: token, mountPath: /var/run/secrets/kubernetes.io/serviceaccount}
    securityContext:
      runAsUser: 1000
      readOnlyRootFilesystem: true
      allowPrivilegeEscalation: false
      capabilities: {add: [NET_ADMIN], drop: [ALL]}
";

    fn pod(yaml: &str) -> k8s::Pod {
        serde_saphyr::from_str(yaml).unwrap()
    }

    fn config(pod: &k8s::Pod, restart_count: u32) -> v1::ContainerConfig {
        let container = &pod.spec.as_ref().unwrap().containers[0];
        generate_container_config(
            pod,
            container,
            restart_count,
            0xc0ffee,
            &image(),
            None,
            &options(),
        )
        .unwrap()
    }

    #[test]
    fn metadata_attempt_and_log_path_follow_the_restart_count() {
        let config = config(&pod(POD), 4);
        let metadata = config.metadata.unwrap();
        assert_eq!((metadata.name.as_str(), metadata.attempt), ("app", 4));
        assert_eq!(config.log_path, "app/4.log");
        let image = config.image.unwrap();
        assert_eq!(
            (image.image.as_str(), image.user_specified_image.as_str()),
            ("sha256:abc", "busybox:1.36")
        );
    }

    #[test]
    fn labels_name_the_pod_and_container() {
        let labels: Vec<_> = config(&pod(POD), 0)
            .labels
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        assert_eq!(
            labels,
            [
                "io.kubernetes.container.name=app",
                "io.kubernetes.managed=true",
                "io.kubernetes.pod.name=web",
                "io.kubernetes.pod.namespace=prod",
                "io.kubernetes.pod.uid=u-1",
            ]
        );
    }

    #[test]
    fn todays_kubelet_labels_a_container_without_the_managed_label() {
        let pod = pod(POD);
        let container = &pod.spec.as_ref().unwrap().containers[0];
        let options = SyncOptions {
            kubelet: crate::manager::KubeletProfile::Current,
            ..options()
        };
        let labels = container_labels(&pod, container, &options);
        assert!(!labels.contains_key(MANAGED), "{labels:?}");
        assert_eq!(labels.len(), 4, "{labels:?}");
    }

    #[test]
    fn annotations_carry_hash_restart_count_grace_periods_hooks_and_ports() {
        let annotations = config(&pod(POD), 2).annotations;
        let expected = BTreeMap::from([
            (CONTAINER_HASH, "c0ffee"),
            (CONTAINER_PORTS, r#"[{"containerPort":80}]"#),
            (
                CONTAINER_PRE_STOP_HANDLER,
                r#"{"exec":{"command":["sleep","1"]}}"#,
            ),
            (CONTAINER_RESTART_COUNT, "2"),
            (CONTAINER_TERMINATION_MESSAGE_PATH, "/dev/termination-log"),
            (CONTAINER_TERMINATION_MESSAGE_POLICY, "File"),
            (POD_DELETION_GRACE_PERIOD, "5"),
            (POD_TERMINATION_GRACE_PERIOD, "30"),
        ]);
        let got: BTreeMap<&str, &str> = annotations
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn command_args_and_env_are_expanded_and_value_from_is_left_out() {
        let config = config(&pod(POD), 0);
        assert_eq!(config.command, ["sh", "-c"]);
        assert_eq!(config.args, ["echo hello-world $(GREETING) $(MISSING)"]);
        let envs: Vec<_> = config
            .envs
            .iter()
            .map(|e| format!("{}={}", e.key, e.value))
            .collect();
        assert_eq!(envs, ["GREETING=hello-world", "NAME=world"]);
        assert_eq!(config.working_dir, "/work");
        assert!(config.stdin && config.tty && !config.stdin_once);
    }

    #[test]
    fn mounts_map_empty_dir_and_host_path_volumes_and_skip_the_rest() {
        let mounts: Vec<_> = config(&pod(POD), 0)
            .mounts
            .iter()
            .map(|m| {
                (
                    m.container_path.clone(),
                    m.host_path.clone(),
                    m.readonly,
                    m.propagation(),
                )
            })
            .collect();
        use v1::MountPropagation::{PropagationHostToContainer, PropagationPrivate};
        assert_eq!(
            mounts,
            [
                (
                    "/data".into(),
                    "/tmp/h/volumes/u-1/kubernetes.io~empty-dir/data".into(),
                    false,
                    PropagationPrivate
                ),
                (
                    "/sub".into(),
                    "/tmp/h/volumes/u-1/kubernetes.io~empty-dir/data/part".into(),
                    false,
                    PropagationPrivate
                ),
                (
                    "/host".into(),
                    "/srv/host".into(),
                    true,
                    PropagationHostToContainer
                ),
            ]
        );
        let pod = pod(POD);
        let dirs = directories_to_make(&pod, &pod.spec.as_ref().unwrap().containers[0], &options());
        assert_eq!(
            dirs,
            [
                PathBuf::from("/tmp/h/volumes/u-1/kubernetes.io~empty-dir/data"),
                PathBuf::from("/tmp/h/volumes/u-1/kubernetes.io~empty-dir/data/part"),
                PathBuf::from("/srv/host"),
            ]
        );
    }

    #[test]
    fn a_mount_of_an_undeclared_volume_fails_the_config() {
        let pod = pod("
metadata: {name: p, namespace: n, uid: u}
spec:
  containers:
  - {name: a, volumeMounts: [{name: nope, mountPath: /x}]}
");
        let container = &pod.spec.as_ref().unwrap().containers[0];
        let err = generate_container_config(&pod, container, 0, 0, &image(), None, &options())
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"cannot find volume "nope" to mount into container "a""#
        );
    }

    #[test]
    fn the_security_context_merges_container_over_pod() {
        let sc = config(&pod(POD), 0)
            .linux
            .unwrap()
            .security_context
            .unwrap();
        assert_eq!(sc.run_as_user.map(|u| u.value), Some(1000));
        assert_eq!(sc.run_as_group.map(|g| g.value), Some(7));
        assert_eq!(sc.run_as_username, "");
        assert_eq!(sc.supplemental_groups, [9, 11]);
        assert!(sc.readonly_rootfs && sc.no_new_privs && !sc.privileged);
        let caps = sc.capabilities.unwrap();
        assert_eq!(
            (caps.add_capabilities, caps.drop_capabilities),
            (vec!["NET_ADMIN".to_owned()], vec!["ALL".to_owned()])
        );
        assert_eq!(
            sc.seccomp.unwrap().profile_type(),
            v1::security_profile::ProfileType::RuntimeDefault
        );
        assert_eq!(sc.masked_paths.len(), DEFAULT_MASKED_PATHS.len());
        assert_eq!(sc.readonly_paths.len(), DEFAULT_READONLY_PATHS.len());
        let ns = sc.namespace_options.unwrap();
        assert_eq!(ns.pid(), v1::NamespaceMode::Container);
    }

    #[rstest]
    #[case::default_on(None, None, true, "RuntimeDefault")]
    #[case::default_off(None, None, false, "Unconfined")]
    #[case::pod_unconfined(None, Some("Unconfined"), true, "Unconfined")]
    #[case::container_wins(Some("RuntimeDefault"), Some("Unconfined"), false, "RuntimeDefault")]
    #[case::localhost(Some("Localhost"), None, true, "Localhost")]
    fn seccomp_is_the_containers_else_the_pods_else_the_default(
        #[case] container: Option<&str>,
        #[case] pod: Option<&str>,
        #[case] seccomp_default: bool,
        #[case] expected: &str,
    ) {
        let profile = |t: &str| k8s::SeccompProfile {
            type_: t.to_owned(),
            localhost_profile: (t == "Localhost").then(|| "profiles/audit.json".to_owned()),
        };
        let c = container.map(|t| k8s::SecurityContext {
            seccomp_profile: Some(profile(t)),
            ..Default::default()
        });
        let p = pod.map(|t| k8s::PodSecurityContext {
            seccomp_profile: Some(profile(t)),
            ..Default::default()
        });
        let got = seccomp(c.as_ref(), p.as_ref(), seccomp_default);
        assert_eq!(
            got.profile_type().as_str_name().to_lowercase(),
            expected.to_lowercase()
        );
        assert_eq!(
            got.localhost_ref.is_empty(),
            expected != "Localhost",
            "only Localhost names a file"
        );
    }

    #[test]
    fn without_a_user_the_images_user_is_taken_and_a_target_joins_its_pid_namespace() {
        let pod = pod("
metadata: {name: p, namespace: n, uid: u}
spec:
  containers:
  - {name: dbg, securityContext: {privileged: true, procMount: Unmasked}}
");
        let image = EnsuredImage {
            image_ref: "sha256:1".into(),
            uid: None,
            username: "nobody".into(),
        };
        let container = &pod.spec.as_ref().unwrap().containers[0];
        let config =
            generate_container_config(&pod, container, 0, 0, &image, Some("c-9"), &options())
                .unwrap();
        let sc = config.linux.unwrap().security_context.unwrap();
        assert_eq!(
            (sc.run_as_user, sc.run_as_username.as_str()),
            (None, "nobody")
        );
        assert!(sc.privileged);
        assert!(sc.masked_paths.is_empty() && sc.readonly_paths.is_empty());
        let ns = sc.namespace_options.unwrap();
        assert_eq!(
            (ns.pid(), ns.target_id.as_str()),
            (v1::NamespaceMode::Target, "c-9")
        );
    }

    #[rstest]
    #[case::not_asked("{}", Some(0), "", true)]
    #[case::user_zero("{runAsNonRoot: true, runAsUser: 0}", None, "", false)]
    #[case::user_set("{runAsNonRoot: true, runAsUser: 5}", Some(0), "", true)]
    #[case::image_root("{runAsNonRoot: true}", Some(0), "", false)]
    #[case::image_named_user("{runAsNonRoot: true}", None, "app", false)]
    #[case::image_uid("{runAsNonRoot: true}", Some(100), "", true)]
    fn run_as_non_root_refuses_root_and_unverifiable_users(
        #[case] sc: &str,
        #[case] uid: Option<i64>,
        #[case] username: &str,
        #[case] allowed: bool,
    ) {
        let container = k8s::Container {
            name: "a".into(),
            security_context: Some(serde_saphyr::from_str(sc).unwrap()),
            ..Default::default()
        };
        let image = EnsuredImage {
            image_ref: String::new(),
            uid,
            username: username.into(),
        };
        let got = verify_run_as_non_root(&k8s::Pod::default(), &container, &image);
        assert_eq!(got.is_ok(), allowed, "{got:?}");
    }

    #[rstest]
    #[case::plain("a $(X) b", "a 1 b")]
    #[case::escaped("$$(X)", "$(X)")]
    #[case::unknown("$(NOPE)", "$(NOPE)")]
    #[case::unclosed("$(X", "$(X")]
    #[case::lone_dollar("cost $5", "cost $5")]
    #[case::trailing_dollar("end$", "end$")]
    #[case::adjacent("$(X)$(X)", "11")]
    fn expansion_follows_the_kubelets_rules(#[case] input: &str, #[case] expected: &str) {
        let envs = BTreeMap::from([("X".to_owned(), "1".to_owned())]);
        assert_eq!(expand(input, &envs), expected);
    }
}
