//! The differential: each generated sequence a real runtime can express is applied to a fresh
//! mock and to the runtime, the manager's calls are made on both (get_pods, get_pod_status per
//! pod, kill_pod per pod, then the state left), every answer is observed as a typed value in
//! suite terms (ids, UIDs and IPs through the one [`Redactor`], taught the scenario's aliases;
//! no timestamps; sandboxes, containers and step results as [`crate::observe::pod`]'s values,
//! the ones a `sync_pod` snapshot records) and the two observations are compared value by
//! value. A difference is a mock bug or one of the documented [`EXCEPTIONS`], each a predicate
//! over the two typed values.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, TestRng, TestRunner};
use serde::Serialize;

use super::apply::{apply, describe, Applied, IpReads, Target};
use super::check::pod_alias;
use super::error::{manager_failed, PropError};
use super::model::{Model, Naming, PodKey};
use super::property::{kill_spec, running_pod};
use super::scenario::{scenario, Profile, Scenario, MAX_PODS};
use crate::cri::v1;
use crate::manager::{
    Container, ContainerState, ContainerStatus, KubeGenericRuntimeManager, PodSyncResult,
    RecordingNetworkPlugin,
};
use crate::mock::MockRuntime;
use crate::observe::{ContainerSeen, Exit, Redactor, ResultSeen, SandboxSeen};
use crate::suite::step::GrpcCode;

/// A sequence of the differential: a scenario and, per pod, whether its kill passes a spec.
#[derive(Debug, Clone)]
pub struct Sequence {
    /// The operations.
    pub scenario: Scenario,
    /// Per pod key (p0..p3, then the unlabelled pod): `Some(host_network)` passes a spec.
    pub kill_specs: Vec<Option<bool>>,
}

/// Sequences a real runtime can express.
pub fn sequence() -> impl Strategy<Value = Sequence> {
    use proptest::prelude::*;
    (
        scenario(Profile::REAL),
        proptest::collection::vec(prop_oneof![Just(None), any::<bool>().prop_map(Some)], 5),
    )
        .prop_map(|(scenario, kill_specs)| Sequence {
            scenario,
            kill_specs,
        })
}

/// How a differential run goes.
#[derive(Debug)]
pub struct Options {
    /// Sequences to run.
    pub sequences: u32,
    /// The generator.
    pub rng: TestRng,
    /// Run id labelled on the runtime's objects.
    pub run_id: String,
}

/// What a setup step of the sequence answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum StepAnswer {
    /// It succeeded.
    Ok,
    /// It failed with this code.
    Refused(GrpcCode),
    /// It was not made: its object is missing because the runtime refused to make it.
    Skipped,
}

/// A sandbox or container of a pod in a `get_pods` answer.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Listed {
    /// Its id, redacted (`<sandbox:s0>`, `<container:c1>`).
    pub id: String,
    /// The container name ("" for a sandbox).
    pub name: String,
    /// Its state (for a sandbox: running is ready).
    pub state: ContainerState,
}

/// One pod of a `get_pods` answer: its identity and the scenario's objects, in list order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ListedPod {
    /// The pod's name.
    pub name: String,
    /// Its namespace, redacted.
    pub namespace: String,
    /// Its sandboxes, as listed.
    pub sandboxes: Vec<Listed>,
    /// Its containers, as listed.
    pub containers: Vec<Listed>,
}

/// A `kill_pod` answer, as the differential compares it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KillSeen {
    /// The results, sorted: KillContainer results come in the running pod's container order,
    /// which is list order, so only list order itself (compared apart) could tell them apart.
    pub results: Vec<ResultSeen>,
    /// The operation could not go on.
    pub sync_error: bool,
}

/// One typed value a target answered, in suite terms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Seen {
    /// A setup step's answer.
    Step(StepAnswer),
    /// The pods of a `get_pods` answer that hold scenario objects, by alias, sorted.
    Pods(Vec<String>),
    /// One pod of a `get_pods` answer.
    Pod(ListedPod),
    /// The pod IP of a `get_pod_status` answer, redacted; `None` without one.
    Ip(Option<String>),
    /// The sandbox statuses of a `get_pod_status` answer, newest first.
    Sandboxes(Vec<SandboxSeen>),
    /// The container statuses of a `get_pod_status` answer, sorted by id.
    Containers(Vec<ContainerSeen>),
    /// A `kill_pod` answer.
    Kill(KillSeen),
    /// The sandboxes the network plugin was asked to tear down during a kill, redacted.
    Teardown(Vec<String>),
    /// A sandbox left on the runtime at the end.
    SandboxLeft(ContainerState),
    /// A container left on the runtime at the end.
    ContainerLeft(Exit),
}

/// Everything one target answered for a sequence, by what was asked
/// (`get_pods(all=true) p0`, `get_pod_status(p1) ip`, `after c2`).
pub type Observed = BTreeMap<String, Seen>;

/// One value on which the mock and the runtime answered differently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// The sequence's number.
    pub sequence: u64,
    /// What was asked (`get_pods(all=true) p0`).
    pub path: String,
    /// The mock's answer (`None` when it had none).
    pub mock: Option<Seen>,
    /// The runtime's answer.
    pub runtime: Option<Seen>,
    /// The documented exception that explains it, if any.
    pub exception: Option<&'static str>,
}

/// A documented, tested way in which the mock may differ from a real runtime.
#[derive(Debug, Clone, Copy)]
pub struct Exception {
    /// Short name, printed with each difference it explains.
    pub name: &'static str,
    /// Why the difference is acceptable.
    pub why: &'static str,
    /// True for the (mock, runtime) answers it explains, at the given path.
    pub matches: fn(&str, &Seen, &Seen) -> bool,
}

/// The documented exceptions. Each has a test in this module.
pub const EXCEPTIONS: &[Exception] = &[
    Exception {
        name: "list-order",
        why: "CRI promises no list order; the mock lists oldest first, containerd from a map, so \
          the same objects may come in another order (the manager keeps list order)",
        matches: same_items_in_another_order,
    },
    Exception {
        name: "term-before-trap",
        why: "the test container exits 0 on SIGTERM only once its shell has set the trap; a \
          StopContainer right after StartContainer can beat it, and PID 1 without a handler \
          ignores SIGTERM, so containerd kills it after the grace period (137, Error) where \
          the mock's modelled process always exits 0",
        matches: killed_instead_of_terminated,
    },
    Exception {
        name: "stop-of-the-gone-not-found",
        why: "the CRI contract makes StopPodSandbox and StopContainer idempotent, so a stop of \
          what was removed succeeds, as on the mock; containerd 1.6.20 answers NotFound, a \
          known finding fixed in containerd 1.7 (containerd/containerd#10520, #10521) and in \
          1.6 by #10531",
        matches: stop_of_the_gone_not_found,
    },
];

/// A stop the mock answered OK and the runtime NotFound.
fn stop_of_the_gone_not_found(path: &str, mock: &Seen, runtime: &Seen) -> bool {
    let stop = path.contains(" stop_sandbox ") || path.contains(" stop_container ");
    stop && matches!(
        (mock, runtime),
        (Seen::Step(StepAnswer::Ok), Seen::Step(StepAnswer::Refused(code))) if code.0 == tonic::Code::NotFound
    )
}

/// A pod listed with the same identity and the same sandboxes and containers (as multisets),
/// in another order.
fn same_items_in_another_order(_path: &str, mock: &Seen, runtime: &Seen) -> bool {
    fn sorted(items: &[Listed]) -> Vec<&Listed> {
        let mut items: Vec<&Listed> = items.iter().collect();
        items.sort_unstable();
        items
    }
    match (mock, runtime) {
        (Seen::Pod(m), Seen::Pod(r)) => {
            (&m.name, &m.namespace) == (&r.name, &r.namespace)
                && sorted(&m.sandboxes) == sorted(&r.sandboxes)
                && sorted(&m.containers) == sorted(&r.containers)
        }
        _ => false,
    }
}

/// The mock's container exited 0 (Completed) on SIGTERM where the runtime's was killed (137,
/// Error).
fn terminated_vs_killed(mock: &Exit, runtime: &Exit) -> bool {
    let exited = |e: &Exit, code: i32, reason: &str| {
        e.state == ContainerState::Exited
            && e.exit_code == code
            && e.reason.as_deref() == Some(reason)
    };
    exited(mock, 0, "Completed") && exited(runtime, 137, "Error")
}

/// The same containers, each equal or exited 0/Completed on the mock and 137/Error on the
/// runtime, with nothing else different.
fn killed_instead_of_terminated(_path: &str, mock: &Seen, runtime: &Seen) -> bool {
    match (mock, runtime) {
        (Seen::ContainerLeft(m), Seen::ContainerLeft(r)) => terminated_vs_killed(m, r),
        (Seen::Containers(m), Seen::Containers(r)) => {
            m.len() == r.len()
                && m.iter().zip(r).all(|(m, r)| {
                    let others_equal = ContainerSeen {
                        exit: r.exit.clone(),
                        ..m.clone()
                    } == *r;
                    m == r || (others_equal && terminated_vs_killed(&m.exit, &r.exit))
                })
        }
        _ => false,
    }
}

/// The exception explaining a difference (none where one side has no answer).
pub fn explain(difference: &Difference) -> Option<&'static str> {
    let (Some(mock), Some(runtime)) = (&difference.mock, &difference.runtime) else {
        return None;
    };
    EXCEPTIONS
        .iter()
        .find(|e| (e.matches)(&difference.path, mock, runtime))
        .map(|e| e.name)
}

/// What a differential run found.
#[derive(Debug, Default)]
pub struct DiffOutcome {
    /// Sequences compared.
    pub sequences: u64,
    /// Every difference, explained or not.
    pub differences: Vec<Difference>,
    /// Wall time.
    pub elapsed: Duration,
    /// Answers compared, over all sequences.
    pub values_compared: u64,
    /// The steps of each sequence that differed, for the report.
    pub sequences_shown: BTreeMap<u64, String>,
}

/// An answer in the report, `<absent>` for none.
fn side(seen: Option<&Seen>) -> String {
    seen.map_or_else(|| "<absent>".to_owned(), ToString::to_string)
}

impl DiffOutcome {
    /// Differences no exception explains.
    pub fn unexplained(&self) -> usize {
        self.differences
            .iter()
            .filter(|d| d.exception.is_none())
            .count()
    }

    /// The report: each differing sequence's steps and differences, then a summary.
    pub fn report(&self) -> String {
        let mut text = String::new();
        let mut shown = None;
        for d in &self.differences {
            if shown != Some(d.sequence) {
                shown = Some(d.sequence);
                if let Some(steps) = self.sequences_shown.get(&d.sequence) {
                    text.push_str(&format!("sequence {}: {steps}\n", d.sequence));
                }
            }
            let mark = d
                .exception
                .map_or_else(|| "UNEXPLAINED".to_owned(), |e| format!("exception {e}"));
            text.push_str(&format!(
                "sequence {} {}: [{mark}]\n  mock:    {}\n  runtime: {}\n",
                d.sequence,
                d.path,
                side(d.mock.as_ref()),
                side(d.runtime.as_ref())
            ));
        }
        let secs = self.elapsed.as_secs_f64();
        text.push_str(&format!(
            "differential: {} sequences, {} answers compared, {} differences ({} unexplained) in {secs:.1} s ({:.2} sequences/s)\n",
            self.sequences,
            self.values_compared,
            self.differences.len(),
            self.unexplained(),
            self.sequences as f64 / secs.max(f64::EPSILON)
        ));
        text
    }
}

/// Runs the differential against `endpoint`, each sequence on a fresh mock.
pub async fn run(endpoint: &Target, options: Options) -> Result<DiffOutcome, PropError> {
    let started = Instant::now();
    let config = Config {
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(config, options.rng);
    let strategy = sequence();
    let mut outcome = DiffOutcome::default();
    for number in 0..u64::from(options.sequences) {
        let sequence = match strategy.new_tree(&mut runner) {
            Ok(tree) => tree.current(),
            Err(reason) => {
                return Err(PropError::Generate {
                    what: "a differential sequence",
                    reason: reason.to_string(),
                })
            }
        };
        let naming = Naming {
            run_id: options.run_id.clone(),
            case: number,
        };
        let mock = Target::mock(&MockRuntime::new()).await?;
        let on_mock = observe(&sequence, &mock, &naming).await?;
        let on_runtime = observe(&sequence, endpoint, &naming).await;
        endpoint.cleanup(&naming).await?;
        let on_runtime = on_runtime?;
        outcome.values_compared += on_mock.len().max(on_runtime.len()) as u64;
        let found = compare(number, &on_mock, &on_runtime);
        if !found.is_empty() {
            outcome
                .sequences_shown
                .insert(number, show_sequence(&sequence));
        }
        outcome.differences.extend(found);
        outcome.sequences += 1;
    }
    outcome.elapsed = started.elapsed();
    Ok(outcome)
}

/// A sequence's steps in scenario terms, on one line.
fn show_sequence(sequence: &Sequence) -> String {
    let model = Model::build(&sequence.scenario, false);
    let steps: Vec<String> = model
        .steps
        .iter()
        .map(|step| describe(&step.action))
        .collect();
    let specs: Vec<String> = sequence
        .kill_specs
        .iter()
        .map(|spec| match spec {
            None => "no spec".to_owned(),
            Some(true) => "spec host".to_owned(),
            Some(false) => "spec pod".to_owned(),
        })
        .collect();
    format!("{}; kills: {}", steps.join(", "), specs.join(", "))
}

/// The differences between two observations, each with its exception if one explains it.
pub fn compare(sequence: u64, mock: &Observed, runtime: &Observed) -> Vec<Difference> {
    let mut paths: Vec<&String> = mock.keys().chain(runtime.keys()).collect();
    paths.sort();
    paths.dedup();
    paths
        .into_iter()
        .filter_map(|path| {
            let (m, r) = (mock.get(path), runtime.get(path));
            (m != r).then(|| {
                let mut difference = Difference {
                    sequence,
                    path: path.clone(),
                    mock: m.cloned(),
                    runtime: r.cloned(),
                    exception: None,
                };
                difference.exception = explain(&difference);
                difference
            })
        })
        .collect()
}

/// An IP in suite terms; `None` for no IP.
fn ip(redactor: &Redactor, ip: &str) -> Option<String> {
    (!ip.is_empty()).then(|| redactor.ip_token(ip))
}

/// The scenario's objects of a `get_pods` pod's list, in list order (a shared runtime lists
/// other runs' unlabelled containers in the same pod).
fn listed(
    redactor: &Redactor,
    items: &[Container],
    own: impl Fn(&str) -> Option<usize>,
) -> Vec<Listed> {
    items
        .iter()
        .filter(|item| own(&item.id.id).is_some())
        .map(|item| Listed {
            id: redactor.text(&item.id.id),
            name: item.name.clone(),
            state: item.state,
        })
        .collect()
}

fn sandbox_seen(redactor: &Redactor, status: &v1::PodSandboxStatus) -> SandboxSeen {
    let network = status
        .linux
        .as_ref()
        .and_then(|l| l.namespaces.as_ref())
        .and_then(|n| n.options.as_ref())
        .map(|o| {
            v1::NamespaceMode::try_from(o.network)
                .map_or_else(|_| o.network.to_string(), |m| m.as_str_name().to_owned())
        });
    SandboxSeen {
        attempt: status.metadata.as_ref().map_or(0, |m| m.attempt),
        state: ContainerState::from_cri_sandbox(status.state),
        id: Some(redactor.text(&status.id)),
        ip: ip(
            redactor,
            status.network.as_ref().map_or("", |n| n.ip.as_str()),
        ),
        network,
    }
}

fn container_seen(redactor: &Redactor, status: &ContainerStatus) -> ContainerSeen {
    ContainerSeen {
        id: Some(redactor.text(&status.id.id)),
        name: status.name.clone(),
        attempt: None,
        image: Some(status.image.clone()),
        exit: Exit {
            state: status.state,
            exit_code: status.exit_code,
            reason: Some(status.reason.clone()),
        },
        just_started: false,
    }
}

/// A kill's answer; the pod's UID reads as its alias because the redactor knows the naming.
fn kill_seen(redactor: &Redactor, result: &PodSyncResult) -> KillSeen {
    let mut results: Vec<ResultSeen> = result
        .results
        .iter()
        .map(|r| ResultSeen {
            action: r.action,
            target: redactor.text(&r.target),
            error: r.error.clone(),
            // Runtimes word their failures differently: the kind is what is compared.
            message: None,
        })
        .collect();
    results.sort_by(|a, b| {
        (a.action.name(), &a.target, &a.error).cmp(&(b.action.name(), &b.target, &b.error))
    });
    KillSeen {
        results,
        sync_error: result.sync_error.is_some(),
    }
}

fn show_key(key: PodKey) -> String {
    match key {
        PodKey::Pod(_) => pod_alias(key),
        PodKey::Unlabelled => "\"\"".to_owned(),
    }
}

/// Applies a sequence on a target and observes the manager's answers, redacted.
pub async fn observe(
    sequence: &Sequence,
    target: &Target,
    naming: &Naming,
) -> Result<Observed, PropError> {
    target.reset().await?;
    let model = Model::build(&sequence.scenario, false);
    let applied = apply(&model, target, naming, false, &IpReads::All).await?;
    let redactor = applied.redactor(naming);
    let mut seen = Observed::new();
    for (step, outcome) in applied.outcomes.iter().enumerate() {
        let answer = match outcome {
            Some(Ok(())) => StepAnswer::Ok,
            Some(Err(code)) => StepAnswer::Refused(GrpcCode(*code)),
            None => StepAnswer::Skipped,
        };
        let path = format!("step {step:02} {}", describe(&model.steps[step].action));
        seen.insert(path, Seen::Step(answer));
    }
    let plugin = Arc::new(RecordingNetworkPlugin::new());
    let manager = KubeGenericRuntimeManager::new(target.client.clone(), plugin.clone())
        .await
        .map(|manager| manager.with_profile(target.kubelet))
        .map_err(manager_failed("differential", "new"))?;
    let failed = |call| manager_failed("differential", call);
    for all in [true, false] {
        let pods = manager.get_pods(all).await.map_err(failed("get_pods"))?;
        let mut listed_pods = Vec::new();
        for pod in &pods {
            let Some(key) = naming.key_of(&pod.id) else {
                continue;
            };
            let sandboxes = listed(&redactor, &pod.sandboxes, |id| applied.sandbox_number(id));
            let containers = listed(&redactor, &pod.containers, |id| {
                applied.container_number(id)
            });
            if sandboxes.is_empty() && containers.is_empty() {
                continue;
            }
            let alias = show_key(key);
            listed_pods.push(alias.clone());
            let pod = ListedPod {
                name: pod.name.clone(),
                namespace: redactor.text(&pod.namespace),
                sandboxes,
                containers,
            };
            seen.insert(format!("get_pods(all={all}) {alias}"), Seen::Pod(pod));
        }
        listed_pods.sort();
        seen.insert(format!("get_pods(all={all}) pods"), Seen::Pods(listed_pods));
    }
    for pod in 0..MAX_PODS {
        let (uid, name, namespace) = naming.identity(PodKey::Pod(pod));
        let status = manager
            .get_pod_status(&uid, &name, &namespace)
            .await
            .map_err(failed("get_pod_status"))?;
        let prefix = format!("get_pod_status({name})");
        seen.insert(format!("{prefix} ip"), Seen::Ip(ip(&redactor, &status.ip)));
        let sandboxes = status
            .sandbox_statuses
            .iter()
            .map(|s| sandbox_seen(&redactor, s))
            .collect();
        seen.insert(format!("{prefix} sandboxes"), Seen::Sandboxes(sandboxes));
        let mut containers: Vec<ContainerSeen> = status
            .container_statuses
            .iter()
            .map(|c| container_seen(&redactor, c))
            .collect();
        containers.sort();
        seen.insert(format!("{prefix} containers"), Seen::Containers(containers));
    }
    let keys = (0..MAX_PODS)
        .map(PodKey::Pod)
        .chain([PodKey::Unlabelled])
        .zip(sequence.kill_specs.iter().copied());
    for (key, spec) in keys {
        let pods = manager.get_pods(true).await.map_err(failed("get_pods"))?;
        let mut running = running_pod(pods, naming, key, Some(&applied));
        if running.sandboxes.is_empty() && running.containers.is_empty() {
            continue;
        }
        // List order is compared above on its own; the kill gets the same running pod on both
        // runtimes, sandboxes newest-created first (what the seed takes the first for) and
        // containers in creation order, as the runner hands it.
        let number = |id: &str| {
            applied
                .sandbox_number(id)
                .or_else(|| applied.container_number(id))
        };
        running
            .sandboxes
            .sort_by_key(|s| std::cmp::Reverse(number(&s.id.id)));
        running.containers.sort_by_key(|c| number(&c.id.id));
        let spec = spec.map(|host_network| kill_spec(naming, key, host_network, &running));
        let before = plugin.calls().len();
        let result = manager.kill_pod(spec.as_ref(), &running, None).await;
        let teardown = plugin
            .calls()
            .iter()
            .skip(before)
            .map(|t| redactor.text(&t.sandbox_id))
            .collect();
        let prefix = format!("kill_pod({})", show_key(key));
        seen.insert(
            format!("{prefix} results"),
            Seen::Kill(kill_seen(&redactor, &result)),
        );
        seen.insert(format!("{prefix} teardown"), Seen::Teardown(teardown));
    }
    observe_left(target, &applied, &mut seen).await?;
    Ok(seen)
}

/// The state every object was left in, with each container's exit.
async fn observe_left(
    target: &Target,
    applied: &Applied,
    seen: &mut Observed,
) -> Result<(), PropError> {
    let call = |what: &'static str| {
        move |source| PropError::Call {
            what: what.to_owned(),
            source,
        }
    };
    let sandboxes = target
        .client
        .list_pod_sandbox(None)
        .await
        .map_err(call("listing the sandboxes left"))?;
    for sandbox in sandboxes {
        if let Some(n) = applied.sandbox_number(&sandbox.id) {
            let state = ContainerState::from_cri_sandbox(sandbox.state);
            seen.insert(
                format!("after {}", Naming::sandbox_alias(n)),
                Seen::SandboxLeft(state),
            );
        }
    }
    let containers = target
        .client
        .list_containers(None)
        .await
        .map_err(call("listing the containers left"))?;
    for container in containers {
        let Some(n) = applied.container_number(&container.id) else {
            continue;
        };
        let status = target
            .client
            .container_status(&container.id)
            .await
            .map_err(call("reading a container's status"))?
            .status
            .unwrap_or_default();
        let exit = Exit {
            state: ContainerState::from_cri_container(status.state),
            exit_code: status.exit_code,
            reason: Some(status.reason),
        };
        seen.insert(
            format!("after {}", Naming::container_alias(n)),
            Seen::ContainerLeft(exit),
        );
    }
    Ok(())
}

/// `[a, b]`.
fn list<T: fmt::Display>(items: &[T]) -> String {
    let items: Vec<String> = items.iter().map(ToString::to_string).collect();
    format!("[{}]", items.join(", "))
}

impl fmt::Display for StepAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StepAnswer::Ok => f.write_str("OK"),
            StepAnswer::Refused(code) => write!(f, "{code}"),
            StepAnswer::Skipped => f.write_str("skipped"),
        }
    }
}

impl fmt::Display for Listed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.name.is_empty() {
            write!(f, "{} {}", self.id, self.state.name())
        } else {
            write!(f, "{} {} {}", self.id, self.name, self.state.name())
        }
    }
}

impl fmt::Display for Seen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Seen::Step(answer) => write!(f, "{answer}"),
            Seen::Pods(pods) => f.write_str(&list(pods)),
            Seen::Pod(pod) => write!(
                f,
                "{}/{} sandboxes {} containers {}",
                pod.name,
                pod.namespace,
                list(&pod.sandboxes),
                list(&pod.containers)
            ),
            Seen::Ip(ip) => f.write_str(ip.as_deref().unwrap_or("none")),
            Seen::Sandboxes(sandboxes) => f.write_str(&list(sandboxes)),
            Seen::Containers(containers) => f.write_str(&list(containers)),
            Seen::Kill(kill) => {
                f.write_str(&list(&kill.results))?;
                if kill.sync_error {
                    f.write_str(" sync_error")?;
                }
                Ok(())
            }
            Seen::Teardown(sandboxes) => f.write_str(&list(sandboxes)),
            Seen::SandboxLeft(state) => f.write_str(state.name()),
            Seen::ContainerLeft(exit) => write!(f, "{exit}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manager::SyncAction;

    fn observed(pairs: Vec<(&str, Seen)>) -> Observed {
        pairs
            .into_iter()
            .map(|(path, seen)| (path.to_owned(), seen))
            .collect()
    }

    fn item(id: &str, name: &str, state: ContainerState) -> Listed {
        Listed {
            id: id.to_owned(),
            name: name.to_owned(),
            state,
        }
    }

    fn pod(sandboxes: Vec<Listed>, containers: Vec<Listed>) -> ListedPod {
        ListedPod {
            name: "p0".to_owned(),
            namespace: "<namespace>".to_owned(),
            sandboxes,
            containers,
        }
    }

    fn exit(state: ContainerState, exit_code: i32, reason: &str) -> Exit {
        Exit {
            state,
            exit_code,
            reason: Some(reason.to_owned()),
        }
    }

    fn terminated() -> Exit {
        exit(ContainerState::Exited, 0, "Completed")
    }

    fn killed() -> Exit {
        exit(ContainerState::Exited, 137, "Error")
    }

    fn status(id: &str, image: &str, exit: Exit) -> ContainerSeen {
        ContainerSeen {
            id: Some(id.to_owned()),
            name: "app".to_owned(),
            attempt: None,
            image: Some(image.to_owned()),
            exit,
            just_started: false,
        }
    }

    /// The exception `compare` finds for one path the two runtimes answered differently.
    fn exception_of(mock: Seen, runtime: Seen) -> Option<&'static str> {
        let found = compare(
            0,
            &observed(vec![("x", mock)]),
            &observed(vec![("x", runtime)]),
        );
        assert_eq!(found.len(), 1, "{found:?}");
        found[0].exception
    }

    #[test]
    fn compare_reports_changed_missing_and_extra_answers() {
        let mock = observed(vec![
            ("a", Seen::Ip(Some("<ip:s0>".to_owned()))),
            ("b", Seen::Step(StepAnswer::Ok)),
        ]);
        let not_found = StepAnswer::Refused(GrpcCode(tonic::Code::NotFound));
        let runtime = observed(vec![
            ("a", Seen::Ip(Some("<ip:s0>".to_owned()))),
            ("b", Seen::Step(not_found)),
            ("c", Seen::Teardown(vec![])),
        ]);
        let found = compare(7, &mock, &runtime);
        let shown: Vec<(&str, String, String)> = found
            .iter()
            .map(|d| {
                let (m, r) = (side(d.mock.as_ref()), side(d.runtime.as_ref()));
                (d.path.as_str(), m, r)
            })
            .collect();
        assert_eq!(
            shown,
            vec![
                ("b", "OK".to_owned(), "NotFound".to_owned()),
                ("c", "<absent>".to_owned(), "[]".to_owned())
            ]
        );
        assert!(found
            .iter()
            .all(|d| d.sequence == 7 && d.exception.is_none()));
    }

    #[test]
    fn a_stop_of_the_gone_answered_not_found_is_explained_for_stops_only() {
        let ok = || Seen::Step(StepAnswer::Ok);
        let not_found = || Seen::Step(StepAnswer::Refused(GrpcCode(tonic::Code::NotFound)));
        let at = |path: &str, mock: Seen, runtime: Seen| {
            let found = compare(
                0,
                &observed(vec![(path, mock)]),
                &observed(vec![(path, runtime)]),
            );
            found[0].exception
        };
        for path in ["step 03 stop_sandbox s0", "step 04 stop_container c1"] {
            assert_eq!(
                at(path, ok(), not_found()),
                Some("stop-of-the-gone-not-found")
            );
            // The other way round is no finding of a runtime's: the mock would be wrong.
            assert_eq!(at(path, not_found(), ok()), None);
        }
        assert_eq!(at("step 05 remove_container c1", ok(), not_found()), None);
    }

    #[test]
    fn list_order_explains_the_same_items_in_another_order_only() {
        let s0 = item("<sandbox:s0>", "", ContainerState::Running);
        let s1 = item("<sandbox:s1>", "", ContainerState::Exited);
        let c0 = item("<container:c0>", "app", ContainerState::Running);
        let listed = pod(vec![s0.clone(), s1.clone()], vec![c0.clone()]);
        let reordered = pod(vec![s1.clone(), s0.clone()], vec![c0.clone()]);
        assert_eq!(
            exception_of(Seen::Pod(listed.clone()), Seen::Pod(reordered.clone())),
            Some("list-order")
        );
        // Near misses: another state, another multiset, another identity, another answer.
        let s1_running = item("<sandbox:s1>", "", ContainerState::Running);
        let other_state = pod(vec![s1_running, s0.clone()], vec![c0]);
        assert_eq!(
            exception_of(Seen::Pod(listed.clone()), Seen::Pod(other_state)),
            None
        );
        let twice = pod(vec![s0.clone(), s0.clone(), s1.clone()], vec![]);
        let other_twice = pod(vec![s1.clone(), s0, s1], vec![]);
        assert_eq!(exception_of(Seen::Pod(twice), Seen::Pod(other_twice)), None);
        let mut renamed = reordered;
        renamed.namespace = "other".to_owned();
        assert_eq!(exception_of(Seen::Pod(listed), Seen::Pod(renamed)), None);
        assert_eq!(
            exception_of(Seen::Ip(Some("<ip:s0>".to_owned())), Seen::Ip(None)),
            None
        );
        let order = |pods: &[&str]| Seen::Pods(pods.iter().map(|p| (*p).to_owned()).collect());
        assert_eq!(
            exception_of(order(&["p0", "p1"]), order(&["p1", "p0"])),
            None
        );
    }

    #[test]
    fn term_before_trap_explains_only_a_graceful_exit_seen_as_a_kill() {
        let left = Seen::ContainerLeft;
        assert_eq!(
            exception_of(left(terminated()), left(killed())),
            Some("term-before-trap")
        );
        let running = exit(ContainerState::Running, 0, "");
        assert_eq!(exception_of(left(terminated()), left(running)), None);
        assert_eq!(exception_of(left(killed()), left(terminated())), None);
        let failed = exit(ContainerState::Exited, 1, "Error");
        assert_eq!(exception_of(left(terminated()), left(failed)), None);
        let oom = exit(ContainerState::Exited, 137, "OOMKilled");
        assert_eq!(exception_of(left(terminated()), left(oom)), None);
    }

    #[test]
    fn term_before_trap_in_pod_status_needs_everything_else_equal() {
        let other = status("<container:c1>", "busybox", killed());
        let mock = Seen::Containers(vec![
            status("<container:c0>", "busybox", terminated()),
            other.clone(),
        ]);
        let with = |first: ContainerSeen| Seen::Containers(vec![first, other.clone()]);
        assert_eq!(
            exception_of(
                mock.clone(),
                with(status("<container:c0>", "busybox", killed()))
            ),
            Some("term-before-trap")
        );
        let other_image = with(status("<container:c0>", "pause", killed()));
        assert_eq!(exception_of(mock.clone(), other_image), None);
        let other_container = with(status("<container:c2>", "busybox", killed()));
        assert_eq!(exception_of(mock.clone(), other_container), None);
        let one_missing = Seen::Containers(vec![status("<container:c0>", "busybox", killed())]);
        assert_eq!(exception_of(mock, one_missing), None);
    }

    #[test]
    fn identical_observations_have_no_difference() {
        let same = observed(vec![("a", Seen::SandboxLeft(ContainerState::Exited))]);
        assert!(compare(0, &same, &same).is_empty());
    }

    #[test]
    fn a_kill_names_the_pod_by_the_naming_not_by_the_look_of_its_uid() {
        let naming = Naming {
            run_id: "r1".to_owned(),
            case: 3,
        };
        let another_case = Naming {
            run_id: "r1".to_owned(),
            case: 4,
        };
        let redactor = Applied::default().redactor(&naming);
        let step = |action, target: String| crate::manager::SyncResult {
            action,
            target,
            error: None,
            message: String::new(),
        };
        let result = PodSyncResult {
            results: vec![
                step(SyncAction::TeardownNetwork, naming.pod_uid(1)),
                step(SyncAction::KillContainer, "app".to_owned()),
                step(SyncAction::KillPodSandbox, another_case.pod_uid(1)),
            ],
            sync_error: None,
        };
        let targets: Vec<String> = kill_seen(&redactor, &result)
            .results
            .into_iter()
            .map(|r| r.target)
            .collect();
        assert_eq!(targets, ["app", "prop-r1-4-p1", "<uid:p1>"]);
    }

    #[test]
    fn the_report_shows_the_path_and_both_sides() {
        let outcome = DiffOutcome {
            sequences: 1,
            differences: compare(
                0,
                &observed(vec![("after c0", Seen::ContainerLeft(terminated()))]),
                &observed(vec![("after c0", Seen::ContainerLeft(killed()))]),
            ),
            ..DiffOutcome::default()
        };
        let report = outcome.report();
        let expected = "sequence 0 after c0: [exception term-before-trap]\n  \
                        mock:    exited exit=0 Completed\n  \
                        runtime: exited exit=137 Error\n";
        assert!(report.contains(expected), "{report}");
        assert_eq!(outcome.unexplained(), 0);
    }

    #[tokio::test]
    async fn a_mock_observed_as_the_runtime_agrees_with_a_fresh_mock() {
        let endpoint = Target::mock(&MockRuntime::new()).await.unwrap();
        let options = Options {
            sequences: 12,
            rng: TestRng::deterministic_rng(proptest::test_runner::RngAlgorithm::ChaCha),
            run_id: "selfdiff".to_owned(),
        };
        let outcome = run(&endpoint, options).await.unwrap();
        assert_eq!(outcome.sequences, 12);
        assert!(outcome.values_compared > 12, "{}", outcome.report());
        assert!(outcome.differences.is_empty(), "{}", outcome.report());
    }
}
