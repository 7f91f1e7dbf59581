//! The references a run sends for the images its cases name: a catalogue symbol becomes its
//! public reference, and under `--registry-prefix` every reference is taken from one mirror
//! instead, as critest's `-registry-prefix` does, for runtimes that cannot remap registry names.

use super::{catalogue, find, resolve, Reference, TestImage};

/// How the images a case names become the references it sends: the catalogue's public
/// references, or, with a registry prefix, the same paths under one mirror.
///
/// Under a prefix `P`, as critest v1.36.0's `PrepareImageName` does:
/// - `HOST/PATH` becomes `P/PATH`, the path without its registry host
///   (`registry.k8s.io/e2e-test-images/busybox:1.36.1-1` -> `P/e2e-test-images/busybox:1.36.1-1`);
///   Docker Hub's `docker.io/library/x` keeps `library/` as part of its path;
/// - a name written without a registry (`busybox:1.36`) is prefixed as written (`P/busybox:1.36`);
/// - the tag and digest stay. critest keeps only the repository path (distribution's
///   `reference.Path`) and so pulls `:latest` of every tagged image; a case by tag or digest
///   needs the tag or digest it names;
/// - an image id (`sha256:...`, 64 hex digits) and a reference already under `P` pass unchanged;
/// - a catalogue image named under another registry than its own (`registry.k8s.io/cri-harness/
///   two-registries:1` of `localhost/cri-harness/two-registries:1`) keeps that host as its first
///   path component (`P/registry.k8s.io/cri-harness/two-registries:1`), so a case that pulls one
///   image by two registries' names still has two names. critest maps both to one name, and
///   then its case cannot hold. `images push` pushes the image at both paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageNames {
    prefix: Option<String>,
}

/// Why a registry prefix cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrefixError {
    /// The prefix has a scheme (`http://`): references have none.
    #[error("registry prefix {0:?} has a scheme; give HOST[:PORT][/PATH] as references write it")]
    Scheme(String),
    /// The prefix names no registry host.
    #[error(
        "registry prefix {0:?} names no registry host (a first component with a dot or a port, or localhost)"
    )]
    NoHost(String),
    /// A path component of the prefix is not one a reference may hold.
    #[error("registry prefix {prefix:?} has {component:?}, which no image reference may hold")]
    Component {
        /// The prefix as given.
        prefix: String,
        /// The offending component.
        component: String,
    },
}

impl ImageNames {
    /// The catalogue's public references, unchanged.
    pub fn public() -> Self {
        Self::default()
    }

    /// Every image from the mirror `prefix` (`HOST[:PORT][/PATH]`, a trailing `/` dropped).
    pub fn with_prefix(prefix: &str) -> Result<Self, PrefixError> {
        let trimmed = prefix.trim_end_matches('/');
        if trimmed.contains("://") {
            return Err(PrefixError::Scheme(prefix.to_owned()));
        }
        let mut components = trimmed.split('/');
        let host = components.next().unwrap_or_default();
        if !is_host(host) || host.contains('@') {
            return Err(PrefixError::NoHost(prefix.to_owned()));
        }
        if let Some(bad) = components.find(|c| !is_path_component(c)) {
            return Err(PrefixError::Component {
                prefix: prefix.to_owned(),
                component: bad.to_owned(),
            });
        }
        Ok(Self {
            prefix: Some(trimmed.to_owned()),
        })
    }

    /// `--registry-prefix` as given: none is the public references.
    pub fn from_flag(prefix: Option<&str>) -> Result<Self, PrefixError> {
        prefix.map_or_else(|| Ok(Self::public()), Self::with_prefix)
    }

    /// The mirror every image comes from, if any.
    pub fn prefix(&self) -> Option<&str> {
        self.prefix.as_deref()
    }

    /// The reference a case sends for a catalogue symbol (`busybox`, `test-image-tags:2`) or a
    /// reference it names.
    pub fn resolve(&self, symbol_or_ref: &str) -> String {
        self.map(&resolve(symbol_or_ref))
    }

    /// `reference` as this run sends it (see [`ImageNames`] for the rules).
    pub fn map(&self, reference: &str) -> String {
        let Some(prefix) = &self.prefix else {
            return reference.to_owned();
        };
        if is_image_id(reference) || reference.starts_with(&format!("{prefix}/")) {
            return reference.to_owned();
        }
        let Some((host, rest)) = reference
            .split_once('/')
            .filter(|(first, _)| is_host(first))
        else {
            return format!("{prefix}/{reference}");
        };
        let hub = host == "docker.io" || host == "index.docker.io";
        let host = if hub { "docker.io" } else { host };
        let path = if hub {
            // Docker Hub's path as the registry stores it (`busybox` is `library/busybox`).
            let parsed = Reference::parse(reference);
            let repository = parsed.repository.trim_start_matches("docker.io/");
            let suffix = &rest[repository_end(rest)..];
            format!("{repository}{suffix}")
        } else {
            rest.to_owned()
        };
        let repository = &path[..repository_end(&path)];
        let foreign = catalogue()
            .iter()
            .any(|image| image.repository() == repository && image.registry_host() != host);
        if foreign {
            format!("{prefix}/{host}/{path}")
        } else {
            format!("{prefix}/{path}")
        }
    }

    /// Every reference the suites may name a catalogue image by (each tag, under its own
    /// registry and those it is also named under), each with the reference this run sends for
    /// it: what `images push` fills a mirror with, and what a case's snapshot shows.
    pub fn catalogue_references(&self) -> Vec<(String, String)> {
        catalogue()
            .iter()
            .flat_map(TestImage::all_references)
            .map(|public| {
                let sent = self.map(&public);
                (public, sent)
            })
            .collect()
    }

    /// The repositories this run sends that differ from the public ones, each with the public
    /// repository: a case's reference results are the same with and without a prefix.
    pub fn repositories_shown(&self) -> Vec<(String, String)> {
        if self.prefix.is_none() {
            return Vec::new();
        }
        let mut pairs: Vec<(String, String)> = self
            .catalogue_references()
            .into_iter()
            .map(|(public, sent)| {
                (
                    sent[..repository_end(&sent)].to_owned(),
                    public[..repository_end(&public)].to_owned(),
                )
            })
            .collect();
        pairs.sort();
        pairs.dedup();
        pairs
    }
}

/// The catalogue image a registry serves under `reference`, whichever host serves it: the
/// image of that exact repository, else (a mirror's name) the image of its path, with a host a
/// mirror keeps in the path (see [`ImageNames`]) taken off.
pub fn find_served(reference: &str) -> Option<&'static TestImage> {
    find(reference).or_else(|| {
        let parsed = Reference::parse(reference);
        let path = served_path(
            parsed
                .repository
                .split_once('/')
                .map_or("", |(_, path)| path),
        );
        let tag = parsed.tag.as_deref()?;
        catalogue()
            .iter()
            .find(|image| image.repository() == path && image.tags().any(|t| t == tag))
    })
}

/// The path a registry serves a repository path from: a catalogue image's own path when
/// `path` is that path behind a registry host a mirror keeps (`registry.k8s.io/cri-harness/
/// two-registries`), else `path` itself.
pub fn served_path(path: &str) -> &str {
    match path.split_once('/') {
        Some((host, rest))
            if is_host(host)
                && catalogue()
                    .iter()
                    .any(|image| image.repository() == rest && image.registry_host() != host) =>
        {
            rest
        }
        _ => path,
    }
}

/// A first reference component that Docker's grammar reads as a registry host.
fn is_host(component: &str) -> bool {
    !component.is_empty()
        && (component.contains('.') || component.contains(':') || component == "localhost")
}

/// An image id rather than a name: `sha256:` and hex, or 64 bare hex digits.
fn is_image_id(text: &str) -> bool {
    let hex = |t: &str| !t.is_empty() && t.chars().all(|c| c.is_ascii_hexdigit());
    text.strip_prefix("sha256:").is_some_and(hex) || (text.len() == 64 && hex(text))
}

/// Where a reference's repository ends: before its `:tag` (after the last `/`) or `@digest`.
fn repository_end(reference: &str) -> usize {
    let name_end = reference.find('@').unwrap_or(reference.len());
    let last_slash = reference[..name_end].rfind('/').map_or(0, |i| i + 1);
    reference[last_slash..name_end]
        .find(':')
        .map_or(name_end, |colon| last_slash + colon)
}

/// A repository path component: lower-case alphanumerics joined by `.`, `_`, `__` or dashes.
fn is_path_component(component: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let mut chars = component.chars();
    let ends_ok =
        component.chars().next().is_some_and(alnum) && component.chars().last().is_some_and(alnum);
    ends_ok
        && chars.all(|c| alnum(c) || matches!(c, '.' | '_' | '-'))
        && !component.contains("..")
        && !component.contains("___")
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    const P: &str = "127.0.0.1:5000";

    #[rstest]
    #[case::harness_image(
        "localhost/cri-harness/busybox:x",
        "127.0.0.1:5000/cri-harness/busybox:x"
    )]
    #[case::registry_k8s_io(
        "registry.k8s.io/e2e-test-images/busybox:1.29-2",
        "127.0.0.1:5000/e2e-test-images/busybox:1.29-2"
    )]
    #[case::gcr_io(
        "gcr.io/k8s-staging-cri-tools/test-image-tags:2",
        "127.0.0.1:5000/k8s-staging-cri-tools/test-image-tags:2"
    )]
    #[case::untagged("registry.k8s.io/pause", "127.0.0.1:5000/pause")]
    #[case::digest(
        "localhost/cri-harness/digest@sha256:abcd",
        "127.0.0.1:5000/cri-harness/digest@sha256:abcd"
    )]
    #[case::tag_and_digest(
        "localhost/cri-harness/digest:1@sha256:abcd",
        "127.0.0.1:5000/cri-harness/digest:1@sha256:abcd"
    )]
    #[case::registry_with_port("localhost:5000/app:v2", "127.0.0.1:5000/app:v2")]
    #[case::short_name_as_written("busybox", "127.0.0.1:5000/busybox")]
    #[case::short_name_with_tag("busybox:1.36", "127.0.0.1:5000/busybox:1.36")]
    #[case::hub_user_as_written("user/app:1", "127.0.0.1:5000/user/app:1")]
    #[case::hub_library(
        "docker.io/library/cri-harness-short-name:latest",
        "127.0.0.1:5000/library/cri-harness-short-name:latest"
    )]
    #[case::hub_official_qualified("docker.io/busybox:1", "127.0.0.1:5000/library/busybox:1")]
    #[case::hub_index("index.docker.io/library/busybox", "127.0.0.1:5000/library/busybox")]
    #[case::second_registry_keeps_its_host(
        "registry.k8s.io/cri-harness/two-registries:1",
        "127.0.0.1:5000/registry.k8s.io/cri-harness/two-registries:1"
    )]
    #[case::first_registry_does_not(
        "localhost/cri-harness/two-registries:1",
        "127.0.0.1:5000/cri-harness/two-registries:1"
    )]
    #[case::already_mirrored(
        "127.0.0.1:5000/cri-harness/digest:1",
        "127.0.0.1:5000/cri-harness/digest:1"
    )]
    #[case::image_id(
        "sha256:0000000000000000000000000000000000000000000000000000000000000000",
        "sha256:0000000000000000000000000000000000000000000000000000000000000000"
    )]
    #[case::short_id("sha256:0123456789ab", "sha256:0123456789ab")]
    #[case::bare_id(
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
    )]
    #[case::upper_case_stays_as_written(
        "localhost/cri-harness/Malformed:1",
        "127.0.0.1:5000/cri-harness/Malformed:1"
    )]
    fn a_prefix_takes_every_name_from_the_mirror(#[case] given: &str, #[case] sent: &str) {
        let names = ImageNames::with_prefix(P).unwrap();
        assert_eq!(names.map(given), sent);
    }

    #[rstest]
    #[case::pause("pause", "127.0.0.1:5000/pause:3.9")]
    #[case::busybox("busybox", "127.0.0.1:5000/e2e-test-images/busybox:1.36.1-1")]
    #[case::another_tag(
        "test-image-tags:3",
        "127.0.0.1:5000/k8s-staging-cri-tools/test-image-tags:3"
    )]
    #[case::harness_symbol("harness-digest", "127.0.0.1:5000/cri-harness/digest:1")]
    fn a_symbol_resolves_to_its_mirror_reference(#[case] symbol: &str, #[case] sent: &str) {
        let names = ImageNames::with_prefix(P).unwrap();
        assert_eq!(names.resolve(symbol), sent);
        assert_eq!(ImageNames::public().resolve(symbol), resolve(symbol));
    }

    #[rstest]
    #[case::nested_path("mirror.example:443/ci/images/", "mirror.example:443/ci/images")]
    #[case::localhost("localhost", "localhost")]
    fn a_prefix_may_carry_a_path(#[case] given: &str, #[case] kept: &str) {
        let names = ImageNames::with_prefix(given).unwrap();
        assert_eq!(names.prefix(), Some(kept));
        assert_eq!(
            names.resolve("harness-digest"),
            format!("{kept}/cri-harness/digest:1")
        );
    }

    #[rstest]
    #[case::scheme("http://127.0.0.1:5000")]
    #[case::no_host("mirror")]
    #[case::empty("")]
    #[case::upper_case_path("127.0.0.1:5000/Images")]
    #[case::empty_component("127.0.0.1:5000//images")]
    fn a_prefix_that_no_reference_can_start_with_is_refused(#[case] given: &str) {
        assert!(ImageNames::with_prefix(given).is_err(), "{given}");
    }

    #[test]
    fn without_a_prefix_every_reference_passes_unchanged() {
        let names = ImageNames::public();
        for (public, sent) in names.catalogue_references() {
            assert_eq!(public, sent);
        }
        assert!(names.repositories_shown().is_empty());
        assert_eq!(names.map("busybox"), "busybox");
    }

    #[test]
    fn no_two_catalogue_names_share_a_mirror_reference() {
        let names = ImageNames::with_prefix(P).unwrap();
        let mut sent: Vec<String> = names
            .catalogue_references()
            .into_iter()
            .map(|(_, sent)| sent)
            .collect();
        let all = sent.len();
        sent.sort();
        sent.dedup();
        assert_eq!(sent.len(), all);
    }

    #[test]
    fn every_mirror_reference_is_served_as_the_image_it_stands_for() {
        let names = ImageNames::with_prefix(P).unwrap();
        for (public, sent) in names.catalogue_references() {
            let image = find_served(&public).map(|i| i.name);
            assert!(image.is_some(), "{public}");
            assert_eq!(find_served(&sent).map(|i| i.name), image, "{sent}");
        }
    }

    #[test]
    fn the_snapshot_shows_the_public_repository_of_each_mirror_one() {
        let names = ImageNames::with_prefix(P).unwrap();
        let shown = names.repositories_shown();
        assert!(shown.contains(&(
            "127.0.0.1:5000/registry.k8s.io/cri-harness/two-registries".to_owned(),
            "registry.k8s.io/cri-harness/two-registries".to_owned()
        )));
        assert!(shown.contains(&(
            "127.0.0.1:5000/e2e-test-images/busybox".to_owned(),
            "registry.k8s.io/e2e-test-images/busybox".to_owned()
        )));
    }

    #[rstest]
    #[case::own_path("cri-harness/two-registries", "cri-harness/two-registries")]
    #[case::behind_another_host(
        "registry.k8s.io/cri-harness/two-registries",
        "cri-harness/two-registries"
    )]
    #[case::behind_its_own_host(
        "localhost/cri-harness/two-registries",
        "localhost/cri-harness/two-registries"
    )]
    #[case::not_a_catalogue_path("registry.k8s.io/other/thing", "registry.k8s.io/other/thing")]
    fn a_mirror_serves_a_second_registrys_path_as_the_image(
        #[case] path: &str,
        #[case] served: &str,
    ) {
        assert_eq!(served_path(path), served);
    }
}
