//! The suites' test images: a catalogue of what they need, and an offline OCI image writer that
//! builds each one from a static busybox binary, byte for byte reproducibly, so CI and vendors
//! can serve them from a registry on their own machine without reaching the internet.

mod oci;
mod platform;
mod tar;

use std::path::PathBuf;

pub use oci::{build_all, build_layout, BuiltImage, Busybox, Descriptor};
pub use platform::Platform;

/// Where Debian's `busybox-static` installs the binary the images are built from.
pub const DEFAULT_BUSYBOX: &str = "/bin/busybox";

/// The `PATH` every test image's config sets, the usual one of Linux images.
pub const IMAGE_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The busybox applets linked into `/bin`: what the suites' commands and a person debugging a
/// pod need. Network clients (wget, nc, telnet) are left out on purpose: nothing in a test pod
/// should be able to reach beyond the machine.
pub const APPLETS: &[&str] = &[
    "[", "[[", "ash", "awk", "basename", "cat", "chmod", "chown", "cp", "cut", "date", "dd", "df",
    "dirname", "du", "echo", "env", "expr", "false", "find", "grep", "head", "hostname", "id",
    "ip", "kill", "ln", "ls", "mkdir", "mkfifo", "mktemp", "mount", "mv", "nproc", "printf", "ps",
    "pwd", "readlink", "rm", "rmdir", "sed", "seq", "sh", "sleep", "sort", "stat", "sync", "tail",
    "tee", "test", "timeout", "touch", "tr", "true", "umount", "uname", "uniq", "wc", "which",
    "xargs", "yes",
];

/// One image the suites use, under the public reference the suites name it by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestImage {
    /// Short symbol suites may use instead of the reference (`pause`, `busybox`).
    pub name: &'static str,
    /// The public reference, `host/path:tag`; CI resolves it to a local registry.
    pub reference: &'static str,
    /// What the suites use it for.
    pub purpose: &'static str,
    /// The config's `Entrypoint` (empty: none).
    pub entrypoint: &'static [&'static str],
    /// The config's `Cmd` (empty: none).
    pub cmd: &'static [&'static str],
}

/// `i32::MAX` seconds (68 years): outlives any run, and every `sleep` parses it. `sleep` as PID 1
/// has no SIGTERM handler, so the kernel drops SIGTERM for it; runtimes stop sandboxes with
/// SIGKILL anyway.
const PAUSE_SECONDS: &str = "2147483647";

static CATALOGUE: [TestImage; 2] = [
    TestImage {
        name: "pause",
        reference: "registry.k8s.io/pause:3.9",
        purpose: "sandbox (infra) image: its process sleeps until the runtime kills it",
        entrypoint: &["/bin/sleep", PAUSE_SECONDS],
        cmd: &[],
    },
    TestImage {
        name: "busybox",
        reference: "registry.k8s.io/e2e-test-images/busybox:1.36.1-1",
        purpose: "test containers: a static busybox with sh, sleep, true, false and friends",
        entrypoint: &[],
        cmd: &["sh"],
    },
];

/// Every image the suites need, in a fixed order.
pub fn catalogue() -> &'static [TestImage] {
    &CATALOGUE
}

/// The catalogue entry with this symbol or reference.
pub fn find(symbol_or_ref: &str) -> Option<&'static TestImage> {
    CATALOGUE
        .iter()
        .find(|image| image.name == symbol_or_ref || image.reference == symbol_or_ref)
}

/// Maps a catalogue symbol (`pause`, `busybox`) to its reference; any other string is taken to
/// be a reference already and passes through unchanged.
pub fn resolve(symbol_or_ref: &str) -> String {
    CATALOGUE
        .iter()
        .find(|image| image.name == symbol_or_ref)
        .map_or(symbol_or_ref, |image| image.reference)
        .to_owned()
}

impl TestImage {
    /// The registry host of the reference (`registry.k8s.io`).
    pub fn registry_host(&self) -> &'static str {
        self.reference.split_once('/').map_or("", |(host, _)| host)
    }

    /// The repository path without the registry host or tag (`e2e-test-images/busybox`).
    pub fn repository(&self) -> &'static str {
        let path = self
            .reference
            .split_once('/')
            .map_or(self.reference, |(_, path)| path);
        path.rsplit_once(':')
            .map_or(path, |(repository, _)| repository)
    }

    /// The tag of the reference (`1.36.1-1`).
    pub fn tag(&self) -> &'static str {
        self.reference
            .rsplit_once(':')
            .map_or("latest", |(_, tag)| tag)
    }

    /// The reference this image gets in a mirror registry `host:port`: same path, same tag.
    pub fn mirror_reference(&self, registry: &str) -> String {
        format!("{registry}/{}:{}", self.repository(), self.tag())
    }
}

/// Failures of building a test image.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// The busybox binary could not be read.
    #[error("cannot read the busybox binary {}", path.display())]
    ReadBusybox {
        /// The binary's path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The busybox binary is not an ELF executable.
    #[error("{} is not an ELF executable, so it cannot be an image's busybox", path.display())]
    NotElf {
        /// The binary's path.
        path: PathBuf,
    },
    /// The binary is built for a machine this module has no OCI architecture name for.
    #[error("{} is built for ELF machine {machine:#x}, which has no OCI architecture name here", path.display())]
    UnknownArchitecture {
        /// The binary's path.
        path: PathBuf,
        /// The ELF `e_machine` value.
        machine: u16,
    },
    /// The binary needs a dynamic loader and C library the images do not contain.
    #[error("{} is dynamically linked; the images need a static busybox (Debian's busybox-static)", path.display())]
    DynamicBinary {
        /// The binary's path.
        path: PathBuf,
    },
    /// A path in the layer does not fit a ustar header.
    #[error("tar entry {name} is longer than a ustar header holds")]
    TarName {
        /// The entry path or link target.
        name: String,
    },
    /// The layer archive could not be written (in memory: only if it runs out).
    #[error("cannot write the layer archive")]
    Tar(#[source] std::io::Error),
    /// A JSON document of the image could not be encoded.
    #[error("cannot encode the {document} of image {image}")]
    Json {
        /// Which document (config, manifest, index).
        document: &'static str,
        /// The image's reference.
        image: &'static str,
        /// The encoder's error.
        source: serde_json::Error,
    },
    /// A file of the OCI layout could not be written.
    #[error("cannot write {}", path.display())]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::pause_symbol("pause", "registry.k8s.io/pause:3.9")]
    #[case::busybox_symbol("busybox", "registry.k8s.io/e2e-test-images/busybox:1.36.1-1")]
    #[case::reference_passes_through("registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.9")]
    #[case::unknown_name_passes_through("nginx", "nginx")]
    #[case::other_reference_passes_through(
        "docker.io/library/alpine:3",
        "docker.io/library/alpine:3"
    )]
    fn resolve_maps_symbols_and_passes_references_through(
        #[case] input: &str,
        #[case] expected: &str,
    ) {
        assert_eq!(resolve(input), expected);
    }

    #[rstest]
    #[case::pause("pause", "registry.k8s.io", "pause", "3.9")]
    #[case::busybox("busybox", "registry.k8s.io", "e2e-test-images/busybox", "1.36.1-1")]
    fn references_split_into_host_repository_and_tag(
        #[case] name: &str,
        #[case] host: &str,
        #[case] repository: &str,
        #[case] tag: &str,
    ) {
        let image = find(name).unwrap();
        assert_eq!(image.registry_host(), host);
        assert_eq!(image.repository(), repository);
        assert_eq!(image.tag(), tag);
    }

    #[test]
    fn mirror_reference_keeps_path_and_tag_under_the_mirror_host() {
        let image = find("busybox").unwrap();
        assert_eq!(
            image.mirror_reference("127.0.0.1:5000"),
            "127.0.0.1:5000/e2e-test-images/busybox:1.36.1-1"
        );
    }

    #[test]
    fn find_accepts_symbols_and_references_alike() {
        assert_eq!(find("pause"), find("registry.k8s.io/pause:3.9"));
        assert!(find("registry.k8s.io/pause:3.10").is_none());
    }

    #[test]
    fn catalogue_names_and_references_are_unique() {
        let mut names: Vec<_> = catalogue().iter().map(|image| image.name).collect();
        let mut refs: Vec<_> = catalogue().iter().map(|image| image.reference).collect();
        names.sort_unstable();
        names.dedup();
        refs.sort_unstable();
        refs.dedup();
        assert_eq!(names.len(), catalogue().len());
        assert_eq!(refs.len(), catalogue().len());
    }

    #[test]
    fn every_image_runs_something() {
        for image in catalogue() {
            assert!(
                !image.entrypoint.is_empty() || !image.cmd.is_empty(),
                "{}",
                image.name
            );
        }
    }

    #[test]
    fn applets_are_sorted_and_include_what_the_suites_run() {
        let mut sorted = APPLETS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted, APPLETS);
        for needed in ["sh", "sleep", "true", "false", "echo", "cat", "ls", "env"] {
            assert!(APPLETS.contains(&needed), "{needed}");
        }
    }
}
