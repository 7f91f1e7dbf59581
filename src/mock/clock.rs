//! The mock's clock: Unix nanoseconds from the wall clock, or frozen at an instant a suite
//! chose. Every timestamp the mock hands out (created_at, started_at, ...) comes from here.

use std::time::{SystemTime, UNIX_EPOCH};

/// Wall clock (strictly increasing) or frozen.
#[derive(Debug, Default)]
pub(crate) struct Clock {
    frozen: Option<i64>,
    /// Last wall reading handed out, so two objects never share a timestamp even when the
    /// system clock is coarse or steps back.
    last_wall: i64,
}

impl Clock {
    /// The current instant in Unix nanoseconds.
    pub(crate) fn now(&mut self) -> i64 {
        if let Some(frozen) = self.frozen {
            return frozen;
        }
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
        self.last_wall = wall.max(self.last_wall.saturating_add(1));
        self.last_wall
    }

    /// Freezes the clock at `unix_nanos`, or returns it to the wall clock when that is 0.
    pub(crate) fn set(&mut self, unix_nanos: i64) {
        if unix_nanos == 0 {
            self.frozen = None;
            // Back on the wall clock, readings follow it again even if the frozen instant was
            // in the future: the suite asked for real time.
            self.last_wall = 0;
        } else {
            self.frozen = Some(unix_nanos);
        }
    }

    /// Freezes the clock `nanos` after its current reading.
    pub(crate) fn advance(&mut self, nanos: i64) {
        let now = self.now();
        self.frozen = Some(now.saturating_add(nanos));
    }

    /// True while the clock is frozen.
    #[cfg(test)]
    fn is_frozen(&self) -> bool {
        self.frozen.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_clock_never_repeats_a_reading() {
        let mut clock = Clock::default();
        let readings: Vec<i64> = (0..1000).map(|_| clock.now()).collect();
        assert!(readings.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn a_frozen_clock_answers_the_same_instant() {
        let mut clock = Clock::default();
        clock.set(1_000);
        assert_eq!((clock.now(), clock.now()), (1_000, 1_000));
    }

    #[test]
    fn advancing_freezes_after_the_current_reading() {
        let mut clock = Clock::default();
        clock.set(1_000);
        clock.advance(500);
        assert_eq!(clock.now(), 1_500);
    }

    #[test]
    fn advancing_the_wall_clock_freezes_it() {
        let mut clock = Clock::default();
        let before = clock.now();
        clock.advance(5);
        assert!(clock.is_frozen());
        assert!(clock.now() >= before + 5);
    }

    #[test]
    fn setting_zero_returns_to_the_wall_clock() {
        let mut clock = Clock::default();
        clock.set(42);
        clock.set(0);
        assert!(!clock.is_frozen());
        assert!(clock.now() > 42);
    }
}
