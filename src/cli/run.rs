//! `cri-harness run`: loads the suites (embedded plus `--suites DIR`), runs the selected cases
//! against the mock or a runtime endpoint, prints a line per case, the snapshot diffs and a
//! summary, and writes JUnit and JSON reports on request. Ctrl-C cleans up before exiting.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use regex::Regex;

use super::common::{parse_duration, EndpointArgs};
use crate::report;
use crate::runner::{self, snapshot, Filter, Interrupt, RunConfig, Target};
use crate::suite;

/// Exit code of a run stopped by SIGINT or SIGTERM (128 + SIGINT, as shells report it).
const INTERRUPTED: u8 = 130;

/// Arguments of `cri-harness run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Run against the built-in mock runtime (a fresh one per case) instead of an endpoint
    #[arg(long, conflicts_with_all = ["runtime_endpoint", "image_endpoint"])]
    mock: bool,
    #[command(flatten)]
    endpoint: EndpointArgs,
    /// Also load every *.yaml suite in DIR; a suite there replaces the embedded one of its name
    #[arg(long, value_name = "DIR")]
    suites: Option<PathBuf>,
    /// Run only cases whose `suite/case` matches this regular expression
    #[arg(long, value_name = "REGEX")]
    focus: Option<Regex>,
    /// Skip cases whose `suite/case` matches this regular expression
    #[arg(long, value_name = "REGEX")]
    skip: Option<Regex>,
    /// Run only cases with one of these tags (comma-separated)
    #[arg(long, value_name = "TAG", value_delimiter = ',')]
    tags: Vec<String>,
    /// Number of cases run at once
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    parallel: u16,
    /// Time allowed for one case's steps; cleanup follows even after it runs out
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    case_timeout: Duration,
    /// Write junit.xml and results.json into DIR
    #[arg(long, value_name = "DIR")]
    report_dir: Option<PathBuf>,
    /// Root of the snapshot tree (one subdirectory per target kind)
    #[arg(long, value_name = "DIR", default_value = "snapshots")]
    snapshot_dir: PathBuf,
    /// Accept changed snapshots: overwrite them instead of failing
    #[arg(long)]
    update_snapshots: bool,
    /// Run id labelled on every object the run creates [default: generated]
    #[arg(long, value_name = "ID")]
    run_id: Option<String>,
    /// Print the selected cases and exit without running them
    #[arg(long)]
    list: bool,
}

/// Runs `cri-harness run`.
pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let run_id = match args.run_id {
        Some(id) if runner::valid_run_id(&id) => id,
        Some(id) => anyhow::bail!(
            "run id {id:?} must be 1-20 lower-case letters, digits and inner dashes (it names namespaces)"
        ),
        None => runner::new_run_id(),
    };
    let loaded = suite::load(args.suites.as_deref());
    let filter = Filter {
        focus: args.focus,
        skip: args.skip,
        tags: args.tags,
    };
    if args.list {
        for suite in &loaded.suites {
            for case in suite.cases.iter().filter(|c| filter.selects(suite, c)) {
                let mark = if case.needs_mock_control() {
                    " [mock_control]"
                } else {
                    ""
                };
                println!("{}{mark}", case.full_name(suite));
            }
        }
        for error in &loaded.errors {
            println!("error: {error}");
        }
        return Ok(if loaded.errors.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    let target = if args.mock {
        Target::Mock
    } else {
        let (runtime, image) = args.endpoint.resolve()?;
        Target::Endpoint { runtime, image }
    };
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    let config = RunConfig {
        target,
        suites: loaded.suites,
        filter,
        parallel: usize::from(args.parallel),
        case_timeout: args.case_timeout,
        cleanup_timeout: args.case_timeout.max(Duration::from_secs(30)),
        connect: args.endpoint.options(),
        snapshot_dir: args.snapshot_dir,
        snapshots: snapshot::Policy {
            update: args.update_snapshots,
            ci,
        },
        run_id,
    };
    let interrupt = Interrupt::new();
    watch_signals(interrupt.clone())?;
    let progress: runner::Progress = Arc::new(|case| {
        let mut out = std::io::stdout().lock();
        // A closed stdout must not stop the run; the reports still get written.
        let _ = writeln!(out, "{}", report::case_line(case));
        let _ = out.flush();
    });
    let mut outcome = runner::run(config, interrupt, Some(progress)).await;
    outcome
        .errors
        .splice(0..0, loaded.errors.iter().map(ToString::to_string));
    if let Some(dir) = &args.report_dir {
        report::write(dir, &outcome).context("writing the reports")?;
    }
    if outcome.cases.is_empty() {
        if let Some(aborted) = &outcome.aborted {
            // Nothing ran: one line says why, nothing else.
            eprintln!("error: {aborted}");
            return Ok(ExitCode::FAILURE);
        }
    }
    print!("{}", report::epilogue(&outcome));
    Ok(if outcome.interrupted {
        ExitCode::from(INTERRUPTED)
    } else if outcome.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// SIGINT or SIGTERM asks the run to stop and clean up; a second one exits at once.
fn watch_signals(interrupt: Interrupt) -> anyhow::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut int = signal(SignalKind::interrupt()).context("listening for SIGINT")?;
    let mut term = signal(SignalKind::terminate()).context("listening for SIGTERM")?;
    tokio::spawn(async move {
        let mut seen = false;
        loop {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            if seen {
                eprintln!("interrupted again: exiting without cleaning up");
                std::process::exit(i32::from(INTERRUPTED));
            }
            seen = true;
            eprintln!("interrupted: cancelling the running cases and removing what they made");
            interrupt.trigger();
        }
    });
    Ok(())
}
