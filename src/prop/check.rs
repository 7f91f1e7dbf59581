//! The property checkers: plain functions comparing what the manager answered (and the state it
//! left) with the reference model. Tests, the `prop` subcommand and the differential share
//! them; each returns the first [`PropError::Violation`] it finds.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::apply::{Applied, RuntimeState, INJECTED_MESSAGE};
use super::error::{violation, PropError};
use super::model::{sandbox_state, ExpectedKill, Model, Naming, PodKey, RunningView};
use crate::manager::{
    ContainerState, ManagerError, Pod, PodStatus, PodSyncResult, SyncAction, TeardownCall,
    KILL_CONTAINER_ERROR, KILL_POD_SANDBOX_ERROR, KUBE_RUNTIME_API_VERSION, TEARDOWN_NETWORK_ERROR,
};

/// Name of the get_pods property.
pub const GET_PODS: &str = "get_pods_puts_every_object_in_exactly_one_pod";
/// Name of the pod status property.
pub const POD_STATUS: &str = "pod_status_ip_comes_from_the_newest_ready_pod_network_sandbox";
/// Name of the kill property.
pub const KILL_POD: &str = "kill_pod_tears_down_once_unless_host_network_and_stops_everything";
/// Name of the version property.
pub const VERSION_GATING: &str = "version_gating_accepts_exactly_0_1_0";

/// Which objects of an answer a check must account for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Everything on the runtime is the scenario's (a fresh or reset mock): nothing else may
    /// appear.
    Whole,
    /// The runtime is shared: objects and pods that are not the scenario's are ignored.
    Own,
}

/// A pod's alias as reports and suite files write it.
pub fn pod_alias(key: PodKey) -> String {
    match key {
        PodKey::Pod(pod) => Naming::pod_name(pod),
        PodKey::Unlabelled => String::new(),
    }
}

fn show_pod(key: PodKey) -> String {
    match key {
        PodKey::Pod(pod) => Naming::pod_name(pod),
        PodKey::Unlabelled => "\"\"".to_owned(),
    }
}

fn show_states(items: &BTreeMap<usize, ContainerState>, alias: fn(usize) -> String) -> String {
    let mut text = String::from("[");
    for (i, (n, state)) in items.iter().enumerate() {
        if i > 0 {
            text.push_str(", ");
        }
        let _ = write!(text, "{}:{}", alias(*n), state.name());
    }
    text.push(']');
    text
}

fn show_list<T, S: std::fmt::Display>(
    items: impl IntoIterator<Item = T>,
    alias: impl Fn(T) -> S,
) -> String {
    let names: Vec<String> = items.into_iter().map(|i| alias(i).to_string()).collect();
    format!("[{}]", names.join(", "))
}

/// One pod of an answer, by number.
#[derive(Debug, Default)]
struct SeenPod {
    name: String,
    namespace: String,
    sandboxes: BTreeMap<usize, ContainerState>,
    containers: BTreeMap<usize, ContainerState>,
}

/// `get_pods(all)`: every live sandbox in exactly one pod (its metadata UID's), every live
/// container in exactly one pod (its pod-UID label's, "" without labels), each with its state;
/// with `all` false exactly the READY sandboxes and RUNNING containers; no other pod or object.
pub fn check_get_pods(
    model: &Model,
    applied: &Applied,
    naming: &Naming,
    all: bool,
    pods: &[Pod],
    scope: Scope,
) -> Result<(), PropError> {
    let call = format!("get_pods(all={all})");
    let mut seen: BTreeMap<PodKey, SeenPod> = BTreeMap::new();
    let mut placed: BTreeMap<String, PodKey> = BTreeMap::new();
    for pod in pods {
        let Some(key) = naming.key_of(&pod.id) else {
            if scope == Scope::Whole {
                return Err(violation(
                    GET_PODS,
                    format!("{call}: pods"),
                    "only the scenario's",
                    format!("a pod with UID {:?}", pod.id),
                ));
            }
            continue;
        };
        if seen.contains_key(&key) {
            return Err(violation(
                GET_PODS,
                format!("{call}: pod {}", show_pod(key)),
                "listed once",
                "listed twice",
            ));
        }
        let mut entry = SeenPod {
            name: pod.name.clone(),
            namespace: pod.namespace.clone(),
            ..Default::default()
        };
        for (kind, items) in [("sandbox", &pod.sandboxes), ("container", &pod.containers)] {
            for item in items {
                let number = if kind == "sandbox" {
                    applied.sandbox_number(&item.id.id)
                } else {
                    applied.container_number(&item.id.id)
                };
                let Some(number) = number else {
                    if scope == Scope::Whole {
                        return Err(violation(
                            GET_PODS,
                            format!("{call}: pod {}", show_pod(key)),
                            format!("only the scenario's {kind}s"),
                            format!("unknown {kind} {}", item.id.id),
                        ));
                    }
                    continue;
                };
                let alias = if kind == "sandbox" {
                    Naming::sandbox_alias(number)
                } else {
                    Naming::container_alias(number)
                };
                if let Some(other) = placed.insert(alias.clone(), key) {
                    return Err(violation(
                        GET_PODS,
                        format!("{call}: {alias}"),
                        "in exactly one pod",
                        format!("in {} and {}", show_pod(other), show_pod(key)),
                    ));
                }
                let list = if kind == "sandbox" {
                    &mut entry.sandboxes
                } else {
                    &mut entry.containers
                };
                list.insert(number, item.state);
            }
        }
        if scope == Scope::Own && entry.sandboxes.is_empty() && entry.containers.is_empty() {
            // On a shared runtime the "" pod may hold only other runs' containers.
            if key == PodKey::Unlabelled {
                continue;
            }
        }
        seen.insert(key, entry);
    }
    let expected = model.pods(all);
    let keys = |keys: Vec<PodKey>| show_list(keys, show_pod);
    if expected.keys().ne(seen.keys()) {
        return Err(violation(
            GET_PODS,
            format!("{call}: pods"),
            keys(expected.keys().copied().collect()),
            keys(seen.keys().copied().collect()),
        ));
    }
    for (key, want) in &expected {
        let Some(got) = seen.get(key) else { continue };
        let (_, name, namespace) = naming.identity(*key);
        if (got.name.as_str(), got.namespace.as_str()) != (name.as_str(), namespace.as_str()) {
            return Err(violation(
                GET_PODS,
                format!("{call}: pod {} name/namespace", show_pod(*key)),
                format!("{name}/{namespace}"),
                format!("{}/{}", got.name, got.namespace),
            ));
        }
        if want.sandboxes != got.sandboxes {
            return Err(violation(
                GET_PODS,
                format!("{call}: pod {} sandboxes", show_pod(*key)),
                show_states(&want.sandboxes, Naming::sandbox_alias),
                show_states(&got.sandboxes, Naming::sandbox_alias),
            ));
        }
        if want.containers != got.containers {
            return Err(violation(
                GET_PODS,
                format!("{call}: pod {} containers", show_pod(*key)),
                show_states(&want.containers, Naming::container_alias),
                show_states(&got.containers, Naming::container_alias),
            ));
        }
    }
    Ok(())
}

/// `get_pod_status(pN)`: the pod's sandboxes newest first by creation; the IP is the newest
/// sandbox's (as it reported when run) iff that one is READY and not host-network, else "";
/// the container statuses are those of the containers in the pod's sandboxes.
pub fn check_pod_status(
    model: &Model,
    applied: &Applied,
    naming: &Naming,
    pod: u8,
    status: &PodStatus,
) -> Result<(), PropError> {
    let call = format!("get_pod_status(p{pod})");
    let expected = model.pod_status(pod);
    let (uid, name, namespace) = naming.identity(PodKey::Pod(pod));
    if (
        status.id.as_str(),
        status.name.as_str(),
        status.namespace.as_str(),
    ) != (uid.as_str(), name.as_str(), namespace.as_str())
    {
        return Err(violation(
            POD_STATUS,
            format!("{call}: identity"),
            format!("{uid} {name}/{namespace}"),
            format!("{} {}/{}", status.id, status.name, status.namespace),
        ));
    }
    let mut sandboxes = Vec::new();
    for sandbox in &status.sandbox_statuses {
        match applied.sandbox_number(&sandbox.id) {
            Some(number) => sandboxes.push(number),
            None => {
                return Err(violation(
                    POD_STATUS,
                    format!("{call}: sandboxes"),
                    "only the pod's",
                    format!("unknown sandbox {}", sandbox.id),
                ))
            }
        }
    }
    if sandboxes != expected.sandboxes {
        return Err(violation(
            POD_STATUS,
            format!("{call}: sandboxes newest first"),
            show_list(expected.sandboxes.iter().copied(), Naming::sandbox_alias),
            show_list(sandboxes, Naming::sandbox_alias),
        ));
    }
    let want_ip = expected.ip_of.map_or("", |n| applied.ip(n));
    if status.ip != want_ip {
        let redactor = applied.redactor(naming);
        let whose = |ip: &str| -> String {
            if ip.is_empty() {
                "no IP".to_owned()
            } else {
                redactor.ip_token(ip)
            }
        };
        return Err(violation(
            POD_STATUS,
            format!("{call}: ip"),
            whose(want_ip),
            whose(&status.ip),
        ));
    }
    let mut containers = BTreeSet::new();
    for container in &status.container_statuses {
        match applied.container_number(&container.id.id) {
            Some(number) => {
                containers.insert(number);
            }
            None => {
                return Err(violation(
                    POD_STATUS,
                    format!("{call}: containers"),
                    "only the pod's sandboxes' containers",
                    format!("unknown container {}", container.id.id),
                ))
            }
        }
    }
    if containers != expected.containers {
        return Err(violation(
            POD_STATUS,
            format!("{call}: containers"),
            show_list(expected.containers.iter().copied(), Naming::container_alias),
            show_list(containers, Naming::container_alias),
        ));
    }
    Ok(())
}

/// The running pod handed to `kill_pod`, by number; an id the scenario did not make is a
/// violation on the mock and ignored on a shared runtime.
pub fn running_view(applied: &Applied, pod: &Pod, scope: Scope) -> Result<RunningView, PropError> {
    let mut view = RunningView::default();
    for sandbox in &pod.sandboxes {
        match applied.sandbox_number(&sandbox.id.id) {
            Some(n) => view.sandboxes.push(n),
            None if scope == Scope::Own => {}
            None => {
                return Err(violation(
                    KILL_POD,
                    "running pod sandboxes",
                    "only the scenario's",
                    format!("unknown sandbox {}", sandbox.id.id),
                ))
            }
        }
    }
    for container in &pod.containers {
        match applied.container_number(&container.id.id) {
            Some(n) => view.containers.push(n),
            None if scope == Scope::Own => {}
            None => {
                return Err(violation(
                    KILL_POD,
                    "running pod containers",
                    "only the scenario's",
                    format!("unknown container {}", container.id.id),
                ))
            }
        }
    }
    Ok(view)
}

/// What a kill did, as observed.
#[derive(Debug, Clone, Copy)]
pub struct KillObservation<'a> {
    /// The manager's result.
    pub result: &'a PodSyncResult,
    /// The network plugin's teardown calls during the kill.
    pub teardown: &'a [TeardownCall],
    /// The runtime's state afterwards.
    pub after: &'a RuntimeState,
}

/// `kill_pod`: one KillContainer result per container (exactly the injected failures failing,
/// each naming the injected error), one teardown, of the first sandbox handed over, iff the pod
/// has a sandbox and is not host-network (spec, or that sandbox's status), one KillPodSandbox
/// result failing iff a StopPodSandbox failed, the result's error iff any step failed, and
/// afterwards no sandbox READY and no container RUNNING except those a failure explains.
pub fn check_kill(
    model: &Model,
    applied: &Applied,
    naming: &Naming,
    target: PodKey,
    view: &RunningView,
    expected: &ExpectedKill,
    seen: KillObservation<'_>,
) -> Result<(), PropError> {
    let result = seen.result;
    let (uid, name, namespace) = naming.identity(target);
    let mut want_actions = vec![SyncAction::KillContainer; expected.container_results];
    if expected.teardown.is_some() {
        want_actions.push(SyncAction::TeardownNetwork);
    }
    if expected.sandbox_step.is_some() {
        want_actions.push(SyncAction::KillPodSandbox);
    }
    let actions: Vec<SyncAction> = result.results.iter().map(|r| r.action).collect();
    if actions != want_actions {
        return Err(violation(
            KILL_POD,
            "result steps",
            show_list(want_actions, SyncAction::name),
            show_list(actions, SyncAction::name),
        ));
    }
    let mut want_names: Vec<&str> = view
        .containers
        .iter()
        .map(|&n| model.containers[n].name)
        .collect();
    want_names.sort_unstable();
    let kills: Vec<_> = result
        .results
        .iter()
        .filter(|r| r.action == SyncAction::KillContainer)
        .collect();
    let mut names: Vec<&str> = kills.iter().map(|r| r.target.as_str()).collect();
    names.sort_unstable();
    if names != want_names {
        return Err(violation(
            KILL_POD,
            "KillContainer targets",
            format!("{want_names:?}"),
            format!("{names:?}"),
        ));
    }
    let failed: Vec<_> = kills.iter().filter(|r| r.error.is_some()).collect();
    if failed.len() != expected.container_failures {
        return Err(violation(
            KILL_POD,
            "failed KillContainer results",
            expected.container_failures,
            failed.len(),
        ));
    }
    if let Some(bad) = failed.iter().find(|r| {
        r.error.as_deref() != Some(KILL_CONTAINER_ERROR) || !r.message.contains(INJECTED_MESSAGE)
    }) {
        return Err(violation(
            KILL_POD,
            "a failed KillContainer result",
            format!("{KILL_CONTAINER_ERROR} naming the injected error"),
            format!("{:?}: {:?}", bad.error, bad.message),
        ));
    }
    let want_teardown: Vec<String> = expected
        .teardown
        .iter()
        .map(|&n| applied.sandbox_id(n).to_owned())
        .collect();
    let teardown: Vec<String> = seen.teardown.iter().map(|t| t.sandbox_id.clone()).collect();
    if teardown != want_teardown {
        let redactor = applied.redactor(naming);
        let alias = |id: &String| redactor.text(id);
        return Err(violation(
            KILL_POD,
            "network teardowns",
            show_list(&want_teardown, alias),
            show_list(&teardown, alias),
        ));
    }
    if let Some(call) = seen
        .teardown
        .iter()
        .find(|t| (t.namespace.as_str(), t.name.as_str()) != (namespace.as_str(), name.as_str()))
    {
        return Err(violation(
            KILL_POD,
            "teardown pod",
            format!("{name}/{namespace}"),
            format!("{}/{}", call.name, call.namespace),
        ));
    }
    for step in &result.results {
        let (want_error, kind) = match step.action {
            SyncAction::KillContainer => continue,
            SyncAction::TeardownNetwork => (expected.teardown_fails, TEARDOWN_NETWORK_ERROR),
            SyncAction::KillPodSandbox => {
                (expected.sandbox_step == Some(true), KILL_POD_SANDBOX_ERROR)
            }
            // SyncPod's own steps never come out of a kill.
            other @ (SyncAction::StartContainer
            | SyncAction::InitContainer
            | SyncAction::CreatePodSandbox
            | SyncAction::ConfigPodSandbox
            | SyncAction::ResizePodInPlace
            | SyncAction::RemoveContainer) => {
                return Err(violation(KILL_POD, "step", "a kill step", other.name()));
            }
        };
        let what = step.action.name();
        if step.target != uid {
            return Err(violation(
                KILL_POD,
                format!("{what} target"),
                format!("{uid:?}"),
                format!("{:?}", step.target),
            ));
        }
        let want = want_error.then_some(kind);
        if step.error.as_deref() != want {
            return Err(violation(
                KILL_POD,
                format!("{what} error"),
                format!("{want:?}"),
                format!("{:?} {:?}", step.error, step.message),
            ));
        }
    }
    if result.sync_error.is_some() != expected.sync_error {
        return Err(violation(
            KILL_POD,
            "sync error",
            if expected.sync_error { "set" } else { "none" },
            format!("{:?}", result.sync_error),
        ));
    }
    if result.error().is_some() != expected.fails() {
        return Err(violation(
            KILL_POD,
            "overall error",
            if expected.fails() { "an error" } else { "none" },
            format!("{:?}", result.error()),
        ));
    }
    check_after_kill(model, view, expected, seen.after)
}

/// The state after a kill: what the model says, except that containers a failed kill may have
/// left running are allowed to run, no more of them than kills failed.
fn check_after_kill(
    model: &Model,
    view: &RunningView,
    expected: &ExpectedKill,
    seen: &RuntimeState,
) -> Result<(), PropError> {
    let (after, may_escape) = model.after_kill(view, expected);
    let want_sandboxes: BTreeMap<usize, bool> =
        after.live_sandboxes().map(|(n, s)| (n, s.ready)).collect();
    if want_sandboxes != seen.sandboxes {
        let show = |m: &BTreeMap<usize, bool>| {
            let states = m
                .iter()
                .map(|(n, ready)| (*n, sandbox_state(*ready)))
                .collect();
            show_states(&states, Naming::sandbox_alias)
        };
        return Err(violation(
            KILL_POD,
            "sandboxes afterwards",
            show(&want_sandboxes),
            show(&seen.sandboxes),
        ));
    }
    let want: BTreeMap<usize, ContainerState> =
        after.live_containers().map(|(n, c)| (n, c.state)).collect();
    let mut escaped = 0;
    let mut matches = want.len() == seen.containers.len();
    for (n, state) in &seen.containers {
        match want.get(n) {
            Some(w) if w == state => {}
            Some(_) if *state == ContainerState::Running && may_escape.contains(n) => escaped += 1,
            _ => matches = false,
        }
    }
    if !matches || escaped > expected.container_failures {
        return Err(violation(
            KILL_POD,
            "containers afterwards",
            show_states(&want, Naming::container_alias),
            show_states(&seen.containers, Naming::container_alias),
        ));
    }
    Ok(())
}

/// Version gating: construction succeeds iff the runtime answered exactly "0.1.0" (then the
/// runtime type is its runtime_name), else fails with VersionNotSupported naming that answer.
pub fn check_version_gating(
    version: &str,
    runtime_name: &str,
    outcome: Result<&str, &ManagerError>,
) -> Result<(), PropError> {
    let accepted = version == KUBE_RUNTIME_API_VERSION;
    match (accepted, outcome) {
        (true, Ok(runtime_type)) if runtime_type == runtime_name => Ok(()),
        (true, Ok(runtime_type)) => Err(violation(
            VERSION_GATING,
            "runtime type",
            runtime_name,
            runtime_type,
        )),
        (false, Err(ManagerError::VersionNotSupported { version: named })) if named == version => {
            Ok(())
        }
        (true, Err(err)) => Err(violation(
            VERSION_GATING,
            format!("construction with version {version:?}"),
            "success",
            err,
        )),
        (false, Ok(_)) => Err(violation(
            VERSION_GATING,
            format!("construction with version {version:?}"),
            "VersionNotSupported",
            "success",
        )),
        (false, Err(err)) => Err(violation(
            VERSION_GATING,
            format!("construction with version {version:?}"),
            format!("VersionNotSupported naming {version:?}"),
            err,
        )),
    }
}
