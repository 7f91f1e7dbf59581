//! The pod life cycle held to a real runtime: generated sequences of SyncPod, a container or
//! the sandbox stopped behind the manager's back, a changed image (a new container hash) and
//! GarbageCollect are applied to a fresh in-process mock and to the runtime at
//! `CONTAINER_RUNTIME_ENDPOINT`, with the same manager. After every operation the test observes
//! the computed actions, each step's result and the pod's sandboxes and containers (ids as
//! aliases, no times), and the two observations must be equal, line by line.
//!
//! Only sequences a real runtime can express: every container sleeps until it is stopped, so
//! a container ends only when the sequence ends it, on both targets. The crash-loop back-off is
//! an hour long, so whether a restart is refused does not hang on how fast the target is. One
//! documented difference is left out of the comparison: the exit code of a container running
//! the pause image, which ignores SIGTERM on a real runtime (it dies by SIGKILL after the grace
//! period) while the mock models every process as the test's sleeper, which exits 0.
//!
//! Without `CONTAINER_RUNTIME_ENDPOINT` the test skips, except under `CI=true`, where it fails.
//! `LIFECYCLE_DIFF_SEQUENCES` sets the number of sequences (default 16; the seed is fixed), and
//! `LIFECYCLE_DIFF_SHOW=1` prints each sequence's observation.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cri_harness::cri::labels::{POD_UID, RUN_ID};
use cri_harness::cri::{v1, CriClient};
use cri_harness::manager::lifecycle::{
    k8s, Backoff, GcLogDirs, GcPolicy, GcScope, PodStateOracle, ProbeResults, SyncOptions,
    WallClock,
};
use cri_harness::manager::{ContainerState, KubeGenericRuntimeManager, NoopNetworkPlugin};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{TestRng, TestRunner};

/// The sleeper every busybox container runs: it exits 0 on SIGTERM, on both targets.
const SLEEPER: &str = "trap 'exit 0' TERM; sleep 3600 & wait";

/// Most operations in one sequence.
const MAX_OPS: usize = 9;

/// A pod's restart policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Policy {
    Always,
    OnFailure,
    Never,
}

/// The generated pod: an optional init container, one or two app containers.
#[derive(Debug, Clone)]
struct Shape {
    init: bool,
    apps: usize,
    policy: Policy,
}

/// One operation of a sequence.
#[derive(Debug, Clone)]
enum Op {
    /// SyncPod once.
    Sync,
    /// StopContainer (grace 1 s) of the newest instance of the pod's `n`th container (init
    /// containers first), behind the manager's back; nothing when it has none.
    StopContainer(usize),
    /// StopPodSandbox of the newest sandbox, behind the manager's back.
    StopSandbox,
    /// The `n`th app container's image flips between busybox and pause (a new hash); only in
    /// `Always` pods, whose restarts do not hang on an exit code the targets tell apart.
    FlipImage(usize),
    /// GarbageCollect of the pod: keep `keep` dead instances per container; `deleted` says the
    /// pod is gone from the API server.
    Gc { keep: usize, deleted: bool },
}

#[derive(Debug, Clone)]
struct Sequence {
    shape: Shape,
    ops: Vec<Op>,
}

fn sequence() -> impl Strategy<Value = Sequence> {
    let shape = (
        any::<bool>(),
        1..=2usize,
        prop_oneof![
            Just(Policy::Always),
            Just(Policy::OnFailure),
            Just(Policy::Never)
        ],
    )
        .prop_map(|(init, apps, policy)| Shape { init, apps, policy });
    let op = prop_oneof![
        4 => Just(Op::Sync),
        4 => (0..3usize).prop_map(Op::StopContainer),
        1 => Just(Op::StopSandbox),
        1 => (0..2usize).prop_map(Op::FlipImage),
        1 => (0..2usize, any::<bool>()).prop_map(|(keep, deleted)| Op::Gc { keep, deleted }),
    ];
    (shape, proptest::collection::vec(op, 3..MAX_OPS)).prop_map(|(shape, mut ops)| {
        // Every sequence starts from nothing with a sync, so it has a pod to work on.
        ops.insert(0, Op::Sync);
        Sequence { shape, ops }
    })
}

/// The manifest for `shape`, each app container's image as `pause` says (true: pause).
fn manifest(uid: &str, shape: &Shape, pause: &[bool]) -> k8s::Pod {
    let busybox = cri_harness::images::resolve("busybox");
    let pause_image = cri_harness::images::resolve("pause");
    let sleeper = |name: &str, image: &str| {
        if image == pause_image {
            format!("{{name: {name}, image: '{image}'}}")
        } else {
            format!("{{name: {name}, image: '{image}', command: [sh, -c, \"{SLEEPER}\"]}}")
        }
    };
    let init = if shape.init {
        format!("  initContainers: [{}]\n", sleeper("init", &busybox))
    } else {
        String::new()
    };
    let apps: Vec<String> = (0..shape.apps)
        .map(|i| {
            let image = if pause[i] { &pause_image } else { &busybox };
            sleeper(&format!("app{i}"), image)
        })
        .collect();
    let policy = format!("{:?}", shape.policy);
    let yaml = format!(
        "metadata: {{name: diff, namespace: lifecycle-diff, uid: {uid}}}\nspec:\n  restartPolicy: {policy}\n  terminationGracePeriodSeconds: 1\n{init}  containers: [{}]\n",
        apps.join(", ")
    );
    serde_saphyr::from_str(&yaml).expect("the generated manifest parses")
}

/// Ids as aliases, learnt in creation order: `app0#1` is app0's second instance, `sandbox@1`
/// the sandbox of attempt 1.
#[derive(Default)]
struct Aliases {
    by_id: BTreeMap<String, String>,
    per_name: BTreeMap<String, usize>,
}

impl Aliases {
    fn learn(&mut self, id: &str, name: &str) {
        if !self.by_id.contains_key(id) {
            let n = self.per_name.entry(name.to_owned()).or_default();
            self.by_id.insert(id.to_owned(), format!("{name}#{n}"));
            *n += 1;
        }
    }

    fn redact(&self, uid: &str, text: &str) -> String {
        let mut out = text.replace(uid, "<uid>");
        for (id, alias) in &self.by_id {
            out = out.replace(id.as_str(), alias);
        }
        out
    }
}

/// One target's run of a sequence.
struct Target<'a> {
    manager: KubeGenericRuntimeManager,
    client: CriClient,
    options: SyncOptions,
    logs: GcLogDirs,
    uid: String,
    shape: &'a Shape,
    pause: Vec<bool>,
    backoff: Backoff,
    aliases: Aliases,
}

impl Target<'_> {
    fn pod(&self) -> k8s::Pod {
        manifest(&self.uid, self.shape, &self.pause)
    }

    fn container_names(&self) -> Vec<String> {
        let mut names = Vec::new();
        if self.shape.init {
            names.push("init".to_owned());
        }
        names.extend((0..self.shape.apps).map(|i| format!("app{i}")));
        names
    }

    /// Applies `op`; answers what it showed, before the state lines.
    async fn apply(&mut self, op: &Op) -> Vec<String> {
        let pod = self.pod();
        match op {
            Op::Sync => {
                let sync = self
                    .manager
                    .sync_pod(
                        &pod,
                        &ProbeResults::default(),
                        &self.options,
                        &mut self.backoff,
                    )
                    .await
                    .expect("SyncPod reads the pod's status");
                let a = &sync.actions;
                let names = |indices: &[usize], all: &[k8s::Container]| -> Vec<String> {
                    indices.iter().map(|&i| all[i].name.clone()).collect()
                };
                let spec = pod.spec.as_ref().expect("a spec");
                let mut lines = vec![format!(
                    "actions: kill_pod={} create_sandbox={} attempt={} init={:?} start={:?} kill={:?}",
                    a.kill_pod,
                    a.create_sandbox,
                    a.attempt,
                    names(
                        &a.init_containers_to_start,
                        spec.init_containers.as_deref().unwrap_or_default()
                    ),
                    names(&a.containers_to_start, &spec.containers),
                    a.containers_to_kill
                        .iter()
                        .map(|(id, kill)| format!(
                            "{} {:?}",
                            self.aliases.by_id.get(id).map_or(id.as_str(), String::as_str),
                            kill.reason
                        ))
                        .collect::<BTreeSet<_>>(),
                )];
                lines.extend(sync.result.results.iter().map(|r| {
                    format!(
                        "  {} {}: {}",
                        r.action,
                        r.target,
                        r.error.as_deref().unwrap_or("ok")
                    )
                }));
                if let Some(err) = &sync.result.sync_error {
                    lines.push(format!("  sync error: {err}"));
                }
                lines
            }
            Op::StopContainer(n) => {
                let names = self.container_names();
                let Some(name) = names.get(n % names.len()) else {
                    return vec!["stop: no container".to_owned()];
                };
                let status = self.status().await;
                match status.container_statuses.iter().find(|c| &c.name == name) {
                    Some(newest) => {
                        self.client
                            .stop_container(&newest.id.id, 1)
                            .await
                            .expect("StopContainer");
                        vec![format!("stop {}", newest.id.id)]
                    }
                    None => vec![format!("stop {name}: none yet")],
                }
            }
            Op::StopSandbox => {
                let status = self.status().await;
                match status.sandbox_statuses.first() {
                    Some(sandbox) => {
                        self.client
                            .stop_pod_sandbox(&sandbox.id)
                            .await
                            .expect("StopPodSandbox");
                        vec![format!("stop sandbox {}", sandbox.id)]
                    }
                    None => vec!["stop sandbox: none yet".to_owned()],
                }
            }
            Op::FlipImage(n) => {
                if self.shape.policy != Policy::Always {
                    return vec!["flip: not in this pod".to_owned()];
                }
                let i = n % self.shape.apps;
                self.pause[i] = !self.pause[i];
                vec![format!("flip app{i} to pause={}", self.pause[i])]
            }
            Op::Gc { keep, deleted } => {
                let policy = GcPolicy {
                    min_age: Duration::ZERO,
                    max_per_pod_container: i64::try_from(*keep).expect("small"),
                    max_containers: -1,
                };
                let gone = if *deleted {
                    BTreeSet::from([self.uid.clone()])
                } else {
                    BTreeSet::new()
                };
                let oracle = PodStateOracle {
                    deleted: gone.clone(),
                    terminated: gone,
                };
                let scope = GcScope::wall_clock()
                    .owning(BTreeMap::from([(POD_UID.to_owned(), self.uid.clone())]));
                let outcome = self
                    .manager
                    .garbage_collect(&policy, true, false, &oracle, &self.logs, &scope)
                    .await;
                vec![format!(
                    "gc keep={keep} deleted={deleted}: {}",
                    outcome.map_or_else(|err| err.to_string(), |()| "ok".to_owned())
                )]
            }
        }
    }

    async fn status(&self) -> cri_harness::manager::PodStatus {
        self.manager
            .get_pod_status(&self.uid, "diff", "lifecycle-diff")
            .await
            .expect("GetPodStatus")
    }

    /// The pod's sandboxes and containers, oldest first, learning new ids' aliases.
    async fn state(&mut self) -> Vec<String> {
        let status = self.status().await;
        let mut lines = Vec::new();
        let mut sandboxes: Vec<&v1::PodSandboxStatus> = status.sandbox_statuses.iter().collect();
        sandboxes.sort_by_key(|s| s.created_at);
        for sandbox in sandboxes {
            let attempt = sandbox.metadata.as_ref().map_or(0, |m| m.attempt);
            self.aliases
                .by_id
                .entry(sandbox.id.clone())
                .or_insert_with(|| format!("sandbox@{attempt}"));
            lines.push(format!("  sandbox@{attempt} {:?}", sandbox.state()));
        }
        let mut containers: Vec<_> = status.container_statuses.iter().collect();
        containers.sort_by_key(|c| c.created_at);
        for container in containers {
            self.aliases.learn(&container.id.id, &container.name);
            // The documented difference: pause's exit code (see the module's doc).
            let exit = if container.state == ContainerState::Exited && !is_pause(&container.image) {
                format!(" exit {}", container.exit_code)
            } else {
                String::new()
            };
            lines.push(format!(
                "  {} {:?} restarts {}{exit}",
                container.id.id, container.state, container.restart_count
            ));
        }
        lines
    }
}

/// Whether a status's image is the pause image, however the runtime spells it.
fn is_pause(image: &str) -> bool {
    image.contains("/pause:") || image.contains("/pause@")
}

async fn run_sequence(
    sequence: &Sequence,
    client: CriClient,
    root: &Path,
    run_id: &str,
    uid: String,
) -> Vec<String> {
    let manager = KubeGenericRuntimeManager::new(client.clone(), Arc::new(NoopNetworkPlugin))
        .await
        .expect("the runtime speaks the manager's version");
    let mut options = SyncOptions::new(root.join("pods"), root.join("volumes"));
    options
        .extra_labels
        .insert(RUN_ID.to_owned(), run_id.to_owned());
    let logs = GcLogDirs {
        pod_logs_root: root.join("pods"),
        container_log_symlinks: root.join("containers"),
    };
    std::fs::create_dir_all(&logs.container_log_symlinks).expect("a log directory");
    let hour = Duration::from_secs(3600);
    let mut target = Target {
        manager,
        client,
        options,
        logs,
        uid,
        shape: &sequence.shape,
        pause: vec![false; sequence.shape.apps],
        backoff: Backoff::new(Arc::new(WallClock), hour, hour),
        aliases: Aliases::default(),
    };
    let mut lines = Vec::new();
    for (index, op) in sequence.ops.iter().enumerate() {
        let shown = target.apply(op).await;
        let state = target.state().await;
        lines.push(format!("op {index} {op:?}"));
        for line in shown.iter().chain(&state) {
            lines.push(target.aliases.redact(&target.uid, line));
        }
    }
    let deletion = target
        .manager
        .delete_pod(&target.pod(), &target.options, &target.logs)
        .await
        .expect("delete_pod");
    assert!(
        deletion.is_complete(),
        "the sequence's pod stays: {deletion:?}"
    );
    lines
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs a real CRI runtime (CONTAINER_RUNTIME_ENDPOINT)"
)]
async fn generated_life_cycles_look_the_same_on_the_mock_and_on_the_real_runtime() {
    let endpoint = support::need::runtime();
    let endpoint: cri_harness::cri::Endpoint = endpoint.parse().expect("a valid endpoint");
    let real = cri_harness::cri::connect(&endpoint, &endpoint, &Default::default())
        .await
        .expect("the runtime answers");
    for image in ["busybox", "pause"] {
        let image = cri_harness::images::resolve(image);
        if real
            .image_status(&image)
            .await
            .expect("ImageStatus")
            .is_none()
        {
            real.pull_image(&image).await.expect("PullImage");
        }
    }
    let count: u32 = std::env::var("LIFECYCLE_DIFF_SEQUENCES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(16);
    let mut runner = TestRunner::new_with_rng(
        proptest::test_runner::Config::default(),
        TestRng::from_seed(proptest::test_runner::RngAlgorithm::ChaCha, &[7; 32]),
    );
    let strategy = sequence();
    let root = tempfile::tempdir().expect("a temporary directory");
    let run_id = format!("lcdiff{}", std::process::id());
    let mut ops = 0;
    for number in 0..count {
        let sequence = strategy
            .new_tree(&mut runner)
            .expect("a sequence")
            .current();
        ops += sequence.ops.len();
        let uid = format!("{run_id}-{number}");
        let (_mock, mock_client, _control) = support::mock().await;
        let on_mock = run_sequence(
            &sequence,
            mock_client,
            &root.path().join("mock"),
            &run_id,
            uid.clone(),
        )
        .await;
        let on_real = run_sequence(
            &sequence,
            real.clone(),
            &root.path().join("real"),
            &run_id,
            uid,
        )
        .await;
        if on_mock != on_real {
            let diff = similar::TextDiff::from_lines(&on_mock.join("\n"), &on_real.join("\n"))
                .unified_diff()
                .header("mock", "real runtime")
                .to_string();
            panic!("sequence {number} differs: {sequence:?}\n{diff}");
        }
        if std::env::var_os("LIFECYCLE_DIFF_SHOW").is_some() {
            eprintln!(
                "sequence {number}: {:?}\n{}",
                sequence.shape,
                on_real.join("\n")
            );
        }
    }
    eprintln!("lifecycle differential: {count} sequences, {ops} operations, no difference");
}

/// The comparison can fail: the same sequence on two mocks, one of which refuses the second
/// StartContainer, must differ.
#[tokio::test]
async fn a_runtime_that_answers_one_call_differently_is_seen_to_differ() {
    let sequence = Sequence {
        shape: Shape {
            init: false,
            apps: 2,
            policy: Policy::Always,
        },
        ops: vec![Op::Sync, Op::StopContainer(0), Op::Sync],
    };
    let root = tempfile::tempdir().expect("a temporary directory");
    let (_good, good_client, _) = support::mock().await;
    let good = run_sequence(
        &sequence,
        good_client,
        &root.path().join("good"),
        "lcdiff",
        "lcdiff-fault".to_owned(),
    )
    .await;
    let (_bad, bad_client, mut control) = support::mock().await;
    control
        .inject_error(cri_harness::cri::control::InjectErrorRequest {
            method: "StartContainer".to_owned(),
            code: tonic::Code::Internal as i32,
            message: "refused".to_owned(),
            count: 1,
            nth: 2,
            ..Default::default()
        })
        .await
        .expect("InjectError");
    let bad = run_sequence(
        &sequence,
        bad_client,
        &root.path().join("bad"),
        "lcdiff",
        "lcdiff-fault".to_owned(),
    )
    .await;
    assert_ne!(good, bad);
    assert!(
        bad.iter()
            .any(|l| l.contains("StartContainer app1: RunContainerError")),
        "{bad:#?}"
    );
}
