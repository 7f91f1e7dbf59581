//! `pull_image: IMAGE`: pulls an image (a symbol such as `busybox`, or a full reference) unless
//! the runtime has it already.

use serde::{Deserialize, Serialize};

use super::{Kind, Scope, StepDef};
use crate::world::{World, StepError};

/// `pull_image`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PullImage(pub String);

impl StepDef for PullImage {
    const NAME: &'static str = "pull_image";
    const KIND: Kind = Kind::Setup;
    const ABOUT: &'static str = "Pulls an image (a symbol such as `busybox`, or a reference).";

    fn check(&self, _scope: &mut Scope) -> Result<(), String> {
        if self.0.is_empty() {
            return Err("the image is empty".to_owned());
        }
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        world.pull(&self.0).await
    }
}
