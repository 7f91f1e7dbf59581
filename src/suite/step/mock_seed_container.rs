//! `mock_seed_container`: a container inserted into the mock exactly as given, possibly
//! without metadata or in a sandbox that does not exist.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{
    busybox, is_busybox, is_default, is_true, yes, CheckError, Kind, Scope, State, StepDef,
};
use crate::cri::control::SeedContainerRequest;
use crate::cri::v1;
use crate::manager::ContainerState;
use crate::world::{control_failed, seed_time, ContainerRef, StepError, World};

fn running() -> State {
    State(ContainerState::Running)
}

fn is_running(state: &State) -> bool {
    state.0 == ContainerState::Running
}

/// `mock_seed_container`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `mock_seed_container` step: `as`, `sandbox`, `name`, `metadata`, `attempt`, `state`, `created_at`, `started_at`, `finished_at`, `exit_code`, `reason`, `message`, `image`, `pod_labels`, `labels`, `annotations`"
)]
pub struct MockSeedContainer {
    /// Container alias.
    #[serde(rename = "as")]
    pub alias: String,
    /// Sandbox alias; a sandbox never created is allowed (its id is made up from the alias).
    pub sandbox: String,
    /// Container name (defaults to the alias).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Carry metadata (default true).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub metadata: bool,
    /// Metadata attempt.
    #[serde(default, skip_serializing_if = "is_default")]
    pub attempt: u32,
    /// State (default running).
    #[serde(default = "running", skip_serializing_if = "is_running")]
    pub state: State,
    /// Creation time in seconds since the Unix epoch (default: now).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<i64>,
    /// Start time in seconds since the Unix epoch (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<i64>,
    /// Finish time in seconds since the Unix epoch (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<i64>,
    /// Exit code the status reports, whatever the state (default 0).
    #[serde(default, skip_serializing_if = "is_default")]
    pub exit_code: i32,
    /// The status's short reason (default "").
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// The status's message (default "").
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Image symbol or reference.
    #[serde(default = "busybox", skip_serializing_if = "is_busybox")]
    pub image: String,
    /// Whose pod labels to write: a pod alias or `none`; defaults to the sandbox's pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_labels: Option<String>,
    /// Extra labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations (e.g. `io.kubernetes.container.hash`, `io.kubernetes.container.restartCount`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl StepDef for MockSeedContainer {
    const NAME: &'static str = "mock_seed_container";
    const KIND: Kind = Kind::MockControl;
    const ABOUT: &'static str =
        "Inserts a raw container, possibly without metadata or in a missing sandbox.";

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        // The sandbox need not exist: orphans are seeded this way.
        scope.alias_shaped(&self.sandbox, "sandbox")?;
        scope.pod_labels(self.pod_labels.as_deref())?;
        scope.define_container(&self.alias)
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let name = self.name.clone().unwrap_or_else(|| self.alias.clone());
        let sandbox_id = world.aliases.sandbox_id_or_made_up(&self.sandbox);
        let sandbox_pod = world
            .aliases
            .sandbox(&self.sandbox)
            .ok()
            .map(|s| s.pod.clone());
        // A sandbox that was never made has no pod to inherit.
        let pod = match self.pod_labels.as_deref() {
            Some("none") => None,
            Some(pod) => Some(pod),
            None => sandbox_pod.as_deref(),
        };
        let container_labels = world.ids.container_labels(pod, &name, &self.labels);
        let image = world.image(&self.image);
        let status = v1::ContainerStatus {
            id: world.aliases.made_up_id(&self.alias),
            metadata: self.metadata.then(|| v1::ContainerMetadata {
                name: name.clone(),
                attempt: self.attempt,
            }),
            state: self.state.0.to_cri_container() as i32,
            created_at: seed_time(self.created_at),
            started_at: self.started_at.map_or(0, |s| seed_time(Some(s))),
            finished_at: self.finished_at.map_or(0, |s| seed_time(Some(s))),
            exit_code: self.exit_code,
            reason: self.reason.clone(),
            message: self.message.clone(),
            image: Some(v1::ImageSpec {
                image: image.clone(),
                ..Default::default()
            }),
            image_ref: image.clone(),
            labels: container_labels,
            annotations: self.annotations.clone(),
            ..Default::default()
        };
        let id = status.id.clone();
        world.recorder.redactor.container(&id, &self.alias);
        world
            .control(Self::NAME)?
            .seed_container(SeedContainerRequest {
                pod_sandbox_id: sandbox_id,
                status: Some(status),
            })
            .await
            .map_err(control_failed(Self::NAME))?;
        world.aliases.containers.push(ContainerRef {
            alias: self.alias.clone(),
            id,
            name,
            image,
            log_path: None,
        });
        Ok(())
    }
}
