//! `cri-harness run` (being built).

use std::process::ExitCode;

/// Arguments of `cri-harness run`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `cri-harness run`.
pub async fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`cri-harness run` is not built yet")
}
