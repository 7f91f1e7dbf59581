//! What a case leaves on the host rather than on the runtime, removed with the case: its host
//! directory (log directories, volumes), the mounts made under it (propagation sources, and
//! what a container's mounts propagated back), and the cgroup parents its sandboxes asked for,
//! which runc leaves behind once their containers are gone.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use rustix::mount::{unmount, UnmountFlags};

/// Where the kernel lists the mounts the harness's own mount namespace sees.
const MOUNTINFO: &str = "/proc/self/mountinfo";

/// Unmount rounds before the sweep gives up: each round detaches every mount it finds, so
/// only mounts stacked on one another or made again while cleaning take more than one.
const UNMOUNT_ROUNDS: usize = 16;

/// One line of `/proc/self/mountinfo`, the fields the harness reads (proc(5)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountInfo {
    /// The mount's id.
    pub id: u32,
    /// Its parent mount's id.
    pub parent: u32,
    /// Where it is mounted, its octal escapes (`\040` for a space) undone.
    pub mount_point: PathBuf,
    /// The optional fields: `shared:N`, `master:N`, `propagate_from:N`, `unbindable`; none
    /// for a private mount.
    pub optional: Vec<String>,
    /// The filesystem type (`tmpfs`, `ext4`, `cgroup2`).
    pub fs_type: String,
}

impl MountInfo {
    /// Its propagation as mount(8) names it: `shared`, `slave`, `shared,slave`, `unbindable`
    /// or `private`.
    pub fn propagation(&self) -> String {
        let has = |prefix: &str| self.optional.iter().any(|o| o.starts_with(prefix));
        let kinds: Vec<&str> = [
            ("shared:", "shared"),
            ("master:", "slave"),
            ("unbindable", "unbindable"),
        ]
        .into_iter()
        .filter(|(prefix, _)| has(prefix))
        .map(|(_, name)| name)
        .collect();
        if kinds.is_empty() {
            "private".to_owned()
        } else {
            kinds.join(",")
        }
    }
}

/// Undoes the kernel's octal escapes in a mountinfo path (space, tab, newline and backslash
/// are written `\040`, `\011`, `\012`, `\134`); anything else is kept as written.
fn unescape(field: &str) -> PathBuf {
    use std::os::unix::ffi::OsStringExt as _;
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let octal = bytes
            .get(at + 1..at + 4)
            .filter(|digits| bytes[at] == b'\\' && digits.iter().all(|d| (b'0'..=b'7').contains(d)))
            .and_then(|digits| u8::from_str_radix(std::str::from_utf8(digits).ok()?, 8).ok());
        match octal {
            Some(byte) => {
                out.push(byte);
                at += 4;
            }
            None => {
                out.push(bytes[at]);
                at += 1;
            }
        }
    }
    PathBuf::from(std::ffi::OsString::from_vec(out))
}

/// Parses mountinfo text; a line that does not have the kernel's shape is left out.
pub fn parse_mountinfo(text: &str) -> Vec<MountInfo> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<MountInfo> {
    // `ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS`
    let (mount, fs) = line.split_once(" - ")?;
    let mut fields = mount.split(' ');
    let id = fields.next()?.parse().ok()?;
    let parent = fields.next()?.parse().ok()?;
    let _device = fields.next()?;
    let _root = fields.next()?;
    let mount_point = unescape(fields.next()?);
    let _options = fields.next()?;
    let optional = fields
        .filter(|f| !f.is_empty())
        .map(str::to_owned)
        .collect();
    let fs_type = fs.split(' ').next().filter(|t| !t.is_empty())?.to_owned();
    Some(MountInfo {
        id,
        parent,
        mount_point,
        optional,
        fs_type,
    })
}

/// The mounts the harness's mount namespace sees now.
pub fn mount_table() -> std::io::Result<Vec<MountInfo>> {
    std::fs::read_to_string(MOUNTINFO).map(|text| parse_mountinfo(&text))
}

/// The path as the kernel writes it in mountinfo: absolute, symbolic links resolved (a work
/// directory under a linked `/tmp` is listed under the link's target).
fn as_listed(dir: &Path) -> PathBuf {
    dir.canonicalize()
        .unwrap_or_else(|_| std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()))
}

/// The mounts at `dir` or below it, deepest first; of mounts stacked on one path, the one on
/// top (listed last) first.
pub fn mounts_under<'a>(table: &'a [MountInfo], dir: &Path) -> Vec<&'a MountInfo> {
    let mut under: Vec<(usize, &MountInfo)> = table
        .iter()
        .enumerate()
        .filter(|(_, m)| m.mount_point.starts_with(dir))
        .collect();
    under.sort_by(|(a_at, a), (b_at, b)| {
        let depth = |m: &MountInfo| m.mount_point.components().count();
        depth(b).cmp(&depth(a)).then(b_at.cmp(a_at))
    });
    under.into_iter().map(|(_, m)| m).collect()
}

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

/// The cgroup hierarchies' mount points, from `/proc/self/mountinfo` (cgroup v1 controllers
/// and the unified v2 tree alike).
fn cgroup_mounts() -> Vec<PathBuf> {
    let Ok(table) = mount_table() else {
        return Vec::new();
    };
    table
        .into_iter()
        .filter(|m| m.fs_type == "cgroup" || m.fs_type == "cgroup2")
        .map(|m| m.mount_point)
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
    use rstest::rstest;
    use rustix::mount::{mount, mount_bind, MountFlags};

    use super::*;

    /// Mountinfo as a kernel writes it: a private root, a shared bind with a space in its
    /// path, a slave tmpfs stacked twice on one path, a sibling whose name extends a case's.
    const LISTING: &str = "\
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
60 27 254:0 /w/r/case-1/src /w/r/case-1/src rw,relatime shared:5 - ext4 /dev/vda rw
61 60 0:50 / /w/r/case-1/src/late\\040mount rw,relatime shared:6 - tmpfs tmpfs rw
62 60 0:51 / /w/r/case-1/src/inner rw master:5 - tmpfs none rw
63 62 0:52 / /w/r/case-1/src/inner rw shared:7 master:5 - tmpfs none rw
64 27 0:53 / /w/r/case-10 rw - tmpfs tmpfs rw
not a mountinfo line
";

    #[test]
    fn mountinfo_lines_give_their_ids_paths_propagation_and_type() {
        let table = parse_mountinfo(LISTING);
        assert_eq!(table.len(), 6, "{table:#?}");
        let late = &table[2];
        assert_eq!((late.id, late.parent), (61, 60));
        assert_eq!(late.mount_point, Path::new("/w/r/case-1/src/late mount"));
        assert_eq!(late.fs_type, "tmpfs");
        let propagations: Vec<String> = table.iter().map(MountInfo::propagation).collect();
        assert_eq!(
            propagations,
            [
                "private",
                "shared",
                "shared",
                "slave",
                "shared,slave",
                "private"
            ]
        );
    }

    #[rstest]
    #[case::space("/a\\040b", "/a b")]
    #[case::tab_newline_backslash("/a\\011\\012\\134", "/a\t\n\\")]
    #[case::not_octal("/a\\x40", "/a\\x40")]
    #[case::cut_short("/a\\04", "/a\\04")]
    #[case::plain("/plain", "/plain")]
    fn octal_escapes_in_paths_are_undone(#[case] field: &str, #[case] path: &str) {
        assert_eq!(unescape(field), Path::new(path));
    }

    #[test]
    fn mounts_under_a_case_come_deepest_first_and_the_top_of_a_stack_before_what_it_covers() {
        let table = parse_mountinfo(LISTING);
        let ids: Vec<u32> = mounts_under(&table, Path::new("/w/r/case-1"))
            .iter()
            .map(|m| m.id)
            .collect();
        // case-10 is not under case-1, though its name starts alike.
        assert_eq!(ids, [63, 62, 61, 60]);
    }

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
}
