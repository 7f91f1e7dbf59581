//! Runtime versions as the seed kubelet reads them: strict semver, compared with pre-release
//! before release and build metadata ignored.

use std::cmp::Ordering;

use serde::Serialize;

use super::ManagerError;

/// A version string the runtime reported, parsed as strict semver (the seed's `runtimeVersion`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct RuntimeVersion {
    text: String,
    #[serde(skip)]
    parsed: semver::Version,
}

impl RuntimeVersion {
    /// Parses `text` strictly (`MAJOR.MINOR.PATCH[-pre][+build]`, no leading "v"); `what` names
    /// where the text came from, for the error. Ports `newRuntimeVersion` (kuberuntime_manager.go, 2016).
    pub fn parse(what: &'static str, text: &str) -> Result<Self, ManagerError> {
        let parsed = parse_strict(what, text)?;
        Ok(Self {
            text: text.to_owned(),
            parsed,
        })
    }

    /// The text as the runtime gave it.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The parsed version.
    pub fn semver(&self) -> &semver::Version {
        &self.parsed
    }

    /// Compares this version with `other`, which must parse strictly too (the seed answered -1
    /// with its error; here the error alone is the answer). Pre-release versions sort before the
    /// release; build metadata is ignored. Ports `runtimeVersion.Compare` (kuberuntime_manager.go, 2016).
    pub fn compare(&self, other: &str) -> Result<Ordering, ManagerError> {
        let other = parse_strict("compared version", other)?;
        Ok(compare_ignoring_build(&self.parsed, &other))
    }
}

impl std::fmt::Display for RuntimeVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

fn parse_strict(what: &'static str, text: &str) -> Result<semver::Version, ManagerError> {
    semver::Version::parse(text).map_err(|source| ManagerError::InvalidVersion {
        what,
        text: text.to_owned(),
        source,
    })
}

/// `semver::Version`'s own `Ord` also orders build metadata, which semver (and the seed) ignore.
fn compare_ignoring_build(a: &semver::Version, b: &semver::Version) -> Ordering {
    (a.major, a.minor, a.patch, &a.pre).cmp(&(b.major, b.minor, b.patch, &b.pre))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::equal("0.1.0", "0.1.0", Ordering::Equal)]
    #[case::older_patch("0.1.0", "0.1.1", Ordering::Less)]
    #[case::newer_minor("0.2.0", "0.1.9", Ordering::Greater)]
    #[case::numeric_not_lexical("0.10.0", "0.9.0", Ordering::Greater)]
    #[case::major_wins("1.0.0", "0.99.99", Ordering::Greater)]
    #[case::pre_release_before_release("1.0.0-alpha", "1.0.0", Ordering::Less)]
    #[case::release_after_pre_release("1.0.0", "1.0.0-rc.1", Ordering::Greater)]
    #[case::pre_releases_by_identifier("1.0.0-alpha", "1.0.0-beta", Ordering::Less)]
    #[case::numeric_pre_release_identifiers("1.0.0-rc.2", "1.0.0-rc.10", Ordering::Less)]
    #[case::build_metadata_ignored("1.0.0+build.1", "1.0.0+build.2", Ordering::Equal)]
    #[case::build_metadata_ignored_against_none("1.6.20+ds1", "1.6.20", Ordering::Equal)]
    fn compare_follows_the_seeds_ordering(
        #[case] this: &str,
        #[case] other: &str,
        #[case] expected: Ordering,
    ) {
        let version = RuntimeVersion::parse("test", this).unwrap();
        assert_eq!(version.compare(other).unwrap(), expected);
    }

    #[rstest]
    #[case::containerd_api_version("v1")]
    #[case::leading_v("v0.1.0")]
    #[case::two_components("1.6")]
    #[case::debian_suffix("1.6.20~ds1")]
    #[case::empty("")]
    fn parse_rejects_non_strict_semver(#[case] text: &str) {
        let err = RuntimeVersion::parse("Version.version", text).unwrap_err();
        assert!(
            matches!(&err, ManagerError::InvalidVersion { text: t, what: "Version.version", .. } if t == text),
            "{err:?}"
        );
    }

    #[test]
    fn compare_with_an_unparsable_version_is_an_error() {
        let version = RuntimeVersion::parse("test", "0.1.0").unwrap();
        assert!(matches!(
            version.compare("v1"),
            Err(ManagerError::InvalidVersion { .. })
        ));
    }

    #[test]
    fn a_version_keeps_and_displays_its_text() {
        let version = RuntimeVersion::parse("test", "1.0.0-rc.1+abc").unwrap();
        assert_eq!(version.as_str(), "1.0.0-rc.1+abc");
        assert_eq!(version.to_string(), "1.0.0-rc.1+abc");
        assert_eq!(version.semver().patch, 0);
    }
}
