//! The crash-loop back-off (the kubelet's `flowcontrol.Backoff`): per key, a delay that starts at
//! 10 s and doubles on each restart up to 300 s, forgotten after twice the maximum without an
//! update. Time comes from a [`Clock`], so tests move it by hand instead of sleeping.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::k8s;

/// The kubelet's first crash-loop delay (`backOffPeriod`).
pub const INITIAL_BACKOFF: Duration = Duration::from_secs(10);
/// The kubelet's longest crash-loop delay (`MaxContainerBackOff`).
pub const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// Where the back-off reads "now", in Unix nanoseconds (the CRI's unit for `finished_at`).
pub trait Clock: Send + Sync {
    /// The current time, Unix nanoseconds.
    fn now(&self) -> i64;
}

/// The machine's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct WallClock;

impl Clock for WallClock {
    fn now(&self) -> i64 {
        let since_epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        i64::try_from(since_epoch.as_nanos()).unwrap_or(i64::MAX)
    }
}

/// A clock that only moves when told; clones share the time.
#[derive(Debug, Clone, Default)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    /// A clock standing at `now` (Unix nanoseconds).
    pub fn at(now: i64) -> Self {
        Self(Arc::new(AtomicI64::new(now)))
    }

    /// Sets the time.
    pub fn set(&self, now: i64) {
        self.0.store(now, Ordering::SeqCst);
    }

    /// Moves the time forward by `by`.
    pub fn advance(&self, by: Duration) {
        self.0.fetch_add(nanos(by), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// One key's state: the current delay and when it was last advanced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    delay: i64,
    last_update: i64,
}

/// Per-key exponential back-off. Ports `flowcontrol.Backoff` (client-go util/flowcontrol) without
/// jitter, as the kubelet uses it.
pub struct Backoff {
    clock: Arc<dyn Clock>,
    initial: i64,
    max: i64,
    entries: HashMap<String, Entry>,
}

impl fmt::Debug for Backoff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Backoff")
            .field("initial", &self.initial)
            .field("max", &self.max)
            .field("entries", &self.entries)
            .finish_non_exhaustive()
    }
}

fn nanos(duration: Duration) -> i64 {
    i64::try_from(duration.as_nanos()).unwrap_or(i64::MAX)
}

impl Backoff {
    /// A back-off from `initial` doubling up to `max`. Ports `flowcontrol.NewBackOff`.
    pub fn new(clock: Arc<dyn Clock>, initial: Duration, max: Duration) -> Self {
        Self {
            clock,
            initial: nanos(initial),
            max: nanos(max),
            entries: HashMap::new(),
        }
    }

    /// The kubelet's crash-loop back-off: 10 s doubling to 300 s.
    pub fn kubelet(clock: Arc<dyn Clock>) -> Self {
        Self::new(clock, INITIAL_BACKOFF, MAX_BACKOFF)
    }

    /// The current delay of `key` (zero when unknown). Ports `Backoff.Get`.
    pub fn get(&self, key: &str) -> Duration {
        self.entries.get(key).map_or(Duration::ZERO, |entry| {
            Duration::from_nanos(u64::try_from(entry.delay).unwrap_or(0))
        })
    }

    /// Advances `key`: a new (or expired) key starts at the initial delay, a known one doubles
    /// up to the maximum; either way it was updated now. Ports `Backoff.Next`.
    pub fn next(&mut self, key: &str, event_time: i64) {
        let now = self.clock.now();
        let (initial, max) = (self.initial, self.max);
        let delay = match self.entries.get(key) {
            Some(entry) if !expired(event_time, entry.last_update, max) => {
                entry.delay.saturating_mul(2).min(max)
            }
            _ => initial,
        };
        self.entries.insert(
            key.to_owned(),
            Entry {
                delay,
                last_update: now,
            },
        );
    }

    /// Whether less than `key`'s delay has passed since `event_time` (a container's finish).
    /// Ports `Backoff.IsInBackOffSince`.
    pub fn is_in_back_off_since(&self, key: &str, event_time: i64) -> bool {
        match self.entries.get(key) {
            Some(entry) if !expired(event_time, entry.last_update, self.max) => {
                self.clock.now().saturating_sub(event_time) < entry.delay
            }
            _ => false,
        }
    }

    /// Whether less than `key`'s delay has passed between its last update and `event_time`.
    /// Ports `Backoff.IsInBackOffSinceUpdate` (the image puller's check).
    pub fn is_in_back_off_since_update(&self, key: &str, event_time: i64) -> bool {
        match self.entries.get(key) {
            Some(entry) if !expired(event_time, entry.last_update, self.max) => {
                event_time.saturating_sub(entry.last_update) < entry.delay
            }
            _ => false,
        }
    }

    /// Forgets `key`. Ports `Backoff.Reset`.
    pub fn reset(&mut self, key: &str) {
        self.entries.remove(key);
    }

    /// Forgets every key not updated for twice the maximum. Ports `Backoff.GC`.
    pub fn gc(&mut self) {
        let (now, max) = (self.clock.now(), self.max);
        self.entries
            .retain(|_, entry| !expired(now, entry.last_update, max));
    }

    /// The clock's current time, Unix nanoseconds.
    pub fn now(&self) -> i64 {
        self.clock.now()
    }
}

/// A key not updated for more than twice the maximum is stable again (client-go's
/// `hasExpired`).
fn expired(event_time: i64, last_update: i64, max: i64) -> bool {
    event_time.saturating_sub(last_update) > max.saturating_mul(2)
}

/// The back-off key of a pod's container:
/// `<podName>_<podNamespace>_<podUID>_<containerName>_<hashHex>`. Ports `GetStableKey`
/// (kuberuntime_manager.go).
pub fn stable_key(pod: &k8s::Pod, container_name: &str, hash: u64) -> String {
    let meta = &pod.metadata;
    format!(
        "{}_{}_{}_{}_{:x}",
        meta.name.as_deref().unwrap_or_default(),
        meta.namespace.as_deref().unwrap_or_default(),
        meta.uid.as_deref().unwrap_or_default(),
        container_name,
        hash
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const SECOND: i64 = 1_000_000_000;

    fn backoff(clock: &ManualClock) -> Backoff {
        Backoff::kubelet(Arc::new(clock.clone()))
    }

    #[test]
    fn an_unknown_key_has_no_delay_and_is_not_backing_off() {
        let clock = ManualClock::at(100 * SECOND);
        let backoff = backoff(&clock);
        assert_eq!(backoff.get("k"), Duration::ZERO);
        assert!(!backoff.is_in_back_off_since("k", 99 * SECOND));
    }

    #[rstest]
    #[case::first(1, 10)]
    #[case::second(2, 20)]
    #[case::third(3, 40)]
    #[case::fifth(5, 160)]
    #[case::sixth_is_capped(6, 300)]
    #[case::tenth_stays_capped(10, 300)]
    fn the_delay_doubles_from_10_s_up_to_300_s(#[case] restarts: u32, #[case] seconds: u64) {
        let clock = ManualClock::at(1_000 * SECOND);
        let mut backoff = backoff(&clock);
        for _ in 0..restarts {
            let finished = clock.now();
            backoff.next("k", finished);
            clock.advance(Duration::from_secs(1));
        }
        assert_eq!(backoff.get("k"), Duration::from_secs(seconds));
    }

    #[rstest]
    #[case::just_finished(0, true)]
    #[case::nine_seconds_later(9, true)]
    #[case::ten_seconds_later(10, false)]
    #[case::long_after(100, false)]
    fn a_container_backs_off_until_its_delay_has_passed_since_it_finished(
        #[case] later: u64,
        #[case] backing_off: bool,
    ) {
        let clock = ManualClock::at(1_000 * SECOND);
        let mut backoff = backoff(&clock);
        let finished = clock.now();
        backoff.next("k", finished);
        clock.advance(Duration::from_secs(later));
        assert_eq!(backoff.is_in_back_off_since("k", finished), backing_off);
    }

    #[test]
    fn a_key_quiet_for_twice_the_maximum_starts_over() {
        let clock = ManualClock::at(1_000 * SECOND);
        let mut backoff = backoff(&clock);
        for _ in 0..4 {
            backoff.next("k", clock.now());
        }
        assert_eq!(backoff.get("k"), Duration::from_secs(80));
        clock.advance(Duration::from_secs(601));
        let finished = clock.now();
        assert!(!backoff.is_in_back_off_since("k", finished));
        backoff.next("k", finished);
        assert_eq!(backoff.get("k"), Duration::from_secs(10));
    }

    #[test]
    fn gc_forgets_only_expired_keys() {
        let clock = ManualClock::at(1_000 * SECOND);
        let mut backoff = backoff(&clock);
        backoff.next("old", clock.now());
        clock.advance(Duration::from_secs(500));
        backoff.next("new", clock.now());
        clock.advance(Duration::from_secs(101));
        backoff.gc();
        assert_eq!(backoff.get("old"), Duration::ZERO);
        assert_eq!(backoff.get("new"), Duration::from_secs(10));
    }

    #[test]
    fn since_update_measures_from_the_last_update() {
        let clock = ManualClock::at(1_000 * SECOND);
        let mut backoff = backoff(&clock);
        backoff.next("k", 0);
        assert!(backoff.is_in_back_off_since_update("k", clock.now() + 9 * SECOND));
        assert!(!backoff.is_in_back_off_since_update("k", clock.now() + 10 * SECOND));
        backoff.reset("k");
        assert!(!backoff.is_in_back_off_since_update("k", clock.now()));
    }

    #[test]
    fn the_stable_key_joins_pod_container_and_hex_hash() {
        let pod = k8s::Pod {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some("web".to_owned()),
                namespace: Some("prod".to_owned()),
                uid: Some("u-1".to_owned()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(stable_key(&pod, "app", 0xbeef), "web_prod_u-1_app_beef");
    }
}
