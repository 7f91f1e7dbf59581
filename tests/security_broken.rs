//! The security cases catch a runtime that breaks their rule, on the real runtime named by
//! `CONTAINER_RUNTIME_ENDPOINT` (under `CI=true` the test fails without it; elsewhere it is
//! ignored unless asked for (`--ignored`)).
//!
//! Each case tagged `security` is run twice broken:
//! - as against a runtime that ignores the security context: the case's steps lose every
//!   security setting (the container's and the pod's `security:` maps, host namespaces,
//!   a shared PID namespace, mount propagation), while its expectations stay. Every case that
//!   sets something must then fail, at a checking step, in that step's words.
//! - with its first check's expectation inverted (a command expected to fail is expected to
//!   succeed, and the other way round; an expected CreateContainer error is expected not to
//!   happen; a log line expected on one stream is expected on the other). Every case must then
//!   fail at that very step.
//!
//! A mutant that fails elsewhere (at a setup step, or in cleanup) does not count: it would
//! show a broken run, not a live check.

use std::time::Duration;

mod support;

use cri_harness::contract::Level;
use cri_harness::cri::Endpoint;
use cri_harness::runner::{self, CaseOutcome, Interrupt, Target};
use cri_harness::suite::step::check_log::Stream;
use cri_harness::suite::step::exec_sync::ExecExpect;
use cri_harness::suite::step::Step;
use cri_harness::suite::{self, Case, Suite};

/// The steps whose failure means a check caught the broken rule.
const CHECKS: &[&str] = &[
    "exec_sync",
    "create_container",
    "run_sandbox",
    "check_host_path",
    "check_host_mount",
    "check_log",
    "connect",
];

/// The embedded suites tagged `security`.
fn security_suites() -> Vec<Suite> {
    suite::load_embedded()
        .suites
        .into_iter()
        .filter(|s| s.tags.iter().any(|t| t == "security"))
        .collect()
}

/// The case as a runtime that ignores every security setting (and every mount's propagation,
/// taking each as private) would run it; `None` when the case sets nothing.
fn ignoring_security(case: &Case) -> Option<Case> {
    let mut broken = case.clone();
    for step in &mut broken.steps {
        match step {
            Step::CreateContainer(create) => {
                create.security = Default::default();
                for mount in &mut create.mounts {
                    mount.propagation = Default::default();
                }
            }
            Step::RunSandbox(run) => {
                run.security = Default::default();
                run.host_pid = false;
                run.host_ipc = false;
                run.host_network = false;
                run.share_pid = false;
                run.userns = None;
            }
            _ => {}
        }
    }
    (broken.steps != case.steps).then_some(broken)
}

/// The case with its first check's expectation inverted, and that step's index.
fn inverted(case: &Case) -> Option<(Case, usize)> {
    let mut broken = case.clone();
    for (index, step) in broken.steps.iter_mut().enumerate() {
        match step {
            Step::ExecSync(exec) if exec.expect.error.is_none() => {
                exec.expect = if exec.expect.exit_code == 0 {
                    ExecExpect {
                        exit_code: 1,
                        ..ExecExpect::default()
                    }
                } else {
                    ExecExpect::default()
                };
                return Some((broken, index));
            }
            Step::CreateContainer(create) if create.expect.error.is_some() => {
                create.expect.error = None;
                // Expected to succeed now, it is still the case's expectation (its clause),
                // not a setup whose failure would be an error of the case.
                broken.step_clauses[index] = case.clause_of(index).map(str::to_owned);
                return Some((broken, index));
            }
            Step::RunSandbox(run) if run.expect.error.is_some() => {
                run.expect.error = None;
                broken.step_clauses[index] = case.clause_of(index).map(str::to_owned);
                return Some((broken, index));
            }
            Step::CheckLog(check) if !check.expect.lines.is_empty() => {
                let line = &mut check.expect.lines[0];
                line.stream = match line.stream {
                    Stream::Stdout => Stream::Stderr,
                    Stream::Stderr => Stream::Stdout,
                };
                // The wrong line never comes: fail soon rather than at the default bound.
                check.within_ms = check.within_ms.min(2_000);
                return Some((broken, index));
            }
            // The harness's own host side: the mount it made is said to be otherwise.
            Step::CheckHostMount(check) => {
                let expect = &mut check.expect;
                if let Some(propagation) = &expect.propagation {
                    let other = if propagation == "shared" {
                        "private"
                    } else {
                        "shared"
                    };
                    expect.propagation = Some(other.to_owned());
                } else {
                    expect.mount_point = Some(!expect.mount_point.unwrap_or(true));
                }
                return Some((broken, index));
            }
            _ => {}
        }
    }
    None
}

/// Which way a case is broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mutation {
    IgnoringSecurity,
    Inverted,
}

/// Of each mutant: its name, the step it must fail at (any check for `IgnoringSecurity`) and
/// its case's clause.
type Expected = Vec<(String, Option<usize>, Option<String>)>;

/// The suites with each case broken `mutation`'s way, and what each mutant must do. One
/// mutation per run: two mutants of one case would share its fixed host ports if they ran at
/// once.
fn mutants(suites: &[Suite], mutation: Mutation) -> (Vec<Suite>, Expected) {
    let mut expected = Vec::new();
    let mut out = Vec::new();
    for suite in suites {
        let mut mutated = suite.clone();
        mutated.cases.clear();
        for case in &suite.cases {
            let broken = match mutation {
                Mutation::IgnoringSecurity => ignoring_security(case).map(|c| (c, None)),
                Mutation::Inverted => inverted(case).map(|(c, index)| (c, Some(index))),
            };
            if let Some((broken, index)) = broken {
                expected.push((broken.full_name(suite), index, broken.clause.clone()));
                mutated.cases.push(broken);
            }
        }
        out.push(mutated);
    }
    (out, expected)
}

#[test]
fn every_security_case_has_a_mutant_of_some_kind() {
    let suites = security_suites();
    assert!(!suites.is_empty(), "no suite is tagged security");
    for suite in &suites {
        for case in &suite.cases {
            assert!(
                ignoring_security(case).is_some() || inverted(case).is_some(),
                "{} cannot be broken by either mutation, so nothing shows it checks",
                case.full_name(suite)
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs a real CRI runtime (CONTAINER_RUNTIME_ENDPOINT)"
)]
async fn a_runtime_that_breaks_a_security_rule_fails_the_case_at_its_check() {
    let endpoint = support::need::runtime();
    let endpoint: Endpoint = endpoint.parse().expect("a valid endpoint");
    let suites = security_suites();
    let mut failed = 0;
    for mutation in [Mutation::IgnoringSecurity, Mutation::Inverted] {
        failed += run_broken(&endpoint, &suites, mutation).await;
    }
    assert!(failed >= 60, "only {failed} broken cases ran and failed");
}

/// Runs the suites broken `mutation`'s way; checks each mutant failed where it must, and
/// says how many did.
async fn run_broken(endpoint: &Endpoint, suites: &[Suite], mutation: Mutation) -> usize {
    let (suites, expected) = mutants(suites, mutation);
    let scratch = tempfile::tempdir().unwrap();
    let run_id = format!("broken{}{}", std::process::id(), mutation as u8);
    let config = support::run_config(
        Target::Endpoint {
            runtime: endpoint.clone(),
            image: endpoint.clone(),
        },
        suites,
        &run_id,
        scratch.path(),
    );
    let report = tokio::time::timeout(
        Duration::from_secs(600),
        runner::run(config, Interrupt::new(), None),
    )
    .await
    .expect("the broken runs end");
    assert!(report.aborted.is_none(), "{:?}", report.aborted);
    assert_eq!(report.cases.len(), expected.len());
    let mut failed = 0;
    let mut live = Vec::new();
    for (case, (name, index, clause)) in report.cases.iter().zip(&expected) {
        let name = format!("{name} ({mutation:?})");
        assert_eq!(format!("{} ({mutation:?})", case.full_name()), name);
        match &case.outcome {
            CaseOutcome::Failed(reason) => {
                failed += 1;
                assert!(
                    !reason.contains("cleanup left"),
                    "{name}: the broken run left something: {reason}"
                );
                let step = failed_step(reason)
                    .unwrap_or_else(|| panic!("{name}: no failing step named: {reason}"));
                match index {
                    Some(index) => assert!(
                        reason.contains(&format!("step {} `", index + 1)),
                        "{name} should fail at its inverted step {}: {reason}",
                        index + 1
                    ),
                    None => assert!(
                        CHECKS.contains(&step),
                        "{name} should fail at a check, not at `{step}`: {reason}"
                    ),
                }
            }
            // Cases for a feature the host lacks (an LSM) skip broken as they skip whole.
            CaseOutcome::Skipped(_) => {}
            // A case at observed level (a rule the contract leaves to the runtime, such as the
            // deprecated seccomp path) cannot fail: it catches the broken rule as a note at the
            // case's clause, at a check (at the inverted step, for an inverted mutant).
            CaseOutcome::Passed => {
                let caught = case.notes.iter().any(|note| {
                    note.level == Level::Observed
                        && clause.as_deref() == Some(note.clause.as_str())
                        && noted_step(&note.message).is_some_and(|(at, step)| match index {
                            Some(index) => at == index + 1,
                            None => CHECKS.contains(&step),
                        })
                });
                if caught {
                    failed += 1;
                } else {
                    live.push(name);
                }
            }
            // A case at should level (a refusal the contract recommends) catches the broken
            // rule as a warning, at its check.
            CaseOutcome::Warning(reason) => {
                failed += 1;
                let step = reason
                    .strip_prefix("step ")
                    .and_then(|rest| rest.split_once(" `"))
                    .and_then(|(_, rest)| rest.split_once('`'))
                    .map(|(step, _)| step)
                    .unwrap_or_else(|| panic!("{name}: no step named: {reason}"));
                assert!(
                    CHECKS.contains(&step),
                    "{name} should warn at a check, not at `{step}`: {reason}"
                );
            }
            // An error is a broken run, and a known finding would let the rule go; run once, no
            // case is flaky.
            other @ (CaseOutcome::Error(_)
            | CaseOutcome::Known { .. }
            | CaseOutcome::Flaky(_)
            | CaseOutcome::Interrupted(_)) => {
                panic!("{name}: broken, it ended {other:?}, not failed at a check")
            }
        }
    }
    assert!(
        live.is_empty(),
        "passed broken, so their checks do not hold the rule: {live:#?}"
    );
    failed
}

/// The step a note names, and its number: `step N `NAME`: ...`.
fn noted_step(message: &str) -> Option<(usize, &str)> {
    let (number, rest) = message.strip_prefix("step ")?.split_once(" `")?;
    let (name, _) = rest.split_once('`')?;
    Some((number.parse().ok()?, name))
}

/// The step a failure names: `..., step N `NAME`: ...`.
fn failed_step(reason: &str) -> Option<&str> {
    let (_, rest) = reason.split_once(", step ")?;
    let (_, rest) = rest.split_once(" `")?;
    rest.split_once('`').map(|(name, _)| name)
}
