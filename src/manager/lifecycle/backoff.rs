//! The crash-loop back-off (the kubelet's `flowcontrol.Backoff`): per key, a delay that starts at
//! 10 s and doubles on each restart up to 300 s, forgotten after twice the maximum without an
//! update. Time comes from a [`Clock`], so tests move it by hand instead of sleeping.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::k8s;
use crate::manager::{FeatureGate, FeatureGates, KubeletProfile};

/// The kubelet's first crash-loop delay (`backOffPeriod`).
pub const INITIAL_BACKOFF: Duration = Duration::from_secs(10);
/// The kubelet's longest crash-loop delay (`MaxContainerBackOff`).
pub const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// The first and longest crash-loop delays under `ReduceDefaultCrashLoopBackOffDecay`
/// (`reducedInitialCrashLoopBackOff`, `reducedMaxCrashLoopBackOff`).
pub const REDUCED_INITIAL_BACKOFF: Duration = Duration::from_secs(1);
/// See [`REDUCED_INITIAL_BACKOFF`].
pub const REDUCED_MAX_BACKOFF: Duration = Duration::from_secs(60);
/// How long a crash-loop key lives without an update: today's kubelet replaces client-go's
/// twice-the-maximum with a fixed ten minutes (`HasExpiredFunc`), the same at the default
/// maximum and longer under a lower cap.
pub const CRASH_LOOP_EXPIRY: Duration = Duration::from_secs(600);

/// The kubelet configuration's `crashLoopBackOff` section: the per-node cap on the crash-loop
/// delay (`maxContainerRestartPeriod`, 1 s to 300 s), read only under today's kubelet with
/// `KubeletCrashLoopBackOffMax` on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrashLoopConfig {
    /// `maxContainerRestartPeriod`, whole seconds; unset: the default maximum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_container_restart_period_seconds: Option<u64>,
}

/// Why a crash-loop configuration cannot be used, as the kubelet refuses its configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CrashLoopConfigError {
    /// Outside the kubelet's accepted range.
    #[error("crashLoopBackOff.maxContainerRestartPeriod must be between 1 s and 300 s, not {0} s")]
    OutOfRange(u64),
    /// Set while the gate that reads it is off (the kubelet's own validation message).
    #[error("FeatureGate KubeletCrashLoopBackOffMax not enabled, CrashLoopBackOff.MaxContainerRestartPeriod must not be set")]
    GateOff,
    /// Set for the seed, which had no such configuration.
    #[error(
        "crashLoopBackOff is a configuration of today's kubelet; the seed's back-off is fixed"
    )]
    Seed,
}

impl CrashLoopConfig {
    /// The configured cap, checked against the kubelet's range.
    pub fn max(&self) -> Result<Option<Duration>, CrashLoopConfigError> {
        match self.max_container_restart_period_seconds {
            None => Ok(None),
            Some(seconds @ 1..=300) => Ok(Some(Duration::from_secs(seconds))),
            Some(seconds) => Err(CrashLoopConfigError::OutOfRange(seconds)),
        }
    }
}

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
    /// A key not updated for longer than this is stable again.
    expiry: i64,
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
            expiry: nanos(max).saturating_mul(2),
            entries: HashMap::new(),
        }
    }

    /// The kubelet's crash-loop back-off: 10 s doubling to 300 s.
    pub fn kubelet(clock: Arc<dyn Clock>) -> Self {
        Self::new(clock, INITIAL_BACKOFF, MAX_BACKOFF)
    }

    /// The crash-loop back-off of `kubelet` under `gates` and the node's `config`. The seed's
    /// is fixed: 10 s doubling to 300 s. Today's takes 1 s to 60 s under
    /// `ReduceDefaultCrashLoopBackOffDecay`, and under `KubeletCrashLoopBackOffMax` (on by
    /// default) the configured cap, or 300 s where none is set (the configuration's default);
    /// a cap below the first delay becomes the first delay too. A key lives ten minutes
    /// without an update. Ports `newCrashLoopBackOff` (kubelet.go).
    pub fn crash_loop(
        clock: Arc<dyn Clock>,
        kubelet: KubeletProfile,
        gates: &FeatureGates,
        config: &CrashLoopConfig,
    ) -> Result<Self, CrashLoopConfigError> {
        let cap = config.max()?;
        if !kubelet.is_current() {
            return match cap {
                Some(_) => Err(CrashLoopConfigError::Seed),
                None => Ok(Self::kubelet(clock)),
            };
        }
        let (mut initial, mut max) =
            if gates.enabled(FeatureGate::ReduceDefaultCrashLoopBackOffDecay) {
                (REDUCED_INITIAL_BACKOFF, REDUCED_MAX_BACKOFF)
            } else {
                (INITIAL_BACKOFF, MAX_BACKOFF)
            };
        if gates.enabled(FeatureGate::KubeletCrashLoopBackOffMax) {
            max = cap.unwrap_or(MAX_BACKOFF);
            initial = initial.min(max);
        } else if cap.is_some() {
            return Err(CrashLoopConfigError::GateOff);
        }
        let mut backoff = Self::new(clock, initial, max);
        backoff.expiry = nanos(CRASH_LOOP_EXPIRY);
        Ok(backoff)
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
            Some(entry) if !expired(event_time, entry.last_update, self.expiry) => {
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
            Some(entry) if !expired(event_time, entry.last_update, self.expiry) => {
                self.clock.now().saturating_sub(event_time) < entry.delay
            }
            _ => false,
        }
    }

    /// Whether less than `key`'s delay has passed between its last update and `event_time`.
    /// Ports `Backoff.IsInBackOffSinceUpdate` (the image puller's check).
    pub fn is_in_back_off_since_update(&self, key: &str, event_time: i64) -> bool {
        match self.entries.get(key) {
            Some(entry) if !expired(event_time, entry.last_update, self.expiry) => {
                event_time.saturating_sub(entry.last_update) < entry.delay
            }
            _ => false,
        }
    }

    /// Forgets `key`. Ports `Backoff.Reset`.
    pub fn reset(&mut self, key: &str) {
        self.entries.remove(key);
    }

    /// Forgets every key not updated within its expiry (twice the maximum unless told).
    /// Ports `Backoff.GC`.
    pub fn gc(&mut self) {
        let (now, expiry) = (self.clock.now(), self.expiry);
        self.entries
            .retain(|_, entry| !expired(now, entry.last_update, expiry));
    }

    /// The clock's current time, Unix nanoseconds.
    pub fn now(&self) -> i64 {
        self.clock.now()
    }
}

/// A key not updated for longer than `expiry` is stable again (client-go's `hasExpired`, with
/// twice the maximum as its expiry).
fn expired(event_time: i64, last_update: i64, expiry: i64) -> bool {
    event_time.saturating_sub(last_update) > expiry
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

    /// The delays a crash-loop back-off hands out over `restarts` restarts, in whole seconds.
    fn delays(
        kubelet: KubeletProfile,
        gates: &FeatureGates,
        cap: Option<u64>,
        restarts: usize,
    ) -> Vec<u64> {
        let clock = ManualClock::at(1_000 * SECOND);
        let config = CrashLoopConfig {
            max_container_restart_period_seconds: cap,
        };
        let mut backoff =
            Backoff::crash_loop(Arc::new(clock.clone()), kubelet, gates, &config).unwrap();
        (0..restarts)
            .map(|_| {
                backoff.next("k", clock.now());
                clock.advance(Duration::from_secs(1));
                backoff.get("k").as_secs()
            })
            .collect()
    }

    #[rstest]
    #[case::seed(KubeletProfile::Seed, "", None, &[10, 20, 40, 80, 160, 300, 300])]
    #[case::today_unset(KubeletProfile::Current, "", None, &[10, 20, 40, 80, 160, 300, 300])]
    #[case::cap_above_the_first(KubeletProfile::Current, "", Some(30), &[10, 20, 30, 30])]
    #[case::cap_below_the_first(KubeletProfile::Current, "", Some(2), &[2, 2, 2])]
    #[case::reduced_decay_keeps_the_default_cap(
        KubeletProfile::Current,
        "ReduceDefaultCrashLoopBackOffDecay=true",
        None,
        &[1, 2, 4, 8, 16, 32, 64, 128, 256, 300]
    )]
    #[case::reduced_decay_alone(
        KubeletProfile::Current,
        "ReduceDefaultCrashLoopBackOffDecay=true,KubeletCrashLoopBackOffMax=false",
        None,
        &[1, 2, 4, 8, 16, 32, 60, 60]
    )]
    #[case::the_seed_reads_no_gate(
        KubeletProfile::Seed,
        "ReduceDefaultCrashLoopBackOffDecay=true",
        None,
        &[10, 20]
    )]
    fn the_crash_loop_delays_follow_the_kubelet_its_gates_and_its_cap(
        #[case] kubelet: KubeletProfile,
        #[case] gates: &str,
        #[case] cap: Option<u64>,
        #[case] want: &[u64],
    ) {
        let gates: FeatureGates = gates.parse().unwrap();
        assert_eq!(delays(kubelet, &gates, cap, want.len()), want);
    }

    #[rstest]
    #[case::zero(KubeletProfile::Current, "", 0, CrashLoopConfigError::OutOfRange(0))]
    #[case::over_five_minutes(
        KubeletProfile::Current,
        "",
        301,
        CrashLoopConfigError::OutOfRange(301)
    )]
    #[case::gate_off(
        KubeletProfile::Current,
        "KubeletCrashLoopBackOffMax=false",
        5,
        CrashLoopConfigError::GateOff
    )]
    #[case::seed(KubeletProfile::Seed, "", 5, CrashLoopConfigError::Seed)]
    fn a_cap_the_kubelet_would_refuse_is_refused(
        #[case] kubelet: KubeletProfile,
        #[case] gates: &str,
        #[case] cap: u64,
        #[case] want: CrashLoopConfigError,
    ) {
        let config = CrashLoopConfig {
            max_container_restart_period_seconds: Some(cap),
        };
        let gates: FeatureGates = gates.parse().unwrap();
        let err = Backoff::crash_loop(Arc::new(WallClock), kubelet, &gates, &config).unwrap_err();
        assert_eq!(err, want);
    }

    #[test]
    fn a_capped_crash_loop_key_lives_ten_minutes_not_twice_the_cap() {
        let clock = ManualClock::at(1_000 * SECOND);
        let config = CrashLoopConfig {
            max_container_restart_period_seconds: Some(20),
        };
        let mut backoff = Backoff::crash_loop(
            Arc::new(clock.clone()),
            KubeletProfile::Current,
            &FeatureGates::default(),
            &config,
        )
        .unwrap();
        backoff.next("k", clock.now());
        clock.advance(Duration::from_secs(100));
        backoff.next("k", clock.now());
        assert_eq!(
            backoff.get("k"),
            Duration::from_secs(20),
            "100 s on, still doubling"
        );
        clock.advance(Duration::from_secs(601));
        backoff.next("k", clock.now());
        assert_eq!(
            backoff.get("k"),
            Duration::from_secs(10),
            "601 s on, stable again"
        );
    }
}
