//! `cri-harness clean` (being built).

use std::process::ExitCode;

/// Arguments of `cri-harness clean`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `cri-harness clean`.
pub async fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`cri-harness clean` is not built yet")
}
