//! `cri-harness fuzz`: random sequences of CRI calls on a runtime (or the built-in mock, a
//! fresh one per sequence), each answer and the runtime's listed state checked against the
//! contract's model by clause, for a bounded time. Prints sequences and calls per second. A
//! break no known finding lists is run again: one that holds on every replay is shrunk and
//! printed as a suite case that `run --suites DIR` replays, and its seed as a line of proptest's
//! regression file; one that does not is reported flaky, with its calls as found.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use tokio_util::sync::CancellationToken;

use super::common::{
    defect_name, parse_duration, Chosen, LeaseDirArg, RegistryPrefixArg, TargetArgs,
};
use super::INTERRUPTED;
use crate::cri;
use crate::fuzz::{self, print, Options, Where};

/// Arguments of `cri-harness fuzz`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// `--mock` fuzzes a fresh in-process mock per sequence
    #[command(flatten)]
    target: TargetArgs,
    #[command(flatten)]
    lease: LeaseDirArg,
    #[command(flatten)]
    images: RegistryPrefixArg,
    /// Sequences run at once
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    parallel: u16,
    /// Longest sequence, in CRI calls (status and list checks after each call not counted)
    #[arg(long, value_name = "N", default_value_t = 12, value_parser = clap::value_parser!(u16).range(1..=200))]
    max_calls: u16,
    /// How long to fuzz
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    duration: Duration,
    /// Stop after this many sequences, if the time has not run out first
    #[arg(long, value_name = "N")]
    sequences: Option<u64>,
    /// Seed of the generator: the same seed generates the same sequences [default: random,
    /// printed]
    #[arg(long, value_name = "S")]
    seed: Option<u64>,
    /// Run id labelled on every object made on a runtime endpoint [default: generated]
    #[arg(long, value_name = "ID")]
    run_id: Option<String>,
    /// Findings already reported upstream: a break of a clause listed for the runtime is
    /// reported as known and the run goes on
    #[arg(long, value_name = "FILE|DIR")]
    known: Option<PathBuf>,
    /// Write the shrunk failing sequence, and each flaky clause's first sequence as found, to
    /// FILE as a suite (replay: `run --suites DIR`, with `--repeat N` for a flaky one)
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Fail the run on a flaky break too (one that only some replays of its calls showed)
    #[arg(long)]
    strict: bool,
    /// Append the failing sequence's seed to this proptest regression file
    #[arg(long, value_name = "FILE")]
    regressions: Option<PathBuf>,
    /// For testing the harness itself: with --mock, fuzz mocks with this deliberate contract
    /// break (a `Defect` name, repeatable)
    #[arg(long = "mock-defect", value_name = "DEFECT", hide = true, value_parser = defect_name)]
    mock_defects: Vec<crate::mock::Defect>,
}

/// Runs `cri-harness fuzz`; `stop` ends it at once, saying how to clean up on an endpoint.
pub async fn run(args: Args, stop: CancellationToken) -> anyhow::Result<ExitCode> {
    let chosen = args.target.choose()?;
    if !args.mock_defects.is_empty() && chosen != Chosen::Mock {
        anyhow::bail!("--mock-defect needs --mock");
    }
    let run_id = super::common::run_id(args.run_id.clone())?;
    let (_lease, clean_with) = args.lease.lease_for(&chosen, &run_id)?;
    tokio::select! {
        outcome = fuzz_run(args, chosen, run_id) => outcome,
        () = stop.cancelled() => {
            if let Some(command) = clean_with {
                eprintln!("interrupted: the running sequences' objects may be left on the runtime; remove them with: {command}");
            }
            Ok(ExitCode::from(INTERRUPTED))
        }
    }
}

async fn fuzz_run(args: Args, chosen: Chosen, run_id: String) -> anyhow::Result<ExitCode> {
    let seed = args.seed.unwrap_or_else(super::prop::random_seed);
    println!("seed: {seed} (rerun with --seed {seed})");
    let (target, version) = match &chosen {
        Chosen::Mock => (
            Where::Mock(args.mock_defects.clone()),
            crate::mock::default_version(),
        ),
        Chosen::Endpoint { runtime, image } => {
            let client = cri::connect(runtime, image, &args.target.endpoint.options()).await?;
            let version = client
                .version("v1")
                .await
                .context("asking the runtime's version")?;
            println!(
                "target: {} ({} {}, run id {run_id})",
                client.endpoint(),
                version.runtime_name,
                version.runtime_version
            );
            let systemd = client.runtime_config().await.is_ok_and(|answer| {
                answer
                    .linux
                    .is_some_and(|l| l.cgroup_driver == cri::v1::CgroupDriver::Systemd as i32)
            });
            (Where::Endpoint(Box::new(client), systemd), version)
        }
    };
    let known = args
        .known
        .as_deref()
        .map(crate::contract::known::KnownFindings::read)
        .transpose()?
        .map(|k| {
            (
                k,
                version.runtime_name.clone(),
                version.runtime_version.clone(),
            )
        });
    let mock = matches!(target, Where::Mock(_));
    let options = Options {
        seed,
        parallel: usize::from(args.parallel),
        max_calls: usize::from(args.max_calls),
        duration: args.duration,
        max_sequences: args.sequences,
        run_id,
        target,
        known,
        images: args.images.names(),
    };
    let report = fuzz::fuzz(options).await?;
    let secs = report.elapsed.as_secs_f64();
    println!(
        "fuzz: {} sequences, {} calls in {secs:.1} s ({:.1} sequences/s, {:.1} calls/s)",
        report.sequences,
        report.calls,
        report.sequences_per_second(),
        report.calls_per_second()
    );
    for (clause, seen) in &report.known {
        println!(
            "known [{clause}] in {} sequences ({}): e.g. expected {}, got {}",
            seen.count, seen.reference, seen.example.expected, seen.example.actual
        );
    }
    for (clause, flaky) in &report.flaky {
        let example = &flaky.example;
        println!(
            "flaky [{clause}] in {} sequences: the first broke it in {} of {} runs of its calls \
             (a race: not shrunk): {}\n  seed: {}",
            flaky.count, flaky.failed_runs, flaky.runs, example.failure, example.seed_line
        );
        for (i, call) in example.calls.iter().enumerate() {
            println!("    {i}: {call:?}");
        }
    }
    if let Some(shrunk) = &report.failure {
        println!(
            "FAILED [{}] after {:.1} s, in every one of {} runs: {}\n  shrunk from {} to {} calls in \
             {} runs:",
            shrunk.failure.clause,
            shrunk.found_after.as_secs_f64(),
            fuzz::run::REPLAYS + 1,
            shrunk.failure,
            shrunk.original_calls,
            shrunk.calls.len(),
            shrunk.shrink_runs
        );
        for (i, call) in shrunk.calls.iter().enumerate() {
            println!("    {i}: {call:?}");
        }
        println!("  seed: {} # shrinks to {:?}", shrunk.seed_line, shrunk.ops);
    }
    if report.failure.is_none() && report.flaky.is_empty() {
        println!("no break of the contract found");
        return Ok(ExitCode::SUCCESS);
    }
    let defects: String = args
        .mock_defects
        .iter()
        .map(|d| format!(" --mock-defect {d:?}"))
        .collect();
    let command = format!(
        "cri-harness fuzz{}{defects} --seed {seed} --max-calls {}",
        if mock { " --mock" } else { "" },
        args.max_calls,
    );
    let mut cases = Vec::new();
    if let Some(shrunk) = &report.failure {
        cases.push(print::suite_case(
            shrunk,
            &format!("Shrunk by `{command}`: {}", shrunk.failure),
        ));
    }
    for (clause, flaky) in &report.flaky {
        let mut case = print::suite_case(
            &flaky.example,
            &format!(
                "Found by `{command}`, not shrunk: its calls broke the clause in {} of {} runs. \
                 Replay it with --repeat. {}",
                flaky.failed_runs, flaky.runs, flaky.example.failure
            ),
        );
        case.name = format!("fuzz-flaky-{}", clause.replace('.', "-"));
        cases.push(case);
    }
    let suite = print::suite_file(
        &format!("fuzz-{seed}"),
        &format!("The failing sequences of `cri-harness fuzz --seed {seed}`."),
        &cases,
    )
    .map_err(|e| anyhow::anyhow!("rendering the suite: {e}"))?;
    println!("--- suite file ---\n{suite}");
    if let Some(path) = &args.out {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("making {}", dir.display()))?;
        }
        std::fs::write(path, &suite).with_context(|| format!("writing {}", path.display()))?;
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        println!(
            "written to {}; replay: cri-harness run{}{defects} --suites {}{}",
            path.display(),
            if mock { " --mock" } else { "" },
            dir.map_or_else(|| ".".to_owned(), |d| d.display().to_string()),
            if report.flaky.is_empty() {
                ""
            } else {
                " (--repeat 20 for a flaky case)"
            }
        );
    }
    let Some(shrunk) = &report.failure else {
        if args.strict {
            println!("FAILED: flaky breaks fail the run under --strict");
            return Ok(ExitCode::FAILURE);
        }
        println!("flaky breaks only: reported, not failing the run (--strict fails it)");
        return Ok(ExitCode::SUCCESS);
    };
    if let Some(path) = &args.regressions {
        use std::io::Write as _;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("opening {}", path.display()))?;
        writeln!(file, "{} # shrinks to {:?}", shrunk.seed_line, shrunk.ops)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(ExitCode::FAILURE)
}
