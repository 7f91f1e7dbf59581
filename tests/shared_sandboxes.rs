//! `run --share-sandboxes` over the wire, against the mock served on a unix socket as a runtime
//! would be: cases that only need a home for their containers take turns in one sandbox, each
//! still sees only its own containers, and the run leaves nothing behind.

use std::collections::BTreeMap;

use cri_harness::cri::control::GetCallLogRequest;
use cri_harness::runner::{CaseOutcome, Target};

use crate::support;

/// Three cases that may share (each lists the running containers it can see and expects only
/// its own), and one that reads its sandbox's status, so runs its own.
const SUITE: &str = r#"
suite: sharing
about: cases that take turns in a shared sandbox
cases:
  - name: first
    steps: &alone
      - run_sandbox: {as: sb, pod: web}
      - create_container: {as: app, sandbox: sb}
      - start_container: app
      - list_containers: {expect: {containers: [app]}}
  - name: second
    steps: *alone
  - name: third
    steps: *alone
  - name: own
    steps:
      - run_sandbox: {as: sb, pod: web}
      - sandbox_status: {sandbox: sb, expect: {state: ready}}
"#;

/// How many times the mock was asked for `method`.
fn count(calls: &[cri_harness::cri::control::CallRecord], method: &str) -> usize {
    calls.iter().filter(|c| c.method.ends_with(method)).count()
}

async fn run(share: bool) -> (Vec<(String, CaseOutcome)>, usize, Vec<String>) {
    let (_dir, server, client, mut control) = support::mock_on_socket().await;
    let scratch = tempfile::tempdir().unwrap();
    let suite = cri_harness::suite::parse("sharing.yaml", SUITE).unwrap();
    let endpoint = server.endpoint().clone();
    let mut config = support::run_config(
        Target::Endpoint {
            runtime: endpoint.clone(),
            image: endpoint,
        },
        vec![suite],
        "sharing",
        scratch.path(),
    );
    config.parallel = 1;
    config.share_sandboxes = share;
    let outcomes = support::run_outcomes(config).await;
    let calls = control
        .get_call_log(GetCallLogRequest { clear: false })
        .await
        .unwrap()
        .into_inner()
        .calls;
    let left = support::labelled(&client, "sharing").await;
    (outcomes, count(&calls, "RunPodSandbox"), left)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_sharing_cases_need_at_most_two_sandboxes_pass_and_leave_nothing() {
    let (outcomes, runs, left) = run(true).await;
    let passed: BTreeMap<String, bool> = outcomes
        .iter()
        .map(|(name, outcome)| (name.clone(), *outcome == CaseOutcome::Passed))
        .collect();
    assert!(passed.values().all(|p| *p), "{outcomes:?}");
    assert_eq!(passed.len(), 4);
    // At one worker at most two cases are alive (one cleaning up), so the three sharing
    // cases need at most two sandboxes between them; the fourth runs its own.
    assert!(
        runs <= 3,
        "{runs} RunPodSandbox calls for 3 sharing cases and 1 alone"
    );
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_option_each_case_runs_its_own_sandbox() {
    let (outcomes, runs, left) = run(false).await;
    assert!(
        outcomes.iter().all(|(_, o)| *o == CaseOutcome::Passed),
        "{outcomes:?}"
    );
    assert_eq!(runs, 4);
    assert!(left.is_empty(), "left behind: {left:?}");
}
