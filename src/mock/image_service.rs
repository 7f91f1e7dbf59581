//! `runtime.v1.ImageService` on the mock: pulling any reference "succeeds" instantly with an
//! image id derived from the reference normalised as containerd does (`busybox` ->
//! `docker.io/library/busybox:latest`), so ids are stable across runs and machines.

use sha2::{Digest, Sha256};
use tonic::{Request, Response, Status};

use super::error::RpcError;
use super::{Inner, MockRuntime};
use crate::cri::v1;

/// Size every mock image reports, in bytes.
const IMAGE_SIZE: u64 = 4 * 1024 * 1024;
/// Inodes every mock image is counted as using, for ImageFsInfo.
const IMAGE_INODES: u64 = 256;
/// Where containerd 1.6 keeps image layers by default; ImageFsInfo reports it.
pub(crate) const IMAGE_FS_MOUNTPOINT: &str =
    "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs";

/// Serves ImageService from a mock's shared state.
#[derive(Debug, Clone)]
pub(crate) struct MockImageService(pub(crate) MockRuntime);

/// A reference in its fully qualified form: registry, repository, tag or digest.
#[derive(Debug, PartialEq, Eq)]
struct Reference {
    /// `registry/path`, e.g. `docker.io/library/busybox`.
    repository: String,
    /// The tag (`latest` when neither tag nor digest was given).
    tag: Option<String>,
    /// `sha256:...` when pulled by digest.
    digest: Option<String>,
}

impl Reference {
    /// Qualifies a reference the way Docker's reference grammar (and so containerd) does: a
    /// first path component is a registry only if it has a dot or a colon or is `localhost`;
    /// Docker Hub's official images live under `library/`; no tag and no digest means `latest`.
    fn parse(reference: &str) -> Self {
        let (name, digest) = match reference.split_once('@') {
            Some((name, digest)) => (name, Some(digest.to_owned())),
            None => (reference, None),
        };
        let last_slash = name.rfind('/').map_or(0, |i| i + 1);
        let (name, tag) = match name[last_slash..].rfind(':') {
            Some(colon) => (
                &name[..last_slash + colon],
                Some(name[last_slash + colon + 1..].to_owned()),
            ),
            None => (name, None),
        };
        let (registry, path) = match name.split_once('/') {
            Some((first, rest))
                if first.contains('.') || first.contains(':') || first == "localhost" =>
            {
                (first, rest.to_owned())
            }
            _ => ("docker.io", name.to_owned()),
        };
        let registry = if registry == "index.docker.io" {
            "docker.io"
        } else {
            registry
        };
        let path = if registry == "docker.io" && !path.contains('/') {
            format!("library/{path}")
        } else {
            path
        };
        let tag = match (&tag, &digest) {
            (None, None) => Some("latest".to_owned()),
            _ => tag,
        };
        Self {
            repository: format!("{registry}/{path}"),
            tag,
            digest,
        }
    }

    /// The normalised reference as a string.
    fn to_full(&self) -> String {
        let mut out = self.repository.clone();
        if let Some(tag) = &self.tag {
            out.push(':');
            out.push_str(tag);
        }
        if let Some(digest) = &self.digest {
            out.push('@');
            out.push_str(digest);
        }
        out
    }
}

/// `sha256:` + 64 hex characters of `seed`.
fn digest_of(seed: &str) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(seed.as_bytes())))
}

/// The index among `images` of the image `reference` names: its id (with or without
/// `sha256:`), or any of its tags or digests once normalised.
pub(crate) fn find_image(images: &[v1::Image], reference: &str) -> Option<usize> {
    if reference.is_empty() {
        return None;
    }
    let is_hex = reference.len() == 64 && reference.chars().all(|c| c.is_ascii_hexdigit());
    let id = if is_hex {
        format!("sha256:{reference}")
    } else {
        reference.to_owned()
    };
    if let Some(index) = images.iter().position(|i| i.id == id) {
        return Some(index);
    }
    let full = Reference::parse(reference).to_full();
    images
        .iter()
        .position(|i| i.repo_tags.contains(&full) || i.repo_digests.contains(&full))
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

fn pull_image(
    inner: &mut Inner,
    request: v1::PullImageRequest,
) -> Result<v1::PullImageResponse, RpcError> {
    let given = required_image(request.image, "PullImage")?;
    let reference = Reference::parse(&given);
    let full = reference.to_full();
    let id = digest_of(&full);
    let images = &mut inner.state.images;
    if !images.iter().any(|i| i.id == id) {
        let repo_digests = vec![match &reference.digest {
            Some(digest) => format!("{}@{digest}", reference.repository),
            // A registry would answer a manifest digest; make one up, stable per reference.
            None => format!(
                "{}@{}",
                reference.repository,
                digest_of(&format!("manifest {full}"))
            ),
        }];
        let repo_tags = if reference.tag.is_some() && reference.digest.is_none() {
            vec![full]
        } else {
            Vec::new()
        };
        images.push(v1::Image {
            id: id.clone(),
            repo_tags,
            repo_digests,
            size: IMAGE_SIZE,
            ..Default::default()
        });
    }
    Ok(v1::PullImageResponse { image_ref: id })
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

/// containerd's verbose image info: the image's chain id and OCI image config, here a
/// one-layer image whose layer digests derive from its id.
fn verbose_info(image: &v1::Image) -> String {
    let layer = digest_of(&format!("layer {}", image.id));
    serde_json::json!({
        // A one-layer image's chain id is its layer's diff id.
        "chainID": layer,
        "imageSpec": {
            "architecture": oci_architecture(),
            "os": "linux",
            "config": {
                "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
                "Cmd": ["sh"],
            },
            "rootfs": {"type": "layers", "diff_ids": [layer]},
        },
    })
    .to_string()
}

fn list_images(
    inner: &mut Inner,
    request: v1::ListImagesRequest,
) -> Result<v1::ListImagesResponse, RpcError> {
    let wanted = request
        .filter
        .and_then(|f| f.image)
        .map(|spec| spec.image)
        .filter(|image| !image.is_empty());
    let images = &inner.state.images;
    let images = match wanted {
        None => images.clone(),
        Some(reference) => find_image(images, &reference)
            .map(|index| images[index].clone())
            .into_iter()
            .collect(),
    };
    Ok(v1::ListImagesResponse { images })
}

fn remove_image(
    inner: &mut Inner,
    request: v1::RemoveImageRequest,
) -> Result<v1::RemoveImageResponse, RpcError> {
    let given = required_image(request.image, "RemoveImage")?;
    let images = &mut inner.state.images;
    if let Some(index) = find_image(images, &given) {
        images.remove(index);
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
        used_bytes: Some(v1::UInt64Value {
            value: count * IMAGE_SIZE,
        }),
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

    type StreamImagesStream = std::pin::Pin<
        Box<dyn futures::Stream<Item = Result<v1::StreamImagesResponse, Status>> + Send + 'static>,
    >;

    async fn stream_images(
        &self,
        request: Request<v1::StreamImagesRequest>,
    ) -> Result<Response<Self::StreamImagesStream>, Status> {
        self.0
            .dispatch("StreamImages", request, |_, _| {
                Err(RpcError::Unimplemented {
                    service: "ImageService",
                    method: "StreamImages",
                })
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
        self.0.dispatch("PullImage", request, pull_image).await
    }

    async fn remove_image(
        &self,
        request: Request<v1::RemoveImageRequest>,
    ) -> Result<Response<v1::RemoveImageResponse>, Status> {
        self.0.dispatch("RemoveImage", request, remove_image).await
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

    #[rstest]
    #[case::official_image("busybox", "docker.io/library/busybox:latest")]
    #[case::tagged("busybox:1.36", "docker.io/library/busybox:1.36")]
    #[case::hub_user("user/app", "docker.io/user/app:latest")]
    #[case::hub_explicit("docker.io/busybox", "docker.io/library/busybox:latest")]
    #[case::hub_index("index.docker.io/library/busybox:1", "docker.io/library/busybox:1")]
    #[case::registry_with_port("localhost:5000/app", "localhost:5000/app:latest")]
    #[case::registry_with_port_and_tag("localhost:5000/app:v2", "localhost:5000/app:v2")]
    #[case::registry_domain("registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.9")]
    #[case::localhost("localhost/app", "localhost/app:latest")]
    #[case::digest("busybox@sha256:abc", "docker.io/library/busybox@sha256:abc")]
    #[case::tag_and_digest("busybox:1@sha256:abc", "docker.io/library/busybox:1@sha256:abc")]
    fn references_normalise_like_containerd(#[case] given: &str, #[case] full: &str) {
        assert_eq!(Reference::parse(given).to_full(), full);
    }

    #[test]
    fn an_image_is_found_by_id_short_id_tag_or_short_name() {
        let mut inner = Inner::default();
        let request = v1::PullImageRequest {
            image: Some(v1::ImageSpec {
                image: "busybox".into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let id = pull_image(&mut inner, request)
            .map(|r| r.image_ref)
            .unwrap_or_default();
        let images = &inner.state.images;
        let hex = id.trim_start_matches("sha256:");
        for reference in [
            id.as_str(),
            hex,
            "busybox:latest",
            "docker.io/library/busybox",
        ] {
            assert_eq!(find_image(images, reference), Some(0), "{reference}");
        }
        assert_eq!(find_image(images, "busybox:1.36"), None);
    }
}
