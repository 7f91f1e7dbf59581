//! Running sequences: each op is resolved against the [`Model`], made on the runtime, and its
//! answer checked by the clause the model names; after each call the runtime's listing of the
//! sequence's own objects (by its run and case labels) is checked against the model as well,
//! and at the end, once the model's objects are removed, that nothing of the sequence is left.
//! Workers run sequences side by side. A failure no known finding explains is run again: one
//! that every replay shows is shrunk with proptest's value tree to the fewest calls that still
//! break the same clause; one that only some replays show is a race, counted as flaky and kept
//! as found (a shrink needs a break that holds), and the run goes on.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use sha2::{Digest, Sha256};

use super::model::{cstate_of, Answer, Call, Listing, Model, Target};
use super::ops::{self, CState, Img, Op, Tier, TIER_LABEL};
use crate::contract::known::KnownFindings;
use crate::cri::{labels, namespace_options, v1, CallError, Container, CriClient, PodSandbox};
use crate::images;
use crate::manager::ContainerState;
use crate::mock::{Defect, MockRuntime};
use crate::runner::case::DEFAULT_COMMAND;
use crate::suite::step::BUSYBOX;

/// The image of the fuzzer's absent-image calls: no registry serves it and nothing pulls it.
pub const ABSENT_IMAGE: &str = "localhost/cri-harness-fuzz/absent:never";

/// The catalogue images workers pull and remove at will, one per worker; workers past these
/// make no calls on a removable image. None is an image any suite keeps or a container runs.
pub const REMOVABLE_IMAGES: &[&str] = &[
    "test-image-predefined-group",
    "test-image-user-uid-group",
    "test-image-user-username-group",
];

/// The ExecSync command and what it prints.
pub const EXEC_COMMAND: [&str; 2] = ["echo", "fuzz"];
/// What [`EXEC_COMMAND`] prints.
pub const EXEC_OUTPUT: &str = "fuzz\n";
/// The command of a container whose process exits at once.
pub const EXITING_COMMAND: [&str; 1] = ["true"];

/// A break of the contract: the call, the clause, what the model allowed and what came.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The clause broken.
    pub clause: &'static str,
    /// Index of the call in [`Executed::calls`] (the calls made); `None` for the end check.
    pub at: Option<usize>,
    /// What the model allowed.
    pub expected: String,
    /// What the runtime did.
    pub actual: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{}] expected {}, got {}",
            self.clause, self.expected, self.actual
        )
    }
}

/// One sequence as run.
#[derive(Debug, Clone, Default)]
pub struct Executed {
    /// The calls made, in order (skipped ops leave none).
    pub calls: Vec<Call>,
    /// CRI calls made, checks and cleanup included.
    pub rpcs: u64,
    /// The first break, if any.
    pub failure: Option<Failure>,
    /// Whether the removable image was removed before the sequence.
    pub removable_setup: bool,
}

/// An infrastructure error: the run cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum FuzzError {
    /// A call outside the checks (setup, cleanup) failed.
    #[error("{what}")]
    Call {
        /// What was being done.
        what: String,
        /// The call's error.
        #[source]
        source: CallError,
    },
    /// The in-process mock would not start.
    #[error("starting the in-process mock: {0}")]
    Mock(String),
    /// The sequence's cgroups could not be removed.
    #[error("{0}")]
    Cgroups(String),
    /// proptest could not generate a sequence.
    #[error("generating a sequence: {0}")]
    Generate(String),
}

/// Where a sequence runs and how its objects are named.
#[derive(Debug, Clone)]
pub struct Env {
    /// The client.
    pub client: CriClient,
    /// The run id label.
    pub run_id: String,
    /// The case label: unique per sequence in the run.
    pub case: String,
    /// The removable image's reference, if this worker owns one.
    pub removable: Option<String>,
    /// Give each sandbox a cgroup parent of its own, as the kubelet does (containerd answers
    /// no pod stats without one): `Some(systemd)` in the runtime's driver's form; `None` on
    /// the mock, which makes no cgroups.
    pub cgroups: Option<bool>,
    /// How the images the sequence names become references (`--registry-prefix`).
    pub images: images::ImageNames,
}

impl Env {
    fn own(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            (labels::RUN_ID.to_owned(), self.run_id.clone()),
            (labels::CASE.to_owned(), self.case.clone()),
        ])
    }

    fn selector(&self, tier: Option<Tier>) -> BTreeMap<String, String> {
        let mut own = self.own();
        if let Some(tier) = tier {
            own.insert(TIER_LABEL.to_owned(), tier.value().to_owned());
        }
        own
    }

    fn unknown_id(&self) -> String {
        hex::encode(Sha256::digest(
            format!("{}/{}/unknown", self.run_id, self.case).as_bytes(),
        ))
    }

    fn image(&self, img: Img) -> String {
        match img {
            Img::Busybox => self.images.resolve(BUSYBOX),
            Img::Removable => self.removable.clone().unwrap_or_default(),
            Img::Absent => self.images.map(ABSENT_IMAGE),
        }
    }

    /// The cgroup parent of sandbox `n`, named as `clean --run-id` finds a run's cgroups.
    fn cgroup_parent(&self, n: usize) -> Option<String> {
        let name = format!(
            "{}{}-s{n}",
            crate::world::namespace_prefix(&self.run_id),
            self.case
        );
        self.cgroups.map(|systemd| {
            if systemd {
                format!("/{}.slice", name.replace('-', "_"))
            } else {
                format!("/{name}")
            }
        })
    }

    /// The sandbox config of sandbox `n`.
    pub fn sandbox_config(&self, n: usize, host_network: bool, tier: Tier) -> v1::PodSandboxConfig {
        let name = format!("fuzz-s{n}");
        let mut labels = self.selector(Some(tier));
        labels.insert(labels::POD_NAME.to_owned(), name.clone());
        let uid = format!("{}-{}-s{n}", self.run_id, self.case);
        let namespace = format!("cri-harness-fuzz-{}", self.run_id);
        PodSandbox::new(&name, &namespace, &uid)
            .network(host_network)
            .labels(labels)
            .cgroup_parent(self.cgroup_parent(n).unwrap_or_default())
            .build()
    }

    fn container_config(
        &self,
        n: usize,
        exits: bool,
        tier: Tier,
        host_network: bool,
    ) -> v1::ContainerConfig {
        let command: Vec<String> = if exits {
            EXITING_COMMAND.iter().map(|s| (*s).to_owned()).collect()
        } else {
            DEFAULT_COMMAND.iter().map(|s| (*s).to_owned()).collect()
        };
        Container::new(
            &format!("c{n}"),
            &self.images.resolve(BUSYBOX),
            namespace_options(host_network),
        )
        .command(command)
        .labels(self.selector(Some(tier)))
        .build()
    }
}

/// The runtime's ids of the sequence's objects, by number.
#[derive(Debug, Default)]
struct Ids {
    sandboxes: Vec<String>,
    configs: Vec<v1::PodSandboxConfig>,
    containers: Vec<String>,
}

impl Ids {
    fn sandbox(&self, t: Target, env: &Env) -> String {
        match t {
            Target::N(n) => self.sandboxes[n].clone(),
            Target::Unknown => env.unknown_id(),
        }
    }

    fn container(&self, t: Target, env: &Env) -> String {
        match t {
            Target::N(n) => self.containers[n].clone(),
            Target::Unknown => env.unknown_id(),
        }
    }
}

fn uses_busybox(ops: &[Op]) -> bool {
    ops.iter().any(|op| {
        matches!(
            op,
            Op::CreateContainer { .. }
                | Op::PullImage(Img::Busybox)
                | Op::ImageStatus(Img::Busybox)
                | Op::ListImages(Img::Busybox)
        )
    })
}

fn uses_removable(ops: &[Op]) -> bool {
    ops.iter().any(|op| {
        matches!(
            op,
            Op::PullImage(Img::Removable)
                | Op::ImageStatus(Img::Removable)
                | Op::ListImages(Img::Removable)
                | Op::RemoveImage(Img::Removable)
        )
    })
}

fn setup_error(what: &str) -> impl FnOnce(CallError) -> FuzzError + '_ {
    move |source| FuzzError::Call {
        what: what.to_owned(),
        source,
    }
}

/// Shows a set of object numbers as aliases (`[s0, s2]`).
fn show(prefix: char, set: &BTreeSet<usize>) -> String {
    let items: Vec<String> = set.iter().map(|n| format!("{prefix}{n}")).collect();
    format!("[{}]", items.join(", "))
}

fn listing_text(prefix: char, listing: &Listing) -> String {
    if listing.may.is_empty() {
        show(prefix, &listing.must)
    } else {
        format!(
            "{} (and maybe {})",
            show(prefix, &listing.must),
            show(prefix, &listing.may)
        )
    }
}

fn answer_text(answer: &Result<(), CallError>) -> String {
    match answer {
        Ok(()) => "OK".to_owned(),
        Err(err) => format!("{:?}: {}", err.code, err.message),
    }
}

/// Runs `ops` on `env`; the objects it made are removed by their labels whatever happens.
pub async fn run_sequence(env: &Env, ops: &[Op]) -> Result<Executed, FuzzError> {
    let mut executed = Executed::default();
    let outcome = sequence_body(env, ops, &mut executed).await;
    let cleaned = cleanup(env, &mut executed.rpcs).await;
    outcome?;
    cleaned?;
    if env.cgroups.is_some() {
        let made = executed
            .calls
            .iter()
            .filter(|c| matches!(c, Call::RunSandbox { .. }))
            .count();
        let parents: Vec<String> = (0..made).filter_map(|n| env.cgroup_parent(n)).collect();
        crate::runner::host::remove_cgroups(&parents).map_err(FuzzError::Cgroups)?;
    }
    Ok(executed)
}

async fn sequence_body(env: &Env, ops: &[Op], executed: &mut Executed) -> Result<(), FuzzError> {
    let client = &env.client;
    if uses_busybox(ops) {
        let image = env.images.resolve(BUSYBOX);
        executed.rpcs += 1;
        if client
            .image_status(&image)
            .await
            .map_err(setup_error("asking for busybox"))?
            .is_none()
        {
            executed.rpcs += 1;
            client
                .pull_image(&image)
                .await
                .map_err(setup_error("pulling busybox"))?;
        }
    }
    let removable = if env.removable.is_some() && uses_removable(ops) {
        // A precondition: the runtime may answer either way for an image it lacks.
        executed.rpcs += 1;
        let _ = client.remove_image(&env.image(Img::Removable)).await;
        executed.removable_setup = true;
        Some(false)
    } else {
        None
    };
    let mut model = Model::new(removable);
    let mut ids = Ids::default();
    for op in ops {
        let Some(call) = model.resolve(op) else {
            continue;
        };
        let at = executed.calls.len();
        executed.calls.push(call.clone());
        let expect = model.expect(&call);
        let (answer, detail) = make(env, &mut ids, &model, &call, &mut executed.rpcs).await;
        let fails = |expected: String, actual: String| Failure {
            clause: expect.clause,
            at: Some(at),
            expected,
            actual,
        };
        let agrees = match (&answer, expect.answer) {
            (Ok(()), Answer::Ok | Answer::Either) => true,
            (Err(err), Answer::NotFound) => err.code == tonic::Code::NotFound,
            (Err(_), Answer::Fails | Answer::Either) => true,
            _ => false,
        };
        if !agrees {
            let wanted = match expect.answer {
                Answer::Ok => "OK",
                Answer::NotFound => "NotFound",
                Answer::Fails => "an error",
                Answer::Either => "any answer",
            };
            executed.failure = Some(fails(wanted.to_owned(), answer_text(&answer)));
            return Ok(());
        }
        if let Err(mut failure) = detail {
            failure.at = Some(at);
            executed.failure = Some(failure);
            return Ok(());
        }
        model.apply(&call, answer.is_ok());
        if let Some(failure) = check_listed(env, &ids, &mut model, &mut executed.rpcs).await? {
            executed.failure = Some(Failure {
                at: Some(at),
                ..failure
            });
            return Ok(());
        }
    }
    // The end: stop and remove what the model holds, as a kubelet does (each answer checked
    // by its clause); then nothing of the sequence may be listed.
    let (sandboxes, containers) = model.live();
    let end = |clause: &'static str, what: String, err: CallError| Failure {
        clause,
        at: None,
        expected: format!("{what} OK at the end"),
        actual: answer_text(&Err(err)),
    };
    for n in containers {
        executed.rpcs += 2;
        let id = &ids.containers[n];
        if let Err(err) = client.stop_container(id, 0).await {
            executed.failure = Some(end(
                "container.stop.exited",
                format!("StopContainer c{n}"),
                err,
            ));
            return Ok(());
        }
        if let Err(err) = client.remove_container(id).await {
            executed.failure = Some(end(
                "container.remove.any-state",
                format!("RemoveContainer c{n}"),
                err,
            ));
            return Ok(());
        }
    }
    for n in sandboxes {
        executed.rpcs += 1;
        if let Err(err) = client.remove_pod_sandbox(&ids.sandboxes[n]).await {
            executed.failure = Some(end(
                "sandbox.remove.gone",
                format!("RemovePodSandbox s{n}"),
                err,
            ));
            return Ok(());
        }
    }
    for s in &mut model.sandboxes {
        s.removed = true;
        s.clause = "sandbox.remove.gone";
    }
    for c in &mut model.containers {
        c.removed = true;
        c.clause = "container.remove.gone";
    }
    if let Some(failure) = check_listed(env, &ids, &mut model, &mut executed.rpcs).await? {
        executed.failure = Some(Failure {
            at: None,
            ..failure
        });
    }
    Ok(())
}

/// Removes whatever the sequence's labels still find.
async fn cleanup(env: &Env, rpcs: &mut u64) -> Result<(), FuzzError> {
    let client = &env.client;
    *rpcs += 2;
    let containers = client
        .list_containers(Some(v1::ContainerFilter {
            label_selector: env.own(),
            ..Default::default()
        }))
        .await
        .map_err(setup_error("listing the sequence's containers (cleanup)"))?;
    for c in containers {
        // Stopped first, and retried: containerd 1.6 can refuse to remove a container it is
        // still stopping ("container is still running, to stop first").
        let mut tries = 0;
        loop {
            *rpcs += 2;
            let _ = client.stop_container(&c.id, 0).await;
            match client.remove_container(&c.id).await {
                Ok(()) => break,
                Err(_) if tries < 5 => {
                    tries += 1;
                    crate::timing::pause(Duration::from_millis(200)).await;
                }
                Err(err) => return Err(setup_error("removing a container (cleanup)")(err)),
            }
        }
    }
    let sandboxes = client
        .list_pod_sandbox(Some(v1::PodSandboxFilter {
            label_selector: env.own(),
            ..Default::default()
        }))
        .await
        .map_err(setup_error("listing the sequence's sandboxes (cleanup)"))?;
    for s in sandboxes {
        *rpcs += 1;
        client
            .remove_pod_sandbox(&s.id)
            .await
            .map_err(setup_error("removing a sandbox (cleanup)"))?;
    }
    Ok(())
}

/// Checks the runtime's listing of the sequence's own objects against the model.
async fn check_listed(
    env: &Env,
    ids: &Ids,
    model: &mut Model,
    rpcs: &mut u64,
) -> Result<Option<Failure>, FuzzError> {
    let client = &env.client;
    *rpcs += 2;
    let sandboxes = client
        .list_pod_sandbox(Some(v1::PodSandboxFilter {
            label_selector: env.own(),
            ..Default::default()
        }))
        .await
        .map_err(setup_error("listing the sequence's sandboxes"))?;
    let containers = client
        .list_containers(Some(v1::ContainerFilter {
            label_selector: env.own(),
            ..Default::default()
        }))
        .await
        .map_err(setup_error("listing the sequence's containers"))?;
    let failure = |clause, expected: String, actual: String| {
        Ok(Some(Failure {
            clause,
            at: None,
            expected,
            actual,
        }))
    };
    let mut seen = BTreeSet::new();
    for listed in &sandboxes {
        let Some(n) = ids.sandboxes.iter().position(|id| *id == listed.id) else {
            return failure(
                "sandbox.list.filters",
                "only the sequence's sandboxes".to_owned(),
                format!("an unknown sandbox {}", listed.id),
            );
        };
        seen.insert(n);
        let s = &model.sandboxes[n];
        if s.removed {
            return failure(s.clause, format!("s{n} not listed"), format!("s{n} listed"));
        }
        let ready = listed.state == v1::PodSandboxState::SandboxReady as i32;
        if ready != s.ready {
            let name = |r: bool| if r { "ready" } else { "not ready" };
            return failure(
                s.clause,
                format!("s{n} {}", name(s.ready)),
                format!("s{n} {}", name(ready)),
            );
        }
    }
    if let Some(n) =
        (0..model.sandboxes.len()).find(|n| !model.sandboxes[*n].removed && !seen.contains(n))
    {
        return failure(
            model.sandboxes[n].clause,
            format!("s{n} listed"),
            format!("s{n} not listed"),
        );
    }
    let mut seen = BTreeSet::new();
    for listed in &containers {
        let Some(n) = ids.containers.iter().position(|id| *id == listed.id) else {
            return failure(
                "container.list.filters",
                "only the sequence's containers".to_owned(),
                format!("an unknown container {}", listed.id),
            );
        };
        seen.insert(n);
        let c = &model.containers[n];
        if c.removed {
            return failure(c.clause, format!("c{n} not listed"), format!("c{n} listed"));
        }
        let state = ContainerState::from_cri_container(listed.state);
        match cstate_of(state) {
            Some(s) if c.states.allows(s) => model.observe(n, s),
            _ => {
                return failure(
                    c.clause,
                    format!("c{n} {:?}", c.states),
                    format!("c{n} {}", state.name()),
                );
            }
        }
    }
    if let Some(n) =
        (0..model.containers.len()).find(|n| !model.containers[*n].removed && !seen.contains(n))
    {
        return failure(
            model.containers[n].clause,
            format!("c{n} listed"),
            format!("c{n} not listed"),
        );
    }
    Ok(None)
}

/// Compares a list's answer (object numbers) with what the model allows.
fn check_listing(
    clause: &'static str,
    prefix: char,
    listing: &Listing,
    answered: &BTreeSet<usize>,
) -> Result<(), Failure> {
    if listing.admits(answered) {
        Ok(())
    } else {
        Err(Failure {
            clause,
            at: None,
            expected: listing_text(prefix, listing),
            actual: show(prefix, answered),
        })
    }
}

type Made = (Result<(), CallError>, Result<(), Failure>);

/// Makes `call`: its answer, and the check of what it answered beyond success.
async fn make(env: &Env, ids: &mut Ids, model: &Model, call: &Call, rpcs: &mut u64) -> Made {
    let client = &env.client;
    *rpcs += 1;
    let clause = model.expect(call).clause;
    let ok: Result<(), Failure> = Ok(());
    match *call {
        Call::RunSandbox {
            n,
            host_network,
            tier,
        } => {
            let config = env.sandbox_config(n, host_network, tier);
            match client.run_pod_sandbox(config.clone(), "").await {
                Ok(id) => {
                    ids.sandboxes.push(id);
                    ids.configs.push(config);
                    (Ok(()), ok)
                }
                Err(err) => (Err(err), ok),
            }
        }
        Call::StopSandbox(t) => (client.stop_pod_sandbox(&ids.sandbox(t, env)).await, ok),
        Call::RemoveSandbox(t) => (client.remove_pod_sandbox(&ids.sandbox(t, env)).await, ok),
        Call::SandboxStatus(t) => match client.pod_sandbox_status(&ids.sandbox(t, env)).await {
            Ok(answer) => {
                let detail = match (t, answer.status) {
                    (Target::N(n), Some(status)) => {
                        let ready = status.state == v1::PodSandboxState::SandboxReady as i32;
                        if ready == model.sandboxes[n].ready {
                            ok
                        } else {
                            Err(Failure {
                                clause,
                                at: None,
                                expected: format!("s{n} ready={}", model.sandboxes[n].ready),
                                actual: format!("ready={ready}"),
                            })
                        }
                    }
                    _ => Err(Failure {
                        clause,
                        at: None,
                        expected: "a status".to_owned(),
                        actual: "none".to_owned(),
                    }),
                };
                (Ok(()), detail)
            }
            Err(err) => (Err(err), ok),
        },
        Call::CreateContainer {
            n,
            sandbox,
            exits,
            tier,
        } => {
            let host_network = model.sandboxes[sandbox].host_network;
            let config = env.container_config(n, exits, tier, host_network);
            match client
                .create_container(
                    &ids.sandboxes[sandbox],
                    config,
                    ids.configs[sandbox].clone(),
                )
                .await
            {
                Ok(id) => {
                    ids.containers.push(id);
                    (Ok(()), ok)
                }
                Err(err) => (Err(err), ok),
            }
        }
        Call::StartContainer(t) => (client.start_container(&ids.container(t, env)).await, ok),
        Call::StopContainer(t) => (client.stop_container(&ids.container(t, env), 0).await, ok),
        Call::RemoveContainer(t) => (client.remove_container(&ids.container(t, env)).await, ok),
        Call::ContainerStatus(t) => match client.container_status(&ids.container(t, env)).await {
            Ok(answer) => {
                let detail = match (t, answer.status) {
                    (Target::N(n), Some(status)) => {
                        let state = ContainerState::from_cri_container(status.state);
                        let allowed = model.containers[n].states;
                        if cstate_of(state).is_some_and(|s| allowed.allows(s)) {
                            ok
                        } else {
                            Err(Failure {
                                clause,
                                at: None,
                                expected: format!("c{n} {allowed:?}"),
                                actual: state.name().to_owned(),
                            })
                        }
                    }
                    _ => Err(Failure {
                        clause,
                        at: None,
                        expected: "a status".to_owned(),
                        actual: "none".to_owned(),
                    }),
                };
                (Ok(()), detail)
            }
            Err(err) => (Err(err), ok),
        },
        Call::ExecSync(n) => {
            let cmd = EXEC_COMMAND.iter().map(|s| (*s).to_owned()).collect();
            match client
                .exec_sync(&ids.containers[n], cmd, Duration::from_secs(10))
                .await
            {
                Ok(answer) => {
                    let stdout = String::from_utf8_lossy(&answer.stdout);
                    let exact =
                        model.containers[n].states == super::model::States::only(CState::Running);
                    let detail = if !exact || (answer.exit_code == 0 && stdout == EXEC_OUTPUT) {
                        ok
                    } else {
                        Err(Failure {
                            clause,
                            at: None,
                            expected: format!("exit 0, stdout {EXEC_OUTPUT:?}"),
                            actual: format!("exit {}, stdout {stdout:?}", answer.exit_code),
                        })
                    };
                    (Ok(()), detail)
                }
                Err(err) => (Err(err), ok),
            }
        }
        Call::ListSandboxes { id, ready, tier } => {
            let filter = v1::PodSandboxFilter {
                id: id.map(|t| ids.sandbox(t, env)).unwrap_or_default(),
                state: ready.map(|r| v1::PodSandboxStateValue {
                    state: if r {
                        v1::PodSandboxState::SandboxReady
                    } else {
                        v1::PodSandboxState::SandboxNotready
                    } as i32,
                }),
                label_selector: env.selector(tier),
            };
            match client.list_pod_sandbox(Some(filter)).await {
                Ok(items) => {
                    let answered = numbers(items.iter().map(|s| s.id.as_str()), &ids.sandboxes);
                    (
                        Ok(()),
                        check_listing(
                            clause,
                            's',
                            &model.list_sandboxes(id, ready, tier),
                            &answered,
                        ),
                    )
                }
                Err(err) => (Err(err), ok),
            }
        }
        Call::ListContainers {
            id,
            sandbox,
            state,
            tier,
        } => {
            let filter = v1::ContainerFilter {
                id: id.map(|t| ids.container(t, env)).unwrap_or_default(),
                pod_sandbox_id: sandbox.map(|t| ids.sandbox(t, env)).unwrap_or_default(),
                state: state.map(|s| v1::ContainerStateValue {
                    state: match s {
                        CState::Created => v1::ContainerState::ContainerCreated,
                        CState::Running => v1::ContainerState::ContainerRunning,
                        CState::Exited => v1::ContainerState::ContainerExited,
                    } as i32,
                }),
                label_selector: env.selector(tier),
            };
            match client.list_containers(Some(filter)).await {
                Ok(items) => {
                    let answered = numbers(items.iter().map(|c| c.id.as_str()), &ids.containers);
                    (
                        Ok(()),
                        check_listing(
                            clause,
                            'c',
                            &model.list_containers(id, sandbox, state, tier),
                            &answered,
                        ),
                    )
                }
                Err(err) => (Err(err), ok),
            }
        }
        Call::ListContainerStats { id, sandbox, tier } => {
            let filter = v1::ContainerStatsFilter {
                id: id.map(|t| ids.container(t, env)).unwrap_or_default(),
                pod_sandbox_id: sandbox.map(|t| ids.sandbox(t, env)).unwrap_or_default(),
                label_selector: env.selector(tier),
            };
            match client.list_container_stats(Some(filter)).await {
                Ok(stats) => {
                    let answered = numbers(
                        stats
                            .iter()
                            .filter_map(|s| s.attributes.as_ref())
                            .map(|a| a.id.as_str()),
                        &ids.containers,
                    );
                    (
                        Ok(()),
                        check_listing(
                            clause,
                            'c',
                            &model.list_container_stats(id, sandbox, tier),
                            &answered,
                        ),
                    )
                }
                Err(err) => (Err(err), ok),
            }
        }
        Call::ListSandboxStats { id, tier } => {
            let filter = v1::PodSandboxStatsFilter {
                id: id.map(|t| ids.sandbox(t, env)).unwrap_or_default(),
                label_selector: env.selector(tier),
            };
            match client.list_pod_sandbox_stats(Some(filter)).await {
                Ok(stats) => {
                    let answered = numbers(
                        stats
                            .iter()
                            .filter_map(|s| s.attributes.as_ref())
                            .map(|a| a.id.as_str()),
                        &ids.sandboxes,
                    );
                    (
                        Ok(()),
                        check_listing(clause, 's', &model.list_sandbox_stats(id, tier), &answered),
                    )
                }
                Err(err) => (Err(err), ok),
            }
        }
        Call::PullImage(img) => (client.pull_image(&env.image(img)).await.map(drop), ok),
        Call::ImageStatus(img) => match client.image_status(&env.image(img)).await {
            Ok(found) => {
                let present = model.image_present(img);
                let detail = if found.is_some() == present {
                    ok
                } else {
                    Err(Failure {
                        clause,
                        at: None,
                        expected: format!("{img} present={present}"),
                        actual: format!("present={}", found.is_some()),
                    })
                };
                (Ok(()), detail)
            }
            Err(err) => (Err(err), ok),
        },
        // Unfiltered: containerd ignores ListImages' filter, and no clause asks for it.
        Call::ListImages(img) => match client.list_images(None).await {
            Ok(listed) => {
                let present = model.image_present(img);
                let reference = env.image(img);
                let answered = listed
                    .iter()
                    .filter(|i| i.repo_tags.contains(&reference))
                    .count();
                let detail = if answered == usize::from(present) {
                    ok
                } else {
                    Err(Failure {
                        clause,
                        at: None,
                        expected: format!("{img} listed {} times", usize::from(present)),
                        actual: format!("{answered} times"),
                    })
                };
                (Ok(()), detail)
            }
            Err(err) => (Err(err), ok),
        },
        Call::RemoveImage(img) => {
            let reference = env.image(img);
            let answer = client.remove_image(&reference).await;
            if answer.is_err() {
                return (answer, ok);
            }
            *rpcs += 1;
            let detail = match client.image_status(&reference).await {
                Ok(None) => ok,
                Ok(Some(_)) => Err(Failure {
                    clause: "image.remove.gone",
                    at: None,
                    expected: format!("{img} absent after removal"),
                    actual: "present".to_owned(),
                }),
                Err(err) => Err(Failure {
                    clause: "image.remove.gone",
                    at: None,
                    expected: "ImageStatus answers".to_owned(),
                    actual: answer_text(&Err(err)),
                }),
            };
            (Ok(()), detail)
        }
    }
}

/// The object numbers of the answered ids that are the sequence's (others are ignored: a
/// filter without labels of ours may answer other runs' objects).
fn numbers<'a>(answered: impl Iterator<Item = &'a str>, ids: &[String]) -> BTreeSet<usize> {
    answered
        .filter_map(|id| ids.iter().position(|i| i == id))
        .collect()
}

/// How many times a failing sequence is run again to tell a break that holds from a race.
pub const REPLAYS: usize = 10;

/// Where sequences run.
#[derive(Debug, Clone)]
pub enum Where {
    /// A fresh in-process mock per sequence, with these defects.
    Mock(Vec<Defect>),
    /// A runtime endpoint, and whether its cgroup driver is systemd.
    Endpoint(Box<CriClient>, bool),
}

/// How a fuzz run goes.
#[derive(Debug, Clone)]
pub struct Options {
    /// The run's seed.
    pub seed: u64,
    /// Workers side by side.
    pub parallel: usize,
    /// Longest sequence, in ops.
    pub max_calls: usize,
    /// Time bound.
    pub duration: Duration,
    /// Sequence bound, if any.
    pub max_sequences: Option<u64>,
    /// Run id label.
    pub run_id: String,
    /// Where.
    pub target: Where,
    /// Known findings, with the runtime's name and version to match.
    pub known: Option<(KnownFindings, String, String)>,
    /// How the images sequences name become references (`--registry-prefix`).
    pub images: images::ImageNames,
}

/// A failure, shrunk (or as found, for a flaky one: `shrink_runs` is then 0).
#[derive(Debug, Clone)]
pub struct Shrunk {
    /// The break.
    pub failure: Failure,
    /// The ops of the shrunk sequence.
    pub ops: Vec<Op>,
    /// The calls it made, up to the break.
    pub calls: Vec<Call>,
    /// The removable image was removed first.
    pub removable_setup: bool,
    /// The removable image's reference, if the worker had one.
    pub removable: Option<String>,
    /// The sequence's seed, as proptest's regression files write it (`cc <hex>`).
    pub seed_line: String,
    /// When the unshrunk failure was found, from the start.
    pub found_after: Duration,
    /// Sequences run while shrinking.
    pub shrink_runs: u64,
    /// Calls in the failure as found, before shrinking.
    pub original_calls: usize,
}

/// A break of a clause a known finding lists.
#[derive(Debug, Clone)]
pub struct KnownSeen {
    /// How many sequences met it.
    pub count: u64,
    /// The finding's upstream reference.
    pub reference: String,
    /// The first one met.
    pub example: Failure,
}

/// Breaks of one clause that the same calls, run again, showed only some of the time.
#[derive(Debug, Clone)]
pub struct FlakySeen {
    /// How many sequences broke the clause without holding on every replay.
    pub count: u64,
    /// The first of them, as found.
    pub example: Shrunk,
    /// How many runs of the example's calls broke the clause, the first run included.
    pub failed_runs: usize,
    /// How many runs of them there were: the first and [`REPLAYS`] more.
    pub runs: usize,
}

/// What a fuzz run found.
#[derive(Debug, Default)]
pub struct Report {
    /// Sequences run (shrinking included).
    pub sequences: u64,
    /// CRI calls made.
    pub calls: u64,
    /// Wall time.
    pub elapsed: Duration,
    /// Known findings met, by clause.
    pub known: BTreeMap<&'static str, KnownSeen>,
    /// The first unknown failure that held on every replay, shrunk.
    pub failure: Option<Shrunk>,
    /// Unknown breaks that some replays of the same calls did not show, by clause.
    pub flaky: BTreeMap<&'static str, FlakySeen>,
}

impl Report {
    /// Sequences per second.
    pub fn sequences_per_second(&self) -> f64 {
        self.sequences as f64 / self.elapsed.as_secs_f64().max(f64::EPSILON)
    }

    /// Calls per second.
    pub fn calls_per_second(&self) -> f64 {
        self.calls as f64 / self.elapsed.as_secs_f64().max(f64::EPSILON)
    }
}

/// The seed of sequence `n` of `worker`: 32 bytes for proptest's ChaCha generator.
pub fn sequence_seed(seed: u64, worker: usize, n: u64) -> [u8; 32] {
    Sha256::digest(format!("{seed}/fuzz/{worker}/{n}").as_bytes()).into()
}

/// The regression-file line for a sequence seed.
pub fn seed_line(seed: &[u8; 32]) -> String {
    format!("cc {}", hex::encode(seed))
}

/// The ops a sequence seed generates (`max_calls` as in the run that found it).
pub fn ops_of_seed(seed: &[u8; 32], max_calls: usize) -> Result<Vec<Op>, FuzzError> {
    let (tree, _) = tree_of_seed(seed, max_calls)?;
    Ok(tree.current())
}

fn tree_of_seed(
    seed: &[u8; 32],
    max_calls: usize,
) -> Result<(impl ValueTree<Value = Vec<Op>>, TestRunner), FuzzError> {
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, seed);
    let mut runner = TestRunner::new_with_rng(
        Config {
            failure_persistence: None,
            ..Config::default()
        },
        rng,
    );
    let tree = ops::sequence(max_calls)
        .new_tree(&mut runner)
        .map_err(|e| FuzzError::Generate(e.to_string()))?;
    Ok((tree, runner))
}

struct Shared {
    options: Options,
    started: Instant,
    stop: AtomicBool,
    sequences: AtomicU64,
    calls: AtomicU64,
    report: Mutex<Report>,
}

impl Shared {
    fn done(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
            || self.started.elapsed() >= self.options.duration
            || self
                .options
                .max_sequences
                .is_some_and(|m| self.sequences.load(Ordering::Relaxed) >= m)
    }

    fn known(&self, failure: &Failure) -> Option<String> {
        let (known, runtime, version) = self.options.known.as_ref()?;
        known
            .find_clause(runtime, version, failure.clause)
            .map(|f| f.reference.clone())
    }
}

/// Runs one sequence in its own environment (a fresh mock, or the endpoint).
async fn run_one(
    shared: &Shared,
    worker: usize,
    case: String,
    ops: &[Op],
) -> Result<Executed, FuzzError> {
    let images = shared.options.images.clone();
    let removable = REMOVABLE_IMAGES.get(worker).map(|s| images.resolve(s));
    let (client, cgroups, _mock) = match &shared.options.target {
        Where::Mock(defects) => {
            let mock = MockRuntime::with_defects(defects.iter().copied());
            let client = mock
                .duplex_client()
                .await
                .map_err(|e| FuzzError::Mock(e.to_string()))?;
            (client, None, Some(mock))
        }
        Where::Endpoint(client, systemd) => ((**client).clone(), Some(*systemd), None),
    };
    let env = Env {
        client,
        run_id: shared.options.run_id.clone(),
        case,
        removable,
        cgroups,
        images,
    };
    let executed = run_sequence(&env, ops).await?;
    shared.sequences.fetch_add(1, Ordering::Relaxed);
    shared.calls.fetch_add(executed.rpcs, Ordering::Relaxed);
    Ok(executed)
}

fn worker(
    shared: &Shared,
    worker: usize,
    handle: &tokio::runtime::Handle,
) -> Result<(), FuzzError> {
    let mut n = 0u64;
    while !shared.done() {
        let seed = sequence_seed(shared.options.seed, worker, n);
        let (mut tree, _runner) = tree_of_seed(&seed, shared.options.max_calls)?;
        let ops = tree.current();
        let case = format!("fuzz-{worker}-{n}");
        n += 1;
        let executed = handle.block_on(run_one(shared, worker, case.clone(), &ops))?;
        let Some(failure) = executed.failure.clone() else {
            continue;
        };
        if let Some(reference) = shared.known(&failure) {
            let mut report = shared
                .report
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            report
                .known
                .entry(failure.clause)
                .and_modify(|k| k.count += 1)
                .or_insert(KnownSeen {
                    count: 1,
                    reference,
                    example: failure,
                });
            continue;
        }
        // A break the same calls do not show every time is a race of the runtime's: counted
        // as flaky and kept as found, and the run goes on.
        let clause = failure.clause;
        let keep = |failure, ops, executed, found_after, shrunk| {
            found(failure, ops, executed, worker, &seed, found_after, shrunk)
        };
        let fails = |e: &Executed| e.failure.as_ref().is_some_and(|f| f.clause == clause);
        let mut failed_runs = 1;
        for again in 0..REPLAYS {
            let rerun =
                handle.block_on(run_one(shared, worker, format!("{case}-r{again}"), &ops))?;
            if fails(&rerun) {
                failed_runs += 1;
            }
        }
        if failed_runs <= REPLAYS {
            let found_after = shared.started.elapsed();
            let calls = executed.calls.len();
            let example = keep(failure, ops, executed, found_after, (0, calls));
            let mut report = shared
                .report
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            report
                .flaky
                .entry(clause)
                .and_modify(|f| f.count += 1)
                .or_insert(FlakySeen {
                    count: 1,
                    example,
                    failed_runs,
                    runs: REPLAYS + 1,
                });
            continue;
        }
        if shared.stop.swap(true, Ordering::Relaxed) {
            // Another worker found one first.
            return Ok(());
        }
        let found_after = shared.started.elapsed();
        let original_calls = executed.calls.len();
        let mut best = (ops, executed);
        let mut runs = 0u64;
        if tree.simplify() {
            while runs < 2000 {
                runs += 1;
                let ops = tree.current();
                let executed =
                    handle.block_on(run_one(shared, worker, format!("{case}-s{runs}"), &ops))?;
                if fails(&executed) {
                    best = (ops, executed);
                    if !tree.simplify() {
                        break;
                    }
                } else if !tree.complicate() {
                    break;
                }
            }
        }
        let (ops, executed) = best;
        let Some(failure) = executed.failure.clone() else {
            continue;
        };
        let shrunk = keep(failure, ops, executed, found_after, (runs, original_calls));
        let mut report = shared
            .report
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        report.failure = Some(shrunk);
        return Ok(());
    }
    Ok(())
}

/// A failure with the calls that made it, up to the break, as a worker ran them; `shrunk` is
/// the shrink's runs and the calls of the failure as first found.
fn found(
    failure: Failure,
    ops: Vec<Op>,
    executed: Executed,
    worker: usize,
    seed: &[u8; 32],
    found_after: Duration,
    (shrink_runs, original_calls): (u64, usize),
) -> Shrunk {
    let calls = match failure.at {
        Some(at) => executed.calls[..=at].to_vec(),
        None => executed.calls,
    };
    Shrunk {
        failure,
        ops,
        calls,
        removable_setup: executed.removable_setup,
        removable: REMOVABLE_IMAGES.get(worker).map(|s| (*s).to_owned()),
        seed_line: seed_line(seed),
        found_after,
        shrink_runs,
        original_calls,
    }
}

/// Runs the fuzzer until its time, its sequence bound or a failure that no known finding explains
/// and every replay shows.
pub async fn fuzz(options: Options) -> Result<Report, FuzzError> {
    let parallel = options.parallel.max(1);
    let shared = Arc::new(Shared {
        options,
        started: Instant::now(),
        stop: AtomicBool::new(false),
        sequences: AtomicU64::new(0),
        calls: AtomicU64::new(0),
        report: Mutex::new(Report::default()),
    });
    let mut tasks = Vec::new();
    for w in 0..parallel {
        let shared = shared.clone();
        let handle = tokio::runtime::Handle::current();
        // Value trees are not Send: each worker generates and shrinks on a thread of its own.
        tasks.push(tokio::task::spawn_blocking(move || {
            let outcome = worker(&shared, w, &handle);
            if outcome.is_err() {
                shared.stop.store(true, Ordering::Relaxed);
            }
            outcome
        }));
    }
    let mut first_error = None;
    for task in tasks {
        match task.await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => {
                shared.stop.store(true, Ordering::Relaxed);
                first_error.get_or_insert(err);
            }
            Err(join) => {
                first_error.get_or_insert(FuzzError::Mock(format!("a worker stopped: {join}")));
            }
        }
    }
    if let Some(err) = first_error {
        return Err(err);
    }
    let mut report = std::mem::take(
        &mut *shared
            .report
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    report.sequences = shared.sequences.load(Ordering::Relaxed);
    report.calls = shared.calls.load(Ordering::Relaxed);
    report.elapsed = shared.started.elapsed();
    Ok(report)
}
