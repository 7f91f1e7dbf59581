//! What `cri-harness bench` reports, as JSON both ways: each benchmark's figures per
//! operation, with every sample, and the final sweep. `bench` fills it; `report history`
//! reads it back through the same types to chart nights.

use serde::{Deserialize, Serialize};

/// One operation's figures.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OperationReport {
    /// Operation name (see `bench::Benchmark::operations`).
    pub name: String,
    /// Samples taken: successful calls.
    pub count: usize,
    /// Fastest sample; `None` without samples, as are the others.
    pub min_ms: Option<f64>,
    /// Median, nearest rank.
    pub p50_ms: Option<f64>,
    /// 95th percentile, nearest rank.
    pub p95_ms: Option<f64>,
    /// Slowest sample.
    pub max_ms: Option<f64>,
    /// Arithmetic mean.
    pub mean_ms: Option<f64>,
    /// Every sample in milliseconds, in the order taken.
    #[serde(default)]
    pub samples_ms: Vec<f64>,
}

/// One benchmark's figures.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchmarkReport {
    /// Benchmark name.
    pub name: String,
    /// The critest spec it mirrors.
    #[serde(default)]
    pub critest_spec: String,
    /// Workers it ran on: `parallel`, but one for the image life cycle.
    pub workers: usize,
    /// Wall time of the benchmark, worker setup and teardown included.
    pub wall_ms: f64,
    /// Iterations or worker setups that failed.
    pub failures: usize,
    /// The first failures' messages.
    pub errors: Vec<String>,
    /// Per-operation figures, in call order.
    pub operations: Vec<OperationReport>,
}

/// The final sweep.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CleanupReport {
    /// Objects the sweep removed: what failed or interrupted iterations left.
    pub removed: usize,
    /// Calls of the sweep or of the image restore that failed.
    pub errors: Vec<String>,
    /// Objects of the run still on the runtime after the sweep.
    pub left: Vec<String>,
}

/// A run's figures; the JSON schema is in the module documentation. It reads back through
/// the same type (`report history` does), fields a report lacks taking their defaults.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// The run's id.
    pub run_id: String,
    /// The runtime endpoint.
    pub endpoint: String,
    /// When the run started, as an RFC 3339 UTC time: what orders nights in a history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// The runtime's name from its Version answer; none when it did not answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_name: Option<String>,
    /// The runtime's version from its Version answer; none as for `runtime_name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_version: Option<String>,
    /// The RuntimeClass handler ("" for the default).
    pub runtime_handler: String,
    /// Iterations asked for, per benchmark.
    pub iterations: usize,
    /// Workers.
    pub parallel: usize,
    /// The image the containers ran and the image benchmark pulled.
    pub image: String,
    /// Whether the runtime had it before the run (and so has it after).
    pub image_was_present: bool,
    /// Whether SIGINT or SIGTERM cut the run short.
    pub interrupted: bool,
    /// Figures per benchmark, in the order run.
    pub benchmarks: Vec<BenchmarkReport>,
    /// The final sweep.
    #[serde(default)]
    pub cleanup: CleanupReport,
}

impl Report {
    /// True when every iteration succeeded and nothing of the run is left.
    pub fn success(&self) -> bool {
        self.benchmarks.iter().all(|b| b.failures == 0)
            && self.cleanup.errors.is_empty()
            && self.cleanup.left.is_empty()
    }
}
