//! `create_container`: a container in one of the case's sandboxes (not started), labelled as
//! its pod's (or another pod's, or none) and running the image's long-lived test command.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{busybox, is_busybox, is_default, Kind, Scope, StepDef};
use crate::cri::{namespace_options, v1};
use crate::images;
use crate::world::{World, ContainerRef, StepError, DEFAULT_COMMAND};

/// `create_container`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `create_container` step: `as`, `sandbox`, `name`, `image`, `command`, `args`, `attempt`, `pod_labels`, `labels`, `annotations`, `envs`, `working_dir`, `mounts`, `log_path`"
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
}

/// A bind mount from the host into a container.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a mount: `host_path`, `container_path`, `readonly`, `propagation`"
)]
pub struct Mount {
    /// The host path: relative paths are under the case's host directory (see
    /// `make_host_path`), absolute ones are taken as they are.
    pub host_path: String,
    /// Where it appears in the container.
    pub container_path: String,
    /// Mount it read-only.
    #[serde(default, skip_serializing_if = "is_default")]
    pub readonly: bool,
    /// Mount propagation (default `private`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub propagation: Propagation,
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
    fn to_cri(self) -> v1::MountPropagation {
        match self {
            Propagation::Private => v1::MountPropagation::PropagationPrivate,
            Propagation::HostToContainer => v1::MountPropagation::PropagationHostToContainer,
            Propagation::Bidirectional => v1::MountPropagation::PropagationBidirectional,
        }
    }
}

impl CreateContainer {
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
        }
    }
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

    fn check(&self, scope: &mut Scope) -> Result<(), String> {
        scope.sandbox(&self.sandbox)?;
        for mount in &self.mounts {
            if !mount.host_path.starts_with('/') && !is_inner_path(&mount.host_path) {
                return Err(format!(
                    "mounts: host_path `{}` must be absolute or stay inside the case's host directory",
                    mount.host_path
                ));
            }
            if !mount.container_path.starts_with('/') {
                return Err(format!(
                    "mounts: container_path `{}` must be absolute",
                    mount.container_path
                ));
            }
        }
        if let Some(path) = self.log_path.as_deref().filter(|p| !is_inner_path(p)) {
            return Err(format!(
                "log_path `{path}` must stay inside the sandbox's log directory"
            ));
        }
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
        let image = images::resolve(&self.image);
        let mut mounts = Vec::with_capacity(self.mounts.len());
        for mount in &self.mounts {
            let host_path = if mount.host_path.starts_with('/') {
                mount.host_path.clone()
            } else {
                world.host_path(&mount.host_path)?.display().to_string()
            };
            mounts.push(v1::Mount {
                container_path: mount.container_path.clone(),
                host_path,
                readonly: mount.readonly,
                propagation: mount.propagation.to_cri() as i32,
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
        let config = v1::ContainerConfig {
            metadata: Some(v1::ContainerMetadata {
                name: name.clone(),
                attempt: self.attempt,
            }),
            image: Some(v1::ImageSpec {
                image: image.clone(),
                ..Default::default()
            }),
            command,
            args: self.args.clone(),
            working_dir: self.working_dir.clone(),
            envs: self
                .envs
                .iter()
                .map(|(key, value)| v1::KeyValue {
                    key: key.clone(),
                    value: value.clone(),
                })
                .collect(),
            mounts,
            log_path: log_path.clone().unwrap_or_default(),
            labels: container_labels,
            annotations: self.annotations.clone(),
            linux: Some(v1::LinuxContainerConfig {
                security_context: Some(v1::LinuxContainerSecurityContext {
                    namespace_options: Some(namespace_options(sandbox.host_network)),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let id = world
            .runtime
            .create_container(&sandbox.id, config, sandbox.config)
            .await?;
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
