//! `cri-harness images` (being built).

use std::process::ExitCode;

/// Arguments of `cri-harness images`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `cri-harness images`.
pub async fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`cri-harness images` is not built yet")
}
