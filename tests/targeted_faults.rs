//! A fault aimed at one container holds under concurrency: the suite case that kills a pod of
//! three containers with a StopContainer error on the second one (whose stops the manager
//! issues concurrently) runs many times on fresh mocks and always records the same result, the
//! reference compiled into the binary.

use std::collections::BTreeSet;
use std::time::Duration;

use cri_harness::cri::ConnectOptions;
use cri_harness::runner::{self, snapshot, Filter, Interrupt, RunConfig, Target};
use cri_harness::suite;
use regex::Regex;

const SUITE: &str = "network-teardown";
const CASE: &str = "a-stop-fault-aimed-at-the-second-of-three-containers-fails-only-that-one";
const RUNS: usize = 50;

/// Runs the case once on a fresh mock; how its result compared with its embedded reference.
async fn run_once() -> snapshot::SnapshotStatus {
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
        feature_gates: Default::default(),
        strict: false,
        attempts: Default::default(),
        mock_profile: Default::default(),
        share_sandboxes: false,
        known: None,
        images: Default::default(),
        mock_registries: Default::default(),
    };
    let report = runner::run(config, Interrupt::new(), None).await;
    assert!(report.aborted.is_none(), "{:?}", report.aborted);
    assert_eq!(report.cases.len(), 1, "the focus selects exactly the case");
    let case = &report.cases[0];
    let checked = case
        .snapshot
        .as_ref()
        .unwrap_or_else(|| panic!("no reference compared: {:?}", case.outcome));
    checked.status.clone()
}

// Two workers, as the binary runs: the mock's server threads and the manager's concurrent
// stops then really overlap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_fault_aimed_at_one_of_three_containers_gives_one_snapshot_every_run() {
    assert!(
        snapshot::embedded(SUITE, CASE).is_some(),
        "the binary holds the case's reference"
    );
    let mut statuses = BTreeSet::new();
    for _ in 0..RUNS {
        statuses.insert(format!("{:?}", run_once().await));
    }
    assert_eq!(
        statuses.into_iter().collect::<Vec<_>>(),
        [format!("{:?}", snapshot::SnapshotStatus::Unchanged)],
        "{RUNS} runs gave other results than the reference"
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
