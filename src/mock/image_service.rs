//! `runtime.v1.ImageService` on the mock: pulling a reference "succeeds" with an image id
//! derived from the reference normalised as containerd does (`busybox` ->
//! `docker.io/library/busybox:latest`), so ids are stable across runs and machines. The
//! harness's own catalogue images are known by every tag: one image, one id, however many of
//! its tags are pulled, and their config's user shows in the status as containerd shows it.
//! Pulls and removals take time as a runtime's do (fetching layers, deleting them), so a
//! deadline can pass during a pull and removals can overlap; a malformed reference, and a
//! repository or tag of the harness's own that its registry lacks, fail the pull.

use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use tonic::{Request, Response, Status};

use super::error::RpcError;
use super::list_stream::{self, ListStream};
use super::{Defect, Freedom, Inner, MockRuntime};
use crate::cri::v1;
use crate::images::{self, Reference, TestImage};

/// Size every mock image reports, in bytes.
const IMAGE_SIZE: u64 = 4 * 1024 * 1024;
/// Inodes every mock image is counted as using, for ImageFsInfo.
const IMAGE_INODES: u64 = 256;
/// Where containerd 1.6 keeps image layers by default; ImageFsInfo reports it.
pub(crate) const IMAGE_FS_MOUNTPOINT: &str =
    "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs";

/// The repository namespace of the harness's own images: its registry serves the catalogue's
/// images there and nothing else, so a pull of anything else in it fails as a real
/// registry's would.
const HARNESS_NAMESPACE: &str = "cri-harness/";

/// Serves ImageService from a mock's shared state.
#[derive(Debug, Clone)]
pub(crate) struct MockImageService(pub(crate) MockRuntime);

/// `sha256:` + 64 hex characters of `seed`.
fn digest_of(seed: &str) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(seed.as_bytes())))
}

/// What the mock's "registry" serves for a reference: the image's id, the manifest digest its
/// repository lists it under, and the catalogue entry when it is one of the harness's images.
struct Served {
    id: String,
    manifest: String,
    image: Option<&'static TestImage>,
}

/// The image a reference pulls. A catalogue image keeps one id under all its tags and is
/// found by the manifest digest the mock gives it; any other reference is an image of its own,
/// and any digest names an image (the mock's registry holds everything).
fn served(reference: &Reference) -> Served {
    // Every registry host mirrors the same repositories, as the harness's CI points every
    // registry name at one local registry: a catalogue image answers under any host.
    let path = images::served_path(path_of(&reference.repository));
    let exact = images::catalogue()
        .iter()
        .any(|image| image.repository_full() == reference.repository);
    let mut catalogue = images::catalogue().iter().filter(|image| {
        image.repository_full() == reference.repository || (!exact && image.repository() == path)
    });
    let known = match (&reference.digest, &reference.tag) {
        (Some(digest), _) => catalogue.find(|image| manifest_digest(image.reference) == *digest),
        (None, Some(tag)) => catalogue.find(|image| image.tags().any(|t| t == tag)),
        (None, None) => None,
    };
    match known {
        Some(image) => Served {
            id: digest_of(&images::normalise(image.reference)),
            manifest: manifest_digest(image.reference),
            image: Some(image),
        },
        None => {
            let full = reference.to_full();
            Served {
                id: digest_of(&full),
                // A registry would answer a manifest digest; make one up, stable per reference.
                manifest: reference
                    .digest
                    .clone()
                    .unwrap_or_else(|| manifest_digest(&full)),
                image: None,
            }
        }
    }
}

/// A normalised repository without its registry host.
fn path_of(repository: &str) -> &str {
    repository
        .split_once('/')
        .map_or(repository, |(_, path)| path)
}

/// Why the image grammar (the distribution `reference` package's, which runtimes parse
/// with) refuses `given`, if it does.
fn malformed(given: &str) -> Option<&'static str> {
    let (name, digest) = match given.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (given, None),
    };
    let last_slash = name.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match name[last_slash..].rfind(':') {
        Some(colon) => (
            &name[..last_slash + colon],
            Some(&name[last_slash + colon + 1..]),
        ),
        None => (name, None),
    };
    if name.is_empty() || name.len() > 255 {
        return Some("invalid reference format");
    }
    let mut components = name.split('/').peekable();
    let first = components.peek().copied().unwrap_or_default();
    let has_domain =
        name.contains('/') && (first.contains('.') || first.contains(':') || first == "localhost");
    if has_domain {
        components.next();
    }
    for component in components {
        if component.chars().any(|c| c.is_ascii_uppercase()) {
            return Some("invalid reference format: repository name must be lowercase");
        }
        if !path_component(component) {
            return Some("invalid reference format");
        }
    }
    if let Some(tag) = tag {
        let mut chars = tag.chars();
        let first_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
        if !first_ok || !rest_ok || tag.len() > 128 {
            return Some("invalid reference format");
        }
    }
    if let Some(digest) = digest {
        let well_formed = digest.split_once(':').is_some_and(|(algorithm, hex)| {
            !algorithm.is_empty()
                && algorithm
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+._-".contains(c))
                && hex.len() >= 32
                && hex.chars().all(|c| c.is_ascii_hexdigit())
        });
        if !well_formed {
            return Some("invalid checksum digest format");
        }
    }
    None
}

/// A path component: lowercase alphanumerics, separated by one `.` or `_`, `__`, or dashes.
fn path_component(component: &str) -> bool {
    let bytes = component.as_bytes();
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if bytes.is_empty() || !alnum(bytes[0]) || !alnum(bytes[bytes.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < bytes.len() {
        if alnum(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && !alnum(bytes[i]) {
            i += 1;
        }
        let separator = &component[start..i];
        let allowed = matches!(separator, "." | "_" | "__") || separator.bytes().all(|b| b == b'-');
        if !allowed {
            return false;
        }
    }
    true
}

/// Whether the mock's registry serves `reference`: everything, but in the catalogue's
/// repositories and the harness's own namespace, where only the catalogue's tags and
/// digests are.
fn registry_has(reference: &Reference, served: &Served) -> bool {
    let path = images::served_path(path_of(&reference.repository));
    let guarded = path.starts_with(HARNESS_NAMESPACE)
        || images::catalogue()
            .iter()
            .any(|image| image.repository() == path);
    !guarded || served.image.is_some()
}

/// The manifest digest the mock's registry gives a (normalised) reference.
fn manifest_digest(reference: &str) -> String {
    digest_of(&format!("manifest {}", images::normalise(reference)))
}

/// containerd's reading of an image config's `User`: the part before `:` is a uid when it is a
/// number, else a username (`getUserFromImage` in containerd's CRI plugin).
fn user_of(user: &str) -> (Option<v1::Int64Value>, String) {
    let name = user.split_once(':').map_or(user, |(name, _)| name);
    if name.is_empty() {
        return (None, String::new());
    }
    match name.parse::<i64>() {
        Ok(value) => (Some(v1::Int64Value { value }), String::new()),
        Err(_) => (None, name.to_owned()),
    }
}

/// The index among `images` of the image `reference` names, tried in containerd's order: an
/// id (`sha256:` or bare 64 hex), a tag or digest reference once normalised, then a unique
/// prefix of an id (a short id, with or without `sha256:`).
pub(crate) fn find_image(images: &[v1::Image], reference: &str) -> Option<usize> {
    if reference.is_empty() {
        return None;
    }
    let is_hex = |text: &str| !text.is_empty() && text.chars().all(|c| c.is_ascii_hexdigit());
    let id = if reference.len() == 64 && is_hex(reference) {
        format!("sha256:{reference}")
    } else {
        reference.to_owned()
    };
    if let Some(index) = images.iter().position(|i| i.id == id || i.id == reference) {
        return Some(index);
    }
    let full = images::normalise(reference);
    if let Some(index) = images
        .iter()
        .position(|i| i.repo_tags.contains(&full) || i.repo_digests.contains(&full))
    {
        return Some(index);
    }
    let short = reference.strip_prefix("sha256:").unwrap_or(reference);
    if !is_hex(short) {
        return None;
    }
    let mut matches = images
        .iter()
        .enumerate()
        .filter(|(_, i)| i.id.trim_start_matches("sha256:").starts_with(short));
    match (matches.next(), matches.next()) {
        // An ambiguous prefix names no one image.
        (Some((index, _)), None) => Some(index),
        _ => None,
    }
}

/// The image reference a request names, required non-empty.
fn required_image(spec: Option<v1::ImageSpec>, method: &'static str) -> Result<String, RpcError> {
    match spec {
        Some(spec) if !spec.image.is_empty() => Ok(spec.image),
        _ => Err(RpcError::MissingField {
            method,
            field: "image.image",
        }),
    }
}

/// A pull on arrival: a malformed reference or one the registry lacks fails at once; an
/// image the mock does not hold takes the mock's pull latency to fetch (none unless asked).
fn pull_arrives(
    inner: &mut Inner,
    request: &v1::PullImageRequest,
) -> Result<Option<Duration>, RpcError> {
    let Some(given) = request.image.as_ref().map(|spec| spec.image.as_str()) else {
        return Ok(None);
    };
    if given.is_empty() {
        return Ok(None);
    }
    if let Some(why) = malformed(given) {
        let image = given.to_owned();
        if MockRuntime::takes(inner, Freedom::PullMalformedInvalidArgument) {
            return Err(RpcError::InvalidImageName { image, why });
        }
        return Err(RpcError::ImageReferenceInvalid { image, why });
    }
    let reference = Reference::parse(given);
    inner.registries.check(&reference)?;
    if !registry_has(&reference, &served(&reference)) {
        if MockRuntime::takes(inner, Freedom::PullMissingUnknown) {
            return Err(RpcError::ManifestUnknown {
                image: given.to_owned(),
            });
        }
        return Err(RpcError::ManifestNotFound {
            image: reference.to_full(),
        });
    }
    let held = find_image(&inner.state.images, given).is_some();
    Ok(if held { None } else { inner.latency.pull() })
}

fn pull_image(
    inner: &mut Inner,
    request: v1::PullImageRequest,
) -> Result<v1::PullImageResponse, RpcError> {
    let given = required_image(request.image, "PullImage")?;
    let reference = Reference::parse(&given);
    let served = served(&reference);
    let repo_digest = format!("{}@{}", reference.repository, served.manifest);
    // An image id's form is the runtime's: CRI-O's are the bare hex of the config digest.
    let id = if MockRuntime::takes(inner, Freedom::ImageIdBareHex) {
        served.id.trim_start_matches("sha256:").to_owned()
    } else {
        served.id.clone()
    };
    let images = &mut inner.state.images;
    let index = match images.iter().position(|i| i.id == id) {
        Some(index) => index,
        None => {
            let (uid, username) = user_of(served.image.map_or("", |image| image.user));
            images.push(v1::Image {
                id: id.clone(),
                size: IMAGE_SIZE,
                uid,
                username,
                ..Default::default()
            });
            images.len() - 1
        }
    };
    // containerd adds the reference pulled to the image's references and lists them sorted;
    // a digest reference adds no tag.
    let image = &mut images[index];
    if let Some(tag) = reference.repo_tag() {
        add_sorted(&mut image.repo_tags, tag);
    }
    add_sorted(&mut image.repo_digests, repo_digest);
    Ok(v1::PullImageResponse { image_ref: id })
}

fn add_sorted(list: &mut Vec<String>, item: String) {
    if let Err(at) = list.binary_search(&item) {
        list.insert(at, item);
    }
}

fn image_status(
    inner: &mut Inner,
    request: v1::ImageStatusRequest,
) -> Result<v1::ImageStatusResponse, RpcError> {
    let given = required_image(request.image, "ImageStatus")?;
    let images = &inner.state.images;
    // An image the runtime lacks is not an error: the answer simply carries none.
    let image = find_image(images, &given).map(|index| images[index].clone());
    let info = match &image {
        Some(image) if request.verbose => [("info".to_owned(), verbose_info(image))].into(),
        _ => Default::default(),
    };
    Ok(v1::ImageStatusResponse { image, info })
}

/// The OCI architecture name of the machine the mock runs on.
fn oci_architecture() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "powerpc64" => "ppc64le",
        other => other,
    }
}

/// The catalogue image a stored image is, found by any of its repo tags or digests.
pub(crate) fn catalogue_image(image: &v1::Image) -> Option<&'static TestImage> {
    image
        .repo_tags
        .iter()
        .find_map(|tag| images::find_served(tag))
        .or_else(|| {
            image.repo_digests.iter().find_map(|digest| {
                let repository = digest.split_once('@').map_or("", |(r, _)| r);
                images::catalogue().iter().find(|i| {
                    i.repository_full() == repository
                        && manifest_digest(i.reference) == digest[repository.len() + 1..]
                })
            })
        })
}

/// containerd's verbose image info: the image's chain id and OCI image config, here a
/// one-layer image whose layer digests derive from its id, with the catalogue image's command
/// and user when it is one.
fn verbose_info(image: &v1::Image) -> String {
    let layer = digest_of(&format!("layer {}", image.id));
    let known = catalogue_image(image);
    let mut config = serde_json::json!({
        "Env": [format!("PATH={}", images::IMAGE_PATH)],
    });
    match known {
        Some(known) => {
            if !known.user.is_empty() {
                config["User"] = known.user.into();
            }
            if !known.entrypoint.is_empty() {
                config["Entrypoint"] = known.entrypoint.into();
            }
            if !known.cmd.is_empty() {
                config["Cmd"] = known.cmd.into();
            }
        }
        None => config["Cmd"] = serde_json::json!(["sh"]),
    }
    serde_json::json!({
        // A one-layer image's chain id is its layer's diff id.
        "chainID": layer,
        "imageSpec": {
            "architecture": oci_architecture(),
            "os": "linux",
            "config": config,
            "rootfs": {"type": "layers", "diff_ids": [layer]},
        },
    })
    .to_string()
}

fn list_images(
    inner: &mut Inner,
    _request: v1::ListImagesRequest,
) -> Result<v1::ListImagesResponse, RpcError> {
    // containerd 1.6 ignores the filter (its ListImages has a TODO for one) and answers every
    // image; so does the mock, so suites cannot come to lean on a filter containerd lacks.
    let mut images = inner.state.images.clone();
    images.extend(
        inner
            .state
            .images_listed_after_removal
            .iter()
            .filter(|gone| !images.iter().any(|i| i.id == gone.id))
            .cloned()
            .collect::<Vec<_>>(),
    );
    if MockRuntime::takes(inner, Freedom::ListsNewestFirst) {
        images.reverse();
    }
    Ok(v1::ListImagesResponse { images })
}

/// A removal on arrival: removing an image the mock holds takes the mock's removal latency
/// (none unless asked); one that arrives while another removal of the same image is under way
/// waits as long and then finds it gone, so both succeed.
fn removal_arrives(
    inner: &mut Inner,
    request: &v1::RemoveImageRequest,
) -> Result<Option<Duration>, RpcError> {
    let Some(given) = request.image.as_ref().map(|spec| spec.image.as_str()) else {
        return Ok(None);
    };
    let now = Instant::now();
    let concurrent_fails = MockRuntime::has(inner, Defect::ConcurrentRemoveImageFails);
    let latency = inner.latency.remove();
    let state = &mut inner.state;
    state.images_removing.retain(|_, until| *until > now);
    let Some(index) = find_image(&state.images, given) else {
        return Ok(None);
    };
    let Some(latency) = latency else {
        return Ok(None);
    };
    let id = state.images[index].id.clone();
    if state.images_removing.contains_key(&id) && concurrent_fails {
        return Err(RpcError::ImageNotFound {
            image: given.to_owned(),
        });
    }
    state
        .images_removing
        .entry(id)
        .and_modify(|until| *until = (*until).max(now + latency))
        .or_insert(now + latency);
    Ok(Some(latency))
}

fn remove_image(
    inner: &mut Inner,
    request: v1::RemoveImageRequest,
) -> Result<v1::RemoveImageResponse, RpcError> {
    let given = required_image(request.image, "RemoveImage")?;
    let absent_fails = MockRuntime::has(inner, Defect::RemoveAbsentImageNotFound);
    let still_listed = MockRuntime::has(inner, Defect::RemovedImageStillListed);
    let state = &mut inner.state;
    match find_image(&state.images, &given) {
        Some(index) => {
            let removed = state.images.remove(index);
            if still_listed {
                state.images_listed_after_removal.push(removed);
            }
        }
        None if absent_fails => return Err(RpcError::ImageNotFound { image: given }),
        None => {}
    }
    Ok(v1::RemoveImageResponse {})
}

fn image_fs_info(
    inner: &mut Inner,
    _request: v1::ImageFsInfoRequest,
) -> Result<v1::ImageFsInfoResponse, RpcError> {
    let count = inner.state.images.len() as u64;
    let usage = v1::FilesystemUsage {
        timestamp: inner.clock.now(),
        fs_id: Some(v1::FilesystemIdentifier {
            mountpoint: IMAGE_FS_MOUNTPOINT.to_owned(),
        }),
        used_bytes: (!MockRuntime::has(inner, Defect::ImageFsWithoutUsage)).then_some(
            v1::UInt64Value {
                value: count * IMAGE_SIZE,
            },
        ),
        inodes_used: Some(v1::UInt64Value {
            value: count * IMAGE_INODES,
        }),
    };
    Ok(v1::ImageFsInfoResponse {
        image_filesystems: vec![usage],
        container_filesystems: Vec::new(),
    })
}

#[tonic::async_trait]
impl v1::image_service_server::ImageService for MockImageService {
    async fn list_images(
        &self,
        request: Request<v1::ListImagesRequest>,
    ) -> Result<Response<v1::ListImagesResponse>, Status> {
        self.0.dispatch("ListImages", request, list_images).await
    }

    type StreamImagesStream = ListStream<v1::StreamImagesResponse>;

    async fn stream_images(
        &self,
        request: Request<v1::StreamImagesRequest>,
    ) -> Result<Response<Self::StreamImagesStream>, Status> {
        self.0
            .dispatch("StreamImages", request, |inner, r| {
                let items = list_images(inner, v1::ListImagesRequest { filter: r.filter })?.images;
                Ok(list_stream::stream(inner, items, |batch| {
                    v1::StreamImagesResponse { images: batch }
                }))
            })
            .await
    }

    async fn image_status(
        &self,
        request: Request<v1::ImageStatusRequest>,
    ) -> Result<Response<v1::ImageStatusResponse>, Status> {
        self.0.dispatch("ImageStatus", request, image_status).await
    }

    async fn pull_image(
        &self,
        request: Request<v1::PullImageRequest>,
    ) -> Result<Response<v1::PullImageResponse>, Status> {
        self.0
            .dispatch_timed("PullImage", request, pull_arrives, pull_image)
            .await
    }

    async fn remove_image(
        &self,
        request: Request<v1::RemoveImageRequest>,
    ) -> Result<Response<v1::RemoveImageResponse>, Status> {
        self.0
            .dispatch_timed("RemoveImage", request, removal_arrives, remove_image)
            .await
    }

    async fn image_fs_info(
        &self,
        request: Request<v1::ImageFsInfoRequest>,
    ) -> Result<Response<v1::ImageFsInfoResponse>, Status> {
        self.0.dispatch("ImageFsInfo", request, image_fs_info).await
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn pull(inner: &mut Inner, reference: &str) -> String {
        let request = v1::PullImageRequest {
            image: Some(v1::ImageSpec {
                image: reference.into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        pull_image(inner, request)
            .map(|r| r.image_ref)
            .unwrap_or_default()
    }

    #[test]
    fn an_image_is_found_by_id_short_id_tag_or_short_name() {
        let mut inner = Inner::default();
        let id = pull(&mut inner, "busybox");
        let images = &inner.state.images;
        let hex = id.trim_start_matches("sha256:");
        for reference in [
            id.as_str(),
            hex,
            &hex[..12],
            &format!("sha256:{}", &hex[..12]),
            "busybox",
            "busybox:latest",
            "docker.io/library/busybox",
        ] {
            assert_eq!(find_image(images, reference), Some(0), "{reference}");
        }
        assert_eq!(find_image(images, "busybox:1.36"), None);
        assert_eq!(find_image(images, "not-hex"), None);
    }

    #[test]
    fn an_ambiguous_short_id_names_no_image() {
        let image = |id: &str| v1::Image {
            id: id.to_owned(),
            ..Default::default()
        };
        let images = [image("sha256:abc1"), image("sha256:abc2")];
        assert_eq!(find_image(&images, "abc"), None);
        assert_eq!(find_image(&images, "abc2"), Some(1));
    }

    #[rstest]
    #[case::none("", None, "")]
    #[case::uid("1002", Some(1002), "")]
    #[case::username("www-data", None, "www-data")]
    #[case::uid_and_group("1003:www-data", Some(1003), "")]
    #[case::username_and_group("www-data:www-data", None, "www-data")]
    fn a_config_user_reads_as_uid_or_username_like_containerd(
        #[case] user: &str,
        #[case] uid: Option<i64>,
        #[case] username: &str,
    ) {
        let (actual_uid, actual_username) = user_of(user);
        assert_eq!(actual_uid.map(|u| u.value), uid);
        assert_eq!(actual_username, username);
    }

    #[test]
    fn three_tags_of_one_catalogue_image_are_one_image_with_three_sorted_tags() {
        let mut inner = Inner::default();
        let tags = images::find("test-image-tags")
            .map(TestImage::references)
            .unwrap_or_default();
        let ids: Vec<String> = tags.iter().rev().map(|tag| pull(&mut inner, tag)).collect();
        assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
        let images = &inner.state.images;
        assert_eq!(images.len(), 1);
        assert_eq!(images[0].repo_tags, tags);
        assert_eq!(images[0].repo_digests.len(), 1);
    }

    #[test]
    fn a_catalogue_image_pulled_by_its_digest_is_the_same_image_without_a_tag() {
        let mut inner = Inner::default();
        let by_tag = pull(&mut inner, "localhost/cri-harness/digest:1");
        let digest = inner.state.images[0].repo_digests[0].clone();
        inner.state.images.clear();
        let by_digest = pull(&mut inner, &digest);
        assert_eq!(by_tag, by_digest);
        assert!(inner.state.images[0].repo_tags.is_empty());
        assert_eq!(inner.state.images[0].repo_digests, [digest]);
    }

    #[test]
    fn user_images_report_the_user_of_their_config() {
        let mut inner = Inner::default();
        pull(
            &mut inner,
            "gcr.io/k8s-staging-cri-tools/test-image-user-uid",
        );
        pull(
            &mut inner,
            "gcr.io/k8s-staging-cri-tools/test-image-user-username",
        );
        let images = &inner.state.images;
        assert_eq!(images[0].uid, Some(v1::Int64Value { value: 1002 }));
        assert_eq!(images[1].username, "www-data");
        assert_eq!(images[1].uid, None);
    }
}
