//! `image_status`: the runtime's ImageStatus of one image by one or more kinds of reference
//! (tag, untagged, short name, digest, id, short id); every kind must answer the same image,
//! and that image's tags, digests, user and size are checked. The kinds of reference and how a
//! step learns an image's digest and id from the runtime live here; the other image steps use
//! them.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{is_default, is_true, yes, CheckError, Kind, Scope, StepDef};
use crate::cri::v1;
use crate::images::{self, ImageNames, Reference};
use crate::world::{expect_eq, mismatch, show, sorted, StepError, World};

/// Which reference to an image a step sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefKind {
    /// The reference as the suite names it: a symbol is its catalogue reference, with its tag.
    #[default]
    Tag,
    /// The repository without a tag, which a runtime reads as `:latest`.
    Untagged,
    /// The shortest name a runtime normalises back (`busybox` for
    /// `docker.io/library/busybox:latest`).
    ShortName,
    /// `repository@sha256:...`, learned from the image's repo digests.
    Digest,
    /// The image id, learned from the runtime.
    Id,
    /// The first 12 hex digits of the id, as `crictl images` prints it.
    ShortId,
}

impl RefKind {
    /// True when the reference must be learned from an image the runtime holds.
    pub fn is_learned(self) -> bool {
        matches!(self, RefKind::Digest | RefKind::Id | RefKind::ShortId)
    }
}

impl fmt::Display for RefKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RefKind::Tag => "tag",
            RefKind::Untagged => "untagged",
            RefKind::ShortName => "short_name",
            RefKind::Digest => "digest",
            RefKind::Id => "id",
            RefKind::ShortId => "short_id",
        })
    }
}

/// Hex digits of a short id.
const SHORT_ID: usize = 12;

/// The reference the suite's `image` names as the case sends it, normalised: a symbol or
/// `symbol:tag` becomes its catalogue reference, under a registry prefix the mirror's.
pub fn named(names: &ImageNames, image: &str) -> String {
    images::normalise(&names.resolve(image))
}

/// The repository (`host/path`) an image the suite names lives in, as the case pulls it.
pub fn repository_of(names: &ImageNames, image: &str) -> String {
    Reference::parse(&names.resolve(image)).repository
}

/// The image the runtime holds under `image`: by its tag, else (pulled by digest only) the one
/// whose repo digests name its repository. That listing is node-wide, so it is asked again
/// when it fails as one can while other cases remove images beside it.
pub async fn learn(world: &mut World, image: &str) -> Result<Option<v1::Image>, StepError> {
    let reference = world.image(image);
    if let Some(found) = world.runtime.image_status(&reference).await? {
        return Ok(Some(found));
    }
    let prefix = format!("{}@", repository_of(world.image_names(), image));
    Ok(world
        .list_node_wide("ListImages", |runtime| async move {
            runtime.list_images(None).await
        })
        .await?
        .into_iter()
        .find(|i| i.repo_digests.iter().any(|d| d.starts_with(&prefix))))
}

/// The reference of kind `kind` to the image the suite calls `image`.
pub async fn reference(world: &mut World, image: &str, kind: RefKind) -> Result<String, StepError> {
    let resolved = world.image(image);
    let parsed = Reference::parse(&resolved);
    match kind {
        RefKind::Tag => return Ok(resolved),
        RefKind::Untagged => return Ok(parsed.repository),
        RefKind::ShortName if world.image_names().prefix().is_some() => {
            // Cases that need one declare `needs: [docker_hub_names]` and are skipped first.
            return Err(StepError::Unsupported(format!(
                "{image} by {kind}: a short name is a Docker Hub name, and under a registry prefix every image comes from the mirror"
            )));
        }
        RefKind::ShortName => {
            let short = parsed
                .repository
                .strip_prefix("docker.io/library/")
                .unwrap_or(&parsed.repository);
            return Ok(short.to_owned());
        }
        RefKind::Digest | RefKind::Id | RefKind::ShortId => {}
    }
    let Some(found) = learn(world, image).await? else {
        return Err(mismatch(
            format!("{image} by {kind}"),
            format!("an image the runtime holds, to learn its {kind}"),
            "no such image",
        ));
    };
    let prefix = format!("{}@", parsed.repository);
    match kind {
        RefKind::Digest => found
            .repo_digests
            .iter()
            .find(|d| d.starts_with(&prefix))
            .cloned()
            .ok_or_else(|| {
                mismatch(
                    format!("{image}.repo_digests"),
                    format!("a digest of {}", parsed.repository),
                    show(&found.repo_digests),
                )
            }),
        RefKind::Id => Ok(found.id),
        _ => {
            let hex = found.id.trim_start_matches("sha256:");
            Ok(hex.get(..SHORT_ID).unwrap_or(hex).to_owned())
        }
    }
}

/// `image_status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "an `image_status` step: `image`, `refs`, `expect`"
)]
pub struct ImageStatus {
    /// The image: a catalogue symbol, `symbol:tag`, or a reference.
    pub image: String,
    /// The kinds of reference to ask by; every one must answer the same image.
    #[serde(default = "by_tag", skip_serializing_if = "is_by_tag")]
    pub refs: Vec<RefKind>,
    /// Expectations.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: ImageStatusExpect,
}

fn by_tag() -> Vec<RefKind> {
    vec![RefKind::Tag]
}

fn is_by_tag(refs: &[RefKind]) -> bool {
    refs == [RefKind::Tag]
}

/// What `image_status` checks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "an `image_status` expectation: `present`, `repo_tags`, `repo_digests`, `uid`, `username`, `sized`, `same_as`"
)]
pub struct ImageStatusExpect {
    /// The runtime has the image (default); `false`: it answers no image, and no error.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub present: bool,
    /// Exactly these repo tags, in any order (symbols, `symbol:tag` or references).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo_tags: Option<Vec<String>>,
    /// Exactly one `sha256` repo digest for each of these repositories (symbols or references).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo_digests: Option<Vec<String>>,
    /// The uid the image's config user gives, or `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<UidExpect>,
    /// The username the image's config user gives (`""`: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// The size is above zero.
    #[serde(default, skip_serializing_if = "is_default")]
    pub sized: bool,
    /// Another name (a symbol or reference) whose ImageStatus answers the same image id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_as: Option<String>,
}

impl Default for ImageStatusExpect {
    fn default() -> Self {
        Self {
            present: true,
            repo_tags: None,
            repo_digests: None,
            uid: None,
            username: None,
            sized: false,
            same_as: None,
        }
    }
}

/// An expected uid: a number, or `none` for an image whose user is no uid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum UidExpect {
    /// This uid.
    Id(i64),
    /// The word `none`.
    Word(String),
}

impl UidExpect {
    /// The uid as printed in messages, `none` for none.
    fn shown(&self) -> String {
        match self {
            UidExpect::Id(uid) => uid.to_string(),
            UidExpect::Word(word) => word.clone(),
        }
    }
}

impl StepDef for ImageStatus {
    const NAME: &'static str = "image_status";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str = "Asks ImageStatus by kinds of reference (tag, untagged, short_name, digest, id, short_id); all must answer the same image, whose tags, digests, user and size are checked, and whose id another name (`same_as`) answers too.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<ImageStatusExpect>()
    }

    fn check(&self, _scope: &mut Scope) -> Result<(), CheckError> {
        check_image("image", &self.image)?;
        if self.refs.is_empty() {
            return Err(CheckError::empty(
                "refs",
                "name at least one kind of reference",
            ));
        }
        let expect = &self.expect;
        if !expect.present {
            if let Some(kind) = self.refs.iter().find(|k| k.is_learned()) {
                return Err(CheckError::rule(
                    "refs",
                    format!(
                        "an absent image has no {kind} to learn; ask by tag, untagged or short_name"
                    ),
                ));
            }
            let any_field = expect.repo_tags.is_some()
                || expect.repo_digests.is_some()
                || expect.same_as.is_some()
                || expect.uid.is_some()
                || expect.username.is_some()
                || expect.sized;
            if any_field {
                return Err(CheckError::rule(
                    "expect",
                    "an absent image has no fields to check",
                ));
            }
        }
        if let Some(other) = &expect.same_as {
            check_image("expect.same_as", other)?;
        }
        if let Some(UidExpect::Word(word)) = &expect.uid {
            if word != "none" {
                return Err(CheckError::malformed(
                    "expect.uid",
                    word,
                    "a number or `none`",
                    "",
                ));
            }
        }
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let mut first: Option<(RefKind, Option<v1::Image>)> = None;
        for kind in &self.refs {
            let reference = reference(world, &self.image, *kind).await?;
            let answer = world.runtime.image_status(&reference).await?;
            match &first {
                None => first = Some((*kind, answer)),
                Some((first_kind, first_answer)) => {
                    if answer != *first_answer {
                        return Err(mismatch(
                            format!("refs.{kind}"),
                            format!(
                                "the status that {first_kind} answers: {}",
                                brief(first_answer)
                            ),
                            brief(&answer),
                        ));
                    }
                }
            }
        }
        let answer = first.and_then(|(_, answer)| answer);
        check_status(
            world.image_names(),
            &self.image,
            &self.expect,
            answer.as_ref(),
        )?;
        if let (Some(other), Some(answer)) = (&self.expect.same_as, &answer) {
            let theirs = world.runtime.image_status(&world.image(other)).await?;
            let their_id = theirs.map_or_else(|| "no image".to_owned(), |i| i.id);
            expect_eq(format!("same_as.{other} (id)"), &answer.id, &their_id)?;
        }
        Ok(())
    }
}

/// An image field of a step (`field`): not empty.
pub fn check_image(field: &str, image: &str) -> Result<(), CheckError> {
    if image.is_empty() {
        return Err(CheckError::empty(field, "name an image"));
    }
    Ok(())
}

/// An image in a message: its tags and digests, or `no image`.
fn brief(image: &Option<v1::Image>) -> String {
    match image {
        Some(image) => format!(
            "an image with tags {} and digests {}",
            show(&image.repo_tags),
            show(&image.repo_digests)
        ),
        None => "no image".to_owned(),
    }
}

/// Checks an ImageStatus answer against an expectation.
pub fn check_status(
    names: &ImageNames,
    image: &str,
    expect: &ImageStatusExpect,
    answer: Option<&v1::Image>,
) -> Result<(), StepError> {
    let answer = match (expect.present, answer) {
        (false, None) => return Ok(()),
        (false, Some(found)) => {
            return Err(mismatch(
                "present",
                "false (no image)",
                brief(&Some(found.clone())),
            ))
        }
        (true, None) => return Err(mismatch("present", "true", format!("no image for {image}"))),
        (true, Some(found)) => found,
    };
    if let Some(tags) = &expect.repo_tags {
        check_repo_tags(names, "repo_tags", tags, &answer.repo_tags)?;
    }
    if let Some(repositories) = &expect.repo_digests {
        check_repo_digests(names, "repo_digests", repositories, &answer.repo_digests)?;
    }
    if let Some(uid) = &expect.uid {
        let actual = answer
            .uid
            .as_ref()
            .map_or_else(|| "none".to_owned(), |u| u.value.to_string());
        expect_eq("uid", &uid.shown(), &actual)?;
    }
    if let Some(username) = &expect.username {
        expect_eq("username", username, &answer.username)?;
    }
    if expect.sized && answer.size == 0 {
        return Err(mismatch("sized", "a size above 0", "0"));
    }
    Ok(())
}

/// Exactly the tags `expected` names (normalised, as the case pulled them), in any order.
pub fn check_repo_tags(
    names: &ImageNames,
    field: &str,
    expected: &[String],
    actual: &[String],
) -> Result<(), StepError> {
    let expected = sorted(expected.iter().map(|tag| named(names, tag)));
    let actual = sorted(actual.iter().cloned());
    expect_eq(field, &show(&expected), &show(&actual))
}

/// One well-formed `repository@sha256:...` digest for each repository `expected` names.
pub fn check_repo_digests(
    names: &ImageNames,
    field: &str,
    expected: &[String],
    actual: &[String],
) -> Result<(), StepError> {
    for digest in actual {
        let well_formed = digest
            .split_once('@')
            .is_some_and(|(_, d)| images::is_sha256_digest(d));
        if !well_formed {
            return Err(mismatch(
                field,
                "repository@sha256:<64 hex>",
                digest.clone(),
            ));
        }
    }
    let expected = sorted(expected.iter().map(|image| repository_of(names, image)));
    let actual = sorted(
        actual
            .iter()
            .map(|d| d.split_once('@').map_or("", |(r, _)| r).to_owned()),
    );
    expect_eq(
        format!("{field} (repositories)"),
        &show(&expected),
        &show(&actual),
    )
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn step(yaml: &str) -> ImageStatus {
        serde_saphyr::from_str(yaml).unwrap()
    }

    #[rstest]
    #[case::learned_kind_of_absent_image(
        "image: busybox\nrefs: [id]\nexpect: {present: false}",
        "no id to learn"
    )]
    #[case::fields_of_absent_image(
        "image: busybox\nexpect: {present: false, sized: true}",
        "no fields"
    )]
    #[case::uid_word("image: busybox\nexpect: {uid: root}", "a number or `none`")]
    #[case::no_refs("image: busybox\nrefs: []", "at least one")]
    #[case::empty_image("image: ''", "empty")]
    fn invalid_status_steps_say_why(#[case] yaml: &str, #[case] why: &str) {
        let err = step(yaml)
            .check(&mut Scope::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains(why), "{err}");
    }

    #[test]
    fn a_status_step_reads_every_field() {
        let parsed = step(
            "image: test-image-user-uid\nrefs: [tag, id]\nexpect: {repo_tags: [test-image-user-uid], uid: 1002, username: '', sized: true}",
        );
        assert_eq!(parsed.refs, [RefKind::Tag, RefKind::Id]);
        assert_eq!(parsed.expect.uid, Some(UidExpect::Id(1002)));
        assert!(parsed.check(&mut Scope::default()).is_ok());
    }

    fn image(tags: &[&str], digests: &[&str]) -> v1::Image {
        v1::Image {
            id: "sha256:1".into(),
            repo_tags: tags.iter().map(|t| (*t).to_owned()).collect(),
            repo_digests: digests.iter().map(|d| (*d).to_owned()).collect(),
            size: 1,
            ..Default::default()
        }
    }

    #[test]
    fn repo_tags_compare_normalised_and_in_any_order() {
        let actual = [
            "docker.io/library/b:1".to_owned(),
            "docker.io/library/a:latest".to_owned(),
        ];
        assert!(check_repo_tags(
            &ImageNames::public(),
            "t",
            &["a".into(), "b:1".into()],
            &actual
        )
        .is_ok());
        let err = check_repo_tags(&ImageNames::public(), "t", &["a".into()], &actual).unwrap_err();
        assert!(matches!(err, StepError::Mismatch { .. }), "{err}");
    }

    #[test]
    fn a_repo_digest_must_be_a_sha256_of_the_repository() {
        let good = format!("gcr.io/x/y@sha256:{}", "0".repeat(64));
        assert!(check_repo_digests(
            &ImageNames::public(),
            "d",
            &["gcr.io/x/y:1".into()],
            std::slice::from_ref(&good)
        )
        .is_ok());
        assert!(
            check_repo_digests(&ImageNames::public(), "d", &["gcr.io/x/z".into()], &[good])
                .is_err()
        );
        assert!(check_repo_digests(
            &ImageNames::public(),
            "d",
            &["gcr.io/x/y".into()],
            &["gcr.io/x/y@md5:1".into()]
        )
        .is_err());
    }

    #[test]
    fn an_absent_image_fails_a_present_expectation_and_passes_an_absent_one() {
        let present = ImageStatusExpect::default();
        let absent = ImageStatusExpect {
            present: false,
            ..Default::default()
        };
        assert!(check_status(&ImageNames::public(), "x", &present, None).is_err());
        assert!(check_status(&ImageNames::public(), "x", &absent, None).is_ok());
        assert!(check_status(&ImageNames::public(), "x", &absent, Some(&image(&[], &[]))).is_err());
    }

    #[test]
    fn uid_none_means_no_uid_and_a_number_means_that_uid() {
        let mut found = image(&[], &[]);
        let expect = |uid| ImageStatusExpect {
            uid: Some(uid),
            ..Default::default()
        };
        assert!(check_status(
            &ImageNames::public(),
            "x",
            &expect(UidExpect::Word("none".into())),
            Some(&found)
        )
        .is_ok());
        found.uid = Some(v1::Int64Value { value: 1002 });
        assert!(check_status(
            &ImageNames::public(),
            "x",
            &expect(UidExpect::Id(1002)),
            Some(&found)
        )
        .is_ok());
        assert!(check_status(
            &ImageNames::public(),
            "x",
            &expect(UidExpect::Word("none".into())),
            Some(&found)
        )
        .is_err());
    }
}
