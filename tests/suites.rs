//! Every embedded suite against the built-in mock, each case on its own runtime behind a real
//! unix socket: every case must pass and its snapshot must match the committed one under
//! `snapshots/mock/`, the same file `cri-harness run --mock` compares with.

mod support;

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
    // The runner writes into a scratch tree; insta compares with the committed one.
    let scratch = tempfile::tempdir().unwrap();
    let mut config = support::run_config(Target::Mock, loaded.suites, "suites", scratch.path());
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
            CaseOutcome::Failed(_) => true,
        })
        .map(|c| format!("{}: {:?}", c.full_name(), c.outcome))
        .collect();
    assert!(
        failed.is_empty(),
        "cases that did not pass:\n{}",
        failed.join("\n")
    );

    // Cases without manager calls have nothing to snapshot.
    for case in &report.cases {
        let Some(written) = case.snapshot.as_ref() else {
            continue;
        };
        let file = std::fs::read_to_string(&written.path).unwrap();
        let body = snapshot::body(&file).to_owned();
        let name = format!("{}__{}", case.suite, case.case);
        insta::with_settings!({
            snapshot_path => "../snapshots/mock",
            prepend_module_to_snapshot => false,
            omit_expression => true,
        }, {
            insta::assert_snapshot!(name, body);
        });
    }
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
