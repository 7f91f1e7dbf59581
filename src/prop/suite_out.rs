//! A failing property case written as a suite file in the runner's format, so that
//! `cri-harness run --mock --suites DIR` replays it: the scenario's accepted steps (with the
//! clock set before each sandbox where the case used it), the faults, and the manager call with
//! the model's expectation. The runner hands `kill_pod` the sandboxes newest-created first, so
//! kill expectations are computed for that order.

use serde_yaml::{Mapping, Value};

use super::check::pod_alias;
use super::error::PropError;
use super::model::{Action, Model, Naming, Outcome, PodKey, RunningView, CLOCK_BASE_SECONDS};
use super::property::{kill_key, Case, Property, VERSION_RUNTIME_NAME};
use super::scenario::{Faults, KillPlan, Scenario, MAX_PODS};
use super::INJECTED_MESSAGE;
use crate::manager::ContainerState;

fn text(s: impl Into<String>) -> Value {
    Value::String(s.into())
}

fn map<const N: usize>(pairs: [(&str, Value); N]) -> Value {
    let mut mapping = Mapping::new();
    for (key, value) in pairs {
        mapping.insert(text(key), value);
    }
    Value::Mapping(mapping)
}

fn list(items: impl IntoIterator<Item = String>) -> Value {
    Value::Sequence(items.into_iter().map(Value::String).collect())
}

fn step(name: &str, body: Value) -> Value {
    map([(name, body)])
}

fn sandbox(n: usize) -> String {
    format!("s{n}")
}

fn container(n: usize) -> String {
    format!("c{n}")
}

fn state(state: ContainerState) -> Value {
    text(match state {
        ContainerState::Created => "created",
        ContainerState::Running => "running",
        ContainerState::Exited => "exited",
        ContainerState::Unknown => "unknown",
    })
}

/// The scenario's accepted steps (refused ones change nothing and would stop the runner).
fn scenario_steps(model: &Model) -> Vec<Value> {
    let mut steps = Vec::new();
    for planned in &model.steps {
        if planned.expect != Outcome::Accepted {
            continue;
        }
        match &planned.action {
            Action::RunSandbox {
                sandbox: Some(n),
                pod,
                attempt,
                host_network,
                created_rank,
            } => {
                if model.clock {
                    steps.push(step(
                        "mock_set_clock",
                        map([(
                            "unix_seconds",
                            Value::from(CLOCK_BASE_SECONDS + created_rank),
                        )]),
                    ));
                }
                steps.push(step(
                    "run_sandbox",
                    map([
                        ("as", text(sandbox(*n))),
                        ("pod", text(Naming::pod_name(*pod))),
                        ("attempt", Value::from(*attempt)),
                        ("host_network", Value::from(*host_network)),
                    ]),
                ));
            }
            Action::RunSandbox { sandbox: None, .. } => {}
            Action::StopSandbox { sandbox: n } => {
                steps.push(step("stop_sandbox", text(sandbox(*n))));
            }
            Action::RemoveSandbox { sandbox: n } => {
                steps.push(step("remove_sandbox", text(sandbox(*n))));
            }
            Action::CreateContainer {
                container: Some(n),
                sandbox: s,
                name,
                labels,
                start,
            } => {
                let own = model.sandboxes[*s].pod;
                let mut body = Mapping::new();
                body.insert(text("as"), text(container(*n)));
                body.insert(text("sandbox"), text(sandbox(*s)));
                body.insert(text("name"), text(*name));
                match labels {
                    Some(pod) if *pod == own => {}
                    Some(pod) => {
                        body.insert(text("pod_labels"), text(Naming::pod_name(*pod)));
                    }
                    None => {
                        body.insert(text("pod_labels"), text("none"));
                    }
                }
                steps.push(step("create_container", Value::Mapping(body)));
                if *start {
                    steps.push(step("start_container", text(container(*n))));
                }
            }
            Action::CreateContainer {
                container: None, ..
            } => {}
            Action::StopContainer { container: n } => {
                steps.push(step(
                    "stop_container",
                    map([
                        ("container", text(container(*n))),
                        ("timeout", Value::from(2)),
                    ]),
                ));
            }
            Action::RemoveContainer { container: n } => {
                steps.push(step("remove_container", text(container(*n))));
            }
        }
    }
    steps
}

fn get_pods_step(model: &Model, all: bool) -> Value {
    let pods = model.pods(all);
    let mut expected = Mapping::new();
    for (key, pod) in &pods {
        let mut states = Mapping::new();
        for (n, s) in &pod.sandboxes {
            states.insert(text(sandbox(*n)), state(*s));
        }
        for (n, s) in &pod.containers {
            states.insert(text(container(*n)), state(*s));
        }
        expected.insert(
            text(pod_alias(*key)),
            map([
                ("sandboxes", list(pod.sandboxes.keys().map(|n| sandbox(*n)))),
                (
                    "containers",
                    list(pod.containers.keys().map(|n| container(*n))),
                ),
                ("states", Value::Mapping(states)),
            ]),
        );
    }
    let mut only: Vec<String> = pods.keys().map(|k| pod_alias(*k)).collect();
    only.sort();
    step(
        "get_pods",
        map([
            ("all", Value::from(all)),
            (
                "expect",
                map([("only", list(only)), ("pods", Value::Mapping(expected))]),
            ),
        ]),
    )
}

fn pod_status_steps(model: &Model) -> Vec<Value> {
    let mut used: std::collections::BTreeSet<u8> = model
        .sandboxes
        .iter()
        .map(|s| s.pod)
        .chain(model.containers.iter().filter_map(|c| c.labels))
        .collect();
    if used.is_empty() {
        // A case must call the manager: an empty runtime's pod has no sandboxes and no IP.
        used.insert(0);
    }
    (0..MAX_PODS)
        .filter(|pod| used.contains(pod))
        .map(|pod| {
            let expected = model.pod_status(pod);
            let ip = match expected.ip_of {
                Some(n) => map([("of", text(sandbox(n)))]),
                None => text("none"),
            };
            step(
                "get_pod_status",
                map([
                    ("pod", text(Naming::pod_name(pod))),
                    (
                        "expect",
                        map([
                            ("ip", ip),
                            (
                                "sandboxes",
                                list(expected.sandboxes.iter().map(|n| sandbox(*n))),
                            ),
                            (
                                "containers",
                                list(expected.containers.iter().map(|n| container(*n))),
                            ),
                        ]),
                    ),
                ]),
            )
        })
        .collect()
}

fn fault_steps(faults: &Faults) -> Vec<Value> {
    [
        ("StopContainer", faults.stop_container),
        ("StopPodSandbox", faults.stop_pod_sandbox),
        ("PodSandboxStatus", faults.pod_sandbox_status),
        ("ContainerStatus", faults.container_status),
    ]
    .into_iter()
    .filter(|(_, count)| *count > 0)
    .map(|(method, count)| {
        step(
            "mock_inject_error",
            map([
                ("method", text(method)),
                ("code", text("Internal")),
                ("message", text(INJECTED_MESSAGE)),
                ("count", Value::from(count)),
            ]),
        )
    })
    .collect()
}

/// The running pod the runner hands `kill_pod`: sandboxes newest-created first, containers in
/// creation order.
fn runner_view(model: &Model, key: PodKey) -> RunningView {
    let mut view = model.listed_view(key);
    view.sandboxes.reverse();
    view
}

fn kill_step(model: &Model, plan: &KillPlan) -> Value {
    let key = kill_key(plan.target);
    let view = runner_view(model, key);
    let expected = model.kill(&view, plan);
    let target = pod_alias(key);
    let mut results = Vec::new();
    for _ in 0..expected.container_results {
        let mut result = Mapping::new();
        result.insert(text("action"), text("kill_container"));
        if expected.container_failures == 0 {
            result.insert(text("error"), text("none"));
        }
        results.push(Value::Mapping(result));
    }
    if expected.teardown.is_some() {
        let error = if expected.teardown_fails {
            "TeardownNetworkError"
        } else {
            "none"
        };
        results.push(map([
            ("action", text("teardown_network")),
            ("target", text(target.clone())),
            ("error", text(error)),
        ]));
    }
    if let Some(fails) = expected.sandbox_step {
        let error = if fails { "KillPodSandboxError" } else { "none" };
        results.push(map([
            ("action", text("kill_pod_sandbox")),
            ("target", text(target.clone())),
            ("error", text(error)),
        ]));
    }
    let mut expect = Mapping::new();
    expect.insert(
        text("teardown"),
        list(expected.teardown.iter().map(|n| sandbox(*n))),
    );
    expect.insert(text("failed"), Value::from(expected.fails()));
    expect.insert(text("results"), Value::Sequence(results));
    if !plan.faults.injects_errors() {
        expect.insert(text("stopped"), text("all"));
    }
    let mut body = Mapping::new();
    body.insert(text("pod"), text(target));
    body.insert(text("with_spec"), Value::from(plan.spec.is_some()));
    if let Some(host_network) = plan.spec {
        body.insert(text("host_network"), Value::from(host_network));
    }
    if plan.faults.teardown_fails {
        body.insert(text("teardown_fails"), text(INJECTED_MESSAGE));
    }
    body.insert(text("expect"), Value::Mapping(expect));
    step("kill_pod", Value::Mapping(body))
}

fn version_steps(version: &str) -> Vec<Value> {
    let expect = if version == crate::manager::KUBE_RUNTIME_API_VERSION {
        map([("runtime_type", text(VERSION_RUNTIME_NAME))])
    } else {
        map([("error", map([("kind", text("version_not_supported"))]))])
    };
    vec![
        step(
            "mock_set_version",
            map([
                ("version", text(version)),
                ("runtime_name", text(VERSION_RUNTIME_NAME)),
            ]),
        ),
        step("new_manager", map([("expect", expect)])),
    ]
}

/// One suite case reproducing `case` of `property`; `mock_control` tells whether the scenario
/// was generated for the mock (clock offsets, injected faults).
pub fn suite_case(property: Property, case: &Case, mock_control: bool, about: &str) -> Value {
    let (steps, needs_mock) = match case {
        Case::Scenario(scenario) => {
            let model = Model::build(scenario, mock_control);
            let mut steps = scenario_steps(&model);
            match property {
                Property::PodStatus => steps.extend(pod_status_steps(&model)),
                _ => {
                    steps.push(get_pods_step(&model, true));
                    steps.push(get_pods_step(&model, false));
                }
            }
            (steps, model.clock)
        }
        Case::Kill(scenario, plan) => {
            let model = Model::build(scenario, mock_control);
            let mut steps = scenario_steps(&model);
            steps.extend(fault_steps(&plan.faults));
            steps.push(kill_step(&model, plan));
            (steps, model.clock || plan.faults.injects_errors())
        }
        Case::Version(version) => (version_steps(version), true),
    };
    let mut body = Mapping::new();
    body.insert(text("name"), text(property.name().replace('_', "-")));
    body.insert(text("about"), text(about));
    if needs_mock {
        body.insert(text("needs"), list(["mock_control".to_owned()]));
    }
    body.insert(text("steps"), Value::Sequence(steps));
    Value::Mapping(body)
}

/// A whole suite file of failing cases.
pub fn suite_file(name: &str, about: &str, cases: Vec<Value>) -> Result<String, PropError> {
    let suite = map([
        ("suite", text(name)),
        ("about", text(about)),
        ("tags", list(["prop".to_owned()])),
        ("cases", Value::Sequence(cases)),
    ]);
    serde_yaml::to_string(&suite).map_err(|source| PropError::Render {
        suite: name.to_owned(),
        source,
    })
}

/// The scenario of a case, if it has one.
pub fn scenario_of(case: &Case) -> Option<&Scenario> {
    match case {
        Case::Scenario(s) | Case::Kill(s, _) => Some(s),
        Case::Version(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prop::scenario::{KillTarget, Op};

    fn run(pod: u8, attempt: u32, host_network: bool, created_at: u8) -> Op {
        Op::RunSandbox {
            pod,
            attempt,
            host_network,
            created_at,
        }
    }

    #[test]
    fn a_pod_status_case_sets_the_clock_and_expects_the_newest_sandboxes_ip() {
        let case = Case::Scenario(Scenario {
            ops: vec![run(0, 0, false, 3), run(0, 1, false, 1)],
        });
        let yaml =
            serde_yaml::to_string(&suite_case(Property::PodStatus, &case, true, "why")).unwrap();
        assert!(yaml.contains("needs:\n- mock_control"), "{yaml}");
        assert!(yaml.contains("unix_seconds: 1700003000"), "{yaml}");
        assert!(yaml.contains("ip:\n        of: s0"), "{yaml}");
        assert!(
            yaml.contains("sandboxes:\n      - s0\n      - s1"),
            "{yaml}"
        );
    }

    #[test]
    fn a_kill_case_expects_the_teardown_of_the_newest_created_sandbox() {
        let case = Case::Kill(
            Scenario {
                ops: vec![run(1, 0, false, 0), run(1, 1, false, 0)],
            },
            KillPlan {
                target: KillTarget::Pod(1),
                spec: Some(false),
                faults: Faults {
                    stop_pod_sandbox: 1,
                    ..Default::default()
                },
            },
        );
        let yaml =
            serde_yaml::to_string(&suite_case(Property::KillPod, &case, true, "why")).unwrap();
        assert!(yaml.contains("teardown:\n      - s1"), "{yaml}");
        assert!(yaml.contains("method: StopPodSandbox"), "{yaml}");
        assert!(yaml.contains("error: KillPodSandboxError"), "{yaml}");
        assert!(!yaml.contains("stopped"), "{yaml}");
    }
}
