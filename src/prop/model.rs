//! The reference model: from a scenario alone, which operations a runtime accepts, what it holds
//! afterwards (sandbox states, creation order, containers and their labels and states) and so
//! what the manager must report. It shares no code with the manager, so a property compares the
//! manager with an independent account rather than with itself.

use std::collections::{BTreeMap, BTreeSet};

use super::scenario::{KillPlan, Op, PodLabels, Scenario, CONTAINER_NAMES, MAX_SANDBOXES_PER_POD};
use crate::manager::ContainerState;

/// Unix seconds the mock's clock starts from in scenarios that set it.
pub const CLOCK_BASE_SECONDS: i64 = 1_700_000_000;

/// Which pod an object belongs to, in scenario terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PodKey {
    /// Pod `pN`.
    Pod(u8),
    /// The pod with UID "" (containers without pod labels).
    Unlabelled,
}

/// How a scenario's pods are named on the runtime: unique per run and case, so scenarios on a
/// shared runtime never see each other's pods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Naming {
    /// The run's id (also the `cri-harness.io/run-id` label).
    pub run_id: String,
    /// The scenario's number within the run (also the `cri-harness.io/case` label).
    pub case: u64,
}

impl Naming {
    /// The namespace of every pod of the scenario.
    pub fn namespace(&self) -> String {
        format!("crih-prop-{}-{}", self.run_id, self.case)
    }

    /// Pod `pN`'s UID.
    pub fn pod_uid(&self, pod: u8) -> String {
        format!("prop-{}-{}-p{pod}", self.run_id, self.case)
    }

    /// Pod `pN`'s name, also its alias in reports and suite files.
    pub fn pod_name(pod: u8) -> String {
        format!("p{pod}")
    }

    /// Sandbox number `n`'s alias in reports and suite files (`s3`).
    pub fn sandbox_alias(n: usize) -> String {
        format!("s{n}")
    }

    /// Container number `n`'s alias in reports and suite files (`c1`).
    pub fn container_alias(n: usize) -> String {
        format!("c{n}")
    }

    /// UID, name and namespace of a pod as the manager reports them.
    pub fn identity(&self, key: PodKey) -> (String, String, String) {
        match key {
            PodKey::Pod(pod) => (self.pod_uid(pod), Self::pod_name(pod), self.namespace()),
            PodKey::Unlabelled => (String::new(), String::new(), String::new()),
        }
    }

    /// The pod a UID names, if it is one of this scenario's.
    pub fn key_of(&self, uid: &str) -> Option<PodKey> {
        if uid.is_empty() {
            return Some(PodKey::Unlabelled);
        }
        (0..super::scenario::MAX_PODS)
            .find_map(|pod| (self.pod_uid(pod) == uid).then_some(PodKey::Pod(pod)))
    }
}

/// Why the model expects a runtime to refuse an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The sandbox or container name is held by a live object.
    NameReserved,
    /// The object was removed.
    NotFound,
    /// A container cannot be created in a sandbox that is not ready.
    SandboxNotReady,
}

/// What the runtime should answer to one operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Success.
    Accepted,
    /// An error.
    Refused(Refusal),
}

/// One operation with every reference resolved to a sandbox or container number (numbers count
/// the objects made, in creation order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// RunPodSandbox; `sandbox` is the number it gets, `None` when the runtime must refuse it.
    RunSandbox {
        /// Number of the new sandbox.
        sandbox: Option<usize>,
        /// Pod number.
        pod: u8,
        /// Metadata attempt.
        attempt: u32,
        /// Node network.
        host_network: bool,
        /// Creation rank: seconds after [`CLOCK_BASE_SECONDS`] the clock shows (mock), and the
        /// created_at order on any runtime.
        created_rank: i64,
    },
    /// StopPodSandbox.
    StopSandbox {
        /// Sandbox number.
        sandbox: usize,
    },
    /// RemovePodSandbox.
    RemoveSandbox {
        /// Sandbox number.
        sandbox: usize,
    },
    /// CreateContainer, then StartContainer if `start`.
    CreateContainer {
        /// Number of the new container, `None` when the runtime must refuse it.
        container: Option<usize>,
        /// Sandbox number.
        sandbox: usize,
        /// Container name.
        name: &'static str,
        /// Whose pod labels (`None`: no pod labels).
        labels: Option<u8>,
        /// Start it.
        start: bool,
    },
    /// StopContainer.
    StopContainer {
        /// Container number.
        container: usize,
    },
    /// RemoveContainer.
    RemoveContainer {
        /// Container number.
        container: usize,
    },
}

/// An action and the answer the runtime should give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// What is done.
    pub action: Action,
    /// What the runtime should answer.
    pub expect: Outcome,
}

/// A sandbox as the model holds it after the scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxModel {
    /// Pod number.
    pub pod: u8,
    /// Metadata attempt.
    pub attempt: u32,
    /// Node network.
    pub host_network: bool,
    /// created_at order: a higher rank is newer.
    pub created_rank: i64,
    /// READY (else NOTREADY).
    pub ready: bool,
    /// Removed from the runtime.
    pub removed: bool,
}

/// A container as the model holds it after the scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerModel {
    /// Its sandbox's number.
    pub sandbox: usize,
    /// Container name.
    pub name: &'static str,
    /// Whose pod labels it carries (`None`: none).
    pub labels: Option<u8>,
    /// Its state.
    pub state: ContainerState,
    /// Removed from the runtime.
    pub removed: bool,
}

impl ContainerModel {
    /// The pod the manager must put it in.
    pub fn pod_key(&self) -> PodKey {
        self.labels.map_or(PodKey::Unlabelled, PodKey::Pod)
    }
}

/// The runtime's state after a scenario, and the steps that lead there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model {
    /// The resolved steps, in order (operations with nothing to act on are dropped).
    pub steps: Vec<Step>,
    /// Every sandbox made, by number.
    pub sandboxes: Vec<SandboxModel>,
    /// Every container made, by number.
    pub containers: Vec<ContainerModel>,
    /// The scenario sets the mock's clock before each RunPodSandbox.
    pub clock: bool,
}

/// One pod in a `get_pods` answer, as the model expects it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExpectedPod {
    /// Sandbox numbers and the state the manager reports for each.
    pub sandboxes: BTreeMap<usize, ContainerState>,
    /// Container numbers and their states.
    pub containers: BTreeMap<usize, ContainerState>,
}

/// A `get_pod_status` answer as the model expects it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExpectedStatus {
    /// The pod's sandboxes (any state), newest created first.
    pub sandboxes: Vec<usize>,
    /// The sandbox whose IP is the pod IP; `None`: the IP is "".
    pub ip_of: Option<usize>,
    /// Containers reported: those in the pod's sandboxes (the seed gathers them per sandbox).
    pub containers: BTreeSet<usize>,
}

/// The running pod handed to `kill_pod`, by number, in the order it was handed over.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunningView {
    /// Sandbox numbers, in the running pod's order.
    pub sandboxes: Vec<usize>,
    /// Container numbers, in the running pod's order.
    pub containers: Vec<usize>,
}

/// What `kill_pod` must do, as the model expects it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExpectedKill {
    /// KillContainer results: one per container of the running pod.
    pub container_results: usize,
    /// How many of them fail (injected ContainerStatus and StopContainer errors).
    pub container_failures: usize,
    /// The PodSandboxStatus the manager asks (without a spec) fails: only a sync error, no
    /// teardown and no sandbox stop.
    pub sync_error: bool,
    /// The sandbox whose id the network teardown names; `None`: no teardown at all.
    pub teardown: Option<usize>,
    /// The teardown result carries TeardownNetworkError.
    pub teardown_fails: bool,
    /// `Some(fails)`: a KillPodSandbox result, failed or not.
    pub sandbox_step: Option<bool>,
    /// Sandboxes whose StopPodSandbox succeeds.
    pub stopped: Vec<usize>,
    /// Sandboxes whose StopPodSandbox fails (the first ones, in order: the calls are sequential).
    pub not_stopped: Vec<usize>,
}

impl ExpectedKill {
    /// True when the result must carry an error.
    pub fn fails(&self) -> bool {
        self.container_failures > 0
            || self.sync_error
            || (self.teardown.is_some() && self.teardown_fails)
            || self.sandbox_step == Some(true)
    }
}

impl Model {
    /// Runs the scenario on the model. `clock`: the mock's clock is set before each
    /// RunPodSandbox, so creation ranks follow the generated offsets rather than the order.
    pub fn build(scenario: &Scenario, clock: bool) -> Model {
        let mut model = Model {
            steps: Vec::new(),
            sandboxes: Vec::new(),
            containers: Vec::new(),
            clock,
        };
        for (index, op) in scenario.ops.iter().enumerate() {
            if let Some(step) = model.resolve(index, op) {
                model.steps.push(step);
            }
        }
        model
    }

    fn resolve(&mut self, index: usize, op: &Op) -> Option<Step> {
        let (action, expect) = match *op {
            Op::RunSandbox {
                pod,
                attempt,
                host_network,
                created_at,
            } => {
                let made = self.sandboxes.iter().filter(|s| s.pod == pod).count();
                if made >= MAX_SANDBOXES_PER_POD {
                    return None;
                }
                let step_rank = index as i64;
                let created_rank = if self.clock {
                    i64::from(created_at) * 1000 + step_rank
                } else {
                    step_rank
                };
                let taken = self
                    .sandboxes
                    .iter()
                    .any(|s| !s.removed && s.pod == pod && s.attempt == attempt);
                let sandbox = (!taken).then(|| {
                    self.sandboxes.push(SandboxModel {
                        pod,
                        attempt,
                        host_network,
                        created_rank,
                        ready: true,
                        removed: false,
                    });
                    self.sandboxes.len() - 1
                });
                let expect = if taken {
                    Outcome::Refused(Refusal::NameReserved)
                } else {
                    Outcome::Accepted
                };
                let action = Action::RunSandbox {
                    sandbox,
                    pod,
                    attempt,
                    host_network,
                    created_rank,
                };
                (action, expect)
            }
            Op::StopSandbox { ref sandbox } => {
                let number = pick(sandbox, self.sandboxes.len())?;
                // Stopping what is gone succeeds: the contract makes the stop idempotent.
                if !self.sandboxes[number].removed {
                    self.stop_sandbox(number);
                }
                let expect = Outcome::Accepted;
                (Action::StopSandbox { sandbox: number }, expect)
            }
            Op::RemoveSandbox { ref sandbox } => {
                let number = pick(sandbox, self.sandboxes.len())?;
                if !self.sandboxes[number].removed {
                    self.stop_sandbox(number);
                    self.sandboxes[number].removed = true;
                    for container in self.containers.iter_mut().filter(|c| c.sandbox == number) {
                        container.removed = true;
                    }
                }
                // Removing what is gone succeeds: the contract makes removal idempotent.
                (Action::RemoveSandbox { sandbox: number }, Outcome::Accepted)
            }
            Op::CreateContainer {
                ref sandbox,
                name,
                labels,
                start,
            } => {
                let number = pick(sandbox, self.sandboxes.len())?;
                let name = CONTAINER_NAMES[usize::from(name) % CONTAINER_NAMES.len()];
                let target = &self.sandboxes[number];
                let labels = match labels {
                    PodLabels::Own => Some(target.pod),
                    PodLabels::Pod(pod) => Some(pod),
                    PodLabels::Missing => None,
                };
                let refusal = if target.removed {
                    Some(Refusal::NotFound)
                } else if !target.ready {
                    Some(Refusal::SandboxNotReady)
                } else if self.containers.iter().any(|c| {
                    // The reserved name is `<name>_<pod name>_<namespace>_<uid>_<container
                    // attempt>`: the sandbox's attempt is not in it, so a pod's sandboxes share
                    // their container names.
                    !c.removed && c.name == name && self.sandboxes[c.sandbox].pod == target.pod
                }) {
                    Some(Refusal::NameReserved)
                } else {
                    None
                };
                let container = refusal.is_none().then(|| {
                    self.containers.push(ContainerModel {
                        sandbox: number,
                        name,
                        labels,
                        state: if start {
                            ContainerState::Running
                        } else {
                            ContainerState::Created
                        },
                        removed: false,
                    });
                    self.containers.len() - 1
                });
                let action = Action::CreateContainer {
                    container,
                    sandbox: number,
                    name,
                    labels,
                    start,
                };
                (action, refusal.map_or(Outcome::Accepted, Outcome::Refused))
            }
            Op::StopContainer { ref container } => {
                let number = pick(container, self.containers.len())?;
                let target = &mut self.containers[number];
                // As for sandboxes: the stop is idempotent, so a removed container stops fine.
                if !target.removed {
                    stop_container(target);
                }
                let expect = Outcome::Accepted;
                (Action::StopContainer { container: number }, expect)
            }
            Op::RemoveContainer { ref container } => {
                let number = pick(container, self.containers.len())?;
                self.containers[number].removed = true;
                (
                    Action::RemoveContainer { container: number },
                    Outcome::Accepted,
                )
            }
        };
        Some(Step { action, expect })
    }

    /// A sandbox stops: NOTREADY, and its running containers are killed.
    fn stop_sandbox(&mut self, number: usize) {
        self.sandboxes[number].ready = false;
        for container in self
            .containers
            .iter_mut()
            .filter(|c| c.sandbox == number && !c.removed)
        {
            stop_container(container);
        }
    }

    /// Live sandboxes, by number.
    pub fn live_sandboxes(&self) -> impl Iterator<Item = (usize, &SandboxModel)> {
        self.sandboxes
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.removed)
    }

    /// Live containers, by number.
    pub fn live_containers(&self) -> impl Iterator<Item = (usize, &ContainerModel)> {
        self.containers
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.removed)
    }

    /// What `get_pods(all)` must report: every live sandbox under its pod and every live
    /// container under the pod its labels name; with `all` false only READY sandboxes and
    /// RUNNING containers, and only pods that have one of them.
    pub fn pods(&self, all: bool) -> BTreeMap<PodKey, ExpectedPod> {
        let mut pods: BTreeMap<PodKey, ExpectedPod> = BTreeMap::new();
        for (number, sandbox) in self.live_sandboxes() {
            if all || sandbox.ready {
                let state = sandbox_state(sandbox.ready);
                pods.entry(PodKey::Pod(sandbox.pod))
                    .or_default()
                    .sandboxes
                    .insert(number, state);
            }
        }
        for (number, container) in self.live_containers() {
            if all || container.state == ContainerState::Running {
                pods.entry(container.pod_key())
                    .or_default()
                    .containers
                    .insert(number, container.state);
            }
        }
        pods
    }

    /// What `get_pod_status` must report for pod `pN`.
    pub fn pod_status(&self, pod: u8) -> ExpectedStatus {
        let mut sandboxes: Vec<usize> = self
            .live_sandboxes()
            .filter(|(_, s)| s.pod == pod)
            .map(|(number, _)| number)
            .collect();
        sandboxes.sort_by_key(|&n| std::cmp::Reverse(self.sandboxes[n].created_rank));
        let ip_of = sandboxes.first().copied().filter(|&n| {
            let newest = &self.sandboxes[n];
            newest.ready && !newest.host_network
        });
        let containers = self
            .live_containers()
            .filter(|(_, c)| sandboxes.contains(&c.sandbox))
            .map(|(number, _)| number)
            .collect();
        ExpectedStatus {
            sandboxes,
            ip_of,
            containers,
        }
    }

    /// The running pod `get_pods(true)` should hand `kill_pod` on a runtime that lists oldest
    /// first (the mock, and containerd as observed): sandboxes and containers in creation order.
    pub fn listed_view(&self, target: PodKey) -> RunningView {
        RunningView {
            sandboxes: self
                .live_sandboxes()
                .filter(|(_, s)| PodKey::Pod(s.pod) == target)
                .map(|(n, _)| n)
                .collect(),
            containers: self
                .live_containers()
                .filter(|(_, c)| c.pod_key() == target)
                .map(|(n, _)| n)
                .collect(),
        }
    }

    /// What `kill_pod` must do with the running pod `view` under `plan`. The seed decides the
    /// network teardown on the first sandbox of the running pod (it takes it for the latest):
    /// host network from the spec if given, else from that sandbox's status.
    pub fn kill(&self, view: &RunningView, plan: &KillPlan) -> ExpectedKill {
        let faults = &plan.faults;
        let containers = view.containers.len();
        let (status_failures, stop_failures) = match plan.spec {
            Some(_) => (0, (faults.stop_container as usize).min(containers)),
            None => {
                let status = (faults.container_status as usize).min(containers);
                (
                    status,
                    (faults.stop_container as usize).min(containers - status),
                )
            }
        };
        let mut expected = ExpectedKill {
            container_results: containers,
            container_failures: status_failures + stop_failures,
            ..Default::default()
        };
        let Some(&first) = view.sandboxes.first() else {
            return expected;
        };
        let host_network = match plan.spec {
            Some(host_network) => host_network,
            None if faults.pod_sandbox_status > 0 => {
                expected.sync_error = true;
                return expected;
            }
            None => self.sandboxes[first].host_network,
        };
        if !host_network {
            expected.teardown = Some(first);
            expected.teardown_fails = faults.teardown_fails;
        }
        let failing = (faults.stop_pod_sandbox as usize).min(view.sandboxes.len());
        expected.sandbox_step = Some(failing > 0);
        expected.not_stopped = view.sandboxes[..failing].to_vec();
        expected.stopped = view.sandboxes[failing..].to_vec();
        expected
    }

    /// Sandbox readiness and container states after a kill that stopped `expected.stopped`
    /// and every container of `view` except up to `expected.container_failures` of them: the
    /// containers that may have escaped (running before, in a sandbox not stopped) are returned
    /// as the second value, to be checked against the failure count.
    pub fn after_kill(
        &self,
        view: &RunningView,
        expected: &ExpectedKill,
    ) -> (Model, BTreeSet<usize>) {
        let mut after = self.clone();
        for &number in &expected.stopped {
            after.stop_sandbox(number);
        }
        let mut may_escape = BTreeSet::new();
        for &number in &view.containers {
            if after.containers[number].state == ContainerState::Running
                && expected.container_failures > 0
            {
                may_escape.insert(number);
            }
            stop_container(&mut after.containers[number]);
        }
        (after, may_escape)
    }
}

/// The number an index picks among `len` objects; `None` when there are none.
/// A sandbox's state as the manager (and the suites) name it: READY is running, NOTREADY
/// exited.
pub fn sandbox_state(ready: bool) -> ContainerState {
    if ready {
        ContainerState::Running
    } else {
        ContainerState::Exited
    }
}

fn pick(index: &proptest::sample::Index, len: usize) -> Option<usize> {
    (len > 0).then(|| index.index(len))
}

/// A container stops: a running one exits; a created one stays created (containerd's rule).
fn stop_container(container: &mut ContainerModel) {
    if container.state == ContainerState::Running {
        container.state = ContainerState::Exited;
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::prop::scenario::{Faults, KillTarget};
    use proptest::sample::Index;
    use proptest::strategy::{Strategy, ValueTree};
    use proptest::test_runner::TestRunner;

    /// An index that picks the object numbered `n` among `len` (`Index` has no constructor
    /// from a position, so search the generated ones).
    fn index_of(n: usize, len: usize) -> Index {
        let mut runner = TestRunner::deterministic();
        loop {
            let index = proptest::arbitrary::any::<Index>()
                .new_tree(&mut runner)
                .unwrap()
                .current();
            if index.index(len) == n {
                return index;
            }
        }
    }

    /// A RunSandbox operation, for the module tests of `prop`.
    pub(in crate::prop) fn run(pod: u8, attempt: u32, host_network: bool, created_at: u8) -> Op {
        Op::RunSandbox {
            pod,
            attempt,
            host_network,
            created_at,
        }
    }

    #[test]
    fn a_reserved_sandbox_name_is_refused_until_removed() {
        let scenario = Scenario {
            ops: vec![
                run(0, 0, false, 0),
                run(0, 0, false, 0),
                Op::RemoveSandbox {
                    sandbox: index_of(0, 1),
                },
                run(0, 0, false, 0),
            ],
        };
        let model = Model::build(&scenario, false);
        let outcomes: Vec<Outcome> = model.steps.iter().map(|s| s.expect).collect();
        assert_eq!(
            outcomes,
            vec![
                Outcome::Accepted,
                Outcome::Refused(Refusal::NameReserved),
                Outcome::Accepted,
                Outcome::Accepted
            ]
        );
        assert_eq!(model.sandboxes.len(), 2);
    }

    #[test]
    fn creation_rank_follows_the_clock_offset_not_the_order() {
        let scenario = Scenario {
            ops: vec![run(0, 0, false, 5), run(0, 1, false, 1)],
        };
        let model = Model::build(&scenario, true);
        assert_eq!(model.pod_status(0).sandboxes, vec![0, 1]);
        let without_clock = Model::build(&scenario, false);
        assert_eq!(without_clock.pod_status(0).sandboxes, vec![1, 0]);
    }

    #[test]
    fn a_container_in_a_stopped_sandbox_is_refused_and_stopping_kills_the_running_ones() {
        let scenario = Scenario {
            ops: vec![
                run(1, 0, false, 0),
                Op::CreateContainer {
                    sandbox: index_of(0, 1),
                    name: 0,
                    labels: PodLabels::Missing,
                    start: true,
                },
                Op::StopSandbox {
                    sandbox: index_of(0, 1),
                },
                Op::CreateContainer {
                    sandbox: index_of(0, 1),
                    name: 1,
                    labels: PodLabels::Own,
                    start: false,
                },
            ],
        };
        let model = Model::build(&scenario, false);
        assert_eq!(
            model.steps[3].expect,
            Outcome::Refused(Refusal::SandboxNotReady)
        );
        assert_eq!(model.containers[0].state, ContainerState::Exited);
        let pods = model.pods(true);
        assert_eq!(
            pods.keys().copied().collect::<Vec<_>>(),
            vec![PodKey::Pod(1), PodKey::Unlabelled]
        );
        assert!(model.pods(false).is_empty());
    }

    #[test]
    fn the_ip_comes_only_from_a_ready_pod_network_newest_sandbox() {
        let host_newest = Scenario {
            ops: vec![run(0, 0, false, 0), run(0, 1, true, 0)],
        };
        assert_eq!(Model::build(&host_newest, false).pod_status(0).ip_of, None);
        let pod_newest = Scenario {
            ops: vec![run(0, 0, true, 0), run(0, 1, false, 0)],
        };
        assert_eq!(
            Model::build(&pod_newest, false).pod_status(0).ip_of,
            Some(1)
        );
    }

    #[test]
    fn kill_without_a_spec_decides_on_the_first_sandbox_handed_over() {
        let scenario = Scenario {
            ops: vec![run(0, 0, true, 0), run(0, 1, false, 0)],
        };
        let model = Model::build(&scenario, false);
        let plan = KillPlan {
            target: KillTarget::Pod(0),
            spec: None,
            faults: Faults::default(),
        };
        let listed = model.listed_view(PodKey::Pod(0));
        assert_eq!(model.kill(&listed, &plan).teardown, None);
        let reversed = RunningView {
            sandboxes: vec![1, 0],
            containers: vec![],
        };
        assert_eq!(model.kill(&reversed, &plan).teardown, Some(1));
    }

    #[test]
    fn failing_sandbox_stops_are_the_first_ones_and_the_rest_still_stop() {
        let scenario = Scenario {
            ops: vec![
                run(0, 0, false, 0),
                run(0, 1, false, 0),
                run(0, 2, false, 0),
            ],
        };
        let model = Model::build(&scenario, false);
        let plan = KillPlan {
            target: KillTarget::Pod(0),
            spec: Some(false),
            faults: Faults {
                stop_pod_sandbox: 2,
                ..Default::default()
            },
        };
        let expected = model.kill(&model.listed_view(PodKey::Pod(0)), &plan);
        assert_eq!(expected.not_stopped, vec![0, 1]);
        assert_eq!(expected.stopped, vec![2]);
        assert_eq!(expected.sandbox_step, Some(true));
        assert!(expected.fails());
    }
}
