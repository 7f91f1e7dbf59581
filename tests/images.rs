//! The test images end to end: built from this machine's static busybox into OCI layouts whose
//! index, manifest and config digests resolve to blobs with those digests, and the
//! `cri-harness images` subcommand as a user runs it.

mod support;

use std::path::Path;
use std::process::Output;

use cri_harness::images::{self, Busybox, DEFAULT_BUSYBOX};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// This machine's static busybox; a failure where it is absent or unusable.
fn static_busybox() -> Busybox {
    Busybox::load(Path::new(DEFAULT_BUSYBOX))
        .unwrap_or_else(|err| support::need::unmet("busybox-static", &err.to_string()))
}

fn cli(args: &[&str]) -> Output {
    support::harness().args(args).output().unwrap()
}

/// Reads the blob `digest` from `layout`, checking that its content hashes to its name.
fn verified_blob(layout: &Path, digest: &str, size: u64) -> Vec<u8> {
    let hex = digest.strip_prefix("sha256:").unwrap();
    let bytes = std::fs::read(layout.join("blobs/sha256").join(hex)).unwrap();
    assert_eq!(hex::encode(Sha256::digest(&bytes)), hex, "blob {digest}");
    assert_eq!(bytes.len() as u64, size, "size of blob {digest}");
    bytes
}

fn descriptor(value: &Value) -> (String, u64) {
    (
        value["digest"].as_str().unwrap().to_owned(),
        value["size"].as_u64().unwrap(),
    )
}

#[test]
#[cfg_attr(not(crih_ci), ignore = "needs Debian's busybox-static")]
fn built_layouts_resolve_index_manifest_config_and_layer_to_matching_blobs() {
    let busybox = static_busybox();
    let dir = tempfile::tempdir().unwrap();
    let built = images::build_all(&busybox, dir.path()).unwrap();
    assert_eq!(built.len(), images::catalogue().len());
    for image in built {
        let layout = image.layout.as_path();
        let index: Value =
            serde_json::from_slice(&std::fs::read(layout.join("index.json")).unwrap()).unwrap();
        let entry = &index["manifests"][0];
        assert_eq!(
            entry["annotations"]["org.opencontainers.image.ref.name"],
            image.image.tag()
        );
        let (digest, size) = descriptor(entry);
        assert_eq!(digest, image.manifest.digest);
        let manifest: Value =
            serde_json::from_slice(&verified_blob(layout, &digest, size)).unwrap();

        let (config_digest, config_size) = descriptor(&manifest["config"]);
        let config: Value =
            serde_json::from_slice(&verified_blob(layout, &config_digest, config_size)).unwrap();
        assert_eq!(config["architecture"], busybox.platform().architecture);
        assert_eq!(config["os"], "linux");

        let layers = manifest["layers"].as_array().unwrap();
        assert_eq!(layers.len(), 1);
        let (layer_digest, layer_size) = descriptor(&layers[0]);
        let layer = verified_blob(layout, &layer_digest, layer_size);
        assert_eq!(config["rootfs"]["diff_ids"][0], layer_digest);
        // The layer carries the binary itself, unchanged.
        let binary = std::fs::read(DEFAULT_BUSYBOX).unwrap();
        assert!(
            layer.windows(binary.len()).any(|window| window == binary),
            "layer of {} lacks the busybox binary",
            image.image.name
        );
    }
}

#[test]
fn images_list_prints_every_catalogue_reference_one_per_line() {
    let output = cli(&["images", "list"]);
    assert!(output.status.success(), "{output:?}");
    let expected: String = images::catalogue()
        .iter()
        .map(|image| format!("{}\n", image.reference))
        .collect();
    assert_eq!(String::from_utf8(output.stdout).unwrap(), expected);
}

#[test]
fn images_list_long_names_symbol_references_suites_and_purpose() {
    let output = cli(&["images", "list", "--long"]);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let rows: Vec<Vec<&str>> = stdout.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(rows.len(), images::catalogue().len());
    for row in &rows {
        assert_eq!(row.len(), 4, "{row:?}");
    }
    let row = |symbol: &str| rows.iter().find(|r| r[0] == symbol).unwrap().clone();
    assert_eq!(row("pause")[1], "registry.k8s.io/pause:3.9");
    assert_eq!(
        row("test-image-tags")[1],
        "gcr.io/k8s-staging-cri-tools/test-image-tags:1,\
         gcr.io/k8s-staging-cri-tools/test-image-tags:2,\
         gcr.io/k8s-staging-cri-tools/test-image-tags:3"
    );
    // Which suites use an image comes from the suites: the image-manager images serve the
    // images suite, the sandbox image every suite that runs a sandbox (the images suite too,
    // for its image-id cases) and no other.
    assert_eq!(row("test-image-user-uid")[2], "conformance-images");
    assert!(
        row("pause")[2].split(',').any(|s| s == "pod-helpers"),
        "{:?}",
        row("pause")
    );
    assert!(
        !row("pause")[2].contains("version-gating"),
        "{:?}",
        row("pause")
    );
}

#[test]
#[cfg_attr(not(crih_ci), ignore = "needs Debian's busybox-static")]
fn images_build_twice_prints_the_same_digests_as_the_layouts_hold() {
    static_busybox();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let first = cli(&["images", "build", "--oci", out]);
    assert!(first.status.success(), "{first:?}");
    let second = cli(&[
        "images",
        "build",
        "--oci",
        out,
        "--busybox",
        DEFAULT_BUSYBOX,
    ]);
    assert_eq!(first.stdout, second.stdout);

    let stdout = String::from_utf8(first.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), images::catalogue().len());
    for (line, image) in lines.iter().zip(images::catalogue()) {
        let fields: Vec<&str> = line.split(' ').collect();
        // Every tag of an image indexes its one manifest.
        assert_eq!(fields[0], image.reference);
        let index: Value = serde_json::from_slice(
            &std::fs::read(Path::new(fields[2]).join("index.json")).unwrap(),
        )
        .unwrap();
        let entries = index["manifests"].as_array().unwrap();
        assert_eq!(entries.len(), image.tags().count());
        assert!(entries.iter().all(|e| e["digest"] == fields[1]), "{index}");
    }
}

#[test]
fn images_build_with_a_non_elf_busybox_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("busybox");
    std::fs::write(&fake, "#!/bin/sh\n").unwrap();
    let output = cli(&[
        "images",
        "build",
        "--oci",
        dir.path().to_str().unwrap(),
        "--busybox",
        fake.to_str().unwrap(),
    ]);
    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("is not an ELF executable"), "{stderr}");
    assert!(stderr.contains(fake.to_str().unwrap()), "{stderr}");
}

#[test]
fn images_push_without_skopeo_says_how_to_get_it() {
    // Nothing is contacted: the missing tool is reported before anything is built or sent.
    let output = cli(&[
        "images",
        "push",
        "--registry",
        "127.0.0.1:5000",
        "--skopeo",
        "/nonexistent/skopeo",
    ]);
    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("/nonexistent/skopeo"), "{stderr}");
    assert!(stderr.contains("apt-get install skopeo"), "{stderr}");
}

#[test]
fn images_push_refuses_a_registry_given_as_a_url() {
    let output = cli(&["images", "push", "--registry", "http://127.0.0.1:5000"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("HOST:PORT"), "{stderr}");
}

#[test]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs a real CRI runtime (CONTAINER_RUNTIME_ENDPOINT)"
)]
fn images_pull_puts_every_kept_catalogue_image_in_the_runtime() {
    // Against a real runtime only (CI exports the endpoint after ci/containerd.sh up).
    let endpoint = support::need::runtime();
    let output = cli(&["images", "pull", "-r", &endpoint, "--timeout", "60s"]);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    let kept: Vec<_> = images::catalogue().iter().filter(|i| i.kept).collect();
    assert_eq!(lines.len(), kept.len(), "{stdout}");
    for (line, image) in lines.iter().zip(kept) {
        let (reference, id) = line.split_once(' ').unwrap();
        assert_eq!(reference, image.reference);
        assert!(id.starts_with("sha256:"), "{line}");
    }
}

#[test]
fn images_pull_from_a_missing_socket_names_it() {
    let output = cli(&["images", "pull", "-r", "unix:///nonexistent/cri.sock"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("/nonexistent/cri.sock"), "{stderr}");
}
