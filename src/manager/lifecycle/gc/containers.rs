//! The container phase: dead containers old enough are grouped into evict units by (pod UID,
//! container name), removed whole for pods that are gone, then trimmed to the per-unit and total
//! limits, oldest first. Ports `evictContainers` and its helpers (kuberuntime_gc.go, modern).

use std::collections::BTreeMap;

use super::{GcLogDirs, GcPhaseError, GcPolicy, GcScope, PodStateOracle};
use crate::cri::labels::POD_UID;
use crate::cri::{v1, CallError};
use crate::manager::{labels, Container, ContainerState, KubeGenericRuntimeManager, ManagerError};

/// What the container phase is asked to do.
pub(super) struct Request<'a> {
    pub policy: &'a GcPolicy,
    pub all_sources_ready: bool,
    pub evict_terminating_pods: bool,
    pub oracle: &'a PodStateOracle,
    pub logs: &'a GcLogDirs,
    pub scope: &'a GcScope,
}

/// A collectable container (the kubelet's `containerGCInfo`).
#[derive(Debug, Clone)]
struct Dead {
    id: String,
    name: String,
    created_at: i64,
    unknown: bool,
}

/// (pod UID, container name) to its dead containers, newest first. Ordered, so a run removes
/// in the same order every time (the kubelet's map has none).
type EvictUnits = BTreeMap<(String, String), Vec<Dead>>;

fn count(units: &EvictUnits) -> usize {
    units.values().map(Vec::len).sum()
}

fn newest_first(containers: &mut [Dead]) {
    // Stable, so equal times keep the unit order.
    containers.sort_by_key(|c| std::cmp::Reverse(c.created_at));
}

/// A limit from the policy as a count, `None` when negative (no limit).
fn limit(value: i64) -> Option<usize> {
    usize::try_from(value).ok()
}

impl KubeGenericRuntimeManager {
    /// Ports `evictContainers` (kuberuntime_gc.go, modern).
    pub(super) async fn evict_containers(&self, request: &Request<'_>) -> Result<(), GcPhaseError> {
        let mut units = self
            .evictable_containers(request.policy.min_age, request.scope)
            .await?;
        if request.all_sources_ready {
            let gone: Vec<(String, String)> = units
                .keys()
                .filter(|(uid, _)| {
                    request
                        .oracle
                        .removes_all_of(uid, request.evict_terminating_pods)
                })
                .cloned()
                .collect();
            for key in gone {
                if let Some(mut unit) = units.remove(&key) {
                    let all = unit.len();
                    self.remove_oldest(&mut unit, all, request.logs).await;
                }
            }
        }
        if let Some(per_unit) = limit(request.policy.max_per_pod_container) {
            self.enforce_per_unit(&mut units, per_unit, request.logs)
                .await;
        }
        if let Some(total_limit) = limit(request.policy.max_containers) {
            if count(&units) > total_limit {
                // Try to keep some of every unit first; a non-empty total means units exist.
                let per_unit = (total_limit / units.len().max(1)).max(1);
                self.enforce_per_unit(&mut units, per_unit, request.logs)
                    .await;
                let left = count(&units);
                if left > total_limit {
                    let mut flattened: Vec<Dead> = units.into_values().flatten().collect();
                    newest_first(&mut flattened);
                    self.remove_oldest(&mut flattened, left - total_limit, request.logs)
                        .await;
                }
            }
        }
        Ok(())
    }

    /// Every container that is not running and was created at or before `now - min_age`, by
    /// unit, newest first. Ports `evictableContainers` (kuberuntime_gc.go, modern).
    async fn evictable_containers(
        &self,
        min_age: std::time::Duration,
        scope: &GcScope,
    ) -> Result<EvictUnits, GcPhaseError> {
        let filter = v1::ContainerFilter {
            label_selector: scope.label_selector.clone(),
            ..Default::default()
        };
        let listed = self.list_containers(Some(filter)).await.map_err(|source| {
            GcPhaseError::ListContainers {
                phase: "containers",
                source,
            }
        })?;
        let min_age = i64::try_from(min_age.as_nanos()).unwrap_or(i64::MAX);
        let newest_collectable = scope.now_unix_nanos.saturating_sub(min_age);
        let mut units = EvictUnits::new();
        for container in listed {
            let state = ContainerState::from_cri_container(container.state);
            if state == ContainerState::Running || container.created_at > newest_collectable {
                continue;
            }
            let name = container
                .metadata
                .as_ref()
                .map(|m| m.name.clone())
                .unwrap_or_default();
            let uid = labels::get(&container.labels, POD_UID);
            units.entry((uid, name.clone())).or_default().push(Dead {
                id: container.id,
                name,
                created_at: container.created_at,
                unknown: state == ContainerState::Unknown,
            });
        }
        for unit in units.values_mut() {
            newest_first(unit);
        }
        Ok(units)
    }

    /// Trims every unit to `keep`, oldest first. Ports `enforceMaxContainersPerEvictUnit`.
    async fn enforce_per_unit(&self, units: &mut EvictUnits, keep: usize, logs: &GcLogDirs) {
        for unit in units.values_mut() {
            let excess = unit.len().saturating_sub(keep);
            if excess > 0 {
                self.remove_oldest(unit, excess, logs).await;
            }
        }
    }

    /// Removes the last `n` of a newest-first list and drops them from it, whether or not the
    /// removal worked (the kubelet only logs a failure). An UNKNOWN container may still run, so
    /// it is killed first, its spec restored from its labels; a failed kill spares it. Ports
    /// `removeOldestN` (kuberuntime_gc.go, modern).
    async fn remove_oldest(&self, containers: &mut Vec<Dead>, n: usize, logs: &GcLogDirs) {
        let keep = containers.len().saturating_sub(n);
        for dead in containers.drain(keep..).rev() {
            if dead.unknown {
                if let Err(err) = self.kill_unknown(&dead).await {
                    tracing::warn!(container = %dead.id, %err, "killing a container in unknown state failed; not removing it");
                    continue;
                }
            }
            if let Err(err) = self.remove_container_and_logs(&dead.id, logs).await {
                tracing::warn!(container = %dead.id, %err, "removing a dead container failed");
            }
        }
    }

    /// The manager's kill of one container with no pod spec: the grace period from its
    /// annotations, then StopContainer. NotFound counts as stopped, as in today's kubelet.
    async fn kill_unknown(&self, dead: &Dead) -> Result<(), ManagerError> {
        let container = Container {
            id: self.container_id(&dead.id),
            name: dead.name.clone(),
            state: ContainerState::Unknown,
            ..Default::default()
        };
        let grace = self.container_grace(None, &container, None).await?;
        match self.client.stop_container(&dead.id, grace).await {
            Err(err) if !err.is_not_found() => Err(err.into()),
            _ => Ok(()),
        }
    }

    /// Removes a container's logs, then the container. Ports `removeContainer` and
    /// `removeContainerLog` (kuberuntime_container.go, modern), with two differences: one
    /// ContainerStatus serves both log steps (the kubelet's log manager asks again), and
    /// rotated logs are only removed under the harness's pod logs root, never elsewhere on the
    /// host. A failure before RemoveContainer keeps the container, so a later run retries.
    async fn remove_container_and_logs(
        &self,
        id: &str,
        logs: &GcLogDirs,
    ) -> Result<(), RemoveError> {
        let answer = self.client.container_status(id).await?;
        let status = answer.status.ok_or(RemoveError::NoStatus)?;
        super::logs::remove_rotated_logs(&status.log_path, &logs.pod_logs_root)
            .map_err(RemoveError::Logs)?;
        let (_, pod_name, pod_namespace) = labels::pod_identity(&status.labels);
        let symlink = logs
            .container_log_symlinks
            .join(super::logs::legacy_log_symlink(
                id,
                &labels::container_name(&status.labels),
                &pod_name,
                &pod_namespace,
            ));
        match std::fs::remove_file(&symlink) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                return Err(RemoveError::Symlink {
                    path: symlink,
                    source: err,
                })
            }
            _ => {}
        }
        self.client.remove_container(id).await?;
        Ok(())
    }
}

/// Why one dead container was not removed (logged, never returned: the kubelet goes on).
#[derive(Debug, thiserror::Error)]
enum RemoveError {
    /// A CRI call failed.
    #[error(transparent)]
    Call(#[from] CallError),
    /// ContainerStatus answered without a status.
    #[error("ContainerStatus answered without a status")]
    NoStatus,
    /// Its rotated logs could not be removed.
    #[error("removing its rotated logs failed")]
    Logs(#[source] std::io::Error),
    /// Its legacy log symlink could not be removed.
    #[error("removing its legacy log symlink {} failed", path.display())]
    Symlink {
        /// The symlink.
        path: std::path::PathBuf,
        /// The I/O failure.
        #[source]
        source: std::io::Error,
    },
}
