//! The stateful model of the CRI contract the fuzzer holds a runtime to: the sequence's
//! sandboxes, containers and images, the states each may be in, and what each call may answer
//! in each state, every expectation naming the clause of src/contract/clauses.yaml it rests
//! on. Where the contract leaves a choice to the runtime (a stopped never-started container
//! may stay created or read exited; a process that exits by itself may be running or exited
//! when asked), the model keeps every state allowed and narrows it only as the runtime shows
//! one it cannot leave. Calls the contract says nothing definite about (starting a container
//! twice, creating one in a stopped sandbox) are not made: [`Model::resolve`] skips them.

use std::collections::BTreeSet;

use super::ops::{CState, Img, Op, Ref, Tier};
use crate::manager::ContainerState;

/// A resolved object reference: the sequence's object number, or an id no runtime holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Object `n` of its kind (it may have been removed).
    N(usize),
    /// An id no runtime holds.
    Unknown,
}

/// An op with its references resolved against the objects made so far: the call made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// RunPodSandbox of sandbox `n`.
    RunSandbox {
        /// Its number.
        n: usize,
        /// Host network.
        host_network: bool,
        /// Its tier label.
        tier: Tier,
    },
    /// StopPodSandbox.
    StopSandbox(Target),
    /// RemovePodSandbox.
    RemoveSandbox(Target),
    /// PodSandboxStatus.
    SandboxStatus(Target),
    /// CreateContainer of container `n` in sandbox `sandbox`.
    CreateContainer {
        /// Its number.
        n: usize,
        /// Its sandbox.
        sandbox: usize,
        /// Its process exits at once.
        exits: bool,
        /// Its tier label.
        tier: Tier,
    },
    /// StartContainer.
    StartContainer(Target),
    /// StopContainer.
    StopContainer(Target),
    /// RemoveContainer.
    RemoveContainer(Target),
    /// ContainerStatus.
    ContainerStatus(Target),
    /// ExecSync in container `n`.
    ExecSync(usize),
    /// ListPodSandbox.
    ListSandboxes {
        /// By id.
        id: Option<Target>,
        /// By state.
        ready: Option<bool>,
        /// By label.
        tier: Option<Tier>,
    },
    /// ListContainers.
    ListContainers {
        /// By id.
        id: Option<Target>,
        /// By sandbox.
        sandbox: Option<Target>,
        /// By state.
        state: Option<CState>,
        /// By label.
        tier: Option<Tier>,
    },
    /// ListContainerStats.
    ListContainerStats {
        /// By id.
        id: Option<Target>,
        /// By sandbox.
        sandbox: Option<Target>,
        /// By label.
        tier: Option<Tier>,
    },
    /// ListPodSandboxStats.
    ListSandboxStats {
        /// By id.
        id: Option<Target>,
        /// By label.
        tier: Option<Tier>,
    },
    /// PullImage.
    PullImage(Img),
    /// ImageStatus.
    ImageStatus(Img),
    /// ListImages filtered by the image.
    ListImages(Img),
    /// RemoveImage.
    RemoveImage(Img),
}

/// A set of container states the runtime may report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct States(u8);

impl States {
    const CREATED: u8 = 1;
    const RUNNING: u8 = 2;
    const EXITED: u8 = 4;

    /// Exactly `state`.
    pub fn only(state: CState) -> Self {
        Self(Self::bit(state))
    }

    fn bit(state: CState) -> u8 {
        match state {
            CState::Created => Self::CREATED,
            CState::Running => Self::RUNNING,
            CState::Exited => Self::EXITED,
        }
    }

    /// `a` or `b`.
    pub fn either(a: CState, b: CState) -> Self {
        Self(Self::bit(a) | Self::bit(b))
    }

    /// True when `state` is allowed.
    pub fn allows(self, state: CState) -> bool {
        self.0 & Self::bit(state) != 0
    }

    /// The one state allowed, if only one is.
    pub fn single(self) -> Option<CState> {
        [CState::Created, CState::Running, CState::Exited]
            .into_iter()
            .find(|s| self.0 == Self::bit(*s))
    }
}

/// A CRI container state as the model's.
pub fn cstate_of(state: ContainerState) -> Option<CState> {
    match state {
        ContainerState::Created => Some(CState::Created),
        ContainerState::Running => Some(CState::Running),
        ContainerState::Exited => Some(CState::Exited),
        ContainerState::Unknown => None,
    }
}

/// A sandbox of the sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxModel {
    /// Removed.
    pub removed: bool,
    /// READY.
    pub ready: bool,
    /// Host network.
    pub host_network: bool,
    /// Tier label.
    pub tier: Tier,
    /// The clause behind its present state.
    pub clause: &'static str,
}

/// A container of the sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerModel {
    /// Its sandbox.
    pub sandbox: usize,
    /// Removed.
    pub removed: bool,
    /// The states it may be in.
    pub states: States,
    /// Its process exits by itself.
    pub exits: bool,
    /// Tier label.
    pub tier: Tier,
    /// The clause behind its present state.
    pub clause: &'static str,
}

/// What a call may answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// It must succeed.
    Ok,
    /// It must fail with NotFound.
    NotFound,
    /// It must fail, with any code.
    Fails,
    /// Either.
    Either,
}

/// An expectation: the answer and the clause it rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expect {
    /// The answer.
    pub answer: Answer,
    /// The clause.
    pub clause: &'static str,
}

const fn expect(answer: Answer, clause: &'static str) -> Expect {
    Expect { answer, clause }
}

/// What a filtered list must and may answer, by object number.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// Objects that must answer.
    pub must: BTreeSet<usize>,
    /// Objects that may answer as well.
    pub may: BTreeSet<usize>,
}

impl Listing {
    /// True when `answered` holds every must and nothing beyond must and may.
    pub fn admits(&self, answered: &BTreeSet<usize>) -> bool {
        self.must.is_subset(answered)
            && answered
                .iter()
                .all(|n| self.must.contains(n) || self.may.contains(n))
    }

    /// The one answer allowed, if the list leaves no choice.
    pub fn exact(&self) -> Option<&BTreeSet<usize>> {
        self.may.is_empty().then_some(&self.must)
    }
}

/// The model of one sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model {
    /// The sandboxes, by number.
    pub sandboxes: Vec<SandboxModel>,
    /// The containers, by number.
    pub containers: Vec<ContainerModel>,
    /// Busybox is present (ensured before the sequence; never removed).
    pub busybox: bool,
    /// The removable image is present; `None` when this worker owns none.
    pub removable: Option<bool>,
}

fn target(r: Ref, count: usize) -> Option<Target> {
    match r {
        Ref::Unknown => Some(Target::Unknown),
        Ref::Made(_) if count == 0 => None,
        Ref::Made(n) => Some(Target::N(usize::from(n) % count)),
    }
}

/// A filter reference: with nothing made yet it filters by an unknown id.
fn filter_target(r: Option<Ref>, count: usize) -> Option<Target> {
    r.map(|r| target(r, count).unwrap_or(Target::Unknown))
}

impl Model {
    /// A model with nothing made; `removable` as for [`Model::removable`].
    pub fn new(removable: Option<bool>) -> Self {
        Self {
            sandboxes: Vec::new(),
            containers: Vec::new(),
            busybox: true,
            removable,
        }
    }

    fn container_live_in_ready(&self, n: usize) -> bool {
        let c = &self.containers[n];
        !c.removed && self.sandboxes[c.sandbox].ready && !self.sandboxes[c.sandbox].removed
    }

    /// The call `op` makes now, or `None` when the contract says nothing definite about it in
    /// this state (it is skipped).
    pub fn resolve(&self, op: &Op) -> Option<Call> {
        let sandboxes = self.sandboxes.len();
        let containers = self.containers.len();
        Some(match *op {
            Op::RunSandbox { host_network, tier } => Call::RunSandbox {
                n: sandboxes,
                host_network,
                tier,
            },
            Op::StopSandbox(r) => Call::StopSandbox(target(r, sandboxes)?),
            Op::RemoveSandbox(r) => Call::RemoveSandbox(target(r, sandboxes)?),
            Op::SandboxStatus(r) => Call::SandboxStatus(target(r, sandboxes)?),
            Op::CreateContainer {
                sandbox,
                exits,
                tier,
            } => {
                let Some(Target::N(s)) = target(Ref::Made(sandbox), sandboxes) else {
                    return None;
                };
                let sb = &self.sandboxes[s];
                if sb.removed || !sb.ready {
                    return None;
                }
                Call::CreateContainer {
                    n: containers,
                    sandbox: s,
                    exits,
                    tier,
                }
            }
            Op::StartContainer(r) => {
                let t = target(r, containers)?;
                if let Target::N(n) = t {
                    let c = &self.containers[n];
                    // Starting twice, or in a stopped sandbox, has no definite answer.
                    if !c.removed
                        && (!self.container_live_in_ready(n)
                            || c.states != States::only(CState::Created))
                    {
                        return None;
                    }
                }
                Call::StartContainer(t)
            }
            Op::StopContainer(r) => Call::StopContainer(target(r, containers)?),
            Op::RemoveContainer(r) => Call::RemoveContainer(target(r, containers)?),
            Op::ContainerStatus(r) => Call::ContainerStatus(target(r, containers)?),
            Op::ExecSync(c) => {
                let Some(Target::N(n)) = target(Ref::Made(c), containers) else {
                    return None;
                };
                let m = &self.containers[n];
                if !self.container_live_in_ready(n) || !m.states.allows(CState::Running) {
                    return None;
                }
                Call::ExecSync(n)
            }
            Op::ListSandboxes { id, ready, tier } => Call::ListSandboxes {
                id: filter_target(id, sandboxes),
                ready,
                tier,
            },
            Op::ListContainers {
                id,
                sandbox,
                state,
                tier,
            } => Call::ListContainers {
                id: filter_target(id, containers),
                sandbox: filter_target(sandbox, sandboxes),
                state,
                tier,
            },
            Op::ListContainerStats { id, sandbox, tier } => Call::ListContainerStats {
                id: filter_target(id, containers),
                sandbox: filter_target(sandbox, sandboxes),
                tier,
            },
            Op::ListSandboxStats { id, tier } => Call::ListSandboxStats {
                id: filter_target(id, sandboxes),
                tier,
            },
            Op::PullImage(Img::Absent) | Op::RemoveImage(Img::Busybox) => return None,
            Op::PullImage(img)
            | Op::ImageStatus(img)
            | Op::ListImages(img)
            | Op::RemoveImage(img)
                if img == Img::Removable && self.removable.is_none() =>
            {
                return None
            }
            Op::PullImage(img) => Call::PullImage(img),
            Op::ImageStatus(img) => Call::ImageStatus(img),
            Op::ListImages(img) => Call::ListImages(img),
            Op::RemoveImage(img) => Call::RemoveImage(img),
        })
    }

    fn sandbox_gone(&self, t: Target) -> bool {
        match t {
            Target::Unknown => true,
            Target::N(n) => self.sandboxes[n].removed,
        }
    }

    fn container_gone(&self, t: Target) -> bool {
        match t {
            Target::Unknown => true,
            Target::N(n) => self.containers[n].removed,
        }
    }

    /// Whether the image is present, as the model knows it.
    pub fn image_present(&self, img: Img) -> bool {
        match img {
            Img::Busybox => self.busybox,
            Img::Removable => self.removable.unwrap_or(false),
            Img::Absent => false,
        }
    }

    /// What `call` may answer now.
    pub fn expect(&self, call: &Call) -> Expect {
        use Answer::{Either, Fails, NotFound, Ok};
        match *call {
            Call::RunSandbox { .. } => expect(Ok, "sandbox.run.ready"),
            Call::StopSandbox(t) if self.sandbox_gone(t) => expect(Ok, "sandbox.stop.idempotent"),
            Call::StopSandbox(_) => expect(Ok, "sandbox.stop.not-ready"),
            Call::RemoveSandbox(t) if self.sandbox_gone(t) => {
                expect(Ok, "sandbox.remove.idempotent")
            }
            Call::RemoveSandbox(_) => expect(Ok, "sandbox.remove.gone"),
            Call::SandboxStatus(t) if self.sandbox_gone(t) => {
                expect(NotFound, "sandbox.status.unknown-not-found")
            }
            Call::SandboxStatus(Target::N(n)) => expect(Ok, self.sandboxes[n].clause),
            Call::SandboxStatus(Target::Unknown) => unreachable!("gone above"),
            Call::CreateContainer { .. } => expect(Ok, "container.create.created"),
            Call::StartContainer(t) if self.container_gone(t) => {
                expect(Fails, "container.start.unknown-fails")
            }
            Call::StartContainer(_) => expect(Ok, "container.start.running"),
            Call::StopContainer(t) if self.container_gone(t) => {
                expect(Ok, "container.stop.idempotent")
            }
            Call::StopContainer(Target::N(n)) => {
                let states = self.containers[n].states;
                if states.allows(CState::Running) {
                    expect(Ok, "container.stop.exited")
                } else {
                    expect(Ok, "container.stop.idempotent")
                }
            }
            Call::StopContainer(Target::Unknown) => unreachable!("gone above"),
            Call::RemoveContainer(t) if self.container_gone(t) => {
                expect(Ok, "container.remove.idempotent")
            }
            Call::RemoveContainer(_) => expect(Ok, "container.remove.any-state"),
            Call::ContainerStatus(t) if self.container_gone(t) => {
                expect(NotFound, "container.status.unknown-not-found")
            }
            Call::ContainerStatus(Target::N(n)) => expect(Ok, self.containers[n].clause),
            Call::ContainerStatus(Target::Unknown) => unreachable!("gone above"),
            Call::ExecSync(n) => {
                if self.containers[n].states == States::only(CState::Running) {
                    expect(Ok, "container.exec-sync.output")
                } else {
                    expect(Either, "container.exec-sync.output")
                }
            }
            Call::ListSandboxes { .. } => expect(Ok, "sandbox.list.filters"),
            Call::ListContainers { .. } => expect(Ok, "container.list.filters"),
            Call::ListContainerStats { .. } => expect(Ok, "stats.list.filters"),
            Call::ListSandboxStats { .. } => expect(Ok, "stats.pod.list"),
            Call::PullImage(_) => expect(Ok, "image.pull.answers-image"),
            Call::ImageStatus(img) if self.image_present(img) => {
                expect(Ok, "image.status.after-pull")
            }
            Call::ImageStatus(_) => expect(Ok, "image.status.absent"),
            Call::ListImages(_) => expect(Ok, "image.list.answers"),
            Call::RemoveImage(img) if self.image_present(img) => expect(Ok, "image.remove.gone"),
            Call::RemoveImage(_) => expect(Ok, "image.remove.idempotent"),
        }
    }

    /// Records what `call` did: `ok` is whether it succeeded.
    pub fn apply(&mut self, call: &Call, ok: bool) {
        match *call {
            Call::RunSandbox {
                host_network, tier, ..
            } if ok => self.sandboxes.push(SandboxModel {
                removed: false,
                ready: true,
                host_network,
                tier,
                clause: "sandbox.run.ready",
            }),
            Call::StopSandbox(Target::N(n)) if ok && !self.sandboxes[n].removed => {
                let sb = &mut self.sandboxes[n];
                sb.ready = false;
                sb.clause = "sandbox.stop.not-ready";
                for c in self
                    .containers
                    .iter_mut()
                    .filter(|c| c.sandbox == n && !c.removed)
                {
                    stop(c, "sandbox.stop.not-ready");
                }
            }
            Call::RemoveSandbox(Target::N(n)) if ok && !self.sandboxes[n].removed => {
                let sb = &mut self.sandboxes[n];
                sb.removed = true;
                sb.ready = false;
                sb.clause = "sandbox.remove.gone";
                for c in self
                    .containers
                    .iter_mut()
                    .filter(|c| c.sandbox == n && !c.removed)
                {
                    c.removed = true;
                    c.clause = "container.remove-sandbox.removes-containers";
                }
            }
            Call::CreateContainer {
                sandbox,
                exits,
                tier,
                ..
            } if ok => self.containers.push(ContainerModel {
                sandbox,
                removed: false,
                states: States::only(CState::Created),
                exits,
                tier,
                clause: "container.create.created",
            }),
            Call::StartContainer(Target::N(n)) if ok && !self.containers[n].removed => {
                let c = &mut self.containers[n];
                c.states = if c.exits {
                    States::either(CState::Running, CState::Exited)
                } else {
                    States::only(CState::Running)
                };
                c.clause = "container.start.running";
            }
            Call::StopContainer(Target::N(n)) if ok && !self.containers[n].removed => {
                stop(&mut self.containers[n], "container.stop.exited");
            }
            Call::RemoveContainer(Target::N(n)) if ok && !self.containers[n].removed => {
                let c = &mut self.containers[n];
                c.removed = true;
                c.clause = "container.remove.gone";
            }
            Call::PullImage(Img::Busybox) if ok => self.busybox = true,
            Call::PullImage(Img::Removable) if ok => self.removable = Some(true),
            Call::RemoveImage(Img::Removable) if ok => self.removable = Some(false),
            _ => {}
        }
    }

    /// Narrows container `n`'s states by what the runtime reported: a state it cannot leave
    /// by itself (anything but running, for a process that exits) is where it stays.
    pub fn observe(&mut self, n: usize, state: CState) {
        let c = &mut self.containers[n];
        if c.states.allows(state) && !(state == CState::Running && c.exits) {
            c.states = States::only(state);
        }
    }

    /// The sandboxes a ListPodSandbox with this filter answers.
    pub fn list_sandboxes(
        &self,
        id: Option<Target>,
        ready: Option<bool>,
        tier: Option<Tier>,
    ) -> Listing {
        let mut listing = Listing::default();
        for (n, s) in self.sandboxes.iter().enumerate() {
            let by_id = id.is_none_or(|t| t == Target::N(n));
            if !s.removed
                && by_id
                && ready.is_none_or(|r| r == s.ready)
                && tier.is_none_or(|t| t == s.tier)
            {
                listing.must.insert(n);
            }
        }
        listing
    }

    fn container_matches(
        &self,
        n: usize,
        id: Option<Target>,
        sandbox: Option<Target>,
        tier: Option<Tier>,
    ) -> bool {
        let c = &self.containers[n];
        !c.removed
            && id.is_none_or(|t| t == Target::N(n))
            && sandbox.is_none_or(|t| t == Target::N(c.sandbox))
            && tier.is_none_or(|t| t == c.tier)
    }

    /// The containers a ListContainers with this filter answers.
    pub fn list_containers(
        &self,
        id: Option<Target>,
        sandbox: Option<Target>,
        state: Option<CState>,
        tier: Option<Tier>,
    ) -> Listing {
        let mut listing = Listing::default();
        for (n, c) in self.containers.iter().enumerate() {
            if !self.container_matches(n, id, sandbox, tier) {
                continue;
            }
            match state {
                None => {
                    listing.must.insert(n);
                }
                Some(s) if c.states == States::only(s) => {
                    listing.must.insert(n);
                }
                Some(s) if c.states.allows(s) => {
                    listing.may.insert(n);
                }
                Some(_) => {}
            }
        }
        listing
    }

    /// The containers a ListContainerStats with this filter answers: every one it names, an
    /// exited one optionally (the clause speaks of started and never-started ones).
    pub fn list_container_stats(
        &self,
        id: Option<Target>,
        sandbox: Option<Target>,
        tier: Option<Tier>,
    ) -> Listing {
        let mut listing = Listing::default();
        for (n, c) in self.containers.iter().enumerate() {
            if !self.container_matches(n, id, sandbox, tier) {
                continue;
            }
            if c.states.allows(CState::Exited) {
                listing.may.insert(n);
            } else {
                listing.must.insert(n);
            }
        }
        listing
    }

    /// The sandboxes a ListPodSandboxStats with this filter answers: every ready one it names,
    /// a stopped one optionally.
    pub fn list_sandbox_stats(&self, id: Option<Target>, tier: Option<Tier>) -> Listing {
        let all = self.list_sandboxes(id, None, tier);
        let mut listing = Listing::default();
        for n in all.must {
            if self.sandboxes[n].ready {
                listing.must.insert(n);
            } else {
                listing.may.insert(n);
            }
        }
        listing
    }

    /// Sandboxes and containers not removed, by number.
    pub fn live(&self) -> (Vec<usize>, Vec<usize>) {
        let sandboxes = (0..self.sandboxes.len())
            .filter(|n| !self.sandboxes[*n].removed)
            .collect();
        let containers = (0..self.containers.len())
            .filter(|n| !self.containers[*n].removed)
            .collect();
        (sandboxes, containers)
    }
}

/// A container stopped (by StopContainer or its sandbox's stop).
fn stop(c: &mut ContainerModel, clause: &'static str) {
    if c.states == States::only(CState::Created) {
        // container.stop.created-stays-created is observed, not required: either answer.
        c.states = States::either(CState::Created, CState::Exited);
        c.clause = "container.stop.created-stays-created";
    } else if c.states.allows(CState::Running) {
        c.states = States::only(CState::Exited);
        c.clause = clause;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(model: &mut Model, tier: Tier) {
        let call = model
            .resolve(&Op::RunSandbox {
                host_network: false,
                tier,
            })
            .unwrap();
        model.apply(&call, true);
    }

    #[test]
    fn stops_and_removes_of_the_gone_must_succeed_and_statuses_answer_not_found() {
        let mut model = Model::new(None);
        run(&mut model, Tier::A);
        let remove = model.resolve(&Op::RemoveSandbox(Ref::Made(0))).unwrap();
        assert_eq!(model.expect(&remove).clause, "sandbox.remove.gone");
        model.apply(&remove, true);
        let stop = model.resolve(&Op::StopSandbox(Ref::Made(0))).unwrap();
        assert_eq!(
            model.expect(&stop),
            expect(Answer::Ok, "sandbox.stop.idempotent")
        );
        let status = model.resolve(&Op::SandboxStatus(Ref::Made(0))).unwrap();
        assert_eq!(model.expect(&status).answer, Answer::NotFound);
        let stop = model.resolve(&Op::StopContainer(Ref::Unknown)).unwrap();
        assert_eq!(
            model.expect(&stop),
            expect(Answer::Ok, "container.stop.idempotent")
        );
        assert_eq!(model.resolve(&Op::StopContainer(Ref::Made(0))), None);
    }

    #[test]
    fn a_state_filter_leaves_out_sandboxes_of_the_other_state() {
        let mut model = Model::new(None);
        run(&mut model, Tier::A);
        run(&mut model, Tier::B);
        let stop = model.resolve(&Op::StopSandbox(Ref::Made(1))).unwrap();
        model.apply(&stop, true);
        assert_eq!(
            model.list_sandboxes(None, Some(false), None).must,
            BTreeSet::from([1])
        );
        assert_eq!(
            model.list_sandboxes(None, Some(true), Some(Tier::B)).must,
            BTreeSet::new()
        );
        assert_eq!(
            model.list_sandboxes(Some(Target::Unknown), None, None).must,
            BTreeSet::new()
        );
    }

    #[test]
    fn an_exiting_process_may_be_listed_running_or_exited_until_seen_exited() {
        let mut model = Model::new(None);
        run(&mut model, Tier::A);
        for op in [
            Op::CreateContainer {
                sandbox: 0,
                exits: true,
                tier: Tier::A,
            },
            Op::StartContainer(Ref::Made(0)),
        ] {
            let call = model.resolve(&op).unwrap();
            model.apply(&call, true);
        }
        let running = model.list_containers(None, None, Some(CState::Running), None);
        assert_eq!((running.must.len(), running.may.len()), (0, 1));
        model.observe(0, CState::Running);
        assert!(model.containers[0].states.allows(CState::Exited));
        model.observe(0, CState::Exited);
        assert_eq!(model.containers[0].states, States::only(CState::Exited));
        // Started once, it is not started again.
        assert_eq!(model.resolve(&Op::StartContainer(Ref::Made(0))), None);
    }

    #[test]
    fn a_stopped_never_started_container_may_read_created_or_exited() {
        let mut model = Model::new(None);
        run(&mut model, Tier::A);
        let create = model
            .resolve(&Op::CreateContainer {
                sandbox: 0,
                exits: false,
                tier: Tier::B,
            })
            .unwrap();
        model.apply(&create, true);
        let stop = model.resolve(&Op::StopSandbox(Ref::Made(0))).unwrap();
        model.apply(&stop, true);
        let c = &model.containers[0];
        assert!(c.states.allows(CState::Created) && c.states.allows(CState::Exited));
        let stats = model.list_container_stats(None, None, Some(Tier::A));
        assert!(stats.must.is_empty() && stats.may.is_empty());
        let stats = model.list_container_stats(None, None, Some(Tier::B));
        assert_eq!(stats.may, BTreeSet::from([0]));
    }
}
