//! The mock's streaming server driven by a raw WebSocket client written here (not the
//! harness's own): Exec, Attach and PortForward URLs, the channel protocols, single-use tokens,
//! and the server's reach (127.0.0.1 only, gone with the mock).

use crate::support;

use std::time::Duration;

use cri_harness::cri::{v1, CriClient};
use cri_harness::streaming::protocol::{
    frame, split, Outcome, Status, TerminalSize, PORT_FORWARD_V4, REMOTE_COMMAND_V4,
    REMOTE_COMMAND_V5,
};
use futures::{SinkExt, StreamExt};
use rstest::rstest;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::{Error, Message};
use tokio_tungstenite::WebSocketStream;

/// A guard against a hung server, not a measurement: far above any answer's time.
const GUARD: Duration = Duration::from_secs(20);

type Socket = WebSocketStream<TcpStream>;

/// Dials `url` offering `protocols`; answers the socket and the protocol the server picked.
async fn dial(url: &str, protocols: &[&str]) -> Result<(Socket, Option<String>), Error> {
    let ws_url = url.replacen("http://", "ws://", 1);
    let mut request = ws_url.as_str().into_client_request()?;
    if !protocols.is_empty() {
        let offered = HeaderValue::from_str(&protocols.join(", ")).expect("protocol header");
        request
            .headers_mut()
            .insert("Sec-WebSocket-Protocol", offered);
    }
    let host = request.uri().authority().expect("authority").to_string();
    let stream = TcpStream::connect(host).await.map_err(Error::Io)?;
    let (socket, response) = tokio_tungstenite::client_async(request, stream).await?;
    let picked = response
        .headers()
        .get("Sec-WebSocket-Protocol")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    Ok((socket, picked))
}

/// The next binary message as channel and payload; `None` once the server closed.
async fn next_frame(socket: &mut Socket) -> Option<(u8, Vec<u8>)> {
    loop {
        let message = tokio::time::timeout(GUARD, socket.next())
            .await
            .expect("the server answers within the guard");
        match message {
            Some(Ok(Message::Binary(data))) => {
                return split(&data).map(|(channel, payload)| (channel, payload.to_vec()));
            }
            Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return None,
            Some(Ok(_)) => {}
        }
    }
}

/// Everything a remote command sent, split by channel.
#[derive(Debug, Default)]
struct Collected {
    ready: Option<(u8, Vec<u8>)>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    status: Option<Status>,
}

/// Reads a remote command's messages until the server closes.
async fn collect(socket: &mut Socket) -> Collected {
    let mut collected = Collected {
        ready: next_frame(socket).await,
        ..Collected::default()
    };
    while let Some((channel, payload)) = next_frame(socket).await {
        match channel {
            1 => collected.stdout.extend(payload),
            2 => collected.stderr.extend(payload),
            3 => collected.status = Some(serde_json::from_slice(&payload).expect("status JSON")),
            other => panic!("unexpected channel {other}"),
        }
    }
    collected
}

fn exit_code(collected: &Collected) -> Outcome {
    collected
        .status
        .as_ref()
        .expect("a status on the error channel")
        .outcome()
}

/// A mock with a running container created with `command` (stdin open if `stdin`), in a
/// sandbox mapping `ports`; answers the client, sandbox and container ids.
async fn running(
    command: &[&str],
    stdin: bool,
    ports: &[i32],
) -> (cri_harness::mock::MockRuntime, CriClient, String, String) {
    let (mock, client, _) = support::mock().await;
    let mut sandbox = support::sandbox_config("stream", "default", "uid-stream", 0);
    sandbox.port_mappings = ports
        .iter()
        .map(|port| v1::PortMapping {
            container_port: *port,
            ..Default::default()
        })
        .collect();
    let sandbox_id = client
        .run_pod_sandbox(sandbox.clone(), "")
        .await
        .expect("RunPodSandbox");
    client.pull_image("busybox").await.expect("PullImage");
    let mut config = support::container_config("main", "busybox");
    config.command = command.iter().map(|c| (*c).to_owned()).collect();
    config.stdin = stdin;
    let container_id = client
        .create_container(&sandbox_id, config, sandbox)
        .await
        .expect("CreateContainer");
    client
        .start_container(&container_id)
        .await
        .expect("StartContainer");
    (mock, client, sandbox_id, container_id)
}

fn exec_request(container_id: &str, cmd: &[&str]) -> v1::ExecRequest {
    v1::ExecRequest {
        container_id: container_id.to_owned(),
        cmd: cmd.iter().map(|c| (*c).to_owned()).collect(),
        stdout: true,
        stderr: true,
        ..Default::default()
    }
}

async fn exec_url(client: &CriClient, request: v1::ExecRequest) -> String {
    client
        .runtime_service()
        .exec(request)
        .await
        .expect("Exec")
        .into_inner()
        .url
}

/// Runs `cmd` in a fresh mock container over v5 and collects what comes back.
async fn exec(cmd: &[&str]) -> Collected {
    let (_mock, client, _, container) = running(&["sleep", "3600"], false, &[]).await;
    let url = exec_url(&client, exec_request(&container, cmd)).await;
    let (mut socket, _) = dial(&url, &[REMOTE_COMMAND_V5, REMOTE_COMMAND_V4])
        .await
        .expect("upgrade");
    collect(&mut socket).await
}

#[tokio::test]
async fn exec_echo_sends_ready_then_stdout_then_success() {
    let (_mock, client, _, container) = running(&["sleep", "3600"], false, &[]).await;
    let url = exec_url(
        &client,
        exec_request(&container, &["echo", "hello", "world"]),
    )
    .await;
    let (mut socket, picked) = dial(&url, &[REMOTE_COMMAND_V5, REMOTE_COMMAND_V4])
        .await
        .expect("upgrade");
    let collected = collect(&mut socket).await;
    assert_eq!(picked.as_deref(), Some(REMOTE_COMMAND_V5));
    assert_eq!(collected.ready, Some((1, Vec::new())));
    assert_eq!(collected.stdout, b"hello world\n");
    assert!(collected.stderr.is_empty());
    assert_eq!(exit_code(&collected), Outcome::Exited(0));
}

#[rstest]
#[case::one(1)]
#[case::three(3)]
#[case::forty_two(42)]
#[case::two_five_five(255)]
#[tokio::test]
async fn exec_reports_the_exit_code_on_the_error_channel(#[case] code: i32) {
    let script = format!("exit {code}");
    let collected = exec(&["sh", "-c", &script]).await;
    assert_eq!(exit_code(&collected), Outcome::Exited(code));
}

#[tokio::test]
async fn a_mebibyte_of_stdout_arrives_whole() {
    let collected = exec(&["head", "-c", "1048576", "/dev/zero"]).await;
    assert_eq!(collected.stdout.len(), 1_048_576);
    assert!(collected.stdout.iter().all(|b| *b == 0));
    assert_eq!(exit_code(&collected), Outcome::Exited(0));
}

#[tokio::test]
async fn stderr_arrives_apart_from_stdout() {
    let collected = exec(&["sh", "-c", "echo out; echo err >&2; exit 2"]).await;
    assert_eq!(
        (collected.stdout.as_slice(), collected.stderr.as_slice()),
        (&b"out\n"[..], &b"err\n"[..])
    );
    assert_eq!(exit_code(&collected), Outcome::Exited(2));
}

#[tokio::test]
async fn an_unknown_command_exits_127_with_a_message_on_stderr() {
    let collected = exec(&["nosuchcommand"]).await;
    assert_eq!(
        String::from_utf8_lossy(&collected.stderr),
        "sh: nosuchcommand: not found\n"
    );
    assert_eq!(exit_code(&collected), Outcome::Exited(127));
}

#[tokio::test]
async fn a_tty_merges_stderr_ends_lines_with_crlf_and_follows_resizes() {
    let (_mock, client, _, container) = running(&["sleep", "3600"], false, &[]).await;
    let request = v1::ExecRequest {
        container_id: container,
        cmd: vec!["sh".to_owned()],
        stdin: true,
        stdout: true,
        tty: true,
        ..Default::default()
    };
    let url = exec_url(&client, request).await;
    let (mut socket, _) = dial(&url, &[REMOTE_COMMAND_V5]).await.expect("upgrade");
    let size = serde_json::to_vec(&TerminalSize {
        width: 132,
        height: 43,
    })
    .unwrap();
    socket.send(Message::binary(frame(4, &size))).await.unwrap();
    let script = b"stty size\necho to-stderr >&2\nexit 0\n";
    socket
        .send(Message::binary(frame(0, script)))
        .await
        .unwrap();
    let collected = collect(&mut socket).await;
    assert_eq!(
        String::from_utf8_lossy(&collected.stdout),
        "43 132\r\nto-stderr\r\n"
    );
    assert!(collected.stderr.is_empty());
    assert_eq!(exit_code(&collected), Outcome::Exited(0));
}

#[tokio::test]
async fn a_raw_terminal_clients_enter_and_control_d_work_as_on_a_tty() {
    let (_mock, client, _, container) = running(&["sleep", "3600"], false, &[]).await;
    let request = v1::ExecRequest {
        container_id: container,
        cmd: vec!["sh".to_owned()],
        stdin: true,
        stdout: true,
        tty: true,
        ..Default::default()
    };
    let url = exec_url(&client, request).await;
    let (mut socket, _) = dial(&url, &[REMOTE_COMMAND_V4]).await.expect("upgrade");
    socket
        .send(Message::binary(frame(0, b"echo typed\r")))
        .await
        .unwrap();
    socket
        .send(Message::binary(frame(0, b"\x04")))
        .await
        .unwrap();
    let collected = collect(&mut socket).await;
    assert_eq!(collected.stdout, b"typed\r\n");
    assert_eq!(exit_code(&collected), Outcome::Exited(0));
}

#[tokio::test]
async fn critests_tty_exec_gets_hello_with_crlf() {
    let (_mock, client, _, container) = running(&["sleep", "3600"], false, &[]).await;
    let request = v1::ExecRequest {
        container_id: container,
        cmd: vec!["echo".to_owned(), "hello".to_owned()],
        stdin: true,
        stdout: true,
        tty: true,
        ..Default::default()
    };
    let url = exec_url(&client, request).await;
    let (mut socket, _) = dial(&url, &[REMOTE_COMMAND_V4]).await.expect("upgrade");
    let collected = collect(&mut socket).await;
    assert_eq!(collected.stdout, b"hello\r\n");
    assert_eq!(exit_code(&collected), Outcome::Exited(0));
}

#[tokio::test]
async fn cat_echoes_stdin_until_v5_closes_it() {
    let (_mock, client, _, container) = running(&["sleep", "3600"], false, &[]).await;
    let request = v1::ExecRequest {
        stdin: true,
        ..exec_request(&container, &["cat"])
    };
    let url = exec_url(&client, request).await;
    let (mut socket, _) = dial(&url, &[REMOTE_COMMAND_V5]).await.expect("upgrade");
    socket
        .send(Message::binary(frame(0, b"abc")))
        .await
        .unwrap();
    socket
        .send(Message::binary(frame(0, b"def")))
        .await
        .unwrap();
    socket
        .send(Message::binary(frame(255, &[0])))
        .await
        .unwrap();
    let collected = collect(&mut socket).await;
    assert_eq!(collected.stdout, b"abcdef");
    assert_eq!(exit_code(&collected), Outcome::Exited(0));
}

#[tokio::test]
async fn cat_over_v4_echoes_until_the_client_hangs_up() {
    let (_mock, client, _, container) = running(&["sleep", "3600"], false, &[]).await;
    let request = v1::ExecRequest {
        stdin: true,
        ..exec_request(&container, &["cat"])
    };
    let url = exec_url(&client, request).await;
    let (mut socket, picked) = dial(&url, &[REMOTE_COMMAND_V4]).await.expect("upgrade");
    assert_eq!(picked.as_deref(), Some(REMOTE_COMMAND_V4));
    assert_eq!(next_frame(&mut socket).await, Some((1, Vec::new())));
    socket
        .send(Message::binary(frame(0, b"ping")))
        .await
        .unwrap();
    assert_eq!(next_frame(&mut socket).await, Some((1, b"ping".to_vec())));
    // v4 cannot half-close stdin: hanging up is the end, and the server lets go.
    socket.close(None).await.unwrap();
    assert_eq!(next_frame(&mut socket).await, None);
}

#[tokio::test]
async fn attach_to_a_shell_runs_what_stdin_says() {
    let (_mock, client, _, container) = running(&["/bin/sh"], true, &[]).await;
    let request = v1::AttachRequest {
        container_id: container,
        stdin: true,
        stdout: true,
        stderr: true,
        ..Default::default()
    };
    let url = client
        .runtime_service()
        .attach(request)
        .await
        .expect("Attach")
        .into_inner()
        .url;
    assert!(url.contains("/attach/"), "{url}");
    let (mut socket, _) = dial(&url, &[REMOTE_COMMAND_V5]).await.expect("upgrade");
    socket
        .send(Message::binary(frame(0, b"echo hello\n")))
        .await
        .unwrap();
    assert_eq!(next_frame(&mut socket).await, Some((1, Vec::new())));
    assert_eq!(
        next_frame(&mut socket).await,
        Some((1, b"hello\n".to_vec()))
    );
    socket
        .send(Message::binary(frame(255, &[0])))
        .await
        .unwrap();
    let rest = collect_after_ready(&mut socket).await;
    assert!(rest.stdout.is_empty() && rest.stderr.is_empty());
    assert_eq!(exit_code(&rest), Outcome::Exited(0));
}

/// Like [`collect`] for a session whose ready message was already read.
async fn collect_after_ready(socket: &mut Socket) -> Collected {
    let mut collected = Collected::default();
    while let Some((channel, payload)) = next_frame(socket).await {
        match channel {
            1 => collected.stdout.extend(payload),
            2 => collected.stderr.extend(payload),
            3 => collected.status = Some(serde_json::from_slice(&payload).expect("status JSON")),
            other => panic!("unexpected channel {other}"),
        }
    }
    collected
}

#[tokio::test]
async fn attach_to_cat_echoes_stdin() {
    let (_mock, client, _, container) = running(&["cat"], true, &[]).await;
    let request = v1::AttachRequest {
        container_id: container,
        stdin: true,
        stdout: true,
        ..Default::default()
    };
    let url = client
        .runtime_service()
        .attach(request)
        .await
        .expect("Attach")
        .into_inner()
        .url;
    let (mut socket, _) = dial(&url, &[REMOTE_COMMAND_V5]).await.expect("upgrade");
    socket
        .send(Message::binary(frame(0, b"xyz")))
        .await
        .unwrap();
    socket
        .send(Message::binary(frame(255, &[0])))
        .await
        .unwrap();
    let collected = collect(&mut socket).await;
    assert_eq!(collected.stdout, b"xyz");
}

async fn forward_url(client: &CriClient, sandbox: &str) -> String {
    client
        .runtime_service()
        .port_forward(v1::PortForwardRequest {
            pod_sandbox_id: sandbox.to_owned(),
            port: Vec::new(),
        })
        .await
        .expect("PortForward")
        .into_inner()
        .url
}

#[tokio::test]
async fn port_forward_echoes_on_two_ports_and_two_connections_at_once() {
    let (_mock, client, sandbox, _) = running(&["sleep", "3600"], false, &[80, 8080]).await;
    let first = forward_url(&client, &sandbox).await;
    let second = forward_url(&client, &sandbox).await;
    let (mut both, picked) = dial(&format!("{first}?port=80&port=8080"), &[PORT_FORWARD_V4])
        .await
        .expect("upgrade");
    let (mut other, _) = dial(&format!("{second}?port=80"), &[PORT_FORWARD_V4])
        .await
        .expect("upgrade");
    assert_eq!(picked.as_deref(), Some(PORT_FORWARD_V4));
    let mut opened = Vec::new();
    for _ in 0..4 {
        opened.push(next_frame(&mut both).await.expect("port prefix"));
    }
    let prefix = |port: u16| port.to_le_bytes().to_vec();
    assert_eq!(
        opened,
        vec![
            (0, prefix(80)),
            (1, prefix(80)),
            (2, prefix(8080)),
            (3, prefix(8080))
        ]
    );
    assert_eq!(next_frame(&mut other).await, Some((0, prefix(80))));
    assert_eq!(next_frame(&mut other).await, Some((1, prefix(80))));
    both.send(Message::binary(frame(2, b"to 8080")))
        .await
        .unwrap();
    other
        .send(Message::binary(frame(0, b"other 80")))
        .await
        .unwrap();
    both.send(Message::binary(frame(0, b"to 80")))
        .await
        .unwrap();
    assert_eq!(next_frame(&mut both).await, Some((2, b"to 8080".to_vec())));
    assert_eq!(next_frame(&mut both).await, Some((0, b"to 80".to_vec())));
    assert_eq!(
        next_frame(&mut other).await,
        Some((0, b"other 80".to_vec()))
    );
}

#[tokio::test]
async fn port_forward_to_a_port_nobody_listens_on_fails_on_its_error_channel() {
    let (_mock, client, sandbox, _) = running(&["sleep", "3600"], false, &[80]).await;
    let url = forward_url(&client, &sandbox).await;
    let (mut socket, _) = dial(&format!("{url}?port=81"), &[PORT_FORWARD_V4])
        .await
        .expect("upgrade");
    assert_eq!(
        next_frame(&mut socket).await,
        Some((0, 81u16.to_le_bytes().to_vec()))
    );
    assert_eq!(
        next_frame(&mut socket).await,
        Some((1, 81u16.to_le_bytes().to_vec()))
    );
    let (channel, message) = next_frame(&mut socket).await.expect("an error message");
    let message = String::from_utf8(message).unwrap();
    assert_eq!(channel, 1);
    assert!(
        message.starts_with(&format!("error forwarding port 81 to pod {sandbox}")),
        "{message}"
    );
}

#[tokio::test]
async fn a_token_is_refused_when_used_twice() {
    let (_mock, client, _, container) = running(&["sleep", "3600"], false, &[]).await;
    let url = exec_url(&client, exec_request(&container, &["true"])).await;
    let (mut socket, _) = dial(&url, &[REMOTE_COMMAND_V5]).await.expect("first use");
    assert_eq!(exit_code(&collect(&mut socket).await), Outcome::Exited(0));
    match dial(&url, &[REMOTE_COMMAND_V5]).await {
        Err(Error::Http(response)) => assert_eq!(response.status(), 404),
        other => panic!("a reused token must get 404, got {:?}", other.map(|_| ())),
    }
}

#[tokio::test]
async fn a_client_offering_no_remote_command_protocol_is_forbidden() {
    let (_mock, client, _, container) = running(&["sleep", "3600"], false, &[]).await;
    let url = exec_url(&client, exec_request(&container, &["true"])).await;
    match dial(&url, &["base64.channel.k8s.io"]).await {
        Err(Error::Http(response)) => assert_eq!(response.status(), 403),
        other => panic!("expected 403, got {:?}", other.map(|_| ())),
    }
}

#[tokio::test]
async fn an_spdy_upgrade_is_told_the_mock_speaks_websocket_only() {
    let (_mock, client, _, container) = running(&["sleep", "3600"], false, &[]).await;
    let url = exec_url(&client, exec_request(&container, &["true"])).await;
    let target = url.trim_start_matches("http://");
    let (host, path) = target.split_once('/').unwrap();
    let mut stream = TcpStream::connect(host).await.unwrap();
    let request = format!(
        "POST /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\
         X-Stream-Protocol-Version: v4.channel.k8s.io\r\nContent-Length: 0\r\n\r\n"
    );
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = vec![0; 4096];
    let read = tokio::time::timeout(GUARD, stream.read(&mut answer))
        .await
        .unwrap()
        .unwrap();
    let answer = String::from_utf8_lossy(&answer[..read]);
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("WebSocket only"), "{answer}");
}

#[rstest]
#[case::exec("Exec")]
#[case::attach("Attach")]
#[case::port_forward("PortForward")]
#[tokio::test]
async fn an_unknown_id_is_not_found(#[case] method: &str) {
    let (_mock, client, _) = support::mock().await;
    let mut runtime = client.runtime_service();
    let status = match method {
        "Exec" => runtime
            .exec(exec_request("nosuchid", &["true"]))
            .await
            .map(|_| ()),
        "Attach" => runtime
            .attach(v1::AttachRequest {
                container_id: "nosuchid".to_owned(),
                stdout: true,
                ..Default::default()
            })
            .await
            .map(|_| ()),
        _ => runtime
            .port_forward(v1::PortForwardRequest {
                pod_sandbox_id: "nosuchid".to_owned(),
                port: vec![80],
            })
            .await
            .map(|_| ()),
    }
    .expect_err("an unknown id is refused");
    assert_eq!(status.code(), tonic::Code::NotFound, "{status:?}");
}

#[tokio::test]
async fn exec_into_a_stopped_container_fails_with_its_state() {
    let (_mock, client, _, container) = running(&["sleep", "3600"], false, &[]).await;
    client
        .stop_container(&container, 0)
        .await
        .expect("StopContainer");
    let status = client
        .runtime_service()
        .exec(exec_request(&container, &["true"]))
        .await
        .expect_err("exec into an exited container is refused");
    assert_eq!(
        (status.code(), status.message()),
        (
            tonic::Code::Unknown,
            "container is in CONTAINER_EXITED state"
        )
    );
}

#[tokio::test]
async fn exec_without_streams_is_an_invalid_argument() {
    let (_mock, client, _, container) = running(&["sleep", "3600"], false, &[]).await;
    let request = v1::ExecRequest {
        stdout: false,
        stderr: false,
        ..exec_request(&container, &["true"])
    };
    let status = client
        .runtime_service()
        .exec(request)
        .await
        .expect_err("no streams is refused");
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
}

#[tokio::test]
async fn the_streaming_server_answers_on_127_0_0_1_only_and_stops_with_the_mock() {
    let (_dir, server, client, _) = support::mock_on_socket().await;
    let mut config = support::sandbox_config("s", "default", "uid-s", 0);
    config.port_mappings = vec![v1::PortMapping {
        container_port: 80,
        ..Default::default()
    }];
    let sandbox = client.run_pod_sandbox(config, "").await.unwrap();
    let url = forward_url(&client, &sandbox).await;
    let authority = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let (host, port) = authority.rsplit_once(':').unwrap();
    assert_eq!(host, "127.0.0.1");
    // Another loopback address reaches the same host, but not a socket bound to 127.0.0.1.
    assert!(
        TcpStream::connect(("127.0.0.2", port.parse::<u16>().unwrap()))
            .await
            .is_err()
    );
    // A client that upgrades and says nothing is let go when the mock stops.
    let (mut silent, _) = dial(&format!("{url}?port=80"), &[PORT_FORWARD_V4])
        .await
        .expect("upgrade");
    assert!(next_frame(&mut silent).await.is_some());
    assert!(next_frame(&mut silent).await.is_some());
    server.shutdown().await;
    assert_eq!(next_frame(&mut silent).await, None);
    assert!(TcpStream::connect(authority).await.is_err());
}
