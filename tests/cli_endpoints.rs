//! Where the endpoint comes from, as a user meets it: `-r`/`-i`, their variables
//! (CONTAINER_RUNTIME_ENDPOINT, IMAGE_SERVICE_ENDPOINT) and crictl's config, read the same way
//! by every subcommand; `run` and `prop` take the mock only with `--mock`.

use crate::support;

use std::process::Output;

use rstest::rstest;
use tokio::process::Command;

/// The harness with no endpoint from the caller's environment, plus `env`.
fn harness(env: &[(&str, &str)]) -> Command {
    let mut command = Command::from(support::harness());
    command.envs(env.iter().copied()).kill_on_drop(true);
    command
}

async fn harness_output(args: &[&str], env: &[(&str, &str)]) -> (Output, String) {
    let output = harness(env).args(args).output().await.unwrap();
    let text = support::printed(&output);
    (output, text)
}

const ABSENT: &str = "/nonexistent/runtime.sock";

#[rstest]
#[case::run(&["run"])]
#[case::prop(&["prop", "--cases", "1"])]
#[case::version(&["version"])]
#[case::clean(&["clean"])]
#[tokio::test]
async fn every_subcommand_takes_the_runtime_endpoint_from_the_environment(#[case] args: &[&str]) {
    let (output, text) = harness_output(args, &[("CONTAINER_RUNTIME_ENDPOINT", ABSENT)]).await;
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains(ABSENT), "{text}");
}

#[rstest]
#[case::run(&["run"])]
#[case::prop(&["prop", "--cases", "1"])]
#[tokio::test]
async fn run_and_prop_without_an_endpoint_name_every_way_to_give_one_and_the_mock(
    #[case] args: &[&str],
) {
    let (output, text) = harness_output(args, &[]).await;
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert_eq!(text.trim_end().lines().count(), 1, "{text}");
    for way in [
        "-r/--runtime-endpoint",
        "CONTAINER_RUNTIME_ENDPOINT",
        "runtime-endpoint in /nonexistent/crictl.yaml",
        "--mock",
    ] {
        assert!(text.contains(way), "{text}");
    }
}

#[tokio::test]
async fn prop_mock_ignores_an_endpoint_in_the_environment() {
    let args = [
        "prop",
        "--mock",
        "--cases",
        "2",
        "--property",
        "version_gating_accepts_exactly_0_1_0",
    ];
    let (output, text) = harness_output(&args, &[("CONTAINER_RUNTIME_ENDPOINT", ABSENT)]).await;
    assert!(output.status.success(), "{text}");
    assert!(!text.contains(ABSENT), "{text}");
}

#[tokio::test]
async fn run_mock_ignores_an_endpoint_in_the_environment_and_runs_on_the_mock() {
    let snapshots = tempfile::tempdir().unwrap();
    let (output, text) = harness_output(
        &[
            "run",
            "--mock",
            "--focus",
            "^version-gating/",
            "--snapshot-dir",
            snapshots.path().to_str().unwrap(),
        ],
        &[("CONTAINER_RUNTIME_ENDPOINT", ABSENT)],
    )
    .await;
    assert!(output.status.success(), "{text}");
    assert!(text.contains(" against mock in "), "{text}");
}

#[rstest]
#[case::run(&["run", "--mock", "-r", ABSENT], "-r/--runtime-endpoint")]
#[case::prop(&["prop", "--mock", "-i", ABSENT], "-i/--image-endpoint")]
#[tokio::test]
async fn mock_and_a_typed_endpoint_exclude_each_other(#[case] args: &[&str], #[case] flag: &str) {
    let (output, text) = harness_output(args, &[]).await;
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.contains(&format!("--mock and {flag} exclude each other")),
        "{text}"
    );
}

#[tokio::test]
async fn an_invalid_endpoint_in_the_environment_is_named_with_its_variable() {
    let (output, text) = harness_output(
        &["version"],
        &[("CONTAINER_RUNTIME_ENDPOINT", "npipe:////./pipe/containerd")],
    )
    .await;
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert_eq!(text.trim_end().lines().count(), 1, "{text}");
    assert!(
        text.contains("runtime endpoint from CONTAINER_RUNTIME_ENDPOINT"),
        "{text}"
    );
}

#[tokio::test]
async fn the_image_endpoint_comes_from_its_variable() {
    let (_dir, server, _client, _control) = support::mock_on_socket().await;
    let runtime = server.endpoint().to_string();
    let image = "/nonexistent/image.sock";
    let (output, text) = harness_output(
        &["version", "-r", &runtime],
        &[("IMAGE_SERVICE_ENDPOINT", image)],
    )
    .await;
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains(image), "{text}");
    // Without the variable the image service is the runtime's, and the same call works.
    let (output, text) = harness_output(&["version", "-r", &runtime], &[]).await;
    assert!(output.status.success(), "{text}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_flag_beats_its_variable() {
    let (_dir, server, _client, _control) = support::mock_on_socket().await;
    let runtime = server.endpoint().to_string();
    let (output, text) = harness_output(
        &["version", "-r", &runtime],
        &[("CONTAINER_RUNTIME_ENDPOINT", ABSENT)],
    )
    .await;
    assert!(output.status.success(), "{text}");
    server.shutdown().await;
}
