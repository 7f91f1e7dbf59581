//! The sandbox phase: a sandbox is active while READY or while any container still names it;
//! per pod the newest sandbox stays unless the pod is gone, and of the rest only inactive ones
//! are removed. Ports `evictSandboxes` and its helpers (kuberuntime_gc.go, modern).

use std::collections::{BTreeMap, BTreeSet};

use super::{GcPhaseError, GcScope, PodStateOracle};
use crate::cri::v1;
use crate::manager::KubeGenericRuntimeManager;

/// A sandbox as the phase sees it (the kubelet's `sandboxGCInfo`).
#[derive(Debug)]
struct Candidate {
    id: String,
    created_at: i64,
    active: bool,
}

impl KubeGenericRuntimeManager {
    /// Ports `evictSandboxes` (kuberuntime_gc.go, modern). Unlike the container phase it does
    /// not wait for all sources: a sandbox is only ever removed once nothing uses it.
    pub(super) async fn evict_sandboxes(
        &self,
        evict_terminating_pods: bool,
        oracle: &PodStateOracle,
        scope: &GcScope,
    ) -> Result<(), GcPhaseError> {
        let containers = self
            .list_containers(Some(v1::ContainerFilter {
                label_selector: scope.label_selector.clone(),
                ..Default::default()
            }))
            .await
            .map_err(|source| GcPhaseError::ListContainers {
                phase: "sandboxes",
                source,
            })?;
        let sandboxes = self
            .list_sandboxes(Some(v1::PodSandboxFilter {
                label_selector: scope.label_selector.clone(),
                ..Default::default()
            }))
            .await
            .map_err(|source| GcPhaseError::ListSandboxes { source })?;
        let referenced: BTreeSet<String> =
            containers.into_iter().map(|c| c.pod_sandbox_id).collect();
        let mut by_pod: BTreeMap<String, Vec<Candidate>> = BTreeMap::new();
        for sandbox in sandboxes {
            let uid = sandbox
                .metadata
                .as_ref()
                .map(|m| m.uid.clone())
                .unwrap_or_default();
            let active = sandbox.state == v1::PodSandboxState::SandboxReady as i32
                || referenced.contains(&sandbox.id);
            by_pod.entry(uid).or_default().push(Candidate {
                id: sandbox.id,
                created_at: sandbox.created_at,
                active,
            });
        }
        for (uid, mut candidates) in by_pod {
            let n = if oracle.removes_all_of(&uid, evict_terminating_pods) {
                candidates.len()
            } else {
                // The newest stays for a pod that may still need it.
                candidates.len().saturating_sub(1)
            };
            self.remove_oldest_sandboxes(&mut candidates, n).await;
        }
        Ok(())
    }

    /// Removes the inactive ones among the oldest `n`. Ports `removeOldestNSandboxes`; it
    /// always sorts (the kubelet skips the sort when all go, leaving its list order).
    async fn remove_oldest_sandboxes(&self, candidates: &mut [Candidate], n: usize) {
        candidates.sort_by_key(|c| std::cmp::Reverse(c.created_at));
        let keep = candidates.len().saturating_sub(n);
        for candidate in candidates[keep..].iter().rev() {
            if !candidate.active {
                self.remove_sandbox(&candidate.id).await;
            }
        }
    }

    /// Stops, then removes a sandbox; a failed stop spares it, a failed removal is only
    /// logged. Ports `removeSandbox` (kuberuntime_gc.go, modern).
    async fn remove_sandbox(&self, id: &str) {
        if let Err(err) = self.client.stop_pod_sandbox(id).await {
            tracing::warn!(sandbox = %id, %err, "stopping a sandbox before its removal failed");
            return;
        }
        if let Err(err) = self.client.remove_pod_sandbox(id).await {
            tracing::warn!(sandbox = %id, %err, "removing a sandbox failed");
        }
    }
}
