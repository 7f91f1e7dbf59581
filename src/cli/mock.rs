//! `cri-harness mock` (being built).

use std::process::ExitCode;

/// Arguments of `cri-harness mock`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `cri-harness mock`.
pub async fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`cri-harness mock` is not built yet")
}
