//! `create_container`: a container in one of the case's sandboxes (not started), labelled as
//! its pod's (or another pod's, or none) and running the image's long-lived test command,
//! with the security context (user, groups, capabilities, seccomp, namespaces) a case asks for.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{
    busybox, check_call, is_busybox, is_default, CheckError, ErrorExpect, Kind, PathRule, Scope,
    StepDef,
};
use crate::cri::{namespace_options, v1, Container};
use crate::world::{ContainerRef, StepError, World, DEFAULT_COMMAND};

/// `create_container`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `create_container` step: `as`, `sandbox`, `name`, `image`, `command`, `args`, `attempt`, `pod_labels`, `labels`, `annotations`, `envs`, `working_dir`, `mounts`, `log_path`, `stdin`, `tty`, `security`, `expect`, `memory_limit`"
)]
pub struct CreateContainer {
    /// Container alias.
    #[serde(rename = "as")]
    pub alias: String,
    /// Alias of the sandbox to create it in.
    pub sandbox: String,
    /// Container name (defaults to the alias).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Image symbol or reference (defaults to `busybox`).
    #[serde(default = "busybox", skip_serializing_if = "is_busybox")]
    pub image: String,
    /// Command; defaults to a shell that sleeps and exits at once on SIGTERM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// Arguments to the command (the image's `Cmd` is replaced when given).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Metadata attempt.
    #[serde(default, skip_serializing_if = "is_default")]
    pub attempt: u32,
    /// Whose pod labels to write: a pod alias (e.g. another pod's, for an orphan), or `none`.
    /// Defaults to the sandbox's pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_labels: Option<String>,
    /// Extra labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations (e.g. `io.kubernetes.container.hash`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Environment variables.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub envs: BTreeMap<String, String>,
    /// The working directory (default: the image's).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub working_dir: String,
    /// Bind mounts from the host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mounts: Vec<Mount>,
    /// Its log file, relative to the sandbox's log directory (default, when the sandbox has
    /// one: `NAME/ATTEMPT.log`, the kubelet's layout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_path: Option<String>,
    /// Keep the process's stdin open for `attach` (CRI `stdin`; `stdin_once` stays false, so
    /// stdin outlives one attach).
    #[serde(default, skip_serializing_if = "is_default")]
    pub stdin: bool,
    /// Run the process on a terminal (CRI `tty`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub tty: bool,
    /// Its Linux security context (default: the runtime's defaults, the pod's namespaces).
    #[serde(default, skip_serializing_if = "is_default")]
    pub security: Security,
    /// How CreateContainer must answer (default: it succeeds).
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: CreateExpect,
    /// Its memory limit in bytes, up to 4 GiB (default: none), sent as the swap limit too, as
    /// critest's OOM spec does, so the process cannot page its way past the limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit: Option<std::num::NonZeroU32>,
}

/// What `create_container` checks of the CreateContainer answer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `create_container` expectation: `error`"
)]
pub struct CreateExpect {
    /// CreateContainer fails like this (code and text); the alias then names no container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorExpect>,
}

/// A container's Linux security context, as the kubelet fills `LinuxContainerSecurityContext`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `security` context: `run_as_user`, `run_as_username`, `run_as_group`, `supplemental_groups`, `readonly_rootfs`, `privileged`, `capabilities`, `no_new_privs`, `masked_paths`, `readonly_paths`, `seccomp`, `apparmor`, `apparmor_profile`, `selinux`, `pid`, `supplemental_groups_policy`"
)]
pub struct Security {
    /// The UID to run as (default: the image's user).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_as_user: Option<i64>,
    /// The user name to run as, resolved in the image's /etc/passwd.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub run_as_username: String,
    /// The GID to run as; the kubelet sets it only with a user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_as_group: Option<i64>,
    /// Groups added to the process's groups.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub supplemental_groups: Vec<i64>,
    /// Mount the root filesystem read-only.
    #[serde(default, skip_serializing_if = "is_default")]
    pub readonly_rootfs: bool,
    /// Run privileged (the sandbox must be privileged too).
    #[serde(default, skip_serializing_if = "is_default")]
    pub privileged: bool,
    /// Capabilities added to and dropped from the runtime's default set.
    #[serde(default, skip_serializing_if = "is_default")]
    pub capabilities: Capabilities,
    /// Set no_new_privs: exec cannot gain privileges (setuid bits, file capabilities).
    #[serde(default, skip_serializing_if = "is_default")]
    pub no_new_privs: bool,
    /// Paths masked in the container (default: the runtime's list).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub masked_paths: Vec<String>,
    /// Paths made read-only in the container (default: the runtime's list).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub readonly_paths: Vec<String>,
    /// The seccomp profile (default: `unconfined`, the one the kubelet sends for a pod that
    /// names none when `seccompDefault` is off; the request builder fills it in; `nil` sends
    /// none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seccomp: Option<Seccomp>,
    /// The AppArmor profile in CRI v1's `apparmor` field (default: none sent, so the runtime's
    /// default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    // Boxed, as `selinux` is: rare fields should not make every step value larger.
    pub apparmor: Option<Box<Apparmor>>,
    /// The deprecated `apparmor_profile` string critest's specs send (`runtime/default`,
    /// `unconfined`, `localhost/NAME`), with the v1 field left unset.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub apparmor_profile: String,
    /// The SELinux label (default: none sent, so the runtime picks the pod's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selinux: Option<Box<Selinux>>,
    /// The PID namespace (default: the sandbox's, as the kubelet derives it from the pod).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<Namespace>,
    /// How `supplemental_groups` combine with the groups the image's /etc/group gives the
    /// user: `merge` (CRI's default, also what is sent when the field is absent) or `strict`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supplemental_groups_policy: Option<GroupsPolicy>,
}

/// CRI's `SupplementalGroupsPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupsPolicy {
    /// The image's groups for the user join the supplemental groups.
    Merge,
    /// Only the supplemental groups (and the primary group).
    Strict,
}

/// An AppArmor profile, as CRI v1's `SecurityProfile` names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Apparmor {
    /// No confinement.
    Unconfined,
    /// The runtime's default profile.
    RuntimeDefault,
    /// A profile loaded into the host's kernel, by its name.
    Localhost(String),
}

impl Apparmor {
    fn to_cri(&self) -> v1::SecurityProfile {
        use v1::security_profile::ProfileType;
        let (profile_type, localhost_ref) = match self {
            Apparmor::Unconfined => (ProfileType::Unconfined, String::new()),
            Apparmor::RuntimeDefault => (ProfileType::RuntimeDefault, String::new()),
            Apparmor::Localhost(name) => (ProfileType::Localhost, name.clone()),
        };
        v1::SecurityProfile {
            profile_type: profile_type as i32,
            localhost_ref,
        }
    }
}

/// An SELinux label's parts, as CRI's `SELinuxOption` has them; an empty part is left to the
/// runtime.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "`selinux`: `user`, `role`, `type`, `level`"
)]
pub struct Selinux {
    /// The SELinux user (`system_u`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub user: String,
    /// The role (`system_r`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub role: String,
    /// The type (`container_t`).
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// The MLS/MCS level (`s0:c4,c5`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub level: String,
}

/// Capabilities by their names without `CAP_` (`NET_ADMIN`), or `ALL`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, expecting = "`capabilities`: `add`, `drop`")]
pub struct Capabilities {
    /// Capabilities to add.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub add: Vec<String>,
    /// Capabilities to drop.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drop: Vec<String>,
}

/// A seccomp profile, as CRI v1's `SecurityProfile` names it, or as the deprecated
/// `seccomp_profile_path` string critest's specs still send.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Seccomp {
    /// No profile sent at all (neither field), as critest's nil-profile spec sends; the
    /// kubelet always sends one.
    Nil,
    /// No filter.
    Unconfined,
    /// The runtime's default profile.
    RuntimeDefault,
    /// A profile file on the host: relative paths are under the case's host directory (see
    /// `make_host_path`), absolute ones are taken as they are.
    Localhost(String),
    /// The deprecated `seccomp_profile_path`, with the v1 field left unset: `unconfined`,
    /// `runtime/default`, `docker/default` as written; `localhost/PATH` or a bare PATH with a
    /// relative PATH made absolute under the case's host directory (a bare path is what a
    /// runtime must refuse).
    ProfilePath(String),
}

/// What a seccomp choice puts in a CRI security context.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct CriSeccomp {
    /// The v1 `seccomp` field.
    pub(crate) profile: Option<v1::SecurityProfile>,
    /// The deprecated `seccomp_profile_path`.
    pub(crate) path: String,
}

/// The deprecated path's names that are not files.
const PROFILE_NAMES: [&str; 3] = ["unconfined", "runtime/default", "docker/default"];

impl Seccomp {
    /// The CRI fields; `host_path` makes a relative path absolute.
    pub(crate) fn to_cri(
        &self,
        host_path: impl FnOnce(&str) -> Result<String, StepError>,
    ) -> Result<CriSeccomp, StepError> {
        use v1::security_profile::ProfileType;
        fn absolute(
            path: &str,
            host_path: impl FnOnce(&str) -> Result<String, StepError>,
        ) -> Result<String, StepError> {
            if path.starts_with('/') {
                Ok(path.to_owned())
            } else {
                host_path(path)
            }
        }
        let profile = |profile_type: ProfileType, localhost_ref: String| CriSeccomp {
            profile: Some(v1::SecurityProfile {
                profile_type: profile_type as i32,
                localhost_ref,
            }),
            path: String::new(),
        };
        Ok(match self {
            Seccomp::Nil => CriSeccomp::default(),
            Seccomp::Unconfined => profile(ProfileType::Unconfined, String::new()),
            Seccomp::RuntimeDefault => profile(ProfileType::RuntimeDefault, String::new()),
            Seccomp::Localhost(path) => profile(ProfileType::Localhost, absolute(path, host_path)?),
            Seccomp::ProfilePath(path) => CriSeccomp {
                profile: None,
                path: if PROFILE_NAMES.contains(&path.as_str()) {
                    path.clone()
                } else if let Some(file) = path.strip_prefix("localhost/") {
                    format!("localhost/{}", absolute(file, host_path)?)
                } else {
                    absolute(path, host_path)?
                },
            },
        })
    }

    /// Why the profile cannot be used, in the suite's words.
    pub(crate) fn check(&self) -> Result<(), CheckError> {
        let file = match self {
            Seccomp::Localhost(path) => path.as_str(),
            Seccomp::ProfilePath(path) if PROFILE_NAMES.contains(&path.as_str()) => return Ok(()),
            Seccomp::ProfilePath(path) => path.strip_prefix("localhost/").unwrap_or(path),
            Seccomp::Nil | Seccomp::Unconfined | Seccomp::RuntimeDefault => return Ok(()),
        };
        if file.starts_with('/') || is_inner_path(file) {
            Ok(())
        } else {
            Err(CheckError::path(
                "security.seccomp",
                file,
                PathRule::AbsoluteOrInside("the case's host directory"),
            ))
        }
    }
}

/// A namespace's mode, as CRI's `NamespaceMode` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Namespace {
    /// The pod's namespace, shared by its containers.
    Pod,
    /// The container's own.
    Container,
    /// The node's.
    Node,
}

impl Namespace {
    fn to_cri(self) -> v1::NamespaceMode {
        match self {
            Namespace::Pod => v1::NamespaceMode::Pod,
            Namespace::Container => v1::NamespaceMode::Container,
            Namespace::Node => v1::NamespaceMode::Node,
        }
    }
}

impl Security {
    /// The CRI security context: network and IPC from the sandbox's `namespaces`, PID from
    /// them too unless the case names one; `host_path` makes a relative seccomp path absolute.
    // The deprecated seccomp path is set on purpose: critest's specs still speak it.
    #[allow(deprecated)]
    pub(crate) fn to_cri(
        &self,
        namespaces: v1::NamespaceOption,
        host_path: impl FnOnce(&str) -> Result<String, StepError>,
    ) -> Result<v1::LinuxContainerSecurityContext, StepError> {
        let mut namespaces = namespaces;
        if let Some(pid) = self.pid {
            namespaces.pid = pid.to_cri() as i32;
        }
        let capabilities = (!is_default(&self.capabilities)).then(|| v1::Capability {
            add_capabilities: self.capabilities.add.clone(),
            drop_capabilities: self.capabilities.drop.clone(),
            ..Default::default()
        });
        let seccomp = self
            .seccomp
            .as_ref()
            .map(|s| s.to_cri(host_path))
            .transpose()?
            .unwrap_or_default();
        Ok(v1::LinuxContainerSecurityContext {
            capabilities,
            privileged: self.privileged,
            namespace_options: Some(namespaces),
            run_as_user: self.run_as_user.map(|value| v1::Int64Value { value }),
            run_as_group: self.run_as_group.map(|value| v1::Int64Value { value }),
            run_as_username: self.run_as_username.clone(),
            readonly_rootfs: self.readonly_rootfs,
            supplemental_groups: self.supplemental_groups.clone(),
            no_new_privs: self.no_new_privs,
            masked_paths: self.masked_paths.clone(),
            readonly_paths: self.readonly_paths.clone(),
            seccomp: seccomp.profile,
            seccomp_profile_path: seccomp.path,
            apparmor: self.apparmor.as_deref().map(Apparmor::to_cri),
            apparmor_profile: self.apparmor_profile.clone(),
            supplemental_groups_policy: match self.supplemental_groups_policy {
                Some(GroupsPolicy::Strict) => v1::SupplementalGroupsPolicy::Strict,
                Some(GroupsPolicy::Merge) | None => v1::SupplementalGroupsPolicy::Merge,
            } as i32,
            selinux_options: self.selinux.as_ref().map(|label| v1::SeLinuxOption {
                user: label.user.clone(),
                role: label.role.clone(),
                r#type: label.kind.clone(),
                level: label.level.clone(),
            }),
        })
    }
}

/// A bind mount from the host into a container.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a mount: `host_path`, `container_path`, `readonly`, `propagation`, `selinux_relabel`, `recursive_read_only`, `image`, `image_sub_path`"
)]
pub struct Mount {
    /// The host path: relative paths are under the case's host directory (see
    /// `make_host_path`), absolute ones are taken as they are. Empty for an image volume.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub host_path: String,
    /// Where it appears in the container.
    pub container_path: String,
    /// Mount it read-only.
    #[serde(default, skip_serializing_if = "is_default")]
    pub readonly: bool,
    /// Mount propagation (default `private`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub propagation: Propagation,
    /// Have the runtime relabel the host path for the container's SELinux label.
    #[serde(default, skip_serializing_if = "is_default")]
    pub selinux_relabel: bool,
    /// Make the mount read-only recursively, submounts included (CRI `recursive_read_only`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub recursive_read_only: bool,
    /// An image volume instead of a host path: the image (a symbol or a reference), pulled
    /// first and sent by its id as the kubelet does, with the reference as the user wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// The directory of `image` to mount instead of its root.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub image_sub_path: String,
}

/// A mount's propagation, as CRI names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Propagation {
    /// No propagation (rprivate).
    #[default]
    Private,
    /// Host to container (rslave).
    HostToContainer,
    /// Both ways (rshared).
    Bidirectional,
}

impl Propagation {
    pub(crate) fn to_cri(self) -> v1::MountPropagation {
        match self {
            Propagation::Private => v1::MountPropagation::PropagationPrivate,
            Propagation::HostToContainer => v1::MountPropagation::PropagationHostToContainer,
            Propagation::Bidirectional => v1::MountPropagation::PropagationBidirectional,
        }
    }
}

impl CreateContainer {
    /// True when the container gains no privilege or capability that could change its pod's
    /// namespaces (its hostname, network, mounts) and joins no other container's PID
    /// namespace. Only such containers may live in a sandbox another case has held or will
    /// hold (`run --share-sandboxes`).
    pub fn keeps_to_itself(&self) -> bool {
        !self.security.privileged
            && self.security.capabilities.add.is_empty()
            && self.security.pid.is_none()
    }

    /// A container `alias` in sandbox `sandbox` with every other field at its default.
    pub fn new(alias: impl Into<String>, sandbox: impl Into<String>) -> Self {
        Self {
            alias: alias.into(),
            sandbox: sandbox.into(),
            name: None,
            image: busybox(),
            command: None,
            args: Vec::new(),
            attempt: 0,
            pod_labels: None,
            labels: BTreeMap::new(),
            annotations: BTreeMap::new(),
            envs: BTreeMap::new(),
            working_dir: String::new(),
            mounts: Vec::new(),
            log_path: None,
            stdin: false,
            tty: false,
            security: Security::default(),
            expect: CreateExpect::default(),
            memory_limit: None,
        }
    }
}

/// The image an image volume mounts, as the kubelet sends it: pulled first, named by the id
/// the runtime gives it, with the reference as the user wrote it.
async fn volume_image(world: &mut World, symbol: &str) -> Result<v1::ImageSpec, StepError> {
    world.pull(symbol).await?;
    let reference = world.image(symbol);
    let image = world
        .runtime
        .image_status(&reference)
        .await?
        .ok_or_else(|| {
            StepError::Unsupported(format!(
                "image volume: {reference} is not on the runtime after its pull"
            ))
        })?;
    Ok(v1::ImageSpec {
        image: image.id,
        user_specified_image: reference,
        ..Default::default()
    })
}

/// After a runtime failed a valid image volume with another code than Unimplemented: asks
/// whether it knows `Mount.image` at all. A runtime older than the field reads such a mount as
/// a host-path mount with an empty path (proto3 readers skip a field they lack) and fails it,
/// as it should fail any missing host path. So the same container goes once more under
/// another name, each image mount also given a host directory holding a marker file: a
/// runtime that knows the field refuses a mount with both (they exclude each other) or mounts
/// the image; one that shows the marker at the mount mounted the host directory and never
/// saw the image, so it lacks image volumes (`RuntimeLacks`). The probe is removed.
async fn drops_image_field(
    world: &mut World,
    sandbox_id: &str,
    mut config: v1::ContainerConfig,
    sandbox_config: v1::PodSandboxConfig,
) -> Result<(), StepError> {
    const MARKER: &str = "image-field-probe-marker";
    let host = world.host_path("image-field-probe")?;
    std::fs::create_dir_all(&host)
        .and_then(|()| std::fs::write(host.join(MARKER), ""))
        .map_err(|err| StepError::Unsupported(format!("cannot make {}: {err}", host.display())))?;
    let mut paths = Vec::new();
    for mount in config.mounts.iter_mut().filter(|m| m.image.is_some()) {
        mount.host_path = host.display().to_string();
        paths.push(mount.container_path.clone());
    }
    if let Some(metadata) = config.metadata.as_mut() {
        metadata.name.push_str("-image-field-probe");
    }
    let runtime = world.runtime.clone();
    let Ok(id) = runtime
        .create_container(sandbox_id, config, sandbox_config)
        .await
    else {
        return Ok(());
    };
    let mut listing = Vec::new();
    if runtime.start_container(&id).await.is_ok() {
        for path in &paths {
            let command = vec!["ls".to_owned(), "-A".to_owned(), path.clone()];
            if let Ok(answer) = runtime
                .exec_sync(&id, command, Duration::from_secs(10))
                .await
            {
                listing.push(String::from_utf8_lossy(&answer.stdout).into_owned());
            }
        }
    }
    // The case's cleanup removes it too if these fail.
    let _ = runtime.stop_container(&id, 0).await;
    let _ = runtime.remove_container(&id).await;
    if !listing.is_empty() && listing.iter().all(|l| l.lines().any(|name| name == MARKER)) {
        return Err(StepError::RuntimeLacks(
            "image volumes: it fails an image mount, and mounts one that also has a host \
             path as that host directory (a runtime older than Mount.image)"
                .to_owned(),
        ));
    }
    Ok(())
}

/// A relative path that stays inside the directory it is joined to.
pub(crate) fn is_inner_path(path: &str) -> bool {
    let path = std::path::Path::new(path);
    path.is_relative()
        && path
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
}

impl StepDef for CreateContainer {
    const NAME: &'static str = "create_container";
    const KIND: Kind = Kind::Setup;
    const ABOUT: &'static str = "Creates a container in a sandbox (not started).";

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.sandbox(&self.sandbox)?;
        for (index, mount) in self.mounts.iter().enumerate() {
            let field = |name: &str| format!("mounts[{index}].{name}");
            match (&mount.image, mount.host_path.is_empty()) {
                (Some(_), false) => {
                    return Err(CheckError::conflict(
                        format!("mounts[{index}]"),
                        "host_path",
                        "image",
                    ))
                }
                (None, true) => {
                    return Err(CheckError::rule(
                        format!("mounts[{index}]"),
                        "needs a `host_path` or an `image`",
                    ))
                }
                (None, false) if !mount.image_sub_path.is_empty() => {
                    return Err(CheckError::needs(
                        field("image_sub_path"),
                        "image",
                        "it is a path inside the image",
                    ))
                }
                (Some(_), true)
                    if !mount.image_sub_path.is_empty()
                        && !is_inner_path(&mount.image_sub_path) =>
                {
                    return Err(CheckError::path(
                        field("image_sub_path"),
                        &mount.image_sub_path,
                        PathRule::Inside("the image"),
                    ))
                }
                (Some(_), true) | (None, false) => {}
            }
            if mount.image.is_none()
                && !mount.host_path.starts_with('/')
                && !is_inner_path(&mount.host_path)
            {
                return Err(CheckError::path(
                    field("host_path"),
                    &mount.host_path,
                    PathRule::AbsoluteOrInside("the case's host directory"),
                ));
            }
            if !mount.container_path.starts_with('/') {
                return Err(CheckError::path(
                    field("container_path"),
                    &mount.container_path,
                    PathRule::Absolute,
                ));
            }
        }
        if let Some(path) = self.log_path.as_deref().filter(|p| !is_inner_path(p)) {
            return Err(CheckError::path(
                "log_path",
                path,
                PathRule::Inside("the sandbox's log directory"),
            ));
        }
        if let Some(seccomp) = &self.security.seccomp {
            seccomp.check()?;
        }
        for (field, paths) in [
            ("masked_paths", &self.security.masked_paths),
            ("readonly_paths", &self.security.readonly_paths),
        ] {
            if let Some(path) = paths.iter().find(|p| !p.starts_with('/')) {
                return Err(CheckError::path(
                    format!("security.{field}"),
                    path,
                    PathRule::Absolute,
                ));
            }
        }
        scope.error(self.expect.error.as_ref())?;
        scope.pod_labels(self.pod_labels.as_deref())?;
        scope.define_container(&self.alias)
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        world.pull(&self.image).await?;
        let sandbox = world.aliases.sandbox(&self.sandbox)?.clone();
        let name = self.name.clone().unwrap_or_else(|| self.alias.clone());
        let pod = match self.pod_labels.as_deref() {
            Some("none") => None,
            Some(pod) => Some(pod),
            None => Some(sandbox.pod.as_str()),
        };
        let container_labels = world.ids.container_labels(pod, &name, &self.labels);
        let command = self
            .command
            .clone()
            .unwrap_or_else(|| DEFAULT_COMMAND.iter().map(|s| (*s).to_owned()).collect());
        let image = world.image(&self.image);
        let mut mounts = Vec::with_capacity(self.mounts.len());
        for mount in &self.mounts {
            let (host_path, image) = match &mount.image {
                Some(symbol) => (String::new(), Some(volume_image(world, symbol).await?)),
                None if mount.host_path.starts_with('/') => (mount.host_path.clone(), None),
                None => (
                    world.host_path(&mount.host_path)?.display().to_string(),
                    None,
                ),
            };
            mounts.push(v1::Mount {
                container_path: mount.container_path.clone(),
                host_path,
                readonly: mount.readonly,
                propagation: mount.propagation.to_cri() as i32,
                selinux_relabel: mount.selinux_relabel,
                recursive_read_only: mount.recursive_read_only,
                image,
                image_sub_path: mount.image_sub_path.clone(),
                ..Default::default()
            });
        }
        let log_path = sandbox.log_directory.as_ref().map(|_| {
            self.log_path
                .clone()
                .unwrap_or_else(|| format!("{name}/{}.log", self.attempt))
        });
        if let Some((dir, file)) = sandbox.log_directory.as_ref().zip(log_path.as_ref()) {
            // The kubelet makes the container's log directory before it creates the container.
            if let Some(parent) = dir.join(file).parent() {
                std::fs::create_dir_all(parent).map_err(|err| {
                    StepError::Unsupported(format!(
                        "cannot make the log directory {}: {err}",
                        parent.display()
                    ))
                })?;
            }
        }
        // A container joins its sandbox's namespaces; a seeded sandbox has no config to read
        // them from, so they follow from its network alone.
        let namespaces = sandbox
            .config
            .linux
            .as_ref()
            .and_then(|linux| linux.security_context.as_ref())
            .and_then(|context| context.namespace_options.clone())
            .unwrap_or_else(|| namespace_options(sandbox.host_network));
        let security = self.security.to_cri(namespaces.clone(), |path| {
            Ok(world.host_path(path)?.display().to_string())
        })?;
        let config = Container::new(&name, &image, namespaces)
            .attempt(self.attempt)
            .command(command)
            .args(self.args.clone())
            .working_dir(self.working_dir.clone())
            .envs(&self.envs)
            .mounts(mounts)
            .log_path(log_path.clone().unwrap_or_default())
            .labels(container_labels)
            .annotations(self.annotations.clone())
            .stdio(self.stdin, self.tty)
            .security(security)
            .nil_seccomp(self.security.seccomp == Some(Seccomp::Nil))
            .resources(self.memory_limit.map(|bytes| v1::LinuxContainerResources {
                memory_limit_in_bytes: i64::from(bytes.get()),
                memory_swap_limit_in_bytes: i64::from(bytes.get()),
                ..Default::default()
            }))
            .build();
        let probe = config
            .mounts
            .iter()
            .any(|m| m.image.is_some())
            .then(|| config.clone());
        let result = world
            .runtime
            .create_container(&sandbox.id, config, sandbox.config.clone())
            .await;
        if let (Err(err), Some(config), None) = (&result, probe, &self.expect.error) {
            if err.code != tonic::Code::Unimplemented {
                drops_image_field(world, &sandbox.id, config, sandbox.config).await?;
            }
        }
        // The runner redacts the failure message.
        let Some(id) = check_call(self.expect.error.as_ref(), result, str::to_owned)? else {
            return Ok(());
        };
        world.recorder.redactor.container(&id, &self.alias);
        world.aliases.containers.push(ContainerRef {
            alias: self.alias.clone(),
            id,
            name,
            image,
            log_path: sandbox
                .log_directory
                .as_ref()
                .zip(log_path)
                .map(|(dir, file)| dir.join(file)),
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn security(yaml: &str) -> v1::LinuxContainerSecurityContext {
        let step: CreateContainer =
            serde_saphyr::from_str(&format!("{{as: app, sandbox: sb, security: {yaml}}}")).unwrap();
        step.security
            .to_cri(namespace_options(false), |path| Ok(format!("/case/{path}")))
            .unwrap()
    }

    fn profile(kind: v1::security_profile::ProfileType, path: &str) -> Option<v1::SecurityProfile> {
        Some(v1::SecurityProfile {
            profile_type: kind as i32,
            localhost_ref: path.to_owned(),
        })
    }

    #[test]
    fn an_empty_security_map_sends_the_pods_namespaces_and_nothing_else() {
        let context = security("{}");
        assert_eq!(
            context,
            v1::LinuxContainerSecurityContext {
                namespace_options: Some(namespace_options(false)),
                ..Default::default()
            }
        );
        // No seccomp field here: the request builder (`cri::Container`) sends the kubelet's
        // Unconfined profile in its place, since an absent one is not defined to mean that.
        assert_eq!(context.seccomp, None);
    }

    #[test]
    fn ids_and_groups_map_to_their_cri_fields() {
        let context = security(
            "{run_as_user: 1001, run_as_group: 1002, run_as_username: nobody, supplemental_groups: [1234, 5678]}",
        );
        assert_eq!(context.run_as_user, Some(v1::Int64Value { value: 1001 }));
        assert_eq!(context.run_as_group, Some(v1::Int64Value { value: 1002 }));
        assert_eq!(context.run_as_username, "nobody");
        assert_eq!(context.supplemental_groups, vec![1234, 5678]);
    }

    #[test]
    fn uid_zero_is_sent_as_a_value_not_left_out() {
        assert_eq!(
            security("{run_as_user: 0}").run_as_user,
            Some(v1::Int64Value { value: 0 })
        );
        assert_eq!(security("{}").run_as_user, None);
    }

    #[test]
    fn flags_paths_and_capabilities_map_to_their_cri_fields() {
        let context = security(
            "{readonly_rootfs: true, privileged: true, no_new_privs: true, masked_paths: [/etc/group], readonly_paths: [/tmp], capabilities: {add: [NET_ADMIN], drop: [ALL]}}",
        );
        assert!(context.readonly_rootfs && context.privileged && context.no_new_privs);
        assert_eq!(context.masked_paths, vec!["/etc/group"]);
        assert_eq!(context.readonly_paths, vec!["/tmp"]);
        let caps = context.capabilities.unwrap();
        assert_eq!(caps.add_capabilities, vec!["NET_ADMIN"]);
        assert_eq!(caps.drop_capabilities, vec!["ALL"]);
    }

    #[rstest]
    #[case::unconfined(
        "unconfined",
        profile(v1::security_profile::ProfileType::Unconfined, "")
    )]
    #[case::runtime_default(
        "runtime_default",
        profile(v1::security_profile::ProfileType::RuntimeDefault, "")
    )]
    #[case::relative_localhost_is_under_the_case_dir(
        "{localhost: profiles/block.json}",
        profile(
            v1::security_profile::ProfileType::Localhost,
            "/case/profiles/block.json"
        )
    )]
    #[case::absolute_localhost_is_kept(
        "{localhost: /etc/block.json}",
        profile(v1::security_profile::ProfileType::Localhost, "/etc/block.json")
    )]
    fn seccomp_maps_to_the_v1_security_profile(
        #[case] yaml: &str,
        #[case] expected: Option<v1::SecurityProfile>,
    ) {
        let context = security(&format!("{{seccomp: {yaml}}}"));
        assert_eq!(context.seccomp, expected);
    }

    #[rstest]
    #[case::a_name_as_written("docker/default", "docker/default")]
    #[case::relative_localhost("localhost/p.json", "localhost//case/p.json")]
    #[case::absolute_localhost("localhost//etc/p.json", "localhost//etc/p.json")]
    #[case::a_bare_relative_path("p.json", "/case/p.json")]
    fn a_profile_path_goes_in_the_deprecated_field_alone(#[case] path: &str, #[case] sent: &str) {
        let context = security(&format!("{{seccomp: {{profile_path: {path}}}}}"));
        // The deprecated field is the point of this test.
        #[allow(deprecated)]
        let path = &context.seccomp_profile_path;
        assert_eq!(path, sent);
        assert_eq!(context.seccomp, None);
    }

    #[rstest]
    #[case::unconfined("unconfined", v1::security_profile::ProfileType::Unconfined, "")]
    #[case::runtime_default(
        "runtime_default",
        v1::security_profile::ProfileType::RuntimeDefault,
        ""
    )]
    #[case::a_loaded_profile_by_name(
        "{localhost: cri-validate-apparmor-test-deny-write}",
        v1::security_profile::ProfileType::Localhost,
        "cri-validate-apparmor-test-deny-write"
    )]
    fn apparmor_maps_to_the_v1_security_profile(
        #[case] yaml: &str,
        #[case] kind: v1::security_profile::ProfileType,
        #[case] name: &str,
    ) {
        let context = security(&format!("{{apparmor: {yaml}}}"));
        assert_eq!(context.apparmor, profile(kind, name));
        // The deprecated field is checked here on purpose.
        #[allow(deprecated)]
        let deprecated = &context.apparmor_profile;
        assert_eq!(deprecated, "");
    }

    #[test]
    fn an_apparmor_profile_string_goes_in_the_deprecated_field_alone() {
        let context = security("{apparmor_profile: localhost/non-existent-profile}");
        // The deprecated field is the point of this test.
        #[allow(deprecated)]
        let deprecated = &context.apparmor_profile;
        assert_eq!(deprecated, "localhost/non-existent-profile");
        assert_eq!(context.apparmor, None);
    }

    #[test]
    fn selinux_parts_map_to_selinux_options_and_absent_sends_none() {
        let context = security(
            "{selinux: {user: system_u, role: system_r, type: svirt_lxc_net_t, level: 's0:c4,c5'}}",
        );
        assert_eq!(
            context.selinux_options,
            Some(v1::SeLinuxOption {
                user: "system_u".into(),
                role: "system_r".into(),
                r#type: "svirt_lxc_net_t".into(),
                level: "s0:c4,c5".into(),
            })
        );
        let level_only = security("{selinux: {level: s0}}").selinux_options.unwrap();
        assert_eq!(
            (level_only.level.as_str(), level_only.user.as_str()),
            ("s0", "")
        );
        assert_eq!(security("{}").selinux_options, None);
        assert_eq!(security("{}").apparmor, None);
    }

    #[rstest]
    #[case::default_follows_the_sandbox(None, v1::NamespaceMode::Node)]
    #[case::pod(Some("pod"), v1::NamespaceMode::Pod)]
    #[case::container(Some("container"), v1::NamespaceMode::Container)]
    #[case::node(Some("node"), v1::NamespaceMode::Node)]
    fn pid_is_the_sandboxs_unless_named(
        #[case] pid: Option<&str>,
        #[case] expected: v1::NamespaceMode,
    ) {
        let yaml = pid.map_or("{}".to_owned(), |p| format!("{{pid: {p}}}"));
        let step: CreateContainer =
            serde_saphyr::from_str(&format!("{{as: app, sandbox: sb, security: {yaml}}}")).unwrap();
        let sandbox = v1::NamespaceOption {
            pid: v1::NamespaceMode::Node as i32,
            ..namespace_options(true)
        };
        let namespaces = step
            .security
            .to_cri(sandbox, |_| unreachable!("no seccomp path"))
            .unwrap()
            .namespace_options
            .unwrap();
        assert_eq!(namespaces.pid, expected as i32);
        assert_eq!(namespaces.network, v1::NamespaceMode::Node as i32);
        assert_eq!(namespaces.ipc, v1::NamespaceMode::Pod as i32);
    }

    #[rstest]
    #[case::relative_masked_path("{masked_paths: [etc/group]}", "security.masked_paths")]
    #[case::relative_readonly_path("{readonly_paths: [tmp]}", "security.readonly_paths")]
    #[case::localhost_outside_the_case_dir("{seccomp: {localhost: ../x.json}}", "security.seccomp")]
    #[case::profile_path_outside_the_case_dir(
        "{seccomp: {profile_path: localhost/../x.json}}",
        "security.seccomp"
    )]
    fn a_bad_security_path_is_refused_by_the_loader(#[case] yaml: &str, #[case] field: &str) {
        let step: CreateContainer =
            serde_saphyr::from_str(&format!("{{as: app, sandbox: sb, security: {yaml}}}")).unwrap();
        let mut scope = Scope::default();
        scope.define_sandbox("sb").unwrap();
        let err = step.check(&mut scope).unwrap_err().to_string();
        assert!(err.starts_with(field), "{err}");
    }

    #[test]
    fn an_unknown_security_field_lists_the_valid_ones() {
        let err = serde_saphyr::from_str::<CreateContainer>(
            "{as: app, sandbox: sb, security: {run_as_uid: 1}}",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("unknown field `run_as_uid`"), "{err}");
        assert!(err.contains("run_as_user, run_as_username"), "{err}");
    }
}
