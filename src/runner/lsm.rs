//! Which Linux security modules the host's kernel enforces, read from sysfs before a case that
//! needs one runs: a runtime can apply an AppArmor profile or an SELinux label only where the
//! kernel has the module, so on any other host such a case skips instead of failing.

use std::path::Path;

use crate::suite::Need;

/// What says AppArmor is on, under the root: the module's `enabled` parameter reads `Y`.
const APPARMOR_ENABLED: &str = "sys/module/apparmor/parameters/enabled";
/// What says SELinux is on, under the root: selinuxfs is mounted and has its `enforce` file
/// (`0` permissive or `1` enforcing; both label processes).
const SELINUX_ENFORCE: &str = "sys/fs/selinux/enforce";

/// Why the host under `root` (`/` for the real one) cannot give what `need` asks of it, or
/// `None` when it can, or when `need` asks nothing of the host's kernel.
pub fn host_lacks(root: &Path, need: Need) -> Option<&'static str> {
    match need {
        Need::Apparmor => (!apparmor_enabled(root))
            .then_some("the host kernel does not enable AppArmor (/sys/module/apparmor/parameters/enabled is not Y)"),
        Need::Selinux => (!selinux_enabled(root))
            .then_some("the host kernel does not enable SELinux (no selinuxfs with an enforce file at /sys/fs/selinux)"),
        _ => None,
    }
}

/// The first reason the host under `root` lacks one of `needs`.
pub fn first_lack(root: &Path, needs: &[Need]) -> Option<(Need, &'static str)> {
    needs
        .iter()
        .find_map(|&need| host_lacks(root, need).map(|why| (need, why)))
}

fn apparmor_enabled(root: &Path) -> bool {
    std::fs::read_to_string(root.join(APPARMOR_ENABLED)).is_ok_and(|value| value.trim() == "Y")
}

fn selinux_enabled(root: &Path) -> bool {
    std::fs::read_to_string(root.join(SELINUX_ENFORCE))
        .is_ok_and(|value| matches!(value.trim(), "0" | "1"))
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    /// A fake root with `files` (path, contents) under it.
    fn root(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, contents) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, contents).unwrap();
        }
        dir
    }

    #[rstest]
    #[case::enabled(&[(APPARMOR_ENABLED, "Y\n")], true)]
    #[case::disabled(&[(APPARMOR_ENABLED, "N\n")], false)]
    #[case::module_absent(&[], false)]
    #[case::unreadable_value(&[(APPARMOR_ENABLED, "")], false)]
    #[case::selinux_is_not_apparmor(&[(SELINUX_ENFORCE, "1\n")], false)]
    fn apparmor_is_on_only_when_its_module_parameter_reads_y(
        #[case] files: &[(&str, &str)],
        #[case] on: bool,
    ) {
        let root = root(files);
        assert_eq!(host_lacks(root.path(), Need::Apparmor).is_none(), on);
    }

    #[rstest]
    #[case::enforcing(&[(SELINUX_ENFORCE, "1\n")], true)]
    #[case::permissive(&[(SELINUX_ENFORCE, "0\n")], true)]
    #[case::selinuxfs_not_mounted(&[], false)]
    #[case::mount_point_without_enforce(&[("sys/fs/selinux/.keep", "")], false)]
    #[case::garbage(&[(SELINUX_ENFORCE, "maybe\n")], false)]
    #[case::apparmor_is_not_selinux(&[(APPARMOR_ENABLED, "Y\n")], false)]
    fn selinux_is_on_only_with_selinuxfs_and_its_enforce_file(
        #[case] files: &[(&str, &str)],
        #[case] on: bool,
    ) {
        let root = root(files);
        assert_eq!(host_lacks(root.path(), Need::Selinux).is_none(), on);
    }

    #[test]
    fn needs_of_the_target_ask_nothing_of_the_hosts_kernel() {
        let empty = root(&[]);
        for need in [
            Need::MockControl,
            Need::Process,
            Need::Online,
            Need::PodSandboxStats,
        ] {
            assert_eq!(host_lacks(empty.path(), need), None, "{need}");
        }
    }

    #[test]
    fn the_first_lacking_need_is_named_with_its_reason() {
        let apparmor_only = root(&[(APPARMOR_ENABLED, "Y\n")]);
        let needs = [Need::Process, Need::Apparmor, Need::Selinux];
        let (need, why) = first_lack(apparmor_only.path(), &needs).unwrap();
        assert_eq!(need, Need::Selinux);
        assert!(why.contains("SELinux"), "{why}");
        assert_eq!(
            first_lack(apparmor_only.path(), &[Need::Apparmor, Need::Process]),
            None
        );
    }
}
