//! What a case leaves on the host rather than on the runtime, removed with the case: its host
//! directory (log directories, volumes) and the cgroup parents its sandboxes asked for, which
//! runc leaves behind once their containers are gone.

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

/// Removes, in every cgroup hierarchy, the top-level cgroups named `PREFIX-*` (a case's
/// sandboxes' parents; see `World::cgroup_parent`), children first. A cgroup that still holds
/// a process cannot go and is reported.
pub fn remove_cgroups(prefix: &str) -> Result<(), String> {
    let wanted = format!("{prefix}-");
    let mut left = Vec::new();
    for mount in cgroup_mounts() {
        let Ok(entries) = std::fs::read_dir(&mount) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let ours = entry
                .file_name()
                .to_str()
                .is_some_and(|name| name.starts_with(&wanted));
            if ours && entry.path().is_dir() {
                if let Err(err) = remove_cgroup(&entry.path()) {
                    left.push(format!("{}: {err}", entry.path().display()));
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
    fn no_cgroup_of_an_unknown_case_is_touched() {
        assert_eq!(remove_cgroups("crih-nosuchrun-0"), Ok(()));
    }
}
