//! The image manager SyncPod starts containers through: a container's pull policy (defaulted as
//! the API server does), then ImageStatus and, when the policy says so, PullImage, with the
//! kubelet's error kinds and a back-off between failed pulls of one image for one pod.

use super::backoff::Backoff;
use super::k8s;
use crate::cri::CriClient;
use crate::images::Reference;

/// Error kind of a failed pull (`images.ErrImagePull`).
pub const ERR_IMAGE_PULL: &str = "ErrImagePull";
/// Error kind of an absent image under pull policy Never (`images.ErrImageNeverPull`).
pub const ERR_IMAGE_NEVER_PULL: &str = "ErrImageNeverPull";
/// Error kind of a pull held back after an earlier failure (`images.ErrImagePullBackOff`).
pub const ERR_IMAGE_PULL_BACK_OFF: &str = "ImagePullBackOff";
/// Error kind of an ImageStatus call that failed (`images.ErrImageInspect`).
pub const ERR_IMAGE_INSPECT: &str = "ImageInspectError";
/// Error kind of a container without an image (`images.ErrInvalidImageName`).
pub const ERR_INVALID_IMAGE_NAME: &str = "InvalidImageName";

/// When an image is pulled (`imagePullPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullPolicy {
    /// Pull on every start.
    Always,
    /// Pull only when the runtime lacks the image.
    IfNotPresent,
    /// Never pull; an absent image fails the start.
    Never,
}

/// The container's pull policy; unset, it is defaulted as the API server does: `Always` for a
/// `:latest` or untagged image, else `IfNotPresent`. An unknown value reads as `IfNotPresent`
/// (the API server would have refused it). Ports `SetDefaults_Container`'s rule.
pub fn pull_policy(container: &k8s::Container) -> PullPolicy {
    match container.image_pull_policy.as_deref() {
        Some("Always") => PullPolicy::Always,
        Some("Never") => PullPolicy::Never,
        Some("IfNotPresent") => PullPolicy::IfNotPresent,
        Some(other) if !other.is_empty() => PullPolicy::IfNotPresent,
        _ => {
            let image = container.image.as_deref().unwrap_or_default();
            let reference = Reference::parse(image);
            if reference.digest.is_none() && reference.tag.as_deref() == Some("latest") {
                PullPolicy::Always
            } else {
                PullPolicy::IfNotPresent
            }
        }
    }
}

/// Whether the policy asks for a pull given the image's presence. Ports `shouldPullImage`.
fn should_pull(policy: PullPolicy, present: bool) -> bool {
    match policy {
        PullPolicy::Always => true,
        PullPolicy::IfNotPresent => !present,
        PullPolicy::Never => false,
    }
}

/// An image ready for CreateContainer: its id, and the user its config names (for the
/// container's `run_as_user`/`run_as_username` when the pod sets none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnsuredImage {
    /// The image's id, which the container config names (the kubelet's `imageRef`).
    pub image_ref: String,
    /// The numeric user of the image's config, if it names one.
    pub uid: Option<i64>,
    /// The user name of the image's config, if it names one by name.
    pub username: String,
}

/// Why an image could not be made present: an error kind such as [`ERR_IMAGE_PULL`] and the
/// message the start result carries.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct ImageFailure {
    /// The kubelet's error kind.
    pub kind: &'static str,
    /// What happened, naming the image.
    pub message: String,
}

fn failure(kind: &'static str, message: String) -> ImageFailure {
    ImageFailure { kind, message }
}

/// The kubelet's image manager over one CRI client.
#[derive(Debug, Clone, Copy)]
pub struct ImageManager<'a> {
    client: &'a CriClient,
}

impl<'a> ImageManager<'a> {
    /// A manager pulling through `client`'s image service.
    pub fn new(client: &'a CriClient) -> Self {
        Self { client }
    }

    /// Makes the container's image present as its pull policy says, then answers its id and
    /// user. A failed pull starts (or lengthens) the pod's back-off for that image, and a pull
    /// asked for during it fails with [`ERR_IMAGE_PULL_BACK_OFF`] without calling the runtime.
    /// Ports `EnsureImageExists` (images/image_manager.go); the pull's sandbox config, pull
    /// secrets and parallel-pull limits are left out, as the harness pulls public images only.
    pub async fn ensure_image_exists(
        &self,
        pod: &k8s::Pod,
        container: &k8s::Container,
        backoff: &mut Backoff,
    ) -> Result<EnsuredImage, ImageFailure> {
        let requested = container.image.as_deref().unwrap_or_default();
        if requested.trim().is_empty() {
            return Err(failure(
                ERR_INVALID_IMAGE_NAME,
                format!("container {:?} names no image", container.name),
            ));
        }
        let image = with_default_tag(requested);
        let status = self.client.image_status(&image).await.map_err(|err| {
            failure(
                ERR_IMAGE_INSPECT,
                format!("Failed to inspect image {requested:?}: {}", err.message),
            )
        })?;
        let policy = pull_policy(container);
        if !should_pull(policy, status.is_some()) {
            return match status {
                Some(found) => Ok(ensured(found)),
                None => Err(failure(
                    ERR_IMAGE_NEVER_PULL,
                    format!(
                        "Container image {requested:?} is not present with pull policy of Never"
                    ),
                )),
            };
        }
        let key = format!(
            "{}_{requested}",
            pod.metadata.uid.as_deref().unwrap_or_default()
        );
        let now = backoff.now();
        if backoff.is_in_back_off_since_update(&key, now) {
            return Err(failure(
                ERR_IMAGE_PULL_BACK_OFF,
                format!("Back-off pulling image {requested:?}"),
            ));
        }
        let image_ref = match self.client.pull_image(&image).await {
            Ok(image_ref) => image_ref,
            Err(err) => {
                backoff.next(&key, now);
                return Err(failure(ERR_IMAGE_PULL, err.message));
            }
        };
        backoff.gc();
        // The kubelet reads the image's user with a second ImageStatus (`getImageUser`); an
        // answer without the image leaves the user unset.
        let pulled = self.client.image_status(&image).await.map_err(|err| {
            failure(
                ERR_IMAGE_INSPECT,
                format!("Failed to inspect image {requested:?}: {}", err.message),
            )
        })?;
        Ok(EnsuredImage {
            image_ref,
            ..pulled.map(ensured).unwrap_or_default()
        })
    }
}

fn ensured(image: crate::cri::v1::Image) -> EnsuredImage {
    EnsuredImage {
        image_ref: image.id,
        uid: image.uid.map(|uid| uid.value),
        username: image.username,
    }
}

/// The reference with `:latest` added when it names neither a tag nor a digest. Ports
/// `applyDefaultImageTag`.
fn with_default_tag(image: &str) -> String {
    let name = image.rsplit('/').next().unwrap_or(image);
    if image.contains('@') || name.contains(':') {
        image.to_owned()
    } else {
        format!("{image}:latest")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn container(image: &str, policy: Option<&str>) -> k8s::Container {
        k8s::Container {
            name: "app".to_owned(),
            image: Some(image.to_owned()),
            image_pull_policy: policy.map(str::to_owned),
            ..Default::default()
        }
    }

    #[rstest]
    #[case::untagged("busybox", None, PullPolicy::Always)]
    #[case::latest("busybox:latest", None, PullPolicy::Always)]
    #[case::registry_port_untagged("localhost:5000/busybox", None, PullPolicy::Always)]
    #[case::tagged(
        "registry.k8s.io/e2e-test-images/busybox:1.36.1-1",
        None,
        PullPolicy::IfNotPresent
    )]
    #[case::digest("busybox@sha256:0123", None, PullPolicy::IfNotPresent)]
    #[case::empty_policy_defaults("busybox:1.36", Some(""), PullPolicy::IfNotPresent)]
    #[case::explicit_always("busybox:1.36", Some("Always"), PullPolicy::Always)]
    #[case::explicit_never("busybox", Some("Never"), PullPolicy::Never)]
    #[case::explicit_if_not_present("busybox", Some("IfNotPresent"), PullPolicy::IfNotPresent)]
    fn pull_policy_is_defaulted_as_the_api_server_does(
        #[case] image: &str,
        #[case] policy: Option<&str>,
        #[case] expected: PullPolicy,
    ) {
        assert_eq!(pull_policy(&container(image, policy)), expected);
    }

    #[rstest]
    #[case::always_present(PullPolicy::Always, true, true)]
    #[case::always_absent(PullPolicy::Always, false, true)]
    #[case::if_not_present_present(PullPolicy::IfNotPresent, true, false)]
    #[case::if_not_present_absent(PullPolicy::IfNotPresent, false, true)]
    #[case::never_present(PullPolicy::Never, true, false)]
    #[case::never_absent(PullPolicy::Never, false, false)]
    fn pulls_follow_the_policy_and_presence(
        #[case] policy: PullPolicy,
        #[case] present: bool,
        #[case] pull: bool,
    ) {
        assert_eq!(should_pull(policy, present), pull);
    }

    #[rstest]
    #[case::bare("busybox", "busybox:latest")]
    #[case::tagged("busybox:1.36", "busybox:1.36")]
    #[case::registry_port("localhost:5000/busybox", "localhost:5000/busybox:latest")]
    #[case::digest("busybox@sha256:ab", "busybox@sha256:ab")]
    fn a_reference_without_tag_or_digest_gets_latest(#[case] image: &str, #[case] expected: &str) {
        assert_eq!(with_default_tag(image), expected);
    }
}
