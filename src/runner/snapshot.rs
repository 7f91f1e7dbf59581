//! Snapshot files in insta's format (`---` header with `source` and `expression`, `---`, the
//! body), so `cargo insta review` and `insta::assert_snapshot!` read the files the runner
//! writes. Only the body is compared, as insta does, so either tool may write the header.

use std::path::{Path, PathBuf};

use serde::Serialize;

/// A snapshot file that could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// Reading the stored snapshot failed.
    #[error("cannot read snapshot {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Writing a snapshot (or its `.snap.new`) failed.
    #[error("cannot write snapshot {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// What to do when the stored snapshot is missing or differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Policy {
    /// Accept differences: overwrite the stored snapshot.
    pub update: bool,
    /// In CI a missing snapshot is a failure, not something to write.
    pub ci: bool,
}

/// How the new snapshot compares with the stored one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum SnapshotStatus {
    /// Same body.
    Unchanged,
    /// There was none; it was written.
    Written,
    /// There was none and in CI that fails.
    Missing,
    /// It differed and was overwritten (`--update-snapshots`).
    Updated {
        /// Unified diff, stored to new.
        diff: String,
    },
    /// It differs; the new one is in `<name>.snap.new`.
    Changed {
        /// Unified diff, stored to new.
        diff: String,
        /// The `.snap.new` file.
        new_path: PathBuf,
    },
}

impl SnapshotStatus {
    /// True when the case must fail because of the snapshot.
    pub fn fails(&self) -> bool {
        matches!(
            self,
            SnapshotStatus::Missing | SnapshotStatus::Changed { .. }
        )
    }
}

/// The snapshot file for one case: `<dir>/<kind>/<suite>__<case>.snap`.
pub fn path(dir: &Path, kind: &str, suite: &str, case: &str) -> PathBuf {
    dir.join(kind).join(format!("{suite}__{case}.snap"))
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

/// Compares `contents` (a whole rendered file) with the stored snapshot at `path` and acts by
/// `policy`: writes a missing one, a `.snap.new` next to a different one, or overwrites it.
pub fn check(path: &Path, contents: &str, policy: Policy) -> Result<SnapshotStatus, SnapshotError> {
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
        if policy.ci && !policy.update {
            write(&new_path, contents)?;
            return Ok(SnapshotStatus::Missing);
        }
        write(path, contents)?;
        remove_stale(&new_path);
        return Ok(SnapshotStatus::Written);
    };
    let old = normalize(body(&stored));
    let new = normalize(body(contents));
    if old == new {
        remove_stale(&new_path);
        return Ok(SnapshotStatus::Unchanged);
    }
    let diff = similar::TextDiff::from_lines(&old, &new)
        .unified_diff()
        .context_radius(3)
        .header(&path.display().to_string(), &new_path.display().to_string())
        .to_string();
    if policy.update {
        write(path, contents)?;
        remove_stale(&new_path);
        return Ok(SnapshotStatus::Updated { diff });
    }
    write(&new_path, contents)?;
    Ok(SnapshotStatus::Changed { diff, new_path })
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
    fn the_rendered_file_is_what_insta_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = path(dir.path(), "mock", "latest-sandbox-ip", "one-sandbox");
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
    fn a_missing_snapshot_is_written_and_passes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mock/s__c.snap");
        let status = check(&path, &render("s.yaml", "c", "a\n"), Policy::default()).unwrap();
        assert_eq!(status, SnapshotStatus::Written);
        assert!(!status.fails());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            render("s.yaml", "c", "a")
        );
    }

    #[test]
    fn a_missing_snapshot_fails_in_ci_and_leaves_a_new_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s__c.snap");
        let policy = Policy {
            update: false,
            ci: true,
        };
        let status = check(&path, &render("s.yaml", "c", "a"), policy).unwrap();
        assert_eq!(status, SnapshotStatus::Missing);
        assert!(status.fails());
        assert!(!path.exists());
        assert!(path.with_extension("snap.new").exists());
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
        let status = check(&path, &render("s.yaml", "c", "line\n\n"), Policy::default()).unwrap();
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
        let status = check(&path, &render("s.yaml", "c", "a\nB\nc"), Policy::default()).unwrap();
        let SnapshotStatus::Changed { diff, new_path } = &status else {
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
        let policy = Policy {
            update: true,
            ci: true,
        };
        let status = check(&path, &render("s.yaml", "c", "b"), policy).unwrap();
        assert!(matches!(status, SnapshotStatus::Updated { .. }));
        assert!(!status.fails());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            render("s.yaml", "c", "b")
        );
    }

    #[rstest]
    #[case::insta_file("---\nsource: a\n---\nbody\n", "body\n")]
    #[case::empty_metadata("---\n---\nbody\n", "body\n")]
    #[case::no_header("body\n", "body\n")]
    fn the_body_is_what_follows_the_header(#[case] file: &str, #[case] expected: &str) {
        assert_eq!(body(file), expected);
    }
}
