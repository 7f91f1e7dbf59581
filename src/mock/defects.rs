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
    /// A recursive read-only mount is made read-only only at its top, as a plain read-only
    /// mount: a mount under its host path stays writable.
    RecursiveReadOnlyShallow,
    /// A recursive read-only mount with a propagation other than private is accepted.
    RecursiveReadOnlyAnyPropagation,
    /// An image volume is writable, and one asked for with readonly false is created.
    ImageVolumeWritable,
    /// An image volume is mounted noexec: the image's binaries there do not run.
    ImageVolumeNoexec,
    /// An image volume's sub path is ignored: the image's root is mounted instead, and a sub
    /// path the image lacks is not refused.
    ImageSubPathIgnored,
}

impl Defect {
    /// Every defect, for tests that cover them all.
    pub const ALL: &'static [Defect] = &[
        Defect::StopUnknownContainerNotFound,
        Defect::RecursiveReadOnlyShallow,
        Defect::RecursiveReadOnlyAnyPropagation,
        Defect::ImageVolumeWritable,
        Defect::ImageVolumeNoexec,
        Defect::ImageSubPathIgnored,
    ];
}

/// The defects one mock instance has.
pub(crate) type Defects = BTreeSet<Defect>;
