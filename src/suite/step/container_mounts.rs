//! `container_mounts`: reads a container's mounts back from `ContainerStatus` and checks each
//! one the step names: its read-only flags, its propagation, and for an image volume the
//! digest the runtime reports in `ImageSpec.image_ref`.

use serde::{Deserialize, Serialize};

use super::create_container::Propagation;
use super::{CheckError, Kind, PathRule, Scope, StepDef};
use crate::cri::v1;
use crate::world::{expect_eq, mismatch, StepError, World};

/// `container_mounts`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `container_mounts` step: `container`, `expect`"
)]
pub struct ContainerMounts {
    /// Container alias.
    pub container: String,
    /// The mounts to find, each by its container path (a runtime may report more).
    pub expect: Vec<MountExpect>,
}

/// One mount `container_mounts` looks for, and what it checks of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a mount expectation: `container_path`, `readonly`, `recursive_read_only`, `propagation`, `image_ref`"
)]
pub struct MountExpect {
    /// Where the mount is in the container.
    pub container_path: String,
    /// `readonly` as reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readonly: Option<bool>,
    /// `recursive_read_only` as reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recursive_read_only: Option<bool>,
    /// `propagation` as reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub propagation: Option<Propagation>,
    /// An image volume: `ImageSpec.image_ref` is the id of this image (a symbol or a
    /// reference). A runtime that leaves it empty lacks the field, and the case skips.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_ref: Option<String>,
}

fn shown(propagation: i32) -> String {
    v1::MountPropagation::try_from(propagation)
        .map_or_else(|_| propagation.to_string(), |p| p.as_str_name().to_owned())
}

impl StepDef for ContainerMounts {
    const NAME: &'static str = "container_mounts";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str = "Reads a container's mounts from `ContainerStatus` and checks those it names: read-only, recursive read-only, propagation, and an image volume's digest (`image_ref`).";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<MountExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.container(&self.container)?;
        if self.expect.is_empty() {
            return Err(CheckError::empty("expect", "name at least one mount"));
        }
        if let Some((index, m)) = self
            .expect
            .iter()
            .enumerate()
            .find(|(_, m)| !m.container_path.starts_with('/'))
        {
            return Err(CheckError::path(
                format!("expect[{index}].container_path"),
                &m.container_path,
                PathRule::Absolute,
            ));
        }
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let id = world.aliases.container(&self.container)?.id.clone();
        let status = world
            .runtime
            .container_status(&id)
            .await?
            .status
            .ok_or_else(|| mismatch("status", "a status", "an answer without one"))?;
        let reported: Vec<&str> = status
            .mounts
            .iter()
            .map(|m| m.container_path.as_str())
            .collect();
        for wanted in &self.expect {
            let path = &wanted.container_path;
            let Some(mount) = status.mounts.iter().find(|m| &m.container_path == path) else {
                return Err(mismatch(
                    "mounts",
                    format!("a mount at {path}"),
                    format!("{reported:?}"),
                ));
            };
            let field = |name: &str| format!("mounts[{path}].{name}");
            if let Some(readonly) = wanted.readonly {
                let actual = mount.readonly.to_string();
                expect_eq(field("readonly"), &readonly.to_string(), &actual)?;
            }
            if let Some(rro) = wanted.recursive_read_only {
                let actual = mount.recursive_read_only.to_string();
                expect_eq(field("recursive_read_only"), &rro.to_string(), &actual)?;
            }
            if let Some(propagation) = wanted.propagation {
                let expected = shown(propagation.to_cri() as i32);
                expect_eq(field("propagation"), &expected, &shown(mount.propagation))?;
            }
            if let Some(symbol) = &wanted.image_ref {
                let reference = world.image(symbol);
                let image = world
                    .runtime
                    .image_status(&reference)
                    .await?
                    .ok_or_else(|| {
                        StepError::Unsupported(format!(
                            "image_ref: {reference} is not on the runtime"
                        ))
                    })?;
                let actual = mount.image.as_ref().map_or("", |i| i.image_ref.as_str());
                if actual.is_empty() {
                    return Err(StepError::RuntimeLacks(format!(
                        "the digest of image volume {path} (ContainerStatus.mounts[].image.image_ref is empty)"
                    )));
                }
                expect_eq(field("image.image_ref"), &image.id, actual)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mount_expectation_names_an_absolute_path() {
        let step: ContainerMounts =
            serde_saphyr::from_str("{container: app, expect: [{container_path: mnt}]}").unwrap();
        let mut scope = Scope::default();
        scope.define_container("app").unwrap();
        let err = step.check(&mut scope).unwrap_err().to_string();
        assert!(err.contains("must be absolute"), "{err}");
    }
}
