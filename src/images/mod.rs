//! The suites' test images: a catalogue of what they need, and an offline OCI image writer that
//! builds each one from a static busybox binary, byte for byte reproducibly, so CI and vendors
//! can serve them from a registry on their own machine without reaching the internet.

mod harness;
mod loader;
mod mirror;
mod nnp;
mod oci;
mod platform;
mod reference;
mod tar;

use std::path::PathBuf;

pub use harness::{
    build_harness, build_harness_with, BuiltHarness, HarnessSpec, HARNESS_BINARY,
    HARNESS_REFERENCE, HARNESS_SNAPSHOTS, REVISION_LABEL, VERSION_LABEL,
};
pub use loader::{dependencies, runtime_files, Dependencies, RuntimeFile, SearchPath};
pub use mirror::{find_served, served_path, ImageNames, PrefixError};
pub use nnp::{nnp_elf, NNP_MODE, NNP_PATH};
pub(crate) use oci::PGREP_PATH;
pub use oci::{build_all, build_layout, BuiltImage, Busybox, Descriptor};
pub use platform::Platform;
pub use reference::{is_sha256_digest, normalise, Reference};

/// Where Debian's `busybox-static` installs the binary the images are built from.
pub const DEFAULT_BUSYBOX: &str = "/bin/busybox";

/// The `PATH` every test image's config sets, the usual one of Linux images.
pub const IMAGE_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The busybox applets linked into `/bin`: what the suites' commands and a person debugging a
/// pod need. `httpd` is a server, so the networking cases have a port that answers. Network
/// clients (wget, nc, telnet) are left out on purpose: nothing in a test pod should be able to
/// reach beyond the machine.
pub const APPLETS: &[&str] = &[
    "[", "[[", "ash", "awk", "basename", "cat", "chmod", "chown", "cp", "cut", "date", "dd", "df",
    "dirname", "du", "echo", "env", "expr", "false", "find", "grep", "head", "hostname", "httpd",
    "id", "ip", "kill", "ln", "ls", "mkdir", "mkfifo", "mktemp", "mount", "mv", "nproc", "printf",
    "ps", "pwd", "readlink", "rm", "rmdir", "sed", "seq", "sh", "sleep", "sort", "stat", "sync",
    "tail", "tee", "test", "timeout", "top", "touch", "tr", "true", "umount", "uname", "uniq",
    "wc", "which", "xargs", "yes",
];

/// One image the suites use, under the public reference the suites name it by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestImage {
    /// Short symbol suites may use instead of the reference (`pause`, `busybox`).
    pub name: &'static str,
    /// The public reference, `host/path:tag`; CI resolves it to a local registry.
    pub reference: &'static str,
    /// More tags of the same image in the same repository (one image id, several repo tags).
    pub more_tags: &'static [&'static str],
    /// Other registry hosts the suites name the same repository under (one image pulled
    /// from two registries); a mirror holds it at `HOST/PATH` for each (see [`ImageNames`]).
    pub also_at: &'static [&'static str],
    /// What the suites use it for.
    pub purpose: &'static str,
    /// The config's `Entrypoint` (empty: none).
    pub entrypoint: &'static [&'static str],
    /// The config's `Cmd` (empty: none).
    pub cmd: &'static [&'static str],
    /// The config's `User` (empty: none, so root).
    pub user: &'static str,
    /// What its root filesystem holds besides busybox.
    pub rootfs: Rootfs,
    /// True for the images runtimes keep between cases (sandbox and container images), which
    /// `images pull` puts in the runtime; the image-manager images are pulled and removed by
    /// the cases themselves, so a pre-pull would only hide what the cases check.
    pub kept: bool,
    /// True for the images critest v1.36.0 itself runs: their `/bin` also holds the programs
    /// its specs exec there ([`CRITEST_APPLETS`] and `ipcs`), as the e2e images it names do.
    pub critest_tools: bool,
}

/// The busybox applets critest v1.36.0's security specs exec in its busybox and nginx images
/// that [`APPLETS`] leaves out: `brctl` (Privileged, adding capability: `brctl addbr`), `pidof`
/// (HostPID: `pidof nginx`) and `ping` (dropping NET_RAW: `ping 127.0.0.1` must be refused; the
/// one network client in any image here, and critest pings only the loopback with it). Those
/// images also have an `ipcs -m` script, as busybox-static has no such applet (HostIpc). Only
/// critest's images carry them: the harness's own cases never need them.
pub const CRITEST_APPLETS: &[&str] = &["brctl", "pidof", "ping"];

/// `i32::MAX` seconds (68 years): outlives any run, and every `sleep` parses it. `sleep` as PID 1
/// has no SIGTERM handler, so the kernel drops SIGTERM for it; runtimes stop sandboxes with
/// SIGKILL anyway.
const PAUSE_SECONDS: &str = "2147483647";

/// A reference under the registry critest v1.26.1 takes its image-manager images from
/// (`registry` in `pkg/validate/consts.go`), so a runtime with internet reaches the same ones.
macro_rules! critest {
    ($path:literal) => {
        concat!("gcr.io/k8s-staging-cri-tools/", $path)
    };
}

/// An image the image-manager cases pull and remove themselves: a shell, no user, one tag.
const fn case_image(
    name: &'static str,
    reference: &'static str,
    purpose: &'static str,
) -> TestImage {
    TestImage {
        name,
        reference,
        more_tags: &[],
        also_at: &[],
        purpose,
        entrypoint: &[],
        cmd: &["sh"],
        user: "",
        rootfs: Rootfs::Busybox,
        kept: false,
        critest_tools: false,
    }
}

/// What an image's root filesystem holds: every one has busybox and its applets; some images
/// critest names carry more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rootfs {
    /// Busybox and the accounts `root`, `www-data` and `nobody`.
    Busybox,
    /// Also the NoNewPrivs checker (`/usr/local/bin/nnp`, setuid root), as in the e2e
    /// `nonewprivs` image: it prints the effective uid it runs with. x86-64 only.
    NoNewPrivs,
    /// Also the user `default-user` (uid 1000, gid 1000), whom the image's /etc/group puts in
    /// `group-defined-in-image` (gid 50000), as critest's `test-image-predefined-group`.
    PredefinedGroup,
    /// Also a page to serve, `/www/index.html` ([`WEB_ROOT`]), for the web server images
    /// critest names (nginx, httpd): busybox's `httpd` serves it with status 200; and
    /// `/var/run` for nginx's pid file.
    WebServer,
}

/// Where a [`Rootfs::WebServer`] image keeps the page its server serves.
pub const WEB_ROOT: &str = "/www";

/// The config of a web server image critest names: it says on its log that it serves, as
/// critest's multi-container spec reads "httpd" from the server's log, then becomes busybox's
/// `httpd` in the foreground on `port`, serving [`WEB_ROOT`].
macro_rules! web_server {
    ($port:literal) => {
        &[
            "/bin/sh",
            "-c",
            concat!(
                "echo httpd: serving /www on port ",
                $port,
                "; exec httpd -f -p ",
                $port,
                " -h /www"
            ),
        ]
    };
}

/// The nginx image's config: a web server on port 80 as [`web_server!`]'s, under a first
/// process that shows what critest's PID namespace specs read of nginx's: its pid in
/// `/var/run/nginx.pid`, the name `nginx` (its `comm`, which the shell sets for itself, so
/// `pidof nginx` in a host-PID container finds it), and `master process` in its command line
/// (the shell's last argument). The shell stays PID 1 and exits 0 on SIGTERM, taking the
/// server with it.
const NGINX_ENTRYPOINT: &[&str] = &[
    "/bin/sh",
    "-c",
    "echo $$ >/var/run/nginx.pid; printf nginx >/proc/$$/comm; \
     echo httpd: serving /www on port 80; \
     httpd -f -p 80 -h /www & server=$!; trap 'kill $server; exit 0' TERM; wait",
    "nginx: master process",
];

/// A web server image critest v1.36.0 names, serving on `port` (a `web_server!` entrypoint).
const fn web_image(
    name: &'static str,
    reference: &'static str,
    entrypoint: &'static [&'static str],
    purpose: &'static str,
) -> TestImage {
    TestImage {
        entrypoint,
        cmd: &[],
        rootfs: Rootfs::WebServer,
        critest_tools: true,
        ..case_image(name, reference, purpose)
    }
}

/// A case image whose config names a user, as critest's `test-image-user-*` do.
const fn user_image(name: &'static str, reference: &'static str, user: &'static str) -> TestImage {
    TestImage {
        user,
        ..case_image(
            name,
            reference,
            "image status: the config's User gives uid or username",
        )
    }
}

static CATALOGUE: [TestImage; 33] = [
    TestImage {
        name: "pause",
        reference: "registry.k8s.io/pause:3.9",
        more_tags: &[],
        also_at: &[],
        purpose: "sandbox (infra) image: its process sleeps until the runtime kills it",
        // Run as `busybox sleep`, so the process is named `busybox`, not `sleep`: in a pod
        // that shares its PID namespace, critest's `pgrep sleep` must find only its own sleeps.
        entrypoint: &["/bin/busybox", "sleep", PAUSE_SECONDS],
        cmd: &[],
        user: "",
        rootfs: Rootfs::Busybox,
        kept: true,
        critest_tools: false,
    },
    TestImage {
        name: "busybox",
        reference: "registry.k8s.io/e2e-test-images/busybox:1.36.1-1",
        more_tags: &[],
        also_at: &[],
        purpose: "test containers: a static busybox with sh, sleep, httpd and friends",
        entrypoint: &[],
        cmd: &["sh"],
        user: "",
        rootfs: Rootfs::Busybox,
        kept: true,
        critest_tools: false,
    },
    case_image(
        "test-image-tag",
        critest!("test-image-tag:test"),
        "pull and remove by tag",
    ),
    case_image(
        "test-image-latest",
        critest!("test-image-latest:latest"),
        "pull and remove without a tag (:latest)",
    ),
    case_image(
        "test-image-tag-all",
        critest!("test-image-tag:all"),
        "image status by every kind of reference",
    ),
    case_image(
        "test-image-1",
        critest!("test-image-1:latest"),
        "list images: the first of three different images",
    ),
    case_image(
        "test-image-2",
        critest!("test-image-2:latest"),
        "list images: the second of three different images",
    ),
    case_image(
        "test-image-3",
        critest!("test-image-3:latest"),
        "list images: the third of three different images",
    ),
    TestImage {
        more_tags: &["2", "3"],
        ..case_image(
            "test-image-tags",
            critest!("test-image-tags:1"),
            "list images: one image under three tags",
        )
    },
    user_image(
        "test-image-user-uid",
        critest!("test-image-user-uid:latest"),
        "1002",
    ),
    user_image(
        "test-image-user-username",
        critest!("test-image-user-username:latest"),
        "www-data",
    ),
    user_image(
        "test-image-user-uid-group",
        critest!("test-image-user-uid-group:latest"),
        "1003:www-data",
    ),
    user_image(
        "test-image-user-username-group",
        critest!("test-image-user-username-group:latest"),
        "www-data:www-data",
    ),
    TestImage {
        user: "1000",
        rootfs: Rootfs::PredefinedGroup,
        ..case_image(
            "test-image-predefined-group",
            critest!("test-image-predefined-group:latest"),
            "supplemental groups: the image's /etc/group puts its user (1000) in group 50000",
        )
    },
    TestImage {
        cmd: &["/usr/local/bin/nnp"],
        rootfs: Rootfs::NoNewPrivs,
        ..case_image(
            "nonewprivs",
            "registry.k8s.io/e2e-test-images/nonewprivs:1.3",
            "NoNewPrivs: a setuid-root checker prints the effective uid it gets",
        )
    },
    // critest v1.36.0's own images, so critest runs against the mock, and against a runtime
    // that pulls from the harness's registry, as it does online (`pkg/validate/consts.go`,
    // `multi_container_linux.go` and the framework's default test container image).
    TestImage {
        critest_tools: true,
        ..case_image(
            "critest-busybox",
            "registry.k8s.io/e2e-test-images/busybox:1.29-2",
            "critest v1.36.0's test containers: the same busybox under the tag critest names",
        )
    },
    web_image(
        "critest-nginx",
        "registry.k8s.io/e2e-test-images/nginx:1.14-2",
        NGINX_ENTRYPOINT,
        "critest v1.36.0's networking and port-forward specs: a web server on port 80",
    ),
    web_image(
        "critest-httpd",
        "registry.k8s.io/e2e-test-images/httpd:2.4.39-4",
        web_server!("80"),
        "critest v1.36.0's multi-container specs: a web server on port 80 that logs `httpd`",
    ),
    web_image(
        "critest-hostnet-nginx",
        critest!("hostnet-nginx-amd64:latest"),
        web_server!("12003"),
        "critest v1.36.0's port forward in the host network: a web server on port 12003",
    ),
    // The harness's own images: no public registry has them, so they live under `localhost`.
    case_image(
        "harness-digest",
        "localhost/cri-harness/digest:1",
        "pull by digest: the harness learns the digest of an image it built itself",
    ),
    TestImage {
        more_tags: &["2"],
        ..case_image(
            "harness-two-tags",
            "localhost/cri-harness/two-tags:1",
            "remove by one tag of an image with two",
        )
    },
    case_image(
        "harness-short-name",
        "docker.io/library/cri-harness-short-name:latest",
        "status and remove by a short name (`cri-harness-short-name`)",
    ),
    case_image(
        BENCH_IMAGE,
        "localhost/cri-harness/bench:1",
        "`cri-harness bench`: the image benchmark pulls, reads and removes it over and over",
    ),
    // critest v1.36.0's image consistency and identifier specs, one image per case so cases
    // running at once never remove each other's image.
    case_image(
        "harness-listed-after-pull",
        "localhost/cri-harness/listed-after-pull:1",
        "image consistency: listed and answering ImageStatus as soon as the pull returns",
    ),
    case_image(
        "harness-removed-at-once",
        "localhost/cri-harness/removed-at-once:1",
        "image consistency: several RemoveImage calls at once all succeed",
    ),
    case_image(
        "harness-unlisted-after-removal",
        "localhost/cri-harness/unlisted-after-removal:1",
        "image consistency: neither listed nor answering as soon as RemoveImage returns",
    ),
    case_image(
        "harness-one-id",
        "localhost/cri-harness/one-id:1",
        "image id consistency: PullImage, ImageStatus, ListImages and ContainerStatus agree",
    ),
    TestImage {
        also_at: &["registry.k8s.io"],
        ..case_image(
            "harness-two-registries",
            "localhost/cri-harness/two-registries:1",
            "image id consistency: one image pulled from two registries (`registry.k8s.io/cri-harness/...` too) is one id",
        )
    },
    TestImage {
        also_at: &["registry.k8s.io"],
        ..case_image(
            "harness-removed-from-one-registry",
            "localhost/cri-harness/removed-from-one-registry:1",
            "remove by the name of one registry: the other registry's name goes too",
        )
    },
    case_image(
        "harness-pull-timeout",
        "localhost/cri-harness/pull-timeout:1",
        "a pull whose deadline passes fails with DeadlineExceeded",
    ),
    case_image(
        "harness-missing-repository",
        "localhost/cri-harness/missing-repository:1",
        "pull errors: the control of a pull from a repository the registry lacks",
    ),
    case_image(
        "harness-missing-tag",
        "localhost/cri-harness/missing-tag:1",
        "pull errors: the control of a pull of a tag the repository lacks",
    ),
    case_image(
        "harness-malformed-reference",
        "localhost/cri-harness/malformed-reference:1",
        "pull errors: the control of a pull by a malformed reference (the same in upper case)",
    ),
];

/// The symbol of the image `cri-harness bench` pulls and removes: its own, so the benchmark
/// never removes an image that cases share.
pub const BENCH_IMAGE: &str = "harness-bench";

/// Every image the suites need, in a fixed order.
pub fn catalogue() -> &'static [TestImage] {
    &CATALOGUE
}

/// The catalogue entry with this symbol or one of its references (normalised).
pub fn find(symbol_or_ref: &str) -> Option<&'static TestImage> {
    if let Some(image) = CATALOGUE.iter().find(|image| image.name == symbol_or_ref) {
        return Some(image);
    }
    let wanted = Reference::parse(symbol_or_ref);
    CATALOGUE.iter().find(|image| {
        image.repository_full() == wanted.repository
            && wanted
                .tag
                .as_deref()
                .is_some_and(|tag| image.tags().any(|t| t == tag))
    })
}

/// Maps a catalogue symbol (`pause`, `busybox`) to its reference, and `symbol:tag` to another
/// tag of that image (`test-image-tags:2`); any other string is taken to be a reference
/// already and passes through unchanged.
pub fn resolve(symbol_or_ref: &str) -> String {
    if let Some(image) = CATALOGUE.iter().find(|image| image.name == symbol_or_ref) {
        return image.reference.to_owned();
    }
    if let Some((symbol, tag)) = symbol_or_ref.split_once(':') {
        if let Some(image) = CATALOGUE
            .iter()
            .find(|image| image.name == symbol && image.tags().any(|t| t == tag))
        {
            return image.reference_with_tag(tag);
        }
    }
    symbol_or_ref.to_owned()
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

    /// The repository with its host, as runtimes write it before `:tag` or `@digest`.
    pub fn repository_full(&self) -> String {
        format!("{}/{}", self.registry_host(), self.repository())
    }

    /// The tag of the reference (`1.36.1-1`).
    pub fn tag(&self) -> &'static str {
        self.reference
            .rsplit_once(':')
            .map_or("latest", |(_, tag)| tag)
    }

    /// Every tag of the image: the reference's first, then the others.
    pub fn tags(&self) -> impl Iterator<Item = &'static str> {
        std::iter::once(self.tag()).chain(self.more_tags.iter().copied())
    }

    /// The reference with another tag of the image.
    pub fn reference_with_tag(&self, tag: &str) -> String {
        format!("{}:{tag}", self.repository_full())
    }

    /// Every reference of the image, one per tag.
    pub fn references(&self) -> Vec<String> {
        self.tags()
            .map(|tag| self.reference_with_tag(tag))
            .collect()
    }

    /// Every reference the suites may name the image by: each tag under its own registry,
    /// then under each registry it is [`also_at`](TestImage::also_at).
    pub fn all_references(&self) -> Vec<String> {
        let mut references = self.references();
        for host in self.also_at {
            references.extend(
                self.tags()
                    .map(|tag| format!("{host}/{}:{tag}", self.repository())),
            );
        }
        references
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
    /// The image needs the NoNewPrivs checker, which exists for x86-64 alone.
    #[error("image {image} needs the NoNewPrivs checker, which is x86-64 code; the busybox is for {architecture}")]
    CheckerArchitecture {
        /// The image's reference.
        image: &'static str,
        /// The busybox's OCI architecture.
        architecture: &'static str,
    },
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
    /// A file the harness image is built from could not be read.
    #[error("cannot read {}", path.display())]
    ReadFile {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// An ELF object's headers or dynamic section could not be read.
    #[error("cannot read the ELF headers of {}", path.display())]
    Elf {
        /// The object.
        path: PathBuf,
        /// What the ELF reader found wrong.
        source: object::read::Error,
    },
    /// A library an object needs is in none of the directories the loader searches.
    #[error("library {library}, needed by {}, is in none of the directories the loader searches", needed_by.display())]
    LibraryNotFound {
        /// The `DT_NEEDED` name.
        library: String,
        /// The binary or library that needs it.
        needed_by: PathBuf,
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
    fn an_image_of_two_registries_is_named_under_both() {
        let image = find("harness-two-registries").unwrap();
        assert_eq!(
            image.all_references(),
            [
                "localhost/cri-harness/two-registries:1",
                "registry.k8s.io/cri-harness/two-registries:1"
            ]
        );
        let busybox = find("busybox").unwrap();
        assert_eq!(busybox.all_references(), busybox.references());
    }

    #[rstest]
    #[case::another_tag("test-image-tags:2", "gcr.io/k8s-staging-cri-tools/test-image-tags:2")]
    #[case::first_tag("test-image-tags:1", "gcr.io/k8s-staging-cri-tools/test-image-tags:1")]
    #[case::not_a_tag_of_it("test-image-tags:4", "test-image-tags:4")]
    #[case::docker_reference_of_a_symbol("busybox:1.36", "busybox:1.36")]
    fn resolve_maps_a_symbol_and_one_of_its_tags(#[case] input: &str, #[case] expected: &str) {
        assert_eq!(resolve(input), expected);
    }

    #[test]
    fn find_knows_an_image_by_any_of_its_tags_but_no_other() {
        let image = find("test-image-tags").unwrap();
        for tag in ["1", "2", "3"] {
            assert_eq!(find(&image.reference_with_tag(tag)), Some(image), "{tag}");
        }
        assert_eq!(find(&image.reference_with_tag("4")), None);
        assert_eq!(
            find("gcr.io/k8s-staging-cri-tools/test-image-latest").map(|i| i.name),
            Some("test-image-latest")
        );
    }

    #[test]
    fn only_the_sandbox_and_container_images_are_kept_between_cases() {
        let kept: Vec<&str> = catalogue()
            .iter()
            .filter(|i| i.kept)
            .map(|i| i.name)
            .collect();
        assert_eq!(kept, ["pause", "busybox"]);
        assert!(find(BENCH_IMAGE).is_some_and(|i| !i.kept));
    }

    #[test]
    fn find_accepts_symbols_and_references_alike() {
        assert_eq!(find("pause"), find("registry.k8s.io/pause:3.9"));
        assert!(find("registry.k8s.io/pause:3.10").is_none());
    }

    #[test]
    fn catalogue_names_and_references_are_unique() {
        let mut names: Vec<_> = catalogue().iter().map(|image| image.name).collect();
        let mut refs: Vec<_> = catalogue().iter().flat_map(TestImage::references).collect();
        let all = refs.len();
        names.sort_unstable();
        names.dedup();
        refs.sort_unstable();
        refs.dedup();
        assert_eq!(names.len(), catalogue().len());
        assert_eq!(refs.len(), all);
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
