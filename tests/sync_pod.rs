//! SyncPod's executor (`execute_pod_actions`) with hand-written actions, on the mock over the
//! in-memory duplex and on a real runtime when `CONTAINER_RUNTIME_ENDPOINT` is set: a pod with one
//! init container and two app containers taken from nothing to running in two syncs, the image
//! manager's pull policies and failures, and the crash-loop back-off between restarts.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cri_harness::cri::control::InjectErrorRequest;
use cri_harness::cri::labels::{
    CONTAINER_HASH, CONTAINER_NAME, CONTAINER_RESTART_COUNT, MANAGED, POD_NAME, POD_NAMESPACE,
    POD_UID, RUN_ID,
};
use cri_harness::cri::{v1, CriClient};
use cri_harness::manager::lifecycle::{
    hash_container, k8s, Backoff, ManualClock, PodActions, SyncOptions, WallClock,
    ERR_IMAGE_NEVER_PULL, ERR_IMAGE_PULL, ERR_IMAGE_PULL_BACK_OFF,
};
use cri_harness::manager::{
    ContainerState, KubeGenericRuntimeManager, NoopNetworkPlugin, PodStatus, PodSyncResult,
    CRASH_LOOP_BACK_OFF,
};

/// The pod: one init container that exits at once, two app containers that run until stopped.
fn three_container_pod(uid: &str) -> k8s::Pod {
    let busybox = cri_harness::images::resolve("busybox");
    let yaml = format!(
        r#"
apiVersion: v1
kind: Pod
metadata:
  name: syncpod-web
  namespace: syncpod
  uid: {uid}
  labels: {{app: web}}
  annotations: {{team: harness}}
spec:
  restartPolicy: Always
  terminationGracePeriodSeconds: 5
  volumes:
  - {{name: scratch, emptyDir: {{}}}}
  initContainers:
  - name: init
    image: {busybox}
    command: [sh, -c, "echo initialised > /scratch/ready"]
    volumeMounts: [{{name: scratch, mountPath: /scratch}}]
  containers:
  - name: app
    image: {busybox}
    command: [sh, -c, "trap 'exit 0' TERM; sleep 3600 & wait"]
    env: [{{name: ROLE, value: app}}]
    ports: [{{containerPort: 8080}}]
    volumeMounts: [{{name: scratch, mountPath: /scratch, readOnly: true}}]
  - name: side
    image: {busybox}
    command: [sh, -c, "trap 'exit 0' TERM; sleep 3600 & wait"]
"#
    );
    serde_saphyr::from_str(&yaml).expect("the test manifest parses")
}

fn options(root: &Path, run_id: &str) -> SyncOptions {
    let mut options = SyncOptions::new(root.join("logs"), root.join("volumes"));
    options
        .extra_labels
        .insert(RUN_ID.to_owned(), run_id.to_owned());
    options
}

async fn manager(client: CriClient) -> KubeGenericRuntimeManager {
    KubeGenericRuntimeManager::new(client, Arc::new(NoopNetworkPlugin))
        .await
        .expect("the runtime speaks the manager's version")
}

async fn status_of(manager: &KubeGenericRuntimeManager, pod: &k8s::Pod) -> PodStatus {
    let meta = &pod.metadata;
    manager
        .get_pod_status(
            meta.uid.as_deref().unwrap_or_default(),
            meta.name.as_deref().unwrap_or_default(),
            meta.namespace.as_deref().unwrap_or_default(),
        )
        .await
        .expect("GetPodStatus")
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

/// The first sync of a new pod, as computePodActions answers it: kill (nothing yet), run a
/// sandbox at attempt 0, start the first init container.
fn first_sync() -> PodActions {
    PodActions {
        kill_pod: true,
        create_sandbox: true,
        attempt: 0,
        init_containers_to_start: vec![0],
        ..Default::default()
    }
}

/// The sync after the init container succeeded: start both app containers in the sandbox.
fn second_sync(sandbox_id: &str) -> PodActions {
    PodActions {
        sandbox_id: sandbox_id.to_owned(),
        containers_to_start: vec![0, 1],
        ..Default::default()
    }
}

/// Takes the pod from nothing to running; `finish_init` makes (or waits for) the init
/// container's exit between the two syncs. Checks the runtime's state at the end and answers
/// the sandbox's id.
async fn empty_to_running<F, Fut>(
    manager: &KubeGenericRuntimeManager,
    pod: &k8s::Pod,
    options: &SyncOptions,
    finish_init: F,
) -> String
where
    F: FnOnce(String) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let client = manager.client();
    let mut backoff = Backoff::kubelet(Arc::new(WallClock));
    let empty = status_of(manager, pod).await;
    assert!(empty.sandbox_statuses.is_empty() && empty.container_statuses.is_empty());

    let first = manager
        .execute_pod_actions(pod, &empty, &first_sync(), options, &mut backoff)
        .await;
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    let after_first = status_of(manager, pod).await;
    let sandbox_id = after_first.sandbox_statuses[0].id.clone();
    assert_eq!(
        steps(&first),
        [
            format!("CreatePodSandbox syncpod-web_syncpod({uid}): ok"),
            format!("ConfigPodSandbox {sandbox_id}: ok"),
            "StartContainer init: ok".to_owned(),
        ],
        "{first:?}"
    );
    assert_eq!(first.error(), None);
    let names: Vec<_> = after_first
        .container_statuses
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(
        names,
        ["init"],
        "no app container before the init container is done"
    );

    finish_init(after_first.container_statuses[0].id.id.clone()).await;
    let before_second = status_of(manager, pod).await;
    let second = manager
        .execute_pod_actions(
            pod,
            &before_second,
            &second_sync(&sandbox_id),
            options,
            &mut backoff,
        )
        .await;
    assert_eq!(
        steps(&second),
        [
            format!("ConfigPodSandbox {sandbox_id}: ok"),
            "StartContainer app: ok".to_owned(),
            "StartContainer side: ok".to_owned(),
        ],
        "{second:?}"
    );

    // The runtime's state: one READY sandbox at attempt 0 with the kubelet's labels, the init
    // container exited 0, both app containers running at restart count 0.
    let sandbox = client
        .pod_sandbox_status(&sandbox_id)
        .await
        .expect("PodSandboxStatus")
        .status
        .expect("a status");
    assert_eq!(sandbox.state(), v1::PodSandboxState::SandboxReady);
    let metadata = sandbox.metadata.expect("sandbox metadata");
    assert_eq!(
        (
            metadata.name.as_str(),
            metadata.namespace.as_str(),
            metadata.uid.as_str(),
            metadata.attempt
        ),
        ("syncpod-web", "syncpod", uid, 0)
    );
    for (key, value) in [
        ("app", "web"),
        (POD_NAME, "syncpod-web"),
        (POD_NAMESPACE, "syncpod"),
        (POD_UID, uid),
        (MANAGED, "true"),
    ] {
        assert_eq!(
            sandbox.labels.get(key).map(String::as_str),
            Some(value),
            "label {key}"
        );
    }
    assert_eq!(
        sandbox.annotations.get("team").map(String::as_str),
        Some("harness")
    );

    let status = status_of(manager, pod).await;
    let mut states: Vec<_> = status
        .container_statuses
        .iter()
        .map(|c| (c.name.clone(), c.state, c.restart_count))
        .collect();
    states.sort();
    assert_eq!(
        states,
        [
            ("app".to_owned(), ContainerState::Running, 0),
            ("init".to_owned(), ContainerState::Exited, 0),
            ("side".to_owned(), ContainerState::Running, 0),
        ]
    );
    let spec = pod.spec.as_ref().expect("a spec");
    for found in &status.container_statuses {
        let raw = client
            .container_status(&found.id.id)
            .await
            .expect("ContainerStatus")
            .status
            .expect("a status");
        let name = found.name.as_str();
        assert_eq!(raw.metadata.as_ref().map(|m| m.attempt), Some(0));
        assert_eq!(
            raw.labels.get(CONTAINER_NAME).map(String::as_str),
            Some(name)
        );
        assert_eq!(raw.labels.get(POD_UID).map(String::as_str), Some(uid));
        assert_eq!(
            raw.annotations
                .get(CONTAINER_RESTART_COUNT)
                .map(String::as_str),
            Some("0")
        );
        let container = spec
            .init_containers
            .iter()
            .flatten()
            .chain(&spec.containers)
            .find(|c| c.name == name)
            .expect("a container of the spec");
        assert_eq!(
            raw.annotations.get(CONTAINER_HASH),
            Some(&format!("{:x}", hash_container(container)))
        );
        assert!(
            raw.log_path.ends_with(&format!("/{name}/0.log")),
            "{}",
            raw.log_path
        );
        if name == "init" {
            assert_eq!(raw.exit_code, 0, "{raw:?}");
        }
    }
    let log_dir = options
        .pod_logs_root
        .join(format!("syncpod_syncpod-web_{uid}"));
    assert!(
        log_dir.join("app").is_dir(),
        "the container log directory is made"
    );
    sandbox_id
}

fn mock_uid(test: &str) -> String {
    format!("syncpod-{test}")
}

#[tokio::test]
async fn a_three_container_pod_goes_from_nothing_to_running_on_the_mock_in_two_syncs() {
    let (_mock, client, _control) = support::mock().await;
    let manager = manager(client.clone()).await;
    let root = tempfile::tempdir().unwrap();
    let options = options(root.path(), "syncpod-mock");
    let pod = three_container_pod(&mock_uid("empty-to-running"));
    // The mock runs no processes: a stop with a grace period is the init container exiting 0.
    let stopper = client.clone();
    empty_to_running(&manager, &pod, &options, |init| async move {
        stopper
            .stop_container(&init, 10)
            .await
            .expect("StopContainer");
    })
    .await;
    assert!(
        root.path()
            .join("volumes")
            .join(mock_uid("empty-to-running"))
            .join("kubernetes.io~empty-dir/scratch")
            .is_dir(),
        "the emptyDir volume is made"
    );
}

/// A one-container pod whose container `app` already runs in a sandbox; answers its status.
async fn running_app(
    manager: &KubeGenericRuntimeManager,
    pod: &k8s::Pod,
    options: &SyncOptions,
    backoff: &mut Backoff,
) -> PodStatus {
    let actions = PodActions {
        kill_pod: true,
        create_sandbox: true,
        containers_to_start: vec![0],
        ..Default::default()
    };
    let empty = status_of(manager, pod).await;
    let result = manager
        .execute_pod_actions(pod, &empty, &actions, options, backoff)
        .await;
    assert_eq!(result.error(), None);
    status_of(manager, pod).await
}

fn one_container_pod(uid: &str, image: &str, policy: &str) -> k8s::Pod {
    serde_saphyr::from_str(&format!(
        "
metadata: {{name: solo, namespace: syncpod, uid: {uid}}}
spec:
  containers:
  - {{name: app, image: '{image}', imagePullPolicy: {policy}}}
"
    ))
    .unwrap()
}

#[tokio::test]
async fn a_restarted_container_counts_up_and_then_backs_off_in_a_crash_loop() {
    let (_mock, client, _control) = support::mock().await;
    let manager = manager(client.clone()).await;
    let root = tempfile::tempdir().unwrap();
    let options = options(root.path(), "syncpod-mock");
    let busybox = cri_harness::images::resolve("busybox");
    let pod = one_container_pod(&mock_uid("crash-loop"), &busybox, "IfNotPresent");
    // The back-off's clock stands still, so a restart right after an exit is inside the delay.
    let clock = ManualClock::at(i64::MAX / 2);
    let mut backoff = Backoff::kubelet(Arc::new(clock.clone()));
    let status = running_app(&manager, &pod, &options, &mut backoff).await;
    let sandbox_id = status.sandbox_statuses[0].id.clone();
    let restart = PodActions {
        sandbox_id: sandbox_id.clone(),
        containers_to_start: vec![0],
        ..Default::default()
    };

    // The container dies; the first restart goes ahead at restart count 1.
    client
        .stop_container(&status.container_statuses[0].id.id, 0)
        .await
        .unwrap();
    let exited = status_of(&manager, &pod).await;
    clock.set(exited.container_statuses[0].finished_at);
    let result = manager
        .execute_pod_actions(&pod, &exited, &restart, &options, &mut backoff)
        .await;
    assert_eq!(
        steps(&result),
        [
            format!("ConfigPodSandbox {sandbox_id}: ok"),
            "StartContainer app: ok".to_owned()
        ]
    );
    let restarted = status_of(&manager, &pod).await;
    let newest = &restarted.container_statuses[0];
    assert_eq!(
        (newest.state, newest.restart_count),
        (ContainerState::Running, 1)
    );
    let raw = client
        .container_status(&newest.id.id)
        .await
        .unwrap()
        .status
        .unwrap();
    assert_eq!(raw.metadata.map(|m| m.attempt), Some(1));
    assert!(raw.log_path.ends_with("/app/1.log"), "{}", raw.log_path);

    // It dies again at once: the next start is held back for the 10 s the back-off now holds.
    client.stop_container(&newest.id.id, 0).await.unwrap();
    let exited = status_of(&manager, &pod).await;
    clock.set(exited.container_statuses[0].finished_at);
    let result = manager
        .execute_pod_actions(&pod, &exited, &restart, &options, &mut backoff)
        .await;
    let start = &result.results[1];
    assert_eq!(start.error.as_deref(), Some(CRASH_LOOP_BACK_OFF));
    assert_eq!(
        start.message,
        format!(
            "back-off 10s restarting failed container=app pod=solo_syncpod({})",
            mock_uid("crash-loop")
        )
    );
    // Once the delay has passed since it finished, it starts again, at restart count 2.
    clock.advance(Duration::from_secs(10));
    let result = manager
        .execute_pod_actions(&pod, &exited, &restart, &options, &mut backoff)
        .await;
    assert_eq!(result.error(), None, "{result:?}");
    let again = status_of(&manager, &pod).await;
    assert_eq!(again.container_statuses[0].restart_count, 2);
}

#[tokio::test]
async fn an_absent_image_under_never_fails_without_a_pull() {
    let (_mock, client, _control) = support::mock().await;
    let manager = manager(client.clone()).await;
    let root = tempfile::tempdir().unwrap();
    let pod = one_container_pod(
        &mock_uid("never"),
        "localhost/cri-harness/never-pulled:absent",
        "Never",
    );
    let actions = PodActions {
        kill_pod: true,
        create_sandbox: true,
        containers_to_start: vec![0],
        ..Default::default()
    };
    let mut backoff = Backoff::kubelet(Arc::new(WallClock));
    let empty = status_of(&manager, &pod).await;
    let result = manager
        .execute_pod_actions(
            &pod,
            &empty,
            &actions,
            &options(root.path(), "r"),
            &mut backoff,
        )
        .await;
    let start = result.results.last().unwrap();
    assert_eq!(start.error.as_deref(), Some(ERR_IMAGE_NEVER_PULL));
    assert_eq!(
        start.message,
        r#"Container image "localhost/cri-harness/never-pulled:absent" is not present with pull policy of Never"#
    );
    let images = support::image_tags(&client).await;
    assert!(
        images.iter().all(|tag| !tag.contains("never-pulled")),
        "{images:?}"
    );
}

#[tokio::test]
async fn a_failed_pull_is_err_image_pull_and_then_backs_off() {
    let (_mock, client, mut control) = support::mock().await;
    let manager = manager(client.clone()).await;
    let root = tempfile::tempdir().unwrap();
    let options = options(root.path(), "r");
    let pod = one_container_pod(&mock_uid("pull-fails"), "busybox:latest", "Always");
    control
        .inject_error(InjectErrorRequest {
            method: "PullImage".to_owned(),
            code: tonic::Code::Unavailable as i32,
            message: "registry down".to_owned(),
            count: 1,
            ..Default::default()
        })
        .await
        .unwrap();
    let actions = PodActions {
        kill_pod: true,
        create_sandbox: true,
        containers_to_start: vec![0],
        ..Default::default()
    };
    let clock = ManualClock::at(1_000_000_000_000);
    let mut backoff = Backoff::kubelet(Arc::new(clock.clone()));
    let empty = status_of(&manager, &pod).await;
    let result = manager
        .execute_pod_actions(&pod, &empty, &actions, &options, &mut backoff)
        .await;
    let start = result.results.last().unwrap();
    assert_eq!(
        (start.error.as_deref(), start.message.as_str()),
        (Some(ERR_IMAGE_PULL), "registry down")
    );

    let status = status_of(&manager, &pod).await;
    let retry = PodActions {
        sandbox_id: status.sandbox_statuses[0].id.clone(),
        containers_to_start: vec![0],
        ..Default::default()
    };
    let result = manager
        .execute_pod_actions(&pod, &status, &retry, &options, &mut backoff)
        .await;
    assert_eq!(
        result.results.last().and_then(|r| r.error.as_deref()),
        Some(ERR_IMAGE_PULL_BACK_OFF)
    );
    clock.advance(Duration::from_secs(10));
    let result = manager
        .execute_pod_actions(&pod, &status, &retry, &options, &mut backoff)
        .await;
    assert_eq!(result.error(), None, "{result:?}");
}

#[tokio::test]
async fn a_killed_container_is_stopped_before_the_starts() {
    let (_mock, client, _control) = support::mock().await;
    let manager = manager(client.clone()).await;
    let root = tempfile::tempdir().unwrap();
    let options = options(root.path(), "r");
    let busybox = cri_harness::images::resolve("busybox");
    let pod = one_container_pod(&mock_uid("kill"), &busybox, "IfNotPresent");
    let mut backoff = Backoff::kubelet(Arc::new(WallClock));
    let status = running_app(&manager, &pod, &options, &mut backoff).await;
    let old = status.container_statuses[0].id.id.clone();
    let actions = PodActions {
        sandbox_id: status.sandbox_statuses[0].id.clone(),
        containers_to_start: vec![0],
        containers_to_kill: BTreeMap::from([(
            old.clone(),
            cri_harness::manager::lifecycle::ContainerToKill {
                name: "app".to_owned(),
                kind: cri_harness::manager::lifecycle::ContainerKind::Regular,
                reason: cri_harness::manager::lifecycle::KillReason::Unknown,
                message: "Container app definition changed".to_owned(),
            },
        )]),
        ..Default::default()
    };
    let result = manager
        .execute_pod_actions(&pod, &status, &actions, &options, &mut backoff)
        .await;
    assert_eq!(
        result.results[0].to_owned().action.to_string(),
        "KillContainer"
    );
    assert_eq!(result.error(), None, "{result:?}");
    let after = status_of(&manager, &pod).await;
    let states: Vec<_> = after
        .container_statuses
        .iter()
        .map(|c| (c.id.id == old, c.state, c.restart_count))
        .collect();
    assert_eq!(
        states,
        [
            (false, ContainerState::Running, 1),
            (true, ContainerState::Exited, 0)
        ]
    );
}

/// Polls until the container has exited, for a real runtime whose init container exits by
/// itself; gives up after a minute.
async fn wait_exited(client: &CriClient, id: &str) {
    for _ in 0..600 {
        let status = client.container_status(id).await.expect("ContainerStatus");
        if status
            .status
            .is_some_and(|s| s.state() == v1::ContainerState::ContainerExited)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("container {id} did not exit within a minute");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs a real CRI runtime (CONTAINER_RUNTIME_ENDPOINT)"
)]
async fn a_three_container_pod_goes_from_nothing_to_running_on_the_real_runtime() {
    let endpoint = support::need::runtime();
    let endpoint: cri_harness::cri::Endpoint = endpoint.parse().expect("a valid endpoint");
    let client = cri_harness::cri::connect(&endpoint, &endpoint, &Default::default())
        .await
        .expect("the runtime answers");
    let manager = manager(client.clone()).await;
    let root = tempfile::tempdir().unwrap();
    let run_id = format!("syncpod{}", std::process::id());
    let options = options(root.path(), &run_id);
    let pod = three_container_pod(&format!("{run_id}-uid"));
    let waiter = client.clone();
    let body = async {
        empty_to_running(&manager, &pod, &options, |init| async move {
            wait_exited(&waiter, &init).await;
        })
        .await;
        let log = options
            .pod_logs_root
            .join(format!("syncpod_syncpod-web_{run_id}-uid"))
            .join("app/0.log");
        assert!(
            log.is_file(),
            "the runtime writes the log at the kubelet's path"
        );
    };
    let outcome = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(body)).await;

    // Clean up whether or not the checks held: the runtime removes a sandbox's containers
    // with it.
    let selector = BTreeMap::from([(RUN_ID.to_owned(), run_id.clone())]);
    let sandboxes = client
        .list_pod_sandbox(Some(v1::PodSandboxFilter {
            label_selector: selector,
            ..Default::default()
        }))
        .await
        .expect("ListPodSandbox");
    for sandbox in sandboxes {
        client
            .stop_pod_sandbox(&sandbox.id)
            .await
            .expect("StopPodSandbox");
        client
            .remove_pod_sandbox(&sandbox.id)
            .await
            .expect("RemovePodSandbox");
    }
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
    assert!(support::labelled(&client, &run_id).await.is_empty());
}

/// A pod whose init container `init` cannot start (its image is absent under Never), with
/// `restartPolicy` `init_policy` on it, and an app container.
fn pod_with_failing_init(uid: &str, init_policy: &str) -> k8s::Pod {
    let busybox = cri_harness::images::resolve("busybox");
    serde_saphyr::from_str(&format!(
        "
metadata: {{name: gated, namespace: syncpod, uid: {uid}}}
spec:
  initContainers:
  - {{name: init, image: 'localhost/cri-harness/never-pulled:absent', imagePullPolicy: Never, restartPolicy: {init_policy}}}
  containers:
  - {{name: app, image: '{busybox}'}}
"
    ))
    .unwrap()
}

#[rstest::rstest]
#[case::a_regular_init_container_ends_the_sync("OnFailure", &["StartContainer init: ErrImageNeverPull"])]
#[case::a_sidecar_does_not("Always", &["StartContainer init: ErrImageNeverPull", "StartContainer app: ok"])]
#[tokio::test]
async fn an_init_container_that_fails_to_start_gates_the_app_containers_unless_a_sidecar(
    #[case] init_policy: &str,
    #[case] expected: &[&str],
) {
    let (_mock, client, _control) = support::mock().await;
    let manager = manager(client.clone()).await;
    let root = tempfile::tempdir().unwrap();
    let pod = pod_with_failing_init(&mock_uid(init_policy), init_policy);
    let actions = PodActions {
        kill_pod: true,
        create_sandbox: true,
        init_containers_to_start: vec![0],
        containers_to_start: vec![0],
        ..Default::default()
    };
    let mut backoff = Backoff::kubelet(Arc::new(WallClock));
    let empty = status_of(&manager, &pod).await;
    let result = manager
        .execute_pod_actions(
            &pod,
            &empty,
            &actions,
            &options(root.path(), "r"),
            &mut backoff,
        )
        .await;
    let starts: Vec<_> = steps(&result)
        .into_iter()
        .filter(|s| s.starts_with("StartContainer"))
        .collect();
    assert_eq!(starts, expected);
}

#[tokio::test]
async fn a_recreated_sandbox_gets_the_next_attempt_and_the_init_containers_are_purged() {
    let (_mock, client, _control) = support::mock().await;
    let manager = manager(client.clone()).await;
    let root = tempfile::tempdir().unwrap();
    let options = options(root.path(), "syncpod-mock");
    let pod = three_container_pod(&mock_uid("recreate"));
    let stopper = client.clone();
    let old_sandbox = empty_to_running(&manager, &pod, &options, |init| async move {
        stopper
            .stop_container(&init, 10)
            .await
            .expect("StopContainer");
    })
    .await;
    let status = status_of(&manager, &pod).await;
    let old_init = status
        .container_statuses
        .iter()
        .find(|c| c.name == "init")
        .map(|c| c.id.id.clone())
        .unwrap();

    let recreate = PodActions {
        kill_pod: true,
        create_sandbox: true,
        sandbox_id: old_sandbox.clone(),
        attempt: 1,
        init_containers_to_start: vec![0],
        ..Default::default()
    };
    let mut backoff = Backoff::kubelet(Arc::new(WallClock));
    let result = manager
        .execute_pod_actions(&pod, &status, &recreate, &options, &mut backoff)
        .await;
    assert_eq!(result.error(), None, "{result:?}");
    // Running containers are killed in the status's order (newest first); sorted here.
    let mut kills: Vec<_> = steps(&result)
        .into_iter()
        .filter(|s| s.starts_with("Kill"))
        .collect();
    kills.sort();
    assert_eq!(
        kills,
        [
            "KillContainer app: ok",
            "KillContainer side: ok",
            &format!("KillPodSandbox {}: ok", mock_uid("recreate")),
        ]
    );

    let after = status_of(&manager, &pod).await;
    let sandboxes: Vec<_> = after
        .sandbox_statuses
        .iter()
        .map(|s| {
            (
                s.id == old_sandbox,
                s.metadata.as_ref().map(|m| m.attempt),
                s.state(),
            )
        })
        .collect();
    assert_eq!(
        sandboxes,
        [
            (false, Some(1), v1::PodSandboxState::SandboxReady),
            (true, Some(0), v1::PodSandboxState::SandboxNotready),
        ]
    );
    assert!(
        after.container_statuses.iter().all(|c| c.id.id != old_init),
        "the old init container is purged"
    );
    let mut left: Vec<_> = after
        .container_statuses
        .iter()
        .map(|c| (c.name.clone(), c.state))
        .collect();
    left.sort();
    assert_eq!(
        left,
        [
            ("app".to_owned(), ContainerState::Exited),
            ("init".to_owned(), ContainerState::Running),
            ("side".to_owned(), ContainerState::Exited),
        ]
    );
}

/// The ids of the pod's `name` instances with their states, newest first.
fn instances(status: &PodStatus, name: &str) -> Vec<(String, ContainerState)> {
    status
        .container_statuses
        .iter()
        .filter(|c| c.name == name)
        .map(|c| (c.id.id.clone(), c.state))
        .collect()
}

#[tokio::test]
async fn before_an_init_container_starts_again_only_its_newest_finished_instance_is_kept() {
    let (_mock, client, _control) = support::mock().await;
    let manager = manager(client.clone()).await;
    let root = tempfile::tempdir().unwrap();
    let options = options(root.path(), "syncpod-mock");
    let pod = three_container_pod(&mock_uid("prune"));
    // No crash-loop delay: this is about which instances go, not when a restart may come.
    let mut backoff = Backoff::new(Arc::new(WallClock), Duration::ZERO, Duration::ZERO);
    let mut status = status_of(&manager, &pod).await;
    let mut actions = first_sync();
    let mut ended = Vec::new();
    // Three starts of the init container, each instance ended before the next sync (on the
    // mock, a stop is the init container exiting).
    for start in 0..3 {
        let result = manager
            .execute_pod_actions(&pod, &status, &actions, &options, &mut backoff)
            .await;
        assert_eq!(result.error(), None, "start {start}: {result:?}");
        status = status_of(&manager, &pod).await;
        let newest = instances(&status, "init");
        let (id, state) = newest.first().cloned().expect("an init instance");
        assert_eq!(state, ContainerState::Running, "start {start}");
        client.stop_container(&id, 10).await.expect("StopContainer");
        ended.push(id);
        status = status_of(&manager, &pod).await;
        actions = PodActions {
            sandbox_id: status.sandbox_statuses[0].id.clone(),
            init_containers_to_start: vec![0],
            ..Default::default()
        };
        // Before the next start, every finished instance but the newest has gone.
        let finished: Vec<String> = instances(&status, "init")
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        let expected: Vec<String> = ended.iter().rev().take(2).cloned().collect();
        assert_eq!(finished, expected, "after start {start}");
    }
    let result = manager
        .execute_pod_actions(&pod, &status, &actions, &options, &mut backoff)
        .await;
    assert_eq!(result.error(), None, "{result:?}");
    let after = instances(&status_of(&manager, &pod).await, "init");
    assert_eq!(
        after.iter().map(|(_, s)| *s).collect::<Vec<_>>(),
        [ContainerState::Running, ContainerState::Exited]
    );
    assert_eq!(
        after[1].0, ended[2],
        "the newest finished instance is the one kept"
    );
}

#[tokio::test]
async fn deleting_a_pod_removes_all_of_it_and_nothing_of_another_pod() {
    let (_mock, client, _control) = support::mock().await;
    let manager = manager(client.clone()).await;
    let root = tempfile::tempdir().unwrap();
    let options = options(root.path(), "syncpod-mock");
    let logs = cri_harness::manager::lifecycle::GcLogDirs {
        pod_logs_root: root.path().join("logs"),
        container_log_symlinks: root.path().join("containers"),
    };
    std::fs::create_dir_all(&logs.container_log_symlinks).unwrap();
    let doomed = three_container_pod(&mock_uid("delete-doomed"));
    // The same name and namespace, another uid: a pod recreated under its old name.
    let kept = three_container_pod(&mock_uid("delete-kept"));
    for pod in [&doomed, &kept] {
        let stopper = client.clone();
        empty_to_running(&manager, pod, &options, |init| async move {
            stopper
                .stop_container(&init, 10)
                .await
                .expect("StopContainer");
        })
        .await;
    }
    let kept_before = status_of(&manager, &kept).await;

    let deletion = manager
        .delete_pod(&doomed, &options, &logs)
        .await
        .expect("delete_pod");
    assert!(deletion.is_complete(), "{deletion:?}");
    let killed = deletion
        .killed
        .as_ref()
        .expect("the running pod was killed");
    let mut kills = steps(killed);
    kills.sort();
    assert_eq!(
        kills,
        [
            "KillContainer app: ok",
            "KillContainer init: ok",
            "KillContainer side: ok",
            "KillPodSandbox syncpod-delete-doomed: ok",
            "TeardownNetwork syncpod-delete-doomed: ok",
        ]
    );
    let gone = status_of(&manager, &doomed).await;
    assert!(gone.sandbox_statuses.is_empty() && gone.container_statuses.is_empty());
    assert!(!root
        .path()
        .join("volumes")
        .join(mock_uid("delete-doomed"))
        .exists());
    assert!(root
        .path()
        .join("volumes")
        .join(mock_uid("delete-kept"))
        .is_dir());
    let kept_after = status_of(&manager, &kept).await;
    assert_eq!(
        kept_after.container_statuses,
        kept_before.container_statuses
    );
    assert_eq!(kept_after.sandbox_statuses, kept_before.sandbox_statuses);

    // Deleting it again finds nothing to kill and is still complete.
    let again = manager
        .delete_pod(&doomed, &options, &logs)
        .await
        .expect("delete_pod");
    assert!(again.killed.is_none() && again.is_complete(), "{again:?}");
}
