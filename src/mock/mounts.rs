//! A container's filesystem as far as its mounts go: which container paths are host
//! directories or image volumes, read-only or not, recursively or not, and what an image
//! volume holds. CreateContainer builds it (refusing the mounts the contract forbids) and an
//! exec's `touch`, `ls` and commands run by path answer from it as a real runtime's would.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::cri::v1;
use crate::images::{self, Rootfs, APPLETS};
use crate::mock::defects::Defect;
use crate::mock::error::RpcError;

/// Exit status of a command the shell found but may not run (noexec, a directory).
const CANNOT_EXECUTE: i32 = 126;
/// Exit status of a command the shell cannot find.
const NOT_FOUND: i32 = 127;

tokio::task_local! {
    /// The mounts of the container an exec or attach session runs in.
    static TABLE: Arc<MountTable>;
}

/// Runs `session` with `table` as the mounts its commands see.
pub(crate) async fn scope<F: std::future::Future>(table: Arc<MountTable>, session: F) -> F::Output {
    TABLE.scope(table, session).await
}

/// The mounts of the running session's container (none outside a session).
fn with_table<T>(f: impl FnOnce(&MountTable) -> T) -> T {
    let table = TABLE.try_with(Arc::clone).unwrap_or_default();
    f(&table)
}

/// What a modelled command printed, and its exit status.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// Standard output.
    pub(crate) stdout: String,
    /// Standard error.
    pub(crate) stderr: String,
    /// Exit status.
    pub(crate) status: i32,
}

/// A container's mounts, deepest container path first, so the first that covers a path is
/// the one a lookup sees.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct MountTable {
    mounts: Vec<MountView>,
}

/// One mount as the container sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct MountView {
    /// Where it is, without a trailing `/`.
    container_path: String,
    readonly: bool,
    /// Read-only with every mount under it (`rro`), not just itself.
    recursive: bool,
    /// Mounted `noexec`: nothing under it runs.
    noexec: bool,
    source: Source,
}

/// What a mount shows.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    /// A host directory, bind-mounted recursively: the host's mounts under it when the
    /// container was created come along, as relative paths.
    Host {
        path: PathBuf,
        submounts: Vec<String>,
    },
    /// An image's files from its sub path on, as relative paths (directories in `dirs`).
    Image {
        files: BTreeSet<String>,
        dirs: BTreeSet<String>,
    },
}

/// Why CreateContainer refuses a mount.
fn refused(mount: &v1::Mount, reason: impl Into<String>) -> RpcError {
    RpcError::InvalidMount {
        container_path: mount.container_path.clone(),
        reason: reason.into(),
    }
}

/// The paths of a test image's root filesystem, as `images::oci` builds it: the usual
/// directories, busybox and its applets in `bin`, the account files, and what its [`Rootfs`]
/// adds. An image outside the catalogue is taken to be plain busybox.
fn image_paths(rootfs: Rootfs) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut dirs: BTreeSet<String> = ["bin", "dev", "etc", "proc", "root", "sys", "tmp", "var"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    let mut files: BTreeSet<String> =
        ["bin/busybox", images::PGREP_PATH, "etc/passwd", "etc/group"]
            .into_iter()
            .map(str::to_owned)
            .collect();
    files.extend(APPLETS.iter().map(|applet| format!("bin/{applet}")));
    match rootfs {
        Rootfs::Busybox => {}
        Rootfs::PredefinedGroup => {
            dirs.extend(["home".to_owned(), "home/default-user".to_owned()]);
        }
        Rootfs::NoNewPrivs => {
            dirs.extend(["usr", "usr/local", "usr/local/bin"].map(str::to_owned));
            files.insert("usr/local/bin/nnp".to_owned());
        }
        Rootfs::WebServer => {
            let root = images::WEB_ROOT.trim_start_matches('/');
            dirs.extend([root.to_owned(), "var/run".to_owned()]);
            files.insert(format!("{root}/index.html"));
        }
    }
    (files, dirs)
}

/// The part of `paths` under `sub` (a relative directory), relative to it.
fn under(paths: &BTreeSet<String>, sub: &str) -> BTreeSet<String> {
    let prefix = format!("{sub}/");
    paths
        .iter()
        .filter_map(|p| p.strip_prefix(&prefix).map(str::to_owned))
        .collect()
}

/// The host's mount points strictly under `dir`, relative to it, from `/proc/self/mountinfo`
/// (what a recursive bind of `dir` carries into the container).
fn host_submounts(dir: &Path) -> Vec<String> {
    let Ok(dir) = std::fs::canonicalize(dir) else {
        return Vec::new();
    };
    let Ok(mountinfo) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    let mut found: Vec<String> = mountinfo
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(unescape)
        .filter_map(|point| {
            Path::new(&point)
                .strip_prefix(&dir)
                .ok()
                .map(|rel| rel.display().to_string())
        })
        .filter(|rel| !rel.is_empty())
        .collect();
    found.sort();
    found.dedup();
    found
}

/// Undoes mountinfo's octal escapes (`\040` for a space).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|digits| {
            std::str::from_utf8(digits)
                .ok()
                .and_then(|d| u8::from_str_radix(d, 8).ok())
        });
        match (bytes[i], octal) {
            (b'\\', Some(byte)) => {
                out.push(byte);
                i += 4;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `path` without trailing slashes (`/` stays `/`).
fn trimmed(path: &str) -> String {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        "/".to_owned()
    } else {
        trimmed.to_owned()
    }
}

/// `path` relative to `base` when `base` covers it, component-wise (`""`: `base` itself).
fn relative<'a>(path: &'a str, base: &str) -> Option<&'a str> {
    if base == "/" {
        return Some(path.trim_start_matches('/'));
    }
    let rest = path.strip_prefix(base)?;
    if rest.is_empty() {
        Some("")
    } else {
        rest.strip_prefix('/')
    }
}

/// True when the relative path `rel` is `dir` or inside it.
fn within(rel: &str, dir: &str) -> bool {
    rel == dir
        || rel
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// What CreateContainer makes of a container's mounts.
pub(crate) struct Built {
    /// The filesystem view the container's execs see.
    pub(crate) table: Arc<MountTable>,
    /// The mounts ContainerStatus reports (an image volume's with its digest).
    pub(crate) status: Vec<v1::Mount>,
}

/// The catalogue's kind of root filesystem for a stored image (plain busybox for others).
fn rootfs_of(image: &v1::Image) -> Rootfs {
    image
        .repo_tags
        .iter()
        .find_map(|tag| images::find_served(tag))
        .map_or(Rootfs::Busybox, |known| known.rootfs)
}

/// Checks a container's mounts against the contract and builds its view over its image's
/// root filesystem (`rootfs`, writable): a recursive read-only mount needs `readonly`,
/// private propagation and a handler that has the feature (`handler_rro`); an image volume
/// needs no host path, `readonly`, an image the runtime holds and a sub path that image has.
pub(crate) fn build(
    mounts: &[v1::Mount],
    rootfs: &v1::Image,
    stored: &[v1::Image],
    handler_rro: bool,
    has: impl Fn(Defect) -> bool,
) -> Result<Built, RpcError> {
    let (files, dirs) = image_paths(rootfs_of(rootfs));
    let mut views = vec![MountView {
        container_path: "/".to_owned(),
        readonly: false,
        recursive: false,
        noexec: false,
        source: Source::Image { files, dirs },
    }];
    let mut status = Vec::with_capacity(mounts.len());
    for mount in mounts {
        let mut reported = mount.clone();
        let private = mount.propagation == v1::MountPropagation::PropagationPrivate as i32;
        if mount.recursive_read_only {
            if !mount.readonly {
                return Err(refused(mount, "recursive_read_only needs readonly"));
            }
            if !private && !has(Defect::RecursiveReadOnlyAnyPropagation) {
                return Err(refused(
                    mount,
                    "recursive_read_only needs PROPAGATION_PRIVATE",
                ));
            }
            if !handler_rro {
                return Err(refused(
                    mount,
                    "the runtime handler does not support recursive read-only mounts",
                ));
            }
        }
        let source = match &mount.image {
            Some(spec) => {
                if !mount.host_path.is_empty() {
                    return Err(refused(mount, "an image volume takes no host_path"));
                }
                if !mount.readonly && !has(Defect::ImageVolumeWritable) {
                    return Err(refused(mount, "an image volume is read-only"));
                }
                let image = crate::mock::image_service::find_image(stored, &spec.image)
                    .map(|index| &stored[index])
                    .ok_or_else(|| RpcError::ImageNotFound {
                        image: spec.image.clone(),
                    })?;
                let (mut files, mut dirs) = image_paths(rootfs_of(image));
                let sub = mount.image_sub_path.trim_matches('/');
                if !sub.is_empty() && !has(Defect::ImageSubPathIgnored) {
                    if !dirs.contains(sub) {
                        return Err(refused(
                            mount,
                            format!("image_sub_path {sub:?} is not a directory of the image"),
                        ));
                    }
                    files = under(&files, sub);
                    dirs = under(&dirs, sub);
                }
                reported.image = Some(v1::ImageSpec {
                    image_ref: image.id.clone(),
                    ..spec.clone()
                });
                Source::Image { files, dirs }
            }
            None => Source::Host {
                path: PathBuf::from(&mount.host_path),
                submounts: host_submounts(Path::new(&mount.host_path)),
            },
        };
        let image = matches!(source, Source::Image { .. });
        views.push(MountView {
            container_path: trimmed(&mount.container_path),
            readonly: mount.readonly && !(image && has(Defect::ImageVolumeWritable)),
            recursive: mount.recursive_read_only && !has(Defect::RecursiveReadOnlyShallow),
            noexec: image && has(Defect::ImageVolumeNoexec),
            source,
        });
        status.push(reported);
    }
    // Deepest first: a mount inside another hides what is under it (the root comes last).
    views.sort_by_key(|view| std::cmp::Reverse(view.container_path.len()));
    Ok(Built {
        table: Arc::new(MountTable { mounts: views }),
        status,
    })
}

impl MountTable {
    /// The mount covering `path`, and the path relative to it.
    fn find<'a>(&self, path: &'a str) -> Option<(&MountView, &'a str)> {
        self.mounts
            .iter()
            .find_map(|m| relative(path, &m.container_path).map(|rel| (m, rel)))
    }
}

/// `touch FILE...`: a write, refused with EROFS where the mount holding the file is
/// read-only: a read-only mount itself, and a host mount under it only if it is recursive.
/// Paths under no mount are in the container's own writable layer.
pub(crate) fn touch(args: &[String]) -> Outcome {
    let files: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    if files.is_empty() {
        return Outcome {
            stderr: "touch: missing file operand\n".to_owned(),
            status: 1,
            ..Outcome::default()
        };
    }
    with_table(|table| {
        let mut outcome = Outcome::default();
        for file in files {
            let Some((mount, rel)) = table.find(file) else {
                continue;
            };
            let writable = match &mount.source {
                Source::Host { submounts, .. } => {
                    let in_submount = submounts.iter().any(|sub| within(rel, sub));
                    !mount.readonly || (in_submount && !mount.recursive)
                }
                Source::Image { .. } => !mount.readonly,
            };
            if !writable {
                outcome
                    .stderr
                    .push_str(&format!("touch: {file}: Read-only file system\n"));
                outcome.status = 1;
            }
        }
        outcome
    })
}

/// `ls [-FLAGS] PATH...`: an image's entries (a volume's, or the container's own image's for
/// a path under no mount), or a host directory's as the host has them. What the container
/// wrote into its own layer is not modelled.
pub(crate) fn ls(args: &[String]) -> Outcome {
    let paths: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    with_table(|table| {
        let mut outcome = Outcome::default();
        for path in paths {
            let missing = |outcome: &mut Outcome| {
                outcome
                    .stderr
                    .push_str(&format!("ls: {path}: No such file or directory\n"));
                outcome.status = 1;
            };
            let Some((mount, rel)) = table.find(path) else {
                // No container (a session outside one): nothing to list.
                missing(&mut outcome);
                continue;
            };
            match &mount.source {
                Source::Image { files, dirs } => {
                    if files.contains(rel) {
                        outcome.stdout.push_str(&format!("{path}\n"));
                    } else if rel.is_empty() || dirs.contains(rel) {
                        let children = if rel.is_empty() {
                            files
                                .iter()
                                .chain(dirs)
                                .filter(|p| !p.contains('/'))
                                .cloned()
                                .collect()
                        } else {
                            let inside = format!("{rel}/");
                            let mut names: Vec<String> = files
                                .iter()
                                .chain(dirs)
                                .filter_map(|p| p.strip_prefix(&inside))
                                .filter(|p| !p.contains('/'))
                                .map(str::to_owned)
                                .collect();
                            names.sort();
                            names
                        };
                        let mut children: Vec<String> = children;
                        children.sort();
                        for name in children {
                            outcome.stdout.push_str(&format!("{name}\n"));
                        }
                    } else {
                        missing(&mut outcome);
                    }
                }
                Source::Host { path: host, .. } => {
                    let target = if rel.is_empty() {
                        host.clone()
                    } else {
                        host.join(rel)
                    };
                    match std::fs::read_dir(&target) {
                        Ok(entries) => {
                            let mut names: Vec<String> = entries
                                .filter_map(Result::ok)
                                .map(|e| e.file_name().to_string_lossy().into_owned())
                                .collect();
                            names.sort();
                            for name in names {
                                outcome.stdout.push_str(&format!("{name}\n"));
                            }
                        }
                        Err(_) if target.symlink_metadata().is_ok() => {
                            outcome.stdout.push_str(&format!("{path}\n"));
                        }
                        Err(_) => missing(&mut outcome),
                    }
                }
            }
        }
        outcome
    })
}

/// Whether a command given by a path under an image volume may run: the image must hold it
/// and the mount must not be `noexec`. Paths elsewhere are not the model's to judge.
pub(crate) fn may_exec(command: &str) -> Result<(), Outcome> {
    if !command.starts_with('/') {
        return Ok(());
    }
    with_table(|table| {
        let Some((mount, rel)) = table.find(command) else {
            return Ok(());
        };
        // The container's own image: commands by path there run as they always have.
        let (Source::Image { files, .. }, false) = (&mount.source, mount.container_path == "/")
        else {
            return Ok(());
        };
        if !files.contains(rel) {
            return Err(Outcome {
                stderr: format!("sh: {command}: not found\n"),
                status: NOT_FOUND,
                ..Outcome::default()
            });
        }
        if mount.noexec {
            return Err(Outcome {
                stderr: format!("sh: {command}: Permission denied\n"),
                status: CANNOT_EXECUTE,
                ..Outcome::default()
            });
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn image(tag: &str) -> v1::Image {
        v1::Image {
            id: "sha256:abc".to_owned(),
            repo_tags: vec![tag.to_owned()],
            ..Default::default()
        }
    }

    fn image_mount(readonly: bool, sub: &str) -> v1::Mount {
        v1::Mount {
            container_path: "/mnt/iv".to_owned(),
            readonly,
            image: Some(v1::ImageSpec {
                image: "sha256:abc".to_owned(),
                ..Default::default()
            }),
            image_sub_path: sub.to_owned(),
            ..Default::default()
        }
    }

    fn host_mount(readonly: bool, rro: bool, propagation: v1::MountPropagation) -> v1::Mount {
        v1::Mount {
            container_path: "/mnt".to_owned(),
            host_path: "/nonexistent-host-dir".to_owned(),
            readonly,
            recursive_read_only: rro,
            propagation: propagation as i32,
            ..Default::default()
        }
    }

    fn predefined() -> Vec<v1::Image> {
        vec![image(
            "gcr.io/k8s-staging-cri-tools/test-image-predefined-group:latest",
        )]
    }

    fn build_one(mount: v1::Mount, rro: bool) -> Result<Built, RpcError> {
        build(&[mount], &image("busybox"), &predefined(), rro, |_| false)
    }

    #[rstest]
    #[case::rro_not_readonly(
        host_mount(false, true, v1::MountPropagation::PropagationPrivate),
        true,
        Some("needs readonly")
    )]
    #[case::rro_bidirectional(
        host_mount(true, true, v1::MountPropagation::PropagationBidirectional),
        true,
        Some("PROPAGATION_PRIVATE")
    )]
    #[case::rro_host_to_container(
        host_mount(true, true, v1::MountPropagation::PropagationHostToContainer),
        true,
        Some("PROPAGATION_PRIVATE")
    )]
    #[case::rro_on_a_featureless_handler(
        host_mount(true, true, v1::MountPropagation::PropagationPrivate),
        false,
        Some("does not support")
    )]
    #[case::rro_private(
        host_mount(true, true, v1::MountPropagation::PropagationPrivate),
        true,
        None
    )]
    #[case::image_writable(image_mount(false, ""), true, Some("read-only"))]
    #[case::image_missing_sub_path(
        image_mount(true, "not-existing"),
        true,
        Some("not a directory")
    )]
    #[case::image_sub_path(image_mount(true, "etc"), true, None)]
    fn create_container_refuses_the_mounts_the_contract_forbids(
        #[case] mount: v1::Mount,
        #[case] handler_rro: bool,
        #[case] refusal: Option<&str>,
    ) {
        match (build_one(mount, handler_rro), refusal) {
            (Ok(_), None) => {}
            (Err(err), Some(why)) => assert!(err.to_string().contains(why), "{err}"),
            (Ok(_), Some(why)) => panic!("accepted, wanted a refusal for {why}"),
            (Err(err), None) => panic!("refused: {err}"),
        }
    }

    #[test]
    fn an_image_volume_reports_the_images_id_as_its_digest() {
        let built = build_one(image_mount(true, ""), true).unwrap();
        let spec = built.status[0].image.as_ref().unwrap();
        assert_eq!(spec.image_ref, "sha256:abc");
    }

    async fn in_table<T>(mounts: Vec<v1::Mount>, f: impl FnOnce() -> T) -> T {
        let built = build(&mounts, &image("busybox"), &predefined(), true, |_| false).unwrap();
        scope(built.table, async { f() }).await
    }

    #[tokio::test]
    async fn an_image_volume_lists_the_images_files_and_refuses_writes() {
        let args = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let (sh, root, write, gone) = in_table(vec![image_mount(true, "")], || {
            (
                ls(&args(&["-A", "/mnt/iv/bin/sh"])),
                ls(&args(&["/mnt/iv"])),
                touch(&args(&["/mnt/iv/x"])),
                ls(&args(&["/mnt/iv/nothing"])),
            )
        })
        .await;
        assert_eq!(sh.stdout, "/mnt/iv/bin/sh\n");
        assert!(
            root.stdout.contains("home\n") && root.stdout.contains("bin\n"),
            "{root:?}"
        );
        assert_eq!(
            (write.status, write.stderr.contains("Read-only")),
            (1, true)
        );
        assert_eq!(gone.status, 1);
    }

    #[tokio::test]
    async fn a_sub_path_is_the_mounts_root() {
        let args = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let (passwd, nested) = in_table(vec![image_mount(true, "etc")], || {
            (
                ls(&args(&["/mnt/iv/passwd"])),
                ls(&args(&["/mnt/iv/etc/passwd"])),
            )
        })
        .await;
        assert_eq!((passwd.status, nested.status), (0, 1));
    }

    #[tokio::test]
    async fn a_binary_of_an_image_volume_runs_unless_it_is_missing() {
        let (ls_bin, missing) = in_table(vec![image_mount(true, "")], || {
            (may_exec("/mnt/iv/bin/ls"), may_exec("/mnt/iv/bin/nope"))
        })
        .await;
        assert!(ls_bin.is_ok());
        assert_eq!(missing.map_err(|o| o.status), Err(NOT_FOUND));
    }

    /// A read-only host mount at /mnt with a tmpfs at its `tmpfs`, recursive or not.
    fn host_table(recursive: bool) -> Arc<MountTable> {
        Arc::new(MountTable {
            mounts: vec![MountView {
                container_path: "/mnt".to_owned(),
                readonly: true,
                recursive,
                noexec: false,
                source: Source::Host {
                    path: PathBuf::from("/nonexistent-host-dir"),
                    submounts: vec!["tmpfs".to_owned()],
                },
            }],
        })
    }

    #[rstest]
    #[case::plain_read_only_leaves_the_submount_writable(false, "/mnt/tmpfs/f", 0)]
    #[case::plain_read_only_refuses_the_mount_itself(false, "/mnt/f", 1)]
    #[case::a_name_that_only_starts_like_the_submount(false, "/mnt/tmpfsx", 1)]
    #[case::recursive_read_only_refuses_the_submount(true, "/mnt/tmpfs/f", 1)]
    #[case::outside_every_mount(true, "/tmp/f", 0)]
    #[tokio::test]
    async fn a_write_under_a_read_only_mount_fails_where_the_mount_holding_it_is_read_only(
        #[case] recursive: bool,
        #[case] file: &str,
        #[case] status: i32,
    ) {
        let outcome = scope(host_table(recursive), async { touch(&[file.to_owned()]) }).await;
        assert_eq!(outcome.status, status, "{outcome:?}");
    }

    #[tokio::test]
    async fn a_path_under_no_mount_is_the_containers_own_images() {
        let (home, bin) = in_table(vec![image_mount(true, "")], || {
            (ls(&["/home".to_owned()]), ls(&["/bin/sh".to_owned()]))
        })
        .await;
        // The container runs busybox, which has no /home; the volume's image has one.
        assert_eq!((home.status, bin.status), (1, 0));
    }

    #[test]
    fn mountinfo_escapes_are_undone() {
        assert_eq!(unescape("/a\\040b"), "/a b");
        assert_eq!(unescape("/plain"), "/plain");
    }

    #[rstest]
    #[case::itself("/mnt", "/mnt", Some(""))]
    #[case::inside("/mnt/a/b", "/mnt", Some("a/b"))]
    #[case::a_sibling_with_the_prefix("/mntx", "/mnt", None)]
    #[case::under_root("/etc/x", "/", Some("etc/x"))]
    fn a_mount_covers_its_path_and_what_is_under_it(
        #[case] path: &str,
        #[case] base: &str,
        #[case] rel: Option<&str>,
    ) {
        assert_eq!(relative(path, base), rel);
    }
}
