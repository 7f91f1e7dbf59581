//! `cri-harness version` (being built).

use std::process::ExitCode;

/// Arguments of `cri-harness version`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `cri-harness version`.
pub async fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`cri-harness version` is not built yet")
}
