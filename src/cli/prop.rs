//! `cri-harness prop`: the manager's properties as a long run against the built-in mock or a
//! runtime endpoint, seeded and reproducible, printing cases per second and, on failure, the
//! shrunk case as a suite file that `cri-harness run --suites DIR` replays. With
//! `--differential` it holds the mock to a real runtime instead. The target is chosen as for
//! `run`: `--mock`, else the endpoint from `-r`, CONTAINER_RUNTIME_ENDPOINT or crictl's config.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use super::common::{Chosen, LeaseDirArg, TargetArgs};
use super::INTERRUPTED;
use crate::cri;
use crate::manager::KubeletProfile;
use crate::mock::MockRuntime;
use crate::prop::{self, differential, Naming, Profile, Property, Target};

/// Arguments of `cri-harness prop`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Generated cases per property (sequences, with --differential)
    #[arg(long, value_name = "N", default_value_t = 1000)]
    cases: u32,
    /// Seed of the generator: the same seed generates the same cases [default: random, printed]
    #[arg(long, value_name = "S")]
    seed: Option<u64>,
    /// Run only this property (repeatable); one of the names `--list` prints
    #[arg(long = "property", value_name = "NAME", value_parser = property_name)]
    properties: Vec<String>,
    /// Print the properties and exit
    #[arg(long)]
    list: bool,
    /// Apply each sequence to a fresh mock and to the runtime endpoint and compare the
    /// manager's redacted answers
    #[arg(long)]
    differential: bool,
    /// Write the shrunk failing cases to FILE as a suite (replay: `run --mock --suites DIR`)
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Run id labelled on every object made on a runtime endpoint [default: generated]
    #[arg(long, value_name = "ID")]
    run_id: Option<String>,
    /// `--mock` runs the properties against an in-process mock
    #[command(flatten)]
    target: TargetArgs,
    #[command(flatten)]
    lease: LeaseDirArg,
    /// The kubelet whose rules the manager follows where the 2016 seed and today's kubelet
    /// differ (kill and pod status on NotFound, GetPods order)
    #[arg(long, value_name = "KUBELET", value_enum, default_value_t = KubeletProfile::Seed)]
    kubelet: KubeletProfile,
}

fn property_name(name: &str) -> Result<String, String> {
    match Property::from_name(name) {
        Some(_) => Ok(name.to_owned()),
        None => Err(format!(
            "unknown property; valid: {}",
            Property::ALL.map(Property::name).join(", ")
        )),
    }
}

/// A seed from the clock and the process id, for runs that name none.
pub(crate) fn random_seed() -> u64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ (u64::from(std::process::id()).rotate_left(32))
}

/// The generator of one property in a run: derived from the run's seed and the property's
/// name, so `--property` does not change the cases another property gets.
pub fn rng_for(seed: u64, stream: &str) -> TestRng {
    let digest = Sha256::digest(format!("{seed}/{stream}").as_bytes());
    TestRng::from_seed(RngAlgorithm::ChaCha, &digest)
}

/// How many runners share a property's cases on the mock, each on a thread and a mock of its
/// own: this machine's two cores. Fixed, so a seed gives the same cases on every machine.
const MOCK_SHARDS: u32 = 2;

/// A mock, and a runtime on the current thread that serves it and runs the cases against it.
struct OneThread {
    runtime: tokio::runtime::Runtime,
    target: Target,
    /// Kept alive while the target is in use.
    _mock: MockRuntime,
}

impl OneThread {
    fn start(kubelet: KubeletProfile) -> anyhow::Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the property's own async runtime")?;
        let mock = MockRuntime::new();
        let target = runtime
            .block_on(Target::mock(&mock))
            .context("starting the property's own mock")?
            .with_kubelet(kubelet);
        Ok(Self {
            runtime,
            target,
            _mock: mock,
        })
    }
}

/// Runs `cri-harness prop`; `stop` (SIGINT, SIGTERM) ends it at once, saying how to remove
/// what the current case made on an endpoint.
pub async fn run(args: Args, stop: CancellationToken) -> anyhow::Result<ExitCode> {
    if args.list {
        for property in Property::ALL {
            let note = if property.needs_mock_control() {
                " (mock only)"
            } else {
                ""
            };
            println!("{}{note}", property.name());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let chosen = args.target.choose()?;
    if args.differential && chosen == Chosen::Mock {
        anyhow::bail!(
            "--differential compares the mock with a runtime: give the runtime's endpoint (-r/--runtime-endpoint), not --mock"
        );
    }
    let run_id = super::common::run_id(args.run_id.clone())?;
    let (_lease, clean_with) = args.lease.lease_for(&chosen, &run_id)?;
    tokio::select! {
        outcome = properties(args, chosen, run_id) => outcome,
        () = stop.cancelled() => {
            if let Some(command) = clean_with {
                eprintln!("interrupted: the current case's objects may be left on the runtime; remove them with: {command}");
            }
            Ok(ExitCode::from(INTERRUPTED))
        }
    }
}

async fn properties(args: Args, chosen: Chosen, run_id: String) -> anyhow::Result<ExitCode> {
    let seed = args.seed.unwrap_or_else(random_seed);
    println!("seed: {seed} (rerun with --seed {seed})");
    let selected: Vec<Property> = if args.properties.is_empty() {
        Property::ALL.to_vec()
    } else {
        args.properties
            .iter()
            .filter_map(|name| Property::from_name(name))
            .collect()
    };
    // The mock (kept alive for the whole run) or the endpoint's client.
    let (target, _mock, profile) = match &chosen {
        Chosen::Mock => {
            let mock = MockRuntime::new();
            let target = Target::mock(&mock)
                .await
                .context("starting the in-process mock")?;
            (target, Some(mock), Profile::MOCK)
        }
        Chosen::Endpoint { runtime, image } => {
            // The connect error already names the socket or address; no context needed.
            let client = cri::connect(runtime, image, &args.target.endpoint.options()).await?;
            println!("target: {} (run id {run_id})", client.endpoint());
            (Target::endpoint(client), None, Profile::REAL)
        }
    };
    let target = target.with_kubelet(args.kubelet);
    if args.differential {
        let outcome = differential::run(
            &target,
            differential::Options {
                sequences: args.cases,
                rng: rng_for(seed, "differential"),
                run_id: run_id.clone(),
            },
        )
        .await?;
        print!("{}", outcome.report());
        return Ok(if outcome.unexplained() == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    let mut failures = Vec::new();
    let counter = AtomicU64::new(0);
    for property in selected {
        if property.needs_mock_control() && !target.is_mock() {
            println!(
                "{}: skipped (needs the mock's control service)",
                property.name()
            );
            continue;
        }
        // On the mock the cases go to MOCK_SHARDS runners, each on a thread and a mock of its
        // own; a runner's cases come from its own stream of the seed, so a seed gives the same
        // cases whatever the machine, and the shard count never depends on it. An endpoint's
        // cases run one after another, from the property's one stream.
        let shards = if target.is_mock() {
            MOCK_SHARDS.min(args.cases.max(1))
        } else {
            1
        };
        // Case numbers (names on a runtime) are reserved for the whole property, then dealt
        // out in turn: case i of shard k is number first + k + shards × i, whatever the timing.
        let first = counter.fetch_add(u64::from(args.cases), Ordering::Relaxed);
        let started = Instant::now();
        let executed = Arc::new(AtomicU64::new(0));
        let runners = (0..shards).map(|shard| {
            let config = Config {
                cases: args.cases / shards + u32::from(shard < args.cases % shards),
                failure_persistence: None,
                ..Config::default()
            };
            let stream = if shards == 1 {
                property.name().to_owned()
            } else {
                format!("{}/{shard}", property.name())
            };
            let handle = tokio::runtime::Handle::current();
            let case_target = target.clone();
            let kubelet = args.kubelet;
            let run_id = run_id.clone();
            let executed_in = executed.clone();
            let next = AtomicU64::new(first + u64::from(shard));
            let step = u64::from(shards);
            tokio::task::spawn_blocking(move || {
                // On the mock, the cases, the manager and the mock all run on this one thread,
                // on a mock of the shard's own: every call is a hand-over within the thread
                // rather than a wake-up of another, which is most of what a case costs.
                let local = if case_target.is_mock() {
                    Some(OneThread::start(kubelet)?)
                } else {
                    None
                };
                // Built on the blocking thread: boxed strategies are not Send.
                let mut runner = TestRunner::new_with_rng(config, rng_for(seed, &stream));
                Ok::<_, anyhow::Error>(runner.run(&property.strategy(profile), |case| {
                    executed_in.fetch_add(1, Ordering::Relaxed);
                    let naming = Naming {
                        run_id: run_id.clone(),
                        case: next.fetch_add(step, Ordering::Relaxed),
                    };
                    match &local {
                        Some(local) => local.runtime.block_on(prop::run_case(
                            property,
                            &case,
                            &local.target,
                            &naming,
                        )),
                        None => {
                            handle.block_on(prop::run_case(property, &case, &case_target, &naming))
                        }
                    }
                    .map_err(|err| TestCaseError::fail(err.chain()))
                }))
            })
        });
        // The first shard's failure, in shard order, is the one reported: the same on every
        // run of the seed.
        let mut outcome = Ok(());
        for joined in futures::future::join_all(runners).await {
            let shard = joined.context("the property runner stopped")??;
            if outcome.is_ok() {
                outcome = shard;
            }
        }
        let elapsed = started.elapsed().as_secs_f64();
        let executed = executed.load(Ordering::Relaxed);
        let rate = executed as f64 / elapsed.max(f64::EPSILON);
        match outcome {
            Ok(()) => println!(
                "{}: ok, {} cases in {elapsed:.1} s ({rate:.0} cases/s)",
                property.name(),
                args.cases
            ),
            Err(TestError::Fail(reason, case)) => {
                println!(
                    "{}: FAILED after {executed} runs in {elapsed:.1} s ({rate:.0} cases/s)\n  {}\n  shrunk case: {case:?}",
                    property.name(),
                    reason.message()
                );
                let about = format!(
                    "Shrunk by `cri-harness prop {}--seed {seed} --property {}`: {}",
                    if target.is_mock() { "--mock " } else { "" },
                    property.name(),
                    reason.message()
                );
                failures.push(prop::suite_case(property, &case, target.is_mock(), &about));
            }
            Err(TestError::Abort(reason)) => {
                println!("{}: ABORTED: {}", property.name(), reason.message());
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    if failures.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    let suite = prop::suite_file(
        &format!("prop-{seed}"),
        &format!("Failing property cases of `cri-harness prop --seed {seed}`, shrunk."),
        failures,
    )?;
    println!("--- suite file ---\n{suite}");
    if let Some(path) = &args.out {
        std::fs::write(path, &suite).with_context(|| format!("writing {}", path.display()))?;
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        println!(
            "written to {}; replay: cri-harness run --mock --suites {}",
            path.display(),
            dir.map_or_else(|| ".".to_owned(), |d| d.display().to_string())
        );
    }
    Ok(ExitCode::FAILURE)
}
