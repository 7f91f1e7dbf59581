//! The kubelet's GC tables (kuberuntime_gc_test.go: TestSandboxGC, TestContainerGC,
//! TestPodLogDirectoryGC, TestUnknownStateContainerGC, and the 2016 TestGarbageCollect), run
//! against the in-process mock over the duplex: objects are seeded with their states and
//! creation times through the mock's control service, each phase runs as the upstream test runs
//! it, and what remains is read back over CRI.
//!
//! Left out: none of the upstream cases. Upstream's "recently started" containers take
//! `time.Now()`; here they are created at the instant the collection runs (`NOW`), which is what
//! it meant. The 2016 TestGarbageCollect expected 2 sandboxes to remain under the seed-era rule
//! (NOTREADY, empty and 30 s old went, whoever the pod was); today's rule keeps each existing
//! pod's newest sandbox, so 3 remain (the containers' count, 2, is the same).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use rstest::rstest;
use tonic::transport::Channel;

use super::{GcLogDirs, GcPolicy, GcScope, PodStateOracle};
use crate::cri::control::mock_control_client::MockControlClient;
use crate::cri::control::{
    InjectErrorRequest, SeedContainerRequest, SeedPodSandboxRequest, SeedRequest,
};
use crate::cri::labels::{
    CONTAINER_NAME, POD_NAME, POD_NAMESPACE, POD_TERMINATION_GRACE_PERIOD, POD_UID,
};
use crate::cri::{v1, CallLog};
use crate::manager::{KubeGenericRuntimeManager, NoopNetworkPlugin};
use crate::mock::MockRuntime;

use v1::ContainerState::{
    ContainerCreated as Created, ContainerExited as Exited, ContainerRunning as Running,
    ContainerUnknown as Unknown,
};
use v1::PodSandboxState::{SandboxNotready as NotReady, SandboxReady as Ready};

const SECOND: i64 = 1_000_000_000;
/// The instant every case collects at; upstream's "now" containers are created right then.
const NOW: i64 = 10_000 * SECOND;
const FRESH: i64 = NOW;
const HOUR: Duration = Duration::from_secs(3600);
const MINUTE: Duration = Duration::from_secs(60);

/// A mock, the manager on it with a call log, and the mock's control service.
struct Rig {
    manager: KubeGenericRuntimeManager,
    control: MockControlClient<Channel>,
    log: CallLog,
    logs: GcLogDirs,
    _dir: tempfile::TempDir,
    _mock: MockRuntime,
}

impl Rig {
    async fn new() -> Self {
        let mock = MockRuntime::new();
        let log = CallLog::new();
        let client = mock
            .duplex_client()
            .await
            .unwrap()
            .with_call_log(log.clone());
        let control = MockControlClient::new(mock.duplex_channel().await.unwrap());
        let manager = KubeGenericRuntimeManager::new(client, Arc::new(NoopNetworkPlugin))
            .await
            .unwrap();
        log.take();
        let dir = tempfile::tempdir().unwrap();
        let logs = GcLogDirs {
            pod_logs_root: dir.path().join("pods"),
            container_log_symlinks: dir.path().join("containers"),
        };
        std::fs::create_dir_all(&logs.pod_logs_root).unwrap();
        std::fs::create_dir_all(&logs.container_log_symlinks).unwrap();
        Self {
            manager,
            control,
            log,
            logs,
            _dir: dir,
            _mock: mock,
        }
    }

    async fn seed(&mut self, sandboxes: Vec<v1::PodSandboxStatus>, containers: Vec<Seeded>) {
        let request = SeedRequest {
            sandboxes: sandboxes
                .into_iter()
                .map(|status| SeedPodSandboxRequest {
                    status: Some(status),
                })
                .collect(),
            containers: containers
                .into_iter()
                .map(|c| SeedContainerRequest {
                    pod_sandbox_id: c.sandbox_id,
                    status: Some(c.status),
                })
                .collect(),
        };
        self.control.seed(request).await.unwrap();
    }

    async fn inject(&mut self, method: &str) {
        let request = InjectErrorRequest {
            method: method.to_owned(),
            code: tonic::Code::Internal as i32,
            message: format!("injected {method} failure"),
            count: 1,
            ..Default::default()
        };
        self.control.inject_error(request).await.unwrap();
    }

    /// Every container left, by id, with its state.
    async fn containers(&self) -> BTreeMap<String, i32> {
        let listed = self.manager.client.list_containers(None).await.unwrap();
        listed.into_iter().map(|c| (c.id, c.state)).collect()
    }

    /// Every sandbox left, by id, with its state.
    async fn sandboxes(&self) -> BTreeMap<String, i32> {
        let listed = self.manager.client.list_pod_sandbox(None).await.unwrap();
        listed.into_iter().map(|s| (s.id, s.state)).collect()
    }

    /// The CRI calls since the last look, as `Method request`.
    fn calls(&self) -> Vec<String> {
        self.log
            .take()
            .into_iter()
            .map(|c| format!("{} {}", c.method, c.request))
            .collect()
    }
}

/// A container to seed and the sandbox id it names.
struct Seeded {
    sandbox_id: String,
    status: v1::ContainerStatus,
}

fn pod_labels(uid: &str, name: &str, namespace: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (POD_UID.to_owned(), uid.to_owned()),
        (POD_NAME.to_owned(), name.to_owned()),
        (POD_NAMESPACE.to_owned(), namespace.to_owned()),
    ])
}

fn seeded_container(
    sandbox_id: &str,
    id: &str,
    (uid, pod, namespace): (&str, &str, &str),
    name: &str,
    attempt: u32,
    created_at: i64,
    state: v1::ContainerState,
) -> Seeded {
    let mut labels = pod_labels(uid, pod, namespace);
    labels.insert(CONTAINER_NAME.to_owned(), name.to_owned());
    Seeded {
        sandbox_id: sandbox_id.to_owned(),
        status: v1::ContainerStatus {
            id: id.to_owned(),
            metadata: Some(v1::ContainerMetadata {
                name: name.to_owned(),
                attempt,
            }),
            state: state.into(),
            created_at,
            labels,
            ..Default::default()
        },
    }
}

fn policy(min_age: Duration, max_per_pod_container: i64, max_containers: i64) -> GcPolicy {
    GcPolicy {
        min_age,
        max_per_pod_container,
        max_containers,
    }
}

// ---------------------------------------------------------------------------------------------
// TestContainerGC

/// Upstream's `makeGCContainer`: pod `pod` (its UID is its name) in namespace test-ns.
type GcContainer = (&'static str, &'static str, u32, i64, v1::ContainerState);

fn gc_container_id((pod, name, attempt, _, _): &GcContainer) -> String {
    format!("{pod}_test-ns_{pod}_0_{name}_{attempt}")
}

fn default_policy() -> GcPolicy {
    policy(HOUR, 2, 6)
}

#[rstest]
#[case::all_containers_go_when_max_containers_is_0(
    vec![("foo", "bar", 0, 0, Exited)],
    policy(MINUTE, 1, 0), false, true, vec![]
)]
#[case::max_containers_holds_without_a_per_unit_limit(
    vec![("foo", "bar", 4, 4, Exited), ("foo", "bar", 3, 3, Exited), ("foo", "bar", 2, 2, Exited),
         ("foo", "bar", 1, 1, Exited), ("foo", "bar", 0, 0, Exited)],
    policy(MINUTE, -1, 4), false, true, vec![0, 1, 2, 3]
)]
#[case::nothing_goes_without_either_limit(
    vec![("foo", "bar", 2, 2, Exited), ("foo", "bar", 1, 1, Exited), ("foo", "bar", 0, 0, Exited)],
    policy(MINUTE, -1, -1), false, true, vec![0, 1, 2]
)]
#[case::recently_created_containers_stay(
    vec![("foo", "bar", 2, FRESH, Exited), ("foo", "bar", 1, FRESH, Exited),
         ("foo", "bar", 0, FRESH, Exited)],
    default_policy(), false, true, vec![0, 1, 2]
)]
#[case::the_oldest_go_past_the_per_unit_limit(
    vec![("foo", "bar", 2, 2, Exited), ("foo", "bar", 1, 1, Exited), ("foo", "bar", 0, 0, Exited)],
    default_policy(), false, true, vec![0, 1]
)]
#[case::running_containers_stay(
    vec![("foo", "bar", 2, 2, Exited), ("foo", "bar", 1, 1, Exited), ("foo", "bar", 0, 0, Running)],
    default_policy(), false, true, vec![0, 1, 2]
)]
#[case::nothing_goes_within_the_limits(
    vec![("foo", "bar", 1, 1, Exited), ("foo", "bar", 0, 0, Exited)],
    default_policy(), false, true, vec![0, 1]
)]
#[case::the_per_unit_limit_is_per_pod_uid_and_container_name(
    vec![("foo", "bar", 2, 2, Exited), ("foo", "bar", 1, 1, Exited), ("foo", "bar", 0, 0, Exited),
         ("foo1", "baz", 2, 2, Exited), ("foo1", "baz", 1, 1, Exited), ("foo1", "baz", 0, 0, Exited),
         ("foo2", "bar", 2, 2, Exited), ("foo2", "bar", 1, 1, Exited), ("foo2", "bar", 0, 0, Exited)],
    default_policy(), false, true, vec![0, 1, 3, 4, 6, 7]
)]
#[case::the_total_limit_keeps_some_of_every_unit(
    vec![("foo", "bar", 1, 1, Exited), ("foo", "bar", 0, 0, Exited),
         ("foo1", "bar1", 1, 1, Exited), ("foo1", "bar1", 0, 0, Exited),
         ("foo2", "bar2", 1, 1, Exited), ("foo2", "bar2", 0, 0, Exited),
         ("foo3", "bar3", 1, 1, Exited), ("foo3", "bar3", 0, 0, Exited),
         ("foo4", "bar4", 1, 1, Exited), ("foo4", "bar4", 0, 0, Exited)],
    default_policy(), false, true, vec![0, 2, 4, 6, 8]
)]
#[case::the_oldest_go_past_the_total_limit(
    vec![("foo", "bar", 2, 2, Exited), ("foo", "bar", 1, 1, Exited),
         ("foo1", "bar1", 2, 2, Exited), ("foo1", "bar1", 1, 1, Exited),
         ("foo2", "bar2", 1, 1, Exited), ("foo3", "bar3", 0, 0, Exited),
         ("foo4", "bar4", 1, 1, Exited), ("foo5", "bar5", 0, 0, Exited),
         ("foo6", "bar6", 2, 2, Exited), ("foo7", "bar7", 1, 1, Exited)],
    default_policy(), false, true, vec![0, 2, 4, 6, 8, 9]
)]
#[case::evicting_terminating_pods_removes_all_they_have_dead(
    vec![("foo", "bar", 2, 2, Exited), ("foo", "bar", 1, 1, Exited),
         ("foo1", "bar1", 2, 2, Exited), ("foo1", "bar1", 1, 1, Exited),
         ("running", "bar2", 1, 1, Exited), ("foo3", "bar3", 0, 0, Running)],
    default_policy(), true, true, vec![4, 5]
)]
#[case::deleted_pods_containers_go_but_min_age_still_holds(
    vec![("foo", "bar", 1, 1, Exited), ("foo", "bar", 0, 0, Exited),
         ("deleted", "bar1", 2, FRESH, Exited), ("deleted", "bar1", 1, 1, Exited),
         ("deleted", "bar1", 0, 0, Exited)],
    default_policy(), false, true, vec![0, 1, 2]
)]
#[case::deleted_pods_containers_stay_while_sources_are_not_ready(
    vec![("deleted", "bar1", 0, 0, Exited)],
    default_policy(), true, false, vec![0]
)]
#[tokio::test]
async fn container_gc_keeps_exactly_the_kubelets_containers(
    #[case] containers: Vec<GcContainer>,
    #[case] policy: GcPolicy,
    #[case] evict_terminating_pods: bool,
    #[case] all_sources_ready: bool,
    #[case] remain: Vec<usize>,
) {
    let mut rig = Rig::new().await;
    // Upstream's oracle for this table: "deleted" is deleted, every pod but "running" has
    // terminated.
    let pods: BTreeSet<&str> = containers.iter().map(|c| c.0).collect();
    let oracle = PodStateOracle {
        deleted: pods
            .iter()
            .filter(|p| **p == "deleted")
            .map(|p| (*p).to_owned())
            .collect(),
        terminated: pods
            .iter()
            .filter(|p| **p != "running")
            .map(|p| (*p).to_owned())
            .collect(),
    };
    let seeds = containers
        .iter()
        .map(|c| {
            let (pod, name, attempt, created_at, state) = *c;
            let sandbox = format!("{pod}_test-ns_{pod}_0");
            seeded_container(
                &sandbox,
                &gc_container_id(c),
                (pod, pod, "test-ns"),
                name,
                attempt,
                created_at,
                state,
            )
        })
        .collect();
    rig.seed(vec![], seeds).await;

    let request = super::containers::Request {
        policy: &policy,
        all_sources_ready,
        evict_terminating_pods,
        oracle: &oracle,
        logs: &rig.logs,
        scope: &GcScope::at(NOW),
    };
    rig.manager.evict_containers(&request).await.unwrap();

    let expected: BTreeMap<String, i32> = remain
        .iter()
        .map(|&i| (gc_container_id(&containers[i]), containers[i].4 as i32))
        .collect();
    assert_eq!(rig.containers().await, expected);
}

#[rstest]
#[case::created_exactly_at_the_cutoff_is_collectable(NOW - 3600 * SECOND, false)]
#[case::created_a_nanosecond_later_is_not(NOW - 3600 * SECOND + 1, true)]
#[tokio::test]
async fn min_age_counts_from_creation_and_includes_the_cutoff(
    #[case] created_at: i64,
    #[case] stays: bool,
) {
    let mut rig = Rig::new().await;
    let c = ("foo", "bar", 0, created_at, Exited);
    let seed = seeded_container(
        "sb",
        &gc_container_id(&c),
        ("foo", "foo", "test-ns"),
        "bar",
        0,
        created_at,
        Exited,
    );
    rig.seed(vec![], vec![seed]).await;
    let request = super::containers::Request {
        policy: &policy(HOUR, 0, -1),
        all_sources_ready: true,
        evict_terminating_pods: false,
        oracle: &PodStateOracle::default(),
        logs: &rig.logs,
        scope: &GcScope::at(NOW),
    };
    rig.manager.evict_containers(&request).await.unwrap();
    assert_eq!(rig.containers().await.len(), usize::from(stays));
}

#[tokio::test]
async fn created_containers_are_as_dead_as_exited_ones() {
    let mut rig = Rig::new().await;
    let seeds = vec![
        seeded_container("sb", "new", ("foo", "foo", "ns"), "bar", 1, 2, Created),
        seeded_container("sb", "old", ("foo", "foo", "ns"), "bar", 0, 1, Created),
    ];
    rig.seed(vec![], seeds).await;
    let request = super::containers::Request {
        policy: &policy(MINUTE, 1, -1),
        all_sources_ready: true,
        evict_terminating_pods: false,
        oracle: &PodStateOracle::default(),
        logs: &rig.logs,
        scope: &GcScope::at(NOW),
    };
    rig.manager.evict_containers(&request).await.unwrap();
    let left: Vec<String> = rig.containers().await.into_keys().collect();
    assert_eq!(left, ["new"]);
}

// ---------------------------------------------------------------------------------------------
// TestUnknownStateContainerGC

#[rstest]
#[case::default_grace(BTreeMap::new(), 2)]
#[case::grace_from_its_annotations(
    BTreeMap::from([(POD_TERMINATION_GRACE_PERIOD.to_owned(), "30".to_owned())]), 30
)]
#[tokio::test]
async fn an_unknown_container_is_stopped_before_it_is_removed(
    #[case] annotations: BTreeMap<String, String>,
    #[case] timeout: i64,
) {
    let mut rig = Rig::new().await;
    let mut seed = seeded_container(
        "sb",
        "c-unknown",
        ("foo", "foo", "test-ns"),
        "bar",
        0,
        0,
        Unknown,
    );
    seed.status.annotations = annotations;
    rig.seed(vec![], vec![seed]).await;
    let request = super::containers::Request {
        policy: &policy(HOUR, 0, 0),
        all_sources_ready: true,
        evict_terminating_pods: false,
        oracle: &PodStateOracle::default(),
        logs: &rig.logs,
        scope: &GcScope::at(NOW),
    };
    rig.manager.evict_containers(&request).await.unwrap();
    assert_eq!(
        rig.calls(),
        [
            "ListContainers filter{}".to_owned(),
            "ContainerStatus id=c-unknown".to_owned(),
            format!("StopContainer id=c-unknown timeout={timeout}"),
            "ContainerStatus id=c-unknown".to_owned(),
            "RemoveContainer id=c-unknown".to_owned(),
        ]
    );
    assert!(rig.containers().await.is_empty());
}

#[tokio::test]
async fn an_unknown_container_whose_kill_fails_is_kept() {
    let mut rig = Rig::new().await;
    let seed = seeded_container(
        "sb",
        "c-unknown",
        ("foo", "foo", "test-ns"),
        "bar",
        0,
        0,
        Unknown,
    );
    rig.seed(vec![], vec![seed]).await;
    rig.inject("StopContainer").await;
    let request = super::containers::Request {
        policy: &policy(HOUR, 0, 0),
        all_sources_ready: true,
        evict_terminating_pods: false,
        oracle: &PodStateOracle::default(),
        logs: &rig.logs,
        scope: &GcScope::at(NOW),
    };
    rig.manager.evict_containers(&request).await.unwrap();
    let calls = rig.calls();
    assert!(
        !calls.iter().any(|c| c.starts_with("RemoveContainer")),
        "{calls:?}"
    );
    assert_eq!(rig.containers().await.len(), 1);
}

// ---------------------------------------------------------------------------------------------
// TestSandboxGC

/// Upstream's three pods: (name, uid, container names).
const PODS: [(&str, &str, &[&str]); 3] = [
    ("foo1", "1234", &["bar1", "bar2"]),
    ("foo2", "5678", &["bar3"]),
    ("deleted", "9012", &["bar4"]),
];

/// Upstream's `makeGCSandbox`: (pod index, attempt, state, has running containers, is
/// terminating, created_at).
type GcSandbox = (usize, u32, v1::PodSandboxState, bool, bool, i64);

/// A container of a sandbox: (pod index, container index, sandbox attempt, state).
type SandboxContainer = (usize, usize, u32, v1::ContainerState);

fn sandbox_id(pod: usize, attempt: u32) -> String {
    let (name, uid, _) = PODS[pod];
    format!("{name}_new_{uid}_{attempt}")
}

fn gc_sandbox(&(pod, attempt, state, _, _, created_at): &GcSandbox) -> v1::PodSandboxStatus {
    let (name, uid, _) = PODS[pod];
    v1::PodSandboxStatus {
        id: sandbox_id(pod, attempt),
        metadata: Some(v1::PodSandboxMetadata {
            name: name.to_owned(),
            uid: uid.to_owned(),
            namespace: "new".to_owned(),
            attempt,
        }),
        state: state.into(),
        created_at,
        labels: pod_labels(uid, name, "new"),
        ..Default::default()
    }
}

#[rstest]
#[case::notready_sandboxes_of_deleted_pods_go(
    vec![(2, 0, NotReady, false, false, 0)], vec![], false, vec![]
)]
#[case::ready_sandboxes_of_deleted_pods_stay(
    vec![(2, 0, Ready, false, false, 0)], vec![], false, vec![0]
)]
#[case::sandboxes_of_existing_pods_stay(
    vec![(0, 0, Ready, true, false, 0), (1, 0, NotReady, true, false, 0)], vec![], false, vec![0, 1]
)]
#[case::older_exited_sandboxes_of_an_existing_pod_go(
    vec![(0, 1, NotReady, true, false, 1), (0, 0, NotReady, true, false, 0)], vec![], false, vec![0]
)]
#[case::older_exited_sandboxes_with_containers_stay(
    vec![(0, 1, NotReady, true, false, 1), (0, 0, NotReady, true, false, 0)],
    vec![(0, 0, 0, Exited)], false, vec![0, 1]
)]
#[case::evicting_terminating_pods_removes_their_inactive_sandboxes(
    vec![(0, 0, Ready, true, true, 0), (1, 0, NotReady, true, true, 0)], vec![], true, vec![0]
)]
#[case::a_sandbox_with_containers_stays(
    vec![(0, 0, NotReady, false, false, 0)], vec![(0, 0, 0, Exited)], false, vec![0]
)]
#[case::several_sandboxes_are_handled_together(
    vec![(0, 1, Ready, true, false, 1), (0, 0, NotReady, true, false, 0),
         (1, 1, NotReady, true, false, 1), (1, 0, NotReady, true, false, 0),
         (2, 0, NotReady, false, true, 0)],
    vec![(1, 0, 1, Exited)], false, vec![0, 2]
)]
#[tokio::test]
async fn sandbox_gc_keeps_exactly_the_kubelets_sandboxes(
    #[case] sandboxes: Vec<GcSandbox>,
    #[case] containers: Vec<SandboxContainer>,
    #[case] evict_terminating_pods: bool,
    #[case] remain: Vec<usize>,
) {
    let mut rig = Rig::new().await;
    // Upstream's oracle for this table: "deleted" without running containers is deleted; the
    // terminating ones have terminated.
    let mut oracle = PodStateOracle::default();
    for &(pod, _, _, running, terminating, _) in &sandboxes {
        let (name, uid, _) = PODS[pod];
        if !running && name == "deleted" {
            oracle.deleted.insert(uid.to_owned());
        }
        if terminating {
            oracle.terminated.insert(uid.to_owned());
        }
    }
    let seeds = containers
        .iter()
        .map(|&(pod, index, attempt, state)| {
            let (name, uid, names) = PODS[pod];
            let sandbox = sandbox_id(pod, attempt);
            let id = format!("{sandbox}_{}_0", names[index]);
            seeded_container(&sandbox, &id, (uid, name, "new"), names[index], 0, 1, state)
        })
        .collect();
    rig.seed(sandboxes.iter().map(gc_sandbox).collect(), seeds)
        .await;

    rig.manager
        .evict_sandboxes(evict_terminating_pods, &oracle, &GcScope::at(NOW))
        .await
        .unwrap();

    let expected: BTreeMap<String, i32> = remain
        .iter()
        .map(|&i| {
            (
                sandbox_id(sandboxes[i].0, sandboxes[i].1),
                sandboxes[i].2 as i32,
            )
        })
        .collect();
    assert_eq!(rig.sandboxes().await, expected);
}

#[tokio::test]
async fn a_sandbox_is_stopped_before_it_is_removed_and_a_failed_stop_spares_it() {
    let mut rig = Rig::new().await;
    let old = (0, 0, NotReady, true, false, 0);
    let older = (0, 1, NotReady, true, false, 1);
    let newest = (0, 2, NotReady, true, false, 2);
    rig.seed(
        vec![gc_sandbox(&newest), gc_sandbox(&older), gc_sandbox(&old)],
        vec![],
    )
    .await;
    rig.log.take();
    // The first stop (of the oldest, removed first) fails.
    rig.inject("StopPodSandbox").await;
    rig.manager
        .evict_sandboxes(false, &PodStateOracle::default(), &GcScope::at(NOW))
        .await
        .unwrap();
    assert_eq!(
        rig.calls(),
        [
            "ListContainers filter{}",
            "ListPodSandbox filter{}",
            "StopPodSandbox id=foo1_new_1234_0",
            "StopPodSandbox id=foo1_new_1234_1",
            "RemovePodSandbox id=foo1_new_1234_1",
        ]
    );
    let left: Vec<String> = rig.sandboxes().await.into_keys().collect();
    assert_eq!(left, ["foo1_new_1234_0", "foo1_new_1234_2"]);
}

// ---------------------------------------------------------------------------------------------
// TestPodLogDirectoryGC

#[rstest]
#[case::deleted_pods_directories_go(true, &["123", "456", "name_namespace_321"])]
#[case::nothing_goes_while_sources_are_not_ready(
    false, &["012", "123", "456", "789", "name_namespace_321", "name_namespace_654"]
)]
#[tokio::test]
async fn pod_log_directories_of_deleted_pods_go_by_the_uid_after_the_last_underscore(
    #[case] all_sources_ready: bool,
    #[case] remain: &[&str],
) {
    let rig = Rig::new().await;
    for name in [
        "123",
        "456",
        "789",
        "012",
        "name_namespace_321",
        "name_namespace_654",
    ] {
        let dir = rig.logs.pod_logs_root.join(name);
        std::fs::create_dir_all(dir.join("app")).unwrap();
        std::fs::write(dir.join("app/0.log"), "line\n").unwrap();
    }
    let oracle = PodStateOracle {
        deleted: ["012", "789", "654"].map(str::to_owned).into(),
        terminated: BTreeSet::new(),
    };
    rig.manager
        .evict_pod_log_directories(all_sources_ready, &oracle, &rig.logs)
        .await
        .unwrap();
    assert_eq!(
        super::logs::tests_support::names(&rig.logs.pod_logs_root),
        remain
    );
}

#[tokio::test]
async fn an_unreadable_pod_logs_root_fails_the_phase() {
    let mut rig = Rig::new().await;
    rig.logs.pod_logs_root = rig.logs.pod_logs_root.join("missing");
    let err = rig
        .manager
        .evict_pod_log_directories(true, &PodStateOracle::default(), &rig.logs)
        .await
        .unwrap_err();
    assert!(
        matches!(err, super::GcPhaseError::ReadPodLogsDirectory { .. }),
        "{err}"
    );
}

/// Dangling legacy symlinks: (file name, its container's state, or none when it has none).
#[rstest]
#[case::of_an_exited_container_goes("pod_ns_app-c-exited.log", Some(Exited), false)]
#[case::of_a_running_container_stays_for_rotation("pod_ns_app-c-running.log", Some(Running), true)]
#[case::of_a_created_container_stays("pod_ns_app-c-created.log", Some(Created), true)]
#[case::of_a_container_without_status_goes("pod_ns_app-c-gone1.log", None, false)]
#[case::with_a_too_short_id_goes("pod_ns_app-abc.log", None, false)]
#[case::not_a_log_stays("pod_ns_app-c-exited.txt", Some(Exited), true)]
#[tokio::test]
async fn a_dangling_log_symlink_goes_unless_its_container_may_rotate(
    #[case] name: &str,
    #[case] state: Option<v1::ContainerState>,
    #[case] stays: bool,
) {
    let mut rig = Rig::new().await;
    let id = super::logs::container_id_from_legacy_log_symlink(name)
        .unwrap_or("c-exited")
        .to_owned();
    if let Some(state) = state {
        let seed = seeded_container("sb", &id, ("u", "pod", "ns"), "app", 0, FRESH, state);
        rig.seed(vec![], vec![seed]).await;
    }
    let link = rig.logs.container_log_symlinks.join(name);
    std::os::unix::fs::symlink(rig.logs.pod_logs_root.join("nowhere.log"), &link).unwrap();
    rig.manager
        .evict_pod_log_directories(false, &PodStateOracle::default(), &rig.logs)
        .await
        .unwrap();
    assert_eq!(link.symlink_metadata().is_ok(), stays);
}

#[tokio::test]
async fn a_log_symlink_whose_log_exists_stays() {
    let rig = Rig::new().await;
    let target = rig.logs.pod_logs_root.join("0.log");
    std::fs::write(&target, "line\n").unwrap();
    let link = rig
        .logs
        .container_log_symlinks
        .join("pod_ns_app-c-exited.log");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    rig.manager
        .evict_pod_log_directories(true, &PodStateOracle::default(), &rig.logs)
        .await
        .unwrap();
    assert!(link.symlink_metadata().is_ok());
    assert!(rig.calls().is_empty());
}

#[tokio::test]
async fn removing_a_container_removes_its_logs_and_legacy_symlink_under_the_harness_roots() {
    let mut rig = Rig::new().await;
    let pod_dir = rig.logs.pod_logs_root.join("ns_pod_u");
    std::fs::create_dir_all(pod_dir.join("app")).unwrap();
    let log = pod_dir.join("app/0.log");
    for file in ["0.log", "0.log.20260101-000000", "1.log"] {
        std::fs::write(pod_dir.join("app").join(file), "x\n").unwrap();
    }
    let mut seed = seeded_container("sb", "c-dead", ("u", "pod", "ns"), "app", 0, 0, Exited);
    seed.status.log_path = log.display().to_string();
    rig.seed(vec![], vec![seed]).await;
    let link = rig
        .logs
        .container_log_symlinks
        .join(super::logs::legacy_log_symlink(
            "c-dead", "app", "pod", "ns",
        ));
    std::os::unix::fs::symlink(&log, &link).unwrap();
    let request = super::containers::Request {
        policy: &policy(MINUTE, 0, -1),
        all_sources_ready: true,
        evict_terminating_pods: false,
        oracle: &PodStateOracle::default(),
        logs: &rig.logs,
        scope: &GcScope::at(NOW),
    };
    rig.manager.evict_containers(&request).await.unwrap();
    assert!(rig.containers().await.is_empty());
    assert!(link.symlink_metadata().is_err());
    assert_eq!(
        super::logs::tests_support::names(&pod_dir.join("app")),
        ["1.log"]
    );
}

#[tokio::test]
async fn a_log_outside_the_harness_root_is_left_alone() {
    let mut rig = Rig::new().await;
    let elsewhere = tempfile::tempdir().unwrap();
    let log = elsewhere.path().join("0.log");
    std::fs::write(&log, "x\n").unwrap();
    let mut seed = seeded_container("sb", "c-dead", ("u", "pod", "ns"), "app", 0, 0, Exited);
    seed.status.log_path = log.display().to_string();
    rig.seed(vec![], vec![seed]).await;
    let request = super::containers::Request {
        policy: &policy(MINUTE, 0, -1),
        all_sources_ready: true,
        evict_terminating_pods: false,
        oracle: &PodStateOracle::default(),
        logs: &rig.logs,
        scope: &GcScope::at(NOW),
    };
    rig.manager.evict_containers(&request).await.unwrap();
    assert!(rig.containers().await.is_empty());
    assert!(log.exists());
}

#[tokio::test]
async fn a_container_whose_status_fails_is_not_removed() {
    let mut rig = Rig::new().await;
    let seed = seeded_container("sb", "c-dead", ("u", "pod", "ns"), "app", 0, 0, Exited);
    rig.seed(vec![], vec![seed]).await;
    rig.inject("ContainerStatus").await;
    let request = super::containers::Request {
        policy: &policy(MINUTE, 0, -1),
        all_sources_ready: true,
        evict_terminating_pods: false,
        oracle: &PodStateOracle::default(),
        logs: &rig.logs,
        scope: &GcScope::at(NOW),
    };
    rig.manager.evict_containers(&request).await.unwrap();
    assert_eq!(rig.containers().await.len(), 1);
}

#[rstest]
#[case::today("ns_pod_1234", "1234")]
#[case::seed_era("1234", "1234")]
#[case::underscores_in_the_name("ns_my_pod_1234", "1234")]
fn the_pod_uid_of_a_log_directory_follows_the_last_underscore(
    #[case] name: &str,
    #[case] uid: &str,
) {
    assert_eq!(super::logs::pod_uid_of_log_directory(name), uid);
}

#[rstest]
#[case::plain("pod_ns_app-0123456789.log", Some("0123456789"))]
#[case::dashes_in_the_names("my-pod_ns_my-app-abcdef.log", Some("abcdef"))]
#[case::six_characters_is_enough("p_n_a-abcdef.log", Some("abcdef"))]
#[case::five_is_not("p_n_a-abcde.log", None)]
#[case::other_suffix("p_n_a-abcdef.txt", None)]
fn a_legacy_symlinks_container_id_follows_the_last_dash(
    #[case] name: &str,
    #[case] id: Option<&str>,
) {
    assert_eq!(super::logs::container_id_from_legacy_log_symlink(name), id);
}

#[test]
fn a_legacy_symlink_name_is_cut_to_what_ext4_takes() {
    let id = "f".repeat(64);
    assert_eq!(
        super::logs::legacy_log_symlink(&id, "app", "pod", "ns"),
        format!("pod_ns_app-{id}.log")
    );
    let long = super::logs::legacy_log_symlink(&id, &"a".repeat(300), "pod", "ns");
    assert_eq!(long.len(), 255);
    assert!(long.ends_with(".log"));
}

// ---------------------------------------------------------------------------------------------
// GarbageCollect as a whole (the 2016 TestGarbageCollect, under today's rules)

#[tokio::test]
async fn a_whole_collection_trims_containers_and_keeps_each_pods_newest_sandbox() {
    let mut rig = Rig::new().await;
    let pods: [(&str, &str, &[&str]); 3] = [
        ("12345678", "foo1", &["foo1", "foo2", "foo3"]),
        ("123456789", "foo2", &["foo1", "foo2"]),
        ("1234567890", "foo1", &["foo1"]),
    ];
    let mut sandboxes = Vec::new();
    let mut containers = Vec::new();
    for (uid, name, names) in pods {
        let id = format!("{name}_new_{uid}_0");
        sandboxes.push(v1::PodSandboxStatus {
            id: id.clone(),
            metadata: Some(v1::PodSandboxMetadata {
                name: name.to_owned(),
                uid: uid.to_owned(),
                namespace: "new".to_owned(),
                attempt: 0,
            }),
            state: NotReady.into(),
            created_at: 1,
            labels: pod_labels(uid, name, "new"),
            ..Default::default()
        });
        for (i, container) in names.iter().enumerate() {
            let created_at = i64::try_from(i).unwrap() + 1;
            containers.push(seeded_container(
                &id,
                &format!("{id}_{container}_0"),
                (uid, name, "new"),
                container,
                0,
                created_at,
                Exited,
            ));
        }
    }
    rig.seed(sandboxes, containers).await;
    rig.manager
        .garbage_collect(
            &policy(Duration::from_secs(1), 1, 2),
            true,
            false,
            &PodStateOracle::default(),
            &rig.logs,
            &GcScope::at(NOW),
        )
        .await
        .unwrap();
    assert_eq!(rig.containers().await.len(), 2);
    assert_eq!(rig.sandboxes().await.len(), 3);
}

#[tokio::test]
async fn every_phase_runs_and_the_failed_ones_are_reported_together() {
    let mut rig = Rig::new().await;
    rig.logs.pod_logs_root = rig.logs.pod_logs_root.join("missing");
    let sandbox = gc_sandbox(&(0, 0, NotReady, true, false, 0));
    let older = gc_sandbox(&(0, 1, NotReady, true, false, -1));
    rig.seed(vec![sandbox, older], vec![]).await;
    // The container phase's listing fails; the sandbox phase still runs and removes the older.
    rig.inject("ListContainers").await;
    let err = rig
        .manager
        .garbage_collect(
            &default_policy(),
            true,
            false,
            &PodStateOracle::default(),
            &rig.logs,
            &GcScope::at(NOW),
        )
        .await
        .unwrap_err();
    assert_eq!(err.errors.len(), 2, "{err}");
    let text = err.to_string();
    assert!(
        text.starts_with(
            "garbage collection failed: containers: listing containers failed: CRI ListContainers"
        ),
        "{text}"
    );
    assert!(
        text.contains("; log directories: reading the pod logs directory"),
        "{text}"
    );
    let left: Vec<String> = rig.sandboxes().await.into_keys().collect();
    assert_eq!(left, ["foo1_new_1234_0"]);
}

#[tokio::test]
async fn a_label_selector_keeps_others_objects_out_of_reach() {
    let mut rig = Rig::new().await;
    let mut mine = seeded_container("sb", "mine", ("u", "pod", "ns"), "app", 0, 0, Exited);
    mine.status
        .labels
        .insert("owner".to_owned(), "me".to_owned());
    let theirs = seeded_container("sb", "theirs", ("u", "pod", "ns"), "app", 1, 0, Exited);
    rig.seed(vec![], vec![mine, theirs]).await;
    let scope = GcScope::at(NOW).owning(BTreeMap::from([("owner".to_owned(), "me".to_owned())]));
    rig.manager
        .garbage_collect(
            &policy(MINUTE, 0, 0),
            true,
            false,
            &PodStateOracle::default(),
            &rig.logs,
            &scope,
        )
        .await
        .unwrap();
    let left: Vec<String> = rig.containers().await.into_keys().collect();
    assert_eq!(left, ["theirs"]);
}
