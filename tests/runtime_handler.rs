//! A RuntimeClass handler that cannot run pods, on the real runtime: with
//! `CRIH_FAILING_HANDLER` set (CI sets `runsc`, which `ci/containerd.sh` configures and which
//! fails on this kernel, see containerd-cri-facts.md), the core conformance set runs against
//! it. The run ends, every case that makes a sandbox fails in the runtime's own words, the
//! leak reports account for exactly what the runtime kept of the run, and once that is reaped
//! outside CRI the same set passes on the default handler. Under `CI=true` the test fails
//! without the variables; elsewhere it is ignored unless asked for (`--ignored`).

use std::collections::{BTreeMap, BTreeSet};
mod support;
use std::time::Duration;

use cri_harness::cri::{self, labels, ConnectOptions, Endpoint};
use cri_harness::runner::{
    self, snapshot, CaseOutcome, Filter, Interrupt, RunConfig, SkipWhy, Target,
};
use cri_harness::suite;

fn config(
    endpoint: &Endpoint,
    run_id: &str,
    handler: &str,
    snapshots: &std::path::Path,
) -> RunConfig {
    RunConfig {
        target: Target::Endpoint {
            runtime: endpoint.clone(),
            image: endpoint.clone(),
        },
        suites: suite::load_embedded().suites,
        filter: Filter {
            tags: vec!["core".to_owned()],
            ..Filter::default()
        },
        parallel: 2,
        case_timeout: Duration::from_secs(30),
        cleanup_timeout: Duration::from_secs(30),
        connect: ConnectOptions::default(),
        snapshot_dir: snapshots.to_owned(),
        snapshots: snapshot::Policy::default(),
        run_id: run_id.to_owned(),
        runtime_handler: handler.to_owned(),
        work_dir: snapshots.join("work"),
        online: false,
        pulled_record: None,
        kubelet: Default::default(),
        feature_gates: Default::default(),
        strict: false,
        attempts: Default::default(),
        mock_profile: Default::default(),
        share_sandboxes: false,
        known: Some(
            cri_harness::contract::known::KnownFindings::read(
                &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("findings"),
            )
            .unwrap(),
        ),
        images: Default::default(),
        mock_registries: Default::default(),
    }
}

/// The embedded cases that make a sandbox: every one whose steps include `run_sandbox`.
fn sandbox_cases() -> BTreeSet<String> {
    suite::load_embedded()
        .suites
        .iter()
        .flat_map(|s| {
            s.cases
                .iter()
                .filter(|c| c.steps.iter().any(|step| step.name() == "run_sandbox"))
                .map(move |c| c.full_name(s))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs a real CRI runtime with a failing handler (CRIH_FAILING_HANDLER, _ROOT)"
)]
async fn a_handler_that_cannot_run_pods_fails_each_case_in_its_words_and_the_default_one_passes() {
    let endpoint = support::need::runtime();
    let handler = support::need::env(
        "CRIH_FAILING_HANDLER",
        "a runtime handler that cannot run pods",
    );
    let root = support::need::env(
        "CRIH_FAILING_HANDLER_ROOT",
        "that handler's state directory",
    );
    let endpoint: Endpoint = endpoint.parse().expect("a valid endpoint");
    let scratch = tempfile::tempdir().unwrap();
    let run_id = format!("rh{}", std::process::id());

    // Bounded: a handler that hangs instead of failing must not hang the test.
    let report = tokio::time::timeout(
        Duration::from_secs(600),
        runner::run(
            config(&endpoint, &run_id, &handler, scratch.path()),
            Interrupt::new(),
            None,
        ),
    )
    .await
    .expect("the run against the failing handler ends");
    assert_eq!(report.runtime_handler, handler);
    assert!(report.aborted.is_none(), "{:?}", report.aborted);
    let mut failed = 0;
    let sandbox_cases = sandbox_cases();
    for case in &report.cases {
        let name = case.full_name();
        if !sandbox_cases.contains(&name) {
            continue;
        }
        match &case.outcome {
            // Failed where running the sandbox is the case's subject, an error (no verdict on
            // the rest) where it is the setup.
            CaseOutcome::Failed(reason) | CaseOutcome::Error(reason) => {
                failed += 1;
                // The contract names no code for a handler that cannot run: any error will
                // do, as long as it is RunPodSandbox's and carries the runtime's message.
                let words = reason
                    .split_once("`run_sandbox`: CRI RunPodSandbox on ")
                    .map(|(_, rest)| rest);
                assert!(
                    words
                        .is_some_and(|rest| rest.split(": ").nth(2).is_some_and(|m| !m.is_empty())),
                    "{name} should fail at RunPodSandbox in the runtime's words: {reason}"
                );
            }
            CaseOutcome::Skipped(skip) if skip.why == SkipWhy::MockOnly => {}
            // A case that needs an optional feature this handler (or the runtime) does not
            // report skips before it makes a sandbox, naming the feature.
            CaseOutcome::Skipped(skip)
                if skip.why == SkipWhy::RuntimeLacks
                    && skip.reason.starts_with("the runtime lacks ") => {}
            other => panic!("{name} should fail on {handler}: {other:?}"),
        }
    }
    assert!(
        failed >= 10,
        "only {failed} cases made a sandbox on {handler}"
    );
    // What the runtime keeps of the sandboxes it could not start is its own choice (containerd
    // with runsc here keeps them and cannot remove them); whatever it keeps, the leak reports
    // account for exactly it, and where it keeps nothing no case claims a leak.
    let client = cri::connect(&endpoint, &endpoint, &ConnectOptions::default())
        .await
        .unwrap();
    let selector = BTreeMap::from([(labels::RUN_ID.to_owned(), run_id.clone())]);
    let left = client
        .list_pod_sandbox(Some(cri::v1::PodSandboxFilter {
            label_selector: selector.clone(),
            ..Default::default()
        }))
        .await
        .unwrap();
    let left_containers = client
        .list_containers(Some(cri::v1::ContainerFilter {
            label_selector: selector.clone(),
            ..Default::default()
        }))
        .await
        .unwrap();
    let reported: usize = report
        .cases
        .iter()
        .filter_map(|c| match &c.outcome {
            CaseOutcome::Failed(reason) | CaseOutcome::Error(reason) => Some(reason.as_str()),
            _ => None,
        })
        .filter_map(|reason| {
            let (_, rest) = reason.split_once("cleanup left ")?;
            rest.split_once(" objects on the runtime after ")?
                .0
                .parse::<usize>()
                .ok()
        })
        .sum();
    assert_eq!(
        reported,
        left.len() + left_containers.len(),
        "the leak reports account for what {handler} kept: {left:?} {left_containers:?}"
    );

    // Reap them outside CRI, as an operator would, then through CRI.
    for sandbox in &left {
        let _ = std::process::Command::new(&handler)
            .args(["--root", &root, "delete", "-force", &sandbox.id])
            .status();
        client
            .remove_pod_sandbox(&sandbox.id)
            .await
            .unwrap_or_else(|err| panic!("sandbox {} stays after reaping: {err}", sandbox.id));
    }

    // The cgroup parents of the sandboxes that could not be removed go now too.
    cri_harness::runner::host::remove_run_cgroups(&run_id).unwrap();

    // A later run on the default handler is not blamed for any of it.
    let again = runner::run(
        config(&endpoint, &format!("{run_id}d"), "", scratch.path()),
        Interrupt::new(),
        None,
    )
    .await;
    let wrong: Vec<String> = again
        .cases
        .iter()
        .filter(|c| match &c.outcome {
            CaseOutcome::Passed => false,
            CaseOutcome::Skipped(skip) => {
                !(matches!(
                    skip.why,
                    SkipWhy::MockOnly | SkipWhy::Environment | SkipWhy::HostLacks
                ) || (skip.why == SkipWhy::RuntimeLacks
                    && skip.reason.starts_with("the runtime lacks ")))
            }
            // The default handler's run applies the runtime's known findings.
            CaseOutcome::Known { .. } | CaseOutcome::Warning(_) => false,
            // Run once, no case can be flaky.
            CaseOutcome::Failed(_)
            | CaseOutcome::Error(_)
            | CaseOutcome::Flaky(_)
            | CaseOutcome::Interrupted(_) => true,
        })
        .map(|c| format!("{}: {:?}", c.full_name(), c.outcome))
        .collect();
    assert!(
        wrong.is_empty(),
        "on the default handler:\n{}",
        wrong.join("\n")
    );
}
