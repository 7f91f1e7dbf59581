//! Every embedded suite against a real runtime, when CI (or you) export its endpoint in
//! `CONTAINER_RUNTIME_ENDPOINT` (`ci/containerd.sh up` prints it): each case that does not need
//! the mock's control service must pass, the mock-only ones must be skipped saying so, each
//! manager case must equal its runtime-neutral reference compiled into the binary (the same the
//! mock's results equal), and nothing may be left behind.
//! A failure listed in `findings/` for the runtime's version is `known`, not a failure; a
//! `should` clause broken is a warning, printed. It runs under `CI=true` and fails there without
//! the variable; elsewhere it is ignored unless asked for (`--ignored`).

mod support;
use std::io::Write as _;
use std::time::Duration;

use cri_harness::cri::{self, ConnectOptions, Endpoint};
use cri_harness::manager::KubeletProfile;
use cri_harness::runner::{
    self, snapshot, CaseOutcome, Filter, Interrupt, RunConfig, SkipWhy, Target,
};
use cri_harness::suite;

/// The optional CRI features a runtime may lack, as a skip names them: those read from
/// `Status`, those whose RPC may answer Unimplemented, and those a step sees missing from an
/// answer (an empty `image_id`, an image mount read as a host path).
const OPTIONAL_FEATURES: &[&str] = &[
    "user_namespaces",
    "recursive_read_only_mounts",
    "supplemental_groups_policy",
    "runtime_config",
    "container_events",
    "pod_sandbox_metrics",
    "pod_sandbox_stats",
    "list_streaming",
    "sandbox_resources",
    "checkpoint",
    "CRIU",
    "image_volumes",
    "image volumes",
    "image_id",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs a real CRI runtime (CONTAINER_RUNTIME_ENDPOINT)"
)]
async fn every_embedded_suite_passes_on_the_real_runtime_and_leaves_nothing() {
    let endpoint = support::need::runtime();
    let endpoint: Endpoint = endpoint.parse().expect("a valid endpoint");
    let loaded = suite::load_embedded();
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let scratch = tempfile::tempdir().unwrap();
    let known = cri_harness::contract::known::KnownFindings::read(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("findings"),
    )
    .unwrap();
    let run_id = format!("it{}", std::process::id());
    let config =
        |kubelet: KubeletProfile, suites: Vec<suite::Suite>, work: &str, share: bool| RunConfig {
            target: Target::Endpoint {
                runtime: endpoint.clone(),
                image: endpoint.clone(),
            },
            suites,
            filter: Filter::default(),
            parallel: 2,
            case_timeout: Duration::from_secs(60),
            cleanup_timeout: Duration::from_secs(30),
            connect: ConnectOptions::default(),
            snapshot_dir: scratch.path().join(work).join("snapshots"),
            snapshots: snapshot::Policy::default(),
            run_id: run_id.clone(),
            runtime_handler: String::new(),
            // Its own host directory: tests of this binary run at once under fixed run ids.
            work_dir: scratch.path().join(work).join("work"),
            online: false,
            pulled_record: None,
            kubelet,
            feature_gates: Default::default(),
            strict: false,
            attempts: Default::default(),
            mock_profile: Default::default(),
            share_sandboxes: share,
            known: Some(known.clone()),
            images: Default::default(),
            mock_registries: Default::default(),
        };
    // Every case under the seed's rules, then the cases that state today's kubelet under its
    // rules: between the two runs each of those passes once.
    let current_only: Vec<suite::Suite> = loaded
        .suites
        .iter()
        .cloned()
        .map(|mut s| {
            s.cases
                .retain(|c| c.kubelet == Some(KubeletProfile::Current));
            s
        })
        .filter(|s| !s.cases.is_empty())
        .collect();
    // The conformance suites again, with the cases that only need a home for their containers
    // sharing sandboxes (`--share-sandboxes`): each must end as it does in a sandbox of its own.
    let conformance: Vec<suite::Suite> = loaded
        .suites
        .iter()
        .filter(|s| s.name.starts_with("conformance-"))
        .cloned()
        .collect();
    // The two cases the run must start first on its two workers (`runner::schedule`): the
    // selection is every embedded case, in the suites' order.
    let selected: Vec<(String, &suite::Case)> = loaded
        .suites
        .iter()
        .flat_map(|s| {
            s.cases
                .iter()
                .map(move |c| (format!("{}/{}", s.name, c.name), c))
        })
        .collect();
    let estimates: Vec<_> = selected
        .iter()
        .map(|(_, c)| runner::schedule::estimate(c))
        .collect();
    let mut first_two: Vec<String> = runner::schedule::start_order(&estimates)[..2]
        .iter()
        .map(|&i| selected[i].0.clone())
        .collect();
    first_two.sort();
    let report = runner::run(
        config(KubeletProfile::Seed, loaded.suites.clone(), "seed", false),
        Interrupt::new(),
        None,
    )
    .await;
    assert!(report.aborted.is_none(), "{:?}", report.aborted);
    // The run started its cases in the schedule's order, and reports them in the selection's.
    let mut by_start: Vec<_> = report.cases.iter().collect();
    by_start.sort_by_key(|c| c.timing.started);
    let mut started_first: Vec<String> = by_start[..2].iter().map(|c| c.full_name()).collect();
    started_first.sort();
    assert_eq!(started_first, first_two, "the cases that started first");
    assert!(
        report.cases.windows(2).all(|w| w[0].number < w[1].number),
        "the report keeps the selection's order"
    );
    let current = runner::run(
        config(KubeletProfile::Current, current_only, "current", false),
        Interrupt::new(),
        None,
    )
    .await;
    assert!(current.aborted.is_none(), "{:?}", current.aborted);
    let shared = runner::run(
        config(KubeletProfile::Seed, conformance, "shared", true),
        Interrupt::new(),
        None,
    )
    .await;
    assert!(shared.aborted.is_none(), "{:?}", shared.aborted);
    assert!(shared.errors.is_empty(), "{:?}", shared.errors);
    // The same verdict, case by case, as in a sandbox of its own: it held (a listed finding
    // may pass now and then), it skipped for the same kind of reason, or it ended otherwise.
    let verdict = |o: &CaseOutcome| match o {
        CaseOutcome::Passed | CaseOutcome::Known { .. } | CaseOutcome::Warning(_) => {
            "held".to_owned()
        }
        CaseOutcome::Skipped(skip) => format!("skipped: {:?}", skip.why),
        other => format!("{other:?}"),
    };
    let alone: std::collections::BTreeMap<String, String> = report
        .cases
        .iter()
        .map(|c| (c.full_name(), verdict(&c.outcome)))
        .collect();
    let differ: Vec<String> = shared
        .cases
        .iter()
        .filter(|c| alone.get(&c.full_name()) != Some(&verdict(&c.outcome)))
        .map(|c| format!("{}: {:?}", c.full_name(), c.outcome))
        .collect();
    assert!(
        differ.is_empty(),
        "cases that ended otherwise with shared sandboxes:\n{}",
        differ.join("\n")
    );
    // Skips that say this runtime or host cannot run the case, not that it failed: a runtime
    // lacks an optional feature only as it reports it, and the reason names which.
    let fine_skip = |outcome: &CaseOutcome| match outcome {
        CaseOutcome::Skipped(skip) => match skip.why {
            SkipWhy::MockOnly | SkipWhy::Environment | SkipWhy::HostLacks => true,
            SkipWhy::RuntimeLacks => OPTIONAL_FEATURES
                .iter()
                .any(|f| skip.reason.starts_with(&format!("the runtime lacks {f}"))),
            _ => false,
        },
        _ => false,
    };
    let settled_under_current: std::collections::BTreeSet<String> = current
        .cases
        .iter()
        .filter(|c| c.outcome == CaseOutcome::Passed || fine_skip(&c.outcome))
        .map(|c| c.full_name())
        .collect();

    let mut passed = 0;
    let mut wrong = Vec::new();
    for case in report.cases.iter().chain(&current.cases) {
        match &case.outcome {
            CaseOutcome::Passed => passed += 1,
            // A listed finding, or only a should clause broken: said, not failed.
            CaseOutcome::Known { .. } | CaseOutcome::Warning(_) => {
                let _ = writeln!(
                    std::io::stderr(),
                    "{}: {:?}",
                    case.full_name(),
                    case.outcome
                );
            }
            // Mock-only cases, the environment-dependent ones this offline machine cannot run,
            // and those needing a security module its kernel lacks, skip; everything else must
            // pass.
            outcome if fine_skip(outcome) => {}
            // A case of today's kubelet skips under the seed and is settled in the second run.
            CaseOutcome::Skipped(skip)
                if skip.why == SkipWhy::KubeletProfile
                    && settled_under_current.contains(&case.full_name()) => {}
            other => wrong.push(format!("{}: {other:?}", case.full_name())),
        }
    }
    assert!(
        wrong.is_empty(),
        "cases that did not pass:\n{}",
        wrong.join("\n")
    );
    assert!(passed >= 16, "only {passed} cases ran on the runtime");

    // One runtime-neutral reference per case, compiled in: every manager case that ran
    // compared with it (a difference or a missing one fails the case above), and nothing was
    // written into the snapshot directory.
    for case in report.cases.iter().chain(&current.cases) {
        if let Some(checked) = &case.snapshot {
            assert_eq!(
                checked.status,
                snapshot::SnapshotStatus::Unchanged,
                "{}",
                case.full_name()
            );
        }
    }
    for work in ["seed", "current", "shared"] {
        assert!(!scratch.path().join(work).join("snapshots").exists());
    }

    // The leak sweep, from the outside: nothing carrying this run's label remains.
    let client = cri::connect(&endpoint, &endpoint, &ConnectOptions::default())
        .await
        .unwrap();
    let left = support::labelled(&client, &run_id).await;
    assert!(left.is_empty(), "left behind: {left:?}");
}
