//! `checkpoint_container`: the runtime's CRI `CheckpointContainer` for a running container,
//! into an archive under the case's host directory, as the kubelet's checkpoint API asks for
//! one under its own and then hands its path out: the archive must be there, not empty, once
//! the call returns. What the archive holds is the runtime's own format, never read. A runtime
//! that answers Unimplemented lacks the feature (cases declare `needs: [checkpoint]`); any
//! refusal on a host without CRIU, which every Linux runtime checkpoints with, skips the case
//! as the runtime lacking it too, since nothing could have checkpointed there.

use serde::{Deserialize, Serialize};

use super::{CheckError, Kind, Scope, StepDef};
use crate::world::{mismatch, StepError, World};

/// `checkpoint_container`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `checkpoint_container` step: `container`"
)]
pub struct CheckpointContainer {
    /// The container alias; it must be running.
    pub container: String,
}

impl StepDef for CheckpointContainer {
    const NAME: &'static str = "checkpoint_container";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str = "CheckpointContainer of a running container into an archive under the case's host directory: the archive is there, not empty, when the call returns.";

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.container(&self.container)
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let id = world.aliases.container(&self.container)?.id.clone();
        let location = world.host_path(&format!("checkpoint-{}.tar", self.container))?;
        let shown = location.display().to_string();
        // The runtime's default time limit, as the kubelet's checkpoint API sends unless told.
        match world.runtime.checkpoint_container(&id, &shown, 0).await {
            Ok(()) => {}
            // A runtime checkpoints with CRIU; without it on the host any runtime refuses, each
            // in words of its own, so the refusal says nothing of the runtime.
            Err(err)
                if err.code != tonic::Code::Unimplemented
                    && !criu_on(std::env::var_os("PATH").as_deref()) =>
            {
                return Err(StepError::RuntimeLacks(format!(
                    "CRIU (no `criu` on this host's PATH, and {err})"
                )));
            }
            Err(err) => return Err(err.into()),
        }
        let size = std::fs::metadata(&location).map_or(0, |m| m.len());
        if size == 0 {
            return Err(mismatch(
                "archive",
                "written at the location asked, not empty",
                if location.exists() { "empty" } else { "absent" },
            ));
        }
        Ok(())
    }
}

/// True when a `criu` binary is in one of the directories of `path`.
fn criu_on(path: Option<&std::ffi::OsStr>) -> bool {
    path.is_some_and(|path| std::env::split_paths(path).any(|dir| dir.join("criu").is_file()))
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::on_the_path(true)]
    #[case::nowhere(false)]
    fn criu_is_looked_for_in_every_directory_of_the_path(#[case] installed: bool) {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        if installed {
            std::fs::write(bin.join("criu"), "").unwrap();
        }
        let path = std::env::join_paths([dir.path().join("empty"), bin]).unwrap();
        assert_eq!(criu_on(Some(&path)), installed);
        assert!(!criu_on(None));
    }
}
