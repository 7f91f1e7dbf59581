//! `cri-harness bench`: critest's benchmarks against the mock or an endpoint; prints a table
//! of p50/p95/max per operation and writes the JSON report on request. Ctrl-C lets the
//! iterations in flight finish, then sweeps the run's objects before exiting 130.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::str::FromStr as _;

use anyhow::Context as _;
use tokio_util::sync::CancellationToken;

use super::common::{Chosen, LeaseDirArg, RegistryPrefixArg, TargetArgs};
use super::{cleanup_command, INTERRUPTED};
use crate::bench::{self, Benchmark};
use crate::cri::{self, CriClient};
use crate::mock::{MockRuntime, MockServer};
use crate::runner::cleanup::Lease;

/// Arguments of `cri-harness bench`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The built-in mock or an endpoint
    #[command(flatten)]
    target: TargetArgs,
    #[command(flatten)]
    lease: LeaseDirArg,
    #[command(flatten)]
    images: RegistryPrefixArg,
    /// Iterations of each benchmark, shared among the workers
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    iterations: u32,
    /// Workers running iterations at once
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    parallel: u16,
    /// RuntimeClass handler passed to every RunPodSandbox [default: the runtime's default]
    #[arg(long, value_name = "NAME", default_value = "")]
    runtime_handler: String,
    /// Run only these benchmarks (comma-separated) [default: all five]
    #[arg(long, value_name = "NAME", value_delimiter = ',', value_parser = parse_benchmark)]
    only: Vec<Benchmark>,
    /// Write the figures as JSON to FILE (schema: `cri_harness::bench`'s documentation)
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Run id labelled on every object the run creates [default: generated]
    #[arg(long, value_name = "ID")]
    run_id: Option<String>,
}

/// A benchmark name, or an error that lists them all.
fn parse_benchmark(text: &str) -> Result<Benchmark, String> {
    Benchmark::from_str(text.trim()).map_err(|_| {
        let names: Vec<String> = Benchmark::ALL.iter().map(ToString::to_string).collect();
        format!(
            "unknown benchmark {text:?}: expected one of {}",
            names.join(", ")
        )
    })
}

/// The mock's server and its socket directory, kept for as long as the run.
type MockHold = (MockServer, tempfile::TempDir);

/// The client of the target, what keeps the mock alive, and the lease of an endpoint's run.
async fn connect(
    args: &Args,
    run_id: &str,
) -> anyhow::Result<(CriClient, Option<MockHold>, Option<Lease>)> {
    let options = args.target.endpoint.options();
    match args.target.choose()? {
        Chosen::Mock => {
            let dir = tempfile::Builder::new()
                .prefix("cri-harness-bench-")
                .tempdir()
                .context("making a directory for the mock's socket")?;
            let server = MockRuntime::new()
                .serve_unix(&dir.path().join("cri.sock"))
                .await
                .context("starting the mock runtime")?;
            let endpoint = server.endpoint();
            let client = cri::connect(&endpoint, &endpoint, &options).await?;
            Ok((client, Some((server, dir)), None))
        }
        Chosen::Endpoint { runtime, image } => {
            // Taken before the first object is made, so a `clean` meanwhile leaves them alone.
            let lease = Lease::acquire(&args.lease.dir(), run_id)?;
            cleanup_command(&runtime, &image, run_id);
            // The connect error already names the socket or address; no context needed.
            let client = cri::connect(&runtime, &image, &options).await?;
            Ok((client, None, Some(lease)))
        }
    }
}

/// Runs `cri-harness bench`; `stop` (SIGINT, SIGTERM) ends it after a sweep.
pub async fn run(args: Args, stop: CancellationToken) -> anyhow::Result<ExitCode> {
    let run_id = super::common::run_id(args.run_id.clone())?;
    // Nothing is made before the connection stands, so a signal meanwhile just exits.
    let connected = tokio::select! {
        connected = connect(&args, &run_id) => connected?,
        () = stop.cancelled() => return Ok(ExitCode::from(INTERRUPTED)),
    };
    let (client, _mock, _lease) = connected;
    let config = bench::Config {
        run_id,
        iterations: usize::try_from(args.iterations).unwrap_or(usize::MAX),
        parallel: usize::from(args.parallel),
        runtime_handler: args.runtime_handler,
        images: args.images.names(),
        benchmarks: if args.only.is_empty() {
            Benchmark::ALL.to_vec()
        } else {
            args.only
        },
    };
    let handler = if config.runtime_handler.is_empty() {
        String::new()
    } else {
        format!(", runtime handler {}", config.runtime_handler)
    };
    println!(
        "bench on {}: {} iterations, {} worker(s), run id {}{handler}",
        client.endpoint(),
        config.iterations,
        config.parallel,
        config.run_id
    );
    let report = bench::run(&client, &config, &stop, |done| {
        // Progress on stderr, so stdout holds only the header and the table.
        eprintln!(
            "{}: {:.2} s, {} failed",
            done.name,
            done.wall_ms / 1e3,
            done.failures
        );
    })
    .await?;
    let mut out = std::io::stdout().lock();
    // A closed stdout must not stop the JSON from being written.
    let _ = write!(out, "{}", bench::table(&report));
    let _ = out.flush();
    drop(out);
    let cleanup = &report.cleanup;
    for error in &cleanup.errors {
        eprintln!("error: cleanup: {error}");
    }
    for object in &cleanup.left {
        eprintln!("left: {object}");
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report).context("rendering the JSON report")?;
        std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))?;
    }
    if report.interrupted {
        eprintln!(
            "interrupted: {} of the run's objects swept, {} left",
            cleanup.removed,
            cleanup.left.len()
        );
        return Ok(ExitCode::from(INTERRUPTED));
    }
    Ok(if report.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
