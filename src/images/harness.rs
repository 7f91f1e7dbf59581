//! The harness's own image, for running it as a Kubernetes workload: the binary at
//! `/cri-harness` (its entry point), the ELF interpreter and libraries it needs at the paths
//! its loader looks in, so a glibc build runs in an image with nothing else, and the reference
//! snapshots at `/snapshots`. One layer, written by the same reproducible writer as the test
//! images, so one binary and one snapshot tree give one digest.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::loader::{self, SearchPath};
use super::oci::{write_image, RunConfig, Written};
use super::platform::{self, Platform};
use super::tar::TarTree;
use super::{Descriptor, ImageError};

/// Where the binary lives in the image (and the config's entry point).
pub const HARNESS_BINARY: &str = "/cri-harness";
/// Where the reference snapshots live in the image: `run --snapshot-dir /snapshots`.
pub const HARNESS_SNAPSHOTS: &str = "/snapshots";
/// Where the known findings live in the image: `run --known /findings`.
pub const HARNESS_FINDINGS: &str = "/findings";
/// The reference `images harness` tags the image with when given none.
pub const HARNESS_REFERENCE: &str = concat!(
    "localhost/cri-harness/cri-harness:",
    env!("CARGO_PKG_VERSION")
);
/// The OCI annotation-style label naming the source revision, when the builder knows it.
pub const REVISION_LABEL: &str = "org.opencontainers.image.revision";
/// The label naming the harness's version.
pub const VERSION_LABEL: &str = "org.opencontainers.image.version";

/// What goes into the harness image.
#[derive(Debug, Clone)]
pub struct HarnessSpec {
    /// The cri-harness binary.
    pub binary: PathBuf,
    /// The snapshot tree to ship (the repository's `snapshots/`), if any.
    pub snapshots: Option<PathBuf>,
    /// The known findings to ship (the repository's `findings/`), if any.
    pub findings: Option<PathBuf>,
    /// The reference the index names (`host/path:tag`).
    pub reference: String,
    /// The source revision for the revision label (left out when `None`, so an unknown
    /// revision never makes two builds differ).
    pub revision: Option<String>,
}

/// What [`build_harness`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltHarness {
    /// The OCI layout directory.
    pub layout: PathBuf,
    /// The binary's platform.
    pub platform: Platform,
    /// The manifest: its digest is the image's digest.
    pub manifest: Descriptor,
    /// The image config.
    pub config: Descriptor,
    /// The one uncompressed layer.
    pub layer: Descriptor,
    /// Every file in the layer but the snapshots (absolute paths), in archive order: the
    /// binary, its interpreter and its libraries.
    pub runtime_files: Vec<String>,
    /// How many snapshot files the layer holds.
    pub snapshot_files: usize,
}

/// Builds the harness image as an OCI layout in `dir`, finding the binary's libraries on this
/// host (see [`loader::runtime_files`]).
pub fn build_harness(spec: &HarnessSpec, dir: &Path) -> Result<BuiltHarness, ImageError> {
    build_harness_with(spec, dir, &SearchPath::host())
}

/// [`build_harness`] with the library search path given.
pub fn build_harness_with(
    spec: &HarnessSpec,
    dir: &Path,
    search: &SearchPath,
) -> Result<BuiltHarness, ImageError> {
    let binary = std::fs::read(&spec.binary).map_err(|source| ImageError::ReadFile {
        path: spec.binary.clone(),
        source,
    })?;
    let (platform, _) = platform::inspect_any(&spec.binary, &binary)?;
    let libraries = loader::runtime_files(&spec.binary, &binary, search)?;

    let mut tree = TarTree::new();
    // A container runtime mounts over these; they exist so it need not create them.
    for (dir, mode) in [
        ("dev", 0o755),
        ("proc", 0o555),
        ("sys", 0o555),
        ("tmp", 0o1777),
    ] {
        tree.directory(dir, mode);
    }
    tree.file(relative(HARNESS_BINARY), 0o755, binary);
    let mut runtime_files = vec![HARNESS_BINARY.to_owned()];
    for library in libraries {
        let path = library.image_path.to_string_lossy().into_owned();
        add_parents(&mut tree, relative(&path));
        tree.file(relative(&path), 0o755, library.bytes);
        runtime_files.push(path);
    }
    let mut snapshot_files = 0;
    if let Some(snapshots) = &spec.snapshots {
        tree.directory(relative(HARNESS_SNAPSHOTS), 0o755);
        snapshot_files = add_tree(&mut tree, snapshots, relative(HARNESS_SNAPSHOTS))?;
    }
    if let Some(findings) = &spec.findings {
        tree.directory(relative(HARNESS_FINDINGS), 0o755);
        add_tree(&mut tree, findings, relative(HARNESS_FINDINGS))?;
    }
    runtime_files.sort();

    let mut labels = BTreeMap::from([(VERSION_LABEL, env!("CARGO_PKG_VERSION"))]);
    if let Some(revision) = &spec.revision {
        labels.insert(REVISION_LABEL, revision);
    }
    let tag = spec
        .reference
        .rsplit_once(':')
        .filter(|(_, tag)| !tag.contains('/'))
        .map_or("latest", |(_, tag)| tag);
    let Written {
        manifest,
        config,
        layer,
    } = write_image(
        dir,
        &tree.to_bytes()?,
        platform,
        RunConfig {
            user: "",
            env: Vec::new(),
            entrypoint: &[HARNESS_BINARY],
            cmd: &[],
            // The binary's default `--snapshot-dir snapshots` is relative: from `/` it is the
            // image's own tree.
            working_dir: "/",
            labels,
        },
        "cri-harness images harness",
        &[(tag, &spec.reference)],
        "the harness image",
    )?;
    Ok(BuiltHarness {
        layout: dir.to_owned(),
        platform,
        manifest,
        config,
        layer,
        runtime_files,
        snapshot_files,
    })
}

fn relative(path: &str) -> &str {
    path.trim_start_matches('/')
}

/// Adds every directory above `path` (a library under `lib/x86_64-linux-gnu` needs both).
fn add_parents(tree: &mut TarTree, path: &str) {
    let mut at = 0;
    while let Some(slash) = path[at..].find('/') {
        tree.directory(&path[..at + slash], 0o755);
        at += slash + 1;
    }
}

/// Adds the regular files and directories under `source` below `into`, read-only for all
/// (mode 0644 and 0755, whatever the checkout's), and returns how many files it added. Other
/// kinds (links, sockets) are left out: a snapshot tree has none.
fn add_tree(tree: &mut TarTree, source: &Path, into: &str) -> Result<usize, ImageError> {
    let read_error = |path: &Path| {
        let path = path.to_owned();
        move |source| ImageError::ReadFile { path, source }
    };
    let mut count = 0;
    let mut entries: Vec<_> = std::fs::read_dir(source)
        .map_err(read_error(source))?
        .collect::<Result<_, _>>()
        .map_err(read_error(source))?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let path = entry.path();
        let name = format!("{into}/{}", entry.file_name().to_string_lossy());
        let kind = entry.file_type().map_err(read_error(&path))?;
        if kind.is_dir() {
            tree.directory(&name, 0o755);
            count += add_tree(tree, &path, &name)?;
        } else if kind.is_file() {
            let bytes = std::fs::read(&path).map_err(read_error(&path))?;
            tree.file(&name, 0o644, bytes);
            count += 1;
        }
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small dynamically linked binary of this host (coreutils' `true`), standing in for the
    /// harness's own, which is large in a debug build.
    fn binary() -> PathBuf {
        PathBuf::from("/bin/true")
    }

    fn spec(binary: PathBuf, snapshots: Option<PathBuf>) -> HarnessSpec {
        HarnessSpec {
            binary,
            snapshots,
            findings: None,
            reference: "localhost/cri-harness/cri-harness:test".to_owned(),
            revision: None,
        }
    }

    fn snapshot_tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("containerd")).unwrap();
        std::fs::write(dir.path().join("containerd/a__b.snap"), "one").unwrap();
        std::fs::write(dir.path().join("containerd/c__d.snap"), "two").unwrap();
        dir
    }

    fn layer_listing(built: &BuiltHarness) -> Vec<String> {
        let hex = built.layer.digest.strip_prefix("sha256:").unwrap();
        let bytes = std::fs::read(built.layout.join("blobs/sha256").join(hex)).unwrap();
        let mut archive = ::tar::Archive::new(bytes.as_slice());
        archive
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn two_builds_of_the_test_binary_have_one_digest() {
        let exe = binary();
        let snapshots = snapshot_tree();
        let spec = spec(exe, Some(snapshots.path().to_owned()));
        let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let a = build_harness(&spec, one.path()).unwrap();
        let b = build_harness(&spec, two.path()).unwrap();
        assert_eq!(a.manifest, b.manifest);
        assert_eq!(a.layer, b.layer);
        assert_eq!(a.snapshot_files, 2);
    }

    #[test]
    fn the_layer_holds_the_binary_its_loader_and_the_snapshots() {
        let exe = binary();
        let snapshots = snapshot_tree();
        let dir = tempfile::tempdir().unwrap();
        let built = build_harness(
            &spec(exe.clone(), Some(snapshots.path().to_owned())),
            dir.path(),
        )
        .unwrap();
        let listing = layer_listing(&built);
        assert!(listing.contains(&"cri-harness".to_owned()), "{listing:?}");
        assert!(
            listing.contains(&"snapshots/containerd/a__b.snap".to_owned()),
            "{listing:?}"
        );
        let bytes = std::fs::read(&exe).unwrap();
        if let Some(interpreter) = loader::dependencies(&exe, &bytes).unwrap().interpreter {
            assert!(
                listing.contains(&interpreter[1..].to_owned()),
                "{listing:?}"
            );
            assert!(
                built.runtime_files.contains(&interpreter),
                "{:?}",
                built.runtime_files
            );
        }
        let mut sorted = listing.clone();
        sorted.sort();
        assert_eq!(listing, sorted, "entries in path order");
    }

    #[test]
    fn another_snapshot_gives_another_digest_and_a_revision_labels_the_config() {
        let exe = binary();
        let snapshots = snapshot_tree();
        let dir = tempfile::tempdir().unwrap();
        let plain = build_harness(
            &spec(exe.clone(), Some(snapshots.path().to_owned())),
            &dir.path().join("1"),
        )
        .unwrap();
        std::fs::write(snapshots.path().join("containerd/a__b.snap"), "changed").unwrap();
        let changed = build_harness(
            &spec(exe.clone(), Some(snapshots.path().to_owned())),
            &dir.path().join("2"),
        )
        .unwrap();
        assert_ne!(plain.layer.digest, changed.layer.digest);
        let labelled = build_harness(
            &HarnessSpec {
                revision: Some("abc123".to_owned()),
                ..spec(exe, Some(snapshots.path().to_owned()))
            },
            &dir.path().join("3"),
        )
        .unwrap();
        assert_eq!(changed.layer, labelled.layer);
        assert_ne!(changed.config.digest, labelled.config.digest);
        let hex = labelled.config.digest.strip_prefix("sha256:").unwrap();
        let config: serde_json::Value = serde_json::from_slice(
            &std::fs::read(labelled.layout.join("blobs/sha256").join(hex)).unwrap(),
        )
        .unwrap();
        assert_eq!(config["config"]["Labels"][REVISION_LABEL], "abc123");
        assert_eq!(config["config"]["Entrypoint"][0], HARNESS_BINARY);
        assert_eq!(config["config"]["WorkingDir"], "/");
    }

    #[test]
    fn parents_of_a_library_become_directories() {
        let mut tree = TarTree::new();
        add_parents(&mut tree, "lib/x86_64-linux-gnu/libc.so.6");
        assert_eq!(
            tree.paths().collect::<Vec<_>>(),
            ["lib/", "lib/x86_64-linux-gnu/"]
        );
    }
}
