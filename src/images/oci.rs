//! Writes a test image as an OCI image layout directory (`oci-layout`, `index.json`,
//! `blobs/sha256/...`): one uncompressed layer with the busybox root filesystem, a config, a
//! manifest and an index naming the tag, every document encoded the same way on every run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::nnp::{self, NNP_MODE, NNP_PATH};
use super::platform::{self, Platform};
use super::tar::TarTree;
use super::{ImageError, Rootfs, TestImage, APPLETS, CRITEST_APPLETS, IMAGE_PATH, WEB_ROOT};

/// Where every image has `pgrep`, which critest's commands run and Debian's busybox-static
/// lacks as an applet.
pub(crate) const PGREP_PATH: &str = "bin/pgrep";

/// `pgrep NAME`: the ids of the processes named NAME, from `/proc/*/comm`; status 1 when none.
const PGREP_SCRIPT: &[u8] = b"#!/bin/sh
# pgrep NAME: the ids of the processes named NAME (busybox-static has no pgrep applet).
[ $# -eq 1 ] || { echo 'usage: pgrep NAME' >&2; exit 2; }
status=1
for dir in /proc/[0-9]*; do
    read -r name < \"$dir/comm\" 2>/dev/null || continue
    if [ \"$name\" = \"$1\" ]; then echo \"${dir#/proc/}\"; status=0; fi
done
exit $status
";

pub(crate) const IPCS_PATH: &str = "bin/ipcs";

/// `ipcs -m`: the shared memory segments of the caller's IPC namespace, from
/// `/proc/sysvipc/shm`, in util-linux's columns (key, shmid, owner, perms, bytes, nattch).
const IPCS_SCRIPT: &[u8] = b"#!/bin/sh
# ipcs -m: this IPC namespace's shared memory segments (busybox-static has no ipcs applet).
[ \"$*\" = -m ] || { echo 'usage: ipcs -m' >&2; exit 2; }
echo '------ Shared Memory Segments --------'
echo 'key        shmid      owner      perms      bytes      nattch'
[ -r /proc/sysvipc/shm ] || exit 0
tail -n +2 /proc/sysvipc/shm | while read -r key shmid perms size cpid lpid nattch uid rest; do
    printf '%-10s %-10s %-10s %-10s %-10s %s\\n' \"$key\" \"$shmid\" \"$uid\" \"$perms\" \"$size\" \"$nattch\"
done
";

/// The page a web server image serves.
const WEB_PAGE: &[u8] = b"<html><body>cri-harness test page</body></html>\n";

/// OCI media types of the documents and the layer this writer produces.
const MEDIA_INDEX: &str = "application/vnd.oci.image.index.v1+json";
const MEDIA_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const MEDIA_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
/// Uncompressed, so the digest depends on nothing but the files (no compressor version).
const MEDIA_LAYER: &str = "application/vnd.oci.image.layer.v1.tar";

/// Accounts the images know, so `id` and user lookups by name work in test containers;
/// `www-data` is the username critest's user images name.
const PASSWD: &str = "root:x:0:0:root:/root:/bin/sh\n\
    www-data:x:33:33:www-data:/var/www:/bin/false\n\
    nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n";
const GROUP: &str = "root:x:0:\nwww-data:x:33:\nnogroup:x:65534:\n";
/// critest's `test-image-predefined-group` accounts: a user whose own group is 1000 and whom
/// /etc/group alone also puts in group 50000, so a runtime must read the image's /etc/group.
const PREDEFINED_PASSWD: &str =
    "default-user:x:1000:1000:default-user:/home/default-user:/bin/sh\n";
const PREDEFINED_GROUP: &str =
    "default-user:x:1000:\ngroup-defined-in-image:x:50000:default-user\n";
impl Rootfs {
    /// The image's /etc/passwd: one source for the built image and the mock's model of it.
    pub fn passwd(self) -> String {
        match self {
            Rootfs::PredefinedGroup => format!("{PASSWD}{PREDEFINED_PASSWD}"),
            Rootfs::Busybox | Rootfs::NoNewPrivs | Rootfs::WebServer => PASSWD.to_owned(),
        }
    }

    /// The image's /etc/group.
    pub fn group(self) -> String {
        match self {
            Rootfs::PredefinedGroup => format!("{GROUP}{PREDEFINED_GROUP}"),
            Rootfs::Busybox | Rootfs::NoNewPrivs | Rootfs::WebServer => GROUP.to_owned(),
        }
    }
}

/// The config label naming the catalogue symbol: it makes every image's config, and so its id,
/// its own, though all share one layer.
pub const IMAGE_LABEL: &str = "io.cri-harness.image";

/// A static busybox binary read into memory, with the platform its ELF header names.
#[derive(Debug, Clone)]
pub struct Busybox {
    path: PathBuf,
    bytes: Vec<u8>,
    platform: Platform,
}

impl Busybox {
    /// Reads and checks the binary at `path` (see [`Busybox::from_bytes`]).
    pub fn load(path: &Path) -> Result<Self, ImageError> {
        let bytes = std::fs::read(path).map_err(|source| ImageError::ReadBusybox {
            path: path.to_owned(),
            source,
        })?;
        Self::from_bytes(path, bytes)
    }

    /// Takes `bytes` read from `path`; fails unless they are a static ELF executable for a
    /// known architecture.
    pub fn from_bytes(path: impl Into<PathBuf>, bytes: Vec<u8>) -> Result<Self, ImageError> {
        let path = path.into();
        let platform = platform::inspect(&path, &bytes)?;
        Ok(Self {
            path,
            bytes,
            platform,
        })
    }

    /// Where the binary was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The platform the binary is built for.
    pub fn platform(&self) -> Platform {
        self.platform
    }
}

/// A content descriptor: what a manifest or index points at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// The blob's media type.
    pub media_type: &'static str,
    /// `sha256:<hex>` of the blob.
    pub digest: String,
    /// The blob's length in bytes.
    pub size: u64,
}

/// What [`build_layout`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltImage {
    /// The catalogue entry built.
    pub image: TestImage,
    /// The OCI layout directory.
    pub layout: PathBuf,
    /// The platform of the config and index entry.
    pub platform: Platform,
    /// The manifest: its digest is the image's digest.
    pub manifest: Descriptor,
    /// The image config.
    pub config: Descriptor,
    /// The one layer (uncompressed, so its digest is also its diff id).
    pub layer: Descriptor,
}

/// Builds every catalogue image into its own layout directory `out/<name>`.
pub fn build_all(busybox: &Busybox, out: &Path) -> Result<Vec<BuiltImage>, ImageError> {
    super::catalogue()
        .iter()
        .map(|image| build_layout(image, busybox, &out.join(image.name)))
        .collect()
}

/// Writes `image` as an OCI layout in `dir` (created if missing; files of an earlier build are
/// overwritten, stray blobs left alone). The index tags the manifest with the reference's tag,
/// so `skopeo copy oci:DIR:TAG ...` finds it.
pub fn build_layout(
    image: &TestImage,
    busybox: &Busybox,
    dir: &Path,
) -> Result<BuiltImage, ImageError> {
    let layer_bytes = rootfs(busybox, image)?.to_bytes()?;
    let references = image.references();
    let written = write_image(
        dir,
        &layer_bytes,
        busybox.platform,
        RunConfig {
            user: image.user,
            env: vec![format!("PATH={IMAGE_PATH}")],
            entrypoint: image.entrypoint,
            cmd: image.cmd,
            working_dir: "",
            labels: BTreeMap::from([(IMAGE_LABEL, image.name)]),
        },
        "cri-harness images build",
        &image
            .tags()
            .zip(references.iter().map(String::as_str))
            .collect::<Vec<_>>(),
        image.reference,
    )?;
    let Written {
        manifest,
        config,
        layer,
    } = written;
    Ok(BuiltImage {
        image: *image,
        layout: dir.to_owned(),
        platform: busybox.platform,
        manifest,
        config,
        layer,
    })
}

/// The three blobs [`write_image`] stored.
pub(super) struct Written {
    /// The manifest: its digest is the image's.
    pub manifest: Descriptor,
    /// The image config.
    pub config: Descriptor,
    /// The one uncompressed layer.
    pub layer: Descriptor,
}

/// Writes one image of one layer as an OCI layout in `dir` (created if missing): the layer, a
/// config with `run` and the layer as its only diff id, a manifest, and an index with one entry
/// per `(tag, reference)` naming that manifest, so `oci:DIR:TAG` finds each tag. `what` names
/// the image in errors.
#[allow(clippy::too_many_arguments)]
pub(super) fn write_image(
    dir: &Path,
    layer: &[u8],
    platform: Platform,
    run: RunConfig<'_>,
    created_by: &'static str,
    tags: &[(&str, &str)],
    what: &'static str,
) -> Result<Written, ImageError> {
    let blobs = dir.join("blobs").join("sha256");
    std::fs::create_dir_all(&blobs).map_err(|source| ImageError::Write {
        path: blobs.clone(),
        source,
    })?;
    let layer = write_blob(&blobs, MEDIA_LAYER, layer)?;
    let config = ImageConfig {
        architecture: platform.architecture,
        os: platform.os,
        config: run,
        rootfs: RootFs {
            kind: "layers",
            diff_ids: vec![layer.digest.clone()],
        },
        history: vec![History { created_by }],
    };
    let config = write_blob(&blobs, MEDIA_CONFIG, &encode(&config, "config", what)?)?;
    let manifest = Manifest {
        schema_version: 2,
        media_type: MEDIA_MANIFEST,
        config: &config,
        layers: vec![&layer],
    };
    let manifest = write_blob(
        &blobs,
        MEDIA_MANIFEST,
        &encode(&manifest, "manifest", what)?,
    )?;
    let index = Index {
        schema_version: 2,
        media_type: MEDIA_INDEX,
        manifests: tags
            .iter()
            .map(|&(tag, reference)| IndexEntry {
                descriptor: &manifest,
                platform: PlatformJson {
                    architecture: platform.architecture,
                    os: platform.os,
                },
                annotations: BTreeMap::from([
                    ("io.containerd.image.name", reference),
                    ("org.opencontainers.image.ref.name", tag),
                ]),
            })
            .collect(),
    };
    write_file(&dir.join("index.json"), &encode(&index, "index", what)?)?;
    write_file(
        &dir.join("oci-layout"),
        br#"{"imageLayoutVersion":"1.0.0"}"#,
    )?;
    Ok(Written {
        manifest,
        config,
        layer,
    })
}

/// The root filesystem of `image`: busybox, its applet links, the usual mount points (runc
/// mounts over them) and minimal account files, which most images share, plus what its
/// [`Rootfs`] adds.
fn rootfs(busybox: &Busybox, image: &TestImage) -> Result<TarTree, ImageError> {
    let mut tree = TarTree::new();
    for (dir, mode) in [
        ("bin", 0o755),
        ("dev", 0o755),
        ("etc", 0o755),
        ("proc", 0o555),
        ("root", 0o700),
        ("sys", 0o555),
        ("tmp", 0o1777),
        ("var", 0o755),
    ] {
        tree.directory(dir, mode);
    }
    tree.file("bin/busybox", 0o755, busybox.bytes.clone());
    for applet in APPLETS {
        tree.symlink(&format!("bin/{applet}"), "busybox");
    }
    tree.file(PGREP_PATH, 0o755, PGREP_SCRIPT.to_vec());
    if image.critest_tools {
        for applet in CRITEST_APPLETS {
            tree.symlink(&format!("bin/{applet}"), "busybox");
        }
        tree.file(IPCS_PATH, 0o755, IPCS_SCRIPT.to_vec());
    }
    tree.file("etc/passwd", 0o644, image.rootfs.passwd().into_bytes());
    tree.file("etc/group", 0o644, image.rootfs.group().into_bytes());
    match image.rootfs {
        Rootfs::Busybox => {}
        Rootfs::PredefinedGroup => {
            tree.directory("home", 0o755);
            tree.directory("home/default-user", 0o755);
        }
        Rootfs::NoNewPrivs => {
            // The checker is machine code for one machine: an image for another would hold a
            // program that cannot run, so the build says so instead.
            if busybox.platform.architecture != "amd64" {
                return Err(ImageError::CheckerArchitecture {
                    image: image.reference,
                    architecture: busybox.platform.architecture,
                });
            }
            tree.directory("usr", 0o755);
            tree.directory("usr/local", 0o755);
            tree.directory("usr/local/bin", 0o755);
            tree.file(NNP_PATH, NNP_MODE, nnp::nnp_elf());
        }
        Rootfs::WebServer => {
            let root = WEB_ROOT.trim_start_matches('/');
            tree.directory(root, 0o755);
            tree.file(&format!("{root}/index.html"), 0o644, WEB_PAGE.to_vec());
            tree.directory("var/run", 0o755);
        }
    }
    Ok(tree)
}

fn encode<T: Serialize>(
    document: &T,
    name: &'static str,
    image: &'static str,
) -> Result<Vec<u8>, ImageError> {
    serde_json::to_vec(document).map_err(|source| ImageError::Json {
        document: name,
        image,
        source,
    })
}

/// Stores `bytes` under their digest in `blobs` and describes them.
fn write_blob(
    blobs: &Path,
    media_type: &'static str,
    bytes: &[u8],
) -> Result<Descriptor, ImageError> {
    let hex = hex::encode(Sha256::digest(bytes));
    write_file(&blobs.join(&hex), bytes)?;
    Ok(Descriptor {
        media_type,
        digest: format!("sha256:{hex}"),
        size: bytes.len() as u64,
    })
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), ImageError> {
    std::fs::write(path, bytes).map_err(|source| ImageError::Write {
        path: path.to_owned(),
        source,
    })
}

/// The image config document; field order is fixed by declaration, so the bytes are stable.
#[derive(Serialize)]
struct ImageConfig<'a> {
    architecture: &'a str,
    os: &'a str,
    config: RunConfig<'a>,
    rootfs: RootFs,
    history: Vec<History>,
}

/// The config's `config`: how a container of the image runs.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct RunConfig<'a> {
    /// `User` (empty: left out, so root).
    #[serde(skip_serializing_if = "str::is_empty")]
    pub user: &'a str,
    /// `Env`, `NAME=value` each.
    pub env: Vec<String>,
    /// `Entrypoint` (empty: left out).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub entrypoint: &'a [&'a str],
    /// `Cmd` (empty: left out).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub cmd: &'a [&'a str],
    /// `WorkingDir` (empty: left out).
    #[serde(skip_serializing_if = "str::is_empty")]
    pub working_dir: &'a str,
    /// `Labels`, in key order.
    pub labels: BTreeMap<&'static str, &'a str>,
}

#[derive(Serialize)]
struct RootFs {
    #[serde(rename = "type")]
    kind: &'static str,
    diff_ids: Vec<String>,
}

/// A history entry without `created`: a timestamp would change the digest on every build.
#[derive(Serialize)]
struct History {
    created_by: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Manifest<'a> {
    schema_version: u32,
    media_type: &'static str,
    config: &'a Descriptor,
    layers: Vec<&'a Descriptor>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Index<'a> {
    schema_version: u32,
    media_type: &'static str,
    manifests: Vec<IndexEntry<'a>>,
}

#[derive(Serialize)]
struct IndexEntry<'a> {
    #[serde(flatten)]
    descriptor: &'a Descriptor,
    platform: PlatformJson<'a>,
    annotations: BTreeMap<&'static str, &'a str>,
}

#[derive(Serialize)]
struct PlatformJson<'a> {
    architecture: &'a str,
    os: &'a str,
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::super::{catalogue, find};
    use super::*;

    /// A synthetic static x86-64 "busybox": enough for the writer, which never runs it.
    fn fake_busybox(payload: &[u8]) -> Busybox {
        let mut bytes = platform::elf64(0x3e, &[1]);
        bytes.extend_from_slice(payload);
        Busybox::from_bytes("/fake/busybox", bytes).unwrap()
    }

    fn read_json(path: &Path) -> Value {
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    }

    fn blob(layout: &Path, digest: &str) -> Vec<u8> {
        let hex = digest.strip_prefix("sha256:").unwrap();
        std::fs::read(layout.join("blobs/sha256").join(hex)).unwrap()
    }

    fn all_files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut files = BTreeMap::new();
        let mut stack = vec![dir.to_owned()];
        while let Some(next) = stack.pop() {
            for entry in std::fs::read_dir(&next).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    let bytes = std::fs::read(&path).unwrap();
                    files.insert(path.strip_prefix(dir).unwrap().to_owned(), bytes);
                }
            }
        }
        files
    }

    #[test]
    fn two_builds_write_identical_bytes_and_digests() {
        let busybox = fake_busybox(b"payload");
        let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let a = build_all(&busybox, first.path()).unwrap();
        let b = build_all(&busybox, second.path()).unwrap();
        let digests = |built: &[BuiltImage]| {
            built
                .iter()
                .map(|i| i.manifest.digest.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(digests(&a), digests(&b));
        assert_eq!(all_files(first.path()), all_files(second.path()));
    }

    #[test]
    fn a_different_binary_gives_a_different_layer() {
        let dir = tempfile::tempdir().unwrap();
        let image = find("busybox").unwrap();
        let one = build_layout(image, &fake_busybox(b"one"), &dir.path().join("1")).unwrap();
        let two = build_layout(image, &fake_busybox(b"two"), &dir.path().join("2")).unwrap();
        assert_ne!(one.layer.digest, two.layer.digest);
        assert_ne!(one.manifest.digest, two.manifest.digest);
    }

    #[test]
    fn images_share_the_layer_but_not_the_config() {
        let dir = tempfile::tempdir().unwrap();
        let built = build_all(&fake_busybox(b"payload"), dir.path()).unwrap();
        assert_eq!(built.len(), catalogue().len());
        assert_eq!(built[0].layer, built[1].layer);
        assert_ne!(built[0].config, built[1].config);
    }

    #[test]
    fn layout_has_the_oci_shape_and_tags_the_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let image = find("pause").unwrap();
        let built = build_layout(image, &fake_busybox(b"payload"), dir.path()).unwrap();

        assert_eq!(
            read_json(&dir.path().join("oci-layout")),
            serde_json::json!({"imageLayoutVersion": "1.0.0"})
        );
        let index = read_json(&dir.path().join("index.json"));
        assert_eq!(
            index,
            serde_json::json!({
                "schemaVersion": 2,
                "mediaType": MEDIA_INDEX,
                "manifests": [{
                    "mediaType": MEDIA_MANIFEST,
                    "digest": built.manifest.digest,
                    "size": built.manifest.size,
                    "platform": {"architecture": "amd64", "os": "linux"},
                    "annotations": {
                        "io.containerd.image.name": "registry.k8s.io/pause:3.9",
                        "org.opencontainers.image.ref.name": "3.9",
                    },
                }],
            })
        );
    }

    #[test]
    fn manifest_points_at_the_config_and_one_uncompressed_layer() {
        let dir = tempfile::tempdir().unwrap();
        let image = find("busybox").unwrap();
        let built = build_layout(image, &fake_busybox(b"payload"), dir.path()).unwrap();
        let manifest: Value =
            serde_json::from_slice(&blob(dir.path(), &built.manifest.digest)).unwrap();
        assert_eq!(
            manifest,
            serde_json::json!({
                "schemaVersion": 2,
                "mediaType": MEDIA_MANIFEST,
                "config": {"mediaType": MEDIA_CONFIG, "digest": built.config.digest, "size": built.config.size},
                "layers": [{"mediaType": MEDIA_LAYER, "digest": built.layer.digest, "size": built.layer.size}],
            })
        );
    }

    #[test]
    fn config_names_platform_command_and_the_layer_as_diff_id() {
        let dir = tempfile::tempdir().unwrap();
        let image = find("pause").unwrap();
        let built = build_layout(image, &fake_busybox(b"payload"), dir.path()).unwrap();
        let config: Value =
            serde_json::from_slice(&blob(dir.path(), &built.config.digest)).unwrap();
        assert_eq!(
            config,
            serde_json::json!({
                "architecture": "amd64",
                "os": "linux",
                "config": {
                    "Env": [format!("PATH={IMAGE_PATH}")],
                    "Entrypoint": ["/bin/busybox", "sleep", "2147483647"],
                    "Labels": {IMAGE_LABEL: "pause"},
                },
                "rootfs": {"type": "layers", "diff_ids": [built.layer.digest]},
                "history": [{"created_by": "cri-harness images build"}],
            })
        );
    }

    #[test]
    fn every_image_has_its_own_config_and_so_its_own_id() {
        let dir = tempfile::tempdir().unwrap();
        let built = build_all(&fake_busybox(b"payload"), dir.path()).unwrap();
        let mut configs: Vec<&str> = built.iter().map(|b| b.config.digest.as_str()).collect();
        configs.sort_unstable();
        configs.dedup();
        assert_eq!(configs.len(), built.len());
    }

    #[test]
    fn a_user_image_names_its_user_in_the_config() {
        let dir = tempfile::tempdir().unwrap();
        let image = find("test-image-user-uid-group").unwrap();
        let built = build_layout(image, &fake_busybox(b"payload"), dir.path()).unwrap();
        let config: Value =
            serde_json::from_slice(&blob(dir.path(), &built.config.digest)).unwrap();
        assert_eq!(config["config"]["User"], "1003:www-data");
    }

    #[test]
    fn an_image_with_three_tags_indexes_one_manifest_under_each() {
        let dir = tempfile::tempdir().unwrap();
        let image = find("test-image-tags").unwrap();
        let built = build_layout(image, &fake_busybox(b"payload"), dir.path()).unwrap();
        let index = read_json(&dir.path().join("index.json"));
        let entries = index["manifests"].as_array().unwrap();
        let tags: Vec<&str> = entries
            .iter()
            .map(|e| {
                e["annotations"]["org.opencontainers.image.ref.name"]
                    .as_str()
                    .unwrap()
            })
            .collect();
        assert_eq!(tags, ["1", "2", "3"]);
        for entry in entries {
            assert_eq!(entry["digest"], built.manifest.digest.as_str());
        }
    }

    #[test]
    fn every_blob_is_stored_under_its_own_digest() {
        let dir = tempfile::tempdir().unwrap();
        let image = find("busybox").unwrap();
        let built = build_layout(image, &fake_busybox(b"payload"), dir.path()).unwrap();
        for descriptor in [&built.manifest, &built.config, &built.layer] {
            let bytes = blob(dir.path(), &descriptor.digest);
            assert_eq!(bytes.len() as u64, descriptor.size);
            let actual = format!("sha256:{}", hex::encode(Sha256::digest(&bytes)));
            assert_eq!(actual, descriptor.digest);
        }
    }

    #[test]
    fn rootfs_links_every_applet_to_busybox_under_bin() {
        let tree = rootfs(&fake_busybox(b"payload"), find("busybox").unwrap()).unwrap();
        let paths: Vec<&str> = tree.paths().collect();
        for applet in APPLETS {
            assert!(
                paths.contains(&format!("bin/{applet}").as_str()),
                "{applet}"
            );
        }
        for expected in ["bin/", "bin/busybox", "etc/passwd", "proc/", "tmp/"] {
            assert!(paths.contains(&expected), "{expected}");
        }
    }

    #[test]
    fn only_critests_images_carry_the_tools_its_specs_exec() {
        for image in crate::images::catalogue() {
            let tree = rootfs(&fake_busybox(b"payload"), image).unwrap();
            let paths: Vec<&str> = tree.paths().collect();
            let tools = CRITEST_APPLETS.iter().copied().chain(["ipcs"]);
            for tool in tools {
                assert_eq!(
                    paths.contains(&format!("bin/{tool}").as_str()),
                    image.critest_tools,
                    "{} {tool}",
                    image.name
                );
            }
        }
        for name in ["critest-busybox", "critest-nginx", "critest-httpd"] {
            assert!(find(name).unwrap().critest_tools, "{name}");
        }
        let (mode, script) = entry("critest-busybox", IPCS_PATH);
        assert_eq!(mode, 0o755);
        assert!(String::from_utf8(script)
            .unwrap()
            .contains("/proc/sysvipc/shm"));
    }

    /// The layer entry at `path` of `image`'s root filesystem: its mode and contents.
    fn entry(image: &str, path: &str) -> (u32, Vec<u8>) {
        let tree = rootfs(&fake_busybox(b"payload"), find(image).unwrap()).unwrap();
        let bytes = tree.to_bytes().unwrap();
        let mut archive = ::tar::Archive::new(bytes.as_slice());
        for file in archive.entries().unwrap() {
            let mut file = file.unwrap();
            if file.path().unwrap().to_str() == Some(path) {
                let mode = file.header().mode().unwrap();
                let mut contents = Vec::new();
                std::io::Read::read_to_end(&mut file, &mut contents).unwrap();
                return (mode, contents);
            }
        }
        panic!("{image} has no {path}");
    }

    #[test]
    fn the_nonewprivs_image_holds_the_checker_setuid_root_and_runs_it() {
        let (mode, contents) = entry("nonewprivs", NNP_PATH);
        assert_eq!(mode, 0o4755);
        assert_eq!(contents, nnp::nnp_elf());
        let image = find("nonewprivs").unwrap();
        assert_eq!(image.cmd, [format!("/{NNP_PATH}")]);
        // Every entry of a layer is root's, so the setuid bit makes the checker run as root.
        let tree = rootfs(&fake_busybox(b"payload"), image).unwrap();
        let bytes = tree.to_bytes().unwrap();
        let mut archive = ::tar::Archive::new(bytes.as_slice());
        for file in archive.entries().unwrap() {
            let header = file.unwrap().header().clone();
            assert_eq!((header.uid().unwrap(), header.gid().unwrap()), (0, 0));
        }
        // The other images have no checker.
        let plain = rootfs(&fake_busybox(b"payload"), find("busybox").unwrap()).unwrap();
        assert!(!plain.paths().any(|p| p == NNP_PATH));
    }

    #[test]
    fn the_checker_is_refused_for_a_busybox_of_another_machine() {
        let mut bytes = platform::elf64(0xb7, &[1]);
        bytes.extend_from_slice(b"payload");
        let arm = Busybox::from_bytes("/fake/busybox", bytes).unwrap();
        let err = rootfs(&arm, find("nonewprivs").unwrap()).unwrap_err();
        assert!(
            matches!(
                err,
                ImageError::CheckerArchitecture {
                    architecture: "arm64",
                    ..
                }
            ),
            "{err}"
        );
        assert!(rootfs(&arm, find("busybox").unwrap()).is_ok());
    }

    #[test]
    fn the_predefined_group_image_puts_its_user_in_a_group_of_the_image() {
        let (_, passwd) = entry("test-image-predefined-group", "etc/passwd");
        let (_, group) = entry("test-image-predefined-group", "etc/group");
        let passwd = String::from_utf8(passwd).unwrap();
        let group = String::from_utf8(group).unwrap();
        assert!(
            passwd
                .lines()
                .any(|l| l.starts_with("default-user:x:1000:1000:")),
            "{passwd}"
        );
        assert!(
            group
                .lines()
                .any(|l| l == "group-defined-in-image:x:50000:default-user"),
            "{group}"
        );
        // The shared accounts stay, and the other images do not get this user.
        assert!(passwd.starts_with(PASSWD), "{passwd}");
        let (_, plain) = entry("busybox", "etc/group");
        assert_eq!(plain, GROUP.as_bytes());
        assert_eq!(find("test-image-predefined-group").unwrap().user, "1000");
    }

    #[test]
    fn an_unwritable_destination_names_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("not-a-dir");
        std::fs::write(&file, b"").unwrap();
        let err = build_layout(find("pause").unwrap(), &fake_busybox(b"x"), &file).unwrap_err();
        assert!(matches!(err, ImageError::Write { .. }), "{err}");
        assert!(err.to_string().contains("not-a-dir"), "{err}");
    }
}
