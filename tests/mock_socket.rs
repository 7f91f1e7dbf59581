//! The mock on a unix socket: the smoke test of the real transport (mode 0600, all three
//! services on one socket, removal on shutdown), stale-socket handling, and the
//! `cri-harness mock --listen` command.

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use cri_harness::cri::control::{GetCallLogRequest, InjectLatencyRequest};
use cri_harness::cri::{self, ConnectOptions, CriClient, Endpoint};
use cri_harness::mock::{MockError, MockRuntime};
use support::{control_client, mock_on_socket, run_sandbox, unix_channel, CALL_TIMEOUT};

#[tokio::test]
async fn the_mock_serves_all_services_on_a_private_socket_and_removes_it() {
    let (_dir, server, client, mut control) = mock_on_socket().await;
    let path = server.path().to_path_buf();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(server.endpoint(), Endpoint::Unix(path.clone()));
    assert_eq!(client.version("").await.unwrap().runtime_api_version, "v1");
    let sandbox = run_sandbox(&client, "a").await;
    client.pull_image("busybox").await.unwrap();
    let log = control
        .get_call_log(GetCallLogRequest { clear: false })
        .await
        .unwrap()
        .into_inner()
        .calls;
    assert_eq!(log.len(), 3);
    assert_eq!(client.list_pod_sandbox(None).await.unwrap()[0].id, sandbox);
    server.shutdown().await;
    assert!(!path.exists());
}

#[tokio::test]
async fn the_harness_connects_to_the_mock_as_to_any_cri_runtime() {
    let (_dir, server, _client, mut control) = mock_on_socket().await;
    let endpoint = server.endpoint();
    let client = cri::connect(&endpoint, &endpoint, &ConnectOptions::default())
        .await
        .unwrap();
    client.pull_image("busybox").await.unwrap();
    let methods: Vec<String> = control
        .get_call_log(GetCallLogRequest { clear: false })
        .await
        .unwrap()
        .into_inner()
        .calls
        .into_iter()
        .map(|r| r.method)
        .collect();
    assert_eq!(methods, ["Version", "ImageFsInfo", "PullImage"]);
    server.shutdown().await;
}

#[tokio::test]
async fn shutdown_cuts_off_a_call_held_by_injected_latency() {
    let (_dir, server, client, mut control) = mock_on_socket().await;
    control
        .inject_latency(InjectLatencyRequest {
            method: "Version".into(),
            delay_ms: 3_600_000,
            count: 1,
            ..Default::default()
        })
        .await
        .unwrap();
    let held = tokio::spawn(async move { client.version("").await });
    // Shut down only once the call is inside the mock, held by the delay.
    while control
        .get_call_log(GetCallLogRequest { clear: false })
        .await
        .unwrap()
        .into_inner()
        .calls
        .is_empty()
    {
        tokio::task::yield_now().await;
    }
    let path = server.path().to_path_buf();
    server.shutdown().await;
    assert!(held.await.unwrap().is_err());
    assert!(!path.exists());
}

#[tokio::test]
async fn dropping_the_server_removes_the_socket() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.sock");
    let server = MockRuntime::new().serve_unix(&path).await.unwrap();
    assert!(path.exists());
    drop(server);
    assert!(!path.exists());
}

#[tokio::test]
async fn a_stale_socket_is_replaced_but_a_live_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.sock");
    // A socket nobody listens on any more, as a killed server leaves behind.
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    let server = MockRuntime::new().serve_unix(&path).await.unwrap();
    let second = MockRuntime::new().serve_unix(&path).await.unwrap_err();
    assert!(matches!(second, MockError::InUse { .. }), "{second}");
    let channel = unix_channel(&path).await;
    let client = CriClient::new(channel.clone(), channel, "test", CALL_TIMEOUT);
    client.version("").await.unwrap();
    server.shutdown().await;
}

#[tokio::test]
async fn a_file_in_the_way_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.sock");
    std::fs::write(&path, "keep me").unwrap();
    let err = MockRuntime::new().serve_unix(&path).await.unwrap_err();
    assert!(matches!(err, MockError::NotASocket { .. }), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "keep me");
}

#[tokio::test]
async fn one_mock_can_be_reached_over_duplex_and_socket_at_once() {
    let mock = MockRuntime::new();
    let dir = tempfile::tempdir().unwrap();
    let server = mock.serve_unix(&dir.path().join("m.sock")).await.unwrap();
    let in_memory = mock.duplex_client().await.unwrap();
    let sandbox = run_sandbox(&in_memory, "a").await;
    let channel = unix_channel(server.path()).await;
    let mut control = control_client(channel.clone());
    let over_socket = CriClient::new(channel.clone(), channel, "test", CALL_TIMEOUT);
    assert_eq!(
        over_socket.list_pod_sandbox(None).await.unwrap()[0].id,
        sandbox
    );
    let log = control
        .get_call_log(GetCallLogRequest { clear: false })
        .await
        .unwrap();
    assert_eq!(log.into_inner().calls.len(), 2);
    server.shutdown().await;
}

#[tokio::test]
async fn the_mock_command_serves_until_sigterm_then_removes_its_socket() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cli.sock");
    let (mut child, line) =
        support::spawn_mock(support::harness().arg("mock").arg("--listen").arg(&path));
    assert_eq!(
        line.trim_end(),
        format!("mock CRI runtime listening on unix://{}", path.display())
    );
    let channel = unix_channel(&path).await;
    let client = CriClient::new(channel.clone(), channel, "test", CALL_TIMEOUT);
    assert_eq!(
        client.version("").await.unwrap().runtime_name,
        "cri-harness-mock"
    );
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let exit = tokio::task::spawn_blocking(move || child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(exit.success(), "{exit}");
    assert!(!path.exists());
}
