//! Reference results in insta's snapshot format (`---` header with `source` and `expression`,
//! `---`, the body), so `cargo insta review` and `insta::assert_snapshot!` read them. Only the
//! body is compared, as insta does, so either tool may write the header. One runtime-neutral
//! reference per case: an embedded suite's are compiled into the binary from `snapshots/`
//! (`build.rs`) and checked on every target from any directory, writing nothing unless asked
//! to update; a user's own suite keeps its references as files under `--snapshot-dir`.

use std::path::{Path, PathBuf};

pub use crate::report::model::SnapshotStatus;

/// `(path relative to the crate root, contents)` of every reference under `snapshots/`, sorted
/// by path: a reference is embedded by being a file there.
pub const EMBEDDED: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/embedded_snapshots.rs"));

/// The directory of the embedded references in the source tree, as their paths name it.
pub const EMBEDDED_DIR: &str = "snapshots";

/// A reference file that could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// Reading the stored reference failed.
    #[error("cannot read snapshot {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Writing a reference (or its `.snap.new`) failed.
    #[error("cannot write snapshot {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// What to do when the reference is missing or differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Policy {
    /// Accept this run's results: write them as the references, under `--snapshot-dir`.
    pub update: bool,
}

/// The reference's file name for one case: `<suite>__<case>.snap`.
pub fn file_name(suite: &str, case: &str) -> String {
    format!("{suite}__{case}.snap")
}

/// The name under which a case that names no kubelet keeps the reference of `kubelet`'s run
/// when it differs from the one both share: `<case>@<kubelet>`.
pub fn kubelet_variant(case: &str, kubelet: crate::manager::KubeletProfile) -> String {
    format!("{case}@{kubelet}")
}

/// Whether `contents` (a whole rendered file) has the same body as `reference`.
pub fn same(reference: &str, contents: &str) -> bool {
    normalize(body(reference)) == normalize(body(contents))
}

/// The reference file for one case under `dir`: `<dir>/<suite>__<case>.snap`.
pub fn path(dir: &Path, suite: &str, case: &str) -> PathBuf {
    dir.join(file_name(suite, case))
}

/// The embedded reference of an embedded suite's case, if the binary holds one.
pub fn embedded(suite: &str, case: &str) -> Option<&'static str> {
    let wanted = format!("{EMBEDDED_DIR}/{}", file_name(suite, case));
    EMBEDDED
        .iter()
        .find(|(path, _)| *path == wanted)
        .map(|(_, text)| *text)
}

/// The whole file: insta's header, the body without trailing whitespace, one newline.
pub fn render(source: &str, expression: &str, body: &str) -> String {
    format!(
        "---\nsource: {}\nexpression: {}\n---\n{}\n",
        yaml_scalar(source),
        yaml_scalar(expression),
        body.trim_end()
    )
}

/// A plain YAML scalar when that reads back as the same string (insta's header reader takes
/// only simple ones), else a double-quoted one.
fn yaml_scalar(text: &str) -> String {
    let emitted = crate::observe::yaml(&crate::observe::Node::Str(text.to_owned()));
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
        && !text.starts_with(['-', '.'])
        && emitted.trim_end() == text;
    if plain {
        text.to_owned()
    } else {
        serde_json::to_string(text).unwrap_or_else(|_| format!("{text:?}"))
    }
}

/// The body of a snapshot file: everything after the second `---` line, as insta reads it.
pub fn body(file: &str) -> &str {
    let mut rest = file;
    if let Some(after) = rest.strip_prefix("---\n") {
        if let Some(end) = after.find("\n---\n") {
            rest = &after[end + "\n---\n".len()..];
        } else if let Some(body) = after.strip_prefix("---\n") {
            rest = body;
        }
    }
    rest
}

/// Compares `contents` (a whole rendered file) with an embedded case's reference, `reference`
/// (none: the binary holds none), writing nothing unless `policy.update`, which writes
/// `contents` to `update_path` (in the source tree) when it is missing or differs.
pub fn check_embedded(
    reference: Option<&str>,
    update_path: &Path,
    contents: &str,
    policy: Policy,
) -> Result<SnapshotStatus, SnapshotError> {
    let Some(reference) = reference else {
        if policy.update {
            write(update_path, contents)?;
            return Ok(SnapshotStatus::Written);
        }
        return Ok(SnapshotStatus::Missing);
    };
    let Some(diff) = diff(reference, contents, update_path, "this run") else {
        return Ok(SnapshotStatus::Unchanged);
    };
    if policy.update {
        write(update_path, contents)?;
        return Ok(SnapshotStatus::Updated { diff });
    }
    Ok(SnapshotStatus::Changed {
        diff,
        new_path: None,
    })
}

/// Compares `contents` (a whole rendered file) with a user suite's reference file at `path`
/// and acts by `policy`: writes a missing or different one's `.snap.new` beside it, or with
/// `policy.update` the reference itself.
pub fn check_file(
    path: &Path,
    contents: &str,
    policy: Policy,
) -> Result<SnapshotStatus, SnapshotError> {
    let new_path = path.with_extension("snap.new");
    let stored = match std::fs::read_to_string(path) {
        Ok(stored) => Some(stored),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => {
            return Err(SnapshotError::Read {
                path: path.to_owned(),
                source,
            })
        }
    };
    let Some(stored) = stored else {
        if policy.update {
            write(path, contents)?;
            remove_stale(&new_path);
            return Ok(SnapshotStatus::Written);
        }
        write(&new_path, contents)?;
        return Ok(SnapshotStatus::New { new_path });
    };
    let Some(diff) = diff(&stored, contents, path, &new_path.display().to_string()) else {
        remove_stale(&new_path);
        return Ok(SnapshotStatus::Unchanged);
    };
    if policy.update {
        write(path, contents)?;
        remove_stale(&new_path);
        return Ok(SnapshotStatus::Updated { diff });
    }
    write(&new_path, contents)?;
    Ok(SnapshotStatus::Changed {
        diff,
        new_path: Some(new_path),
    })
}

/// The unified diff from the reference's body to the new one's, or none when they are equal.
fn diff(reference: &str, contents: &str, reference_name: &Path, new_name: &str) -> Option<String> {
    let old = normalize(body(reference));
    let new = normalize(body(contents));
    (old != new).then(|| {
        similar::TextDiff::from_lines(&old, &new)
            .unified_diff()
            .context_radius(3)
            .header(&reference_name.display().to_string(), new_name)
            .to_string()
    })
}

/// insta's comparison: trailing whitespace of the body is not significant, CRLF reads as LF.
fn normalize(body: &str) -> String {
    format!("{}\n", body.trim_end().replace("\r\n", "\n"))
}

fn write(path: &Path, contents: &str) -> Result<(), SnapshotError> {
    let fail = |source| SnapshotError::Write {
        path: path.to_owned(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    std::fs::write(path, contents).map_err(fail)
}

/// A `.snap.new` left by an earlier run is obsolete once the snapshot matches again.
fn remove_stale(new_path: &Path) {
    if let Err(err) = std::fs::remove_file(new_path) {
        if err.kind() != std::io::ErrorKind::NotFound {
            tracing::warn!(path = %new_path.display(), %err, "cannot remove a stale .snap.new");
        }
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[test]
    fn todays_kubelet_keeps_its_own_reference_beside_the_shared_one() {
        use crate::manager::KubeletProfile;
        assert_eq!(
            kubelet_variant("get-pods", KubeletProfile::Current),
            "get-pods@current"
        );
        let a = render("suites/s.yaml", "c", "- call: x\n");
        let b = render("suites/s.yaml", "c", "- call: y\n");
        assert!(same(&a, &render("other.yaml", "d", "- call: x\n  \n")));
        assert!(!same(&a, &b));
    }

    #[test]
    fn the_rendered_file_is_what_insta_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = path(dir.path(), "latest-sandbox-ip", "one-sandbox");
        let contents = render(
            "suites/latest-sandbox-ip.yaml",
            "one-sandbox",
            "- call: x\n  result: 1\n\n",
        );
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &contents).unwrap();
        let snapshot = insta::Snapshot::from_file(&path).unwrap();
        assert_eq!(
            snapshot.metadata().source(),
            Some("suites/latest-sandbox-ip.yaml")
        );
        assert_eq!(snapshot.metadata().expression(), Some("one-sandbox"));
        let text = snapshot.contents().as_text().unwrap().to_string();
        assert_eq!(text, "- call: x\n  result: 1");
        assert!(contents.ends_with("result: 1\n"));
    }

    #[rstest]
    #[case::plain("suites/a-b_c.yaml", "suites/a-b_c.yaml")]
    #[case::space("my suites/a.yaml", "\"my suites/a.yaml\"")]
    #[case::colon("a: b", "\"a: b\"")]
    #[case::looks_like_a_number("1.5", "\"1.5\"")]
    #[case::looks_like_a_bool("true", "\"true\"")]
    fn header_values_are_quoted_only_when_yaml_needs_it(
        #[case] input: &str,
        #[case] expected: &str,
    ) {
        assert_eq!(yaml_scalar(input), expected);
    }

    #[test]
    fn a_user_suites_missing_reference_is_new_and_fails_leaving_a_new_file_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s__c.snap");
        let status = check_file(&path, &render("s.yaml", "c", "a\n"), Policy::default()).unwrap();
        let new_path = path.with_extension("snap.new");
        assert_eq!(
            status,
            SnapshotStatus::New {
                new_path: new_path.clone()
            }
        );
        assert!(status.fails());
        assert!(!path.exists());
        assert_eq!(
            std::fs::read_to_string(&new_path).unwrap(),
            render("s.yaml", "c", "a")
        );
    }

    #[test]
    fn update_writes_a_user_suites_missing_reference_and_passes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s__c.snap");
        let policy = Policy { update: true };
        let status = check_file(&path, &render("s.yaml", "c", "a"), policy).unwrap();
        assert_eq!(status, SnapshotStatus::Written);
        assert!(!status.fails());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            render("s.yaml", "c", "a")
        );
    }

    #[test]
    fn the_same_body_under_another_header_is_unchanged_and_clears_a_stale_new_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s__c.snap");
        std::fs::write(
            &path,
            "---\nsource: tests/suites.rs\nexpression: body\n---\nline\n",
        )
        .unwrap();
        std::fs::write(path.with_extension("snap.new"), "old").unwrap();
        let status =
            check_file(&path, &render("s.yaml", "c", "line\n\n"), Policy::default()).unwrap();
        assert_eq!(status, SnapshotStatus::Unchanged);
        assert!(!path.with_extension("snap.new").exists());
        // The stored file is left alone.
        assert!(std::fs::read_to_string(&path)
            .unwrap()
            .contains("tests/suites.rs"));
    }

    #[test]
    fn a_different_body_fails_with_a_diff_and_a_new_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s__c.snap");
        std::fs::write(&path, render("s.yaml", "c", "a\nb\nc")).unwrap();
        let status =
            check_file(&path, &render("s.yaml", "c", "a\nB\nc"), Policy::default()).unwrap();
        let SnapshotStatus::Changed {
            diff,
            new_path: Some(new_path),
        } = &status
        else {
            panic!("unexpected {status:?}");
        };
        assert!(status.fails());
        assert!(diff.contains("-b\n+B\n"), "{diff}");
        assert_eq!(
            std::fs::read_to_string(new_path).unwrap(),
            render("s.yaml", "c", "a\nB\nc")
        );
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            render("s.yaml", "c", "a\nb\nc")
        );
    }

    #[test]
    fn update_overwrites_a_different_snapshot_and_passes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s__c.snap");
        std::fs::write(&path, render("s.yaml", "c", "a")).unwrap();
        let policy = Policy { update: true };
        let status = check_file(&path, &render("s.yaml", "c", "b"), policy).unwrap();
        assert!(matches!(status, SnapshotStatus::Updated { .. }));
        assert!(!status.fails());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            render("s.yaml", "c", "b")
        );
    }

    #[test]
    fn an_embedded_reference_with_the_same_body_is_unchanged_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let update_path = dir.path().join("s__c.snap");
        let reference = render("suites/s.yaml", "c", "a\nb");
        let status = check_embedded(
            Some(&reference),
            &update_path,
            &render("elsewhere.yaml", "c", "a\nb\n"),
            Policy::default(),
        )
        .unwrap();
        assert_eq!(status, SnapshotStatus::Unchanged);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_tampered_embedded_reference_fails_with_the_diff_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let update_path = dir.path().join("s__c.snap");
        let tampered = render("suites/s.yaml", "c", "- call: status\n  result: tampered");
        let status = check_embedded(
            Some(&tampered),
            &update_path,
            &render("suites/s.yaml", "c", "- call: status\n  result: ok"),
            Policy::default(),
        )
        .unwrap();
        let SnapshotStatus::Changed {
            diff,
            new_path: None,
        } = &status
        else {
            panic!("unexpected {status:?}");
        };
        assert!(status.fails());
        assert!(
            diff.contains("-  result: tampered\n+  result: ok\n"),
            "{diff}"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_missing_embedded_reference_fails_as_missing_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let update_path = dir.path().join("s__c.snap");
        let status = check_embedded(
            None,
            &update_path,
            &render("suites/s.yaml", "c", "a"),
            Policy::default(),
        )
        .unwrap();
        assert_eq!(status, SnapshotStatus::Missing);
        assert!(status.fails());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[rstest]
    #[case::missing(None, SnapshotStatus::Written)]
    #[case::changed(Some("a"), SnapshotStatus::Updated { diff: String::new() })]
    fn update_writes_an_embedded_cases_reference_into_the_snapshot_dir(
        #[case] reference: Option<&str>,
        #[case] expected: SnapshotStatus,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let update_path = dir.path().join("s__c.snap");
        let reference = reference.map(|body| render("suites/s.yaml", "c", body));
        let contents = render("suites/s.yaml", "c", "b");
        let status = check_embedded(
            reference.as_deref(),
            &update_path,
            &contents,
            Policy { update: true },
        )
        .unwrap();
        assert!(!status.fails());
        assert_eq!(
            std::mem::discriminant(&status),
            std::mem::discriminant(&expected)
        );
        assert_eq!(std::fs::read_to_string(&update_path).unwrap(), contents);
    }

    #[test]
    fn every_snap_file_under_snapshots_is_embedded_with_its_contents_in_path_order() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut on_disk: Vec<(String, String)> = std::fs::read_dir(root.join(EMBEDDED_DIR))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".snap"))
            .map(|name| {
                let path = format!("{EMBEDDED_DIR}/{name}");
                let text = std::fs::read_to_string(root.join(&path)).unwrap();
                (path, text)
            })
            .collect();
        on_disk.sort();
        let embedded: Vec<(String, String)> = EMBEDDED
            .iter()
            .map(|(path, text)| ((*path).to_owned(), (*text).to_owned()))
            .collect();
        assert!(!embedded.is_empty());
        assert_eq!(on_disk, embedded);
    }

    #[test]
    fn every_embedded_manager_case_has_an_embedded_reference() {
        let loaded = crate::suite::load_embedded();
        let lacking: Vec<String> = loaded
            .suites
            .iter()
            .flat_map(|suite| suite.cases.iter().map(move |case| (suite, case)))
            .filter(|(_, case)| {
                case.steps
                    .iter()
                    .any(|step| step.kind() == crate::suite::step::Kind::Manager)
            })
            .filter(|(suite, case)| embedded(&suite.name, &case.name).is_none())
            .map(|(suite, case)| case.full_name(suite))
            .collect();
        assert!(
            lacking.is_empty(),
            "no reference for:\n{}",
            lacking.join("\n")
        );
    }

    #[test]
    fn every_embedded_reference_belongs_to_an_embedded_manager_case_and_names_its_suite() {
        let loaded = crate::suite::load_embedded();
        for (path, text) in EMBEDDED {
            let current = kubelet_variant("", crate::manager::KubeletProfile::Current);
            let owner = loaded.suites.iter().find_map(|suite| {
                suite.cases.iter().find_map(|case| {
                    let shared = format!("{EMBEDDED_DIR}/{}", file_name(&suite.name, &case.name));
                    // Today's kubelet's own reference, for a case that names no kubelet.
                    let variant = format!(
                        "{EMBEDDED_DIR}/{}",
                        file_name(&suite.name, &format!("{}{current}", case.name))
                    );
                    if *path == shared {
                        Some((suite, case, case.name.clone()))
                    } else if *path == variant && case.kubelet.is_none() {
                        Some((suite, case, format!("{}{current}", case.name)))
                    } else {
                        None
                    }
                })
            });
            let Some((suite, case, name)) = owner else {
                panic!("{path} is the reference of no embedded case");
            };
            assert!(
                case.steps
                    .iter()
                    .any(|step| step.kind() == crate::suite::step::Kind::Manager),
                "{path}: the case makes no manager call, so nothing compares it"
            );
            assert!(
                text.contains(&format!("source: {}\n", suite.source)),
                "{path} does not name {}",
                suite.source
            );
            assert_eq!(embedded(&suite.name, &name), Some(*text));
        }
    }

    #[rstest]
    #[case::insta_file("---\nsource: a\n---\nbody\n", "body\n")]
    #[case::empty_metadata("---\n---\nbody\n", "body\n")]
    #[case::no_header("body\n", "body\n")]
    fn the_body_is_what_follows_the_header(#[case] file: &str, #[case] expected: &str) {
        assert_eq!(body(file), expected);
    }
}
