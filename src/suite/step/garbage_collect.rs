//! `garbage_collect`: the manager's `GarbageCollect` (today's kubelet) on the case's own objects,
//! with the policy, the pod states by pod alias and the sources' readiness the case gives; checks
//! exactly which containers, sandboxes, pod log directories and legacy log symlinks remain.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{
    is_default, is_true, yes, CheckError, Kind, SandboxState, Scope, State, StepDef, TextExpect,
};
use crate::cri::labels;
use crate::manager::lifecycle::{
    legacy_log_symlink, wall_clock_unix_nanos, GcLogDirs, GcPolicy, GcScope, PodStateOracle,
};
use crate::manager::ContainerState;
use crate::observe::Answer;
use crate::world::{expect_eq, show, StepError, World};

/// Under the case's host directory: the pod logs root (where `run_sandbox` puts its log
/// directories too) and the legacy symlinks' directory.
const POD_LOGS_ROOT: &str = "logs";
const LOG_SYMLINKS: &str = "containers";

/// `garbage_collect`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `garbage_collect` step: `policy`, `all_sources_ready`, `evict_terminating`, `deleted`, `terminated`, `now`, `pod_log_dirs`, `log_symlinks`, `expect`"
)]
pub struct GarbageCollect {
    /// The limits (the kubelet's defaults when absent: no minimum age, one dead container per
    /// unit, no total limit).
    #[serde(default, skip_serializing_if = "is_default")]
    pub policy: Policy,
    /// The caller knows every pod (default true): deleted pods' containers and log directories
    /// may go.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub all_sources_ready: bool,
    /// Also remove all the dead runtime of terminated pods.
    #[serde(default, skip_serializing_if = "is_default")]
    pub evict_terminating: bool,
    /// Pod aliases of deleted pods.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deleted: Vec<String>,
    /// Pod aliases of terminated pods.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub terminated: Vec<String>,
    /// The instant the collection runs at, in Unix seconds (default: the wall clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now: Option<i64>,
    /// Pod aliases whose kubelet-style log directory (`<namespace>_<name>_<uid>`, with a log
    /// file in it) is made under the pod logs root before collecting.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pod_log_dirs: Vec<String>,
    /// Container aliases whose legacy log symlink is made before collecting, dangling (as
    /// after a rotation or a removal).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log_symlinks: Vec<String>,
    /// Expectations.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: GarbageCollectExpect,
}

/// The kubelet's `GCPolicy` as a suite writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a GC policy: `min_age`, `max_per_pod_container`, `max_containers`"
)]
pub struct Policy {
    /// Youngest collectable age by creation time, e.g. `0s`, `90s`, `1h`.
    #[serde(default = "zero", skip_serializing_if = "is_zero")]
    pub min_age: String,
    /// Dead containers kept per (pod, container name); negative: no limit.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub max_per_pod_container: i64,
    /// Dead containers kept in all; negative: no limit.
    #[serde(default = "no_limit", skip_serializing_if = "is_no_limit")]
    pub max_containers: i64,
}

fn zero() -> String {
    "0s".to_owned()
}
fn is_zero(text: &str) -> bool {
    text == "0s"
}
fn one() -> i64 {
    1
}
fn is_one(value: &i64) -> bool {
    *value == 1
}
fn no_limit() -> i64 {
    -1
}
fn is_no_limit(value: &i64) -> bool {
    *value == -1
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            min_age: zero(),
            max_per_pod_container: one(),
            max_containers: no_limit(),
        }
    }
}

impl Policy {
    fn min_age(&self) -> Result<Duration, CheckError> {
        humantime::parse_duration(self.min_age.trim()).map_err(|err| {
            CheckError::malformed(
                "policy.min_age",
                &self.min_age,
                "a duration like `0s`, `90s` or `1h`",
                err.to_string(),
            )
        })
    }
}

/// What `garbage_collect` checks, each exactly, among the case's own objects.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `garbage_collect` expectation: `error`, `containers`, `sandboxes`, `pod_log_dirs`, `log_symlinks`"
)]
pub struct GarbageCollectExpect {
    /// The collection fails with this text (default: it succeeds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<TextExpect>,
    /// Exactly these containers remain, in these states.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub containers: Option<BTreeMap<String, State>>,
    /// Exactly these sandboxes remain, in these states.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandboxes: Option<BTreeMap<String, SandboxState>>,
    /// Exactly these of the step's pod log directories remain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_log_dirs: Option<Vec<String>>,
    /// Exactly these of the step's log symlinks remain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_symlinks: Option<Vec<String>>,
}

impl StepDef for GarbageCollect {
    const NAME: &'static str = "garbage_collect";
    const KIND: Kind = Kind::Manager;
    const ABOUT: &'static str = "`GarbageCollect(policy, allSourcesReady, evictTerminatingPods)` (today's kubelet) on the case's own objects; checks exactly what remains.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<GarbageCollectExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        self.policy.min_age()?;
        if let Some(now) = self.now {
            if now <= 0 {
                return Err(CheckError::before_epoch("now"));
            }
        }
        let pods = self
            .deleted
            .iter()
            .chain(&self.terminated)
            .chain(&self.pod_log_dirs)
            .chain(self.expect.pod_log_dirs.iter().flatten());
        for pod in pods {
            if pod.is_empty() {
                return Err(CheckError::rule("", "a pod alias cannot be empty here"));
            }
            scope.pod(pod)?;
        }
        for alias in &self.log_symlinks {
            scope.container(alias)?;
        }
        for alias in self.expect.log_symlinks.iter().flatten() {
            if !self.log_symlinks.contains(alias) {
                return Err(CheckError::not_one_of(
                    "expect.log_symlinks",
                    alias,
                    "log_symlinks",
                ));
            }
        }
        for pod in self.expect.pod_log_dirs.iter().flatten() {
            if !self.pod_log_dirs.contains(pod) {
                return Err(CheckError::not_one_of(
                    "expect.pod_log_dirs",
                    pod,
                    "pod_log_dirs",
                ));
            }
        }
        for alias in self.expect.containers.iter().flat_map(BTreeMap::keys) {
            scope.container(alias)?;
        }
        for alias in self.expect.sandboxes.iter().flat_map(BTreeMap::keys) {
            scope.sandbox(alias)?;
        }
        if let Some(error) = &self.expect.error {
            scope.text("error", error)?;
        }
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let manager = world.ensure_manager().await?;
        let logs = GcLogDirs {
            pod_logs_root: world.host_path(POD_LOGS_ROOT)?,
            container_log_symlinks: world.host_path(LOG_SYMLINKS)?,
        };
        let made = |path: &std::path::Path, err: std::io::Error| {
            StepError::Unsupported(format!("cannot make {}: {err}", path.display()))
        };
        for dir in [&logs.pod_logs_root, &logs.container_log_symlinks] {
            std::fs::create_dir_all(dir).map_err(|err| made(dir, err))?;
        }
        let pod_dirs = self.make_pod_log_dirs(world, &logs)?;
        let symlinks = self.make_log_symlinks(world, &logs).await?;

        let min_age = self
            .policy
            .min_age()
            .map_err(|err| StepError::Unsupported(err.to_string()))?;
        let policy = GcPolicy {
            min_age,
            max_per_pod_container: self.policy.max_per_pod_container,
            max_containers: self.policy.max_containers,
        };
        let oracle = PodStateOracle {
            deleted: self.deleted.iter().map(|p| world.ids.uid(p)).collect(),
            terminated: self.terminated.iter().map(|p| world.ids.uid(p)).collect(),
        };
        let now = self
            .now
            .map_or_else(wall_clock_unix_nanos, |s| s.saturating_mul(1_000_000_000));
        let scope = GcScope::at(now).owning(world.ids.own_selector());
        let result = manager
            .garbage_collect(
                &policy,
                self.all_sources_ready,
                self.evict_terminating,
                &oracle,
                &logs,
                &scope,
            )
            .await;
        // Read back through the unrecorded client: the snapshot holds the collection's calls only.
        let remains = Remains::read(world, &pod_dirs, &symlinks).await?;
        let outcome = match &result {
            Ok(()) => Ok(Answer::Collected {
                remains: remains.lines(),
            }),
            Err(err) => Err(world.redact(&err.to_string())),
        };
        world.recorder.observe(self.call(), outcome, None);

        match (&self.expect.error, &result) {
            (None, Ok(())) => {}
            (None, Err(err)) => {
                return Err(crate::world::mismatch(
                    "error",
                    "success",
                    world.redact(&err.to_string()),
                ))
            }
            (Some(want), Ok(())) => {
                return Err(crate::world::mismatch(
                    "error",
                    format!("an error ({want:?})"),
                    "success",
                ))
            }
            (Some(want), Err(err)) => want.check("error", &world.redact(&err.to_string()))?,
        }
        remains.check(&self.expect)
    }
}

impl GarbageCollect {
    /// The call as the snapshot names it.
    fn call(&self) -> String {
        let mut call = format!(
            "garbage_collect min_age={} max_per_pod_container={} max_containers={} all_sources_ready={} evict_terminating={}",
            self.policy.min_age,
            self.policy.max_per_pod_container,
            self.policy.max_containers,
            self.all_sources_ready,
            self.evict_terminating
        );
        if !self.deleted.is_empty() {
            call.push_str(&format!(" deleted={}", show(&self.deleted)));
        }
        if !self.terminated.is_empty() {
            call.push_str(&format!(" terminated={}", show(&self.terminated)));
        }
        call
    }

    /// Makes each named pod's log directory as the kubelet names it, with a log in it.
    fn make_pod_log_dirs(
        &self,
        world: &World,
        logs: &GcLogDirs,
    ) -> Result<Vec<(String, std::path::PathBuf)>, StepError> {
        let mut dirs = Vec::new();
        for alias in &self.pod_log_dirs {
            let pod = world.ids.pod(alias);
            let dir = logs
                .pod_logs_root
                .join(format!("{}_{}_{}", pod.namespace, pod.name, pod.uid));
            let log = dir.join("app").join("0.log");
            std::fs::create_dir_all(dir.join("app"))
                .and_then(|()| std::fs::write(&log, "a line\n"))
                .map_err(|err| {
                    StepError::Unsupported(format!("cannot make {}: {err}", log.display()))
                })?;
            dirs.push((alias.clone(), dir));
        }
        Ok(dirs)
    }

    /// Makes each named container's legacy log symlink, pointing at a log that is gone; the
    /// name comes from the container's labels as the runtime reports them.
    async fn make_log_symlinks(
        &self,
        world: &World,
        logs: &GcLogDirs,
    ) -> Result<Vec<(String, std::path::PathBuf)>, StepError> {
        let mut links = Vec::new();
        for alias in &self.log_symlinks {
            let id = world.aliases.container(alias)?.id.clone();
            let answer = world.runtime.container_status(&id).await?;
            let labels_of = answer.status.map(|s| s.labels).unwrap_or_default();
            let get = |key: &str| labels_of.get(key).cloned().unwrap_or_default();
            let name = legacy_log_symlink(
                &id,
                &get(labels::CONTAINER_NAME),
                &get(labels::POD_NAME),
                &get(labels::POD_NAMESPACE),
            );
            let link = logs.container_log_symlinks.join(name);
            let target = logs.pod_logs_root.join("rotated-away.log");
            std::os::unix::fs::symlink(&target, &link).map_err(|err| {
                StepError::Unsupported(format!("cannot make {}: {err}", link.display()))
            })?;
            links.push((alias.clone(), link));
        }
        Ok(links)
    }
}

/// What is left of the case's own objects after the collection, in suite terms.
struct Remains {
    containers: BTreeMap<String, &'static str>,
    sandboxes: BTreeMap<String, SandboxState>,
    pod_log_dirs: Vec<String>,
    log_symlinks: Vec<String>,
}

impl Remains {
    async fn read(
        world: &World,
        pod_dirs: &[(String, std::path::PathBuf)],
        symlinks: &[(String, std::path::PathBuf)],
    ) -> Result<Self, StepError> {
        let own = world.ids.own_selector();
        let containers = world
            .runtime
            .list_containers(Some(crate::cri::v1::ContainerFilter {
                label_selector: own.clone(),
                ..Default::default()
            }))
            .await?
            .into_iter()
            .map(|c| {
                let state = ContainerState::from_cri_container(c.state).name();
                (world.alias_of(&c.id), state)
            })
            .collect();
        let sandboxes = world
            .runtime
            .list_pod_sandbox(Some(crate::cri::v1::PodSandboxFilter {
                label_selector: own,
                ..Default::default()
            }))
            .await?
            .into_iter()
            .map(|s| {
                let state = if s.state == crate::cri::v1::PodSandboxState::SandboxReady as i32 {
                    SandboxState::Ready
                } else {
                    SandboxState::NotReady
                };
                (world.alias_of(&s.id), state)
            })
            .collect();
        let present = |items: &[(String, std::path::PathBuf)]| -> Vec<String> {
            items
                .iter()
                .filter(|(_, path)| path.symlink_metadata().is_ok())
                .map(|(alias, _)| alias.clone())
                .collect()
        };
        Ok(Self {
            containers,
            sandboxes,
            pod_log_dirs: present(pod_dirs),
            log_symlinks: present(symlinks),
        })
    }

    fn lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .sandboxes
            .iter()
            .map(|(alias, state)| format!("sandbox {alias}: {}", sandbox_state_name(*state)))
            .chain(
                self.containers
                    .iter()
                    .map(|(alias, state)| format!("container {alias}: {state}")),
            )
            .chain(
                self.pod_log_dirs
                    .iter()
                    .map(|pod| format!("pod log directory {pod}")),
            )
            .chain(
                self.log_symlinks
                    .iter()
                    .map(|alias| format!("log symlink {alias}")),
            )
            .collect();
        lines.sort();
        lines
    }

    fn check(&self, expect: &GarbageCollectExpect) -> Result<(), StepError> {
        if let Some(wanted) = &expect.containers {
            let wanted: Vec<String> = wanted
                .iter()
                .map(|(alias, state)| format!("{alias}: {}", state.0.name()))
                .collect();
            let actual: Vec<String> = self
                .containers
                .iter()
                .map(|(alias, state)| format!("{alias}: {state}"))
                .collect();
            expect_eq("containers", &show(&wanted), &show(&actual))?;
        }
        if let Some(wanted) = &expect.sandboxes {
            let line = |(alias, state): (&String, &SandboxState)| {
                format!("{alias}: {}", sandbox_state_name(*state))
            };
            let wanted: Vec<String> = wanted.iter().map(line).collect();
            let actual: Vec<String> = self.sandboxes.iter().map(line).collect();
            expect_eq("sandboxes", &show(&wanted), &show(&actual))?;
        }
        if let Some(wanted) = &expect.pod_log_dirs {
            let wanted = crate::world::sorted(wanted.iter().cloned());
            let actual = crate::world::sorted(self.pod_log_dirs.iter().cloned());
            expect_eq("pod_log_dirs", &show(&wanted), &show(&actual))?;
        }
        if let Some(wanted) = &expect.log_symlinks {
            let wanted = crate::world::sorted(wanted.iter().cloned());
            let actual = crate::world::sorted(self.log_symlinks.iter().cloned());
            expect_eq("log_symlinks", &show(&wanted), &show(&actual))?;
        }
        Ok(())
    }
}

fn sandbox_state_name(state: SandboxState) -> &'static str {
    match state {
        SandboxState::Ready => "ready",
        SandboxState::NotReady => "not_ready",
    }
}
