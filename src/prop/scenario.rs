//! What a property run generates: a scenario (an ordered list of operations on a runtime), the
//! kill plan and injected faults of the kill property, and version strings. Operations name the
//! objects they act on by a proptest `Index` over the objects made so far, so removing an
//! operation while shrinking never leaves a dangling reference.

use proptest::prelude::*;
use proptest::sample::Index;

/// Pods a scenario draws from (`p0` .. `p3`).
pub const MAX_PODS: u8 = 4;

/// Sandboxes one pod may have; later RunSandbox operations of a full pod are dropped.
pub const MAX_SANDBOXES_PER_POD: usize = 4;

/// Container names; few, so that names clash and the runtime's reservation rule is exercised.
pub const CONTAINER_NAMES: [&str; 3] = ["app", "sidecar", "helper"];

/// Whose `io.kubernetes.pod.*` labels a container carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodLabels {
    /// Its sandbox's pod's, as the kubelet writes them.
    Own,
    /// Pod `pN`'s (an orphan when that is not its sandbox's pod).
    Pod(u8),
    /// None: the container lands in the pod with UID "".
    Missing,
}

/// One operation on the runtime.
#[derive(Debug, Clone)]
pub enum Op {
    /// RunPodSandbox for a pod.
    RunSandbox {
        /// Pod number, below [`MAX_PODS`].
        pod: u8,
        /// Metadata attempt.
        attempt: u32,
        /// Node network namespace.
        host_network: bool,
        /// Mock only: creation time offset (the clock is set before the call), so the
        /// created_at order is independent of creation order, attempt and list order.
        created_at: u8,
    },
    /// StopPodSandbox of a sandbox made earlier.
    StopSandbox {
        /// Which sandbox, among those made so far.
        sandbox: Index,
    },
    /// RemovePodSandbox of a sandbox made earlier.
    RemoveSandbox {
        /// Which sandbox, among those made so far.
        sandbox: Index,
    },
    /// CreateContainer (and maybe StartContainer) in a sandbox made earlier.
    CreateContainer {
        /// Which sandbox, among those made so far.
        sandbox: Index,
        /// Index into [`CONTAINER_NAMES`].
        name: u8,
        /// Whose pod labels it carries.
        labels: PodLabels,
        /// Start it right after creating it.
        start: bool,
    },
    /// StopContainer of a container made earlier.
    StopContainer {
        /// Which container, among those made so far.
        container: Index,
    },
    /// RemoveContainer of a container made earlier.
    RemoveContainer {
        /// Which container, among those made so far.
        container: Index,
    },
}

/// An ordered list of operations, applied to an empty runtime.
#[derive(Debug, Clone, Default)]
pub struct Scenario {
    /// The operations, in order.
    pub ops: Vec<Op>,
}

/// What the target can express: a real runtime has no settable clock and no fault injection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    /// Longest scenario.
    pub max_ops: usize,
    /// The mock's control service is there (clock, injected faults, version).
    pub mock_control: bool,
}

impl Profile {
    /// Scenarios for the mock: every operation, clock offsets, injected faults.
    pub const MOCK: Profile = Profile {
        max_ops: 16,
        mock_control: true,
    };

    /// Scenarios a real runtime can express, kept short: every sandbox costs it a pause
    /// container and a network namespace.
    pub const REAL: Profile = Profile {
        max_ops: 8,
        mock_control: false,
    };
}

/// Whose pod the kill property kills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillTarget {
    /// Pod `pN`.
    Pod(u8),
    /// The pod with UID "" (containers without pod labels).
    Unlabelled,
}

/// Faults injected just before `kill_pod`. Counts are how many of the following calls of that
/// CRI method fail (0: none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Faults {
    /// Failing StopContainer calls.
    pub stop_container: u32,
    /// Failing StopPodSandbox calls.
    pub stop_pod_sandbox: u32,
    /// Failing PodSandboxStatus calls (asked only without a pod spec).
    pub pod_sandbox_status: u32,
    /// Failing ContainerStatus calls (asked only without a pod spec).
    pub container_status: u32,
    /// The network plugin's teardown fails (needs no mock: the plugin is the harness's).
    pub teardown_fails: bool,
}

impl Faults {
    /// True when some CRI call is made to fail (needs the mock's control service).
    pub fn injects_errors(&self) -> bool {
        self.stop_container
            + self.stop_pod_sandbox
            + self.pod_sandbox_status
            + self.container_status
            > 0
    }

    /// True when nothing fails.
    pub fn none(&self) -> bool {
        !self.injects_errors() && !self.teardown_fails
    }
}

/// How `kill_pod` is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KillPlan {
    /// The pod killed; the running pod is what `get_pods(true)` reports for it.
    pub target: KillTarget,
    /// `Some(host_network)`: a pod spec is passed with that host-network flag; `None`: no spec,
    /// so the manager reads the host-network choice from the first sandbox's status.
    pub spec: Option<bool>,
    /// Faults injected before the call.
    pub faults: Faults,
}

fn pod() -> impl Strategy<Value = u8> {
    0..MAX_PODS
}

fn op(profile: Profile) -> impl Strategy<Value = Op> {
    let created_at = if profile.mock_control {
        (0u8..8).boxed()
    } else {
        Just(0u8).boxed()
    };
    let labels = prop_oneof![
        3 => Just(PodLabels::Own),
        1 => pod().prop_map(PodLabels::Pod),
        1 => Just(PodLabels::Missing),
    ];
    prop_oneof![
        4 => (pod(), 0u32..3, proptest::bool::weighted(0.25), created_at).prop_map(
            |(pod, attempt, host_network, created_at)| Op::RunSandbox {
                pod,
                attempt,
                host_network,
                created_at,
            }
        ),
        1 => any::<Index>().prop_map(|sandbox| Op::StopSandbox { sandbox }),
        1 => any::<Index>().prop_map(|sandbox| Op::RemoveSandbox { sandbox }),
        4 => (any::<Index>(), 0..CONTAINER_NAMES.len() as u8, labels, any::<bool>()).prop_map(
            |(sandbox, name, labels, start)| Op::CreateContainer {
                sandbox,
                name,
                labels,
                start,
            }
        ),
        1 => any::<Index>().prop_map(|container| Op::StopContainer { container }),
        1 => any::<Index>().prop_map(|container| Op::RemoveContainer { container }),
    ]
}

/// Scenarios for a target: up to `profile.max_ops` operations; they shrink toward fewer
/// operations (so fewer sandboxes), attempt 0, pod network and creation-order clocks.
pub fn scenario(profile: Profile) -> impl Strategy<Value = Scenario> {
    proptest::collection::vec(op(profile), 0..=profile.max_ops).prop_map(|ops| Scenario { ops })
}

/// Faults for a target: CRI errors only where the mock's control service can inject them.
pub fn faults(profile: Profile) -> impl Strategy<Value = Faults> {
    let count = |max: u32| {
        if profile.mock_control {
            prop_oneof![2 => Just(0u32), 1 => 1..=max].boxed()
        } else {
            Just(0u32).boxed()
        }
    };
    (
        count(3),
        count(3),
        count(1),
        count(2),
        proptest::bool::weighted(0.25),
    )
        .prop_map(
            |(
                stop_container,
                stop_pod_sandbox,
                pod_sandbox_status,
                container_status,
                teardown_fails,
            )| {
                Faults {
                    stop_container,
                    stop_pod_sandbox,
                    pod_sandbox_status,
                    container_status,
                    teardown_fails,
                }
            },
        )
}

/// Kill plans: mostly a labelled pod, now and then the pod of unlabelled containers.
pub fn kill_plan(profile: Profile) -> impl Strategy<Value = KillPlan> {
    let target = prop_oneof![
        5 => pod().prop_map(KillTarget::Pod),
        1 => Just(KillTarget::Unlabelled),
    ];
    let spec = prop_oneof![Just(None), any::<bool>().prop_map(Some)];
    (target, spec, faults(profile)).prop_map(|(target, spec, faults)| KillPlan {
        target,
        spec,
        faults,
    })
}

/// Version strings around "0.1.0": the exact one, near misses that a loose comparison would
/// accept (prefixes, padding, pre-releases, other numbers) and arbitrary short strings.
pub fn version_string() -> impl Strategy<Value = String> {
    let near = prop::sample::select(vec![
        "0.1.0",
        "0.1.0 ",
        " 0.1.0",
        "v0.1.0",
        "0.1",
        "0.1.0.0",
        "0.1.1",
        "0.0.1",
        "1.0.0",
        "0.1.0-alpha",
        "0.1.0+build",
        "0.10",
        "00.1.0",
        "0.1.00",
        "",
        "v1",
        "0.2.0",
        "0.1.0\n",
    ])
    .prop_map(str::to_owned);
    prop_oneof![
        3 => near,
        1 => "[0-9v.+\\- ]{0,7}",
        1 => any::<String>(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    #[test]
    fn real_profile_never_asks_for_the_clock_or_injected_errors() {
        let mut runner = TestRunner::deterministic();
        for _ in 0..200 {
            let scenario = scenario(Profile::REAL)
                .new_tree(&mut runner)
                .unwrap()
                .current();
            assert!(scenario.ops.len() <= Profile::REAL.max_ops);
            assert!(scenario
                .ops
                .iter()
                .all(|op| !matches!(op, Op::RunSandbox { created_at, .. } if *created_at != 0)));
            let plan = kill_plan(Profile::REAL)
                .new_tree(&mut runner)
                .unwrap()
                .current();
            assert!(!plan.faults.injects_errors());
        }
    }

    #[test]
    fn version_strings_include_the_accepted_one_and_others() {
        let mut runner = TestRunner::deterministic();
        let strings: Vec<String> = (0..300)
            .map(|_| version_string().new_tree(&mut runner).unwrap().current())
            .collect();
        assert!(strings.iter().any(|s| s == "0.1.0"));
        assert!(strings.iter().any(|s| s != "0.1.0"));
    }
}
