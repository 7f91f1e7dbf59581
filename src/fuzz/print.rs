//! A shrunk failure written as a suite case that `cri-harness run --suites DIR` replays: each
//! call of the shrunk sequence as the registry's typed step (sandbox `n` is alias `sN`,
//! container `n` is `cN`; a call on an id no runtime holds is `call_unknown_id`), the model's
//! expectation on each check where the contract leaves the runtime no choice, and the case
//! naming the clause it broke. Built from typed steps and printed by their `Serialize`, so it
//! reads back as the loader expects.

use std::collections::BTreeMap;

use serde::Serialize;

use super::model::{Call, Listing, Model, Target};
use super::ops::{CState, Img, Tier, TIER_LABEL};
use super::run::{Shrunk, ABSENT_IMAGE, EXEC_COMMAND, EXEC_OUTPUT, EXITING_COMMAND};
use crate::manager::ContainerState;
use crate::suite::step::call_unknown_id::IdMethod;
use crate::suite::step::image_status::ImageStatusExpect;
use crate::suite::step::list_container_stats::StatsFilter;
use crate::suite::step::{
    CallUnknownId, ContainerStatus, CreateContainer, ErrorExpect, ExecSync, GrpcCode, ImageStatus,
    ListContainerStats, ListContainers, ListImages, ListSandboxes, PullImage, RemoveContainer,
    RemoveImage, RemoveSandbox, RunSandbox, SandboxState, SandboxStatus, StartContainer, State,
    Step, StopContainer, StopSandbox, TextExpect,
};

/// One printed case.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FuzzCase {
    /// Its name.
    pub name: String,
    /// The clause the sequence broke.
    pub clause: String,
    /// How it was found.
    pub about: String,
    /// The steps.
    pub steps: Vec<Step>,
}

#[derive(Debug, Serialize)]
struct SuiteFile<'a> {
    suite: &'a str,
    about: &'a str,
    tags: [&'a str; 1],
    cases: &'a [FuzzCase],
}

fn sandbox(n: usize) -> String {
    format!("s{n}")
}

fn container(n: usize) -> String {
    format!("c{n}")
}

fn tier_labels(tier: Option<Tier>) -> BTreeMap<String, String> {
    tier.map(|t| BTreeMap::from([(TIER_LABEL.to_owned(), t.value().to_owned())]))
        .unwrap_or_default()
}

fn unknown(method: IdMethod, error: Option<tonic::Code>) -> Step {
    let mut step = CallUnknownId {
        method,
        expect: Default::default(),
    };
    step.expect.error = error.map(|code| ErrorExpect {
        code: Some(GrpcCode(code)),
        ..Default::default()
    });
    Step::CallUnknownId(step)
}

fn any_error() -> Option<ErrorExpect> {
    Some(ErrorExpect::default())
}

fn image_name(img: Img, removable: Option<&str>) -> String {
    match img {
        Img::Busybox => "busybox".to_owned(),
        Img::Removable => removable.unwrap_or_default().to_owned(),
        Img::Absent => ABSENT_IMAGE.to_owned(),
    }
}

fn exact(listing: &Listing, alias: fn(usize) -> String) -> Option<Vec<String>> {
    listing
        .exact()
        .map(|set| set.iter().map(|n| alias(*n)).collect())
}

/// The steps of one call, given the model before it. A list by an id no runtime holds has no
/// step form; it is left out (it names nothing the case made).
fn steps_of(call: &Call, model: &Model, removable: Option<&str>) -> Vec<Step> {
    let one = |s: Step| vec![s];
    match *call {
        Call::RunSandbox {
            n,
            host_network,
            tier,
        } => one(Step::RunSandbox(RunSandbox {
            host_network,
            labels: tier_labels(Some(tier)),
            ..RunSandbox::new(sandbox(n), format!("p{n}"))
        })),
        Call::StopSandbox(Target::N(n)) => one(Step::StopSandbox(StopSandbox(sandbox(n)))),
        Call::StopSandbox(Target::Unknown) => one(unknown(IdMethod::StopPodSandbox, None)),
        Call::RemoveSandbox(Target::N(n)) => one(Step::RemoveSandbox(RemoveSandbox(sandbox(n)))),
        Call::RemoveSandbox(Target::Unknown) => one(unknown(IdMethod::RemovePodSandbox, None)),
        Call::SandboxStatus(Target::Unknown) => one(unknown(
            IdMethod::PodSandboxStatus,
            Some(tonic::Code::NotFound),
        )),
        Call::SandboxStatus(Target::N(n)) => {
            let s = &model.sandboxes[n];
            let mut step = SandboxStatus {
                sandbox: sandbox(n),
                id_prefix: None,
                expect: Default::default(),
            };
            if s.removed {
                step.expect.error = Some(ErrorExpect {
                    code: Some(GrpcCode(tonic::Code::NotFound)),
                    ..Default::default()
                });
            } else {
                step.expect.state = Some(if s.ready {
                    SandboxState::Ready
                } else {
                    SandboxState::NotReady
                });
            }
            one(Step::SandboxStatus(step))
        }
        Call::CreateContainer {
            n,
            sandbox: s,
            exits,
            tier,
        } => one(Step::CreateContainer(CreateContainer {
            command: exits.then(|| EXITING_COMMAND.iter().map(|c| (*c).to_owned()).collect()),
            labels: tier_labels(Some(tier)),
            ..CreateContainer::new(container(n), sandbox(s))
        })),
        Call::StartContainer(Target::N(n)) if !model.containers[n].removed => {
            one(Step::StartContainer(StartContainer(container(n))))
        }
        Call::StartContainer(_) => {
            let mut step = CallUnknownId {
                method: IdMethod::StartContainer,
                expect: Default::default(),
            };
            step.expect.error = any_error();
            one(Step::CallUnknownId(step))
        }
        Call::StopContainer(Target::N(n)) => one(Step::StopContainer(StopContainer {
            container: container(n),
            timeout: 0,
        })),
        Call::StopContainer(Target::Unknown) => one(unknown(IdMethod::StopContainer, None)),
        Call::RemoveContainer(Target::N(n)) => {
            one(Step::RemoveContainer(RemoveContainer(container(n))))
        }
        Call::RemoveContainer(Target::Unknown) => one(unknown(IdMethod::RemoveContainer, None)),
        Call::ContainerStatus(Target::Unknown) => one(unknown(
            IdMethod::ContainerStatus,
            Some(tonic::Code::NotFound),
        )),
        Call::ContainerStatus(Target::N(n)) => {
            let c = &model.containers[n];
            let mut step = ContainerStatus {
                container: container(n),
                id_prefix: None,
                expect: Default::default(),
            };
            if c.removed {
                step.expect.error = Some(ErrorExpect {
                    code: Some(GrpcCode(tonic::Code::NotFound)),
                    ..Default::default()
                });
            } else {
                step.expect.state = c.states.single().map(|s| State(container_state(s)));
            }
            one(Step::ContainerStatus(step))
        }
        Call::ExecSync(n) => {
            let mut step = ExecSync {
                container: container(n),
                command: EXEC_COMMAND.iter().map(|c| (*c).to_owned()).collect(),
                timeout_s: 10,
                expect: Default::default(),
            };
            step.expect.stdout = TextExpect {
                equals: Some(EXEC_OUTPUT.to_owned()),
                ..Default::default()
            };
            one(Step::ExecSync(step))
        }
        Call::ListSandboxes {
            id: Some(Target::Unknown),
            ..
        }
        | Call::ListContainers {
            id: Some(Target::Unknown),
            ..
        }
        | Call::ListContainers {
            sandbox: Some(Target::Unknown),
            ..
        }
        | Call::ListContainerStats {
            id: Some(Target::Unknown),
            ..
        }
        | Call::ListContainerStats {
            sandbox: Some(Target::Unknown),
            ..
        }
        | Call::ListSandboxStats { .. } => Vec::new(),
        Call::ListSandboxes { id, ready, tier } => {
            let mut step = ListSandboxes {
                id: id.and_then(number).map(sandbox),
                state: ready.map(|r| {
                    if r {
                        SandboxState::Ready
                    } else {
                        SandboxState::NotReady
                    }
                }),
                labels: tier_labels(tier),
                ..Default::default()
            };
            step.expect.sandboxes = exact(&model.list_sandboxes(id, ready, tier), sandbox);
            one(Step::ListSandboxes(step))
        }
        Call::ListContainers {
            id,
            sandbox: sb,
            state,
            tier,
        } => {
            let mut step = ListContainers {
                id: id.and_then(number).map(container),
                sandbox: sb.and_then(number).map(sandbox),
                state: state.map(|s| State(container_state(s))),
                labels: tier_labels(tier),
                ..Default::default()
            };
            step.expect.containers = exact(&model.list_containers(id, sb, state, tier), container);
            one(Step::ListContainers(step))
        }
        Call::ListContainerStats {
            id,
            sandbox: sb,
            tier,
        } => {
            let mut step = ListContainerStats {
                filter: Some(StatsFilter {
                    id: id.and_then(number).map(container),
                    sandbox: sb.and_then(number).map(sandbox),
                    // The step sends its labels as they are and keeps the case's own answers.
                    labels: tier_labels(tier),
                }),
                ..Default::default()
            };
            step.expect.containers = exact(&model.list_container_stats(id, sb, tier), container);
            one(Step::ListContainerStats(step))
        }
        Call::PullImage(img) => one(Step::PullImage(PullImage::Setup(image_name(
            img, removable,
        )))),
        Call::ImageStatus(img) => one(Step::ImageStatus(ImageStatus {
            image: image_name(img, removable),
            refs: Vec::new(),
            expect: ImageStatusExpect {
                present: model.image_present(img),
                repo_tags: None,
                repo_digests: None,
                uid: None,
                username: None,
                sized: false,
                same_as: None,
            },
        })),
        Call::ListImages(img) => {
            let name = image_name(img, removable);
            let mut step = ListImages {
                images: vec![name.clone()],
                filter: None,
                expect: Default::default(),
            };
            step.expect.present = Some(if model.image_present(img) {
                vec![name]
            } else {
                Vec::new()
            });
            one(Step::ListImages(step))
        }
        Call::RemoveImage(img) => one(Step::RemoveImage(RemoveImage {
            image: image_name(img, removable),
            by: Default::default(),
            setup: false,
            concurrent: None,
            expect: Default::default(),
        })),
    }
}

fn number(t: Target) -> Option<usize> {
    match t {
        Target::N(n) => Some(n),
        Target::Unknown => None,
    }
}

fn container_state(s: CState) -> ContainerState {
    match s {
        CState::Created => ContainerState::Created,
        CState::Running => ContainerState::Running,
        CState::Exited => ContainerState::Exited,
    }
}

/// The suite case replaying `shrunk`.
pub fn suite_case(shrunk: &Shrunk, about: &str) -> FuzzCase {
    let removable = shrunk.removable.as_deref();
    let mut steps = Vec::new();
    if shrunk.removable_setup {
        steps.push(Step::RemoveImage(RemoveImage {
            image: removable.unwrap_or_default().to_owned(),
            by: Default::default(),
            setup: true,
            concurrent: None,
            expect: Default::default(),
        }));
    }
    let mut model = Model::new(shrunk.removable_setup.then_some(false));
    for call in &shrunk.calls {
        steps.extend(steps_of(call, &model, removable));
        model.apply(call, true);
    }
    // A break at the end, where the fuzzer stops and removes what is left: the same calls.
    if shrunk.failure.at.is_none() {
        let (sandboxes, containers) = model.live();
        for n in containers {
            steps.push(Step::StopContainer(StopContainer {
                container: container(n),
                timeout: 0,
            }));
            steps.push(Step::RemoveContainer(RemoveContainer(container(n))));
            model.apply(&Call::RemoveContainer(Target::N(n)), true);
        }
        for n in sandboxes {
            steps.push(Step::RemoveSandbox(RemoveSandbox(sandbox(n))));
            model.apply(&Call::RemoveSandbox(Target::N(n)), true);
        }
    }
    // The listing checked after every call: where the break was in it, this step shows it.
    let (sandboxes, containers) = model.live();
    if !sandboxes.is_empty() {
        let mut list = ListSandboxes::default();
        list.expect.sandboxes = Some(sandboxes.iter().map(|n| sandbox(*n)).collect());
        for n in &sandboxes {
            let ready = model.sandboxes[*n].ready;
            list.expect.states.insert(
                sandbox(*n),
                if ready {
                    SandboxState::Ready
                } else {
                    SandboxState::NotReady
                },
            );
        }
        steps.push(Step::ListSandboxes(list));
    }
    if !containers.is_empty() {
        let mut list = ListContainers::default();
        list.expect.containers = Some(containers.iter().map(|n| container(*n)).collect());
        for n in &containers {
            if let Some(state) = model.containers[*n].states.single() {
                list.expect
                    .states
                    .insert(container(*n), State(container_state(state)));
            }
        }
        steps.push(Step::ListContainers(list));
    }
    FuzzCase {
        name: format!("fuzz-{}", shrunk.failure.clause.replace('.', "-")),
        clause: shrunk.failure.clause.to_owned(),
        about: about.to_owned(),
        steps,
    }
}

/// A suite file of printed cases.
pub fn suite_file(name: &str, about: &str, cases: &[FuzzCase]) -> Result<String, String> {
    let file = SuiteFile {
        suite: name,
        about,
        tags: ["fuzz"],
        cases,
    };
    serde_saphyr::to_string(&file).map_err(|e| e.to_string())
}
