//! RuntimeService on the mock, across the wire (in-memory duplex): sandbox and container
//! lifecycles, filters, NotFound and idempotence rules as the CRI contract states them (where
//! it leaves room, as containerd answers).

use crate::support;

use std::time::Duration;

use cri_harness::cri::{v1, CallError, CriClient};
use cri_harness::mock::{Freedom, MockProfile, MockRuntime};
use rstest::rstest;
use support::{
    container_config, create_container, host_network, labels, mock, run_sandbox, sandbox_config,
};
use tonic::Code;

use v1::ContainerState::{ContainerCreated, ContainerExited, ContainerRunning};
use v1::PodSandboxState::{SandboxNotready, SandboxReady};

fn is_64_hex(id: &str) -> bool {
    id.len() == 64 && id.chars().all(|c| c.is_ascii_hexdigit())
}

fn code_and_message(err: CallError) -> (Code, String) {
    (err.code, err.message)
}

async fn sandbox_status(client: &CriClient, id: &str) -> v1::PodSandboxStatus {
    client.pod_sandbox_status(id).await.unwrap().status.unwrap()
}

async fn container_status(client: &CriClient, id: &str) -> v1::ContainerStatus {
    client.container_status(id).await.unwrap().status.unwrap()
}

fn ip(status: &v1::PodSandboxStatus) -> &str {
    status
        .network
        .as_ref()
        .map_or("<no network>", |n| n.ip.as_str())
}

#[rstest]
#[case::empty("")]
#[case::kubelet("0.1.0")]
#[case::future("9.9.9")]
#[tokio::test]
async fn version_answers_the_defaults_whatever_is_asked(#[case] asked: &str) {
    let (_mock, client, _control) = mock().await;
    let version = client.version(asked).await.unwrap();
    let expected = v1::VersionResponse {
        version: "0.1.0".into(),
        runtime_name: "cri-harness-mock".into(),
        runtime_version: env!("CARGO_PKG_VERSION").into(),
        runtime_api_version: "v1".into(),
    };
    assert_eq!(version, expected);
}

#[tokio::test]
async fn status_reports_runtime_and_network_ready() {
    let (_mock, client, _control) = mock().await;
    let status = client.status(false).await.unwrap().status.unwrap();
    let conditions: Vec<(&str, bool)> = status
        .conditions
        .iter()
        .map(|c| (c.r#type.as_str(), c.status))
        .collect();
    assert_eq!(conditions, [("RuntimeReady", true), ("NetworkReady", true)]);
}

#[tokio::test]
async fn run_pod_sandbox_answers_a_ready_sandbox_echoing_its_config() {
    let (_mock, client, _control) = mock().await;
    let mut config = sandbox_config("web", "prod", "uid-1", 2);
    config.labels = labels(&[("app", "web"), ("tier", "front")]);
    config.annotations = labels(&[("note", "kept")]);
    let linux = config.linux.get_or_insert_with(Default::default);
    let options = v1::NamespaceOption {
        pid: v1::NamespaceMode::Container as i32,
        ipc: v1::NamespaceMode::Node as i32,
        ..Default::default()
    };
    linux.security_context = Some(v1::LinuxSandboxSecurityContext {
        namespace_options: Some(options.clone()),
        ..Default::default()
    });
    let id = client
        .run_pod_sandbox(config.clone(), "runc")
        .await
        .unwrap();
    let status = sandbox_status(&client, &id).await;
    assert!(is_64_hex(&id), "{id}");
    assert_eq!(status.id, id);
    assert_eq!(status.state, SandboxReady as i32);
    assert!(
        status.created_at > 1_600_000_000_000_000_000,
        "{}",
        status.created_at
    );
    assert_eq!(status.metadata, config.metadata);
    assert_eq!(
        (status.labels, status.annotations),
        (config.labels, config.annotations)
    );
    assert_eq!(status.runtime_handler, "runc");
    let echoed = status
        .linux
        .and_then(|l| l.namespaces)
        .and_then(|n| n.options);
    assert_eq!(echoed, Some(options));
}

#[tokio::test]
async fn run_pod_sandbox_without_metadata_is_invalid() {
    let (_mock, client, _control) = mock().await;
    let err = client
        .run_pod_sandbox(v1::PodSandboxConfig::default(), "")
        .await
        .unwrap_err();
    assert_eq!(err.code, Code::InvalidArgument);
    assert!(client.list_pod_sandbox(None).await.unwrap().is_empty());
}

#[tokio::test]
async fn pod_network_sandboxes_get_consecutive_ips_and_host_network_ones_none() {
    let (_mock, client, _control) = mock().await;
    let first = run_sandbox(&client, "a").await;
    let host = client
        .run_pod_sandbox(host_network(sandbox_config("h", "default", "uid-h", 0)), "")
        .await
        .unwrap();
    let second = run_sandbox(&client, "b").await;
    let host_status = sandbox_status(&client, &host).await;
    let ips = [
        ip(&sandbox_status(&client, &first).await).to_owned(),
        ip(&host_status).to_owned(),
        ip(&sandbox_status(&client, &second).await).to_owned(),
    ];
    assert_eq!(ips, ["10.88.0.2", "", "10.88.0.3"]);
    let network = host_status
        .linux
        .and_then(|l| l.namespaces)
        .and_then(|n| n.options)
        .map(|o| o.network);
    assert_eq!(network, Some(v1::NamespaceMode::Node as i32));
}

#[tokio::test]
async fn stop_pod_sandbox_clears_the_ip_and_is_idempotent() {
    let (_mock, client, _control) = mock().await;
    let id = run_sandbox(&client, "a").await;
    client.stop_pod_sandbox(&id).await.unwrap();
    client.stop_pod_sandbox(&id).await.unwrap();
    let status = sandbox_status(&client, &id).await;
    assert_eq!((status.state, ip(&status)), (SandboxNotready as i32, ""));
}

#[tokio::test]
async fn stop_pod_sandbox_of_an_unknown_id_succeeds_as_the_contract_says() {
    let (_mock, client, _control) = mock().await;
    client.stop_pod_sandbox("0123abcd").await.unwrap();
}

#[tokio::test]
async fn stop_pod_sandbox_kills_its_running_containers_only() {
    let (_mock, client, _control) = mock().await;
    let sandbox = run_sandbox(&client, "a").await;
    let running = create_container(&client, &sandbox, "a", "app").await;
    let created = create_container(&client, &sandbox, "a", "idle").await;
    client.start_container(&running).await.unwrap();
    let other_sandbox = run_sandbox(&client, "b").await;
    let other = create_container(&client, &other_sandbox, "b", "app").await;
    client.start_container(&other).await.unwrap();
    client.stop_pod_sandbox(&sandbox).await.unwrap();
    let killed = container_status(&client, &running).await;
    assert_eq!(
        (killed.state, killed.exit_code, killed.reason.as_str()),
        (ContainerExited as i32, 137, "Error")
    );
    assert!(killed.finished_at >= killed.started_at);
    assert_eq!(
        container_status(&client, &created).await.state,
        ContainerCreated as i32
    );
    assert_eq!(
        container_status(&client, &other).await.state,
        ContainerRunning as i32
    );
}

#[tokio::test]
async fn remove_pod_sandbox_removes_its_containers_and_is_idempotent() {
    let (_mock, client, _control) = mock().await;
    let sandbox = run_sandbox(&client, "a").await;
    let container = create_container(&client, &sandbox, "a", "app").await;
    client.start_container(&container).await.unwrap();
    let kept = run_sandbox(&client, "b").await;
    client.remove_pod_sandbox(&sandbox).await.unwrap();
    client.remove_pod_sandbox(&sandbox).await.unwrap();
    client.remove_pod_sandbox("never-existed").await.unwrap();
    assert!(client
        .pod_sandbox_status(&sandbox)
        .await
        .unwrap_err()
        .is_not_found());
    assert!(client
        .container_status(&container)
        .await
        .unwrap_err()
        .is_not_found());
    let left: Vec<String> = client
        .list_pod_sandbox(None)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(left, [kept]);
}

#[tokio::test]
async fn a_sandbox_name_stays_reserved_until_the_sandbox_is_removed() {
    let (_mock, client, _control) = mock().await;
    let config = sandbox_config("web", "prod", "uid-1", 0);
    let id = client.run_pod_sandbox(config.clone(), "").await.unwrap();
    client.stop_pod_sandbox(&id).await.unwrap();
    let (code, message) = code_and_message(
        client
            .run_pod_sandbox(config.clone(), "")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, Code::Unknown);
    assert!(
        message.starts_with("failed to reserve sandbox name \"web_prod_uid-1_0\""),
        "{message}"
    );
    let mut next_attempt = config.clone();
    next_attempt.metadata.as_mut().unwrap().attempt = 1;
    client.run_pod_sandbox(next_attempt, "").await.unwrap();
    client.remove_pod_sandbox(&id).await.unwrap();
    client.run_pod_sandbox(config, "").await.unwrap();
}

#[tokio::test]
async fn pod_sandbox_status_of_an_unknown_id_is_not_found() {
    let (_mock, client, _control) = mock().await;
    run_sandbox(&client, "a").await;
    let err = client.pod_sandbox_status("ffffffffffff").await.unwrap_err();
    assert!(err.is_not_found(), "{err}");
}

#[tokio::test]
async fn pod_sandbox_status_accepts_a_unique_id_prefix() {
    let (_mock, client, _control) = mock().await;
    let id = run_sandbox(&client, "a").await;
    run_sandbox(&client, "b").await;
    assert_eq!(sandbox_status(&client, &id[..12]).await.id, id);
}

fn netns(response: &v1::PodSandboxStatusResponse) -> cri_harness::cri::SandboxNetns {
    cri_harness::cri::sandbox_netns(&response.info).expect("verbose info is JSON")
}

#[tokio::test]
async fn verbose_status_names_the_netns_and_says_when_it_is_closed() {
    let (_mock, client, _control) = mock().await;
    let id = run_sandbox(&client, "a").await;
    let ready = netns(&client.pod_sandbox_status_with(&id, true).await.unwrap());
    let again = netns(&client.pod_sandbox_status_with(&id, true).await.unwrap());
    let path = ready
        .path
        .clone()
        .expect("a pod-network sandbox has a netns");
    assert!(
        path.starts_with("/run/cri-harness-mock/netns/cni-"),
        "{path}"
    );
    assert_eq!(ready.closed, Some(false));
    assert_eq!(again, ready);
    client.stop_pod_sandbox(&id).await.unwrap();
    let stopped = netns(&client.pod_sandbox_status_with(&id, true).await.unwrap());
    // As containerd: the spec keeps naming the path, the flag says it was released.
    assert_eq!(stopped.path, Some(path));
    assert_eq!(stopped.closed, Some(true));
    let plain = client.pod_sandbox_status(&id).await.unwrap();
    assert!(plain.info.is_empty());
}

#[tokio::test]
async fn verbose_status_of_a_host_network_sandbox_names_no_netns() {
    let (_mock, client, _control) = mock().await;
    let config = host_network(sandbox_config("h", "default", "uid-h", 0));
    let id = client.run_pod_sandbox(config, "").await.unwrap();
    let status = netns(&client.pod_sandbox_status_with(&id, true).await.unwrap());
    assert_eq!(status.path, None);
    assert_eq!(status.closed, Some(false));
    client.stop_pod_sandbox(&id).await.unwrap();
    let stopped = netns(&client.pod_sandbox_status_with(&id, true).await.unwrap());
    assert_eq!(
        stopped.closed,
        Some(false),
        "nothing to close without a namespace"
    );
}

/// Three sandboxes, oldest first: `a` (app=web, tier=front), `b` (app=web, stopped),
/// `c` (app=db).
async fn three_sandboxes(client: &CriClient) -> Vec<String> {
    let mut ids = Vec::new();
    for (name, pairs) in [
        ("a", &[("app", "web"), ("tier", "front")][..]),
        ("b", &[("app", "web")][..]),
        ("c", &[("app", "db")][..]),
    ] {
        let mut config = sandbox_config(name, "default", &format!("uid-{name}"), 0);
        config.labels = labels(pairs);
        ids.push(client.run_pod_sandbox(config, "").await.unwrap());
    }
    client.stop_pod_sandbox(&ids[1]).await.unwrap();
    ids
}

fn state_filter(state: v1::PodSandboxState) -> Option<v1::PodSandboxStateValue> {
    Some(v1::PodSandboxStateValue {
        state: state as i32,
    })
}

#[rstest]
#[case::no_filter(None, None, &[], &["a", "b", "c"])]
#[case::empty_filter(Some(""), None, &[], &["a", "b", "c"])]
#[case::full_id(Some("b"), None, &[], &["b"])]
#[case::id_prefix(Some("c12"), None, &[], &["c"])]
#[case::unknown_id(Some("0000"), None, &[], &[])]
#[case::ready(None, state_filter(SandboxReady), &[], &["a", "c"])]
#[case::not_ready(None, state_filter(SandboxNotready), &[], &["b"])]
#[case::one_label(None, None, &[("app", "web")], &["a", "b"])]
#[case::every_label_must_match(None, None, &[("app", "web"), ("tier", "front")], &["a"])]
#[case::label_value_differs(None, None, &[("app", "cache")], &[])]
#[case::state_and_labels(None, state_filter(SandboxReady), &[("app", "web")], &["a"])]
#[tokio::test]
async fn list_pod_sandbox_filters_oldest_first(
    #[case] id: Option<&str>,
    #[case] state: Option<v1::PodSandboxStateValue>,
    #[case] selector: &[(&str, &str)],
    #[case] expected: &[&str],
) {
    let (_mock, client, _control) = mock().await;
    let ids = three_sandboxes(&client).await;
    // "b"/"c12" stand for sandbox b's full id and a 12-character prefix of c's.
    let id = id.map(|id| match id {
        "b" => ids[1].clone(),
        "c12" => ids[2][..12].to_owned(),
        other => other.to_owned(),
    });
    let filter =
        (id.is_some() || state.is_some() || !selector.is_empty()).then(|| v1::PodSandboxFilter {
            id: id.unwrap_or_default(),
            state,
            label_selector: labels(selector),
        });
    let names: Vec<String> = client
        .list_pod_sandbox(filter)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.metadata.unwrap().name)
        .collect();
    assert_eq!(names, expected);
}

#[tokio::test]
async fn list_pod_sandbox_items_match_their_status() {
    let (_mock, client, _control) = mock().await;
    let mut config = sandbox_config("a", "default", "uid-a", 0);
    config.labels = labels(&[("app", "web")]);
    config.annotations = labels(&[("note", "x")]);
    let id = client.run_pod_sandbox(config, "runc").await.unwrap();
    let status = sandbox_status(&client, &id).await;
    let listed = client.list_pod_sandbox(None).await.unwrap();
    let expected = v1::PodSandbox {
        id: status.id,
        metadata: status.metadata,
        state: status.state,
        created_at: status.created_at,
        labels: status.labels,
        annotations: status.annotations,
        runtime_handler: status.runtime_handler,
    };
    assert_eq!(listed, [expected]);
}

#[tokio::test]
async fn create_container_answers_a_created_container_echoing_its_config() {
    let (_mock, client, _control) = mock().await;
    let sandbox = run_sandbox(&client, "a").await;
    let image_id = client.pull_image("busybox").await.unwrap();
    let mut config = container_config("app", "busybox");
    config.labels = labels(&[("io.kubernetes.container.name", "app")]);
    config.annotations = labels(&[("io.kubernetes.container.hash", "1a2b")]);
    let id = client
        .create_container(
            &sandbox,
            config.clone(),
            sandbox_config("a", "default", "uid-a", 0),
        )
        .await
        .unwrap();
    let status = container_status(&client, &id).await;
    assert!(is_64_hex(&id), "{id}");
    assert_eq!(
        (status.state, status.started_at, status.finished_at),
        (ContainerCreated as i32, 0, 0)
    );
    assert!(status.created_at > 0);
    assert_eq!(status.metadata, config.metadata);
    assert_eq!(
        (status.labels, status.annotations),
        (config.labels, config.annotations)
    );
    assert_eq!(status.image_ref, image_id);
    assert_eq!(
        status.image.map(|i| i.image).as_deref(),
        Some("docker.io/library/busybox:latest")
    );
    assert_eq!(status.log_path, "/var/log/pods/default_a_uid-a/app/0.log");
}

#[tokio::test]
async fn create_container_in_an_unknown_sandbox_is_not_found() {
    let (_mock, client, _control) = mock().await;
    client.pull_image("busybox").await.unwrap();
    let err = client
        .create_container(
            "feedface",
            container_config("app", "busybox"),
            sandbox_config("a", "default", "uid-a", 0),
        )
        .await
        .unwrap_err();
    assert!(err.is_not_found(), "{err}");
}

#[tokio::test]
async fn create_container_in_a_stopped_sandbox_finds_no_running_task() {
    let (_mock, client, _control) = mock().await;
    let sandbox = run_sandbox(&client, "a").await;
    client.pull_image("busybox").await.unwrap();
    client.stop_pod_sandbox(&sandbox).await.unwrap();
    let (code, message) = code_and_message(
        client
            .create_container(
                &sandbox,
                container_config("app", "busybox"),
                sandbox_config("a", "default", "uid-a", 0),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(code, Code::NotFound);
    assert!(message.contains("no running task found"), "{message}");
}

#[tokio::test]
async fn create_container_accepts_a_sandbox_id_prefix() {
    let (_mock, client, _control) = mock().await;
    let sandbox = run_sandbox(&client, "a").await;
    let id = create_container(&client, &sandbox[..12], "a", "app").await;
    let listed = client.list_containers(None).await.unwrap();
    assert_eq!(
        (listed[0].id.as_str(), listed[0].pod_sandbox_id.as_str()),
        (id.as_str(), sandbox.as_str())
    );
}

#[tokio::test]
async fn create_container_without_metadata_is_invalid() {
    let (_mock, client, _control) = mock().await;
    let sandbox = run_sandbox(&client, "a").await;
    client.pull_image("busybox").await.unwrap();
    let config = v1::ContainerConfig {
        metadata: None,
        ..container_config("app", "busybox")
    };
    let err = client
        .create_container(&sandbox, config, sandbox_config("a", "default", "uid-a", 0))
        .await
        .unwrap_err();
    assert_eq!(err.code, Code::InvalidArgument);
}

#[tokio::test]
async fn create_container_with_an_image_never_pulled_is_not_found() {
    let (_mock, client, _control) = mock().await;
    let sandbox = run_sandbox(&client, "a").await;
    let (code, message) = code_and_message(
        client
            .create_container(
                &sandbox,
                container_config("app", "nginx:1.25"),
                sandbox_config("a", "default", "uid-a", 0),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(code, Code::NotFound);
    assert!(
        message.contains("image \"nginx:1.25\" not found"),
        "{message}"
    );
}

#[tokio::test]
async fn a_container_name_stays_reserved_until_the_container_is_removed() {
    let (_mock, client, _control) = mock().await;
    let sandbox = run_sandbox(&client, "a").await;
    let first = create_container(&client, &sandbox, "a", "app").await;
    let err = client
        .create_container(
            &sandbox,
            container_config("app", "busybox"),
            sandbox_config("a", "default", "uid-a", 0),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, Code::Unknown);
    assert!(
        err.message
            .starts_with("failed to reserve container name \"app_a_default_uid-a_0\""),
        "{}",
        err.message
    );
    client.remove_container(&first).await.unwrap();
    create_container(&client, &sandbox, "a", "app").await;
}

#[tokio::test]
async fn start_container_runs_a_created_container() {
    let (_mock, client, _control) = mock().await;
    let sandbox = run_sandbox(&client, "a").await;
    let id = create_container(&client, &sandbox, "a", "app").await;
    client.start_container(&id).await.unwrap();
    let status = container_status(&client, &id).await;
    assert_eq!(status.state, ContainerRunning as i32);
    assert!(status.started_at > status.created_at);
}

#[rstest]
#[case::running(false, "CONTAINER_RUNNING")]
#[case::exited(true, "CONTAINER_EXITED")]
#[tokio::test]
async fn start_container_refuses_a_container_already_started(
    #[case] stop_first: bool,
    #[case] state: &str,
) {
    let (_mock, client, _control) = mock().await;
    let sandbox = run_sandbox(&client, "a").await;
    let id = create_container(&client, &sandbox, "a", "app").await;
    client.start_container(&id).await.unwrap();
    if stop_first {
        client.stop_container(&id, 10).await.unwrap();
    }
    let (code, message) = code_and_message(client.start_container(&id).await.unwrap_err());
    assert_eq!(code, Code::Unknown);
    assert!(
        message.ends_with(&format!("container is in {state} state")),
        "{message}"
    );
}

#[tokio::test]
async fn start_container_in_a_stopped_sandbox_fails() {
    let (_mock, client, _control) = mock().await;
    let sandbox = run_sandbox(&client, "a").await;
    let id = create_container(&client, &sandbox, "a", "app").await;
    client.stop_pod_sandbox(&sandbox).await.unwrap();
    let err = client.start_container(&id).await.unwrap_err();
    assert_eq!(err.code, Code::Unknown);
    assert_eq!(
        container_status(&client, &id).await.state,
        ContainerCreated as i32
    );
}

#[tokio::test]
async fn start_container_of_an_unknown_id_is_not_found() {
    let (_mock, client, _control) = mock().await;
    assert!(client
        .start_container("abc")
        .await
        .unwrap_err()
        .is_not_found());
}

#[rstest]
#[case::sigterm_honoured(30, 0, "Completed")]
#[case::one_second_grace(1, 0, "Completed")]
#[case::killed_at_once(0, 137, "Error")]
#[tokio::test]
async fn stop_container_exits_by_grace_period(
    #[case] timeout: i64,
    #[case] exit_code: i32,
    #[case] reason: &str,
) {
    let (_mock, client, _control) = mock().await;
    let sandbox = run_sandbox(&client, "a").await;
    let id = create_container(&client, &sandbox, "a", "app").await;
    client.start_container(&id).await.unwrap();
    client.stop_container(&id, timeout).await.unwrap();
    let status = container_status(&client, &id).await;
    assert_eq!(
        (status.state, status.exit_code, status.reason.as_str()),
        (ContainerExited as i32, exit_code, reason)
    );
    assert!(status.finished_at > status.started_at);
}

#[tokio::test]
async fn stop_container_leaves_created_and_exited_containers_unchanged() {
    let (_mock, client, _control) = mock().await;
    let sandbox = run_sandbox(&client, "a").await;
    let created = create_container(&client, &sandbox, "a", "idle").await;
    let exited = create_container(&client, &sandbox, "a", "app").await;
    client.start_container(&exited).await.unwrap();
    client.stop_container(&exited, 10).await.unwrap();
    let before = (
        container_status(&client, &created).await,
        container_status(&client, &exited).await,
    );
    client.stop_container(&created, 10).await.unwrap();
    client.stop_container(&exited, 0).await.unwrap();
    let after = (
        container_status(&client, &created).await,
        container_status(&client, &exited).await,
    );
    assert_eq!(before, after);
}

#[tokio::test]
async fn stop_container_of_an_unknown_id_succeeds_as_the_contract_says() {
    let (_mock, client, _control) = mock().await;
    client.stop_container("abc", 10).await.unwrap();
}

#[tokio::test]
async fn remove_container_removes_a_running_container_and_is_idempotent() {
    let (_mock, client, _control) = mock().await;
    let sandbox = run_sandbox(&client, "a").await;
    let id = create_container(&client, &sandbox, "a", "app").await;
    client.start_container(&id).await.unwrap();
    client.remove_container(&id).await.unwrap();
    client.remove_container(&id).await.unwrap();
    client.remove_container("never-existed").await.unwrap();
    assert!(client.list_containers(None).await.unwrap().is_empty());
    assert_eq!(
        sandbox_status(&client, &sandbox).await.state,
        SandboxReady as i32
    );
}

#[tokio::test]
async fn container_status_of_an_unknown_id_is_not_found() {
    let (_mock, client, _control) = mock().await;
    assert!(client
        .container_status("abc")
        .await
        .unwrap_err()
        .is_not_found());
}

/// Containers, oldest first: `one` (running, app=web) and `two` (created, app=db) in sandbox
/// a, `three` (exited, app=web) in sandbox b. Answers the sandbox ids and container ids.
async fn three_containers(client: &CriClient) -> (Vec<String>, Vec<String>) {
    let sandboxes = vec![
        run_sandbox(client, "a").await,
        run_sandbox(client, "b").await,
    ];
    let mut ids = Vec::new();
    for (sandbox, pod, name, app) in [
        (0, "a", "one", "web"),
        (0, "a", "two", "db"),
        (1, "b", "three", "web"),
    ] {
        let mut config = container_config(name, "busybox");
        config.labels = labels(&[("app", app), ("name", name)]);
        client.pull_image("busybox").await.unwrap();
        let id = client
            .create_container(
                &sandboxes[sandbox],
                config,
                sandbox_config(pod, "default", &format!("uid-{pod}"), 0),
            )
            .await
            .unwrap();
        ids.push(id);
    }
    client.start_container(&ids[0]).await.unwrap();
    client.start_container(&ids[2]).await.unwrap();
    client.stop_container(&ids[2], 10).await.unwrap();
    (sandboxes, ids)
}

fn container_state(state: v1::ContainerState) -> Option<v1::ContainerStateValue> {
    Some(v1::ContainerStateValue {
        state: state as i32,
    })
}

#[rstest]
#[case::no_filter("", "", None, &[], &["one", "two", "three"])]
#[case::full_id("two", "", None, &[], &["two"])]
#[case::id_prefix("three12", "", None, &[], &["three"])]
#[case::unknown_id("0000", "", None, &[], &[])]
#[case::sandbox("", "a", None, &[], &["one", "two"])]
#[case::sandbox_prefix("", "b12", None, &[], &["three"])]
#[case::unknown_sandbox("", "0000", None, &[], &[])]
#[case::running("", "", container_state(ContainerRunning), &[], &["one"])]
#[case::created("", "", container_state(ContainerCreated), &[], &["two"])]
#[case::exited("", "", container_state(ContainerExited), &[], &["three"])]
#[case::label("", "", None, &[("app", "web")], &["one", "three"])]
#[case::every_label_must_match("", "", None, &[("app", "web"), ("name", "one")], &["one"])]
#[case::sandbox_and_label("", "a", None, &[("app", "web")], &["one"])]
#[tokio::test]
async fn list_containers_filters_oldest_first(
    #[case] id: &str,
    #[case] sandbox: &str,
    #[case] state: Option<v1::ContainerStateValue>,
    #[case] selector: &[(&str, &str)],
    #[case] expected: &[&str],
) {
    let (_mock, client, _control) = mock().await;
    let (sandboxes, ids) = three_containers(&client).await;
    // Names stand for full ids; a "12" suffix for a 12-character prefix.
    let id = match id {
        "two" => ids[1].clone(),
        "three12" => ids[2][..12].to_owned(),
        other => other.to_owned(),
    };
    let sandbox = match sandbox {
        "a" => sandboxes[0].clone(),
        "b12" => sandboxes[1][..12].to_owned(),
        other => other.to_owned(),
    };
    let filter = v1::ContainerFilter {
        id,
        state,
        pod_sandbox_id: sandbox,
        label_selector: labels(selector),
    };
    let names: Vec<String> = client
        .list_containers(Some(filter))
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.metadata.unwrap().name)
        .collect();
    assert_eq!(names, expected);
}

#[tokio::test]
async fn list_containers_items_match_their_status() {
    let (_mock, client, _control) = mock().await;
    let sandbox = run_sandbox(&client, "a").await;
    let id = create_container(&client, &sandbox, "a", "app").await;
    let status = container_status(&client, &id).await;
    let expected = v1::Container {
        id: status.id,
        pod_sandbox_id: sandbox,
        metadata: status.metadata,
        image: status.image,
        image_ref: status.image_ref,
        state: status.state,
        created_at: status.created_at,
        labels: status.labels,
        annotations: status.annotations,
        image_id: status.image_id,
    };
    assert_eq!(client.list_containers(None).await.unwrap(), [expected]);
}

#[tokio::test]
async fn a_streamed_list_is_its_unary_twins_answer_filters_included() {
    let (_mock, client, _control) = mock().await;
    let mut sandboxes = Vec::new();
    for name in ["a", "b", "c"] {
        sandboxes.push(run_sandbox(&client, name).await);
    }
    let app = create_container(&client, &sandboxes[0], "a", "app").await;
    let streamed: Vec<String> = client
        .stream_pod_sandboxes(None)
        .await
        .unwrap()
        .into_iter()
        .flatten()
        .map(|s| s.id)
        .collect();
    let listed: Vec<String> = client
        .list_pod_sandbox(None)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(streamed, listed);
    let by_sandbox = v1::ContainerFilter {
        pod_sandbox_id: sandboxes[0].clone(),
        ..Default::default()
    };
    let messages = client.stream_containers(Some(by_sandbox)).await.unwrap();
    let ids: Vec<&str> = messages.iter().flatten().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, [app.as_str()]);
    assert!(messages.iter().all(|m| !m.is_empty()));
}

#[tokio::test]
async fn the_other_runtime_streams_one_item_per_message() {
    let mock = MockRuntime::with_profile(MockProfile::only(Freedom::StreamOneItemPerMessage));
    let channel = mock.duplex_channel().await.unwrap();
    let client = CriClient::new(channel.clone(), channel, "mock", Duration::from_secs(10));
    for name in ["a", "b"] {
        run_sandbox(&client, name).await;
    }
    let messages = client.stream_pod_sandboxes(None).await.unwrap();
    assert_eq!(messages.iter().map(Vec::len).collect::<Vec<_>>(), [1, 1]);
}

#[tokio::test]
async fn sandbox_resources_are_taken_for_a_sandbox_the_mock_has_and_refused_for_another() {
    let (_mock, client, _control) = mock().await;
    let sandbox = run_sandbox(&client, "a").await;
    let resources = v1::LinuxContainerResources {
        cpu_shares: 512,
        memory_limit_in_bytes: 1 << 28,
        ..Default::default()
    };
    client
        .update_pod_sandbox_resources(&sandbox, Some(Default::default()), Some(resources))
        .await
        .unwrap();
    let err = client
        .update_pod_sandbox_resources("nonexistent", None, None)
        .await
        .unwrap_err();
    assert_eq!(err.code, Code::NotFound);
}

#[tokio::test]
async fn a_checkpoint_of_a_running_container_is_an_archive_where_asked() {
    let (_mock, client, _control) = mock().await;
    let sandbox = run_sandbox(&client, "a").await;
    let id = create_container(&client, &sandbox, "a", "app").await;
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().join("checkpoint.tar");
    let shown = location.display().to_string();
    // Not running yet: refused, and nothing written.
    assert!(client.checkpoint_container(&id, &shown, 0).await.is_err());
    assert!(!location.exists());
    client.start_container(&id).await.unwrap();
    client.checkpoint_container(&id, &shown, 0).await.unwrap();
    let mut archive = tar::Archive::new(std::fs::File::open(&location).unwrap());
    let names: Vec<String> = archive
        .entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().display().to_string())
        .collect();
    assert_eq!(names, ["checkpoint.json"]);
}
