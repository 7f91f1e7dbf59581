//! The suite files `cri-harness prop` prints for failing cases: generated cases rendered as a
//! suite must load in the runner and pass against the mock with the manager as it is, so that a
//! printed failure replays the property's expectation and nothing else.

use std::time::Duration;

use cri_harness::cri::ConnectOptions;
use cri_harness::prop::{suite_case, suite_file, Profile, Property};
use cri_harness::runner::{self, snapshot, CaseOutcome, Filter, Interrupt, RunConfig, Target};
use cri_harness::suite;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;

/// Cases rendered per property.
const CASES: usize = 100;

fn rendered_suite() -> String {
    let mut cases = Vec::new();
    for property in Property::ALL {
        let mut generator = TestRunner::deterministic();
        let strategy = property.strategy(Profile::MOCK);
        for index in 0..CASES {
            let case = strategy.new_tree(&mut generator).unwrap().current();
            let mut rendered = suite_case(property, &case, true, "generated");
            // Case names must be unique within a suite.
            rendered.name = format!("{}-{index}", property.name().replace('_', "-"));
            cases.push(rendered);
        }
    }
    suite_file("prop-replay", "Generated property cases.", cases).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn printed_suites_load_and_pass_against_the_mock_with_the_manager_as_it_is() {
    let text = rendered_suite();
    let suite = suite::parse("prop-replay.yaml", &text).unwrap();
    assert_eq!(suite.cases.len(), CASES * Property::ALL.len());
    let snapshots = tempfile::tempdir().unwrap();
    let config = RunConfig {
        target: Target::Mock,
        suites: vec![suite],
        filter: Filter::default(),
        parallel: 2,
        case_timeout: Duration::from_secs(30),
        cleanup_timeout: Duration::from_secs(30),
        connect: ConnectOptions::default(),
        snapshot_dir: snapshots.path().to_path_buf(),
        // A generated suite has no references of its own: its results are recorded, and the
        // properties' own checks decide.
        snapshots: snapshot::Policy { update: true },
        run_id: "propreplay".to_owned(),
        runtime_handler: String::new(),
        work_dir: snapshots.path().join("work"),
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
    let failures: Vec<String> = report
        .cases
        .iter()
        .filter_map(|c| match &c.outcome {
            CaseOutcome::Passed => None,
            other => Some(format!("{}: {other:?}", c.full_name())),
        })
        .collect();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert!(failures.is_empty(), "{}\n\n{text}", failures.join("\n"));
    assert_eq!(report.passed(), CASES * Property::ALL.len());
}
