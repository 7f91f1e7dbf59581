//! The runner: selects cases, runs each in isolation (its own namespace, pod UIDs and labels;
//! on the mock its own runtime behind a real socket), removes what each made, compares its
//! snapshot, and gathers the outcomes into a [`RunReport`].

pub mod case;
pub mod cleanup;
pub mod features;
pub mod host;
pub mod lsm;
pub mod schedule;
pub mod snapshot;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use regex::Regex;
use tokio_util::sync::CancellationToken;

pub use crate::report::model::{
    CaseOutcome, CaseReport, CaseTiming, Note, RunReport, Skip, SkipWhy, SnapshotReport, StepStop,
    StopKind, Verdict,
};
pub use case::{namespace, pod_uid};

use self::case::{CaseRun, Env};
use self::snapshot::{Policy, SnapshotStatus};
use crate::cri::control::mock_control_client::MockControlClient;
use crate::cri::{self, ConnectOptions, CriClient, Endpoint};
use crate::manager::KubeletProfile;
use crate::mock::{KubeletWire, MockRuntime};
use crate::suite::{step::Kind, Case, Need, Suite};
use crate::timing;
use crate::world::{PulledImages, SandboxPool};

/// Consecutive cases that could not reach the runtime before the run gives up on it.
const UNREACHABLE_LIMIT: usize = 3;

/// What the cases run against.
#[derive(Debug, Clone)]
pub enum Target {
    /// A fresh built-in mock runtime per case, each on its own unix socket.
    Mock,
    /// A real runtime, shared by all cases.
    Endpoint {
        /// RuntimeService endpoint.
        runtime: Endpoint,
        /// ImageService endpoint.
        image: Endpoint,
    },
}

/// Which cases to run; all of them by default.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only cases whose `suite/case` matches.
    pub focus: Option<Regex>,
    /// No case whose `suite/case` matches.
    pub skip: Option<Regex>,
    /// Only cases with at least one of these tags (none: no tag filter).
    pub tags: Vec<String>,
}

impl Filter {
    /// True when the case is selected.
    pub fn selects(&self, suite: &Suite, case: &Case) -> bool {
        let name = case.full_name(suite);
        self.focus.as_ref().is_none_or(|re| re.is_match(&name))
            && !self.skip.as_ref().is_some_and(|re| re.is_match(&name))
            && (self.tags.is_empty() || self.tags.iter().any(|t| case.tags.contains(t)))
    }
}

/// Everything a run needs.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The runtime.
    pub target: Target,
    /// The suites to pick cases from.
    pub suites: Vec<Suite>,
    /// Which cases.
    pub filter: Filter,
    /// Cases run at once (at least 1).
    pub parallel: usize,
    /// Bound on one case's steps.
    pub case_timeout: Duration,
    /// Bound on one case's cleanup, which runs after a timeout too.
    pub cleanup_timeout: Duration,
    /// Connection and per-call timeouts.
    pub connect: ConnectOptions,
    /// Where the references of user suites (`--suites`) are read and written, and where
    /// `--update-snapshots` writes those of embedded suites (the source tree's `snapshots/`).
    pub snapshot_dir: PathBuf,
    /// Whether references are updated.
    pub snapshots: Policy,
    /// Labels everything the run creates; see [`new_run_id`].
    pub run_id: String,
    /// The RuntimeClass handler every RunPodSandbox asks for (empty: the runtime's default),
    /// as critest's `-runtime-handler`.
    pub runtime_handler: String,
    /// Where cases make host files (log directories, volumes): one directory per case under
    /// it, removed with the case. It must be a path the runtime sees as the harness does.
    pub work_dir: PathBuf,
    /// Run the environment-dependent cases that need the public registries.
    pub online: bool,
    /// Where to record the images the run pulls, so `clean` can remove them should the run
    /// not get to (see [`crate::world::pulled::record_path`]); none: memory only.
    pub pulled_record: Option<PathBuf>,
    /// The kubelet whose rules the managers follow (`--kubelet`); a case that states another
    /// is skipped.
    pub kubelet: KubeletProfile,
    /// Kubelet feature gates the managers follow (`--feature-gates`); a case's own override
    /// them.
    pub feature_gates: crate::manager::FeatureGates,
    /// Warnings (broken `should` clauses) fail the run too (`--strict`).
    pub strict: bool,
    /// Listed findings (`--known FILE`): a listed failure on a matching runtime is `known`.
    pub known: Option<crate::contract::known::KnownFindings>,
    /// How many times each case runs (`--repeat`, `--rerun-failed`).
    pub attempts: Attempts,
    /// How the images cases name become the references they send (`--registry-prefix`).
    pub images: crate::images::ImageNames,
    /// The registries the mock pulls from (`--mock-allow-registry`); every one by default.
    pub mock_registries: crate::mock::RegistryAllowList,
    /// How the built-in mock answers (`--mock-profile`); its `name` is the profile a report
    /// records. Only [`Target::Mock`] and a mock served for `--mock-defect` use it.
    pub mock_profile: crate::mock::MockProfile,
    /// On a runtime, cases whose sandboxes only hold their containers share READY sandboxes
    /// rather than each run their own (`--share-sandboxes`; see [`crate::world::pool`]).
    pub share_sandboxes: bool,
}

/// How many times each case runs: `repeat` attempts, then, while every attempt so far failed,
/// up to `rerun_failed` more. Each attempt is isolated as a case is (its own namespace, pod
/// UIDs, labels, host directory and, on the mock, runtime) and cleaned up before the next;
/// [`crate::report::attempts::combine`] makes the case's verdict of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempts {
    /// Attempts every case gets (at least 1).
    pub repeat: u32,
    /// Further attempts a case gets while all its attempts failed.
    pub rerun_failed: u32,
}

impl Default for Attempts {
    /// Once, no rerun.
    fn default() -> Self {
        Self {
            repeat: 1,
            rerun_failed: 0,
        }
    }
}

impl Attempts {
    /// True when a case whose attempts so far ended as `first` then `later` runs again.
    pub fn another(&self, first: &CaseReport, later: &[CaseReport]) -> bool {
        let repeat = self.repeat.max(1);
        let ran = u32::try_from(later.len() + 1).unwrap_or(u32::MAX);
        ran < repeat
            || (ran < repeat.saturating_add(self.rerun_failed)
                && std::iter::once(first)
                    .chain(later)
                    .all(|a| a.outcome.verdict().fails()))
    }
}

/// Where cases make host files unless told otherwise: `cri-harness` in the system's temporary
/// directory (a runtime on the same machine sees it at the same path).
pub fn default_work_dir() -> PathBuf {
    std::env::temp_dir().join("cri-harness")
}

/// A fresh run id: 8 hex digits from the clock and the process id, short enough for
/// namespaces and labels.
pub fn new_run_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mixed = (nanos as u64) ^ (u64::from(std::process::id()) << 32);
    format!("{:08x}", (mixed ^ (mixed >> 29)) as u32)
}

/// True when `id` can label objects and name namespaces: 1-20 lower-case letters, digits, `-`.
pub fn valid_run_id(id: &str) -> bool {
    (1..=20).contains(&id.len())
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !id.starts_with('-')
        && !id.ends_with('-')
}

/// Stops a run from outside (Ctrl-C): no case starts after it, running cases are cancelled
/// and cleaned up, and a run still connecting stops connecting.
pub type Interrupt = CancellationToken;

/// What a run tells its progress display.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// A case starts running (`suite/case`).
    Started(&'a str),
    /// A case finished, in completion order.
    Finished(&'a CaseReport),
}

/// Called as each case starts and finishes.
pub type Progress = Arc<dyn Fn(Event<'_>) + Send + Sync>;

/// What every case shares.
struct Shared {
    /// The runtime's name and version from its Version answer, for the known findings.
    runtime: (Option<String>, Option<String>),
    config: RunConfig,
    client: Option<CriClient>,
    target: String,
    interrupt: Interrupt,
    unreachable_streak: AtomicUsize,
    abort: Mutex<Option<String>>,
    progress: Option<Progress>,
    /// Images this run pulled that the runtime did not have: removed when the run ends.
    pulled: Arc<PulledImages>,
    /// When the run's cases began, for each case's start offset.
    started: Instant,
    /// How many cases the run selected: attempts after the first are numbered past them.
    selected: usize,
    /// The run's `--parallel` workers: a case holds one while its steps run, and gives it
    /// back before its cleanup, so on a runtime the removals overlap the next case.
    workers: Arc<tokio::sync::Semaphore>,
    /// The sandboxes the run's cases share, on a runtime with `--share-sandboxes`.
    pool: Option<Arc<SandboxPool>>,
}

/// A case's hold on one of the run's workers, given back once its steps are over (its cleanup
/// and leak check go on beside the next case), or when the case ends, whichever comes first.
struct WorkerSlot(Mutex<Option<tokio::sync::OwnedSemaphorePermit>>);

impl WorkerSlot {
    async fn take(workers: &Arc<tokio::sync::Semaphore>) -> Self {
        // The semaphore is never closed: an error cannot happen, and would only mean no bound.
        Self(Mutex::new(workers.clone().acquire_owned().await.ok()))
    }

    /// Gives the worker to the next case.
    fn release(&self) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take();
    }
}

impl Shared {
    fn aborted(&self) -> Option<String> {
        self.abort
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Runs the selected cases and reports on them. Never fails as a whole: a runtime that cannot
/// be reached ends the run with [`RunReport::aborted`] set.
pub async fn run(config: RunConfig, interrupt: Interrupt, progress: Option<Progress>) -> RunReport {
    let started = Instant::now();
    let selected: Vec<(Suite, Case)> = config
        .suites
        .iter()
        .flat_map(|suite| {
            suite
                .cases
                .iter()
                .filter(|case| config.filter.selects(suite, case))
                .map(move |case| (suite.clone(), case.clone()))
        })
        .collect();
    let mut report = RunReport {
        run_id: config.run_id.clone(),
        target: "mock".to_owned(),
        target_kind: "mock".to_owned(),
        runtime_handler: config.runtime_handler.clone(),
        // A run on the mock in another profile than its default names it here: it is
        // another lane, with other answers.
        mock_profile: match config.target {
            Target::Mock if config.mock_profile.name != crate::mock::ProfileName::default() => {
                config.mock_profile.name.to_string()
            }
            _ => String::new(),
        },
        kubelet: Some(config.kubelet.name().to_owned()),
        cases: Vec::new(),
        errors: Vec::new(),
        aborted: None,
        interrupted: false,
        duration: Duration::ZERO,
        started_at: Some(
            humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        ),
        node: crate::report::node::Node::read(None),
        strict: config.strict,
        known_findings: config.known.as_ref().map(|k| k.source.clone()),
        feature_gates: owned(config.feature_gates.effective()),
    };
    let client = match &config.target {
        Target::Mock => {
            report.node = crate::report::node::Node::read(Some(&crate::mock::default_version()));
            None
        }
        Target::Endpoint { runtime, image } => {
            report.target = runtime.to_string();
            // A runtime that accepts and then never answers must not hold off a Ctrl-C.
            let connected = tokio::select! {
                connected = connect_runtime(runtime, image, &config.connect) => connected,
                () = interrupt.cancelled() => {
                    report.interrupted = true;
                    report.duration = started.elapsed();
                    return report;
                }
            };
            match connected {
                Ok((client, version)) => {
                    report.target_kind = target_kind(&version.runtime_name);
                    report.node = crate::report::node::Node::read(Some(&version));
                    Some(client)
                }
                Err(message) => {
                    report.aborted = Some(message);
                    report.duration = started.elapsed();
                    return report;
                }
            }
        }
    };
    let parallel = config.parallel.max(1);
    let shared_record = config.pulled_record.clone();
    let runtime = (
        report.node.runtime_name.clone(),
        report.node.runtime_version.clone(),
    );
    let pool = (config.share_sandboxes && client.is_some()).then(|| {
        let pool = SandboxPool::new(&config.run_id, &config.work_dir);
        // What the run's cases will ask for, so a sandbox no later case can take is removed
        // as soon as its case is done with it.
        for (_, case) in selected.iter().filter(|(_, case)| shares_sandboxes(case)) {
            for step in &case.steps {
                if let crate::suite::step::Step::RunSandbox(sandbox) = step {
                    for _ in 0..config.attempts.repeat.max(1) {
                        pool.expect(sandbox.pool_key());
                    }
                }
            }
        }
        Arc::new(pool)
    });
    let shared = Arc::new(Shared {
        runtime,
        pool,
        config,
        client,
        target: report.target.clone(),
        interrupt,
        unreachable_streak: AtomicUsize::new(0),
        abort: Mutex::new(None),
        progress,
        pulled: Arc::new(PulledImages::new(shared_record)),
        started: Instant::now(),
        selected: selected.len(),
        workers: Arc::new(tokio::sync::Semaphore::new(parallel)),
    });
    // On a runtime, as many cases again as there are workers may be cleaning up: each holds a
    // worker only for its steps (see `WorkerSlot`), and its verdict waits for its own cleanup
    // and leak check. A mock case's cleanup is its own mock's, and costs nothing to wait for.
    let in_flight = if shared.client.is_some() {
        parallel * 2
    } else {
        parallel
    };
    // Each case keeps its number in the selection; on a runtime, whose CPU the workers share,
    // they start in the order `schedule` gives (a verdict never depends on it).
    let mut numbered: Vec<(usize, (Suite, Case))> = selected.into_iter().enumerate().collect();
    if shared.client.is_some() && parallel > 1 {
        let estimates: Vec<schedule::Estimate> = numbered
            .iter()
            .map(|(_, (_, case))| schedule::estimate(case))
            .collect();
        // Where each case stands in the start order, by its index in the selection.
        let mut place = vec![0; numbered.len()];
        for (at, index) in schedule::start_order(&estimates).into_iter().enumerate() {
            place[index] = at;
        }
        numbered.sort_by_key(|(index, _)| place[*index]);
    }
    let mut cases: Vec<CaseReport> = futures::stream::iter(numbered)
        .map(|(index, (suite, case))| {
            let shared = shared.clone();
            async move { run_case(&shared, &suite, &case, index + 1).await }
        })
        .buffer_unordered(in_flight)
        .collect()
        .await;
    cases.sort_by_key(|c| c.number);
    report.cases = cases;
    if let Some(client) = &shared.client {
        if shared.interrupt.is_cancelled() {
            // Each case swept its own labels; this sweep of the run's catches what none could
            // see (a case whose cleanup ran out of its time).
            let selector = cleanup::Selector {
                run_id: Some(shared.config.run_id.clone()),
                case: None,
            };
            let swept = cleanup::sweep(client, &selector, cleanup::Settle::default()).await;
            if !swept.clean() {
                let left: Vec<String> = swept.left.iter().map(ToString::to_string).collect();
                let why = swept
                    .list_error
                    .as_ref()
                    .map_or_else(|| swept.errors.join("; "), ToString::to_string);
                report.errors.push(format!(
                    "the interrupted run's sweep left {} objects after {:.1} s: {} ({why})",
                    left.len(),
                    swept.elapsed.as_secs_f64(),
                    left.join(", ")
                ));
            }
        }
        if let Some(pool) = &shared.pool {
            report.errors.extend(remove_pool(client, pool).await);
        }
        report
            .errors
            .extend(remove_pulled(client, &shared.pulled).await);
    }
    report.aborted = shared.aborted();
    report.interrupted = shared.interrupt.is_cancelled();
    report.duration = started.elapsed();
    report
}

/// Connects to a real runtime and asks its Version (its name is the report's target kind).
async fn connect_runtime(
    runtime: &Endpoint,
    image: &Endpoint,
    options: &ConnectOptions,
) -> Result<(CriClient, cri::v1::VersionResponse), String> {
    let client = cri::connect(runtime, image, options)
        .await
        .map_err(|err| format!("cannot reach the runtime at {runtime}: {err}"))?;
    let version = client
        .version("")
        .await
        .map_err(|err| format!("the runtime at {runtime} does not answer Version: {err}"))?;
    Ok((client, version))
}

/// A runtime name as a file name: the report's target kind.
pub fn target_kind(runtime_name: &str) -> String {
    let kind: String = runtime_name
        .to_ascii_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if kind.is_empty() || kind.starts_with('.') {
        "unnamed-runtime".to_owned()
    } else {
        kind
    }
}

/// Runs one case, as many times as [`RunConfig::attempts`] asks, and reports it (also to the
/// progress callback). An attempt during which the run was interrupted or aborted is left out
/// unless it is the first: it was cut short, and no attempt follows it.
async fn run_case(shared: &Shared, suite: &Suite, case: &Case, number: usize) -> CaseReport {
    // Started once it has a worker: a case waiting for one has not begun.
    let slot = WorkerSlot::take(&shared.workers).await;
    if let Some(progress) = &shared.progress {
        progress(Event::Started(&case.full_name(suite)));
    }
    let stopped = || shared.interrupt.is_cancelled() || shared.aborted().is_some();
    let first = run_attempt(shared, suite, case, number, 1, slot).await;
    let mut later = Vec::new();
    while shared.config.attempts.another(&first, &later) && !stopped() {
        let attempt = u32::try_from(later.len() + 2).unwrap_or(u32::MAX);
        let slot = WorkerSlot::take(&shared.workers).await;
        let report = run_attempt(shared, suite, case, number, attempt, slot).await;
        if stopped() {
            break;
        }
        later.push(report);
    }
    let report = crate::report::attempts::combine(first, later);
    if let Some(progress) = &shared.progress {
        progress(Event::Finished(&report));
    }
    report
}

/// Runs one attempt of case `number` (attempt 1 is the case's only one in a plain run), under
/// the isolation number `number` for attempt 1 and one past every selected case's for later
/// attempts, so no two attempts of a run share a namespace, label or host directory.
async fn run_attempt(
    shared: &Shared,
    suite: &Suite,
    case: &Case,
    number: usize,
    attempt: u32,
    slot: WorkerSlot,
) -> CaseReport {
    let started = Instant::now();
    let later = usize::try_from(attempt.saturating_sub(1)).unwrap_or(usize::MAX);
    let isolation = number.saturating_add(later.saturating_mul(shared.selected));
    let spent = Arc::new(timing::Spent::default());
    let Outcome {
        outcome,
        snapshot,
        unreachable,
        clause,
        notes,
        cleanup,
        stopped,
        rpcs,
    } = timing::scope(
        spent.clone(),
        Box::pin(case_outcome(shared, suite, case, isolation, attempt, &slot)),
    )
    .await;
    let totals = spent.totals();
    let mut report = CaseReport {
        suite: suite.name.clone(),
        case: case.name.clone(),
        source: suite.source.clone(),
        line: case.line,
        number,
        outcome,
        duration: started.elapsed(),
        snapshot,
        clause,
        notes,
        finding_fixed: None,
        environment: case.environment().map(str::to_owned),
        timing: CaseTiming {
            started: started.saturating_duration_since(shared.started),
            cri: totals.cri,
            calls: totals.calls,
            waiting: totals.waiting,
            cleanup,
        },
        unreachable,
        feature_gates: owned(case.feature_gates.explicit()),
        attempts: 1,
        failures: Vec::new(),
        stopped,
        rpcs,
    };
    if let Some(known) = &shared.config.known {
        let (name, version) = &shared.runtime;
        if let (Some(name), Some(version)) = (name, version) {
            if let Some(finding) = known.find(name, version, &report.full_name()) {
                apply_finding(finding, &mut report);
            }
        }
    }
    if matches!(
        report.outcome,
        CaseOutcome::Failed(_) | CaseOutcome::Error(_)
    ) && unreachable
    {
        let streak = shared.unreachable_streak.fetch_add(1, Ordering::SeqCst) + 1;
        if streak >= UNREACHABLE_LIMIT && shared.client.is_some() {
            let mut abort = shared.abort.lock().unwrap_or_else(PoisonError::into_inner);
            abort.get_or_insert_with(|| {
                format!(
                    "the runtime at {} stopped answering ({streak} cases in a row could not reach it); the run stops here",
                    shared.target
                )
            });
        }
    } else if !matches!(report.outcome, CaseOutcome::Skipped(_)) {
        shared.unreachable_streak.store(0, Ordering::SeqCst);
    }
    report
}

/// Applies a finding listed for this case: a failure of the listed must clause becomes
/// `known`; a pass, or a warning (only should clauses broke, so the listed must held), is
/// flagged as maybe fixed. An error stays an error: a setup that could not be made says
/// nothing of the finding, and hiding it would hide a broken run.
fn apply_finding(finding: &crate::contract::known::Finding, case: &mut CaseReport) {
    let reason = match &case.outcome {
        CaseOutcome::Failed(reason) if case.clause.as_deref() == Some(finding.clause.as_str()) => {
            reason.clone()
        }
        CaseOutcome::Passed | CaseOutcome::Warning(_) => {
            case.finding_fixed = Some(finding.reference.clone());
            return;
        }
        _ => return,
    };
    case.outcome = CaseOutcome::Known {
        reason,
        finding: finding.reference.clone(),
    };
    case.clause = Some(finding.clause.clone());
}

/// How one case ended, before the run's findings are applied.
struct Outcome {
    outcome: CaseOutcome,
    snapshot: Option<SnapshotReport>,
    /// It ended because the runtime did not answer.
    unreachable: bool,
    clause: Option<String>,
    notes: Vec<Note>,
    /// Time its cleanup took.
    cleanup: Duration,
    /// Where its steps stopped early, if they did.
    stopped: Option<StepStop>,
    /// The CRI methods its steps called, as the mock received them (mock runs only).
    rpcs: Vec<String>,
}

impl Outcome {
    fn of(outcome: CaseOutcome) -> Self {
        Self {
            outcome,
            snapshot: None,
            unreachable: false,
            clause: None,
            notes: Vec::new(),
            cleanup: Duration::ZERO,
            stopped: None,
            rpcs: Vec::new(),
        }
    }
}

/// Case `number` (its isolation number) at its `attempt`.
async fn case_outcome(
    shared: &Shared,
    suite: &Suite,
    case: &Case,
    number: usize,
    attempt: u32,
    slot: &WorkerSlot,
) -> Outcome {
    let skip = |why, reason: String| Outcome::of(CaseOutcome::skipped(why, reason));
    if shared.interrupt.is_cancelled() {
        return skip(
            SkipWhy::NotRun,
            "not run: the run was interrupted".to_owned(),
        );
    }
    if let Some(reason) = shared.aborted() {
        return skip(SkipWhy::NotRun, format!("not run: {reason}"));
    }
    if case.needs(Need::Online) && !shared.config.online {
        return skip(
            SkipWhy::Environment,
            format!(
                "environment-dependent: it {}; run with --online where the machine has it",
                Need::Online.environment().unwrap_or("needs the internet")
            ),
        );
    }
    if case.needs(Need::DockerHubNames) {
        if let Some(prefix) = shared.config.images.prefix() {
            return skip(
                SkipWhy::Environment,
                format!(
                    "environment-dependent: it {}, and this run takes every image from {prefix} (--registry-prefix)",
                    Need::DockerHubNames.environment().unwrap_or("names Docker Hub images")
                ),
            );
        }
    }
    if let Some(wanted) = case.kubelet.filter(|&k| k != shared.config.kubelet) {
        return skip(
            SkipWhy::KubeletProfile,
            format!(
                "expects the rules of the {wanted} kubelet; this run follows the {} kubelet's (run with --kubelet {wanted})",
                shared.config.kubelet
            ),
        );
    }
    if let Some((need, why)) = lsm::first_lack(std::path::Path::new("/"), &case.needs) {
        // Decided before any target: neither a runtime nor the mock can confine a process
        // with a module the kernel it runs on does not have.
        return skip(SkipWhy::HostLacks, format!("the host lacks {need}: {why}"));
    }
    match &shared.client {
        Some(client) => {
            if case.needs_mock_control() {
                let reason =
                    "needs the mock's control service (mock_control); the target is a real runtime";
                return skip(SkipWhy::MockOnly, reason.to_owned());
            }
            let env = Env {
                // Its own record of calls in flight: its cleanup waits for its calls only.
                client: client.with_own_in_flight(),
                control: None,
                runtime_handler: shared.config.runtime_handler.clone(),
                host_dir: case_dir(&shared.config, number),
                pulled: Some(shared.pulled.clone()),
                attempt,
                images: shared.config.images.clone(),
                kubelet: shared.config.kubelet,
                feature_gates: shared
                    .config
                    .feature_gates
                    .overridden_by(&case.feature_gates),
                crash_loop_back_off: case.crash_loop_back_off,
                pool: shared.pool.clone().filter(|_| shares_sandboxes(case)),
            };
            Box::pin(run_in(shared, suite, case, number, env, slot)).await
        }
        None => {
            if case.needs(Need::Process) {
                let reason =
                    "needs a real process in the container (needs: [process]); the mock runs none";
                return skip(SkipWhy::NeedsProcess, reason.to_owned());
            }
            run_on_mock(shared, suite, case, number, attempt, slot).await
        }
    }
}

/// The step kinds a case that shares sandboxes may have besides `run_sandbox`: they act on
/// the case's own containers and images, its host files, the node, or an address, never on a
/// sandbox as such (its status, stats, stop or removal, its port forwards), and never through
/// the manager, which lists pods.
const SHARING_STEPS: &[&str] = &[
    "check_host_mount",
    "check_host_path",
    "check_log",
    "connect",
    "container_mounts",
    "container_stats",
    "container_status",
    "create_container",
    "exec",
    "exec_sync",
    "host_mount",
    "image_status",
    "list_container_stats",
    "list_containers",
    "list_images",
    "make_host_path",
    "pull_image",
    "remove_container",
    "remove_image",
    "reopen_container_log",
    "sleep_ms",
    "start_container",
    "stop_container",
    "wait_container",
];

/// True when every sandbox of `case` may be a shared one (see [`crate::world::pool`]): its
/// pods keep no identity of their own, each pod has one sandbox, whose options a shared one
/// can stand for, each container keeps to itself (nothing it does outlives it in the pod),
/// and its other steps are all of [`SHARING_STEPS`].
fn shares_sandboxes(case: &Case) -> bool {
    use crate::suite::step::Step;
    let mut pods = std::collections::BTreeSet::new();
    let mut any = false;
    for step in &case.steps {
        match step {
            Step::RunSandbox(sandbox) => {
                if !sandbox.shareable() || !pods.insert(sandbox.pod.as_str()) {
                    return false;
                }
                any = true;
            }
            Step::CreateContainer(container) if !container.keeps_to_itself() => return false,
            other if !SHARING_STEPS.contains(&other.name()) => return false,
            _ => {}
        }
        // What the pod keeps beside its containers: what any root process may write there
        // (its shared memory, its IPC objects, the files it mounts into every container) and
        // its hostname, which names the pool's pod. A case whose steps name them could leave
        // them to the next case, see what the last one left, or tell its sandbox is a shared one.
        let text = serde_json::to_string(step)
            .unwrap_or_default()
            .to_ascii_lowercase();
        if POD_STATE.iter().any(|word| text.contains(word)) {
            return false;
        }
    }
    any && case.pods.is_empty()
}

/// Words in a step that name what a pod keeps beside its containers (see [`shares_sandboxes`]).
const POD_STATE: [&str; 5] = ["shm", "ipc", "hostname", "/etc/hosts", "/etc/resolv.conf"];

/// Stops and removes every sandbox the run's cases shared, with its log directory and cgroup
/// parent; gives what could not be.
async fn remove_pool(client: &CriClient, pool: &SandboxPool) -> Vec<String> {
    let made = pool.drain();
    // At once: no case runs any more, and each removal mostly waits on the runtime.
    let removals = made.iter().map(|pooled| remove_pooled(client, pooled));
    let mut errors: Vec<String> = futures::future::join_all(removals)
        .await
        .into_iter()
        .filter_map(Result::err)
        .collect();
    if let Err(message) = host::remove_host_dir(pool.dir()) {
        errors.push(message);
    }
    errors
}

/// Stops and removes one shared sandbox, then its cgroup parent and log directory.
async fn remove_pooled(client: &CriClient, pooled: &crate::world::Pooled) -> Result<(), String> {
    // An interrupted run's sweep may have removed it already: gone is what was asked.
    let gone = |result: Result<(), cri::CallError>| match result {
        Err(err) if err.code == tonic::Code::NotFound => Ok(()),
        other => other,
    };
    let removed = match gone(client.stop_pod_sandbox(&pooled.id).await) {
        Ok(()) => gone(client.remove_pod_sandbox(&pooled.id).await),
        Err(err) => Err(err),
    };
    removed.map_err(|err| {
        format!(
            "cannot remove shared sandbox {} ({}): {err}",
            pooled.number, pooled.id
        )
    })?;
    host::remove_cgroups(std::slice::from_ref(&pooled.cgroup_parent))?;
    std::fs::remove_dir_all(&pooled.log_directory).or_else(|err| match err.kind() {
        std::io::ErrorKind::NotFound => Ok(()),
        _ => Err(format!(
            "cannot remove {}: {err}",
            pooled.log_directory.display()
        )),
    })
}

/// The host directory of case `number`: `WORK_DIR/RUN_ID/case-N`.
fn case_dir(config: &RunConfig, number: usize) -> PathBuf {
    config
        .work_dir
        .join(&config.run_id)
        .join(format!("case-{number}"))
}

/// Removes the images the run pulled (and the runtime did not have before), once no case
/// needs them; gives what could not be removed.
pub async fn remove_pulled(client: &CriClient, pulled: &PulledImages) -> Vec<String> {
    let mut errors = Vec::new();
    for image in pulled.take() {
        // An image is noted before its pull, so one whose pull never finished may be absent:
        // a runtime that answers NotFound for it (not idempotent as CRI asks) has none left.
        match client.remove_image(&image).await {
            Err(err) if !err.is_not_found() => errors.push(format!(
                "cannot remove the image {image} the run pulled: {err}"
            )),
            _ => {}
        }
    }
    if errors.is_empty() {
        pulled.forget_record();
    }
    errors
}

/// A fresh mock per case on its own socket, reached through the real connect path.
async fn run_on_mock(
    shared: &Shared,
    suite: &Suite,
    case: &Case,
    number: usize,
    attempt: u32,
    slot: &WorkerSlot,
) -> Outcome {
    // The harness could not set the mock up: no verdict on anything.
    let failed = |message: String| Outcome::of(CaseOutcome::Error(message));
    let dir = match tempfile::Builder::new()
        .prefix("cri-harness-mock-")
        .tempdir()
    {
        Ok(dir) => dir,
        Err(err) => {
            return failed(format!(
                "cannot make a directory for the mock's socket: {err}"
            ))
        }
    };
    // The harness's own requests are under test on every mock it starts: whatever its
    // profile, the mock refuses what the chosen kubelet would never send, so each case proves
    // on the wire that its requests are that kubelet's.
    let kubelet = if shared.config.kubelet.is_current() {
        KubeletWire::Current
    } else {
        KubeletWire::Seed
    };
    let mut profile = shared.config.mock_profile.clone();
    profile.kubelet_requests = true;
    let mock = MockRuntime::with_profile(profile)
        .with_registries(shared.config.mock_registries.clone())
        .with_latency(crate::mock::Latency {
            pull_ms: case.mock_latency.pull_ms,
            remove_ms: case.mock_latency.remove_ms,
        })
        .expecting_kubelet(kubelet);
    let server = match mock.serve_unix(&dir.path().join("cri.sock")).await {
        Ok(server) => server,
        Err(err) => return failed(format!("cannot start the mock runtime: {err}")),
    };
    let endpoint = server.endpoint();
    let options = &shared.config.connect;
    let connected = async {
        let client = cri::connect(&endpoint, &endpoint, options).await?;
        let channel = cri::channel(&endpoint, options).await?;
        Ok::<_, cri::ConnectError>((client, channel))
    }
    .await;
    // The calls `connect` made to probe the runtime are the harness's, not the case's: the call
    // log the case's steps and its RPC record read starts after them.
    let connected = match connected {
        Ok((client, channel)) => {
            let mut control = MockControlClient::new(channel);
            let forget = crate::cri::control::GetCallLogRequest { clear: true };
            match control.get_call_log(forget).await {
                Ok(_) => Ok((client, control)),
                Err(err) => Err(format!("cannot clear the mock's call log: {err}")),
            }
        }
        Err(err) => Err(format!("cannot connect to the mock runtime: {err}")),
    };
    let outcome = match connected {
        Ok((client, control)) => {
            let env = Env {
                client,
                control: Some(control),
                runtime_handler: shared.config.runtime_handler.clone(),
                host_dir: case_dir(&shared.config, number),
                pulled: None,
                attempt,
                images: shared.config.images.clone(),
                kubelet: shared.config.kubelet,
                feature_gates: shared
                    .config
                    .feature_gates
                    .overridden_by(&case.feature_gates),
                crash_loop_back_off: case.crash_loop_back_off,
                // Each case has a mock of its own: nothing to share.
                pool: None,
            };
            Box::pin(run_in(shared, suite, case, number, env, slot)).await
        }
        Err(why) => failed(why),
    };
    server.shutdown().await;
    outcome
}

/// Runs the steps under the case timeout (or until interrupted), cleans up under its own
/// bound, sweeps for leaks, then compares the snapshot if everything else held. The verdict
/// follows the clause of the expectation that broke: a `must` fails the case, a `should`
/// warns, an `observed` is only noted; a setup step that fails is an error of the case.
async fn run_in(
    shared: &Shared,
    suite: &Suite,
    case: &Case,
    number: usize,
    env: Env,
    slot: &WorkerSlot,
) -> Outcome {
    let config = &shared.config;
    let on_mock = env.control.is_some();
    if case.needs.iter().any(|need| need.in_status()) {
        // Asked of the target itself, for the handler the case's sandboxes will ask for.
        match env.client.status(false).await {
            Ok(status) => {
                if let Some((need, why)) =
                    features::first_status_lack(&status, &env.runtime_handler, &case.needs)
                {
                    return Outcome::of(CaseOutcome::skipped(
                        SkipWhy::RuntimeLacks,
                        format!("the runtime lacks {need}: {why}"),
                    ));
                }
            }
            Err(err) => {
                return Outcome::of(CaseOutcome::Error(format!(
                    "cannot read the runtime's features from Status: {err}"
                )))
            }
        }
    }
    let env_dir = env.host_dir.clone();
    let control = env.control.clone();
    let mut run = CaseRun::new(case, env, &config.run_id, number);
    let at = |index: usize, kind: StopKind, error: String| StepStop {
        step: index + 1,
        name: case.steps.get(index).map_or("?", |s| s.name()).to_owned(),
        line: case.step_line(index),
        kind,
        error,
    };
    // What ended the steps early: where and why, whether the runtime did not answer, a lacked
    // feature, and the clause broken (none: a setup step, so an error of the case).
    struct Stop {
        at: StepStop,
        transport: bool,
        lacking: Option<Need>,
        clause: Option<String>,
        setup: bool,
        probe_lacks: Option<String>,
    }
    // Cut short (out of time, or a signal): calls of the case may still be in flight.
    let mut cut_short = false;
    let steps = tokio::select! {
        result = tokio::time::timeout(config.case_timeout, run.run()) => match result {
            Ok(Ok(())) => Ok(()),
            Ok(Err(failure)) => Err(Stop {
                at: at(failure.index, failure.kind(), failure.message),
                transport: failure.transport,
                lacking: lacked_feature(case, failure.unimplemented),
                clause: failure.clause,
                setup: failure.setup,
                probe_lacks: failure.lacks,
            }),
            Err(_) => {
                let index = run.current_step();
                cut_short = true;
                Err(Stop {
                    at: at(index, StopKind::Timeout, format!("timed out after {:?} (--case-timeout)", config.case_timeout)),
                    transport: true,
                    lacking: None,
                    // Out of time, no clause was judged.
                    clause: None,
                    setup: !case.expects(index),
                    probe_lacks: None,
                })
            }
        },
        () = shared.interrupt.cancelled() => {
            cut_short = true;
            Err(Stop {
                at: at(run.current_step(), StopKind::Interrupted, "interrupted".to_owned()),
                transport: false,
                lacking: None,
                clause: None,
                setup: true,
                probe_lacks: None,
            })
        }
    };
    let interrupted = shared.interrupt.is_cancelled() && cut_short;
    // The steps are over: the next case may start while this one cleans up. Its verdict still
    // waits for its own sweep below, which finds its objects by its own labels alone. Not after
    // steps that lost the runtime (or were cut short): the next case waits for this verdict, so
    // a runtime that stopped answering ends the run as soon as the streak says so.
    let lost_runtime = cut_short || matches!(&steps, Err(stop) if stop.transport);
    if !lost_runtime {
        slot.release();
    }
    let notes = run.take_notes();
    let mut failures: Vec<String> = Vec::new();
    let mut unreachable = false;
    let mut lacks = None;
    let mut clause = None;
    let mut setup = false;
    let mut probe_lacks = None;
    let mut stopped = None;
    if let Err(stop) = steps {
        lacks = stop.lacking;
        probe_lacks = stop.probe_lacks;
        failures.push(stop.at.message(&suite.source, &case.name));
        stopped = Some(stop.at);
        unreachable = stop.transport;
        clause = stop.clause;
        setup = stop.setup;
    }

    let rpcs = match control {
        Some(control) => called_methods(control).await,
        None => Vec::new(),
    };
    let selector = cleanup::Selector {
        run_id: Some(config.run_id.clone()),
        case: Some(number),
    };
    let client = run.client().clone();
    let cleanup_started = Instant::now();
    // A case cut short mid-call (a timeout, a signal) may have calls still in flight, whose
    // objects appear when they return, and objects in a transition the runtime will not
    // remove yet (containerd: a container "in starting state"): the sweep waits for both.
    let settle = if cut_short {
        cleanup::Settle::default()
    } else {
        cleanup::Settle::after_returned_steps()
    };
    let cleaned = tokio::time::timeout(
        config.cleanup_timeout,
        cleanup::sweep(&client, &selector, settle),
    )
    .await;
    // What the cleanup could not undo: the runtime kept objects that the contract says stop
    // and remove release.
    let mut leaked = false;
    let listed = matches!(&cleaned, Ok(swept) if swept.list_error.is_none());
    match cleaned {
        Ok(swept) => match (&swept.list_error, &swept.left) {
            (None, left) if !left.is_empty() => {
                let names: Vec<String> = left.iter().map(|o| run.redact(&o.to_string())).collect();
                let mut message = format!(
                    "cleanup left {} objects on the runtime after {:.1} s: {}",
                    left.len(),
                    swept.elapsed.as_secs_f64(),
                    names.join(", ")
                );
                if !swept.errors.is_empty() {
                    message.push_str(&format!(
                        " (errors: {})",
                        run.redact(&swept.errors.join("; "))
                    ));
                }
                failures.push(message);
                leaked = true;
            }
            (None, _) => {}
            (Some(err), _) => {
                unreachable |= case::is_transport(err.code);
                failures.push(format!(
                    "cannot list what the case left: {}",
                    run.redact(&err.to_string())
                ));
            }
        },
        Err(_) => {
            unreachable = true;
            failures.push(format!(
                "cleanup did not finish within {:?}",
                config.cleanup_timeout
            ));
        }
    }
    // A shared sandbox goes back only when the sweep found all the case's containers gone
    // and the runtime still answers; else the run removes it at its end.
    let held = run.take_held();
    if let Some(pool) = shared
        .pool
        .as_ref()
        .filter(|_| listed && !cut_short && !leaked && !unreachable)
    {
        for pooled in held {
            match pool.give_back(pooled) {
                Ok(None) => {}
                Ok(Some(retired)) => {
                    if let Err(message) = remove_pooled(&client, &retired).await {
                        // The run's end tries again, and reports it.
                        pool.made(&retired);
                        tracing::debug!(%message, "a shared sandbox outlives its last case");
                    }
                }
                Err(message) => failures.push(message),
            }
        }
    }
    if let Err(message) = host::remove_host_dir(&env_dir) {
        failures.push(message);
    }
    // The mock makes no cgroups; on a runtime, the parents its sandboxes asked for are the
    // case's to remove, as the kubelet removes a pod's cgroup.
    let cgroups = if on_mock {
        Ok(())
    } else {
        host::remove_cgroups(run.cgroup_parents())
    };
    if let Err(message) = cgroups {
        failures.push(message);
    }
    let cleanup = cleanup_started.elapsed();
    let ended = |outcome: CaseOutcome, clause: Option<String>| Outcome {
        outcome,
        snapshot: None,
        unreachable,
        clause,
        notes: notes.clone(),
        cleanup,
        stopped: stopped.clone(),
        rpcs: rpcs.clone(),
    };
    if interrupted {
        // No verdict on the runtime: where the signal caught the case, and what its cleanup
        // could not undo (the run prints how to finish it).
        return Outcome {
            unreachable: false,
            ..ended(CaseOutcome::Interrupted(failures.join("; ")), None)
        };
    }
    // The step failed only because the runtime does not implement the optional feature the
    // case declares, or a probe found nothing runtime-neutral to read, and cleanup left
    // nothing: no verdict.
    let lacked = lacks.map(|need| need.to_string()).or(probe_lacks);
    if let Some(what) = lacked.filter(|_| failures.len() == 1) {
        return Outcome {
            unreachable: false,
            ..ended(
                CaseOutcome::skipped(
                    SkipWhy::RuntimeLacks,
                    format!("the runtime lacks {what}: {}", failures.join("; ")),
                ),
                None,
            )
        };
    }
    if !failures.is_empty() {
        let message = failures.join("; ");
        // A broken expectation, or a leak, is a verdict on the runtime; a setup that could
        // not be made, with nothing leaked, is not.
        if leaked && clause.is_none() {
            clause = Some(LEAK_CLAUSE.to_owned());
        }
        let outcome = if setup && !leaked {
            CaseOutcome::Error(format!("setup failed: {message}"))
        } else {
            CaseOutcome::Failed(message)
        };
        return ended(outcome, clause);
    }
    let warned: Vec<&Note> = notes
        .iter()
        .filter(|n| n.level == crate::contract::Level::Should)
        .collect();
    let passed = || match warned.first() {
        None => (CaseOutcome::Passed, None),
        Some(first) => (
            CaseOutcome::Warning(
                warned
                    .iter()
                    .map(|n| format!("{} (should: {})", n.message, n.clause))
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
            Some(first.clause.clone()),
        ),
    };
    if !case.steps.iter().any(|step| step.kind() == Kind::Manager) {
        // A conformance case checks the runtime directly; there is no manager call to record.
        let (outcome, clause) = passed();
        return ended(outcome, clause);
    }

    let contents = snapshot::render(&suite.source, &case.name, &run.snapshot_body());
    let (path, checked) = if suite.embedded {
        // An embedded case checks the reference compiled in with it, on every target and from
        // any directory; only `--update-snapshots` writes, into the source tree.
        // A case that names no kubelet shares one reference between both, unless today's
        // kubelet calls the runtime otherwise: then today's has its own beside it.
        let shared = snapshot::embedded(&suite.name, &case.name);
        let variant = (case.kubelet.is_none() && config.kubelet.is_current())
            .then(|| snapshot::kubelet_variant(&case.name, config.kubelet));
        let variant_reference = variant
            .as_deref()
            .and_then(|name| snapshot::embedded(&suite.name, name));
        let name = match (&variant, variant_reference, shared) {
            (Some(name), Some(_), _) => name.as_str(),
            // Recording today's kubelet where it differs from the shared reference.
            (Some(name), None, Some(shared))
                if config.snapshots.update && !snapshot::same(shared, &contents) =>
            {
                name.as_str()
            }
            _ => case.name.as_str(),
        };
        let update_path = snapshot::path(&config.snapshot_dir, &suite.name, name);
        let reference = if name == case.name {
            shared
        } else {
            variant_reference
        };
        let status = snapshot::check_embedded(reference, &update_path, &contents, config.snapshots);
        let shown = match status {
            Ok(SnapshotStatus::Written | SnapshotStatus::Updated { .. }) => update_path,
            _ => snapshot::path(
                std::path::Path::new(snapshot::EMBEDDED_DIR),
                &suite.name,
                name,
            ),
        };
        (shown, status)
    } else {
        let path = snapshot::path(&config.snapshot_dir, &suite.name, &case.name);
        let status = snapshot::check_file(&path, &contents, config.snapshots);
        (path, status)
    };
    match checked {
        Ok(status) => {
            // No reference to compare with is no verdict on the runtime: an error of the case.
            let (outcome, clause) = match &status {
                SnapshotStatus::Missing => (
                    CaseOutcome::Error(format!(
                        "missing reference {}: the binary holds none for this embedded case (record it with --update-snapshots from the source tree's root, then rebuild)",
                        path.display()
                    )),
                    None,
                ),
                SnapshotStatus::New { new_path } => (
                    CaseOutcome::Error(format!(
                        "new reference: {} does not exist; this run's result is in {} (review it and rename it to accept it, or run with --update-snapshots)",
                        path.display(),
                        new_path.display()
                    )),
                    None,
                ),
                // The diff goes with the status, into the report's failure text and epilogue.
                SnapshotStatus::Changed { new_path, .. } => (
                    CaseOutcome::Failed(format!(
                        "result differs from the reference {}{} (review the diff, then --update-snapshots)",
                        path.display(),
                        new_path.as_ref().map_or_else(String::new, |p| format!("; the new one is {}", p.display()))
                    )),
                    case.clause.clone(),
                ),
                _ => passed(),
            };
            Outcome {
                snapshot: Some(SnapshotReport { path, status }),
                ..ended(outcome, clause)
            }
        }
        Err(err) => ended(
            CaseOutcome::Error(format!("{err}: {}", source_text(&err))),
            None,
        ),
    }
}

/// The clause a leak breaks: what a case made, the runtime's stop and remove must release.
pub const LEAK_CLAUSE: &str = "sandbox.remove.releases-everything";

/// The CRI methods the case's mock received so far, each once, sorted: what its steps called,
/// read before the cleanup adds its own calls.
async fn called_methods(mut control: MockControlClient<tonic::transport::Channel>) -> Vec<String> {
    let request = crate::cri::control::GetCallLogRequest { clear: false };
    let calls = match control.get_call_log(request).await {
        Ok(answer) => answer.into_inner().calls,
        Err(_) => return Vec::new(),
    };
    let methods: std::collections::BTreeSet<String> =
        calls.into_iter().map(|call| call.method).collect();
    methods.into_iter().collect()
}

/// The need a case declares whose feature the runtime answered Unimplemented for.
fn lacked_feature(case: &Case, unimplemented: Option<&'static str>) -> Option<Need> {
    let method = unimplemented?;
    case.needs
        .iter()
        .copied()
        .find(|need| need.methods().contains(&method))
}

fn source_text(err: &dyn std::error::Error) -> String {
    err.source().map_or_else(String::new, ToString::to_string)
}

/// Gate names as the report keeps them.
fn owned(
    gates: std::collections::BTreeMap<&'static str, bool>,
) -> std::collections::BTreeMap<String, bool> {
    gates
        .into_iter()
        .map(|(name, on)| (name.to_owned(), on))
        .collect()
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[test]
    fn the_clause_a_leak_breaks_is_a_must_clause_of_the_contract() {
        let clause = crate::contract::contract().get(LEAK_CLAUSE);
        assert_eq!(clause.map(|c| c.level), Some(crate::contract::Level::Must));
    }

    #[rstest]
    #[case::plain("containerd", "containerd")]
    #[case::upper_and_spaces("CRI O", "cri-o")]
    #[case::empty("", "unnamed-runtime")]
    #[case::dot_start("..", "unnamed-runtime")]
    fn runtime_names_become_directory_names(#[case] name: &str, #[case] expected: &str) {
        assert_eq!(target_kind(name), expected);
    }

    #[rstest]
    #[case::generated(&new_run_id(), true)]
    #[case::simple("nightly-1", true)]
    #[case::upper("Nightly", false)]
    #[case::too_long("abcdefghijklmnopqrstu", false)]
    #[case::empty("", false)]
    #[case::edge_dash("-a", false)]
    fn run_ids_must_fit_labels_and_namespaces(#[case] id: &str, #[case] expected: bool) {
        assert_eq!(valid_run_id(id), expected);
    }

    /// Whether the one case of a suite whose steps are `steps` may share sandboxes.
    fn shares(steps: &str) -> bool {
        let text = format!("suite: s\nabout: x\ncases:\n  - name: c\n    steps:\n{steps}");
        let suite = crate::suite::parse("s.yaml", &text).unwrap();
        shares_sandboxes(&suite.cases[0])
    }

    const RUN_AND_EXEC: &str = "      - create_container: {as: app, sandbox: sb}\n      - start_container: app\n      - exec_sync: {container: app, command: [true]}\n";

    #[rstest]
    #[case::plain("      - run_sandbox: {as: sb, pod: web}\n", true)]
    #[case::privileged_pod(
        "      - run_sandbox: {as: sb, pod: web, security: {privileged: true}}\n",
        true
    )]
    #[case::own_sysctl(
        "      - run_sandbox: {as: sb, pod: web, sysctls: {kernel.shm_rmid_forced: '1'}}\n",
        false
    )]
    #[case::own_hostname("      - run_sandbox: {as: sb, pod: web, hostname: h}\n", false)]
    #[case::own_port(
        "      - run_sandbox: {as: sb, pod: web, ports: [{container_port: 80}]}\n",
        false
    )]
    #[case::no_log_directory(
        "      - run_sandbox: {as: sb, pod: web, log_directory: false}\n",
        false
    )]
    #[case::second_attempt("      - run_sandbox: {as: sb, pod: web, attempt: 1}\n", false)]
    fn a_case_shares_only_a_sandbox_another_could_stand_for(
        #[case] sandbox: &str,
        #[case] expected: bool,
    ) {
        assert_eq!(shares(&format!("{sandbox}{RUN_AND_EXEC}")), expected);
    }

    #[rstest]
    #[case::status("      - sandbox_status: {sandbox: sb}\n")]
    #[case::stop("      - stop_sandbox: sb\n")]
    #[case::second_sandbox_of_the_pod("      - run_sandbox: {as: sb2, pod: web}\n")]
    #[case::privileged_container(
        "      - create_container: {as: p, sandbox: sb, security: {privileged: true}}\n"
    )]
    #[case::added_capability(
        "      - create_container: {as: p, sandbox: sb, security: {capabilities: {add: [NET_ADMIN]}}}\n"
    )]
    #[case::shared_memory(
        "      - create_container: {as: p, sandbox: sb, command: [sh, -c, 'touch /dev/shm/x']}\n"
    )]
    #[case::shared_memory_by_exec(
        "      - exec_sync: {container: app, command: [sh, -c, 'ls /dev/shm']}\n"
    )]
    #[case::ipc_objects("      - exec_sync: {container: app, command: [ipcs, -m]}\n")]
    #[case::pod_hostname("      - exec_sync: {container: app, command: [hostname]}\n")]
    #[case::pod_hosts_file(
        "      - exec_sync: {container: app, command: [sh, -c, 'echo x >> /etc/hosts']}\n"
    )]
    fn a_case_that_could_tell_or_change_its_sandbox_shares_none(#[case] step: &str) {
        let plain = "      - run_sandbox: {as: sb, pod: web}\n";
        assert!(shares(&format!("{plain}{RUN_AND_EXEC}")));
        assert!(!shares(&format!("{plain}{RUN_AND_EXEC}{step}")));
    }

    #[test]
    fn a_case_without_a_sandbox_or_with_a_fixed_pod_shares_none() {
        assert!(!shares("      - version: {}\n"));
        let text = format!("suite: s\nabout: x\ncases:\n  - name: c\n    pods: {{web: {{uid: '12345678'}}}}\n    steps:\n      - run_sandbox: {{as: sb, pod: web}}\n{RUN_AND_EXEC}");
        let suite = crate::suite::parse("s.yaml", &text).unwrap();
        assert!(!shares_sandboxes(&suite.cases[0]));
    }

    fn suite_with(cases: &[(&str, &[&str])]) -> Suite {
        let text = cases
            .iter()
            .map(|(name, tags)| {
                format!(
                    "  - name: {name}\n    tags: [{}]\n    steps:\n      - version: {{}}\n",
                    tags.join(", ")
                )
            })
            .collect::<String>();
        crate::suite::parse("s.yaml", &format!("suite: s\nabout: x\ncases:\n{text}")).unwrap()
    }

    #[rstest]
    #[case::everything(None, None, &[], &["a-one", "b-two", "c-three"])]
    #[case::focus(Some("s/b"), None, &[], &["b-two"])]
    #[case::skip(None, Some("two|three"), &[], &["a-one"])]
    #[case::tags(None, None, &["x"], &["a-one", "c-three"])]
    #[case::focus_and_tags(Some("three"), None, &["x"], &["c-three"])]
    fn the_filter_selects_by_focus_skip_and_tags(
        #[case] focus: Option<&str>,
        #[case] skip: Option<&str>,
        #[case] tags: &[&str],
        #[case] expected: &[&str],
    ) {
        let suite = suite_with(&[
            ("a-one", &["x"]),
            ("b-two", &["y"]),
            ("c-three", &["x", "y"]),
        ]);
        let filter = Filter {
            focus: focus.map(|f| Regex::new(f).unwrap()),
            skip: skip.map(|s| Regex::new(s).unwrap()),
            tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        };
        let selected: Vec<&str> = suite
            .cases
            .iter()
            .filter(|c| filter.selects(&suite, c))
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(selected, expected);
    }
}
