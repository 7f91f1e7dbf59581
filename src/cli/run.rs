//! `cri-harness run`: loads the suites (embedded plus `--suites DIR`), runs the selected cases
//! against the mock or a runtime endpoint, prints a line per case, the snapshot diffs and a
//! summary, and writes JUnit and JSON reports on request. Ctrl-C cleans up before exiting.
//! On an endpoint the run holds a lease for its run id while it lives, so a `clean` meanwhile
//! leaves its objects alone.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use regex::Regex;
use tokio_util::sync::CancellationToken;

use super::common::{parse_duration, Chosen, LeaseDirArg, RegistryPrefixArg, TargetArgs};
use super::{cleanup_command, INTERRUPTED};
use crate::manager::KubeletProfile;
use crate::report;
use crate::runner::cleanup::Lease;
use crate::runner::{self, snapshot, Filter, RunConfig, Target};
use crate::suite;

/// Cases run at once on the mock unless `--parallel` says otherwise: every case has a mock of
/// its own, so nothing is shared, and its time is spent waiting (a hook's whole second, a hold),
/// not computing.
const MOCK_PARALLEL: u16 = 8;

/// Arguments of `cri-harness run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The built-in mock (a fresh one per case) or an endpoint
    #[command(flatten)]
    target: TargetArgs,
    #[command(flatten)]
    lease: LeaseDirArg,
    #[command(flatten)]
    images: RegistryPrefixArg,
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
    /// Number of cases run at once [default: 1 against a runtime; 8 on the mock, where each
    /// case has a mock of its own and mostly waits]. Against a runtime a case holds its place
    /// only while its steps run: its cleanup and leak check go on beside the next case
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    parallel: Option<u16>,
    /// Against a runtime, let the cases whose sandboxes only hold their containers share READY
    /// sandboxes (one case at a time each, run with the options the case asks for) rather than
    /// each run and remove its own. Each case's containers, lists, sweep and leak check stay its
    /// own; the run removes the shared sandboxes at its end. No effect on the mock
    #[arg(long)]
    share_sandboxes: bool,
    /// Time allowed for one case's steps; cleanup follows even after it runs out
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    case_timeout: Duration,
    /// Write junit.xml and results.json into DIR
    #[arg(long, value_name = "DIR")]
    report_dir: Option<PathBuf>,
    /// After the run, print the JSON report as one compact line, the last on stdout (a pod's
    /// log then carries it; `report merge` reads such logs)
    #[arg(long)]
    report_line: bool,
    /// Where the reference results of your own suites (--suites) are read and written, one
    /// `<suite>__<case>.snap` each; the embedded suites' references are compiled in and need no
    /// directory. --update-snapshots writes the embedded ones here too: run it from the source
    /// tree's root so the default, `snapshots`, is the tree's, then rebuild
    #[arg(long, value_name = "DIR", default_value = "snapshots")]
    snapshot_dir: PathBuf,
    /// Accept this run's results: write every missing or changed reference into
    /// --snapshot-dir instead of failing the case (without it a run writes no reference of an
    /// embedded suite; run it from the source tree's root)
    #[arg(long)]
    update_snapshots: bool,
    /// Run id labelled on every object the run creates [default: generated]
    #[arg(long, value_name = "ID")]
    run_id: Option<String>,
    /// Print the selected cases and exit without running them
    #[arg(long)]
    list: bool,
    /// RuntimeClass handler every RunPodSandbox asks for, as critest's -runtime-handler
    /// [default: the runtime's default handler]
    #[arg(long, value_name = "NAME", default_value = "")]
    runtime_handler: String,
    /// Directory for the cases' host files (log directories, volumes), one per case, removed
    /// with it; the runtime must see it at the same path [default: TMPDIR/cri-harness]
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
    /// Also run the environment-dependent cases that need the public registries
    #[arg(long)]
    online: bool,
    /// The kubelet whose rules the manager follows where the 2016 seed and today's kubelet
    /// differ (kill and pod status on NotFound, GetPods order); cases stating the other are
    /// skipped
    #[arg(long, value_name = "KUBELET", value_enum, default_value_t = KubeletProfile::Seed)]
    kubelet: KubeletProfile,
    /// Kubelet feature gates that switch a rule the manager ports, as the kubelet writes them
    /// (`LegacySidecarContainers=true,InPlacePodVerticalScaling=false`); unset gates take
    /// today's defaults (each gate's in docs/kubelet-profiles.md), and a case's own `feature_gates`
    /// override these
    #[arg(long, value_name = "NAME=BOOL,...", default_value = "", value_parser = boxed_gates)]
    feature_gates: Box<crate::manager::FeatureGates>,
    /// After the run and its reports, wait for SIGTERM or SIGINT before exiting (with the
    /// run's exit code), so a DaemonSet pod, whose containers are always restarted, runs the
    /// suites once
    #[arg(long)]
    hold: bool,
    /// Warnings (broken `should` clauses) and flaky cases fail the run too, not only failures
    /// and errors
    #[arg(long)]
    strict: bool,
    /// Run each selected case N times, each attempt isolated and cleaned up as a case is. A
    /// case that failed (failed or error) in some attempts only is `flaky (k of N failed)`,
    /// with each failed attempt's reason; it fails the run only with --strict
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    repeat: u32,
    /// Run a case that failed in all its attempts again, up to K more times; one that then
    /// passes is `flaky`, one that does not stays failed with each attempt's reason
    #[arg(long, value_name = "K", default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100))]
    rerun_failed: u32,
    /// Findings already reported upstream (YAML keyed by runtime name and version range; a
    /// file, or a directory of them): a listed failure on a matching runtime is `known`, a
    /// listed case that passes is flagged
    #[arg(long, value_name = "FILE|DIR")]
    known: Option<PathBuf>,
    /// For testing the harness itself: with --mock, serve one mock with this deliberate
    /// contract break (a `Defect` name, repeatable) and run the cases on it as on an endpoint
    #[arg(long = "mock-defect", value_name = "DEFECT", hide = true, value_parser = super::common::defect_name)]
    mock_defects: Vec<crate::mock::Defect>,
    /// With --mock, the mock pulls only from this registry host (repeatable), as a runtime
    /// that reaches nothing but its mirror: a pull of any other registry's name fails
    /// NotFound [default: every registry]
    #[arg(long = "mock-allow-registry", value_name = "HOST[:PORT]")]
    mock_allow_registries: Vec<String>,
    /// With --mock, how the built-in mock answers where the CRI contract leaves room:
    /// `containerd` as containerd does, `other-runtime` otherwise wherever the contract allows
    /// (each freedom of `cri-harness contract`), refusing requests without what the kubelet
    /// always sends
    #[arg(long, value_name = "PROFILE", value_enum, default_value_t = crate::mock::ProfileName::Containerd)]
    mock_profile: crate::mock::ProfileName,
    /// For testing the harness itself: with --mock, take only this freedom of the contract (an
    /// id `cri-harness contract` lists, repeatable) on containerd's profile, no request held to
    /// the kubelet's
    #[arg(long = "mock-freedom", value_name = "FREEDOM", hide = true, value_parser = super::common::freedom_name, conflicts_with = "mock_profile")]
    mock_freedoms: Vec<crate::mock::Freedom>,
}

/// Runs `cri-harness run`; `stop` (SIGINT, SIGTERM) cancels it, cleaning up.
pub async fn run(args: Args, stop: CancellationToken) -> anyhow::Result<ExitCode> {
    if !args.hold {
        return run_once(args, stop).await;
    }
    // A run that could not start holds too: exiting would restart it, over and over.
    let code = match run_once(args, stop.clone()).await {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    };
    if !stop.is_cancelled() {
        println!("holding until SIGTERM (--hold)");
        stop.cancelled().await;
    }
    Ok(code)
}

async fn run_once(args: Args, stop: CancellationToken) -> anyhow::Result<ExitCode> {
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
    let given: Vec<String> = [
        filter.focus.as_ref().map(|f| format!("`--focus {f}`")),
        filter.skip.as_ref().map(|s| format!("`--skip {s}`")),
        (!filter.tags.is_empty()).then(|| format!("`--tags {}`", filter.tags.join(","))),
    ]
    .into_iter()
    .flatten()
    .collect();
    let selected = match suite::ensure_selected(
        &loaded.suites,
        |s, c| filter.selects(s, c),
        &given.join(" and "),
    ) {
        Ok(selected) => selected,
        Err(err) => {
            for error in &loaded.errors {
                eprintln!("error: {error}");
            }
            eprintln!("error: {err}");
            return Ok(ExitCode::FAILURE);
        }
    };
    if args.list {
        for suite in &loaded.suites {
            for case in suite.cases.iter().filter(|c| filter.selects(suite, c)) {
                let mut needs: Vec<String> =
                    case.needs.iter().map(|n| n.name().to_owned()).collect();
                needs.extend(case.kubelet.map(|k| format!("kubelet: {k}")));
                if !case.feature_gates.is_default() {
                    needs.push(format!("feature gates: {}", case.feature_gates));
                }
                let mark = if needs.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", needs.join(", "))
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
    // Taken before the first object is made and held to the end (see `clean`). The mock's
    // objects die with the process and need none.
    let chosen = args.target.choose()?;
    if !args.mock_allow_registries.is_empty() && chosen != Chosen::Mock {
        anyhow::bail!("--mock-allow-registry needs --mock");
    }
    let mock_registries = crate::mock::RegistryAllowList::only(args.mock_allow_registries);
    let mock_profile = if args.mock_freedoms.is_empty() {
        crate::mock::MockProfile::named(args.mock_profile)
    } else {
        crate::mock::MockProfile {
            freedoms: args.mock_freedoms.iter().copied().collect(),
            ..Default::default()
        }
    };
    // A mutated mock is served once, on a socket of its own, and run as an endpoint.
    let (chosen, _mutant) = match chosen {
        Chosen::Mock if !args.mock_defects.is_empty() => {
            let dir = tempfile::tempdir().context("making a directory for the mutated mock")?;
            let server = crate::mock::MockRuntime::with_defects(args.mock_defects.iter().copied())
                .with_registries(mock_registries.clone())
                .profiled(mock_profile.clone())
                .serve_unix(&dir.path().join("mock.sock"))
                .await
                .context("serving the mutated mock")?;
            let endpoint = server.endpoint();
            let chosen = Chosen::Endpoint {
                runtime: endpoint.clone(),
                image: endpoint,
            };
            (chosen, Some((server, dir)))
        }
        Chosen::Mock => (Chosen::Mock, None),
        _ if !args.mock_defects.is_empty() => anyhow::bail!("--mock-defect needs --mock"),
        _ if args.mock_profile != crate::mock::ProfileName::default()
            || !args.mock_freedoms.is_empty() =>
        {
            anyhow::bail!("--mock-profile needs --mock")
        }
        endpoint => (endpoint, None),
    };
    let (target, _lease, clean_with) = match chosen {
        Chosen::Mock => (Target::Mock, None, None),
        Chosen::Endpoint { runtime, image } => {
            let lease = Lease::acquire(&args.lease.dir(), &run_id)?;
            let clean_with = cleanup_command(&runtime, &image, &run_id);
            (
                Target::Endpoint { runtime, image },
                Some(lease),
                Some(clean_with),
            )
        }
    };
    // Only a real runtime keeps images after the run; the mock's die with it.
    let pulled_record = matches!(target, Target::Endpoint { .. })
        .then(|| crate::world::pulled::record_path(&args.lease.dir(), &run_id));
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    let known = args
        .known
        .as_deref()
        .map(crate::contract::known::KnownFindings::read)
        .transpose()?;
    let parallel = usize::from(args.parallel.unwrap_or(match target {
        Target::Mock => MOCK_PARALLEL,
        Target::Endpoint { .. } => 1,
    }));
    let config = RunConfig {
        target,
        suites: loaded.suites,
        filter,
        parallel,
        case_timeout: args.case_timeout,
        // The sweep's own bound, and room for its last round's calls.
        cleanup_timeout: args.case_timeout.max(runner::cleanup::SETTLE_BOUND)
            + args.target.endpoint.options().call_timeout * 2,
        connect: args.target.endpoint.options(),
        snapshot_dir: args.snapshot_dir,
        snapshots: snapshot::Policy {
            update: args.update_snapshots,
        },
        run_id,
        runtime_handler: args.runtime_handler,
        work_dir: args.work_dir.unwrap_or_else(runner::default_work_dir),
        online: args.online,
        pulled_record,
        kubelet: args.kubelet,
        feature_gates: *args.feature_gates,
        strict: args.strict,
        known,
        attempts: runner::Attempts {
            repeat: args.repeat,
            rerun_failed: args.rerun_failed,
        },
        images: args.images.names(),
        mock_registries,
        mock_profile,
        share_sandboxes: args.share_sandboxes,
    };
    if config.mock_profile.name != crate::mock::ProfileName::default() {
        println!("mock profile: {}", config.mock_profile.name);
    }
    if !config.runtime_handler.is_empty() {
        println!("runtime handler: {}", config.runtime_handler);
    }
    if let Some(prefix) = config.images.prefix() {
        println!("images from: {prefix} (--registry-prefix)");
    }
    if config.kubelet != KubeletProfile::Seed {
        println!("kubelet rules: {}", config.kubelet);
    }
    if !config.feature_gates.is_default() {
        println!("feature gates: {}", config.feature_gates);
    }
    let (progress, bar) = super::progress::display(selected, ci);
    let mut outcome = runner::run(config, stop, Some(progress)).await;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    outcome
        .errors
        .splice(0..0, loaded.errors.iter().map(ToString::to_string));
    if let Some(dir) = &args.report_dir {
        report::write(dir, &outcome).context("writing the reports")?;
    }
    // Even a run that stopped before any case reports its node: the collector must see it.
    let report_line = args
        .report_line
        .then(|| report::line(&outcome))
        .transpose()
        .context("rendering the report line")?;
    if outcome.cases.is_empty() {
        if let Some(aborted) = &outcome.aborted {
            // Nothing ran: one line says why, nothing else.
            eprintln!("error: {aborted}");
            report_line.iter().for_each(|line| println!("{line}"));
            return Ok(ExitCode::FAILURE);
        }
        if outcome.interrupted {
            eprintln!("interrupted before any case started: nothing was made, nothing to clean up");
            report_line.iter().for_each(|line| println!("{line}"));
            return Ok(ExitCode::from(INTERRUPTED));
        }
    }
    print!("{}", report::epilogue(&outcome, clean_with.as_deref()));
    if let Some(line) = report_line {
        println!("{line}");
    }
    Ok(if outcome.interrupted {
        ExitCode::from(INTERRUPTED)
    } else if outcome.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Parses `--feature-gates` boxed: the subcommand enum stays small.
fn boxed_gates(text: &str) -> Result<Box<crate::manager::FeatureGates>, crate::manager::GateError> {
    text.parse().map(Box::new)
}
