//! Known findings (`run --known FILE`): where a runtime, at a range of versions, breaks a
//! `must` clause, each with its upstream report (or, where none matches, a reference that says
//! so and names the nearest). The runner reports a listed case that fails there as `known`
//! rather than failed, and flags one that passes, since the runtime may have fixed it; this file
//! reads the findings and answers which one holds for a case.

use std::path::Path;

use serde::Deserialize;

use super::{contract, Level};

/// A findings file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KnownError {
    /// The file could not be read.
    #[error("cannot read the findings file {path}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// It is not a findings file.
    #[error("the findings file {path} does not parse: {message}")]
    Parse {
        /// The file.
        path: String,
        /// The parser's words.
        message: String,
    },
    /// A version range does not parse.
    #[error(
        "the findings file {path}: `{range}` is not a version range (e.g. \">=1.6.0, <1.7.0\")"
    )]
    Range {
        /// The file.
        path: String,
        /// The range as written.
        range: String,
    },
    /// A finding names a clause the contract does not have, or one below `must`.
    #[error("the findings file {path}: finding for `{case}` names clause `{clause}`, which {why}")]
    Clause {
        /// The file.
        path: String,
        /// The case.
        case: String,
        /// The clause.
        clause: String,
        /// What is wrong with it.
        why: &'static str,
    },
}

/// The runtimes and versions a group of findings holds for.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGroup {
    runtime: String,
    versions: String,
    findings: Vec<Finding>,
}

/// One listed finding.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Finding {
    /// `suite/case`.
    pub case: String,
    /// The `must` clause it breaks.
    pub clause: String,
    /// Where it is reported upstream: an issue, or the commit that fixed it; for a break no
    /// upstream report matches, words saying so and the nearest report.
    pub reference: String,
    /// What the runtime does, in a line.
    #[serde(default)]
    pub about: String,
}

#[derive(Debug, Clone)]
struct Group {
    runtime: String,
    versions: semver::VersionReq,
    findings: Vec<Finding>,
}

/// A findings file, read and checked against the contract.
#[derive(Debug, Clone)]
pub struct KnownFindings {
    /// The file, as given.
    pub source: String,
    groups: Vec<Group>,
}

impl KnownFindings {
    /// Reads `path`: one findings file, or every `*.yaml` file directly in a directory (each
    /// names its runtime and versions, so a directory can hold one per runtime version).
    pub fn read(path: &Path) -> Result<Self, KnownError> {
        if path.is_dir() {
            let shown = path.display().to_string();
            let entries = std::fs::read_dir(path).map_err(|source| KnownError::Read {
                path: shown.clone(),
                source,
            })?;
            let mut files: Vec<std::path::PathBuf> = entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "yaml"))
                .collect();
            files.sort();
            let mut all = Self {
                source: shown,
                groups: Vec::new(),
            };
            for file in files {
                all.groups.extend(Self::read_file(&file)?.groups);
            }
            return Ok(all);
        }
        Self::read_file(path)
    }

    fn read_file(path: &Path) -> Result<Self, KnownError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| KnownError::Read {
            path: shown.clone(),
            source,
        })?;
        Self::parse(&shown, &text)
    }

    /// Parses a findings file's text; `source` names it in messages.
    pub fn parse(source: &str, text: &str) -> Result<Self, KnownError> {
        let raw: Vec<RawGroup> = serde_saphyr::from_str(text).map_err(|err| KnownError::Parse {
            path: source.to_owned(),
            message: err.to_string(),
        })?;
        let mut groups = Vec::with_capacity(raw.len());
        for group in raw {
            let versions =
                semver::VersionReq::parse(&group.versions).map_err(|_| KnownError::Range {
                    path: source.to_owned(),
                    range: group.versions.clone(),
                })?;
            for finding in &group.findings {
                let why = match contract().get(&finding.clause) {
                    None => Some("the contract does not have"),
                    Some(clause) if clause.level != Level::Must => {
                        Some("is not a must clause: only a broken must is a finding")
                    }
                    Some(_) => None,
                };
                if let Some(why) = why {
                    return Err(KnownError::Clause {
                        path: source.to_owned(),
                        case: finding.case.clone(),
                        clause: finding.clause.clone(),
                        why,
                    });
                }
            }
            groups.push(Group {
                runtime: group.runtime,
                versions,
                findings: group.findings,
            });
        }
        Ok(Self {
            source: source.to_owned(),
            groups,
        })
    }

    /// The finding listed for `case` (`suite/case`) on this runtime and version.
    pub fn find(&self, runtime: &str, version: &str, case: &str) -> Option<&Finding> {
        let version = parse_version(version)?;
        self.groups
            .iter()
            .filter(|g| g.runtime == runtime && g.versions.matches(&version))
            .flat_map(|g| &g.findings)
            .find(|f| f.case == case)
    }

    /// A finding listed for a break of `clause` on this runtime and version, whatever its case:
    /// the fuzzer's sequences are no listed case, but the clause they break is.
    pub fn find_clause(&self, runtime: &str, version: &str, clause: &str) -> Option<&Finding> {
        let version = parse_version(version)?;
        self.groups
            .iter()
            .filter(|g| g.runtime == runtime && g.versions.matches(&version))
            .flat_map(|g| &g.findings)
            .find(|f| f.clause == clause)
    }

    /// Every finding of the file, for listing.
    pub fn findings(&self) -> impl Iterator<Item = &Finding> {
        self.groups.iter().flat_map(|g| &g.findings)
    }
}

/// A runtime's version string as semver: a leading `v` dropped, and everything from the
/// first character that is neither a digit nor a dot (`1.6.20~ds1` is 1.6.20); missing
/// minor or patch numbers are 0.
fn parse_version(version: &str) -> Option<semver::Version> {
    let bare = version.trim().trim_start_matches('v');
    let numeric: String = bare
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let mut parts = numeric.split('.').filter(|p| !p.is_empty());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().map_or(Some(0), |p| p.parse().ok())?;
    let patch = parts.next().map_or(Some(0), |p| p.parse().ok())?;
    Some(semver::Version::new(major, minor, patch))
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::debian("1.6.20~ds1", Some((1, 6, 20)))]
    #[case::tagged("v1.7.24", Some((1, 7, 24)))]
    #[case::short("2", Some((2, 0, 0)))]
    #[case::rc("1.7.0-rc.1", Some((1, 7, 0)))]
    #[case::nothing("unknown", None)]
    fn runtime_versions_read_as_semver(#[case] text: &str, #[case] want: Option<(u64, u64, u64)>) {
        assert_eq!(
            parse_version(text).map(|v| (v.major, v.minor, v.patch)),
            want
        );
    }

    #[test]
    fn the_shipped_findings_files_parse_against_the_contract() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("findings");
        let mut read = 0;
        for entry in std::fs::read_dir(root).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "yaml") {
                KnownFindings::read(&path).unwrap();
                read += 1;
            }
        }
        assert!(
            read >= 2,
            "findings/ holds a file per runtime version of CI"
        );
    }

    #[test]
    fn a_finding_must_name_a_must_clause() {
        let file = |clause: &str| {
            format!("- runtime: r\n  versions: \">=1.0.0\"\n  findings:\n    - {{case: s/c, clause: {clause}, reference: x}}\n")
        };
        let should = contract()
            .iter()
            .find(|c| c.level == Level::Should)
            .unwrap();
        assert!(matches!(
            KnownFindings::parse("f", &file(&should.id)),
            Err(KnownError::Clause { .. })
        ));
        assert!(matches!(
            KnownFindings::parse("f", &file("no.such.clause")),
            Err(KnownError::Clause { .. })
        ));
    }
}
