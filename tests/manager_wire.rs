//! The manager against the mock runtime over the in-memory duplex: what each manager call answers
//! and the ordered CRI calls it makes, with faults injected through the mock's control service.

use std::collections::BTreeMap;
use std::sync::Arc;

use cri_harness::cri::control::mock_control_client::MockControlClient;
use cri_harness::cri::control::{
    InjectErrorRequest, SeedContainerRequest, SeedPodSandboxRequest, SetVersionRequest,
};
use cri_harness::cri::labels::{
    CONTAINER_HASH, CONTAINER_NAME, MANAGED, POD_DELETION_GRACE_PERIOD, POD_NAME, POD_NAMESPACE,
    POD_TERMINATION_GRACE_PERIOD, POD_UID,
};
use cri_harness::cri::{v1, CallLog, CriClient, PodSandbox};
use cri_harness::manager::{
    ContainerSpec, ContainerState, KubeGenericRuntimeManager, ManagerError, NetworkPlugin, Pod,
    PodSpec, PodSyncResult, RecordingNetworkPlugin, TeardownCall, KILL_CONTAINER_ERROR,
    KILL_POD_SANDBOX_ERROR, TEARDOWN_NETWORK_ERROR,
};
use cri_harness::mock::MockRuntime;
use rstest::rstest;
use tonic::transport::Channel;

use crate::support;

const NAMESPACE: &str = "wire";
const MOCK_RUNTIME_NAME: &str = "cri-harness-mock";

/// A fresh mock, a client on it that logs its calls, and the mock's control service.
struct Rig {
    client: CriClient,
    control: MockControlClient<Channel>,
    log: CallLog,
    network: Arc<RecordingNetworkPlugin>,
    // Keeps the mock's state alive for as long as the test runs.
    _mock: MockRuntime,
}

impl Rig {
    async fn new() -> Self {
        Self::with_network(RecordingNetworkPlugin::new()).await
    }

    async fn with_network(network: RecordingNetworkPlugin) -> Self {
        let (mock, client, control) = support::mock().await;
        let log = CallLog::new();
        let client = client.with_call_log(log.clone());
        Self {
            client,
            control,
            log,
            network: Arc::new(network),
            _mock: mock,
        }
    }

    /// Constructs the manager and forgets the construction's Version call.
    async fn manager(&self) -> KubeGenericRuntimeManager {
        let manager = self.try_manager().await.unwrap();
        self.log.take();
        manager
    }

    async fn try_manager(&self) -> Result<KubeGenericRuntimeManager, ManagerError> {
        let network: Arc<dyn NetworkPlugin> = self.network.clone();
        KubeGenericRuntimeManager::new(self.client.clone(), network).await
    }

    /// The calls logged since the last look, as `Method request -> outcome`.
    fn calls(&self) -> Vec<String> {
        self.log
            .take()
            .into_iter()
            .map(|c| format!("{} {} -> {}", c.method, c.request, c.outcome))
            .collect()
    }

    async fn inject_error(&mut self, method: &str, code: tonic::Code, count: u32) {
        let request = InjectErrorRequest {
            method: method.to_owned(),
            code: code as i32,
            message: format!("injected {method} failure"),
            count,
            ..Default::default()
        };
        self.control.inject_error(request).await.unwrap();
    }

    async fn seed_sandbox(&mut self, status: v1::PodSandboxStatus) {
        let request = SeedPodSandboxRequest {
            status: Some(status),
        };
        self.control.seed_pod_sandbox(request).await.unwrap();
    }

    async fn seed_container(&mut self, pod_sandbox_id: &str, status: v1::ContainerStatus) {
        let request = SeedContainerRequest {
            pod_sandbox_id: pod_sandbox_id.to_owned(),
            status: Some(status),
        };
        self.control.seed_container(request).await.unwrap();
    }
}

fn pod_name(uid: &str) -> String {
    format!("pod-{uid}")
}

fn pod_labels(uid: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (MANAGED.to_owned(), "true".to_owned()),
        (POD_UID.to_owned(), uid.to_owned()),
        (POD_NAME.to_owned(), pod_name(uid)),
        (POD_NAMESPACE.to_owned(), NAMESPACE.to_owned()),
    ])
}

/// A managed sandbox of pod `uid` as the mock would hold it after RunPodSandbox.
fn sandbox(id: &str, uid: &str, created_at: i64, ready: bool, ip: &str) -> v1::PodSandboxStatus {
    let state = if ready {
        v1::PodSandboxState::SandboxReady
    } else {
        v1::PodSandboxState::SandboxNotready
    };
    v1::PodSandboxStatus {
        id: id.to_owned(),
        metadata: Some(v1::PodSandboxMetadata {
            name: pod_name(uid),
            uid: uid.to_owned(),
            namespace: NAMESPACE.to_owned(),
            attempt: 0,
        }),
        state: state.into(),
        created_at,
        network: Some(v1::PodSandboxNetworkStatus {
            ip: ip.to_owned(),
            additional_ips: vec![],
        }),
        linux: Some(v1::LinuxPodSandboxStatus {
            namespaces: Some(v1::Namespace {
                options: Some(v1::NamespaceOption::default()),
            }),
        }),
        labels: pod_labels(uid),
        ..Default::default()
    }
}

fn host_network(mut status: v1::PodSandboxStatus) -> v1::PodSandboxStatus {
    status.linux = Some(v1::LinuxPodSandboxStatus {
        namespaces: Some(v1::Namespace {
            options: Some(v1::NamespaceOption {
                network: v1::NamespaceMode::Node.into(),
                ..Default::default()
            }),
        }),
    });
    status
}

/// A managed container of pod `uid`, named `name`.
fn container(
    id: &str,
    uid: &str,
    name: &str,
    created_at: i64,
    state: v1::ContainerState,
) -> v1::ContainerStatus {
    let mut labels = pod_labels(uid);
    labels.insert(CONTAINER_NAME.to_owned(), name.to_owned());
    let running = state == v1::ContainerState::ContainerRunning;
    v1::ContainerStatus {
        id: id.to_owned(),
        metadata: Some(v1::ContainerMetadata {
            name: name.to_owned(),
            attempt: 0,
        }),
        state: state.into(),
        created_at,
        started_at: created_at + 1,
        finished_at: if running { 0 } else { created_at + 2 },
        exit_code: if running { 0 } else { 1 },
        reason: if running { "" } else { "Error" }.to_owned(),
        image: Some(v1::ImageSpec {
            image: "docker.io/library/busybox:1.36".to_owned(),
            ..Default::default()
        }),
        image_ref: "sha256:busybox".to_owned(),
        labels,
        annotations: BTreeMap::from([(CONTAINER_HASH.to_owned(), "abc".to_owned())]),
        ..Default::default()
    }
}

use v1::ContainerState::{ContainerExited as Exited, ContainerRunning as Running};

fn shape(pods: &[Pod]) -> Vec<String> {
    pods.iter()
        .map(|p| {
            let ids = |cs: &[cri_harness::manager::Container]| {
                cs.iter()
                    .map(|c| c.id.id.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            };
            format!(
                "{} {}/{}: [{}] [{}]",
                p.id,
                p.namespace,
                p.name,
                ids(&p.sandboxes),
                ids(&p.containers)
            )
        })
        .collect()
}

/// Each step as `Action target: ok` or `Action target: ErrorKind`.
fn steps(result: &PodSyncResult) -> Vec<String> {
    result
        .results
        .iter()
        .map(|r| {
            format!(
                "{} {}: {}",
                r.action,
                r.target,
                r.error.as_deref().unwrap_or("ok")
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Construction

#[tokio::test]
async fn construction_accepts_0_1_0_and_takes_the_runtime_name_as_type() {
    let rig = Rig::new().await;
    let manager = rig.try_manager().await.unwrap();
    assert_eq!(manager.runtime_type(), MOCK_RUNTIME_NAME);
    assert_eq!(rig.calls(), [r#"Version version="0.1.0" -> OK"#]);
}

#[rstest]
#[case::newer("0.2.0")]
#[case::v1_style("v1")]
#[case::empty("")]
#[tokio::test]
async fn construction_rejects_any_other_version_as_not_supported(#[case] version: &str) {
    let mut rig = Rig::new().await;
    let answer = v1::VersionResponse {
        version: version.to_owned(),
        runtime_name: "other".to_owned(),
        runtime_version: "1.0.0".to_owned(),
        runtime_api_version: "v1".to_owned(),
    };
    rig.control
        .set_version(SetVersionRequest {
            version: Some(answer),
        })
        .await
        .unwrap();
    let err = rig.try_manager().await.unwrap_err();
    assert!(
        matches!(&err, ManagerError::VersionNotSupported { version: v } if v == version),
        "{err:?}"
    );
    assert_eq!(rig.calls().len(), 1, "exactly one Version call");
}

#[tokio::test]
async fn construction_compares_only_the_version_field() {
    let mut rig = Rig::new().await;
    let answer = v1::VersionResponse {
        version: "0.1.0".to_owned(),
        runtime_name: "containerd".to_owned(),
        runtime_version: "1.6.20~ds1".to_owned(),
        runtime_api_version: "v1alpha2".to_owned(),
    };
    rig.control
        .set_version(SetVersionRequest {
            version: Some(answer),
        })
        .await
        .unwrap();
    let manager = rig.try_manager().await.unwrap();
    assert_eq!(manager.runtime_type(), "containerd");
}

#[tokio::test]
async fn construction_propagates_a_version_rpc_error() {
    let mut rig = Rig::new().await;
    rig.inject_error("Version", tonic::Code::Unavailable, 1)
        .await;
    let err = rig.try_manager().await.unwrap_err();
    let ManagerError::Call(call) = &err else {
        panic!("expected a call error, got {err:?}");
    };
    assert_eq!(
        (call.method, call.code),
        ("Version", tonic::Code::Unavailable)
    );
    assert_eq!(call.message, "injected Version failure");
}

#[tokio::test]
async fn version_reads_the_api_echo_and_api_version_refuses_a_bare_v1() {
    let rig = Rig::new().await;
    let manager = rig.manager().await;
    assert_eq!(manager.version().await.unwrap().as_str(), "0.1.0");
    let err = manager.api_version().await.unwrap_err();
    assert!(
        matches!(&err, ManagerError::InvalidVersion { text, .. } if text == "v1"),
        "{err:?}"
    );
}

#[tokio::test]
async fn status_converts_the_runtime_conditions() {
    let rig = Rig::new().await;
    let manager = rig.manager().await;
    let status = manager.status().await.unwrap();
    let conditions: Vec<_> = status
        .conditions
        .iter()
        .map(|c| (c.r#type.as_str(), c.status))
        .collect();
    assert_eq!(conditions, [("RuntimeReady", true), ("NetworkReady", true)]);
    assert_eq!(rig.calls(), ["Status  -> OK"]);
}

// ---------------------------------------------------------------------------------------------
// GetPods

/// u1: ready sandbox + running container; u2: not-ready sandbox + exited container; u3: a running
/// orphan whose sandbox is gone; plus an unmanaged sandbox and container, and a container
/// without metadata.
async fn seed_pods(rig: &mut Rig) {
    rig.seed_sandbox(sandbox("sb-u1", "u1", 10, true, "10.88.0.2"))
        .await;
    rig.seed_sandbox(sandbox("sb-u2", "u2", 20, false, ""))
        .await;
    let mut unmanaged = sandbox("sb-other", "u9", 30, true, "10.88.0.9");
    unmanaged.labels.remove(MANAGED);
    rig.seed_sandbox(unmanaged).await;

    rig.seed_container("sb-u1", container("c-u1", "u1", "app", 11, Running))
        .await;
    rig.seed_container("sb-u2", container("c-u2", "u2", "app", 21, Exited))
        .await;
    rig.seed_container("sb-gone", container("c-u3", "u3", "app", 31, Running))
        .await;
    let mut unmanaged = container("c-other", "u9", "app", 32, Running);
    unmanaged.labels.remove(MANAGED);
    rig.seed_container("sb-other", unmanaged).await;
    let mut bare = container("c-bare", "u4", "app", 33, Running);
    bare.metadata = None;
    rig.seed_container("sb-gone", bare).await;
}

#[tokio::test]
async fn get_pods_all_groups_sandboxes_and_orphans_by_uid() {
    let mut rig = Rig::new().await;
    seed_pods(&mut rig).await;
    let manager = rig.manager().await;
    let pods = manager.get_pods(true).await.unwrap();
    assert_eq!(
        shape(&pods),
        [
            "u1 wire/pod-u1: [sb-u1] [c-u1]",
            "u2 wire/pod-u2: [sb-u2] [c-u2]",
            "u3 wire/pod-u3: [] [c-u3]",
        ]
    );
    let u1 = &pods[0];
    assert_eq!(u1.sandboxes[0].state, ContainerState::Running);
    assert_eq!(u1.sandboxes[0].id.r#type, MOCK_RUNTIME_NAME);
    assert_eq!(
        (
            u1.containers[0].name.as_str(),
            u1.containers[0].hash,
            u1.containers[0].state
        ),
        ("app", 0xabc, ContainerState::Running)
    );
    assert_eq!(pods[1].sandboxes[0].state, ContainerState::Exited);
    assert_eq!(pods[1].containers[0].state, ContainerState::Exited);
    assert_eq!(
        rig.calls(),
        [
            "ListPodSandbox filter=none -> OK",
            "ListContainers filter{labels={io.kubernetes.managed=true}} -> OK",
        ]
    );
}

#[tokio::test]
async fn get_pods_running_hides_not_ready_sandboxes_and_exited_containers() {
    let mut rig = Rig::new().await;
    seed_pods(&mut rig).await;
    let manager = rig.manager().await;
    let pods = manager.get_pods(false).await.unwrap();
    assert_eq!(
        shape(&pods),
        [
            "u1 wire/pod-u1: [sb-u1] [c-u1]",
            "u3 wire/pod-u3: [] [c-u3]"
        ]
    );
    assert_eq!(
        rig.calls(),
        [
            "ListPodSandbox filter{state=SANDBOX_READY} -> OK",
            "ListContainers filter{state=CONTAINER_RUNNING labels={io.kubernetes.managed=true}} -> OK",
        ]
    );
}

#[tokio::test]
async fn get_pods_fails_whole_on_a_list_error() {
    let mut rig = Rig::new().await;
    seed_pods(&mut rig).await;
    let manager = rig.manager().await;
    rig.inject_error("ListContainers", tonic::Code::Internal, 1)
        .await;
    let err = manager.get_pods(true).await.unwrap_err();
    assert!(
        matches!(&err, ManagerError::Call(c) if c.method == "ListContainers"),
        "{err:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// GetPodStatus

/// Sandboxes of pod u1 seeded in list order as (id, created_at, ready, ip, host network).
type SandboxRow = (&'static str, i64, bool, &'static str, bool);

#[rstest]
#[case::newest_ready_sandbox_gives_the_ip(
    vec![("sb-old", 10, false, "", false), ("sb-new", 20, true, "10.88.0.3", false)],
    "10.88.0.3",
    vec!["sb-new", "sb-old"]
)]
#[case::newest_not_ready_gives_no_ip_despite_an_older_ready_one(
    vec![("sb-old", 10, true, "10.88.0.2", false), ("sb-new", 20, false, "", false)],
    "",
    vec!["sb-new", "sb-old"]
)]
#[case::order_is_by_created_at_not_list_order(
    vec![("sb-new", 30, true, "10.88.0.4", false), ("sb-mid", 20, true, "10.88.0.3", false), ("sb-old", 10, true, "10.88.0.2", false)],
    "10.88.0.4",
    vec!["sb-new", "sb-mid", "sb-old"]
)]
#[case::one_sandbox(vec![("sb-only", 10, true, "10.88.0.2", false)], "10.88.0.2", vec!["sb-only"])]
#[case::host_network_newest_sandbox_has_no_ip(
    vec![("sb-old", 10, true, "10.88.0.2", false), ("sb-host", 20, true, "", true)],
    "",
    vec!["sb-host", "sb-old"]
)]
#[case::no_sandbox_at_all(vec![], "", vec![])]
#[tokio::test]
async fn get_pod_status_takes_the_ip_from_the_newest_sandbox_while_ready(
    #[case] rows: Vec<SandboxRow>,
    #[case] expected_ip: &str,
    #[case] expected_order: Vec<&str>,
) {
    let mut rig = Rig::new().await;
    for (id, created_at, ready, ip, host) in rows {
        let status = sandbox(id, "u1", created_at, ready, ip);
        rig.seed_sandbox(if host { host_network(status) } else { status })
            .await;
    }
    // Another pod's ready sandbox must not leak in.
    rig.seed_sandbox(sandbox("sb-x", "u2", 99, true, "10.88.0.99"))
        .await;
    let manager = rig.manager().await;
    let status = manager
        .get_pod_status("u1", "pod-u1", NAMESPACE)
        .await
        .unwrap();
    assert_eq!(status.ip, expected_ip);
    let order: Vec<_> = status
        .sandbox_statuses
        .iter()
        .map(|s| s.id.as_str())
        .collect();
    assert_eq!(order, expected_order);
    assert_eq!(
        (
            status.id.as_str(),
            status.name.as_str(),
            status.namespace.as_str()
        ),
        ("u1", "pod-u1", NAMESPACE)
    );
}

#[tokio::test]
async fn get_pod_status_reports_containers_sandbox_by_sandbox_newest_first() {
    let mut rig = Rig::new().await;
    rig.seed_sandbox(sandbox("sb-old", "u1", 10, false, ""))
        .await;
    rig.seed_sandbox(sandbox("sb-new", "u1", 20, true, "10.88.0.3"))
        .await;
    rig.seed_container("sb-old", container("c-old-a", "u1", "app", 11, Exited))
        .await;
    rig.seed_container("sb-new", container("c-new-a", "u1", "app", 21, Running))
        .await;
    rig.seed_container("sb-new", container("c-new-b", "u1", "side", 22, Running))
        .await;
    // An orphan of the same pod whose sandbox is gone: the seed does not report it.
    rig.seed_container("sb-gone", container("c-orphan", "u1", "app", 5, Exited))
        .await;
    let manager = rig.manager().await;

    let status = manager
        .get_pod_status("u1", "pod-u1", NAMESPACE)
        .await
        .unwrap();
    let ids: Vec<_> = status
        .container_statuses
        .iter()
        .map(|c| c.id.id.as_str())
        .collect();
    assert_eq!(ids, ["c-new-b", "c-new-a", "c-old-a"]);
    let running = &status.container_statuses[0];
    assert_eq!(
        (
            running.name.as_str(),
            running.started_at,
            running.finished_at,
            running.hash
        ),
        ("side", 23, 0, 0xabc)
    );
    let exited = &status.container_statuses[2];
    assert_eq!(
        (
            exited.started_at,
            exited.finished_at,
            exited.exit_code,
            exited.reason.as_str()
        ),
        (0, 13, 1, "Error")
    );
    assert_eq!(
        rig.calls(),
        [
            "ListPodSandbox filter{labels={io.kubernetes.pod.uid=u1}} -> OK",
            "PodSandboxStatus id=sb-new -> OK",
            "PodSandboxStatus id=sb-old -> OK",
            "ListContainers filter{sandbox=sb-new} -> OK",
            // Asked newest first, whatever order the runtime lists them in.
            "ContainerStatus id=c-new-b -> OK",
            "ContainerStatus id=c-new-a -> OK",
            "ListContainers filter{sandbox=sb-old} -> OK",
            "ContainerStatus id=c-old-a -> OK",
        ]
    );
}

#[tokio::test]
async fn get_pod_status_fails_whole_when_a_sandbox_status_fails() {
    let mut rig = Rig::new().await;
    rig.seed_sandbox(sandbox("sb-a", "u1", 10, true, "10.88.0.2"))
        .await;
    let manager = rig.manager().await;
    rig.inject_error("PodSandboxStatus", tonic::Code::NotFound, 1)
        .await;
    let err = manager
        .get_pod_status("u1", "pod-u1", NAMESPACE)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ManagerError::Call(c) if c.method == "PodSandboxStatus" && c.is_not_found()),
        "{err:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// KillPod

fn spec(uid: &str, host_network: bool) -> PodSpec {
    PodSpec {
        uid: uid.to_owned(),
        name: pod_name(uid),
        namespace: NAMESPACE.to_owned(),
        host_network,
        termination_grace_period_seconds: Some(30),
        deletion_grace_period_seconds: None,
        containers: vec![
            ContainerSpec {
                name: "app".to_owned(),
                image: "busybox".to_owned(),
            },
            ContainerSpec {
                name: "side".to_owned(),
                image: "busybox".to_owned(),
            },
        ],
        ..PodSpec::default()
    }
}

/// Pod u1 with one ready sandbox (host network or not) and two running containers; answers the
/// running pod as get_pods(false) sees it.
async fn seed_running_pod(rig: &mut Rig, manager: &KubeGenericRuntimeManager, host: bool) -> Pod {
    let status = sandbox("sb-u1", "u1", 10, true, if host { "" } else { "10.88.0.2" });
    rig.seed_sandbox(if host { host_network(status) } else { status })
        .await;
    rig.seed_container("sb-u1", container("c-app", "u1", "app", 11, Running))
        .await;
    rig.seed_container("sb-u1", container("c-side", "u1", "side", 12, Running))
        .await;
    let mut pods = manager.get_pods(false).await.unwrap();
    rig.log.take();
    assert_eq!(pods.len(), 1);
    pods.remove(0)
}

#[rstest]
#[case::pod_network(false)]
#[case::host_network(true)]
#[tokio::test]
async fn kill_pod_with_spec_stops_containers_tears_down_pod_network_and_stops_sandbox(
    #[case] host: bool,
) {
    let mut rig = Rig::new().await;
    let manager = rig.manager().await;
    let running = seed_running_pod(&mut rig, &manager, host).await;

    let result = manager
        .kill_pod(Some(&spec("u1", host)), &running, None)
        .await;

    let mut expected_steps = vec!["KillContainer app: ok", "KillContainer side: ok"];
    let mut expected_teardowns = vec![];
    if !host {
        expected_steps.push("TeardownNetwork u1: ok");
        expected_teardowns.push(TeardownCall {
            namespace: NAMESPACE.to_owned(),
            name: "pod-u1".to_owned(),
            sandbox_id: "sb-u1".to_owned(),
        });
    }
    expected_steps.push("KillPodSandbox u1: ok");
    assert_eq!(steps(&result), expected_steps);
    assert_eq!(result.error(), None);
    assert_eq!(rig.network.calls(), expected_teardowns);
    assert_eq!(
        rig.calls(),
        [
            "StopContainer id=c-app timeout=30 -> OK",
            "StopContainer id=c-side timeout=30 -> OK",
            "StopPodSandbox id=sb-u1 -> OK",
        ]
    );
    let after = manager.get_pods(true).await.unwrap();
    assert_eq!(after[0].sandboxes[0].state, ContainerState::Exited);
    assert!(after[0]
        .containers
        .iter()
        .all(|c| c.state == ContainerState::Exited));
}

#[rstest]
#[case::pod_network(false)]
#[case::host_network(true)]
#[tokio::test]
async fn kill_pod_without_spec_reads_grace_and_host_network_from_the_runtime(#[case] host: bool) {
    let mut rig = Rig::new().await;
    let manager = rig.manager().await;
    let status = sandbox("sb-u1", "u1", 10, true, if host { "" } else { "10.88.0.2" });
    rig.seed_sandbox(if host { host_network(status) } else { status })
        .await;
    let mut app = container("c-app", "u1", "app", 11, Running);
    app.annotations
        .insert(POD_DELETION_GRACE_PERIOD.to_owned(), "7".to_owned());
    app.annotations
        .insert(POD_TERMINATION_GRACE_PERIOD.to_owned(), "30".to_owned());
    rig.seed_container("sb-u1", app).await;
    let mut side = container("c-side", "u1", "side", 12, Running);
    side.annotations
        .insert(POD_TERMINATION_GRACE_PERIOD.to_owned(), "1".to_owned());
    rig.seed_container("sb-u1", side).await;
    let running = manager.get_pods(false).await.unwrap().remove(0);
    rig.log.take();

    let result = manager.kill_pod(None, &running, None).await;

    let teardown = if host {
        vec![]
    } else {
        vec!["TeardownNetwork u1: ok"]
    };
    let expected_steps: Vec<&str> = ["KillContainer app: ok", "KillContainer side: ok"]
        .into_iter()
        .chain(teardown)
        .chain(["KillPodSandbox u1: ok"])
        .collect();
    assert_eq!(steps(&result), expected_steps);
    assert_eq!(rig.network.calls().len(), usize::from(!host));
    assert_eq!(
        rig.calls(),
        [
            "ContainerStatus id=c-app -> OK",
            "ContainerStatus id=c-side -> OK",
            // Deletion grace wins over termination grace; 1 s is raised to the 2 s minimum.
            "StopContainer id=c-app timeout=7 -> OK",
            "StopContainer id=c-side timeout=2 -> OK",
            "PodSandboxStatus id=sb-u1 -> OK",
            "StopPodSandbox id=sb-u1 -> OK",
        ]
    );
}

#[rstest]
#[case::zero_is_taken_as_is(Some(0), "timeout=0")]
#[case::replaces_the_spec_grace(Some(5), "timeout=5")]
#[case::none_keeps_the_spec_grace(None, "timeout=30")]
#[tokio::test]
async fn kill_pod_grace_override_replaces_the_clamped_value(
    #[case] grace_override: Option<i64>,
    #[case] expected: &str,
) {
    let mut rig = Rig::new().await;
    let manager = rig.manager().await;
    let running = seed_running_pod(&mut rig, &manager, false).await;
    manager
        .kill_pod(Some(&spec("u1", false)), &running, grace_override)
        .await;
    let calls = rig.calls();
    assert_eq!(calls[0], format!("StopContainer id=c-app {expected} -> OK"));
    assert_eq!(
        calls[1],
        format!("StopContainer id=c-side {expected} -> OK")
    );
}

#[tokio::test]
async fn kill_pod_records_a_teardown_failure_and_still_stops_every_sandbox() {
    let mut rig = Rig::with_network(RecordingNetworkPlugin::failing("cni is down")).await;
    let manager = rig.manager().await;
    rig.seed_sandbox(sandbox("sb-new", "u1", 20, true, "10.88.0.3"))
        .await;
    rig.seed_sandbox(sandbox("sb-old", "u1", 10, false, ""))
        .await;
    rig.seed_container("sb-new", container("c-app", "u1", "app", 21, Running))
        .await;
    let running = manager.get_pods(true).await.unwrap().remove(0);
    rig.log.take();

    let result = manager
        .kill_pod(Some(&spec("u1", false)), &running, None)
        .await;

    assert_eq!(
        steps(&result),
        [
            "KillContainer app: ok".to_owned(),
            format!("TeardownNetwork u1: {TEARDOWN_NETWORK_ERROR}"),
            "KillPodSandbox u1: ok".to_owned(),
        ]
    );
    let teardown = &result.results[1];
    assert!(
        teardown.message.contains("cni is down"),
        "{}",
        teardown.message
    );
    assert!(
        teardown.message.contains(rig.network.name()),
        "{}",
        teardown.message
    );
    // The first listed sandbox is the one torn down.
    assert_eq!(rig.network.calls()[0].sandbox_id, "sb-new");
    let error = result.error().unwrap();
    assert!(
        error.starts_with(r#"failed to "TeardownNetwork" for "u1" with TeardownNetworkError: "#),
        "{error}"
    );
    assert_eq!(
        rig.calls(),
        [
            "StopContainer id=c-app timeout=30 -> OK",
            "StopPodSandbox id=sb-new -> OK",
            "StopPodSandbox id=sb-old -> OK",
        ]
    );
}

/// The container (by name) whose call of `method` the client saw fail; concurrent calls reach
/// the mock in an order the runtime flavour decides, so an injected fault may hit either.
fn failed_container(calls: &[String], method: &str) -> &'static str {
    let failed: Vec<_> = calls
        .iter()
        .filter(|c| c.starts_with(method) && !c.ends_with("-> OK"))
        .collect();
    assert_eq!(failed.len(), 1, "{calls:?}");
    if failed[0].contains("id=c-app ") {
        "app"
    } else {
        "side"
    }
}

#[tokio::test]
async fn kill_pod_records_a_container_stop_failure_and_goes_on() {
    let mut rig = Rig::new().await;
    let manager = rig.manager().await;
    let running = seed_running_pod(&mut rig, &manager, false).await;
    rig.inject_error("StopContainer", tonic::Code::Unknown, 1)
        .await;

    let result = manager
        .kill_pod(Some(&spec("u1", false)), &running, None)
        .await;

    let calls = rig.calls();
    let failed = failed_container(&calls, "StopContainer");
    let outcome = |name: &str| {
        if name == failed {
            KILL_CONTAINER_ERROR
        } else {
            "ok"
        }
    };
    assert_eq!(
        steps(&result),
        [
            format!("KillContainer app: {}", outcome("app")),
            format!("KillContainer side: {}", outcome("side")),
            "TeardownNetwork u1: ok".to_owned(),
            "KillPodSandbox u1: ok".to_owned(),
        ]
    );
    let step = result.results.iter().find(|r| r.target == failed).unwrap();
    assert!(
        step.message.contains("injected StopContainer failure"),
        "{}",
        step.message
    );
    // Issued in container order, whatever order they were answered in.
    let issued: Vec<_> = calls
        .iter()
        .map(|c| c.split(" -> ").next().unwrap())
        .collect();
    assert_eq!(
        issued,
        [
            "StopContainer id=c-app timeout=30",
            "StopContainer id=c-side timeout=30",
            "StopPodSandbox id=sb-u1",
        ]
    );
}

#[tokio::test]
async fn kill_pod_without_spec_fails_a_container_whose_status_fails() {
    let mut rig = Rig::new().await;
    let manager = rig.manager().await;
    let running = seed_running_pod(&mut rig, &manager, false).await;
    rig.inject_error("ContainerStatus", tonic::Code::NotFound, 1)
        .await;

    let result = manager.kill_pod(None, &running, None).await;

    let calls = rig.calls();
    let failed = failed_container(&calls, "ContainerStatus");
    let survivor = if failed == "app" { "c-side" } else { "c-app" };
    let outcome = |name: &str| {
        if name == failed {
            KILL_CONTAINER_ERROR
        } else {
            "ok"
        }
    };
    assert_eq!(
        steps(&result)[..2],
        [
            format!("KillContainer app: {}", outcome("app")),
            format!("KillContainer side: {}", outcome("side")),
        ]
    );
    // Only the container whose grace period could be read is stopped.
    let stops: Vec<_> = calls
        .iter()
        .filter(|c| c.starts_with("StopContainer"))
        .collect();
    assert_eq!(
        stops,
        [&format!("StopContainer id={survivor} timeout=2 -> OK")]
    );
}

#[tokio::test]
async fn kill_pod_without_spec_gives_up_before_sandboxes_when_their_status_fails() {
    let mut rig = Rig::new().await;
    let manager = rig.manager().await;
    let running = seed_running_pod(&mut rig, &manager, false).await;
    let mut only_sandbox = running.clone();
    only_sandbox.containers.clear();
    rig.inject_error("PodSandboxStatus", tonic::Code::Unavailable, 1)
        .await;

    let result = manager.kill_pod(None, &only_sandbox, None).await;

    assert!(result.results.is_empty(), "{:?}", result.results);
    let sync_error = result.sync_error.as_deref().unwrap();
    assert!(sync_error.contains("PodSandboxStatus"), "{sync_error}");
    assert!(result.error().unwrap().starts_with("failed to SyncPod: "));
    assert!(rig.network.calls().is_empty());
    assert_eq!(
        rig.calls(),
        ["PodSandboxStatus id=sb-u1 -> Unavailable: injected PodSandboxStatus failure"]
    );
}

#[tokio::test]
async fn kill_pod_keeps_stopping_sandboxes_after_one_fails() {
    let mut rig = Rig::new().await;
    let manager = rig.manager().await;
    rig.seed_sandbox(sandbox("sb-new", "u1", 20, true, "10.88.0.3"))
        .await;
    rig.seed_sandbox(sandbox("sb-old", "u1", 10, true, "10.88.0.2"))
        .await;
    let running = manager.get_pods(true).await.unwrap().remove(0);
    rig.log.take();
    rig.inject_error("StopPodSandbox", tonic::Code::Internal, 1)
        .await;

    let result = manager
        .kill_pod(Some(&spec("u1", false)), &running, None)
        .await;

    assert_eq!(
        steps(&result),
        [
            "TeardownNetwork u1: ok".to_owned(),
            format!("KillPodSandbox u1: {KILL_POD_SANDBOX_ERROR}"),
        ]
    );
    assert!(result.results[1]
        .message
        .contains("injected StopPodSandbox failure"));
    assert_eq!(
        rig.calls(),
        [
            "StopPodSandbox id=sb-new -> Internal: injected StopPodSandbox failure",
            "StopPodSandbox id=sb-old -> OK",
        ]
    );
}

#[tokio::test]
async fn kill_pod_of_an_orphan_only_stops_its_containers() {
    let mut rig = Rig::new().await;
    let manager = rig.manager().await;
    rig.seed_container("sb-gone", container("c-app", "u3", "app", 11, Running))
        .await;
    let running = manager.get_pods(false).await.unwrap().remove(0);
    assert!(running.sandboxes.is_empty());
    rig.log.take();

    let result = manager.kill_pod(None, &running, None).await;

    assert_eq!(steps(&result), ["KillContainer app: ok"]);
    assert!(rig.network.calls().is_empty());
    assert_eq!(
        rig.calls(),
        [
            "ContainerStatus id=c-app -> OK",
            "StopContainer id=c-app timeout=2 -> OK",
        ]
    );
}

/// Creates pod u1 the way a kubelet would: RunPodSandbox, PullImage, CreateContainer,
/// StartContainer, with the seed's labels.
async fn run_pod(client: &CriClient, uid: &str, host: bool) -> (String, String) {
    let config = PodSandbox::new(&pod_name(uid), NAMESPACE, uid)
        .network(host)
        .labels(pod_labels(uid))
        .build();
    let sandbox_id = client.run_pod_sandbox(config.clone(), "").await.unwrap();
    client.pull_image("busybox:1.36").await.unwrap();
    let mut labels = pod_labels(uid);
    labels.insert(CONTAINER_NAME.to_owned(), "app".to_owned());
    let container = v1::ContainerConfig {
        metadata: Some(v1::ContainerMetadata {
            name: "app".to_owned(),
            attempt: 0,
        }),
        image: Some(v1::ImageSpec {
            image: "busybox:1.36".to_owned(),
            ..Default::default()
        }),
        labels,
        ..Default::default()
    };
    let container_id = client
        .create_container(&sandbox_id, container, config)
        .await
        .unwrap();
    client.start_container(&container_id).await.unwrap();
    (sandbox_id, container_id)
}

#[rstest]
#[case::pod_network(false)]
#[case::host_network(true)]
#[tokio::test]
async fn a_pod_run_through_cri_is_listed_reported_and_killed(#[case] host: bool) {
    let rig = Rig::new().await;
    let manager = rig.manager().await;
    let (sandbox_id, container_id) = run_pod(&rig.client, "u1", host).await;

    let pods = manager.get_pods(false).await.unwrap();
    assert_eq!(pods.len(), 1);
    assert_eq!(pods[0].sandboxes[0].id.id, sandbox_id);
    assert_eq!(pods[0].containers[0].id.id, container_id);
    let status = manager
        .get_pod_status("u1", "pod-u1", NAMESPACE)
        .await
        .unwrap();
    // The mock hands out pod IPs from 10.88.0.2; a host-network sandbox has none.
    assert_eq!(status.ip, if host { "" } else { "10.88.0.2" });
    assert_eq!(status.container_statuses[0].state, ContainerState::Running);
    rig.log.take();

    let result = manager.kill_pod(None, &pods[0], None).await;

    assert_eq!(result.error(), None);
    assert_eq!(rig.network.calls().len(), usize::from(!host));
    assert!(manager.get_pods(false).await.unwrap().is_empty());
    let status = manager
        .get_pod_status("u1", "pod-u1", NAMESPACE)
        .await
        .unwrap();
    assert_eq!(status.ip, "");
    assert_eq!(status.container_statuses[0].state, ContainerState::Exited);
}

// ---------------------------------------------------------------------------------------------
// GetNetNS and GetPodContainerID

#[tokio::test]
async fn get_netns_reads_the_path_from_the_verbose_status_of_a_ready_managed_sandbox() {
    let mut rig = Rig::new().await;
    rig.seed_sandbox(sandbox("sb-u1", "u1", 10, true, "10.88.0.2"))
        .await;
    let manager = rig.manager().await;
    let path = manager.get_netns("sb-u1").await.unwrap();
    assert!(path.contains("/netns/cni-"), "{path}");
    assert_eq!(
        rig.calls(),
        [
            "ListPodSandbox filter{id=sb-u1 state=SANDBOX_READY labels={io.kubernetes.managed=true}} -> OK",
            "PodSandboxStatus id=sb-u1 verbose -> OK",
        ]
    );
}

#[rstest]
#[case::not_ready(false, true)]
#[case::unmanaged(true, false)]
#[tokio::test]
async fn get_netns_treats_a_not_ready_or_unmanaged_sandbox_as_not_found(
    #[case] ready: bool,
    #[case] managed: bool,
) {
    let mut rig = Rig::new().await;
    let mut status = sandbox("sb-u1", "u1", 10, ready, "");
    if !managed {
        status.labels.remove(MANAGED);
    }
    rig.seed_sandbox(status).await;
    let manager = rig.manager().await;
    let err = manager.get_netns("sb-u1").await.unwrap_err();
    assert!(
        matches!(&err, ManagerError::SandboxNotFound { id } if id == "sb-u1"),
        "{err:?}"
    );
    assert_eq!(err.to_string(), r#"sandbox "sb-u1" is not found"#);
    assert_eq!(rig.calls().len(), 1, "no status call after an empty list");
}

#[tokio::test]
async fn get_pod_container_id_answers_the_first_sandbox_of_a_listed_pod() {
    let mut rig = Rig::new().await;
    rig.seed_sandbox(sandbox("sb-a", "u1", 10, true, "10.88.0.2"))
        .await;
    let manager = rig.manager().await;
    let pod = manager.get_pods(true).await.unwrap().remove(0);
    rig.log.take();
    let id = manager.get_pod_container_id(&pod).unwrap();
    assert_eq!(
        (id.r#type.as_str(), id.id.as_str()),
        (MOCK_RUNTIME_NAME, "sb-a")
    );
    assert!(rig.calls().is_empty(), "no CRI call");
}
