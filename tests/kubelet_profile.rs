//! The rules where the 2016 seed and today's kubelet differ, each run under both profiles on the
//! mock over the in-memory duplex. The first two port the modern kubelet's own tests
//! (kuberuntime_manager_test.go): TestStopContainerWithNotFoundError and
//! TestGetPodStatusWithNotFoundError; the third ports TestGetPodsSorted.

use crate::support;

use std::sync::Arc;

use cri_harness::cri::control::mock_control_client::MockControlClient;
use cri_harness::cri::control::{InjectErrorRequest, SetClockRequest};
use cri_harness::cri::labels::{CONTAINER_NAME, MANAGED, POD_NAME, POD_NAMESPACE, POD_UID};
use cri_harness::cri::{v1, CriClient};
use cri_harness::manager::{
    ContainerState, KubeGenericRuntimeManager, KubeletProfile, ManagerError, NoopNetworkPlugin,
    Pod, SyncAction, KILL_CONTAINER_ERROR, KILL_POD_SANDBOX_ERROR,
};
use cri_harness::mock::MockRuntime;
use rstest::rstest;
use tonic::transport::Channel;
use tonic::Code;

use KubeletProfile::{Current, Seed};

/// The upstream tests' pod: `new/foo`, UID 12345678.
const UID: &str = "12345678";
const NAME: &str = "foo";
const NAMESPACE: &str = "new";

/// A mock, its clients, and a manager under one profile.
struct Rig {
    client: CriClient,
    control: MockControlClient<Channel>,
    manager: KubeGenericRuntimeManager,
    _mock: MockRuntime,
}

impl Rig {
    async fn new(profile: KubeletProfile) -> Self {
        let (mock, client, control) = support::mock().await;
        let manager = KubeGenericRuntimeManager::new(client.clone(), Arc::new(NoopNetworkPlugin))
            .await
            .unwrap()
            .with_profile(profile);
        Self {
            client,
            control,
            manager,
            _mock: mock,
        }
    }

    /// Makes the next call of `method` (naming `target`, if given) answer `code`.
    async fn inject(&mut self, method: &str, code: Code, target: Option<&str>) {
        let request = InjectErrorRequest {
            method: method.to_owned(),
            code: code as i32,
            message: "No such container".to_owned(),
            count: 1,
            target_id: target.unwrap_or_default().to_owned(),
            ..Default::default()
        };
        self.control.inject_error(request).await.unwrap();
    }

    /// A ready sandbox of pod `uid` labelled as the kubelet labels it, with a running
    /// container for each name; answers the sandbox id and the container ids.
    async fn pod(&self, uid: &str, containers: &[&str]) -> (String, Vec<String>) {
        let pod_labels = support::labels(&[
            (MANAGED, "true"),
            (POD_UID, uid),
            (POD_NAME, NAME),
            (POD_NAMESPACE, NAMESPACE),
        ]);
        let sandbox_config = v1::PodSandboxConfig {
            labels: pod_labels.clone(),
            ..support::sandbox_config(NAME, NAMESPACE, uid, 0)
        };
        let sandbox = self
            .client
            .run_pod_sandbox(sandbox_config.clone(), "")
            .await
            .unwrap();
        self.client.pull_image("busybox").await.unwrap();
        let mut ids = Vec::new();
        for name in containers {
            let mut labels = pod_labels.clone();
            labels.insert(CONTAINER_NAME.to_owned(), (*name).to_owned());
            let config = v1::ContainerConfig {
                labels,
                ..support::container_config(name, "busybox")
            };
            let id = self
                .client
                .create_container(&sandbox, config, sandbox_config.clone())
                .await
                .unwrap();
            self.client.start_container(&id).await.unwrap();
            ids.push(id);
        }
        (sandbox, ids)
    }

    /// The pod as GetPods answers it, the running pod KillPod takes.
    async fn running_pod(&self, uid: &str) -> Pod {
        let pods = self.manager.get_pods(true).await.unwrap();
        pods.into_iter().find(|p| p.id == uid).unwrap()
    }
}

/// (action, error kind) of each step of a kill, in order.
fn steps(result: &cri_harness::manager::PodSyncResult) -> Vec<(SyncAction, Option<&str>)> {
    result
        .results
        .iter()
        .map(|r| (r.action, r.error.as_deref()))
        .collect()
}

/// Ports TestStopContainerWithNotFoundError: the pod's status is read, then the pod is killed
/// while the runtime answers the first container's StopContainer NotFound. Today's kubelet
/// takes that container as stopped; the seed records a failed kill.
#[rstest]
#[case::seed_records_the_failure(Seed, Some(KILL_CONTAINER_ERROR))]
#[case::current_takes_not_found_as_stopped(Current, None)]
#[tokio::test]
async fn a_stop_container_answered_not_found_during_kill(
    #[case] profile: KubeletProfile,
    #[case] foo1_error: Option<&str>,
) {
    let mut rig = Rig::new(profile).await;
    let (_, containers) = rig.pod(UID, &["foo1", "foo2"]).await;
    rig.manager
        .get_pod_status(UID, NAME, NAMESPACE)
        .await
        .unwrap();
    let running = rig.running_pod(UID).await;
    rig.inject("StopContainer", Code::NotFound, Some(&containers[0]))
        .await;
    let result = rig.manager.kill_pod(None, &running, Some(1)).await;
    assert_eq!(
        steps(&result),
        [
            (SyncAction::KillContainer, foo1_error),
            (SyncAction::KillContainer, None),
            (SyncAction::TeardownNetwork, None),
            (SyncAction::KillPodSandbox, None),
        ]
    );
    assert_eq!(result.error().is_none(), profile == Current, "{result:?}");
    if let Some(failed) = result.results.iter().find(|r| r.error.is_some()) {
        assert!(failed.message.contains("NotFound"), "{failed:?}");
        assert_eq!(failed.target, "foo1");
    }
}

/// The same rule for the sandbox (kubelet rules: #stopping-the-sandboxes): a StopPodSandbox
/// answered NotFound is a stopped
/// sandbox to today's kubelet and a failed KillPodSandbox step to the seed.
#[rstest]
#[case::seed_records_the_failure(Seed, Some(KILL_POD_SANDBOX_ERROR))]
#[case::current_takes_not_found_as_stopped(Current, None)]
#[tokio::test]
async fn a_stop_pod_sandbox_answered_not_found_during_kill(
    #[case] profile: KubeletProfile,
    #[case] sandbox_error: Option<&str>,
) {
    let mut rig = Rig::new(profile).await;
    let (sandbox, _) = rig.pod(UID, &["foo1"]).await;
    let running = rig.running_pod(UID).await;
    rig.inject("StopPodSandbox", Code::NotFound, Some(&sandbox))
        .await;
    let result = rig.manager.kill_pod(None, &running, Some(1)).await;
    assert_eq!(
        steps(&result),
        [
            (SyncAction::KillContainer, None),
            (SyncAction::TeardownNetwork, None),
            (SyncAction::KillPodSandbox, sandbox_error),
        ]
    );
}

/// Any other failure of a stop is a failure under both profiles: only NotFound is forgiven.
#[rstest]
#[tokio::test]
async fn a_stop_failing_otherwise_fails_the_kill_under_both_profiles(
    #[values(Seed, Current)] profile: KubeletProfile,
) {
    let mut rig = Rig::new(profile).await;
    let (_, containers) = rig.pod(UID, &["foo1"]).await;
    let running = rig.running_pod(UID).await;
    rig.inject("StopContainer", Code::Internal, Some(&containers[0]))
        .await;
    let result = rig.manager.kill_pod(None, &running, Some(1)).await;
    assert_eq!(
        steps(&result)[0],
        (SyncAction::KillContainer, Some(KILL_CONTAINER_ERROR))
    );
}

/// Ports TestGetPodStatusWithNotFoundError: the first ContainerStatus answers NotFound. Today's
/// kubelet answers the pod's status without that container (identity and IP as usual); the
/// seed fails the whole call with the runtime's NotFound.
#[rstest]
#[case::seed(Seed)]
#[case::current(Current)]
#[tokio::test]
async fn a_container_status_answered_not_found_while_reading_the_pod_status(
    #[case] profile: KubeletProfile,
) {
    let mut rig = Rig::new(profile).await;
    let (sandbox, containers) = rig.pod(UID, &["foo1", "foo2"]).await;
    let ip = rig
        .client
        .pod_sandbox_status(&sandbox)
        .await
        .unwrap()
        .status
        .and_then(|s| s.network)
        .map(|n| n.ip)
        .unwrap();
    rig.inject("ContainerStatus", Code::NotFound, Some(&containers[0]))
        .await;
    let status = rig.manager.get_pod_status(UID, NAME, NAMESPACE).await;
    match profile {
        Seed => match status {
            Err(ManagerError::Call(err)) => {
                assert_eq!((err.method, err.code), ("ContainerStatus", Code::NotFound));
            }
            other => panic!("the seed must fail with the NotFound, got {other:?}"),
        },
        Current => {
            let status = status.unwrap();
            assert_eq!(
                (
                    status.id.as_str(),
                    status.name.as_str(),
                    status.namespace.as_str()
                ),
                (UID, NAME, NAMESPACE)
            );
            assert_eq!(status.ip, ip);
            assert!(!ip.is_empty());
            let reported: Vec<(&str, &str, ContainerState)> = status
                .container_statuses
                .iter()
                .map(|c| (c.id.id.as_str(), c.name.as_str(), c.state))
                .collect();
            assert_eq!(
                reported,
                [(containers[1].as_str(), "foo2", ContainerState::Running)]
            );
        }
    }
}

/// Ports TestGetPodsSorted: three pods whose sandboxes were created at 10, 5 and 20 s (the
/// mock's frozen clock). Today's kubelet lists them newest first with each pod's created_at;
/// the seed in the order it met them, with created_at 0.
#[rstest]
#[case::seed(Seed, [("0", 0), ("1", 0), ("2", 0)])]
#[case::current(Current, [("2", 20), ("0", 10), ("1", 5)])]
#[tokio::test]
async fn get_pods_order_and_created_at(
    #[case] profile: KubeletProfile,
    #[case] expected: [(&str, i64); 3],
) {
    let mut rig = Rig::new(profile).await;
    for (uid, seconds) in [("0", 10), ("1", 5), ("2", 20)] {
        let request = SetClockRequest {
            unix_nanos: seconds * 1_000_000_000,
        };
        rig.control.set_clock(request).await.unwrap();
        rig.pod(uid, &[]).await;
    }
    let pods = rig.manager.get_pods(false).await.unwrap();
    let order: Vec<(&str, i64)> = pods
        .iter()
        .map(|p| (p.id.as_str(), p.created_at / 1_000_000_000))
        .collect();
    assert_eq!(order, expected);
}

/// A run skips the cases that state the other kubelet, naming the flag, and runs the ones that
/// state its own or none.
#[rstest]
#[case::seed_run(Seed, ["passed", "skipped", "passed"])]
#[case::current_run(Current, ["skipped", "passed", "passed"])]
#[tokio::test]
async fn a_run_skips_the_cases_stating_the_other_kubelet(
    #[case] profile: KubeletProfile,
    #[case] expected: [&str; 3],
) {
    use cri_harness::runner::{self, CaseOutcome, Interrupt, SkipWhy, Target};
    let text = "suite: profiles\nabout: x\ncases:\n\
        \x20 - name: seed-only\n    kubelet: seed\n    steps:\n      - version: {}\n\
        \x20 - name: current-only\n    kubelet: current\n    steps:\n      - version: {}\n\
        \x20 - name: either\n    steps:\n      - version: {}\n";
    let suite = cri_harness::suite::parse("profiles.yaml", text).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let mut config = support::run_config(Target::Mock, vec![suite], "profiles", scratch.path());
    config.kubelet = profile;
    // The cases' references are recorded, not compared: this is about which cases run.
    config.snapshots.update = true;
    let report = runner::run(config, Interrupt::new(), None).await;
    let outcomes: Vec<&str> = report
        .cases
        .iter()
        .map(|c| match &c.outcome {
            CaseOutcome::Passed => "passed",
            CaseOutcome::Failed(_) => "failed",
            CaseOutcome::Warning(_) => "warning",
            CaseOutcome::Error(_) => "error",
            CaseOutcome::Known { .. } => "known",
            CaseOutcome::Skipped(_) => "skipped",
            CaseOutcome::Flaky(_) => "flaky",
            CaseOutcome::Interrupted(_) => "interrupted",
        })
        .collect();
    assert_eq!(outcomes, expected, "{:?}", report.cases);
    for case in &report.cases {
        if let CaseOutcome::Skipped(skip) = &case.outcome {
            assert_eq!(skip.why, SkipWhy::KubeletProfile);
            let other = if profile == Seed { Current } else { Seed };
            assert!(
                skip.reason.contains(&format!("--kubelet {other}")),
                "{}",
                skip.reason
            );
        }
    }
}
