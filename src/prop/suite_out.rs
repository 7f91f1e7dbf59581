//! A failing property case written as a suite file in the runner's format, so that
//! `cri-harness run --mock --suites DIR` replays it: the scenario's accepted steps (with the
//! clock set before each sandbox where the case used it), the faults, and the manager call with
//! the model's expectation. The case is built from the registry's typed steps and printed by
//! their `Serialize`, so it always reads back as the loader expects. The runner hands
//! `kill_pod` the sandboxes newest-created first, so kill expectations are computed for that
//! order.

use std::collections::BTreeSet;

use serde::Serialize;

use super::apply::STOP_TIMEOUT_SECONDS;
use super::check::pod_alias;
use super::error::PropError;
use super::model::{Action, Model, Naming, Outcome, PodKey, RunningView, CLOCK_BASE_SECONDS};
use super::property::{kill_key, version_answer, Case, Property, VERSION_RUNTIME_NAME};
use super::scenario::{Faults, KillPlan, Scenario, MAX_PODS};
use super::INJECTED_MESSAGE;
use crate::manager::{
    SyncAction, KILL_POD_SANDBOX_ERROR, KUBE_RUNTIME_API_VERSION, TEARDOWN_NETWORK_ERROR,
};
use crate::suite::step::{
    self, CreateContainer, ErrorExpect, ErrorKind, GetPodStatus, GetPods, GetPodsExpect, GrpcCode,
    IpExpect, KillExpect, KillPod, MockInjectError, MockSetClock, MockSetVersion, NewManager,
    NewManagerExpect, PodExpect, PodStatusExpect, RemoveContainer, RemoveSandbox, RunSandbox,
    StartContainer, State, Step, StopContainer, StopSandbox, Stopped, SyncResultExpect,
};
use crate::suite::Need;

/// One case of a printed suite file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SuiteCase {
    /// The case's name (the property's, in kebab case).
    pub name: String,
    /// Why it was printed.
    pub about: String,
    /// `mock_control` when it sets the clock, injects faults or sets the version.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub needs: Vec<String>,
    /// Its steps.
    pub steps: Vec<Step>,
}

/// A suite file, as the loader reads it.
#[derive(Debug, Serialize)]
struct SuiteFile<'a> {
    suite: &'a str,
    about: &'a str,
    tags: [&'a str; 1],
    cases: &'a [SuiteCase],
}

/// The scenario's accepted steps (refused ones change nothing and would stop the runner).
fn scenario_steps(model: &Model) -> Vec<Step> {
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
                    steps.push(Step::MockSetClock(MockSetClock {
                        unix_seconds: CLOCK_BASE_SECONDS + created_rank,
                    }));
                }
                steps.push(Step::RunSandbox(RunSandbox {
                    attempt: *attempt,
                    host_network: *host_network,
                    ..RunSandbox::new(Naming::sandbox_alias(*n), Naming::pod_name(*pod))
                }));
            }
            Action::RunSandbox { sandbox: None, .. } => {}
            Action::StopSandbox { sandbox: n } => {
                steps.push(Step::StopSandbox(StopSandbox(Naming::sandbox_alias(*n))));
            }
            Action::RemoveSandbox { sandbox: n } => {
                steps.push(Step::RemoveSandbox(RemoveSandbox(Naming::sandbox_alias(
                    *n,
                ))));
            }
            Action::CreateContainer {
                container: Some(n),
                sandbox: s,
                name,
                labels,
                start,
            } => {
                let own = model.sandboxes[*s].pod;
                let pod_labels = match labels {
                    Some(pod) if *pod == own => None,
                    Some(pod) => Some(Naming::pod_name(*pod)),
                    None => Some("none".to_owned()),
                };
                let alias = Naming::container_alias(*n);
                steps.push(Step::CreateContainer(CreateContainer {
                    name: Some((*name).to_owned()),
                    pod_labels,
                    ..CreateContainer::new(alias.clone(), Naming::sandbox_alias(*s))
                }));
                if *start {
                    steps.push(Step::StartContainer(StartContainer(alias)));
                }
            }
            Action::CreateContainer {
                container: None, ..
            } => {}
            Action::StopContainer { container: n } => {
                steps.push(Step::StopContainer(StopContainer {
                    container: Naming::container_alias(*n),
                    timeout: STOP_TIMEOUT_SECONDS,
                }));
            }
            Action::RemoveContainer { container: n } => {
                steps.push(Step::RemoveContainer(RemoveContainer(
                    Naming::container_alias(*n),
                )));
            }
        }
    }
    steps
}

fn get_pods_step(model: &Model, all: bool) -> Step {
    let pods = model.pods(all);
    let expected = pods
        .iter()
        .map(|(key, pod)| {
            let sandboxes = pod
                .sandboxes
                .iter()
                .map(|(n, s)| (Naming::sandbox_alias(*n), *s));
            let containers = pod
                .containers
                .iter()
                .map(|(n, s)| (Naming::container_alias(*n), *s));
            let expect = PodExpect {
                sandboxes: Some(
                    pod.sandboxes
                        .keys()
                        .copied()
                        .map(Naming::sandbox_alias)
                        .collect(),
                ),
                containers: Some(
                    pod.containers
                        .keys()
                        .copied()
                        .map(Naming::container_alias)
                        .collect(),
                ),
                states: sandboxes
                    .chain(containers)
                    .map(|(alias, state)| (alias, State(state)))
                    .collect(),
                ..PodExpect::default()
            };
            (pod_alias(*key), expect)
        })
        .collect();
    let only: BTreeSet<String> = pods.keys().map(|k| pod_alias(*k)).collect();
    Step::GetPods(GetPods {
        all,
        expect: GetPodsExpect {
            only: Some(only.into_iter().collect()),
            pods: expected,
            ..GetPodsExpect::default()
        },
    })
}

fn pod_status_steps(model: &Model) -> Vec<Step> {
    let mut used: BTreeSet<u8> = model
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
            Step::GetPodStatus(GetPodStatus {
                pod: Naming::pod_name(pod),
                expect: PodStatusExpect {
                    ip: Some(
                        expected
                            .ip_of
                            .map_or(IpExpect::None, |n| IpExpect::Of(Naming::sandbox_alias(n))),
                    ),
                    sandboxes: Some(
                        expected
                            .sandboxes
                            .iter()
                            .copied()
                            .map(Naming::sandbox_alias)
                            .collect(),
                    ),
                    containers: Some(
                        expected
                            .containers
                            .iter()
                            .copied()
                            .map(Naming::container_alias)
                            .collect(),
                    ),
                    ..PodStatusExpect::default()
                },
            })
        })
        .collect()
}

fn fault_steps(faults: &Faults) -> Vec<Step> {
    [
        ("StopContainer", faults.stop_container),
        ("StopPodSandbox", faults.stop_pod_sandbox),
        ("PodSandboxStatus", faults.pod_sandbox_status),
        ("ContainerStatus", faults.container_status),
    ]
    .into_iter()
    .filter(|(_, count)| *count > 0)
    .map(|(method, count)| {
        Step::MockInjectError(MockInjectError {
            method: method.to_owned(),
            code: GrpcCode(tonic::Code::Internal),
            message: INJECTED_MESSAGE.to_owned(),
            count,
            target: None,
            nth: 1,
            attempts: None,
        })
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

/// One expected sync result: `error` is the error kind, `None` for no error.
fn result(action: SyncAction, target: Option<&str>, error: Option<&str>) -> SyncResultExpect {
    SyncResultExpect {
        action: step::Action(action),
        target: target.map(str::to_owned),
        error: Some(error.unwrap_or("none").to_owned()),
        message: None,
        message_contains: None,
    }
}

fn kill_step(model: &Model, plan: &KillPlan) -> Step {
    let key = kill_key(plan.target);
    let view = runner_view(model, key);
    let expected = model.kill(&view, plan);
    let target = pod_alias(key);
    let mut results: Vec<SyncResultExpect> = (0..expected.container_results)
        .map(|_| {
            let mut kill = result(SyncAction::KillContainer, None, None);
            if expected.container_failures > 0 {
                // Which of them fail depends on the order the manager stops them in.
                kill.error = None;
            }
            kill
        })
        .collect();
    if expected.teardown.is_some() {
        let error = expected.teardown_fails.then_some(TEARDOWN_NETWORK_ERROR);
        results.push(result(SyncAction::TeardownNetwork, Some(&target), error));
    }
    if let Some(fails) = expected.sandbox_step {
        let error = fails.then_some(KILL_POD_SANDBOX_ERROR);
        results.push(result(SyncAction::KillPodSandbox, Some(&target), error));
    }
    Step::KillPod(KillPod {
        pod: target,
        with_spec: plan.spec.is_some(),
        host_network: plan.spec,
        spec: step::SpecFields::default(),
        grace_override: None,
        teardown_fails: plan
            .faults
            .teardown_fails
            .then(|| INJECTED_MESSAGE.to_owned()),
        extra_containers: Vec::new(),
        expect: KillExpect {
            teardown: Some(
                expected
                    .teardown
                    .iter()
                    .copied()
                    .map(Naming::sandbox_alias)
                    .collect(),
            ),
            stopped: (!plan.faults.injects_errors()).then_some(Stopped::All),
            results: Some(results),
            failed: Some(expected.fails()),
        },
    })
}

fn version_steps(version: &str) -> Vec<Step> {
    let answer = version_answer(version);
    let expect = if version == KUBE_RUNTIME_API_VERSION {
        NewManagerExpect {
            runtime_type: Some(VERSION_RUNTIME_NAME.to_owned()),
            ..NewManagerExpect::default()
        }
    } else {
        NewManagerExpect {
            error: Some(ErrorExpect {
                kind: Some(ErrorKind::VersionNotSupported),
                ..ErrorExpect::default()
            }),
            ..NewManagerExpect::default()
        }
    };
    vec![
        Step::MockSetVersion(MockSetVersion {
            version: answer.version,
            runtime_name: answer.runtime_name,
            runtime_version: answer.runtime_version,
            runtime_api_version: answer.runtime_api_version,
        }),
        Step::NewManager(NewManager { expect }),
    ]
}

/// One suite case reproducing `case` of `property`; `mock_control` tells whether the scenario
/// was generated for the mock (clock offsets, injected faults).
pub fn suite_case(property: Property, case: &Case, mock_control: bool, about: &str) -> SuiteCase {
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
    SuiteCase {
        name: property.name().replace('_', "-"),
        about: about.to_owned(),
        needs: if needs_mock {
            vec![Need::MockControl.to_string()]
        } else {
            Vec::new()
        },
        steps,
    }
}

/// A whole suite file of failing cases.
pub fn suite_file(name: &str, about: &str, cases: Vec<SuiteCase>) -> Result<String, PropError> {
    let file = SuiteFile {
        suite: name,
        about,
        tags: ["prop"],
        cases: &cases,
    };
    serde_saphyr::to_string(&file).map_err(|source| PropError::Render {
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
    use crate::prop::model::tests::run;
    use crate::prop::scenario::KillTarget;

    #[test]
    fn a_pod_status_case_sets_the_clock_and_expects_the_newest_sandboxes_ip() {
        let case = Case::Scenario(Scenario {
            ops: vec![run(0, 0, false, 3), run(0, 1, false, 1)],
        });
        let printed = suite_case(Property::PodStatus, &case, true, "why");
        assert_eq!(printed.needs, ["mock_control"]);
        assert_eq!(
            printed.steps[0],
            Step::MockSetClock(MockSetClock {
                unix_seconds: 1_700_003_000
            })
        );
        let Some(Step::GetPodStatus(status)) = printed.steps.last() else {
            panic!("no get_pod_status: {printed:?}");
        };
        assert_eq!(status.expect.ip, Some(IpExpect::Of("s0".to_owned())));
        assert_eq!(
            status.expect.sandboxes,
            Some(vec!["s0".to_owned(), "s1".to_owned()])
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
        let printed = suite_case(Property::KillPod, &case, true, "why");
        assert!(printed
            .steps
            .contains(&Step::MockInjectError(MockInjectError {
                method: "StopPodSandbox".to_owned(),
                code: GrpcCode(tonic::Code::Internal),
                message: INJECTED_MESSAGE.to_owned(),
                count: 1,
                target: None,
                nth: 1,
                attempts: None,
            })));
        let Some(Step::KillPod(kill)) = printed.steps.last() else {
            panic!("no kill_pod: {printed:?}");
        };
        assert_eq!(kill.expect.teardown, Some(vec!["s1".to_owned()]));
        assert_eq!(kill.expect.stopped, None);
        let results = kill.expect.results.as_deref().unwrap_or_default();
        assert_eq!(
            results.last().and_then(|r| r.error.as_deref()),
            Some(KILL_POD_SANDBOX_ERROR)
        );
    }

    #[test]
    fn a_printed_suite_reads_back_as_the_same_steps() {
        let case = Case::Kill(
            Scenario {
                ops: vec![run(0, 0, true, 2)],
            },
            KillPlan {
                target: KillTarget::Pod(0),
                spec: None,
                faults: Faults {
                    teardown_fails: true,
                    ..Default::default()
                },
            },
        );
        let printed = suite_case(Property::KillPod, &case, true, "why: \"quoted\"");
        let text = suite_file("prop-1", "about", vec![printed.clone()]).unwrap();
        let suite = crate::suite::parse("prop-1.yaml", &text).unwrap();
        assert_eq!(suite.tags, ["prop"]);
        assert_eq!(suite.cases.len(), 1);
        assert_eq!(
            suite.cases[0].about.as_deref(),
            Some(printed.about.as_str())
        );
        assert_eq!(suite.cases[0].steps, printed.steps, "{text}");
    }
}
