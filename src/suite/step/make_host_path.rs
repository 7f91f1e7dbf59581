//! `make_host_path`: makes a file, a directory or a symbolic link under the case's host
//! directory, for a container to mount; the runner removes the directory with the case.

use serde::{Deserialize, Serialize};

use super::create_container::is_inner_path;
use super::{is_default, CheckError, Kind, PathRule, Scope, StepDef};
use crate::world::{StepError, World};

/// `make_host_path`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `make_host_path` step: `path`, `kind`, `content`, `target`"
)]
pub struct MakeHostPath {
    /// The path, relative to the case's host directory.
    pub path: String,
    /// What to make (default `dir`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub kind: PathKind,
    /// A file's content.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub content: String,
    /// A symbolic link's target, relative to the case's host directory (the link is made
    /// absolute, as a host path a runtime resolves).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub target: String,
}

/// What `make_host_path` makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathKind {
    /// A directory (and its parents).
    #[default]
    Dir,
    /// A file with `content`.
    File,
    /// A symbolic link to `target`.
    Symlink,
}

impl StepDef for MakeHostPath {
    const NAME: &'static str = "make_host_path";
    const KIND: Kind = Kind::Setup;
    const ABOUT: &'static str =
        "Makes a directory, file or symbolic link under the case's host directory.";

    fn check(&self, _scope: &mut Scope) -> Result<(), CheckError> {
        let inside = |field: &str, path: &str| {
            CheckError::path(field, path, PathRule::Inside("the case's host directory"))
        };
        if !is_inner_path(&self.path) {
            return Err(inside("path", &self.path));
        }
        match self.kind {
            PathKind::Symlink if !is_inner_path(&self.target) => {
                Err(inside("target", &self.target))
            }
            PathKind::Dir | PathKind::Symlink if !self.content.is_empty() => {
                Err(CheckError::rule("", "only a file has `content`"))
            }
            PathKind::Dir | PathKind::File if !self.target.is_empty() => {
                Err(CheckError::rule("", "only a symlink has a `target`"))
            }
            _ => Ok(()),
        }
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let path = world.host_path(&self.path)?;
        let failed = |err: std::io::Error| {
            StepError::Unsupported(format!("cannot make {}: {err}", path.display()))
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(failed)?;
        }
        match self.kind {
            PathKind::Dir => std::fs::create_dir_all(&path).map_err(failed)?,
            PathKind::File => std::fs::write(&path, &self.content).map_err(failed)?,
            PathKind::Symlink => {
                let target = world.host_path(&self.target)?;
                std::os::unix::fs::symlink(target, &path).map_err(failed)?;
            }
        }
        Ok(())
    }
}
