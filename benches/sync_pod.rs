//! SyncPod's time to a running pod: a 3-container pod (busybox sleepers) from nothing to all
//! containers running, on the in-process mock and on the runtime at `CONTAINER_RUNTIME_ENDPOINT`
//! (skipped without it). Beside the wall time it prints the summed time of the CRI calls made in
//! that window, read from the client's `cri_call` spans, and the manager's overhead: the share of
//! the wall time spent outside the runtime's calls. Figures only; nothing is asserted on time.
//! Run with `cargo bench --bench sync_pod` (`SYNC_POD_ITERATIONS` sets N, default 20).
//!
//! The window opens as the first sync_pod starts and closes with the GetPodStatus that sees all
//! three containers running (its calls count as the runtime's). Each iteration deletes the pod as `cri-harness pod delete` does (the manager's `delete_pod`:
//! kill_pod, then garbage_collect of everything of the pod), untimed, and checks nothing is left.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use cri_harness::bench::summarise;
use cri_harness::cri::labels::RUN_ID;
use cri_harness::cri::{self, CriClient, Endpoint};
use cri_harness::manager::lifecycle::{
    all_running, k8s, pod, Backoff, GcLogDirs, ProbeResults, SyncOptions, WallClock,
};
use cri_harness::manager::{KubeGenericRuntimeManager, NoopNetworkPlugin};
use cri_harness::mock::MockRuntime;
use tracing::span::{Attributes, Id};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// Iterations per runtime unless `SYNC_POD_ITERATIONS` says otherwise.
const DEFAULT_ITERATIONS: usize = 20;
/// Syncs one iteration may take before it counts as stuck (the first should do it all).
const MAX_SYNCS: usize = 20;
/// Pause between syncs when the first did not bring every container up (a real runtime's
/// start may lag its answer).
const RESYNC_PAUSE: Duration = Duration::from_millis(20);
/// The span `CriClient` opens around every call.
const CALL_SPAN: &str = "cri_call";

/// Sums the lifetimes of `cri_call` spans: each opens as the client issues a call and closes
/// when its answer (or deadline) is in.
#[derive(Clone, Default)]
struct CallTimer {
    nanos: Arc<AtomicU64>,
    calls: Arc<AtomicU64>,
}

/// When a span opened, kept in the span's extensions.
struct Opened(Instant);

impl<S> Layer<S> for CallTimer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, _attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(Opened(Instant::now()));
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let opened = span.extensions().get::<Opened>().map(|Opened(at)| *at);
        if let Some(at) = opened {
            let nanos = u64::try_from(at.elapsed().as_nanos()).unwrap_or(u64::MAX);
            self.nanos.fetch_add(nanos, Ordering::Relaxed);
            self.calls.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl CallTimer {
    /// Summed call time and number of calls so far.
    fn read(&self) -> (Duration, u64) {
        (
            Duration::from_nanos(self.nanos.load(Ordering::Relaxed)),
            self.calls.load(Ordering::Relaxed),
        )
    }
}

/// The pod: three app containers that sleep until stopped, the image the other suites use.
fn pod(uid: &str) -> anyhow::Result<k8s::Pod> {
    let busybox = cri_harness::images::resolve("busybox");
    let sleeper = r#"[sh, -c, "trap 'exit 0' TERM; sleep 3600 & wait"]"#;
    let containers: String = ["web", "sidecar", "metrics"]
        .iter()
        .map(|name| format!("  - {{name: {name}, image: {busybox}, command: {sleeper}}}\n"))
        .collect();
    let yaml = format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: bench-sync-pod, namespace: bench, uid: {uid}}}\n\
         spec:\n  restartPolicy: Always\n  terminationGracePeriodSeconds: 2\n  containers:\n{containers}"
    );
    serde_saphyr::from_str(&yaml).context("the benchmark's manifest does not parse")
}

/// One iteration's figures.
struct Sample {
    wall: Duration,
    calls: Duration,
    call_count: u64,
    syncs: usize,
}

/// Syncs until every container runs; times the window from the first sync's start.
async fn to_running(
    manager: &KubeGenericRuntimeManager,
    pod: &k8s::Pod,
    options: &SyncOptions,
    timer: &CallTimer,
) -> anyhow::Result<Sample> {
    let mut backoff = Backoff::kubelet(Arc::new(WallClock));
    let (calls_before, count_before) = timer.read();
    let started = Instant::now();
    for syncs in 1..=MAX_SYNCS {
        let sync = manager
            .sync_pod(pod, &ProbeResults::default(), options, &mut backoff)
            .await
            .with_context(|| format!("sync {syncs}"))?;
        if let Some(err) = sync.result.error() {
            anyhow::bail!("sync {syncs} failed: {err}");
        }
        let status = manager
            .get_pod_status(pod::uid(pod), pod::name(pod), pod::namespace(pod))
            .await?;
        if all_running(pod, &status) {
            let wall = started.elapsed();
            let (calls_after, count_after) = timer.read();
            return Ok(Sample {
                wall,
                calls: calls_after.saturating_sub(calls_before),
                call_count: count_after - count_before,
                syncs,
            });
        }
        tokio::time::sleep(RESYNC_PAUSE).await;
    }
    anyhow::bail!("the pod did not run within {MAX_SYNCS} syncs")
}

/// Deletes the pod as `cri-harness pod delete` does, and checks it went wholly.
async fn delete(
    manager: &KubeGenericRuntimeManager,
    pod: &k8s::Pod,
    options: &SyncOptions,
    logs: &GcLogDirs,
) -> anyhow::Result<()> {
    let deletion = manager.delete_pod(pod, options, logs).await?;
    if !deletion.is_complete() {
        anyhow::bail!("the pod was not deleted wholly: {deletion:?}");
    }
    Ok(())
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// Runs the iterations on one runtime and prints its figures.
async fn bench(
    label: &str,
    client: CriClient,
    timer: &CallTimer,
    iterations: usize,
) -> anyhow::Result<()> {
    let manager = KubeGenericRuntimeManager::new(client, Arc::new(NoopNetworkPlugin)).await?;
    let root = tempfile::tempdir().context("cannot create a temporary directory")?;
    let run_id = format!("bench-sync-pod-{}", std::process::id());
    let mut options = SyncOptions::new(root.path().join("pods"), root.path().join("volumes"));
    options
        .extra_labels
        .insert(RUN_ID.to_owned(), run_id.clone());
    let logs = GcLogDirs {
        pod_logs_root: root.path().join("pods"),
        container_log_symlinks: root.path().join("containers"),
    };
    std::fs::create_dir_all(&logs.container_log_symlinks)?;
    let pod = pod(&format!("{run_id}-uid"))?;
    // Pulled once, untimed, so every iteration measures a warm image as the kubelet's steady
    // state does.
    let image = cri_harness::images::resolve("busybox");
    if manager.client().image_status(&image).await?.is_none() {
        manager.client().pull_image(&image).await?;
    }
    let mut samples = Vec::with_capacity(iterations);
    for iteration in 0..iterations {
        let sample = to_running(&manager, &pod, &options, timer).await;
        // The pod goes whether or not it came up, so a failure leaves nothing behind.
        let deleted = delete(&manager, &pod, &options, &logs).await;
        let sample = sample.with_context(|| format!("{label}: iteration {iteration}"))?;
        deleted.with_context(|| format!("{label}: deleting after iteration {iteration}"))?;
        samples.push(sample);
    }
    print(label, &samples);
    Ok(())
}

fn print(label: &str, samples: &[Sample]) {
    let walls: Vec<Duration> = samples.iter().map(|s| s.wall).collect();
    let calls: Vec<Duration> = samples.iter().map(|s| s.calls).collect();
    let outside: Vec<Duration> = samples
        .iter()
        .map(|s| s.wall.saturating_sub(s.calls))
        .collect();
    let mut overheads: Vec<f64> = samples
        .iter()
        .map(|s| 100.0 * ms(s.wall.saturating_sub(s.calls)) / ms(s.wall).max(f64::MIN_POSITIVE))
        .collect();
    overheads.sort_unstable_by(f64::total_cmp);
    let (Some(wall), Some(call), Some(out)) =
        (summarise(&walls), summarise(&calls), summarise(&outside))
    else {
        println!("{label}: no samples");
        return;
    };
    let calls_per = samples.first().map_or(0, |s| s.call_count);
    let syncs = samples.iter().map(|s| s.syncs).max().unwrap_or(0);
    // Nearest rank, as the time percentiles.
    let pct = |p: f64| {
        let rank = ((p / 100.0) * overheads.len() as f64).ceil().max(1.0) as usize;
        overheads.get(rank - 1).copied().unwrap_or(f64::NAN)
    };
    println!(
        "{label}: {} iterations, {calls_per} CRI calls and up to {syncs} syncs each to all 3 running",
        wall.count
    );
    println!(
        "  wall, first sync_pod to all running: p50 {:.3} ms  p95 {:.3} ms  (min {:.3}, max {:.3})",
        wall.p50_ms, wall.p95_ms, wall.min_ms, wall.max_ms
    );
    println!(
        "  CRI calls' own time, summed:        p50 {:.3} ms  p95 {:.3} ms",
        call.p50_ms, call.p95_ms
    );
    println!(
        "  manager outside the calls:          p50 {:.3} ms  p95 {:.3} ms",
        out.p50_ms, out.p95_ms
    );
    println!(
        "  manager overhead (outside / wall):  p50 {:.1} %  p95 {:.1} %",
        pct(50.0),
        pct(95.0)
    );
}

fn runtime_from_env() -> anyhow::Result<Option<Endpoint>> {
    match std::env::var("CONTAINER_RUNTIME_ENDPOINT") {
        Ok(text) if !text.trim().is_empty() => {
            Ok(Some(text.trim().parse::<Endpoint>().with_context(
                || format!("CONTAINER_RUNTIME_ENDPOINT={text:?}"),
            )?))
        }
        _ => Ok(None),
    }
}

fn main() -> anyhow::Result<()> {
    let iterations = match std::env::var("SYNC_POD_ITERATIONS") {
        Ok(text) => text
            .parse::<usize>()
            .with_context(|| format!("SYNC_POD_ITERATIONS={text:?} is not a count"))?,
        Err(_) => DEFAULT_ITERATIONS,
    };
    let timer = CallTimer::default();
    let filter =
        tracing_subscriber::filter::filter_fn(|meta| meta.is_span() && meta.name() == CALL_SPAN);
    tracing::subscriber::set_global_default(
        tracing_subscriber::registry().with(timer.clone().with_filter(filter)),
    )
    .context("cannot install the call timer")?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mock = MockRuntime::new();
        bench(
            "mock (in-process, duplex)",
            mock.duplex_client().await?,
            &timer,
            iterations,
        )
        .await?;
        match runtime_from_env()? {
            Some(endpoint) => {
                let client = cri::connect(&endpoint, &endpoint, &Default::default()).await?;
                bench(&format!("runtime {endpoint}"), client, &timer, iterations).await
            }
            None => {
                println!("runtime: skipped, CONTAINER_RUNTIME_ENDPOINT is not set");
                Ok(())
            }
        }
    })
}
