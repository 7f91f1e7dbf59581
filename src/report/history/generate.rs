//! Generated nights for the history's tests and benchmark: run reports per lane and bench
//! reports in night directories, with planted patterns whose history is known exactly (see
//! [`Pattern`]), and bench samples from a fixed pseudo-random stream, optionally slowed on the
//! last night.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::{json, Value};

use crate::report::merge::generate::case_names;

/// Unix time of the first generated night's start: 2026-01-01T02:00:00Z.
pub const FIRST_START: u64 = 1_767_232_800;

/// `(lane, runtime name, runtime version)` of the generated lanes, in order.
pub const LANES: [(&str, &str, &str); 3] = [
    ("containerd-1.7", "containerd", "v1.7.24"),
    ("containerd-1.6", "containerd", "v1.6.20"),
    ("mock", "cri-harness-mock", "0.1.0"),
];

/// `(benchmark, operation, typical ms)` of the generated bench reports.
pub const OPERATIONS: [(&str, &str, f64); 5] = [
    ("pod_lifecycle", "run_pod_sandbox", 80.0),
    ("pod_lifecycle", "stop_pod_sandbox", 30.0),
    ("pod_lifecycle", "remove_pod_sandbox", 20.0),
    ("container_lifecycle", "create_container", 40.0),
    ("container_lifecycle", "start_container", 60.0),
];

/// Samples per operation per night.
pub const SAMPLES: usize = 20;

/// What the first cases of every lane do over `n` nights (night `i` counted from 0); every
/// later case passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// Passes, then fails from night `max(1, n - 3)` on; on the first lane only.
    Regressed,
    /// Fails on nights with `i % 5 == 2` except the last: isolated failures, flakes.
    Intermittent,
    /// Fails every night, with the same message.
    AlwaysFailing,
    /// Fails every night but the last, which it passes.
    Fixed,
    /// A known failure every night but the last, where it passes and names the finding.
    KnownFixed,
    /// Skipped every night.
    Skipped,
    /// Passes, then warns on the last night.
    Warns,
    /// Only in the last night, passing.
    Added,
    /// In every night but the last, passing.
    Removed,
    /// Passes, then fails as a known finding on the last night.
    NewKnown,
    /// Flaky (one of three attempts failed) on nights with `i % 10 == 4`, else passes.
    FlakyVerdict,
}

/// The patterns of the first cases, in case order.
pub const PATTERNS: [Pattern; 11] = [
    Pattern::Regressed,
    Pattern::Intermittent,
    Pattern::AlwaysFailing,
    Pattern::Fixed,
    Pattern::KnownFixed,
    Pattern::Skipped,
    Pattern::Warns,
    Pattern::Added,
    Pattern::Removed,
    Pattern::NewKnown,
    Pattern::FlakyVerdict,
];

/// The message of a generated failure.
pub const TIMEOUT: &str = "step 3 (create_container): CreateContainer timed out after 60s";

/// What to generate.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Nights.
    pub nights: usize,
    /// Cases per lane (at least [`PATTERNS`]' length for every pattern to show).
    pub cases: usize,
    /// Lanes: the first this many of [`LANES`].
    pub lanes: usize,
    /// Write bench reports too.
    pub bench: bool,
    /// Record start times (else the nights can only be ordered by name).
    pub started: bool,
    /// The last night's samples of the first operation on the first lane are multiplied by
    /// this.
    pub slowdown: f64,
    /// Seed of the bench samples.
    pub seed: u64,
    /// Seed of the last night's samples: another seed is another draw of the same
    /// distribution.
    pub last_seed: u64,
}

impl Plan {
    /// `nights` nights of `cases` cases on two lanes, with bench reports, no slowdown.
    pub fn new(nights: usize, cases: usize) -> Self {
        Self {
            nights,
            cases,
            lanes: 2,
            bench: true,
            started: true,
            slowdown: 1.0,
            seed: 1,
            last_seed: 1,
        }
    }
}

fn mix(a: u64, b: u64) -> u64 {
    // splitmix64 of the pair: stable across platforms and versions.
    let mut z = a.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ b.wrapping_add(0x632b_e59b_d9b7_e9c3);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A roughly standard normal draw (Irwin–Hall of four uniforms) from `key`.
fn normal(key: u64) -> f64 {
    let sum: f64 = (0..4u64)
        .map(|k| (mix(key, k) >> 11) as f64 / (1u64 << 53) as f64)
        .sum();
    (sum - 2.0) * 3f64.sqrt()
}

/// Directory name of night `i`: its date.
pub fn night_name(i: usize) -> String {
    rfc3339(i)[..10].to_owned()
}

/// The recorded start of night `i`.
pub fn rfc3339(i: usize) -> String {
    let time = SystemTime::UNIX_EPOCH + Duration::from_secs(FIRST_START + 86_400 * i as u64);
    humantime::format_rfc3339_seconds(time).to_string()
}

/// The outcome of `pattern` on night `i` of `n`, on lane `lane`, as the report's JSON fields;
/// none where the case is absent.
pub fn outcome(pattern: Option<Pattern>, i: usize, n: usize, lane: usize) -> Option<Value> {
    let last = i + 1 == n;
    let pass = json!({"outcome": "passed"});
    let fail = json!({"outcome": "failed", "reason": TIMEOUT});
    Some(match pattern {
        None => pass,
        Some(Pattern::Regressed) if lane == 0 && i >= n.saturating_sub(3).max(1) => json!({
            "outcome": "failed",
            "reason": format!("RemoveContainer left the container on night {}", i + 1),
        }),
        Some(Pattern::Intermittent) if i % 5 == 2 && !last => fail,
        Some(Pattern::AlwaysFailing) => json!({
            "outcome": "failed",
            "reason": "snapshot changed: PodSandboxStatus differs from the stored snapshot",
        }),
        Some(Pattern::Fixed) if !last => fail,
        Some(Pattern::KnownFixed) if !last => json!({
            "outcome": "known", "reason": "NotFound", "finding": "containerd/containerd#10520",
        }),
        Some(Pattern::KnownFixed) => json!({
            "outcome": "passed", "finding_fixed": "containerd/containerd#10520",
        }),
        Some(Pattern::Skipped) => json!({
            "outcome": "skipped", "reason": "needs the mock's control service", "skip": "mock_only",
        }),
        Some(Pattern::Warns) if last => json!({
            "outcome": "warning", "reason": "a should clause broke: ContainerStatus.reason is empty",
        }),
        Some(Pattern::Added) if !last => return None,
        Some(Pattern::Removed) if last => return None,
        Some(Pattern::NewKnown) if last => json!({
            "outcome": "known", "reason": "Unimplemented", "finding": "containerd/containerd#11111",
        }),
        Some(Pattern::FlakyVerdict) if i % 10 == 4 => json!({
            "outcome": "flaky", "reason": "flaky (1 of 3 failed)", "attempts": 3,
            "failures": [{"attempt": 2, "verdict": "failed", "reason": TIMEOUT}],
        }),
        Some(_) => pass,
    })
}

/// The run report of lane `lane` on night `i`.
pub fn run_report(plan: &Plan, names: &[(String, String)], lane: usize, i: usize) -> Value {
    let (lane_name, runtime, version) = LANES[lane];
    let cases: Vec<Value> = names
        .iter()
        .enumerate()
        .filter_map(|(j, (suite, case))| {
            let mut value = outcome(PATTERNS.get(j).copied(), i, plan.nights, lane)?;
            value["suite"] = suite.as_str().into();
            value["case"] = case.as_str().into();
            value["number"] = (j + 1).into();
            value["duration"] = (0.2 + (mix(i as u64, j as u64) % 1000) as f64 / 1e4).into();
            Some(value)
        })
        .collect();
    let mut report = json!({
        "run_id": format!("n{i:04}{lane}"),
        "target": format!("unix:///run/{lane_name}/containerd.sock"),
        "target_kind": runtime,
        "kubelet": "seed",
        "cases": cases,
        "duration": 60.0,
        "node": {"name": "ci-runner", "kernel": "6.1.0-28-amd64", "os_image": "Debian GNU/Linux 12 (bookworm)",
                 "runtime_name": runtime, "runtime_version": version},
    });
    if plan.started {
        report["started_at"] = rfc3339(i).into();
    }
    report
}

/// The bench report of lane `lane` on night `i`.
pub fn bench_report(plan: &Plan, lane: usize, i: usize) -> Value {
    let (lane_name, runtime, version) = LANES[lane];
    let last = i + 1 == plan.nights;
    let seed = if last { plan.last_seed } else { plan.seed };
    let mut benchmarks: Vec<Value> = Vec::new();
    for (k, (benchmark, operation, typical)) in OPERATIONS.iter().enumerate() {
        let key = mix(mix(seed, i as u64), (lane * 100 + k) as u64);
        // The machine's night-to-night drift (2 %), then each sample's noise (10 %).
        let night = typical * (1.0 + 0.02 * normal(key));
        let factor = if last && lane == 0 && k == 0 {
            plan.slowdown
        } else {
            1.0
        };
        let samples: Vec<f64> = (0..SAMPLES)
            .map(|s| {
                let ms = night * factor * (1.0 + 0.1 * normal(mix(key, s as u64 + 1)));
                (ms * 1e3).round() / 1e3
            })
            .collect();
        let op = json!({"name": operation, "count": SAMPLES, "samples_ms": samples});
        match benchmarks.last_mut() {
            Some(b) if b["name"] == *benchmark => {
                if let Some(ops) = b["operations"].as_array_mut() {
                    ops.push(op);
                }
            }
            _ => benchmarks.push(json!({
                "name": benchmark, "critest_spec": "", "workers": 1, "wall_ms": 1.0,
                "failures": 0, "errors": [], "operations": [op],
            })),
        }
    }
    let mut report = json!({
        "run_id": format!("b{i:04}{lane}"),
        "endpoint": format!("unix:///run/{lane_name}/containerd.sock"),
        "runtime_name": runtime,
        "runtime_version": version,
        "runtime_handler": "",
        "iterations": SAMPLES,
        "parallel": 1,
        "image": "registry.k8s.io/e2e-test-images/busybox:1.36.1-1",
        "image_was_present": true,
        "interrupted": false,
        "benchmarks": benchmarks,
    });
    if plan.started {
        report["started_at"] = rfc3339(i).into();
    }
    report
}

/// Writes the nights of `plan` under `dir`, one directory per night named by its date, each
/// lane's `results.json` and `bench.json` in `<lane>/`; answers the night directories, oldest
/// first.
pub fn write(dir: &Path, plan: &Plan) -> std::io::Result<Vec<PathBuf>> {
    let names = case_names(plan.cases);
    (0..plan.nights)
        .map(|i| {
            let night = dir.join(night_name(i));
            for (lane, (name, ..)) in LANES.iter().enumerate().take(plan.lanes) {
                let lane_dir = night.join(name);
                std::fs::create_dir_all(&lane_dir)?;
                let report = run_report(plan, &names, lane, i);
                std::fs::write(lane_dir.join("results.json"), report.to_string())?;
                if plan.bench {
                    let bench = bench_report(plan, lane, i);
                    std::fs::write(lane_dir.join("bench.json"), bench.to_string())?;
                }
            }
            Ok(night)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_nights_read_back_as_reports_and_bench_reports() {
        let dir = tempfile::tempdir().unwrap();
        let nights = write(dir.path(), &Plan::new(3, 12)).unwrap();
        assert_eq!(nights.len(), 3);
        let night = crate::report::history::read::night(&nights[2]).unwrap();
        assert_eq!(night.runs.len(), 2);
        assert_eq!(night.benches.len(), 2);
        assert!(night.passed_over.is_empty(), "{:?}", night.passed_over);
        assert_eq!(night.started_at.as_deref(), Some("2026-01-03T02:00:00Z"));
        assert_eq!(night.name, "2026-01-03");
        assert_eq!(night.runs[0].placed.at, "containerd-1.6");
        assert_eq!(night.benches[0].operations.len(), OPERATIONS.len());
    }

    #[test]
    fn the_normal_draws_centre_on_zero_with_unit_spread() {
        let draws: Vec<f64> = (0..10_000).map(normal).collect();
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        let var = draws.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / draws.len() as f64;
        assert!(
            mean.abs() < 0.05 && (var - 1.0).abs() < 0.05,
            "{mean} {var}"
        );
    }
}
