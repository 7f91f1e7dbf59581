//! What a case leaves on the host rather than on the runtime, removed with the case: its host
//! directory (log directories, volumes) and the cgroup parents its sandboxes asked for, which
//! runc leaves behind once their containers are gone.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Removes a case's host directory, and its run's directory once empty; says what is left.
pub fn remove_host_dir(dir: &Path) -> Result<(), String> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(err) => {
            return Err(format!(
                "cleanup left the host directory {}: {err}",
                dir.display()
            ))
        }
    }
    if let Some(run_dir) = dir.parent() {
        // Another case may still use it; the last one out removes it.
        let _ = std::fs::remove_dir(run_dir);
    }
    Ok(())
}

/// The cgroup hierarchies' mount points, from `/proc/self/mountinfo` (cgroup v1 controllers
/// and the unified v2 tree alike).
fn cgroup_mounts() -> Vec<PathBuf> {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    info.lines()
        .filter_map(|line| {
            let (mount, fs) = line.split_once(" - ")?;
            let fs_type = fs.split(' ').next()?;
            if fs_type != "cgroup" && fs_type != "cgroup2" {
                return None;
            }
            mount.split(' ').nth(4).map(PathBuf::from)
        })
        .collect()
}

/// Removes, in every cgroup hierarchy, the cgroup parents a case's sandboxes asked for (see
/// `World::cgroup_parent`), children first. Nothing is read when the case asked for none. A
/// cgroup that still holds a process cannot go and is reported.
pub fn remove_cgroups(parents: &[String]) -> Result<(), String> {
    if parents.is_empty() {
        return Ok(());
    }
    let mut left = Vec::new();
    for mount in cgroup_mounts() {
        for parent in parents {
            let dir = mount.join(parent.trim_start_matches('/'));
            if dir.is_dir() {
                if let Err(err) = remove_cgroup(&dir) {
                    left.push(format!("{}: {err}", dir.display()));
                }
            }
        }
    }
    if left.is_empty() {
        Ok(())
    } else {
        Err(format!("cleanup left cgroups: {}", left.join("; ")))
    }
}

/// Removes every cgroup parent of run `run_id`'s cases (the top-level cgroups named
/// after the run's case namespaces), for `clean`: a case whose sandbox the runtime would not remove could not
/// remove its cgroup either.
pub fn remove_run_cgroups(run_id: &str) -> Result<(), String> {
    let prefix = crate::world::namespace_prefix(run_id);
    let mut parents = BTreeSet::new();
    for mount in cgroup_mounts() {
        let Ok(entries) = std::fs::read_dir(&mount) else {
            continue;
        };
        parents.extend(entries.filter_map(Result::ok).filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            name.starts_with(&prefix).then(|| format!("/{name}"))
        }));
    }
    remove_cgroups(&parents.into_iter().collect::<Vec<_>>())
}

/// Removes a cgroup and its child cgroups (a cgroup's files go with its directory).
fn remove_cgroup(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)?.filter_map(Result::ok) {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            remove_cgroup(&entry.path())?;
        }
    }
    match std::fs::remove_dir(dir) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_directory_goes_with_its_empty_run_directory() {
        let root = tempfile::tempdir().unwrap();
        let case = root.path().join("run").join("case-1");
        std::fs::create_dir_all(case.join("logs")).unwrap();
        std::fs::write(case.join("logs/a.log"), "x").unwrap();
        remove_host_dir(&case).unwrap();
        assert!(!root.path().join("run").exists());
        // Gone already is done.
        remove_host_dir(&case).unwrap();
    }

    #[test]
    fn a_case_without_cgroup_parents_touches_no_cgroup() {
        assert_eq!(remove_cgroups(&[]), Ok(()));
        assert_eq!(remove_cgroups(&["/crih-nosuchrun-0-sb".to_owned()]), Ok(()));
    }
}
