//! A fault aimed at one container holds under concurrency: the suite case that kills a pod of
//! three containers with a StopContainer error on the second one (whose stops the manager
//! issues concurrently) runs many times on fresh mocks and always records the same snapshot,
//! the committed one.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use cri_harness::cri::ConnectOptions;
use cri_harness::runner::{self, snapshot, CaseOutcome, Filter, Interrupt, RunConfig, Target};
use cri_harness::suite;
use regex::Regex;

const SUITE: &str = "network-teardown";
const CASE: &str = "a-stop-fault-aimed-at-the-second-of-three-containers-fails-only-that-one";
const RUNS: usize = 50;

/// Runs the case once on a fresh mock, writing its snapshot into a scratch tree; its body.
async fn run_once() -> String {
    let scratch = tempfile::tempdir().unwrap();
    let loaded = suite::load_embedded();
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let focus = Regex::new(&format!("^{SUITE}/{CASE}$")).unwrap();
    let config = RunConfig {
        target: Target::Mock,
        suites: loaded.suites,
        filter: Filter {
            focus: Some(focus),
            ..Filter::default()
        },
        parallel: 1,
        case_timeout: Duration::from_secs(60),
        cleanup_timeout: Duration::from_secs(30),
        connect: ConnectOptions::default(),
        snapshot_dir: scratch.path().to_owned(),
        snapshots: snapshot::Policy::default(),
        run_id: "targeted".to_owned(),
        runtime_handler: String::new(),
        // Its own host directory: tests of this binary run at once under fixed run ids.
        work_dir: scratch.path().join("work"),
        online: false,
        pulled_record: None,
        kubelet: Default::default(),
        strict: false,
        known: None,
    };
    let report = runner::run(config, Interrupt::new(), None).await;
    assert!(report.aborted.is_none(), "{:?}", report.aborted);
    assert_eq!(report.cases.len(), 1, "the focus selects exactly the case");
    let case = &report.cases[0];
    assert_eq!(case.outcome, CaseOutcome::Passed);
    let written = case
        .snapshot
        .as_ref()
        .expect("a passed case has a snapshot");
    let file = std::fs::read_to_string(&written.path).unwrap();
    snapshot::body(&file).to_owned()
}

// Two workers, as the binary runs: the mock's server threads and the manager's concurrent
// stops then really overlap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_fault_aimed_at_one_of_three_containers_gives_one_snapshot_every_run() {
    let mut bodies = BTreeSet::new();
    for _ in 0..RUNS {
        bodies.insert(run_once().await);
    }
    let committed_path = snapshot::path(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("snapshots")
            .as_path(),
        "mock",
        SUITE,
        CASE,
    );
    let committed = std::fs::read_to_string(&committed_path).unwrap();
    let committed = snapshot::body(&committed).to_owned();
    assert_eq!(
        bodies.into_iter().collect::<Vec<_>>(),
        [committed],
        "{RUNS} runs gave other snapshots than {}",
        committed_path.display()
    );
}

#[test]
fn a_fault_target_the_case_never_defined_is_refused_naming_the_aliases() {
    let text = "\
suite: bad
about: x
cases:
  - name: c
    needs: [mock_control]
    steps:
      - run_sandbox: {as: sb, pod: web}
      - mock_inject_error: {method: StopContainer, target: app, code: Internal}
      - kill_pod: {pod: web}
";
    let message = suite::parse("suites/bad.yaml", text)
        .unwrap_err()
        .to_string();
    for part in [
        "suites/bad.yaml:8:",
        "unknown alias `app`",
        "sandboxes so far: `sb`",
    ] {
        assert!(message.contains(part), "{message:?} lacks {part:?}");
    }
}
