//! `kill_pod`: the manager's `KillPod(pod, runningPod, gracePeriodOverride)` on the pod as
//! `get_pods(true)` reports it, with the pod spec the case describes; checks the teardowns,
//! every sync result and, on the runtime, that nothing of the pod still runs.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{is_default, is_true, yes, Action, CheckError, Kind, Scope, StepDef, TextExpect};
use crate::manager::{
    self, Container, ContainerId, ContainerSpec, KubeGenericRuntimeManager, Pod, PodSpec,
    PodSyncResult, RecordingNetworkPlugin, SyncAction,
};
use crate::observe::Answer;
use crate::world::{expect_eq, mismatch, show, StepError, World};

/// `kill_pod`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `kill_pod` step: `pod`, `with_spec`, `host_network`, `spec`, `grace_override`, `teardown_fails`, `extra_containers`, `expect`"
)]
pub struct KillPod {
    /// Pod alias; the running pod is what `get_pods(true)` reports for it.
    pub pod: String,
    /// Pass a pod spec (default true); without one the manager reads the sandbox status.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub with_spec: bool,
    /// The spec's host network (default: what the pod's first sandbox was run with).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_network: Option<bool>,
    /// The rest of the pod spec the manager receives.
    #[serde(default, skip_serializing_if = "is_default")]
    pub spec: SpecFields,
    /// Grace period override in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_override: Option<i64>,
    /// Make the network plugin's teardown fail with this message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub teardown_fails: Option<String>,
    /// Container ids added to the running pod that the runtime does not know.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_containers: Vec<String>,
    /// Expectations.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: KillExpect,
}

/// The pod spec beyond its identity: by default every container of the case, no grace periods,
/// no restart policy, the pod's own PID and IPC namespaces.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a pod spec: `containers`, `init_containers`, `ephemeral_containers`, `termination_grace_period_seconds`, `deletion_grace_period_seconds`, `restart_policy`, `host_pid`, `host_ipc`"
)]
pub struct SpecFields {
    /// Container names in `spec.containers` (default: every container the case made).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub containers: Option<Vec<String>>,
    /// Container names in `spec.initContainers`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub init_containers: Vec<String>,
    /// Container names in `spec.ephemeralContainers`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ephemeral_containers: Vec<String>,
    /// `spec.terminationGracePeriodSeconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_grace_period_seconds: Option<i64>,
    /// `metadata.deletionGracePeriodSeconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_grace_period_seconds: Option<i64>,
    /// `spec.restartPolicy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<RestartPolicy>,
    /// `spec.hostPID`.
    #[serde(default, skip_serializing_if = "is_default")]
    pub host_pid: bool,
    /// `spec.hostIPC`.
    #[serde(default, skip_serializing_if = "is_default")]
    pub host_ipc: bool,
}

/// `spec.restartPolicy`, as Kubernetes spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::Display)]
pub enum RestartPolicy {
    /// Restart whatever the exit.
    Always,
    /// Restart after a failure.
    OnFailure,
    /// Never restart.
    Never,
}

/// `stopped: all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stopped {
    /// Every sandbox of the pod is not ready and no container of it runs.
    All,
}

/// What `kill_pod` checks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `kill_pod` expectation: `teardown`, `stopped`, `results`, `failed`"
)]
pub struct KillExpect {
    /// The sandboxes torn down, in order (`[]` for none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub teardown: Option<Vec<String>>,
    /// What is stopped afterwards, checked on the runtime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Stopped>,
    /// The sync results, exactly these, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results: Option<Vec<SyncResultExpect>>,
    /// Whether the overall result carries an error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<bool>,
}

/// One expected sync result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a sync result: `action`, `target`, `error`, `message`, `message_contains`"
)]
pub struct SyncResultExpect {
    /// The action.
    pub action: Action,
    /// Its target: a container alias (or name), or a pod alias.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The error kind (e.g. `KillContainerError`), or `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The message: `equals`, `contains` or `matches` (in suite terms, redacted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<TextExpect>,
    /// Text the result's message contains (short for `message: {contains: ...}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_contains: Option<String>,
}

impl StepDef for KillPod {
    const NAME: &'static str = "kill_pod";
    const KIND: Kind = Kind::Manager;
    const ABOUT: &'static str =
        "`KillPod(pod, runningPod, gracePeriodOverride)`: stops containers, network, sandboxes.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<KillExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.pod(&self.pod)?;
        for alias in self.expect.teardown.iter().flatten() {
            scope.sandbox(alias)?;
        }
        for (index, result) in self.expect.results.iter().flatten().enumerate() {
            if let Some(message) = &result.message {
                scope.text(&format!("results[{index}].message"), message)?;
            }
        }
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let manager = world.ensure_manager().await?;
        let mut running = world.running_pod(&manager, &self.pod).await?;
        for id in &self.extra_containers {
            running.containers.push(Container {
                id: ContainerId {
                    r#type: manager.runtime_type().to_owned(),
                    id: id.clone(),
                },
                name: id.clone(),
                state: manager::ContainerState::Running,
                ..Default::default()
            });
        }
        let spec = self.with_spec.then(|| self.pod_spec(world));
        let (manager, plugin) = match &self.teardown_fails {
            Some(message) => {
                let plugin = Arc::new(RecordingNetworkPlugin::failing(message.clone()));
                let manager =
                    KubeGenericRuntimeManager::new(world.recorded.clone(), plugin.clone())
                        .await
                        .map_err(|err| {
                            StepError::Unsupported(format!(
                                "cannot build a manager with a failing network plugin: {err}"
                            ))
                        })?;
                world.recorder.forget_calls();
                (manager, plugin)
            }
            None => (manager, world.plugin.clone()),
        };
        let before = plugin.calls().len();
        let result = manager
            .kill_pod(spec.as_ref(), &running, self.grace_override)
            .await;
        let teardown: Vec<_> = plugin.calls().into_iter().skip(before).collect();
        let mut call = format!("kill_pod {}", self.pod);
        if !self.with_spec {
            call.push_str(" without spec");
        }
        if let Some(grace) = self.grace_override {
            call.push_str(&format!(" grace_override={grace}"));
        }
        world.recorder.observe(
            call,
            Ok(Answer::Killed(result.clone())),
            Some(teardown.clone()),
        );
        let expect = &self.expect;
        if let Some(wanted) = &expect.teardown {
            let actual: Vec<String> = teardown
                .iter()
                .map(|t| world.alias_of(&t.sandbox_id))
                .collect();
            expect_eq("teardown", &show(wanted), &show(&actual))?;
        }
        if let Some(failed) = expect.failed {
            let actual = result.error();
            if actual.is_some() != failed {
                return Err(mismatch(
                    "failed",
                    failed.to_string(),
                    match actual {
                        Some(text) => format!("true ({})", world.redact(&text)),
                        None => "false".to_owned(),
                    },
                ));
            }
        }
        if let Some(wanted) = &expect.results {
            check_results(world, wanted, &result)?;
        }
        if expect.stopped.is_some() {
            world
                .check_stopped(&self.pod, &answered_stopped(&running, &result))
                .await?;
        }
        Ok(())
    }
}

/// The ids of the running pod whose stop the runtime answered as done, by the kill's results:
/// each container whose KillContainer step succeeded, and every sandbox when the
/// KillPodSandbox step (one for them all) did. A result names its container, not its id, so a
/// name counts only when no step on it failed: two running containers of one name, one stop
/// failed, leave the failure with the kill.
fn answered_stopped(running: &Pod, result: &PodSyncResult) -> BTreeSet<String> {
    let succeeded = |action: SyncAction, target: &str| {
        let mut steps = result
            .results
            .iter()
            .filter(|r| r.action == action && r.target == target)
            .peekable();
        steps.peek().is_some() && steps.all(|r| r.error.is_none())
    };
    let containers = running
        .containers
        .iter()
        .filter(|c| succeeded(SyncAction::KillContainer, &c.name))
        .map(|c| c.id.id.clone());
    let sandboxes = running
        .sandboxes
        .iter()
        .filter(|_| succeeded(SyncAction::KillPodSandbox, &running.id))
        .map(|s| s.id.id.clone());
    containers.chain(sandboxes).collect()
}

impl KillPod {
    /// The pod spec the manager receives.
    fn pod_spec(&self, world: &World) -> PodSpec {
        let pod = world.ids.pod(&self.pod);
        let host_network = self.host_network.unwrap_or_else(|| {
            world
                .aliases
                .sandboxes
                .iter()
                .find(|s| s.pod == self.pod)
                .is_some_and(|s| s.host_network)
        });
        let named = |names: &[String]| -> Vec<ContainerSpec> {
            names
                .iter()
                .map(|name| ContainerSpec {
                    name: name.clone(),
                    image: world
                        .aliases
                        .containers
                        .iter()
                        .find(|c| c.name == *name)
                        .map(|c| c.image.clone())
                        .unwrap_or_default(),
                })
                .collect()
        };
        let containers = match &self.spec.containers {
            Some(names) => named(names),
            // The seed's suites: every container of the case, by name, image unknown.
            None => world
                .aliases
                .containers
                .iter()
                .map(|c| ContainerSpec {
                    name: c.name.clone(),
                    image: String::new(),
                })
                .collect(),
        };
        PodSpec {
            uid: pod.uid,
            name: pod.name,
            namespace: pod.namespace,
            host_network,
            termination_grace_period_seconds: self.spec.termination_grace_period_seconds,
            deletion_grace_period_seconds: self.spec.deletion_grace_period_seconds,
            containers,
            init_containers: named(&self.spec.init_containers),
            ephemeral_containers: named(&self.spec.ephemeral_containers),
            restart_policy: self.spec.restart_policy.map(|p| p.to_string()),
            host_pid: self.spec.host_pid,
            host_ipc: self.spec.host_ipc,
        }
    }
}

fn check_results(
    world: &World,
    wanted: &[SyncResultExpect],
    result: &PodSyncResult,
) -> Result<(), StepError> {
    let describe = |r: &manager::SyncResult| {
        format!(
            "{} {} {}",
            r.action.name(),
            world.target_alias(&r.target),
            r.error.as_deref().unwrap_or("ok")
        )
    };
    let actual: Vec<String> = result.results.iter().map(describe).collect();
    if wanted.len() != result.results.len() {
        let wanted: Vec<String> = wanted
            .iter()
            .map(|w| w.action.0.name().to_owned())
            .collect();
        return Err(mismatch("results", show(&wanted), show(&actual)));
    }
    for (index, (want, got)) in wanted.iter().zip(&result.results).enumerate() {
        let field = format!("results[{index}]");
        expect_eq(
            format!("{field}.action"),
            want.action.0.name(),
            got.action.name(),
        )?;
        if let Some(target) = &want.target {
            expect_eq(
                format!("{field}.target"),
                target,
                &world.target_alias(&got.target),
            )?;
        }
        if let Some(error) = &want.error {
            expect_eq(
                format!("{field}.error"),
                error,
                got.error.as_deref().unwrap_or("none"),
            )?;
        }
        let message = world.redact(&got.message);
        if let Some(text) = &want.message {
            text.check(&format!("{field}.message"), &message)?;
        }
        if let Some(part) = &want.message_contains {
            TextExpect {
                contains: Some(part.clone()),
                ..TextExpect::default()
            }
            .check(&format!("{field}.message"), &message)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manager::SyncResult;

    fn container(name: &str, id: &str) -> Container {
        Container {
            id: ContainerId {
                r#type: "mock".into(),
                id: id.into(),
            },
            name: name.into(),
            ..Default::default()
        }
    }

    fn kill(name: &str, failed: bool) -> SyncResult {
        let mut result = SyncResult::new(SyncAction::KillContainer, name);
        if failed {
            result.fail("KillContainerError", "rpc error");
        }
        result
    }

    #[test]
    fn a_name_counts_as_stopped_only_when_no_stop_of_that_name_failed() {
        let running = Pod {
            id: "uid".into(),
            containers: vec![
                container("app", "c1"),
                container("app", "c2"),
                container("side", "c3"),
                container("idle", "c4"),
            ],
            sandboxes: vec![container("", "s1")],
            ..Default::default()
        };
        let result = PodSyncResult {
            results: vec![
                kill("app", false),
                kill("app", true),
                kill("side", false),
                SyncResult::new(SyncAction::KillPodSandbox, "uid"),
            ],
            sync_error: None,
        };
        let stopped = answered_stopped(&running, &result);
        // "app" had a failed stop, "idle" no stop at all: both stay the kill's to answer for.
        assert_eq!(stopped, BTreeSet::from(["c3".to_owned(), "s1".to_owned()]));
    }
}
