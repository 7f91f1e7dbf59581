//! The mock's control service, across the wire (in-memory duplex): version override, injected
//! errors and delays, the clock, timed container exits, the call log, seeding and reset.

use crate::support;

use std::time::Duration;

use cri_harness::cri::control::{
    mock_control_client::MockControlClient, AdvanceClockRequest, CallRecord, ExitContainerRequest,
    GetCallLogRequest, InjectErrorRequest, InjectLatencyRequest, ResetRequest,
    SeedContainerRequest, SeedPodSandboxRequest, SeedRequest, SetClockRequest, SetVersionRequest,
};
use cri_harness::cri::{v1, CriClient};
use rstest::rstest;
use support::{create_container, labels, mock, run_sandbox, sandbox_config};
use tonic::transport::Channel;
use tonic::Code;

type Control = MockControlClient<Channel>;

async fn inject_error(control: &mut Control, method: &str, code: Code, count: u32) {
    control
        .inject_error(InjectErrorRequest {
            method: method.into(),
            code: code as i32,
            message: format!("injected {code:?}"),
            count,
            ..Default::default()
        })
        .await
        .unwrap();
}

async fn call_log(control: &mut Control, clear: bool) -> Vec<CallRecord> {
    control
        .get_call_log(GetCallLogRequest { clear })
        .await
        .unwrap()
        .into_inner()
        .calls
}

async fn created_at(client: &CriClient, name: &str) -> i64 {
    let id = run_sandbox(client, name).await;
    client
        .pod_sandbox_status(&id)
        .await
        .unwrap()
        .status
        .unwrap()
        .created_at
}

#[rstest]
#[case::odd_version(v1::VersionResponse { version: "9.9.9".into(), runtime_name: "other".into(), runtime_version: "x".into(), runtime_api_version: "v1alpha2".into() })]
#[case::empty(v1::VersionResponse::default())]
#[tokio::test]
async fn set_version_is_answered_verbatim(#[case] answer: v1::VersionResponse) {
    let (_mock, client, mut control) = mock().await;
    control
        .set_version(SetVersionRequest {
            version: Some(answer.clone()),
        })
        .await
        .unwrap();
    assert_eq!(client.version("0.1.0").await.unwrap(), answer);
    assert_eq!(client.version("").await.unwrap(), answer);
}

#[tokio::test]
async fn an_injected_error_fails_the_next_calls_then_stops() {
    let (_mock, client, mut control) = mock().await;
    inject_error(&mut control, "Version", Code::Unavailable, 2).await;
    let mut outcomes = Vec::new();
    for _ in 0..3 {
        outcomes.push(
            client
                .version("")
                .await
                .map(|_| ())
                .map_err(|e| (e.code, e.message)),
        );
    }
    let injected = Err((Code::Unavailable, "injected Unavailable".to_owned()));
    assert_eq!(outcomes, [injected.clone(), injected, Ok(())]);
}

#[tokio::test]
async fn a_count_of_zero_injects_one_failure() {
    let (_mock, client, mut control) = mock().await;
    inject_error(&mut control, "Status", Code::Internal, 0).await;
    assert_eq!(client.status(false).await.unwrap_err().code, Code::Internal);
    client.status(false).await.unwrap();
}

#[tokio::test]
async fn injections_of_one_method_leave_the_others_alone() {
    let (_mock, client, mut control) = mock().await;
    inject_error(&mut control, "StopPodSandbox", Code::Internal, 1).await;
    let id = run_sandbox(&client, "a").await;
    client.pod_sandbox_status(&id).await.unwrap();
    assert_eq!(
        client.stop_pod_sandbox(&id).await.unwrap_err().code,
        Code::Internal
    );
}

#[tokio::test]
async fn injected_errors_answer_before_any_state_change() {
    let (_mock, client, mut control) = mock().await;
    let id = run_sandbox(&client, "a").await;
    inject_error(&mut control, "StopPodSandbox", Code::Unavailable, 1).await;
    inject_error(&mut control, "RunPodSandbox", Code::Unavailable, 1).await;
    client.stop_pod_sandbox(&id).await.unwrap_err();
    client
        .run_pod_sandbox(sandbox_config("b", "default", "uid-b", 0), "")
        .await
        .unwrap_err();
    let sandboxes = client.list_pod_sandbox(None).await.unwrap();
    let states: Vec<(String, i32)> = sandboxes.into_iter().map(|s| (s.id, s.state)).collect();
    assert_eq!(states, [(id, v1::PodSandboxState::SandboxReady as i32)]);
    // The failed RunPodSandbox reserved no name either.
    run_sandbox(&client, "b").await;
}

#[tokio::test]
async fn an_injected_error_can_fail_an_unmodelled_method_too() {
    let (_mock, client, mut control) = mock().await;
    inject_error(&mut control, "ExecSync", Code::DeadlineExceeded, 1).await;
    let status = client
        .runtime_service()
        .exec_sync(v1::ExecSyncRequest::default())
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::DeadlineExceeded);
}

#[rstest]
#[case::ok_code("Version", 0, "not an error code")]
#[case::beyond_grpc_codes("Version", 17, "not an error code")]
#[case::negative_code("Version", -1, "not an error code")]
#[case::unknown_method("RunSandbox", 14, "valid methods: Version, RunPodSandbox,")]
#[case::wrong_case("version", 14, "unknown CRI method \"version\"")]
#[tokio::test]
async fn inject_error_refuses_what_it_cannot_inject(
    #[case] method: &str,
    #[case] code: i32,
    #[case] message: &str,
) {
    let (_mock, _client, mut control) = mock().await;
    let status = control
        .inject_error(InjectErrorRequest {
            method: method.into(),
            code,
            message: String::new(),
            count: 1,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(status.message().contains(message), "{}", status.message());
}

#[tokio::test]
async fn inject_latency_refuses_an_unknown_method() {
    let (_mock, _client, mut control) = mock().await;
    let status = control
        .inject_latency(InjectLatencyRequest {
            method: "Nope".into(),
            delay_ms: 10,
            count: 1,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
}

#[tokio::test]
async fn injected_latency_holds_exactly_the_next_count_calls() {
    let (_mock, client, mut control) = mock().await;
    // An hour-long delay against a short deadline: a delayed call can only time out, an
    // undelayed one answers, so counting outcomes observes the delay without timing it.
    control
        .inject_latency(InjectLatencyRequest {
            method: "Version".into(),
            delay_ms: 3_600_000,
            count: 2,
            ..Default::default()
        })
        .await
        .unwrap();
    let hasty = client.with_timeout(Duration::from_millis(300));
    let mut codes = Vec::new();
    for _ in 0..2 {
        codes.push(
            hasty
                .version("")
                .await
                .map(|_| Code::Ok)
                .unwrap_or_else(|e| e.code),
        );
    }
    codes.push(
        client
            .version("")
            .await
            .map(|_| Code::Ok)
            .unwrap_or_else(|e| e.code),
    );
    client.status(false).await.unwrap();
    assert_eq!(
        codes,
        [Code::DeadlineExceeded, Code::DeadlineExceeded, Code::Ok]
    );
    let methods: Vec<String> = call_log(&mut control, false)
        .await
        .into_iter()
        .map(|r| r.method)
        .collect();
    assert_eq!(methods, ["Version", "Version", "Version", "Status"]);
}

/// An Internal error on `count` calls of `method` naming `target`, from the `nth` on.
fn aimed_error(method: &str, target: &str, nth: u32, count: u32) -> InjectErrorRequest {
    InjectErrorRequest {
        method: method.into(),
        code: Code::Internal as i32,
        message: format!("injected on {target}"),
        count,
        target_id: target.into(),
        nth,
    }
}

/// The code each call answered with (OK included).
fn code<T>(outcome: Result<T, cri_harness::cri::CallError>) -> Code {
    outcome.map(|_| Code::Ok).unwrap_or_else(|e| e.code)
}

/// A sandbox with three started containers; their ids in creation order.
async fn three_running_containers(client: &CriClient) -> Vec<String> {
    let sandbox = run_sandbox(client, "web").await;
    let mut ids = Vec::new();
    for name in ["first", "second", "third"] {
        let id = create_container(client, &sandbox, "web", name).await;
        client.start_container(&id).await.unwrap();
        ids.push(id);
    }
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_stops_fail_only_the_container_the_error_names() {
    let (_mock, client, mut control) = mock().await;
    let ids = three_running_containers(&client).await;
    // Stopping an exited container answers OK, so every round can stop all three again; the
    // calls are issued in a different order each round and race on the server's two threads.
    for round in 0..12 {
        control
            .inject_error(aimed_error("StopContainer", &ids[1], 0, 1))
            .await
            .unwrap();
        let mut order: Vec<usize> = vec![0, 1, 2];
        order.rotate_left(round % 3);
        if round % 2 == 1 {
            order.reverse();
        }
        let calls: Vec<_> = order
            .iter()
            .map(|&index| {
                let (client, id) = (client.clone(), ids[index].clone());
                tokio::spawn(async move { (index, code(client.stop_container(&id, 0).await)) })
            })
            .collect();
        let mut outcomes = Vec::new();
        for call in calls {
            outcomes.push(call.await.unwrap());
        }
        outcomes.sort_unstable_by_key(|(index, _)| *index);
        assert_eq!(
            outcomes,
            [(0, Code::Ok), (1, Code::Internal), (2, Code::Ok)],
            "round {round}, issued in order {order:?}"
        );
    }
    let failed: Vec<String> = call_log(&mut control, false)
        .await
        .into_iter()
        .filter(|r| r.method == "StopContainer" && r.code != 0)
        .map(|r| r.request)
        .collect();
    assert_eq!(failed, vec![format!("id={} timeout=0", ids[1]); 12]);
}

#[tokio::test]
async fn the_nth_call_naming_the_target_fails_and_other_targets_do_not_count() {
    let (_mock, client, mut control) = mock().await;
    let ids = three_running_containers(&client).await;
    let (a, b) = (&ids[0], &ids[1]);
    control
        .inject_error(aimed_error("ContainerStatus", b, 2, 2))
        .await
        .unwrap();
    let mut codes = Vec::new();
    for id in [b, a, a, b, a, b, b] {
        codes.push(code(client.container_status(id).await));
    }
    use Code::{Internal, Ok};
    assert_eq!(codes, [Ok, Ok, Ok, Internal, Ok, Internal, Ok]);
}

#[tokio::test]
async fn a_call_naming_a_prefix_of_the_target_id_is_not_hit() {
    let (_mock, client, mut control) = mock().await;
    let ids = three_running_containers(&client).await;
    control
        .inject_error(aimed_error("StopContainer", &ids[1], 0, 1))
        .await
        .unwrap();
    // The mock resolves the prefix to the same container, but the fault names the full id.
    let prefix = &ids[1][..12];
    let codes = [
        code(client.stop_container(prefix, 0).await),
        code(client.stop_container(&ids[1], 0).await),
    ];
    assert_eq!(codes, [Code::Ok, Code::Internal]);
}

#[tokio::test]
async fn an_image_fault_names_the_reference_exactly_as_the_call_sends_it() {
    let (_mock, client, mut control) = mock().await;
    client.pull_image("busybox").await.unwrap();
    control
        .inject_error(aimed_error("ImageStatus", "busybox", 0, 1))
        .await
        .unwrap();
    let codes = [
        code(
            client
                .image_status("docker.io/library/busybox:latest")
                .await,
        ),
        code(client.image_status("busybox").await),
        code(client.image_status("busybox").await),
    ];
    assert_eq!(codes, [Code::Ok, Code::Internal, Code::Ok]);
}

#[tokio::test]
async fn a_sandbox_fault_hits_calls_naming_that_sandbox_only() {
    let (_mock, client, mut control) = mock().await;
    let (a, b) = (
        run_sandbox(&client, "a").await,
        run_sandbox(&client, "b").await,
    );
    control
        .inject_error(aimed_error("StopPodSandbox", &b, 0, 1))
        .await
        .unwrap();
    let codes = [
        code(client.stop_pod_sandbox(&a).await),
        code(client.stop_pod_sandbox(&b).await),
    ];
    assert_eq!(codes, [Code::Ok, Code::Internal]);
}

#[tokio::test]
async fn targeted_latency_holds_only_the_nth_call_naming_its_target() {
    let (_mock, client, mut control) = mock().await;
    let ids = three_running_containers(&client).await;
    let (a, b) = (&ids[0], &ids[1]);
    // An hour against a short deadline: the delayed call can only time out.
    control
        .inject_latency(InjectLatencyRequest {
            method: "ContainerStatus".into(),
            delay_ms: 3_600_000,
            count: 1,
            target_id: b.clone(),
            nth: 2,
            finish_if_abandoned: false,
        })
        .await
        .unwrap();
    let hasty = client.with_timeout(Duration::from_millis(300));
    let mut codes = Vec::new();
    for id in [b, a, a, b, b] {
        codes.push(code(hasty.container_status(id).await));
    }
    use Code::{DeadlineExceeded, Ok};
    assert_eq!(codes, [Ok, Ok, Ok, DeadlineExceeded, Ok]);
}

#[tokio::test]
async fn a_target_is_refused_for_methods_whose_requests_name_none() {
    let (_mock, _client, mut control) = mock().await;
    let error = control
        .inject_error(aimed_error("ListContainers", "abc", 0, 1))
        .await
        .unwrap_err();
    let latency = control
        .inject_latency(InjectLatencyRequest {
            method: "Version".into(),
            delay_ms: 10,
            count: 1,
            target_id: "abc".into(),
            nth: 0,
            finish_if_abandoned: false,
        })
        .await
        .unwrap_err();
    for status in [error, latency] {
        assert_eq!(status.code(), Code::InvalidArgument);
        assert!(
            status.message().contains("StopContainer (container)"),
            "{}",
            status.message()
        );
    }
}

#[tokio::test]
async fn a_frozen_clock_stamps_objects_and_advances_on_request() {
    let (_mock, client, mut control) = mock().await;
    control
        .set_clock(SetClockRequest {
            unix_nanos: 1_700_000_000_000_000_000,
        })
        .await
        .unwrap();
    let first = created_at(&client, "a").await;
    let same = created_at(&client, "b").await;
    control
        .advance_clock(AdvanceClockRequest { nanos: 1_500 })
        .await
        .unwrap();
    let advanced = created_at(&client, "c").await;
    assert_eq!(
        (first, same, advanced),
        (
            1_700_000_000_000_000_000,
            1_700_000_000_000_000_000,
            1_700_000_000_000_001_500
        )
    );
}

#[tokio::test]
async fn the_wall_clock_returns_and_never_repeats_an_instant() {
    let (_mock, client, mut control) = mock().await;
    control
        .set_clock(SetClockRequest { unix_nanos: 1_000 })
        .await
        .unwrap();
    let frozen = created_at(&client, "a").await;
    control
        .set_clock(SetClockRequest { unix_nanos: 0 })
        .await
        .unwrap();
    let mut wall = Vec::new();
    for name in ["b", "c", "d"] {
        wall.push(created_at(&client, name).await);
    }
    assert_eq!(frozen, 1_000);
    assert!(
        wall[0] > frozen && wall[0] < wall[1] && wall[1] < wall[2],
        "{wall:?}"
    );
}

#[rstest]
#[case::set_clock(true)]
#[case::advance_clock(false)]
#[tokio::test]
async fn the_clock_refuses_negative_times(#[case] set: bool) {
    let (_mock, _client, mut control) = mock().await;
    let status = if set {
        control.set_clock(SetClockRequest { unix_nanos: -1 }).await
    } else {
        control
            .advance_clock(AdvanceClockRequest { nanos: -1 })
            .await
    }
    .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
}

fn record(seq: u64, method: &str, request: &str, code: Code, message: &str) -> CallRecord {
    CallRecord {
        seq,
        method: method.into(),
        request: request.into(),
        code: code as i32,
        message: message.into(),
    }
}

#[tokio::test]
async fn the_call_log_records_every_cri_call_in_arrival_order() {
    let (_mock, client, mut control) = mock().await;
    client.version("0.1.0").await.unwrap();
    let id = run_sandbox(&client, "a").await;
    // The contract makes the stop of an unknown id succeed.
    client.stop_pod_sandbox("feed").await.unwrap();
    inject_error(&mut control, "ListPodSandbox", Code::Unavailable, 1).await;
    client.list_pod_sandbox(None).await.unwrap_err();
    client
        .runtime_service()
        .exec_sync(v1::ExecSyncRequest {
            container_id: "c1".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    client.remove_pod_sandbox(&id).await.unwrap();
    let log = call_log(&mut control, false).await;
    let expected = [
        record(0, "Version", "version=\"0.1.0\"", Code::Ok, ""),
        record(
            1,
            "RunPodSandbox",
            "default/a uid=uid-a attempt=0",
            Code::Ok,
            "",
        ),
        record(2, "StopPodSandbox", "id=feed", Code::Ok, ""),
        record(
            3,
            "ListPodSandbox",
            "filter=none",
            Code::Unavailable,
            "injected Unavailable",
        ),
        record(
            4,
            "ExecSync",
            "id=c1",
            Code::NotFound,
            "failed to find container \"c1\" in store: not found",
        ),
        record(5, "RemovePodSandbox", &format!("id={id}"), Code::Ok, ""),
    ];
    assert_eq!(log, expected);
}

#[tokio::test]
async fn clearing_the_call_log_keeps_counting() {
    let (_mock, client, mut control) = mock().await;
    client.version("").await.unwrap();
    assert_eq!(call_log(&mut control, true).await.len(), 1);
    assert!(call_log(&mut control, false).await.is_empty());
    client.status(false).await.unwrap();
    let seqs: Vec<u64> = call_log(&mut control, false)
        .await
        .iter()
        .map(|r| r.seq)
        .collect();
    assert_eq!(seqs, [1]);
}

#[tokio::test]
async fn reset_forgets_objects_faults_clock_version_and_log() {
    let (_mock, client, mut control) = mock().await;
    let sandbox = run_sandbox(&client, "a").await;
    create_container(&client, &sandbox, "a", "app").await;
    control
        .set_version(SetVersionRequest {
            version: Some(v1::VersionResponse::default()),
        })
        .await
        .unwrap();
    control
        .set_clock(SetClockRequest { unix_nanos: 5 })
        .await
        .unwrap();
    inject_error(&mut control, "Status", Code::Internal, 5).await;
    control.reset(ResetRequest::default()).await.unwrap();
    assert!(call_log(&mut control, false).await.is_empty());
    assert!(client.list_pod_sandbox(None).await.unwrap().is_empty());
    assert!(client.list_containers(None).await.unwrap().is_empty());
    assert!(client.list_images(None).await.unwrap().is_empty());
    assert_eq!(
        client.version("").await.unwrap().runtime_name,
        "cri-harness-mock"
    );
    client.status(false).await.unwrap();
    // Names are free again and ids start over, as on a fresh mock.
    assert_eq!(run_sandbox(&client, "a").await, sandbox);
    assert!(created_at(&client, "b").await > 5);
    let seqs: Vec<u64> = call_log(&mut control, false)
        .await
        .iter()
        .map(|r| r.seq)
        .collect();
    assert_eq!(seqs[0], 0);
}

#[tokio::test]
async fn a_reset_that_keeps_images_forgets_everything_else() {
    let (_mock, client, mut control) = mock().await;
    let sandbox = run_sandbox(&client, "a").await;
    // Pulls busybox first.
    create_container(&client, &sandbox, "a", "app").await;
    control
        .reset(ResetRequest { keep_images: true })
        .await
        .unwrap();
    assert!(client.list_pod_sandbox(None).await.unwrap().is_empty());
    assert!(client.list_containers(None).await.unwrap().is_empty());
    let images = client.list_images(None).await.unwrap();
    assert_eq!(images.len(), 1, "{images:?}");
    assert!(client.image_status("busybox").await.unwrap().is_some());
    // Ids start over all the same.
    assert_eq!(run_sandbox(&client, "a").await, sandbox);
}

fn odd_sandbox(id: &str) -> v1::PodSandboxStatus {
    v1::PodSandboxStatus {
        id: id.into(),
        metadata: None,
        state: v1::PodSandboxState::SandboxNotready as i32,
        created_at: 42,
        network: Some(v1::PodSandboxNetworkStatus {
            ip: "192.0.2.7".into(),
            additional_ips: Vec::new(),
        }),
        labels: labels(&[("io.kubernetes.pod.uid", "u1")]),
        ..Default::default()
    }
}

#[tokio::test]
async fn a_seeded_sandbox_is_answered_verbatim() {
    let (_mock, client, mut control) = mock().await;
    let seeded = odd_sandbox("seeded-sandbox");
    control
        .seed_pod_sandbox(SeedPodSandboxRequest {
            status: Some(seeded.clone()),
        })
        .await
        .unwrap();
    let status = client
        .pod_sandbox_status("seeded-sandbox")
        .await
        .unwrap()
        .status;
    assert_eq!(status, Some(seeded));
    let listed = client.list_pod_sandbox(None).await.unwrap();
    assert_eq!(
        (listed[0].metadata.clone(), listed[0].created_at),
        (None, 42)
    );
}

#[tokio::test]
async fn a_seeded_sandbox_without_an_id_gets_one() {
    let (_mock, client, mut control) = mock().await;
    control
        .seed_pod_sandbox(SeedPodSandboxRequest {
            status: Some(odd_sandbox("")),
        })
        .await
        .unwrap();
    let id = client.list_pod_sandbox(None).await.unwrap()[0].id.clone();
    assert_eq!(id.len(), 64);
}

#[tokio::test]
async fn one_seed_call_inserts_sandboxes_then_their_containers() {
    let (_mock, client, mut control) = mock().await;
    let container = v1::ContainerStatus {
        id: "batch-container".into(),
        metadata: Some(v1::ContainerMetadata {
            name: "app".into(),
            attempt: 0,
        }),
        state: v1::ContainerState::ContainerRunning as i32,
        ..Default::default()
    };
    control
        .seed(SeedRequest {
            sandboxes: ["batch-a", "batch-b"]
                .map(|id| SeedPodSandboxRequest {
                    status: Some(odd_sandbox(id)),
                })
                .to_vec(),
            containers: vec![SeedContainerRequest {
                pod_sandbox_id: "batch-b".into(),
                status: Some(container.clone()),
            }],
        })
        .await
        .unwrap();
    let sandboxes: Vec<String> = client
        .list_pod_sandbox(None)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(sandboxes, ["batch-a", "batch-b"]);
    let containers = client.list_containers(None).await.unwrap();
    assert_eq!(
        (containers.len(), containers[0].pod_sandbox_id.as_str()),
        (1, "batch-b")
    );
}

#[tokio::test]
async fn a_seed_batch_names_the_object_it_refuses_and_keeps_those_before() {
    let (_mock, client, mut control) = mock().await;
    let status = control
        .seed(SeedRequest {
            sandboxes: ["first", "first"]
                .map(|id| SeedPodSandboxRequest {
                    status: Some(odd_sandbox(id)),
                })
                .to_vec(),
            containers: Vec::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::AlreadyExists);
    assert!(
        status.message().starts_with("sandboxes[1]: "),
        "{}",
        status.message()
    );
    assert_eq!(client.list_pod_sandbox(None).await.unwrap().len(), 1);
}

#[tokio::test]
async fn seeding_a_taken_id_is_refused() {
    let (_mock, client, mut control) = mock().await;
    let id = run_sandbox(&client, "a").await;
    let status = control
        .seed_pod_sandbox(SeedPodSandboxRequest {
            status: Some(odd_sandbox(&id)),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::AlreadyExists);
}

#[tokio::test]
async fn a_seeded_sandbox_reserves_its_name() {
    let (_mock, client, mut control) = mock().await;
    let mut seeded = odd_sandbox("seeded");
    seeded.metadata = sandbox_config("a", "default", "uid-a", 0).metadata;
    control
        .seed_pod_sandbox(SeedPodSandboxRequest {
            status: Some(seeded),
        })
        .await
        .unwrap();
    let err = client
        .run_pod_sandbox(sandbox_config("a", "default", "uid-a", 0), "")
        .await
        .unwrap_err();
    assert_eq!(err.code, Code::Unknown);
}

#[tokio::test]
async fn a_seeded_container_lives_in_a_sandbox_that_need_not_exist() {
    let (_mock, client, mut control) = mock().await;
    let seeded = v1::ContainerStatus {
        id: "seeded-container".into(),
        metadata: Some(v1::ContainerMetadata {
            name: "app".into(),
            attempt: 3,
        }),
        state: v1::ContainerState::ContainerUnknown as i32,
        created_at: 7,
        exit_code: -1,
        ..Default::default()
    };
    control
        .seed_container(SeedContainerRequest {
            pod_sandbox_id: "ghost-sandbox".into(),
            status: Some(seeded.clone()),
        })
        .await
        .unwrap();
    let status = client
        .container_status("seeded-container")
        .await
        .unwrap()
        .status;
    assert_eq!(status, Some(seeded));
    let filter = v1::ContainerFilter {
        pod_sandbox_id: "ghost".into(),
        ..Default::default()
    };
    let listed = client.list_containers(Some(filter)).await.unwrap();
    let found: Vec<(&str, &str)> = listed
        .iter()
        .map(|c| (c.id.as_str(), c.pod_sandbox_id.as_str()))
        .collect();
    assert_eq!(found, [("seeded-container", "ghost-sandbox")]);
}

#[tokio::test]
async fn control_calls_are_not_logged() {
    let (_mock, _client, mut control) = mock().await;
    control
        .set_clock(SetClockRequest { unix_nanos: 9 })
        .await
        .unwrap();
    control
        .seed_pod_sandbox(SeedPodSandboxRequest {
            status: Some(odd_sandbox("x")),
        })
        .await
        .unwrap();
    assert!(call_log(&mut control, false).await.is_empty());
}

const SECOND: i64 = 1_000_000_000;

/// A mock frozen at 100 s with a running container; answers the container's id.
async fn running_container_at_100s(client: &CriClient, control: &mut Control) -> String {
    control
        .set_clock(SetClockRequest {
            unix_nanos: 100 * SECOND,
        })
        .await
        .unwrap();
    let sandbox = run_sandbox(client, "exits").await;
    let id = create_container(client, &sandbox, "exits", "app").await;
    client.start_container(&id).await.unwrap();
    id
}

/// (state, exit code, reason, finished_at in seconds) of a container.
async fn exit_of(client: &CriClient, id: &str) -> (v1::ContainerState, i32, String, i64) {
    let status = client.container_status(id).await.unwrap().status.unwrap();
    (
        status.state(),
        status.exit_code,
        status.reason,
        status.finished_at / SECOND,
    )
}

fn exit_request(id: &str, exit_code: i32) -> ExitContainerRequest {
    ExitContainerRequest {
        container_id: id.to_owned(),
        exit_code,
        ..Default::default()
    }
}

#[rstest]
#[case::at_an_instant(ExitContainerRequest { at_unix_nanos: 130 * SECOND, ..exit_request("", 3) }, 30, 130)]
#[case::after_a_duration(ExitContainerRequest { after_nanos: 20 * SECOND, ..exit_request("", 3) }, 20, 120)]
#[tokio::test]
async fn a_timed_exit_ends_the_container_when_the_clock_passes_it(
    #[case] request: ExitContainerRequest,
    #[case] due_after_seconds: i64,
    #[case] finished_at: i64,
) {
    let (_mock, client, mut control) = mock().await;
    let id = running_container_at_100s(&client, &mut control).await;
    control
        .exit_container(ExitContainerRequest {
            container_id: id.clone(),
            ..request
        })
        .await
        .unwrap();
    let advance = |nanos| AdvanceClockRequest { nanos };
    control
        .advance_clock(advance((due_after_seconds - 1) * SECOND))
        .await
        .unwrap();
    let before = exit_of(&client, &id).await;
    control.advance_clock(advance(5 * SECOND)).await.unwrap();
    let after = exit_of(&client, &id).await;
    assert_eq!(before.0, v1::ContainerState::ContainerRunning);
    assert_eq!(
        after,
        (
            v1::ContainerState::ContainerExited,
            3,
            "Error".to_owned(),
            finished_at
        )
    );
    // The list agrees with the status: the index follows the state change.
    let exited = client
        .list_containers(Some(v1::ContainerFilter {
            state: Some(v1::ContainerStateValue {
                state: v1::ContainerState::ContainerExited as i32,
            }),
            ..Default::default()
        }))
        .await
        .unwrap();
    assert_eq!(exited.into_iter().map(|c| c.id).collect::<Vec<_>>(), [id]);
}

#[rstest]
#[case::zero_completes(0, "", "Completed")]
#[case::non_zero_errs(1, "", "Error")]
#[case::a_given_reason_is_kept(137, "OOMKilled", "OOMKilled")]
#[tokio::test]
async fn a_timed_exit_reports_its_code_and_reason(
    #[case] exit_code: i32,
    #[case] reason: &str,
    #[case] expected_reason: &str,
) {
    let (_mock, client, mut control) = mock().await;
    let id = running_container_at_100s(&client, &mut control).await;
    let request = ExitContainerRequest {
        reason: reason.to_owned(),
        ..exit_request(&id, exit_code)
    };
    // Due now: the process ends at once, at the clock's reading.
    control.exit_container(request).await.unwrap();
    assert_eq!(
        exit_of(&client, &id).await,
        (
            v1::ContainerState::ContainerExited,
            exit_code,
            expected_reason.to_owned(),
            100
        )
    );
}

#[tokio::test]
async fn a_setting_of_the_clock_past_the_exit_ends_the_container_too() {
    let (_mock, client, mut control) = mock().await;
    let id = running_container_at_100s(&client, &mut control).await;
    let request = ExitContainerRequest {
        at_unix_nanos: 150 * SECOND,
        ..exit_request(&id, 2)
    };
    control.exit_container(request).await.unwrap();
    control
        .set_clock(SetClockRequest {
            unix_nanos: 200 * SECOND,
        })
        .await
        .unwrap();
    let (state, code, _, finished_at) = exit_of(&client, &id).await;
    assert_eq!(
        (state, code, finished_at),
        (v1::ContainerState::ContainerExited, 2, 150)
    );
}

#[tokio::test]
async fn a_container_stopped_before_its_exit_keeps_the_stop_s_outcome() {
    let (_mock, client, mut control) = mock().await;
    let id = running_container_at_100s(&client, &mut control).await;
    let request = ExitContainerRequest {
        after_nanos: 10 * SECOND,
        ..exit_request(&id, 9)
    };
    control.exit_container(request).await.unwrap();
    client.stop_container(&id, 0).await.unwrap();
    let stopped = exit_of(&client, &id).await;
    control
        .advance_clock(AdvanceClockRequest { nanos: 60 * SECOND })
        .await
        .unwrap();
    assert_eq!(exit_of(&client, &id).await, stopped);
    assert_ne!(stopped.1, 9);
}

#[tokio::test]
async fn a_created_container_exits_only_if_started_before_the_exit() {
    let (_mock, client, mut control) = mock().await;
    control
        .set_clock(SetClockRequest {
            unix_nanos: 100 * SECOND,
        })
        .await
        .unwrap();
    let sandbox = run_sandbox(&client, "exits").await;
    let early = create_container(&client, &sandbox, "exits", "early").await;
    let late = create_container(&client, &sandbox, "exits", "late").await;
    for id in [&early, &late] {
        let request = ExitContainerRequest {
            after_nanos: 10 * SECOND,
            ..exit_request(id, 4)
        };
        control.exit_container(request).await.unwrap();
    }
    client.start_container(&early).await.unwrap();
    control
        .advance_clock(AdvanceClockRequest { nanos: 20 * SECOND })
        .await
        .unwrap();
    client.start_container(&late).await.unwrap();
    assert_eq!(
        exit_of(&client, &early).await.0,
        v1::ContainerState::ContainerExited
    );
    assert_eq!(
        exit_of(&client, &late).await.0,
        v1::ContainerState::ContainerRunning
    );
}

#[rstest]
#[case::unknown_container(false, Code::NotFound, "not found")]
#[case::already_exited(true, Code::FailedPrecondition, "CONTAINER_EXITED")]
#[tokio::test]
async fn a_timed_exit_is_refused_for_a_container_without_a_process(
    #[case] exists: bool,
    #[case] code: Code,
    #[case] wanted: &str,
) {
    let (_mock, client, mut control) = mock().await;
    let id = running_container_at_100s(&client, &mut control).await;
    client.stop_container(&id, 0).await.unwrap();
    let target = if exists {
        id
    } else {
        "no-such-container".to_owned()
    };
    let err = control
        .exit_container(exit_request(&target, 1))
        .await
        .unwrap_err();
    assert_eq!(err.code(), code);
    assert!(err.message().contains(wanted), "{}", err.message());
}

#[tokio::test]
async fn a_timed_exit_refuses_negative_times() {
    let (_mock, client, mut control) = mock().await;
    let id = running_container_at_100s(&client, &mut control).await;
    let request = ExitContainerRequest {
        after_nanos: -1,
        ..exit_request(&id, 1)
    };
    let err = control.exit_container(request).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
}

/// Waits until the call log's last call of `method` is answered (or cancelled), at most ten
/// seconds; gives its record.
async fn answered(control: &mut Control, method: &str) -> CallRecord {
    for _ in 0..1000 {
        let last = call_log(control, false)
            .await
            .into_iter()
            .rev()
            .find(|c| c.method == method);
        if let Some(record) = last.filter(|c| !c.message.contains("still in flight")) {
            return record;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the {method} call never ended");
}

#[tokio::test]
async fn a_delayed_start_keeps_its_container_starting_and_unremovable_until_it_ends() {
    let (_mock, client, mut control) = mock().await;
    let sandbox = run_sandbox(&client, "web").await;
    let container = create_container(&client, &sandbox, "web", "app").await;
    control
        .inject_latency(InjectLatencyRequest {
            method: "StartContainer".into(),
            delay_ms: 3_600_000,
            count: 1,
            target_id: container.clone(),
            ..Default::default()
        })
        .await
        .unwrap();
    // The start's client gives up after 300 ms; until then the mock holds the call.
    let hasty = client.with_timeout(Duration::from_millis(300));
    let starting = container.clone();
    let start = tokio::spawn(async move { hasty.start_container(&starting).await });
    while !call_log(&mut control, false)
        .await
        .iter()
        .any(|c| c.method == "StartContainer" && c.message.contains("still in flight"))
    {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let refused = client.remove_container(&container).await.unwrap_err();
    assert_eq!(refused.code, Code::Unknown, "{refused}");
    assert!(refused.message.contains("starting state"), "{refused}");
    let refused = client.remove_pod_sandbox(&sandbox).await.unwrap_err();
    assert!(refused.message.contains("starting state"), "{refused}");

    let given_up = start.await.unwrap().unwrap_err();
    assert_eq!(given_up.code, Code::DeadlineExceeded);
    // Dropped unanswered, the start changed nothing: the container is created and removable.
    let record = answered(&mut control, "StartContainer").await;
    assert_eq!(record.code, Code::Cancelled as i32, "{record:?}");
    client.remove_pod_sandbox(&sandbox).await.unwrap();
    assert!(client.list_containers(None).await.unwrap().is_empty());
}

#[rstest]
#[case::held_to_the_end(true, 1, Code::Ok)]
#[case::dropped_with_its_client(false, 0, Code::Cancelled)]
#[tokio::test]
async fn a_delayed_run_pod_sandbox_makes_its_sandbox_after_its_client_left_only_if_held(
    #[case] finish_if_abandoned: bool,
    #[case] sandboxes: usize,
    #[case] logged: Code,
) {
    let (_mock, client, mut control) = mock().await;
    control
        .inject_latency(InjectLatencyRequest {
            method: "RunPodSandbox".into(),
            delay_ms: 1_000,
            count: 1,
            finish_if_abandoned,
            ..Default::default()
        })
        .await
        .unwrap();
    let hasty = client.with_timeout(Duration::from_millis(100));
    let config = sandbox_config("web", "default", "uid-web", 0);
    let given_up = hasty.run_pod_sandbox(config, "").await.unwrap_err();
    assert_eq!(given_up.code, Code::DeadlineExceeded);
    let record = answered(&mut control, "RunPodSandbox").await;
    assert_eq!(record.code, logged as i32, "{record:?}");
    assert_eq!(
        client.list_pod_sandbox(None).await.unwrap().len(),
        sandboxes
    );
}
