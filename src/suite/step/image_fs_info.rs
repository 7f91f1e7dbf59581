//! `image_fs_info`: the runtime's CRI `ImageFsInfo`, asked directly. The kubelet's image
//! garbage collection and eviction read the first image filesystem's used bytes (and its
//! inodes and mountpoint where given), and give up without an image filesystem; so the answer
//! must name at least one, and every filesystem it names must carry its used bytes.

use serde::{Deserialize, Serialize};

use super::{CheckError, Kind, Scope, StepDef};
use crate::cri::v1;
use crate::world::{mismatch, StepError, World};

/// `image_fs_info`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a `image_fs_info` step (no fields)")]
pub struct ImageFsInfo {}

fn check_usage(place: String, usage: &v1::FilesystemUsage) -> Result<(), StepError> {
    if usage.used_bytes.is_none() {
        return Err(mismatch(format!("{place}.used_bytes"), "set", "absent"));
    }
    Ok(())
}

impl StepDef for ImageFsInfo {
    const NAME: &'static str = "image_fs_info";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str = "ImageFsInfo: at least one image filesystem, and every image and container filesystem with its used bytes.";

    fn check(&self, _scope: &mut Scope) -> Result<(), CheckError> {
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let answer = world.runtime.image_fs_info().await?;
        if answer.image_filesystems.is_empty() {
            return Err(mismatch("image_filesystems", "at least one", "none"));
        }
        for (n, usage) in answer.image_filesystems.iter().enumerate() {
            check_usage(format!("image_filesystems[{n}]"), usage)?;
        }
        for (n, usage) in answer.container_filesystems.iter().enumerate() {
            check_usage(format!("container_filesystems[{n}]"), usage)?;
        }
        Ok(())
    }
}
