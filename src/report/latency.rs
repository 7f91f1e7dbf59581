//! Latency summaries of one operation's samples: nearest-rank percentiles over the sorted
//! samples. A benchmark takes tens to hundreds of samples, so sorting them all is exact and
//! cheaper than a histogram crate.

use std::time::Duration;

use serde::Serialize;

/// The latencies of one operation, in milliseconds (the unit critest's reports use).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Samples taken (successful calls).
    pub count: usize,
    /// Fastest sample.
    pub min_ms: f64,
    /// Median, nearest rank.
    pub p50_ms: f64,
    /// 95th percentile, nearest rank.
    pub p95_ms: f64,
    /// Slowest sample.
    pub max_ms: f64,
    /// Arithmetic mean.
    pub mean_ms: f64,
}

/// A duration in milliseconds, kept to microseconds so the JSON stays readable.
pub fn millis(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 1e6).round() / 1e3
}

/// The sample of percentile `p` (0-100) of `sorted` by the nearest-rank method: the smallest
/// sample with at least `p` percent of the samples at or below it. `None` when empty.
pub fn percentile<T: Copy>(sorted: &[T], p: f64) -> Option<T> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len();
    // Rank in 1..=n; p = 0 means the minimum, as the method's usual extension does.
    let rank = ((p / 100.0) * n as f64).ceil().clamp(1.0, n as f64) as usize;
    sorted.get(rank - 1).copied()
}

/// Summarises `samples` (in any order); `None` when there are none.
pub fn summarise(samples: &[Duration]) -> Option<Summary> {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let (first, last) = (sorted.first()?, sorted.last()?);
    let total: Duration = sorted.iter().sum();
    let count = sorted.len();
    Some(Summary {
        count,
        min_ms: millis(*first),
        p50_ms: millis(percentile(&sorted, 50.0)?),
        p95_ms: millis(percentile(&sorted, 95.0)?),
        max_ms: millis(*last),
        mean_ms: millis(total / u32::try_from(count).unwrap_or(u32::MAX)),
    })
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn ms(values: &[u64]) -> Vec<Duration> {
        values.iter().map(|v| Duration::from_millis(*v)).collect()
    }

    #[rstest]
    #[case::one_sample_is_every_percentile(&[7], 50.0, 7)]
    #[case::median_of_an_odd_count_is_the_middle(&[1, 2, 3, 4, 5], 50.0, 3)]
    #[case::median_of_an_even_count_is_the_lower_middle(&[1, 2, 3, 4], 50.0, 2)]
    #[case::p95_of_twenty_is_the_nineteenth(&(1..=20).collect::<Vec<_>>(), 95.0, 19)]
    #[case::p95_of_ten_is_the_maximum(&(1..=10).collect::<Vec<_>>(), 95.0, 10)]
    #[case::p100_is_the_maximum(&[1, 5, 9], 100.0, 9)]
    #[case::p0_is_the_minimum(&[1, 5, 9], 0.0, 1)]
    fn percentiles_follow_the_nearest_rank_method(
        #[case] sorted: &[u64],
        #[case] p: f64,
        #[case] expected: u64,
    ) {
        assert_eq!(
            percentile(&ms(sorted), p),
            Some(Duration::from_millis(expected))
        );
    }

    #[test]
    fn no_samples_have_no_percentile_and_no_summary() {
        assert_eq!(percentile::<Duration>(&[], 50.0), None);
        assert_eq!(summarise(&[]), None);
    }

    #[test]
    fn a_summary_sorts_its_samples_first() {
        let summary = summarise(&ms(&[30, 10, 20, 40])).unwrap();
        assert_eq!(
            summary,
            Summary {
                count: 4,
                min_ms: 10.0,
                p50_ms: 20.0,
                p95_ms: 40.0,
                max_ms: 40.0,
                mean_ms: 25.0,
            }
        );
    }

    #[test]
    fn milliseconds_keep_microseconds() {
        assert_eq!(millis(Duration::from_nanos(1_234_567)), 1.235);
    }
}
