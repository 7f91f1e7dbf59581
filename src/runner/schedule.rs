//! The order in which a run on a runtime starts its cases.
//!
//! A case's verdict never depends on when it starts: each case has its own namespace, labels
//! and host directories, and its report keeps its number in the selection. The order only
//! decides how well the run's workers share the node. On a runtime the cases spend most of
//! their time in the runtime's CPU, which all workers share, so the order follows two rules:
//!
//! - **A case that waits runs beside cases that work.** A case whose steps wait out a fixed
//!   time (a command past its exec timeout, a sleep) leaves the CPU idle while it waits. Two
//!   such cases at once leave every core idle. So waiting cases start spread evenly through
//!   the run, the first at once, and each waits while the other workers work.
//! - **The heaviest of the other cases start first** (longest processing time first). The
//!   run ends with its lightest cases (image lookups, calls with unknown ids), which fill the
//!   workers evenly, rather than with one sandbox case on one worker while the others idle.
//!
//! The estimate is the case's steps as written, never a time measured in this or an earlier
//! run, so one selection always starts in one order.

use std::time::Duration;

use crate::suite::step::Step;
use crate::suite::Case;

/// What a case's steps, as written, say about its cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Estimate {
    /// Time its steps wait out by design: exec timeouts and sleeps.
    pub waits: Duration,
    /// Its runtime work, in rough units of 50 ms of the runtime's time (see `work_of`).
    pub work: u32,
}

/// How much runtime work one step is, in rough units of 50 ms of the runtime's time. Measured
/// on containerd 1.6.20 here, per call of the security set: a sandbox's run, stop and removal
/// take about 440 ms in all, a container's start about 100 ms, its creation and removal about
/// 40 ms, an exec about 50 ms; a status, a list or an image lookup about 2 ms, which counts as
/// nothing beside them.
fn work_of(step: &Step) -> u32 {
    match step {
        Step::RunSandbox(_) => 9,
        Step::StartContainer(_) => 2,
        Step::CreateContainer(_)
        | Step::ExecSync(_)
        | Step::Exec(_)
        | Step::Attach(_)
        | Step::PortForward(_) => 1,
        _ => 0,
    }
}

/// The time a step waits out by design.
fn waits_of(step: &Step) -> Duration {
    match step {
        Step::ExecSync(exec) => Duration::from_secs(u64::from(exec.timeout_s)),
        Step::SleepMs(sleep) => Duration::from_millis(sleep.0),
        _ => Duration::ZERO,
    }
}

/// The estimate for one case.
pub fn estimate(case: &Case) -> Estimate {
    case.steps
        .iter()
        .fold(Estimate::default(), |total, step| Estimate {
            waits: total.waits + waits_of(step),
            work: total.work.saturating_add(work_of(step)),
        })
}

/// The waits that count: shorter ones are noise beside a case's calls.
const WAITING: Duration = Duration::from_millis(500);

/// The order to start cases in, as indices into `estimates`: the heaviest working cases first,
/// with the waiting ones (waits of at least `WAITING`, 0.5 s) spread evenly among them, the first
/// at the start. Ties keep the selection's order, so the result depends on the estimates alone.
pub fn start_order(estimates: &[Estimate]) -> Vec<usize> {
    let (mut waiting, mut working): (Vec<usize>, Vec<usize>) =
        (0..estimates.len()).partition(|&i| estimates[i].waits >= WAITING);
    waiting.sort_by_key(|&i| std::cmp::Reverse(estimates[i].waits));
    working.sort_by_key(|&i| std::cmp::Reverse(estimates[i].work));
    let total = estimates.len();
    let mut order = Vec::with_capacity(total);
    let mut working = working.into_iter();
    for (k, &case) in waiting.iter().enumerate() {
        // Waiting case k starts at position k·total/waiting: the working cases before it fill
        // the gap since the one before.
        let at = k * total / waiting.len();
        while order.len() < at {
            match working.next() {
                Some(next) => order.push(next),
                None => break,
            }
        }
        order.push(case);
    }
    order.extend(working);
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    fn working(work: u32) -> Estimate {
        Estimate {
            waits: Duration::ZERO,
            work,
        }
    }

    fn waiting(secs: u64) -> Estimate {
        Estimate {
            waits: Duration::from_secs(secs),
            work: 8,
        }
    }

    #[test]
    fn the_heaviest_working_cases_start_first_and_ties_keep_the_selection_order() {
        let order = start_order(&[working(1), working(9), working(3), working(9)]);
        assert_eq!(order, vec![1, 3, 2, 0]);
    }

    #[test]
    fn waiting_cases_are_spread_through_the_run_and_the_first_starts_at_once() {
        // Two waiting cases among eight: at positions 0 and 4, never side by side.
        let mut cases = vec![working(2); 6];
        cases.insert(3, waiting(1));
        cases.insert(4, waiting(1));
        let order = start_order(&cases);
        assert_eq!(order.len(), 8);
        assert_eq!(order[0], 3);
        assert_eq!(order[4], 4);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..8).collect::<Vec<_>>(), "every case starts once");
    }

    #[test]
    fn only_waiting_cases_keep_their_longest_first_order() {
        let order = start_order(&[waiting(1), waiting(3), waiting(2)]);
        assert_eq!(order, vec![1, 2, 0]);
    }

    #[test]
    fn a_short_wait_does_not_make_a_case_a_waiting_one() {
        let mut short = working(1);
        short.waits = Duration::from_millis(100);
        let order = start_order(&[short, working(5)]);
        assert_eq!(order, vec![1, 0]);
    }

    #[test]
    fn an_estimate_adds_the_steps_as_written() {
        // The embedded case: a sandbox, a container started, a command past its 1 s timeout,
        // and a second exec.
        let loaded = crate::suite::load_embedded();
        let case = loaded
            .suites
            .iter()
            .flat_map(|suite| &suite.cases)
            .find(|case| case.name == "exec-sync-with-a-timeout-ends-the-command")
            .expect("the embedded case");
        let estimate = estimate(case);
        assert_eq!(estimate.work, 9 + 1 + 2 + 1 + 1);
        assert_eq!(estimate.waits, Duration::from_secs(1));
    }
}
