//! The runner under faults, against a mock served as if it were a real runtime (an endpoint):
//! a case that runs out of time, a run interrupted mid-case, a runtime that stops answering,
//! and cleanup by label. After each, nothing carrying the run's label is left.

use std::collections::BTreeMap;
use std::time::Duration;

use cri_harness::cri::control::mock_control_client::MockControlClient;
use cri_harness::cri::control::InjectLatencyRequest;
use cri_harness::cri::{self, labels, v1, ConnectOptions, CriClient, Endpoint};
use cri_harness::mock::{MockRuntime, MockServer};
use cri_harness::runner::cleanup::{self, Selector};
use cri_harness::runner::{
    self, snapshot, CaseOutcome, Filter, Interrupt, RunConfig, RunReport, Target,
};
use cri_harness::suite::{self, Suite};

struct Served {
    _dir: tempfile::TempDir,
    server: MockServer,
    endpoint: Endpoint,
    client: CriClient,
}

async fn serve() -> Served {
    let dir = tempfile::tempdir().unwrap();
    let server = MockRuntime::new()
        .serve_unix(&dir.path().join("cri.sock"))
        .await
        .unwrap();
    let endpoint = server.endpoint();
    let client = cri::connect(&endpoint, &endpoint, &ConnectOptions::default())
        .await
        .unwrap();
    Served {
        _dir: dir,
        server,
        endpoint,
        client,
    }
}

fn suite(text: &str) -> Suite {
    suite::parse("faults.yaml", text).unwrap()
}

fn config(served: &Served, suites: Vec<Suite>, snapshots: &std::path::Path) -> RunConfig {
    RunConfig {
        target: Target::Endpoint {
            runtime: served.endpoint.clone(),
            image: served.endpoint.clone(),
        },
        suites,
        filter: Filter::default(),
        parallel: 1,
        case_timeout: Duration::from_secs(600),
        cleanup_timeout: Duration::from_secs(30),
        connect: ConnectOptions::default(),
        snapshot_dir: snapshots.to_owned(),
        // These suites have no references: their results are recorded into the scratch
        // directory, and what the tests check is how the faults end the cases.
        snapshots: snapshot::Policy { update: true },
        run_id: "faults".to_owned(),
        runtime_handler: String::new(),
        work_dir: snapshots.join("work"),
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

/// Everything on the runtime carrying a run-id label.
async fn labelled(client: &CriClient) -> Vec<String> {
    let any_run = Selector {
        run_id: None,
        case: None,
    };
    cleanup::remaining(client, &any_run)
        .await
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect()
}

const SLOW: &str = "\
suite: slow
about: A case that blocks after making a sandbox and a container.
cases:
  - name: blocks
    steps:
      - run_sandbox: {as: sb, pod: web}
      - create_container: {as: app, sandbox: sb}
      - start_container: app
      - sleep_ms: 600000
      - version: {}
  - name: after
    steps:
      - version: {}
";

fn failure(report: &RunReport, index: usize) -> String {
    match &report.cases[index].outcome {
        // A broken expectation fails the case; a step that sets up fails it as an error.
        CaseOutcome::Failed(reason) | CaseOutcome::Error(reason) => reason.clone(),
        other => panic!("case {index} did not fail: {other:?}"),
    }
}

#[tokio::test]
async fn a_case_that_runs_out_of_time_fails_naming_the_step_and_is_cleaned_up() {
    let served = serve().await;
    let snapshots = tempfile::tempdir().unwrap();
    let mut config = config(&served, vec![suite(SLOW)], snapshots.path());
    config.case_timeout = Duration::from_secs(2);
    let report = runner::run(config, Interrupt::new(), None).await;
    let reason = failure(&report, 0);
    assert!(reason.contains("step 4 `sleep_ms`"), "{reason}");
    assert!(reason.contains("timed out after 2s"), "{reason}");
    assert_eq!(report.cases[1].outcome, CaseOutcome::Passed);
    assert!(labelled(&served.client).await.is_empty());
    assert!(!report.success());
    served.server.shutdown().await;
}

#[tokio::test]
async fn an_interrupt_cancels_the_running_case_removes_what_it_made_and_starts_no_other() {
    let served = serve().await;
    let snapshots = tempfile::tempdir().unwrap();
    let config = config(&served, vec![suite(SLOW)], snapshots.path());
    let interrupt = Interrupt::new();
    let run = tokio::spawn(runner::run(config, interrupt.clone(), None));
    // Interrupt once the case has made its container: it is then inside its long sleep.
    loop {
        let containers = served.client.list_containers(None).await.unwrap();
        if containers
            .iter()
            .any(|c| c.state == v1::ContainerState::ContainerRunning as i32)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    interrupt.cancel();
    let report = run.await.unwrap();
    assert!(report.interrupted);
    // Cut short, the case has no verdict on the runtime: interrupted, not failed.
    assert!(
        matches!(&report.cases[0].outcome, CaseOutcome::Interrupted(r) if r.contains("step 4 `sleep_ms`: interrupted")),
        "{:?}",
        report.cases[0].outcome
    );
    assert_eq!(report.failed() + report.errored(), 0);
    assert!(
        matches!(&report.cases[1].outcome, CaseOutcome::Skipped(r) if r.reason.contains("interrupted"))
    );
    assert!(labelled(&served.client).await.is_empty());
    served.server.shutdown().await;
}

#[tokio::test]
async fn a_runtime_that_stops_answering_ends_the_run_with_a_message_naming_the_endpoint() {
    let served = serve().await;
    let options = ConnectOptions::default();
    let mut control =
        MockControlClient::new(cri::channel(&served.endpoint, &options).await.unwrap());
    for method in ["RunPodSandbox", "ListPodSandbox", "ListContainers"] {
        control
            .inject_latency(InjectLatencyRequest {
                method: method.to_owned(),
                delay_ms: 600_000,
                count: 0,
                ..Default::default()
            })
            .await
            .unwrap();
    }
    let cases: String = (1..=5)
        .map(|n| format!("  - name: c{n}\n    steps:\n      - run_sandbox: {{as: sb, pod: web}}\n      - version: {{}}\n"))
        .collect();
    let snapshots = tempfile::tempdir().unwrap();
    let mut config = config(
        &served,
        vec![suite(&format!("suite: hang\nabout: x\ncases:\n{cases}"))],
        snapshots.path(),
    );
    config.connect.call_timeout = Duration::from_millis(300);
    config.case_timeout = Duration::from_secs(5);
    config.cleanup_timeout = Duration::from_secs(2);
    let report = runner::run(config, Interrupt::new(), None).await;
    let aborted = report
        .aborted
        .clone()
        .expect("the run gives up on the runtime");
    assert!(aborted.contains(&served.endpoint.to_string()), "{aborted}");
    assert!(aborted.contains("stopped answering"), "{aborted}");
    for index in 0..3 {
        assert!(
            failure(&report, index).contains("DeadlineExceeded"),
            "{}",
            failure(&report, index)
        );
    }
    for case in &report.cases[3..] {
        assert!(
            matches!(&case.outcome, CaseOutcome::Skipped(r) if r.reason.contains("stopped answering"))
        );
    }
    served.server.shutdown().await;
}

#[tokio::test]
async fn a_case_that_needs_the_mock_is_skipped_on_a_real_runtime_with_the_reason() {
    let served = serve().await;
    let snapshots = tempfile::tempdir().unwrap();
    let text = "suite: s\nabout: x\ncases:\n  - name: c\n    needs: [mock_control]\n    steps:\n      - mock_set_version: {version: 0.2.0}\n      - new_manager: {}\n";
    let report = runner::run(
        config(&served, vec![suite(text)], snapshots.path()),
        Interrupt::new(),
        None,
    )
    .await;
    assert!(
        matches!(&report.cases[0].outcome, CaseOutcome::Skipped(r) if r.reason.contains("mock_control"))
    );
    assert!(report.success());
    served.server.shutdown().await;
}

async fn labelled_sandbox(client: &CriClient, name: &str, run_id: Option<&str>) -> String {
    let mut sandbox_labels = BTreeMap::new();
    if let Some(run_id) = run_id {
        sandbox_labels.insert(labels::RUN_ID.to_owned(), run_id.to_owned());
        sandbox_labels.insert(labels::CASE.to_owned(), "1".to_owned());
    }
    let config = cri_harness::cri::PodSandbox::new(name, "clean-test", &format!("uid-{name}"))
        .labels(sandbox_labels.clone())
        .build();
    let sandbox = client.run_pod_sandbox(config.clone(), "").await.unwrap();
    let image = cri_harness::images::resolve("busybox");
    client.pull_image(&image).await.unwrap();
    let container = v1::ContainerConfig {
        metadata: Some(v1::ContainerMetadata {
            name: "app".to_owned(),
            attempt: 0,
        }),
        image: Some(v1::ImageSpec {
            image,
            ..Default::default()
        }),
        labels: sandbox_labels,
        ..Default::default()
    };
    let id = client
        .create_container(&sandbox, container, config)
        .await
        .unwrap();
    client.start_container(&id).await.unwrap();
    sandbox
}

#[tokio::test]
async fn cleanup_removes_one_runs_objects_then_any_runs_and_never_unlabelled_ones() {
    let served = serve().await;
    let client = &served.client;
    labelled_sandbox(client, "mine", Some("run-a")).await;
    labelled_sandbox(client, "theirs", Some("run-b")).await;
    let bystander = labelled_sandbox(client, "bystander", None).await;

    let run_a = Selector {
        run_id: Some("run-a".to_owned()),
        case: None,
    };
    let removal = cleanup::remove(client, &run_a).await;
    assert!(removal.errors.is_empty(), "{:?}", removal.errors);
    let kinds: Vec<&str> = removal.removed.iter().map(|o| o.kind).collect();
    assert_eq!(kinds, ["container", "sandbox"]);
    assert!(cleanup::remaining(client, &run_a).await.unwrap().is_empty());
    assert_eq!(
        labelled(client).await.len(),
        2,
        "run-b's sandbox and container stay"
    );

    let any = Selector {
        run_id: None,
        case: None,
    };
    cleanup::remove(client, &any).await;
    assert!(labelled(client).await.is_empty());
    let left = client.list_pod_sandbox(None).await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].id, bystander);
    served.server.shutdown().await;
}

/// A case gives up its worker when its steps end: at `--parallel 1`, the next case's steps run
/// while a slow sandbox removal of the one before is still under way, and each verdict still
/// waits for its own cleanup, which left nothing.
#[tokio::test]
async fn the_next_case_runs_while_the_one_before_cleans_up() {
    let served = serve().await;
    let options = ConnectOptions::default();
    let mut control =
        MockControlClient::new(cri::channel(&served.endpoint, &options).await.unwrap());
    control
        .inject_latency(InjectLatencyRequest {
            method: "RemovePodSandbox".to_owned(),
            delay_ms: 400,
            count: 0,
            ..Default::default()
        })
        .await
        .unwrap();
    let cases: String = (1..=2)
        .map(|n| format!("  - name: c{n}\n    steps:\n      - run_sandbox: {{as: sb, pod: web}}\n      - version: {{}}\n"))
        .collect();
    let snapshots = tempfile::tempdir().unwrap();
    let config = config(
        &served,
        vec![suite(&format!("suite: overlap\nabout: x\ncases:\n{cases}"))],
        snapshots.path(),
    );
    let report = runner::run(config, Interrupt::new(), None).await;
    assert_eq!(report.passed(), 2, "{:?}", report.cases);
    let (first, second) = (&report.cases[0], &report.cases[1]);
    // Each case's own duration covers its cleanup, the slow removal included.
    assert!(
        first.timing.cleanup >= Duration::from_millis(400),
        "{first:?}"
    );
    assert!(
        second.timing.cleanup >= Duration::from_millis(400),
        "{second:?}"
    );
    // The second began before the first one's cleanup was over.
    assert!(
        second.timing.started < first.timing.started + first.duration,
        "c2 started at {:?}; c1 ran from {:?} for {:?}",
        second.timing.started,
        first.timing.started,
        first.duration
    );
    assert!(labelled(&served.client).await.is_empty());
    served.server.shutdown().await;
}
