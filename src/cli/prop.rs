//! `cri-harness prop` (being built).

use std::process::ExitCode;

/// Arguments of `cri-harness prop`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `cri-harness prop`.
pub async fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`cri-harness prop` is not built yet")
}
