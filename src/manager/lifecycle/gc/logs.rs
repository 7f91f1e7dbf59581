//! The log phase: with all sources ready, the pod log directories of deleted pods go; always,
//! legacy container-log symlinks whose target is gone go unless their container may still be
//! rotating its log. Ports `evictPodLogsDirectories` (kuberuntime_gc.go) and the log-name helpers
//! of `kuberuntime_container.go`/`helpers.go` (modern), on the harness's own directories.

use std::io::ErrorKind;
use std::path::{Component, Path};

use super::{GcLogDirs, GcPhaseError, PodStateOracle};
use crate::cri::v1;
use crate::manager::KubeGenericRuntimeManager;

/// The longest file name ext4 takes.
const EXT4_MAX_FILE_NAME_LEN: usize = 255;

/// The legacy symlinks' suffix.
const LEGACY_LOG_SUFFIX: &str = ".log";

/// The shortest container id a runtime resolves.
const SHORTEST_CONTAINER_ID: usize = 6;

impl KubeGenericRuntimeManager {
    /// Ports `evictPodLogsDirectories` (kuberuntime_gc.go, modern). Entries are handled in name
    /// order, which is what Go's ReadDir and Glob give too.
    pub(super) async fn evict_pod_log_directories(
        &self,
        all_sources_ready: bool,
        oracle: &PodStateOracle,
        logs: &GcLogDirs,
    ) -> Result<(), GcPhaseError> {
        if all_sources_ready {
            let root = &logs.pod_logs_root;
            let names =
                sorted_names(root).map_err(|source| GcPhaseError::ReadPodLogsDirectory {
                    path: root.clone(),
                    source,
                })?;
            for name in names {
                if !oracle.should_pod_content_be_removed(pod_uid_of_log_directory(&name)) {
                    continue;
                }
                let path = root.join(&name);
                let removed = if path.is_dir() {
                    std::fs::remove_dir_all(&path)
                } else {
                    std::fs::remove_file(&path)
                };
                if let Err(err) = removed {
                    tracing::warn!(path = %path.display(), %err, "removing a pod log directory failed");
                }
            }
        }
        // The kubelet ignores a failed glob: no symlinks to look at.
        let symlinks = sorted_names(&logs.container_log_symlinks).unwrap_or_default();
        for name in symlinks.iter().filter(|n| n.ends_with(LEGACY_LOG_SUFFIX)) {
            let path = logs.container_log_symlinks.join(name);
            // Only dangling links: a link whose log is still there is left alone.
            match std::fs::metadata(&path) {
                Err(err) if err.kind() == ErrorKind::NotFound => {}
                _ => continue,
            }
            if let Some(id) = container_id_from_legacy_log_symlink(name) {
                match self.client.container_status(id).await {
                    // The kubelet removes the link when the status cannot be had, even when
                    // the container is merely unreachable (its TODO on NotFound).
                    Err(err) => {
                        tracing::debug!(container = %id, %err, "no status for a dangling log symlink's container")
                    }
                    Ok(answer) => match answer.status {
                        None => continue,
                        // While it has not exited, the link may dangle only because its log
                        // is being rotated.
                        Some(status)
                            if status.state != v1::ContainerState::ContainerExited as i32 =>
                        {
                            continue
                        }
                        Some(_) => {}
                    },
                }
            }
            if let Err(err) = std::fs::remove_file(&path) {
                tracing::warn!(path = %path.display(), %err, "removing a dangling log symlink failed");
            }
        }
        Ok(())
    }
}

/// The names in a directory, sorted.
fn sorted_names(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        names.push(entry?.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    Ok(names)
}

/// The pod UID of a pod log directory: what follows the last `_` (`<ns>_<name>_<uid>`, today's
/// layout), or the whole name (`<uid>`, the 2016 one). Ports `parsePodUIDFromLogsDirectory`.
pub(super) fn pod_uid_of_log_directory(name: &str) -> &str {
    name.rsplit_once('_').map_or(name, |(_, uid)| uid)
}

/// The legacy symlink's file name of a container, `<pod>_<namespace>_<container>-<id>.log`, cut
/// to what ext4 takes. Ports `legacyLogSymlink`/`logSymlink` (kuberuntime_container.go, modern).
pub fn legacy_log_symlink(
    container_id: &str,
    container_name: &str,
    pod_name: &str,
    pod_namespace: &str,
) -> String {
    let mut name = format!("{pod_name}_{pod_namespace}_{container_name}-{container_id}");
    let most = EXT4_MAX_FILE_NAME_LEN - LEGACY_LOG_SUFFIX.len();
    if name.len() > most {
        let mut cut = most;
        // A name is bytes to ext4; a Rust string must be cut on a character boundary.
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        name.truncate(cut);
    }
    name.push_str(LEGACY_LOG_SUFFIX);
    name
}

/// The container id in a legacy symlink's name: what follows the last `-`, less `.log`, at
/// least six characters. Ports `getContainerIDFromLegacyLogSymlink` (helpers.go, modern), on
/// the file name (the kubelet splits the whole path; only the last part counts either way).
pub(super) fn container_id_from_legacy_log_symlink(name: &str) -> Option<&str> {
    let last = name.rsplit('-').next().unwrap_or(name);
    let id = last.strip_suffix(LEGACY_LOG_SUFFIX)?;
    (id.len() >= SHORTEST_CONTAINER_ID).then_some(id)
}

/// Removes a container's log and its rotated copies (`<log_path>*`, as the kubelet's log
/// manager does), but only under `root`: a log elsewhere is not the harness's to remove.
pub(super) fn remove_rotated_logs(log_path: &str, root: &Path) -> std::io::Result<()> {
    let path = Path::new(log_path);
    let inside = path.is_absolute()
        && path.starts_with(root)
        && !path.components().any(|c| c == Component::ParentDir);
    let (Some(dir), Some(prefix)) = (path.parent(), path.file_name()) else {
        return Ok(());
    };
    if !inside {
        return Ok(());
    }
    let prefix = prefix.to_string_lossy();
    let names = match sorted_names(dir) {
        Ok(names) => names,
        Err(err) if err.kind() == ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(err),
    };
    for name in names.iter().filter(|n| n.starts_with(prefix.as_ref())) {
        match std::fs::remove_file(dir.join(name)) {
            Err(err) if err.kind() != ErrorKind::NotFound => return Err(err),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
pub(super) mod tests_support {
    //! Reading a directory back in tests.

    /// The names in `dir`, sorted.
    pub(in crate::manager::lifecycle::gc) fn names(dir: &std::path::Path) -> Vec<String> {
        super::sorted_names(dir).unwrap_or_default()
    }
}
