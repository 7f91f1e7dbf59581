//! Foreign gRPC clients at their defaults against the mock's socket, each walking a pod's life
//! cycle and checking every answer: grpc-go dialling the bare socket path as the kubelet does
//! (`tests/compat/go/run.sh`), and Python grpcio with and without a `localhost` authority
//! (`tests/compat/standard_client.py`). `.ci/run` installs both toolchains; elsewhere the tests
//! are ignored unless asked for, and a missing toolchain fails them, naming it.

mod support;

use std::path::{Path, PathBuf};

use cri_harness::mock::MockRuntime;
use rstest::rstest;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// What the grpc-go client's build needs, as Debian packages it (see `run.sh`).
const GO_NEEDS: &[&str] = &[
    "/usr/share/gocode/src/google.golang.org/grpc/clientconn.go",
    "/usr/share/gocode/src/google.golang.org/protobuf/proto/decode.go",
    // golang/protobuf 1.4+ (1-5-dev): the 1.3 one cannot decode protoc-gen-go's messages.
    "/usr/share/gocode/src/github.com/golang/protobuf/proto/registry.go",
];

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(tool).is_file()))
}

/// Why the grpc-go client cannot be built here, if it cannot.
fn go_missing() -> Option<String> {
    let tools = ["go", "protoc", "protoc-gen-go", "protoc-gen-go-grpc"];
    let missing: Vec<&str> = tools
        .into_iter()
        .filter(|tool| !on_path(tool))
        .chain(
            GO_NEEDS
                .iter()
                .copied()
                .filter(|file| !Path::new(file).exists()),
        )
        .collect();
    (!missing.is_empty()).then(|| format!("missing {}", missing.join(", ")))
}

/// The Python with grpcio and grpcio-tools: `CRIH_COMPAT_PYTHON`, else `python3` if it has them.
fn grpc_python() -> Result<PathBuf, String> {
    let python = std::env::var_os("CRIH_COMPAT_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("python3"));
    let probe = std::process::Command::new(&python)
        .args(["-c", "import grpc, grpc_tools"])
        .output();
    match probe {
        Ok(output) if output.status.success() => Ok(python),
        _ => Err(format!(
            "{} cannot import grpc and grpc_tools (set CRIH_COMPAT_PYTHON to one that can)",
            python.display()
        )),
    }
}

/// Runs `program args.. endpoint-of-a-fresh-mock` and checks it succeeded and said `done`.
async fn run_against_mock(program: &Path, args: &[&str], done: &str) {
    let dir = tempfile::tempdir().unwrap();
    let server = MockRuntime::new()
        .serve_unix(&dir.path().join("mock.sock"))
        .await
        .unwrap();
    let output = tokio::process::Command::new(program)
        .args(args)
        .arg(server.endpoint().to_string())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{} failed: {}\n{stdout}\n{stderr}",
        program.display(),
        output.status
    );
    assert!(stdout.contains(done), "{stdout}\n{stderr}");
    server.shutdown().await;
}

#[tokio::test]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs Go, protoc-gen-go, protoc-gen-go-grpc and grpc-go (Debian packages)"
)]
async fn grpc_go_dialling_the_bare_socket_path_walks_a_pod_life_cycle_on_the_mock() {
    if let Some(reason) = go_missing() {
        support::need::unmet("the grpc-go client's tools", &reason);
    }
    let script = Path::new(ROOT).join("tests/compat/go/run.sh");
    let script = script.to_str().unwrap();
    run_against_mock(Path::new("bash"), &[script], "go client: all steps passed").await;
}

#[rstest]
#[case::grpcio_defaults(&[])]
#[case::localhost_authority(&["--authority", "localhost"])]
#[tokio::test]
#[cfg_attr(
    not(crih_ci),
    ignore = "needs a Python with grpcio and grpcio-tools (CRIH_COMPAT_PYTHON)"
)]
async fn python_grpcio_walks_a_pod_life_cycle_on_the_mock(#[case] flags: &[&str]) {
    let python = grpc_python().unwrap_or_else(|reason| support::need::unmet("grpcio", &reason));
    let script = Path::new(ROOT).join("tests/compat/standard_client.py");
    let mut args = vec![script.to_str().unwrap()];
    args.extend_from_slice(flags);
    run_against_mock(&python, &args, "standard client: all steps passed").await;
}
