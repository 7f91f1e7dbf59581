//! Properties of `garbage_collect` (kubelet rules: #garbagecollect) over generated runtime states
//! on the in-process
//! mock: sandboxes and containers of several pods, seeded with their states and creation times
//! through the mock's control service, a policy, and a pod-state oracle. What remains is read
//! back over CRI and checked against a reference written here from the spec, not from the code
//! under test. The last tests feed the checker wrong outcomes, so a green run means something.
//!
//! A pod is *gone* when the oracle says it is deleted, or terminated while terminating pods are
//! evicted; every other pod *exists*. A container is *evictable* when it is not running and was
//! created at or before `now - MinAge` (the age rule is the container phase's; the kubelet
//! gives sandboxes none).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use cri_harness::cri::control::mock_control_client::MockControlClient;
use cri_harness::cri::control::{SeedContainerRequest, SeedPodSandboxRequest, SeedRequest};
use cri_harness::cri::labels::{CONTAINER_NAME, POD_NAME, POD_NAMESPACE, POD_UID};
use cri_harness::cri::v1;
use cri_harness::manager::lifecycle::{GcLogDirs, GcPolicy, GcScope, PodStateOracle};
use cri_harness::manager::{KubeGenericRuntimeManager, NoopNetworkPlugin};
use cri_harness::mock::MockRuntime;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{FileFailurePersistence, TestCaseError};

const SECOND: i64 = 1_000_000_000;
/// The instant every collection runs at; objects are created up to `MAX_AGE` seconds before.
const NOW: i64 = 1_000 * SECOND;
const MAX_AGE: i64 = 30;
const NAMESPACE: &str = "gc-prop";

/// Cases per property: modest, so the file runs in seconds (`PROPTEST_CASES` overrides).
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(64),
        // Shrunk failures are kept under proptest-regressions/ (committed) and replayed first.
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/prop_lifecycle_gc.txt",
        ))),
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------------------------
// Inputs

/// What the oracle says of a pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Existing,
    Deleted,
    Terminated,
}

#[derive(Debug, Clone)]
struct SandboxShape {
    ready: bool,
    /// Seconds before `NOW`; equal ages give equal creation times, so ties are exercised.
    age: i64,
}

#[derive(Debug, Clone)]
struct ContainerShape {
    /// One of two container names, so units hold several instances.
    name: usize,
    /// Which of the pod's sandboxes it names.
    sandbox: Index,
    state: v1::ContainerState,
    age: i64,
}

#[derive(Debug, Clone)]
struct PodShape {
    fate: Fate,
    sandboxes: Vec<SandboxShape>,
    containers: Vec<ContainerShape>,
}

#[derive(Debug, Clone)]
struct World {
    pods: Vec<PodShape>,
    min_age_seconds: i64,
    max_per_pod_container: i64,
    max_containers: i64,
    all_sources_ready: bool,
    evict_terminating_pods: bool,
}

fn sandbox_shape() -> impl Strategy<Value = SandboxShape> {
    (any::<bool>(), 0..=MAX_AGE).prop_map(|(ready, age)| SandboxShape { ready, age })
}

fn container_shape() -> impl Strategy<Value = ContainerShape> {
    use v1::ContainerState::*;
    (
        0..2usize,
        any::<Index>(),
        prop::sample::select(vec![
            ContainerCreated,
            ContainerRunning,
            ContainerExited,
            ContainerExited,
            ContainerUnknown,
        ]),
        0..=MAX_AGE,
    )
        .prop_map(|(name, sandbox, state, age)| ContainerShape {
            name,
            sandbox,
            state,
            age,
        })
}

fn pod_shape() -> impl Strategy<Value = PodShape> {
    (
        prop::sample::select(vec![Fate::Existing, Fate::Deleted, Fate::Terminated]),
        prop::collection::vec(sandbox_shape(), 1..=3),
        prop::collection::vec(container_shape(), 0..=6),
    )
        .prop_map(|(fate, sandboxes, containers)| PodShape {
            fate,
            sandboxes,
            containers,
        })
}

fn world() -> impl Strategy<Value = World> {
    (
        prop::collection::vec(pod_shape(), 1..=4),
        0..=20i64,
        -1..=3i64,
        -1..=8i64,
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(pods, min_age_seconds, max_per_pod_container, max_containers, ready, evict)| World {
                pods,
                min_age_seconds,
                max_per_pod_container,
                max_containers,
                all_sources_ready: ready,
                evict_terminating_pods: evict,
            },
        )
}

// ---------------------------------------------------------------------------------------------
// The runtime state a world seeds, as the reference sees it

#[derive(Debug, Clone)]
struct SandboxRow {
    id: String,
    uid: String,
    ready: bool,
    created_at: i64,
}

#[derive(Debug, Clone)]
struct ContainerRow {
    id: String,
    uid: String,
    name: String,
    sandbox_id: String,
    state: v1::ContainerState,
    created_at: i64,
}

#[derive(Debug, Clone, Default)]
struct Rows {
    sandboxes: Vec<SandboxRow>,
    containers: Vec<ContainerRow>,
}

/// What is left after the collection: ids.
#[derive(Debug, Clone, Default)]
struct Left {
    sandboxes: BTreeSet<String>,
    containers: BTreeSet<String>,
}

fn uid_of(pod: usize) -> String {
    format!("pod-{pod}")
}

impl World {
    fn policy(&self) -> GcPolicy {
        GcPolicy {
            min_age: Duration::from_secs(self.min_age_seconds.unsigned_abs()),
            max_per_pod_container: self.max_per_pod_container,
            max_containers: self.max_containers,
        }
    }

    fn oracle(&self) -> PodStateOracle {
        let with = |fate| {
            self.pods
                .iter()
                .enumerate()
                .filter(|(_, p)| p.fate == fate)
                .map(|(i, _)| uid_of(i))
                .collect()
        };
        PodStateOracle {
            deleted: with(Fate::Deleted),
            terminated: with(Fate::Terminated),
        }
    }

    /// Whether the pod's whole runtime goes (its newest sandbox included).
    fn gone(&self, uid: &str) -> bool {
        let fate = self
            .pods
            .iter()
            .enumerate()
            .find(|(i, _)| uid_of(*i) == uid)
            .map(|(_, p)| p.fate);
        match fate {
            Some(Fate::Deleted) => true,
            Some(Fate::Terminated) => self.evict_terminating_pods,
            _ => false,
        }
    }

    fn evictable(&self, c: &ContainerRow) -> bool {
        c.state != v1::ContainerState::ContainerRunning
            && c.created_at <= NOW - self.min_age_seconds * SECOND
    }

    fn rows(&self) -> Rows {
        let mut rows = Rows::default();
        for (p, pod) in self.pods.iter().enumerate() {
            let uid = uid_of(p);
            let first = rows.sandboxes.len();
            for (s, sandbox) in pod.sandboxes.iter().enumerate() {
                rows.sandboxes.push(SandboxRow {
                    id: format!("sandbox-{p}-{s}"),
                    uid: uid.clone(),
                    ready: sandbox.ready,
                    created_at: NOW - sandbox.age * SECOND,
                });
            }
            for (c, container) in pod.containers.iter().enumerate() {
                let sandbox = &rows.sandboxes[first + container.sandbox.index(pod.sandboxes.len())];
                rows.containers.push(ContainerRow {
                    id: format!("container-{p}-{c}"),
                    uid: uid.clone(),
                    name: format!("app-{}", container.name),
                    sandbox_id: sandbox.id.clone(),
                    state: container.state,
                    created_at: NOW - container.age * SECOND,
                });
            }
        }
        rows
    }
}

// ---------------------------------------------------------------------------------------------
// The reference

fn fail(message: String) -> Result<(), TestCaseError> {
    Err(TestCaseError::fail(message))
}

/// Checks what is left of `rows` after a collection under `world` against the garbage collection
/// rules (kubelet rules: #garbagecollect).
fn check(world: &World, rows: &Rows, left: &Left) -> Result<(), TestCaseError> {
    let kept = |c: &ContainerRow| left.containers.contains(&c.id);

    for c in &rows.containers {
        // Never a running container, never one younger than MinAge.
        if c.state == v1::ContainerState::ContainerRunning && !kept(c) {
            return fail(format!("running container {} was removed", c.id));
        }
        if !world.evictable(c) && !kept(c) {
            return fail(format!(
                "container {} created {} s before the collection, under MinAge {} s, was removed",
                c.id,
                (NOW - c.created_at) / SECOND,
                world.min_age_seconds
            ));
        }
        // Everything dead of a gone pod goes once all sources are ready.
        if world.all_sources_ready && world.gone(&c.uid) && world.evictable(c) && kept(c) {
            return fail(format!(
                "dead container {} of gone pod {} was kept",
                c.id, c.uid
            ));
        }
    }

    // The limits, over what is left of the evictable containers, and oldest first per unit.
    let mut units: BTreeMap<(&str, &str), Vec<&ContainerRow>> = BTreeMap::new();
    for c in rows.containers.iter().filter(|c| world.evictable(c)) {
        units.entry((&c.uid, &c.name)).or_default().push(c);
    }
    let mut total_left = 0usize;
    for ((uid, name), unit) in &units {
        let left_in_unit = unit.iter().filter(|c| kept(c)).count();
        total_left += left_in_unit;
        if let Ok(limit) = usize::try_from(world.max_per_pod_container) {
            if left_in_unit > limit {
                return fail(format!(
                    "unit ({uid}, {name}) keeps {left_in_unit} dead containers, over MaxPerPodContainer {limit}"
                ));
            }
        }
        let oldest_kept = unit.iter().filter(|c| kept(c)).map(|c| c.created_at).min();
        if let Some(removed) = unit
            .iter()
            .filter(|c| !kept(c) && oldest_kept.is_some_and(|t| c.created_at > t))
            .map(|c| &c.id)
            .next()
        {
            return fail(format!(
                "unit ({uid}, {name}): {removed} was removed while an older one was kept"
            ));
        }
    }
    if let Ok(limit) = usize::try_from(world.max_containers) {
        if total_left > limit {
            return fail(format!(
                "{total_left} dead containers are kept, over MaxContainers {limit}"
            ));
        }
    }
    let expected = expected_dead_left(world, &units);
    if total_left != expected {
        return fail(format!(
            "{total_left} dead containers are kept; the limits keep exactly {expected}"
        ));
    }

    // Sandboxes.
    let sandbox_kept = |id: &str| left.sandboxes.contains(id);
    let referenced: BTreeSet<&str> = rows
        .containers
        .iter()
        .filter(|c| kept(c))
        .map(|c| c.sandbox_id.as_str())
        .collect();
    for s in &rows.sandboxes {
        let active = s.ready || referenced.contains(s.id.as_str());
        if s.ready && !sandbox_kept(&s.id) {
            return fail(format!("READY sandbox {} was removed", s.id));
        }
        if active && !sandbox_kept(&s.id) {
            return fail(format!(
                "sandbox {} was removed while a container names it",
                s.id
            ));
        }
    }
    let mut by_pod: BTreeMap<&str, Vec<&SandboxRow>> = BTreeMap::new();
    for s in &rows.sandboxes {
        by_pod.entry(&s.uid).or_default().push(s);
    }
    for (uid, sandboxes) in by_pod {
        let newest = sandboxes.iter().map(|s| s.created_at).max().unwrap_or(0);
        if !world.gone(uid)
            && !sandboxes
                .iter()
                .any(|s| s.created_at == newest && sandbox_kept(&s.id))
        {
            return fail(format!(
                "the newest sandbox of existing pod {uid} was removed"
            ));
        }
        // An inactive sandbox goes when its pod is gone, or when it is not (one of) the newest.
        for s in sandboxes {
            let active = s.ready || referenced.contains(s.id.as_str());
            let spared = !world.gone(uid) && s.created_at == newest;
            if !active && !spared && sandbox_kept(&s.id) {
                return fail(format!("inactive sandbox {} of pod {uid} was kept", s.id));
            }
        }
    }
    Ok(())
}

/// How many evictable containers the limits leave, by the garbage collection's order: gone pods' units emptied
/// (when all sources are ready), each unit trimmed to MaxPerPodContainer, then, while over
/// MaxContainers, every unit trimmed to max(MaxContainers / units, 1) and the oldest overall
/// removed down to MaxContainers.
fn expected_dead_left(world: &World, units: &BTreeMap<(&str, &str), Vec<&ContainerRow>>) -> usize {
    let mut counts: Vec<usize> = units
        .iter()
        .filter(|((uid, _), _)| !(world.all_sources_ready && world.gone(uid)))
        .map(|(_, unit)| unit.len())
        .collect();
    if let Ok(limit) = usize::try_from(world.max_per_pod_container) {
        counts.iter_mut().for_each(|n| *n = (*n).min(limit));
    }
    let total: usize = counts.iter().sum();
    match usize::try_from(world.max_containers) {
        Ok(limit) if total > limit => {
            let per_unit = (limit / counts.len().max(1)).max(1);
            let trimmed: usize = counts.iter().map(|n| (*n).min(per_unit)).sum();
            trimmed.min(limit)
        }
        _ => total,
    }
}

// ---------------------------------------------------------------------------------------------
// Running a world on the mock

fn labels(uid: &str, container: Option<&str>) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::from([
        (POD_UID.to_owned(), uid.to_owned()),
        (POD_NAME.to_owned(), uid.to_owned()),
        (POD_NAMESPACE.to_owned(), NAMESPACE.to_owned()),
    ]);
    if let Some(name) = container {
        labels.insert(CONTAINER_NAME.to_owned(), name.to_owned());
    }
    labels
}

fn seed_request(rows: &Rows) -> SeedRequest {
    let sandboxes = rows
        .sandboxes
        .iter()
        .enumerate()
        .map(|(attempt, s)| SeedPodSandboxRequest {
            status: Some(v1::PodSandboxStatus {
                id: s.id.clone(),
                metadata: Some(v1::PodSandboxMetadata {
                    name: s.uid.clone(),
                    uid: s.uid.clone(),
                    namespace: NAMESPACE.to_owned(),
                    attempt: u32::try_from(attempt).unwrap_or(u32::MAX),
                }),
                state: if s.ready {
                    v1::PodSandboxState::SandboxReady
                } else {
                    v1::PodSandboxState::SandboxNotready
                }
                .into(),
                created_at: s.created_at,
                labels: labels(&s.uid, None),
                ..Default::default()
            }),
        })
        .collect();
    let containers = rows
        .containers
        .iter()
        .enumerate()
        .map(|(attempt, c)| SeedContainerRequest {
            pod_sandbox_id: c.sandbox_id.clone(),
            status: Some(v1::ContainerStatus {
                id: c.id.clone(),
                metadata: Some(v1::ContainerMetadata {
                    name: c.name.clone(),
                    attempt: u32::try_from(attempt).unwrap_or(u32::MAX),
                }),
                state: c.state.into(),
                created_at: c.created_at,
                labels: labels(&c.uid, Some(&c.name)),
                ..Default::default()
            }),
        })
        .collect();
    SeedRequest {
        sandboxes,
        containers,
    }
}

/// Seeds `world` on a fresh mock, collects, and reads back what is left.
async fn collect(world: &World, rows: &Rows) -> anyhow::Result<Left> {
    let mock = MockRuntime::new();
    let client = mock.duplex_client().await?;
    let mut control = MockControlClient::new(mock.duplex_channel().await?);
    control.seed(seed_request(rows)).await?;
    let manager = KubeGenericRuntimeManager::new(client, Arc::new(NoopNetworkPlugin)).await?;
    let dir = tempfile::tempdir()?;
    let logs = GcLogDirs {
        pod_logs_root: dir.path().join("pods"),
        container_log_symlinks: dir.path().join("containers"),
    };
    std::fs::create_dir_all(&logs.pod_logs_root)?;
    std::fs::create_dir_all(&logs.container_log_symlinks)?;
    manager
        .garbage_collect(
            &world.policy(),
            world.all_sources_ready,
            world.evict_terminating_pods,
            &world.oracle(),
            &logs,
            &GcScope::at(NOW),
        )
        .await?;
    let client = manager.client();
    Ok(Left {
        sandboxes: client
            .list_pod_sandbox(None)
            .await?
            .into_iter()
            .map(|s| s.id)
            .collect(),
        containers: client
            .list_containers(None)
            .await?
            .into_iter()
            .map(|c| c.id)
            .collect(),
    })
}

fn run_world(world: &World) -> Result<(), TestCaseError> {
    let rows = world.rows();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| TestCaseError::fail(format!("no runtime: {err}")))?;
    let left = runtime
        .block_on(collect(world, &rows))
        .map_err(|err| TestCaseError::fail(format!("{err:#}")))?;
    check(world, &rows, &left)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn garbage_collect_keeps_what_the_kubelet_keeps_and_obeys_each_limit(world in world()) {
        run_world(&world)?;
    }
}

// ---------------------------------------------------------------------------------------------
// The checker fails on wrong outcomes

/// One existing pod with an old exited container, a running one and a young exited one, each
/// named differently; two sandboxes, the newer READY; no limits.
fn small_world() -> World {
    let container = |name, sandbox: usize, state, age| ContainerShape {
        name,
        sandbox: index_of(sandbox, 2),
        state,
        age,
    };
    World {
        pods: vec![PodShape {
            fate: Fate::Existing,
            sandboxes: vec![
                SandboxShape {
                    ready: false,
                    age: 20,
                },
                SandboxShape {
                    ready: true,
                    age: 10,
                },
            ],
            containers: vec![
                container(0, 1, v1::ContainerState::ContainerExited, 30),
                container(1, 1, v1::ContainerState::ContainerRunning, 30),
                container(0, 1, v1::ContainerState::ContainerExited, 0),
            ],
        }],
        min_age_seconds: 5,
        max_per_pod_container: -1,
        max_containers: -1,
        all_sources_ready: true,
        evict_terminating_pods: false,
    }
}

/// An index picking `n` of `len`, found by drawing from the strategy.
fn index_of(n: usize, len: usize) -> Index {
    use proptest::strategy::ValueTree as _;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    loop {
        let index = any::<Index>()
            .new_tree(&mut runner)
            .map(|tree| tree.current());
        if let Ok(index) = index {
            if index.index(len) == n {
                return index;
            }
        }
    }
}

/// Everything left but the named ids.
fn all_but(rows: &Rows, removed: &[&str]) -> Left {
    Left {
        sandboxes: rows
            .sandboxes
            .iter()
            .map(|s| s.id.clone())
            .filter(|id| !removed.contains(&id.as_str()))
            .collect(),
        containers: rows
            .containers
            .iter()
            .map(|c| c.id.clone())
            .filter(|id| !removed.contains(&id.as_str()))
            .collect(),
    }
}

fn failure(world: &World, left: &Left) -> String {
    let rows = world.rows();
    match check(world, &rows, left) {
        Err(TestCaseError::Fail(message)) => message.to_string(),
        other => panic!("the checker accepted a wrong outcome: {other:?}"),
    }
}

#[test]
fn the_checker_accepts_the_right_outcome_of_the_small_world() {
    let world = small_world();
    let rows = world.rows();
    // The old sandbox is inactive and not the newest: it goes; every container stays.
    assert!(check(&world, &rows, &all_but(&rows, &["sandbox-0-0"])).is_ok());
}

#[test]
fn the_checker_rejects_a_removed_running_container() {
    let world = small_world();
    let rows = world.rows();
    let message = failure(&world, &all_but(&rows, &["sandbox-0-0", "container-0-1"]));
    assert!(message.contains("running container"), "{message}");
}

#[test]
fn the_checker_rejects_a_removed_container_younger_than_min_age() {
    let world = small_world();
    let rows = world.rows();
    let message = failure(&world, &all_but(&rows, &["sandbox-0-0", "container-0-2"]));
    assert!(message.contains("under MinAge"), "{message}");
}

#[test]
fn the_checker_rejects_a_removed_ready_sandbox() {
    let mut world = small_world();
    world.pods[0].containers.clear();
    let rows = world.rows();
    let message = failure(&world, &all_but(&rows, &["sandbox-0-0", "sandbox-0-1"]));
    assert!(message.contains("READY sandbox"), "{message}");
}

#[test]
fn the_checker_rejects_a_removed_newest_sandbox_of_an_existing_pod() {
    let mut world = small_world();
    world.pods[0].containers.clear();
    world.pods[0].sandboxes[1].ready = false;
    let rows = world.rows();
    let message = failure(&world, &all_but(&rows, &["sandbox-0-0", "sandbox-0-1"]));
    assert!(message.contains("newest sandbox"), "{message}");
}

#[test]
fn the_checker_rejects_a_kept_inactive_old_sandbox() {
    let world = small_world();
    let rows = world.rows();
    let message = failure(&world, &all_but(&rows, &[]));
    assert!(message.contains("inactive sandbox"), "{message}");
}

#[test]
fn the_checker_rejects_units_over_max_per_pod_container() {
    let mut world = small_world();
    world.max_per_pod_container = 0;
    let rows = world.rows();
    let message = failure(&world, &all_but(&rows, &["sandbox-0-0"]));
    assert!(message.contains("MaxPerPodContainer"), "{message}");
}

#[test]
fn the_checker_rejects_a_total_over_max_containers() {
    let mut world = small_world();
    world.max_containers = 0;
    let rows = world.rows();
    let message = failure(&world, &all_but(&rows, &["sandbox-0-0"]));
    assert!(message.contains("MaxContainers"), "{message}");
}

#[test]
fn the_checker_rejects_kept_dead_containers_of_a_deleted_pod() {
    let mut world = small_world();
    world.pods[0].fate = Fate::Deleted;
    let rows = world.rows();
    let message = failure(&world, &all_but(&rows, &["sandbox-0-0"]));
    assert!(message.contains("gone pod"), "{message}");
}

#[test]
fn the_checker_rejects_removing_more_than_the_limits_ask() {
    let world = small_world();
    let rows = world.rows();
    let message = failure(&world, &all_but(&rows, &["sandbox-0-0", "container-0-0"]));
    assert!(message.contains("keep exactly"), "{message}");
}

#[test]
fn the_checker_rejects_removing_a_newer_dead_container_before_an_older_one() {
    let mut world = small_world();
    world.min_age_seconds = 0;
    world.max_per_pod_container = 1;
    let rows = world.rows();
    // Unit (pod-0, app-0) holds container-0-0 (30 s old) and container-0-2 (just made).
    let message = failure(&world, &all_but(&rows, &["sandbox-0-0", "container-0-2"]));
    assert!(message.contains("older one was kept"), "{message}");
}
