//! `cri-harness contract`: prints the CRI contract's clauses (the table docs/contract.md
//! carries), or one clause with its level and basis, so a finding's clause can be looked up
//! from the binary alone.

use std::process::ExitCode;

use crate::contract::contract;

/// Arguments of `cri-harness contract`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print only this clause
    #[arg(value_name = "CLAUSE")]
    clause: Option<String>,
}

/// Runs `cri-harness contract`.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    match &args.clause {
        None => print!("{}", contract().table()),
        Some(id) => match contract().get(id) {
            Some(clause) => println!("{clause}\n  {}", clause.says.trim()),
            None => anyhow::bail!("no clause `{id}`; `cri-harness contract` lists them"),
        },
    }
    Ok(ExitCode::SUCCESS)
}
