//! `remove_image`: the runtime's RemoveImage by any kind of reference; afterwards the reference
//! removed answers no image (the CRI's promise, on every runtime), and the images the step
//! names answer or not as expected. Removing an image the runtime lacks succeeds, as the CRI
//! asks; an error expectation checks a refusal instead. `concurrent: N` issues N removals at
//! once, each followed by its own ImageStatus, as several kubelet image GCs or crictl users
//! might: every one must succeed and find the image gone.

use serde::{Deserialize, Serialize};

use super::image_status::{check_image, reference, RefKind};
use super::{check_call, is_default, CheckError, ErrorExpect, Kind, Scope, StepDef};
use crate::world::{mismatch, StepError, World};

/// `remove_image`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `remove_image` step: `image`, `by`, `setup`, `concurrent`, `expect`"
)]
pub struct RemoveImage {
    /// The image: a catalogue symbol, `symbol:tag`, or a reference.
    pub image: String,
    /// The kind of reference to remove it by (digests and ids are learned from the runtime).
    #[serde(default, skip_serializing_if = "is_default")]
    pub by: RefKind,
    /// A precondition, not a check: the image must be absent afterwards, and the runtime may
    /// answer either way for an image it did not have (a refusal there is checked by its own
    /// case, not by every case that starts clean).
    #[serde(default, skip_serializing_if = "is_default")]
    pub setup: bool,
    /// Issue this many removals at once (2 or more), each then asking ImageStatus.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrent: Option<usize>,
    /// Expectations.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: RemoveImageExpect,
}

/// What `remove_image` checks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `remove_image` expectation: `error`, `absent`, `present`"
)]
pub struct RemoveImageExpect {
    /// The removal fails like this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorExpect>,
    /// Images (by tag) that answer no image afterwards, besides the reference removed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub absent: Vec<String>,
    /// Images (by tag) that still answer afterwards.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub present: Vec<String>,
}

impl StepDef for RemoveImage {
    const NAME: &'static str = "remove_image";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str = "Removes an image by a kind of reference (tag, untagged, short_name, digest, id, short_id), or `concurrent: N` times at once; the reference then answers no image.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<RemoveImageExpect>()
    }

    fn precondition(&self) -> bool {
        self.setup
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        check_image("image", &self.image)?;
        for image in &self.expect.absent {
            check_image("expect.absent", image)?;
        }
        for image in &self.expect.present {
            check_image("expect.present", image)?;
        }
        if self.setup && self.expect != RemoveImageExpect::default() {
            return Err(CheckError::rule(
                "",
                "a `setup: true` removal makes no expectation; drop its `expect:`",
            ));
        }
        if self.expect.error.is_some()
            && !(self.expect.absent.is_empty() && self.expect.present.is_empty())
        {
            return Err(CheckError::rule(
                "expect",
                "a removal expected to fail has no images to check after",
            ));
        }
        if let Some(count) = self.concurrent {
            if count < 2 {
                return Err(CheckError::rule(
                    "concurrent",
                    "at least 2 removals at once",
                ));
            }
            if self.setup || self.expect.error.is_some() {
                return Err(CheckError::rule(
                    "concurrent",
                    "removals at once must all succeed; no `setup` or `expect.error`",
                ));
            }
        }
        scope.error(self.expect.error.as_ref())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let removed = reference(world, &self.image, self.by).await?;
        if let Some(count) = self.concurrent {
            self.remove_at_once(world, &removed, count).await?;
            return self.check_after(world, &removed).await;
        }
        let result = world.runtime.remove_image(&removed).await;
        world.forget_pulled();
        if self.setup {
            // Whatever the answer, the precondition holds when the image answers no image.
            return match world.runtime.image_status(&removed).await? {
                None => Ok(()),
                Some(found) => Err(mismatch(
                    format!("{} by {} before the case", self.image, self.by),
                    "no image",
                    format!(
                        "image with tags {:?} (RemoveImage: {result:?})",
                        found.repo_tags
                    ),
                )),
            };
        }
        let redact = |text: &str| world.redact(text);
        if check_call(self.expect.error.as_ref(), result, redact)?.is_none() {
            return Ok(());
        }
        self.check_after(world, &removed).await
    }
}

impl RemoveImage {
    /// `count` removals issued at once, each followed by its own ImageStatus; every removal
    /// must succeed and every status after it answer no image. Failures are reported by the
    /// index of the call in issue order, the lowest first.
    async fn remove_at_once(
        &self,
        world: &mut World,
        removed: &str,
        count: usize,
    ) -> Result<(), StepError> {
        let calls = (0..count).map(|_| {
            let runtime = world.runtime.clone();
            async move {
                let result = runtime.remove_image(removed).await;
                let after = runtime.image_status(removed).await;
                (result, after)
            }
        });
        let outcomes = futures::future::join_all(calls).await;
        world.forget_pulled();
        let failed = outcomes
            .iter()
            .filter(|(result, _)| result.is_err())
            .count();
        for (index, (result, after)) in outcomes.into_iter().enumerate() {
            if let Err(err) = result {
                return Err(mismatch(
                    format!("concurrent[{index}]"),
                    format!("each of {count} removals at once to succeed"),
                    format!(
                        "{failed} failed, this one {:?}: {}",
                        err.code,
                        world.redact(&err.message)
                    ),
                ));
            }
            if let Some(found) = after? {
                return Err(mismatch(
                    format!(
                        "concurrent[{index}]: {} after its removal returned",
                        self.image
                    ),
                    "no image",
                    format!("image with tags {:?}", found.repo_tags),
                ));
            }
        }
        Ok(())
    }

    /// After a removal: the reference removed answers no image; `absent` and `present` as
    /// expected.
    async fn check_after(&self, world: &mut World, removed: &str) -> Result<(), StepError> {
        let by = self.by;
        if let Some(found) = world.runtime.image_status(removed).await? {
            return Err(mismatch(
                format!("{} by {by} after removal", self.image),
                "no image",
                format!("image with tags {:?}", found.repo_tags),
            ));
        }
        for image in &self.expect.absent {
            if world
                .runtime
                .image_status(&world.image(image))
                .await?
                .is_some()
            {
                return Err(mismatch(format!("absent.{image}"), "no image", "an image"));
            }
        }
        for image in &self.expect.present {
            if world
                .runtime
                .image_status(&world.image(image))
                .await?
                .is_none()
            {
                return Err(mismatch(format!("present.{image}"), "an image", "no image"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(yaml: &str) -> RemoveImage {
        serde_saphyr::from_str(yaml).unwrap()
    }

    #[test]
    fn a_remove_step_reads_its_kind_of_reference_and_prints_back_only_what_differs() {
        let parsed =
            step("image: test-image-tags\nby: short_id\nexpect: {absent: ['test-image-tags:2']}");
        assert_eq!(parsed.by, RefKind::ShortId);
        assert!(parsed.check(&mut Scope::default()).is_ok());
        let printed = serde_saphyr::to_string(&step("image: busybox")).unwrap();
        assert_eq!(printed.trim(), "image: busybox");
    }

    #[test]
    fn concurrent_removals_are_two_or_more_and_all_expected_to_succeed() {
        assert!(step("image: a\nconcurrent: 5")
            .check(&mut Scope::default())
            .is_ok());
        for (yaml, why) in [
            ("image: a\nconcurrent: 1", "at least 2"),
            ("image: a\nconcurrent: 2\nsetup: true", "must all succeed"),
            (
                "image: a\nconcurrent: 2\nexpect: {error: {}}",
                "must all succeed",
            ),
        ] {
            let err = step(yaml)
                .check(&mut Scope::default())
                .unwrap_err()
                .to_string();
            assert!(err.contains(why), "{yaml}: {err}");
        }
    }

    #[test]
    fn a_failing_removal_checks_nothing_after() {
        let err = step("image: a\nexpect: {error: {code: NotFound}, absent: [a]}")
            .check(&mut Scope::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("expected to fail"), "{err}");
    }
}
