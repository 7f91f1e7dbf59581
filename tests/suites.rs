//! Every embedded suite against the built-in mock, each case on its own runtime behind a real
//! unix socket: every case must pass and every manager case's result must equal the reference
//! compiled into the binary from `snapshots/`, as `cri-harness run --mock` checks it. Each mock
//! is told the run's kubelet and refuses a request that kubelet would never send
//! (`tests/kubelet_wire.rs`), so this also proves every embedded case's requests, under each
//! `--kubelet`, on the wire.

use crate::support;

use cri_harness::manager::KubeletProfile;
use cri_harness::runner::{self, snapshot, CaseOutcome, Interrupt, SkipWhy, Target};
use cri_harness::suite;

/// Every case runs under both kubelets' rules: one that states a kubelet passes under it and
/// skips under the other; every other case passes under both (or skips for the mock's own
/// reasons).
#[rstest::rstest]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_embedded_suite_passes_on_the_mock_and_matches_its_snapshots(
    #[values(KubeletProfile::Seed, KubeletProfile::Current)] kubelet: KubeletProfile,
) {
    let loaded = suite::load_embedded();
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let scratch = tempfile::tempdir().unwrap();
    let mut config = support::run_config(Target::Mock, loaded.suites, "suites", scratch.path());
    // The --snapshot-dir, which embedded cases must leave alone.
    let references = tempfile::tempdir().unwrap();
    config.snapshot_dir = references.path().to_owned();
    config.kubelet = kubelet;
    let report = runner::run(config, Interrupt::new(), None).await;
    assert!(report.aborted.is_none(), "{:?}", report.aborted);
    assert!(
        report.cases.len() >= 16,
        "only {} cases",
        report.cases.len()
    );
    let failed: Vec<String> = report
        .cases
        .iter()
        // A case that needs a real process cannot run on the mock, nor one that needs the
        // internet or a security module the host's kernel lacks, nor one that states the other
        // kubelet; every other one must pass.
        .filter(|c| match &c.outcome {
            CaseOutcome::Passed => false,
            CaseOutcome::Skipped(skip) => match skip.why {
                SkipWhy::NeedsProcess | SkipWhy::Environment | SkipWhy::HostLacks => false,
                SkipWhy::KubeletProfile => {
                    !matches!(case_kubelet(&c.suite, &c.case), Some(k) if k != kubelet)
                }
                _ => true,
            },
            // The mock follows the contract: on it even a should clause holds, and no finding
            // is listed for it.
            CaseOutcome::Failed(_)
            | CaseOutcome::Warning(_)
            | CaseOutcome::Error(_)
            | CaseOutcome::Known { .. }
            | CaseOutcome::Flaky(_)
            | CaseOutcome::Interrupted(_) => true,
        })
        .map(|c| format!("{}: {:?}", c.full_name(), c.outcome))
        .collect();
    assert!(
        failed.is_empty(),
        "cases that did not pass:\n{}",
        failed.join("\n")
    );

    // Every manager case compared its result with its embedded reference, and nothing was
    // written: a run writes references only with --update-snapshots.
    for case in &report.cases {
        let Some(checked) = case.snapshot.as_ref() else {
            continue;
        };
        assert_eq!(
            checked.status,
            snapshot::SnapshotStatus::Unchanged,
            "{}",
            case.full_name()
        );
    }
    assert!(
        report.cases.iter().any(|c| c.snapshot.is_some()),
        "no case compared a reference"
    );
    assert_eq!(std::fs::read_dir(references.path()).unwrap().count(), 0);
}

/// The kubelet a case states, if any.
fn case_kubelet(suite_name: &str, case_name: &str) -> Option<KubeletProfile> {
    suite::load_embedded()
        .suites
        .iter()
        .filter(|s| s.name == suite_name)
        .flat_map(|s| &s.cases)
        .find(|c| c.name == case_name)
        .and_then(|c| c.kubelet)
}

/// The AppArmor and SELinux cases are decided on the host before they run: where its kernel
/// lacks the module (as this machine's does) each skips as `host_lacks`, naming the module; on
/// a host with it none of them skips for that reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lsm_cases_skip_where_the_host_kernel_lacks_the_module() {
    use cri_harness::runner::lsm;
    use cri_harness::suite::Need;

    let loaded = suite::load_embedded();
    let lsm_suite: Vec<_> = loaded
        .suites
        .into_iter()
        .filter(|s| s.name == "conformance-lsm")
        .collect();
    assert_eq!(lsm_suite.len(), 1);
    let scratch = tempfile::tempdir().unwrap();
    let config = support::run_config(Target::Mock, lsm_suite, "suites", scratch.path());
    let report = runner::run(config, Interrupt::new(), None).await;
    assert!(report.cases.len() >= 12, "{} cases", report.cases.len());
    let host = std::path::Path::new("/");
    for case in &report.cases {
        let (need, module) = if case.case.starts_with("apparmor-") {
            (Need::Apparmor, "AppArmor")
        } else {
            (Need::Selinux, "SELinux")
        };
        let lacks = lsm::host_lacks(host, need).is_some();
        match &case.outcome {
            CaseOutcome::Skipped(skip) if skip.why == SkipWhy::HostLacks => {
                assert!(lacks, "{}: skipped on a host with {module}", case.case);
                assert!(
                    skip.reason.contains(module) && skip.reason.contains(need.name()),
                    "{}: {}",
                    case.case,
                    skip.reason
                );
            }
            other => assert!(
                !lacks,
                "{}: {other:?} on a host without {module}",
                case.case
            ),
        }
        assert!(case.environment.is_some(), "{}", case.case);
    }
}
