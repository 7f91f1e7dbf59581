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
    expecting = "a `create_container` step: `as`, `sandbox`, `name`, `image`, `command`, `attempt`, `pod_labels`, `labels`, `annotations`"
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
}

impl StepDef for CreateContainer {
    const NAME: &'static str = "create_container";
    const KIND: Kind = Kind::Setup;
    const ABOUT: &'static str = "Creates a container in a sandbox (not started).";

    fn check(&self, scope: &mut Scope) -> Result<(), String> {
        scope.sandbox(&self.sandbox)?;
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
        });
        Ok(())
    }
}
