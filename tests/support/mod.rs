//! Shared harness for the integration tests: a mock runtime reached over the in-memory duplex
//! (the default) or a unix socket, and builders for the CRI configs the tests send.
// Each test binary compiles this module and uses a different part of it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use cri_harness::cri::control::mock_control_client::MockControlClient;
use cri_harness::cri::{self, v1, ConnectOptions, CriClient, Endpoint, MAX_MESSAGE_SIZE};
use cri_harness::mock::{MockRuntime, MockServer};
use tempfile::TempDir;
use tonic::transport::Channel;

pub mod browser;

/// What a test needs from outside the crate (a CRI runtime, a program, root), asked for in one
/// place.
///
/// Such a test carries `#[cfg_attr(not(crih_ci), ignore = "needs ...")]`: build.rs sets the
/// `crih_ci` cfg when `CI=true`, so CI runs it and elsewhere `cargo test` lists it as ignored with
/// its reason (`cargo test -- --ignored` runs it on a machine that has what it needs). Once it
/// runs, a missing need fails it here, naming what to provide: never a silent green.
pub mod need {
    use std::path::{Path, PathBuf};

    /// The value of `var`, which tells the test where `what` is; a failure when it is unset.
    pub fn env(var: &str, what: &str) -> String {
        match std::env::var(var) {
            Ok(value) if !value.is_empty() => value,
            _ => panic!(
                "this test needs {what}: set {var} (CI sets it; elsewhere the test is ignored \
                 unless asked for with --ignored)"
            ),
        }
    }

    /// The CRI endpoint of the real runtime under test (`CONTAINER_RUNTIME_ENDPOINT`).
    pub fn runtime() -> String {
        env("CONTAINER_RUNTIME_ENDPOINT", "a real CRI runtime")
    }

    /// The program `name`, by absolute path or on `PATH`; a failure naming `package` otherwise.
    pub fn program(name: &str, package: &str) -> PathBuf {
        let found = if name.contains('/') {
            Path::new(name).is_file().then(|| PathBuf::from(name))
        } else {
            std::env::var_os("PATH").and_then(|path| {
                std::env::split_paths(&path)
                    .map(|dir| dir.join(name))
                    .find(|candidate| candidate.is_file())
            })
        };
        found.unwrap_or_else(|| panic!("this test needs {name}: install {package}"))
    }

    /// A failure naming `what` the test needs and why it is not there.
    pub fn unmet(what: &str, reason: &str) -> ! {
        panic!("this test needs {what}: {reason}")
    }

    /// A failure unless the test runs as root, which `why` needs.
    pub fn root(why: &str) {
        assert!(
            rustix::process::geteuid().is_root(),
            "this test needs root: {why}"
        );
    }
}

/// Per-call deadline of the test clients.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// A control client with the same message limits as the CRI client.
pub fn control_client(channel: Channel) -> MockControlClient<Channel> {
    MockControlClient::new(channel)
        .max_decoding_message_size(MAX_MESSAGE_SIZE)
        .max_encoding_message_size(MAX_MESSAGE_SIZE)
}

/// A fresh mock with a CRI client and a control client over the in-memory duplex.
pub async fn mock() -> (MockRuntime, CriClient, MockControlClient<Channel>) {
    let mock = MockRuntime::new();
    let channel = mock.duplex_channel().await.expect("in-memory channel");
    let client = CriClient::new(
        channel.clone(),
        channel.clone(),
        "mock (in-memory)",
        CALL_TIMEOUT,
    );
    (mock, client, control_client(channel))
}

/// A channel to the unix socket at `path`, dialled the way the harness dials runtimes (without
/// the Version/ImageFsInfo probe of `cri::connect`, so the mock's call log stays empty).
pub async fn unix_channel(path: &Path) -> Channel {
    let endpoint = Endpoint::Unix(path.to_path_buf());
    cri::channel(&endpoint, &ConnectOptions::default())
        .await
        .expect("unix socket channel")
}

/// A fresh mock served on a unix socket in a new temporary directory, with clients to it.
pub async fn mock_on_socket() -> (TempDir, MockServer, CriClient, MockControlClient<Channel>) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let server = MockRuntime::new()
        .serve_unix(&dir.path().join("mock.sock"))
        .await
        .expect("mock on a unix socket");
    let channel = unix_channel(server.path()).await;
    let endpoint = server.endpoint().to_string();
    let client = CriClient::new(channel.clone(), channel.clone(), endpoint, CALL_TIMEOUT);
    (dir, server, client, control_client(channel))
}

/// A label or annotation map from pairs.
pub fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// A pod-network sandbox config for pod `namespace/name` with the given uid and attempt.
pub fn sandbox_config(
    name: &str,
    namespace: &str,
    uid: &str,
    attempt: u32,
) -> v1::PodSandboxConfig {
    cri_harness::cri::PodSandbox::new(name, namespace, uid)
        .attempt(attempt)
        .log_directory(format!("/var/log/pods/{namespace}_{name}_{uid}"))
        .build()
}

/// The same config with the pod in the node's network namespace.
pub fn host_network(mut config: v1::PodSandboxConfig) -> v1::PodSandboxConfig {
    let linux = config.linux.get_or_insert_with(Default::default);
    let security = linux.security_context.get_or_insert_with(Default::default);
    let options = security
        .namespace_options
        .get_or_insert_with(Default::default);
    options.network = v1::NamespaceMode::Node as i32;
    config
}

/// A container config for container `name` running `image`.
pub fn container_config(name: &str, image: &str) -> v1::ContainerConfig {
    v1::ContainerConfig {
        metadata: Some(v1::ContainerMetadata {
            name: name.to_owned(),
            attempt: 0,
        }),
        image: Some(v1::ImageSpec {
            image: image.to_owned(),
            ..Default::default()
        }),
        log_path: format!("{name}/0.log"),
        ..Default::default()
    }
}

/// A READY pod-network sandbox for pod `default/<name>` (uid `uid-<name>`); answers its id.
pub async fn run_sandbox(client: &CriClient, name: &str) -> String {
    client
        .run_pod_sandbox(
            sandbox_config(name, "default", &format!("uid-{name}"), 0),
            "",
        )
        .await
        .expect("RunPodSandbox")
}

/// Pulls busybox and creates container `name` in the sandbox of pod `default/<pod>` made by
/// [`run_sandbox`]; answers the container's id.
pub async fn create_container(
    client: &CriClient,
    sandbox_id: &str,
    pod: &str,
    name: &str,
) -> String {
    client.pull_image("busybox").await.expect("PullImage");
    client
        .create_container(
            sandbox_id,
            container_config(name, "busybox"),
            sandbox_config(pod, "default", &format!("uid-{pod}"), 0),
        )
        .await
        .expect("CreateContainer")
}

/// The built `cri-harness` binary with nothing of the caller's setup: no CI flag, no endpoint
/// variables, no crictl config.
pub fn harness() -> std::process::Command {
    let mut command = std::process::Command::new(BINARY);
    isolate(&mut command);
    command
}

/// Starts `command` (a `cri-harness mock --listen SOCKET` with the caller's setup), its stdout
/// piped, and answers it with the first line it printed: the mock prints where it listens once
/// it does.
pub fn spawn_mock(command: &mut std::process::Command) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (child, line)
}

/// What a finished command printed: its stdout, then its stderr.
pub fn printed(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The built binary.
pub const BINARY: &str = env!("CARGO_BIN_EXE_cri-harness");

/// Clears what the machine's environment could slip into `command` (a run of the harness, or a
/// program that runs it): CI's variable, the endpoint variables and crictl's config.
pub fn isolate(command: &mut std::process::Command) -> &mut std::process::Command {
    command
        .env_remove("CI")
        .env_remove("CONTAINER_RUNTIME_ENDPOINT")
        .env_remove("IMAGE_SERVICE_ENDPOINT")
        .env("CRI_CONFIG_FILE", "/nonexistent/crictl.yaml")
}

/// A run of `suites` on `target` with what the tests share: 2 cases at once, the default
/// deadlines, snapshots written under `scratch` and the cases' host files under
/// `scratch/work` (tests of one binary run at once, so each run needs its own).
pub fn run_config(
    target: cri_harness::runner::Target,
    suites: Vec<cri_harness::suite::Suite>,
    run_id: &str,
    scratch: &Path,
) -> cri_harness::runner::RunConfig {
    cri_harness::runner::RunConfig {
        target,
        suites,
        filter: cri_harness::runner::Filter::default(),
        parallel: 2,
        case_timeout: Duration::from_secs(60),
        cleanup_timeout: Duration::from_secs(30),
        connect: ConnectOptions::default(),
        snapshot_dir: scratch.to_owned(),
        snapshots: cri_harness::runner::snapshot::Policy::default(),
        run_id: run_id.to_owned(),
        runtime_handler: String::new(),
        work_dir: scratch.join("work"),
        online: false,
        pulled_record: None,
        kubelet: Default::default(),
        feature_gates: Default::default(),
        strict: false,
        attempts: Default::default(),
        mock_profile: Default::default(),
        share_sandboxes: false,
        known: None,
        images: Default::default(),
        mock_registries: Default::default(),
    }
}

/// Every sandbox and container on the runtime that carries `run_id`'s label, as
/// `sandbox ID` and `container ID`.
pub async fn labelled(client: &CriClient, run_id: &str) -> Vec<String> {
    labelled_by(client, cri::labels::RUN_ID, run_id).await
}

/// Every sandbox and container on the runtime whose label `key` is `value`, as `sandbox ID`
/// and `container ID`.
pub async fn labelled_by(client: &CriClient, key: &str, value: &str) -> Vec<String> {
    let selector = BTreeMap::from([(key.to_owned(), value.to_owned())]);
    let sandboxes = client
        .list_pod_sandbox(Some(v1::PodSandboxFilter {
            label_selector: selector.clone(),
            ..Default::default()
        }))
        .await
        .unwrap();
    let containers = client
        .list_containers(Some(v1::ContainerFilter {
            label_selector: selector,
            ..Default::default()
        }))
        .await
        .unwrap();
    sandboxes
        .into_iter()
        .map(|s| format!("sandbox {}", s.id))
        .chain(
            containers
                .into_iter()
                .map(|c| format!("container {}", c.id)),
        )
        .collect()
}

/// Every repo tag of every image the runtime holds.
pub async fn image_tags(client: &CriClient) -> std::collections::BTreeSet<String> {
    client
        .list_images(None)
        .await
        .unwrap()
        .into_iter()
        .flat_map(|image| image.repo_tags)
        .collect()
}

/// Runs `config` to its end (a run that aborts fails the test) and gives each case's
/// `suite/case` with its outcome.
pub async fn run_outcomes(
    config: cri_harness::runner::RunConfig,
) -> Vec<(String, cri_harness::runner::CaseOutcome)> {
    let report =
        cri_harness::runner::run(config, cri_harness::runner::Interrupt::new(), None).await;
    assert!(report.aborted.is_none(), "{:?}", report.aborted);
    report
        .cases
        .into_iter()
        .map(|c| (format!("{}/{}", c.suite, c.case), c.outcome))
        .collect()
}
