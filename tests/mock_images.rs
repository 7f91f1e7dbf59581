//! ImageService on the mock, across the wire (in-memory duplex): pulls answer stable ids from
//! containerd-normalised references; status, list, remove and ImageFsInfo follow them.

mod support;

use cri_harness::cri::v1;
use rstest::rstest;
use sha2::{Digest, Sha256};
use support::mock;
use tonic::Code;

fn image_id(normalised: &str) -> String {
    format!(
        "sha256:{}",
        hex::encode(Sha256::digest(normalised.as_bytes()))
    )
}

#[rstest]
#[case::short_name("busybox", "docker.io/library/busybox:latest")]
#[case::full_name("docker.io/library/busybox:latest", "docker.io/library/busybox:latest")]
#[case::tagged("registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.9")]
#[tokio::test]
async fn pull_image_answers_an_id_derived_from_the_normalised_reference(
    #[case] reference: &str,
    #[case] normalised: &str,
) {
    let (_mock, client, _control) = mock().await;
    let id = client.pull_image(reference).await.unwrap();
    assert_eq!(id, image_id(normalised));
    let image = client.image_status(reference).await.unwrap().unwrap();
    assert_eq!(
        (image.id, image.repo_tags),
        (id, vec![normalised.to_owned()])
    );
    assert!(image.size > 0);
}

#[tokio::test]
async fn pulling_twice_keeps_one_image() {
    let (_mock, client, _control) = mock().await;
    let first = client.pull_image("busybox").await.unwrap();
    let second = client
        .pull_image("docker.io/library/busybox")
        .await
        .unwrap();
    assert_eq!(first, second);
    assert_eq!(client.list_images(None).await.unwrap().len(), 1);
}

#[tokio::test]
async fn pull_image_without_a_reference_is_invalid() {
    let (_mock, client, _control) = mock().await;
    assert_eq!(
        client.pull_image("").await.unwrap_err().code,
        Code::InvalidArgument
    );
}

#[tokio::test]
async fn image_status_of_an_unknown_image_answers_no_image() {
    let (_mock, client, _control) = mock().await;
    client.pull_image("busybox").await.unwrap();
    assert_eq!(client.image_status("nginx").await.unwrap(), None);
}

#[tokio::test]
async fn image_status_finds_an_image_by_its_id() {
    let (_mock, client, _control) = mock().await;
    let id = client.pull_image("busybox").await.unwrap();
    let image = client.image_status(&id).await.unwrap().map(|i| i.id);
    assert_eq!(image, Some(id));
}

#[tokio::test]
async fn list_images_answers_pull_order_or_the_filtered_image() {
    let (_mock, client, _control) = mock().await;
    let busybox = client.pull_image("busybox").await.unwrap();
    let pause = client
        .pull_image("registry.k8s.io/pause:3.9")
        .await
        .unwrap();
    let all: Vec<String> = client
        .list_images(None)
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(all, [busybox.clone(), pause]);
    let filtered: Vec<String> = client
        .list_images(Some("busybox:latest"))
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(filtered, [busybox]);
    assert!(client.list_images(Some("nginx")).await.unwrap().is_empty());
}

#[tokio::test]
async fn remove_image_removes_it_and_is_idempotent() {
    let (_mock, client, _control) = mock().await;
    client.pull_image("busybox").await.unwrap();
    client.remove_image("busybox").await.unwrap();
    client.remove_image("busybox").await.unwrap();
    client.remove_image("never/pulled:1").await.unwrap();
    assert_eq!(client.image_status("busybox").await.unwrap(), None);
}

#[tokio::test]
async fn image_fs_info_counts_the_pulled_images() {
    let (_mock, client, _control) = mock().await;
    let empty = client.image_fs_info().await.unwrap();
    client.pull_image("busybox").await.unwrap();
    client.pull_image("nginx").await.unwrap();
    let full = client.image_fs_info().await.unwrap();
    let used = |info: &v1::ImageFsInfoResponse| {
        let fs = &info.image_filesystems[0];
        (
            fs.used_bytes.as_ref().map_or(0, |u| u.value),
            fs.inodes_used.as_ref().map_or(0, |u| u.value),
        )
    };
    let image = client.image_status("nginx").await.unwrap().unwrap();
    assert_eq!(used(&empty), (0, 0));
    assert_eq!(used(&full).0, 2 * image.size);
    assert!(used(&full).1 > 0);
    assert_eq!(full.image_filesystems.len(), 1);
    assert!(full.image_filesystems[0].timestamp > empty.image_filesystems[0].timestamp);
}

#[tokio::test]
async fn stream_images_is_unimplemented_by_name() {
    let (_mock, client, _control) = mock().await;
    let status = client
        .image_service()
        .stream_images(v1::StreamImagesRequest::default())
        .await
        .map(|_| ())
        .unwrap_err();
    assert_eq!(
        (status.code(), status.message()),
        (
            Code::Unimplemented,
            "cri-harness mock does not implement ImageService/StreamImages"
        )
    );
}

#[tokio::test]
async fn verbose_image_status_carries_a_chain_id_and_image_config_as_containerd_does() {
    let (_mock, client, _control) = mock().await;
    client.pull_image("busybox").await.unwrap();
    let status = |verbose: bool, image: &str| {
        let mut images = client.image_service();
        let request = v1::ImageStatusRequest {
            image: Some(v1::ImageSpec {
                image: image.to_owned(),
                ..Default::default()
            }),
            verbose,
        };
        async move { images.image_status(request).await.unwrap().into_inner() }
    };
    let verbose = status(true, "busybox").await;
    let info: serde_json::Value = serde_json::from_str(&verbose.info["info"]).unwrap();
    let chain = info["chainID"].as_str().unwrap_or_default();
    assert!(chain.starts_with("sha256:") && chain.len() == 71, "{info}");
    assert_eq!(info["imageSpec"]["os"], "linux");
    assert_eq!(info["imageSpec"]["rootfs"]["diff_ids"][0], chain);
    assert!(status(false, "busybox").await.info.is_empty());
    assert!(
        status(true, "alpine").await.info.is_empty(),
        "no image, no info"
    );
}
