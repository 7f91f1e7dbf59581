//! The streaming client against a real runtime's streaming server, when CI (or you) export its
//! endpoint in `CONTAINER_RUNTIME_ENDPOINT`: exec, attach and port-forward through the URLs
//! containerd answers, what its server negotiates, and what it cannot do; and, while an exec
//! runs, which host process is the container's first. Those tests run under `CI=true` and fail
//! there without the variable; elsewhere they are ignored unless asked for (`--ignored`). The
//! silent-server tests need no runtime: a local WebSocket server that upgrades and then never
//! writes must fail the client by its deadline.

mod support;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use cri_harness::cri::{self, labels, v1, ConnectOptions, CriClient, Endpoint};
use cri_harness::streaming::protocol::{self, Outcome, TerminalSize};
use cri_harness::streaming::remote_command::{self, RemoteCommandInput, RemoteCommandOutput};
use cri_harness::streaming::{self as streaming, ClosedBy, StreamError, StreamUrl};
use futures::{FutureExt as _, StreamExt as _};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::time::Instant;

/// Each streaming call's deadline on the real runtime: far above what any of them needs.
const CALL: Duration = Duration::from_secs(30);

fn deadline() -> Instant {
    Instant::now() + CALL
}

/// This binary's run id: `cri-harness clean --run-id stream<pid>` removes what a failed run
/// left.
fn run_id() -> String {
    format!("stream{}", std::process::id())
}

/// The network namespace of the runtime's process, where its streaming server's loopback
/// address is (CI runs containerd in a namespace of its own).
static RUNTIME_NETNS: OnceLock<PathBuf> = OnceLock::new();

/// `url` checked, and dialled from the runtime's network namespace.
fn dial(url: &str) -> StreamUrl {
    let url = StreamUrl::parse(url).expect("a loopback streaming URL");
    match RUNTIME_NETNS.get() {
        Some(netns) => url.dialled_from(netns),
        None => url,
    }
}

/// A client of the real runtime, with busybox pulled; a failure without one.
async fn real_runtime() -> CriClient {
    let endpoint = support::need::runtime();
    let endpoint: Endpoint = endpoint.parse().expect("a valid endpoint");
    if let Endpoint::Unix(socket) = &endpoint {
        let netns = streaming::runtime_netns(socket).expect("the runtime's network namespace");
        let _ = RUNTIME_NETNS.set(netns);
    }
    let client = cri::connect(&endpoint, &endpoint, &ConnectOptions::default())
        .await
        .expect("the runtime answers");
    client
        .pull_image(&cri_harness::images::resolve("busybox"))
        .await
        .expect("busybox pulls");
    client
}

/// A pod of this run, named after the test, and how to add containers to it.
struct Pod {
    client: CriClient,
    id: String,
    config: v1::PodSandboxConfig,
}

impl Pod {
    async fn run(client: &CriClient, test: &str, host_network: bool) -> Pod {
        let name = format!("{test}-{}", std::process::id()).replace('_', "-");
        let mut config = support::sandbox_config(&name, "default", &format!("uid-{name}"), 0);
        // No log directory: nothing of these pods should stay on the host.
        config.log_directory.clear();
        config.labels = run_labels();
        if host_network {
            config = support::host_network(config);
        }
        let id = client
            .run_pod_sandbox(config.clone(), "")
            .await
            .expect("RunPodSandbox");
        Pod {
            client: client.clone(),
            id,
            config,
        }
    }

    /// Creates and starts a busybox container running `command`.
    async fn start(&self, name: &str, command: &[&str], stdin: bool, tty: bool) -> String {
        let mut config = support::container_config(name, &cri_harness::images::resolve("busybox"));
        config.log_path.clear();
        config.command = command.iter().map(|s| (*s).to_owned()).collect();
        config.stdin = stdin;
        config.tty = tty;
        config.labels = run_labels();
        let id = self
            .client
            .create_container(&self.id, config, self.config.clone())
            .await
            .expect("CreateContainer");
        self.client
            .start_container(&id)
            .await
            .expect("StartContainer");
        id
    }

    async fn remove(self) {
        let _ = self.client.stop_pod_sandbox(&self.id).await;
        self.client
            .remove_pod_sandbox(&self.id)
            .await
            .expect("RemovePodSandbox");
    }
}

fn run_labels() -> BTreeMap<String, String> {
    support::labels(&[(labels::RUN_ID, &run_id())])
}

/// Runs `body` with a fresh pod (on the pod network or the host's) and removes the pod
/// afterwards, also when `body` panics.
async fn with_pod<F, Fut>(test: &str, host_network: bool, body: F)
where
    F: FnOnce(CriClient, Pod) -> Fut,
    Fut: Future<Output = Pod>,
{
    let client = real_runtime().await;
    let pod = Pod::run(&client, test, host_network).await;
    let id = pod.id.clone();
    let result = std::panic::AssertUnwindSafe(body(client.clone(), pod))
        .catch_unwind()
        .await;
    match result {
        Ok(pod) => pod.remove().await,
        Err(panic) => {
            let _ = client.stop_pod_sandbox(&id).await;
            let _ = client.remove_pod_sandbox(&id).await;
            std::panic::resume_unwind(panic);
        }
    }
}

/// A running container that sleeps, for exec.
async fn sleeper(pod: &Pod) -> String {
    pod.start("sleeper", &["sleep", "3600"], false, false).await
}

/// Asks the runtime for an exec URL.
async fn exec_url(client: &CriClient, request: v1::ExecRequest) -> String {
    client
        .runtime_service()
        .exec(request)
        .await
        .expect("Exec")
        .into_inner()
        .url
}

/// An Exec request without stdin or a TTY.
fn exec_request(container: &str, command: &[&str]) -> v1::ExecRequest {
    v1::ExecRequest {
        container_id: container.to_owned(),
        cmd: command.iter().map(|s| (*s).to_owned()).collect(),
        stdout: true,
        stderr: true,
        ..Default::default()
    }
}

/// Execs `command` in `container` with nothing on stdin.
async fn exec(client: &CriClient, container: &str, command: &[&str]) -> RemoteCommandOutput {
    let url = exec_url(client, exec_request(container, command)).await;
    remote_command::run_at(&dial(&url), &RemoteCommandInput::default(), deadline())
        .await
        .expect("the exec stream")
}

#[tokio::test]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs a real CRI runtime (CONTAINER_RUNTIME_ENDPOINT)"
)]
async fn exec_echo_answers_its_output_on_v4_with_exit_code_zero() {
    with_pod("exec-echo", false, |client, pod| async move {
        let container = sleeper(&pod).await;
        let output = exec(&client, &container, &["echo", "hello"]).await;
        // containerd 1.6 embeds the kubelet's server from before v5: it picks v4.
        assert_eq!(output.protocol, protocol::REMOTE_COMMAND_V4);
        assert_eq!(output.stdout, b"hello\n");
        assert_eq!(output.stderr, b"");
        assert_eq!(output.outcome, Some(Outcome::Exited(0)));
        // Before any output the server says "open" with an empty message on stdout.
        let url = exec_url(&client, exec_request(&container, &["echo", "hello"])).await;
        assert_eq!(first_message(&url).await, Some(vec![1]));
        pod
    })
    .await;
}

#[tokio::test]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs a real CRI runtime (CONTAINER_RUNTIME_ENDPOINT)"
)]
async fn exec_into_a_stopped_container_is_refused_by_the_exec_call() {
    with_pod("exec-stopped", false, |client, pod| async move {
        let container = pod.start("done", &["true"], false, false).await;
        client
            .stop_container(&container, 0)
            .await
            .expect("StopContainer");
        let refused = client
            .runtime_service()
            .exec(exec_request(&container, &["echo", "hello"]))
            .await
            .unwrap_err();
        // containerd 1.6 refuses before handing out a URL, with code Unknown.
        assert_eq!(refused.code(), tonic::Code::Unknown, "{refused:?}");
        assert!(
            refused.message().contains("CONTAINER_EXITED"),
            "{refused:?}"
        );
        pod
    })
    .await;
}

#[tokio::test]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs a real CRI runtime (CONTAINER_RUNTIME_ENDPOINT)"
)]
async fn exec_exit_codes_come_back_from_the_status() {
    with_pod("exec-codes", false, |client, pod| async move {
        let container = sleeper(&pod).await;
        for code in [0, 1, 42] {
            let script = format!("exit {code}");
            let output = exec(&client, &container, &["sh", "-c", &script]).await;
            assert_eq!(output.outcome, Some(Outcome::Exited(code)), "{script}");
        }
        pod
    })
    .await;
}

#[tokio::test]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs a real CRI runtime (CONTAINER_RUNTIME_ENDPOINT)"
)]
async fn exec_stdout_of_one_mebibyte_arrives_whole() {
    with_pod("exec-mebibyte", false, |client, pod| async move {
        let container = sleeper(&pod).await;
        // `yes` repeats 16 bytes; `head` cuts exactly 1 MiB.
        let output = exec(
            &client,
            &container,
            &["sh", "-c", "yes 0123456789abcde | head -c 1048576"],
        )
        .await;
        assert_eq!(output.outcome, Some(Outcome::Exited(0)));
        assert_eq!(output.stdout.len(), 1 << 20);
        assert_eq!(output.stdout, b"0123456789abcde\n".repeat(1 << 16));
        pod
    })
    .await;
}

#[tokio::test]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs a real CRI runtime (CONTAINER_RUNTIME_ENDPOINT)"
)]
async fn exec_stderr_arrives_apart_from_stdout() {
    with_pod("exec-stderr", false, |client, pod| async move {
        let container = sleeper(&pod).await;
        let output = exec(
            &client,
            &container,
            &["sh", "-c", "echo out; echo err >&2; echo out2; exit 3"],
        )
        .await;
        assert_eq!(output.stdout, b"out\nout2\n");
        assert_eq!(output.stderr, b"err\n");
        assert_eq!(output.outcome, Some(Outcome::Exited(3)));
        pod
    })
    .await;
}

#[tokio::test]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs a real CRI runtime (CONTAINER_RUNTIME_ENDPOINT)"
)]
async fn exec_with_a_tty_reads_stdin_and_takes_a_resize() {
    with_pod("exec-tty", false, |client, pod| async move {
        let container = sleeper(&pod).await;
        // The command waits for a line, so the resize (sent first) has been handed to the
        // runtime by then; it still polls briefly, since the runtime applies sizes apart
        // from stdin. It prints the size it ends with.
        let script = "read line; i=0; \
            while [ \"$(busybox stty size)\" != '30 100' ] && [ $i -lt 50 ]; do \
            sleep 0.1; i=$((i+1)); done; echo \"got $line\"; busybox stty size";
        let request = v1::ExecRequest {
            stdin: true,
            tty: true,
            stderr: false,
            ..exec_request(&container, &["sh", "-c", script])
        };
        let url = exec_url(&client, request).await;
        let input = RemoteCommandInput {
            stdin: Some(b"typed\n".to_vec()),
            resize: vec![TerminalSize {
                width: 100,
                height: 30,
            }],
            ..Default::default()
        };
        let output = remote_command::run_at(&dial(&url), &input, deadline())
            .await
            .expect("the exec stream");
        let stdout = String::from_utf8_lossy(&output.stdout);
        // The terminal echoes the typed line and ends lines with CR LF.
        assert!(stdout.starts_with("typed\r\n"), "{stdout:?}");
        assert!(stdout.ends_with("got typed\r\n30 100\r\n"), "{stdout:?}");
        assert_eq!(output.stderr, b"");
        assert_eq!(output.outcome, Some(Outcome::Exited(0)));
        assert!(!output.stdin_closed, "v4 cannot close stdin");
        pod
    })
    .await;
}

#[tokio::test]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs a real CRI runtime (CONTAINER_RUNTIME_ENDPOINT)"
)]
async fn on_v4_stdin_never_ends_so_cat_runs_until_the_deadline() {
    with_pod("exec-cat", false, |client, pod| async move {
        let container = sleeper(&pod).await;
        let request = v1::ExecRequest {
            stdin: true,
            ..exec_request(&container, &["sh", "-c", "cat; echo stdin ended"])
        };
        // The input does arrive: cat echoes it.
        let url = exec_url(&client, request.clone()).await;
        let input = RemoteCommandInput {
            stdin: Some(b"some input\n".to_vec()),
            detach_on_stdout: Some(b"some input\n".to_vec()),
            ..Default::default()
        };
        let output = remote_command::run_at(&dial(&url), &input, deadline())
            .await
            .expect("the exec stream");
        assert_eq!(output.outcome, None, "detached");
        // Without a detach point the end of stdin is all cat waits for, and v4 cannot send it.
        let url = exec_url(&client, request).await;
        let input = RemoteCommandInput {
            stdin: Some(b"some input\n".to_vec()),
            ..Default::default()
        };
        let error =
            remote_command::run_at(&dial(&url), &input, Instant::now() + Duration::from_secs(3))
                .await
                .unwrap_err();
        assert!(error.is_deadline(), "{error}");
        assert!(error.to_string().contains(&url), "{error}");
        pod
    })
    .await;
}

/// Whether some process on the host runs exactly `argv`.
fn a_process_runs(argv: &[&str]) -> bool {
    let wanted: Vec<u8> = argv
        .iter()
        .flat_map(|arg| [arg.as_bytes(), b"\0"])
        .flatten()
        .copied()
        .collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .any(|entry| std::fs::read(entry.path().join("cmdline")).is_ok_and(|line| line == wanted))
}

/// A graceful stop waits on the container's first process: the pid from the runtime's
/// verbose status, or else the one found by the container's id in the host's cgroups. Found
/// that way, it is the same pid the runtime names, also while an exec runs beside it (whose
/// process is the shim's child as the first one is, but started later).
#[tokio::test]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs a real CRI runtime (CONTAINER_RUNTIME_ENDPOINT)"
)]
async fn the_first_process_found_in_the_host_cgroups_is_the_one_the_runtime_names() {
    with_pod("first-process", false, |client, pod| async move {
        let container = sleeper(&pod).await;
        let exec = ["sleep", "4077"];
        let beside = {
            let (client, container) = (client.clone(), container.clone());
            let cmd = exec.iter().map(|arg| (*arg).to_owned()).collect();
            tokio::spawn(async move { client.exec_sync(&container, cmd, CALL).await })
        };
        let until = Instant::now() + CALL;
        while !a_process_runs(&exec) {
            assert!(Instant::now() < until, "the exec never ran");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let status = client
            .container_status_verbose(&container)
            .await
            .expect("ContainerStatus");
        let named = cri::process_id(&status.info).expect("the runtime names the pid");
        assert_eq!(
            cri_harness::host::processes::first_process_of(&container),
            Some(named)
        );
        beside.abort();
        pod
    })
    .await;
}

#[tokio::test]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs a real CRI runtime (CONTAINER_RUNTIME_ENDPOINT)"
)]
async fn an_exec_url_serves_once() {
    with_pod("exec-once", false, |client, pod| async move {
        let container = sleeper(&pod).await;
        let url = exec_url(&client, exec_request(&container, &["true"])).await;
        let first =
            remote_command::run_at(&dial(&url), &RemoteCommandInput::default(), deadline()).await;
        assert_eq!(first.expect("first use").outcome, Some(Outcome::Exited(0)));
        let again =
            remote_command::run_at(&dial(&url), &RemoteCommandInput::default(), deadline()).await;
        assert!(
            matches!(again, Err(StreamError::Handshake { .. })),
            "{again:?}"
        );
        pod
    })
    .await;
}

#[tokio::test]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs a real CRI runtime (CONTAINER_RUNTIME_ENDPOINT)"
)]
async fn attach_to_a_shell_with_a_tty_runs_what_is_typed_until_it_exits() {
    with_pod("attach-tty", false, |client, pod| async move {
        let container = pod.start("shell", &["sh"], true, true).await;
        let request = v1::AttachRequest {
            container_id: container,
            stdin: true,
            stdout: true,
            tty: true,
            ..Default::default()
        };
        let url = client
            .runtime_service()
            .attach(request)
            .await
            .expect("Attach")
            .into_inner()
            .url;
        let input = RemoteCommandInput {
            stdin: Some(b"echo $((6*7)); exit 5\n".to_vec()),
            resize: vec![TerminalSize {
                width: 120,
                height: 40,
            }],
            ..Default::default()
        };
        let output = remote_command::run_at(&dial(&url), &input, deadline())
            .await
            .expect("the attach stream");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.contains("\r\n42\r\n"), "{stdout:?}");
        // An attach reports the end of the streams, not the container's exit code.
        assert_eq!(output.outcome, Some(Outcome::Exited(0)));
        pod
    })
    .await;
}

#[tokio::test]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs a real CRI runtime (CONTAINER_RUNTIME_ENDPOINT)"
)]
async fn attach_without_a_tty_echoes_and_the_client_detaches() {
    with_pod("attach-plain", false, |client, pod| async move {
        let container = pod.start("shell", &["sh"], true, false).await;
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
        let input = RemoteCommandInput {
            stdin: Some(b"echo hello\n".to_vec()),
            detach_on_stdout: Some(b"hello\n".to_vec()),
            ..Default::default()
        };
        let output = remote_command::run_at(&dial(&url), &input, deadline())
            .await
            .expect("the attach stream");
        assert_eq!(output.stdout, b"hello\n");
        assert_eq!(output.stderr, b"");
        assert_eq!(output.outcome, None);
        pod
    })
    .await;
}

/// Starts busybox httpd on `port`, serving `body` at `/`.
async fn httpd(pod: &Pod, port: u16, body: &str) {
    let script = format!(
        "mkdir -p /www && echo {body} > /www/index.html && exec httpd -f -p {port} -h /www"
    );
    pod.start("httpd", &["sh", "-c", &script], false, false)
        .await;
}

/// A fresh PortForward URL for one port of the pod.
async fn port_forward_url(client: &CriClient, pod: &Pod, port: u16) -> String {
    port_forward_url_for(client, pod, vec![i32::from(port)]).await
}

/// `GET /` through a port-forward of `port`: the relay's result and the whole answer.
async fn get_through(
    client: &CriClient,
    pod: &Pod,
    port: u16,
) -> (Result<streaming::Forwarded, StreamError>, Vec<u8>) {
    let url = port_forward_url(client, pod, port).await;
    let (mut ours, theirs) = tokio::io::duplex(64 * 1024);
    let dialled = dial(&url);
    let relay = streaming::forward_at(&dialled, port, theirs, deadline());
    let talk = async {
        ours.write_all(b"GET / HTTP/1.0\r\n\r\n").await.unwrap();
        let mut answer = Vec::new();
        let _ = ours.read_to_end(&mut answer).await;
        answer
    };
    tokio::join!(relay, talk)
}

/// Like [`get_through`], retrying while httpd is not listening yet (a connection refused on
/// the error channel), each time through a fresh URL since a URL serves once.
async fn get_when_listening(client: &CriClient, pod: &Pod, port: u16) -> Vec<u8> {
    for _ in 0..50 {
        match get_through(client, pod, port).await {
            (Ok(forwarded), answer) => {
                assert_eq!(forwarded.closed_by, ClosedBy::Remote);
                assert_eq!(forwarded.received, answer.len() as u64);
                return answer;
            }
            (Err(StreamError::PortForward { .. }), _) => {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            (Err(other), _) => panic!("port-forward failed: {other}"),
        }
    }
    panic!("httpd never listened on port {port}");
}

#[tokio::test]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs a real CRI runtime (CONTAINER_RUNTIME_ENDPOINT)"
)]
async fn port_forward_reaches_httpd_in_a_pod_network_pod() {
    with_pod("pf-pod", false, |client, pod| async move {
        httpd(&pod, 8080, "hello-from-the-pod").await;
        let answer = String::from_utf8(get_when_listening(&client, &pod, 8080).await).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer:?}");
        assert!(
            answer.ends_with("\r\n\r\nhello-from-the-pod\n"),
            "{answer:?}"
        );
        pod
    })
    .await;
}

#[tokio::test]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs a real CRI runtime (CONTAINER_RUNTIME_ENDPOINT)"
)]
async fn port_forward_reaches_httpd_in_a_host_network_pod() {
    with_pod("pf-host", true, |client, pod| async move {
        // A port free on the host right now; httpd takes it a moment later.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        httpd(&pod, port, "hello-from-the-host-network").await;
        let answer = String::from_utf8(get_when_listening(&client, &pod, port).await).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer:?}");
        assert!(
            answer.ends_with("\r\n\r\nhello-from-the-host-network\n"),
            "{answer:?}"
        );
        pod
    })
    .await;
}

#[tokio::test]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs a real CRI runtime (CONTAINER_RUNTIME_ENDPOINT)"
)]
async fn port_forward_to_a_closed_port_fails_with_the_servers_text() {
    with_pod("pf-closed", false, |client, pod| async move {
        sleeper(&pod).await;
        let (forwarded, answer) = get_through(&client, &pod, 8081).await;
        match forwarded {
            Err(StreamError::PortForward { port, message, .. }) => {
                assert_eq!(port, 8081);
                assert!(message.contains("8081"), "{message}");
                assert!(message.contains(&pod.id), "{message}");
            }
            other => panic!("expected the error channel's message, got {other:?}"),
        }
        assert_eq!(answer, b"");
        pod
    })
    .await;
}

/// The first message on a raw port-forward WebSocket to `url` (with its query as given): the
/// data channel's port prefix, or `None` when the server closes without one.
async fn first_message(url: &str) -> Option<Vec<u8>> {
    let ws = url.replacen("http://", "ws://", 1);
    let mut request =
        tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(ws.as_str())
            .unwrap();
    request.headers_mut().insert(
        "Sec-WebSocket-Protocol",
        protocol::PORT_FORWARD_V4.parse().unwrap(),
    );
    let tcp = dial(url).tcp().await.expect("the streaming server answers");
    let (mut socket, _) = tokio_tungstenite::client_async(request, tcp)
        .await
        .expect("the upgrade");
    while let Some(Ok(message)) = socket.next().await {
        if let tokio_tungstenite::tungstenite::Message::Binary(data) = message {
            return Some(data.to_vec());
        }
    }
    None
}

/// A PortForward URL for `ports` of the pod.
async fn port_forward_url_for(client: &CriClient, pod: &Pod, ports: Vec<i32>) -> String {
    client
        .runtime_service()
        .port_forward(v1::PortForwardRequest {
            pod_sandbox_id: pod.id.clone(),
            port: ports,
        })
        .await
        .expect("PortForward")
        .into_inner()
        .url
}

#[tokio::test]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs a real CRI runtime (CONTAINER_RUNTIME_ENDPOINT)"
)]
async fn on_containerd_the_request_names_the_port_and_the_port_query_is_ignored() {
    with_pod("pf-query", false, |client, pod| async move {
        sleeper(&pod).await;
        let url = port_forward_url_for(&client, &pod, vec![80]).await;
        assert_eq!(first_message(&url).await, Some(vec![0, 80, 0]));
        let url = port_forward_url_for(&client, &pod, vec![80]).await;
        assert_eq!(
            first_message(&format!("{url}?port=8081")).await,
            Some(vec![0, 80, 0])
        );
        // No port in the request: the upgrade succeeds, then the server closes at once.
        let url = port_forward_url_for(&client, &pod, vec![]).await;
        assert_eq!(first_message(&format!("{url}?port=8081")).await, None);
        // The client says so rather than reporting an empty relay.
        let url = port_forward_url_for(&client, &pod, vec![]).await;
        let (_ours, theirs) = tokio::io::duplex(64);
        let error = streaming::forward_at(&dial(&url), 8081, theirs, deadline())
            .await
            .unwrap_err();
        assert!(
            matches!(error, StreamError::PortNotOpened { port: 8081, .. }),
            "{error:?}"
        );
        pod
    })
    .await;
}

/// A server on 127.0.0.1 that upgrades with `protocol`, then never writes; it sends `()` once
/// the client has gone.
// tungstenite fixes the upgrade callback's error type (an HTTP response).
#[allow(clippy::result_large_err)]
async fn silent_server(protocol: &'static str) -> (String, tokio::sync::oneshot::Receiver<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/exec/silent", listener.local_addr().unwrap());
    let (gone, gone_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let choose = |_: &tokio_tungstenite::tungstenite::handshake::server::Request,
                      mut response: tokio_tungstenite::tungstenite::handshake::server::Response| {
            response
                .headers_mut()
                .insert("Sec-WebSocket-Protocol", protocol.parse().unwrap());
            Ok(response)
        };
        let mut socket = tokio_tungstenite::accept_hdr_async(tcp, choose)
            .await
            .unwrap();
        // Read (and so hold the connection) without ever writing, until the client goes.
        while let Some(Ok(_)) = socket.next().await {}
        let _ = gone.send(());
    });
    (url, gone_rx)
}

fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

#[tokio::test]
async fn a_silent_exec_server_fails_the_client_by_its_deadline_leaving_no_task() {
    let (url, gone) = silent_server(protocol::REMOTE_COMMAND_V4).await;
    let before = alive_tasks();
    let input = RemoteCommandInput {
        stdin: Some(b"anything\n".to_vec()),
        ..Default::default()
    };
    let error = remote_command::run(&url, &input, Instant::now() + Duration::from_millis(300))
        .await
        .unwrap_err();
    assert!(error.is_deadline(), "{error}");
    assert!(error.to_string().contains(&url), "{error}");
    assert_eq!(alive_tasks(), before, "the client left a task behind");
    // The client dropped its connection: the server sees it go.
    tokio::time::timeout(CALL, gone)
        .await
        .expect("the client closed its connection")
        .unwrap();
}

#[tokio::test]
async fn a_silent_port_forward_server_fails_the_relay_by_its_deadline_leaving_no_task() {
    let (url, gone) = silent_server(protocol::PORT_FORWARD_V4).await;
    let before = alive_tasks();
    let (_ours, theirs) = tokio::io::duplex(64);
    let error = streaming::forward(
        &url,
        80,
        theirs,
        Instant::now() + Duration::from_millis(300),
    )
    .await
    .unwrap_err();
    assert!(error.is_deadline(), "{error}");
    assert!(error.to_string().contains(&url), "{error}");
    assert_eq!(alive_tasks(), before, "the relay left a task behind");
    tokio::time::timeout(CALL, gone)
        .await
        .expect("the relay closed its connection")
        .unwrap();
}
