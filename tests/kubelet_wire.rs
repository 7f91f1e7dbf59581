//! Requests look like the chosen kubelet's, checked on the wire: every mock the runner starts
//! refuses a RunPodSandbox or CreateContainer that lacks a field every kubelet always sends
//! (the profile's requirements, `tests/mock_profiles.rs`) or carries a label the run's kubelet
//! never writes (`mock::KubeletWire`). So `tests/suites.rs`, which runs every embedded case
//! under each `--kubelet`, fails on any such request; these tests show that the label rule
//! bites, over the gRPC wire and through the runner.

use crate::support;

use cri_harness::cri::{labels, v1, CriClient, PodSandbox};
use cri_harness::manager::KubeletProfile;
use cri_harness::mock::{KubeletWire, MockRuntime};
use cri_harness::runner::{self, CaseOutcome, Interrupt, Target};

async fn client(mock: &MockRuntime) -> CriClient {
    let channel = mock.duplex_channel().await.expect("in-memory channel");
    CriClient::new(
        channel.clone(),
        channel,
        "mock (in-memory)",
        std::time::Duration::from_secs(10),
    )
}

fn sandbox(managed: bool) -> v1::PodSandboxConfig {
    let mark = managed.then(|| (labels::MANAGED.to_owned(), "true".to_owned()));
    PodSandbox::new("web", "ns", "u1")
        .network(false)
        .log_directory("/var/log/pods/ns_web_u1")
        .labels(mark)
        .build()
}

#[tokio::test]
async fn todays_kubelet_never_sends_the_managed_label_and_the_seed_always_does() {
    let current = client(&MockRuntime::new().expecting_kubelet(KubeletWire::Current)).await;
    let err = current
        .run_pod_sandbox(sandbox(true), "")
        .await
        .expect_err("a managed label under today's kubelet");
    assert_eq!(err.code, tonic::Code::InvalidArgument, "{err}");
    assert!(err.to_string().contains(labels::MANAGED), "{err}");
    current
        .run_pod_sandbox(sandbox(false), "")
        .await
        .expect("today's kubelet's sandbox");

    let seed = client(&MockRuntime::new().expecting_kubelet(KubeletWire::Seed)).await;
    let err = seed
        .run_pod_sandbox(sandbox(false), "")
        .await
        .expect_err("no managed label under the seed");
    assert_eq!(err.code, tonic::Code::InvalidArgument, "{err}");
    seed.run_pod_sandbox(sandbox(true), "")
        .await
        .expect("the seed's sandbox");
}

/// The runner tells each mock the run's kubelet: a case whose sandbox carries the seed's
/// label errors under today's kubelet, naming it, and passes under the seed's.
#[rstest::rstest]
#[case::current(KubeletProfile::Current, false)]
#[case::seed(KubeletProfile::Seed, true)]
#[tokio::test]
async fn the_runner_holds_every_mock_to_the_runs_kubelet(
    #[case] kubelet: KubeletProfile,
    #[case] passes: bool,
) {
    let text = "suite: wire\nabout: x\ncases:\n\
        \x20 - name: a-sandbox-marked-as-the-seeds\n    steps:\n\
        \x20     - run_sandbox: {as: sb, pod: web, labels: {io.kubernetes.managed: \"true\"}}\n\
        \x20     - version: {}\n";
    let suite = cri_harness::suite::parse("wire.yaml", text).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let mut config = support::run_config(Target::Mock, vec![suite], "wire", scratch.path());
    config.kubelet = kubelet;
    // Its reference is recorded, not compared: this is about what the mock takes.
    config.snapshots.update = true;
    let report = runner::run(config, Interrupt::new(), None).await;
    let outcome = &report.cases[0].outcome;
    match (passes, outcome) {
        (true, CaseOutcome::Passed) => {}
        (false, CaseOutcome::Error(message)) => {
            assert!(message.contains("never writes"), "{message}");
        }
        _ => panic!("{kubelet:?}: {outcome:?}"),
    }
}
