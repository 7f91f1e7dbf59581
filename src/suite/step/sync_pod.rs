//! `sync_pod`: today's kubelet's SyncPod on a real Pod manifest (inline or from a file), for a
//! number of rounds or until the pod runs or settles; checks each round's computed actions and
//! results and the pod's runtime state after the last one, exactly and in suite terms.
//!
//! The pod takes the case's identity for its alias (uid, name and namespace unique to the run
//! and case), and the case's labels go on all it makes, so the runner's cleanup and leak sweep
//! find it. Its sandbox is then known as the alias and its containers as `ALIAS-NAME` (the
//! newest instance each); older instances read as `ALIAS#ATTEMPT` and `ALIAS-NAME#ATTEMPT`.
//! The back-off and the last manifest of each pod are kept across the case's `sync_pod` steps,
//! as a kubelet keeps them across syncs.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{
    is_default, Action, CheckError, Kind, SandboxState, Scope, State, StepDef, TextExpect,
};
use crate::cri::{labels, v1};
use crate::manager::lifecycle::{
    build_container_log_path, build_pod_logs_directory, k8s, pod, Backoff, Clock, ManualClock,
    PodSync, ProbeResult, ProbeResults, SyncOptions, WallClock,
};
use crate::manager::{ContainerState, SyncAction};
use crate::observe::pod::resource_name;
use crate::observe::{ActionSeen, Answer, ContainerSeen, Exit, PodSeen, ResultSeen, SandboxSeen};
use crate::suite::embedded::embedded_file;
use crate::world::{mismatch, StepError, World};

/// Under the case's host directory: the pod logs root (shared with `garbage_collect`, so it
/// collects what the syncs made) and the emptyDir volumes.
const POD_LOGS_ROOT: &str = "logs";
const VOLUMES_ROOT: &str = "volumes";
/// Rounds an `until` runs at most when the step gives no `bound`.
const DEFAULT_BOUND: u32 = 10;

/// `sync_pod`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `sync_pod` step: `as`, `pod`, `file`, `rounds`, `until`, `bound`, `now`, `probes`, `expect`"
)]
pub struct SyncPod {
    /// The pod alias; its sandbox is known by it and its containers as `ALIAS-NAME`.
    #[serde(rename = "as")]
    pub alias: String,
    /// The Pod manifest inline (`metadata` and `spec`, as `kubectl get pod -o yaml` prints).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<Box<k8s::Pod>>,
    /// A Pod manifest file instead, relative to the suite file's directory, or absolute. The
    /// loader reads it, so a missing or bad file fails the suite's load; a suite the binary
    /// embeds takes it from the binary (`suites/manifests/` is embedded with the suites), so
    /// the harness runs it from any directory. With neither `pod` nor `file`, the alias's last
    /// manifest is synced again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The manifest `file` names, as the loader read it.
    #[serde(skip)]
    from_file: Option<Box<k8s::Pod>>,
    /// Exactly this many rounds (default 1 without `until`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<u32>,
    /// Rounds until the pod is `running` (every app container runs) or `settled` (a round
    /// had nothing to do), at most `bound`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<Until>,
    /// The most rounds `until` may take (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<u32>,
    /// The back-off clock's time, Unix seconds, from this step on (pair it with the mock's
    /// `mock_set_clock`); without it the case's back-off reads the wall clock, as on a real
    /// runtime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now: Option<i64>,
    /// The prober's answers, by container name (the harness runs no prober).
    #[serde(default, skip_serializing_if = "is_default")]
    pub probes: Probes,
    /// Expectations.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: SyncPodExpect,
}

/// When an `until` is met.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Until {
    /// Every app container's newest instance runs.
    Running,
    /// A round computed no action.
    Settled,
}

/// The prober's answers a case states, by container name and probe kind. A container a map leaves
/// out has no result yet.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "probe results: `liveness`, `readiness`, `startup`, `liveness_failed`"
)]
pub struct Probes {
    /// Liveness results: `success`, `failure` or `unknown`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub liveness: BTreeMap<String, Probe>,
    /// Readiness results (the kubelet's SyncPod does not read them; a case shows so).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub readiness: BTreeMap<String, Probe>,
    /// Startup results.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub startup: BTreeMap<String, Probe>,
    /// Shorthand: containers whose liveness result is `failure`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub liveness_failed: Vec<String>,
}

/// A probe result as a suite writes it (`succeeded` and `failed` are read too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Probe {
    /// The probe passed.
    #[serde(alias = "succeeded")]
    Success,
    /// The probe failed.
    #[serde(alias = "failed")]
    Failure,
    /// The prober has a result that is neither (e.g. a startup probe in progress).
    Unknown,
}

impl From<Probe> for ProbeResult {
    fn from(probe: Probe) -> Self {
        match probe {
            Probe::Success => ProbeResult::Success,
            Probe::Failure => ProbeResult::Failure,
            Probe::Unknown => ProbeResult::Unknown,
        }
    }
}

/// What `sync_pod` checks, each exactly.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `sync_pod` expectation: `error`, `rounds`, `containers`, `sandboxes`"
)]
pub struct SyncPodExpect {
    /// A sync fails before any action (its pod status cannot be read) with this text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<TextExpect>,
    /// Each round's actions and results, in order (their number too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<Vec<Round>>,
    /// The newest instance of each container, by name, after the last round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub containers: Option<BTreeMap<String, ContainerExpect>>,
    /// The pod's sandboxes after the last round, by attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandboxes: Option<Vec<SandboxExpect>>,
}

/// One round: computePodActions' answer and each step's result (a round seen is compared in
/// this shape).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a sync round: `kill_pod`, `create_sandbox`, `attempt`, `start`, `kill`, `resize`, `reset`, `results`"
)]
pub struct Round {
    /// The whole pod is killed first.
    #[serde(default, skip_serializing_if = "is_default")]
    pub kill_pod: bool,
    /// A sandbox is created.
    #[serde(default, skip_serializing_if = "is_default")]
    pub create_sandbox: bool,
    /// The new sandbox's attempt (only with `create_sandbox`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// Containers to start by name: init, then app, then ephemeral ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub start: Vec<String>,
    /// Containers to kill, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kill: Vec<String>,
    /// In-place resizes as `NAME RESOURCE` (`app memory`, `app cpu`), in the order they are
    /// applied: memory first, then CPU, decreases before increases.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resize: Vec<String>,
    /// Container instances removed, by name, in order, when the pod restarts all its
    /// containers in place: the ones reset first, the exited ones whose rule triggered it last.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reset: Vec<String>,
    /// Each step's result, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<ResultExpect>,
}

/// One step's result as a suite expects it: its error kind, not its text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a sync result: `action`, `target`, `error`"
)]
pub struct ResultExpect {
    /// The action (`start_container`, `create_pod_sandbox`, ...).
    pub action: Action,
    /// Its target: a container name, or the pod as `NAME_NAMESPACE(UID)` redacted.
    pub target: String,
    /// The error kind (`CrashLoopBackOff`, ...), absent on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A container's newest instance as a suite expects it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a container's state: `state`, `restarts`, `exit_code`"
)]
pub struct ContainerExpect {
    /// `created`, `running`, `exited` or `unknown`.
    pub state: State,
    /// Its attempt (the kubelet's restart count).
    #[serde(default, skip_serializing_if = "is_default")]
    pub restarts: u32,
    /// Its exit code (0 unless it exited with another).
    #[serde(default, skip_serializing_if = "is_default")]
    pub exit_code: i32,
}

/// One sandbox of the pod as a suite expects it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a sandbox's state: `attempt`, `state`"
)]
pub struct SandboxExpect {
    /// Its attempt.
    #[serde(default, skip_serializing_if = "is_default")]
    pub attempt: u32,
    /// `ready` or `not_ready`.
    pub state: SandboxState,
}

/// The back-off's clock: the wall clock until a step sets it.
struct CaseClock(ManualClock);

impl Clock for CaseClock {
    fn now(&self) -> i64 {
        match self.0.now() {
            0 => WallClock.now(),
            set => set,
        }
    }
}

/// What the case's `sync_pod` steps keep from one to the next.
struct Memory {
    clock: ManualClock,
    backoff: Backoff,
    manifests: BTreeMap<String, k8s::Pod>,
}

impl Memory {
    /// The case's first `sync_pod`: the crash-loop back-off the case's kubelet, gates and cap
    /// give, on the case's clock.
    fn new(world: &World) -> Result<Self, StepError> {
        let clock = ManualClock::at(0);
        let backoff = world.crash_loop_back_off(Arc::new(CaseClock(clock.clone())))?;
        Ok(Self {
            clock,
            backoff,
            manifests: BTreeMap::new(),
        })
    }
}

impl StepDef for SyncPod {
    const NAME: &'static str = "sync_pod";
    const KIND: Kind = Kind::Manager;
    const ABOUT: &'static str = "Today's kubelet's `SyncPod` on a Pod manifest (`pod:` inline, or `file:` beside the suite file, read when the suite loads), `rounds` times or `until` running/settled; checks each round's actions and results and the pod's containers and sandboxes after.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<SyncPodExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.pod(&self.alias)?;
        if self.alias.is_empty() {
            return Err(CheckError::empty("as", "it must name the pod"));
        }
        if self.pod.is_some() && self.file.is_some() {
            return Err(CheckError::conflict("", "pod", "file"));
        }
        match (self.rounds, self.until) {
            (Some(_), Some(_)) => return Err(CheckError::conflict("", "rounds", "until")),
            (Some(0), None) => return Err(CheckError::zero("rounds")),
            (Some(_), None) if self.bound.is_some() => {
                return Err(CheckError::needs(
                    "bound",
                    "until",
                    "it caps `until`'s rounds",
                ))
            }
            _ => {}
        }
        if self.bound == Some(0) {
            return Err(CheckError::zero("bound"));
        }
        if self.now.is_some_and(|now| now <= 0) {
            return Err(CheckError::before_epoch("now"));
        }
        let sandbox_known = scope.sandbox(&self.alias).is_ok();
        if self.file.is_some() && self.from_file.is_none() {
            return Err(CheckError::rule(
                "",
                "its `file` was not read: the suite loader reads it",
            ));
        }
        if let Some(manifest) = self.pod.as_deref().or(self.from_file.as_deref()) {
            let names = container_names(manifest);
            if pod::containers(manifest).is_empty() {
                return Err(CheckError::rule("", "the pod has no `spec.containers`"));
            }
            for name in &names {
                let alias = format!("{}-{name}", self.alias);
                if scope.container(&alias).is_err() {
                    scope.define_container(&alias)?;
                }
            }
        } else if !sandbox_known {
            return Err(CheckError::rule(
                "",
                format!(
                    "pod `{}` has no manifest yet: give `pod` or `file`",
                    self.alias
                ),
            ));
        }
        if !sandbox_known {
            scope.define_sandbox(&self.alias)?;
        }
        if let Some(error) = &self.expect.error {
            scope.text("error", error)?;
        }
        scope.manager_calls += 1;
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let manager = world.ensure_manager().await?;
        let manifest = self.manifest(world)?;
        let kept = world
            .kept
            .remove(Self::NAME)
            .and_then(|kept| kept.downcast::<Memory>().ok());
        let mut memory = match kept {
            Some(kept) => *kept,
            None => Memory::new(world)?,
        };
        memory
            .manifests
            .insert(self.alias.clone(), manifest.clone());
        if let Some(now) = self.now {
            memory.clock.set(now.saturating_mul(1_000_000_000));
        }
        let outcome = self.rounds(world, &manager, &manifest, &mut memory).await;
        world.kept.insert(Self::NAME, Box::new(memory));
        outcome
    }
}

/// The names of a manifest's init and app containers.
/// The names of the manifest's containers, init, regular and ephemeral: each is known to the
/// case as `ALIAS-NAME`.
fn container_names(manifest: &k8s::Pod) -> Vec<String> {
    pod::init_containers(manifest)
        .iter()
        .chain(pod::containers(manifest))
        .map(|c| c.name.clone())
        .chain(
            pod::ephemeral_containers(manifest)
                .iter()
                .map(|c| c.name.clone()),
        )
        .collect()
}

impl SyncPod {
    /// The manifest to sync, with the case's identity for the alias, catalogue images resolved
    /// and the API server's resource defaulting applied.
    fn manifest(&self, world: &World) -> Result<k8s::Pod, StepError> {
        let mut manifest = match self.pod.as_deref().or(self.from_file.as_deref()) {
            Some(pod) => pod.clone(),
            None => world
                .kept
                .get(Self::NAME)
                .and_then(|kept| kept.downcast_ref::<Memory>())
                .and_then(|memory| memory.manifests.get(&self.alias))
                .cloned()
                .ok_or_else(|| {
                    StepError::Unsupported(format!("pod `{}` has no manifest yet", self.alias))
                })?,
        };
        let identity = world.ids.pod(&self.alias);
        manifest.metadata.uid = Some(identity.uid);
        manifest.metadata.name = Some(identity.name);
        manifest.metadata.namespace = Some(identity.namespace);
        if let Some(spec) = manifest.spec.as_mut() {
            for container in spec.init_containers.iter_mut().flatten() {
                resolve_image(world.image_names(), &mut container.image);
            }
            for container in &mut spec.containers {
                resolve_image(world.image_names(), &mut container.image);
            }
            for container in spec.ephemeral_containers.iter_mut().flatten() {
                resolve_image(world.image_names(), &mut container.image);
            }
        }
        // The kubelet sees pods only after the API server's defaulting.
        crate::manager::lifecycle::pod::apply_api_defaults(&mut manifest);
        Ok(manifest)
    }

    async fn rounds(
        &self,
        world: &mut World,
        manager: &crate::manager::KubeGenericRuntimeManager,
        manifest: &k8s::Pod,
        memory: &mut Memory,
    ) -> Result<(), StepError> {
        let mut options = SyncOptions::new(
            world.host_path(POD_LOGS_ROOT)?,
            world.host_path(VOLUMES_ROOT)?,
        );
        options.runtime_handler = world.runtime_handler.clone();
        options.extra_labels = world.ids.base_labels();
        let limit = match self.until {
            Some(_) => self.bound.unwrap_or(DEFAULT_BOUND),
            None => self.rounds.unwrap_or(1),
        };
        let mut rounds = Vec::new();
        let mut seen = None;
        for number in 1..=limit {
            let probes = self.probes(world)?;
            let synced = manager
                .sync_pod(manifest, &probes, &options, &mut memory.backoff)
                .await;
            let sync = match synced {
                Ok(sync) => sync,
                Err(err) => {
                    let text = world.redact(&err.to_string());
                    world
                        .recorder
                        .observe(self.call(number), Err(text.clone()), None);
                    return match &self.expect.error {
                        Some(want) => want.check("error", &text),
                        None => Err(mismatch("error", "success", text)),
                    };
                }
            };
            let now = self.learn(world, manifest).await?;
            let actions = actions_of(manifest, &sync);
            let results = results_of(world, &sync);
            let settled = actions.is_empty();
            let running = pod::containers(manifest).iter().all(|c| {
                now.container(&c.name)
                    .is_some_and(|s| s.exit.state == ContainerState::Running)
            });
            rounds.push(Round::seen(&actions, &results));
            let state = as_referenced(&now, &results);
            world.recorder.observe(
                self.call(number),
                Ok(Answer::Synced {
                    actions,
                    results,
                    state,
                }),
                None,
            );
            seen = Some(now);
            match self.until {
                Some(Until::Running) if running => break,
                Some(Until::Settled) if settled => break,
                Some(until) if number == limit => {
                    return Err(mismatch(
                        "until",
                        format!("{until:?} within {limit} rounds").to_lowercase(),
                        "not reached",
                    ))
                }
                _ => {}
            }
        }
        if let Some(want) = &self.expect.error {
            return Err(mismatch("error", format!("an error ({want:?})"), "success"));
        }
        if let Some(want) = &self.expect.rounds {
            compare("rounds", want, &rounds)?;
        }
        if let Some(seen) = seen {
            if let Some(want) = &self.expect.containers {
                let got: BTreeMap<String, ContainerExpect> = seen
                    .containers
                    .iter()
                    .map(|c| (c.name.clone(), ContainerExpect::from(c)))
                    .collect();
                compare("containers", want, &got)?;
            }
            if let Some(want) = &self.expect.sandboxes {
                let got: Vec<SandboxExpect> =
                    seen.sandboxes.iter().map(SandboxExpect::from).collect();
                compare("sandboxes", want, &got)?;
            }
        }
        Ok(())
    }

    /// The call as the snapshot names it.
    fn call(&self, round: u32) -> String {
        format!("sync_pod {} round {round}", self.alias)
    }

    /// The prober's answers for the newest instances of the named containers.
    fn probes(&self, world: &World) -> Result<ProbeResults, StepError> {
        let id = |name: &str| -> Result<String, StepError> {
            Ok(world
                .aliases
                .container(&format!("{}-{name}", self.alias))?
                .id
                .clone())
        };
        let by_id = |results: &BTreeMap<String, Probe>| {
            results
                .iter()
                .map(|(name, result)| Ok((id(name)?, ProbeResult::from(*result))))
                .collect::<Result<BTreeMap<_, _>, StepError>>()
        };
        let mut probes = ProbeResults {
            liveness: by_id(&self.probes.liveness)?,
            readiness: by_id(&self.probes.readiness)?,
            startup: by_id(&self.probes.startup)?,
        };
        for name in &self.probes.liveness_failed {
            probes.liveness.insert(id(name)?, ProbeResult::Failure);
        }
        Ok(probes)
    }

    /// Reads the pod's sandboxes and containers through the unrecorded client, names each
    /// instance (the newest by the alias, older ones with their attempt) and returns the state.
    async fn learn(&self, world: &mut World, manifest: &k8s::Pod) -> Result<PodSeen, StepError> {
        let uid = pod::uid(manifest).to_owned();
        let mut selector = world.ids.own_selector();
        selector.insert(labels::POD_UID.to_owned(), uid);
        let mut sandboxes = world
            .runtime
            .list_pod_sandbox(Some(v1::PodSandboxFilter {
                label_selector: selector.clone(),
                ..Default::default()
            }))
            .await?;
        let attempt = |m: Option<&v1::PodSandboxMetadata>| m.map_or(0, |m| m.attempt);
        sandboxes.sort_by_key(|s| (attempt(s.metadata.as_ref()), s.created_at));
        let newest = sandboxes.last().map(|s| s.id.clone());
        for sandbox in &sandboxes {
            let number = attempt(sandbox.metadata.as_ref());
            let alias = if Some(&sandbox.id) == newest.as_ref() {
                self.alias.clone()
            } else {
                format!("{}#{number}", self.alias)
            };
            world
                .recorder
                .redactor
                .sandbox(&sandbox.id, &format!("{}#{number}", self.alias));
            world
                .aliases
                .sandboxes
                .retain(|s| s.id != sandbox.id && s.alias != alias);
            world.aliases.sandboxes.push(crate::world::SandboxRef {
                alias,
                id: sandbox.id.clone(),
                pod: self.alias.clone(),
                host_network: false,
                config: v1::PodSandboxConfig::default(),
                log_directory: None,
            });
        }
        // The list has no IP or network mode, and the sandbox is known by its attempt.
        let sandboxes_seen = sandboxes
            .iter()
            .map(|s| SandboxSeen {
                attempt: attempt(s.metadata.as_ref()),
                state: ContainerState::from_cri_sandbox(s.state),
                id: None,
                ip: None,
                network: None,
            })
            .collect();

        let pod_log_dir = build_pod_logs_directory(
            &world.host_path(POD_LOGS_ROOT)?,
            pod::namespace(manifest),
            pod::name(manifest),
            pod::uid(manifest),
        );
        let mut containers = world
            .runtime
            .list_containers(Some(v1::ContainerFilter {
                label_selector: selector,
                ..Default::default()
            }))
            .await?;
        let name_of = |c: &v1::Container| c.metadata.as_ref().map(|m| m.name.clone());
        let attempt_of = |c: &v1::Container| c.metadata.as_ref().map_or(0, |m| m.attempt);
        containers.sort_by_key(|c| (name_of(c), attempt_of(c), c.created_at));
        // Sorted by name, the newest instance of each is pushed in name order.
        let mut seen = Vec::new();
        for (index, container) in containers.iter().enumerate() {
            let name = name_of(container).unwrap_or_default();
            let number = attempt_of(container);
            let is_newest = containers
                .get(index + 1)
                .is_none_or(|next| name_of(next).unwrap_or_default() != name);
            let base = format!("{}-{name}", self.alias);
            let alias = if is_newest {
                base.clone()
            } else {
                format!("{base}#{number}")
            };
            world
                .recorder
                .redactor
                .container(&container.id, &format!("{base}#{number}"));
            world
                .aliases
                .containers
                .retain(|c| c.id != container.id && c.alias != alias);
            world.aliases.containers.push(crate::world::ContainerRef {
                alias,
                id: container.id.clone(),
                name: name.clone(),
                image: container
                    .image
                    .as_ref()
                    .map(|i| i.image.clone())
                    .unwrap_or_default(),
                // Where the sync put its log (`<pod log dir>/<name>/<attempt>.log`), so
                // `check_log` reads what the instance wrote.
                log_path: Some(pod_log_dir.join(build_container_log_path(&name, number))),
            });
            if is_newest {
                let status = world.runtime.container_status(&container.id).await?;
                let exit_code = status.status.as_ref().map_or(0, |s| s.exit_code);
                // Known by its name, the newest instance; its state says what a suite checks.
                seen.push(ContainerSeen {
                    id: None,
                    name,
                    attempt: Some(number),
                    image: None,
                    exit: Exit {
                        state: ContainerState::from_cri_container(container.state),
                        exit_code,
                        reason: None,
                    },
                    just_started: false,
                });
            }
        }
        Ok(PodSeen {
            sandboxes: sandboxes_seen,
            containers: seen,
        })
    }
}

/// A catalogue symbol (`busybox`) to its reference, under a registry prefix the mirror's; a
/// reference stays as it is, but for the prefix.
fn resolve_image(names: &crate::images::ImageNames, image: &mut Option<String>) {
    if let Some(symbol) = image.as_deref() {
        *image = Some(names.resolve(symbol));
    }
}

impl SyncPod {
    /// Reads the manifest `file` names, if it names one, for a step of the suite at
    /// `suite_file` (as the loader names it); `embedded` says the suite is the binary's own,
    /// whose manifests are embedded beside it. The loader calls this before the checks.
    pub(crate) fn read_file(&mut self, suite_file: &str, embedded: bool) -> Result<(), String> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        let path = beside(suite_file, file);
        let text = match embedded.then(|| embedded_file(&path)).flatten() {
            Some(text) => text.to_owned(),
            None => std::fs::read_to_string(&path)
                .map_err(|err| format!("cannot read the manifest `{file}` at {path}: {err}"))?,
        };
        let pod = serde_saphyr::from_str(&text)
            .map_err(|err| format!("`{file}` is not a Pod manifest: {err}"))?;
        self.from_file = Some(Box::new(pod));
        Ok(())
    }
}

/// `file` as seen from the directory of `suite_file`, `/`-separated with `.` and `..` taken
/// out where they can be (the embedded manifests are found by such a path); an absolute `file`
/// as it is.
fn beside(suite_file: &str, file: &str) -> String {
    if Path::new(file).is_absolute() {
        return file.to_owned();
    }
    let mut parts: Vec<&str> = suite_file.split('/').collect();
    parts.pop();
    for part in file.split('/') {
        match part {
            "" | "." => {}
            ".." if parts
                .last()
                .is_some_and(|last| *last != ".." && !last.is_empty()) =>
            {
                parts.pop();
            }
            _ => parts.push(part),
        }
    }
    parts.join("/")
}

/// computePodActions' decision in suite terms, in the order a round lists it: the pod's kill,
/// the sandbox, the kills, the starts (init, then app, then ephemeral), the resizes, the resets.
fn actions_of(manifest: &k8s::Pod, sync: &PodSync) -> Vec<ActionSeen> {
    let a = &sync.actions;
    let names = |indices: &[usize], list: &[k8s::Container]| -> Vec<String> {
        indices
            .iter()
            .filter_map(|&i| list.get(i).map(|c| c.name.clone()))
            .collect()
    };
    let ephemeral: Vec<String> = manifest
        .spec
        .as_ref()
        .and_then(|s| s.ephemeral_containers.as_ref())
        .map(|list| {
            a.ephemeral_containers_to_start
                .iter()
                .filter_map(|&i| list.get(i).map(|c| c.name.clone()))
                .collect()
        })
        .unwrap_or_default();
    // Under LegacySidecarContainers the one next init container comes first.
    let mut start = names(
        &a.next_init_container_to_start
            .into_iter()
            .chain(a.init_containers_to_start.iter().copied())
            .collect::<Vec<_>>(),
        pod::init_containers(manifest),
    );
    start.extend(names(&a.containers_to_start, pod::containers(manifest)));
    start.extend(ephemeral);
    let mut actions = Vec::new();
    if a.kill_pod {
        actions.push(ActionSeen::KillPod);
    }
    if a.create_sandbox {
        actions.push(ActionSeen::CreateSandbox { attempt: a.attempt });
    }
    actions.extend(
        a.containers_to_kill
            .values()
            .map(|k| ActionSeen::Kill(k.name.clone())),
    );
    actions.extend(start.into_iter().map(ActionSeen::Start));
    actions.extend(
        a.containers_to_update
            .iter()
            .flat_map(|(resource, updates)| {
                updates.iter().map(|u| ActionSeen::Resize {
                    container: u.name.clone(),
                    resource: *resource,
                })
            }),
    );
    actions.extend(
        a.containers_to_reset
            .iter()
            .map(|r| ActionSeen::Reset(r.name.clone())),
    );
    actions
}

/// Each step's result, its target and failure text redacted.
fn results_of(world: &World, sync: &PodSync) -> Vec<ResultSeen> {
    sync.result
        .results
        .iter()
        .map(|r| ResultSeen {
            action: r.action,
            target: world.redact(&r.target),
            error: r.error.clone(),
            message: r.error.is_some().then(|| world.redact(&r.message)),
        })
        .collect()
}

impl Round {
    /// A round seen, in the shape a suite writes it.
    fn seen(actions: &[ActionSeen], results: &[ResultSeen]) -> Self {
        let mut round = Round {
            results: results.iter().map(ResultExpect::from).collect(),
            ..Round::default()
        };
        for action in actions {
            match action {
                ActionSeen::KillPod => round.kill_pod = true,
                ActionSeen::CreateSandbox { attempt } => {
                    round.create_sandbox = true;
                    round.attempt = Some(*attempt);
                }
                ActionSeen::Kill(name) => round.kill.push(name.clone()),
                ActionSeen::Start(name) => round.start.push(name.clone()),
                ActionSeen::Reset(name) => round.reset.push(name.clone()),
                ActionSeen::Resize {
                    container,
                    resource,
                } => round
                    .resize
                    .push(format!("{container} {}", resource_name(*resource))),
            }
        }
        round
    }
}

impl From<&ResultSeen> for ResultExpect {
    fn from(seen: &ResultSeen) -> Self {
        Self {
            action: Action(seen.action),
            target: seen.target.clone(),
            error: seen.error.clone(),
        }
    }
}

impl From<&ContainerSeen> for ContainerExpect {
    fn from(seen: &ContainerSeen) -> Self {
        Self {
            state: State(seen.exit.state),
            restarts: seen.attempt.unwrap_or_default(),
            exit_code: seen.exit.exit_code,
        }
    }
}

impl From<&SandboxSeen> for SandboxExpect {
    fn from(seen: &SandboxSeen) -> Self {
        Self {
            attempt: seen.attempt,
            state: if seen.is_ready() {
                SandboxState::Ready
            } else {
                SandboxState::NotReady
            },
        }
    }
}

/// Compares an expectation with what was seen, both printed on one line.
fn compare<T: Serialize + PartialEq>(field: &str, want: &T, got: &T) -> Result<(), StepError> {
    if want == got {
        return Ok(());
    }
    let show = |value: &T| serde_json::to_string(value).unwrap_or_else(|err| err.to_string());
    Err(mismatch(field, show(want), show(got)))
}

/// The pod's state after a round as its reference keeps it: a container the round started
/// (its start answered OK) is read while its process runs on, so whether it is still running
/// or already exited is a race the reference leaves open; the case's own `containers:`
/// expectations judge the state it waited for.
fn as_referenced(now: &PodSeen, results: &[ResultSeen]) -> PodSeen {
    let mut state = now.clone();
    for container in &mut state.containers {
        container.just_started = results.iter().any(|r| {
            r.action == SyncAction::StartContainer
                && r.target == container.name
                && r.error.is_none()
        });
    }
    state
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::beside_an_embedded_suite(
        "suites/lifecycle-sync.yaml",
        "manifests/pod.yaml",
        "suites/manifests/pod.yaml"
    )]
    #[case::dots_taken_out("suites/x.yaml", "./a/../../tests/p.yaml", "tests/p.yaml")]
    #[case::a_suite_in_the_working_directory("x.yaml", "p.yaml", "p.yaml")]
    #[case::above_the_working_directory("x.yaml", "../p.yaml", "../p.yaml")]
    #[case::an_absolute_suite("/etc/suites/x.yaml", "m/p.yaml", "/etc/suites/m/p.yaml")]
    #[case::an_absolute_file("suites/x.yaml", "/srv/p.yaml", "/srv/p.yaml")]
    fn a_manifest_path_is_taken_from_the_suite_files_directory(
        #[case] suite: &str,
        #[case] file: &str,
        #[case] expected: &str,
    ) {
        assert_eq!(beside(suite, file), expected);
    }

    fn step(yaml: &str) -> Result<SyncPod, String> {
        serde_saphyr::from_str(yaml).map_err(|e| e.to_string())
    }

    #[test]
    fn an_inline_manifest_parses_into_a_pod_and_names_its_containers_after_the_alias() {
        let step = step(
            "as: web\npod:\n  spec:\n    initContainers: [{name: init, image: busybox}]\n    containers: [{name: app, image: busybox}]\n",
        );
        let Ok(step) = step else { panic!("{step:?}") };
        let mut scope = Scope::default();
        assert_eq!(step.check(&mut scope), Ok(()));
        assert_eq!(scope.container("web-init"), Ok(()));
        assert_eq!(scope.container("web-app"), Ok(()));
        assert_eq!(scope.sandbox("web"), Ok(()));
    }

    #[test]
    fn a_resync_without_a_manifest_needs_an_earlier_one() {
        let Ok(again) = step("as: web\n") else {
            panic!("parses")
        };
        let mut scope = Scope::default();
        assert!(again
            .check(&mut scope)
            .is_err_and(|e| e.to_string().contains("no manifest")));
        let Ok(first) = step("as: web\npod: {spec: {containers: [{name: app}]}}\n") else {
            panic!("parses")
        };
        assert_eq!(first.check(&mut scope), Ok(()));
        assert_eq!(again.check(&mut scope), Ok(()));
    }

    #[test]
    fn rounds_and_until_exclude_each_other() {
        let Ok(both) =
            step("as: web\nrounds: 2\nuntil: running\npod: {spec: {containers: [{name: app}]}}\n")
        else {
            panic!("parses")
        };
        assert!(both.check(&mut Scope::default()).is_err());
    }

    #[test]
    fn an_unknown_field_of_a_round_is_refused() {
        assert!(step("as: web\nexpect: {rounds: [{starts: [app]}]}\n").is_err());
    }
}
