//! Each contract break the mock can be built with ([`Defect`]) is caught by the cases of its
//! feature: run on a mock with that defect, every case its row names fails (at an expectation,
//! not in setup); run on a mock without it, the same cases pass. A defect with no row fails the
//! table test, so a new feature cannot land without cases shown to check it.

use crate::support;

use cri_harness::contract::known::KnownFindings;
use cri_harness::cri::Endpoint;
use cri_harness::mock::{Defect, Latency, MockRuntime};
use cri_harness::runner::{CaseOutcome, Interrupt, Target};
use cri_harness::suite;

/// Each defect, and the embedded cases (`suite/case`) that must catch it.
const CAUGHT_BY: &[(Defect, &[&str])] = &[
    (
        Defect::StopUnknownContainerNotFound,
        &["conformance-container/stopping-an-unknown-container-id-succeeds"],
    ),
    (
        Defect::RemoveAbsentImageNotFound,
        &[
            "conformance-images/removing-an-absent-image-succeeds",
            "conformance-images/removals-of-one-image-at-once-all-succeed",
        ],
    ),
    (
        Defect::ConcurrentRemoveImageFails,
        &["conformance-images/removals-of-one-image-at-once-all-succeed"],
    ),
    (
        Defect::RemovedImageStillListed,
        &[
            "conformance-images/an-image-is-neither-listed-nor-answers-once-removed",
            "conformance-images/removals-of-one-image-at-once-all-succeed",
            "conformance-images/removing-by-one-registrys-name-removes-the-other-registrys",
        ],
    ),
    (
        Defect::ContainerImageIdDiffers,
        &[
            "conformance-images/one-image-has-one-id-in-every-api",
            "conformance-images/one-image-from-two-registries-is-one-id",
        ],
    ),
    (
        Defect::RecursiveReadOnlyShallow,
        &["conformance-mounts/a-recursive-read-only-mount-makes-its-submounts-read-only"],
    ),
    (
        Defect::RecursiveReadOnlyAnyPropagation,
        &[
            "conformance-mounts/a-recursive-read-only-mount-with-bidirectional-propagation-is-refused",
            "conformance-mounts/a-recursive-read-only-mount-with-host-to-container-propagation-is-refused",
        ],
    ),
    (
        Defect::ImageVolumeWritable,
        // Accepting readonly false breaks a should clause, a warning: the must case catches it.
        &["conformance-mounts/an-image-volume-shows-the-image-read-only-and-executable"],
    ),
    (
        Defect::ImageVolumeNoexec,
        &["conformance-mounts/an-image-volume-shows-the-image-read-only-and-executable"],
    ),
    (
        Defect::ImageSubPathIgnored,
        // Accepting a missing sub path breaks a should clause, a warning: the must case catches it.
        &["conformance-mounts/an-image-volume-sub-path-mounts-that-directory"],
    ),
    (
        Defect::OomReportedAsError,
        &["conformance-container/a-process-past-its-memory-limit-is-oom-killed"],
    ),
    (
        Defect::RuntimeConfigWithoutLinux,
        &["conformance-runtime-features/runtime-config-names-a-cgroup-driver-that-stays"],
    ),
    (
        Defect::ContainerEventDropped,
        &[
            "conformance-runtime-features/container-events-report-each-transition-in-order",
            "conformance-runtime-features/a-container-that-ends-by-itself-reports-its-stop",
        ],
    ),
    (
        Defect::ContainerEventStale,
        &["conformance-runtime-features/container-events-report-each-transition-in-order"],
    ),
    (
        Defect::UndeclaredMetric,
        &["conformance-runtime-features/a-running-pods-metrics-name-declared-descriptors"],
    ),
    (
        Defect::UsernsIgnored,
        &["conformance-security/a-pod-user-namespace-maps-the-containers-ids"],
    ),
    (
        Defect::UnmappedUsernsRootAccepted,
        &["conformance-security/a-user-namespace-leaving-root-unmapped-is-refused"],
    ),
    (
        Defect::StrictGroupsMerged,
        &["conformance-security/strict-policy-keeps-the-images-groups-out"],
    ),
    (
        Defect::ContainerUserGroupsMissing,
        &[
            "conformance-security/merge-policy-joins-the-images-groups-to-the-supplemental-ones",
            "conformance-security/strict-policy-keeps-the-images-groups-out",
        ],
    ),
    (
        Defect::SeccompIgnored,
        &[
            "conformance-security/the-runtime-default-seccomp-profile-filters",
            "conformance-security/a-localhost-seccomp-profile-denies-its-calls",
            "conformance-security/a-nil-seccomp-profile-is-unconfined",
        ],
    ),
    (
        Defect::UpdatedResourcesNotReported,
        &["kubelet-gates/a-resized-container-is-updated-in-place"],
    ),
    (
        Defect::ListContainerStatsIgnoresLabelFilter,
        &["conformance-stats/listing-stats-by-label-answers-only-the-labelled-containers"],
    ),
    (
        Defect::ListSandboxDropsStateFilter,
        &["conformance-sandbox/list-and-status-filter-by-state-label-and-id-prefix"],
    ),
    (
        Defect::StreamItemRepeated,
        &[
            "conformance-list-streaming/streamed-sandboxes-are-those-listed-each-once",
            "conformance-list-streaming/streamed-containers-are-those-listed-each-once",
            "conformance-list-streaming/streamed-container-stats-are-those-listed-each-once",
            "conformance-list-streaming/streamed-sandbox-stats-are-those-listed-each-once",
            "conformance-list-streaming/streamed-sandbox-metrics-are-those-listed-each-once",
            "conformance-list-streaming/streamed-images-are-those-listed-each-once",
        ],
    ),
    (
        Defect::SandboxResourcesRefused,
        &["conformance-runtime-features/a-running-pods-resources-are-taken-after-a-resize"],
    ),
    (
        Defect::ImageFsWithoutUsage,
        &["conformance-images/the-image-filesystem-reports-what-it-uses"],
    ),
    (
        Defect::CheckpointArchiveMissing,
        &["conformance-runtime-features/a-running-container-is-checkpointed-into-the-archive-asked-for"],
    ),
    (
        Defect::StoppedHostNetworkSandboxStaysReady,
        &[
            "network-teardown/host-network-pod-gets-no-teardown",
            "network-teardown/without-a-spec-host-network-comes-from-the-sandbox-status",
        ],
    ),
    (
        // Only every other mock made with it has it: the first one does, and this binary
        // makes no other mock with it before this row's.
        Defect::RacyStopOfExitedContainer,
        &["conformance-container/stop-and-remove-are-idempotent"],
    ),
];

/// The outcome of each of `cases` on a fresh mock with `defects`, served on a unix socket and
/// run as a real runtime would be: its calls take a registry's time, as `cri-harness mock`'s do.
async fn outcomes(defects: &[Defect], cases: &[&str]) -> Vec<(String, CaseOutcome)> {
    run_on(defects, cases, None)
        .await
        .cases
        .into_iter()
        .map(|c| (format!("{}/{}", c.suite, c.case), c.outcome))
        .collect()
}

/// The whole report of a run of `cases` on a fresh mock with `defects`, with `known` findings.
async fn run_on(
    defects: &[Defect],
    cases: &[&str],
    known: Option<KnownFindings>,
) -> cri_harness::report::model::RunReport {
    let dir = tempfile::tempdir().unwrap();
    let server = MockRuntime::with_defects(defects.iter().copied())
        .with_latency(Latency::REGISTRY)
        .serve_unix(&dir.path().join("mock.sock"))
        .await
        .unwrap();
    let endpoint = Endpoint::Unix(server.path().to_path_buf());
    let suites = suite::load_embedded()
        .suites
        .into_iter()
        .filter_map(|mut s| {
            let name = s.name.clone();
            s.cases
                .retain(|c| cases.contains(&format!("{name}/{}", c.name).as_str()));
            (!s.cases.is_empty()).then_some(s)
        })
        .collect::<Vec<_>>();
    let found: usize = suites.iter().map(|s| s.cases.len()).sum();
    assert_eq!(
        found,
        cases.len(),
        "every case of the row exists: {cases:?}"
    );
    let target = Target::Endpoint {
        runtime: endpoint.clone(),
        image: endpoint,
    };
    let scratch = tempfile::tempdir().unwrap();
    let mut config = support::run_config(target, suites, "defects", scratch.path());
    config.known = known;
    let report = cri_harness::runner::run(config, Interrupt::new(), None).await;
    assert!(report.aborted.is_none(), "{:?}", report.aborted);
    report
}

#[test]
fn every_defect_has_cases_that_must_catch_it() {
    for defect in Defect::ALL {
        assert!(
            CAUGHT_BY
                .iter()
                .any(|(d, cases)| d == defect && !cases.is_empty()),
            "{defect:?} has no row in CAUGHT_BY"
        );
    }
}

#[tokio::test]
async fn each_defect_fails_its_cases_and_a_sound_mock_passes_them() {
    for (defect, cases) in CAUGHT_BY {
        for (case, outcome) in outcomes(&[*defect], cases).await {
            assert!(
                matches!(outcome, CaseOutcome::Failed(_)),
                "{defect:?}: {case} should fail at an expectation, got {outcome:?}"
            );
        }
        for (case, outcome) in outcomes(&[], cases).await {
            assert!(
                matches!(outcome, CaseOutcome::Passed),
                "without {defect:?}: {case} should pass, got {outcome:?}"
            );
        }
    }
}

#[tokio::test]
async fn a_sandbox_still_ready_after_its_stop_succeeded_breaks_the_runtimes_clause_not_the_kills() {
    // The manager's kill did its part (every stop answered success), so the break is the
    // runtime's: listed as a finding of `sandbox.stop.not-ready`, the case is known.
    let case = "network-teardown/host-network-pod-gets-no-teardown";
    let defect = [Defect::StoppedHostNetworkSandboxStaysReady];
    let report = run_on(&defect, &[case], None).await;
    let [only] = &report.cases[..] else {
        panic!("one case: {:?}", report.cases)
    };
    assert!(
        matches!(&only.outcome, CaseOutcome::Failed(why) if why.contains("sandboxes still ready")),
        "{:?}",
        only.outcome
    );
    assert_eq!(only.clause.as_deref(), Some("sandbox.stop.not-ready"));

    let listed = format!(
        "- runtime: cri-harness-mock\n  versions: \">=0.0.0\"\n  findings:\n    - {{case: {case}, clause: sandbox.stop.not-ready, reference: upstream#1}}\n"
    );
    let known = KnownFindings::parse("test", &listed).unwrap();
    let report = run_on(&defect, &[case], Some(known)).await;
    assert!(
        matches!(&report.cases[0].outcome, CaseOutcome::Known { finding, .. } if finding == "upstream#1"),
        "{:?}",
        report.cases[0].outcome
    );
    assert!(report.success());
}
