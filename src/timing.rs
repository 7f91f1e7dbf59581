//! Where a case's time goes: how long it spent waiting on purpose (polls, retries, sleeps) and
//! how long in CRI calls, summed per case. The runner opens a [`scope`] around each case; the
//! CRI client and the waiting steps add to it. Work the case spawns onto other tasks (e.g.
//! concurrent streams) is outside the scope and counted in neither sum.

use std::future::Future;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The sums of one case.
#[derive(Debug, Default)]
pub struct Spent {
    cri_micros: AtomicU64,
    calls: AtomicU32,
    waiting_micros: AtomicU64,
}

/// What [`Spent`] added up to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Time inside CRI calls made through the harness's client, end to end.
    pub cri: Duration,
    /// How many such calls.
    pub calls: u32,
    /// Time spent waiting on purpose: poll intervals, retry pauses, `sleep_ms`.
    pub waiting: Duration,
}

impl Spent {
    /// The sums so far.
    pub fn totals(&self) -> Totals {
        Totals {
            cri: Duration::from_micros(self.cri_micros.load(Ordering::Relaxed)),
            calls: self.calls.load(Ordering::Relaxed),
            waiting: Duration::from_micros(self.waiting_micros.load(Ordering::Relaxed)),
        }
    }
}

tokio::task_local! {
    static SPENT: Arc<Spent>;
}

/// Runs `work` with `spent` collecting its CRI and waiting time.
pub async fn scope<F: Future>(spent: Arc<Spent>, work: F) -> F::Output {
    SPENT.scope(spent, work).await
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

/// Adds one CRI call that took `took` to the current scope, if any.
pub fn cri_call(took: Duration) {
    let _ = SPENT.try_with(|spent| {
        spent.cri_micros.fetch_add(micros(took), Ordering::Relaxed);
        spent.calls.fetch_add(1, Ordering::Relaxed);
    });
}

/// Sleeps for `duration` on purpose (a poll's interval, a retry's pause), counted as waiting.
pub async fn pause(duration: Duration) {
    let started = tokio::time::Instant::now();
    tokio::time::sleep(duration).await;
    let slept = started.elapsed();
    let _ = SPENT.try_with(|spent| {
        spent
            .waiting_micros
            .fetch_add(micros(slept), Ordering::Relaxed);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn calls_and_pauses_add_up_inside_the_scope_only() {
        let spent = Arc::new(Spent::default());
        cri_call(Duration::from_millis(5));
        scope(spent.clone(), async {
            cri_call(Duration::from_millis(3));
            cri_call(Duration::from_millis(4));
            pause(Duration::from_millis(2)).await;
        })
        .await;
        pause(Duration::from_millis(400)).await;
        let totals = spent.totals();
        assert_eq!(totals.calls, 2);
        assert_eq!(totals.cri, Duration::from_millis(7));
        // At least the pause inside; never the long one outside.
        assert!(totals.waiting >= Duration::from_millis(2), "{totals:?}");
        assert!(totals.waiting < Duration::from_millis(400), "{totals:?}");
    }
}
