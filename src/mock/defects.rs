//! Deliberate breaks of the CRI contract the mock can be built with, one per feature it
//! models, so that a test can show the cases of that feature catch a runtime that gets it
//! wrong. A mock made with [`MockRuntime::new`](super::MockRuntime::new) has none; only
//! [`MockRuntime::with_defects`](super::MockRuntime::with_defects) turns them on.

use std::collections::BTreeSet;

/// One deliberate break of the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Defect {
    /// StopContainer of an id it does not know answers NotFound, as containerd 1.6.20 does,
    /// where the contract makes the stop idempotent.
    StopUnknownContainerNotFound,
    /// A container whose process outgrows its memory limit ends with exit code 1 and reason
    /// `Error` instead of 137 and `OOMKilled`.
    OomReportedAsError,
    /// RuntimeConfig answers no Linux configuration, so no cgroup driver.
    RuntimeConfigWithoutLinux,
    /// GetContainerEvents never sends a container's started event.
    ContainerEventDropped,
    /// A started event carries the container's status as it stood before: still created.
    ContainerEventStale,
    /// ListPodSandboxMetrics answers a metric no descriptor declares.
    UndeclaredMetric,
}

impl Defect {
    /// Every defect, for tests that cover them all.
    pub const ALL: &'static [Defect] = &[
        Defect::StopUnknownContainerNotFound,
        Defect::OomReportedAsError,
        Defect::RuntimeConfigWithoutLinux,
        Defect::ContainerEventDropped,
        Defect::ContainerEventStale,
        Defect::UndeclaredMetric,
    ];
}

/// The defects one mock instance has.
pub(crate) type Defects = BTreeSet<Defect>;
