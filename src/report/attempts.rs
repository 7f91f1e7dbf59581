//! A case run more than once (`run --repeat`, `--rerun-failed`): the reports of its attempts
//! combine into one by fixed rules, so the case still has one verdict, and a case that fails
//! only sometimes gets a verdict of its own, `flaky (k of n failed)`.
//!
//! The rules:
//! - An attempt *fails* when its verdict fails a run: failed or error. A warning or a known
//!   finding is an attempt that did not fail.
//! - Skipped attempts do not count (a case skipped on its first attempt is skipped; attempts the
//!   run did not get to are not attempts).
//! - None failed: the case is the first attempt that warned or was known, else the first.
//! - Some failed, not all: the case is `flaky (k of n failed)`, and its other fields are those
//!   of its first attempt that did not fail, with the clause of the first failure.
//! - All failed: the case is failed (error when every attempt erred), `failed in all n
//!   attempts: ` and the reason of the first failed attempt (or of the first, when all erred).
//! - Whatever the verdict, the case's time is the sum of its attempts', and every failed attempt
//!   is listed with its number, verdict and reason, in attempt order.

use std::time::Duration;

use super::model::{AttemptFailure, CaseOutcome, CaseReport, CaseTiming, Verdict};

/// The case's report from its first attempt's report and those of the attempts after it, in
/// order. One attempt is its own report.
pub fn combine(first: CaseReport, later: Vec<CaseReport>) -> CaseReport {
    if later.is_empty() || first.outcome.verdict() == Verdict::Skipped {
        // Run once, or skipped on its first attempt and with it the rest.
        return first;
    }
    let started = first.timing.started;
    let attempts: Vec<CaseReport> = std::iter::once(first).chain(later).collect();
    let total: Duration = attempts.iter().map(|a| a.duration).sum();
    let timing = CaseTiming {
        started,
        cri: attempts.iter().map(|a| a.timing.cri).sum(),
        calls: attempts.iter().map(|a| a.timing.calls).sum(),
        waiting: attempts.iter().map(|a| a.timing.waiting).sum(),
        cleanup: attempts.iter().map(|a| a.timing.cleanup).sum(),
    };
    let mut ran: Vec<(u32, CaseReport)> = (1..)
        .zip(attempts)
        .filter(|(_, a)| a.outcome.verdict() != Verdict::Skipped)
        .collect();
    if ran.len() == 1 {
        if let Some((_, only)) = ran.pop() {
            return only;
        }
    }
    let n = ran.len();
    let failures: Vec<AttemptFailure> = ran
        .iter()
        .filter(|(_, a)| a.outcome.verdict().fails())
        .map(|(attempt, a)| AttemptFailure {
            attempt: *attempt,
            verdict: a.outcome.verdict(),
            reason: a.outcome.reason().unwrap_or_default().to_owned(),
            clause: a.clause.clone(),
            stopped: a.stopped.clone(),
        })
        .collect();
    let k = failures.len();
    let first_clause = failures.first().and_then(|f| f.clause.clone());
    let pick = |wanted: &dyn Fn(&CaseReport) -> bool| {
        ran.iter().position(|(_, a)| wanted(a)).unwrap_or_default()
    };
    let mut case = if k == 0 {
        let at = pick(&|a| a.outcome.verdict() != Verdict::Passed);
        ran.swap_remove(at).1
    } else if k < n {
        let at = pick(&|a| !a.outcome.verdict().fails());
        let mut case = ran.swap_remove(at).1;
        case.outcome = CaseOutcome::Flaky(format!("flaky ({k} of {n} failed)"));
        case.clause = first_clause;
        case
    } else {
        let at = pick(&|a| a.outcome.verdict() == Verdict::Failed);
        let mut case = ran.swap_remove(at).1;
        let said = format!(
            "failed in all {n} attempts: {}",
            case.outcome.reason().unwrap_or_default()
        );
        case.outcome = match case.outcome {
            CaseOutcome::Error(_) => CaseOutcome::Error(said),
            _ => CaseOutcome::Failed(said),
        };
        case
    };
    case.duration = total;
    case.timing = timing;
    case.attempts = u32::try_from(n).unwrap_or(u32::MAX);
    case.failures = failures;
    case
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;
    use crate::report::model::SkipWhy;

    fn attempt(outcome: CaseOutcome) -> CaseReport {
        let clause = outcome.verdict().fails().then(|| "cri.stop".to_owned());
        CaseReport {
            suite: "s".into(),
            case: "c".into(),
            source: "suites/s.yaml".into(),
            line: 3,
            number: 1,
            outcome,
            duration: Duration::from_millis(10),
            snapshot: None,
            clause,
            notes: Vec::new(),
            finding_fixed: None,
            environment: None,
            timing: CaseTiming {
                started: Duration::from_millis(1),
                cri: Duration::from_millis(2),
                calls: 3,
                waiting: Duration::from_millis(4),
                cleanup: Duration::ZERO,
            },
            unreachable: false,
            feature_gates: Default::default(),
            attempts: 1,
            failures: Vec::new(),
            stopped: None,
            rpcs: Vec::new(),
        }
    }

    /// `P` pass, `F` failed, `E` error, `W` warning, `K` known, `S` skipped; the attempt's
    /// number is in its reason.
    fn attempts(pattern: &str) -> Vec<CaseReport> {
        pattern
            .chars()
            .zip(1..)
            .map(|(c, n)| {
                let why = format!("why {n}");
                attempt(match c {
                    'P' => CaseOutcome::Passed,
                    'F' => CaseOutcome::Failed(why),
                    'E' => CaseOutcome::Error(why),
                    'W' => CaseOutcome::Warning(why),
                    'K' => CaseOutcome::Known {
                        reason: why,
                        finding: "upstream#1".into(),
                    },
                    'S' => CaseOutcome::skipped(SkipWhy::NotRun, why),
                    _ => unreachable!("pattern letter {c}"),
                })
            })
            .collect()
    }

    #[rstest]
    #[case::one_pass("P", CaseOutcome::Passed, &[])]
    #[case::one_failure_is_itself("F", CaseOutcome::Failed("why 1".into()), &[])]
    #[case::all_pass("PPPP", CaseOutcome::Passed, &[])]
    #[case::a_warning_shows("PWPW", CaseOutcome::Warning("why 2".into()), &[])]
    #[case::a_known_finding_does_not_fail("KPK", CaseOutcome::Known {
        reason: "why 1".into(), finding: "upstream#1".into() }, &[])]
    #[case::one_in_five("FPPPPFPPPP", CaseOutcome::Flaky("flaky (2 of 10 failed)".into()), &[1, 6])]
    #[case::an_error_counts_as_failing("PEP", CaseOutcome::Flaky("flaky (1 of 3 failed)".into()), &[2])]
    #[case::passed_on_rerun("FFP", CaseOutcome::Flaky("flaky (2 of 3 failed)".into()), &[1, 2])]
    #[case::all_failed("FFF", CaseOutcome::Failed("failed in all 3 attempts: why 1".into()), &[1, 2, 3])]
    #[case::a_failure_outranks_errors("EFE", CaseOutcome::Failed("failed in all 3 attempts: why 2".into()), &[1, 2, 3])]
    #[case::all_erred("EE", CaseOutcome::Error("failed in all 2 attempts: why 1".into()), &[1, 2])]
    #[case::skipped_first("S", CaseOutcome::skipped(SkipWhy::NotRun, "why 1"), &[])]
    #[case::attempts_not_run_do_not_count("FPSS", CaseOutcome::Flaky("flaky (1 of 2 failed)".into()), &[1])]
    fn attempts_combine_into_one_verdict(
        #[case] pattern: &str,
        #[case] expected: CaseOutcome,
        #[case] failed: &[u32],
    ) {
        let mut all = attempts(pattern);
        let later = all.split_off(1);
        let case = combine(all.remove(0), later);
        assert_eq!(case.outcome, expected);
        let listed: Vec<u32> = case.failures.iter().map(|f| f.attempt).collect();
        assert_eq!(listed, failed);
        for failure in &case.failures {
            assert_eq!(failure.reason, format!("why {}", failure.attempt));
        }
    }

    #[test]
    fn a_flaky_case_adds_up_its_attempts_and_names_the_first_broken_clause() {
        let mut all = attempts("PFP");
        let later = all.split_off(1);
        let case = combine(all.remove(0), later);
        assert_eq!(case.attempts, 3);
        assert_eq!(case.duration, Duration::from_millis(30));
        assert_eq!(case.timing.started, Duration::from_millis(1));
        assert_eq!(case.timing.calls, 9);
        assert_eq!(case.timing.waiting, Duration::from_millis(12));
        assert_eq!(case.clause.as_deref(), Some("cri.stop"));
        assert_eq!(
            case.failures,
            [AttemptFailure {
                attempt: 2,
                verdict: Verdict::Failed,
                reason: "why 2".into(),
                clause: Some("cri.stop".into()),
                stopped: None,
            }]
        );
    }
}
