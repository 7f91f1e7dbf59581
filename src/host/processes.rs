//! The host's processes, read from `/proc`: which process is the first one of a container,
//! found by the container's id in the processes' cgroup paths.
//!
//! CRI carries no process id. A runtime may name one in its verbose status (containerd and
//! CRI-O do, in a shape of their own), but one that does not still runs the container's
//! processes on this host in a cgroup whose path holds the container's id: containerd's
//! `cri-containerd-ID.scope` or `/kubepods/.../ID`, CRI-O's `crio-ID.scope`. A runtime on
//! another host, or one that runs containers in a VM, leaves nothing to find here.

use std::path::Path;

/// One process as `/proc/PID/stat` gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Process {
    /// Its id.
    pid: u32,
    /// Its parent's id.
    ppid: u32,
    /// When it started, in clock ticks after boot.
    start: u64,
}

/// The first process of the container whose id is `container_id`: of the host's processes
/// whose cgroup path holds the id, the earliest started whose parent is not one of them
/// (processes an exec starts are children of the runtime's shim too, but start later).
/// `None` when no process has such a cgroup, or `/proc` cannot be read.
pub fn first_process_of(container_id: &str) -> Option<u32> {
    if container_id.is_empty() {
        return None;
    }
    let members: Vec<Process> = std::fs::read_dir("/proc")
        .ok()?
        .filter_map(Result::ok)
        // Processes only: `/proc/self` is one of them again.
        .filter(|entry| {
            entry
                .file_name()
                .to_str()
                .is_some_and(|name| name.parse::<u32>().is_ok())
        })
        .map(|entry| entry.path())
        .filter(|proc| in_cgroup_of(proc, container_id))
        .filter_map(|proc| parse_stat(&std::fs::read_to_string(proc.join("stat")).ok()?))
        .collect();
    first_of(&members)
}

/// Whether the process at `proc` (its `/proc/PID` directory) is in a cgroup whose path holds
/// `container_id` as one of its parts (a path segment, or a segment's `PREFIX-ID.scope`).
fn in_cgroup_of(proc: &Path, container_id: &str) -> bool {
    std::fs::read_to_string(proc.join("cgroup"))
        .is_ok_and(|cgroup| cgroup_names(&cgroup, container_id))
}

/// Whether a `/proc/PID/cgroup` text names `container_id` in one of its paths.
fn cgroup_names(cgroup: &str, container_id: &str) -> bool {
    cgroup
        .lines()
        .filter_map(|line| line.splitn(3, ':').nth(2))
        .flat_map(|path| path.split('/'))
        .any(|segment| {
            let name = segment.strip_suffix(".scope").unwrap_or(segment);
            name == container_id
                || name
                    .rsplit_once('-')
                    .is_some_and(|(_, id)| id == container_id)
        })
}

/// A process from its `/proc/PID/stat` line; the command name in parentheses may hold spaces
/// and parentheses itself, so the fields are counted from its last `)`.
fn parse_stat(stat: &str) -> Option<Process> {
    let pid = stat.split_once(' ')?.0.parse().ok()?;
    // After the name: state (field 3), ppid (4), ..., starttime (22).
    let mut rest = stat.rsplit_once(')')?.1.split_whitespace();
    let ppid = rest.nth(1)?.parse().ok()?;
    let start = rest.nth(17)?.parse().ok()?;
    Some(Process { pid, ppid, start })
}

/// Of a container's processes, the earliest started whose parent is outside the container.
fn first_of(members: &[Process]) -> Option<u32> {
    members
        .iter()
        .filter(|process| !members.iter().any(|other| other.pid == process.ppid))
        .min_by_key(|process| (process.start, process.pid))
        .map(|process| process.pid)
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    const ID: &str = "4f1c0ffee4f1c0ffee4f1c0ffee4f1c0ffee4f1c0ffee4f1c0ffee4f1c0ffee0";

    #[rstest]
    #[case::containerd_systemd(
        format!("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-pod1.slice/cri-containerd-{ID}.scope\n"),
        true
    )]
    #[case::containerd_cgroupfs(format!("0::/k8s.io/{ID}\n"), true)]
    #[case::crio(format!("0::/kubepods.slice/kubepods-pod1.slice/crio-{ID}.scope\n"), true)]
    #[case::cgroup_v1(format!("12:pids:/kubepods/pod1/{ID}\n11:memory:/kubepods/pod1/{ID}\n"), true)]
    #[case::another_container("0::/k8s.io/0123456789abcdef\n".to_owned(), false)]
    #[case::the_id_inside_a_longer_name(format!("0::/k8s.io/x{ID}\n"), false)]
    #[case::the_host("0::/init.scope\n".to_owned(), false)]
    fn a_container_is_found_by_its_id_in_a_cgroup_path(
        #[case] cgroup: String,
        #[case] names: bool,
    ) {
        assert_eq!(cgroup_names(&cgroup, ID), names);
    }

    #[rstest]
    #[case::plain(
        "4242 (sh) S 4200 4242 4242 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 987654 1 2 3",
        Some(Process { pid: 4242, ppid: 4200, start: 987654 })
    )]
    #[case::a_name_with_spaces_and_parentheses(
        "17 (a (b) c) R 1 17 17 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 55 1 2 3",
        Some(Process { pid: 17, ppid: 1, start: 55 })
    )]
    #[case::cut_short("17 (sh) S 1 17", None)]
    fn a_process_is_read_from_its_stat_line(#[case] stat: &str, #[case] read: Option<Process>) {
        assert_eq!(parse_stat(stat), read);
    }

    fn process(pid: u32, ppid: u32, start: u64) -> Process {
        Process { pid, ppid, start }
    }

    #[rstest]
    #[case::alone(vec![process(10, 5, 100)], Some(10))]
    #[case::with_its_children(vec![process(11, 10, 101), process(10, 5, 100)], Some(10))]
    #[case::beside_a_later_exec(vec![process(30, 5, 300), process(10, 5, 100)], Some(10))]
    #[case::a_reused_lower_pid_started_later(vec![process(3, 5, 300), process(10, 5, 100)], Some(10))]
    #[case::none(vec![], None)]
    fn the_first_process_is_the_earliest_whose_parent_is_outside(
        #[case] members: Vec<Process>,
        #[case] first: Option<u32>,
    ) {
        assert_eq!(first_of(&members), first);
    }

    #[test]
    fn no_process_is_in_a_cgroup_no_container_has() {
        assert_eq!(first_process_of(ID), None);
        assert_eq!(first_process_of(""), None);
    }
}
