//! The command line: one file per subcommand. Flags follow crictl and critest
//! (`-r/--runtime-endpoint`, `-i/--image-endpoint`, `--focus`, `--skip`, `--parallel`,
//! `--report-dir`) so their users feel at home.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub mod clean;
pub mod common;
pub mod images;
pub mod mock;
pub mod prop;
pub mod run;
pub mod version;

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
    /// Remove sandboxes and containers left behind by earlier runs.
    Clean(clean::Args),
    /// Property-test the manager against generated runtime states.
    Prop(prop::Args),
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
        match cli.command {
            Command::Run(args) => run::run(args).await,
            Command::Mock(args) => mock::run(args).await,
            Command::Version(args) => version::run(args).await,
            Command::Images(args) => images::run(args).await,
            Command::Clean(args) => clean::run(args).await,
            Command::Prop(args) => prop::run(args).await,
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
