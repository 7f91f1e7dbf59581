//! `cri-harness version` as a user runs it: the built binary, its exit status and what it
//! prints, with the endpoint variables and crictl config cleared so the machine cannot leak in.

use std::process::Output;

use crate::support;

fn version(args: &[&str]) -> Output {
    support::harness()
        .arg("version")
        .args(args)
        .output()
        .unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn missing_socket_fails_with_one_line_naming_the_path() {
    let output = version(&["-r", "/nonexistent/cri.sock"]);
    let stderr = stderr(&output);
    assert!(!output.status.success());
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("/nonexistent/cri.sock"), "{stderr}");
    assert!(output.stdout.is_empty());
}

#[test]
fn no_endpoint_anywhere_lists_the_three_ways_to_give_one() {
    let output = version(&[]);
    let stderr = stderr(&output);
    assert!(!output.status.success());
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    for way in [
        "--runtime-endpoint",
        "CONTAINER_RUNTIME_ENDPOINT",
        "runtime-endpoint in /nonexistent/crictl.yaml",
    ] {
        assert!(stderr.contains(way), "{stderr}");
    }
}

#[test]
fn endpoint_from_the_crictl_config_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("crictl.yaml");
    let socket = dir.path().join("absent.sock");
    std::fs::write(
        &config,
        format!("runtime-endpoint: unix://{}\n", socket.display()),
    )
    .unwrap();
    let output = version(&["--config", config.to_str().unwrap()]);
    let stderr = stderr(&output);
    assert!(!output.status.success());
    assert!(stderr.contains(&socket.display().to_string()), "{stderr}");
}

#[test]
fn unsupported_scheme_names_the_text_and_the_flag() {
    let output = version(&["-r", "npipe:////./pipe/containerd-containerd"]);
    let stderr = stderr(&output);
    assert!(!output.status.success());
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("-r/--runtime-endpoint"), "{stderr}");
    assert!(
        stderr.contains("npipe:////./pipe/containerd-containerd"),
        "{stderr}"
    );
}
