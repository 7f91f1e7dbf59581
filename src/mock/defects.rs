//! Deliberate breaks of the CRI contract the mock can be built with, one per feature it
//! models, so that a test can show the cases of that feature catch a runtime that gets it
//! wrong. A mock made with [`MockRuntime::new`](super::MockRuntime::new) has none; only
//! [`MockRuntime::with_defects`](super::MockRuntime::with_defects) turns them on.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};

/// One deliberate break of the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Defect {
    /// StopContainer of an id it does not know answers NotFound, as containerd 1.6.20 does,
    /// where the contract makes the stop idempotent.
    StopUnknownContainerNotFound,
    /// RemoveImage of an image the runtime does not have answers NotFound, where the contract
    /// makes the removal idempotent.
    RemoveAbsentImageNotFound,
    /// A RemoveImage that arrives while another removal of the same image is under way fails
    /// (the race critest's simultaneous-removal spec guards against).
    ConcurrentRemoveImageFails,
    /// ListImages still lists an image after RemoveImage of it returned.
    RemovedImageStillListed,
    /// ContainerStatus and ListContainers name another id than the image's (the image's
    /// manifest digest), where CRI 1.30 makes `image_id` the id PullImage answered.
    ContainerImageIdDiffers,
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
    /// UpdateContainerResources is accepted, but ContainerStatus.resources keeps reporting
    /// what the container was created with.
    UpdatedResourcesNotReported,
    /// ListContainerStats ignores the filter's label selector: every container answers.
    ListContainerStatsIgnoresLabelFilter,
    /// ListPodSandbox drops the filter's state: sandboxes of every state answer.
    ListSandboxDropsStateFilter,
    /// StopContainer of a container whose process has exited fails, in every other mock made
    /// with this defect in the process (the first, the third, ...): the same calls break the
    /// contract in one run and not in the next, as a runtime's race does.
    RacyStopOfExitedContainer,
    /// A streaming list sends its first item once more, in a message of its own at the end.
    StreamItemRepeated,
    /// UpdatePodSandboxResources answers that the sandbox is not running, even for a READY one.
    SandboxResourcesRefused,
    /// ImageFsInfo answers its image filesystem without the bytes it uses.
    ImageFsWithoutUsage,
    /// CheckpointContainer answers success and writes no archive.
    CheckpointArchiveMissing,
    /// StopPodSandbox of a host-network sandbox stops its containers and answers success, but
    /// the sandbox is still reported READY: the stop answers before the state changes, as
    /// containerd 2.1 now and then does, and here the state never catches up until removal.
    StoppedHostNetworkSandboxStaysReady,
}

impl Defect {
    /// Every defect, for tests that cover them all.
    pub const ALL: &'static [Defect] = &[
        Defect::StopUnknownContainerNotFound,
        Defect::RemoveAbsentImageNotFound,
        Defect::ConcurrentRemoveImageFails,
        Defect::RemovedImageStillListed,
        Defect::ContainerImageIdDiffers,
        Defect::RecursiveReadOnlyShallow,
        Defect::RecursiveReadOnlyAnyPropagation,
        Defect::ImageVolumeWritable,
        Defect::ImageVolumeNoexec,
        Defect::ImageSubPathIgnored,
        Defect::OomReportedAsError,
        Defect::RuntimeConfigWithoutLinux,
        Defect::ContainerEventDropped,
        Defect::ContainerEventStale,
        Defect::UndeclaredMetric,
        Defect::UsernsIgnored,
        Defect::UnmappedUsernsRootAccepted,
        Defect::StrictGroupsMerged,
        Defect::ContainerUserGroupsMissing,
        Defect::SeccompIgnored,
        Defect::UpdatedResourcesNotReported,
        Defect::ListContainerStatsIgnoresLabelFilter,
        Defect::ListSandboxDropsStateFilter,
        Defect::RacyStopOfExitedContainer,
        Defect::StreamItemRepeated,
        Defect::SandboxResourcesRefused,
        Defect::ImageFsWithoutUsage,
        Defect::CheckpointArchiveMissing,
        Defect::StoppedHostNetworkSandboxStaysReady,
    ];

    /// The defects a new mock made with `asked` has: [`Defect::RacyStopOfExitedContainer`]
    /// only in every other such mock.
    pub(crate) fn of_instance(asked: impl IntoIterator<Item = Defect>) -> Defects {
        let mut defects: Defects = asked.into_iter().collect();
        if defects.contains(&Defect::RacyStopOfExitedContainer)
            && RACY_INSTANCES.fetch_add(1, Ordering::Relaxed) % 2 == 1
        {
            defects.remove(&Defect::RacyStopOfExitedContainer);
        }
        defects
    }
}

/// Mocks made with [`Defect::RacyStopOfExitedContainer`] so far in this process.
static RACY_INSTANCES: AtomicU64 = AtomicU64::new(0);

/// The defects one mock instance has.
pub(crate) type Defects = BTreeSet<Defect>;
