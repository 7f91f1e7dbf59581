//! The kubelet suites' recorded results cannot flip: every case that records manager calls
//! runs fifty times on fresh mocks, under both kubelets, each time with another run id (from
//! which the mock's ids derive), and each run matches the references compiled into the binary.
//! The hundred runs go several at once, so their calls also interleave in ever other orders.
//! A tie broken by a run-made id (e.g. containers created at one instant, as in upstream's
//! fixtures) would change a snapshot within a few runs.

use crate::support;

use std::time::Duration;

use cri_harness::cri::ConnectOptions;
use cri_harness::manager::KubeletProfile;
use cri_harness::runner::{snapshot, CaseOutcome, Filter, RunConfig, Target};
use cri_harness::suite::{self, step::Kind};

const RUNS: usize = 50;

async fn run_once(kubelet: KubeletProfile, run: usize) -> Vec<(String, CaseOutcome)> {
    let scratch = tempfile::tempdir().unwrap();
    let mut loaded = suite::load_embedded();
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    for suite in &mut loaded.suites {
        suite
            .cases
            .retain(|case| case.steps.iter().any(|step| step.kind() == Kind::Manager));
    }
    loaded.suites.retain(|suite| !suite.cases.is_empty());
    let config = RunConfig {
        target: Target::Mock,
        suites: loaded.suites,
        filter: Filter::default(),
        parallel: 8,
        case_timeout: Duration::from_secs(60),
        cleanup_timeout: Duration::from_secs(30),
        connect: ConnectOptions::default(),
        snapshot_dir: scratch.path().to_owned(),
        snapshots: snapshot::Policy::default(),
        // Another run id each time: the mock's ids derive from it.
        run_id: format!("stable{run}{kubelet}"),
        runtime_handler: String::new(),
        work_dir: scratch.path().join("work"),
        online: false,
        pulled_record: None,
        kubelet,
        feature_gates: Default::default(),
        strict: false,
        attempts: Default::default(),
        mock_profile: Default::default(),
        share_sandboxes: false,
        known: None,
        images: Default::default(),
        mock_registries: Default::default(),
    };
    support::run_outcomes(config).await
}

/// Runs in flight at once: each has its own mocks and run id, so they share nothing but the
/// machine, and a run's wall time is mostly its slowest case waiting out a hook's second.
const AT_ONCE: usize = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_runs_of_the_kubelet_suites_record_the_same_results() {
    use futures::StreamExt as _;

    let runs = [KubeletProfile::Seed, KubeletProfile::Current]
        .into_iter()
        .flat_map(|kubelet| (0..RUNS).map(move |run| (kubelet, run)));
    let results: Vec<_> = futures::stream::iter(runs)
        .map(|(kubelet, run)| async move {
            let outcomes = tokio::spawn(run_once(kubelet, run))
                .await
                .expect("a run finishes");
            (kubelet, run, outcomes)
        })
        .buffer_unordered(AT_ONCE)
        .collect()
        .await;
    for kubelet in [KubeletProfile::Seed, KubeletProfile::Current] {
        let mut ran = std::collections::BTreeSet::new();
        let mut passed = 0;
        for (_, run, outcomes) in results.iter().filter(|(k, ..)| *k == kubelet) {
            ran.insert(*run);
            for (case, outcome) in outcomes {
                match outcome {
                    CaseOutcome::Passed => passed += 1,
                    CaseOutcome::Skipped(_) => {}
                    other => panic!("run {run} under the {kubelet} kubelet: {case}: {other:?}"),
                }
            }
        }
        assert_eq!(ran.len(), RUNS, "every run id ran under {kubelet}");
        assert!(
            passed >= RUNS * 60,
            "only {passed} case runs passed under {kubelet}"
        );
    }
}
