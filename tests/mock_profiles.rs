//! The mock's profiles on the real wire (a fresh mock per case, each served on a unix socket and
//! reached through the harness's connect path): each freedom the contract grants, taken alone,
//! moves no `must` verdict of any embedded case; the other-runtime profile, which takes them all
//! and requires what the kubelet always sends, gives no failure and no error; and it refuses
//! each request that lacks one of those fields, while the same request with it is taken.

use crate::support;

use std::collections::BTreeMap;

use cri_harness::cri::{v1, CriClient};
use cri_harness::mock::{Freedom, MockProfile, MockRuntime, ProfileName, Requirement};
use cri_harness::report::model::{SkipWhy, Verdict};
use cri_harness::runner::{CaseOutcome, Target};
use cri_harness::streaming::remote_command::{self, RemoteCommandInput};
use cri_harness::suite;
use strum::VariantArray;

/// What a `must` verdict is: held (passed, or only should clauses broken), broken, no verdict
/// (an error), or not judged (skipped, with its kind).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Must {
    Holds,
    Broken,
    NoVerdict,
    NotJudged(SkipWhy),
}

fn must(outcome: &CaseOutcome) -> Must {
    match outcome {
        CaseOutcome::Skipped(skip) => Must::NotJudged(skip.why),
        other => match other.verdict() {
            Verdict::Passed | Verdict::Warning => Must::Holds,
            Verdict::Failed => Must::Broken,
            _ => Must::NoVerdict,
        },
    }
}

/// Every embedded case's outcome on fresh mocks answering as `profile` says.
async fn outcomes(profile: MockProfile, run_id: &str) -> BTreeMap<String, CaseOutcome> {
    let scratch = tempfile::tempdir().unwrap();
    let mut config = support::run_config(
        Target::Mock,
        suite::load_embedded().suites,
        run_id,
        scratch.path(),
    );
    config.mock_profile = profile;
    // Each case has a mock of its own: the cases share nothing and mostly wait.
    config.parallel = 8;
    support::run_outcomes(config).await.into_iter().collect()
}

/// The cases whose `must` verdict differs from `base`'s. A case that held and now skips because
/// the runtime lacks an optional feature (events off) is feature detection, not a verdict.
fn moved(
    base: &BTreeMap<String, CaseOutcome>,
    other: &BTreeMap<String, CaseOutcome>,
) -> Vec<String> {
    base.iter()
        .filter_map(|(case, was)| {
            let now = other.get(case)?;
            let (was_must, now_must) = (must(was), must(now));
            let detected =
                was_must == Must::Holds && now_must == Must::NotJudged(SkipWhy::RuntimeLacks);
            (was_must != now_must && !detected).then(|| format!("{case}: {was:?} -> {now:?}"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_freedom_alone_moves_no_must_verdict_of_any_embedded_case() {
    use futures::StreamExt as _;

    let base = outcomes(MockProfile::default(), "profile-base").await;
    assert!(
        base.values()
            .all(|o| must(o) != Must::Broken && must(o) != Must::NoVerdict),
        "containerd's profile passes every embedded case"
    );
    // The freedoms' runs, several at once: each on mocks of its own.
    let runs: Vec<(Freedom, BTreeMap<String, CaseOutcome>)> =
        futures::stream::iter(Freedom::VARIANTS.iter().copied())
            .map(|freedom| async move {
                let taken = tokio::spawn(outcomes(MockProfile::only(freedom), "profile-one"))
                    .await
                    .expect("the freedom's run finishes");
                (freedom, taken)
            })
            .buffer_unordered(4)
            .collect()
            .await;
    let mut broken = Vec::new();
    for (freedom, taken) in runs {
        assert_eq!(taken.len(), base.len(), "{freedom}: the same cases ran");
        broken.extend(
            moved(&base, &taken)
                .into_iter()
                .map(|c| format!("{freedom}: {c}")),
        );
        if freedom == Freedom::EventsOff {
            let skipped: Vec<&String> = taken
                .iter()
                .filter(|(_, o)| must(o) == Must::NotJudged(SkipWhy::RuntimeLacks))
                .map(|(case, _)| case)
                .collect();
            assert!(
                skipped.iter().any(|c| c.contains("container-events")),
                "with events off the events cases skip as runtime_lacks: {skipped:?}"
            );
        }
    }
    assert!(
        broken.is_empty(),
        "must verdicts moved:\n{}",
        broken.join("\n")
    );
}

// The profile refuses a request that lacks what the kubelet always sends, naming the field, so
// this also proves that every embedded case's requests are the kubelet's.
#[tokio::test]
async fn the_other_runtime_profile_gives_no_failure_and_no_error_over_every_embedded_suite() {
    let taken = outcomes(
        MockProfile::named(ProfileName::OtherRuntime),
        "profile-other",
    )
    .await;
    let bad: Vec<String> = taken
        .iter()
        .filter(|(_, o)| matches!(must(o), Must::Broken | Must::NoVerdict))
        .map(|(case, o)| format!("{case}: {o:?}"))
        .collect();
    assert!(bad.is_empty(), "{} cases:\n{}", bad.len(), bad.join("\n"));
}

/// A sandbox config as the kubelet's `generatePodSandboxConfig` makes it, for pod `name`.
fn kubelet_sandbox(name: &str) -> v1::PodSandboxConfig {
    let mut config = support::sandbox_config(name, "default", &format!("uid-{name}"), 0);
    config.hostname = name.to_owned();
    let linux = config.linux.get_or_insert_with(Default::default);
    linux.cgroup_parent = format!("/kubepods-{name}.slice");
    linux
        .security_context
        .get_or_insert_with(Default::default)
        .namespace_options
        .get_or_insert_with(Default::default);
    config
}

/// A container config as the kubelet's `generateContainerConfig` makes it.
fn kubelet_container(name: &str) -> v1::ContainerConfig {
    let mut config = support::container_config(name, "busybox");
    if let Some(image) = config.image.as_mut() {
        image.user_specified_image = "busybox".to_owned();
    }
    config.linux = Some(v1::LinuxContainerConfig {
        security_context: Some(v1::LinuxContainerSecurityContext {
            namespace_options: Some(v1::NamespaceOption::default()),
            ..Default::default()
        }),
        ..Default::default()
    });
    config
}

/// A client to a fresh other-runtime mock on a unix socket, with busybox pulled and a sandbox
/// for pod `web` run the kubelet's way.
async fn other_runtime() -> (
    tempfile::TempDir,
    cri_harness::mock::MockServer,
    CriClient,
    String,
) {
    let dir = tempfile::tempdir().unwrap();
    let server = MockRuntime::with_profile(MockProfile::named(ProfileName::OtherRuntime))
        .serve_unix(&dir.path().join("mock.sock"))
        .await
        .unwrap();
    let channel = support::unix_channel(server.path()).await;
    let client = CriClient::new(channel.clone(), channel, "other", support::CALL_TIMEOUT);
    client.pull_image("busybox").await.unwrap();
    let sandbox = client
        .run_pod_sandbox(kubelet_sandbox("web"), "")
        .await
        .expect("the kubelet's sandbox config is taken");
    (dir, server, client, sandbox)
}

/// A sandbox config lacking `requirement`, if it is a sandbox's.
fn sandbox_without(requirement: Requirement) -> Option<v1::PodSandboxConfig> {
    let mut config = kubelet_sandbox("bare");
    let linux = config.linux.as_mut()?;
    match requirement {
        Requirement::SandboxMetadata => config.metadata.as_mut()?.uid.clear(),
        Requirement::SandboxLogDirectory => config.log_directory.clear(),
        Requirement::SandboxHostname => config.hostname.clear(),
        Requirement::SandboxNamespaceOptions => {
            linux.security_context.as_mut()?.namespace_options = None;
        }
        // A cgroupfs path where the reported driver is systemd.
        Requirement::CgroupParentForm => linux.cgroup_parent = "/kubepods/bare".to_owned(),
        _ => return None,
    }
    Some(config)
}

/// A CreateContainer request lacking `requirement`, if it is a container's.
fn container_without(
    requirement: Requirement,
    sandbox: &str,
) -> Option<v1::CreateContainerRequest> {
    let mut config = kubelet_container("bare");
    let mut sandbox_config = Some(kubelet_sandbox("web"));
    match requirement {
        Requirement::ContainerMetadata => config.metadata.as_mut()?.name.clear(),
        Requirement::UserSpecifiedImage => config.image.as_mut()?.user_specified_image.clear(),
        Requirement::ContainerLogPath => config.log_path.clear(),
        Requirement::ContainerNamespaceOptions => {
            config
                .linux
                .as_mut()?
                .security_context
                .as_mut()?
                .namespace_options = None;
        }
        Requirement::CreateSandboxConfig => sandbox_config = None,
        _ => return None,
    }
    Some(v1::CreateContainerRequest {
        pod_sandbox_id: sandbox.to_owned(),
        config: Some(config),
        sandbox_config,
    })
}

#[tokio::test]
async fn the_other_runtime_refuses_each_request_lacking_what_the_kubelet_always_sends() {
    let (_dir, server, client, sandbox) = other_runtime().await;
    let mut runtime = client.runtime_service();
    for &requirement in Requirement::VARIANTS {
        let refused = if let Some(config) = sandbox_without(requirement) {
            runtime
                .run_pod_sandbox(v1::RunPodSandboxRequest {
                    config: Some(config),
                    runtime_handler: String::new(),
                })
                .await
                .map(|_| ())
        } else {
            let request = container_without(requirement, &sandbox).unwrap_or_else(|| {
                panic!("{requirement} is neither a sandbox's nor a container's")
            });
            runtime.create_container(request).await.map(|_| ())
        };
        let status = refused.expect_err(&format!("a request without {requirement} is refused"));
        assert_eq!(status.code(), tonic::Code::InvalidArgument, "{requirement}");
        // Only the one field is missing, and the refusal names it.
        assert_eq!(
            status.message().matches("is required").count(),
            1,
            "{requirement}: {}",
            status.message()
        );
        assert!(
            status.message().contains(requirement.field()),
            "{requirement}: {}",
            status.message()
        );
    }
    // The control: the kubelet's own requests are taken.
    let created = client
        .create_container(&sandbox, kubelet_container("app"), kubelet_sandbox("web"))
        .await;
    assert!(created.is_ok(), "{created:?}");
    server.shutdown().await;
}

#[tokio::test]
async fn containerds_profile_takes_the_same_bare_requests() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockRuntime::new()
        .serve_unix(&dir.path().join("mock.sock"))
        .await
        .unwrap();
    let channel = support::unix_channel(server.path()).await;
    let client = CriClient::new(
        channel.clone(),
        channel,
        "containerd",
        support::CALL_TIMEOUT,
    );
    client.pull_image("busybox").await.unwrap();
    let mut bare = support::sandbox_config("web", "default", "uid-web", 0);
    bare.log_directory.clear();
    let sandbox = client.run_pod_sandbox(bare.clone(), "").await.unwrap();
    let created = client
        .create_container(&sandbox, support::container_config("app", "busybox"), bare)
        .await;
    assert!(created.is_ok(), "{created:?}");
    server.shutdown().await;
}

/// A client to a fresh mock answering as `profile` says, on a unix socket, with busybox pulled
/// and pod `web` running (run with the harness's bare builder: no requirement is held).
async fn on(
    profile: MockProfile,
) -> (
    tempfile::TempDir,
    cri_harness::mock::MockServer,
    CriClient,
    String,
) {
    let dir = tempfile::tempdir().unwrap();
    let server = MockRuntime::with_profile(profile)
        .serve_unix(&dir.path().join("mock.sock"))
        .await
        .unwrap();
    let channel = support::unix_channel(server.path()).await;
    let client = CriClient::new(channel.clone(), channel, "profiled", support::CALL_TIMEOUT);
    client.pull_image("busybox").await.unwrap();
    let sandbox = support::run_sandbox(&client, "web").await;
    (dir, server, client, sandbox)
}

/// A container running `command` in pod `web`.
async fn running(client: &CriClient, sandbox: &str, name: &str, command: &[&str]) -> String {
    let mut config = support::container_config(name, "busybox");
    config.command = command.iter().map(|s| (*s).to_owned()).collect();
    let id = client
        .create_container(
            sandbox,
            config,
            support::sandbox_config("web", "default", "uid-web", 0),
        )
        .await
        .unwrap();
    client.start_container(&id).await.unwrap();
    id
}

/// What the answers a freedom touches read, on one mock: each freedom must change it.
async fn answers(profile: MockProfile) -> Vec<String> {
    let (_dir, server, client, sandbox) = on(profile).await;
    let trap = running(
        &client,
        &sandbox,
        "trap",
        &["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"],
    )
    .await;
    client.stop_container(&trap, 0).await.unwrap();
    let exit = client
        .container_status(&trap)
        .await
        .unwrap()
        .status
        .unwrap()
        .exit_code;
    let labels = client
        .pod_sandbox_status(&sandbox)
        .await
        .unwrap()
        .status
        .unwrap()
        .labels;
    let created = client
        .create_container(
            &sandbox,
            support::container_config("idle", "busybox"),
            support::sandbox_config("web", "default", "uid-web", 0),
        )
        .await
        .unwrap();
    client.stop_container(&created, 0).await.unwrap();
    let idle = client
        .container_status(&created)
        .await
        .unwrap()
        .status
        .unwrap();
    let container_labels = idle.labels.len();
    client.remove_container(&created).await.unwrap();
    let stats = client.container_stats(&created).await.map_err(|e| e.code);
    let start = client.start_container(&created).await.map_err(|e| e.code);
    let reopen = client.reopen_container_log(&trap).await.map_err(|e| e.code);
    let driver = client
        .runtime_config()
        .await
        .unwrap()
        .linux
        .unwrap()
        .cgroup_driver;
    let prefixed = client
        .pull_image("busybox")
        .await
        .unwrap()
        .starts_with("sha256:");
    let missing = client
        .pull_image("localhost/cri-harness/missing:none")
        .await
        .map_err(|e| e.code);
    let malformed = client.pull_image("UPPER/case").await.map_err(|e| e.code);
    let second = support::run_sandbox(&client, "api").await;
    let order: Vec<bool> = client
        .list_pod_sandbox(None)
        .await
        .unwrap()
        .iter()
        .map(|s| s.id == second)
        .collect();
    let pod_cpu = client
        .pod_sandbox_stats(&sandbox)
        .await
        .ok()
        .flatten()
        .and_then(|s| s.linux)
        .and_then(|l| l.cpu)
        .and_then(|c| c.usage_core_nano_seconds)
        .is_some();
    let events = {
        let mut runtime = client.runtime_service();
        let stream = runtime.get_container_events(v1::GetEventsRequest {}).await;
        let mut stream = stream.unwrap().into_inner();
        let ended =
            tokio::time::timeout(std::time::Duration::from_millis(200), stream.message()).await;
        matches!(ended, Ok(Ok(None)))
    };
    let terminal = {
        let shell = running(&client, &sandbox, "shell", &["sleep", "3600"]).await;
        let url = client
            .exec(v1::ExecRequest {
                container_id: shell,
                cmd: vec!["echo".into(), "hello".into()],
                tty: true,
                stdout: true,
                ..Default::default()
            })
            .await
            .unwrap();
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        let output = remote_command::run(&url, &RemoteCommandInput::default(), deadline)
            .await
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    client.stop_pod_sandbox(&sandbox).await.unwrap();
    let kept_ip = client
        .pod_sandbox_status(&sandbox)
        .await
        .unwrap()
        .status
        .and_then(|s| s.network)
        .is_some_and(|n| !n.ip.is_empty());
    server.shutdown().await;
    vec![
        format!("stop-signal-first {exit}"),
        format!("stop-created-exits {}", idle.state),
        format!(
            "sandbox-labels-added {}",
            labels.contains_key("io.kubernetes.container.name")
        ),
        format!("container-labels-added {container_labels}"),
        format!("removed-stats-unknown {stats:?}"),
        format!("start-unknown-unknown {start:?}"),
        format!("reopen-not-running-succeeds {reopen:?}"),
        format!("cgroup-driver-systemd {driver}"),
        format!("image-id-bare-hex {prefixed}"),
        format!("pull-missing-unknown {missing:?}"),
        format!("pull-malformed-invalid-argument {malformed:?}"),
        format!("lists-newest-first {order:?}"),
        format!("pod-stats-timestamp-only {pod_cpu}"),
        format!("events-off {events}"),
        format!("stopped-sandbox-keeps-ip {kept_ip}"),
        format!("terminal-nested {terminal:?}"),
    ]
}

#[tokio::test]
async fn each_freedom_the_mock_models_changes_the_answer_it_names_and_no_other() {
    let base = answers(MockProfile::default()).await;
    for line in &base {
        let id = line.split(' ').next().unwrap();
        let freedom: Freedom = id.parse().unwrap();
        let taken = answers(MockProfile::only(freedom)).await;
        let changed: Vec<&str> = base
            .iter()
            .zip(&taken)
            .filter(|(a, b)| a != b)
            .map(|(a, _)| a.split(' ').next().unwrap())
            .collect();
        assert_eq!(changed, [id], "{freedom}: {base:?} -> {taken:?}");
    }
}

/// A run on the other-runtime profile is a lane of its own: its report names the profile, so
/// `report diff` and `report history` never pair it with the default mock's.
#[tokio::test]
async fn a_report_names_the_mock_profile_it_ran_unless_it_is_the_default() {
    for (profile, recorded) in [
        (ProfileName::OtherRuntime, "other-runtime"),
        (ProfileName::Containerd, ""),
    ] {
        let scratch = tempfile::tempdir().unwrap();
        let mut config = support::run_config(Target::Mock, Vec::new(), "lane", scratch.path());
        config.mock_profile = MockProfile::named(profile);
        let report =
            cri_harness::runner::run(config, cri_harness::runner::Interrupt::new(), None).await;
        assert_eq!(report.mock_profile, recorded, "{profile}");
    }
}
