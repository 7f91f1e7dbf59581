//! Image references in Docker's grammar, normalised the way containerd does before it stores or
//! looks up an image (`busybox` -> `docker.io/library/busybox:latest`), so the mock answers the
//! same tags and digests and the steps compare references a runtime wrote with the suite's.

/// A reference in its fully qualified form: registry, repository, tag or digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// `registry/path`, e.g. `docker.io/library/busybox`.
    pub repository: String,
    /// The tag (`latest` when neither tag nor digest was given).
    pub tag: Option<String>,
    /// `sha256:...` when it names a digest.
    pub digest: Option<String>,
}

impl Reference {
    /// Qualifies a reference as Docker's reference grammar (and so containerd) does: a first
    /// path component is a registry only if it has a dot or a colon or is `localhost`; Docker
    /// Hub's official images live under `library/`; no tag and no digest means `latest`.
    pub fn parse(reference: &str) -> Self {
        let (name, digest) = match reference.split_once('@') {
            Some((name, digest)) => (name, Some(digest.to_owned())),
            None => (reference, None),
        };
        let last_slash = name.rfind('/').map_or(0, |i| i + 1);
        let (name, tag) = match name[last_slash..].rfind(':') {
            Some(colon) => (
                &name[..last_slash + colon],
                Some(name[last_slash + colon + 1..].to_owned()),
            ),
            None => (name, None),
        };
        let (registry, path) = match name.split_once('/') {
            Some((first, rest))
                if first.contains('.') || first.contains(':') || first == "localhost" =>
            {
                (first, rest.to_owned())
            }
            _ => ("docker.io", name.to_owned()),
        };
        let registry = if registry == "index.docker.io" {
            "docker.io"
        } else {
            registry
        };
        let path = if registry == "docker.io" && !path.contains('/') {
            format!("library/{path}")
        } else {
            path
        };
        let tag = match (&tag, &digest) {
            (None, None) => Some("latest".to_owned()),
            _ => tag,
        };
        Self {
            repository: format!("{registry}/{path}"),
            tag,
            digest,
        }
    }

    /// The normalised reference as a string.
    pub fn to_full(&self) -> String {
        let mut out = self.repository.clone();
        if let Some(tag) = &self.tag {
            out.push(':');
            out.push_str(tag);
        }
        if let Some(digest) = &self.digest {
            out.push('@');
            out.push_str(digest);
        }
        out
    }

    /// `repository:tag`, as a runtime lists it in `repo_tags` (none for a digest reference).
    pub fn repo_tag(&self) -> Option<String> {
        match (&self.tag, &self.digest) {
            (Some(tag), None) => Some(format!("{}:{tag}", self.repository)),
            _ => None,
        }
    }
}

/// The normalised form of `reference` (see [`Reference::parse`]).
pub fn normalise(reference: &str) -> String {
    Reference::parse(reference).to_full()
}

/// True for `sha256:` followed by 64 lower-case hex digits: a digest a runtime reports.
pub fn is_sha256_digest(text: &str) -> bool {
    text.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64 && hex.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f'))
    })
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::official_image("busybox", "docker.io/library/busybox:latest")]
    #[case::tagged("busybox:1.36", "docker.io/library/busybox:1.36")]
    #[case::hub_user("user/app", "docker.io/user/app:latest")]
    #[case::hub_explicit("docker.io/busybox", "docker.io/library/busybox:latest")]
    #[case::hub_index("index.docker.io/library/busybox:1", "docker.io/library/busybox:1")]
    #[case::registry_with_port("localhost:5000/app", "localhost:5000/app:latest")]
    #[case::registry_with_port_and_tag("localhost:5000/app:v2", "localhost:5000/app:v2")]
    #[case::registry_domain("registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.9")]
    #[case::localhost("localhost/app", "localhost/app:latest")]
    #[case::digest("busybox@sha256:abc", "docker.io/library/busybox@sha256:abc")]
    #[case::tag_and_digest("busybox:1@sha256:abc", "docker.io/library/busybox:1@sha256:abc")]
    fn references_normalise_like_containerd(#[case] given: &str, #[case] full: &str) {
        assert_eq!(normalise(given), full);
    }

    #[rstest]
    #[case::tag("busybox:1", Some("docker.io/library/busybox:1"))]
    #[case::untagged("gcr.io/x/y", Some("gcr.io/x/y:latest"))]
    #[case::digest("gcr.io/x/y@sha256:abc", None)]
    #[case::tag_and_digest("gcr.io/x/y:1@sha256:abc", None)]
    fn only_a_reference_without_a_digest_is_a_repo_tag(
        #[case] given: &str,
        #[case] tag: Option<&str>,
    ) {
        assert_eq!(Reference::parse(given).repo_tag().as_deref(), tag);
    }

    #[rstest]
    #[case::digest(&format!("sha256:{}", "a".repeat(64)), true)]
    #[case::short(&format!("sha256:{}", "a".repeat(12)), false)]
    #[case::upper_case(&format!("sha256:{}", "A".repeat(64)), false)]
    #[case::no_algorithm(&"a".repeat(64), false)]
    fn sha256_digests_are_told_apart(#[case] text: &str, #[case] expected: bool) {
        assert_eq!(is_sha256_digest(text), expected);
    }
}
