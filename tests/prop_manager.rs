//! The manager's properties, 1,000 generated cases each against the in-memory mock, and tests
//! that each property's checker does fail on a wrong answer (so a green run means something).

use std::cell::RefCell;

use cri_harness::cri::v1;
use cri_harness::manager::{
    Container, ContainerId, ContainerState, ManagerError, Pod, PodStatus, PodSyncResult,
    SyncAction, SyncResult, TeardownCall,
};
use cri_harness::mock::MockRuntime;
use cri_harness::prop::check::{self, KillObservation, Scope};
use cri_harness::prop::{
    run_case, Applied, Case, Faults, KillPlan, KillTarget, Model, Naming, Op, PodKey, PodLabels,
    Profile, Property, RuntimeState, Scenario, Target,
};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::strategy::ValueTree;
use proptest::test_runner::{FileFailurePersistence, TestCaseError, TestRunner};

/// A mock and a single-threaded runtime per test thread, reset before every case.
struct Harness {
    runtime: tokio::runtime::Runtime,
    target: Target,
}

impl Harness {
    fn new() -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let target = runtime.block_on(Target::mock(&MockRuntime::new())).unwrap();
        Self { runtime, target }
    }
}

thread_local! {
    static HARNESS: RefCell<Option<Harness>> = const { RefCell::new(None) };
}

fn naming() -> Naming {
    Naming {
        run_id: "test".to_owned(),
        case: 0,
    }
}

/// Runs one case on this thread's mock.
fn check_case(property: Property, case: &Case) -> Result<(), TestCaseError> {
    HARNESS.with(|cell| {
        let mut cell = cell.borrow_mut();
        let harness = cell.get_or_insert_with(Harness::new);
        harness
            .runtime
            .block_on(run_case(property, case, &harness.target, &naming()))
            .map_err(|err| TestCaseError::fail(err.chain()))
    })
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 1000,
        // Shrunk failures are kept under proptest-regressions/ (committed) and replayed first.
        // (SourceParallel only maps files under src/; this binary's file is named directly.)
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/prop_manager.txt",
        ))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn get_pods_puts_every_object_in_exactly_one_pod(
        case in Property::GetPods.strategy(Profile::MOCK)
    ) {
        check_case(Property::GetPods, &case)?;
    }

    #[test]
    fn pod_status_ip_comes_from_the_newest_ready_pod_network_sandbox(
        case in Property::PodStatus.strategy(Profile::MOCK)
    ) {
        check_case(Property::PodStatus, &case)?;
    }

    #[test]
    fn kill_pod_tears_down_once_unless_host_network_and_stops_everything(
        case in Property::KillPod.strategy(Profile::MOCK)
    ) {
        check_case(Property::KillPod, &case)?;
    }

    #[test]
    fn version_gating_accepts_exactly_0_1_0(
        case in Property::VersionGating.strategy(Profile::MOCK)
    ) {
        check_case(Property::VersionGating, &case)?;
    }
}

// ----- each checker can fail -----

/// An index picking object `n` of `len` (`Index` is only made by its strategy).
fn index_of(n: usize, len: usize) -> Index {
    let mut runner = TestRunner::deterministic();
    loop {
        let index = any::<Index>().new_tree(&mut runner).unwrap().current();
        if index.index(len) == n {
            return index;
        }
    }
}

fn run(pod: u8, attempt: u32, host_network: bool) -> Op {
    Op::RunSandbox {
        pod,
        attempt,
        host_network,
        created_at: 0,
    }
}

fn create(sandbox: usize, of: usize, labels: PodLabels, start: bool) -> Op {
    Op::CreateContainer {
        sandbox: index_of(sandbox, of),
        name: 0,
        labels,
        start,
    }
}

/// Made-up ids and IPs for a model, as if a runtime had answered.
fn applied(model: &Model) -> Applied {
    Applied {
        sandboxes: (0..model.sandboxes.len())
            .map(|n| Some(format!("sb{n}")))
            .collect(),
        ips: (0..model.sandboxes.len())
            .map(|n| format!("10.88.0.{}", n + 2))
            .collect(),
        containers: (0..model.containers.len())
            .map(|n| Some(format!("ct{n}")))
            .collect(),
        outcomes: Vec::new(),
    }
}

fn item(id: &str, state: ContainerState) -> Container {
    Container {
        id: ContainerId {
            r#type: "mock".to_owned(),
            id: id.to_owned(),
        },
        name: "app".to_owned(),
        state,
        ..Default::default()
    }
}

fn pod(key: PodKey, sandboxes: Vec<Container>, containers: Vec<Container>) -> Pod {
    let (id, name, namespace) = naming().identity(key);
    Pod {
        id,
        name,
        namespace,
        sandboxes,
        containers,
        ..Default::default()
    }
}

/// p0 with one ready sandbox s0, and c0 in it carrying p1's labels (an orphan), running.
fn orphan_model() -> Model {
    let scenario = Scenario {
        ops: vec![run(0, 0, false), create(0, 1, PodLabels::Pod(1), true)],
    };
    Model::build(&scenario, false)
}

#[test]
fn get_pods_check_accepts_the_models_own_answer() {
    let model = orphan_model();
    let pods = vec![
        pod(
            PodKey::Pod(0),
            vec![item("sb0", ContainerState::Running)],
            vec![],
        ),
        pod(
            PodKey::Pod(1),
            vec![],
            vec![item("ct0", ContainerState::Running)],
        ),
    ];
    let applied = applied(&model);
    check::check_get_pods(&model, &applied, &naming(), true, &pods, Scope::Whole).unwrap();
}

#[test]
fn get_pods_check_fails_when_an_orphan_is_put_in_its_sandboxes_pod() {
    let model = orphan_model();
    let pods = vec![pod(
        PodKey::Pod(0),
        vec![item("sb0", ContainerState::Running)],
        vec![item("ct0", ContainerState::Running)],
    )];
    let err = check::check_get_pods(
        &model,
        &applied(&model),
        &naming(),
        true,
        &pods,
        Scope::Whole,
    )
    .unwrap_err();
    assert!(err.to_string().contains(check::GET_PODS), "{err}");
}

#[test]
fn get_pods_check_fails_when_an_object_is_in_two_pods() {
    let model = orphan_model();
    let pods = vec![
        pod(
            PodKey::Pod(0),
            vec![item("sb0", ContainerState::Running)],
            vec![item("ct0", ContainerState::Running)],
        ),
        pod(
            PodKey::Pod(1),
            vec![],
            vec![item("ct0", ContainerState::Running)],
        ),
    ];
    let err = check::check_get_pods(
        &model,
        &applied(&model),
        &naming(),
        true,
        &pods,
        Scope::Whole,
    )
    .unwrap_err();
    assert!(err.to_string().contains("exactly one pod"), "{err}");
}

#[test]
fn get_pods_check_fails_when_running_only_lists_a_stopped_sandbox() {
    let scenario = Scenario {
        ops: vec![
            run(0, 0, false),
            Op::StopSandbox {
                sandbox: index_of(0, 1),
            },
        ],
    };
    let model = Model::build(&scenario, false);
    let pods = vec![pod(
        PodKey::Pod(0),
        vec![item("sb0", ContainerState::Exited)],
        vec![],
    )];
    assert!(check::check_get_pods(
        &model,
        &applied(&model),
        &naming(),
        false,
        &pods,
        Scope::Whole
    )
    .is_err());
    check::check_get_pods(
        &model,
        &applied(&model),
        &naming(),
        true,
        &pods,
        Scope::Whole,
    )
    .unwrap();
}

/// p0 with two ready pod-network sandboxes, s0 older than s1.
fn two_sandbox_model() -> Model {
    Model::build(
        &Scenario {
            ops: vec![run(0, 0, false), run(0, 1, false)],
        },
        false,
    )
}

fn status(sandbox_ids: &[&str], ip: &str) -> PodStatus {
    let (id, name, namespace) = naming().identity(PodKey::Pod(0));
    PodStatus {
        id,
        name,
        namespace,
        ip: ip.to_owned(),
        sandbox_statuses: sandbox_ids
            .iter()
            .map(|id| v1::PodSandboxStatus {
                id: (*id).to_owned(),
                ..Default::default()
            })
            .collect(),
        container_statuses: Vec::new(),
    }
}

#[test]
fn pod_status_check_accepts_the_newest_sandboxes_ip() {
    let model = two_sandbox_model();
    let applied = applied(&model);
    check::check_pod_status(
        &model,
        &applied,
        &naming(),
        0,
        &status(&["sb1", "sb0"], "10.88.0.3"),
    )
    .unwrap();
}

#[test]
fn pod_status_check_fails_on_the_oldest_sandboxes_ip() {
    let model = two_sandbox_model();
    let err = check::check_pod_status(
        &model,
        &applied(&model),
        &naming(),
        0,
        &status(&["sb1", "sb0"], "10.88.0.2"),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("expected <ip:s1>, got <ip:s0>"),
        "{err}"
    );
}

#[test]
fn pod_status_check_fails_on_oldest_first_order() {
    let model = two_sandbox_model();
    assert!(check::check_pod_status(
        &model,
        &applied(&model),
        &naming(),
        0,
        &status(&["sb0", "sb1"], "10.88.0.3"),
    )
    .is_err());
}

#[test]
fn pod_status_check_fails_on_an_ip_for_a_host_network_newest_sandbox() {
    let model = Model::build(
        &Scenario {
            ops: vec![run(0, 0, false), run(0, 1, true)],
        },
        false,
    );
    let applied = applied(&model);
    assert!(check::check_pod_status(
        &model,
        &applied,
        &naming(),
        0,
        &status(&["sb1", "sb0"], "10.88.0.2")
    )
    .is_err());
    check::check_pod_status(&model, &applied, &naming(), 0, &status(&["sb1", "sb0"], "")).unwrap();
}

fn step(action: SyncAction, target: &str) -> SyncResult {
    SyncResult::new(action, target)
}

/// Kills p0 (one host-network sandbox) with a spec saying host network.
fn host_network_kill(
    result: &PodSyncResult,
    teardown: &[TeardownCall],
) -> Result<(), cri_harness::prop::PropError> {
    let model = Model::build(
        &Scenario {
            ops: vec![run(0, 0, true)],
        },
        false,
    );
    let applied = applied(&model);
    let plan = KillPlan {
        target: KillTarget::Pod(0),
        spec: Some(true),
        faults: Faults::default(),
    };
    let view = model.listed_view(PodKey::Pod(0));
    let expected = model.kill(&view, &plan);
    let after = RuntimeState {
        sandboxes: [(0, false)].into(),
        containers: Default::default(),
    };
    check::check_kill(
        &model,
        &applied,
        &naming(),
        PodKey::Pod(0),
        &view,
        &expected,
        KillObservation {
            result,
            teardown,
            after: &after,
        },
    )
}

#[test]
fn kill_check_accepts_no_teardown_for_a_host_network_pod() {
    let uid = naming().pod_uid(0);
    let result = PodSyncResult {
        results: vec![step(SyncAction::KillPodSandbox, &uid)],
        sync_error: None,
    };
    host_network_kill(&result, &[]).unwrap();
}

#[test]
fn kill_check_fails_on_a_teardown_for_a_host_network_pod() {
    let uid = naming().pod_uid(0);
    let result = PodSyncResult {
        results: vec![
            step(SyncAction::TeardownNetwork, &uid),
            step(SyncAction::KillPodSandbox, &uid),
        ],
        sync_error: None,
    };
    let teardown = [TeardownCall {
        namespace: naming().namespace(),
        name: "p0".to_owned(),
        sandbox_id: "sb0".to_owned(),
    }];
    let err = host_network_kill(&result, &teardown).unwrap_err();
    assert!(err.to_string().contains(check::KILL_POD), "{err}");
}

#[test]
fn kill_check_fails_when_a_sandbox_is_left_ready() {
    let uid = naming().pod_uid(0);
    let result = PodSyncResult {
        results: vec![step(SyncAction::KillPodSandbox, &uid)],
        sync_error: None,
    };
    let model = Model::build(
        &Scenario {
            ops: vec![run(0, 0, true)],
        },
        false,
    );
    let plan = KillPlan {
        target: KillTarget::Pod(0),
        spec: Some(true),
        faults: Faults::default(),
    };
    let view = model.listed_view(PodKey::Pod(0));
    let expected = model.kill(&view, &plan);
    let still_ready = RuntimeState {
        sandboxes: [(0, true)].into(),
        containers: Default::default(),
    };
    let err = check::check_kill(
        &model,
        &applied(&model),
        &naming(),
        PodKey::Pod(0),
        &view,
        &expected,
        KillObservation {
            result: &result,
            teardown: &[],
            after: &still_ready,
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("sandboxes afterwards"), "{err}");
}

#[test]
fn kill_check_fails_when_an_injected_failure_is_missing_from_the_result() {
    let model = Model::build(
        &Scenario {
            ops: vec![run(0, 0, false), create(0, 1, PodLabels::Own, true)],
        },
        false,
    );
    let plan = KillPlan {
        target: KillTarget::Pod(0),
        spec: Some(false),
        faults: Faults {
            stop_container: 1,
            ..Default::default()
        },
    };
    let view = model.listed_view(PodKey::Pod(0));
    let expected = model.kill(&view, &plan);
    let uid = naming().pod_uid(0);
    let all_ok = PodSyncResult {
        results: vec![
            step(SyncAction::KillContainer, "app"),
            step(SyncAction::TeardownNetwork, &uid),
            step(SyncAction::KillPodSandbox, &uid),
        ],
        sync_error: None,
    };
    let teardown = [TeardownCall {
        namespace: naming().namespace(),
        name: "p0".to_owned(),
        sandbox_id: "sb0".to_owned(),
    }];
    let after = RuntimeState {
        sandboxes: [(0, false)].into(),
        containers: [(0, ContainerState::Exited)].into(),
    };
    let err = check::check_kill(
        &model,
        &applied(&model),
        &naming(),
        PodKey::Pod(0),
        &view,
        &expected,
        KillObservation {
            result: &all_ok,
            teardown: &teardown,
            after: &after,
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("failed KillContainer"), "{err}");
}

#[test]
fn version_check_fails_when_a_near_miss_is_accepted_or_the_exact_one_refused() {
    assert!(check::check_version_gating("0.1.0 ", "rt", Ok("rt")).is_err());
    assert!(check::check_version_gating("v0.1.0", "rt", Ok("rt")).is_err());
    let refused = ManagerError::VersionNotSupported {
        version: "0.1.0".to_owned(),
    };
    assert!(check::check_version_gating("0.1.0", "rt", Err(&refused)).is_err());
    check::check_version_gating("0.1.0", "rt", Ok("rt")).unwrap();
    let near = ManagerError::VersionNotSupported {
        version: "0.1".to_owned(),
    };
    check::check_version_gating("0.1", "rt", Err(&near)).unwrap();
}
