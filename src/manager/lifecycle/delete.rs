//! Deleting a pod wholly, as the kubelet does once the API server has removed it: KillPod of
//! whatever still runs, then GarbageCollect of every dead container, sandbox and log directory
//! of the pod (none is kept: the pod is gone), then its volume directory. `pod delete` and the
//! SyncPod benchmark both delete this way, and both check what is left.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use super::{k8s, pod, GcError, GcLogDirs, GcPolicy, GcScope, PodStateOracle, SyncOptions};
use crate::cri::labels::POD_UID;
use crate::manager::{KubeGenericRuntimeManager, ManagerError, PodSyncResult};

/// What deleting a pod did, and what it left behind.
#[derive(Debug)]
pub struct PodDeletion {
    /// The kill's step results; none when nothing of the pod was on the runtime.
    pub killed: Option<PodSyncResult>,
    /// Why garbage collection fell short, if it did.
    pub collect_error: Option<GcError>,
    /// The pod's volume directory, had it not been removed, and why.
    pub volumes_error: Option<(PathBuf, std::io::Error)>,
    /// The pod's sandboxes still on the runtime afterwards.
    pub sandboxes_left: usize,
    /// The pod's containers still on the runtime afterwards.
    pub containers_left: usize,
}

impl PodDeletion {
    /// Whether every step went through and nothing of the pod is left.
    pub fn is_complete(&self) -> bool {
        self.killed.as_ref().is_none_or(|k| k.error().is_none())
            && self.collect_error.is_none()
            && self.volumes_error.is_none()
            && self.sandboxes_left == 0
            && self.containers_left == 0
    }
}

impl KubeGenericRuntimeManager {
    /// Deletes `pod` wholly: kills what runs, collects all of it that is dead (scoped to its
    /// uid label, so nothing else on a shared runtime is touched), removes its volumes under
    /// `options.volumes_root`, then reads its status to count what is left. Every step runs even
    /// when an earlier one fell short; the CRI errors of the listing and the final status read
    /// fail the whole call.
    pub async fn delete_pod(
        &self,
        pod: &k8s::Pod,
        options: &SyncOptions,
        logs: &GcLogDirs,
    ) -> Result<PodDeletion, ManagerError> {
        let uid = pod::uid(pod).to_owned();
        let running = self.get_pods(true).await?.into_iter().find(|p| p.id == uid);
        let killed = match running {
            Some(running) => Some(self.kill_pod(None, &running, None).await),
            None => None,
        };
        // The pod is deleted: no instance is kept, however young.
        let policy = GcPolicy {
            min_age: Duration::ZERO,
            max_per_pod_container: 0,
            max_containers: -1,
        };
        let oracle = PodStateOracle {
            deleted: BTreeSet::from([uid.clone()]),
            terminated: BTreeSet::from([uid.clone()]),
        };
        let scope =
            GcScope::wall_clock().owning(BTreeMap::from([(POD_UID.to_owned(), uid.clone())]));
        let collect_error = self
            .garbage_collect(&policy, true, true, &oracle, logs, &scope)
            .await
            .err();
        let volumes = options.volumes_root.join(&uid);
        let volumes_error = match std::fs::remove_dir_all(&volumes) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => Some((volumes, err)),
            _ => None,
        };
        let left = self
            .get_pod_status(&uid, pod::name(pod), pod::namespace(pod))
            .await?;
        Ok(PodDeletion {
            killed,
            collect_error,
            volumes_error,
            sandboxes_left: left.sandbox_statuses.len(),
            containers_left: left.container_statuses.len(),
        })
    }
}
