//! `check_host_path`: looks at a path under the case's host directory from the harness's side,
//! so what a container wrote into a volume (or was refused to write) is checked on the host
//! and not only from inside.

use serde::{Deserialize, Serialize};

use super::{is_default, CheckError, Kind, PathRule, Scope, StepDef, TextExpect};
use crate::world::{mismatch, StepError, World};

/// `check_host_path`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `check_host_path` step: `path`, `expect`"
)]
pub struct CheckHostPath {
    /// A path relative to the case's host directory.
    pub path: String,
    /// Expectations; without any, the path must exist.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: HostPathExpect,
}

/// What `check_host_path` checks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `check_host_path` expectation: `exists`, `content`"
)]
pub struct HostPathExpect {
    /// Whether the path exists (default: it does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exists: Option<bool>,
    /// The file's content (read as UTF-8, lossily).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<TextExpect>,
}

/// A relative path that stays below its base: no root, no `..`.
fn is_below(path: &str) -> bool {
    let path = std::path::Path::new(path);
    !path.as_os_str().is_empty()
        && path.components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        })
}

impl StepDef for CheckHostPath {
    const NAME: &'static str = "check_host_path";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str =
        "Checks a path under the case's host directory: whether it exists, and a file's content.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<HostPathExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        if !is_below(&self.path) {
            return Err(CheckError::path(
                "path",
                &self.path,
                PathRule::Inside("the case's host directory"),
            ));
        }
        if let Some(content) = &self.expect.content {
            if self.expect.exists == Some(false) {
                return Err(CheckError::rule(
                    "",
                    "`expect` cannot want content of a path that must not exist",
                ));
            }
            scope.text("content", content)?;
        }
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let path = world.host_path(&self.path)?;
        let field = format!("check_host_path {}", self.path);
        // Not following a symlink: a dangling link still exists.
        let exists = std::fs::symlink_metadata(&path).is_ok();
        let wanted = self.expect.exists.unwrap_or(true);
        if exists != wanted {
            let say = |e: bool| if e { "exists" } else { "absent" };
            return Err(mismatch(field, say(wanted), say(exists)));
        }
        if let Some(content) = &self.expect.content {
            let bytes = std::fs::read(&path).map_err(|err| {
                mismatch(
                    format!("{field}.content"),
                    "a readable file",
                    err.to_string(),
                )
            })?;
            content.check(
                &format!("{field}.content"),
                &String::from_utf8_lossy(&bytes),
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::plain("vol/back", true)]
    #[case::dot("./vol", true)]
    #[case::absolute("/etc/passwd", false)]
    #[case::parent("vol/../../x", false)]
    #[case::empty("", false)]
    fn only_paths_below_the_case_directory_are_taken(#[case] path: &str, #[case] below: bool) {
        assert_eq!(is_below(path), below);
    }

    #[test]
    fn content_of_a_path_that_must_not_exist_is_refused() {
        let step: CheckHostPath =
            serde_saphyr::from_str("{path: a, expect: {exists: false, content: {equals: x}}}")
                .unwrap();
        let message = step.check(&mut Scope::default()).unwrap_err().to_string();
        assert!(message.contains("must not exist"), "{message}");
    }
}
