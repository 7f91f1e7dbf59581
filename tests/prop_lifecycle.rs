//! Properties of `compute_pod_actions` over generated pods and runtime states, each checked
//! against a small reference model written here from the kubelet rules (#has-the-sandbox-changed,
//! #what-a-sync-does), not from the code
//! under test, and a model runtime that applies the actions so that repeated syncs can be seen to
//! converge. The last tests feed each checker a wrong answer, so a green run means something.

use std::collections::{BTreeMap, BTreeSet};

use cri_harness::cri::v1;
use cri_harness::manager::lifecycle::{
    compute_pod_actions, hash_container, k8s, ContainerKind, PodActions, ProbeResult, ProbeResults,
};
use cri_harness::manager::{ContainerId, ContainerState, ContainerStatus, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, TestCaseError};

const CASES: u32 = 1000;

/// Syncs the convergence property allows: one for a new sandbox, one per init container, one for
/// the regular containers, one to see nothing change, and slack.
const ROUNDS: usize = 10;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: CASES,
        // Shrunk failures are kept under proptest-regressions/ (committed) and replayed first.
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/prop_lifecycle.txt",
        ))),
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------------------------
// Inputs

/// One init container: a sidecar or not, and which probes it has.
#[derive(Debug, Clone)]
struct InitShape {
    sidecar: bool,
    startup_probe: bool,
    liveness_probe: bool,
}

/// The parts of a pod the decision reads.
#[derive(Debug, Clone)]
struct PodShape {
    init: Vec<InitShape>,
    regular: usize,
    policy: &'static str,
    host_network: bool,
    deleted: bool,
}

impl PodShape {
    fn init_name(i: usize) -> String {
        format!("init-{i}")
    }

    fn regular_name(i: usize) -> String {
        format!("app-{i}")
    }

    fn pod(&self) -> k8s::Pod {
        let init = self
            .init
            .iter()
            .enumerate()
            .map(|(i, shape)| k8s::Container {
                name: Self::init_name(i),
                image: Some("busybox".to_owned()),
                restart_policy: shape.sidecar.then(|| "Always".to_owned()),
                startup_probe: shape.startup_probe.then(k8s::Probe::default),
                liveness_probe: shape.liveness_probe.then(k8s::Probe::default),
                ..Default::default()
            })
            .collect::<Vec<_>>();
        let containers = (0..self.regular)
            .map(|i| k8s::Container {
                name: Self::regular_name(i),
                image: Some("busybox".to_owned()),
                ..Default::default()
            })
            .collect();
        k8s::Pod {
            metadata: ObjectMeta {
                name: Some("pod".to_owned()),
                namespace: Some("ns".to_owned()),
                uid: Some("uid".to_owned()),
                deletion_timestamp: self
                    .deleted
                    .then_some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)),
                ..Default::default()
            },
            spec: Some(k8s::PodSpec {
                init_containers: (!init.is_empty()).then_some(init),
                containers,
                restart_policy: Some(self.policy.to_owned()),
                host_network: Some(self.host_network),
                ..Default::default()
            }),
            ..Default::default()
        }
    }
}

/// One sandbox as `PodSandboxStatus` reports it: `network_mode` None is a runtime that echoes no
/// namespace options, `ip` None one that reports no network status.
#[derive(Debug, Clone)]
struct SandboxShape {
    attempt: u32,
    ready: bool,
    network_mode: Option<v1::NamespaceMode>,
    ip: Option<&'static str>,
}

fn sandbox_status(id: String, shape: &SandboxShape) -> v1::PodSandboxStatus {
    v1::PodSandboxStatus {
        id,
        metadata: Some(v1::PodSandboxMetadata {
            name: "pod".to_owned(),
            namespace: "ns".to_owned(),
            uid: "uid".to_owned(),
            attempt: shape.attempt,
        }),
        state: if shape.ready {
            v1::PodSandboxState::SandboxReady
        } else {
            v1::PodSandboxState::SandboxNotready
        }
        .into(),
        linux: shape.network_mode.map(|mode| v1::LinuxPodSandboxStatus {
            namespaces: Some(v1::Namespace {
                options: Some(v1::NamespaceOption {
                    network: mode.into(),
                    ..Default::default()
                }),
            }),
        }),
        network: shape.ip.map(|ip| v1::PodSandboxNetworkStatus {
            ip: ip.to_owned(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// One container's latest instance and the prober's word on it.
#[derive(Debug, Clone)]
struct InstanceShape {
    state: ContainerState,
    exit_code: i32,
    oom_killed: bool,
    hash_matches: bool,
    liveness_failed: bool,
    startup: Option<ProbeResult>,
}

/// One generated case: a pod, its sandboxes newest first, and an instance (or none) per container
/// of the pod, init containers first.
#[derive(Debug, Clone)]
struct Case {
    shape: PodShape,
    sandboxes: Vec<SandboxShape>,
    instances: Vec<Option<InstanceShape>>,
}

impl Case {
    fn pod(&self) -> k8s::Pod {
        self.shape.pod()
    }

    /// The status and probe results the case describes; container ids are `c-<name>`.
    fn status(&self, pod: &k8s::Pod) -> (PodStatus, ProbeResults) {
        let sandbox_statuses = self
            .sandboxes
            .iter()
            .enumerate()
            .map(|(i, s)| sandbox_status(format!("sb-{i}"), s))
            .collect();
        let mut probes = ProbeResults::default();
        let mut container_statuses = Vec::new();
        for (spec, instance) in all_containers(pod).zip(&self.instances) {
            let Some(instance) = instance else { continue };
            let mut status = instance_of(spec, &format!("c-{}", spec.name), instance.state);
            if !instance.hash_matches {
                status.hash ^= 1;
            }
            if instance.state == ContainerState::Exited {
                status.exit_code = instance.exit_code;
                if instance.oom_killed {
                    status.reason = "OOMKilled".to_owned();
                }
            }
            if instance.liveness_failed {
                probes
                    .liveness
                    .insert(status.id.id.clone(), ProbeResult::Failure);
            }
            if let Some(result) = instance.startup {
                probes.startup.insert(status.id.id.clone(), result);
            }
            container_statuses.push(status);
        }
        let status = PodStatus {
            id: "uid".to_owned(),
            name: "pod".to_owned(),
            namespace: "ns".to_owned(),
            ip: String::new(),
            sandbox_statuses,
            container_statuses,
        };
        (status, probes)
    }
}

fn all_containers(pod: &k8s::Pod) -> impl Iterator<Item = &k8s::Container> {
    let spec = pod.spec.as_ref();
    spec.and_then(|s| s.init_containers.as_deref())
        .unwrap_or_default()
        .iter()
        .chain(spec.map_or(&[][..], |s| s.containers.as_slice()))
}

/// A fresh instance of `spec`, its hash matching.
fn instance_of(spec: &k8s::Container, id: &str, state: ContainerState) -> ContainerStatus {
    ContainerStatus {
        id: ContainerId {
            r#type: "model".to_owned(),
            id: id.to_owned(),
        },
        name: spec.name.clone(),
        image: spec.image.clone().unwrap_or_default(),
        hash: hash_container(spec),
        state,
        ..Default::default()
    }
}

fn pod_shape() -> impl Strategy<Value = PodShape> {
    let init = prop::collection::vec(
        (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(|(sidecar, startup, liveness)| {
            InitShape {
                sidecar,
                // Only sidecars are probed: the kubelet runs no probe on a regular init container.
                startup_probe: sidecar && startup,
                liveness_probe: sidecar && liveness,
            }
        }),
        0..=3,
    );
    let policy = prop::sample::select(vec!["Always", "OnFailure", "Never"]);
    (
        init,
        1..=3usize,
        policy,
        any::<bool>(),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(init, regular, policy, host_network, deleted)| PodShape {
            init,
            regular,
            policy,
            host_network,
            deleted,
        })
}

fn sandbox_shape() -> impl Strategy<Value = SandboxShape> {
    let mode = prop::sample::select(vec![
        None,
        Some(v1::NamespaceMode::Pod),
        Some(v1::NamespaceMode::Node),
        Some(v1::NamespaceMode::Container),
    ]);
    let ip = prop::sample::select(vec![None, Some(""), Some("10.0.0.9")]);
    (0..4u32, prop::bool::weighted(0.7), mode, ip).prop_map(|(attempt, ready, network_mode, ip)| {
        SandboxShape {
            attempt,
            ready,
            network_mode,
            ip,
        }
    })
}

fn instance_shape() -> impl Strategy<Value = InstanceShape> {
    let state = prop::sample::select(vec![
        ContainerState::Created,
        ContainerState::Running,
        ContainerState::Running,
        ContainerState::Exited,
        ContainerState::Exited,
        ContainerState::Unknown,
    ]);
    let exit_code = prop::sample::select(vec![0, 1, 137]);
    let startup = prop::sample::select(vec![
        None,
        Some(ProbeResult::Success),
        Some(ProbeResult::Failure),
        Some(ProbeResult::Unknown),
    ]);
    (
        state,
        exit_code,
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.8),
        prop::bool::weighted(0.15),
        startup,
    )
        .prop_map(
            |(state, exit_code, oom_killed, hash_matches, liveness_failed, startup)| {
                InstanceShape {
                    state,
                    exit_code,
                    oom_killed,
                    hash_matches,
                    liveness_failed,
                    startup,
                }
            },
        )
}

/// Cases with a sandbox that is fine to keep are made half the time: a fully random set of
/// sandboxes rarely is, and most properties only speak about those.
fn case() -> impl Strategy<Value = Case> {
    pod_shape().prop_flat_map(|shape| {
        let count = shape.init.len() + shape.regular;
        (
            Just(shape),
            prop::collection::vec(sandbox_shape(), 0..=3),
            any::<bool>(),
            prop::collection::vec(prop::option::weighted(0.75, instance_shape()), count),
        )
            .prop_map(|(shape, mut sandboxes, tidy, instances)| {
                if tidy {
                    tidy_up(&shape, &mut sandboxes);
                }
                Case {
                    shape,
                    sandboxes,
                    instances,
                }
            })
    })
}

/// Makes the newest sandbox the only READY one, in the pod's mode with an IP.
fn tidy_up(shape: &PodShape, sandboxes: &mut [SandboxShape]) {
    for (i, sandbox) in sandboxes.iter_mut().enumerate() {
        sandbox.ready = i == 0;
        if i == 0 {
            sandbox.network_mode = Some(if shape.host_network {
                v1::NamespaceMode::Node
            } else {
                v1::NamespaceMode::Pod
            });
            sandbox.ip = Some("10.0.0.9");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The reference model (kubelet rules: #has-the-sandbox-changed and the parts of #what-a-sync-does
// the properties need)

/// Whether the pod's sandboxes are fine to keep: exactly one READY sandbox and it is the newest,
/// in the pod's network mode (an absent mode is POD), with an IP unless on the host network or
/// reporting no network at all.
fn model_sandbox_fine(pod: &k8s::Pod, status: &PodStatus) -> bool {
    let ready = |s: &v1::PodSandboxStatus| s.state == i32::from(v1::PodSandboxState::SandboxReady);
    let Some(latest) = status.sandbox_statuses.first() else {
        return false;
    };
    let host = pod.spec.as_ref().and_then(|s| s.host_network) == Some(true);
    let wanted = if host {
        v1::NamespaceMode::Node
    } else {
        v1::NamespaceMode::Pod
    };
    let mode = latest
        .linux
        .as_ref()
        .and_then(|l| l.namespaces.as_ref())
        .and_then(|n| n.options.as_ref())
        .map_or(0, |o| o.network);
    let ip_ok = host || latest.network.as_ref().is_none_or(|n| !n.ip.is_empty());
    status.sandbox_statuses.iter().filter(|s| ready(s)).count() == 1
        && ready(latest)
        && mode == i32::from(wanted)
        && ip_ok
}

fn max_attempt(status: &PodStatus) -> Option<u32> {
    status
        .sandbox_statuses
        .iter()
        .map(|s| s.metadata.as_ref().map_or(0, |m| m.attempt))
        .max()
}

fn latest_instance<'a>(status: &'a PodStatus, name: &str) -> Option<&'a ContainerStatus> {
    status.container_statuses.iter().find(|s| s.name == name)
}

fn is_sidecar(container: &k8s::Container) -> bool {
    container.restart_policy.as_deref() == Some("Always")
}

fn policy(pod: &k8s::Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.restart_policy.as_deref())
        .unwrap_or("Always")
}

/// Whether the container's latest instance runs from its spec with no failed probe, its startup
/// probe (if it has one) passed.
fn healthy(container: &k8s::Container, status: &PodStatus, probes: &ProbeResults) -> bool {
    latest_instance(status, &container.name).is_some_and(|s| {
        s.state == ContainerState::Running
            && s.hash == hash_container(container)
            && probes.liveness.get(&s.id.id) != Some(&ProbeResult::Failure)
            && match probes.startup.get(&s.id.id) {
                Some(ProbeResult::Failure) => false,
                Some(ProbeResult::Success) => true,
                None | Some(ProbeResult::Unknown) => container.startup_probe.is_none(),
            }
    })
}

fn init_specs(pod: &k8s::Pod) -> &[k8s::Container] {
    pod.spec
        .as_ref()
        .and_then(|s| s.init_containers.as_deref())
        .unwrap_or_default()
}

fn regular_specs(pod: &k8s::Pod) -> &[k8s::Container] {
    pod.spec.as_ref().map_or(&[], |s| s.containers.as_slice())
}

// ---------------------------------------------------------------------------------------------
// The checkers: each states one property over (pod, status, probes, actions)

type Check = Result<(), TestCaseError>;

/// A new sandbox gets attempt 0 when there is none, else one more than the highest; only a pod
/// whose sandbox is not fine is killed or gets one, and a fine one is kept with its id; under
/// Never, a pod whose containers ran in an earlier sandbox gets no new one.
fn check_sandbox_decision(pod: &k8s::Pod, status: &PodStatus, actions: &PodActions) -> Check {
    let fine = model_sandbox_fine(pod, status);
    let max = max_attempt(status);
    if actions.create_sandbox {
        prop_assert!(!fine, "a fine sandbox was replaced");
        prop_assert_eq!(actions.attempt, max.map_or(0, |m| m + 1));
        prop_assert!(actions.kill_pod, "a new sandbox without killing the pod");
    }
    if fine {
        prop_assert_eq!(actions.attempt, max.unwrap_or(0));
        prop_assert_eq!(&actions.sandbox_id, &status.sandbox_statuses[0].id);
    } else {
        prop_assert!(
            actions.kill_pod,
            "a pod whose sandbox is not fine was not killed"
        );
    }
    if policy(pod) == "Never" && max.is_some() && !status.container_statuses.is_empty() {
        prop_assert!(!actions.create_sandbox, "a Never pod got a second sandbox");
    }
    Ok(())
}

/// In a fine sandbox, a regular container running from its spec with healthy probes is neither
/// killed nor started, nor is the pod killed; a healthy sidecar is neither killed nor started.
fn check_healthy_left_alone(
    pod: &k8s::Pod,
    status: &PodStatus,
    probes: &ProbeResults,
    actions: &PodActions,
) -> Check {
    if !model_sandbox_fine(pod, status) {
        return Ok(());
    }
    for (idx, container) in regular_specs(pod).iter().enumerate() {
        if !healthy(container, status, probes) {
            continue;
        }
        let id = latest_instance(status, &container.name).map(|s| s.id.id.clone());
        prop_assert!(
            !actions.kill_pod,
            "pod killed with {} healthy",
            container.name
        );
        prop_assert!(!actions.containers_to_start.contains(&idx));
        prop_assert!(!id.is_some_and(|id| actions.containers_to_kill.contains_key(&id)));
    }
    for (idx, container) in init_specs(pod).iter().enumerate() {
        if !is_sidecar(container) || !healthy(container, status, probes) {
            continue;
        }
        let id = latest_instance(status, &container.name).map(|s| s.id.id.clone());
        prop_assert!(!actions.init_containers_to_start.contains(&idx));
        prop_assert!(!id.is_some_and(|id| actions.containers_to_kill.contains_key(&id)));
    }
    Ok(())
}

/// Start lists are in spec order without repeats and in range; a started container is not left
/// running beside its new instance (it is killed, or the whole pod is); every kill names an
/// instance of the status, with its name and the list it comes from.
fn check_well_formed(pod: &k8s::Pod, status: &PodStatus, actions: &PodActions) -> Check {
    let lists = [
        (&actions.init_containers_to_start, init_specs(pod)),
        (&actions.containers_to_start, regular_specs(pod)),
    ];
    for (started, specs) in lists {
        prop_assert!(
            started.windows(2).all(|w| w[0] < w[1]),
            "not in spec order or repeated: {:?}",
            started
        );
        for &idx in started {
            prop_assert!(idx < specs.len(), "index {} out of range", idx);
            if let Some(s) = latest_instance(status, &specs[idx].name) {
                prop_assert!(
                    s.state != ContainerState::Running
                        || actions.kill_pod
                        || actions.containers_to_kill.contains_key(&s.id.id),
                    "{} started while it runs",
                    specs[idx].name
                );
            }
        }
    }
    prop_assert!(actions.ephemeral_containers_to_start.is_empty());
    let init_names: BTreeSet<&str> = init_specs(pod).iter().map(|c| c.name.as_str()).collect();
    for (id, kill) in &actions.containers_to_kill {
        let instance = status.container_statuses.iter().find(|s| &s.id.id == id);
        prop_assert!(
            instance.is_some_and(|s| s.name == kill.name),
            "kill of unknown {}",
            id
        );
        let kind = if init_names.contains(kill.name.as_str()) {
            ContainerKind::Init
        } else {
            ContainerKind::Regular
        };
        prop_assert_eq!(kill.kind, kind);
    }
    Ok(())
}

/// Under Never, in a fine sandbox, no container whose latest instance exited is started again
/// (sidecars aside: their own restart policy is Always).
fn check_never_restarts_nothing(pod: &k8s::Pod, status: &PodStatus, actions: &PodActions) -> Check {
    if policy(pod) != "Never" || !model_sandbox_fine(pod, status) {
        return Ok(());
    }
    let exited = |c: &k8s::Container| {
        latest_instance(status, &c.name).is_some_and(|s| s.state == ContainerState::Exited)
    };
    for (idx, c) in regular_specs(pod).iter().enumerate() {
        prop_assert!(!(exited(c) && actions.containers_to_start.contains(&idx)));
    }
    for (idx, c) in init_specs(pod).iter().enumerate() {
        prop_assert!(
            !(exited(c) && !is_sidecar(c) && actions.init_containers_to_start.contains(&idx))
        );
    }
    Ok(())
}

/// A pod being deleted starts no regular container in a fine sandbox, except to replace a running
/// one that is killed with it (a changed spec or a failed probe). The rule applies the deletion only in
/// `ShouldContainerBeRestarted`, which judges containers that do not run: the replacement of a
/// running one, a new sandbox's first containers and the init containers go on as usual, because
/// the kubelet stops calling SyncPod for a terminating pod rather than deciding differently.
fn check_deleted_starts_nothing(pod: &k8s::Pod, status: &PodStatus, actions: &PodActions) -> Check {
    if pod.metadata.deletion_timestamp.is_none() || !model_sandbox_fine(pod, status) {
        return Ok(());
    }
    for &idx in &actions.containers_to_start {
        let Some(spec) = regular_specs(pod).get(idx) else {
            continue;
        };
        let replaced = latest_instance(status, &spec.name).is_some_and(|s| {
            s.state == ContainerState::Running && actions.containers_to_kill.contains_key(&s.id.id)
        });
        prop_assert!(replaced, "{} started in a deleted pod", spec.name);
    }
    Ok(())
}

fn check_all(pod: &k8s::Pod, status: &PodStatus, probes: &ProbeResults) -> Check {
    let actions = compute_pod_actions(pod, status, probes);
    check_sandbox_decision(pod, status, &actions)?;
    check_healthy_left_alone(pod, status, probes, &actions)?;
    check_well_formed(pod, status, &actions)?;
    check_never_restarts_nothing(pod, status, &actions)?;
    check_deleted_starts_nothing(pod, status, &actions)
}

// ---------------------------------------------------------------------------------------------
// The fixed point

/// A pod at rest: its newest sandbox READY in the right mode with an IP, older ones not ready;
/// every sidecar and regular container running from its spec (started, where it has a startup
/// probe); each regular init container exited 0 or already removed; older exited instances behind
/// the latest ones. `older` holds the older sandboxes' attempts, `history` per container (init
/// containers first) whether a regular init container's instance is gone and whether an older
/// failed instance is listed.
fn at_rest(
    shape: &PodShape,
    older: &[u32],
    history: &[(bool, bool)],
) -> (k8s::Pod, PodStatus, ProbeResults) {
    let pod = shape.pod();
    let top = older.iter().max().map_or(0, |a| a + 1);
    let mode = if shape.host_network {
        v1::NamespaceMode::Node
    } else {
        v1::NamespaceMode::Pod
    };
    let newest = SandboxShape {
        attempt: top,
        ready: true,
        network_mode: Some(mode),
        ip: Some("10.0.0.2"),
    };
    let mut sandboxes = vec![sandbox_status("sb-new".to_owned(), &newest)];
    for (i, attempt) in older.iter().enumerate() {
        let old = SandboxShape {
            attempt: *attempt,
            ready: false,
            network_mode: Some(mode),
            ip: Some(""),
        };
        sandboxes.push(sandbox_status(format!("sb-old-{i}"), &old));
    }
    let mut probes = ProbeResults::default();
    let mut latest = Vec::new();
    let mut old = Vec::new();
    for (i, spec) in all_containers(&pod).enumerate() {
        let id = format!("c-{}", spec.name);
        let sidecar_or_regular = is_sidecar(spec) || regular_specs(&pod).contains(spec);
        if sidecar_or_regular {
            latest.push(instance_of(spec, &id, ContainerState::Running));
            if spec.startup_probe.is_some() {
                probes.startup.insert(id.clone(), ProbeResult::Success);
            }
        } else if !history.get(i).is_some_and(|(gone, _)| *gone) {
            latest.push(instance_of(spec, &id, ContainerState::Exited));
        }
        if history.get(i).is_some_and(|(_, failed)| *failed) {
            let mut failed = instance_of(spec, &format!("{id}-old"), ContainerState::Exited);
            failed.exit_code = 1;
            old.push(failed);
        }
    }
    latest.extend(old);
    let status = PodStatus {
        id: "uid".to_owned(),
        name: "pod".to_owned(),
        namespace: "ns".to_owned(),
        ip: "10.0.0.2".to_owned(),
        sandbox_statuses: sandboxes,
        container_statuses: latest,
    };
    (pod, status, probes)
}

/// Nothing to do: the newest sandbox is kept at its attempt and nothing is killed or started.
fn check_no_actions(status: &PodStatus, actions: &PodActions) -> Check {
    prop_assert!(
        !status.sandbox_statuses.is_empty(),
        "at rest without a sandbox"
    );
    let expected = PodActions {
        sandbox_id: status.sandbox_statuses[0].id.clone(),
        attempt: max_attempt(status).unwrap_or(0),
        ..PodActions::default()
    };
    prop_assert_eq!(actions, &expected);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The model runtime

/// Applies one sync's actions as SyncPod would (kubelet rules: #the-order-of-a-sync) to a runtime
/// that obeys at once: the
/// pod kill stops running containers and every sandbox (and a new sandbox purges the init
/// containers), single kills stop their instance, a new sandbox comes up READY in the pod's mode
/// with an IP, and every start adds a running instance of the spec, newest first. Then time
/// passes: a regular init container runs to completion and exits 0.
fn apply(pod: &k8s::Pod, status: &PodStatus, actions: &PodActions, round: usize) -> PodStatus {
    let mut next = status.clone();
    let stop = |s: &mut ContainerStatus| {
        s.state = ContainerState::Exited;
        s.exit_code = 137;
    };
    if actions.kill_pod {
        for s in &mut next.container_statuses {
            if s.state == ContainerState::Running {
                stop(s);
            }
        }
        for s in &mut next.sandbox_statuses {
            s.state = v1::PodSandboxState::SandboxNotready.into();
        }
        if actions.create_sandbox {
            let init: BTreeSet<&str> = init_specs(pod).iter().map(|c| c.name.as_str()).collect();
            next.container_statuses
                .retain(|s| !init.contains(s.name.as_str()));
        }
    } else {
        for s in &mut next.container_statuses {
            if actions.containers_to_kill.contains_key(&s.id.id) {
                stop(s);
            }
        }
    }
    if actions.create_sandbox {
        let host = pod.spec.as_ref().and_then(|s| s.host_network) == Some(true);
        let shape = SandboxShape {
            attempt: actions.attempt,
            ready: true,
            network_mode: Some(if host {
                v1::NamespaceMode::Node
            } else {
                v1::NamespaceMode::Pod
            }),
            ip: Some("10.0.0.3"),
        };
        next.sandbox_statuses
            .insert(0, sandbox_status(format!("sb-r{round}"), &shape));
    }
    let started = actions
        .init_containers_to_start
        .iter()
        .map(|&i| &init_specs(pod)[i])
        .chain(
            actions
                .containers_to_start
                .iter()
                .map(|&i| &regular_specs(pod)[i]),
        );
    let mut fresh: Vec<ContainerStatus> = started
        .map(|spec| {
            instance_of(
                spec,
                &format!("c-r{round}-{}", spec.name),
                ContainerState::Running,
            )
        })
        .collect();
    fresh.reverse();
    fresh.append(&mut next.container_statuses);
    next.container_statuses = fresh;
    for spec in init_specs(pod).iter().filter(|c| !is_sidecar(c)) {
        for s in &mut next.container_statuses {
            if s.name == spec.name && s.state == ContainerState::Running {
                s.state = ContainerState::Exited;
                s.exit_code = 0;
            }
        }
    }
    next
}

/// What the prober says once the case's own answers are spent: every running container with a
/// startup probe has started, no liveness probe fails.
fn probes_at_rest(pod: &k8s::Pod, status: &PodStatus) -> ProbeResults {
    let mut probes = ProbeResults::default();
    for spec in all_containers(pod).filter(|c| c.startup_probe.is_some()) {
        for s in status
            .container_statuses
            .iter()
            .filter(|s| s.name == spec.name)
        {
            if s.state == ContainerState::Running {
                probes.startup.insert(s.id.id.clone(), ProbeResult::Success);
            }
        }
    }
    probes
}

/// Syncs until the model runtime and the prober stop changing, within [`ROUNDS`], never creating
/// more than one sandbox nor starting a container twice; under Always the pod then runs whole
/// (every sidecar and regular container running from its spec) and the last sync had nothing to
/// do. `decide` is `compute_pod_actions`, or a wrong decision in the checker's own tests.
fn check_converges(
    pod: &k8s::Pod,
    status: PodStatus,
    probes: ProbeResults,
    decide: impl Fn(&k8s::Pod, &PodStatus, &ProbeResults) -> PodActions,
) -> Check {
    let mut status = status;
    let mut probes = probes;
    let mut sandboxes_created = 0;
    let mut starts: BTreeMap<(ContainerKind, usize), usize> = BTreeMap::new();
    for round in 0..ROUNDS {
        let actions = decide(pod, &status, &probes);
        let next = apply(pod, &status, &actions, round);
        // The prober's answers are part of the state: a sidecar waiting for its startup probe
        // changes nothing in the runtime until the probe answers.
        let next_probes = probes_at_rest(pod, &next);
        if next == status && next_probes == probes {
            if policy(pod) == "Always" {
                check_no_actions(&status, &actions)?;
                // At rest the probes are those of the status (they did not change either).
                for c in regular_specs(pod)
                    .iter()
                    .chain(init_specs(pod).iter().filter(|c| is_sidecar(c)))
                {
                    prop_assert!(
                        healthy(c, &status, &probes),
                        "{} not running at rest",
                        c.name
                    );
                }
            }
            return Ok(());
        }
        sandboxes_created += usize::from(actions.create_sandbox);
        prop_assert!(
            sandboxes_created <= 1,
            "a second new sandbox in round {}",
            round
        );
        let keys = actions
            .init_containers_to_start
            .iter()
            .map(|&i| (ContainerKind::Init, i))
            .chain(
                actions
                    .containers_to_start
                    .iter()
                    .map(|&i| (ContainerKind::Regular, i)),
            );
        for key in keys {
            let count = starts.entry(key).or_default();
            *count += 1;
            prop_assert!(
                *count <= 1,
                "{:?} started twice, again in round {}",
                key,
                round
            );
        }
        probes = next_probes;
        status = next;
    }
    Err(TestCaseError::fail(format!(
        "no fixed point after {ROUNDS} syncs: {status:?}"
    )))
}

// ---------------------------------------------------------------------------------------------
// The properties

proptest! {
    #![proptest_config(config())]

    #[test]
    fn every_decision_keeps_the_reference_rules(case in case()) {
        let pod = case.pod();
        let (status, probes) = case.status(&pod);
        check_all(&pod, &status, &probes)?;
    }

    #[test]
    fn a_pod_at_rest_gets_no_actions(
        shape in pod_shape(),
        older in prop::collection::vec(0..4u32, 0..=2),
        history in prop::collection::vec((any::<bool>(), any::<bool>()), 6),
    ) {
        let (pod, status, probes) = at_rest(&shape, &older, &history);
        prop_assert!(model_sandbox_fine(&pod, &status));
        check_no_actions(&status, &compute_pod_actions(&pod, &status, &probes))?;
    }

    #[test]
    fn repeated_syncs_converge_without_oscillating(mut case in case()) {
        // A pod being deleted is not synced to rest: the kubelet hands it to SyncTerminatingPod.
        case.shape.deleted = false;
        let pod = case.pod();
        let (status, probes) = case.status(&pod);
        check_converges(&pod, status, probes, compute_pod_actions)?;
    }
}

// ---------------------------------------------------------------------------------------------
// The checkers fail on wrong answers

fn sample_shape() -> PodShape {
    PodShape {
        init: vec![InitShape {
            sidecar: true,
            startup_probe: false,
            liveness_probe: false,
        }],
        regular: 2,
        policy: "Never",
        host_network: false,
        deleted: false,
    }
}

fn sample() -> (k8s::Pod, PodStatus, ProbeResults) {
    at_rest(&sample_shape(), &[0], &[])
}

fn right(pod: &k8s::Pod, status: &PodStatus, probes: &ProbeResults) -> PodActions {
    compute_pod_actions(pod, status, probes)
}

#[test]
fn the_sample_passes_every_checker() {
    let (pod, status, probes) = sample();
    let actions = right(&pod, &status, &probes);
    assert!(check_sandbox_decision(&pod, &status, &actions).is_ok());
    assert!(check_healthy_left_alone(&pod, &status, &probes, &actions).is_ok());
    assert!(check_well_formed(&pod, &status, &actions).is_ok());
    assert!(check_no_actions(&status, &actions).is_ok());
    assert!(check_converges(&pod, status, probes, compute_pod_actions).is_ok());
}

#[test]
fn the_sandbox_checker_rejects_a_needless_sandbox_and_a_wrong_attempt() {
    let (pod, status, probes) = sample();
    let mut actions = right(&pod, &status, &probes);
    actions.create_sandbox = true;
    actions.kill_pod = true;
    actions.attempt = max_attempt(&status).unwrap_or(0) + 1;
    assert!(check_sandbox_decision(&pod, &status, &actions).is_err());

    let empty = PodStatus::default();
    let mut actions = right(&pod, &empty, &probes);
    actions.attempt = 1;
    assert!(check_sandbox_decision(&pod, &empty, &actions).is_err());
}

#[test]
fn the_healthy_checker_rejects_a_restart_of_a_healthy_container() {
    let (pod, status, probes) = sample();
    let mut actions = right(&pod, &status, &probes);
    actions.containers_to_start.push(0);
    assert!(check_healthy_left_alone(&pod, &status, &probes, &actions).is_err());
    let mut actions = right(&pod, &status, &probes);
    actions.init_containers_to_start.push(0);
    assert!(check_healthy_left_alone(&pod, &status, &probes, &actions).is_err());
}

#[test]
fn the_shape_checker_rejects_repeats_range_and_double_instances() {
    let (pod, mut status, probes) = sample();
    for s in &mut status.container_statuses {
        s.state = ContainerState::Exited;
    }
    let mut repeated = right(&pod, &status, &probes);
    repeated.containers_to_start = vec![1, 1];
    assert!(check_well_formed(&pod, &status, &repeated).is_err());
    let mut out_of_range = right(&pod, &status, &probes);
    out_of_range.containers_to_start = vec![7];
    assert!(check_well_formed(&pod, &status, &out_of_range).is_err());

    let (pod, status, probes) = sample();
    let mut beside = right(&pod, &status, &probes);
    beside.containers_to_start = vec![0];
    assert!(check_well_formed(&pod, &status, &beside).is_err());
}

#[test]
fn the_never_checker_rejects_a_restart_of_an_exited_container() {
    let (pod, mut status, probes) = sample();
    status.container_statuses[1].state = ContainerState::Exited;
    let mut actions = right(&pod, &status, &probes);
    assert!(check_never_restarts_nothing(&pod, &status, &actions).is_ok());
    actions.containers_to_start = vec![0];
    assert!(check_never_restarts_nothing(&pod, &status, &actions).is_err());
}

#[test]
fn the_deletion_checker_rejects_a_start_in_a_deleted_pod() {
    let (mut pod, status, probes) = sample();
    pod.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
    let mut actions = right(&pod, &status, &probes);
    assert!(check_deleted_starts_nothing(&pod, &status, &actions).is_ok());
    actions.containers_to_start = vec![1];
    assert!(check_deleted_starts_nothing(&pod, &status, &actions).is_err());
}

#[test]
fn the_fixed_point_checker_rejects_any_action() {
    let (pod, status, probes) = sample();
    let mut actions = right(&pod, &status, &probes);
    actions.containers_to_kill.insert(
        "c-app-0".to_owned(),
        cri_harness::manager::lifecycle::ContainerToKill {
            name: "app-0".to_owned(),
            kind: ContainerKind::Regular,
            reason: cri_harness::manager::lifecycle::KillReason::Unknown,
            message: String::new(),
        },
    );
    assert!(check_no_actions(&status, &actions).is_err());
}

#[test]
fn the_convergence_checker_rejects_a_decision_that_keeps_recreating_the_sandbox() {
    let (pod, status, probes) = sample();
    let restless = |pod: &k8s::Pod, status: &PodStatus, probes: &ProbeResults| PodActions {
        kill_pod: true,
        create_sandbox: true,
        attempt: max_attempt(status).map_or(0, |m| m + 1),
        ..right(pod, status, probes)
    };
    assert!(check_converges(&pod, status, probes, restless).is_err());
}

#[test]
fn the_convergence_checker_rejects_an_always_pod_left_idle() {
    let shape = PodShape {
        policy: "Always",
        ..sample_shape()
    };
    let pod = shape.pod();
    let idle = |_: &k8s::Pod, _: &PodStatus, _: &ProbeResults| PodActions::default();
    let checked = check_converges(&pod, PodStatus::default(), ProbeResults::default(), idle);
    assert!(checked.is_err());
}
