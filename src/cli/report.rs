//! `cri-harness report diff`: what changed between two nights, gating on new failures.
//! `cri-harness report history`: many nights on one page: the case × night grid, what fails
//! since when, flake rates, and the bench figures over time with slowdowns flagged.
//! `cri-harness report merge`: merges the reports of many nodes (JSON files, or pods' logs
//! saved to files) into one JUnit, JSON and HTML report, saying which inputs held none and
//! which node names came twice.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use crate::report::model::Verdict;
use crate::report::{diff, history, merge};

/// Arguments of `cri-harness report`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Merge nodes' reports (JSON files or saved pod logs; directories read recursively for
    /// *.json and *.log) into junit.xml, merged.json and index.html.
    Merge(MergeArgs),
    /// What changed between two nights (report files or directories of them): new failures,
    /// fixes, changed verdicts, lanes and cases added and removed, known findings that came or
    /// went. Lanes pair by what ran (runtime, version, handler, mock or endpoint, kubelet), not
    /// by directory names. Exits 1 when a case fails that did not.
    Diff(DiffArgs),
    /// Many nights (directories of run and bench reports) on one page, ordered by start time:
    /// the case × night grid per lane, cases failing in the latest night and since when, flake
    /// rates, and the bench figures over time with slowdowns flagged. Writes DIR/index.html.
    History(HistoryArgs),
}

/// Arguments of `cri-harness report history`.
#[derive(Debug, clap::Args)]
struct HistoryArgs {
    /// Night directories: each holds one night's run reports (one lane per report, paired
    /// across nights by what ran, as `report diff` pairs them) and `bench --json` reports
    #[arg(value_name = "DIR", required = true)]
    nights: Vec<PathBuf>,
    /// Directory to write index.html into
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

/// Arguments of `cri-harness report diff`.
#[derive(Debug, clap::Args)]
struct DiffArgs {
    /// The earlier night: a report file or a directory of them (one lane per report)
    #[arg(value_name = "OLD")]
    old: PathBuf,
    /// The later night, laid out like OLD
    #[arg(value_name = "NEW")]
    new: PathBuf,
    /// Also write the diff as JSON to this file
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

/// Arguments of `cri-harness report merge`.
#[derive(Debug, clap::Args)]
struct MergeArgs {
    /// Report files, pod log files or directories of them
    #[arg(value_name = "FILE|DIR", required = true)]
    inputs: Vec<PathBuf>,
    /// Directory to write junit.xml, merged.json and index.html into
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// An earlier night's reports (a file or directory, laid out like the inputs): the page
    /// gets a section of what changed since (as `report diff` prints it)
    #[arg(long, value_name = "FILE|DIR")]
    baseline: Option<PathBuf>,
}

/// Runs `cri-harness report`. Exits 1 when an input held no report or none was found (a node
/// that did not report must not pass unnoticed), after writing what it could.
pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Command::Merge(args) => {
            // Reading and rendering are CPU-bound: keep them off the async workers.
            tokio::task::spawn_blocking(move || merge_reports(&args))
                .await
                .context("the merge stopped")?
        }
        Command::Diff(args) => diff_reports(&args),
        Command::History(args) => tokio::task::spawn_blocking(move || history_page(&args))
            .await
            .context("the history stopped")?,
    }
}

fn history_page(args: &HistoryArgs) -> anyhow::Result<ExitCode> {
    let history = history::read_all(&args.nights).context("reading the nights")?;
    for problem in &history.problems {
        eprintln!("warning: {problem}");
    }
    print!("{}", history::text(&history));
    let path = history::write(&args.out, &history).context("writing the history page")?;
    println!("wrote {}", path.display());
    Ok(ExitCode::SUCCESS)
}

fn diff_reports(args: &DiffArgs) -> anyhow::Result<ExitCode> {
    let old = diff::read_side(&args.old).context("reading the old side")?;
    let new = diff::read_side(&args.new).context("reading the new side")?;
    let changes = diff::Diff::between(old, new).context("pairing the sides' lanes")?;
    print!("{}", changes.text());
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&changes)?;
        std::fs::write(path, json + "\n").with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(if changes.has_new_failures() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn merge_reports(args: &MergeArgs) -> anyhow::Result<ExitCode> {
    let mut merged = merge::read_all(&args.inputs);
    if let Some(baseline) = &args.baseline {
        let old = diff::read_side(baseline).context("reading the baseline")?;
        let new = diff::read_sides(&args.inputs).context("reading the inputs as a side")?;
        merged.changes =
            Some(diff::Diff::between(old, new).context("pairing the baseline's lanes")?);
    }
    for (_, why) in &merged.unread {
        eprintln!("warning: {why}");
    }
    for duplicate in &merged.duplicates {
        eprintln!(
            "warning: node name {} came from {} inputs ({}); kept all, shown as {}",
            duplicate.name,
            duplicate.sources.len(),
            duplicate
                .sources
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            duplicate.renamed.join(", ")
        );
    }
    let written = merge::write(&args.out, &merged).context("writing the merged report")?;
    let interrupted = match merged.count(Verdict::Interrupted) {
        0 => String::new(),
        n => format!(", {n} interrupted"),
    };
    println!(
        "merged {} nodes in {} groups (runtime, kernel), {} cases: {} passed, {} failed, {} warning, {} error, {} known, {} skipped, {} flaky{interrupted}",
        merged.nodes.len(),
        merged.groups.len(),
        merged.cases.len(),
        merged.count(Verdict::Passed),
        merged.count(Verdict::Failed),
        merged.count(Verdict::Warning),
        merged.count(Verdict::Error),
        merged.count(Verdict::Known),
        merged.count(Verdict::Skipped),
        merged.count(Verdict::Flaky),
    );
    for path in written {
        println!("wrote {}", path.display());
    }
    if merged.nodes.is_empty() {
        eprintln!("error: no report found in the inputs");
        return Ok(ExitCode::FAILURE);
    }
    Ok(if merged.unread.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
