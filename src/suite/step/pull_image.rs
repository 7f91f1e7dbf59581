//! `pull_image`: `pull_image: IMAGE` pulls an image (a symbol such as `busybox`, or a full
//! reference) unless the runtime has it already, as setup. The map form is the image-manager
//! check: it always pulls, by tag, untagged or by digest, and checks that the id PullImage
//! answers is the image ImageStatus then reports, with the tags and digests expected; or,
//! with `expect: {error}`, that the pull fails (a reference no registry serves, a deadline of
//! `timeout_ms` too short for any pull).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::image_status::{
    check_image, check_repo_digests, check_repo_tags, learn, reference, RefKind,
};
use super::{check_call, is_default, CheckError, ErrorExpect, Kind, Scope, StepDef};
use crate::cri::v1;
use crate::images::Reference;
use crate::world::{expect_eq, mismatch, StepError, World};

/// `pull_image`: a bare image, or a pull with expectations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    untagged,
    expecting = "a `pull_image` step: an image, or `image`, `by`, `expect`"
)]
pub enum PullImage {
    /// `pull_image: IMAGE`: pulled unless present.
    Setup(String),
    /// `pull_image: {image, by, expect}`.
    Check(PullCheck),
}

/// The map form of `pull_image`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PullCheck {
    /// The image: a catalogue symbol, `symbol:tag`, or a reference.
    pub image: String,
    /// How to name it in the pull.
    #[serde(default, skip_serializing_if = "is_default")]
    pub by: PullBy,
    /// The pull's deadline in milliseconds, instead of the run's per-call one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Expectations on the pulled image's status.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: PullExpect,
}

/// How `pull_image` names the image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PullBy {
    /// Its reference with the tag.
    #[default]
    Tag,
    /// Its repository alone, which means `:latest`.
    Untagged,
    /// `repository@digest`. The digest is learned by pulling the tag first; that image is then
    /// removed, so the runtime holds the image by its digest alone.
    Digest,
}

/// What the map form of `pull_image` checks, besides the answered id being the image's.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `pull_image` expectation: `error`, `repo_tags`, `repo_digests`"
)]
pub struct PullExpect {
    /// The pull fails like this (then nothing is checked after it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorExpect>,
    /// Exactly these repo tags afterwards, in any order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo_tags: Option<Vec<String>>,
    /// One repo digest for each of these repositories afterwards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo_digests: Option<Vec<String>>,
}

impl StepDef for PullImage {
    const NAME: &'static str = "pull_image";
    const KIND: Kind = Kind::Setup;
    const ABOUT: &'static str = "Pulls an image: `pull_image: IMAGE` (a symbol such as `busybox`, or a reference) unless present; or `{image, by: tag|untagged|digest, timeout_ms, expect: {error, repo_tags, repo_digests}}`, which always pulls (within `timeout_ms` if given) and checks the answered id is the image's, or that the pull fails.";

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        match self {
            PullImage::Setup(image) => check_image("image", image),
            PullImage::Check(pull) => {
                check_image("image", &pull.image)?;
                if pull.timeout_ms == Some(0) {
                    return Err(CheckError::zero("timeout_ms"));
                }
                let expect = &pull.expect;
                if expect.error.is_some()
                    && (expect.repo_tags.is_some() || expect.repo_digests.is_some())
                {
                    return Err(CheckError::rule(
                        "expect",
                        "a pull expected to fail has no image to check after",
                    ));
                }
                scope.error(expect.error.as_ref())
            }
        }
    }

    fn fields() -> &'static [&'static str] {
        super::fields_of::<PullCheck>()
    }

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<PullExpect>()
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        match self {
            PullImage::Setup(image) => world.pull(image).await,
            PullImage::Check(pull) => pull.run(world).await,
        }
    }
}

/// The clause of what PullImage answers: a reference to the image it pulled.
const ANSWERS_IMAGE: &str = "image.pull.answers-image";

/// Whether `image_ref`, PullImage's answer, names the image ImageStatus reports as `status`.
/// api.proto has it be "an image ID or digest" for most runtimes, without fixing which: so it
/// holds when it is the image's id, one of its repo digests, or any reference ImageStatus
/// answers with the same image.
async fn answers_the_image(
    world: &World,
    image_ref: &str,
    status: &v1::Image,
) -> Result<Result<(), StepError>, StepError> {
    if image_ref == status.id || status.repo_digests.iter().any(|d| d == image_ref) {
        return Ok(Ok(()));
    }
    let named = match image_ref {
        "" => None,
        named => world.runtime.image_status(named).await.ok().flatten(),
    };
    Ok(match named {
        Some(image) if image.id == status.id => Ok(()),
        _ => expect_eq(
            "image_ref (PullImage's answer: the image's id, a digest of it, or a reference ImageStatus answers with it)",
            &status.id,
            image_ref,
        ),
    })
}

/// Tries at a pull expected to succeed, as the kubelet retries a failed pull (with back-off)
/// before it gives up on an image.
const PULL_TRIES: u32 = 3;

/// A pull expected to succeed, retried after a failure: no clause forbids a runtime's
/// transient pull failure (CRI-O hands a pull that joins one in flight that one's error, a
/// cancellation included), and the kubelet retries one. Each failure before the last is
/// noted at `observed`.
async fn pull_as_the_kubelet_does(
    world: &mut World,
    client: &crate::cri::CriClient,
    image: &str,
) -> Result<String, StepError> {
    let mut tries = 1;
    loop {
        match client.pull_image(image).await {
            Ok(id) => return Ok(id),
            Err(err) if tries < PULL_TRIES && !crate::world::is_transport(err.code) => {
                world.note_observed(format!(
                    "pull {tries} of {image} failed, tried again: {err}"
                ));
                tries += 1;
                crate::timing::pause(Duration::from_millis(500)).await;
            }
            Err(err) => return Err(err.into()),
        }
    }
}

impl PullCheck {
    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let pulled = match self.by {
            PullBy::Tag => reference(world, &self.image, RefKind::Tag).await?,
            PullBy::Untagged => reference(world, &self.image, RefKind::Untagged).await?,
            PullBy::Digest => self.digest_reference(world).await?,
        };
        let client = match self.timeout_ms {
            Some(ms) => world.runtime.with_timeout(Duration::from_millis(ms)),
            None => world.runtime.clone(),
        };
        if let Some(want) = &self.expect.error {
            if self.timeout_ms.is_some() {
                // A runtime may finish a pull its caller gave up on; the run removes it.
                world.note_pulled(&pulled);
            }
            let result = client.pull_image(&pulled).await;
            if result.is_ok() {
                world.note_pulled(&pulled);
            }
            check_call(Some(want), result, |text| world.redact(text))?;
            return Ok(());
        }
        let had = world.runtime.image_status(&pulled).await?.is_some();
        if !had {
            // The run removes it at its end should the case fail (or be cut short, the pull
            // still finishing on the runtime) before it does.
            world.note_pulled(&pulled);
        }
        let id = pull_as_the_kubelet_does(world, &client, &pulled).await?;
        let Some(status) = world.runtime.image_status(&pulled).await? else {
            return Err(mismatch(
                format!("{} after the pull", self.image),
                "an image",
                "no image",
            ));
        };
        let answers = answers_the_image(world, &id, &status).await?;
        world.check_on_the_way(ANSWERS_IMAGE, answers)?;
        if let Some(tags) = &self.expect.repo_tags {
            check_repo_tags(world.image_names(), "repo_tags", tags, &status.repo_tags)?;
        }
        if let Some(repositories) = &self.expect.repo_digests {
            check_repo_digests(
                world.image_names(),
                "repo_digests",
                repositories,
                &status.repo_digests,
            )?;
        }
        if self.by == PullBy::Digest && !status.repo_digests.contains(&pulled) {
            return Err(mismatch(
                "repo_digests",
                format!("to hold the digest pulled, {pulled}"),
                format!("{:?}", status.repo_digests),
            ));
        }
        Ok(())
    }

    /// The image's `repository@digest`, learned from a pull by tag whose image is then
    /// removed, so the pull by digest starts from nothing.
    async fn digest_reference(&self, world: &mut World) -> Result<String, StepError> {
        let tagged = reference(world, &self.image, RefKind::Tag).await?;
        if Reference::parse(&tagged).digest.is_some() {
            // Named by digest already (a pinned public image): pull it as it is.
            return Ok(tagged);
        }
        if learn(world, &self.image).await?.is_none() {
            world.runtime.pull_image(&tagged).await?;
        }
        let digest = reference(world, &self.image, RefKind::Digest).await?;
        let id = reference(world, &self.image, RefKind::Id).await?;
        world.runtime.remove_image(&id).await?;
        Ok(digest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scalar_form_still_reads_and_prints_as_a_scalar() {
        let step: PullImage = serde_saphyr::from_str("busybox").unwrap();
        assert_eq!(step, PullImage::Setup("busybox".into()));
        assert_eq!(serde_saphyr::to_string(&step).unwrap().trim(), "busybox");
    }

    #[test]
    fn the_map_form_reads_how_to_pull_and_what_to_expect() {
        let step: PullImage =
            serde_saphyr::from_str("image: test-image-tags:2\nby: digest\nexpect: {repo_tags: []}")
                .unwrap();
        let PullImage::Check(pull) = &step else {
            panic!("{step:?}")
        };
        assert_eq!(pull.by, PullBy::Digest);
        assert_eq!(pull.expect.repo_tags, Some(Vec::new()));
        assert!(step.check(&mut Scope::default()).is_ok());
    }

    #[test]
    fn an_unknown_field_of_the_map_form_is_refused() {
        assert!(serde_saphyr::from_str::<PullImage>("image: a\nhow: tag").is_err());
    }
}
