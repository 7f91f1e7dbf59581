//! `list_images`: the runtime's ListImages, with or without a filter, restricted to the images
//! the case names (a runtime holds other images too); checks exactly which of them answer, how
//! many distinct images they are, and each one's repo tags.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::image_status::{check_image, check_repo_tags, named};
use super::{is_default, CheckError, Kind, Scope, StepDef};
use crate::cri::v1;
use crate::images::ImageNames;
use crate::world::{expect_eq, show, sorted, StepError, World};

/// `list_images`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `list_images` step: `images`, `filter`, `expect`"
)]
pub struct ListImages {
    /// The images the case looks for in the answer (symbols, `symbol:tag` or references).
    pub images: Vec<String>,
    /// The filter sent, an image the same way; none sends no filter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
    /// Expectations.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: ListImagesExpect,
}

/// What `list_images` checks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `list_images` expectation: `present`, `distinct`, `repo_tags`, `status_ids`"
)]
pub struct ListImagesExpect {
    /// Exactly these of the step's `images` answer, in any order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub present: Option<Vec<String>>,
    /// How many distinct image ids the answering images are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distinct: Option<usize>,
    /// The repo tags, exactly, of the image each of the step's `images` names.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub repo_tags: BTreeMap<String, Vec<String>>,
    /// Each answering image's listed id is the id ImageStatus answers for it.
    #[serde(default, skip_serializing_if = "is_default")]
    pub status_ids: bool,
}

/// The listed image `image` names: one with its tag, its digest or its id.
fn answering<'a>(
    names: &ImageNames,
    listed: &'a [v1::Image],
    image: &str,
) -> Option<&'a v1::Image> {
    let full = named(names, image);
    listed.iter().find(|i| {
        i.id == names.resolve(image)
            || i.repo_tags.contains(&full)
            || i.repo_digests.contains(&full)
    })
}

impl StepDef for ListImages {
    const NAME: &'static str = "list_images";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str = "Lists images (optionally with a filter) and checks which of the images the step names answer, how many distinct ones, their repo tags, and that their ids are ImageStatus's.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<ListImagesExpect>()
    }

    fn check(&self, _scope: &mut Scope) -> Result<(), CheckError> {
        if self.images.is_empty() {
            return Err(CheckError::empty("images", "name the images to look for"));
        }
        for image in &self.images {
            check_image("images", image)?;
        }
        if let Some(filter) = &self.filter {
            check_image("filter", filter)?;
        }
        let named: BTreeSet<&String> = self.images.iter().collect();
        let expected = self.expect.present.iter().flatten();
        let expected = expected.map(|image| ("expect.present", image)).chain(
            self.expect
                .repo_tags
                .keys()
                .map(|i| ("expect.repo_tags", i)),
        );
        for (field, image) in expected {
            if !named.contains(image) {
                return Err(CheckError::not_one_of(field, image, "images"));
            }
        }
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let names = world.image_names().clone();
        let filter = self.filter.as_deref().map(|f| names.resolve(f));
        // Even a filtered listing may read every image on the node, other cases' too.
        let listed = world
            .list_node_wide("ListImages", |runtime| {
                let filter = filter.clone();
                async move { runtime.list_images(filter.as_deref()).await }
            })
            .await?;
        let found: Vec<(&String, &v1::Image)> = self
            .images
            .iter()
            .filter_map(|image| answering(&names, &listed, image).map(|i| (image, i)))
            .collect();
        if let Some(present) = &self.expect.present {
            let actual = sorted(found.iter().map(|(image, _)| (*image).clone()));
            expect_eq(
                "present",
                &show(&sorted(present.iter().cloned())),
                &show(&actual),
            )?;
        }
        if let Some(distinct) = self.expect.distinct {
            let ids: BTreeSet<&str> = found.iter().map(|(_, i)| i.id.as_str()).collect();
            expect_eq("distinct", &distinct.to_string(), &ids.len().to_string())?;
        }
        if self.expect.status_ids {
            for (image, listed) in &found {
                let status = world.runtime.image_status(&names.resolve(image)).await?;
                let status_id = status.map_or_else(|| "no image".to_owned(), |i| i.id);
                expect_eq(format!("status_ids.{image}"), &status_id, &listed.id)?;
            }
        }
        for (image, tags) in &self.expect.repo_tags {
            let actual = answering(&names, &listed, image).map_or(&[][..], |i| &i.repo_tags[..]);
            check_repo_tags(&names, &format!("repo_tags.{image}"), tags, actual)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(yaml: &str) -> ListImages {
        serde_saphyr::from_str(yaml).unwrap()
    }

    #[test]
    fn expectations_may_only_name_the_steps_images() {
        let err = step("images: [a]\nexpect: {present: [b]}")
            .check(&mut Scope::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("`b` is not one of"), "{err}");
        let err = step("images: [a]\nexpect: {repo_tags: {c: []}}")
            .check(&mut Scope::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("`c`"), "{err}");
        assert!(
            step("images: [a, b]\nexpect: {present: [b], repo_tags: {a: [a]}}")
                .check(&mut Scope::default())
                .is_ok()
        );
    }

    #[test]
    fn a_listed_image_answers_by_tag_digest_or_id() {
        let listed = [v1::Image {
            id: "sha256:1".into(),
            repo_tags: vec!["docker.io/library/a:latest".into()],
            repo_digests: vec!["docker.io/library/b@sha256:2".into()],
            ..Default::default()
        }];
        for image in ["a", "docker.io/library/a:latest", "b@sha256:2", "sha256:1"] {
            assert!(
                answering(&ImageNames::public(), &listed, image).is_some(),
                "{image}"
            );
        }
        assert!(answering(&ImageNames::public(), &listed, "b").is_none());
    }
}
