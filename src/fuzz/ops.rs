//! The fuzzer's vocabulary: one [`Op`] per CRI call it makes, the proptest strategy that
//! generates sequences of them, and how each reads in a report.
//!
//! Ops name objects by the order they were made in the sequence (`s1` is the second sandbox
//! run), resolved when the op runs: a reference past the objects made so far wraps round, and
//! [`Ref::Unknown`] is an id no runtime holds. Removed objects stay referable, so a sequence
//! can stop, status or remove what is gone. Shrinking drops ops and moves references towards
//! the first object, so a failure ends as the fewest calls that still break the clause.

use std::fmt;

use proptest::prelude::*;

/// A reference to a sandbox or a container of the sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ref {
    /// The object made `n`-th (modulo how many were made when the op runs).
    Made(u8),
    /// An id no runtime holds.
    Unknown,
}

/// A label value the fuzzer filters by: objects carry `tier` = one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// `tier=a`.
    A,
    /// `tier=b`.
    B,
}

impl Tier {
    /// The label's value.
    pub fn value(self) -> &'static str {
        match self {
            Tier::A => "a",
            Tier::B => "b",
        }
    }
}

/// The label the fuzzer's objects carry besides the run's and the case's.
pub const TIER_LABEL: &str = "tier";

/// A container state a list can filter by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CState {
    /// CONTAINER_CREATED.
    Created,
    /// CONTAINER_RUNNING.
    Running,
    /// CONTAINER_EXITED.
    Exited,
}

/// The images the fuzzer uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Img {
    /// The suites' busybox, which containers run: pulled, listed, never removed.
    Busybox,
    /// An image the sequence's worker owns: pulled and removed at will.
    Removable,
    /// A reference no registry serves and no one pulls.
    Absent,
}

/// One CRI call of a sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// RunPodSandbox, the next sandbox.
    RunSandbox {
        /// Host network rather than a network namespace of its own.
        host_network: bool,
        /// Its tier label.
        tier: Tier,
    },
    /// StopPodSandbox.
    StopSandbox(Ref),
    /// RemovePodSandbox.
    RemoveSandbox(Ref),
    /// PodSandboxStatus.
    SandboxStatus(Ref),
    /// CreateContainer in a sandbox, the next container (skipped unless the sandbox is ready).
    CreateContainer {
        /// The sandbox.
        sandbox: u8,
        /// Its process exits at once instead of running until stopped.
        exits: bool,
        /// Its tier label.
        tier: Tier,
    },
    /// StartContainer (skipped unless the container is created and its sandbox ready).
    StartContainer(Ref),
    /// StopContainer, no grace period.
    StopContainer(Ref),
    /// RemoveContainer.
    RemoveContainer(Ref),
    /// ContainerStatus.
    ContainerStatus(Ref),
    /// ExecSync `echo fuzz` (skipped unless the container was started and not stopped).
    ExecSync(u8),
    /// ListPodSandbox with a filter.
    ListSandboxes {
        /// By id.
        id: Option<Ref>,
        /// By state: ready or not.
        ready: Option<bool>,
        /// By tier label.
        tier: Option<Tier>,
    },
    /// ListContainers with a filter.
    ListContainers {
        /// By id.
        id: Option<Ref>,
        /// By sandbox id.
        sandbox: Option<Ref>,
        /// By state.
        state: Option<CState>,
        /// By tier label.
        tier: Option<Tier>,
    },
    /// ListContainerStats with a filter.
    ListContainerStats {
        /// By id.
        id: Option<Ref>,
        /// By sandbox id.
        sandbox: Option<Ref>,
        /// By tier label.
        tier: Option<Tier>,
    },
    /// ListPodSandboxStats with a filter.
    ListSandboxStats {
        /// By id.
        id: Option<Ref>,
        /// By tier label.
        tier: Option<Tier>,
    },
    /// PullImage.
    PullImage(Img),
    /// ImageStatus.
    ImageStatus(Img),
    /// ListImages filtered by the image.
    ListImages(Img),
    /// RemoveImage (never of busybox).
    RemoveImage(Img),
}

fn reference() -> impl Strategy<Value = Ref> {
    prop_oneof![
        6 => (0u8..4).prop_map(Ref::Made),
        1 => Just(Ref::Unknown),
    ]
}

fn tier() -> impl Strategy<Value = Tier> {
    prop_oneof![Just(Tier::A), Just(Tier::B)]
}

fn cstate() -> impl Strategy<Value = CState> {
    prop_oneof![
        Just(CState::Created),
        Just(CState::Running),
        Just(CState::Exited)
    ]
}

fn image() -> impl Strategy<Value = Img> {
    prop_oneof![Just(Img::Busybox), Just(Img::Removable), Just(Img::Absent)]
}

/// One op. The setup ops come first in each group, so shrinking turns a check into a setup op
/// only where that still fails; the lists' filters shrink towards no filter.
pub fn op() -> impl Strategy<Value = Op> {
    let made = || 0u8..4;
    prop_oneof![
        4 => (any::<bool>(), tier()).prop_map(|(host_network, tier)| Op::RunSandbox { host_network, tier }),
        2 => reference().prop_map(Op::StopSandbox),
        2 => reference().prop_map(Op::RemoveSandbox),
        1 => reference().prop_map(Op::SandboxStatus),
        5 => (made(), any::<bool>(), tier()).prop_map(|(sandbox, exits, tier)| Op::CreateContainer { sandbox, exits, tier }),
        3 => reference().prop_map(Op::StartContainer),
        2 => reference().prop_map(Op::StopContainer),
        2 => reference().prop_map(Op::RemoveContainer),
        1 => reference().prop_map(Op::ContainerStatus),
        1 => made().prop_map(Op::ExecSync),
        2 => (proptest::option::of(reference()), proptest::option::of(any::<bool>()), proptest::option::of(tier()))
            .prop_map(|(id, ready, tier)| Op::ListSandboxes { id, ready, tier }),
        2 => (proptest::option::of(reference()), proptest::option::of(reference()), proptest::option::of(cstate()), proptest::option::of(tier()))
            .prop_map(|(id, sandbox, state, tier)| Op::ListContainers { id, sandbox, state, tier }),
        2 => (proptest::option::of(reference()), proptest::option::of(reference()), proptest::option::of(tier()))
            .prop_map(|(id, sandbox, tier)| Op::ListContainerStats { id, sandbox, tier }),
        1 => (proptest::option::of(reference()), proptest::option::of(tier()))
            .prop_map(|(id, tier)| Op::ListSandboxStats { id, tier }),
        1 => image().prop_map(Op::PullImage),
        1 => image().prop_map(Op::ImageStatus),
        1 => image().prop_map(Op::ListImages),
        1 => image().prop_map(Op::RemoveImage),
    ]
}

/// Sequences of 1 to `max_calls` ops.
pub fn sequence(max_calls: usize) -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(op(), 1..=max_calls.max(1))
}

impl fmt::Display for Ref {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ref::Made(n) => write!(f, "#{n}"),
            Ref::Unknown => f.write_str("unknown"),
        }
    }
}

impl fmt::Display for Img {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Img::Busybox => "busybox",
            Img::Removable => "removable",
            Img::Absent => "absent",
        })
    }
}
