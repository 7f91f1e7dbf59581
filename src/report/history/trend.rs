//! The bench figures over the nights: one series per runtime and benchmark operation, a point
//! (p50, p95) per night, and the check that flags a slowdown.
//!
//! The check: the latest night's samples against the pooled samples of up to
//! [`HISTORY_NIGHTS`] preceding nights, by a two-sided Mann–Whitney U test at [`ALPHA`]; and
//! the latest p50 outside the preceding nights' p50s, median ± [`BAND`] scaled MADs. Latency
//! samples are skewed and heavy-tailed, so a rank test, which assumes no distribution, fits
//! them where a t-test does not. But samples of one night are not independent of that night's
//! machine, so with hundreds of pooled samples the rank test alone calls any drift between
//! nights significant; the band asks, in addition, that the shift exceed how far the nights'
//! medians normally wander. Both must hold.

use std::collections::BTreeMap;

use serde::Serialize;

use super::read::Night;
use super::stats::{mann_whitney, median, scaled_mad};
use crate::report::latency::percentile;

/// How many preceding nights the latest is compared with, at most.
pub const HISTORY_NIGHTS: usize = 14;
/// How few preceding nights leave no verdict.
pub const MIN_HISTORY: usize = 5;
/// The U test's significance level: a nightly job checks tens of operations, so at 0.001 the
/// test alone raises a false alarm about once a month.
pub const ALPHA: f64 = 0.001;
/// The band's half-width, in scaled MADs of the preceding nights' p50s.
pub const BAND: f64 = 3.0;

/// One night's figures of an operation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    /// The night's index in the history.
    pub night: usize,
    /// Median of its samples (nearest rank, as `bench` reports it), ms.
    pub p50: f64,
    /// 95th percentile, ms.
    pub p95: f64,
    /// How many samples.
    pub samples: usize,
}

/// What the check says of the latest night.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Fewer than [`MIN_HISTORY`] preceding nights with samples.
    TooLittleHistory,
    /// Within the noise of its history.
    Steady,
    /// Slower beyond the noise: flagged.
    Slower,
    /// Faster beyond the noise: noted, not flagged.
    Faster,
}

/// The check of a series' latest night.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// The verdict.
    pub status: Status,
    /// The night checked.
    pub night: usize,
    /// Preceding nights compared with.
    pub history: usize,
    /// The U test's two-sided p-value; none without enough history or an ordering.
    pub p: Option<f64>,
    /// The latest p50, ms.
    pub latest: f64,
    /// Median of the preceding nights' p50s, ms.
    pub median: Option<f64>,
    /// Lower edge of the band, ms.
    pub low: Option<f64>,
    /// Upper edge of the band, ms.
    pub high: Option<f64>,
}

/// One operation's figures over the nights, on one runtime.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    /// The runtime (see [`super::read::bench_runtime`]).
    pub runtime: String,
    /// The benchmark.
    pub benchmark: String,
    /// The operation.
    pub operation: String,
    /// One point per night that has samples, in night order.
    pub points: Vec<Point>,
    /// The check of the last point.
    pub check: Check,
}

fn nearest_rank(sorted: &[f64], p: f64) -> f64 {
    percentile(sorted, p).unwrap_or(f64::NAN)
}

/// Every series of the nights (in their history order), sorted by runtime, benchmark and
/// operation.
pub fn series(nights: &[Night]) -> Vec<Series> {
    // (runtime, benchmark, operation) → per night, its pooled samples.
    type Key = (String, String, String);
    let mut samples: BTreeMap<Key, Vec<(usize, Vec<f64>)>> = BTreeMap::new();
    for (at, night) in nights.iter().enumerate() {
        for run in &night.benches {
            for (benchmark, operation, values) in &run.operations {
                if values.is_empty() {
                    continue;
                }
                let key = (run.runtime.clone(), benchmark.clone(), operation.clone());
                let per_night = samples.entry(key).or_default();
                match per_night.last_mut() {
                    Some((night, pooled)) if *night == at => pooled.extend(values),
                    _ => per_night.push((at, values.clone())),
                }
            }
        }
    }
    samples
        .into_iter()
        .map(|((runtime, benchmark, operation), mut per_night)| {
            for (_, values) in &mut per_night {
                values.sort_by(f64::total_cmp);
            }
            let points = per_night
                .iter()
                .map(|(night, sorted)| Point {
                    night: *night,
                    p50: nearest_rank(sorted, 50.0),
                    p95: nearest_rank(sorted, 95.0),
                    samples: sorted.len(),
                })
                .collect::<Vec<_>>();
            let check = check(&per_night, &points);
            Series {
                runtime,
                benchmark,
                operation,
                points,
                check,
            }
        })
        .collect()
}

/// The check of the last of `per_night` (sorted samples), whose points are `points`.
fn check(per_night: &[(usize, Vec<f64>)], points: &[Point]) -> Check {
    let last = points.len() - 1;
    let first = last.saturating_sub(HISTORY_NIGHTS);
    let history = last - first;
    let mut check = Check {
        status: Status::TooLittleHistory,
        night: points[last].night,
        history,
        p: None,
        latest: points[last].p50,
        median: None,
        low: None,
        high: None,
    };
    if history < MIN_HISTORY {
        return check;
    }
    let p50s: Vec<f64> = points[first..last].iter().map(|p| p.p50).collect();
    let centre = median(&p50s).unwrap_or(f64::NAN);
    let spread = scaled_mad(&p50s, centre).unwrap_or(f64::NAN);
    let (low, high) = (centre - BAND * spread, centre + BAND * spread);
    let pooled: Vec<f64> = per_night[first..last]
        .iter()
        .flat_map(|(_, values)| values.iter().copied())
        .collect();
    let test = mann_whitney(&per_night[last].1, &pooled);
    check.p = test.map(|t| t.p);
    check.median = Some(centre);
    check.low = Some(low);
    check.high = Some(high);
    let significant = test.is_some_and(|t| t.p < ALPHA);
    check.status = match significant {
        true if check.latest > high => Status::Slower,
        true if check.latest < low => Status::Faster,
        _ => Status::Steady,
    };
    check
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::history::read::BenchRun;

    fn night(samples: Vec<f64>) -> Night {
        Night {
            name: String::new(),
            dir: Default::default(),
            started_at: None,
            start: None,
            runs: Vec::new(),
            benches: vec![BenchRun {
                runtime: "containerd v1.7.24".into(),
                operations: vec![("pod_lifecycle".into(), "run_pod_sandbox".into(), samples)],
            }],
            passed_over: Vec::new(),
        }
    }

    /// Twenty samples around `centre`, spread by a fixed pattern moved by `phase`.
    fn samples(centre: f64, phase: usize) -> Vec<f64> {
        (0..20)
            .map(|i| centre + ((i * 7 + phase * 3) % 20) as f64 * 0.5)
            .collect()
    }

    fn last_check(centres: &[f64]) -> Check {
        let nights: Vec<Night> = centres
            .iter()
            .enumerate()
            .map(|(i, c)| night(samples(*c, i)))
            .collect();
        let series = series(&nights);
        assert_eq!(series.len(), 1);
        assert_eq!(series[0].points.len(), centres.len());
        series[0].check.clone()
    }

    #[test]
    fn a_night_like_its_history_is_steady() {
        let check = last_check(&[50.0, 51.0, 49.0, 50.0, 50.5, 49.5, 50.0]);
        assert_eq!(check.status, Status::Steady, "{check:?}");
        assert_eq!(check.history, 6);
    }

    #[test]
    fn a_night_far_above_its_history_is_slower() {
        let check = last_check(&[50.0, 51.0, 49.0, 50.0, 50.5, 49.5, 70.0]);
        assert_eq!(check.status, Status::Slower, "{check:?}");
        assert!(check.p.unwrap() < ALPHA);
    }

    #[test]
    fn a_night_far_below_is_faster_and_not_flagged() {
        let check = last_check(&[50.0, 51.0, 49.0, 50.0, 50.5, 49.5, 30.0]);
        assert_eq!(check.status, Status::Faster, "{check:?}");
    }

    #[test]
    fn a_shift_the_test_finds_but_within_the_nights_own_wander_is_steady() {
        // The nights' medians wander by ±8; the last moves by 6: significant by the U test
        // (the samples barely overlap), inside the band.
        let check = last_check(&[50.0, 58.0, 42.0, 50.0, 57.0, 43.0, 50.0, 56.0]);
        assert!(check.p.unwrap() < ALPHA, "{check:?}");
        assert_eq!(check.status, Status::Steady, "{check:?}");
    }

    #[test]
    fn too_few_nights_give_no_verdict() {
        let check = last_check(&[50.0, 51.0, 49.0, 50.0, 90.0]);
        assert_eq!(check.status, Status::TooLittleHistory);
        assert_eq!(check.p, None);
    }

    #[test]
    fn only_the_fourteen_preceding_nights_count() {
        let mut centres = vec![200.0; 10];
        centres.extend([50.0; 14]);
        centres.push(50.0);
        let check = last_check(&centres);
        assert_eq!(check.history, HISTORY_NIGHTS);
        assert_eq!(check.median, Some(50.0 + 4.5));
        assert_eq!(check.status, Status::Steady, "{check:?}");
    }
}
