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
    /// A pod's user namespace is ignored: its containers run in the node's, so their uid_map
    /// shows the node's identity mapping rather than the pod's.
    UsernsIgnored,
    /// A pod user namespace whose mapping leaves container id 0 unmapped is taken.
    UnmappedUsernsRootAccepted,
    /// SupplementalGroupsPolicy Strict is read as Merge: the image's groups for the user join
    /// anyway.
    StrictGroupsMerged,
    /// ContainerStatus.user leaves out the supplemental groups.
    ContainerUserGroupsMissing,
    /// Every seccomp profile is ignored: containers run unconfined.
    SeccompIgnored,
}

impl Defect {
    /// Every defect, for tests that cover them all.
    pub const ALL: &'static [Defect] = &[
        Defect::StopUnknownContainerNotFound,
        Defect::UsernsIgnored,
        Defect::UnmappedUsernsRootAccepted,
        Defect::StrictGroupsMerged,
        Defect::ContainerUserGroupsMissing,
        Defect::SeccompIgnored,
    ];
}

/// The defects one mock instance has.
pub(crate) type Defects = BTreeSet<Defect>;
