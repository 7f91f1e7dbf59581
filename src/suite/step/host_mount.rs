//! `host_mount`: makes a mount under the case's host directory from the harness's side: a
//! directory bind-mounted onto itself with a propagation, the source a runtime wants before it
//! grants a container Bidirectional or HostToContainer propagation, or a tmpfs mounted once a
//! container runs, to see whether the mount reaches it. The runner unmounts them with the case.

use rustix::mount::{mount, mount_bind_recursive, mount_change, MountFlags, MountPropagationFlags};
use serde::{Deserialize, Serialize};

use super::create_container::is_inner_path;
use super::{is_default, CheckError, Kind, PathRule, Scope, StepDef};
use crate::world::{StepError, World};

/// `host_mount`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `host_mount` step: `path`, `kind`, `propagation`, `file`, `content`"
)]
pub struct HostMount {
    /// The mount point, relative to the case's host directory (made if missing).
    pub path: String,
    /// What to mount (default `bind`: the directory onto itself).
    #[serde(default, skip_serializing_if = "is_default")]
    pub kind: MountKind,
    /// The propagation to give the mount and those under it; none: what the kernel gives
    /// it (a copy of its parent's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub propagation: Option<HostPropagation>,
    /// A file to write in the mount once made, relative to it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub file: String,
    /// The file's content.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub content: String,
}

/// What `host_mount` mounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MountKind {
    /// The directory bind-mounted onto itself, recursively.
    #[default]
    Bind,
    /// A fresh tmpfs.
    Tmpfs,
}

/// A host mount's propagation, recursive (mount(8)'s `--make-rshared` and its kin).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostPropagation {
    /// Mount events go both ways between it and its peers (`shared:N` in mountinfo).
    Shared,
    /// It receives its master's mount events and sends none (`master:N`). A mount alone in
    /// its peer group has no master to follow, so the step makes it shared, binds it onto
    /// itself once more and makes the top one the slave.
    Slave,
    /// No events either way.
    Private,
}

impl StepDef for HostMount {
    const NAME: &'static str = "host_mount";
    const KIND: Kind = Kind::Setup;
    const ABOUT: &'static str = "Mounts a directory onto itself with a propagation (shared, slave, private), or a tmpfs, under the case's host directory; the runner unmounts it.";

    fn check(&self, _scope: &mut Scope) -> Result<(), CheckError> {
        if !is_inner_path(&self.path) {
            return Err(CheckError::path(
                "path",
                &self.path,
                PathRule::Inside("the case's host directory"),
            ));
        }
        if !self.file.is_empty() && !is_inner_path(&self.file) {
            return Err(CheckError::path(
                "file",
                &self.file,
                PathRule::Inside("the mount"),
            ));
        }
        if self.file.is_empty() && !self.content.is_empty() {
            return Err(CheckError::needs(
                "content",
                "file",
                "the content goes in a file",
            ));
        }
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let path = world.host_path(&self.path)?;
        let failed = |what: &str, err: std::io::Error| {
            StepError::Unsupported(format!("cannot {what} {}: {err}", path.display()))
        };
        std::fs::create_dir_all(&path).map_err(|err| failed("make", err))?;
        match self.kind {
            MountKind::Bind => {
                mount_bind_recursive(&path, &path).map_err(|e| failed("bind-mount", e.into()))?
            }
            MountKind::Tmpfs => mount("tmpfs", &path, "tmpfs", MountFlags::empty(), None)
                .map_err(|e| failed("mount a tmpfs on", e.into()))?,
        }
        let change = |flags: MountPropagationFlags| {
            mount_change(&path, flags | MountPropagationFlags::REC)
                .map_err(|e| failed("change the propagation of", e.into()))
        };
        match self.propagation {
            None => {}
            Some(HostPropagation::Shared) => change(MountPropagationFlags::SHARED)?,
            Some(HostPropagation::Private) => change(MountPropagationFlags::PRIVATE)?,
            Some(HostPropagation::Slave) => {
                change(MountPropagationFlags::SHARED)?;
                mount_bind_recursive(&path, &path).map_err(|e| failed("bind-mount", e.into()))?;
                change(MountPropagationFlags::DOWNSTREAM)?;
            }
        }
        if !self.file.is_empty() {
            let file = path.join(&self.file);
            std::fs::write(&file, &self.content).map_err(|err| {
                StepError::Unsupported(format!("cannot write {}: {err}", file.display()))
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::bind("{path: src, propagation: shared}", None)]
    #[case::tmpfs_with_a_file("{path: src/late, kind: tmpfs, file: flag, content: x}", None)]
    #[case::outside("{path: ../x}", Some("stay inside the case's host directory"))]
    #[case::absolute("{path: /etc}", Some("stay inside the case's host directory"))]
    #[case::file_outside("{path: a, file: ../b}", Some("stay inside the mount"))]
    #[case::content_alone("{path: a, content: x}", Some("`content` needs `file`"))]
    fn paths_stay_inside_the_case_directory(#[case] yaml: &str, #[case] refusal: Option<&str>) {
        let step: HostMount = serde_saphyr::from_str(yaml).unwrap();
        match (step.check(&mut Scope::default()), refusal) {
            (Ok(()), None) => {}
            (Err(err), Some(why)) => assert!(err.to_string().contains(why), "{err}"),
            (outcome, _) => panic!("{yaml}: {outcome:?}"),
        }
    }

    #[test]
    fn an_unknown_propagation_lists_the_choices() {
        let err = serde_saphyr::from_str::<HostMount>("{path: a, propagation: rshared}")
            .unwrap_err()
            .to_string();
        assert!(err.contains("shared") && err.contains("slave"), "{err}");
    }
}
