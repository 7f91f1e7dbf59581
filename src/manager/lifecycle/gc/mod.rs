//! `GarbageCollect` ported from today's kubelet (`kuberuntime_gc.go`, kubelet rules:
//! #garbagecollect): exited containers
//! by age and count per (pod UID, container name), sandboxes nothing needs any more, and the log
//! directories of deleted pods. The 2016 seed answered "not implemented"; there was nothing to be
//! faithful to, so this follows today's kubelet.
//!
//! The harness is not the node's kubelet: the caller states which pods are deleted or
//! terminated, which labels mark the objects it owns (a shared runtime holds others' too), the
//! instant the collection runs at, and log directories of its own.

mod containers;
mod logs;
mod sandboxes;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use logs::legacy_log_symlink;

use crate::cri::CallError;
use crate::manager::KubeGenericRuntimeManager;

/// The limits of one collection (the kubelet's `GCPolicy`). A negative count means no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcPolicy {
    /// A container younger than this (by creation time) is never collected.
    pub min_age: Duration,
    /// At most this many dead containers per (pod UID, container name).
    pub max_per_pod_container: i64,
    /// At most this many dead containers in all.
    pub max_containers: i64,
}

/// What the caller knows of its pods (the kubelet's pod-state provider; its test fake holds the
/// same two sets).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodStateOracle {
    /// UIDs of deleted pods: their containers, sandboxes and log directories all go.
    pub deleted: BTreeSet<String>,
    /// UIDs of terminated pods: their containers and sandboxes go when eviction of terminating
    /// pods is asked for.
    pub terminated: BTreeSet<String>,
}

impl PodStateOracle {
    /// The kubelet's `ShouldPodContentBeRemoved`: the pod is deleted.
    pub fn should_pod_content_be_removed(&self, uid: &str) -> bool {
        self.deleted.contains(uid)
    }

    /// The kubelet's `ShouldPodRuntimeBeRemoved`: the pod is terminated.
    pub fn should_pod_runtime_be_removed(&self, uid: &str) -> bool {
        self.terminated.contains(uid)
    }

    /// Whether a pod's whole runtime goes in this collection.
    fn removes_all_of(&self, uid: &str, evict_terminating_pods: bool) -> bool {
        self.should_pod_content_be_removed(uid)
            || (evict_terminating_pods && self.should_pod_runtime_be_removed(uid))
    }
}

/// The log directories a collection may clean, both the harness's own: the kubelet's defaults
/// (`/var/log/pods`, `/var/log/containers`) belong to the node's kubelet, so there are none here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GcLogDirs {
    /// Holds one directory per pod, named `<namespace>_<name>_<uid>` (or the bare UID).
    pub pod_logs_root: PathBuf,
    /// Holds the legacy per-container symlinks `<pod>_<namespace>_<container>-<id>.log`.
    pub container_log_symlinks: PathBuf,
}

/// When the collection runs and what it may touch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GcScope {
    /// The instant ages are measured from, in Unix nanoseconds (the kubelet reads its clock;
    /// a caller fixes it so a run is repeatable).
    pub now_unix_nanos: i64,
    /// Only objects carrying all these labels are listed, so others on a shared runtime are
    /// never collected (empty: everything, as the kubelet on its own node).
    pub label_selector: BTreeMap<String, String>,
}

impl GcScope {
    /// Everything the runtime lists, aged by the wall clock.
    pub fn wall_clock() -> Self {
        Self::at(wall_clock_unix_nanos())
    }

    /// Everything the runtime lists, aged from `now_unix_nanos`.
    pub fn at(now_unix_nanos: i64) -> Self {
        Self {
            now_unix_nanos,
            label_selector: BTreeMap::new(),
        }
    }

    /// The same, listing only objects that carry all of `labels`.
    pub fn owning(mut self, labels: BTreeMap<String, String>) -> Self {
        self.label_selector = labels;
        self
    }
}

/// The wall clock in Unix nanoseconds (0 before 1970).
pub fn wall_clock_unix_nanos() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// One phase of a collection that failed as a whole. Failures on single objects are logged
/// and skipped, as the kubelet does.
#[derive(Debug, thiserror::Error)]
pub enum GcPhaseError {
    /// Listing containers failed, so the container or sandbox phase did nothing.
    #[error("{phase}: listing containers failed")]
    ListContainers {
        /// `containers` or `sandboxes`.
        phase: &'static str,
        /// The CRI failure.
        #[source]
        source: CallError,
    },
    /// Listing sandboxes failed, so the sandbox phase did nothing.
    #[error("sandboxes: listing sandboxes failed")]
    ListSandboxes {
        /// The CRI failure.
        #[source]
        source: CallError,
    },
    /// The pod logs root could not be read, so no pod log directory or symlink was cleaned.
    #[error("log directories: reading the pod logs directory {} failed", path.display())]
    ReadPodLogsDirectory {
        /// The root.
        path: PathBuf,
        /// The I/O failure.
        #[source]
        source: std::io::Error,
    },
}

/// A collection in which one or more phases failed; the others still ran (today's kubelet
/// aggregates, where an early version stopped at the first failure).
#[derive(Debug, thiserror::Error)]
#[error("garbage collection failed: {}", describe(errors))]
pub struct GcError {
    /// Each failed phase, in phase order.
    pub errors: Vec<GcPhaseError>,
}

/// Each phase's failure with its causes, `; ` between phases (the aggregate's own message is
/// its members, so they are spelled out here).
fn describe(errors: &[GcPhaseError]) -> String {
    errors
        .iter()
        .map(|err| crate::errors::chain(err))
        .collect::<Vec<_>>()
        .join("; ")
}

impl KubeGenericRuntimeManager {
    /// Collects dead containers, then sandboxes, then pod log directories; every phase runs and
    /// the failed ones are returned together. `all_sources_ready` says the caller knows every
    /// pod, so deleted pods' containers and log directories may go; `evict_terminating_pods`
    /// also removes all of terminated pods' runtime. Ports `GarbageCollect`
    /// (kuberuntime_gc.go, modern; the 2016 seed answered "not implemented").
    pub async fn garbage_collect(
        &self,
        policy: &GcPolicy,
        all_sources_ready: bool,
        evict_terminating_pods: bool,
        oracle: &PodStateOracle,
        logs: &GcLogDirs,
        scope: &GcScope,
    ) -> Result<(), GcError> {
        let mut errors = Vec::new();
        let request = containers::Request {
            policy,
            all_sources_ready,
            evict_terminating_pods,
            oracle,
            logs,
            scope,
        };
        if let Err(err) = self.evict_containers(&request).await {
            errors.push(err);
        }
        if let Err(err) = self
            .evict_sandboxes(evict_terminating_pods, oracle, scope)
            .await
        {
            errors.push(err);
        }
        if let Err(err) = self
            .evict_pod_log_directories(all_sources_ready, oracle, logs)
            .await
        {
            errors.push(err);
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(GcError { errors })
        }
    }
}
