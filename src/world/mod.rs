//! The world a case's steps run on, in four parts that each own one thing: who the case's pods
//! are (`identity`), which ids its aliases stand for (`aliases`), what it observed
//! (`recorder`), and (here) the clients it reaches the runtime, the mock's control service
//! and the manager through. Each step kind runs itself on a world (`suite::step`); the typed
//! step errors and the field checks are in `check`. The world knows nothing of suites, so the
//! vocabulary above it can grow without a tour of this module.

mod aliases;
mod check;
mod identity;
pub mod pool;
pub mod pulled;
mod recorder;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use tonic::transport::Channel;

pub use aliases::{ContainerRef, SandboxRef};
pub use check::{expect_eq, is_transport, mismatch, show, sorted, StepError};
/// Who a pod is on the wire: its UID, name and namespace.
pub(crate) use identity::Pod as PodWho;
pub use identity::{namespace, namespace_prefix, pod_uid, PodIdentity};
pub use pool::{Pooled, SandboxPool};
pub use pulled::PulledImages;

use self::aliases::Aliases;
use self::identity::Identity;
use self::recorder::Recorder;
use crate::cri::control::mock_control_client::MockControlClient;
use crate::cri::{labels, v1, CriClient};
use crate::images;
use crate::manager::{
    KubeGenericRuntimeManager, KubeletProfile, ManagerError, Pod, RecordingNetworkPlugin,
};
use crate::observe::{Answer, Redactor};

/// How many times a node-wide listing is asked again when it fails under other cases'
/// removals ([`World::list_node_wide`]).
const LISTING_RETRIES: usize = 3;

/// A command that runs until stopped and exits at once on SIGTERM (PID 1 ignores signals it
/// has no handler for), so stopping takes no grace period.
pub const DEFAULT_COMMAND: [&str; 3] = ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"];

/// What the target gives a case.
pub(crate) struct Env {
    /// Unrecorded client for setup, checks and cleanup.
    pub client: CriClient,
    /// The mock's control service, on the mock only.
    pub control: Option<MockControlClient<Channel>>,
    /// The RuntimeClass handler every RunPodSandbox asks for (empty: the default).
    pub runtime_handler: String,
    /// The case's own host directory (made on first use, removed by the runner).
    pub host_dir: PathBuf,
    /// Where to note images the case pulled that the runtime did not have, so the run removes
    /// them at its end (none on the mock, whose images die with it).
    pub pulled: Option<Arc<PulledImages>>,
    /// The kubelet whose rules the case's manager follows.
    pub kubelet: KubeletProfile,
    /// The feature gates the case's manager follows (the run's, then the case's).
    pub feature_gates: crate::manager::FeatureGates,
    /// The node's crash-loop cap the case sets (`crash_loop_back_off:`).
    pub crash_loop_back_off: crate::manager::lifecycle::CrashLoopConfig,
    /// Which attempt at the case this is, from 1 (`run --repeat`, `--rerun-failed`).
    pub attempt: u32,
    /// How the images the case names become the references it sends (`--registry-prefix`).
    pub images: images::ImageNames,
    /// The run's shared sandboxes, for a case whose sandboxes may come from them (see
    /// [`pool`]); none for every other case.
    pub pool: Option<Arc<SandboxPool>>,
}

/// A top-level systemd slice named after `name` (`_` for `-`, which would nest it).
fn systemd_slice(name: &str) -> String {
    format!("/{}.slice", name.replace('-', "_"))
}

/// A case's world.
pub struct World {
    /// Who the case's pods are.
    pub(crate) ids: Identity,
    /// Which ids the aliases stand for.
    pub(crate) aliases: Aliases,
    /// What the case observed.
    pub(crate) recorder: Recorder,
    /// Unrecorded client for setup, checks and cleanup.
    pub(crate) runtime: CriClient,
    /// The manager's client, whose calls are recorded.
    pub(crate) recorded: CriClient,
    /// The mock's control service, on the mock only.
    control: Option<MockControlClient<Channel>>,
    /// The manager, once constructed.
    manager: Option<KubeGenericRuntimeManager>,
    /// The network plugin the manager tears down through.
    pub(crate) plugin: Arc<RecordingNetworkPlugin>,
    /// How the images the case names become the references it sends.
    images: images::ImageNames,
    /// Images pulled so far.
    pulled: BTreeSet<String>,
    /// The run's record of images it pulled.
    run_pulled: Option<Arc<PulledImages>>,
    /// The RuntimeClass handler for RunPodSandbox.
    pub(crate) runtime_handler: String,
    /// The case's host directory.
    host_dir: PathBuf,
    /// Cgroup parents handed to its sandboxes, for the runner to remove.
    cgroup_parents: Vec<String>,
    /// The run's shared sandboxes, when the case's sandboxes come from them.
    pool: Option<Arc<SandboxPool>>,
    /// The shared sandboxes the case holds, for the runner to give back after its sweep.
    held: Vec<Pooled>,
    /// The kubelet whose rules the manager follows.
    kubelet: KubeletProfile,
    /// The feature gates the manager follows.
    feature_gates: crate::manager::FeatureGates,
    /// The node's crash-loop cap.
    crash_loop_back_off: crate::manager::lifecycle::CrashLoopConfig,
    /// Which attempt at the case this is, from 1.
    attempt: u32,
    /// What a step kind keeps from one step to the next of a case (the kubelet's memory across
    /// syncs: the back-off, the last manifest), by the step's name; the world does not read it.
    pub(crate) kept: BTreeMap<&'static str, Box<dyn std::any::Any + Send + Sync>>,
    /// What steps saw that no clause requires (keys a runtime added, say), or that broke a
    /// clause other than the step's own, for the case's notes at `observed` level.
    observations: Vec<StepNote>,
    /// The clause the running step judges (the case's or its own), if it expects anything.
    judged: Option<String>,
}

/// What a step saw besides its verdict: something no clause requires (`clause: None`, noted at
/// the step's clause), or a broken clause that is not the step's to judge, noted at that
/// clause and judged in its own case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepNote {
    /// The clause the note is at; `None`: the step's own.
    pub clause: Option<&'static str>,
    /// What was seen, redacted.
    pub what: String,
}

/// Maps a control-service failure of a step to its error.
pub fn control_failed(step: &'static str) -> impl Fn(tonic::Status) -> StepError {
    move |status| StepError::Control {
        step,
        code: status.code(),
        message: status.message().to_owned(),
    }
}

/// A seeded object's creation time: the given Unix seconds, or now.
pub fn seed_time(seconds: Option<i64>) -> i64 {
    match seconds {
        Some(s) => s.saturating_mul(1_000_000_000),
        None => SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)),
    }
}

impl World {
    /// The world of case `case_no` of run `run_id`, whose steps name the pods `mentioned` and
    /// which fixes the identities `fixed`.
    pub(crate) fn new(
        env: Env,
        run_id: &str,
        case_no: usize,
        mentioned: &BTreeSet<String>,
        fixed: &BTreeMap<String, PodIdentity>,
    ) -> Self {
        let ids = Identity::new(run_id, case_no, mentioned, fixed, env.kubelet);
        let log = crate::cri::CallLog::new();
        let recorded = env.client.with_call_log(log.clone());
        let mut redactor = Redactor::new(run_id, &ids.namespace, case_no);
        redactor.endpoint(env.client.endpoint());
        ids.teach(&mut redactor, fixed);
        // A reference result is the same with and without a registry prefix.
        for (sent, public) in env.images.repositories_shown() {
            redactor.literal_as(&sent, &public);
        }
        Self {
            ids,
            aliases: Aliases::new(run_id, case_no),
            recorder: Recorder::new(log, redactor),
            runtime: env.client,
            recorded,
            control: env.control,
            manager: None,
            plugin: Arc::new(RecordingNetworkPlugin::new()),
            images: env.images,
            pulled: BTreeSet::new(),
            run_pulled: env.pulled,
            runtime_handler: env.runtime_handler,
            host_dir: env.host_dir,
            cgroup_parents: Vec::new(),
            pool: env.pool,
            held: Vec::new(),
            kubelet: env.kubelet,
            feature_gates: env.feature_gates,
            crash_loop_back_off: env.crash_loop_back_off,
            attempt: env.attempt,
            kept: BTreeMap::new(),
            observations: Vec::new(),
            judged: None,
        }
    }

    /// The unrecorded client, for cleanup.
    pub(crate) fn client(&self) -> &CriClient {
        &self.runtime
    }

    /// Which attempt at the case this is, from 1: a fault can land on some attempts only.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The redacted snapshot body: one entry per manager call.
    pub(crate) fn snapshot_body(&self) -> String {
        self.recorder.snapshot_body()
    }

    /// Everything observed so far.
    pub fn observations(&self) -> &[crate::observe::Observation] {
        self.recorder.observations()
    }

    /// Notes what a step saw that no clause requires (in suite terms), for the case's notes.
    pub fn note_observed(&mut self, what: String) {
        let what = self.redact(&what);
        self.observations.push(StepNote { clause: None, what });
    }

    /// A listing that reads every object of its kind on the node. It races with the removals
    /// other cases make beside this one (at `--parallel` above 1), and a runtime may fail the
    /// whole listing when one object vanishes under it: containerd 1.6.20 answers
    /// ListContainerStats with NotFound, CRI-O 1.36.3 answers ListImages with Unknown. The
    /// kubelet's stats provider and image manager ask again on their next tick; so does this,
    /// up to [`LISTING_RETRIES`] times, noting each retry. Any other error, or the same one
    /// after the last retry, is the answer.
    pub(crate) async fn list_node_wide<T, Fut>(
        &mut self,
        method: &str,
        call: impl Fn(CriClient) -> Fut,
    ) -> Result<T, crate::cri::CallError>
    where
        Fut: std::future::Future<Output = Result<T, crate::cri::CallError>>,
    {
        let mut result = call(self.runtime.clone()).await;
        for _ in 0..LISTING_RETRIES {
            match &result {
                Err(err) if matches!(err.code, tonic::Code::NotFound | tonic::Code::Unknown) => {
                    self.note_observed(format!(
                        "{method} failed, as a node-wide listing can while objects are removed beside it; asked again: {err}"
                    ));
                    crate::timing::pause(std::time::Duration::from_millis(50)).await;
                    result = call(self.runtime.clone()).await;
                }
                _ => break,
            }
        }
        result
    }

    /// Which clause the next step judges (`None`: it only sets up); the runner says so
    /// before each step.
    pub(crate) fn enter_step(&mut self, judged: Option<&str>) {
        self.judged = judged.map(str::to_owned);
    }

    /// The outcome of a check of `clause` that a step makes on the way: the step's failure when
    /// the step judges that clause, else a note at it, and the step goes on. A setup step
    /// then checks only what its case needs, and each clause is judged in its own case, once.
    pub(crate) fn check_on_the_way(
        &mut self,
        clause: &'static str,
        check: Result<(), StepError>,
    ) -> Result<(), StepError> {
        match check {
            Err(err) if self.judged.as_deref() != Some(clause) => {
                let what = self.redact(&format!("{err} (judged by the cases of {clause})"));
                self.observations.push(StepNote {
                    clause: Some(clause),
                    what,
                });
                Ok(())
            }
            other => other,
        }
    }

    /// What the steps observed since the last call (see [`World::note_observed`]).
    pub fn take_observations(&mut self) -> Vec<StepNote> {
        std::mem::take(&mut self.observations)
    }

    /// Redacts text for messages.
    pub fn redact(&self, text: &str) -> String {
        self.recorder.redactor.text(text)
    }

    /// The reference the case sends for an image it names (a catalogue symbol or a
    /// reference): under a registry prefix, the mirror's.
    pub fn image(&self, symbol_or_ref: &str) -> String {
        self.images.resolve(symbol_or_ref)
    }

    /// How the case's image names become references, for helpers that resolve several.
    pub fn image_names(&self) -> &images::ImageNames {
        &self.images
    }

    /// Pulls an image unless the runtime has it already. The run's cases take turns, as the
    /// kubelet pulls one image at a time by default (`serializeImagePulls`): a case never
    /// pulls an image another case is pulling, or uses it while that pull updates it.
    pub(crate) async fn pull(&mut self, symbol: &str) -> Result<(), StepError> {
        let image = self.image(symbol);
        if self.pulled.contains(&image) {
            return Ok(());
        }
        let run_pulled = self.run_pulled.clone();
        let _turn = match &run_pulled {
            Some(pulled) => Some(pulled.one_at_a_time().await),
            None => None,
        };
        // A runtime that already has the image answers ImageStatus without the registry.
        if self.runtime.image_status(&image).await?.is_none() {
            // Noted before the pull: a pull cut short (a signal) may still finish on the
            // runtime, and removing an image that never came is no error.
            self.note_pulled(&image);
            self.runtime.pull_image(&image).await?;
        }
        self.pulled.insert(image);
        Ok(())
    }

    /// Forgets which images the case has pulled, after it removed one: an image can go under
    /// several references at once (all its tags), so the next pull asks the runtime again.
    pub(crate) fn forget_pulled(&mut self) {
        self.pulled.clear();
    }

    /// Notes an image the case pulled that the runtime did not have, for the run to remove
    /// when it ends (a case that removes it itself leaves nothing to do).
    pub(crate) fn note_pulled(&self, image: &str) {
        if let Some(pulled) = &self.run_pulled {
            pulled.note(image);
        }
    }

    /// The cgroup parent of sandbox `alias`: a top-level cgroup named after the case's
    /// namespace, noted so the runner removes it with the case (see
    /// [`crate::runner::host::remove_cgroups`]).
    pub(crate) fn cgroup_parent(&mut self, alias: &str) -> String {
        let parent = format!("/{}-{alias}", self.ids.namespace);
        self.cgroup_parents.push(parent.clone());
        parent
    }

    /// The cgroup parent of sandbox `alias` in the form the runtime's cgroup driver takes, as
    /// critest v1.36.0 asks RuntimeConfig for it (`GetCgroupParent`): under systemd a top-level
    /// slice (`_` for `-`, which would nest it), else the path [`World::cgroup_parent`] makes.
    /// Unlike critest, a runtime without RuntimeConfig gets the path (critest assumes systemd):
    /// the kubelet's default driver is cgroupfs. RuntimeConfig is asked once per case.
    pub(crate) async fn cgroup_parent_for_driver(&mut self, alias: &str) -> String {
        if !self.cgroup_driver_is_systemd().await {
            return self.cgroup_parent(alias);
        }
        let parent = systemd_slice(&format!("{}-{alias}", self.ids.namespace));
        self.cgroup_parents.push(parent.clone());
        parent
    }

    /// The cgroup parent of a shared sandbox named `name`, as [`World::cgroup_parent_for_driver`]
    /// forms one, but not the case's to remove: the run removes it at its end.
    pub(crate) async fn pool_cgroup_parent(&mut self, name: &str) -> String {
        if self.cgroup_driver_is_systemd().await {
            systemd_slice(name)
        } else {
            format!("/{name}")
        }
    }

    /// Whether the runtime's cgroup driver is systemd, asked of RuntimeConfig once per case.
    async fn cgroup_driver_is_systemd(&mut self) -> bool {
        const KEY: &str = "cgroup_driver";
        if let Some(&systemd) = self.kept.get(KEY).and_then(|k| k.downcast_ref::<bool>()) {
            return systemd;
        }
        let systemd = self.runtime.runtime_config().await.is_ok_and(|answer| {
            answer
                .linux
                .is_some_and(|l| l.cgroup_driver == v1::CgroupDriver::Systemd as i32)
        });
        self.kept.insert(KEY, Box::new(systemd));
        systemd
    }

    /// The run's shared sandboxes, when the case's sandboxes come from them.
    pub(crate) fn pool(&self) -> Option<Arc<SandboxPool>> {
        self.pool.clone()
    }

    /// Notes a shared sandbox the case now holds.
    pub(crate) fn hold(&mut self, pooled: Pooled) {
        self.held.push(pooled);
    }

    /// The shared sandboxes the case held, for the runner to give back or leave out.
    pub(crate) fn take_held(&mut self) -> Vec<Pooled> {
        std::mem::take(&mut self.held)
    }

    /// The cgroup parents the case's sandboxes asked for.
    pub(crate) fn cgroup_parents(&self) -> &[String] {
        &self.cgroup_parents
    }

    /// The case's host directory, made on first use. Log directories and volumes live under
    /// it; the runner removes it with the case.
    pub(crate) fn host_dir(&self) -> Result<&Path, StepError> {
        std::fs::create_dir_all(&self.host_dir).map_err(|err| {
            StepError::Unsupported(format!(
                "cannot make the case's host directory {}: {err}",
                self.host_dir.display()
            ))
        })?;
        Ok(&self.host_dir)
    }

    /// A path under the case's host directory (made on first use); `relative` must stay
    /// inside it (the loader checks suite paths).
    pub(crate) fn host_path(&self, relative: &str) -> Result<PathBuf, StepError> {
        Ok(self.host_dir()?.join(relative))
    }

    /// The mock's control service, or why the target has none.
    pub(crate) fn control(
        &self,
        step: &'static str,
    ) -> Result<MockControlClient<Channel>, StepError> {
        self.control.clone().ok_or_else(|| {
            StepError::Unsupported(format!(
                "{step}: the target has no mock control service (the case needs mock_control)"
            ))
        })
    }

    /// Records a manager call's outcome.
    pub(crate) fn observe<T>(
        &mut self,
        call: impl Into<String>,
        result: &Result<T, ManagerError>,
        answer: impl FnOnce(&T) -> Answer,
    ) {
        let outcome = result.as_ref().map(answer).map_err(ToString::to_string);
        self.recorder.observe(call, outcome, None);
    }

    /// The crash-loop back-off today's kubelet (or the seed) would run with under the case's
    /// gates and crash-loop cap, on `clock`; a cap the kubelet would refuse is the step's error.
    pub(crate) fn crash_loop_back_off(
        &self,
        clock: Arc<dyn crate::manager::lifecycle::Clock>,
    ) -> Result<crate::manager::lifecycle::Backoff, StepError> {
        crate::manager::lifecycle::Backoff::crash_loop(
            clock,
            self.kubelet,
            &self.feature_gates,
            &self.crash_loop_back_off,
        )
        .map_err(|err| StepError::Unsupported(format!("the kubelet would refuse to start: {err}")))
    }

    /// The manager, constructed (and recorded) on first use; a failed construction is the
    /// step's error.
    pub(crate) async fn ensure_manager(&mut self) -> Result<KubeGenericRuntimeManager, StepError> {
        if let Some(manager) = &self.manager {
            return Ok(manager.clone());
        }
        self.construct()
            .await
            .map_err(|err| mismatch("new_manager", "success", self.redact(&err.to_string())))
    }

    /// Constructs the manager (recording the construction), which asks the runtime for its
    /// version once; later manager calls use it.
    pub(crate) async fn construct(&mut self) -> Result<KubeGenericRuntimeManager, ManagerError> {
        let result = KubeGenericRuntimeManager::new(self.recorded.clone(), self.plugin.clone())
            .await
            .map(|manager| {
                manager
                    .with_profile(self.kubelet)
                    .with_feature_gates(self.feature_gates.clone())
            });
        if let Ok(manager) = &result {
            self.recorder.redactor.runtime(manager.runtime_type());
            self.manager = Some(manager.clone());
        }
        self.observe("new_manager", &result, |m| Answer::Constructed {
            runtime_type: m.runtime_type().to_owned(),
        });
        result
    }

    /// The case's own pods of a listing, in a stable order: a real runtime lists other pods
    /// too, and lists in no fixed order.
    pub(crate) fn own_pods(&self, pods: Vec<Pod>) -> Vec<Pod> {
        let uids = self.ids.uids();
        let mut own: Vec<Pod> = pods
            .into_iter()
            .filter(|pod| uids.contains(&pod.id) || pod.id.is_empty())
            .map(|mut pod| {
                if pod.id.is_empty() {
                    // Unlabelled containers of anyone collapse here; keep ours.
                    pod.containers.retain(|c| self.aliases.is_known(&c.id.id));
                    pod.sandboxes.retain(|s| self.aliases.is_known(&s.id.id));
                }
                pod.containers.sort_by_cached_key(|c| self.rank(&c.id.id));
                pod.sandboxes.sort_by_cached_key(|s| self.rank(&s.id.id));
                pod
            })
            .filter(|pod| {
                !pod.id.is_empty() || !pod.containers.is_empty() || !pod.sandboxes.is_empty()
            })
            .collect();
        own.sort_by(|a, b| a.id.cmp(&b.id));
        own
    }

    /// Sorts by the order the case made things in, unknown ids last (by their redacted form,
    /// which costs a redaction: callers sort with a cached key).
    fn rank(&self, id: &str) -> (usize, String) {
        (self.aliases.rank(id), self.redact(id))
    }

    /// A sandbox or container id in suite terms: its alias, else its redacted form.
    pub(crate) fn alias_of(&self, id: &str) -> String {
        self.aliases
            .alias_of(id)
            .map_or_else(|| self.redact(id), str::to_owned)
    }

    /// A pod UID in suite terms.
    pub(crate) fn pod_alias_of(&self, uid: &str) -> String {
        self.ids
            .alias_of(uid)
            .map_or_else(|| self.redact(uid), str::to_owned)
    }

    /// A sync result's target in suite terms: a pod alias for a UID, a container alias for a
    /// container name or id.
    pub(crate) fn target_alias(&self, target: &str) -> String {
        if let Some(pod) = self.ids.alias_of(target) {
            return pod.to_owned();
        }
        if let Some(alias) = self.aliases.container_alias_of(target) {
            return alias.to_owned();
        }
        self.alias_of(target)
    }

    /// The running pod `get_pods(true)` reports for a pod alias, sandboxes newest-created
    /// first and containers in creation order, the same on every runtime.
    pub(crate) async fn running_pod(
        &mut self,
        manager: &KubeGenericRuntimeManager,
        pod: &str,
    ) -> Result<Pod, StepError> {
        let identity = self.ids.pod(pod);
        let pods = manager.get_pods(true).await;
        // Finding the running pod is not the call under test.
        self.recorder.forget_calls();
        let pods = pods.map_err(|err| {
            StepError::Unsupported(format!("listing the running pod failed: {err}"))
        })?;
        let mut running = pods
            .into_iter()
            .find(|p| p.id == identity.uid)
            .unwrap_or_else(|| Pod {
                id: identity.uid,
                name: identity.name,
                namespace: identity.namespace,
                ..Default::default()
            });
        // Runtimes list in no fixed order (containerd's is a map's); the seed takes the first
        // sandbox for the latest.
        running
            .sandboxes
            .sort_by_cached_key(|s| std::cmp::Reverse(self.rank(&s.id.id)));
        running
            .containers
            .sort_by_cached_key(|c| self.rank(&c.id.id));
        Ok(running)
    }

    /// After a kill: every sandbox of the pod is not ready and none of its containers runs.
    /// `answered_stopped` holds the ids the runtime answered StopPodSandbox or StopContainer
    /// for as done: when all that is still ready or running is among them, the break is of
    /// the runtime's stop clause rather than of the kill's.
    pub(crate) async fn check_stopped(
        &self,
        pod: &str,
        answered_stopped: &BTreeSet<String>,
    ) -> Result<(), StepError> {
        // What is left (`what` names it), as a mismatch of `stopped`; the runtime's `clause`
        // when it had answered the stop of every leftover as done.
        let leftover = |clause: &'static str, what: &str, ids: &[&str]| {
            let shown: Vec<String> = ids.iter().map(|id| self.alias_of(id)).collect();
            let error = mismatch("stopped", "all", format!("{what}: {}", show(&shown)));
            if ids.iter().all(|id| answered_stopped.contains(*id)) {
                StepError::Breaks {
                    clause,
                    error: Box::new(error),
                }
            } else {
                error
            }
        };
        let uid = self.ids.uid(pod);
        let own = self.ids.own_selector();
        let sandboxes = self
            .runtime
            .list_pod_sandbox(Some(v1::PodSandboxFilter {
                label_selector: own.clone(),
                ..Default::default()
            }))
            .await?;
        let pod_sandboxes: Vec<&v1::PodSandbox> = sandboxes
            .iter()
            .filter(|s| s.metadata.as_ref().is_some_and(|m| m.uid == uid))
            .collect();
        let ready: Vec<&str> = pod_sandboxes
            .iter()
            .filter(|s| s.state == v1::PodSandboxState::SandboxReady as i32)
            .map(|s| s.id.as_str())
            .collect();
        if !ready.is_empty() {
            return Err(leftover(
                "sandbox.stop.not-ready",
                "sandboxes still ready",
                &ready,
            ));
        }
        let sandbox_ids: BTreeSet<&str> = pod_sandboxes.iter().map(|s| s.id.as_str()).collect();
        let containers = self
            .runtime
            .list_containers(Some(v1::ContainerFilter {
                label_selector: own,
                ..Default::default()
            }))
            .await?;
        let running: Vec<&str> = containers
            .iter()
            .filter(|c| {
                c.labels.get(labels::POD_UID) == Some(&uid)
                    || sandbox_ids.contains(c.pod_sandbox_id.as_str())
            })
            .filter(|c| c.state == v1::ContainerState::ContainerRunning as i32)
            .map(|c| c.id.as_str())
            .collect();
        if !running.is_empty() {
            return Err(leftover(
                "container.stop.exited",
                "containers still running",
                &running,
            ));
        }
        Ok(())
    }
}
