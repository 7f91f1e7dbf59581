//! What a case leaves on the host rather than on the runtime, removed with the case: its host
//! directory (log directories, volumes), the mounts made under it (propagation sources, and
//! what a container's mounts propagated back), and the cgroup parents its sandboxes asked for,
//! which runc leaves behind once their containers are gone.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use rustix::mount::{unmount, UnmountFlags};

use crate::host::mounts::{as_listed, mount_table, mounts_under, MountInfo, MOUNTINFO};

/// Unmount rounds before the sweep gives up: each round detaches every mount it finds, so
/// only mounts stacked on one another or made again while cleaning take more than one.
const UNMOUNT_ROUNDS: usize = 16;

/// The sweep's verdict on a mount table: every mount left at or under `dir` fails the case,
/// named with its filesystem type.
pub fn sweep_verdict(table: &[MountInfo], dir: &Path) -> Result<(), String> {
    let left = mounts_under(table, dir);
    if left.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = left
        .iter()
        .map(|m| format!("{} ({})", m.mount_point.display(), m.fs_type))
        .collect();
    Err(format!("cleanup left host mounts: {}", names.join(", ")))
}

/// Unmounts every mount at or under `dir`, deepest first, detaching each (`MNT_DETACH`) so a
/// file still open in it does not keep it; gives the unmounts that failed.
pub fn unmount_under(dir: &Path) -> Vec<String> {
    let dir = as_listed(dir);
    let mut errors = Vec::new();
    for _ in 0..UNMOUNT_ROUNDS {
        let table = match mount_table() {
            Ok(table) => table,
            Err(err) => {
                errors.push(format!("cannot read {MOUNTINFO}: {err}"));
                return errors;
            }
        };
        let under = mounts_under(&table, &dir);
        if under.is_empty() {
            return Vec::new();
        }
        errors.clear();
        let mut done = BTreeSet::new();
        for mount in under {
            // One unmount per path and round: a second would take the mount under it, which
            // the next round's listing shows anyway.
            if !done.insert(mount.mount_point.clone()) {
                continue;
            }
            if let Err(err) = unmount(&mount.mount_point, UnmountFlags::DETACH) {
                errors.push(format!(
                    "cannot unmount {}: {err}",
                    mount.mount_point.display()
                ));
            }
        }
        if errors.len() == done.len() {
            // Not one unmount worked; another round would fail alike.
            return errors;
        }
    }
    errors
}

/// Cleans a case's host directory: unmounts every mount under it, checks none is left (the
/// leak sweep), then removes the directory, and its run's directory once empty; says what is
/// left. With a mount still under it, the directory is not removed: a bind mount could lead
/// outside it, and removing through it would delete what it leads to.
pub fn remove_host_dir(dir: &Path) -> Result<(), String> {
    clean_dir(dir, unmount_under)?;
    if let Some(run_dir) = dir.parent() {
        // Another case may still use it; the last one out removes it.
        let _ = std::fs::remove_dir(run_dir);
    }
    Ok(())
}

/// Cleans a run's directory as [`remove_host_dir`] cleans a case's, for `clean`: a run that
/// was killed left its cases' directories, and the mounts in them, behind. True when there
/// was one to remove.
pub fn remove_run_dir(dir: &Path) -> Result<bool, String> {
    let existed = std::fs::symlink_metadata(dir).is_ok();
    clean_dir(dir, unmount_under)?;
    Ok(existed)
}

/// Unmounts with `unmount` (given, so a test can leave a mount in place), sweeps, removes.
fn clean_dir(dir: &Path, unmount: fn(&Path) -> Vec<String>) -> Result<(), String> {
    if std::fs::symlink_metadata(dir).is_err() {
        return Ok(());
    }
    let errors = unmount(dir);
    let verdict = match mount_table() {
        Ok(table) => sweep_verdict(&table, &as_listed(dir)),
        Err(err) => Err(format!(
            "cannot read {MOUNTINFO} to check for host mounts under {}: {err}",
            dir.display()
        )),
    };
    if let Err(message) = verdict {
        let mut message = format!("{message}; the host directory {} is left", dir.display());
        if !errors.is_empty() {
            message.push_str(&format!(" ({})", errors.join("; ")));
        }
        return Err(message);
    }
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(format!(
            "cleanup left the host directory {}: {err}",
            dir.display()
        )),
    }
}

/// The mount points of the node's cgroup hierarchies, from `/proc/self/mountinfo` (cgroup v1
/// controllers and the unified v2 tree alike): only mounts of a hierarchy's root. A container
/// sees its own cgroup bound where the hierarchy would be (its root field names that cgroup),
/// and the top-level cgroup parents the cases ask for are not under it.
fn cgroup_mounts() -> Vec<PathBuf> {
    let Ok(table) = mount_table() else {
        return Vec::new();
    };
    node_cgroup_mounts(table)
}

fn node_cgroup_mounts(table: Vec<MountInfo>) -> Vec<PathBuf> {
    table
        .into_iter()
        .filter(|m| (m.fs_type == "cgroup" || m.fs_type == "cgroup2") && m.root == Path::new("/"))
        .map(|m| m.mount_point)
        .collect()
}

/// Removes, in every cgroup hierarchy, the cgroup parents a case's sandboxes asked for (see
/// `World::cgroup_parent`), children first. Nothing is read when the case asked for none. A
/// cgroup that still holds a process cannot go and is reported, and so is a process that sees
/// no hierarchy of the node (a harness in a container without the node's `/sys/fs/cgroup`):
/// the runtime made the parents there, and they would be left unseen.
pub fn remove_cgroups(parents: &[String]) -> Result<(), String> {
    remove_cgroups_in(&cgroup_mounts(), parents)
}

fn remove_cgroups_in(mounts: &[PathBuf], parents: &[String]) -> Result<(), String> {
    if parents.is_empty() {
        return Ok(());
    }
    if mounts.is_empty() {
        return Err(format!(
            "cleanup cannot reach the cgroup parents {}: this process sees none of the node's cgroup hierarchies (in a container, mount the node's /sys/fs/cgroup there, as deploy/daemonset.yaml does)",
            parents.join(", ")
        ));
    }
    let mut left = Vec::new();
    for mount in mounts {
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
    use rustix::mount::{mount, mount_bind, MountFlags};

    use super::*;
    use crate::host::mounts::parse_mountinfo;
    use crate::host::mounts::tests::LISTING;

    #[test]
    fn the_sweep_fails_a_case_for_each_mount_left_under_it_and_passes_a_clean_one() {
        let table = parse_mountinfo(LISTING);
        let message = sweep_verdict(&table, Path::new("/w/r/case-1")).unwrap_err();
        assert!(
            message.starts_with("cleanup left host mounts: "),
            "{message}"
        );
        for path in [
            "src/inner (tmpfs)",
            "src/late mount (tmpfs)",
            "case-1/src (ext4)",
        ] {
            assert!(message.contains(path), "{path} missing: {message}");
        }
        assert!(!message.contains("case-10"), "{message}");
        assert_eq!(sweep_verdict(&table, Path::new("/w/r/case-2")), Ok(()));
    }

    /// True when this process may mount; otherwise prints why the test does nothing.
    fn may_mount(test: &str) -> bool {
        let root = rustix::process::geteuid().is_root();
        if !root {
            eprintln!("skipped {test}: mounting needs root");
        }
        root
    }

    fn mounted_under(dir: &Path) -> Vec<PathBuf> {
        let table = mount_table().unwrap();
        mounts_under(&table, &as_listed(dir))
            .iter()
            .map(|m| m.mount_point.clone())
            .collect()
    }

    #[test]
    fn cleanup_unmounts_stacked_and_nested_mounts_then_removes_the_directory() {
        if !may_mount("cleanup_unmounts_stacked_and_nested_mounts") {
            return;
        }
        let root = tempfile::tempdir().unwrap();
        let case = root.path().join("run").join("case-1");
        let src = case.join("src with space");
        std::fs::create_dir_all(src.join("inner")).unwrap();
        mount_bind(&src, &src).unwrap();
        let tmpfs = |at: &Path| {
            mount("tmpfs", at, "tmpfs", MountFlags::empty(), None).unwrap();
        };
        tmpfs(&src.join("inner"));
        tmpfs(&src.join("inner"));
        std::fs::write(src.join("inner/flag"), "x").unwrap();
        assert_eq!(mounted_under(&case).len(), 3);

        remove_host_dir(&case).unwrap();
        assert_eq!(mounted_under(&case), Vec::<PathBuf>::new());
        assert!(!root.path().join("run").exists());
    }

    #[test]
    fn a_mount_that_stays_keeps_the_directory_and_what_it_leads_to() {
        if !may_mount("a_mount_that_stays_keeps_the_directory") {
            return;
        }
        let root = tempfile::tempdir().unwrap();
        let outside = root.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("precious"), "keep me").unwrap();
        let case = root.path().join("run").join("case-1");
        let door = case.join("door");
        std::fs::create_dir_all(&door).unwrap();
        mount_bind(&outside, &door).unwrap();

        // An unmount that does nothing stands for one the kernel refused.
        let message = clean_dir(&case, |_| vec!["refused".to_owned()]).unwrap_err();
        assert!(
            message.starts_with("cleanup left host mounts: "),
            "{message}"
        );
        assert!(message.contains("door"), "{message}");
        assert!(message.contains("refused"), "{message}");
        assert!(case.exists());
        assert_eq!(
            std::fs::read_to_string(outside.join("precious")).unwrap(),
            "keep me"
        );

        remove_host_dir(&case).unwrap();
        assert!(!case.exists());
        assert!(outside.join("precious").exists());
    }

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

    /// The node's memory hierarchy, its unified tree, and (as a container sees them) its own
    /// cgroup bound over the hierarchy's place.
    const CGROUP_LISTING: &str = "\
30 27 0:26 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
31 27 0:27 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw
90 80 0:26 /kubepods/pod1/ctr /run/c/sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory
91 80 0:27 /kubepods/pod1/ctr /run/c/sys/fs/cgroup/unified ro,nosuid - cgroup2 cgroup2 rw
92 80 0:28 / /run/c/tmp rw - tmpfs tmpfs rw
";

    #[test]
    fn only_a_hierarchys_root_is_the_nodes() {
        assert_eq!(
            node_cgroup_mounts(parse_mountinfo(CGROUP_LISTING)),
            [
                PathBuf::from("/sys/fs/cgroup/memory"),
                PathBuf::from("/sys/fs/cgroup/unified")
            ]
        );
        // A container's view: only its own cgroup, so no hierarchy of the node.
        let inside: String = CGROUP_LISTING
            .lines()
            .skip(2)
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(
            node_cgroup_mounts(parse_mountinfo(&inside)),
            Vec::<PathBuf>::new()
        );
    }

    #[test]
    fn cgroup_parents_no_hierarchy_shows_are_reported_not_passed_over() {
        assert_eq!(remove_cgroups_in(&[], &[]), Ok(()));
        let err = remove_cgroups_in(&[], &["/crih-r-1-sb".to_owned()]).unwrap_err();
        assert!(
            err.contains("/crih-r-1-sb")
                && err.contains("sees none of the node's cgroup hierarchies"),
            "{err}"
        );
        // Where a hierarchy shows, each parent goes with its children.
        let hierarchy = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(hierarchy.path().join("crih-r-1-sb/child")).unwrap();
        let mounts = [hierarchy.path().to_owned()];
        let parents = ["/crih-r-1-sb".to_owned(), "/crih-r-2-sb".to_owned()];
        assert_eq!(remove_cgroups_in(&mounts, &parents), Ok(()));
        assert!(!hierarchy.path().join("crih-r-1-sb").exists());
    }
}
