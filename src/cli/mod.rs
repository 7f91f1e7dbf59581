//! The command line: one file per subcommand. Flags follow crictl and critest
//! (`-r/--runtime-endpoint`, `-i/--image-endpoint`, `--focus`, `--skip`, `--parallel`,
//! `--report-dir`) so their users feel at home. SIGINT and SIGTERM are watched from the first
//! moment: every subcommand stops on the first one and exits 130 (`run` cleans up first, the
//! mock removes its socket); a second one exits at once.

use std::process::ExitCode;
use std::sync::OnceLock;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use tokio_util::sync::CancellationToken;

pub mod bench;
pub mod clean;
pub mod common;
pub mod contract;
pub mod fuzz;
pub mod images;
pub mod mock;
pub mod pod;
pub mod progress;
pub mod prop;
pub mod report;
pub mod run;
pub mod version;

/// Exit code of a command stopped by SIGINT or SIGTERM (128 + SIGINT, as shells report it).
pub const INTERRUPTED: u8 = 130;

/// How to remove what an interrupted command left on a runtime, once it knows (set by `run`
/// and `prop` on an endpoint): printed if a second signal cuts the cleanup short.
static CLEANUP_HINT: OnceLock<String> = OnceLock::new();

/// The `clean` command that removes the objects of `run_id` from a runtime endpoint.
pub fn cleanup_command(
    runtime: &crate::cri::Endpoint,
    image: &crate::cri::Endpoint,
    run_id: &str,
) -> String {
    let image = if image == runtime {
        String::new()
    } else {
        format!(" -i {image}")
    };
    let command = format!("cri-harness clean -r {runtime}{image} --run-id {run_id}");
    // The first command to know it records it; a process runs one command.
    let _ = CLEANUP_HINT.set(command.clone());
    command
}

/// Conformance harness for Kubernetes CRI runtimes.
#[derive(Debug, Parser)]
#[command(name = "cri-harness", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the suites against a runtime (or the built-in mock) and check the snapshots.
    Run(run::Args),
    /// Serve the built-in mock CRI runtime on a unix socket until interrupted.
    Mock(mock::Args),
    /// Print the runtime's Version answer.
    Version(version::Args),
    /// Build, list or publish the test images the suites need, offline.
    Images(images::Args),
    /// Remove sandboxes and containers left behind by earlier runs that are no longer alive.
    Clean(clean::Args),
    /// Property-test the manager against generated runtime states.
    Prop(prop::Args),
    /// Time critest's benchmarks: p50/p95/max per CRI operation.
    Bench(bench::Args),
    /// Apply or delete a Pod manifest on a runtime the way the kubelet's SyncPod and GC do.
    Pod(pod::Args),
    /// Merge many nodes' reports into one JUnit, JSON and HTML report.
    Report(report::Args),
    /// Print the CRI contract's clauses, as docs/contract.md holds them.
    Contract(contract::Args),
    /// Fuzz a runtime with random CRI call sequences checked by the contract's clauses.
    Fuzz(fuzz::Args),
}

/// Parses the command line, runs the subcommand on a tokio runtime and maps its outcome to the
/// process exit code (errors print as one line with their causes).
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async move {
        let stop = CancellationToken::new();
        watch_signals(stop.clone())?;
        match cli.command {
            // These stop in their own way: `run` cleans up and reports, the mock removes its
            // socket, `prop` says how to clean up.
            Command::Run(args) => run::run(args, stop).await,
            Command::Mock(args) => mock::run(args, stop).await,
            Command::Prop(args) => prop::run(args, stop).await,
            Command::Bench(args) => bench::run(args, stop).await,
            // The others have nothing to undo: a signal drops them where they are.
            Command::Version(args) => until_stopped(version::run(args), &stop).await,
            Command::Images(args) => until_stopped(images::run(args), &stop).await,
            Command::Clean(args) => until_stopped(clean::run(args), &stop).await,
            Command::Pod(args) => until_stopped(pod::run(args), &stop).await,
            Command::Report(args) => until_stopped(report::run(args), &stop).await,
            Command::Contract(args) => contract::run(&args),
            Command::Fuzz(args) => fuzz::run(args, stop).await,
        }
    });
    // Background tasks (servers, in-flight calls) must not keep the process alive.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    match outcome {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs `command` unless `stop` is cancelled first, which exits 130.
async fn until_stopped(
    command: impl std::future::Future<Output = anyhow::Result<ExitCode>>,
    stop: &CancellationToken,
) -> anyhow::Result<ExitCode> {
    tokio::select! {
        outcome = command => outcome,
        () = stop.cancelled() => Ok(ExitCode::from(INTERRUPTED)),
    }
}

/// The first SIGINT or SIGTERM cancels `stop`; a second one exits at once, printing how to
/// clean up if a command said.
fn watch_signals(stop: CancellationToken) -> anyhow::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut int = signal(SignalKind::interrupt()).context("listening for SIGINT")?;
    let mut term = signal(SignalKind::terminate()).context("listening for SIGTERM")?;
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            if stop.is_cancelled() {
                match CLEANUP_HINT.get() {
                    Some(hint) => eprintln!(
                        "interrupted again: exiting without cleaning up; remove what is left with: {hint}"
                    ),
                    None => eprintln!("interrupted again: exiting at once"),
                }
                std::process::exit(i32::from(INTERRUPTED));
            }
            eprintln!("interrupted: stopping (a second Ctrl-C exits at once)");
            stop.cancel();
        }
    });
    Ok(())
}
