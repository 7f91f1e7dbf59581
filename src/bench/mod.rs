//! `cri-harness bench`: critest v1.26.1's five benchmarks (`pkg/benchmark/*.go`) as a command
//! that times each CRI operation and reports p50, p95 and max per operation, with no pass or
//! fail threshold. Workers share the iterations; everything they make is labelled as the run's
//! and swept at the end, interrupted or not.
//!
//! # Images
//!
//! The container benchmarks run the catalogue's `busybox`, pulled beforehand (untimed) if the
//! runtime lacks it. The image benchmark pulls and removes the catalogue's `harness-bench`,
//! an image nothing else uses, so it never races a case or a container for one. At the end the
//! runtime is left as it was found: each image is there again if it was before the run, and
//! removed if it was not. The image benchmark's iterations run one at a time, whatever
//! `parallel` says: workers would share its image.
//!
//! # JSON
//!
//! `--json FILE` writes one [`Report`]:
//!
//! ```json
//! {
//!   "run_id": "1a2b3c4d",
//!   "endpoint": "unix:///run/containerd/containerd.sock",
//!   "runtime_handler": "",
//!   "iterations": 20,
//!   "parallel": 1,
//!   "image": "registry.k8s.io/e2e-test-images/busybox:1.36.1-1",
//!   "image_was_present": true,
//!   "interrupted": false,
//!   "benchmarks": [
//!     {
//!       "name": "pod_lifecycle",
//!       "critest_spec": "benchmark about lifecycle of PodSandbox",
//!       "workers": 1,
//!       "wall_ms": 1630.2,
//!       "failures": 0,
//!       "errors": [],
//!       "operations": [
//!         {
//!           "name": "run_pod_sandbox",
//!           "count": 20, "min_ms": 70.1, "p50_ms": 79.0, "p95_ms": 88.3,
//!           "max_ms": 90.4, "mean_ms": 80.2,
//!           "samples_ms": [79.0, 81.2]
//!         }
//!       ]
//!     }
//!   ],
//!   "cleanup": { "removed": 0, "errors": [], "left": [] }
//! }
//! ```
//!
//! Times are milliseconds with microsecond precision. `count` is the number of successful
//! calls: the iterations, unless some failed (`failures`, with the first few messages in
//! `errors`) or the run was interrupted. An operation with no sample has `null` statistics.
//! `samples_ms` lists every sample in the order taken. `cleanup` is the final sweep of the
//! run's labelled objects: how many it removed (only what failed iterations left), the calls
//! that failed, and what is still there.

mod table;
mod workload;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

pub use crate::report::latency::{millis, percentile, summarise, Summary};
pub use table::table;
pub use workload::{Benchmark, STOP_GRACE_SECONDS};

pub use crate::report::bench::{BenchmarkReport, CleanupReport, OperationReport, Report};

use self::workload::{Context, Samples};
use crate::cri::{CallError, CriClient};
use crate::images;
use crate::runner::cleanup::{self, Selector};

/// How many failure messages a benchmark keeps; the count says how many there were.
const KEPT_ERRORS: usize = 5;

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// Labels every object the run makes, for `clean --run-id`.
    pub run_id: String,
    /// Iterations of each benchmark, shared among the workers.
    pub iterations: usize,
    /// Workers running iterations at once.
    pub parallel: usize,
    /// RuntimeClass handler passed to every RunPodSandbox ("" for the runtime's default).
    pub runtime_handler: String,
    /// The benchmarks, in the order run.
    pub benchmarks: Vec<Benchmark>,
    /// How the benchmark images become references (`--registry-prefix`).
    pub images: images::ImageNames,
}

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Asking whether the runtime has the benchmark image failed.
    #[error("cannot tell whether the runtime has {image}")]
    ImageStatus {
        /// The image.
        image: String,
        /// The call's failure.
        #[source]
        source: CallError,
    },
}

/// Runs the benchmarks of `config` on `client`, calling `progress` after each one. `stop`
/// ends the run after the iterations in flight; the sweep and the image restore still follow.
pub async fn run(
    client: &CriClient,
    config: &Config,
    stop: &CancellationToken,
    mut progress: impl FnMut(&BenchmarkReport),
) -> Result<Report, BenchError> {
    let started_at = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    // Names the runtime in the report so histories chart by runtime; a runtime that does not
    // answer Version still gets benchmarked.
    let version = client.version("v1").await.ok();
    let image = config.images.resolve("busybox");
    let image_was_present = client
        .image_status(&image)
        .await
        .map_err(|source| BenchError::ImageStatus {
            image: image.clone(),
            source,
        })?
        .is_some();
    let pulled_image = config.images.resolve(images::BENCH_IMAGE);
    let pulled_was_present = client
        .image_status(&pulled_image)
        .await
        .map_err(|source| BenchError::ImageStatus {
            image: pulled_image.clone(),
            source,
        })?
        .is_some();
    let context = Context {
        client: client.clone(),
        run_id: config.run_id.clone(),
        runtime_handler: config.runtime_handler.clone(),
        image: image.clone(),
        pulled_image: pulled_image.clone(),
    };
    let mut report = Report {
        run_id: config.run_id.clone(),
        endpoint: client.endpoint().to_owned(),
        started_at: Some(started_at),
        runtime_name: version.as_ref().map(|v| v.runtime_name.clone()),
        runtime_version: version.map(|v| v.runtime_version),
        runtime_handler: config.runtime_handler.clone(),
        iterations: config.iterations,
        parallel: config.parallel,
        image: image.clone(),
        image_was_present,
        interrupted: false,
        benchmarks: Vec::new(),
        cleanup: CleanupReport::default(),
    };
    for &benchmark in &config.benchmarks {
        if stop.is_cancelled() {
            break;
        }
        // Checked before each benchmark that runs containers: the image benchmark removes it.
        let mut pulled = Ok(());
        if benchmark.needs_image() {
            pulled = ensure_image(client, &image).await;
        }
        let figures = match pulled {
            Ok(()) => run_one(&context, benchmark, config, stop).await,
            Err(err) => failed_before_start(benchmark, err.to_string()),
        };
        progress(&figures);
        report.benchmarks.push(figures);
    }
    report.interrupted = stop.is_cancelled();
    report.cleanup = sweep(client, &config.run_id).await;
    for (image, was_present) in [
        (&image, image_was_present),
        (&pulled_image, pulled_was_present),
    ] {
        if let Err(err) = restore_image(client, image, was_present).await {
            report.cleanup.errors.push(err.to_string());
        }
    }
    Ok(report)
}

async fn ensure_image(client: &CriClient, image: &str) -> Result<(), CallError> {
    if client.image_status(image).await?.is_none() {
        client.pull_image(image).await?;
    }
    Ok(())
}

/// Leaves the image as the run found it.
async fn restore_image(
    client: &CriClient,
    image: &str,
    was_present: bool,
) -> Result<(), CallError> {
    let present = client.image_status(image).await?.is_some();
    match (was_present, present) {
        (true, false) => client.pull_image(image).await.map(drop),
        (false, true) => client.remove_image(image).await,
        _ => Ok(()),
    }
}

fn failed_before_start(benchmark: Benchmark, error: String) -> BenchmarkReport {
    BenchmarkReport {
        name: <&str>::from(benchmark).to_owned(),
        critest_spec: benchmark.critest_spec().to_owned(),
        workers: 0,
        wall_ms: 0.0,
        failures: 1,
        errors: vec![error],
        operations: benchmark
            .operations()
            .iter()
            .map(|name| operation(name, &[]))
            .collect(),
    }
}

fn operation(name: &'static str, samples: &[Duration]) -> OperationReport {
    let summary = summarise(samples);
    let field = |pick: fn(&Summary) -> f64| summary.as_ref().map(pick);
    OperationReport {
        name: name.to_owned(),
        count: samples.len(),
        min_ms: field(|s| s.min_ms),
        p50_ms: field(|s| s.p50_ms),
        p95_ms: field(|s| s.p95_ms),
        max_ms: field(|s| s.max_ms),
        mean_ms: field(|s| s.mean_ms),
        samples_ms: samples.iter().copied().map(millis).collect(),
    }
}

/// What one worker brings back.
struct WorkerOutcome {
    samples: Samples,
    errors: Vec<String>,
}

/// Runs `config.iterations` iterations of `benchmark` on its workers (see [`Benchmark::workers`]), each
/// taking the next iteration number until none is left or `stop` is cancelled.
async fn run_one(
    context: &Context,
    benchmark: Benchmark,
    config: &Config,
    stop: &CancellationToken,
) -> BenchmarkReport {
    let started = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for worker in 0..benchmark.workers(config.parallel) {
        let context = context.clone();
        let next = next.clone();
        let stop = stop.clone();
        let iterations = config.iterations;
        workers.spawn(async move {
            let mut outcome = WorkerOutcome {
                samples: vec![Vec::new(); benchmark.operations().len()],
                errors: Vec::new(),
            };
            let sandbox = match context.setup(benchmark, worker).await {
                Ok(sandbox) => sandbox,
                Err(err) => {
                    outcome.errors.push(format!("worker {worker} setup: {err}"));
                    return outcome;
                }
            };
            while !stop.is_cancelled() {
                let iteration = next.fetch_add(1, Ordering::Relaxed);
                if iteration >= iterations {
                    break;
                }
                let result = context
                    .iteration(
                        benchmark,
                        sandbox.as_ref(),
                        worker,
                        iteration,
                        &mut outcome.samples,
                    )
                    .await;
                if let Err(err) = result {
                    outcome.errors.push(format!("iteration {iteration}: {err}"));
                }
            }
            context.teardown(sandbox).await;
            outcome
        });
    }
    let mut samples: Samples = vec![Vec::new(); benchmark.operations().len()];
    let mut errors = Vec::new();
    while let Some(joined) = workers.join_next().await {
        match joined {
            Ok(outcome) => {
                for (all, mine) in samples.iter_mut().zip(outcome.samples) {
                    all.extend(mine);
                }
                errors.extend(outcome.errors);
            }
            Err(err) => errors.push(format!("a worker stopped: {err}")),
        }
    }
    let failures = errors.len();
    errors.truncate(KEPT_ERRORS);
    BenchmarkReport {
        name: <&str>::from(benchmark).to_owned(),
        critest_spec: benchmark.critest_spec().to_owned(),
        workers: benchmark.workers(config.parallel),
        wall_ms: millis(started.elapsed()),
        failures,
        errors,
        operations: benchmark
            .operations()
            .iter()
            .zip(&samples)
            .map(|(name, samples)| operation(name, samples))
            .collect(),
    }
}

/// Removes whatever of the run is left (failed iterations' objects) and lists what stays.
async fn sweep(client: &CriClient, run_id: &str) -> CleanupReport {
    let selector = Selector {
        run_id: Some(run_id.to_owned()),
        case: None,
    };
    let swept = cleanup::sweep(client, &selector, cleanup::Settle::default()).await;
    let mut report = CleanupReport {
        removed: swept.removed.len(),
        errors: swept.errors,
        left: swept.left.iter().map(ToString::to_string).collect(),
    };
    report
        .errors
        .extend(swept.list_error.map(|err| err.to_string()));
    report
}
