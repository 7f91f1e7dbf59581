//! ImageService on the mock, across the wire (in-memory duplex): pulls answer stable ids from
//! containerd-normalised references; status, list, remove and ImageFsInfo follow them.

use crate::support;

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
async fn list_images_answers_pull_order_and_ignores_the_filter_as_containerd_does() {
    let (_mock, client, _control) = mock().await;
    let busybox = client.pull_image("busybox").await.unwrap();
    let pause = client
        .pull_image("registry.k8s.io/pause:3.9")
        .await
        .unwrap();
    let ids = |images: Vec<v1::Image>| images.into_iter().map(|i| i.id).collect::<Vec<_>>();
    let all = ids(client.list_images(None).await.unwrap());
    assert_eq!(all, [busybox, pause]);
    for filter in ["busybox:latest", "nginx"] {
        let filtered = ids(client.list_images(Some(filter)).await.unwrap());
        assert_eq!(filtered, all, "{filter}");
    }
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
async fn stream_images_answers_what_list_images_lists_each_once() {
    let (_mock, client, _control) = mock().await;
    client.pull_image("nginx").await.unwrap();
    client.pull_image("busybox").await.unwrap();
    let listed: Vec<String> = client
        .list_images(None)
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.id)
        .collect();
    let messages = client.stream_images(None).await.unwrap();
    assert!(messages.iter().all(|m| !m.is_empty()));
    let streamed: Vec<String> = messages.into_iter().flatten().map(|i| i.id).collect();
    assert_eq!(streamed, listed);
    let filtered: Vec<String> = client
        .list_images(Some("nginx"))
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.id)
        .collect();
    let streamed: Vec<String> = client
        .stream_images(Some("nginx"))
        .await
        .unwrap()
        .into_iter()
        .flatten()
        .map(|i| i.id)
        .collect();
    // Whatever the unary list makes of the filter (the mock ignores it, as containerd 1.6's
    // ListImages does), the stream makes the same.
    assert_eq!(streamed, filtered);
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

const TAGS: [&str; 3] = [
    "gcr.io/k8s-staging-cri-tools/test-image-tags:1",
    "gcr.io/k8s-staging-cri-tools/test-image-tags:2",
    "gcr.io/k8s-staging-cri-tools/test-image-tags:3",
];

#[tokio::test]
async fn three_tags_of_one_catalogue_image_are_one_image_listed_with_all_three() {
    let (_mock, client, _control) = mock().await;
    let mut ids = Vec::new();
    for tag in TAGS {
        ids.push(client.pull_image(tag).await.unwrap());
    }
    ids.dedup();
    assert_eq!(ids.len(), 1, "{ids:?}");
    let listed = client.list_images(None).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].repo_tags, TAGS);
    assert_eq!(listed[0].repo_digests.len(), 1);
}

#[tokio::test]
async fn three_different_catalogue_images_have_three_ids() {
    let (_mock, client, _control) = mock().await;
    let mut ids = Vec::new();
    for n in 1..=3 {
        let image = format!("gcr.io/k8s-staging-cri-tools/test-image-{n}:latest");
        ids.push(client.pull_image(&image).await.unwrap());
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 3);
}

#[tokio::test]
async fn removing_one_tag_removes_the_image_under_every_tag_as_containerd_does() {
    let (_mock, client, _control) = mock().await;
    for tag in TAGS {
        client.pull_image(tag).await.unwrap();
    }
    client.remove_image(TAGS[1]).await.unwrap();
    for tag in TAGS {
        assert_eq!(client.image_status(tag).await.unwrap(), None, "{tag}");
    }
}

#[tokio::test]
async fn an_image_answers_by_short_id_and_by_its_digest() {
    let (_mock, client, _control) = mock().await;
    let id = client.pull_image(TAGS[0]).await.unwrap();
    let image = client.image_status(TAGS[0]).await.unwrap().unwrap();
    let short = &id["sha256:".len().."sha256:".len() + 12];
    for reference in [short, image.repo_digests[0].as_str()] {
        let found = client.image_status(reference).await.unwrap();
        assert_eq!(found.as_ref(), Some(&image), "{reference}");
    }
}

#[tokio::test]
async fn a_catalogue_image_pulled_by_digest_has_that_digest_and_no_tag() {
    let (_mock, client, _control) = mock().await;
    let by_tag = client
        .pull_image("localhost/cri-harness/digest:1")
        .await
        .unwrap();
    let digest = client
        .image_status(&by_tag)
        .await
        .unwrap()
        .unwrap()
        .repo_digests[0]
        .clone();
    client.remove_image(&by_tag).await.unwrap();
    let by_digest = client.pull_image(&digest).await.unwrap();
    assert_eq!(by_tag, by_digest);
    let image = client.image_status(&digest).await.unwrap().unwrap();
    assert!(image.repo_tags.is_empty(), "{image:?}");
    assert_eq!(image.repo_digests, [digest]);
}

#[rstest]
#[case::uid("test-image-user-uid", Some(1002), "")]
#[case::username("test-image-user-username", None, "www-data")]
#[case::uid_group("test-image-user-uid-group", Some(1003), "")]
#[case::username_group("test-image-user-username-group", None, "www-data")]
#[case::no_user("test-image-1", None, "")]
#[tokio::test]
async fn image_status_reads_uid_or_username_from_the_config_user(
    #[case] name: &str,
    #[case] uid: Option<i64>,
    #[case] username: &str,
) {
    let (_mock, client, _control) = mock().await;
    let reference = format!("gcr.io/k8s-staging-cri-tools/{name}");
    client.pull_image(&reference).await.unwrap();
    let image = client.image_status(&reference).await.unwrap().unwrap();
    assert_eq!(image.uid.map(|u| u.value), uid);
    assert_eq!(image.username, username);
}

/// A suite whose image expectations are wrong fails, and says which field in the suite's words.
#[rstest]
#[case::wrong_tags(
    "- pull_image: {image: test-image-1}\n      - image_status: {image: test-image-1, expect: {repo_tags: [test-image-2]}}",
    "repo_tags: expected [gcr.io/k8s-staging-cri-tools/test-image-2:latest]"
)]
#[case::wrong_uid(
    "- pull_image: {image: test-image-user-uid}\n      - image_status: {image: test-image-user-uid, expect: {uid: 1003}}",
    "uid: expected 1003, got 1002"
)]
#[case::present_after_all(
    "- image_status: {image: test-image-1, expect: {present: true}}",
    "present: expected true"
)]
#[case::three_tags_are_not_three_images(
    "- pull_image: {image: 'test-image-tags:1'}\n      - pull_image: {image: 'test-image-tags:2'}\n      - list_images: {images: ['test-image-tags:1', 'test-image-tags:2'], expect: {distinct: 2}}",
    "distinct: expected 2, got 1"
)]
fn wrong_image_expectations_fail_the_case_naming_the_field(
    #[case] steps: &str,
    #[case] says: &str,
) {
    let dir = tempfile::tempdir().unwrap();
    let suite = format!(
        "suite: images-wrong\nabout: wrong on purpose\ntags: [images-wrong]\ncases:\n  - name: wrong\n    steps:\n      {steps}\n"
    );
    std::fs::write(dir.path().join("wrong.yaml"), suite).unwrap();
    let output = support::harness()
        .args(["run", "--mock", "--tags", "images-wrong", "--suites"])
        .arg(dir.path())
        .args(["--snapshot-dir"])
        .arg(dir.path().join("snapshots"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("FAIL images-wrong/wrong"),
        "{stdout}{stderr}"
    );
    assert!(stdout.contains(says), "{stdout}");
}

#[tokio::test]
async fn verbose_status_of_a_catalogue_image_carries_its_config_user_and_command() {
    let (_mock, client, _control) = mock().await;
    let reference = "gcr.io/k8s-staging-cri-tools/test-image-user-uid-group";
    client.pull_image(reference).await.unwrap();
    let mut images = client.image_service();
    let request = v1::ImageStatusRequest {
        image: Some(v1::ImageSpec {
            image: reference.to_owned(),
            ..Default::default()
        }),
        verbose: true,
    };
    let answer = images.image_status(request).await.unwrap().into_inner();
    let info: serde_json::Value = serde_json::from_str(&answer.info["info"]).unwrap();
    let config = &info["imageSpec"]["config"];
    assert_eq!(config["User"], "1003:www-data", "{info}");
    assert_eq!(config["Cmd"], serde_json::json!(["sh"]), "{info}");
}
